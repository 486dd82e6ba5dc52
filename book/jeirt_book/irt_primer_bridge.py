"""The IRT primer's third lecture (book/irt_primer_bridge.md: from IRT to JE-IRT): its figures.

The lecture simulates a two-dimensional JE-IRT world on the page (model vectors E_M, question directions
u and norms r, answers by the paper's Eq. 3, `jeirt.model.probability`), fits the 2PL and JE-IRT to it
with the library (`jeirt.baselines.irt`, `jeirt.JEIRT`), and draws what they find here, in the book's
figure style (`jeirt_book.figures`).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from jeirt_book.figures import PALETTE, style

KINDS = ("rising", "flat", "falling")  # a fitted 2PL item by its discrimination: a > flat, |a| <= flat, a < -flat


def kind_of(discrimination: np.ndarray, flat: float) -> np.ndarray:
    """Each item's kind by its fitted discrimination a: 'rising' (a > flat), 'flat' (|a| <= flat) or
    'falling' (a < -flat)."""
    a = np.asarray(discrimination, dtype=float)
    return np.where(a > flat, KINDS[0], np.where(a < -flat, KINDS[2], KINDS[1]))


def world(
    ax: plt.Axes, model_vectors: np.ndarray, questions: np.ndarray, kinds: np.ndarray, ability: np.ndarray
) -> plt.Axes:
    """The plane of a two-dimensional JE-IRT world: each model vector E_M (grey dot), each question
    embedding E_Q (marker and colour by the kind of its fitted 2PL item), and the direction along which
    the 2PL's one ability runs (`ability`, a unit vector, dashed arrow)."""
    ax.scatter(
        model_vectors[:, 0], model_vectors[:, 1], s=10, color="0.55", marker="o", linewidths=0, label="models $E_M$"
    )
    for i, kind in enumerate(KINDS):
        s = style(i)
        pick = kinds == kind
        ax.scatter(
            questions[pick, 0],
            questions[pick, 1],
            s=9,
            color=s["color"],
            marker=s["marker"],
            linewidths=0,
            label=f"{kind} item",
        )
    reach = 1.05 * np.abs(model_vectors).max()
    ax.annotate(
        "", xy=reach * ability, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="0.1", linestyle="--", lw=1.2)
    )
    ax.text(1.08 * reach * ability[0], 1.08 * reach * ability[1], "2PL ability", fontsize=8, ha="center", va="center")
    ax.axhline(0, color="0.85", linewidth=0.6, zorder=0)
    ax.axvline(0, color="0.85", linewidth=0.6, zorder=0)
    ax.set_aspect("equal")
    ax.set_xlabel("first coordinate")
    ax.set_ylabel("second coordinate")
    ax.legend(loc="lower left", fontsize=7, markerscale=1.6)
    return ax


def slope_by_angle(ax: plt.Axes, angle: np.ndarray, discrimination: np.ndarray, spread: float, flat: float) -> plt.Axes:
    """Each question's fitted 2PL discrimination against the angle between its direction and the 2PL's
    ability direction (degrees), with the curve spread * cos(angle) that the projection predicts and the
    band |a| <= flat of the flat items."""
    order = np.linspace(-180, 180, 361)
    ax.axhspan(-flat, flat, color="0.92", zorder=0, label="flat band")
    ax.scatter(angle, discrimination, s=7, color=PALETTE[0], marker="o", linewidths=0, alpha=0.7, label="fitted a")
    ax.plot(
        order, spread * np.cos(np.radians(order)), color="0.15", linestyle="--", marker="", label="spread x cos(angle)"
    )
    ax.axhline(0, color="0.6", linewidth=0.6, linestyle=":")
    ax.set_xlim(-180, 180)
    ax.set_xticks([-180, -90, 0, 90, 180])
    ax.set_xlabel("angle to the 2PL ability direction (degrees)")
    ax.set_ylabel("fitted discrimination a")
    ax.legend(loc="lower center", fontsize=7)
    return ax


