"""The IRT primer's second lecture (book/irt_primer_abilities.md: estimating abilities and checking the
model): its figures. The algorithms are the library's (`jeirt.baselines.irt`, `irt_diagnostics`);
this module only draws what the page computes with them, in the book's figure style.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from jeirt.baselines import irt
from jeirt_book.figures import SEQUENTIAL, style


# Test information, the test characteristic curve, ability estimates
def test_curves(
    left: plt.Axes, right: plt.Axes, a: np.ndarray, b: np.ndarray, marked: tuple[float, float] | None = None
) -> plt.Axes:
    """Left: each item's information (thin grey) and the test information, their sum (thick).
    Right: the standard error 1 / sqrt(I(theta)), with `marked` = (theta, observed sd) as a dot."""
    theta = np.linspace(-4, 4, 401)
    info = irt.item_information(theta[:, None], a, b)  # (401, J)
    left.plot(theta, info, color="0.7", linewidth=0.6, linestyle="-", marker="")
    left.plot(theta, info.sum(axis=1), **style(0), markevery=40, linewidth=2, label="test")
    left.plot([], [], color="0.7", linewidth=0.6, linestyle="-", marker="", label="each item")
    left.set_xlabel(r"ability $\theta$")
    left.set_ylabel("information")
    left.legend(loc="upper left")
    right.plot(theta, 1 / np.sqrt(info.sum(axis=1)), **style(1), markevery=40, label=r"$1/\sqrt{I(\theta)}$")
    if marked is not None:
        right.plot([marked[0]], [marked[1]], color="0.1", marker="D", linestyle="", label="sd of repeated estimates")
    right.set_ylim(0, 1.5)
    right.set_xlabel(r"ability $\theta$")
    right.set_ylabel("standard error")
    right.legend(loc="upper center")
    return right


def characteristic_curve(ax: plt.Axes, a: np.ndarray, b: np.ndarray, score: float, theta_at_score: float) -> plt.Axes:
    """The test characteristic curve sum_j P_j(theta) (thick), each item's curve (thin grey, scaled
    by the number of items so it reads on the same axis), and the ability whose expected score is
    `score` (dashed)."""
    theta = np.linspace(-4, 4, 401)
    p = irt.icc(theta[:, None], a, b)  # (401, J)
    ax.plot(theta, p * len(a), color="0.8", linewidth=0.5, linestyle="-", marker="")
    ax.plot(theta, p.sum(axis=1), **style(0), markevery=40, linewidth=2, label="expected score")
    ax.plot([], [], color="0.8", linewidth=0.5, linestyle="-", marker="", label=f"each item, times {len(a)}")
    ax.plot(
        [-4, theta_at_score, theta_at_score], [score, score, 0], color="0.2", linestyle="--", linewidth=0.8, marker=""
    )
    ax.set_xlabel(r"ability $\theta$")
    ax.set_ylabel(f"score out of {len(a)}")
    ax.legend(loc="upper left")
    return ax


def estimates_by_score(ax: plt.Axes, table: pd.DataFrame) -> plt.Axes:
    """ML, MAP and EAP abilities (columns of `table`, indexed by sum score) against the sum score:
    the posterior estimates shrink towards the prior mean and stay finite at 0 and at full score."""
    for i, column in enumerate(table.columns):
        s = style(i)
        ax.plot(
            table.index, table[column], color=s["color"], marker=s["marker"], linestyle=s["linestyle"], label=column
        )
    ax.set_xlabel("number right")
    ax.set_ylabel(r"estimated ability $\hat\theta$")
    ax.legend(loc="upper left")
    return ax


# Assumptions
def q3_heatmap(ax: plt.Axes, matrix: np.ndarray, boundary: int) -> plt.Axes:
    """Yen's Q3 of every pair of items (seaborn heatmap, diagonal blank), with lines at `boundary`,
    where the second group of items starts."""
    shown = np.where(np.eye(len(matrix), dtype=bool), np.nan, matrix)
    sns.heatmap(
        shown,
        ax=ax,
        cmap=SEQUENTIAL,
        vmin=-0.2,
        vmax=0.4,
        square=True,
        xticklabels=10,
        yticklabels=10,
        cbar_kws={"label": "Q3", "shrink": 0.8},
    )
    for line in (ax.axhline, ax.axvline):
        line(boundary, color="white", linewidth=1.2, linestyle="--")
    ax.set_xlabel("item")
    ax.set_ylabel("item")
    return ax
