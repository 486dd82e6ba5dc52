"""The Dimension page's tables and figures (Sec. 3.2, Fig. 2): test accuracy against d per encoder,
with the baselines as reference lines, and the sweep's summary formatted for people. The
experiment's parts are in `jeirt_book.experiments.dimension`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from jeirt_book import verdicts
from jeirt_book.figures import LINESTYLES, style


def accuracy_vs_dimension(ax: plt.Axes, summary: pd.DataFrame, baselines: pd.DataFrame | None = None) -> plt.Axes:
    """Test accuracy against d (log axis), one line per encoder with a band from the worst to the best
    seed (`sweep_summary`); `baselines` (method, encoder, accuracy) as horizontal
    lines in the encoder's colour, one line style per method."""
    encoders = list(dict.fromkeys(summary["encoder"]))
    methods = [] if baselines is None else list(dict.fromkeys(baselines["method"]))
    for i, encoder in enumerate(encoders):
        rows = summary[summary["encoder"] == encoder].sort_values("d")
        s = style(i)
        ax.fill_between(
            rows["d"], rows["accuracy_min"], rows["accuracy_max"], color=s["color"], alpha=0.15, linewidth=0
        )
        ax.plot(
            rows["d"],
            rows["accuracy_mean"],
            color=s["color"],
            marker=s["marker"],
            linestyle="-",
            label=f"je-irt, {encoder}",
        )
        for j, method in enumerate(methods):
            assert baselines is not None  # methods come from it
            value = baselines[(baselines["encoder"] == encoder) & (baselines["method"] == method)]["accuracy"]
            if len(value):
                ax.axhline(
                    float(value.mean()),
                    color=s["color"],
                    linestyle=LINESTYLES[(j + 1) % len(LINESTYLES)],
                    linewidth=1,
                    label=f"{method}, {encoder}",
                )
    grid = sorted(summary["d"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(grid)
    ax.set_xticklabels([str(d) for d in grid])
    ax.minorticks_off()
    ax.set_xlabel("embedding dimension d (log scale)")
    ax.set_ylabel("test accuracy")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax


SUMMARY_COLUMNS = {
    "accuracy_mean": "accuracy (%)",
    "accuracy_std": "sd over seeds",
    "val_loss": "val. loss",
    "auc": "AUC",
    "fit_seconds": "fit (s)",
}


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """`jeirt_book.experiments.dimension.sweep_summary` for people: one row per (encoder, d), accuracy and its
    sd over seeds in percent ("–" with one seed), validation loss, AUC, fit time, rounded."""
    table = summary.set_index(["encoder", "d"])[list(SUMMARY_COLUMNS)].rename(columns=SUMMARY_COLUMNS)
    table[["accuracy (%)", "sd over seeds"]] *= 100
    rounding = {"accuracy (%)": 2, "sd over seeds": 2, "val. loss": 4, "AUC": 4, "fit (s)": 1}
    return table.round(rounding).astype(object).where(table.notna(), "–")


def per_seed(runs: pd.DataFrame, encoder: str, d: int) -> pd.Series:
    """Test accuracy (in points) of one encoder at one d, one value per seed: what paired gaps read."""
    found = runs[(runs["encoder"] == encoder) & (runs["d"] == d)]
    if found.empty:
        raise ValueError(f"no run of {encoder} at d = {d}; the sweep has d in {sorted(runs['d'].unique())}.")
    return 100 * found.set_index("seed")["accuracy"]


# The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`).


def _paired(gaps: pd.Series, words: str, profile: str, **fields) -> verdicts.Stat | verdicts.NoVerdict:
    """A gap paired over seeds (points) as a Stat with its SE on seeds - 1 df, or a `NoVerdict` with one
    seed (the smoke `profile`)."""
    if len(gaps) < 2:
        return verdicts.NoVerdict(f"{gaps.mean():+.2f} points ({words})", "one seed: no spread", profile=profile)
    spread = verdicts.paired_over_seeds(gaps)
    limit = {"limit": f"{len(gaps)} seeds"}
    return verdicts.Stat(
        spread["estimate"],
        se=spread["se"],
        df=spread["df"],
        spec="+.2f",
        unit=" points",
        note=words,
        rule_args=limit,
        **fields,
    )


def claim_stats(
    runs: pd.DataFrame,
    seeds_of: pd.DataFrame,
    overview: pd.DataFrame,
    best_d: pd.Series,
    encoder: str,
    small: int,
    crossings: dict[str, int],
    model_gain: dict,
    wins: pd.Series,
    profile: str,
) -> dict:
    """The dimension sweep's numbers, one noise model for every row that reads the curve: each a gap
    paired over seeds (a seed is one split and one initialisation, shared by every d and by the
    baselines; seeds - 1 df; a `NoVerdict` with one seed): the best d over the smallest ('rises'), the
    curve itself per seed for its peak ('peak'), JE-IRT at its best d over the better baseline
    ('beats'), JE-IRT over EmbedLLM's factorisation at the paper's crossing d of each encoder of
    `crossings` (encoder -> d; 'cross <encoder>', absent where not fitted), and the per-model gain
    without its largest part ('outliers', se over the models, read only where the mean gain itself
    is above 0; `model_gain`: `gain_spread`'s numbers, `wins`: per model, JE-IRT best of the three).
    `runs`: the sweep's runs; `seeds_of`: the baselines' accuracy (points) by (encoder, seed) and
    method; `overview`: accuracy per encoder at the smallest and best d."""
    d = int(best_d[encoder])
    top = per_seed(runs, encoder, d)
    rises = "; ".join(
        f"{e}: {100 * overview.at[e, f'd = {small}']:.2f}% at d = {small} -> "
        f"{100 * overview.at[e, 'best d acc']:.2f}% at d = {best_d[e]}"
        for e in overview.index
    )
    row, base = overview.loc[encoder], seeds_of.loc[encoder]
    beats = top - base[["embedllm-mf", "knn"]].max(axis=1)
    curve = 100 * runs[runs["encoder"] == encoder].pivot(index="d", columns="seed", values="accuracy")
    stats = {
        "rises": _paired(top - per_seed(runs, encoder, small), rises + f" ({encoder}: paired over seeds)", profile),
        "beats": _paired(
            beats,
            f"{100 * row['best d acc']:.2f}% vs {100 * row['embedllm-mf']:.2f}% and {100 * row['knn']:.2f}% "
            f"({encoder}, d = {d}; paired gap {beats.mean():+.2f} points)",
            profile,
            label="paired gap",
        ),
        "peak": _peak(curve, d, encoder, profile),
    }
    for e, at in crossings.items():
        if e in set(runs["encoder"]) and at in set(runs["d"]):
            gap = per_seed(runs, e, at) - seeds_of.loc[e, "embedllm-mf"]
            stats[f"cross {e}"] = _paired(gap, f"{e} at d = {at}", profile, label="JE-IRT - EmbedLLM")
    stats["outliers"] = _outliers(model_gain, wins)
    return stats


def _peak(curve: pd.DataFrame, d: int, encoder: str, profile: str):
    """The curve's peak ('peak'): accuracy (points) by d and seed, read on gaps paired over seeds."""
    if curve.shape[1] < 2:
        return verdicts.NoVerdict(f"best d = {d} ({encoder})", "one seed: no spread", profile=profile)
    span = float(curve.mean(axis=1).max() - curve.mean(axis=1).min())
    return verdicts.Curve(
        {int(x): list(v) for x, v in curve.iterrows()},
        f"best d = {d} by validation loss ({encoder}); paired over {curve.shape[1]} seeds",
        rule_args={"limit": f"{curve.shape[1]} seeds, a curve spanning {span:.2f} points"},
    )


def _outliers(mg: dict, wins: pd.Series) -> verdicts.Stat:
    """The per-model gain without its largest part ('outliers'), read only where the mean gain is above 0."""
    reach = verdicts.multiplier() * mg["se"]
    return verdicts.Stat(
        mg["mean without the top"],
        se=mg["se without the top"],
        spec="+.2f",
        unit=" points",
        label=f"per-model gap without the {mg['dropped']} largest",
        note=f"with them {mg['mean']:+.2f} +- {mg['se']:.2f}; JE-IRT best on {int(wins.sum())} of {len(wins)} models",
        rule_args={
            "given": ("the mean gain itself", mg["mean"] - reach, mg["mean"] + reach),
            "limit": f"{mg['models']} models",
        },
    )
