"""Few-question scores of new models: mean absolute error and 90% interval coverage, with baselines.

For each dataset and seed: the question split (seed s), `--held-out` models drawn with seed s leave
training and the trained models answer every question outside validation
(`jeirt.questions.known_question_split`); on `metabench` a seeded sample of `--metabench-models` models
of the models with at least 2 max(k) graded answers stands in for all 6,349. Each held-out model is asked k of its graded questions at random (its own
draw; one order per model, read as prefixes for every k) and its accuracy on all its graded questions,
overall and per benchmark, is estimated by

- plain mean: the mean of the k answers (per benchmark: of the answers there, else overall);
- JE-IRT (the paper's model): `estimate_scores` on `QuestionBank.from_model`, questions from their text;
- JE-IRT + corrections: the same trained network with per-question corrections fitted from the trained
  models' answers (`JEIRT.fit_corrections`);
- Rasch (per question): `irt_estimates` with a `OnePL` fitted on the same known answers.

Writes `<out>.csv` (one row per dataset, seed, method, k and model) and `<out>.json` (config, summary).

    flock /tmp/jeirt-heavy.lock python benchmarks/few_questions.py
"""
from __future__ import annotations

import argparse
import platform
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from jeirt import __version__
from jeirt.baselines.irt import OnePL
from jeirt.data import load_dataset
from jeirt.estimator import JEIRT
from jeirt.files import write_json
from jeirt.questions import known_question_split
from jeirt.splits import hold_out_models, split_by_question
from jeirt.tasks.evaluation import (
    OVERALL,
    QuestionBank,
    estimate_scores,
    irt_estimates,
    plain_means,
    select_items,
)


def truth_table(labels: np.ndarray, groups: np.ndarray, models: list[str]) -> pd.DataFrame:
    """(model, group) -> the mean of all the model's graded answers there."""
    rows = []
    for i, m in enumerate(models):
        for g in [OVERALL] + list(pd.unique(groups)):
            sel = ~np.isnan(labels[i]) & (True if g == OVERALL else groups == g)
            if sel.any():
                rows.append({"model": m, "group": g, "true": float(np.nanmean(labels[i, sel]))})
    return pd.DataFrame(rows)


def score_rows(est: pd.DataFrame, truth: pd.DataFrame, **keys) -> pd.DataFrame:
    """One row per model: overall error, per-benchmark MAE, coverage of the 90% intervals."""
    table = est.merge(truth, on=["model", "group"])
    table["abs_error"] = (table["estimate"] - table["true"]).abs()
    has_interval = "lower" in table
    if has_interval:
        table["covered"] = ((table["lower"] <= table["true"]) & (table["true"] <= table["upper"])).astype(float)
    overall = table[table["group"] == OVERALL].set_index("model")
    benches = table[table["group"] != OVERALL].groupby("model")
    out = pd.DataFrame({"model": overall.index, "true": overall["true"].to_numpy(),
                        "estimate": overall["estimate"].to_numpy()})
    out["error"] = out["estimate"] - out["true"]
    out["abs_error"] = out["error"].abs()
    out["bench_mae"] = benches["abs_error"].mean().reindex(overall.index).to_numpy()
    out["covered"] = overall["covered"].to_numpy() if has_interval else np.nan
    out["bench_covered"] = benches["covered"].mean().reindex(overall.index).to_numpy() if has_interval else np.nan
    return out.assign(**keys)


def run(dataset: str, seeds: list[int], ks: list[int], held_out: int, n_models: int | None, draws: int) -> pd.DataFrame:
    full = load_dataset(dataset)
    frames = []
    for seed in tqdm(seeds, desc=f"{dataset} seeds"):
        # Models with at least 2 max(k) graded answers (metabench is sparse), a seeded sample of them.
        eligible = np.flatnonzero(full.observed.sum(axis=1) >= 2 * max(ks))
        ds = full.subset(models=eligible)
        if n_models is not None and n_models < len(eligible):
            pick = np.sort(np.random.default_rng(seed).choice(len(eligible), size=n_models, replace=False))
            ds = ds.subset(models=pick)
        split = known_question_split(hold_out_models(ds, split_by_question(ds, seed=seed), held_out, seed))
        names = list(split.held_out)
        trained = [m for m in ds.models if m not in names]
        rows = ds.model_index(trained)
        new = ds.subset(models=names)
        labels = new.labels.astype(np.float64)
        graded = ~np.isnan(labels)
        model = JEIRT(random_state=seed, progress=False).fit(ds, split)
        banks = {"je-irt": QuestionBank.from_model(model, ds, prior_models=trained)}
        model.fit_corrections(ds.subset(models=rows), (split.train | split.val)[rows])
        banks["je-irt + corrections"] = QuestionBank.from_model(model, ds, prior_models=trained)
        irt = OnePL().fit(ds.subset(models=rows), (split.train | split.val)[rows] & ds.observed[rows])
        truth = truth_table(labels, new.items["benchmark"].astype(str).to_numpy(), names)
        order = select_items(banks["je-irt"], max(ks), "random", labels=labels, seed=seed)  # a draw per model
        for k in tqdm(ks, desc=f"k (seed {seed})", leave=False):
            asked = np.zeros_like(graded)
            np.put_along_axis(asked, order[:, :k], True, axis=1)
            keys = {"dataset": dataset, "seed": seed, "k": k}
            frames.append(score_rows(plain_means(banks["je-irt"], labels, asked, names), truth, method="plain mean",
                                     **keys))
            for method, bank in banks.items():
                est = estimate_scores(bank, labels, asked, targets=graded, draws=draws, seed=seed, models=names)
                frames.append(score_rows(est, truth, method=method, **keys))
            frames.append(score_rows(irt_estimates(irt, new, asked), truth, method="rasch (per question)", **keys))
    return pd.concat(frames, ignore_index=True)


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, method and k: MAE and mean error overall, per-benchmark MAE, coverage of the 90%
    intervals overall and per benchmark, and the number of (model, seed) estimates."""
    grouped = runs.groupby(["dataset", "method", "k"], sort=False)
    return grouped.agg(mae=("abs_error", "mean"), bias=("error", "mean"), bench_mae=("bench_mae", "mean"),
                       coverage=("covered", "mean"), bench_coverage=("bench_covered", "mean"),
                       estimates=("abs_error", "size")).reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="mmlu_pro,metabench")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--ks", default="50,100,300")
    parser.add_argument("--held-out", type=int, default=10, help="held-out models on mmlu_pro")
    parser.add_argument("--metabench-models", type=int, default=1000)
    parser.add_argument("--metabench-held-out", type=int, default=100)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--out", default="results/few_questions.csv")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    ks = [int(k) for k in args.ks.split(",")]
    config = {**vars(args), "jeirt_version": __version__, "torch_version": torch.__version__,
              "python": platform.python_version(), "threads": torch.get_num_threads(),
              "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    frames = []
    for name in args.datasets.split(","):
        meta = name == "metabench"
        frames.append(run(name, seeds, ks, args.metabench_held_out if meta else args.held_out,
                          args.metabench_models if meta else None, args.draws))
    runs = pd.concat(frames, ignore_index=True)
    summary = summarize(runs)
    runs.to_csv(args.out, index=False, float_format="%.6g")
    records = lambda t: t.astype(object).where(t.notna(), None).to_dict("records")
    config["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json(args.out.replace(".csv", ".json"), {"format": "jeirt-few-questions", "config": config,
                                                   "summary": records(summary)}, indent=1)
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4f}"))


if __name__ == "__main__":
    main()
