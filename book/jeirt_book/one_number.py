"""The 'Why one number fails' page (Sec. 3.1, App. J): its figures. The analyses they draw (the
discrimination shares against chance, saturation, correct-set inclusion) are in
`jeirt.baselines.irt_diagnostics`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from jeirt_book.figures import PALETTE, SEQUENTIAL


def discrimination_scatter(
    ax: plt.Axes, discrimination: np.ndarray, intercept: np.ndarray, near_zero: float = 0.25, limit: float = 6.0
) -> plt.Axes:
    """Difficulty b = -d / a (x) against discrimination a (y), one point per item, on the paper's axes
    (Fig. 1, left). The band |a| < near_zero is shaded; an item with |b| > limit (every item with a
    near 0 has one) is drawn on the edge as a triangle, so every item is on the plot."""
    a, d = np.asarray(discrimination, float), np.asarray(intercept, float)
    ok = np.isfinite(a) & np.isfinite(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.where(a != 0, -d / a, np.sign(-d) * np.inf)
    inside = ok & (np.abs(b) <= limit)
    ax.axhspan(-near_zero, near_zero, color="0.85", zorder=0, label=f"|a| < {near_zero:g}")
    ax.axhline(0, color="0.4", linewidth=0.6)
    ax.scatter(b[inside], a[inside], s=9, alpha=0.55, color=PALETTE[0], edgecolor="none", marker="o", label="question")
    out = ok & ~inside
    ax.scatter(
        np.clip(b[out], -limit, limit),
        a[out],
        s=16,
        alpha=0.7,
        color=PALETTE[5],
        marker="^",
        edgecolor="none",
        label=f"|b| > {limit:g}, on the edge",
    )
    ax.set_xlim(-limit * 1.08, limit * 1.08)
    ax.set_xlabel("difficulty b")
    ax.set_ylabel("discrimination a")
    return ax


def icc_with_answers(
    ax: plt.Axes,
    ability: np.ndarray,
    answers: np.ndarray,
    discrimination: float,
    intercept: float,
    n_bins: int = 10,
    seed: int = 0,
) -> plt.Axes:
    """As the paper's Fig. 1 (right): a fitted item's curve sigmoid(a theta + d) in blue, every graded
    model's answer as a black dot at its ability (1 = correct, 0 = wrong, jittered up or down), and
    the share correct in `n_bins` ability bins (orange squares, dashed)."""
    ok = np.isfinite(answers) & np.isfinite(ability)
    theta, y = ability[ok], answers[ok]
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(0, 0.06, size=len(y)) * np.where(y > 0.5, -1, 1)
    alpha = float(np.clip(30 / max(len(y), 1), 0.15, 0.8))
    ax.scatter(theta, y + jitter, s=8, alpha=alpha, color="black", edgecolor="none", label="a model's answer")
    grid = np.linspace(theta.min() - 0.3, theta.max() + 0.3, 200)
    ax.plot(
        grid,
        1 / (1 + np.exp(-(discrimination * grid + intercept))),
        color=PALETTE[0],
        marker="",
        linewidth=2,
        label="fitted 2PL",
    )
    edges = np.quantile(theta, np.linspace(0, 1, min(n_bins, len(theta)) + 1))
    which = np.clip(np.searchsorted(edges, theta, side="right") - 1, 0, len(edges) - 2)
    centres = [theta[which == k].mean() for k in range(len(edges) - 1) if (which == k).any()]
    shares = [y[which == k].mean() for k in range(len(edges) - 1) if (which == k).any()]
    ax.plot(
        centres,
        shares,
        color=PALETTE[1],
        marker="s",
        markersize=3.5,
        linestyle="--",
        linewidth=1,
        label="share correct per bin",
    )
    ax.set_ylim(-0.1, 1.1)
    ax.set_xlabel(r"fitted ability $\theta$")
    ax.set_ylabel("correct")
    return ax


def icc_examples(fits: dict, data: dict, picks: dict[str, dict[str, int]], seed: int = 0) -> plt.Figure:
    """`icc_with_answers` for the picked items (`picks[name]`: kind -> column), one row per kind and
    one column per dataset (`fits`, `data`: the 2PL and the dataset of each name)."""
    names = list(fits)
    kinds = list(picks[names[0]])
    fig, axes = plt.subplots(len(kinds), len(names), figsize=(7.0, 1.9 * len(kinds) + 0.6), sharey=True, squeeze=False)
    for c, name in enumerate(names):
        fit, d = fits[name], data[name]
        for r, kind in enumerate(kinds):
            ax, j = axes[r, c], picks[name][kind]
            a = fit.discrimination_[j]
            icc_with_answers(ax, fit.ability_, d.labels[:, j], a, fit.intercept_[j], seed=seed)
            ax.text(
                0.0, 1.03, f"{kind}, a = {a:.2f}", transform=ax.transAxes, va="bottom"
            )  # panel label, above the axes
            ax.set_xlabel(r"fitted ability $\theta$" if r == len(kinds) - 1 else "")
            ax.set_ylabel("correct" if c == 0 else "")
        axes[0, c].annotate(
            name,
            (0.5, 1.0),
            xycoords="axes fraction",
            xytext=(0, 18),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontweight="bold",
        )  # the dataset, above its column
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3)
    return fig


def saturation_scatter(
    ax: plt.Axes, actual_share: np.ndarray, predicted_share: np.ndarray, tolerance: float = 0.05
) -> plt.Axes:
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


def inclusion_figure(matrices: dict[str, tuple[pd.DataFrame, pd.DataFrame]], max_cells: int = 120) -> plt.Figure:
    """R(M_i, M_j) (Appendix J) as heatmaps (seaborn), one row per benchmark (`matrices`: benchmark ->
    (data's R, the 1PL's R)), models from least (top, left) to most accurate, one colour scale.
    With more than `max_cells` models, consecutive models are pooled into groups (mean of R)."""
    fig, axes = plt.subplots(len(matrices), 2, figsize=(7.0, 3.1 * len(matrices)), squeeze=False)
    for row, (bench, pair) in zip(axes, matrices.items()):
        for ax, ratio, what in zip(row, pair, ("data", "1PL expects")):
            values, pooled = _pooled(ratio.to_numpy(dtype=float), max_cells)
            sns.heatmap(
                values,
                ax=ax,
                cmap=SEQUENTIAL,
                vmin=0,
                vmax=1,
                square=True,
                cbar=False,
                xticklabels=False,
                yticklabels=False,
            )
            unit = f", models in groups of {pooled}" if pooled > 1 else ""
            ax.text(
                0.5, 1.02, f"{bench}, {what}{unit}", transform=ax.transAxes, ha="center", va="bottom"
            )  # panel label, above the axes
            ax.set_xlabel("model j, weakest on the left")
            ax.set_ylabel("model i, weakest on top" if what == "data" else "")
    fig.colorbar(axes[0, 0].collections[0], ax=axes, shrink=0.6, label=r"$R(M_i, M_j)$")
    return fig


def _pooled(values: np.ndarray, max_cells: int) -> tuple[np.ndarray, int]:
    """`values` with consecutive rows and columns pooled (mean, NaN ignored) into at most `max_cells`
    groups, and the group size."""
    n = len(values)
    if n <= max_cells:
        return values, 1
    starts = np.array([g[0] for g in np.array_split(np.arange(n), max_cells)])

    def total(x):
        return np.add.reduceat(np.add.reduceat(x, starts, axis=0), starts, axis=1)

    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks stay NaN
        pooled = total(np.nan_to_num(values)) / total(np.isfinite(values).astype(float))
    return pooled, int(round(n / max_cells))


def data_sentence(dataset: str) -> str:
    """The sentence saying on which data the table sets the paper's EmbedLLM numbers beside ours: it
    depends on whether this build loads EmbedLLM itself (no apostrophe: the page glues it as text)."""
    if dataset.strip().lower() == "embedllm":
        return "This build loads EmbedLLM, the data of the paper: the rows set its numbers beside ours on EmbedLLM"
    return (
        "This build does not load EmbedLLM, the data of the paper: the rows set its EmbedLLM numbers "
        "beside ours on the dataset in use"
    )


def power(alternative: Sequence[float], null: Sequence[float]) -> float:
    """The share of an alternative world's redraws (e.g. every |a| < 0.25 truly at 0) whose share would
    be judged above the `null` world's beyond its interval (`diag.excess_over_null`'s excess above
    `verdicts.multiplier` (redraws - 1 df) SE): the test's power there."""
    from jeirt.baselines import irt_diagnostics as diag
    from jeirt_book import verdicts

    q = verdicts.multiplier(len(null) - 1)
    hits = []
    for share in alternative:
        e = diag.excess_over_null(share, null)
        hits.append(e["excess"] - q * e["se"] > 0)
    return float(np.mean(hits))


