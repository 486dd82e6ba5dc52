"""The IRT primer's first lecture (book/irt_primer.md: the models and their items): its figures, and the
small dataset wrapper the three lectures share.

The algorithms the lectures teach are in the library: `jeirt.baselines.irt` (curves, information,
abilities by ML/MAP/EAP with standard errors, item standard errors, one 3PL item, Rasch JML and MML,
MIRT) and `jeirt.baselines.irt_diagnostics` (item fit, Q3). This module only draws what the page
computes with them, in the book's one figure style (`jeirt_book.figures`); the second and third
lectures have their own (`jeirt_book.irt_primer_abilities`, `jeirt_book.irt_primer_bridge`).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from scipy.stats import norm

from jeirt.baselines import irt
from jeirt.data import Dataset
from jeirt_book.figures import PALETTE, style


def as_dataset(labels: np.ndarray, name: str = "simulated", embeddings: dict | None = None) -> Dataset:
    """A Dataset around a (test takers, items) matrix of simulated answers: test takers m0, m1, ...,
    items q0, q1, ... of one benchmark, with no texts (and `embeddings`, features per item, if given)."""
    n_people, n_items = labels.shape
    items = pd.DataFrame({"item_id": [f"q{j}" for j in range(n_items)], "benchmark": "sim", "text": ""})
    return Dataset(name, [f"m{i}" for i in range(n_people)], items, labels, embeddings or {})


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


def icc_explorer():
    """Sliders for a, b and c over one 3PL curve, in any live notebook with ipywidgets installed
    (JupyterLab, Notebook, VS Code, Colab); without it, one line saying how to get them."""
    try:
        from ipywidgets import FloatSlider, interactive
    except ImportError:
        print("The sliders need ipywidgets: pip install ipywidgets, then restart the kernel.")
        return None

    def show(a: float = 1.0, b: float = 0.0, c: float = 0.1) -> None:
        _, ax = plt.subplots(figsize=(5.0, 3.0))
        draw_icc(ax, a, b, c)
        info = float(irt.item_information(b, a, b, c))
        ax.set_xlabel(rf"ability $\theta$  (information at b: {info:.2f})")
        ax.set_ylabel("p(correct)")
        plt.show()

    return interactive(
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


# Joint against marginal maximum likelihood
def both_fits(ds: Dataset, theta_true: np.ndarray, a_true: np.ndarray, coverage: bool = True) -> dict[str, dict]:
    """The joint (`irt.TwoPL`) and the marginal (`irt.MarginalTwoPL`) 2PL fitted to simulated answers, each
    against the truth in its own units (the joint fit's a is per sd of these test takers' abilities, the
    marginal fit's per sd of its N(0, 1) population, the simulation's): mean |a| over the true mean |a|,
    the correlation with the true a and, with `coverage`, the share of 95% intervals holding the true a."""
    fits = {"joint": irt.TwoPL().fit(ds), "marginal": irt.MarginalTwoPL().fit(ds)}
    truth = {"joint": a_true * theta_true.std(), "marginal": a_true}
    out = {}
    for name, f in fits.items():
        a_fit, a_in_units = f.discrimination_, truth[name]
        row = {
            "mean |a| / true": np.abs(a_fit).mean() / np.abs(a_in_units).mean(),
            "corr with true a": np.corrcoef(a_fit, a_true)[0, 1],
        }
        if coverage:
            if name == "joint":
                se = irt.item_standard_errors(ds.labels, f.ability_, f.discrimination_, f.intercept_)
            else:
                se = f.standard_errors(ds)
            row["95% coverage"] = np.mean(np.abs(a_fit - a_in_units) <= 1.96 * se["discrimination"].to_numpy())
        out[name] = row
    return out
