"""The Efficient-evaluation page: few-question scores of a new model (`jeirt.tasks.evaluation`)
measured against truth; the experiment runners and scorers the known-answers page shares.
"""
from __future__ import annotations

from typing import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from tqdm import (
    tqdm,  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets
)

from jeirt.book.figures import PALETTE, style
from jeirt.data import Dataset, Split, load_dataset
from jeirt.model import sigmoid
from jeirt.tasks.evaluation import (
    OVERALL,
    PLAIN,
    RULES,
    QuestionBank,
    adaptive_selection,
    estimate_scores,
    plain_means,
    random_positions,
    select_items,
)


# Efficient evaluation (chapter "Efficient evaluation"; numbers from jeirt.tasks.evaluation)
def error_by_k(ax: plt.Axes, summary: pd.DataFrame, value: str = "mae", ylabel: str = "mean absolute error",
               baseline: str = "plain mean", rules: list[str] | None = None) -> plt.Axes:
    """`value` against the number of questions asked k, both axes logarithmic, one line per
    selection rule of `summary` (columns rule, k, value); the `baseline` rule is drawn in black and
    dashed so that every rule reads against it."""
    rules = rules or [r for r in pd.unique(summary["rule"]) if r != baseline]
    for i, rule in enumerate(rules):
        rows = summary[summary["rule"] == rule].sort_values("k")
        s = style(i)
        ax.plot(rows["k"], rows[value], color=s["color"], marker=s["marker"], linestyle="-", label=rule)
    if baseline in set(summary["rule"]):
        rows = summary[summary["rule"] == baseline].sort_values("k")
        ax.plot(rows["k"], rows[value], color="black", marker="x", linestyle="--", label=baseline)
    ks = sorted(summary["k"].unique())
    ax.set_xscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_yscale("log")  # errors fall like 1/sqrt(k): a straight line of slope -1/2 on these axes
    ax.yaxis.set_major_locator(mpl.ticker.LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))
    ax.yaxis.set_major_formatter(mpl.ticker.FormatStrFormatter("%g"))
    ax.minorticks_off()
    ax.set_xlabel("questions asked, k (log scale)")
    ax.set_ylabel(f"{ylabel.lower()} (log scale)")
    ax.legend()
    return ax


def estimates_with_intervals(ax: plt.Axes, table: pd.DataFrame, truth: pd.Series,
                             label: str = "estimate, 90% interval") -> plt.Axes:
    """One row per group (index of `table`, columns estimate, lower, upper): the estimate as a dot
    with its interval as a bar, and the true value (`truth`, same index) as a cross."""
    rows = np.arange(len(table))[::-1]
    ax.errorbar(table["estimate"], rows, xerr=[table["estimate"] - table["lower"], table["upper"] - table["estimate"]],
                fmt="o", color=PALETTE[0], capsize=2, label=label)
    ax.scatter(truth.reindex(table.index), rows, marker="x", color="black", zorder=3, label="true accuracy")
    ax.set_yticks(rows)
    ax.set_yticklabels([str(g) for g in table.index])
    ax.set_xlabel("accuracy")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower right")
    return ax


def training_only(split: Split) -> Split:
    """`split` without its onboarding part: the same training and validation labels (held-out models
    have none there), so `JEIRT.fit` learns the same questions and trained vectors, but does not then
    onboard the held-out models from `split.onboard` (on metabench, hundreds of them). The few-question
    protocols never read those vectors: each held-out model is fitted afresh from the k answers it is
    asked. The fitted model keeps the held-out names with untrained vectors: do not predict them with it.
    """
    return Split(split.train, split.val, split.test, split.name)


def metabench_held_out(n_held: int, n_train: int | None, seed: int) -> tuple[Dataset, list[str]]:
    """metabench with `n_held` of its models graded on every question drawn (with `seed`) to be held out,
    and `n_train` of the others (None: all of them) to train on; and the held-out names. Both
    efficient-evaluation pages draw the same ones."""
    meta = load_dataset("metabench")
    rng = np.random.default_rng(seed)
    complete = np.flatnonzero(meta.observed.all(axis=1))  # graded on every question
    held_rows = rng.choice(complete, n_held, replace=False)
    rest = np.setdiff1d(np.arange(meta.n_models), held_rows)
    if n_train is not None:
        rest = rng.choice(rest, n_train, replace=False)
    held = [meta.models[i] for i in sorted(held_rows)]
    return meta.subset(models=np.sort(np.concatenate([rest, held_rows]))), held


