"""The page "When the question text pays" (book/text_pays.md): its statistics, tables and figures,
built on `jeirt.analysis.text_signal` (what a new question's text tells about its difficulty),
`jeirt.tasks.compare` (the comparison's stored runs) and `jeirt_book.experiments.learning_curve`
(the learning curve's stored runs)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from jeirt.analysis.text_signal import shift_ladder
from jeirt.data import Dataset
from jeirt.settings import REPO_ROOT
from jeirt.tasks import compare
from jeirt.train import TrainHistory
from jeirt_book import figures, verdicts
from jeirt_book.experiments import learning_curve as lc

RESULTS = REPO_ROOT / "results"
NESTED = "je-irt+nested"
BASELINE = "benchmark-accuracy"
NEURAL = ("mirt", "irt-net")  # the comparison's IRT-style methods that read the text
SHORT = {"all-MiniLM-L6-v2": "MiniLM", "all-mpnet-base-v2": "mpnet"}


# What the text tells: the ladder of test scores (benchmark accuracy, + the text's shift, + the true shift)


def ladder(ds: Dataset, encoder: str, seeds: Sequence[int], split_for) -> tuple[pd.DataFrame, pd.Series]:
    """`shift_ladder` on each seed's split of `ds` (`split_for(ds, seed)`): its rows with the seed, and
    the R^2 of the text's shift on the test questions, one per seed."""
    features = ds.features(encoder, progress=False)
    rows, r2 = [], {}
    for seed in seeds:
        table, record = shift_ladder(ds, split_for(ds, seed), features)
        rows.append(table.reset_index().assign(seed=seed))
        r2[seed] = record["r2"]
    return pd.concat(rows, ignore_index=True), pd.Series(r2, name="R^2")


