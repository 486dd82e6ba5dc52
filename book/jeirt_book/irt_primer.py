"""The IRT primer page (book/irt_primer.md): its figures and tables, and the glue of its numbers.

The algorithms the page teaches are in the library: `jeirt.baselines.irt` (curves, information,
abilities by ML/MAP/EAP with standard errors, item standard errors, one 3PL item, Rasch JML and MML,
MIRT) and `jeirt.baselines.irt_diagnostics` (item fit, Q3). This module only draws and tabulates
what the page computes with them, in the book's one figure style (`jeirt_book.figures`).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from scipy.stats import norm

from jeirt.baselines import irt
from jeirt_book.figures import PALETTE, SEQUENTIAL, style


# Curves
def icc_curves(ax: plt.Axes, pairs: list[tuple[float, float]], theta_range: tuple[float, float] = (-4, 4)) -> plt.Axes:
    """One 2PL item characteristic curve per (a, b) pair, each in its own colour, marker and line."""
    theta = np.linspace(*theta_range, 401)
    for i, (a, b) in enumerate(pairs):
        s = style(i)
        ax.plot(
            theta,
            irt.icc(theta, a, b),
            color=s["color"],
            linestyle=s["linestyle"],
            marker=s["marker"],
            markevery=(10 * i, 80),
            label=f"a = {a:g}, b = {b:g}",
        )
    ax.axhline(0.5, color="0.6", linewidth=0.6, linestyle=":")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"ability $\theta$")
    ax.set_ylabel("p(correct)")
    ax.legend(loc="best")
    return ax


def draw_icc(
    ax: plt.Axes, a: float, b: float, c: float = 0.0, index: int = 0, theta_range: tuple[float, float] = (-4, 4)
) -> plt.Axes:
    """One 3PL curve with its floor c (dotted) and its midpoint (1 + c) / 2 at theta = b (a dot)."""
    theta = np.linspace(*theta_range, 201)
    s = style(index)
    ax.plot(theta, irt.icc(theta, a, b, c), color=s["color"], linestyle=s["linestyle"], marker="")
    ax.axhline(c, color="0.6", linewidth=0.6, linestyle=":")
    ax.plot([b], [(1 + c) / 2], color=s["color"], marker=s["marker"], linestyle="")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlim(*theta_range)
    return ax


def icc_small_multiples(
    a_values: tuple[float, ...] = (0.5, 1.0, 2.5),
    c_values: tuple[float, ...] = (0.0, 0.1, 0.25),
    b_values: tuple[float, ...] = (-1.0, 0.0, 1.5),
) -> plt.Figure:
    """3PL curves on a grid: rows are discriminations a, columns guessing floors c, one curve per
    difficulty b in each panel (the live notebook has sliders for the same three numbers)."""
    fig, axes = plt.subplots(
        len(a_values), len(c_values), figsize=(7.2, 1.9 * len(a_values) + 0.6), sharex=True, sharey=True
    )
    axes = np.atleast_2d(axes)
    for r, a in enumerate(a_values):
        for k, c in enumerate(c_values):
            ax = axes[r, k]
            for i, b in enumerate(b_values):
                draw_icc(ax, a, b, c, index=i)
            ax.text(0.03, 0.95, f"a = {a:g}, c = {c:g}", transform=ax.transAxes, va="top", fontsize=8)
            if r == len(a_values) - 1:
                ax.set_xlabel(r"ability $\theta$")
            if k == 0:
                ax.set_ylabel("p(correct)")
    handles = [plt.Line2D([], [], **style(i)) for i in range(len(b_values))]
    fig.legend(handles, [f"b = {b:g}" for b in b_values], loc="outside upper center", ncols=len(b_values))
    return fig


def icc_explorer() -> None:
    """Sliders for a, b and c over one 3PL curve (ipywidgets; needs a live kernel, e.g. Colab)."""
    from ipywidgets import FloatSlider, interact

    def show(a: float = 1.0, b: float = 0.0, c: float = 0.1) -> None:
        _, ax = plt.subplots(figsize=(5.0, 3.0))
        draw_icc(ax, a, b, c)
        info = float(irt.item_information(b, a, b, c))
        ax.set_xlabel(rf"ability $\theta$  (information at b: {info:.2f})")
        ax.set_ylabel("p(correct)")
        plt.show()

    interact(
        show,
        a=FloatSlider(value=1.0, min=-2.0, max=4.0, step=0.1),
        b=FloatSlider(value=0.0, min=-3.0, max=3.0, step=0.1),
        c=FloatSlider(value=0.1, min=0.0, max=0.5, step=0.05),
    )


def ogives(left: plt.Axes, right: plt.Axes, x_range: tuple[float, float] = (-4, 4), scale: float = 1.702) -> plt.Axes:
    """Left: the normal ogive Phi(x) beside the logistic sigma(x) and sigma(D x); right: the
    difference Phi(x) - sigma(D x), with its largest size marked."""
    x = np.linspace(*x_range, 801)
    curves = {
        r"normal ogive $\Phi(x)$": norm.cdf(x),
        r"logistic $\sigma(x)$": 1 / (1 + np.exp(-x)),
        rf"logistic $\sigma({scale:g}\,x)$": 1 / (1 + np.exp(-scale * x)),
    }
    for i, (label, y) in enumerate(curves.items()):
        s = style(i)
        left.plot(
            x, y, color=s["color"], linestyle=s["linestyle"], marker=s["marker"], markevery=(40 * i, 160), label=label
        )
    left.set_xlabel("x")
    left.set_ylabel("probability")
    left.legend(loc="upper left")
    gap = norm.cdf(x) - 1 / (1 + np.exp(-scale * x))
    right.plot(x, gap, **style(2), markevery=80)
    worst = np.argmax(np.abs(gap))
    right.plot([x[worst]], [gap[worst]], color="0.2", marker="o", linestyle="")
    right.axhline(0, color="0.6", linewidth=0.6, linestyle=":")
    right.set_xlabel("x")
    right.set_ylabel(rf"$\Phi(x) - \sigma({scale:g}\,x)$")
    return right


# Parameters and their errors
def parameter_recovery(
    ax: plt.Axes, true: np.ndarray, fitted: np.ndarray, se: np.ndarray | None = None, name: str = "discrimination a"
) -> plt.Axes:
    """Fitted against true values of one parameter (seaborn scatter), with 95% intervals (fitted +-
    1.96 se) as grey bars when `se` is given, the identity line and the correlation."""
    ok = np.isfinite(true) & np.isfinite(fitted)
    if se is not None:
        ax.errorbar(true[ok], fitted[ok], yerr=1.96 * se[ok], fmt="none", ecolor="0.8", elinewidth=0.6)
    sns.scatterplot(x=true[ok], y=fitted[ok], ax=ax, s=12, color=PALETTE[0], marker="o", edgecolor="none", alpha=0.8)
    lo, hi = true[ok].min(), true[ok].max()
    ax.plot([lo, hi], [lo, hi], color="0.3", linewidth=0.8, linestyle="--", marker="")
    ax.text(0.03, 0.95, f"r = {np.corrcoef(true[ok], fitted[ok])[0, 1]:.2f}", transform=ax.transAxes, va="top")
    pad = 0.1 * np.ptp(fitted[ok])
    ax.set_ylim(fitted[ok].min() - pad, fitted[ok].max() + pad)  # the points decide; long bars run off
    ax.set_xlabel(f"true {name}")
    ax.set_ylabel(f"fitted {name}")
    return ax


def guessing_profile(
    left: plt.Axes, right: plt.Axes, profile: pd.DataFrame, ability: np.ndarray, shown: tuple[float, ...]
) -> plt.Axes:
    """Left: the profile log-likelihood of the guessing floor c (its drop from the best c), with
    the 95% likelihood-ratio threshold 1.92 dashed. Right: the best 3PL curve at a few fixed c,
    with the test takers' abilities as a rug (seaborn) along the bottom."""
    left.plot(profile["c"], profile["drop"], **style(0), markevery=2)
    left.axhline(1.92, color="0.3", linewidth=0.8, linestyle="--")
    left.set_ylim(-0.5, 12)
    left.set_xlabel("guessing floor c (fixed)")
    left.set_ylabel("drop in log-likelihood")
    theta = np.linspace(-3.5, 3.5, 201)
    for i, c in enumerate(shown):
        row = profile.iloc[int(np.argmin(np.abs(profile["c"] - c)))]
        s = style(i + 1)
        right.plot(
            theta,
            irt.icc(theta, row["a"], row["b"], row["c"]),
            color=s["color"],
            linestyle=s["linestyle"],
            marker=s["marker"],
            markevery=(15 * i, 50),
            label=f"c = {row['c']:.2f}: a = {row['a']:.2f}, b = {row['b']:.2f}",
        )
    sns.rugplot(x=ability, ax=right, height=0.05, color="0.4", linewidth=0.5, alpha=0.5)
    right.set_ylim(-0.02, 1.02)
    right.set_xlabel(r"ability $\theta$ (ticks: the test takers)")
    right.set_ylabel("p(correct)")
    right.legend(loc="upper left", fontsize=7)
    return right


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
