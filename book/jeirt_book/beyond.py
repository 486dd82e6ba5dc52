"""The Beyond-the-paper page's figures and tables: the probe's histograms, the soft-label curves and
the rule's evidence laid out for reading. The probe itself is `jeirt.analysis.probes`.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from jeirt.analysis.probes import arithmetic_evidence, needs_arithmetic, question_stem
from jeirt_book.figures import PALETTE, style


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
    edges = np.histogram_bin_edges(scores, bins=bins).tolist()
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


# The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`).


def probe_stats(reports: dict, groups: str, partial: float, n_models: int) -> dict:
    """The probes' numbers: JE-IRT's within-group AUC ('within', se over the `groups` compared), its
    paired within-group gap to the frozen encoder ('versus'), and the models' partial Spearman of
    projection and relative strength ('models', Fisher-z interval over `n_models`); `reports`: the
    probe reports of 'JE-IRT' and 'frozen encoder'. 'within' and 'versus' rest on groups - 1 df, and are a
    `NoVerdict` where fewer than two groups have an AUC (no spread to judge)."""
    from jeirt_book import verdicts
    from jeirt_book.verdicts import Stat

    je, fr = reports["JE-IRT"], reports["frozen encoder"]
    per_je, per_fr = je["per group"]["auc"].dropna(), fr["per group"]["auc"]
    paired = (per_je - per_fr).dropna()
    n = int(je["groups compared"])

    def few(count: int) -> verdicts.NoVerdict:  # a small sample of questions can leave one group
        words = f"{count} {groups}(s) with an AUC"
        return verdicts.NoVerdict(words, "no spread", limit=words)

    return {
        "within": few(len(per_je))
        if len(per_je) < 2
        else Stat(
            je["within auc"],
            se=verdicts.mean_and_se(per_je)[1],
            df=len(per_je) - 1,
            label=f"within-{groups} AUC",
            note=f"se over {n} {groups}s",
            rule_args={"limit": f"{n} {groups}s"},
        ),
        "versus": few(len(paired))
        if len(paired) < 2
        else Stat(
            paired.mean(),
            se=verdicts.mean_and_se(paired)[1],
            df=len(paired) - 1,
            spec="+.3f",
            label=f"paired within-{groups} gap",
            note=f"AUC {je['auc']:.3f} vs {fr['auc']:.3f}; within {je['within auc']:.3f} vs "
            f"{fr['within auc']:.3f}; over {len(paired)} {groups}s",
            rule_args={"limit": f"{n} {groups}s"},
        ),
        "models": Stat(
            partial,
            interval=verdicts.rho_interval(partial, n_models),
            spec=".2f",
            label="partial Spearman",
            rule_args={"limit": f"{n_models} models"},
        ),
    }


def soft_label_stats(soft_runs: pd.DataFrame, merged: pd.Series, delta: pd.Series) -> dict:
    """Soft labels' numbers: in simulation, the excess log loss of a fit on the true probabilities
    minus one on one grading ('simulated', per seed of `soft_runs`, seeds - 1 df; a `NoVerdict` with one
    seed: no se), and on zeroeval the log loss of one grading minus the pass rate ('zeroeval', se over
    the splits of `delta`, splits - 1 df; `merged`: the mean log loss per policy)."""
    from jeirt_book import verdicts
    from jeirt_book.verdicts import Stat

    kl = soft_runs.set_index("seed")["excess log loss"]
    one = kl[soft_runs["gradings"].eq(1).to_numpy()]
    gain = kl[soft_runs["labels"].eq("true probabilities").to_numpy()] - one
    draws = f"{len(gain)} simulated draw(s)"
    note = f"one grading {one.mean():.4f} vs truth {(one + gain).mean():.4f}; {draws}"
    one_draw = f"excess log loss, truth - one grading {gain.mean():+.4f} ({note})"
    stats: dict[str, Stat | verdicts.NoVerdict] = {
        "simulated": Stat(
            gain.mean(),
            se=verdicts.mean_and_se(gain)[1],
            df=len(gain) - 1,
            spec="+.4f",
            label="truth - one grading",
            note=note,
        )
        if len(gain) > 1
        else verdicts.NoVerdict(one_draw, "one simulated draw has no spread", limit=draws)
    }
    m, se = verdicts.mean_and_se(delta)
    stats["zeroeval"] = Stat(
        m,
        se=se,
        df=len(delta) - 1,
        spec="+.4f",
        label="log loss, one grading - pass rate",
        note=" vs ".join(f"{v:.4f}" for v in merged) + f"; se over {len(delta)} splits",
        rule_args={"limit": f"{len(delta)} splits"},
    )
    return stats
