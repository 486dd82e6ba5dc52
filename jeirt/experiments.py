"""Experiment protocols of the book: each trains models by a fixed recipe and returns a table.

A protocol takes a `Dataset`, a factory that makes a fresh unfitted estimator (anything with
`fit(ds, split)` and `predict_proba(ds)`, e.g. `lambda: JEIRT(d=16, random_state=0)`) and the
protocol's own knobs; it fits as many models as the recipe needs and returns a DataFrame, one row per
condition. Chapters call these, so a recipe is written once and tested once.

    leave_benchmark_out    Sec. 3.4, Table 3: train without one benchmark, test on it, and compare with
                           a model trained on every benchmark, on the same questions
    spread_pick            k entries spread evenly over the range of a score (to run fewer conditions)
    dimension_sweep        Sec. 3.2, Figure 2: test accuracy of JE-IRT over a grid of d, encoders and seeds
    baseline_reference     Figure 2's reference lines: EmbedLLM's factorisation and KNN on the same splits
    onboarding_curve       Sec. 3.3, Tables 1-2: LLMs held out of training, onboarded from a share of
                           their items, against the same LLMs trained jointly ("All")
    onboarding_rate        Appendix D: many new LLMs onboarded from n items each; error against n
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from jeirt.data import Dataset, Split, split_leave_benchmark_out
from jeirt.metrics import METRICS
from jeirt.data import hold_out_models, split_by_question, subsample_items  # onboarding, dimension sweep
from jeirt.metrics import evaluate


class Estimator(Protocol):
    """What a protocol needs of a model: fit on a split, predict (n_models, n_items) probabilities."""

    def fit(self, ds: Dataset, split: Split) -> "Estimator": ...

    def predict_proba(self, ds: Dataset) -> np.ndarray: ...


# ---------------------------------------------------------------------------------------------
# Leave one benchmark out (Sec. 3.4, Table 3)


def leave_benchmark_out(ds: Dataset, make_model: Callable[[], Estimator], split: Split, full: Estimator,
                        benchmarks: Sequence[str] | None = None, metric: str = "accuracy", seed: int = 0,
                        progress: bool = True) -> pd.DataFrame:
    """Table 3: how much worse a benchmark is predicted when it was never trained on.

    For each benchmark B, a fresh `make_model()` is fitted on `split_leave_benchmark_out(ds, B, seed)`
    (every other benchmark; B's questions are all unseen), and scored on B's questions in the test
    part of the question split `split` ("leave-out"). `full` is a model already fitted on `split`, so
    it trained on B's training-part questions, not these; it is scored on the same pairs ("all"). Both
    columns therefore score the same (model, question) pairs, and "diff" = leave-out - all (negative:
    leaving B out hurts). "base" scores the constant prediction of each model's own accuracy on the
    leave-out training labels: what is known of B without any question geometry. "bias" is the
    leave-out model's mean predicted probability minus the observed accuracy on those pairs: how far
    it misjudges the new benchmark's overall level (positive: it thinks B easier than it is).

    The last row, "overall", pools the pairs of every listed benchmark (each scored by its own
    leave-out model), so large benchmarks weigh more. Returns one row per benchmark with the
    columns questions, pairs, leave-out, all, diff, base, bias and best epoch (of the leave-out fit,
    when the model records a history).
    """
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r}; expected one of {sorted(METRICS)}.")
    if split.train.shape != ds.labels.shape:
        raise ValueError(f"split masks have shape {split.train.shape}; the dataset's labels have "
                         f"{ds.labels.shape}. Make the split from this dataset.")
    benchmarks = list(ds.benchmarks if benchmarks is None else benchmarks)
    unknown = [b for b in benchmarks if b not in ds.benchmarks]
    if unknown or not benchmarks:
        raise ValueError(f"benchmarks={benchmarks}; expected a non-empty list from {ds.benchmarks}.")
    score = METRICS[metric]
    full_probs = full.predict_proba(ds)  # (n_models, n_items)
    item_bench = ds.items["benchmark"].to_numpy()
    rows, pooled = [], {"leave-out": [], "all": [], "base": [], "labels": []}
    for bench in tqdm(benchmarks, desc="leave one benchmark out", disable=not progress):
        test = split.test & (item_bench == bench)[None, :]  # B's test-part pairs: (n_models, n_items)
        if not test.any():
            raise ValueError(f"benchmark {bench!r} has no question in the test part of split "
                             f"{split.name!r}; use a larger dataset or another split.")
        held = split_leave_benchmark_out(ds, bench, seed=seed)
        model = make_model().fit(ds, held)
        probs = model.predict_proba(ds)
        rate = _model_rates(ds.labels, held.train)  # (n_models,) each model's accuracy without B
        labels = ds.labels[test]
        parts = {"leave-out": probs[test], "all": full_probs[test],
                 "base": np.broadcast_to(rate[:, None], ds.labels.shape)[test]}
        row = {"benchmark": bench, "questions": int(test.any(axis=0).sum()), "pairs": int(test.sum())}
        row |= {name: score(p, labels) for name, p in parts.items()}
        row["bias"] = float(parts["leave-out"].mean() - labels.mean())
        history = getattr(model, "history_", None)
        row["best epoch"] = getattr(history, "best_epoch", np.nan)
        rows.append(row)
        for name, p in parts.items():
            pooled[name].append(p)
        pooled["labels"].append(labels)
    labels = np.concatenate(pooled.pop("labels"))
    overall = {"benchmark": "overall", "questions": sum(r["questions"] for r in rows),
               "pairs": len(labels), "best epoch": np.nan}
    overall |= {name: score(np.concatenate(p), labels) for name, p in pooled.items()}
    overall["bias"] = float(np.concatenate(pooled["leave-out"]).mean() - labels.mean())
    table = pd.DataFrame(rows + [overall]).set_index("benchmark")
    table.insert(table.columns.get_loc("all") + 1, "diff", table["leave-out"] - table["all"])
    return table[["questions", "pairs", "leave-out", "all", "diff", "base", "bias", "best epoch"]]


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


# ---------------------------------------------------------------------------------------------
# Accuracy against the embedding dimension (Sec. 3.2, Figure 2)

PAPER_D_GRID = (8, 16, 32, 64, 128, 256, 512, 1024)  # the full profile's sweep (paper: 16 to 1024)
PAPER_ENCODERS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2", "ModernBERT-large")  # Figure 2's encoders


@dataclass
class RunScores:
    """Test scores of fitted models, one row per run, per (run, model) and per (run, benchmark)."""

    runs: pd.DataFrame  # one row per run: its keys, test metrics, n, best validation loss, epochs, seconds
    per_model: pd.DataFrame  # one row per run and LLM: keys, model, accuracy, log_loss, n
    per_benchmark: pd.DataFrame  # one row per run and benchmark: keys, benchmark, accuracy, log_loss, n

    @classmethod
    def concat(cls, parts: Sequence["RunScores"]) -> "RunScores":
        """All rows of `parts`, in order."""
        return cls(*(pd.concat([getattr(p, name) for p in parts], ignore_index=True)
                     for name in ("runs", "per_model", "per_benchmark")))


def score_test(model: Estimator, ds: Dataset, split: Split, keys: dict) -> RunScores:
    """Score a fitted `model` on `split.test`: overall, per LLM and per benchmark, each row led by `keys`."""
    items = split.items_of("test")  # predict only what is scored
    test = ds.subset(items=items)
    result = evaluate(model.predict_proba(test), test, split.test[:, items])
    history = getattr(model, "history_", None)
    run = {**keys, **{m: result["overall"][m] for m in ("accuracy", "auc", "log_loss")},
           "n": result["overall"]["n"],
           "val_loss": min(history.val_loss) if history is not None else np.nan,
           "epochs": len(history.val_loss) if history is not None else np.nan}
    tables = []
    for name in ("per_model", "per_benchmark"):
        table = result[name][["accuracy", "log_loss", "n"]].reset_index()
        tables.append(table.assign(**keys)[list(keys) + list(table.columns)])
    return RunScores(pd.DataFrame([run]), *tables)


def fit_and_score(model: Estimator, ds: Dataset, split: Split, keys: dict) -> RunScores:
    """Fit `model` on `split` and score it on the test part (`score_test`), with the fit's wall time."""
    start = time.perf_counter()
    model.fit(ds, split)
    seconds = time.perf_counter() - start
    scores = score_test(model, ds, split, keys)
    scores.runs["fit_seconds"] = seconds
    return scores


def dimension_sweep(ds: Dataset, make_model: Callable[[str, int, int], Estimator], encoders: Sequence[str],
                    d_grid: Sequence[int], seeds: Sequence[int], progress: bool = True) -> RunScores:
    """Figure 2: fit `make_model(encoder, d, seed)` for every encoder, d and seed; score each on the test part.

    Seed s sets the question split (`split_by_question(ds, seed=s)`, 80/10/10) as well as the model's
    own initialisation, so the spread over seeds covers both; every encoder and d sees the same splits.
    The checkpoint is whatever the estimator picks (JE-IRT: lowest validation loss).
    """
    if not encoders or not d_grid or not seeds:
        raise ValueError(f"encoders={list(encoders)}, d_grid={list(d_grid)}, seeds={list(seeds)}; "
                         "each needs at least one entry.")
    if min(d_grid) < 1:
        raise ValueError(f"d_grid={list(d_grid)}; expected positive dimensions.")
    splits = {seed: split_by_question(ds, seed=seed) for seed in seeds}
    runs = [(encoder, int(d), int(seed)) for encoder in encoders for d in d_grid for seed in seeds]
    return RunScores.concat([
        fit_and_score(make_model(encoder, d, seed), ds, splits[seed], {"encoder": encoder, "d": d, "seed": seed})
        for encoder, d, seed in tqdm(runs, desc="dimension sweep", disable=not progress)])


def baseline_reference(ds: Dataset, encoders: Sequence[str], seeds: Sequence[int],
                       max_epochs: int | None = None, progress: bool = True) -> RunScores:
    """Figure 2's reference lines: EmbedLLM's matrix factorisation and KNN (`jeirt.baselines`), fitted on
    the same question splits as `dimension_sweep` (seed s: `split_by_question(ds, seed=s)`).

    `max_epochs` caps the factorisation's training as the sweep caps JE-IRT's (None: its default).
    """
    from jeirt.baselines import KNN, EmbedLLMMF  # imported here: only this protocol needs them

    makers = {"embedllm-mf": lambda enc, seed: EmbedLLMMF(encoder=enc, random_state=seed,
                                                           **({"max_epochs": max_epochs} if max_epochs else {})),
              "knn": lambda enc, seed: KNN(encoder=enc)}
    splits = {seed: split_by_question(ds, seed=seed) for seed in seeds}
    runs = [(method, encoder, int(seed)) for seed in seeds for encoder in encoders for method in makers]
    return RunScores.concat([
        fit_and_score(makers[method](encoder, seed), ds, splits[seed],
                      {"method": method, "encoder": encoder, "seed": seed})
        for method, encoder, seed in tqdm(runs, desc="baselines", disable=not progress)])


def sweep_summary(runs: pd.DataFrame, by: Sequence[str] = ("encoder", "d")) -> pd.DataFrame:
    """Mean, sd, min and max over seeds of test accuracy, plus mean validation loss, AUC and fit time."""
    grouped = runs.groupby(list(by), sort=True)
    table = grouped["accuracy"].agg(["mean", "std", "min", "max"]).add_prefix("accuracy_")
    table["val_loss"] = grouped["val_loss"].mean()
    table["auc"] = grouped["auc"].mean()
    table["fit_seconds"] = grouped["fit_seconds"].mean()
    table["seeds"] = grouped.size()
    return table.reset_index()


def best_dimension(runs: pd.DataFrame) -> pd.Series:
    """Per encoder, the d with the lowest mean validation loss over seeds (chosen without the test set)."""
    mean = runs.groupby(["encoder", "d"])["val_loss"].mean().reset_index()
    return mean.loc[mean.groupby("encoder")["val_loss"].idxmin()].set_index("encoder")["d"]


def available_encoders(ds: Dataset, wanted: Sequence[str] = PAPER_ENCODERS,
                       try_loading: bool = False) -> tuple[list[str], dict[str, str]]:
    """Which of `wanted` encoders a chapter can use on `ds`, and why each other one is skipped.

    An encoder with precomputed features (`ds.embeddings`) is always usable. Another one is usable only
    when `try_loading` and its weights load (`jeirt.encoders.get_encoder`); then `ds.features` encodes
    the texts, which is slow without a GPU. Offline, loading fails at once (no download is attempted
    when `HF_HUB_OFFLINE=1`) and the reason names what was tried.
    """
    from jeirt.encoders import canonical_name, get_encoder

    usable, skipped = [], {}
    for name in (canonical_name(n) for n in wanted):
        if name in ds.embeddings:
            usable.append(name)
        elif not try_loading:
            skipped[name] = f"no precomputed features in {ds.name!r} (this profile does not encode texts)"
        else:
            try:
                get_encoder(name)
                usable.append(name)
            except Exception as err:  # any failure to find or load weights means: skip it, say why
                skipped[name] = f"{type(err).__name__}: {str(err).splitlines()[0]}"
    return usable, skipped


# ---------------------------------------------------------------------------------------------
# Onboarding new LLMs (Sec. 3.3, Tables 1-2, Appendix D)

ONBOARD_FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0)  # Table 1's shares of a model's training items
RATE_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256, 512)  # items seen per new model, for the O(d/n) rate
RATE_DIMS = (4, 16, 64)  # dimensions compared for the rate: the items a new model needs grow with d

