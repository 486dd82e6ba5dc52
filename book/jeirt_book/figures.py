"""The book's figure style and the plots that several pages share: one palette, markers and line
styles, so that every figure reads without colour alone, and text of at least 9 pt as the site shows
it (`small_text` measures that; seaborn draws the heatmaps in the same style).
"""

from __future__ import annotations

from typing import Any, Literal

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from cycler import cycler
from matplotlib.figure import Figure, SubFigure

# Okabe & Ito (2008) colour-blind-safe palette, black last.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]


MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1)), (0, (1, 1)), (0, (5, 5))]


SEQUENTIAL = "viridis"  # perceptually uniform, readable in grey


# How the site shows a figure: the PNG (at savefig.dpi) at its own size in CSS pixels (96 an inch),
# shrunk to the text column when wider (688 px in a 1280-pixel window, measured in Chromium).
COLUMN_PX = 688
CSS_PX_PER_INCH = 96
MIN_POINTS = 9  # the smallest text a reader should have to read, as shown
SMALL = 9  # font size (pt) of tick labels, legends and annotations in a figure of the default width

STYLE = {
    "figure.figsize": (6.4, 3.6),  # inches; 960 px at 150 dpi, shown at 688 px: text at 1.12x its size
    "figure.dpi": 150,  # inline PNGs sharp on high-resolution screens
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "figure.constrained_layout.use": True,
    "font.size": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": SMALL,
    "ytick.labelsize": SMALL,
    "legend.fontsize": SMALL,
    "legend.title_fontsize": SMALL,
    "legend.frameon": False,
    "axes.titlesize": 10,  # titles are not used; set in case a helper from elsewhere adds one
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "lines.linewidth": 1.5,
    "lines.markersize": 5,
    "image.cmap": SEQUENTIAL,
    "axes.prop_cycle": (cycler(color=PALETTE) + cycler(marker=MARKERS) + cycler(linestyle=LINESTYLES)),
}


def use_style() -> None:
    """Apply the book's figure style to every later figure of this process (seaborn's plots too: they
    draw with matplotlib's settings and colour cycle)."""
    mpl.rcParams.update(STYLE)  # type: ignore[arg-type]  # matplotlib types rcParams keys as a Literal of every name


def _renderer(fig: Figure | SubFigure) -> Any:
    """The Agg renderer of `fig`'s canvas (the backend the book draws with), to measure text."""
    return fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg's canvas has it, the base type not


def _figure(ax: plt.Axes) -> Figure:
    """The top-level figure of `ax` (its size is what the page shows)."""
    fig = ax.get_figure(root=True)
    assert isinstance(fig, Figure), "axes drawn on a figure"
    return fig


def shown_scale(fig: plt.Figure) -> float:
    """How many points on the site one point of `fig` becomes (its tight PNG shown at its size in CSS
    pixels, shrunk to the text column when wider)."""
    renderer = _renderer(fig)
    width_in = fig.get_tightbbox(renderer).width
    saved_dpi = mpl.rcParams["savefig.dpi"]
    dpi = float(fig.dpi if saved_dpi == "figure" else saved_dpi)
    shown_px = min(width_in * dpi, COLUMN_PX)  # CSS pixels
    return shown_px / CSS_PX_PER_INCH / width_in


def small_text(fig: plt.Figure, min_points: float = MIN_POINTS) -> list[str]:
    """Every visible text of `fig` (labels, tick labels, legends, annotations) smaller than
    `min_points` as the site shows it, as 'text (size pt)'; empty when all are legible."""
    fig.canvas.draw()
    scale = shown_scale(fig)
    found = []
    for text in fig.findobj(mpl.text.Text):
        shown = float(text.get_fontsize()) * scale  # points on the site
        if text.get_visible() and text.get_text().strip() and shown < min_points - 0.05:
            found.append(f"{text.get_text()[:30]!r} ({shown:.1f} pt)")
    return found


def _fit_rows(ax: plt.Axes, n_rows: int) -> None:
    """Make a figure of one row of axes tall enough for `n_rows` tick labels of SMALL points each."""
    fig = _figure(ax)
    rows = {spec.rowspan.start for a in fig.axes if (spec := a.get_subplotspec()) is not None}
    if len(rows) > 1:
        return
    needed = 0.8 + n_rows * SMALL * 1.5 / 72  # inches: 1.5 lines a label, axis labels around
    if fig.get_figheight() < needed:
        fig.set_figheight(needed)


