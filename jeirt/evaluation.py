"""Efficient evaluation: a new LLM's scores from a few questions, a new question's answers from a few LLMs.

Once JE-IRT is trained, each question is a fixed unit direction u_q and norm r_q, each model a
vector v, and P(v answers q) = sigmoid(u_q . v - r_q) (Eq. 3). Two practical questions follow.

**A new model, few questions** (tinyBenchmarks and Anchor Points answer it with plain IRT). Ask the
new model k questions chosen by a rule (`select_items`: random, stratified by benchmark, spread
over question directions by k-means, or adaptive), fit its vector from the answers by maximum a
posteriori under a Gaussian prior fitted to the trained vectors (`QuestionBank.posterior`, with
jeirt.onboard's exact Newton solver), and estimate its accuracy on a set Q of questions as

    acc(Q) = ( sum_{q in Q asked} y_q + sum_{q in Q not asked} E[P(q)] ) / |Q|

(the asked answers are known exactly; E is over the Laplace posterior of v). `estimate_scores`
returns this overall and per benchmark with a predictive interval (posterior draws of v, then
Bernoulli draws of the answers not asked).

The prior is N(mu, S) with mu the mean of the trained vectors and S their covariance shrunk towards
a multiple of the identity (Ledoit-Wolf): with a few dozen trained models in d = 256 dimensions the
vectors vary along few directions, and a new model most likely does too. All fits run in whitened
coordinates z, v = mu + L z with S = L L^T, where the prior is N(0, I) and question q becomes the
feature f_q = L^T u_q with offset o_q = r_q - u_q . mu, so that P = sigmoid(f_q . z - o_q).

**A new question, few models.** A new question's embedding comes from its text through the frozen
adapter. When some models' answers to it are known, `refine_questions` moves it to the maximum a
posteriori under N(text embedding, tau^2 I) with every model vector frozen (or, `what="norm"`, only
its difficulty |E_Q| with its direction kept), and the refined embedding predicts the other models.

`few_item_experiment` and `question_onboarding_experiment` are the protocols of the book's chapter
"Efficient evaluation"; `add_evaluation_parsers` adds the `jeirt estimate` and `jeirt suggest` verbs.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd
import torch
from sklearn.cluster import KMeans
from sklearn.covariance import ledoit_wolf
from sklearn.decomposition import PCA
from tqdm import tqdm  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets

from jeirt.book import sample_items
from jeirt.data import Dataset, Split
from jeirt.metrics import score
from jeirt.onboard import fit_model_vectors

if TYPE_CHECKING:
    from jeirt.estimator import JEIRT

RULES = ("random", "stratified", "kmeans", "adaptive", "adaptive-accuracy")
PRIORS = ("full", "isotropic")
OVERALL = "overall"  # the group name of every question together in score tables
PLAIN = "plain mean"  # the rule name of the no-model baseline: the mean of k random answers


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """The logistic function without overflow warnings."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))


# ----------------------------------------------------------------------------------------------------
# The question bank: frozen question geometry plus the prior on a new model's vector