def ladder_summary(rungs: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of each rung's accuracy, AUC and log loss, with the points each adds to the first."""
    table = rungs.groupby("predictor", sort=False)[["accuracy", "auc", "log_loss"]].mean()
    first = table.iloc[0]
    return table.assign(**{"accuracy gain (points)": 100 * (table["accuracy"] - first["accuracy"])})


# Where each prediction's mean lands against each benchmark's accuracy on the test questions


def calibration_by_benchmark(predictions: dict[str, np.ndarray], ds: Dataset, mask: np.ndarray) -> pd.DataFrame:
    """Per benchmark and method: the mean predicted probability of the labels under `mask` minus their
    mean (points; > 0: the method expects more right answers than there were), and the labels counted."""
    mask = mask & ds.observed
    rows = []
    for bench, cols in ds.items.groupby("benchmark", sort=True).indices.items():
        sel = mask[:, cols]
        if not sel.any():
            continue
        observed = float(ds.labels[:, cols][sel].mean())
        row = {"benchmark": bench, "test labels": int(sel.sum()), "accuracy": observed}
        for name, probs in predictions.items():
            row[name] = 100 * (float(probs[:, cols][sel].mean()) - observed)
        rows.append(row)
    return pd.DataFrame(rows).set_index("benchmark")


def train_val_curves(ax: plt.Axes, histories: dict[str, TrainHistory], level: float | None, title: str) -> None:
    """Each fit's training (dashed) and validation (solid, marked) loss by epoch, and the validation log
    loss of the benchmark accuracy (`level`, grey dotted) on one panel named `title`."""
    for i, (name, history) in enumerate(histories.items()):
        colour, marker = figures.style(i)["color"], figures.style(i)["marker"]
        epochs = np.arange(1, len(history.val_loss) + 1)
        ax.plot(epochs, history.val_loss, color=colour, marker=marker, linestyle="-", label=f"{name}, validation")
        ax.plot(epochs, history.train_loss, color=colour, marker="", linestyle="--", label=f"{name}, training")
    if level is not None:
        ax.axhline(level, color="0.4", linewidth=1.0, linestyle=":", label="benchmark accuracy, validation")
    ax.set_xlabel("epoch")
    ax.set_ylabel("log loss")
    ax.text(0.98, 0.98, title, transform=ax.transAxes, ha="right", va="top", fontsize=figures.SMALL)


# The comparison (results/compare_question_split.csv): the variant against the benchmark accuracy and the rest


def comparison(runs: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """One row per dataset and encoder: JE-IRT's, the variant's and the benchmark accuracy's mean
    `metric`, the best other method of the paper's comparison, and the variant minus the benchmark
    accuracy and minus the better of MIRT and IRT-Net (`neural`), seed by seed (points: mean, 95% t
    interval, seeds won)."""
    summary = compare.summarize(runs).set_index(["dataset", "encoder", "method"])[f"{metric}_mean"]
    versus = compare.paired_margins(runs, NESTED, [metric], against=[BASELINE, *NEURAL, "je-irt"])
    best = compare.paired_margins(runs, "je-irt", [metric])
    rows = []
    for (dataset, encoder), block in versus.groupby(["dataset", "encoder"], sort=False):
        block = block.set_index("other")
        neural = max(NEURAL, key=lambda m: summary.get((dataset, encoder, m), -np.inf))
        other = best[(best["dataset"] == dataset) & (best["encoder"] == encoder)]["best_other"].iloc[0]
        row = {"dataset": dataset, "encoder": SHORT.get(encoder, encoder)}
        row |= {name: summary[(dataset, encoder, method)] for name, method in _SHOWN.items()}
        row |= {"best other": other, "its score": summary[(dataset, encoder, other)]}
        row |= _points("vs benchmark", block.loc[BASELINE]) | _points("vs neural", block.loc[neural])
        row["neural"] = neural
        rows.append(row)
    return pd.DataFrame(rows).set_index(["dataset", "encoder"])


_SHOWN = {"JE-IRT": "je-irt", "nested": NESTED, "benchmark accuracy": BASELINE}


def _points(key: str, margin: pd.Series) -> dict:
    """A paired margin in points: its mean (`key`), its interval as 'low to high' and the seeds won."""
    return {
        key: 100 * margin["margin_mean"],
        f"{key} interval": f"{100 * margin['low']:+.2f} to {100 * margin['high']:+.2f}",
        f"{key} seeds won": f"{int(margin['seeds_won'])} of {int(margin['seeds'])}",
    }


def fit_time_ratio(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and encoder: the mean fit seconds of JE-IRT (with its bounded search, as compared) and
    of the variant, run side by side on the same splits, and their ratio (variant / JE-IRT)."""
    table = runs[runs["method"].isin(["je-irt", NESTED])].pivot_table(
        index=["dataset", "encoder"], columns="method", values="fit_seconds", aggfunc="mean"
    )
    table = table.rename(index=SHORT, level="encoder")
    return table.assign(ratio=table[NESTED] / table["je-irt"]).rename(
        columns={"je-irt": "JE-IRT s", NESTED: "nested s"}
    )


def fit_ratios(path=RESULTS / "nested_fit.json") -> pd.DataFrame:
    """`benchmarks/nested_fit.py`'s ratios: per dataset, the variant's fit seconds over JE-IRT's as
    `jeirt fit` runs it (no search) and over JE-IRT with its search, side by side in one run."""
    import json

    return pd.DataFrame(json.loads(path.read_text())["ratios"]).T.rename_axis("dataset")


def margin_stat(runs: pd.DataFrame, dataset: str, encoder: str, against: Sequence[str]) -> verdicts.Stat:
    """The variant minus the best (by mean accuracy) of `against`, seed by seed, in accuracy points, with
    its 95% t interval over the seeds."""
    return _paired_stat(runs, NESTED, dataset, encoder, against)


def jeirt_stat(runs: pd.DataFrame, dataset: str, encoder: str) -> verdicts.Stat:
    """JE-IRT minus the benchmark accuracy, seed by seed, in accuracy points, with its 95% t interval."""
    return _paired_stat(runs, "je-irt", dataset, encoder, [BASELINE])


def _paired_stat(
    runs: pd.DataFrame, reference: str, dataset: str, encoder: str, against: Sequence[str]
) -> verdicts.Stat:
    """`reference` minus the best of `against` on `dataset` and `encoder` (`compare.paired_margins`) as a Stat."""
    block = runs[(runs["dataset"] == dataset) & (runs["encoder"] == encoder)]
    margins = compare.paired_margins(block, reference, ["accuracy"], against=list(against))
    means = compare.summarize(block).set_index("method")["accuracy_mean"]
    row = margins.loc[margins["other"].map(means).idxmax()]
    labels = int(block.loc[block["method"] == reference, "n_test"].mean())
    return verdicts.Stat(
        100 * row["margin_mean"],
        interval=(100 * row["low"], 100 * row["high"]),
        spec="+.2f",
        unit=" points",
        label=f"{reference} minus {row['other']}",
        note=f"{row['seeds_won']} of {row['seeds']} seeds won, 95% t interval",
        data=f"{dataset}, {SHORT.get(encoder, encoder)}",
        setting=f"stored comparison, full data; {labels:,} test labels a seed; d = 256; {row['seeds']} seeds",
    )


def r2_stat(r2: pd.Series, name: str) -> verdicts.Stat | verdicts.NoVerdict:
    """The text's R^2 on new questions' shifts: its mean over seeds with its standard error."""
    se = float(r2.std(ddof=1) / np.sqrt(len(r2))) if len(r2) > 1 else None
    values = ", ".join(f"{v:.3f}" for v in r2)
    if se is None:
        return verdicts.NoVerdict(f"R^2 {values} ({name})", "one seed: no spread", limit="one seed")
    return verdicts.Stat(
        float(r2.mean()), se=se, df=len(r2) - 1, spec=".3f", label="R^2", note=f"seeds: {values}", data=name
    )


# The learning curve (results/learning_curve.csv, plus the full split's runs of the comparison)


def curve_runs(compare_runs: pd.DataFrame, path=RESULTS / "learning_curve.csv") -> pd.DataFrame:
    """The learning curve's runs with the comparison's full-split runs of the same methods and seeds,
    a column `n` holding each run's training questions."""
    curve = compare.load(path)
    return lc.with_full_size(curve, compare_runs, lc.full_sizes(sorted(set(curve["dataset"]))))


def plot_learning_curves(axes: np.ndarray, gaps: dict[str, pd.DataFrame], marks: dict) -> None:
    """One panel per metric (rows; `gaps`: metric -> `learning_curve.paired_gaps`) and dataset (columns):
    each method minus the benchmark accuracy, seed by seed, in points, against the training questions
    (log scale), its 95% t interval as a band; the benchmark accuracy itself is the zero line, and a
    dotted line marks each size of `marks` (label -> n)."""
    first = next(iter(gaps.values()))
    datasets = sorted(set(first["dataset"]))
    methods = [m for m in lc.METHODS if m in set(first["method"])]
    for row, (metric, table) in enumerate(gaps.items()):
        for col, dataset in enumerate(datasets):
            ax = axes[row, col]
            ax.axhline(0.0, color="0.3", linewidth=1.0, label=f"{lc.BASELINE} (zero)")
            for method in methods:
                line = table[(table["dataset"] == dataset) & (table["method"] == method)].sort_values("n")
                style = figures.style(lc.METHODS.index(method))
                ax.plot(line["n"], 100 * line["margin_mean"], label=method, **style)
                band = (100 * line["low"], 100 * line["high"])
                ax.fill_between(line["n"], *band, color=style["color"], alpha=0.12, linewidth=0)
            for label, n in marks.items():
                ax.axvline(n, color="0.3", linestyle=":", linewidth=1.0)
                ax.text(n, 0.02, f" {label}", transform=ax.get_xaxis_transform(), fontsize=figures.SMALL, rotation=90)
            ax.set_xscale("log")
            ax.set_xlim(60, 60_000)
            ax.set_xlabel("training questions" if row == len(gaps) - 1 else "")
            ax.set_ylabel(f"{metric} minus baseline (points)" if col == 0 else "")
            if row == 0:
                ax.text(0.02, 0.98, dataset, transform=ax.transAxes, va="top", fontsize=figures.SMALL)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    axes[0, 0].figure.legend(handles, labels, loc="outside lower center", ncols=4)