def annotate_points(ax: plt.Axes, x, y, names, offset=(3, 2)) -> int:
    """Write each name next to its point (x, y), leaving out a name that would overlap one already
    written (the first in order wins); returns how many were written."""
    renderer = _renderer(_figure(ax))
    taken: list[Any] = []
    written = 0
    for xi, yi, name in zip(x, y, names):
        if not (np.isfinite(xi) and np.isfinite(yi)):
            continue
        text = ax.annotate(str(name), (xi, yi), fontsize=SMALL, xytext=offset, textcoords="offset points", color="0.25")
        box = text.get_window_extent(renderer)
        if any(box.overlaps(other) for other in taken):
            text.remove()
            continue
        taken.append(box)
        written += 1
    return written


def style(i: int) -> dict:
    """Colour, marker and line style of series `i`, for artists the property cycle does not reach."""
    return {
        "color": PALETTE[i % len(PALETTE)],
        "marker": MARKERS[i % len(MARKERS)],
        "linestyle": LINESTYLES[i % len(LINESTYLES)],
    }


def bar_by_group(
    ax: plt.Axes, values: pd.Series, xlabel: str = "accuracy", highlight: list[str] | None = None, sort: bool = True
) -> plt.Axes:
    """One horizontal bar per entry of `values` (largest on top); `highlight` names are hatched."""
    values = values.dropna()
    if sort:
        values = values.sort_values()
    marked = set(highlight or [])
    colors = [PALETTE[1] if k in marked else PALETTE[0] for k in values.index]
    hatches = ["///" if k in marked else "" for k in values.index]
    bars = ax.barh(np.arange(len(values)), values.to_numpy(), color=colors, height=0.75)
    for bar, hatch in zip(bars, hatches):
        bar.set_hatch(hatch)
    _fit_rows(ax, len(values))
    ax.set_yticks(np.arange(len(values)))
    ax.set_yticklabels([str(k) for k in values.index])
    ax.set_ylim(-0.6, len(values) - 0.4)
    ax.set_xlabel(xlabel.lower())
    ax.grid(axis="y", visible=False)
    return ax