def vector_prior(vectors: np.ndarray, kind: str = "full") -> tuple[np.ndarray, np.ndarray]:
    """Mean (d,) and covariance (d, d) of a Gaussian prior fitted to known model vectors (n, d).

    "full": Ledoit-Wolf shrunk covariance (well conditioned even with n << d); "isotropic": the
    mean per-coordinate variance times I, the prior `JEIRT.onboard` uses.
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) < 2:
        raise ValueError(f"vectors has shape {vectors.shape}; expected (n_models >= 2, d).")
    mean = vectors.mean(axis=0)
    if kind == "full":
        cov, _ = ledoit_wolf(vectors)
    elif kind == "isotropic":
        cov = vectors.var(axis=0, ddof=1).mean() * np.eye(vectors.shape[1])
    else:
        raise ValueError(f"prior={kind!r}; expected one of {PRIORS}.")
    return mean, cov


@dataclass
class Posterior:
    """Laplace posteriors of new models' vectors, in the bank's whitened coordinates z."""

    mean: np.ndarray  # (n_new, d) MAP z
    cov: np.ndarray  # (n_new, d, d) inverse Hessian at the MAP

    def __len__(self) -> int:
        return len(self.mean)


@dataclass
class QuestionBank:
    """The questions a new model can be asked and scored on, as JE-IRT sees them, and the prior on
    its vector. Build one with `QuestionBank.from_model`."""

    item_ids: np.ndarray  # (n_items,) str
    groups: np.ndarray  # (n_items,) str, benchmark of each question
    texts: np.ndarray  # (n_items,) str
    directions: np.ndarray  # (n_items, d) unit u_q
    norms: np.ndarray  # (n_items,) r_q, the difficulty
    prior_mean: np.ndarray  # (d,) mu
    prior_cov: np.ndarray  # (d, d) S

    def __post_init__(self) -> None:
        n, d = self.directions.shape
        if self.norms.shape != (n,) or len(self.item_ids) != n or len(self.groups) != n:
            raise ValueError(f"directions {self.directions.shape}, norms {self.norms.shape}, "
                             f"{len(self.item_ids)} ids and {len(self.groups)} groups must describe the "
                             "same questions.")
        if self.prior_mean.shape != (d,) or self.prior_cov.shape != (d, d):
            raise ValueError(f"prior mean {self.prior_mean.shape} and covariance {self.prior_cov.shape} "
                             f"must match the embedding dimension d = {d}.")

    @classmethod
    def from_model(cls, model: "JEIRT", ds: Dataset, prior_models: Sequence[str] | None = None,
                   prior: str = "full") -> "QuestionBank":
        """The questions of `ds` embedded by a fitted `JEIRT`, with the prior fitted to the vectors of
        `prior_models` (default: every model `model` knows; leave out the ones under evaluation)."""
        names = model.models_ if prior_models is None else list(prior_models)
        return cls.from_embeddings(model.question_embeddings(ds), model.model_vectors_[model._rows(names)],
                                   ds.items["benchmark"], ds.items["item_id"], ds.items["text"], prior)

    @classmethod
    def from_embeddings(cls, embeddings: np.ndarray, model_vectors: np.ndarray, groups: Sequence[str] | None = None,
                        item_ids: Sequence[str] | None = None, texts: Sequence[str] | None = None,
                        prior: str = "full") -> "QuestionBank":
        """A bank from question embeddings E_Q (n_items, d) and known model vectors (n_models, d)."""
        emb = np.asarray(embeddings, dtype=np.float64)
        norms = np.linalg.norm(emb, axis=1)
        n = len(emb)
        as_str = lambda values, default: np.asarray(default if values is None else values, dtype=str)  # noqa: E731
        mean, cov = vector_prior(model_vectors, prior)
        return cls(as_str(item_ids, [f"q{i}" for i in range(n)]), as_str(groups, ["all"] * n),
                   as_str(texts, [""] * n), emb / norms[:, None], norms, mean, cov)

    @property
    def n_items(self) -> int:
        return len(self.norms)

    @property
    def benchmarks(self) -> list[str]:
        return list(pd.unique(self.groups))

    @cached_property
    def factor(self) -> np.ndarray:
        """L (d, d), lower triangular with L L^T = S."""
        return np.linalg.cholesky(self.prior_cov)

    @cached_property
    def features(self) -> np.ndarray:
        """f_q = L^T u_q (n_items, d): the questions in whitened coordinates."""
        return self.directions @ self.factor

    @cached_property
    def features32(self) -> np.ndarray:
        """`features` in float32, for the large products of `estimate_scores`."""
        return self.features.astype(np.float32)

    @cached_property
    def offsets(self) -> np.ndarray:
        """o_q = r_q - u_q . mu (n_items,), so that the logit is f_q . z - o_q."""
        return self.norms - self.directions @ self.prior_mean

    def prior(self, n_new: int = 1) -> Posterior:
        """The posterior before any answer: z ~ N(0, I)."""
        d = self.directions.shape[1]
        return Posterior(np.zeros((n_new, d)), np.broadcast_to(np.eye(d), (n_new, d, d)).copy())

    def vectors(self, posterior: Posterior) -> tuple[np.ndarray, np.ndarray]:
        """Model-space vectors v = mu + L z (n_new, d) and covariances L Sigma_z L^T (n_new, d, d)."""
        L = self.factor
        return self.prior_mean + posterior.mean @ L.T, L @ posterior.cov @ L.T

    def posterior(self, labels: np.ndarray, asked: np.ndarray) -> Posterior:
        """MAP and Laplace covariance of z for each row of `labels` (n_new, n_items), from the
        answers under `asked`. Rows with nothing asked get the prior."""
        labels, asked = self._check(labels, asked)
        n_new, d = len(labels), self.features.shape[1]
        prior = self.prior(n_new)
        mean, cov = prior.mean, prior.cov
        # A Newton step costs chunk x (columns asked by any model of the chunk) x d^2: fit models
        # one by one when d is large, in chunks over the union of their questions when it is small.
        chunk = 1 if d > 32 else 32
        rows = np.flatnonzero(asked.any(axis=1))
        for start in range(0, len(rows), chunk):
            part = rows[start:start + chunk]
            cols = np.flatnonzero(asked[part].any(axis=0))
            fit = fit_model_vectors(self.features[cols], self.offsets[cols], labels[np.ix_(part, cols)],
                                    asked[np.ix_(part, cols)], np.zeros(d), 1.0, chunk=len(part),
                                    device="cpu")
            mean[part], cov[part] = fit.vectors, fit.covariances
        return Posterior(mean, cov)

    def _check(self, labels: np.ndarray, asked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
        asked = np.atleast_2d(np.asarray(asked, dtype=bool))
        if labels.shape[1] != self.n_items or asked.shape != labels.shape:
            raise ValueError(f"labels {labels.shape} and asked {asked.shape} must both be (n_new, n_items) "
                             f"with n_items = {self.n_items}, the bank's questions.")
        if np.isnan(labels[asked]).any():
            raise ValueError("asked marks questions without an answer (NaN label); ask only answered ones.")
        return labels, asked


# ----------------------------------------------------------------------------------------------------
# Estimated scores


def estimate_scores(bank: QuestionBank, labels: np.ndarray, asked: np.ndarray,
                    targets: np.ndarray | None = None, draws: int = 200, level: float = 0.9,
                    seed: int = 0, models: Sequence[str] | None = None,
                    posterior: Posterior | None = None) -> pd.DataFrame:
    """Estimated accuracy of each new model overall and per benchmark, with a predictive interval.

    labels, asked: (n_new, n_items) answers and which of them were asked. targets: (n_new, n_items)
    bool, the questions each accuracy is over (default: all). The estimate is the equation in this
    module's docstring, with E[P] from the probit approximation E[sigmoid(a)] ~ sigmoid(m / sqrt(1 +
    pi s^2 / 8)) for a ~ N(m, s^2). `sd`, `lower` and `upper` (the central `level` interval) come from
    `draws` posterior draws of the vector, each followed by Bernoulli draws of the answers not asked:
    they describe where the accuracy actually measured on all of Q would fall. draws=0 skips them.
    Returns one row per (model, group): items, asked, estimate, sd, lower, upper.
    """
    labels, asked = bank._check(labels, asked)
    n_new = len(labels)
    targets = np.ones_like(asked) if targets is None else np.atleast_2d(np.asarray(targets, dtype=bool))
    if targets.shape != asked.shape:
        raise ValueError(f"targets has shape {targets.shape}; expected {asked.shape} like asked.")
    if not 0 < level < 1:
        raise ValueError(f"level={level}; expected a number in (0, 1).")
    models = [f"new{i}" for i in range(n_new)] if models is None else list(models)
    if len(models) != n_new:
        raise ValueError(f"{len(models)} model names for {n_new} rows of labels.")
    if posterior is None:
        posterior = bank.posterior(labels, asked)
    names = [OVERALL] + bank.benchmarks
    onehot = np.column_stack([np.ones(bank.n_items)] + [bank.groups == g for g in bank.benchmarks])
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_new):
        cols = np.flatnonzero(targets[i])
        if not len(cols):
            raise ValueError(f"model {models[i]!r} has no target question to estimate an accuracy over.")
        # float32 for the (n, d) products: the estimates need no more, and they are the cost here.
        F = bank.features32 if len(cols) == bank.n_items else bank.features32[cols]  # (n, d)
        o, G = bank.offsets[cols], onehot[cols]  # (n,), (n, groups)
        was_asked = asked[i, cols]
        known = np.where(was_asked, labels[i, cols], 0.0)  # (n,)
        cov = posterior.cov[i].astype(np.float32)
        mean_logit = F @ posterior.mean[i].astype(np.float32) - o
        var_logit = ((F @ cov) * F).sum(axis=1)  # f^T Sigma f per question
        p_bar = _sigmoid(mean_logit / np.sqrt(1.0 + np.pi * var_logit / 8.0))
        counts = G.sum(axis=0)
        point = (known @ G + np.where(was_asked, 0.0, p_bar) @ G) / np.maximum(counts, 1)  # (groups,)
        spread = np.full((3, len(names)), np.nan)
        if draws:
            chol = np.linalg.cholesky(posterior.cov[i]).astype(np.float32)
            z = posterior.mean[i] + rng.standard_normal((draws, F.shape[1]), dtype=np.float32) @ chol.T
            p = _sigmoid(z.astype(np.float32) @ F.T - o.astype(np.float32))  # (draws, n)
            answers = np.where(was_asked, known, rng.random(p.shape, dtype=np.float32) < p)
            acc = answers @ G / np.maximum(counts, 1)  # (draws, groups)
            spread = np.stack([acc.std(axis=0, ddof=1),
                               *np.quantile(acc, [(1 - level) / 2, (1 + level) / 2], axis=0)])
        for g, name in enumerate(names):
            if counts[g]:
                rows.append({"model": models[i], "group": name, "items": int(counts[g]),
                             "asked": int(was_asked @ G[:, g]), "estimate": point[g], "sd": spread[0, g],
                             "lower": spread[1, g], "upper": spread[2, g]})
    return pd.DataFrame(rows)


def plain_means(bank: QuestionBank, labels: np.ndarray, asked: np.ndarray,
                models: Sequence[str] | None = None) -> pd.DataFrame:
    """The no-model baseline: each model's mean answer over the asked questions, overall and per
    benchmark (a benchmark with no asked question gets the overall mean). Columns as
    `estimate_scores` without the interval."""
    labels, asked = bank._check(labels, asked)
    models = [f"new{i}" for i in range(len(labels))] if models is None else list(models)
    rows = []
    for i, name in enumerate(models):
        if not asked[i].any():
            raise ValueError(f"model {name!r} was asked no question; the plain mean needs at least one answer.")
        overall = labels[i, asked[i]].mean()
        rows.append({"model": name, "group": OVERALL, "asked": int(asked[i].sum()), "estimate": overall})
        for g in bank.benchmarks:
            sel = asked[i] & (bank.groups == g)
            rows.append({"model": name, "group": g, "asked": int(sel.sum()),
                         "estimate": labels[i, sel].mean() if sel.any() else overall})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------------
# Which questions to ask


def _candidates(bank: QuestionBank, candidates: np.ndarray | None, labels: np.ndarray | None,
                n_new: int) -> np.ndarray:
    """(n_new, n_items) bool: the questions each new model may be asked."""
    if candidates is None:
        candidates = ~np.isnan(labels) if labels is not None else np.ones((n_new, bank.n_items), dtype=bool)
    candidates = np.asarray(candidates, dtype=bool)
    if candidates.ndim == 1:
        candidates = np.broadcast_to(candidates, (n_new, len(candidates)))
    if candidates.shape[1] != bank.n_items:
        raise ValueError(f"candidates has {candidates.shape[1]} columns; the bank has {bank.n_items} questions.")
    return candidates


def select_items(bank: QuestionBank, k: int, rule: str = "adaptive", *, candidates: np.ndarray | None = None,
                 labels: np.ndarray | None = None, n_new: int = 1, seed: int = 0, step: int = 5,
                 growth: float = 0.25, progress: bool = False) -> np.ndarray:
    """Which k questions to ask each new model, in asking order: (n_new, k) question positions.

    Rules: "random"; "stratified" (each benchmark's share of the candidates); "kmeans" (k-means with
    k centres on the question directions, the candidate nearest each centre); "adaptive" (greedy in
    the current posterior, most expected information about the vector, `next_items`); and
    "adaptive-accuracy" (greedy, largest expected drop in the variance of the estimated overall
    accuracy). The adaptive rules need the answers they reveal as they go: `labels` (n_new,
    n_items); they refit the posterior after batches of max(step, growth x asked) questions.
    `candidates` (n_new, n_items) or (n_items,) bool restricts the choice (default: the answered
    questions when labels are given, else all).
    """
    if rule not in RULES:
        raise ValueError(f"rule={rule!r}; expected one of {RULES}.")
    if labels is not None:
        labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
        n_new = len(labels)
    cand = _candidates(bank, candidates, labels, n_new)
    fewest = int(cand.sum(axis=1).min())
    if not 1 <= k <= fewest:
        raise ValueError(f"k={k}; expected 1 <= k <= {fewest}, the fewest candidate questions of a model.")
    rng = np.random.default_rng(seed)
    if rule == "random":
        return np.stack([rng.choice(np.flatnonzero(row), size=k, replace=False) for row in cand])
    if rule == "stratified":
        return np.stack([rng.permutation(np.flatnonzero(row)[sample_items(bank.groups[row], k, rng)])
                         for row in cand])
    if rule == "kmeans":
        return _kmeans_items(bank, k, cand, seed)
    if labels is None:
        raise ValueError(f"rule={rule!r} chooses each question from the answers so far: pass labels, the "
                         "answers it may reveal (or call next_items for one batch from a posterior).")
    target = "vector" if rule == "adaptive" else "accuracy"
    order = np.zeros((n_new, 0), dtype=np.int64)
    asked = np.zeros_like(cand)
    posterior = bank.prior(n_new)
    bar = tqdm(total=k, desc=f"{rule} selection", disable=not progress)
    while order.shape[1] < k:
        batch = min(k - order.shape[1], max(step, int(growth * order.shape[1])))
        picked = next_items(bank, posterior, batch, cand & ~asked, target=target)  # (n_new, batch)
        order = np.concatenate([order, picked], axis=1)
        np.put_along_axis(asked, picked, True, axis=1)
        posterior = bank.posterior(np.where(asked, labels, 0.0), asked)
        bar.update(batch)
    bar.close()
    return order


def next_items(bank: QuestionBank, posterior: Posterior, k: int, candidates: np.ndarray,
               target: str = "vector") -> np.ndarray:
    """The next k questions for each model (n_new, k), chosen greedily from its current posterior.

    Asking q adds Fisher information w_q f_q f_q^T, w_q = p_q (1 - p_q), to the posterior precision.
    target="vector" picks the largest w_q f_q^T Sigma f_q (the largest gain in log det of the
    precision, D-optimal); target="accuracy" the largest drop w_q (f_q^T Sigma g)^2 / (1 + w_q
    f_q^T Sigma f_q) in the variance g^T Sigma g of the estimated overall accuracy, g its gradient.
    After each pick Sigma is updated by the rank-one formula, so a batch does not repeat itself.
    """
    if target not in ("vector", "accuracy"):
        raise ValueError(f"target={target!r}; expected 'vector' or 'accuracy'.")
    candidates = np.atleast_2d(np.asarray(candidates, dtype=bool))
    if candidates.shape != (len(posterior), bank.n_items):
        raise ValueError(f"candidates has shape {candidates.shape}; expected ({len(posterior)}, {bank.n_items}).")
    if (candidates.sum(axis=1) < k).any():
        raise ValueError(f"k={k}, but a model has only {candidates.sum(axis=1).min()} candidate questions left.")
    F = bank.features32  # (n_items, d)
    picks = np.zeros((len(posterior), k), dtype=np.int64)
    for i in range(len(posterior)):
        cov = posterior.cov[i].astype(np.float32)
        p = _sigmoid(F @ posterior.mean[i].astype(np.float32) - bank.offsets)
        w = p * (1 - p)  # (n_items,) Fisher weight of each question
        s = ((F @ cov) * F).sum(axis=1)  # f_q^T Sigma f_q
        h = cov @ (F.T @ w) / bank.n_items if target == "accuracy" else None  # Sigma g
        free = candidates[i].copy()
        for j in range(k):
            gain = w * s if h is None else w * (F @ h) ** 2 / (1 + w * s)
            q = int(np.argmax(np.where(free, gain, -np.inf)))
            picks[i, j], free[q] = q, False
            sq = cov @ F[q]  # (d,)
            scale = w[q] / (1 + w[q] * s[q])
            proj = F @ sq  # f_r^T Sigma f_q for every r
            s = np.maximum(s - scale * proj ** 2, 0.0)  # a variance; the clip absorbs float32 drift
            if h is not None:
                h = h - scale * sq * (F[q] @ h)
            cov -= scale * np.outer(sq, sq)
    return picks


def _kmeans_items(bank: QuestionBank, k: int, candidates: np.ndarray, seed: int) -> np.ndarray:
    """k-means with k centres on the candidates' directions (first 32 principal components, for
    speed); for each model, the candidate question nearest each centre, no question twice."""
    pool = np.flatnonzero(candidates.any(axis=0))
    x = bank.directions[pool]
    if x.shape[1] > 32:
        x = PCA(32, random_state=seed).fit_transform(x)
    centres = KMeans(n_clusters=k, n_init=1, random_state=seed).fit(x).cluster_centers_  # (k, p)
    dist = (x ** 2).sum(1)[:, None] - 2 * x @ centres.T + (centres ** 2).sum(1)[None]  # (n_pool, k)
    picks = np.zeros((len(candidates), k), dtype=np.int64)
    for i, row in enumerate(candidates):
        d = np.where(row[pool][:, None], dist, np.inf)
        for c in np.argsort(d.min(axis=0)):  # best-served centres choose first
            j = int(np.argmin(d[:, c]))
            picks[i, c] = pool[j]
            d[j] = np.inf
    return picks


# ----------------------------------------------------------------------------------------------------
# The few-item experiment: held-out models, every rule, a grid of k


def few_item_experiment(bank: QuestionBank, labels: np.ndarray, ks: Sequence[int],
                        rules: Sequence[str] = RULES, seeds: Sequence[int] = (0,), models: Sequence[str] | None = None,
                        draws: int = 100, progress: bool = True) -> pd.DataFrame:
    """Estimate held-out models' accuracies from k of their answers, for every rule, k and seed.

    labels: (n_new, n_items) every known answer of models the bank's JE-IRT never trained on
    (NaN = not graded). Each model is asked k of its graded questions and its accuracy is estimated
    over all of them (overall and per benchmark); the truth is the mean of all its labels. The
    seeded rules (random, stratified, kmeans) run once per seed; the adaptive ones once, to the
    largest k, reading each smaller k as a prefix. With rule "random" the plain mean of the same k
    answers is reported under rule "plain mean". Returns one row per (rule, k, seed, model): true,
    estimate, error, abs_error, bench_mae (mean absolute error over benchmarks), sd, covered (the
    overall truth inside the 90% interval) and bench_covered (the share of benchmarks where it is).
    """
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise ValueError(f"rules {unknown}; expected a subset of {RULES}.")
    models = [f"new{i}" for i in range(len(labels))] if models is None else list(models)
    graded = ~np.isnan(labels)
    ks = sorted(int(k) for k in ks)
    truth = _true_scores(bank, labels, models)
    seeded = ("random", "stratified", "kmeans")  # the adaptive rules are deterministic
    runs = [(rule, seed) for rule in rules for seed in (seeds if rule in seeded else seeds[:1])]
    bar = tqdm(total=len(runs) * len(ks), desc="few-item estimates", disable=not progress)
    rows = []
    for rule, seed in runs:
        # A random order's first k questions are a random sample of k, and an adaptive order's are
        # the adaptive run to k: one order to the largest k serves every k. Not so for the others.
        nested = rule in ("random", "adaptive", "adaptive-accuracy")
        order = select_items(bank, ks[-1], rule, labels=labels, seed=seed) if nested else None
        for k in ks:
            picks = order[:, :k] if nested else select_items(bank, k, rule, labels=labels, seed=seed)
            asked = np.zeros_like(graded)
            np.put_along_axis(asked, picks, True, axis=1)
            est = estimate_scores(bank, labels, asked, targets=graded, draws=draws, seed=seed, models=models)
            rows += _score_rows(est, truth, rule, k, seed)
            if rule == "random":
                rows += _score_rows(plain_means(bank, labels, asked, models), truth, PLAIN, k, seed)
            bar.update()
    bar.close()
    return pd.DataFrame(rows)


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
    p = _sigmoid(post.mean @ bank.features.T - bank.offsets)  # (n_new, n_items)
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


# ----------------------------------------------------------------------------------------------------
# A new question, a few models: refine the text embedding with known answers


def refine_questions(text_embeddings: np.ndarray, model_vectors: np.ndarray, labels: np.ndarray,
                     mask: np.ndarray, prior_sd: float, what: str = "embedding", max_iter: int = 200,
                     tol: float = 1e-7) -> np.ndarray:
    """MAP question embeddings (n_q, d) given the answers of known models, all model vectors frozen.

    text_embeddings: (n_q, d) E_Q from the adapter, the prior mean; model_vectors: (n_m, d);
    labels, mask: (n_m, n_q) answers and which are known. Objective per question: the masked BCE of
    Eq. (3) plus |E_Q - E_Q^text|^2 / (2 prior_sd^2). what="embedding" moves the whole vector (L-BFGS,
    all questions at once: the objective is a sum over questions); what="norm" keeps the direction
    and moves only the norm r = |E_Q| (exact Newton on a 1-d problem per question, same prior on r).
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
            r = torch.clamp(r - step, min=1e-3)
            if step.abs().max() < tol:
                break
        return (E0 * (r / r0)[:, None]).numpy()
    E = E0.clone().requires_grad_(True)
    opt = torch.optim.LBFGS([E], lr=1, max_iter=max_iter, tolerance_grad=tol, tolerance_change=1e-12,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        norm = E.norm(dim=1, keepdim=True)
        logits = (E / norm) @ V.T - norm  # (n_q, n_m), Eq. (3)
        loss = (torch.nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="none") * w).sum()
        loss = loss + 0.5 * precision * ((E - E0) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return E.detach().numpy()


def question_probabilities(embeddings: np.ndarray, model_vectors: np.ndarray) -> np.ndarray:
    """Eq. (3): P (n_models, n_q) for question embeddings (n_q, d) and model vectors (n_models, d)."""
    norms = np.linalg.norm(embeddings, axis=1)
    return _sigmoid(model_vectors @ (embeddings / norms[:, None]).T - norms[None, :])


def split_without_benchmarks(ds: Dataset, benchmarks: Sequence[str], val_fraction: float = 0.1,
                             seed: int = 0) -> Split:
    """Train and validate on every benchmark but `benchmarks`, whose questions form the test part
    (`split_leave_benchmark_out` for several at once: one to study, one to tune on)."""
    unknown = [b for b in benchmarks if b not in ds.benchmarks]
    if unknown or not benchmarks:
        raise ValueError(f"benchmarks={list(benchmarks)}; expected a non-empty list from {ds.benchmarks}.")
    is_test = ds.items["benchmark"].isin(list(benchmarks)).to_numpy()
    rest = np.random.default_rng(seed).permutation(np.flatnonzero(~is_test))
    is_val = np.zeros(ds.n_items, dtype=bool)
    is_val[rest[:int(round(val_fraction * len(rest)))]] = True
    rows = np.ones((ds.n_models, 1), dtype=bool)
    return Split(rows & ~is_test & ~is_val, rows & is_val, rows & is_test,
                 "without-" + "+".join(benchmarks)).restrict_to(ds.observed)


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
    V = model.model_vectors_[model._rows(ds.models)].astype(np.float64)  # (n_models, d)
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


# ----------------------------------------------------------------------------------------------------
# Command line: `jeirt estimate` and `jeirt suggest` (registered by jeirt.cli)


def _bank_and_answers(args: argparse.Namespace) -> tuple[Dataset, QuestionBank, list[str], np.ndarray]:
    """The dataset, its questions as a bank of the saved model, the models of the results CSV and
    their answers as a (n_new, n_items) label matrix aligned with the bank (NaN: not answered)."""
    from jeirt.cli import _dataset
    from jeirt.estimator import JEIRT

    model = JEIRT.load(args.model)
    ds = _dataset(args.dataset)
    bank = QuestionBank.from_model(model, ds, prior=args.prior)
    if not getattr(args, "results", None):
        return ds, bank, [], np.full((1, ds.n_items), np.nan)
    table = pd.read_csv(args.results, dtype={"item_id": str, "model": str})
    missing = [c for c in ("model", "item_id", "label") if c not in table.columns]
    if missing:
        raise ValueError(f"{args.results} lacks column(s) {missing}; expected model,item_id,label (one row "
                         "per question asked).")
    unknown = sorted(set(table["item_id"]) - set(bank.item_ids))
    if unknown:
        raise ValueError(f"{len(unknown)} item_id(s) of {args.results} are not questions of {ds.name!r}, "
                         f"e.g. {unknown[:5]}.")
    if table.duplicated(["model", "item_id"]).any():
        raise ValueError(f"{args.results} repeats a (model, item_id) pair; give one answer per question.")
    labels = pd.to_numeric(table["label"], errors="coerce")
    if labels.isna().any() or not labels.between(0, 1).all():
        raise ValueError(f"{args.results}: every label must be a number in [0, 1].")
    models = list(pd.unique(table["model"]))
    matrix = np.full((len(models), bank.n_items), np.nan)
    matrix[pd.Index(models).get_indexer(table["model"]), pd.Index(bank.item_ids).get_indexer(table["item_id"])] = labels
    return ds, bank, models, matrix


def _json_number(value: object) -> int | float:
    """numpy scalars as JSON numbers."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def cmd_estimate(args: argparse.Namespace) -> None:
    """`jeirt estimate`: a new model's accuracy on every question of a dataset from a few answers."""
    ds, bank, models, labels = _bank_and_answers(args)
    scores = estimate_scores(bank, labels, ~np.isnan(labels), draws=args.draws, level=args.level,
                             seed=args.seed, models=models)
    summary = {"dataset": ds.name, "questions": bank.n_items, "level": args.level,
               "interval": "predictive: posterior draws of the vector, then Bernoulli draws of the answers "
                           "not asked",
               "models": {m: {"asked": int(block["asked"].iloc[0]),
                              **{row.group: {"estimate": row.estimate, "sd": row.sd, "lower": row.lower,
                                             "upper": row.upper, "asked": row.asked}
                                 for row in block.itertuples()}}
                          for m, block in scores.groupby("model", sort=False)}}
    for m, block in scores.groupby("model", sort=False):
        print(f"{m}: {int(block['asked'].iloc[0])} answers, estimated accuracy on {ds.name} "
              f"({bank.n_items} questions), {args.level:.0%} predictive interval")
        print(block.drop(columns="model").to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2, default=_json_number))


