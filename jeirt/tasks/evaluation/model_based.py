"""Model-based estimates of a new LLM's accuracy from a few answers (`estimate_scores`).

Its vector's posterior given the answers asked (`QuestionBank.posterior`) estimates its accuracy on a
set Q of questions as

    acc(Q) = ( sum_{q in Q asked} y_q + sum_{q in Q not asked} E[P(q)] ) / |Q|

with E over the Laplace posterior of v: overall and per benchmark, with a predictive interval from
posterior draws. The model's misfit for this LLM, a shift of all its logits (sd from `MISFIT_SDS`) and
one per benchmark (sd `GROUP_SD`), is learnt from the leave-one-out residuals of the answers drawn at
random and widens the interval. Why each piece, and what it was measured to do: DECISIONS.md
("Few-question estimates").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.linalg import lapack
from tqdm import (
    tqdm,  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets
)

from jeirt.model import sigmoid
from jeirt.tasks.evaluation.bank import OVERALL, Posterior, QuestionBank, check_estimate_inputs


def estimate_scores(
    bank: QuestionBank,
    labels: np.ndarray,
    asked: np.ndarray,
    targets: np.ndarray | None = None,
    draws: int = 200,
    level: float = 0.9,
    seed: int = 0,
    models: Sequence[str] | None = None,
    posterior: Posterior | None = None,
    sampled: np.ndarray | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Estimated accuracy of each new model overall and per benchmark, with a predictive interval.

    labels, asked: (n_new, n_items) answers and which of them were asked. targets: (n_new, n_items)
    bool, the questions each accuracy is over (default: all). The estimate is the equation in this
    module's docstring, with E[P] from the probit approximation E[sigmoid(a)] ~ sigmoid(m / sqrt(1 +
    pi s^2 / 8)) for a ~ N(m, s^2). `sd`, `lower` and `upper` (the central `level` interval) come from
    `draws` posterior draws of the vector, each followed by Bernoulli draws of the answers not asked:
    they describe where the accuracy actually measured on all of Q would fall. draws=0 skips them.
    sampled: (n_new, n_items) bool, the asked questions drawn at random (default: all asked, as the
    random and stratified rules draw them; for an adaptive order, `random_positions`): only their
    leave-one-out residuals teach the model's misfit shifts, overall and per benchmark.
    Returns one row per (model, group): items, asked, estimate, sd, lower, upper.
    """
    labels, asked = bank._check(labels, asked)
    targets, models, sampled = check_estimate_inputs(asked, targets, level, models, sampled)
    if posterior is None:
        posterior = bank.posterior(labels, asked, progress=progress)
    names = [OVERALL] + bank.benchmarks
    onehot = np.column_stack([np.ones(bank.n_items)] + [bank.groups == g for g in bank.benchmarks])
    rng = np.random.default_rng(seed)
    squared = np.einsum("nd,nd->n", bank.features32, bank.features32) if posterior.basis is not None else None
    rows = []
    for i in tqdm(range(len(labels)), desc="estimates", disable=not progress or len(labels) == 1):
        cols = np.flatnonzero(targets[i])
        if not len(cols):
            raise ValueError(f"model {models[i]!r} has no target question to estimate an accuracy over.")
        # float32 for the (n, d) products: the estimates need no more, and they are the cost here.
        F = bank.features32 if len(cols) == bank.n_items else bank.features32[cols]  # (n, d)
        logits = _posterior_logits(posterior, i, F, bank.offsets[cols], squared, cols, models[i])
        groups = onehot[cols]  # (n, groups)
        point, spread = _one_model(
            bank, logits, F, groups, labels[i, cols], asked[i, cols], sampled[i, cols], draws, level, rng
        )
        rows += _group_rows(models[i], names, groups, asked[i, cols], point, spread)
    return pd.DataFrame(rows)


def _group_rows(
    model: str, names: list[str], groups: np.ndarray, was_asked: np.ndarray, point: np.ndarray, spread: np.ndarray
) -> list[dict]:
    """`estimate_scores`' rows of one model: each group that has target questions."""
    counts = groups.sum(axis=0)
    return [
        {
            "model": model,
            "group": name,
            "items": int(counts[g]),
            "asked": int(was_asked @ groups[:, g]),
            "estimate": point[g],
            "sd": spread[0, g],
            "lower": spread[1, g],
            "upper": spread[2, g],
        }
        for g, name in enumerate(names)
        if counts[g]
    ]


