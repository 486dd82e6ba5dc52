"""Figures for the book: one shared matplotlib style and the helpers the chapters call.

`use_style()` sets the house style once per notebook: small readable fonts, no top/right spines, a
colour-blind-safe palette (Okabe & Ito) cycled together with markers and line styles so that every
series can be told apart in grey print, and no titles (captions live in the book, not the image).
Axis labels are lowercase; `check_figure` asserts both rules and the tests use it.

Helpers take an `ax` and return it, so a chapter can place them in any layout:

    geometry_toy(ax)              the JE-IRT picture in 2-D (Eq. 3): model arrows, question points
    response_matrix(ax, ds)       models x questions, correct / wrong / not evaluated
    bar_by_group(ax, values)      one horizontal bar per row of a Series (e.g. accuracy per model)
    extremes(values, n)           the n/2 largest and n/2 smallest entries, when there are too many
    heatmap(ax, table)            a models x groups table of numbers in [0, 1] (e.g. per benchmark)
"""
from __future__ import annotations

from cycler import cycler
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap

# Okabe & Ito (2008) colour-blind-safe palette, black last.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1)), (0, (1, 1)), (0, (5, 5))]
SEQUENTIAL = "viridis"  # perceptually uniform, readable in grey

STYLE = {
    "figure.figsize": (6.4, 3.6),  # inches; fits the book's text column
    "figure.dpi": 150,  # inline PNGs sharp on high-resolution screens
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "figure.constrained_layout.use": True,
    "font.size": 9,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.titlesize": 9,  # titles are not used; set small in case a helper from elsewhere adds one
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "lines.linewidth": 1.5,
    "lines.markersize": 4,
    "image.cmap": SEQUENTIAL,
    "axes.prop_cycle": (cycler(color=PALETTE) + cycler(marker=MARKERS)
                        + cycler(linestyle=LINESTYLES)),
}


def use_style() -> None:
    """Apply the book's figure style to every later figure of this process."""
    mpl.rcParams.update(STYLE)


def style(i: int) -> dict:
    """Colour, marker and line style of series `i`, for artists the property cycle does not reach."""
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[i % len(MARKERS)],
            "linestyle": LINESTYLES[i % len(LINESTYLES)]}


def check_figure(fig: plt.Figure) -> None:
    """Raise AssertionError if `fig` has a title or an axis label with capitals (house style)."""
    for ax in fig.axes:
        assert not ax.get_title(), f"axes has title {ax.get_title()!r}; put it in the caption."
        for label in (ax.get_xlabel(), ax.get_ylabel()):
            assert label == label.lower() or "$" in label, \
                f"axis label {label!r} should be lowercase."
    assert not fig._suptitle, "figure has a suptitle; put it in the caption."


# ---------------------------------------------------------------------------------------------
# The JE-IRT geometry in two dimensions (Eq. 3)


def p_correct(question: np.ndarray, model: np.ndarray) -> np.ndarray:
    """Eq. (3): sigmoid(<E_Q/|E_Q|, E_M> - |E_Q|) for questions (..., d) and one model (d,)."""
    norm = np.linalg.norm(question, axis=-1)
    cos_term = (question @ model) / np.maximum(norm, 1e-12)
    return 1.0 / (1.0 + np.exp(-(cos_term - norm)))


def toy_geometry(seed: int = 0, n_per_topic: int = 8) -> tuple[dict, pd.DataFrame]:
    """A 2-D toy: three model vectors and questions on three topics (angles) at several norms."""
    rng = np.random.default_rng(seed)
    models = {"model a": np.array([2.6, 0.6]), "model b": np.array([0.5, 2.2]),
              "model c": np.array([1.6, 1.5])}
    topics = {"algebra": 10.0, "biology": 80.0, "history": 165.0}  # direction in degrees
    rows = []
    for topic, angle in topics.items():
        theta = np.deg2rad(angle + rng.normal(0, 6, n_per_topic))
        norm = rng.uniform(0.3, 2.6, n_per_topic)  # the norm is the difficulty
        rows += [{"topic": topic, "x": r * np.cos(t), "y": r * np.sin(t), "norm": r}
                 for t, r in zip(theta, norm)]
    return models, pd.DataFrame(rows)


def geometry_toy(ax: plt.Axes | None = None, shade: str = "model a", seed: int = 0) -> plt.Axes:
    """Models as arrows, questions as points; shading = P(correct) of model `shade` anywhere in the
    plane; dashed circles = where each model's P is 1/2 (the circle whose diameter is its arrow)."""
    ax = ax or plt.gca()
    models, questions = toy_geometry(seed)
    lim = 3.0
    grid = np.linspace(-lim, lim, 301)
    xx, yy = np.meshgrid(grid, grid)
    prob = p_correct(np.stack([xx, yy], axis=-1), models[shade])
    filled = ax.contourf(xx, yy, prob, levels=np.linspace(0, 1, 11), cmap="Greys", alpha=0.45)
    ax.contour(xx, yy, prob, levels=[0.25, 0.75], colors="0.35", linewidths=0.6, linestyles=":")
    plt.colorbar(filled, ax=ax, label=rf"$P(\mathrm{{correct}})$ for {shade}", shrink=0.85)
    for i, (name, vec) in enumerate(models.items()):
        s = style(i)
        ax.annotate("", xy=vec, xytext=(0, 0),
                    arrowprops=dict(arrowstyle="-|>", color=s["color"], lw=2))
        ax.add_patch(plt.Circle(vec / 2, np.linalg.norm(vec) / 2, fill=False, color=s["color"],
                                linestyle=s["linestyle"], linewidth=1))
        ax.text(*(vec * 1.08), name, color=s["color"], fontsize=8, ha="center", va="bottom")
    for j, (topic, group) in enumerate(questions.groupby("topic", sort=False)):
        ax.scatter(group["x"], group["y"], marker="o^s"[j % 3], color="white",
                   edgecolor="black", s=22, linewidth=0.8, label=f"questions: {topic}", zorder=3)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-1.2, lim)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.set_xlabel("embedding dimension 1")
    ax.set_ylabel("embedding dimension 2")
    ax.legend(loc="lower left")
    return ax


