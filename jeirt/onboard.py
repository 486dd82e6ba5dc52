"""Onboarding: fit new LLMs' vectors with every other parameter frozen (Section 3.3, Appendix D).

With the adapter frozen, each question is a fixed unit direction u_q and norm r_q, and Eq. (3) for a
new model m is a logistic regression in its vector v_m (d parameters) with offset -r_q:

    P(m answers q) = sigmoid(u_q . v_m - r_q).

We solve it exactly, for many models at once, with a Gaussian prior on v_m (maximum a posteriori):
`fit_model_vectors` under N(mu, c I), and `fit_new_vectors`, the posterior of a new model that
`JEIRT.onboard` and the few-question estimate (`jeirt.tasks.evaluation`) share, under N(mu, c S) with
mu and S the trained vectors' mean and Ledoit-Wolf covariance (`vector_prior`; solved in whitened
coordinates, where it is N(0, c I)). The prior centres an unknown model on the average known one, in
the directions in which known models differ, and keeps a model seen on a handful of questions
sensible. The inverse Hessian at the optimum is the posterior covariance (Laplace approximation), and
its determinant gives each width's evidence.

The prior width c (`prior_width` in code, `prior_widths` for several): each model's most evident of
`PRIOR_WIDTH_GRID`, or the one of `VALIDATION_PRIOR_WIDTH_GRID` that best predicts answers held out of
the fit (`val_mask`). The evidence asks how well the answers are explained,
and answers on questions the network trained on are explained better than new questions will be, so
with many such answers it widens the prior past what new questions want; validation answers do not
(DECISIONS.md has the onboarding curves behind this).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from jeirt import settings
from jeirt.renamed import missing_attribute


@dataclass
class OnboardResult:
    vectors: np.ndarray  # (n_new, d) MAP model vectors (float32) at the chosen prior width
    covariances: np.ndarray | None  # (n_new, d, d) Laplace posterior covariances; None unless asked for
    iterations: int  # solver steps run (all widths; the most of any chunk of models)
    log_evidence: np.ndarray  # (n_new,) Laplace approximation of each model's log marginal likelihood
    prior_width: float = np.nan  # the prior width used (the best by summed evidence when several)
    evidence: dict[float, float] = field(default_factory=dict)  # summed log evidence of each width tried
    prior_widths: np.ndarray | None = None  # (n_new,) each model's own width, with select="each"
    width_vectors: dict[float, np.ndarray] = field(default_factory=dict)  # width -> (n_new, d) MAP at it


PRIOR_WIDTH_GRID = (1.0, 4.0, 16.0)  # prior widths c of N(mu, c S) chosen by each new model's evidence
VALIDATION_PRIOR_WIDTH_GRID = tuple(2.0**k for k in range(-6, 3))  # prior widths (1/64 to 4) chosen on held-out answers
# Fewer held-out answers than this (all new models together) choose no width: the evidence does, with a
# warning. One answer ranks the nine widths by a single log loss, which picks an end of the range (1/64
# or 4) whatever the model; ten is a floor, not a measured optimum (DECISIONS.md).
MIN_VALIDATION_ANSWERS = 10
_MEMORY = 8  # BFGS pairs a model's quasi-Newton steps keep (a width rarely needs more steps than this)
_SMALL_D = 64  # up to this dimension a chunk's data Hessians are one batched product (d^2 per answer is cheap),
_SMALL_CELLS = 1 << 24  # when its work space (models x d x questions, float32) fits in 64 MB
_GATHER_BELOW = 0.875  # a model's Hessian sums over its own questions when it answered fewer than this share
_BLOCK = 64  # rows of a block of a float32 Hessian's lower triangle (one matrix product each)


# The prior's variance along the known vectors' first principal component (general ability, the direction
# that moves nearly every logit together) is widened this many times, so that a new model weaker or
# stronger than every known one is not pulled towards their mean level; the other directions keep the
# known models' spread. What it gained and cost, and the factors tried: DECISIONS.md.
ABILITY_WIDENING = 10.0


if not TYPE_CHECKING:  # (the type checker keeps refusing names that do not exist)

    def __getattr__(name: str) -> object:
        """An old name of this module's constants answers with its new one (`jeirt.renamed`)."""
        raise missing_attribute("jeirt.onboard", name)


