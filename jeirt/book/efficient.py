"""The Efficient-evaluation page: few-question scores of a new model (`jeirt.tasks.evaluation`)
measured against truth, and new questions placed from a few models' answers.
"""
from __future__ import annotations

from typing import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from tqdm import (
    tqdm,  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets
)

from jeirt.book.figures import LINESTYLES, PALETTE, style
from jeirt.data import Dataset, Split
from jeirt.estimator import JEIRT
from jeirt.metrics import score
from jeirt.model import sigmoid
from jeirt.tasks.evaluation import (
    OVERALL,
    PLAIN,
    RULES,
    QuestionBank,
    adaptive_selection,
    estimate_scores,
    plain_means,
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


def curves_by_n(ax: plt.Axes, table: pd.DataFrame, value: str = "accuracy", by: str = "method",
                references: dict[str, float] | None = None, ylabel: str | None = None) -> plt.Axes:
    """Mean `value` of `table` against n (models whose answers are known), one line per `by`, with
    the spread over seeds as error bars; `references` are horizontal lines (label -> value)."""
    for i, (name, rows) in enumerate(table.groupby(by, sort=False)):
        stats = rows.groupby("n")[value].agg(["mean", "std"])
        s = style(i)
        ax.errorbar(stats.index, stats["mean"], yerr=stats["std"].fillna(0), color=s["color"], marker=s["marker"],
                    linestyle=s["linestyle"], capsize=2, label=str(name))
    for j, (name, level) in enumerate((references or {}).items()):
        ax.axhline(level, color="0.4", linestyle=LINESTYLES[(j + 1) % len(LINESTYLES)], linewidth=1, label=name)
    ns = sorted(table["n"].unique())
    ax.set_xticks(ns)
    ax.set_xlabel("models whose answers are known, n")
    ax.set_ylabel((ylabel or value).lower())
    ax.legend()
    return ax


def training_only(split: Split) -> Split:
    """`split` without its onboarding part: the same training and validation labels (held-out models
    have none there), so `JEIRT.fit` learns the same questions and trained vectors, but does not then
    onboard the held-out models from `split.onboard` (on metabench, hundreds of them). The few-question
    protocols never read those vectors: each held-out model is fitted afresh from the k answers it is
    asked. The fitted model keeps the held-out names with untrained vectors: do not predict them with it.
    """
    return Split(split.train, split.val, split.test, split.name)


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
    truth = _true_scores(bank, labels, models)
    seeded = ("random", "stratified", "kmeans")  # the adaptive rules are deterministic
    runs = [(rule, seed) for rule in rules for seed in (seeds if rule in seeded else seeds[:1])]
    if n_jobs > 1 and len(runs) > 1:
        # The adaptive runs are the longest: started first, the workers finish together.
        parts = _side_by_side(_few_item_run, [(bank, labels, graded, ks, *run, draws, models, truth) for run in runs],
                              n_jobs, longest_first=[run[0].startswith("adaptive") for run in runs])
        return pd.DataFrame([row for part in parts for row in part])
    bar = tqdm(total=len(runs) * len(ks), desc="few-item estimates", disable=not progress)
    rows = []
    for rule, seed in runs:
        rows += _few_item_run(bank, labels, graded, ks, rule, seed, draws, models, truth)
        bar.update(len(ks))
    bar.close()
    return pd.DataFrame(rows)


def _side_by_side(function, calls: list[tuple], n_jobs: int, longest_first: Sequence[float]) -> list:
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
    nested = rule in ("random", "adaptive", "adaptive-accuracy")
    posteriors = {}
    if rule == "random":
        order = select_items(bank, ks[-1], rule, labels=labels, seed=seed)
    elif nested:
        order, posteriors = adaptive_selection(bank, ks[-1], labels, rule, keep=ks)
    for k in ks:
        picks = order[:, :k] if nested else select_items(bank, k, rule, labels=labels, seed=seed)
        asked = np.zeros_like(graded)
        np.put_along_axis(asked, picks, True, axis=1)
        est = estimate_scores(bank, labels, asked, targets=graded, draws=draws, seed=seed, models=models,
                              posterior=posteriors.get(k))
        rows += _score_rows(est, truth, rule, k, seed)
        if rule == "random":
            rows += _score_rows(plain_means(bank, labels, asked, models), truth, PLAIN, k, seed)
    return rows


def _true_scores(bank: QuestionBank, labels: np.ndarray, models: Sequence[str]) -> pd.DataFrame:
    """(model, group) -> mean of all the model's labels there."""
    rows = []
    with np.errstate(invalid="ignore"):
        for i, m in enumerate(models):
            rows.append({"model": m, "group": OVERALL, "true": np.nanmean(labels[i])})
            rows += [{"model": m, "group": g, "true": np.nanmean(labels[i, bank.groups == g])
                      if (~np.isnan(labels[i, bank.groups == g])).any() else np.nan} for g in bank.benchmarks]
    return pd.DataFrame(rows).set_index(["model", "group"])


def _score_rows(est: pd.DataFrame, truth: pd.DataFrame, rule: str, k: int, seed: int) -> list[dict]:
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
    """Mean absolute error of the overall and per-benchmark estimates (over models and seeds), mean
    predicted sd, and the coverage of the intervals overall and per benchmark, per rule and k."""
    if results.empty:
        raise ValueError("no results to summarise.")
    grouped = results.groupby(["rule", "k"], sort=False)
    table = grouped.agg(mae=("abs_error", "mean"), bench_mae=("bench_mae", "mean"), runs=("abs_error", "size"))
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


# A new question, a few models: refine the text embedding with known answers
def refine_questions(text_embeddings: np.ndarray, model_vectors: np.ndarray, labels: np.ndarray,
                     mask: np.ndarray, prior_sd: float, what: str = "embedding", max_iter: int = 200,
                     tol: float = 1e-7) -> np.ndarray:
    """MAP question embeddings (n_q, d) given the answers of known models, all model vectors frozen.

    text_embeddings: (n_q, d) E_Q from the adapter, the prior mean; model_vectors: (n_m, d);
    labels, mask: (n_m, n_q) answers and which are known. Objective per question: the masked BCE of
    Eq. (3) plus |E_Q - E_Q^text|^2 / (2 prior_sd^2). what="embedding" moves the whole vector (exact
    Newton on an equivalent problem of (known models + 1) dimensions per question, `_refine_embeddings`,
    all questions at once); what="norm" keeps the direction and moves only the norm r = |E_Q| (exact
    Newton on a 1-d problem per question, same prior on r, r >= 1e-3). max_iter and tol: Newton steps,
    and the largest change of a coordinate at which they stop.
    """
    if what not in ("embedding", "norm"):
        raise ValueError(f"what={what!r}; expected 'embedding' or 'norm'.")
    if prior_sd <= 0:
        raise ValueError(f"prior_sd={prior_sd}; expected a positive number.")
    E0 = torch.as_tensor(np.asarray(text_embeddings), dtype=torch.float64)  # (n_q, d)
    V = torch.as_tensor(np.asarray(model_vectors), dtype=torch.float64)  # (n_m, d)
    labels, mask = np.asarray(labels), np.asarray(mask, dtype=bool)
    if labels.shape != (len(V), len(E0)) or mask.shape != labels.shape:
        raise ValueError(f"labels {labels.shape} and mask {mask.shape} must both be (n_models, n_questions) "
                         f"= ({len(V)}, {len(E0)}).")
    if np.isnan(labels[mask]).any():
        raise ValueError("mask selects unobserved (NaN) labels; remove them from the mask.")
    y = torch.as_tensor(np.nan_to_num(labels).T, dtype=torch.float64)  # (n_q, n_m)
    w = torch.as_tensor(mask.T, dtype=torch.float64)
    precision = 1.0 / prior_sd ** 2
    if what == "norm":
        r0 = E0.norm(dim=1)
        cos = (E0 / r0[:, None]) @ V.T  # (n_q, n_m): u . v, fixed
        r = r0.clone()
        for _ in range(max_iter):  # d/dr of the logit (cos - r) is -1: a logistic problem in -r
            p = torch.sigmoid(cos - r[:, None])
            grad = -((p - y) * w).sum(1) + precision * (r - r0)
            hess = (w * p * (1 - p)).sum(1) + precision
            step = grad / hess
            r, before = torch.clamp(r - step, min=1e-3), r
            if (r - before).abs().max() < tol:  # a norm held at the floor 1e-3 moves no more: converged too
                break
        return (E0 * (r / r0)[:, None]).numpy()
    return _refine_embeddings(E0, V, y, w, precision, max_iter, tol).numpy()


def _refine_embeddings(E0: torch.Tensor, V: torch.Tensor, y: torch.Tensor, w: torch.Tensor, precision: float,
                       max_iter: int, tol: float) -> torch.Tensor:
    """The MAP of `refine_questions(what="embedding")`, each question's exact optimum in r + 1 dimensions.

    The answers see E only through the projections x_m . a (a = B^T E, B (d, r) an orthonormal basis of
    the known models' vectors, x_m = B^T v_m) and the norm |E|^2 = |a|^2 + rho^2, rho the norm of E's
    part c orthogonal to B. For a given rho the prior term |c - c0|^2 is least with c along c0 (E0's
    part off B), so the d-dimensional MAP is E = B a + rho c0 / |c0| for the MAP (a, rho) of an
    (r + 1)-dimensional problem with prior N((a0, |c0|), prior_sd^2 I). With r <= the number of known
    models, every question is solved by batched damped Newton steps (analytic gradient and Hessian,
    step halving per question), all questions at once: the optimum that L-BFGS on all n_q x d coordinates
    approaches (and, on mmlu_pro at d = 256 with 10 known models, had not reached after 200 iterations),
    reached to `tol` in a few dozen steps.
    """
    known = w.sum(dim=0) > 0  # (n_m,) models with at least one known answer
    if not bool(known.any()):
        return E0.clone()
    V, y, w = V[known], y[:, known], w[:, known]
    _, sing, vt = torch.linalg.svd(V, full_matrices=False)
    B = vt[sing > sing[0] * 1e-10].T  # (d, r)
    r = B.shape[1]
    a0 = E0 @ B  # (n_q, r)
    off = r < E0.shape[1]  # a part of E off the known vectors' span (none when they span all d)
    c0 = E0 - a0 @ B.T
    rho0 = c0.norm(dim=1)
    t0 = torch.cat([a0, rho0[:, None]], dim=1) if off else a0  # (n_q, p), p = r + 1 (or r)
    X = torch.cat([V @ B, torch.zeros(len(V), int(off), dtype=V.dtype)], dim=1)  # (n_m, p): x_m, 0 for rho
    eye = torch.eye(t0.shape[1], dtype=E0.dtype)

    def objective(t: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:  # negative log posterior of `rows`
        s = t.norm(dim=1, keepdim=True)
        z = t @ X.T / s - s
        nll = (torch.nn.functional.softplus(z) - y[rows] * z) * w[rows]
        return nll.sum(dim=1) + 0.5 * precision * ((t - t0[rows]) ** 2).sum(dim=1)

    t = t0.clone()
    active = torch.arange(len(t))  # questions whose last step was not below tol
    for _ in range(max_iter):
        ta, ya, wa = t[active], y[active], w[active]
        s = ta.norm(dim=1, keepdim=True)  # (n, 1)
        u = ta / s
        xu = u @ X.T  # (n, n_m): x_m . u
        p = torch.sigmoid(xu - s)
        q = (X[None, :, :] - xu[:, :, None] * u[:, None, :]) / s[:, :, None]  # (n, n_m, p): P_u x_m / s
        dz = q - u[:, None, :]  # gradient of the logit z_m = x_m . u - s in t
        alpha = wa * (p - ya)  # (n, n_m): weight of each z_m's own Hessian
        grad = (alpha[:, :, None] * dz).sum(dim=1) + precision * (ta - t0[active])
        # Hessian of z_m: -(u q^T + q u^T) / s - (x_m . u) P_u / s^2 - P_u / s, with q = P_u x_m / s
        Q = (alpha[:, :, None] * q).sum(dim=1)  # (n, p)
        beta = (alpha * xu).sum(dim=1)[:, None, None] / s[:, :, None] ** 2
        gamma = alpha.sum(dim=1)[:, None, None] / s[:, :, None]
        proj = eye - u[:, :, None] * u[:, None, :]
        hess = (dz * (wa * p * (1 - p))[:, :, None]).transpose(1, 2) @ dz + precision * eye \
            - (u[:, :, None] * Q[:, None, :] + Q[:, :, None] * u[:, None, :]) / s[:, :, None] - (beta + gamma) * proj
        # Newton steps; where the Hessian is not positive definite (not convex there), the step on its
        # absolute eigenvalues, a descent direction.
        factor, info = torch.linalg.cholesky_ex(hess)
        step = torch.cholesky_solve(grad[:, :, None], factor)[:, :, 0]
        bent = torch.nonzero(info).flatten()
        if len(bent):
            evals, evecs = torch.linalg.eigh(hess[bent])
            evals = evals.abs().clamp(min=1e-3 * precision)
            step[bent] = (evecs @ ((evecs.transpose(1, 2) @ grad[bent, :, None]) / evals[:, :, None]))[:, :, 0]
        before, scale = objective(ta, active), torch.ones(len(ta), 1, dtype=t.dtype)
        pending = torch.arange(len(ta))
        for _ in range(30):  # halve the step of any question whose posterior got worse
            rows = active[pending]
            after = objective(ta[pending] - scale[pending] * step[pending], rows)
            worse = ~(after <= before[pending] + 1e-12 * before[pending].abs())  # NaN is worse too
            pending = pending[worse]
            if not len(pending):
                break
            scale[pending] *= 0.5
        moved = scale * step
        t[active] = ta - moved
        active = active[moved.abs().amax(dim=1) >= tol]
        if not len(active):
            break
    return t[:, :r] @ B.T + (t[:, r] / rho0)[:, None] * c0 if off else t @ B.T


def question_probabilities(embeddings: np.ndarray, model_vectors: np.ndarray) -> np.ndarray:
    """Eq. (3): P (n_models, n_q) for question embeddings (n_q, d) and model vectors (n_models, d)."""
    norms = np.linalg.norm(embeddings, axis=1)
    return sigmoid(model_vectors @ (embeddings / norms[:, None]).T - norms[None, :])


def question_onboarding_experiment(model: "JEIRT", ds: Dataset, benchmark: str, ns: Sequence[int] = (0, 1, 3, 5, 10),
                                   prior_scales: Sequence[float] = (1.0,), whats: Sequence[str] = ("embedding",),
                                   seeds: Sequence[int] = (0,), progress: bool = True) -> pd.DataFrame:
    """How well a new benchmark's answers are predicted from its texts plus n known models' answers.

    `model` is a JEIRT fitted without `benchmark` (e.g. on `split_leave_benchmark_out`) that knows
    every model of `ds`. For each seed, a random order of the models is drawn; the first n answer
    every question of the benchmark, and the models after the first max(ns) are scored (the same
    ones for every n). Each question's text embedding is refined (`refine_questions`, prior sd =
    prior_scale x the mean text-embedding norm / sqrt(d)) and the scored models' answers predicted.
    The row method "known mean" predicts every scored model's answer by the n known models' share
    of right answers to the question, (right + 1/2) / (n + 1) (no geometry, no text). Returns one
    row per (method, prior_scale, n, seed): accuracy, log_loss, auc over the scored (model,
    question) pairs, and acc_mae, the mean absolute error of the scored models' predicted accuracy
    on the benchmark.
    """
    if benchmark not in ds.benchmarks:
        raise ValueError(f"benchmark={benchmark!r} is not in {ds.name!r}; its benchmarks are {ds.benchmarks}.")
    ns = sorted(int(n) for n in ns)
    if ns[0] < 0 or ns[-1] >= ds.n_models:
        raise ValueError(f"ns={ns}; expected counts between 0 and {ds.n_models - 1} (models of {ds.name!r}).")
    cols = np.flatnonzero(ds.items["benchmark"].to_numpy() == benchmark)
    sub = ds.subset(items=cols)
    E0 = model.question_embeddings(sub).astype(np.float64)  # (n_q, d)
    V = model.model_vectors_[model.model_index(ds.models)].astype(np.float64)  # (n_models, d)
    typical = np.linalg.norm(E0, axis=1).mean() / np.sqrt(E0.shape[1])
    labels, observed = sub.labels, sub.observed
    runs = [(what, s) for what in whats for s in prior_scales]
    bar = tqdm(total=len(seeds) * len(ns) * (len(runs) + 1), desc=f"onboard {benchmark} questions",
               disable=not progress)
    rows = []
    for seed in seeds:
        order = np.random.default_rng(seed).permutation(ds.n_models)
        scored = np.zeros((ds.n_models, 1), dtype=bool)
        scored[order[ns[-1]:]] = True
        test = scored & observed  # (n_models, n_q)
        truth = np.array([labels[m, test[m]].mean() for m in range(ds.n_models) if test[m].any()])
        for n in ns:
            known = np.zeros_like(observed)
            known[order[:n]] = observed[order[:n]]
            preds = {}
            for what, s in runs:
                E = refine_questions(E0, V, labels, known, s * typical, what=what) if n else E0
                preds[(what, s)] = question_probabilities(E, V)
            if n:  # (right + 1/2) / (answers + 1): the share right, kept off 0 and 1 (Jeffreys)
                right = np.where(known, labels, 0.0).sum(axis=0)
                share = (right + 0.5) / (known.sum(axis=0) + 1.0)  # (n_q,)
                preds[("known mean", np.nan)] = np.broadcast_to(share, labels.shape)
            for (what, s), probs in preds.items():
                pred_acc = np.array([probs[m, test[m]].mean() for m in range(ds.n_models) if test[m].any()])
                scores = score(probs[test], labels[test])
                rows.append({"method": what, "prior_scale": s, "n": n, "seed": seed,
                             "accuracy": scores["accuracy"], "log_loss": scores["log_loss"],
                             "auc": scores["auc"], "acc_mae": float(np.abs(pred_acc - truth).mean()),
                             "pairs": scores["n"]})
                bar.update()
    bar.close()
    return pd.DataFrame(rows)


# Few-question scores on known questions: corrections and the per-question IRT baseline
FEW_METHODS = ("plain mean", "je-irt", "je-irt + corrections", "rasch (per question)")


def few_question_comparison(ds: Dataset | Sequence[Dataset], make_model, held_out: int | Sequence[int],
                            ks: Sequence[int] = (50, 100, 300), seeds: Sequence[int] = (0,),
                            n_models: int | None = None, draws: int = 200, progress: bool = True,
                            n_jobs: int = 1) -> pd.DataFrame:
    """Few-question scores of new LLMs on questions the other LLMs answered, with the baselines.

    Per seed s: LLMs with at least 2 max(k) graded answers (a seeded sample of `n_models` of them, if
    given), the question split (seed s), `held_out` LLMs drawn with seed s leave training and the others
    answer every question but the validation ones (`known_question_split`). Each held-out LLM is asked
    k of its graded questions at random, its own draw (one order per LLM, read as prefixes for every
    k), and its accuracy on all of them, overall and per benchmark, is estimated by the plain mean of
    the k answers; `estimate_scores` with JE-IRT as in the paper; the same with per-question
    corrections (`fit_corrections` from the trained LLMs' answers); and `irt_estimates` with a Rasch
    model fitted on the same known answers. Returns one row per seed, method, k and LLM: true,
    estimate, error, abs_error, bench_mae, covered and bench_covered (90% intervals; NaN without one).
    Several datasets (a list, with a list of `held_out`, one each) run as one protocol, dataset by
    dataset. The (dataset, seed) runs are independent: n_jobs > 1 runs them in that many worker
    processes, the largest dataset's first (the same rows, in the same order; `make_model` must then be
    picklable by joblib, as a lambda or a local function is).
    """
    if n_jobs < 1:
        raise ValueError(f"n_jobs={n_jobs}; expected a positive number of worker processes.")
    datasets = [ds] if isinstance(ds, Dataset) else list(ds)
    helds = [held_out] * len(datasets) if isinstance(held_out, (int, np.integer)) else list(held_out)
    if len(helds) != len(datasets):
        raise ValueError(f"{len(helds)} held_out numbers for {len(datasets)} datasets; give one each.")
    runs = [(d, make_model, h, ks, n_models, draws, s) for d, h in zip(datasets, helds) for s in seeds]
    if n_jobs > 1 and len(runs) > 1:
        parts = _side_by_side(_few_question_seed, runs, n_jobs, longest_first=[run[0].labels.size for run in runs])
    else:
        parts = [_few_question_seed(*run) for run in tqdm(runs, desc="few-question runs", disable=not progress)]
    return pd.concat([f for part in parts for f in part], ignore_index=True).rename(columns={"rule": "method"})


def _few_question_seed(ds: Dataset, make_model, held_out: int, ks: Sequence[int], n_models: int | None, draws: int,
                       seed: int) -> list[pd.DataFrame]:
    """The rows of `few_question_comparison` for one seed, one frame per (k, method)."""
    from jeirt.baselines.irt import OnePL
    from jeirt.questions import known_question_split
    from jeirt.splits import hold_out_models, split_by_question
    from jeirt.tasks.evaluation import irt_estimates

    frames = []
    eligible = np.flatnonzero(ds.observed.sum(axis=1) >= 2 * max(ks))
    sub = ds.subset(models=eligible)
    if n_models is not None and n_models < len(eligible):
        sub = sub.subset(models=np.sort(np.random.default_rng(seed).choice(len(eligible), n_models, replace=False)))
    split = known_question_split(hold_out_models(sub, split_by_question(sub, seed=seed), held_out, seed))
    names = list(split.held_out)
    trained = [m for m in sub.models if m not in names]
    rows = sub.model_index(trained)
    known = (split.train | split.val)[rows] & sub.observed[rows]
    new = sub.subset(models=names)
    labels = new.labels.astype(np.float64)
    graded = ~np.isnan(labels)
    model = make_model(int(seed)).fit(sub, training_only(split))  # held-out vectors unused: not onboarded
    banks = {"je-irt": QuestionBank.from_model(model, sub, prior_models=trained)}
    model.fit_corrections(sub.subset(models=rows), known)
    banks["je-irt + corrections"] = QuestionBank.from_model(model, sub, prior_models=trained)
    irt = OnePL().fit(sub.subset(models=rows), known)
    truth = _true_scores(banks["je-irt"], labels, names)
    order = select_items(banks["je-irt"], max(ks), "random", labels=labels, seed=seed)  # a draw per LLM
    for k in ks:
        asked = np.zeros_like(graded)
        np.put_along_axis(asked, order[:, :k], True, axis=1)
        out = [(PLAIN, plain_means(banks["je-irt"], labels, asked, names))]
        out += [(m, estimate_scores(b, labels, asked, targets=graded, draws=draws, seed=seed, models=names))
                for m, b in banks.items()]
        out.append(("rasch (per question)", irt_estimates(irt, new, asked)))
        for method, est in out:
            frames.append(pd.DataFrame(_score_rows(est, truth, method, k, seed)).assign(dataset=ds.name))
    return frames


def few_question_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, method and k: MAE and mean error of the overall estimate, per-benchmark MAE, and
    the coverage of the 90% intervals overall and per benchmark (methods with an interval)."""
    grouped = runs.groupby(["dataset", "method", "k"], sort=False)
    table = grouped.agg(mae=("abs_error", "mean"), bias=("error", "mean"), bench_mae=("bench_mae", "mean"),
                        estimates=("abs_error", "size"))
    if "covered" in runs:
        table["coverage"] = grouped["covered"].mean()
        table["bench_coverage"] = grouped["bench_covered"].mean()
    return table.reset_index()