def _one_model(
    bank: QuestionBank,
    logits: _Logits,
    F: np.ndarray,
    G: np.ndarray,
    labels: np.ndarray,
    was_asked: np.ndarray,
    sampled: np.ndarray,
    draws: int,
    level: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """One new model's estimate per group (G (n, groups) the one-hot of its target questions' groups,
    overall first) and, from `draws` posterior draws, its (sd, lower, upper) (3, groups); NaN without
    draws."""
    group = G[:, 1:].argmax(axis=1)  # (n,) each target question's benchmark
    known = np.where(was_asked, labels, 0.0)  # (n,)
    shifts = _misfit_shifts(bank, logits, known, group, sampled, G.shape[1] - 1)
    mean_logit = logits.mean + shifts.misfit + shifts.mean[group]
    var_logit = logits.var + shifts.misfit_var + shifts.var[group]
    p_bar = sigmoid(mean_logit / np.sqrt(1.0 + np.pi * var_logit / 8.0))
    counts = G.sum(axis=0)
    point = (known @ G + np.where(was_asked, 0.0, p_bar) @ G) / np.maximum(counts, 1)  # (groups,)
    if not draws:
        return point, np.full((3, G.shape[1]), np.nan)
    acc = _drawn_accuracies(rng, draws, F, logits, shifts, group, known, was_asked, G)
    return point, np.stack([acc.std(axis=0, ddof=1), *np.quantile(acc, [(1 - level) / 2, (1 + level) / 2], axis=0)])


@dataclass
class _Logits:
    """One new model's logits on its target questions under its vector's posterior: their means and
    variances, and what posterior draws of them need."""

    mean: np.ndarray  # (n,) f . mean - o
    var: np.ndarray  # (n,) f^T Sigma f
    spread: np.ndarray  # (n, d) F L with Sigma = L L^T; in a basis (n, r) (F B) L with C = L L^T
    chol: np.ndarray  # L, float32
    basis: np.ndarray | None  # (d, r) B, float32; None for a posterior kept in full
    floor: float  # c, the variance off the basis


def _posterior_logits(
    posterior: Posterior,
    i: int,
    F: np.ndarray,
    o: np.ndarray,
    squared: np.ndarray | None,
    cols: np.ndarray,
    name: str,
) -> _Logits:
    """The logits of model `i` on the questions with features F (n, d) and offsets o (n,): `cols` of
    the bank, whose squared feature norms are `squared` (with a basis)."""
    # LAPACK's potrf directly: the factor of np.linalg.cholesky, in a third of its time at d = 256.
    chol, info = lapack.dpotrf(posterior.cov[i], lower=1, clean=1)
    if info:
        raise np.linalg.LinAlgError(
            f"the posterior covariance of model {name!r} is not positive definite; its posterior cannot be sampled."
        )
    chol = chol.astype(np.float32)
    mean = F @ posterior.mean[i].astype(np.float32) - o
    if posterior.basis is None:
        # Sigma = L L^T: f^T Sigma f = |L^T f|^2, and a posterior draw's logits are F (mean + L e) =
        # F mean + (F L) e: one (n, d) x (d, d) product serves both.
        spread = F @ chol  # (n, d)
        return _Logits(mean, np.einsum("nd,nd->n", spread, spread), spread, chol, None, 0.0)
    # Sigma = B C B^T + c (I - B B^T), C = L L^T: (n, r) products
    basis, floor = posterior.in_basis()
    assert squared is not None
    B = basis[i].astype(np.float32)
    inside = F @ B  # (n, r) B^T f
    spread = inside @ chol
    off = np.maximum(squared[cols] - np.einsum("nr,nr->n", inside, inside), 0.0)  # |f|^2 off the basis
    var = floor[i] * off + np.einsum("nr,nr->n", spread, spread)
    return _Logits(mean, var, spread, chol, B, float(floor[i]))


@dataclass
class _Shifts:
    """A new model's misfit b (a shift of all its logits) and its own shift b_g on each benchmark, as
    posterior means and variances."""

    misfit: float
    misfit_var: float
    mean: np.ndarray  # (groups,) b_g
    var: np.ndarray  # (groups,)


def _misfit_shifts(
    bank: QuestionBank, logits: _Logits, known: np.ndarray, group: np.ndarray, at: np.ndarray, n_groups: int
) -> _Shifts:
    """The model's misfit: a shift b ~ N(0, misfit_sd^2) of all its logits, and its own shift on each
    benchmark, b_g ~ N(0, group_sd^2), learnt (one Newton step from 0 each, b first) from the
    leave-one-out residuals of the answers drawn at random (`at`); their posterior means move the
    logits and their variances widen them."""
    y_at, h_at = known[at], logits.var[at].astype(np.float64)
    p_at = sigmoid(logits.mean[at].astype(np.float64))
    w_at = p_at * (1 - p_at)
    # Leaving answer q out moves its logit by h_q (p_q - y_q) / (1 - w_q h_q) (one Newton step, by
    # Sherman-Morrison; h_q = f_q^T Sigma f_q): the residual it would have had, had it not been asked.
    p_out = sigmoid(logits.mean[at] + h_at * (p_at - y_at) / np.maximum(1.0 - w_at * h_at, 1e-6))
    resid, info = y_at - p_out, p_out * (1 - p_out)
    weight = _design_weights(group, at, n_groups)
    misfit, misfit_var = _misfit(weight @ resid, weight @ info, bank.misfit_sds, noise=(weight**2) @ info)
    shift_mean: np.ndarray = np.zeros(n_groups)
    shift_var: np.ndarray = np.zeros(n_groups)
    if bank.group_sd > 0:
        left = np.bincount(group[at], resid - info * misfit, minlength=n_groups)
        shift_var = 1.0 / (1.0 / bank.group_sd**2 + np.bincount(group[at], info, minlength=n_groups))
        shift_mean = left * shift_var
    return _Shifts(misfit, misfit_var, shift_mean, shift_var)


def _drawn_accuracies(
    rng: np.random.Generator,
    draws: int,
    F: np.ndarray,
    logits: _Logits,
    shifts: _Shifts,
    group: np.ndarray,
    known: np.ndarray,
    was_asked: np.ndarray,
    G: np.ndarray,
) -> np.ndarray:
    """Accuracies (draws, groups) of `draws` posterior draws of the vector and the shifts, each followed
    by Bernoulli draws of the answers not asked (the answers asked count as given)."""
    e = rng.standard_normal((draws, F.shape[1]), dtype=np.float32)
    if logits.basis is None:
        drawn_logits = e @ logits.spread.T  # (draws, n), in place from here on
    else:  # z - mean = sqrt(c) (I - B B^T) e + B L e': a draw in d dimensions, then its logits
        B = logits.basis
        along = rng.standard_normal((draws, B.shape[1]), dtype=np.float32) @ logits.chol.T
        z = np.sqrt(logits.floor, dtype=np.float32) * (e - (e @ B) @ B.T) + along @ B.T
        drawn_logits = z @ F.T
    draw_shifts = shifts.mean + np.sqrt(shifts.var) * rng.standard_normal((draws, len(shifts.mean)))
    draw_shifts += shifts.misfit + np.sqrt(shifts.misfit_var) * rng.standard_normal((draws, 1))
    drawn_logits += logits.mean.astype(np.float32)
    drawn_logits += draw_shifts.astype(np.float32)[:, group]
    drawn = (rng.random(drawn_logits.shape, dtype=np.float32) < sigmoid(drawn_logits)) & ~was_asked
    # The drawn answers are 0/1, so their float32 sums per group are exact.
    counts = G.sum(axis=0)
    return (known @ G + drawn.astype(np.float32) @ G.astype(np.float32)) / np.maximum(counts, 1)


def _design_weights(group: np.ndarray, sampled: np.ndarray, n_groups: int) -> np.ndarray:
    """Weights (summing to the number sampled) that make the sampled questions stand for the targets
    benchmark by benchmark (post-stratification): (N_g / N) / (n_g / n) for a question of benchmark g,
    N_g of the N targets and n_g of the n sampled questions in it. A sample heavy on one benchmark (a
    user's own choice of questions, or a random share drawn after the adaptive picks took many of one
    benchmark's questions) would otherwise let that benchmark's residuals set the model's shift on
    every question. For the random and stratified rules (each benchmark its share) the weights are
    near 1. Benchmarks with no sampled question share out their weight over the others."""
    targets = np.bincount(group, minlength=n_groups).astype(np.float64)
    drawn = np.bincount(group[sampled], minlength=n_groups).astype(np.float64)
    if not drawn.sum():
        return np.zeros(0)
    share = np.where(drawn > 0, targets, 0.0)
    per_group = np.divide(share / share.sum() * drawn.sum(), drawn, out=np.zeros(n_groups), where=drawn > 0)
    return per_group[group[sampled]]


def _misfit(total: float, information: float, sds: Sequence[float], noise: float | None = None) -> tuple[float, float]:
    """Posterior mean and variance of a shift b ~ N(0, tau^2) of every logit from (weighted) residuals
    summing to `total` with Fisher information `information` (one Newton step from 0): the sum is
    N(information b, noise), noise its variance without a shift (default `information`: unit weights),
    and tau the one of `sds` under which the sum is most likely (empirical Bayes: the sum is
    N(0, noise + tau^2 information^2))."""
    sds = [float(t) for t in sds if t > 0]
    noise = information if noise is None else noise
    if not sds:
        return 0.0, 0.0
    if noise <= 0:  # no answer drawn at random: the narrowest shift, unlearnt, still widens the interval
        return 0.0, sds[0] ** 2
    spread = [noise + (t * information) ** 2 for t in sds]
    tau = sds[int(np.argmax([-0.5 * np.log(v) - total**2 / (2 * v) for v in spread]))]
    var = 1.0 / (1.0 / tau**2 + information**2 / noise)
    return total * information / noise * var, var