def vector_prior(vectors: np.ndarray, covariance: str = "full") -> tuple[np.ndarray, np.ndarray]:
    """Mean (d,) and covariance S (d, d) of the prior on a new model's vector, from known vectors (n, d).

    `covariance` "full": their Ledoit-Wolf covariance (the sample covariance shrunk towards a multiple of I: well
    conditioned with n << d), its first principal component (the general-ability direction) widened
    `ABILITY_WIDENING` times; "isotropic": their mean per-coordinate variance times I.
    """
    from sklearn.covariance import ledoit_wolf

    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) < 2:
        raise ValueError(f"vectors has shape {vectors.shape}; expected (n_models >= 2, d).")
    mean = vectors.mean(axis=0)
    if covariance == "full":
        cov, _ = ledoit_wolf(vectors)
        values, axes = np.linalg.eigh(cov)
        cov = cov + (ABILITY_WIDENING - 1.0) * values[-1] * np.outer(axes[:, -1], axes[:, -1])
    elif covariance == "isotropic":
        cov = vectors.var(axis=0, ddof=1).mean() * np.eye(vectors.shape[1])
    else:
        raise ValueError(f"covariance={covariance!r}; expected 'full' or 'isotropic'.")
    return mean, cov


def whitened(
    directions: np.ndarray, norms: np.ndarray, mean: np.ndarray, cov: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The questions in the prior's whitened coordinates z (v = mu + L z, L L^T = S, prior N(0, c I)):
    features f_q = L^T u_q (n_items, d), offsets o_q = r_q - u_q . mu (n_items,), so that the logit
    u_q . v - r_q is f_q . z - o_q; and L."""
    factor = np.linalg.cholesky(np.asarray(cov, dtype=np.float64))
    directions = np.asarray(directions, dtype=np.float64)
    return directions @ factor, np.asarray(norms, dtype=np.float64) - directions @ mean, factor


def fit_new_vectors(
    directions: np.ndarray,
    norms: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray,
    mean: np.ndarray,
    cov: np.ndarray,
    prior_widths: Sequence[float] = PRIOR_WIDTH_GRID,
    val_mask: np.ndarray | None = None,
    covariances: bool = False,
    device: str | None = None,
) -> OnboardResult:
    """New models' vectors (n_new, d) under the prior N(mean, c cov) from their answers under `mask`:
    the posterior `JEIRT.onboard` and `jeirt.tasks.evaluation.QuestionBank.posterior` share.

    The prior width c is each model's own most evident of `prior_widths` (select="each": a model's
    vector does not depend on the others fitted with it), or, with `val_mask` (n_new, n_items: answers
    held out of the fit, on questions the network did not train on), the one of `prior_widths` whose fit
    predicts those answers with the least log loss summed over the models (one c for all); under
    `MIN_VALIDATION_ANSWERS` of them, the evidence's choice among `PRIOR_WIDTH_GRID`, with a warning.
    Returned in model space: vectors, covariances L Sigma_z L^T (with `covariances`), each model's width
    in `prior_widths`.
    """
    labels, mask = np.atleast_2d(labels), np.atleast_2d(np.asarray(mask, dtype=bool))
    if val_mask is not None and 0 < np.count_nonzero(val_mask) < MIN_VALIDATION_ANSWERS:
        warnings.warn(
            f"only {np.count_nonzero(val_mask)} validation answer(s), fewer than {MIN_VALIDATION_ANSWERS}: too "
            f"few to choose the prior's width among {len(prior_widths)}; each model's most evident of "
            f"{PRIOR_WIDTH_GRID} is used instead. Hold out more answers to choose it on them.",
            UserWarning,
            stacklevel=3,
        )
        val_mask, prior_widths = None, PRIOR_WIDTH_GRID
    features, offsets, factor = whitened(directions, norms, mean, cov)
    z_mean = np.zeros(features.shape[1])  # the prior mean in whitened coordinates
    if val_mask is None:
        fit = fit_model_vectors(
            features,
            offsets,
            labels,
            mask,
            z_mean,
            list(prior_widths),
            device=device,
            covariances=covariances,
            select="each",
        )
        if fit.prior_widths is None:  # one width: every model's
            fit.prior_widths = np.full(len(labels), fit.prior_width)
    else:
        fit = _fit_on_validation(features, offsets, labels, mask, val_mask, prior_widths, covariances, device)
    fit.vectors = (mean + fit.vectors.astype(np.float64) @ factor.T).astype(np.float32)
    if fit.covariances is not None:
        fit.covariances = factor @ fit.covariances @ factor.T
    fit.width_vectors = {}
    return fit


def _fit_on_validation(
    features: np.ndarray,
    offsets: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray,
    val_mask: np.ndarray,
    prior_widths: Sequence[float],
    covariances: bool,
    device: str | None,
) -> OnboardResult:
    """`fit_new_vectors` with validation answers, in whitened coordinates: every width solved, the one
    whose vectors predict the answers under `val_mask` with the least summed log loss kept for all."""
    val_mask = np.atleast_2d(np.asarray(val_mask, dtype=bool))
    if val_mask.shape != labels.shape or (val_mask & mask).any() or np.isnan(labels[val_mask]).any():
        raise ValueError(
            f"val_mask (shape {val_mask.shape}) must mark answered questions outside mask, "
            f"shaped like labels {labels.shape}."
        )
    if not val_mask.any():
        raise ValueError("val_mask selects no answer; give the new models' answers held out of the fit.")
    z_mean = np.zeros(features.shape[1])
    fit = fit_model_vectors(
        features, offsets, labels, mask, z_mean, list(prior_widths), device=device, covariances=False, keep_widths=True
    )
    y = labels[val_mask]
    loss = {}
    for width, z in fit.width_vectors.items():
        p = np.clip(1 / (1 + np.exp(-(z @ features.T - offsets)[val_mask])), 1e-7, 1 - 1e-7)
        loss[width] = float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).sum())
    best = min(loss, key=lambda width: loss[width])
    if covariances:
        fit = fit_model_vectors(features, offsets, labels, mask, z_mean, [best], device=device, covariances=True)
    else:
        fit.vectors, fit.prior_width = fit.width_vectors[best].astype(np.float32), best
    fit.prior_widths, fit.evidence = np.full(len(labels), best), {width: -v for width, v in loss.items()}
    return fit


class _Chunk:
    """The questions, labels and masks of a few models: their logits, likelihoods, gradients and data
    Hessians U^T diag(c) U. Methods that take `at` (chunk rows) work on those models only."""

    def __init__(
        self,
        u: torch.Tensor,
        u32: torch.Tensor,
        r: torch.Tensor,
        y: torch.Tensor,
        w: torch.Tensor,
        observed: np.ndarray,
    ):
        self.u, self.u32, self.r, self.w, self.observed = u, u32, r, w, observed
        self.wy = w * y  # the labels of the answered questions, zero elsewhere
        dev = u.device
        self.counts = observed.sum(axis=1)
        # Per model, the questions its Hessian sums over: all of the chunk's (None: no copy of U; those it
        # did not answer have zero curvature) unless gathering its own costs less than the products over
        # the ones it skipped (copying its rows costs about what an eighth to a sixth of the product does).
        self.cols = [
            None if count >= _GATHER_BELOW * observed.shape[1] else torch.as_tensor(np.flatnonzero(row), device=dev)
            for row, count in zip(observed, self.counts)
        ]
        # Models with fewer answers than 2d get their Hessians from one batched float32 product over
        # their own answers, padded to the most any answered (few rows: no block-wise work space needed).
        self.padded_hessians = int(self.counts.max()) < 2 * u.shape[1]
        if self.padded_hessians:  # each model's answered questions, padded to the most any answered
            at = np.zeros((len(observed), int(self.counts.max())), dtype=np.int64)  # (m, n_most)
            valid = np.arange(at.shape[1])[None] < self.counts[:, None]  # (m, n_most)
            at[valid] = np.flatnonzero(observed.ravel()) % observed.shape[1]
            self.padded = torch.as_tensor(at, device=dev)
            self.padded_valid = torch.as_tensor(valid, dtype=torch.float32, device=dev)
            self.padded_u = u32[self.padded]  # (m, n_most, d): all the Hessians at once by bmm
        self._scaled: torch.Tensor | None = None  # work space of the float32 Hessians, made on first use
        self._lower: torch.Tensor | None = None
        self._subset: tuple = (None,)  # (rows, their masks, their masked labels): see `_rows`

    def logits(self, v: torch.Tensor) -> torch.Tensor:
        """u_q . v - r_q for each row of `v` and every question (len(v), n_items)."""
        return torch.addmm(self.r, v, self.u.T, beta=-1)

    def _rows(self, at: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Masks and masked labels of the models `at` (all by default); the last subset asked for is
        kept, as a solve asks for the same one at every step until a model finishes."""
        if at is None:
            return self.w, self.wy
        if self._subset[0] is not at:
            self._subset = (at, self.w[at], self.wy[at])
        return self._subset[1], self._subset[2]

    def nll(self, z: torch.Tensor, at: torch.Tensor | None = None) -> torch.Tensor:
        """Negative log likelihood of each model's answers (len(z),) from its logits: masked BCE,
        summed over terms that are each >= 0 (no cancellation: the line search compares sums)."""
        w, wy = self._rows(at)
        return torch.nn.functional.softplus(z).mul_(w).addcmul_(wy, z, value=-1).sum(dim=1)

    def data_gradient(self, z: torch.Tensor, at: torch.Tensor | None = None) -> torch.Tensor:
        """Gradient of `nll` in the vectors (len(z), d), from their logits z."""
        w, wy = self._rows(at)
        return torch.sigmoid(z).mul_(w).sub_(wy) @ self.u

    def data_hessian(self, curvature: torch.Tensor, models: Sequence[int]) -> torch.Tensor:
        """U^T diag(curvature[i]) U (len(models), d, d) in float64 for the chunk's models `models`
        (curvature: one row each, zero where the model did not answer), each one product over the
        questions model k answered, in float32 (the costly part of a fit; its rounding, ~1e-7 of the
        entries, moves nothing measurable: the gradients, and so the optimum, stay float64)."""
        d = self.u.shape[1]
        if d <= _SMALL_D and len(models) * d * self.u.shape[0] <= _SMALL_CELLS:  # one product for all: no loop
            c = curvature.to(torch.float32)  # (len(models), n_items), zero where a model did not answer
            return ((self.u32.T[None] * c[:, None, :]) @ self.u32).to(torch.float64)
        if self.padded_hessians:  # one batched product over each model's (padded) answers
            at = torch.as_tensor(list(models), dtype=torch.int64, device=self.u.device)
            ck = (
                curvature.gather(1, self.padded[at]).to(torch.float32).mul_(self.padded_valid[at])
            )  # (len(models), n_most)
            uk = self.padded_u[at]
            return torch.bmm(uk.transpose(1, 2) * ck[:, None, :], uk).to(torch.float64)
        out = torch.empty(len(models), d, d, dtype=torch.float64, device=self.u.device)
        for i, k in enumerate(models):
            cols = self.cols[k]
            ck = curvature[i] if cols is None else curvature[i, cols]
            if self.counts[k] < 2 * d:
                uk = self.u32 if cols is None else self.u32[cols]
                out[i] = (uk.T * ck.to(torch.float32)) @ uk
                continue
            # A = diag(sqrt c) U in float32, written into one buffer that every Hessian reuses (a fresh
            # (n, d) array each time measured about 1 ms slower a Hessian: memory not yet touched), then
            # A^T A block row by block row up to the diagonal: the lower triangle, a little over half a
            # full product's work, in matrix products (faster here than BLAS syrk).
            root = ck.to(torch.float32).sqrt_()[:, None]
            if self._scaled is None or self._lower is None:
                self._scaled = torch.empty_like(self.u32)
                self._lower = torch.empty(d, d, dtype=torch.float32, device=self.u.device)
            if cols is None:
                scaled = torch.mul(self.u32, root, out=self._scaled)
            else:
                scaled = torch.index_select(self.u32, 0, cols, out=self._scaled[: len(cols)]).mul_(root)
            for j in range(0, d, _BLOCK):
                torch.mm(
                    scaled[:, j : j + _BLOCK].T, scaled[:, : j + _BLOCK], out=self._lower[j : j + _BLOCK, : j + _BLOCK]
                )
            lower = self._lower.tril()
            out[i] = lower + lower.tril(-1).T
        return out

    def hessian_from_logits(self, z: torch.Tensor, at: torch.Tensor | None = None) -> torch.Tensor:
        """Data Hessians (len(z), d, d) of the models `at` (all by default) at the vectors whose
        logits are `z`."""
        p = torch.sigmoid(z)
        w, _ = self._rows(at)
        return self.data_hessian(w * p * (1 - p), range(len(z)) if at is None else at.tolist())

    def hessian_at_prior_mean(self, z: torch.Tensor) -> torch.Tensor:
        """Data Hessians (m, d, d) at v = mu, whose logits `z` (n_items,) all models share: the same
        for models that answered the same questions, so each distinct set of questions costs one
        product."""
        p = torch.sigmoid(z)
        groups: dict[bytes, int] = {}
        inverse = [groups.setdefault(np.packbits(row).tobytes(), k) for k, row in enumerate(self.observed)]
        first = list(dict.fromkeys(inverse))
        distinct = self.data_hessian(self.w[first] * (p * (1 - p))[None], first)
        return distinct[torch.as_tensor([first.index(k) for k in inverse], device=distinct.device)]


