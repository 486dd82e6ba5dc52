"""The 'Why one number fails' page (Sec. 3.1, App. J): 2PL IRT on LLM data, its discriminations,
saturation and the correct-set inclusion test, with their figures.
"""
from __future__ import annotations

import warnings
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from tqdm import (
    tqdm,  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets
)

from jeirt.baselines.irt import TwoPL, sample_labels
from jeirt.book.figures import PALETTE, SEQUENTIAL
from jeirt.data import Dataset
from jeirt.settings import workers


def discrimination_scatter(ax: plt.Axes, discrimination: np.ndarray, difficulty: np.ndarray,
                           near_zero: float = 0.25, limit: float = 6.0) -> plt.Axes:
    """Difficulty b (x) against discrimination a (y), one point per item, on the paper's axes (Fig. 1,
    left). The band |a| < near_zero is shaded; b beyond +-limit is drawn on the edge as a triangle."""
    a, b = np.asarray(discrimination, float), np.asarray(difficulty, float)
    ok = np.isfinite(a) & np.isfinite(b)
    inside = ok & (np.abs(b) <= limit)
    ax.axhspan(-near_zero, near_zero, color="0.85", zorder=0, label=f"|a| < {near_zero:g}")
    ax.axhline(0, color="0.4", linewidth=0.6)
    ax.scatter(b[inside], a[inside], s=9, alpha=0.55, color=PALETTE[0], edgecolor="none", marker="o",
               label="item")
    out = ok & ~inside
    ax.scatter(np.clip(b[out], -limit, limit), a[out], s=14, alpha=0.7, color=PALETTE[5], marker="^",
               edgecolor="none", label=f"|b| > {limit:g} (drawn at the edge)")
    ax.set_xlim(-limit * 1.05, limit * 1.05)
    ax.set_xlabel("difficulty b")
    ax.set_ylabel("discrimination a")
    ax.legend(loc="upper right", fontsize=7)
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


# Fixed thresholds of the book's analyses (Section 3.1). They are chosen once, not per dataset.
NEAR_ZERO = 0.25  # |a| < NEAR_ZERO: from -2 to +2 sd of ability the log-odds move by less than 1


NEAR_UNANIMOUS = 0.05  # an item is near-unanimous when at most 5% of its graded models dissent


