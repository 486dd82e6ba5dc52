"""The Known-answers page: what other models' answers add. Per-question corrections for a new model's
few-question scores (against the per-question Rasch baseline) and for its onboarding (against the
per-question Rasch and 2PL), and new questions placed from a few models' answers (their text
embedding refined by a MAP update).
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from tqdm import (
    tqdm,  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets
)

from jeirt.book.efficient import score_rows, side_by_side, training_only, true_scores
from jeirt.book.figures import LINESTYLES, style
from jeirt.tasks.onboarding import fraction_label
from jeirt.data import Dataset
from jeirt.estimator import JEIRT, Estimator
from jeirt.fitcache import fit_cached, fit_many
from jeirt.metrics import score
from jeirt.model import sigmoid
from jeirt.splits import Split, hold_out_models, split_by_question, subsample_items
from jeirt.tasks.evaluation import (
    PLAIN,
    QuestionBank,
    estimate_scores,
    plain_means,
    select_items,
)


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


# New models on known questions: per-question corrections and the per-question IRT baseline
KNOWN_METHODS = ("plain mean", "je-irt", "je-irt + corrections", "rasch (per question)", "2pl (per question)")


def known_question_onboarding(ds: Dataset, make_model: Callable[[int], Estimator], held_out: int,
                              fractions: Sequence[float] = (0.01, 0.1, 1.0), seeds: Sequence[int] = (0,),
                              joint: bool = True, progress: bool = True) -> pd.DataFrame:
    """New LLMs onboarded onto questions the other LLMs answered, against the per-question IRT baseline.

    Per seed s: the question split (seed s), `held_out` LLMs drawn with seed s leave training and the
    others answer every question outside validation (`known_question_split`). `make_model(s)` (a
    JEIRT) is fitted once; each held-out LLM is onboarded from each `fraction` of its training
    answers (`subsample_items`, seed s) and scored on its test answers, by: the plain mean of its
    answers; JE-IRT as in the paper (questions from their text); the same network with per-question
    corrections from the trained LLMs' answers (`fit_corrections`); and a Rasch / 2PL fitted on the
    same known answers (`PerQuestionIRT`). With `joint`, JE-IRT is also trained with every LLM (the
    held-out ones on their training answers), with and without corrections ("All" rows).

    Returns one row per seed, method and setting: accuracy, auc, log_loss over the held-out LLMs'
    test answers, n_test, answers_per_model, seconds (onboarding all of them; for All, the fit's training time) and
    seconds_per_model.
    """
    from jeirt.baselines.irt import PerQuestionIRT
    from jeirt.questions import known_question_split

    def row(seed, method, setting, probs, labels, mask, seconds, n, answers, **extra) -> dict:
        s = score(probs[mask], labels[mask])
        return {"seed": int(seed), "method": method, "setting": setting, "accuracy": s["accuracy"], "auc": s["auc"],
                "log_loss": s["log_loss"], "n_test": int(mask.sum()), "answers_per_model": answers,
                "seconds": seconds, "seconds_per_model": seconds / n, **extra}

    rows = []
    helds = {int(seed): hold_out_models(ds, split_by_question(ds, seed=seed), held_out, seed) for seed in seeds}
    knowns = {seed: known_question_split(held) for seed, held in helds.items()}
    boths = {seed: Split(known.train | helds[seed].onboard, known.val, known.test, f"{known.name}-joint")
             for seed, known in knowns.items()}
    # Every JE-IRT fit (per seed; with `joint` also the one with every LLM) is independent: made side
    # by side on the cores and kept (`jeirt.fitcache.fit_many`); `seconds` of a fit is its training time.
    # The known-question fit is `training_only` (the held-out LLMs are onboarded below, at each share):
    # the same fit as `few_question_comparison`'s, which reads it from the cache.
    jobs = ([(seed, training_only(knowns[seed])) for seed in helds]
            + ([(seed, boths[seed]) for seed in helds] if joint else []))
    fits = dict(zip(((seed, split.name) for seed, split in jobs),
                    fit_many([make_model(seed) for seed, _ in jobs], ds, [split for _, split in jobs])))
    for seed in tqdm(seeds, desc="known-question onboarding", disable=not progress):
        held, known = helds[int(seed)], knowns[int(seed)]
        names = list(held.held_out)
        idx = ds.model_index(names)
        new = ds.subset(models=names)
        test_mask, labels = known.test[idx], np.nan_to_num(new.labels)
        trained = np.flatnonzero(~np.isin(np.asarray(ds.models), names))
        model = fits[int(seed), known.name]
        start = time.perf_counter()
        corrections = model.fit_corrections(ds.subset(models=trained), known.train[trained]).corrections_
        correction_seconds = time.perf_counter() - start
        irts = {kind: PerQuestionIRT(kind).fit(ds, known) for kind in ("1pl", "2pl")}
        for fraction in fractions:
            mask = subsample_items(held.onboard[idx], fraction, seed)
            setting, answers = fraction_label(fraction), float(mask.sum(axis=1).mean())
            start = time.perf_counter()
            mean = (labels * mask).sum(axis=1) / mask.sum(axis=1)
            plain = np.broadcast_to(mean[:, None], labels.shape)
            rows.append(row(seed, "plain mean", setting, plain, labels, test_mask, time.perf_counter() - start,
                            len(names), answers))
            for method, corr in (("je-irt", None), ("je-irt + corrections", corrections)):
                model.corrections_ = corr
                start = time.perf_counter()
                model.onboard(new, mask, replace=True)
                seconds = time.perf_counter() - start
                rows.append(row(seed, method, setting, model.predict_proba(new), labels, test_mask, seconds,
                                len(names), answers, prior_scale=model.onboard_prior_scale_))
            for kind, irt in irts.items():
                start = time.perf_counter()
                irt.onboard(new, mask, replace=True)
                seconds = time.perf_counter() - start
                rows.append(row(seed, f"{'rasch' if kind == '1pl' else '2pl'} (per question)", setting,
                                irt.predict_proba(new), labels, test_mask, seconds, len(names), answers))
        if joint:  # every LLM trained together, the held-out ones on their training answers
            both = boths[int(seed)]
            full = fits[int(seed), both.name]
            seconds = full.history_.seconds
            answers = float(held.onboard[idx].sum(axis=1).mean())
            rows.append(row(seed, "je-irt", "All", full.predict_proba(new), labels, test_mask, seconds, len(names),
                            answers))
            full.fit_corrections(ds, both.train)
            rows.append(row(seed, "je-irt + corrections", "All", full.predict_proba(new), labels, test_mask, seconds,
                            len(names), answers, correction_seconds=correction_seconds,
                            offset_scale=corrections.offset_scale, shift_scale=corrections.shift_scale))
    return pd.DataFrame(rows)


def known_question_table(runs: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """`metric` (mean ± sd over seeds, x 100) per method (rows) and setting (columns), and the
    onboarding seconds per new LLM at 100%."""
    settings = list(pd.unique(runs["setting"]))
    grouped = runs.groupby(["method", "setting"], sort=False)[metric]
    mean, sd = grouped.mean().unstack("setting"), grouped.std(ddof=1).unstack("setting")
    methods = [m for m in KNOWN_METHODS if m in mean.index]

    def cell(m: float, s: float) -> str:
        return "" if np.isnan(m) else f"{100 * m:.1f}" if np.isnan(s) else f"{100 * m:.1f} ± {100 * s:.1f}"

    table = pd.DataFrame({c: [cell(mean.at[m, c], sd.at[m, c]) for m in methods] for c in settings}, index=methods)
    last = [s for s in settings if s != "All"][-1]
    per_model = runs[runs["setting"] == last].groupby("method")["seconds_per_model"].mean()
    table[f"s / model ({last})"] = [f"{per_model.get(m, np.nan):.3f}" for m in methods]
    return table.rename_axis(metric)


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
        parts = side_by_side(_few_question_seed, runs, n_jobs, longest_first=[run[0].labels.size for run in runs])
    else:
        parts = [_few_question_seed(*run) for run in tqdm(runs, desc="few-question runs", disable=not progress)]
    return pd.concat([f for part in parts for f in part], ignore_index=True).rename(columns={"rule": "method"})


def _few_question_seed(ds: Dataset, make_model, held_out: int, ks: Sequence[int], n_models: int | None, draws: int,
                       seed: int) -> list[pd.DataFrame]:
    """The rows of `few_question_comparison` for one seed, one frame per (k, method)."""
    from jeirt.baselines.irt import OnePL
    from jeirt.questions import known_question_split
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
    # Held-out vectors unused: not onboarded. The same fit as `known_question_onboarding`'s: from the cache.
    model = fit_cached(make_model(int(seed)), sub, training_only(split))
    banks = {"je-irt": QuestionBank.from_model(model, sub, prior_models=trained)}
    model.fit_corrections(sub.subset(models=rows), known)
    banks["je-irt + corrections"] = QuestionBank.from_model(model, sub, prior_models=trained)
    irt = OnePL().fit(sub.subset(models=rows), known)
    truth = true_scores(banks["je-irt"], labels, names)
    order = select_items(banks["je-irt"], max(ks), "random", labels=labels, seed=seed)  # a draw per LLM
    for k in ks:
        asked = np.zeros_like(graded)
        np.put_along_axis(asked, order[:, :k], True, axis=1)
        out = [(PLAIN, plain_means(banks["je-irt"], labels, asked, names))]
        out += [(m, estimate_scores(b, labels, asked, targets=graded, draws=draws, seed=seed, models=names))
                for m, b in banks.items()]
        out.append(("rasch (per question)", irt_estimates(irt, new, asked)))
        for method, est in out:
            frames.append(pd.DataFrame(score_rows(est, truth, method, k, seed)).assign(dataset=ds.name))
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