def cmd_suggest(args: argparse.Namespace) -> None:
    """`jeirt suggest`: which k questions a new model should answer next."""
    from jeirt.cli import _emit

    ds, bank, models, labels = _bank_and_answers(args)
    if len(models) > 1:
        raise ValueError(f"{args.results} holds {len(models)} models; suggest questions for one at a time.")
    asked = ~np.isnan(labels)
    candidates = ~asked
    if args.rule in ("adaptive", "adaptive-accuracy"):
        target = "vector" if args.rule == "adaptive" else "accuracy"
        posterior = bank.posterior(np.nan_to_num(labels), asked)
        picks = next_items(bank, posterior, args.k, candidates, target=target)[0]
    else:
        picks = select_items(bank, args.k, args.rule, candidates=candidates, seed=args.seed)[0]
    table = pd.DataFrame({"item_id": bank.item_ids[picks], "benchmark": bank.groups[picks], "text": bank.texts[picks]})
    if args.out:
        table.to_csv(args.out, index=False)
    summary = {"dataset": ds.name, "rule": args.rule, "k": args.k, "already_answered": int(asked.sum()),
               "per_benchmark": table["benchmark"].value_counts().to_dict(), "out": args.out,
               "item_ids": table["item_id"].tolist()}
    _emit({k: v for k, v in summary.items() if k != "item_ids"}, args)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))