# Public release month of each mmlu_pro model (vendor announcements and model cards; month precision),
# to pick "recent" models for the analogue of Table 2.
MMLU_PRO_RELEASES = {
    "Llama-2-7b-hf": "2023-07", "Llama-2-13b-hf": "2023-07", "Llama-2-70b-hf": "2023-07",
    "Mistral-7B-v0.1": "2023-09", "Mistral-7B-Instruct-v0.1": "2023-09",
    "Yi-6B": "2023-11", "Yi-6b-Chat": "2023-11", "Yi-34B": "2023-11",
    "Mistral-7B-Instruct-v0.2": "2023-12", "Mixtral-8x7B-v0.1": "2023-12", "Mixtral-8x7B-Instruct-v0.1": "2023-12",
    "Qwen1.5-7B-Chat": "2024-02", "Qwen1.5-72B-Chat": "2024-02", "gemma-7b": "2024-02",
    "Mistral-7B-v0.2-hf": "2024-03", "c4ai-command-r-v01": "2024-03",
    "Qwen1.5-110B": "2024-04", "Meta-Llama-3-8B": "2024-04", "Meta-Llama-3-8B-Instruct": "2024-04",
    "Meta-Llama-3-70B": "2024-04", "llama-3-8b-quantized": "2024-04", "Phi-3-mini-4k-instruct": "2024-04",
    "gpt-4o(2024-05-13)": "2024-05", "deepseek-chat(2024-05)": "2024-05", "DeepSeek-Coder-V2": "2024-06",
    "mathstral-7B": "2024-07", "Meta-Llama-3_1-8B": "2024-07", "Meta-Llama-3_1-8B-Instruct": "2024-07",
    "Meta-Llama-3_1-70B": "2024-07", "Meta-Llama-3_1-70B-Instruct": "2024-07",
    "jamba-1.5-large": "2024-08", "gemini-1.5-flash-002": "2024-09", "gemini-1.5-pro-002": "2024-09",
}