def _cholesky_solve(factor: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """(L L^T)^-1 rhs (m, d) for lower Cholesky factors L (m, d, d): two triangular solves, which
    cost less than `torch.cholesky_solve` (it copies the factors first)."""
    half = torch.linalg.solve_triangular(factor, rhs.unsqueeze(-1), upper=False)
    return torch.linalg.solve_triangular(factor.mT, half, upper=True).squeeze(-1)


def _two_loop(
    grad: torch.Tensor, factor: torch.Tensor, s: torch.Tensor, y: torch.Tensor, rho: torch.Tensor
) -> torch.Tensor:
    """Quasi-Newton step (m, d): the chord matrix, given by its Cholesky factor `factor` (m, d, d), with
    the BFGS corrections of the pairs s, y (m, k, d), oldest first; rho (m, k) = 1 / (s . y), 0 for an
    empty or unusable pair (which then does nothing). L-BFGS's two-loop recursion, batched over models."""
    q, alpha = grad.clone(), []
    for i in reversed(range(s.shape[1])):
        a = rho[:, i] * (s[:, i] * q).sum(dim=1)
        q -= a[:, None] * y[:, i]
        alpha.append(a)
    step = _cholesky_solve(factor, q)
    for i, a in zip(range(s.shape[1]), reversed(alpha)):
        b = rho[:, i] * (y[:, i] * step).sum(dim=1)
        step += (a - b)[:, None] * s[:, i]
    return step


def _damped_step(
    chunk: _Chunk,
    at: torch.Tensor,
    v: torch.Tensor,
    step: torch.Tensor,
    objective: torch.Tensor,
    mu: torch.Tensor,
    precision: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """`v - step` for the chunk rows `at`, the step halved for any model whose posterior got worse
    (Newton can overshoot; after 20 halvings the last, tiny, step is taken): the new vectors, their
    logits and objective, and each step's largest coordinate."""
    scale = torch.ones(len(at), 1, dtype=v.dtype, device=v.device)
    for _ in range(20):
        trial = v - scale * step
        z_trial = chunk.logits(trial)
        after = chunk.nll(z_trial, at) + 0.5 * precision * ((trial - mu) ** 2).sum(dim=1)
        worse = after > objective + 1e-12
        if not worse.any():
            break
        scale[worse] *= 0.5
    else:
        trial = v - scale * step
        z_trial = chunk.logits(trial)
        after = chunk.nll(z_trial, at) + 0.5 * precision * ((trial - mu) ** 2).sum(dim=1)
    return trial, z_trial, after, (scale * step).abs().amax(dim=1)


def _bfgs_pairs(
    pairs: torch.Tensor, rho: torch.Tensor, s_k: torch.Tensor, y_k: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The (s, y) pairs and their 1 / s.y with this step's appended, the oldest dropped past `_MEMORY`.
    s . y > 0 on this strictly convex objective, but a pair too small to trust (rounding) is kept inert
    (rho = 0)."""
    sy = (s_k * y_k).sum(dim=1)
    usable = sy > 1e-10 * s_k.norm(dim=1) * y_k.norm(dim=1)
    first = max(0, pairs.shape[2] - (_MEMORY - 1))  # the oldest pair kept
    pairs = torch.cat([pairs[:, :, first:], torch.stack([s_k, y_k])[:, :, None]], dim=2)
    rho = torch.cat([rho[:, first:], torch.where(usable, 1.0 / sy.clamp_min(1e-300), 0.0)[:, None]], dim=1)
    return pairs, rho


# `_solve_width` takes damped quasi-Newton steps: the chord matrix data Hessian + precision I corrected by
# BFGS updates from the gradients seen since (a step costs two passes over the questions, a Hessian about
# thirty); a model whose step is not at most half its previous one gets an exact Hessian at its current
# vector instead (and its corrections are dropped). Even a Hessian over a few hundred answers costs
# several Cholesky factors (2 n d^2 against d^3 / 3 flops), so every chunk takes these steps (against
# plain Newton: DECISIONS.md). A model stops when its next step would move no coordinate by `tol` (that
# step is not taken), or when its last, damped, step moved none by that much; the models still moving
# carry on alone, so a chunk costs the steps each model needs, not the slowest one's for all. A model
# whose last Hessian was computed where it stopped needs no other for its evidence.
def _solve_width(
    chunk: _Chunk,
    v: torch.Tensor,
    z: torch.Tensor,
    data_grad: torch.Tensor,
    data_hess: torch.Tensor,
    mu: torch.Tensor,
    precision: float,
    max_iter: int,
    tol: float,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """MAP vectors at one prior precision from the start `v` (m, d), with its logits `z`, data gradients
    `data_grad` and exact data Hessians `data_hess` there (all four overwritten with the optimum's), by
    damped quasi-Newton steps (the comment above says how). Returns the objective (negative log
    posterior, m) at the optimum, the Cholesky factors of its Hessians there (data Hessian + precision I,
    m x d x d: the evidence's) and the steps run."""
    m, d = v.shape
    eye = precision * torch.eye(d, dtype=torch.float64, device=v.device)
    objective_out = torch.empty(m, dtype=torch.float64, device=v.device)
    factor_out = torch.linalg.cholesky(data_hess + eye)
    exact_out = torch.ones(m, dtype=torch.bool, device=v.device)  # data_hess is the Hessian at the row's vector
    at = torch.arange(m, device=v.device)  # chunk rows of the models still moving; their state below
    vk, zk, gk, factor, exact = v, z, data_grad, factor_out, exact_out
    objective = chunk.nll(zk) + 0.5 * precision * ((vk - mu) ** 2).sum(dim=1)
    grad = gk + precision * (vk - mu)
    previous = torch.full((m,), torch.inf, dtype=torch.float64, device=v.device)  # each model's last step
    pairs = torch.zeros(2, m, 0, d, dtype=torch.float64, device=v.device)  # (s, y) of the last steps, up to _MEMORY
    rho = torch.zeros(m, 0, dtype=torch.float64, device=v.device)
    steps = 0
    for steps in range(1, max_iter + 1):  # noqa: B007 (read after the loop)
        step = _two_loop(grad, factor, pairs[0], pairs[1], rho)
        done = (step.abs().amax(dim=1) < tol) | (previous < tol)
        if done.all():
            break
        if done.any():  # these models are at their optimum: write them out, carry on with the others
            rows = at[done]
            v[rows], z[rows], data_grad[rows], objective_out[rows] = vk[done], zk[done], gk[done], objective[done]
            factor_out[rows], exact_out[rows] = factor[done], exact[done]
            keep = torch.nonzero(~done).flatten()
            at, vk, zk, gk, objective, grad, step, previous, factor, exact, rho = (
                x[keep] for x in (at, vk, zk, gk, objective, grad, step, previous, factor, exact, rho)
            )
            pairs = pairs[:, keep]
        trial, z_trial, after, size = _damped_step(chunk, at, vk, step, objective, mu, precision)
        g_trial = chunk.data_gradient(z_trial, at)
        new_grad = g_trial + precision * (trial - mu)
        pairs, rho = _bfgs_pairs(pairs, rho, trial - vk, new_grad - grad)
        vk, zk, gk, objective, grad = trial, z_trial, g_trial, after, new_grad  # the next step starts here
        exact = torch.zeros_like(exact)  # every model moved
        slow = torch.nonzero((size > 0.5 * previous) & (size >= tol)).flatten()
        _exact_again(chunk, slow, at, zk, data_hess, factor, exact, pairs, rho, size, eye)
        previous = size
    # The models still here (all done, or max_iter reached); then the Hessians at the optimum not yet known.
    outs = (v, z, data_grad, objective_out, factor_out, exact_out)
    for out, state in zip(outs, (vk, zk, gk, objective, factor, exact)):
        if state is not out:  # (the same tensor while no model has finished, or moved)
            out[at] = state
    _refresh_stale(chunk, z, data_hess, factor_out, exact_out, eye)
    return objective_out, factor_out, steps


def _exact_again(
    chunk: _Chunk,
    slow: torch.Tensor,
    at: torch.Tensor,
    zk: torch.Tensor,
    data_hess: torch.Tensor,
    factor: torch.Tensor,
    exact: torch.Tensor,
    pairs: torch.Tensor,
    rho: torch.Tensor,
    size: torch.Tensor,
    eye: torch.Tensor,
) -> None:
    """A stale Hessian: for the `slow` models (rows of the moving ones), an exact Hessian at their
    logits `zk` and its factor, their BFGS corrections dropped, and their last step forgotten (inf), so
    that they take exact Newton steps again. Every tensor but `slow`, `at`, `zk` and `eye` in place."""
    if len(slow):
        data_hess[at[slow]] = chunk.hessian_from_logits(zk[slow], at[slow])
        factor[slow], exact[slow] = torch.linalg.cholesky(data_hess[at[slow]] + eye), True
        pairs[:, slow], rho[slow] = 0.0, 0.0
        size[slow] = torch.inf


def _refresh_stale(
    chunk: _Chunk,
    z: torch.Tensor,
    data_hess: torch.Tensor,
    factor: torch.Tensor,
    exact: torch.Tensor,
    eye: torch.Tensor,
) -> None:
    """The exact data Hessians, and the Cholesky factors of data Hessian + `eye`, of the models whose
    last Hessian was not computed where they stopped (`exact` False), written in place."""
    stale = torch.nonzero(~exact).flatten()
    if len(stale):
        data_hess[stale] = chunk.hessian_from_logits(z[stale], stale)
        factor[stale] = torch.linalg.cholesky(data_hess[stale] + eye)


def fit_model_vectors(
    directions: np.ndarray,
    norms: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray,
    prior_mean: np.ndarray,
    prior_widths: float | Sequence[float],
    max_iter: int = 50,
    tol: float = 1e-6,
    chunk: int = 64,
    device: str | None = None,
    covariances: bool = True,
    select: str = "summed",
    keep_widths: bool = False,
) -> OnboardResult:
    """MAP vectors for each row of `labels` (n_new, n_items) from the entries under `mask`.

    directions: (n_items, d) unit question directions; norms: (n_items,). `prior_widths` is one
    width, or several: then each is solved (narrowest first, warm-started) and the one with the largest
    evidence summed over the new models is kept (empirical Bayes; select="each": each model's own
    largest, as if fitted alone, in `prior_widths`); only its fit is returned (with `keep_widths`,
    every width's vectors too, in `width_vectors`), and the covariances (float64) only when
    `covariances`. Rows are solved `chunk` models at a time.
    """
    labels, mask, widths = _check_fit_inputs(directions, labels, mask, prior_widths, select, max_iter, chunk)
    questions = _Questions(directions, norms, labels, mask, device)
    each = select == "each" and len(widths) > 1
    sweep = _sweep_widths(questions, prior_mean, widths, max_iter, tol, chunk, covariances, each)
    totals = sweep.evidence.sum(axis=1)
    summed = {float(s): float(t) for s, t in zip(widths, totals)}
    kept = {float(s): sweep.vectors[j] for j, s in enumerate(widths)} if keep_widths else {}
    if each:  # each model's own width, its covariance kept as the widths went
        own, at = np.argmax(sweep.evidence, axis=0), np.arange(len(labels))
        vectors, evidence = sweep.vectors[own, at], sweep.evidence[own, at]
        return OnboardResult(
            vectors.astype(np.float32), sweep.covariances, sweep.iters, evidence, np.nan, summed, widths[own], kept
        )
    best = int(np.argmax(totals))  # the first of equal ones, in the order given
    cov = sweep.covariances
    if covariances and cov is None:  # recompute at the chosen width only: memory does not grow with the widths
        cov = _covariances_at(questions, sweep.vectors[best], float(widths[best]), chunk)
    return OnboardResult(
        sweep.vectors[best].astype(np.float32),
        cov,
        sweep.iters,
        sweep.evidence[best],
        float(widths[best]),
        summed,
        None,
        kept,
    )


def _check_fit_inputs(
    directions: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray,
    prior_widths: float | Sequence[float],
    select: str,
    max_iter: int,
    chunk: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`fit_model_vectors`'s inputs checked: labels and mask (n_new, n_items), the widths (positive,
    finite) as an array."""
    if select not in ("summed", "each"):
        raise ValueError(f"select={select!r}; expected 'summed' or 'each'.")
    labels = np.atleast_2d(labels)
    mask = np.atleast_2d(mask).astype(bool)
    if labels.shape != mask.shape or labels.shape[1] != len(directions):
        raise ValueError(
            f"labels {labels.shape} and mask {mask.shape} must both be (n_new, n_items) with "
            f"n_items = {len(directions)}."
        )
    widths = np.atleast_1d(np.asarray(prior_widths, dtype=np.float64))
    if widths.ndim != 1 or not len(widths) or not (widths > 0).all():  # also refuses NaN
        raise ValueError(f"prior_widths={prior_widths}; expected a positive number or a list of them.")
    if not np.isfinite(widths).all():
        raise ValueError(f"prior_widths={prior_widths}; expected finite widths.")
    if np.isnan(labels[mask]).any():
        raise ValueError("the mask selects unobserved (NaN) labels; remove them from the mask.")
    if max_iter < 1 or chunk < 1:
        raise ValueError(f"max_iter={max_iter}, chunk={chunk}; expected positive integers.")
    return labels, mask, widths


class _Questions:
    """The questions (float64 tensors on one device, and a float32 copy of the directions) and the new
    models' answers; `chunk(rows)` cuts out the models of `rows`."""

    def __init__(self, directions: np.ndarray, norms: np.ndarray, labels: np.ndarray, mask: np.ndarray, device):
        self.device = torch.device(device) if device else settings.default_device()
        self.u, self.r = self.tensor(directions), self.tensor(norms)
        self.u32 = self.u.to(torch.float32)
        self.labels, self.mask = labels, mask

    def tensor(self, a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.asarray(a), dtype=torch.float64, device=self.device)

    def chunk(self, rows: slice) -> _Chunk:
        """The models of `rows` on the questions any of them answered (the rest weigh nothing)."""
        observed = self.mask[rows]
        cols = np.flatnonzero(observed.any(axis=0))
        labels = np.nan_to_num(self.labels[rows])
        if len(cols) == observed.shape[1]:
            return _Chunk(self.u, self.u32, self.r, self.tensor(labels), self.tensor(observed), observed)
        at = torch.as_tensor(cols, device=self.device)
        return _Chunk(
            self.u[at],
            self.u32[at],
            self.r[at],
            self.tensor(labels[:, cols]),
            self.tensor(observed[:, cols]),
            observed[:, cols],
        )


@dataclass
class _Sweep:
    """Every width's MAP vectors (n_widths, n_new, d) and log evidence (n_widths, n_new), the most
    Newton steps a chunk took, and the covariances kept on the way (see `_sweep_widths`), or None."""

    vectors: np.ndarray
    evidence: np.ndarray
    iters: int
    covariances: np.ndarray | None


def _sweep_widths(
    questions: _Questions,
    prior_mean: np.ndarray,
    widths: np.ndarray,
    max_iter: int,
    tol: float,
    chunk: int,
    covariances: bool,
    each: bool,
) -> _Sweep:
    """Solve every width for every model, `chunk` models at a time, narrowest width first, each
    warm-started at the previous one's optimum. With `covariances`, the covariances kept are those of
    the only width, or with `each`, of each model's own best width so far (the inverse of its Hessian,
    whose Cholesky factor the solve returns); else none (the caller recomputes them at one width)."""
    mu = questions.tensor(prior_mean)
    n_new, d = len(questions.labels), questions.u.shape[1]
    order = np.argsort(widths, kind="stable")  # narrowest first: each warm-starts the next
    vectors = np.empty((len(widths), n_new, d))  # small; the d x d matrices are never kept per width
    evidence = np.empty((len(widths), n_new))
    single_cov: list[np.ndarray] | None = [] if covariances and len(widths) == 1 else None
    own_cov: list[np.ndarray] | None = [] if covariances and each else None
    iters = 0
    for start in range(0, n_new, chunk):
        rows = slice(start, start + chunk)
        part = questions.chunk(rows)
        # Start at the prior mean; each width starts at the previous one's optimum, with its logits, data
        # gradients and data Hessians (the chord matrix), none of which depends on the width.
        z_mean = part.logits(mu[None])  # (1, n_items): the same for every model at v = mu
        data_hess = part.hessian_at_prior_mean(z_mean[0])
        v, z = mu.expand(len(data_hess), d).clone(), z_mean.expand(len(data_hess), -1).clone()
        data_grad = part.data_gradient(z)
        steps, own = 0, _OwnBest()
        for j in order:
            precision = 1.0 / widths[j]
            objective, factor, n = _solve_width(part, v, z, data_grad, data_hess, mu, precision, max_iter, tol)
            steps += n
            # H is positive definite: its log determinant from its Cholesky factor (half an LU's work).
            logdet = 2 * torch.diagonal(factor, dim1=-2, dim2=-1).log().sum(dim=-1)
            # log p(y) ~ log p(y | v) + log N(v; mu, I / precision) + (d/2) log 2 pi - (1/2) log det H
            evidence[j, rows] = (-objective + 0.5 * d * np.log(precision) - 0.5 * logdet).cpu().numpy()
            vectors[j, rows] = v.cpu().numpy()
            if single_cov is not None:
                single_cov.append(torch.cholesky_inverse(factor).cpu().numpy())
            if own_cov is not None:
                own.update(int(j), evidence[j, rows], factor)
        if own_cov is not None:
            own_cov.append(own.covariances())
        iters = max(iters, steps)
    kept = single_cov if single_cov is not None else own_cov
    return _Sweep(vectors, evidence, iters, None if kept is None else np.concatenate(kept))


class _OwnBest:
    """Each model's best width so far in a chunk, the one `np.argmax` over the widths picks (the largest
    evidence, the first of equal ones), with its Hessian's Cholesky factor."""

    def __init__(self) -> None:
        self.width = np.empty(0, dtype=np.int64)  # (m,) index of the width
        self.evidence = np.empty(0)  # (m,) its log evidence
        self.factor: torch.Tensor | None = None  # (m, d, d)

    def update(self, j: int, evidence: np.ndarray, factor: torch.Tensor) -> None:
        if self.factor is None:
            self.width, self.evidence, self.factor = np.full(len(factor), j), evidence.copy(), factor.clone()
            return
        better = (evidence > self.evidence) | ((evidence == self.evidence) & (j < self.width))
        self.width[better], self.evidence[better] = j, evidence[better]
        self.factor[torch.as_tensor(better)] = factor[torch.as_tensor(better)]

    def covariances(self) -> np.ndarray:
        """The inverses of the kept Hessians (m, d, d)."""
        assert self.factor is not None, "no width solved yet"
        return torch.cholesky_inverse(self.factor).cpu().numpy()


def _covariances_at(questions: _Questions, vectors: np.ndarray, width: float, chunk: int) -> np.ndarray:
    """Laplace covariances (n_new, d, d) at `vectors` under the prior width `width`: the inverse
    Hessian, `chunk` models at a time."""
    precision = 1.0 / width
    d = vectors.shape[1]
    parts = []
    for start in range(0, len(vectors), chunk):
        rows = slice(start, start + chunk)
        part = questions.chunk(rows)
        eye = torch.eye(d, dtype=torch.float64, device=questions.device)
        hess = part.hessian_from_logits(part.logits(questions.tensor(vectors[rows]))) + precision * eye
        parts.append(torch.linalg.inv(hess).cpu().numpy())
    return np.concatenate(parts)
