"""The Beyond-the-paper page's figures and tables: the probe's histograms, the soft-label curves and
the rule's evidence laid out for reading. The probe itself is `jeirt.analysis.probes`.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from jeirt.analysis.probes import arithmetic_evidence, needs_arithmetic, question_stem
from jeirt.book.figures import PALETTE, style


def probe_histograms(
    ax: plt.Axes,
    scores: np.ndarray,
    marked: np.ndarray,
    bins: int = 30,
    names: tuple[str, str] = ("marked", "not marked"),
    xlabel: str = "projection on the probe direction",
) -> plt.Axes:
    """Distributions (densities) of `scores` for marked and unmarked questions: a filled histogram
    and a hatched one in two colours, so they differ in grey print too."""
    scores, marked = np.asarray(scores, dtype=float), np.asarray(marked, dtype=bool)
    edges = np.histogram_bin_edges(scores, bins=bins)
    for i, (sel, name, hatch) in enumerate([(~marked, names[1], "///"), (marked, names[0], "")]):
        ax.hist(
            scores[sel],
            bins=edges,
            density=True,
            color=PALETTE[i],
            alpha=0.45 if hatch == "" else 0.25,
            hatch=hatch,
            edgecolor=PALETTE[i],
            linewidth=0.8,
            label=f"{name} ({sel.sum()})",
        )
    ax.set_xlabel(xlabel.lower())
    ax.set_ylabel("density")
    ax.legend()
    return ax


def soft_label_curves(
    ax: plt.Axes, table: pd.DataFrame, value: str, ylabel: str | None = None, reference: str = "true probabilities"
) -> plt.Axes:
    """`value` of `table` (columns labels, gradings, value; one row per fit) against the number of
    gradings per pair (log axis): each fit as a small open marker, their mean per k as a line; the
    rows whose `labels` is `reference` (trained on the truth) as a dashed horizontal line."""
    rows = table[table["labels"] != reference]
    means = rows.groupby("gradings")[value].mean()
    s = style(0)
    ax.scatter(
        rows["gradings"],
        rows[value],
        s=14,
        facecolor="none",
        edgecolor=s["color"],
        marker=s["marker"],
        linewidth=0.8,
        label="one fit (seed)",
    )
    ax.plot(
        means.index,
        means.to_numpy(),
        color=s["color"],
        marker=s["marker"],
        linestyle="-",
        label="mean of k 0/1 gradings",
    )
    if (table["labels"] == reference).any():
        ax.axhline(
            table.loc[table["labels"] == reference, value].mean(),
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"trained on the {reference}",
        )
    ax.set_xscale("log")
    ax.set_xticks(list(means.index))
    ax.set_xticklabels([str(int(k)) for k in means.index])
    ax.minorticks_off()
    ax.set_xlabel("gradings per pair, k (log scale)")
    ax.set_ylabel((ylabel or value).lower())
    ax.legend()
    return ax


def evidence_table(texts: Sequence[str], max_chars: int = 120) -> pd.DataFrame:
    """One row per text: its shortened stem, the rule's evidence and its verdict (for reading)."""
    rows = []
    for t in texts:
        stem = " ".join(question_stem(str(t)).split())
        rows.append(
            {
                "stem": stem if len(stem) <= max_chars else stem[: max_chars - 1] + "…",
                **arithmetic_evidence(str(t)),
                "needs arithmetic": needs_arithmetic(str(t)),
            }
        )
    return pd.DataFrame(rows)