def extremes(values: pd.Series, n: int = 40) -> pd.Series:
    """`values` if it has at most `n` entries, else its n/2 largest and n/2 smallest (for plots)."""
    values = values.dropna().sort_values()
    if len(values) <= n:
        return values
    return pd.concat([values.iloc[: n // 2], values.iloc[-(n - n // 2) :]])


def heatmap(
    ax: plt.Axes,
    table: pd.DataFrame,
    label: str = "accuracy",
    annotate: bool | None = None,
    vmin: float = 0.0,
    vmax: float = 1.0,
) -> plt.Axes:
    """`table` (rows x columns) as coloured cells with a colour bar (seaborn), missing cells left
    blank; numbers printed in the cells when each cell holds "0.00" at 9 pt (`annotate=None` decides).
    Tick labels that would overlap are thinned by seaborn."""
    data = table.astype(float)
    if annotate is None:
        box = ax.get_position()  # figure fraction, before the colour bar takes its share
        fig = _figure(ax)
        cell_w = box.width * fig.get_figwidth() * 72 * 0.85 / max(data.shape[1], 1)  # points
        cell_h = box.height * fig.get_figheight() * 72 / max(data.shape[0], 1)
        annotate = bool(cell_w >= 4 * SMALL and cell_h >= 1.6 * SMALL)
    sns.heatmap(
        data,
        ax=ax,
        cmap=SEQUENTIAL,
        vmin=vmin,
        vmax=vmax,
        annot=bool(annotate),
        fmt=".2f",
        annot_kws={"fontsize": SMALL},
        xticklabels="auto",
        yticklabels="auto",
        cbar_kws={"label": label.lower(), "shrink": 0.8},
    )
    ax.set_xlabel(str(table.columns.name or "").lower())
    ax.set_ylabel(str(table.index.name or "").lower())
    plt.setp(ax.get_xticklabels(), rotation=60, ha="right", rotation_mode="anchor")
    plt.setp(ax.get_yticklabels(), rotation=0)
    ax.grid(False)  # the style's grid would cross the cells
    return ax


# Geometry and taxonomy (chapters "Taxonomy" and "Geometry")
HATCHES = ["", "///", "...", "xxx", "\\\\\\", "++", "oo", "--"]


def curves(ax: plt.Axes, series: dict, xlabel: str, ylabel: str) -> plt.Axes:
    """One line per entry of `series` (label -> y values, plotted at x = 1, 2, ...), in the
    house cycle of colours, markers and line styles."""
    for i, (label, y) in enumerate(series.items()):
        y = np.asarray(y, dtype=float)
        s = style(i)
        ax.plot(
            np.arange(1, len(y) + 1),
            y,
            label=str(label),
            color=s["color"],
            marker=s["marker"],
            linestyle=s["linestyle"],
            markevery=max(1, len(y) // 8),
        )
    ax.set_xlabel(xlabel.lower())
    ax.set_ylabel(ylabel.lower())
    ax.legend()
    return ax


# Out of distribution and difficulty (chapters "Out of distribution" and "Difficulty and norm")
def labelled_scatter(
    ax: plt.Axes,
    x,
    y,
    names=None,
    xlabel: str = "x",
    ylabel: str = "y",
    size: float = 18,
    label: str | None = None,
    i: int = 0,
) -> plt.Axes:
    """Points (x, y) in series style `i`, each written next to its name when `names` are given (for a
    few dozen points, e.g. one per benchmark; a name that would overlap one already written is left
    out); `label` names the series in a legend."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    s = style(i)
    ax.scatter(x, y, s=size, color=s["color"], marker=s["marker"], edgecolor="none", alpha=0.85, label=label)
    if names is not None:
        annotate_points(ax, x, y, names)
    # Lowercase labels (house style), except those with mathtext, where case carries meaning.
    ax.set_xlabel(xlabel if "$" in xlabel else xlabel.lower())
    ax.set_ylabel(ylabel if "$" in ylabel else ylabel.lower())
    return ax


LegendLoc = Literal["upper left", "lower right"]  # where `_unit_square`'s callers put the legend


def _unit_square(ax: plt.Axes, xlabel: str, ylabel: str, legend_loc: LegendLoc) -> plt.Axes:
    """Square axes over [0, 1] x [0, 1] (ROC curves, reliability diagrams), labelled, with the legend."""
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(loc=legend_loc)
    return ax


def roc_curves(ax: plt.Axes, curves: dict) -> plt.Axes:
    """One ROC(-like) curve per entry of `curves` (label -> DataFrame with columns fpr, tpr, e.g. from
    `jeirt.analysis.difficulty.difficulty_roc`), in the house cycle, with the chance diagonal."""
    ax.plot([0, 1], [0, 1], color="0.6", linewidth=0.8, linestyle=":", marker="", label="chance")
    for i, (label, table) in enumerate(curves.items()):
        s = style(i)
        ax.plot(
            table["fpr"],
            table["tpr"],
            color=s["color"],
            linestyle=s["linestyle"],
            marker=s["marker"],
            markevery=max(1, len(table) // 8),
            label=str(label),
        )
    return _unit_square(
        ax, "share of correct answers above the threshold", "share of wrong answers above the threshold", "lower right"
    )


def dots_by_group(
    ax: plt.Axes, table: pd.DataFrame, xlabel: str = "test accuracy", mean_lines: bool = True
) -> plt.Axes:
    """One row per group (index of `table`, sorted by its first column, largest on top) and one
    marker per column (e.g. a method); `mean_lines` adds each column's mean as a vertical line."""
    table = table.sort_values(table.columns[0])
    y = np.arange(len(table))
    for i, column in enumerate(table.columns):
        s = style(i)
        values = table[column].to_numpy(dtype=float)
        ax.scatter(
            values,
            y,
            color=s["color"],
            marker=s["marker"],
            s=18,
            zorder=3,
            label=str(column),
            facecolor=s["color"] if i == 0 else "none",
        )
        if mean_lines:
            ax.axvline(np.nanmean(values), color=s["color"], linestyle=s["linestyle"], linewidth=0.9)
    _fit_rows(ax, len(table))
    ax.set_yticks(y)
    ax.set_yticklabels([shorten_name(r) for r in table.index])
    ax.set_ylim(-0.7, len(table) - 0.3)
    ax.set_xlabel(xlabel.lower())
    ax.grid(axis="y", visible=False)
    return ax


def shorten_name(name, max_chars: int = 28) -> str:
    """A model name for a tick label: the part after the last "/", at most `max_chars` long."""
    name = str(name).rsplit("/", 1)[-1]
    return name if len(name) <= max_chars else name[: max_chars - 1] + "…"


# Calibration (chapter "Reproducing")
def reliability_diagram(ax: plt.Axes, tables: dict) -> plt.Axes:
    """A reliability diagram: per bin of predicted probability, the mean label against the mean
    probability, one marker series per entry of `tables` (label -> `jeirt.metrics.reliability` table),
    marker area growing with the labels in the bin (no lines: a bin of a few labels would pull a line
    far off); the diagonal is a perfectly calibrated predictor."""
    ax.plot([0, 1], [0, 1], color="0.6", linewidth=0.8, linestyle=":", marker="", label="calibrated")
    for i, (label, table) in enumerate(tables.items()):
        s = style(i)
        area = 8 + 60 * table["n"].to_numpy() / table["n"].max()
        ax.scatter(
            table["mean_prob"],
            table["mean_label"],
            s=area,
            marker=s["marker"],
            edgecolor=s["color"],
            facecolor=s["color"] if i == 0 else "none",
            linewidth=1.0,
            zorder=3 + i,
            label=str(label),
        )
    return _unit_square(ax, "mean predicted probability in the bin", "share answered right in the bin", "upper left")
