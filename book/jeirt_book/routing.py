"""The Routing page: the cost-accuracy frontier and what routing picks, as figures."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from jeirt_book.figures import style

# Routing (chapter "Routing"; numbers from jeirt.tasks.routing)
REFERENCE_MARKERS = {"best single model": "s", "per-benchmark best": "D", "random model": "v", "oracle": "*"}


def routing_frontier(
    ax: plt.Axes,
    frontiers: dict[str, pd.DataFrame],
    references: pd.DataFrame | None = None,
    singles: pd.DataFrame | None = None,
    unit: str = "usd per 1,000 questions",
) -> plt.Axes:
    """Accuracy against mean cost per question (log axis): one line per router (label -> a
    `jeirt.tasks.routing.frontier` table, lambda = 0 at its costly end, marked with a larger marker), the
    reference policies (index: policy; columns accuracy, cost) as black markers, and each single model
    (`routing.single_models`) as a small grey dot."""
    if singles is not None and len(singles):
        ax.scatter(singles["cost"], singles["accuracy"], s=8, color="0.7", marker="o", zorder=1, label="single models")
    for i, (name, table) in enumerate(frontiers.items()):
        s = style(i)
        table = table.sort_values("lam")
        ax.plot(
            table["cost"],
            table["accuracy"],
            color=s["color"],
            linestyle=s["linestyle"],
            marker=s["marker"],
            markersize=2.5,
            markevery=max(1, len(table) // 10),
            label=str(name),
            zorder=2,
        )
        ax.scatter(
            table["cost"].iloc[:1],
            table["accuracy"].iloc[:1],
            s=30,
            color=s["color"],
            marker=s["marker"],
            edgecolor="black",
            linewidth=0.5,
            zorder=3,
        )
    if references is not None:
        for policy, row in references.iterrows():
            ax.scatter(
                row["cost"],
                row["accuracy"],
                s=36,
                facecolor="none",
                edgecolor="black",
                linewidth=1,
                marker=REFERENCE_MARKERS.get(str(policy), "o"),
                zorder=4,
                label=str(policy),
            )
    ax.set_xscale("log")
    ax.set_xlabel(f"mean cost ({unit}, log scale)")
    ax.set_ylabel("routed accuracy")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax


def difficulty_vs_share(
    ax: plt.Axes, difficulty: np.ndarray, share_wrong: np.ndarray, label: str, i: int = 0
) -> plt.Axes:
    """One point per question: a model's difficulty score (x) against the share of graded models that
    answered it wrong (y), in series style `i`, with the Spearman correlation in the legend label."""
    from jeirt.metrics import spearman

    x, y = np.asarray(difficulty, dtype=float), np.asarray(share_wrong, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    rho = spearman(x, y)
    s = style(i)
    ax.scatter(
        x[keep],
        y[keep],
        s=6,
        alpha=0.5,
        color=s["color"],
        marker=s["marker"],
        edgecolor="none",
        label=f"{label} (spearman {rho:.2f})",
    )
    ax.set_xlabel(f"difficulty: {label}".lower())
    ax.set_ylabel("share of models wrong")
    ax.legend(loc="lower right", markerscale=2)
    return ax


# The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`).


def claim_stats(gaps, accuracy: pd.DataFrame, duel: pd.DataFrame, questions: dict[str, int]) -> dict:
    """Per dataset of `questions` (name -> test questions): JE-IRT's routed-accuracy gap to the best
    single model ('single <name>') and to the per-benchmark best ('bench <name>'), and IRT-Net's to
    JE-IRT ('duel <name>'), in points with the se of the paired per-question differences (`gaps(name,
    router, reference)`: mean gap and se over seeds); the headroom, the oracle less the reference
    (`accuracy`: router or reference x dataset), caps what a gap to a reference can show."""
    from jeirt_book.verdicts import Stat

    stats = {}
    for name, n in questions.items():
        pairs = [("single", "je-irt", "best single model"), ("bench", "je-irt", "per-benchmark best")]
        for key, router, ref in [*pairs, ("duel", "irt-net", "je-irt")]:
            g = gaps(name, router, ref)
            room = 100 * (accuracy.at["oracle", name] - accuracy.at[ref, name])
            note = f"paired over {n:,} test questions"
            if key == "duel":
                je, irt = (duel.loc[(name, m), "routed accuracy"] for m in ("je-irt", "irt-net"))
                note = f"routed accuracy {irt:.3f} vs {je:.3f}; {note}"
            stats[f"{key} {name}"] = Stat(
                100 * g["gap"],
                se=100 * g["se"],
                spec="+.1f",
                unit=" points",
                label=f"{router} - {ref}",
                note=note,
                rule_args={
                    "headroom": None if key == "duel" else room,
                    "limit": f"{n:,} test questions, {room:.1f} points of headroom",
                },
            )
    return stats
