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


# ---------------------------------------------------------------------------------------------
# Geometry and taxonomy (chapters "Taxonomy" and "Geometry"; numbers from jeirt.analysis)

HATCHES = ["", "///", "...", "xxx", "\\\\\\", "++", "oo", "--"]


def group_style(i: int) -> dict:
    """Colour and marker of group `i` for scatter plots; the pair differs for the first 64 groups
    (markers shift by one every 8 groups, so colour 0 comes back with a new marker)."""
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[(i + i // len(PALETTE)) % len(MARKERS)]}


def grouped_bars(ax: plt.Axes, table: pd.DataFrame, ylabel: str = "score") -> plt.Axes:
    """One group of bars per column of `table` (e.g. a metric), one bar per row (e.g. a
    representation), told apart by colour and hatching; values printed above the bars."""
    n_rows, n_cols = table.shape
    width = 0.8 / n_rows
    x = np.arange(n_cols)
    for i, (name, row) in enumerate(table.iterrows()):
        bars = ax.bar(x + (i - (n_rows - 1) / 2) * width, row.to_numpy(dtype=float), width,
                      color=PALETTE[i % len(PALETTE)], hatch=HATCHES[i % len(HATCHES)],
                      edgecolor="white", linewidth=0.5, label=str(name))
        ax.bar_label(bars, fmt="%.2f", fontsize=6, padding=1)
    ax.set_xticks(x)
    ax.set_xticklabels([str(c) for c in table.columns])
    ax.set_ylabel(ylabel.lower())
    ax.grid(axis="x", visible=False)
    ax.legend(ncols=min(n_rows, 3), loc="upper left", bbox_to_anchor=(0, 1.12))
    return ax


def curves(ax: plt.Axes, series: dict, xlabel: str, ylabel: str) -> plt.Axes:
    """One line per entry of `series` (label -> y values, plotted at x = 1, 2, ...), in the
    house cycle of colours, markers and line styles."""
    for i, (label, y) in enumerate(series.items()):
        y = np.asarray(y, dtype=float)
        s = style(i)
        ax.plot(np.arange(1, len(y) + 1), y, label=str(label), color=s["color"], marker=s["marker"],
                linestyle=s["linestyle"], markevery=max(1, len(y) // 8))
    ax.set_xlabel(xlabel.lower())
    ax.set_ylabel(ylabel.lower())
    ax.legend()
    return ax


def scatter_groups(ax: plt.Axes, xy: np.ndarray, groups, names=None, order=None, size: float = 14,
                   alpha: float = 0.8, legend_title: str | None = None,
                   background: str | None = None) -> plt.Axes:
    """Points `xy` (n, 2) coloured and shaped by `groups` (n,); `names` (n,) are written next to the
    points when given (for a few dozen points). `order` fixes the legend order of the groups; the
    `background` group (e.g. "other") is drawn first, in light grey, so it hides no other group."""
    xy, groups = np.asarray(xy), np.asarray(groups)
    order = list(order) if order is not None else list(pd.unique(groups))
    if background is not None and (groups == background).any():
        rows = groups == background
        ax.scatter(xy[rows, 0], xy[rows, 1], s=size, alpha=alpha, color="0.75", marker=".",
                   edgecolor="none", label=f"{background} ({rows.sum()})")
    present = [g for g in order if g != background and (groups == g).any()]  # styled, drawn on top
    for i, group in enumerate(present):
        rows = groups == group
        ax.scatter(xy[rows, 0], xy[rows, 1], s=size, alpha=alpha, edgecolor="none",
                   label=f"{group} ({rows.sum()})", **group_style(i))
    if names is not None:
        for (x, y), name in zip(xy, names):
            ax.annotate(str(name), (x, y), fontsize=5, xytext=(2, 2), textcoords="offset points",
                        color="0.25")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(title=legend_title, loc="center left", bbox_to_anchor=(1.0, 0.5), markerscale=1.5)
    return ax


COSINE_LABELS = {"global": "to the mean direction of all questions",
                 "own benchmark": "to the mean direction of its benchmark"}


def cosine_histograms(ax: plt.Axes, cosines: pd.DataFrame, columns=("global", "own benchmark"),
                      bins: int = 40, log: bool = True) -> plt.Axes:
    """Histograms (share of questions) of the cosine columns of `jeirt.analysis.cosine_to_means`,
    as outlines with different line styles so they read in grey; a log scale (`log`) keeps the
    thin tail visible next to the peak near 1."""
    edges = np.linspace(-1, 1, bins + 1)
    for i, column in enumerate(columns):
        values = cosines[column].to_numpy()
        s = style(i)
        ax.hist(values, bins=edges, weights=np.full(len(values), 1 / len(values)), histtype="step",
                color=s["color"], linestyle=s["linestyle"], linewidth=1.5,
                label=COSINE_LABELS.get(column, column))
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("cosine of a question's direction to a mean direction")
    ax.set_ylabel("share of questions" + (" (log scale)" if log else ""))
    ax.legend(loc="upper left")
    return ax


def opposite_pair(ax: plt.Axes, models, labels: np.ndarray, probs: np.ndarray,
                  questions=("question a", "question b"), max_names: int = 40) -> plt.Axes:
    """Each model's answers to two questions: JE-IRT's P(correct) as lines, the observed answer as
    a marker on the line (filled: correct, open: wrong, none: not graded). `labels`, `probs`:
    (n_models, 2), models in the order given; their names label the axis when there are at most
    `max_names` of them (shortened to the part after the last "/")."""
    x = np.arange(len(models))
    for k in range(2):
        s = style(k)
        ax.plot(x, probs[:, k], color=s["color"], linestyle=s["linestyle"], marker="none",
                label=f"{questions[k]}: je-irt p(correct)")
        right, wrong = labels[:, k] == 1, labels[:, k] == 0
        ax.scatter(x[right], probs[right, k], marker=s["marker"], color=s["color"], s=28, zorder=3,
                   label=f"{questions[k]}: answered correctly")
        ax.scatter(x[wrong], probs[wrong, k], marker=s["marker"], facecolor="white",
                   edgecolor=s["color"], s=28, zorder=3, label=f"{questions[k]}: answered wrongly")
    if len(models) <= max_names:
        short = [_shorten_name(m) for m in models]
        ax.set_xticks(x)
        ax.set_xticklabels(short, rotation=70, ha="right", fontsize=6)
    else:
        ax.set_xticks([])
    ax.set_ylabel("p(correct)")
    ax.set_xlabel("models, least to most accurate overall")
    ax.grid(axis="x", visible=False)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax


def _shorten_name(name, max_chars: int = 28) -> str:
    """A model name for a tick label: the part after the last "/", at most `max_chars` long."""
    name = str(name).rsplit("/", 1)[-1]
    return name if len(name) <= max_chars else name[: max_chars - 1] + "…"


def bound_scatter(ax: plt.Axes, bound: np.ndarray, gap: np.ndarray, label: str | None = None,
                  index: int = 0, max_points: int = 20000, seed: int = 0) -> plt.Axes:
    """|ΔP| against its bound (one point per question pair and model) with the diagonal y = x:
    a bound that holds leaves every point on or below it. Shows at most `max_points` points."""
    bound, gap = np.ravel(bound), np.ravel(gap)
    if len(bound) > max_points:
        keep = np.random.default_rng(seed).choice(len(bound), size=max_points, replace=False)
        bound, gap = bound[keep], gap[keep]
    s = style(index)
    ax.scatter(bound, gap, s=3, alpha=0.3, color=s["color"], marker=s["marker"], edgecolor="none",
               rasterized=True, label=label)
    top = max(bound.max(), gap.max()) * 1.05
    ax.plot([0, top], [0, top], color="black", linestyle="--", linewidth=0.8, marker="none")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel(r"bound $(\|E_M\|\,\|u_1 - u_2\| + |r_1 - r_2|)\,/\,4$")
    ax.set_ylabel(r"$|P_1 - P_2|$")
    return ax


# ---------------------------------------------------------------------------------------------
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


def discrimination_scatter(ax: plt.Axes, discrimination: np.ndarray, difficulty: np.ndarray,
                           near_zero: float = 0.25, limit: float = 6.0) -> plt.Axes:
    """Difficulty b against discrimination a, one point per item (the paper's Fig. 1, left). The band
    |a| < near_zero is shaded; b beyond +-limit is drawn on the edge as a triangle."""
    a, b = np.asarray(discrimination, float), np.asarray(difficulty, float)
    ok = np.isfinite(a) & np.isfinite(b)
    inside = ok & (np.abs(b) <= limit)
    ax.axvspan(-near_zero, near_zero, color="0.85", zorder=0, label=f"|a| < {near_zero:g}")
    ax.axvline(0, color="0.4", linewidth=0.6)
    ax.scatter(a[inside], b[inside], s=9, alpha=0.55, color=PALETTE[0], edgecolor="none", marker="o",
               label="item")
    out = ok & ~inside
    ax.scatter(a[out], np.clip(b[out], -limit, limit), s=14, alpha=0.7, color=PALETTE[5], marker="^",
               edgecolor="none", label=f"|b| > {limit:g} (drawn at the edge)")
    ax.set_ylim(-limit * 1.05, limit * 1.05)
    ax.set_xlabel("discrimination a")
    ax.set_ylabel("difficulty b")
    ax.legend(loc="lower right", fontsize=7)
    return ax


def icc_with_answers(ax: plt.Axes, ability: np.ndarray, answers: np.ndarray, discrimination: float,
                     intercept: float, n_bins: int = 10, seed: int = 0) -> plt.Axes:
    """A fitted item's curve sigmoid(a theta + c), every graded model's answer as a dot at its ability
    (1 = correct, 0 = wrong, jittered up or down), and the share correct in `n_bins` ability bins."""
    ok = np.isfinite(answers) & np.isfinite(ability)
    theta, y = ability[ok], answers[ok]
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(0, 0.06, size=len(y)) * np.where(y > 0.5, -1, 1)
    alpha = float(np.clip(30 / max(len(y), 1), 0.15, 0.8))
    ax.scatter(theta, y + jitter, s=8, alpha=alpha, color=PALETTE[0], edgecolor="none", label="a model's answer")
    grid = np.linspace(theta.min() - 0.3, theta.max() + 0.3, 200)
    ax.plot(grid, 1 / (1 + np.exp(-(discrimination * grid + intercept))), color=PALETTE[1], marker="",
            linewidth=2, label="fitted 2PL")
    edges = np.quantile(theta, np.linspace(0, 1, min(n_bins, len(theta)) + 1))
    which = np.clip(np.searchsorted(edges, theta, side="right") - 1, 0, len(edges) - 2)
    centres = [theta[which == k].mean() for k in range(len(edges) - 1) if (which == k).any()]
    shares = [y[which == k].mean() for k in range(len(edges) - 1) if (which == k).any()]
    ax.plot(centres, shares, color="black", marker="s", markersize=3.5, linestyle="--", linewidth=1,
            label="share correct per bin")
    ax.set_ylim(-0.1, 1.1)
    ax.set_xlabel(r"fitted ability $\theta$")
    ax.set_ylabel("correct")
    return ax


def saturation_scatter(ax: plt.Axes, actual_share: np.ndarray, predicted_share: np.ndarray,
                       tolerance: float = 0.05) -> plt.Axes:
    """Per item: the share of models the 2PL predicts correct (p >= 1/2) against the share actually
    correct; shaded bands mark (near-)unanimous shares (within `tolerance` of 0 or 1)."""
    for lo, hi in ((-0.05, tolerance), (1 - tolerance, 1.05)):
        ax.axhspan(lo, hi, color="0.88", zorder=0)
        ax.axvspan(lo, hi, color="0.93", zorder=0)
    ax.scatter(actual_share, predicted_share, s=9, alpha=0.5, color=PALETTE[0], edgecolor="none")
    ax.plot([0, 1], [0, 1], color="0.4", linestyle=":", linewidth=0.8, marker="")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("share of models actually correct")
    ax.set_ylabel("share predicted correct")
    return ax


def inclusion_heatmap(ax: plt.Axes, ratio: pd.DataFrame, max_cells: int = 120, label: str | None = None) -> plt.Axes:
    """R(M_i, M_j) (Appendix J) as an image, models from least (top, left) to most accurate. With more
    than `max_cells` models, consecutive models are pooled into `max_cells` groups (mean of R)."""
    import warnings  # local: this block is appended to a shared module

    values = ratio.to_numpy(dtype=float)
    n = len(values)
    if n > max_cells:
        starts = np.array([g[0] for g in np.array_split(np.arange(n), max_cells)])
        pooled = lambda x: np.add.reduceat(np.add.reduceat(x, starts, axis=0), starts, axis=1)  # noqa: E731
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks stay NaN
            values = pooled(np.nan_to_num(values)) / pooled(np.isfinite(values).astype(float))
    image = ax.imshow(values, cmap=SEQUENTIAL, vmin=0, vmax=1, interpolation="nearest")
    plt.colorbar(image, ax=ax, shrink=0.8, label=label or "share of row's correct answers\nthe column model misses")
    ax.grid(False)
    unit = "" if n <= max_cells else f", pooled by {n / max_cells:.0f}"
    ax.set_xlabel(f"model j, least to most accurate{unit}")
    ax.set_ylabel(f"model i{unit}")
    if n <= 40:
        ax.set_xticks(np.arange(n))
        ax.set_yticks(np.arange(n))
        ax.set_xticklabels([str(m)[:18] for m in ratio.columns], rotation=90, fontsize=5)
        ax.set_yticklabels([str(m)[:18] for m in ratio.index], fontsize=5)
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    return ax


# ---------------------------------------------------------------------------------------------
# Out of distribution and difficulty (chapters "Out of distribution" and "Difficulty and norm")


def labelled_scatter(ax: plt.Axes, x, y, names=None, xlabel: str = "x", ylabel: str = "y",
                     size: float = 18, label: str | None = None, i: int = 0) -> plt.Axes:
    """Points (x, y) in series style `i`, each written next to its name when `names` are given (for a
    few dozen points, e.g. one per benchmark); `label` names the series in a legend."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    s = style(i)
    ax.scatter(x, y, s=size, color=s["color"], marker=s["marker"], edgecolor="none", alpha=0.85, label=label)
    if names is not None:
        for xi, yi, name in zip(x, y, names):
            ax.annotate(str(name), (xi, yi), fontsize=6, xytext=(3, 2), textcoords="offset points", color="0.25")
    # Lowercase labels (house style), except those with mathtext, where case carries meaning.
    ax.set_xlabel(xlabel if "$" in xlabel else xlabel.lower())
    ax.set_ylabel(ylabel if "$" in ylabel else ylabel.lower())
    return ax


def roc_curves(ax: plt.Axes, curves: dict) -> plt.Axes:
    """One ROC(-like) curve per entry of `curves` (label -> DataFrame with columns fpr, tpr, e.g. from
    `jeirt.analysis.difficulty_roc`), in the house cycle, with the chance diagonal."""
    ax.plot([0, 1], [0, 1], color="0.6", linewidth=0.8, linestyle=":", marker="", label="chance")
    for i, (label, table) in enumerate(curves.items()):
        s = style(i)
        ax.plot(table["fpr"], table["tpr"], color=s["color"], linestyle=s["linestyle"], marker=s["marker"],
                markevery=max(1, len(table) // 8), label=str(label))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("share of correct answers above the threshold")
    ax.set_ylabel("share of wrong answers above the threshold")
    ax.legend(loc="lower right")
    return ax


# ---------------------------------------------------------------------------------------------
# Embedding dimension and onboarding (chapters "Embedding dimension" and "Onboarding new LLMs";
# numbers from jeirt.experiments)


def accuracy_vs_dimension(ax: plt.Axes, summary: pd.DataFrame, baselines: pd.DataFrame | None = None) -> plt.Axes:
    """Test accuracy against d (log axis), one line per encoder with a band from the worst to the best
    seed (`jeirt.experiments.sweep_summary`); `baselines` (method, encoder, accuracy) as horizontal
    lines in the encoder's colour, one line style per method."""
    encoders = list(dict.fromkeys(summary["encoder"]))
    methods = [] if baselines is None else list(dict.fromkeys(baselines["method"]))
    for i, encoder in enumerate(encoders):
        rows = summary[summary["encoder"] == encoder].sort_values("d")
        s = style(i)
        ax.fill_between(rows["d"], rows["accuracy_min"], rows["accuracy_max"], color=s["color"], alpha=0.15,
                        linewidth=0)
        ax.plot(rows["d"], rows["accuracy_mean"], color=s["color"], marker=s["marker"], linestyle="-",
                label=f"je-irt, {encoder}")
        for j, method in enumerate(methods):
            value = baselines[(baselines["encoder"] == encoder) & (baselines["method"] == method)]["accuracy"]
            if len(value):
                ax.axhline(float(value.mean()), color=s["color"], linestyle=LINESTYLES[(j + 1) % len(LINESTYLES)],
                           linewidth=1, label=f"{method}, {encoder}")
    grid = sorted(summary["d"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(grid)
    ax.set_xticklabels([str(d) for d in grid])
    ax.minorticks_off()
    ax.set_xlabel("embedding dimension d (log scale)")
    ax.set_ylabel("test accuracy")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax


def dots_by_group(ax: plt.Axes, table: pd.DataFrame, xlabel: str = "test accuracy",
                  mean_lines: bool = True) -> plt.Axes:
    """One row per group (index of `table`, sorted by its first column, largest on top) and one
    marker per column (e.g. a method); `mean_lines` adds each column's mean as a vertical line."""
    table = table.sort_values(table.columns[0])
    y = np.arange(len(table))
    for i, column in enumerate(table.columns):
        s = style(i)
        values = table[column].to_numpy(dtype=float)
        ax.scatter(values, y, color=s["color"], marker=s["marker"], s=18, zorder=3, label=str(column),
                   facecolor=s["color"] if i == 0 else "none")
        if mean_lines:
            ax.axvline(np.nanmean(values), color=s["color"], linestyle=s["linestyle"], linewidth=0.9)
    ax.set_yticks(y)
    ax.set_yticklabels([_shorten_name(r) for r in table.index], fontsize=6 if len(table) > 20 else 7)
    ax.set_ylim(-0.7, len(table) - 0.3)
    ax.set_xlabel(xlabel.lower())
    ax.grid(axis="y", visible=False)
    return ax


def onboarding_curves(ax: plt.Axes, tables: dict[str, pd.DataFrame]) -> plt.Axes:
    """Accuracy of onboarded LLMs against the share of their training items (log axis), mean with a
    +-1 sd band, one line per table of `jeirt.experiments.onboarding_table`; each table's "All"
    column (joint training) as a horizontal line in the same colour."""
    for i, (label, table) in enumerate(tables.items()):
        s = style(i)
        shares = [c for c in table.columns if c != "All"]
        x = np.array([float(c.rstrip("%")) / 100 for c in shares])
        mean, sd = table.loc["mean", shares].to_numpy(float), table.loc["sd", shares].to_numpy(float)
        ax.fill_between(x, mean - sd, mean + sd, color=s["color"], alpha=0.12, linewidth=0)
        ax.plot(x, mean, color=s["color"], marker=s["marker"], linestyle="-", label=f"{label}: onboarded")
        if "All" in table.columns:
            ax.axhline(table.at["mean", "All"], color=s["color"], linestyle="--", linewidth=1,
                       label=f"{label}: trained jointly (all)")
    ax.set_xscale("log")
    ticks = [0.01, 0.05, 0.1, 0.2, 0.4, 1.0]
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:.0%}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("share of the new model's training items used (log scale)")
    ax.set_ylabel("test accuracy of the new models")
    ax.legend(loc="lower right")
    return ax


def rate_accuracy(ax: plt.Axes, summaries: dict[int, pd.DataFrame]) -> plt.Axes:
    """Mean test accuracy of new LLMs against the items each was onboarded from (log axis), one line
    per d (`jeirt.experiments.rate_summary`); the all-items accuracy dashed in the same colour."""
    for i, (d, summary) in enumerate(summaries.items()):
        s = style(i)
        rows = summary.drop(index="all", errors="ignore")
        ax.plot(rows["items"], rows["accuracy"], color=s["color"], marker=s["marker"], linestyle="-", label=f"d = {d}")
        if "all" in summary.index:
            ax.axhline(summary.at["all", "accuracy"], color=s["color"], linestyle="--", linewidth=0.9)
    _budget_ticks(ax, summaries)
    ax.set_xlabel("items seen per new model, n (log scale)")
    ax.set_ylabel("test accuracy")
    ax.legend(loc="lower right")
    return ax


def _budget_ticks(ax: plt.Axes, summaries: dict[int, pd.DataFrame]) -> None:
    """A base-2 log x axis with every other budget of `summaries` as a plain-number tick."""
    seen = sorted({int(n) for sm in summaries.values() for n in sm["items"].drop(index="all", errors="ignore")})
    ax.set_xscale("log", base=2)
    ax.set_xticks(seen[::2] if len(seen) > 6 else seen)
    ax.set_xticklabels([str(n) for n in (seen[::2] if len(seen) > 6 else seen)])
    ax.minorticks_off()


def rate_loglog(ax: plt.Axes, summaries: dict[int, pd.DataFrame], column: str = "kl",
                ylabel: str = "excess log loss over the all-items fit") -> plt.Axes:
    """`column` of each `rate_summary` against the items seen, both axes logarithmic, one line per d;
    non-positive values cannot be drawn on a log axis and are left out. A grey line of slope -1
    (through the first d's value at the middle budget) shows the O(d/n) rate's shape."""
    anchor = None
    for i, (d, summary) in enumerate(summaries.items()):
        s = style(i)
        rows = summary.drop(index="all", errors="ignore")
        rows = rows[rows[column] > 0]
        ax.plot(rows["items"], rows[column], color=s["color"], marker=s["marker"], linestyle="-", label=f"d = {d}")
        if anchor is None and len(rows):
            anchor = rows.iloc[len(rows) // 2]
    if anchor is not None:
        seen = pd.concat([sm["items"].drop(index="all", errors="ignore") for sm in summaries.values()])
        n = np.array([seen.min(), seen.max()], dtype=float)
        ax.plot(n, anchor[column] * anchor["items"] / n, color="0.45", linestyle=":", marker="", linewidth=1.2,
                label="slope -1 (rate 1/n)")
    _budget_ticks(ax, summaries)
    ax.set_yscale("log")
    ax.set_xlabel("items seen per new model, n (log scale)")
    ax.set_ylabel(ylabel.lower())
    ax.legend(loc="lower left")
    return ax


# ---------------------------------------------------------------------------------------------
# Efficient evaluation (chapter "Efficient evaluation"; numbers from jeirt.evaluation)


def error_by_k(ax: plt.Axes, summary: pd.DataFrame, value: str = "mae", ylabel: str = "mean absolute error",
               baseline: str = "plain mean", rules: list[str] | None = None) -> plt.Axes:
    """`value` against the number of questions asked k, both axes logarithmic, one line per
    selection rule of `summary` (columns rule, k, value); the `baseline` rule is drawn in black and
    dashed so that every rule reads against it."""
    rules = rules or [r for r in pd.unique(summary["rule"]) if r != baseline]
    for i, rule in enumerate(rules):
        rows = summary[summary["rule"] == rule].sort_values("k")
        s = style(i)
        ax.plot(rows["k"], rows[value], color=s["color"], marker=s["marker"], linestyle="-", label=rule)
    if baseline in set(summary["rule"]):
        rows = summary[summary["rule"] == baseline].sort_values("k")
        ax.plot(rows["k"], rows[value], color="black", marker="x", linestyle="--", label=baseline)
    ks = sorted(summary["k"].unique())
    ax.set_xscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_yscale("log")  # errors fall like 1/sqrt(k): a straight line of slope -1/2 on these axes
    ax.yaxis.set_major_locator(mpl.ticker.LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))
    ax.yaxis.set_major_formatter(mpl.ticker.FormatStrFormatter("%g"))
    ax.minorticks_off()
    ax.set_xlabel("questions asked, k (log scale)")
    ax.set_ylabel(f"{ylabel.lower()} (log scale)")
    ax.legend()
    return ax


def estimates_with_intervals(ax: plt.Axes, table: pd.DataFrame, truth: pd.Series,
                             label: str = "estimate, 90% interval") -> plt.Axes:
    """One row per group (index of `table`, columns estimate, lower, upper): the estimate as a dot
    with its interval as a bar, and the true value (`truth`, same index) as a cross."""
    rows = np.arange(len(table))[::-1]
    ax.errorbar(table["estimate"], rows, xerr=[table["estimate"] - table["lower"], table["upper"] - table["estimate"]],
                fmt="o", color=PALETTE[0], capsize=2, label=label)
    ax.scatter(truth.reindex(table.index), rows, marker="x", color="black", zorder=3, label="true accuracy")
    ax.set_yticks(rows)
    ax.set_yticklabels([str(g) for g in table.index])
    ax.set_xlabel("accuracy")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower right")
    return ax


def curves_by_n(ax: plt.Axes, table: pd.DataFrame, value: str = "accuracy", by: str = "method",
                references: dict[str, float] | None = None, ylabel: str | None = None) -> plt.Axes:
    """Mean `value` of `table` against n (models whose answers are known), one line per `by`, with
    the spread over seeds as error bars; `references` are horizontal lines (label -> value)."""
    for i, (name, rows) in enumerate(table.groupby(by, sort=False)):
        stats = rows.groupby("n")[value].agg(["mean", "std"])
        s = style(i)
        ax.errorbar(stats.index, stats["mean"], yerr=stats["std"].fillna(0), color=s["color"], marker=s["marker"],
                    linestyle=s["linestyle"], capsize=2, label=str(name))
    for j, (name, level) in enumerate((references or {}).items()):
        ax.axhline(level, color="0.4", linestyle=LINESTYLES[(j + 1) % len(LINESTYLES)], linewidth=1, label=name)
    ns = sorted(table["n"].unique())
    ax.set_xticks(ns)
    ax.set_xlabel("models whose answers are known, n")
    ax.set_ylabel((ylabel or value).lower())
    ax.legend()
    return ax


# ---------------------------------------------------------------------------------------------
# Routing (chapter "Routing"; numbers from jeirt.routing)

REFERENCE_MARKERS = {"best single model": "s", "per-benchmark best": "D", "random model": "v", "oracle": "*"}


def routing_frontier(ax: plt.Axes, frontiers: dict[str, pd.DataFrame], references: pd.DataFrame | None = None,
                     singles: pd.DataFrame | None = None, unit: str = "usd per 1,000 questions") -> plt.Axes:
    """Accuracy against mean cost per question (log axis): one line per router (label -> a
    `jeirt.routing.frontier` table, lambda = 0 at its costly end, marked with a larger marker), the
    reference policies (index: policy; columns accuracy, cost) as black markers, and each single model
    (`routing.single_models`) as a small grey dot."""
    if singles is not None and len(singles):
        ax.scatter(singles["cost"], singles["accuracy"], s=8, color="0.7", marker="o", zorder=1,
                   label="single models")
    for i, (name, table) in enumerate(frontiers.items()):
        s = style(i)
        table = table.sort_values("lam")
        ax.plot(table["cost"], table["accuracy"], color=s["color"], linestyle=s["linestyle"], marker=s["marker"],
                markersize=2.5, markevery=max(1, len(table) // 10), label=str(name), zorder=2)
        ax.scatter(table["cost"].iloc[:1], table["accuracy"].iloc[:1], s=30, color=s["color"], marker=s["marker"],
                   edgecolor="black", linewidth=0.5, zorder=3)
    if references is not None:
        for policy, row in references.iterrows():
            ax.scatter(row["cost"], row["accuracy"], s=36, facecolor="none", edgecolor="black", linewidth=1,
                       marker=REFERENCE_MARKERS.get(str(policy), "o"), zorder=4, label=str(policy))
    ax.set_xscale("log")
    ax.set_xlabel(f"mean cost ({unit}, log scale)")
    ax.set_ylabel("routed accuracy")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax


def difficulty_vs_share(ax: plt.Axes, difficulty: np.ndarray, share_wrong: np.ndarray, label: str,
                        i: int = 0) -> plt.Axes:
    """One point per question: a model's difficulty score (x) against the share of graded models that
    answered it wrong (y), in series style `i`, with the Spearman correlation in the legend label."""
    from jeirt.probes import spearman

    x, y = np.asarray(difficulty, dtype=float), np.asarray(share_wrong, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    rho = spearman(x, y)
    s = style(i)
    ax.scatter(x[keep], y[keep], s=6, alpha=0.5, color=s["color"], marker=s["marker"], edgecolor="none",
               label=f"{label} (spearman {rho:.2f})")
    ax.set_xlabel(f"difficulty: {label}".lower())
    ax.set_ylabel("share of models wrong")
    ax.legend(loc="lower right", markerscale=2)
    return ax


# ---------------------------------------------------------------------------------------------
# Ability probes and soft labels (chapter "Beyond the paper"; numbers from jeirt.probes)


def probe_histograms(ax: plt.Axes, scores: np.ndarray, marked: np.ndarray, bins: int = 30,
                     names: tuple[str, str] = ("marked", "not marked"),
                     xlabel: str = "projection on the probe direction") -> plt.Axes:
    """Distributions (densities) of `scores` for marked and unmarked questions: a filled histogram
    and a hatched one in two colours, so they differ in grey print too."""
    scores, marked = np.asarray(scores, dtype=float), np.asarray(marked, dtype=bool)
    edges = np.histogram_bin_edges(scores, bins=bins)
    for i, (sel, name, hatch) in enumerate([(~marked, names[1], "///"), (marked, names[0], "")]):
        ax.hist(scores[sel], bins=edges, density=True, color=PALETTE[i], alpha=0.45 if hatch == "" else 0.25,
                hatch=hatch, edgecolor=PALETTE[i], linewidth=0.8, label=f"{name} ({sel.sum()})")
    ax.set_xlabel(xlabel.lower())
    ax.set_ylabel("density")
    ax.legend()
    return ax


def soft_label_curves(ax: plt.Axes, table: pd.DataFrame, value: str, ylabel: str | None = None,
                      reference: str = "true probabilities") -> plt.Axes:
    """Mean `value` of `table` (columns labels, gradings, value; one row per fit) against the number
    of gradings per pair (log axis), with the spread over seeds as error bars; the rows whose
    `labels` is `reference` (trained on the truth) as a dashed horizontal line."""
    rows = table[table["labels"] != reference]
    stats = rows.groupby("gradings")[value].agg(["mean", "std"])
    s = style(0)
    ax.errorbar(stats.index, stats["mean"], yerr=stats["std"].fillna(0), color=s["color"], marker=s["marker"],
                linestyle="-", capsize=2, label="mean of k 0/1 gradings")
    if (table["labels"] == reference).any():
        ax.axhline(table.loc[table["labels"] == reference, value].mean(), color="black", linestyle="--",
                   linewidth=1, label=f"trained on the {reference}")
    ax.set_xscale("log")
    ax.set_xticks(list(stats.index))
    ax.set_xticklabels([str(int(k)) for k in stats.index])
    ax.minorticks_off()
    ax.set_xlabel("gradings per pair, k (log scale)")
    ax.set_ylabel((ylabel or value).lower())
    ax.legend()
    return ax
