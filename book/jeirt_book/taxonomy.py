"""The Taxonomy page's figures (book/taxonomy.md): agreement of each clustering with the human
classes, and what the largest clusters hold. The measurements are in `jeirt.analysis.taxonomy`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from jeirt_book.figures import HATCHES, PALETTE, SEQUENTIAL


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
    legend = ax.get_legend()
    assert legend is not None  # seaborn's barplot draws one for the hue
    for patch, k in zip(legend.get_patches(), range(len(table))):
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


# The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`).
MEASURES = {"purity": "purity", "inverse purity": "inverse purity", "nmi": "NMI"} | {
    "homogeneity": "homogeneity",
    "completeness": "completeness",
}


def claim_stats(starts: pd.DataFrame, k: int, comparable: str | None) -> dict:
    """Table 5's numbers (K = `k` clusters) from `jeirt.analysis.taxonomy.agreement_over_starts`' rows,
    a 'learned' and a 'random' partition's measures per k-means start, for one fit or for several
    (rows on a (seed, start) index): each a mean with its SE over the seeds' means (a fit's training
    noise is in it; seeds - 1 df), or over the starts with one fit (starts - 1 df). Every measure of
    the learned clusters (by name; a `NoVerdict` with the reason `comparable` gives when K is not
    comparable with Table 5's), NMI for partial alignment ('partial'; the random partitions' spread in
    its note), and the two asymmetries beyond the random partition's, homogeneity over completeness
    ('homogeneity gap') and purity over inverse purity ('purity gap')."""
    from jeirt_book.verdicts import NoVerdict, Stat, mean_and_se

    by_seed = "seed" in starts.index.names and starts.index.get_level_values("seed").nunique() > 1
    units = starts.groupby(level="seed").mean() if by_seed else starts  # one row per fit, or per start
    df = len(units) - 1
    over = f"{len(units)} fits" if by_seed else f"{len(units)} k-means starts"

    def spread(values: pd.Series) -> dict:
        mean, se = mean_and_se(values)
        return {"value": mean, "se": se, "df": df}

    mean = units.mean()
    null = starts["random"]["nmi"]
    stats: dict = {}
    for col, name in MEASURES.items():
        s = spread(units["learned", col])
        words = f"{name} {s['value']:.3f} +- {s['se']:.3f} (K = {k}; random {mean['random', col]:.3f})"
        note = f"K = {k}, SE over {over}; random {mean['random', col]:.3f}"
        stats[col] = NoVerdict(words, comparable) if comparable else Stat(**s, label=name, note=note)
    stats["partial"] = Stat(
        **spread(units["learned", "nmi"]),
        label="NMI",
        note=f"K = {k}, SE over {over}; random {null.mean():.3f} +- {null.std():.3f} sd",
    )
    excess = units["learned"] - units["random"]  # per fit (or start)
    for key, first, second in (("homogeneity", "homogeneity", "completeness"), ("purity", "purity", "inverse purity")):
        stats[f"{key} gap"] = Stat(
            **spread(excess[first] - excess[second]),
            spec="+.3f",
            label=f"{first} - {second}, beyond the random partition's",
            note=f"K = {k}, SE over {over}; {mean['learned', first]:.3f} vs {mean['learned', second]:.3f}",
        )
    return stats
