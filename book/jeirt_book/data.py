"""The Data page: the response matrix at a glance."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap


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
    cmap = (
        ListedColormap(["#f2f2f2", "#9ecae1", "#08306b"])
        if np.isin(shown[~np.isnan(shown)], [0, 1]).all()
        else plt.get_cmap("Blues")
    )
    ax.set_facecolor("#bdbdbd")
    ax.imshow(np.ma.masked_invalid(shown), aspect="auto", interpolation="nearest", cmap=cmap, vmin=0, vmax=1)
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
