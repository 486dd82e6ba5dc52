"""Side-by-side comparison: every method x several seeds on a dataset, encoder and split.

Each run makes the split with the run's seed, fits the method on its train part (the neural methods
pick their checkpoint on the val part), predicts the test questions and scores them: accuracy, ROC
AUC, Brier, ECE and log loss over every test label, plus the wall-clock fit time. `summarize` gives
mean and sd over seeds per dataset, encoder and method; `margins` says by how much JE-IRT leads (or
trails) the best other method. Results are written as a CSV of runs plus a JSON that also holds the
config that made them (methods' hyperparameters, versions, threads) and the summary.

    jeirt compare --dataset mmlu_pro,zeroeval --encoder all-MiniLM-L6-v2 --seeds 0,1,2 \
        --out results/compare_question_split.csv

JE-IRT runs with its default recipe plus its bounded search on the validation labels
(`JEIRT(search=True)`, see `jeirt.search.SEARCH_GRID`), as KNN chooses k and its weighting on them;
its temperature is fitted on them too. `paired_margins` gives, per dataset and encoder, JE-IRT minus the
best other method seed by seed: mean, sd and the seeds JE-IRT wins.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy import stats
from sklearn.base import BaseEstimator
from tqdm import tqdm

from jeirt import settings
from jeirt._version import __version__
from jeirt.baselines import (
    KNN,
    MIRT,
    BenchmarkAccuracy,
    EmbedLLMMF,
    IRTNet,
    ModelAccuracy,
)
from jeirt.baselines.irt import PerQuestionIRT
from jeirt.data.dataset import Dataset
from jeirt.data.loader import load_dataset
from jeirt.encoders import canonical_name
from jeirt.estimator import JEIRT, Estimator
from jeirt.files import atomic_write_many, finite_json, json_number, protected
from jeirt.metrics import ece, evaluate
from jeirt.questions import known_question_split
from jeirt.splits import (
    Split,
    fewer_training_questions,
    hold_out_models,
    split_by_question,
    split_leave_benchmark_out,
)
from jeirt.tasks import METHOD_NAMES, VARIANT_NAMES

# name -> factory(encoder, seed) -> an unfitted estimator with fit(ds, split) and predict_proba(ds)
METHODS: dict[str, Callable[[str, int], Estimator]] = {
    "je-irt": lambda encoder, seed: JEIRT(
        encoder=encoder, random_state=seed, progress=False, search=True, search_budget=JEIRT_SEARCH_BUDGET
    ),
    "embedllm-mf": lambda encoder, seed: EmbedLLMMF(encoder=encoder, random_state=seed),
    "irt-net": lambda encoder, seed: IRTNet(encoder=encoder, random_state=seed),
    "mirt": lambda encoder, seed: MIRT(encoder=encoder, random_state=seed),
    "knn": lambda encoder, seed: KNN(encoder=encoder),
    "benchmark-accuracy": lambda encoder, seed: BenchmarkAccuracy(),
    "model-accuracy": lambda encoder, seed: ModelAccuracy(),
}
# New models on known questions (split "known:<n>"): the methods that onboard held-out models, among them
# JE-IRT with per-question corrections from the trained models' answers and the per-question Rasch / 2PL
# fitted on the same answers (the neural baselines cannot onboard a model).
KNOWN_QUESTION_METHODS: dict[str, Callable[[str, int], Estimator]] = {
    "je-irt": METHODS["je-irt"],
    "je-irt+corrections": lambda encoder, seed: JEIRT(
        encoder=encoder,
        random_state=seed,
        progress=False,
        search=True,
        search_budget=JEIRT_SEARCH_BUDGET,
        question_correction=True,
    ),
    "rasch": lambda encoder, seed: PerQuestionIRT("1pl"),
    "2pl": lambda encoder, seed: PerQuestionIRT("2pl"),
    "benchmark-accuracy": METHODS["benchmark-accuracy"],
    "model-accuracy": METHODS["model-accuracy"],
}
# Variants beyond the paper, run only when named (`methods=["je-irt+benchmark"]`), and never counted as the
# "best other method" JE-IRT is measured against: "je-irt+benchmark" is JE-IRT with a one-hot of the
# question's benchmark appended to its frozen features (`JEIRT(benchmark_feature=True)`), same search and
# calibration, for datasets whose bare prompts carry less than their benchmark label (metabench);
# "je-irt+nested" is JE-IRT nested on each LLM's accuracy on the question's benchmark (`JEIRT(nested=True)`,
# `jeirt.nested`): its cross-fitted folds take the search's place, its residual weight the temperature's.
VARIANTS: dict[str, Callable[[str, int], Estimator]] = {
    "je-irt+benchmark": lambda encoder, seed: JEIRT(
        encoder=encoder,
        random_state=seed,
        progress=False,
        search=True,
        search_budget=JEIRT_SEARCH_BUDGET,
        benchmark_feature=True,
    ),
    "je-irt+nested": lambda encoder, seed: JEIRT(encoder=encoder, random_state=seed, progress=False, nested=True),
}
assert (tuple(METHODS), tuple(VARIANTS)) == (METHOD_NAMES, VARIANT_NAMES), (
    "jeirt.tasks.METHOD_NAMES / VARIANT_NAMES (what the command line offers) must list METHODS / VARIANTS"
)
METRICS = ("accuracy", "auc", "brier", "ece", "log_loss")
# Seconds after which JE-IRT's search starts no new candidate: on 2 shared CPU cores the whole grid on
# zeroeval, 3-5 candidates on mmlu_pro and 1-2 on metabench (a fit there takes 60-90 s). Each run
# records how many it tried (`fitted.search_tried`).
JEIRT_SEARCH_BUDGET = 120.0
RUN_COLUMNS = ("dataset", "encoder", "split", "method", "seed", *METRICS, "n_test", "fit_seconds", "params", "fitted")
KEYS = ["dataset", "encoder", "method"]


def method_params(estimator: BaseEstimator) -> dict:
    """The hyperparameters a fitted estimator used: `get_params`, with the training recipe spelled out."""
    params = estimator.get_params()
    if hasattr(estimator, "training_"):
        params["training"] = asdict(estimator.training_)
    return params


def fitted_summary(estimator: BaseEstimator) -> dict:
    """What fitting chose: epochs run and the best one (neural methods), k and weighting (k-NN)."""
    if hasattr(estimator, "history_"):
        summary = {
            "epochs": len(estimator.history_.val_loss),
            "best_epoch": estimator.history_.best_epoch + 1,
            "best_val_loss": min(estimator.history_.val_loss),
        }
        if hasattr(estimator, "temperature_"):  # JE-IRT: what its search chose and its calibration
            chosen = min(estimator.search_results_, key=lambda r: r["val_loss"])
            summary |= {
                "search_chosen": chosen["change"],
                "search_tried": len(estimator.search_results_),
                "temperature": estimator.temperature_,
                **estimator.calibration_,
            }
        return summary
    if hasattr(estimator, "k_"):
        return {"k": estimator.k_, "weighting": estimator.weighting_}
    return {}


def make_split(ds: Dataset, split: str, seed: int) -> Split:
    """`"question"`: seeded 80/10/10 question split; `"question:<n>"`: the same with only n of its training
    questions kept (`fewer_training_questions`: a learning curve's point, on the same validation and test
    questions); `"without:<benchmark>"`: that benchmark is the test;
    `"known:<n>"`: n models (drawn with the seed) held out of training and onboarded from their
    training questions, the others answering every question but the validation ones, the test part
    the held-out models' test answers (`jeirt.questions.known_question_split`)."""
    if split == "question":
        return split_by_question(ds, seed=seed)
    if split.startswith("question:"):
        n = split.split(":", 1)[1]
        if not n.isdigit():
            raise ValueError(
                f"split={split!r}; expected 'question:<number of training questions>', e.g. 'question:500'."
            )
        return fewer_training_questions(ds, split_by_question(ds, seed=seed), int(n), seed)
    if split.startswith("known:"):
        n = split.split(":", 1)[1]
        if not n.isdigit():
            raise ValueError(f"split={split!r}; expected 'known:<number of held-out models>', e.g. 'known:10'.")
        return known_question_split(hold_out_models(ds, split_by_question(ds, seed=seed), int(n), seed))
    if split.startswith("without:"):
        return split_leave_benchmark_out(ds, split.split(":", 1)[1], seed=seed)
    raise ValueError(f"split={split!r}; expected 'question', 'question:<n>', 'without:<benchmark>' or 'known:<n>'.")


