"""The IRT primer page: item characteristic curves and recovering a known 2PL.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from jeirt.book.figures import PALETTE, style


# Classic IRT pictures (chapters "An IRT primer" and "Why one number fails", Section 3.1)
def icc_curves(ax: plt.Axes, pairs: list[tuple[float, float]], theta_range: tuple[float, float] = (-4, 4)) -> plt.Axes:
    """One 2PL item characteristic curve sigmoid(a (theta - b)) per (a, b) pair, each in its own style."""
    theta = np.linspace(*theta_range, 401)
    for i, (a, b) in enumerate(pairs):
        s = style(i)
        ax.plot(theta, 1 / (1 + np.exp(-a * (theta - b))), color=s["color"], linestyle=s["linestyle"],
                marker=s["marker"], markevery=(10 * i, 80), label=f"a = {a:g}, b = {b:g}")
    ax.axhline(0.5, color="0.6", linewidth=0.6, linestyle=":")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"ability $\theta$")
    ax.set_ylabel("p(correct)")
    ax.legend(loc="best")
    return ax


def parameter_recovery(ax: plt.Axes, true: np.ndarray, fitted: np.ndarray, name: str = "discrimination a") -> plt.Axes:
    """Fitted against true values of one parameter, with the identity line and their correlation."""
    ok = np.isfinite(true) & np.isfinite(fitted)
    ax.scatter(true[ok], fitted[ok], s=10, alpha=0.6, color=PALETTE[0], edgecolor="none")
    lo, hi = np.nanmin([true[ok].min(), fitted[ok].min()]), np.nanmax([true[ok].max(), fitted[ok].max()])
    ax.plot([lo, hi], [lo, hi], color="0.3", linewidth=0.8, linestyle="--", marker="")
    ax.text(0.03, 0.95, f"r = {np.corrcoef(true[ok], fitted[ok])[0, 1]:.2f}", transform=ax.transAxes, va="top")
    ax.set_xlabel(f"true {name}")
    ax.set_ylabel(f"fitted {name}")
    return ax