def binned_rate(x: np.ndarray, y: np.ndarray, bins: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the 0/1 answers `y` in `bins` groups of equal size along `x`: (mean x, share right) per
    group, the empirical item characteristic curve."""
    order = np.argsort(x)
    groups = np.array_split(order, bins)
    return np.array([x[g].mean() for g in groups]), np.array([y[g].mean() for g in groups])


def one_item_two_views(
    left: plt.Axes,
    right: plt.Axes,
    ability: np.ndarray,
    projection: np.ndarray,
    answers: np.ndarray,
    fitted: tuple[float, float],
    norm: float,
    bins: int = 8,
) -> plt.Axes:
    """One question's answers (dots: the share right in `bins` equal groups of models) against the 2PL's
    ability with the 2PL's fitted curve, `fitted` = (a, d) (left), and against each model's projection
    on the question's own direction with Eq. 3's curve sigmoid(projection - norm) (right)."""
    panels = (
        (left, ability, r"2PL ability $\theta$", lambda x: fitted[0] * x + fitted[1], "2PL fit"),
        (right, projection, r"projection $\langle u, E_M \rangle$ on the question", lambda x: x - norm, "Eq. 3"),
    )
    for ax, x, label, logit, name in panels:
        centre, rate = binned_rate(x, answers, bins)
        grid = np.linspace(x.min(), x.max(), 101)
        ax.plot(grid, 1 / (1 + np.exp(-logit(grid))), color="0.2", linestyle="--", marker="", label=name)
        ax.plot(centre, rate, color=PALETTE[0], marker="o", linestyle="", label="share right")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel(label)
        ax.legend(loc="upper left", fontsize=7)
    left.set_ylabel("p(correct)")
    return right


def projection_diagram(ax: plt.Axes, model: np.ndarray, question: np.ndarray, turn: float) -> plt.Axes:
    """A model vector, a question embedding and the projection of the model on the question's direction
    (dotted), drawn as given (solid) and turned by `turn` degrees (dashed): the projection's length, and
    so every probability, is the same in both."""
    c, s = np.cos(np.radians(turn)), np.sin(np.radians(turn))
    rotation = np.array([[c, -s], [s, c]])
    for k, (m, q) in enumerate(((model, question), (rotation @ model, rotation @ question))):
        line = "-" if k == 0 else "--"
        u = q / np.linalg.norm(q)
        foot = (m @ u) * u
        for vector, colour, name in ((m, PALETTE[0], "$E_M$"), (q, PALETTE[1], "$E_Q$")):
            ax.annotate(
                "", xy=vector, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=colour, linestyle=line, lw=1.4)
            )
            label = name + ("" if k == 0 else " turned")
            ax.text(1.08 * vector[0], 1.08 * vector[1], label, fontsize=8, ha="center", color=colour)
        ax.plot(*np.c_[m, foot], color="0.4", linestyle=":", marker="")
        ax.plot(*np.c_[(0, 0), foot], color="0.1", linestyle=line, linewidth=2.4, marker="", alpha=0.5)
    reach = 1.3 * max(np.abs(model).max(), np.abs(question).max())
    ax.set_xlim(-reach, reach)
    ax.set_ylim(-reach, reach)
    ax.set_aspect("equal")
    ax.axhline(0, color="0.85", linewidth=0.6, zorder=0)
    ax.axvline(0, color="0.85", linewidth=0.6, zorder=0)
    ax.set_xlabel("first coordinate")
    ax.set_ylabel("second coordinate")
    return ax


def new_questions(axes, truth: np.ndarray, predictions: dict[str, np.ndarray], bins: int = 20) -> None:
    """For the answers to questions no model was trained on: each predictor's probability (one panel
    each) against the true probability of the simulation, as the mean predicted in `bins` equal groups of
    answers along the truth, with the diagonal of a perfect prediction."""
    for ax, (name, p) in zip(np.atleast_1d(axes), predictions.items()):
        centre, mean = binned_rate(truth, p, bins)
        ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", marker="")
        ax.plot(centre, mean, **style(0))
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("true probability")
        ax.text(0.04, 0.94, name, transform=ax.transAxes, va="top", fontsize=8)
    np.atleast_1d(axes)[0].set_ylabel("predicted probability (group mean)")