def run_one(ds: Dataset, split: Split, method: str, encoder: str, seed: int) -> dict:
    """Fit one method on `split.train` (val for early stopping / k), score it on `split.test`."""
    catalogue = METHODS if method in METHODS else VARIANTS if method in VARIANTS else KNOWN_QUESTION_METHODS
    estimator = catalogue[method](encoder, seed)
    start = time.perf_counter()
    estimator.fit(ds, split)
    seconds = time.perf_counter() - start
    test_items = split.items_of("test")  # predict only what is scored: KNN's cost grows with items
    test = ds.subset(items=test_items)
    probs = estimator.predict_proba(test)  # (n_models, n_test_items)
    overall = evaluate(probs, test, split.test[:, test_items])["overall"]
    fitted = fitted_summary(estimator)
    if "temperature" in fitted:  # test ECE of the same fit before temperature scaling: logit x T undoes it
        sel = split.test[:, test_items] & test.observed
        p = np.clip(probs[sel].astype(np.float64), 1e-12, 1 - 1e-12)
        fitted["test_ece_before"] = ece(1 / (1 + (p / (1 - p)) ** -fitted["temperature"]), test.labels[sel])
    return {
        "dataset": ds.name,
        "encoder": encoder,
        "split": split.name,
        "method": method,
        "seed": seed,
        **{m: overall[m] for m in METRICS},
        "n_test": overall["n"],
        "fit_seconds": seconds,
        "params": json.dumps(method_params(estimator), default=str, sort_keys=True),
        "fitted": json.dumps(fitted, default=json_number),
    }