def recent_models(models: Sequence[str], since: str = "2024-05",
                  releases: dict[str, str] = MMLU_PRO_RELEASES) -> list[str]:
    """The `models` released in month `since` ("YYYY-MM") or later, by `releases`; unknown names raise."""
    unknown = [m for m in models if m not in releases]
    if unknown:
        raise KeyError(f"no release month for model(s) {unknown[:5]}; add them to `releases` "
                       f"(known: {len(releases)} models, e.g. {list(releases)[:3]}).")
    return [m for m in models if releases[m] >= since]


def fraction_label(fraction: float) -> str:
    """0.05 -> "5%": Table 1's column names."""
    return f"{fraction * 100:g}%"


def joint_models(ds: Dataset, make_model: Callable[[int], Estimator], seeds: Sequence[int],
                 progress: bool = True) -> dict[int, Estimator]:
    """Table 1's "All" column: one model per seed trained on every LLM (`split_by_question(ds, seed)`)."""
    return {int(seed): make_model(int(seed)).fit(ds, split_by_question(ds, seed=seed))
            for seed in tqdm(seeds, desc="joint fits", disable=not progress)}


def onboarding_curve(ds: Dataset, make_model: Callable[[int], Estimator], held_out: int | Sequence[str],
                     fractions: Sequence[float] = ONBOARD_FRACTIONS, seeds: Sequence[int] = (0,),
                     joint: dict[int, Estimator] | None = None, prior_scale: float | str = "auto",
                     progress: bool = True) -> pd.DataFrame:
    """Tables 1-2: test accuracy of LLMs left out of training, onboarded from a share of their items.

    For each seed s: the question split `split_by_question(ds, seed=s)`; `held_out` LLMs (a number drawn
    with seed s, or names) leave training (`hold_out_models`); `make_model(s)` is fitted on the rest;
    then, with everything else frozen, the held-out LLMs' vectors are fitted (`onboard`, all at once)
    from each `fraction` of their training items (`subsample_items`, seed s) and scored on their test
    items. `joint[s]`, a model fitted on the same split with every LLM, gives the "All" rows: the same
    LLMs, the same test labels, when trained jointly.

    `prior_scale` is the onboarding prior's width (`JEIRT.onboard`; "auto": by Laplace evidence, for
    each fraction; the rows record the width used).

    Returns one row per seed, setting ("1%", ..., "100%", "All") and held-out LLM: accuracy, log_loss,
    items (training items seen), n (test labels), seconds (onboarding all of them; the joint fit for All),
    prior_scale.
    """
    bad = [f for f in fractions if not 0 < f <= 1]
    if bad or not fractions:
        raise ValueError(f"fractions={list(fractions)}; expected shares in (0, 1].")
    rows = []
    for seed in tqdm(seeds, desc="onboarding", disable=not progress):
        split = split_by_question(ds, seed=seed)
        held = hold_out_models(ds, split, held_out if isinstance(held_out, int) else list(held_out), seed)
        names = list(held.held_out)
        idx = ds.model_index(names)
        new = ds.subset(models=names)
        items = np.flatnonzero(split.test[idx].any(axis=0))
        test, test_mask = new.subset(items=items), split.test[np.ix_(idx, items)]
        model = make_model(int(seed)).fit(ds, held)
        for fraction in fractions:
            mask = subsample_items(held.onboard[idx], fraction, seed)
            start = time.perf_counter()
            model.onboard(new, mask, replace=True, prior_scale=prior_scale)
            seconds = time.perf_counter() - start
            rows += _per_model_rows(model, test, test_mask, mask.sum(axis=1),
                                    {"seed": int(seed), "setting": fraction_label(fraction), "fraction": fraction,
                                     "seconds": seconds, "prior_scale": model.onboard_prior_scale_})
        if joint is not None:
            full = joint[int(seed)]
            if getattr(full, "split_name_", split.name) != split.name:
                raise ValueError(f"joint[{seed}] was fitted on split {full.split_name_!r}; expected {split.name!r} "
                                 "(use joint_models with the same dataset and seeds).")
            seconds = getattr(getattr(full, "history_", None), "seconds", np.nan)
            rows += _per_model_rows(full, test, test_mask, split.train[idx].sum(axis=1),
                                    {"seed": int(seed), "setting": "All", "fraction": np.nan, "seconds": seconds,
                                     "prior_scale": np.nan})
    curve = pd.DataFrame(rows)
    return curve