def discrimination_shares(discrimination: np.ndarray, near_zero: float = NEAR_ZERO) -> dict:
    """Shares of items with a <= 0, with |a| < near_zero, and with a <= -near_zero (NaN a ignored)."""
    if near_zero <= 0:
        raise ValueError(f"near_zero={near_zero}; expected a positive threshold.")
    a = np.asarray(discrimination, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        raise ValueError("no finite discrimination to summarise.")
    return {"items": int(a.size), "nonpositive": float(np.mean(a <= 0)),
            "near_zero": float(np.mean(np.abs(a) < near_zero)),
            "clearly_negative": float(np.mean(a <= -near_zero))}


def saturation(probs: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None,
               tolerance: float = NEAR_UNANIMOUS) -> pd.DataFrame:
    """Per item: does the model predict (nearly) the same outcome for every graded model, and do the
    models actually agree?

    A model's predicted outcome on an item is "correct" when its probability is >= 1/2. An item's
    predicted share is the share of its graded models predicted correct; its actual share is their
    mean label. An item is (near-)unanimous when its share is <= `tolerance` or >= 1 - `tolerance`
    (tolerance 0: exactly unanimous). Items without a graded model are left out.
    Returns columns: models, predicted_share, actual_share, predicted_unanimous, actual_unanimous.
    """
    probs, labels = np.asarray(probs, dtype=float), np.asarray(labels, dtype=float)
    if probs.shape != labels.shape:
        raise ValueError(f"probs has shape {probs.shape} and labels {labels.shape}; expected equal shapes.")
    if not 0 <= tolerance < 0.5:
        raise ValueError(f"tolerance={tolerance}; expected a share in [0, 0.5).")
    mask = ~np.isnan(labels) if mask is None else np.asarray(mask, dtype=bool) & ~np.isnan(labels)
    n = mask.sum(axis=0)
    keep = n > 0
    predicted = ((probs >= 0.5) & mask).sum(axis=0)[keep] / n[keep]
    actual = np.where(mask, labels, 0.0).sum(axis=0)[keep] / n[keep]
    eps = 1e-12  # shares are ratios of counts: compare with a little slack
    unanimous = lambda s: (s <= tolerance + eps) | (s >= 1 - tolerance - eps)  # noqa: E731
    return pd.DataFrame({"models": n[keep], "predicted_share": predicted, "actual_share": actual,
                         "predicted_unanimous": unanimous(predicted), "actual_unanimous": unanimous(actual)},
                        index=pd.Index(np.flatnonzero(keep), name="item"))


def expected_unanimity(probs: np.ndarray, mask: np.ndarray | None = None, tolerance: float = NEAR_UNANIMOUS,
                       n_draws: int = 100, seed: int = 0, progress: bool = False) -> np.ndarray:
    """Per item, the chance that its labels are (near-)unanimous if every graded model answered
    independently with the given probabilities: the share of `n_draws` seeded draws in which the item
    is (near-)unanimous, in the sense of `saturation`. It is the model's own forecast of
    `saturation(...)["actual_unanimous"]`, to set beside the data's."""
    probs = np.asarray(probs, dtype=float)
    mask = np.ones(probs.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if n_draws < 1:
        raise ValueError(f"n_draws={n_draws}; expected a positive integer.")
    rng = np.random.default_rng(seed)
    n = mask.sum(axis=0)
    keep = n > 0
    count = np.zeros(probs.shape[1])
    for _ in tqdm(range(n_draws), desc="draws", disable=not progress, leave=False):
        share = ((rng.random(probs.shape) < probs) & mask).sum(axis=0)[keep] / n[keep]
        count[keep] += (share <= tolerance + 1e-12) | (share >= 1 - tolerance - 1e-12)
    return count[keep] / n_draws


def null_dataset(irt: TwoPL, ds: Dataset, seed: int = 0) -> Dataset:
    """`ds` with its labels (same graded pairs) redrawn from the fitted 2PL after setting every negative
    discrimination to 0: data in which no item favours weaker models. Refitting a 2PL to it shows how
    many negative discriminations sampling noise alone produces."""
    rows, cols = irt._positions(ds)
    a = np.maximum(irt.discrimination_[cols], 0.0)
    z = irt.ability_[rows, None] * a[None, :] + irt.intercept_[None, cols]
    labels = sample_labels(1.0 / (1.0 + np.exp(-z)), ds.observed, seed)
    return Dataset(f"{ds.name}-null{seed}", ds.models, ds.items, labels)


def _null_shares(irt: TwoPL, ds: Dataset, seed: int, device: str | None) -> dict:
    """`discrimination_shares` of a 2PL refitted to `null_dataset(irt, ds, seed)` (one worker's job)."""
    return discrimination_shares(TwoPL(device=device).fit(null_dataset(irt, ds, seed=seed)).discrimination_)


def null_shares(fits: dict[str, TwoPL], data: dict[str, Dataset], seeds: Sequence[int],
                device: str | None = None, n_jobs: int | None = None) -> dict[str, list[dict]]:
    """For each name of `fits`, the `discrimination_shares` of a 2PL refitted to
    `null_dataset(fits[name], data[name], seed)`, one per seed: the chance level of each share.

    The refits are independent: `n_jobs` worker processes (default `jeirt.settings.workers()`) make
    them side by side, each on one thread (a 2PL fit's own default), so they equal fits made here.
    """
    jobs = [(name, int(seed)) for name in fits for seed in seeds]
    n_jobs = workers() if n_jobs is None else int(n_jobs)
    if n_jobs < 1:
        raise ValueError(f"n_jobs={n_jobs}; expected a positive number of worker processes (or None).")
    if n_jobs == 1 or len(jobs) <= 1:
        shares = [_null_shares(fits[name], data[name], seed, device) for name, seed in jobs]
    else:
        shares = Parallel(n_jobs=n_jobs, max_nbytes=None)(
            delayed(_null_shares)(fits[name], data[name], seed, device) for name, seed in jobs)
    out: dict[str, list[dict]] = {name: [] for name in fits}
    for (name, _), share in zip(jobs, shares):
        out[name].append(share)
    return out


def correct_set_inclusion(labels: np.ndarray, models: list[str] | None = None, mask: np.ndarray | None = None,
                          order: np.ndarray | None = None) -> pd.DataFrame:
    """Appendix J: R(M_i, M_j) = |Q(M_i) \\ Q(M_j)| / |Q(M_i)|, the share of the items model i answers
    correctly that model j gets wrong, counted over the items both were graded on.

    Rows and columns are sorted from least to most accurate model (or by `order`, model positions), so
    under one ability ordering every model (a perfect Guttman scale) the upper triangle, row weaker
    than column, would be 0. Probabilities in place of 0/1 labels give the ratio of expected counts
    under a model that answers independently with those probabilities. The diagonal is NaN, as is
    any pair where model i has no correct answer on the shared items.
    """
    labels = np.asarray(labels, dtype=float)
    if labels.ndim != 2:
        raise ValueError(f"labels has shape {labels.shape}; expected (n_models, n_items).")
    mask = ~np.isnan(labels) if mask is None else np.asarray(mask, dtype=bool) & ~np.isnan(labels)
    models = list(models) if models is not None else [f"model {i}" for i in range(len(labels))]
    if len(models) != len(labels):
        raise ValueError(f"{len(models)} model names for {len(labels)} rows of labels.")
    w = mask.astype(float)
    y = np.where(mask, labels, 0.0)  # (n_models, n_items), 0 where not graded
    if order is None:
        with np.errstate(invalid="ignore"):
            accuracy = y.sum(axis=1) / w.sum(axis=1)
        order = np.argsort(np.nan_to_num(accuracy, nan=-1.0), kind="stable")
    order = np.asarray(order)
    y, w = y[order], w[order]
    solved = y @ w.T  # (n_models, n_models): sum_q y_iq w_jq, i's correct answers on shared items
    missed = y @ (w * (1.0 - y)).T  # sum_q y_iq (1 - y_jq) w_jq: ... that j got wrong
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(solved > 0, missed / solved, np.nan)
    np.fill_diagonal(ratio, np.nan)
    names = [models[i] for i in order]
    return pd.DataFrame(ratio, index=pd.Index(names, name="model i"), columns=pd.Index(names, name="model j"))


def mean_inclusion_gap(ratio: pd.DataFrame, weakest: float | None = None) -> float:
    """Mean of R(M_i, M_j) over pairs where i comes before j (weaker than j, as sorted): the average
    share of a weaker model's correct answers that a stronger model misses; 0 on a perfect scale.
    `weakest` in (0, 1] keeps only that share of the least accurate models as i (rows)."""
    values = np.asarray(ratio, dtype=float)
    n_rows = len(values)
    if weakest is not None:
        if not 0 < weakest <= 1:
            raise ValueError(f"weakest={weakest}; expected a share in (0, 1].")
        n_rows = max(1, int(round(weakest * len(values))))
    upper = values[np.triu_indices(n_rows, k=1, m=values.shape[1])]
    return float(np.nanmean(upper))


def pick_icc_examples(irt: TwoPL, ds: Dataset, near_zero: float = NEAR_ZERO) -> dict[str, int]:
    """Four items to draw (column positions in `ds`): the most negative a, the flattest item on which
    models split (actual share correct in [0.3, 0.7]), and two positive items on which models split:
    the sharpest, and the one closest to the median positive a."""
    params = irt.item_parameters().set_index("item_id").loc[ds.items["item_id"]]
    a = params["discrimination"].to_numpy()
    with np.errstate(invalid="ignore"):
        share = np.nanmean(ds.labels, axis=0)
    split = (share >= 0.2) & (share <= 0.8) & np.isfinite(a)
    middle = (share >= 0.3) & (share <= 0.7) & np.isfinite(a)
    positive = np.flatnonzero(split & (a >= near_zero))
    if not np.isfinite(a).any() or not middle.any() or len(positive) < 2:
        raise ValueError("too few items on which models split to pick examples; use more items.")
    median = np.median(a[positive])
    sharpest = positive[np.argmax(a[positive])]
    typical = positive[np.argsort(np.abs(a[positive] - median))]
    typical = typical[typical != sharpest][0]
    return {"negative": int(np.nanargmin(a)),
            "near zero": int(np.flatnonzero(middle)[np.argmin(np.abs(a[middle]))]),
            "positive, typical": int(typical), "positive, sharpest": int(sharpest)}