def compare(
    datasets: Sequence[str | Dataset],
    encoders: Sequence[str] = ("all-MiniLM-L6-v2",),
    seeds: Sequence[int] = (0, 1, 2),
    methods: Sequence[str] | None = None,
    split: str = "question",
    out: str | Path | None = None,
    encode_missing: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """Every method x seed on every dataset x encoder; one row per run (columns `RUN_COLUMNS`).

    A dataset without precomputed embeddings for an encoder is skipped (with a warning, and listed in
    the config) unless `encode_missing`, which encodes its texts (slow on a CPU). With `out`, the CSV
    and JSON are rewritten after every run, so an interrupted comparison keeps what it finished.
    The config is in `runs.attrs["config"]`.
    """
    methods = _check_compare_inputs(datasets, encoders, seeds, methods, split, out)
    encoders = [canonical_name(e) for e in encoders]
    skipped: list[str] = []  # the config's "skipped" list, filled as datasets are skipped
    config = _run_config(datasets, encoders, seeds, methods, split, skipped)
    rows: list[dict] = []
    total = len(datasets) * len(encoders) * len(seeds) * len(methods)
    bar = tqdm(total=total, desc="runs", disable=not progress)
    for source in datasets:
        ds = load_dataset(source) if isinstance(source, str) else source
        for encoder in encoders:
            if encoder not in ds.embeddings and not encode_missing:
                note = f"{ds.name} has no precomputed {encoder} embeddings"
                warnings.warn(f"skipping {note}; pass encode_missing=True to encode its texts.", stacklevel=2)
                skipped.append(note)
                bar.update(len(seeds) * len(methods))
                continue
            if encoder not in ds.embeddings:  # encoded into the cache here, with a progress line; the runs read it
                bar.set_postfix_str(f"encoding {ds.name}'s {ds.n_items} questions with {encoder}")
                ds.features(encoder, progress=progress)
            for seed in seeds:
                parts = make_split(ds, split, seed)
                for method in methods:
                    bar.set_postfix_str(f"{ds.name} {encoder} seed {seed} {method}")
                    rows.append(run_one(ds, parts, method, encoder, seed))
                    bar.update()
                    if out is not None:
                        save(_frame(rows, config), out)
    bar.close()
    config["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    runs = _frame(rows, config)
    if out is not None:
        save(runs, out)
    return runs


def _run_config(
    datasets: Sequence[str | Dataset],
    encoders: list[str],
    seeds: Sequence[int],
    methods: list[str],
    split: str,
    skipped: list[str],
) -> dict:
    """What a comparison ran with (kept beside its rows): its arguments, versions and machine."""
    return {
        "datasets": [d if isinstance(d, str) else d.name for d in datasets],
        "encoders": encoders,
        "seeds": [int(s) for s in seeds],
        "methods": methods,
        "split": split,
        "skipped": skipped,
        "jeirt_version": __version__,
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "device": str(settings.default_device()),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _check_compare_inputs(
    datasets: Sequence[str | Dataset],
    encoders: Sequence[str],
    seeds: Sequence[int],
    methods: Sequence[str] | None,
    split: str,
    out: str | Path | None,
) -> list[str]:
    """`compare`'s arguments refused before the first run (nothing repeated, known methods, a .csv
    `out` jeirt may write); the methods to run (default: every one of the split's)."""
    catalogue = KNOWN_QUESTION_METHODS if split.startswith("known:") else METHODS
    if methods is not None and not list(methods):
        raise ValueError(f"methods is empty; give at least one of {list(catalogue)}, or None for all of them.")
    methods = list(methods or catalogue)
    named: list[tuple[str, Sequence[object]]] = [  # names or seeds, each to be given once
        ("datasets", [d if isinstance(d, str) else d.name for d in datasets]),
        ("encoders", [canonical_name(e) for e in encoders]),
        ("seeds", [int(s) for s in seeds]),
        ("methods", methods),
    ]
    for what, values in named:
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"{what} names {repeated} more than once; a run counted twice would weigh double.")
    unknown = [m for m in methods if m not in catalogue and m not in VARIANTS]
    if unknown:
        raise ValueError(
            f"methods={unknown}; known methods for split {split!r} are {list(catalogue)}, and the "
            f"variants beyond the paper {list(VARIANTS)}."
        )
    if not seeds:
        raise ValueError("seeds is empty; give at least one seed, e.g. (0, 1, 2).")
    if out is not None:  # before the first run, not after it
        if Path(out).suffix != ".csv":
            raise ValueError(f"out={str(out)!r}; expected a .csv path (the .json is written beside it).")
        for path in (Path(out), Path(out).with_suffix(".json")):
            if protected(path):
                raise ValueError(f"out={str(out)!r}: {path} is {protected(path)}; jeirt never writes there.")
    return methods


def _frame(rows: list[dict], config: dict) -> pd.DataFrame:
    runs = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
    runs.attrs["config"] = config
    return runs


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd over seeds of every metric and the fit time, per dataset, encoder and method.

    Columns `<metric>_mean`, `<metric>_sd`, `seeds`; rows in the order the runs first list them.
    """
    if runs.empty:
        raise ValueError("no runs to summarise.")
    values = list(METRICS) + ["fit_seconds"]
    grouped = runs.groupby(KEYS, sort=False)[values]
    table = grouped.mean().add_suffix("_mean").join(grouped.std(ddof=1).add_suffix("_sd"))
    table["seeds"] = grouped.size()
    order = [f"{v}_{s}" for v in values for s in ("mean", "sd")] + ["seeds"]
    return table[order].reset_index()


def margins(
    summary: pd.DataFrame, reference: str = "je-irt", metrics: Sequence[str] = ("accuracy", "auc")
) -> pd.DataFrame:
    """Per dataset, encoder and metric: `reference`'s mean minus the best other method's (> 0: it leads).
    Variants beyond the paper (`VARIANTS`) are never the best other method; pass one as `reference`."""
    rows = []
    for (dataset, encoder), block in summary.groupby(["dataset", "encoder"], sort=False):
        ref = block[block["method"] == reference]
        others = block[(block["method"] != reference) & ~block["method"].isin(list(VARIANTS))]
        if ref.empty or others.empty:
            continue
        for metric in metrics:
            best = others.loc[others[f"{metric}_mean"].idxmax()]
            ours = float(ref[f"{metric}_mean"].iloc[0])
            rows.append(
                {
                    "dataset": dataset,
                    "encoder": encoder,
                    "metric": metric,
                    reference: ours,
                    "best_other": best["method"],
                    "best_other_value": float(best[f"{metric}_mean"]),
                    "margin": ours - float(best[f"{metric}_mean"]),
                }
            )
    return pd.DataFrame(rows)


def paired_margins(
    runs: pd.DataFrame,
    reference: str = "je-irt",
    metrics: Sequence[str] = ("accuracy", "auc"),
    against: Sequence[str] | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Per dataset, encoder and metric: `reference` minus another method, seed by seed on the same splits:
    mean and sd of the differences, a `level` t interval of their mean over the seeds (low, high), and
    seeds won (> 0). The other method is the best by its mean over seeds (column `best_other`; as in
    `margins`, never a variant beyond the paper), or each of `against` that ran (column `other`, a row each)."""
    rows = []
    summary = summarize(runs)
    for (dataset, encoder), block in runs.groupby(["dataset", "encoder"], sort=False):
        means = summary[(summary["dataset"] == dataset) & (summary["encoder"] == encoder)]
        others = means[(means["method"] != reference) & ~means["method"].isin(list(VARIANTS))]
        if reference not in set(block["method"]) or others.empty:
            continue
        ran = set(block["method"]) - {reference}
        column = "other" if against else "best_other"
        for metric in metrics:
            if against:
                opponents = [m for m in against if m in ran]
            else:
                opponents = [others.loc[others[f"{metric}_mean"].idxmax(), "method"]]
            wide = block.pivot_table(index="seed", columns="method", values=metric)
            for other in opponents:
                pair = wide[[reference, other]].dropna()
                head = {"dataset": dataset, "encoder": encoder, "metric": metric, column: other}
                rows.append(head | _paired(pair[reference] - pair[other], level))
    return pd.DataFrame(rows)


# What a variant beyond the paper is measured against, seed by seed (`variant_margins`), besides the best
# other method: the plain baseline nested in "je-irt+nested", the two IRT-style neural methods, and JE-IRT.
VARIANT_OPPONENTS = ("benchmark-accuracy", "mirt", "irt-net", "je-irt")


def variant_margins(runs: pd.DataFrame, against: Sequence[str] = VARIANT_OPPONENTS) -> pd.DataFrame:
    """`paired_margins` of each variant beyond the paper that ran: against the best other method (column
    `best` true) and against each of `against`; one row per variant, dataset, encoder, metric and other."""
    frames = []
    for variant in [v for v in VARIANTS if v in set(runs["method"])]:
        best = paired_margins(runs, variant).rename(columns={"best_other": "other"}).assign(best=True)
        named = paired_margins(runs, variant, against=against).assign(best=False)
        frames.append(pd.concat([best, named], ignore_index=True).assign(variant=variant))
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    return table[["variant", *[c for c in table.columns if c != "variant"]]]


def _paired(diff: pd.Series, level: float) -> dict:
    """Mean, sd, t interval (low, high) and wins of paired differences over seeds; NaN where one seed."""
    n = len(diff)
    mean, sd = float(diff.mean()), float(diff.std(ddof=1)) if n > 1 else float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / np.sqrt(n) if n > 1 else float("nan")
    return {
        "margin_mean": mean,
        "margin_sd": sd,
        "low": mean - half,
        "high": mean + half,
        "seeds_won": int((diff > 0).sum()),
        "seeds": n,
    }


def format_table(
    summary: pd.DataFrame,
    metrics: Sequence[str] = ("accuracy", "auc", "brier", "ece"),
    digits: int = 3,
    markdown: bool = False,
) -> str:
    """A readable table: one row per dataset / encoder / method, cells `mean ± sd`; or a Markdown one."""

    def cell(mean: float, sd: float) -> str:
        return f"{mean:.{digits}f}" if np.isnan(sd) else f"{mean:.{digits}f} ± {sd:.{digits}f}"

    table = summary[KEYS].copy()
    for metric in metrics:
        table[metric] = [cell(m, s) for m, s in zip(summary[f"{metric}_mean"], summary[f"{metric}_sd"])]
    table["fit s"] = [f"{m:.1f}" for m in summary["fit_seconds_mean"]]
    table["seeds"] = summary["seeds"].astype(str)
    if not markdown:
        return table.to_string(index=False)
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def merge(*parts: pd.DataFrame) -> pd.DataFrame:
    """Runs from several `compare` calls as one table; the config lists each part's config."""
    if not parts:
        raise ValueError("nothing to merge: give at least one table of runs.")
    runs = pd.concat(parts, ignore_index=True)
    dup = runs.duplicated(["dataset", "encoder", "split", "method", "seed"])
    if dup.any():
        raise ValueError(
            f"{int(dup.sum())} runs appear in more than one part, e.g. "
            f"{runs.loc[dup, ['dataset', 'encoder', 'method', 'seed']].iloc[0].to_dict()}."
        )
    configs = [p.attrs.get("config", {}) for p in parts]
    union = {
        key: list(dict.fromkeys(v for c in configs for v in c.get(key, [])))
        for key in ("datasets", "encoders", "seeds", "methods", "skipped")
    }
    splits = sorted({c["split"] for c in configs if "split" in c})
    runs.attrs["config"] = {**union, "split": splits[0] if len(splits) == 1 else splits, "parts": configs}
    return runs


def save(runs: pd.DataFrame, path: str | Path) -> tuple[Path, Path]:
    """Write the runs to `path` (CSV) and, beside it, a JSON with the config, the runs, the summary and
    the CSV's SHA-256, as one unit (`atomic_write_many`): `load` refuses a pair from different writes."""
    path = Path(path)
    if path.suffix != ".csv":
        raise ValueError(f"out={str(path)!r}; expected a .csv path (the .json is written beside it).")
    path.parent.mkdir(parents=True, exist_ok=True)
    table = runs.to_csv(index=False, float_format="%.6g").encode("utf-8")
    summary = summarize(runs) if len(runs) else pd.DataFrame()
    blob = {
        "format": "jeirt-compare",
        "csv_sha256": hashlib.sha256(table).hexdigest(),
        "config": runs.attrs.get("config", {}),
        "runs": records(runs),
        "summary": records(summary),
        "margins": records(margins(summary)) if len(runs) else [],
        "paired_margins": records(paired_margins(runs)) if len(runs) else [],
        "variant_margins": records(variant_margins(runs)) if len(runs) else [],
    }
    text = json.dumps(finite_json(blob), indent=1, default=json_number, allow_nan=False).encode("utf-8")
    json_path = path.with_suffix(".json")
    atomic_write_many([(path, lambda f: f.write(table)), (json_path, lambda f: f.write(text))])
    return path, json_path


def load(path: str | Path) -> pd.DataFrame:
    """Read the runs written by `save` (from the .json, so the config comes back in `attrs`), after
    checking that the CSV beside it is the one written with it (its SHA-256)."""
    csv_path, path = Path(path).with_suffix(".csv"), Path(path).with_suffix(".json")
    try:
        blob = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path} cannot be read as a comparison ({type(err).__name__}: {err}).") from None
    if not isinstance(blob, dict) or blob.get("format") != "jeirt-compare":
        raise ValueError(f"{path} was not written by jeirt.tasks.compare.save.")
    if "csv_sha256" in blob:  # files from before the checksum was kept have none
        if not csv_path.is_file():
            raise ValueError(f"{csv_path}, the table written with {path.name}, is missing; run the comparison again.")
        if hashlib.sha256(csv_path.read_bytes()).hexdigest() != blob["csv_sha256"]:
            raise ValueError(
                f"{csv_path} and {path} come from different writes (the CSV's SHA-256 differs from the "
                "one the JSON records): a comparison was interrupted between them or one was edited; "
                "run it again."
            )
    return _frame(blob["runs"], blob["config"])


def records(table: pd.DataFrame) -> list[dict]:
    """Rows as dicts with NaN written as null (strict JSON)."""
    return table.astype(object).where(table.notna(), None).to_dict("records")