def add_evaluation_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Add `estimate` and `suggest` to the `jeirt` command's subparsers."""
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", required=True, help="a model saved by `jeirt fit` (.pt)")
        p.add_argument("--dataset", required=True, help="the questions: a dataset name or results CSV; their "
                       "texts or precomputed embeddings place them in the model's geometry")
        p.add_argument("--prior", choices=PRIORS, default="full",
                       help="prior on the new model's vector, from the saved model's vectors (default full)")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--json", help="also write the summary to this JSON file")

    text = "estimate a new model's accuracy overall and per benchmark from its answers to a few questions"
    p = subparsers.add_parser("estimate", help=text, description=text)
    common(p)
    p.add_argument("--results", required=True, help="long CSV model,item_id,label: the answers so far")
    p.add_argument("--draws", type=int, default=200, help="posterior draws for the interval (default 200)")
    p.add_argument("--level", type=float, default=0.9, help="interval level (default 0.9)")
    p.set_defaults(func=cmd_estimate)

    text = "choose which k questions a new model should answer next"
    p = subparsers.add_parser("suggest", help=text, description=text)
    common(p)
    p.add_argument("--k", type=int, required=True, help="how many questions to suggest")
    p.add_argument("--rule", choices=RULES, default="stratified",
                   help="selection rule (default stratified; random and stratified are the safe choices, the "
                        "others trust the model about the questions they skip)")
    p.add_argument("--results", help="long CSV model,item_id,label of one model's answers so far (optional)")
    p.add_argument("--out", help="write the suggested questions here (CSV item_id,benchmark,text)")
    p.set_defaults(func=cmd_suggest)