# ---------------------------------------------------------------------------------------------
# Data pictures


def response_matrix(ax: plt.Axes, ds, max_items: int | None = 600, seed: int = 0) -> plt.Axes:
    """Dataset `ds` as an image: one row per model (most accurate on top), one column per question
    (grouped by benchmark, easiest first); dark = correct, light = wrong, hatched grey = missing."""
    rng = np.random.default_rng(seed)
    cols = np.arange(ds.n_items)
    if max_items is not None and ds.n_items > max_items:
        cols = np.sort(rng.choice(ds.n_items, size=max_items, replace=False))
    labels = ds.labels[:, cols]  # (n_models, n_shown)
    bench = ds.items["benchmark"].to_numpy()[cols]
    order = list(pd.unique(ds.items["benchmark"]))
    with np.errstate(invalid="ignore"):
        item_acc = np.nan_to_num(np.nanmean(labels, axis=0), nan=0.0)
        model_acc = np.nan_to_num(np.nanmean(labels, axis=1), nan=0.0)
    col_order = np.lexsort((-item_acc, [order.index(b) for b in bench]))
    row_order = np.argsort(-model_acc, kind="stable")
    shown = labels[np.ix_(row_order, col_order)]
    # 0 = wrong, 1 = correct, soft labels in between; missing drawn as the axes background.
    cmap = ListedColormap(["#f2f2f2", "#9ecae1", "#08306b"]) if np.isin(shown[~np.isnan(shown)], [0, 1]).all() \
        else plt.get_cmap("Blues")
    ax.set_facecolor("#bdbdbd")
    ax.imshow(np.ma.masked_invalid(shown), aspect="auto", interpolation="nearest",
              cmap=cmap, vmin=0, vmax=1)
    # Benchmark boundaries and names.
    sorted_bench = bench[col_order]
    starts = [0] + [i for i in range(1, len(sorted_bench)) if sorted_bench[i] != sorted_bench[i - 1]]
    for s in starts[1:]:
        ax.axvline(s - 0.5, color="black", linewidth=0.6)
    ends = starts[1:] + [len(sorted_bench)]
    ax.set_xticks([(s + e - 1) / 2 for s, e in zip(starts, ends)])
    ax.set_xticklabels([sorted_bench[s] for s in starts], rotation=60, ha="right")
    ax.set_yticks([])
    ax.grid(False)
    ax.set_xlabel(f"questions ({len(cols)} of {ds.n_items} shown), easiest first within a benchmark")
    ax.set_ylabel(f"models ({ds.n_models}), most accurate on top")
    return ax


def bar_by_group(ax: plt.Axes, values: pd.Series, xlabel: str = "accuracy",
                 highlight: list[str] | None = None, sort: bool = True) -> plt.Axes:
    """One horizontal bar per entry of `values` (largest on top); `highlight` names are hatched."""
    values = values.dropna()
    if sort:
        values = values.sort_values()
    highlight = set(highlight or [])
    colors = [PALETTE[1] if k in highlight else PALETTE[0] for k in values.index]
    hatches = ["///" if k in highlight else "" for k in values.index]
    bars = ax.barh(np.arange(len(values)), values.to_numpy(), color=colors, height=0.75)
    for bar, hatch in zip(bars, hatches):
        bar.set_hatch(hatch)
    ax.set_yticks(np.arange(len(values)))
    ax.set_yticklabels([str(k) for k in values.index], fontsize=7 if len(values) > 20 else 8)
    ax.set_ylim(-0.6, len(values) - 0.4)
    ax.set_xlabel(xlabel.lower())
    ax.grid(axis="y", visible=False)
    return ax


def extremes(values: pd.Series, n: int = 40) -> pd.Series:
    """`values` if it has at most `n` entries, else its n/2 largest and n/2 smallest (for plots)."""
    values = values.dropna().sort_values()
    if len(values) <= n:
        return values
    return pd.concat([values.iloc[: n // 2], values.iloc[-(n - n // 2):]])


def heatmap(ax: plt.Axes, table: pd.DataFrame, label: str = "accuracy", annotate: bool | None = None,
            vmin: float = 0.0, vmax: float = 1.0) -> plt.Axes:
    """`table` (rows x columns) as coloured cells with a colour bar; numbers printed in the cells
    when the table is small enough to read (`annotate=None` decides)."""
    data = table.to_numpy(dtype=float)
    image = ax.imshow(data, aspect="auto", cmap=SEQUENTIAL, vmin=vmin, vmax=vmax,
                      interpolation="nearest")
    plt.colorbar(image, ax=ax, label=label.lower(), shrink=0.8)
    ax.set_xticks(np.arange(data.shape[1]))
    ax.set_xticklabels([str(c) for c in table.columns], rotation=60, ha="right")
    ax.set_yticks(np.arange(data.shape[0]))
    ax.set_yticklabels([str(r) for r in table.index], fontsize=7 if data.shape[0] > 20 else 8)
    ax.grid(False)
    if annotate is None:
        annotate = data.size <= 200
    if annotate:
        for (i, j), v in np.ndenumerate(data):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                        color="white" if v < (vmin + vmax) / 2 else "black")
    return ax
