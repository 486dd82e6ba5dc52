"""The Known-answers page's figure: a new benchmark's predictions against the number of models whose
answers are known. The protocols are `jeirt.experiments.new_models`', the refinement of a new question
`jeirt.questions.refine_questions`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from jeirt.book.figures import LINESTYLES, style


def curves_by_n(
    ax: plt.Axes,
    table: pd.DataFrame,
    value: str = "accuracy",
    by: str = "method",
    references: dict[str, float] | None = None,
    ylabel: str | None = None,
) -> plt.Axes:
    """Mean `value` of `table` against n (models whose answers are known), one line per `by` (colour,
    marker and line style), with the spread over seeds as error bars where there are several seeds;
    `references` are horizontal lines (label -> value)."""
    for i, (name, rows) in enumerate(table.groupby(by, sort=False)):
        stats = rows.groupby("n")[value].agg(["mean", "std"])
        spread = stats["std"] if rows["seed"].nunique() > 1 else None  # no bars over one seed
        s = style(i)
        ax.errorbar(
            stats.index,
            stats["mean"],
            yerr=spread,
            color=s["color"],
            marker=s["marker"],
            linestyle=s["linestyle"],
            capsize=2,
            label=str(name),
        )
    for j, (name, level) in enumerate((references or {}).items()):
        ax.axhline(level, color="0.4", linestyle=LINESTYLES[(j + 1) % len(LINESTYLES)], linewidth=1, label=name)
    ns = sorted(table["n"].unique())
    ax.set_xticks(ns)
    ax.set_xlabel("models whose answers are known, n")
    ax.set_ylabel((ylabel or value).lower())
    ax.legend()
    return ax