def _per_model_rows(model: Estimator, test: Dataset, test_mask: np.ndarray, items: np.ndarray,
                    keys: dict, probs: np.ndarray | None = None) -> list[dict]:
    """One row per LLM of `test` with a test label: `keys`, its test accuracy and log loss (as
    `jeirt.metrics` defines them, vectorised over LLMs), `items` seen in training, n test labels."""
    probs = model.predict_proba(test) if probs is None else probs  # (n_models, n_items)
    mask = test_mask & test.observed
    labels = np.nan_to_num(test.labels)
    p = np.clip(probs.astype(np.float64), 1e-7, 1 - 1e-7)
    n = mask.sum(axis=1)
    right = ((probs >= 0.5) == (labels >= 0.5)) & mask
    loss = -(labels * np.log(p) + (1 - labels) * np.log(1 - p)) * mask
    return [{**keys, "model": m, "accuracy": right[i].sum() / n[i], "log_loss": loss[i].sum() / n[i],
             "items": int(items[i]), "n": int(n[i])}
            for i, m in enumerate(test.models) if n[i] > 0]


def onboarding_table(curve: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """Table 1's layout: one column per setting ("1%" ... "All"); rows mean and sd over held-out LLMs
    (and seeds), and the mean number of training items seen."""
    order = list(dict.fromkeys(curve["setting"]))  # settings in the order they were run
    grouped = curve.groupby("setting", sort=False)
    table = pd.DataFrame({"mean": grouped[metric].mean(), "sd": grouped[metric].std(ddof=1),
                          "items": grouped["items"].mean()}).T
    return table[order]


def onboarding_gap(curve: pd.DataFrame, setting: str = "100%", reference: str = "All",
                   metric: str = "accuracy") -> pd.Series:
    """`setting` minus `reference` for each (seed, held-out LLM): paired, so the spread is the LLMs'."""
    wide = curve.pivot_table(index=["seed", "model"], columns="setting", values=metric)
    missing = [s for s in (setting, reference) if s not in wide.columns]
    if missing:
        raise ValueError(f"settings {missing} are not in the curve; it has {list(wide.columns)}.")
    return (wide[setting] - wide[reference]).rename(f"{setting} - {reference}")


def first_items(mask: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """Keep the first `n` True entries of each row of `mask` in a seeded random order (all when a row has
    fewer). With one seed the selections nest: the 8 items kept for n = 8 include the 4 for n = 4."""
    if n < 1:
        raise ValueError(f"n={n}; expected a positive number of items.")
    order = np.random.default_rng(seed).permutation(mask.shape[1])  # one order shared by every row
    ranks = np.cumsum(mask[:, order], axis=1)  # (n_rows, n_items) running count of kept entries
    out = np.zeros_like(mask)
    out[:, order] = mask[:, order] & (ranks <= n)
    return out


def onboarding_rate(ds: Dataset, make_model: Callable[[int], Estimator], held_out: int | Sequence[str],
                    counts: Sequence[int] = RATE_COUNTS, seed: int = 0, prior_scale: float | str = "auto",
                    progress: bool = True) -> pd.DataFrame:
    """Appendix D: many new LLMs onboarded at once from n items each; how their error falls with n.

    `held_out` LLMs (a number drawn with `seed` among the LLMs graded on every item, or names) leave
    training; `make_model(seed)` is fitted on the rest of `split_by_question(ds, seed)`; each held-out
    vector is then fitted from all its training items (budget "all") and from the first n of them
    (`first_items`, nested in n) for each n in `counts`. `prior_scale` as in `onboarding_curve`.

    Returns one row per budget and LLM: budget (n), items (seen; fewer than n when the LLM has fewer),
    test accuracy and log_loss, n (test labels), accuracy_gap (all-items accuracy minus this one),
    excess_log_loss (test log loss minus the all-items fit's), kl (mean over the LLM's test questions of
    KL(p_all || p_n): the expected excess log loss if the all-items fit were the truth; Appendix D's
    d/(2n) rate is for this quantity), seconds (onboarding every held-out LLM once), prior_scale.
    """
    if not counts or min(counts) < 1:
        raise ValueError(f"counts={list(counts)}; expected positive item counts.")
    split = split_by_question(ds, seed=seed)
    if isinstance(held_out, int):
        complete = np.flatnonzero(ds.observed.all(axis=1))
        if not 0 < held_out <= len(complete) - 2:
            raise ValueError(f"held_out={held_out}; {len(complete)} LLMs of {ds.name!r} are graded on every "
                             f"item, so hold out between 1 and {len(complete) - 2} (two must stay to train).")
        rng = np.random.default_rng(seed)
        held_out = [ds.models[i] for i in np.sort(rng.choice(complete, size=held_out, replace=False))]
    held = hold_out_models(ds, split, list(held_out), seed)
    names = list(held.held_out)
    idx = ds.model_index(names)
    new = ds.subset(models=names)
    items = np.flatnonzero(split.test[idx].any(axis=0))
    test, test_mask = new.subset(items=items), split.test[np.ix_(idx, items)] & new.observed[:, items]
    model = make_model(int(seed)).fit(ds, held)
    rows, reference = [], None
    for n in tqdm([None, *counts], desc="items per new model", disable=not progress):
        mask = held.onboard[idx] if n is None else first_items(held.onboard[idx], int(n), seed)
        start = time.perf_counter()
        model.onboard(new, mask, replace=True, prior_scale=prior_scale)
        seconds = time.perf_counter() - start
        probs = model.predict_proba(test)  # (n_new, n_test_items)
        reference = probs if n is None else reference
        kl = (_bernoulli_kl(reference, probs) * test_mask).sum(axis=1) / test_mask.sum(axis=1).clip(1)
        scored = _per_model_rows(model, test, test_mask, mask.sum(axis=1),
                                 {"budget": "all" if n is None else int(n), "seconds": seconds,
                                  "prior_scale": model.onboard_prior_scale_}, probs)
        rows += [{**row, "kl": kl[names.index(row["model"])]} for row in scored]
    table = pd.DataFrame(rows)
    ref = table[table["budget"] == "all"].set_index("model")
    table["excess_log_loss"] = table["log_loss"] - table["model"].map(ref["log_loss"])
    table["accuracy_gap"] = table["model"].map(ref["accuracy"]) - table["accuracy"]
    order = [*counts, "all"]  # rows by budget, the all-items fit last
    table = table.sort_values("budget", key=lambda b: b.map(order.index), kind="stable").reset_index(drop=True)
    return table


def _bernoulli_kl(p: np.ndarray, q: np.ndarray, eps: float = 1e-7) -> np.ndarray:
    """KL(Bernoulli(p) || Bernoulli(q)), elementwise, probabilities clipped to [eps, 1 - eps]."""
    p = np.clip(p.astype(np.float64), eps, 1 - eps)
    q = np.clip(q.astype(np.float64), eps, 1 - eps)
    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


def rate_summary(rate: pd.DataFrame) -> pd.DataFrame:
    """Per budget n: mean items seen, accuracy (and sd), accuracy gap, excess log loss and KL over the
    held-out LLMs, and the seconds it took to onboard all of them."""
    grouped = rate.groupby("budget", sort=False)
    return pd.DataFrame({"items": grouped["items"].mean(), "accuracy": grouped["accuracy"].mean(),
                         "accuracy_sd": grouped["accuracy"].std(ddof=1),
                         "accuracy_gap": grouped["accuracy_gap"].mean(),
                         "excess_log_loss": grouped["excess_log_loss"].mean(), "kl": grouped["kl"].mean(),
                         "models": grouped.size(), "seconds": grouped["seconds"].first()})
