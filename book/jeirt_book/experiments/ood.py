"""Leave one benchmark out (Sec. 3.4, Table 3): how much worse a benchmark is predicted when no
question of it was trained on.

For a benchmark B two models are scored on the same (model, question) pairs, B's questions in the
test part of a question split: "all", fitted on that split (it trained on B's other questions), and
"leave-out", fitted on `jeirt.splits.split_leave_benchmark_out(ds, B)` (it saw none of B). One run is
`left_out_pairs` (what one leave-out fit predicts on those pairs); `left_out_table` scores a set of
runs (one row per benchmark, and the pooled "overall"); `leave_benchmark_out` is the whole loop.
Whether a benchmark's directional alignment (`jeirt.analysis.alignment`) predicts its drop is the
paper's reading; `spread_pick` chooses a few benchmarks that still span the range of alignment."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from jeirt.data import Dataset
from jeirt.estimator import Estimator
from jeirt.fitcache import fit_many
from jeirt.metrics import METRICS
from jeirt.splits import Split, split_leave_benchmark_out

COLUMNS = ["questions", "pairs", "leave-out", "all", "diff", "diff se", "base", "bias", "best epoch"]


def left_out_pairs(
    ds: Dataset, benchmark: str, split: Split, held: Split, model: Estimator, full_probs: np.ndarray
) -> dict:
    """One leave-out run, on `benchmark`'s test-part pairs of the question split `split`.

    `model` was fitted on `held` (the split that leaves `benchmark` out); `full_probs`
    (n_models, n_items) are the predictions of the model fitted on `split`. Returns the pairs'
    labels and three predictions: "leave-out", "all" and "base" (each model's own accuracy on the
    labels `held` trains on: what is known of the benchmark without any question geometry), with
    "questions" (how many) and "best epoch" (of the leave-out fit, NaN when it keeps no history).
    """
    if split.test.shape != ds.labels.shape or held.train.shape != ds.labels.shape:
        raise ValueError(
            f"split masks have shapes {split.test.shape} and {held.train.shape}; the "
            f"dataset's labels have {ds.labels.shape}. Make both splits from this dataset."
        )
    if np.shape(full_probs) != ds.labels.shape:
        raise ValueError(f"full_probs has shape {np.shape(full_probs)}; expected {ds.labels.shape}.")
    in_bench = (ds.items["benchmark"].to_numpy() == benchmark)[None, :]
    test = split.test & in_bench  # (n_models, n_items): the benchmark's test-part pairs
    if not test.any():
        raise ValueError(
            f"benchmark {benchmark!r} has no question in the test part of split "
            f"{split.name!r}; use a larger dataset or another split."
        )
    if (held.train & in_bench).any():
        raise ValueError(
            f"held trains on questions of {benchmark!r}; make it with split_leave_benchmark_out(ds, benchmark)."
        )
    rate = _model_rates(ds.labels, held.train)  # (n_models,) each model's accuracy without it
    history = getattr(model, "history_", None)
    return {
        "labels": ds.labels[test],
        "leave-out": model.predict_proba(ds)[test],
        "all": np.asarray(full_probs)[test],
        "base": np.broadcast_to(rate[:, None], ds.labels.shape)[test],
        "questions": int(test.any(axis=0).sum()),
        "question": np.nonzero(test)[1],  # the item of each pair, for spreads over questions
        "best epoch": getattr(history, "best_epoch", np.nan),
    }


def left_out_table(runs: dict[str, dict], metric: str = "accuracy") -> pd.DataFrame:
    """Table 3 from leave-out runs (benchmark -> `left_out_pairs`), scored by `metric`.

    One row per benchmark and a last row "overall" that pools every run's pairs (large benchmarks
    weigh more). Columns: questions, pairs, leave-out, all, diff (leave-out - all; negative: leaving
    the benchmark out hurts), diff se (the standard error of diff over the benchmark's test
    questions, `question_drops`; accuracy only, NaN for other metrics), base, bias (the leave-out
    model's mean prediction minus the observed accuracy: positive when it thinks the benchmark easier
    than it is) and best epoch."""
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r}; expected one of {sorted(METRICS)}.")
    if not runs:
        raise ValueError("runs is empty; pass at least one benchmark's left_out_pairs.")
    score = METRICS[metric]
    parts = ("leave-out", "all", "base")

    def row(run: dict) -> dict:
        out = {"questions": run["questions"], "pairs": len(run["labels"]), "best epoch": run["best epoch"]}
        out |= {name: score(run[name], run["labels"]) for name in parts}
        return out | {"bias": float(run["leave-out"].mean() - run["labels"].mean())}

    pooled: dict[str, Any] = {key: np.concatenate([r[key] for r in runs.values()]) for key in ("labels", *parts)}
    # questions of different benchmarks are different questions, even where their item numbers agree
    pooled["question"] = np.concatenate(
        [np.char.add(f"{b}:", np.asarray(r["question"]).astype(str)) for b, r in runs.items()]
    )
    pooled |= {"questions": sum(r["questions"] for r in runs.values()), "best epoch": np.nan}
    rows = {bench: row(run) for bench, run in runs.items()} | {"overall": row(pooled)}
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("benchmark")
    table["diff"] = table["leave-out"] - table["all"]
    spread = question_drops(runs | {"overall": pooled})["se"] / 100
    table["diff se"] = spread if metric == "accuracy" else np.nan
    return table[COLUMNS]


def leave_benchmark_out(
    ds: Dataset,
    make_model: Callable[[], Estimator],
    split: Split,
    full: Estimator,
    benchmarks: Sequence[str] | None = None,
    metric: str = "accuracy",
    seed: int = 0,
) -> pd.DataFrame:
    """Table 3: for each benchmark (default all), a fresh `make_model()` fitted on
    `split_leave_benchmark_out(ds, benchmark, seed)` (side by side, through the fit cache), scored
    with `full` (fitted on `split`) on the benchmark's test-part pairs (`left_out_table`)."""
    benchmarks = list(ds.benchmarks if benchmarks is None else benchmarks)
    unknown = [b for b in benchmarks if b not in ds.benchmarks]
    if unknown or not benchmarks:
        raise ValueError(f"benchmarks={benchmarks}; expected a non-empty list from {ds.benchmarks}.")
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r}; expected one of {sorted(METRICS)}.")
    helds = [split_leave_benchmark_out(ds, bench, seed=seed) for bench in benchmarks]
    models = fit_many([make_model() for _ in benchmarks], ds, helds)
    full_probs = full.predict_proba(ds)  # (n_models, n_items)
    runs = {
        bench: left_out_pairs(ds, bench, split, held, model, full_probs)
        for bench, held, model in zip(benchmarks, helds, models)
    }
    return left_out_table(runs, metric)