# The few-item experiment: held-out models, every rule, a grid of k
def few_item_experiment(bank: QuestionBank, labels: np.ndarray, ks: Sequence[int],
                        rules: Sequence[str] = RULES, seeds: Sequence[int] = (0,), models: Sequence[str] | None = None,
                        draws: int = 100, progress: bool = True, n_jobs: int = 1) -> pd.DataFrame:
    """Estimate held-out models' accuracies from k of their answers, for every rule, k and seed.

    labels: (n_new, n_items) every known answer of models the bank's JE-IRT never trained on
    (NaN = not graded). Each model is asked k of its graded questions and its accuracy is estimated
    over all of them (overall and per benchmark); the truth is the mean of all its labels. The
    seeded rules (random, stratified, kmeans) run once per seed; the adaptive ones once, to the
    largest k, reading each smaller k as a prefix. With rule "random" the plain mean of the same k
    answers is reported under rule "plain mean". Returns one row per (rule, k, seed, model): true,
    estimate, error, abs_error, bench_mae (mean absolute error over benchmarks), sd, covered (the
    overall truth inside the 90% interval) and bench_covered (the share of benchmarks where it is).
    The (rule, seed) runs are independent: n_jobs > 1 runs them in that many worker processes (the
    same rows, in the same order).
    """
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    if n_jobs < 1:
        raise ValueError(f"n_jobs={n_jobs}; expected a positive number of worker processes.")
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise ValueError(f"rules {unknown}; expected a subset of {RULES}.")
    models = [f"new{i}" for i in range(len(labels))] if models is None else list(models)
    graded = ~np.isnan(labels)
    ks = sorted(int(k) for k in ks)
    truth = true_scores(bank, labels, models)
    seeded = ("random", "stratified", "kmeans")  # the adaptive rules are deterministic
    runs = [(rule, seed) for rule in rules for seed in (seeds if rule in seeded else seeds[:1])]
    if n_jobs > 1 and len(runs) > 1:
        # The adaptive runs are the longest: started first, the workers finish together.
        parts = side_by_side(_few_item_run, [(bank, labels, graded, ks, *run, draws, models, truth) for run in runs],
                              n_jobs, longest_first=[run[0].startswith("adaptive") for run in runs])
        return pd.DataFrame([row for part in parts for row in part])
    bar = tqdm(total=len(runs) * len(ks), desc="few-item estimates", disable=not progress)
    rows = []
    for rule, seed in runs:
        rows += _few_item_run(bank, labels, graded, ks, rule, seed, draws, models, truth)
        bar.update(len(ks))
    bar.close()
    return pd.DataFrame(rows)


def side_by_side(function, calls: list[tuple], n_jobs: int, longest_first: Sequence[float]) -> list:
    """[function(*call) for call in calls], run in `n_jobs` worker processes, the calls with the largest
    `longest_first` started first (so that the workers finish together); results in the calls' order."""
    from joblib import Parallel, delayed

    first = sorted(range(len(calls)), key=lambda i: -longest_first[i])
    done = Parallel(n_jobs=n_jobs, max_nbytes=None)(delayed(function)(*calls[i]) for i in first)
    by_call = dict(zip(first, done))
    return [by_call[i] for i in range(len(calls))]


def _few_item_run(bank: QuestionBank, labels: np.ndarray, graded: np.ndarray, ks: list[int], rule: str, seed: int,
                  draws: int, models: list[str], truth: pd.DataFrame) -> list[dict]:
    """The rows of `few_item_experiment` for one rule and seed, every k."""
    rows = []
    # A random order's first k questions are a random sample of k, and an adaptive order's are
    # the adaptive run to k: one order to the largest k serves every k. Not so for the others.
    # The adaptive run also hands over the posteriors it fitted at any k where one of its batches ended.
    # An adaptive order's random share (`random_positions`) is the sample its estimate checks itself on.
    nested = rule in ("random", "adaptive", "adaptive-accuracy")
    posteriors, drawn = {}, None
    if rule == "random":
        order = select_items(bank, ks[-1], rule, labels=labels, seed=seed)
    elif nested:
        order, posteriors = adaptive_selection(bank, ks[-1], labels, rule, seed=seed, keep=ks)
        drawn = random_positions(ks[-1])
    for k in ks:
        picks = order[:, :k] if nested else select_items(bank, k, rule, labels=labels, seed=seed)
        asked = np.zeros_like(graded)
        np.put_along_axis(asked, picks, True, axis=1)
        sampled = None
        if drawn is not None:
            sampled = np.zeros_like(graded)
            np.put_along_axis(sampled, picks[:, drawn[:k]], True, axis=1)
        est = estimate_scores(bank, labels, asked, targets=graded, draws=draws, seed=seed, models=models,
                              posterior=posteriors.get(k), sampled=sampled)
        rows += score_rows(est, truth, rule, k, seed)
        if rule == "random":
            rows += score_rows(plain_means(bank, labels, asked, models), truth, PLAIN, k, seed)
    return rows


