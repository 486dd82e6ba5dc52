"""Onboarding: fit new LLMs' vectors with every other parameter frozen (Section 3.3, Appendix D).

With the adapter frozen, each question is a fixed unit direction u_q and norm r_q, and Eq. (3) for a
new model m is a logistic regression in its vector v_m (d parameters) with offset -r_q:

    P(m answers q) = sigmoid(u_q . v_m - r_q).

We solve it exactly, for many models at once, with a Gaussian prior N(mu, s^2 I) on v_m (maximum a
posteriori). The prior centres an unknown model on the average known one and keeps a model seen on a
handful of questions sensible; with many answers it hardly matters. The inverse Hessian at the optimum
is the posterior covariance (Laplace approximation), and its determinant gives each width's evidence.

How the solve is kept at the cost of its arithmetic: the data part of a Hessian, U^T diag(c) U over the
questions a model answered, is one float32 matrix product (the solve, gradients and determinants stay in
float64, its log determinant from the Cholesky factor); Newton steps reuse a Hessian while they keep
converging fast (a chord method: same optimum, cheap steps), with BFGS corrections from the gradients
seen since (two passes over the questions a step, where a Hessian costs about thirty), and recompute
it only when they slow down; several prior widths are solved from the narrowest to the widest, each
warm-started at the previous optimum with its Hessian; models that answered the same questions share
the Hessian at the prior mean; all models of a chunk take each step together (one matrix product for
their logits, one for their gradients). So a width costs one Hessian per model, the one its evidence
needs anyway, and a few cheap steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from scipy.linalg import blas

from jeirt import settings


@dataclass
class OnboardResult:
    vectors: np.ndarray  # (n_new, d) MAP model vectors (float32) at the chosen prior width
    covariances: np.ndarray | None  # (n_new, d, d) Laplace posterior covariances; None unless asked for
    iterations: int  # solver steps run (all widths; the most of any chunk of models)
    log_evidence: np.ndarray  # (n_new,) Laplace approximation of each model's log marginal likelihood
    prior_variance: float = np.nan  # the prior width used (the best by summed evidence when several)
    evidence: dict[float, float] = field(default_factory=dict)  # summed log evidence of each width tried
    prior_variances: np.ndarray | None = None  # (n_new,) each model's own width, with select="each"


PRIOR_SCALES = (1.0, 10.0, 100.0, 1000.0, 10000.0)  # prior widths (x the known vectors' variance) "auto" tries
_MEMORY = 8  # BFGS pairs a model's quasi-Newton steps keep (a width rarely needs more steps than this)


def prior_from_vectors(vectors: np.ndarray) -> tuple[np.ndarray, float]:
    """Empirical-Bayes prior from known model vectors: their mean and mean per-coordinate variance."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if len(vectors) < 2:
        raise ValueError("a prior needs at least two known model vectors.")
    return vectors.mean(axis=0), float(vectors.var(axis=0, ddof=1).mean())


def _objective(z, v, y, w, mu, precision):
    """Negative log posterior per model from its logits z = v u^T - r: masked BCE plus the prior. (m,)"""
    nll = (torch.nn.functional.softplus(z) - y * z) * w
    return nll.sum(dim=1) + 0.5 * precision * ((v - mu) ** 2).sum(dim=1)


