"""The Taxonomy page's figures (book/taxonomy.md): agreement of each clustering with the human
classes, and what the largest clusters hold. The measurements are in `jeirt.analysis.taxonomy`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from jeirt.book.figures import HATCHES, PALETTE, SEQUENTIAL


def agreement_bars(ax: plt.Axes, table: pd.DataFrame, ylabel: str = "agreement with human classes") -> plt.Axes:
    """One group of bars per score (columns of `table`), one bar per representation (rows), told
    apart by colour and hatching; the numbers are in the table beside the figure."""
    long = (
        table.rename_axis("representation")
        .reset_index()
        .melt(id_vars="representation", var_name="score", value_name="value")
    )
    sns.barplot(
        data=long,
        x="score",
        y="value",
        hue="representation",
        palette=PALETTE[: len(table)],
        saturation=1,
        edgecolor="white",
        ax=ax,
    )
    for k, container in enumerate(ax.containers):
        for bar in container:
            bar.set_hatch(HATCHES[k % len(HATCHES)])
    for patch, k in zip(ax.get_legend().get_patches(), range(len(table))):
        patch.set_hatch(HATCHES[k % len(HATCHES)])
    ax.set_xlabel("")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.05)
    ax.tick_params(axis="x", labelsize=9)
    ax.grid(axis="x", visible=False)
    sns.move_legend(ax, "lower left", bbox_to_anchor=(0, 1.0), ncols=len(table), title=None, fontsize=9)
    return ax


def cluster_mix(ax: plt.Axes, mix: pd.DataFrame, label: str = "share of the cluster") -> plt.Axes:
    """Rows of `mix` (clusters) against columns (classes) as a heatmap of shares, 0 to 1."""
    sns.heatmap(
        mix,
        vmin=0,
        vmax=1,
        cmap=SEQUENTIAL,
        cbar_kws={"label": label, "shrink": 0.8},
        linewidths=0.3,
        linecolor="white",
        ax=ax,
    )
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.tick_params(labelsize=9)
    ax.set_xticklabels(ax.get_xticklabels(), rotation=60, ha="right")
    return ax