def true_scores(bank: QuestionBank, labels: np.ndarray, models: Sequence[str]) -> pd.DataFrame:
    """(model, group) -> mean of all the model's labels there."""
    rows = []
    with np.errstate(invalid="ignore"):
        for i, m in enumerate(models):
            rows.append({"model": m, "group": OVERALL, "true": np.nanmean(labels[i])})
            rows += [{"model": m, "group": g, "true": np.nanmean(labels[i, bank.groups == g])
                      if (~np.isnan(labels[i, bank.groups == g])).any() else np.nan} for g in bank.benchmarks]
    return pd.DataFrame(rows).set_index(["model", "group"])


def score_rows(est: pd.DataFrame, truth: pd.DataFrame, rule: str, k: int, seed: int) -> list[dict]:
    """One row per model: overall error, per-benchmark mean absolute error, interval coverage."""
    table = est.join(truth, on=["model", "group"])
    table["abs_error"] = (table["estimate"] - table["true"]).abs()
    is_overall = table["group"] == OVERALL
    overall = table[is_overall].set_index("model")
    benches = table[~is_overall].groupby("model", sort=False)
    out = pd.DataFrame({"rule": rule, "k": k, "seed": seed, "model": overall.index, "true": overall["true"].to_numpy(),
                        "estimate": overall["estimate"].to_numpy()})
    out["error"] = out["estimate"] - out["true"]
    out["abs_error"] = out["error"].abs()
    out["bench_mae"] = benches["abs_error"].mean().reindex(overall.index).to_numpy()
    if "sd" in table:
        inside = ((table["lower"] <= table["true"]) & (table["true"] <= table["upper"])).astype(float)
        inside[table["lower"].isna() | table["true"].isna()] = np.nan  # no interval (draws=0) or no truth
        out["sd"] = overall["sd"].to_numpy()
        out["covered"] = inside[is_overall].to_numpy()
        out["bench_covered"] = inside[~is_overall].groupby(table.loc[~is_overall, "model"], sort=False).mean() \
            .reindex(overall.index).to_numpy()
    return out.to_dict("records")


def summarize_few_item(results: pd.DataFrame) -> pd.DataFrame:
    """Mean absolute error and mean error (bias) of the overall estimates and mean absolute error of the
    per-benchmark ones (over models and seeds), mean predicted sd, and the coverage of the intervals
    overall and per benchmark, per rule and k."""
    if results.empty:
        raise ValueError("no results to summarise.")
    grouped = results.groupby(["rule", "k"], sort=False)
    table = grouped.agg(mae=("abs_error", "mean"), bias=("error", "mean"), bench_mae=("bench_mae", "mean"),
                        runs=("abs_error", "size"))
    if "sd" in results:
        table["mean_sd"] = grouped["sd"].mean()
        table["coverage"] = grouped["covered"].mean()
        table["bench_coverage"] = grouped["bench_covered"].mean()
    return table.reset_index()


def expected_errors(bank: QuestionBank, labels: np.ndarray, ks: Sequence[int]) -> pd.DataFrame:
    """What the answers' own noise allows, per k: the expected absolute error of the plain mean of k
    random answers, and of a model-based estimate whose knowledge of the vector comes from the k
    answers alone (no prior).

    The plain mean of k of a model's n answers has variance a(1 - a)/k (1 - k/n) (a its accuracy).
    A model-based estimate has about mean p(1 - p)/k (1 - k/n): the Bernoulli noise of each asked
    answer, what p leaves unexplained, passes into the fitted vector (exactly so for a model with
    one ability; a prior lowers it, most for small k). p is taken from the posterior given all of
    a model's answers, the sharpest the model gets. The absolute error of a normal with standard
    deviation s is sqrt(2/pi) s on average; rows are means over models.
    """
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    graded = ~np.isnan(labels)
    post = bank.posterior(np.nan_to_num(labels), graded)
    p = sigmoid(post.mean @ bank.features.T - bank.offsets)  # (n_new, n_items)
    n = graded.sum(axis=1)
    noise = np.where(graded, p * (1 - p), 0).sum(axis=1) / n  # mean p(1 - p) per model
    acc = np.nanmean(labels, axis=1)
    rows = []
    for k in ks:
        fpc = np.clip(1 - k / n, 0, 1)
        rows.append({"k": int(k), "plain mean": float(np.mean(np.sqrt(2 / np.pi * acc * (1 - acc) / k * fpc))),
                     "model, answers only": float(np.mean(np.sqrt(2 / np.pi * noise / k * fpc))),
                     "mean p(1-p)": float(noise.mean()), "a(1-a)": float((acc * (1 - acc)).mean())})
    return pd.DataFrame(rows)