class _Chunk:
    """The questions, labels and masks of a few models, and their data Hessians U^T diag(c) U."""

    def __init__(self, u: torch.Tensor, u32: torch.Tensor, r: torch.Tensor, y: torch.Tensor, w: torch.Tensor,
                 observed: np.ndarray):
        self.u, self.u32, self.r, self.y, self.w, self.observed = u, u32, r, y, w, observed
        dev = u.device
        # Per model, the questions it answered (None: all of them, no copy of U needed).
        self.cols = [None if row.all() else torch.as_tensor(np.flatnonzero(row), device=dev) for row in observed]
        # A Hessian over fewer answers than 2d costs about what its Cholesky factor does: then every
        # step gets a fresh one (plain Newton, fewest steps); else steps reuse it while they converge.
        counts = observed.sum(axis=1)
        self.cheap_hessians = int(counts.max()) < 2 * u.shape[1]
        if self.cheap_hessians:  # each model's answered questions, padded to the most any answered
            at = np.zeros((len(observed), int(counts.max())), dtype=np.int64)  # (m, n_most)
            valid = np.arange(at.shape[1])[None] < counts[:, None]  # (m, n_most)
            at[valid] = np.flatnonzero(observed.ravel()) % observed.shape[1]
            self.padded = torch.as_tensor(at, device=dev)
            self.padded_valid = torch.as_tensor(valid, dtype=u.dtype, device=dev)
            self.padded_u = u[self.padded]  # (m, n_most, d) float64: all the Hessians at once by bmm

    def logits(self, v: torch.Tensor) -> torch.Tensor:
        """u_q . v - r_q for every model and question (m, n_items)."""
        return torch.addmm(self.r, v, self.u.T, beta=-1)

    def gradient(self, z: torch.Tensor, v: torch.Tensor, mu: torch.Tensor, precision: float) -> torch.Tensor:
        """Gradient of the negative log posterior (m, d) at the vectors `v` whose logits are `z`."""
        return torch.addmm(precision * (v - mu), (torch.sigmoid(z) - self.y) * self.w, self.u)

    def data_hessian(self, curvature: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        """U^T diag(curvature[k]) U (len(rows), d, d) in float64, each one product over the questions
        model k answered: in float32 when they are many (the costly case; its rounding, ~1e-7 of the
        entries, moves nothing measurable), in float64 when they are fewer than 2d (cheap, and the
        prior then carries more of the curvature)."""
        d = self.u.shape[1]
        if self.cheap_hessians:  # one batched product over each model's (padded) answers, float64
            at = torch.as_tensor(list(rows), dtype=torch.int64, device=self.u.device)
            ck = curvature[at].gather(1, self.padded[at]) * self.padded_valid[at]  # (len(rows), n_most)
            uk = self.padded_u[at]
            return torch.bmm(uk.transpose(1, 2) * ck[:, None, :], uk)
        out = torch.empty(len(rows), d, d, dtype=torch.float64, device=self.u.device)
        for i, k in enumerate(rows):
            cols = self.cols[k]
            ck = curvature[k] if cols is None else curvature[k, cols]
            if len(ck) < 2 * d:
                uk = self.u if cols is None else self.u[cols]
                out[i] = (uk.T * ck) @ uk
                continue
            uk = self.u32 if cols is None else self.u32[cols]
            ck = ck.to(torch.float32)
            if uk.device.type == "cpu":  # BLAS syrk: one triangle of A^T A, half a general product's work
                # sqrt(c_q) u_q: in place when `uk` is already a gathered copy (one pass less).
                a = (uk * ck.sqrt()[:, None] if cols is None else uk.mul_(ck.sqrt()[:, None])).numpy()
                upper = torch.from_numpy(blas.ssyrk(1.0, a.T, trans=0)).to(torch.float64)
                out[i] = upper.triu() + upper.triu(1).T
            else:
                out[i] = ((uk.T * ck) @ uk).to(torch.float64)
        return out

    def hessian_from_logits(self, z: torch.Tensor, rows: Sequence[int] | None = None) -> torch.Tensor:
        """Data Hessians at the vectors whose logits are `z` (m, n_items), for `rows` (default all)."""
        p = torch.sigmoid(z)
        return self.data_hessian(self.w * p * (1 - p), range(len(z)) if rows is None else rows)

    def hessian_at_prior_mean(self, mu: torch.Tensor, observed: np.ndarray) -> torch.Tensor:
        """Data Hessians at v = mu: the same for models that answered the same questions, so each
        distinct set of questions costs one product."""
        p = torch.sigmoid(self.u @ mu - self.r)
        curvature = (self.w * (p * (1 - p))[None]).expand_as(self.w)
        groups: dict[bytes, int] = {}
        inverse = [groups.setdefault(np.packbits(row).tobytes(), k) for k, row in enumerate(observed)]
        first = list(dict.fromkeys(inverse))
        distinct = self.data_hessian(curvature, first)
        return distinct[torch.as_tensor([first.index(k) for k in inverse], device=distinct.device)]


def _two_loop(grad: torch.Tensor, inverse: torch.Tensor, s: torch.Tensor, y: torch.Tensor,
              rho: torch.Tensor) -> torch.Tensor:
    """Quasi-Newton step (m, d): the inverse chord matrix `inverse` (m, d, d) with the BFGS corrections
    of the pairs s, y (m, k, d), oldest first; rho (m, k) = 1 / (s . y), 0 for an empty or unusable
    pair (which then does nothing). L-BFGS's two-loop recursion, batched over models."""
    q, alpha = grad.clone(), []
    for i in reversed(range(s.shape[1])):
        a = rho[:, i] * (s[:, i] * q).sum(dim=1)
        q -= a[:, None] * y[:, i]
        alpha.append(a)
    step = torch.bmm(inverse, q.unsqueeze(-1)).squeeze(-1)
    for i, a in zip(range(s.shape[1]), reversed(alpha)):
        b = rho[:, i] * (y[:, i] * step).sum(dim=1)
        step += (a - b)[:, None] * s[:, i]
    return step


def _solve_width(chunk: _Chunk, v: torch.Tensor, data_hess: torch.Tensor, mu: torch.Tensor, precision: float,
                 max_iter: int, tol: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """MAP vectors at one prior precision from the start `v`, with `data_hess` a data Hessian near it.

    Damped quasi-Newton steps: the chord matrix `data_hess` + precision I (inverted once, from its
    Cholesky factor: a step is then a matrix-vector product) corrected by BFGS updates from the
    gradients seen since (a step costs two passes over the questions, a Hessian about thirty); a
    model whose step is not at most half its previous one gets an exact Hessian at its current vector
    instead (and its corrections are dropped). When Hessians are cheap (`chunk.cheap_hessians`), every
    step is an exact Newton step with a fresh one. Returns the vectors, the exact data Hessian there
    (the evidence needs it; the next width starts from it), the objective there, and the steps run.
    """
    m, d = v.shape
    quasi = not chunk.cheap_hessians
    eye = precision * torch.eye(d, dtype=torch.float64, device=v.device)
    factor = torch.linalg.cholesky(data_hess + eye)
    inverse = torch.cholesky_inverse(factor) if quasi else None
    previous = torch.full((m,), torch.inf, dtype=torch.float64, device=v.device)
    pairs = torch.zeros(2, m, _MEMORY, d, dtype=torch.float64, device=v.device)  # (s, y) of the last steps
    rho = torch.zeros(m, _MEMORY, dtype=torch.float64, device=v.device)
    steps = 0
    z = chunk.logits(v)
    objective = _objective(z, v, chunk.y, chunk.w, mu, precision)
    grad = chunk.gradient(z, v, mu, precision)
    for steps in range(1, max_iter + 1):
        if quasi:
            step = _two_loop(grad, inverse, pairs[0], pairs[1], rho)
        else:
            step = torch.cholesky_solve(grad.unsqueeze(-1), factor).squeeze(-1)
        # Damping: halve the step of any model whose posterior got worse (Newton can overshoot).
        scale = torch.ones(m, 1, dtype=v.dtype, device=v.device)
        for _ in range(20):
            trial = v - scale * step
            z_trial = chunk.logits(trial)
            after = _objective(z_trial, trial, chunk.y, chunk.w, mu, precision)
            worse = after > objective + 1e-12
            if not worse.any():
                break
            scale[worse] *= 0.5
        else:  # still worse after 20 halvings: take the last, tiny, step
            trial = v - scale * step
            z_trial = chunk.logits(trial)
            after = _objective(z_trial, trial, chunk.y, chunk.w, mu, precision)
        size = (scale * step).abs().amax(dim=1)
        if float(size.max()) < tol:
            v, z, objective = trial, z_trial, after
            break
        new_grad = chunk.gradient(z_trial, trial, mu, precision)
        if quasi:
            # BFGS pair of this step (oldest dropped); s . y > 0 on this strictly convex objective, but
            # a pair too small to trust (rounding) is kept inert (rho = 0).
            s_k, y_k = trial - v, new_grad - grad
            sy = (s_k * y_k).sum(dim=1)
            usable = sy > 1e-10 * s_k.norm(dim=1) * y_k.norm(dim=1)
            pairs = torch.cat([pairs[:, :, 1:], torch.stack([s_k, y_k])[:, :, None]], dim=2)
            rho = torch.cat([rho[:, 1:], torch.where(usable, 1.0 / sy.clamp_min(1e-300), 0.0)[:, None]], dim=1)
        v, z, objective, grad = trial, z_trial, after, new_grad  # the accepted point serves the next step
        slow = torch.nonzero(((size > 0.5 * previous) | chunk.cheap_hessians) & (size >= tol)).flatten().tolist()
        if slow:  # a stale Hessian: take exact Newton steps for these models again
            data_hess[slow] = chunk.hessian_from_logits(z, slow)
            factor[slow] = torch.linalg.cholesky(data_hess[slow] + eye)
            if quasi:
                inverse[slow] = torch.cholesky_inverse(factor[slow])
                pairs[:, slow], rho[slow] = 0.0, 0.0
            size[slow] = torch.inf
        previous = size
    return v, chunk.hessian_from_logits(z), objective, steps


def fit_model_vectors(directions: np.ndarray, norms: np.ndarray, labels: np.ndarray, mask: np.ndarray,
                      prior_mean: np.ndarray, prior_variance: float | Sequence[float], max_iter: int = 50,
                      tol: float = 1e-6, chunk: int = 64, device: str | None = None,
                      covariances: bool = True, select: str = "summed") -> OnboardResult:
    """MAP vectors for each row of `labels` (n_new, n_items) from the entries under `mask`.

    directions: (n_items, d) unit question directions; norms: (n_items,). `prior_variance` is one
    width, or several: then each is solved (narrowest first, warm-started) and the one with the largest
    evidence summed over the new models is kept (empirical Bayes; select="each": each model's own
    largest, as if fitted alone, in `prior_variances`); only its fit is returned, and the
    covariances (float64) only when `covariances`. Rows are solved `chunk` models at a time.
    """
    if select not in ("summed", "each"):
        raise ValueError(f"select={select!r}; expected 'summed' or 'each'.")
    labels = np.atleast_2d(labels)
    mask = np.atleast_2d(mask).astype(bool)
    if labels.shape != mask.shape or labels.shape[1] != len(directions):
        raise ValueError(f"labels {labels.shape} and mask {mask.shape} must both be (n_new, n_items) with "
                         f"n_items = {len(directions)}.")
    variances = np.atleast_1d(np.asarray(prior_variance, dtype=np.float64))
    if variances.ndim != 1 or not len(variances) or not (variances > 0).all():  # also refuses NaN
        raise ValueError(f"prior_variance={prior_variance}; expected a positive number or a list of them.")
    if not np.isfinite(variances).all():
        raise ValueError(f"prior_variance={prior_variance}; expected finite widths.")
    if np.isnan(labels[mask]).any():
        raise ValueError("the mask selects unobserved (NaN) labels; remove them from the mask.")
    if max_iter < 1 or chunk < 1:
        raise ValueError(f"max_iter={max_iter}, chunk={chunk}; expected positive integers.")
    dev = torch.device(device) if device else settings.default_device()
    as_t = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float64, device=dev)  # noqa: E731
    u, r, mu = as_t(directions), as_t(norms), as_t(prior_mean)
    u32 = u.to(torch.float32)
    n_new, d = len(labels), u.shape[1]
    order = np.argsort(variances, kind="stable")  # narrowest first: each warm-starts the next
    vectors = np.empty((len(variances), n_new, d))  # small; the d x d matrices are never kept per width
    evidence = np.empty((len(variances), n_new))
    single_cov = [] if covariances and len(variances) == 1 else None
    iters = 0

    def chunk_of(rows: slice) -> _Chunk:
        """The models of `rows` on the questions any of them answered (the rest weigh nothing)."""
        observed = mask[rows]
        cols = np.flatnonzero(observed.any(axis=0))
        if len(cols) == observed.shape[1]:
            return _Chunk(u, u32, r, as_t(np.nan_to_num(labels[rows])), as_t(observed), observed)
        at = torch.as_tensor(cols, device=dev)
        return _Chunk(u[at], u32[at], r[at], as_t(np.nan_to_num(labels[rows][:, cols])), as_t(observed[:, cols]),
                      observed[:, cols])

    for start in range(0, n_new, chunk):
        rows = slice(start, start + chunk)
        part = chunk_of(rows)
        v = mu.expand(part.y.shape[0], d).clone()
        data_hess = part.hessian_at_prior_mean(mu, part.observed)
        steps = 0
        for j in order:
            precision = 1.0 / variances[j]
            v, data_hess, objective, n = _solve_width(part, v, data_hess, mu, precision, max_iter, tol)
            steps += n
            # H is positive definite: its log determinant from its Cholesky factor (half an LU's work).
            factor = torch.linalg.cholesky(data_hess + precision * torch.eye(d, dtype=torch.float64, device=dev))
            logdet = 2 * torch.diagonal(factor, dim1=-2, dim2=-1).log().sum(dim=-1)
            # log p(y) ~ log p(y | v) + log N(v; mu, I / precision) + (d/2) log 2 pi - (1/2) log det H
            evidence[j, rows] = (-objective + 0.5 * d * np.log(precision) - 0.5 * logdet).cpu().numpy()
            vectors[j, rows] = v.cpu().numpy()
            if single_cov is not None:
                single_cov.append(torch.cholesky_inverse(factor).cpu().numpy())
        iters = max(iters, steps)
    totals = evidence.sum(axis=1)
    best = int(np.argmax(totals))  # the first of equal ones, in the order given
    if select == "each" and len(variances) > 1:
        own = np.argmax(evidence, axis=0)  # (n_new,) each model's width
        at = np.arange(n_new)
        cov = None
        if covariances:
            parts = []
            for start in range(0, n_new, chunk):
                rows = slice(start, start + chunk)
                part = chunk_of(rows)
                precision = as_t(1.0 / variances[own[rows]])
                hess = (part.hessian_from_logits(part.logits(as_t(vectors[own[rows], at[rows]])))
                        + precision[:, None, None] * torch.eye(d, dtype=torch.float64, device=dev))
                parts.append(torch.linalg.inv(hess).cpu().numpy())
            cov = np.concatenate(parts)
        return OnboardResult(vectors[own, at].astype(np.float32), cov, iters, evidence[own, at], np.nan,
                             {float(s): float(t) for s, t in zip(variances, totals)}, variances[own])
    cov = None
    if single_cov is not None:
        cov = np.concatenate(single_cov)
    elif covariances:  # recompute at the chosen width only: memory does not grow with the widths tried
        precision = 1.0 / variances[best]
        parts = []
        for start in range(0, n_new, chunk):
            rows = slice(start, start + chunk)
            part = chunk_of(rows)
            hess = (part.hessian_from_logits(part.logits(as_t(vectors[best, rows])))
                    + precision * torch.eye(d, dtype=torch.float64, device=dev))
            parts.append(torch.linalg.inv(hess).cpu().numpy())
        cov = np.concatenate(parts)
    return OnboardResult(vectors[best].astype(np.float32), cov, iters, evidence[best], float(variances[best]),
                         {float(s): float(t) for s, t in zip(variances, totals)})