# The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`).


def where(cfg, name: str, questions: int, model: str = "2PL (no encoder)") -> dict:
    """A row's data and setting: dataset `name` (a held-out part when its name says 'test'), the
    `questions` it rests on, the model (1PL or 2PL, no encoder)."""
    from jeirt_book import verdicts

    run = verdicts.setting(cfg, questions, d=f"1 ({model[:3]})", seeds=1, held_out="test" in name)
    return {"data": f"{name}, {model}", "setting": run}


def claim_stats(
    cfg, data: dict, shares: pd.DataFrame, per_item: dict, inclusion: pd.DataFrame, dataset: str, boot: dict
) -> dict:
    """The shares of falling and flat questions over their null worlds on the claims' boundaries
    ('<share> <dataset>', on the redraws less one df), saturation ('saturation <dataset>': predicted
    near-unanimous minus twice the strictly unanimous), our forecast test ('forecast <dataset>') and
    inclusion over the 1PL's ('inclusion <benchmark>', its SE from `boot`: benchmark ->
    `diag.inclusion_gap_se`, a bootstrap of the questions with the 1PL refitted), each with its SE
    (`jeirt.baselines.irt_diagnostics`); `data`: name -> the dataset fitted; `dataset`: the name of
    the page's dataset (inclusion's 'ds' rows)."""
    from jeirt.baselines import irt_diagnostics as diag
    from jeirt_book.verdicts import Stat

    stats = {}
    for name, d in data.items():
        at, models = where(cfg, name, d.n_items), {"limit": f"{d.n_models:,} models"}
        for column in ("nonpositive", "clearly_negative", "near_zero"):
            r = shares.loc[(name, column)]
            stats[f"{column} {name}"] = Stat(
                r["excess"],
                se=r["se"],
                df=int(r["replicates"]) - 1,
                spec=".1%",
                label="excess over the null",
                note=f"{r['share']:.1%} vs null {r['null_mean']:.1%}, null sd {r['null_sd']:.1%}",
                rule_args=models,
                **at,
            )
        near, strict = per_item[name, "near-unanimous"], per_item[name, "unanimous"]
        gap = diag.paired_share_gap(near["predicted_unanimous"], strict["actual_unanimous"], times=2.0)
        stats[f"saturation {name}"] = Stat(
            gap["gap"],
            se=gap["se"],
            spec=".1%",
            label="predicted - 2 x actual",
            note=f"{gap['first']:.1%} vs {gap['second']:.1%}",
            rule_args={"limit": f"{d.n_items:,} questions"},
            **at,
        )
        gap = diag.paired_share_gap(near["actual_unanimous"], near["forecast"])
        stats[f"forecast {name}"] = Stat(
            gap["gap"],
            se=gap["se"],
            spec=".1%",
            label="near-unanimous minus forecast",
            note=f"{gap['first']:.1%} vs {gap['second']:.1%}",
            rule_args=models,
            **at,
        )
    return stats | _inclusion_stats(cfg, inclusion, dataset, boot)


def _inclusion_stats(cfg, inclusion: pd.DataFrame, dataset: str, boot: dict) -> dict:
    """Inclusion over the 1PL's per benchmark ('inclusion <benchmark>'), its SE from a bootstrap of the
    questions with the 1PL refitted (`boot`)."""
    from jeirt_book.verdicts import Stat

    stats = {}
    for _, r in inclusion.iterrows():
        got, chance = r["R above diagonal"], r["1PL expects"]
        name = dataset if r["key"] == "ds" else "metabench"
        b = boot[r["benchmark"]]
        on = f"{b['replicates']} question resamples, 1PL refitted" + (
            f", {b['models']} models" if b["models"] < r["models"] else ""
        )
        stats[f"inclusion {r['benchmark']}"] = Stat(
            got - chance,
            se=b["se"],
            df=b["replicates"] - 1,
            spec=".1%",
            label="R minus the 1PL's",
            note=f"{got:.1%} (1PL {chance:.1%}); weakest 10% {r['weakest 10%']:.1%} "
            f"(1PL {r['weakest 10%, 1PL']:.1%}); SE: {on}",
            rule_args={"limit": f"{r['questions']:,} questions"},
            **where(cfg, name, r["questions"], "1PL reference"),
        )
    return stats