def _model_rates(labels: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Each model's share of correct answers among its labels under `mask` (n_models,); a model with
    none gets the mean over all its peers' labels."""
    used = mask & ~np.isnan(labels)
    right = np.where(used, np.nan_to_num(labels), 0.0).sum(axis=1)
    count = used.sum(axis=1)
    pooled = right.sum() / max(count.sum(), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, right / np.maximum(count, 1), pooled)


def spread_pick(values: pd.Series, k: int) -> list:
    """The index labels of `k` entries of `values` spread evenly over their rank order, lowest and
    highest included (all of them when k >= len(values)): fewer conditions that still span the range."""
    if k < 1:
        raise ValueError(f"k={k}; expected a positive number of entries to pick.")
    order = values.sort_values(kind="stable").index
    if k >= len(order):
        return list(order)
    if k == 1:
        return [order[len(order) // 2]]
    positions = np.unique(np.round(np.linspace(0, len(order) - 1, k)).astype(int))
    return [order[i] for i in positions]


def question_drops(runs: dict[str, dict]) -> pd.DataFrame:
    """Per benchmark of `runs` (benchmark -> `left_out_pairs`, or several folds' runs pooled by
    `pool_runs`): the accuracy drop from leaving it out (all - leave-out, in points: positive when
    leaving it out hurts, Table 3's grey cells) and its standard error over the benchmark's test
    questions (each question's drop averaged over its models; a few questions make a wide one)."""
    rows = {}
    for bench, run in runs.items():
        truth = np.asarray(run["labels"]) >= 0.5
        right_all, right_out = ((np.asarray(run[k]) >= 0.5) == truth for k in ("all", "leave-out"))
        per_pair = 100 * (right_all.astype(float) - right_out)
        per_question = pd.Series(per_pair).groupby(np.asarray(run["question"])).mean()
        n = len(per_question)
        se = float(per_question.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
        rows[bench] = {"questions": n, "drop": float(per_pair.mean()), "se": se}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("benchmark")


def fold_split(ds: Dataset, benchmark: str | None, fold: int, folds: int = 5, seed: int = 0) -> Split:
    """The question split of fold `fold` of `folds` for `benchmark` (None: every question): its test
    part is that fold of the benchmark's questions (a seeded partition), every other question is split
    80/10/10 as usual (`split_by_question`), its test part trained on. Over all folds each question is
    tested once, so a benchmark of 100 questions is not judged on the 10 a single split tests
    (`cross_fitted_runs`)."""
    from jeirt.splits import split_by_question

    if not 0 <= fold < folds or folds < 2:
        raise ValueError(f"fold={fold}, folds={folds}; expected folds >= 2 and 0 <= fold < folds.")
    in_bench = np.ones(ds.n_items, dtype=bool) if benchmark is None else ds.items["benchmark"].to_numpy() == benchmark
    if in_bench.sum() < folds:
        raise ValueError(f"benchmark {benchmark!r} has {in_bench.sum()} questions; expected at least folds={folds}.")
    base = split_by_question(ds, seed=seed)
    members = np.flatnonzero(in_bench)
    part = np.random.default_rng(seed).permutation(len(members)) % folds  # (n_members,) fold of each question
    tested = np.zeros(ds.n_items, dtype=bool)
    tested[members[part == fold]] = True
    trained = in_bench & ~tested
    train = (base.train | (base.test & trained[None, :])) & ~tested[None, :]
    val = base.val & ~tested[None, :]
    test = (base.test & ~in_bench[None, :]) | (ds.observed & tested[None, :])
    name = "all" if benchmark is None else benchmark
    return Split(train, val, test, f"{base.name}-{name}-fold{fold}of{folds}")


def cross_fitted_runs(
    ds: Dataset,
    make_model: Callable[[], Estimator],
    benchmarks: Sequence[str],
    folds: int = 5,
    seed: int = 0,
) -> dict[str, dict]:
    """Each benchmark's leave-out run on every one of its questions: for each benchmark one leave-out
    fit (`split_leave_benchmark_out`), and `folds` fits that each hold out one fold of every question
    (`fold_split(ds, None, ...)`), shared by all the benchmarks, so every question is scored by an "all"
    fit that never trained on it; all side by side through the fit cache. Benchmark -> the folds' pairs
    pooled into one run (the shape of `left_out_pairs`, for `question_drops`)."""
    benchmarks = list(benchmarks)
    unknown = [b for b in benchmarks if b not in ds.benchmarks]
    if unknown or not benchmarks:
        raise ValueError(f"benchmarks={benchmarks}; expected a non-empty list from {ds.benchmarks}.")
    splits = [fold_split(ds, None, k, folds, seed) for k in range(folds)]
    helds = [split_leave_benchmark_out(ds, b, seed=seed) for b in benchmarks]
    fits = fit_many([make_model() for _ in range(len(helds) + folds)], ds, [*helds, *splits])
    alls = [m.predict_proba(ds) for m in fits[len(helds) :]]  # (n_models, n_items) per fold
    out = {}
    for bench, held, leave_out in zip(benchmarks, helds, fits[: len(helds)]):
        runs = [left_out_pairs(ds, bench, s, held, leave_out, probs) for s, probs in zip(splits, alls)]
        pooled = {
            key: np.concatenate([r[key] for r in runs]) for key in ("labels", "leave-out", "all", "base", "question")
        }
        out[bench] = pooled | {"questions": sum(r["questions"] for r in runs), "best epoch": runs[0]["best epoch"]}
    return out
