"""Onboarding: fit new LLMs' vectors with every other parameter frozen (Section 3.3, Appendix D).

With the adapter frozen, each question is a fixed unit direction u_q and norm r_q, and Eq. (3) for a
new model m is a logistic regression in its vector v_m (d parameters) with offset -r_q:

    P(m answers q) = sigmoid(u_q . v_m - r_q).

We solve it exactly, for many models at once, by damped Newton steps with a Gaussian prior
N(mu, s^2 I) on v_m (maximum a posteriori). The prior centres an unknown model on the average known
one and keeps a model seen on a handful of questions sensible; with many answers it hardly matters.
The inverse Hessian at the optimum is returned as the posterior covariance (Laplace approximation).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from jeirt import settings


@dataclass
class OnboardResult:
    vectors: np.ndarray  # (n_new, d) MAP model vectors
    covariances: np.ndarray  # (n_new, d, d) Laplace posterior covariance of each vector
    iterations: int  # Newton iterations run
    log_evidence: np.ndarray  # (n_new,) Laplace approximation of each model's log marginal likelihood


PRIOR_SCALES = (1.0, 10.0, 100.0, 1000.0, 10000.0)  # prior widths (x the known vectors' variance) "auto" tries


def prior_from_vectors(vectors: np.ndarray) -> tuple[np.ndarray, float]:
    """Empirical-Bayes prior from known model vectors: their mean and mean per-coordinate variance."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if len(vectors) < 2:
        raise ValueError("a prior needs at least two known model vectors.")
    return vectors.mean(axis=0), float(vectors.var(axis=0, ddof=1).mean())


def _objective(v, u, r, y, w, mu, precision):
    """Negative log posterior per model: masked BCE sum plus the Gaussian prior. (n_new,)"""
    z = v @ u.T - r  # (n_new, n_items)
    nll = (torch.nn.functional.softplus(z) - y * z) * w
    return nll.sum(dim=1) + 0.5 * precision * ((v - mu) ** 2).sum(dim=1)


def fit_model_vectors(directions: np.ndarray, norms: np.ndarray, labels: np.ndarray, mask: np.ndarray,
                      prior_mean: np.ndarray, prior_variance: float, max_iter: int = 50,
                      tol: float = 1e-6, chunk: int = 16, device: str | None = None) -> OnboardResult:
    """MAP vectors for each row of `labels` (n_new, n_items) from the entries under `mask`.

    directions: (n_items, d) unit question directions; norms: (n_items,). Rows are solved in chunks
    of `chunk` models, each as one batched Newton iteration on (chunk, d, d) Hessians.
    """
    labels = np.atleast_2d(labels)
    mask = np.atleast_2d(mask).astype(bool)
    if labels.shape != mask.shape or labels.shape[1] != len(directions):
        raise ValueError(f"labels {labels.shape} and mask {mask.shape} must both be (n_new, n_items) with "
                         f"n_items = {len(directions)}.")
    if not prior_variance > 0:  # also refuses NaN
        raise ValueError(f"prior_variance={prior_variance}; expected a positive number.")
    if np.isnan(labels[mask]).any():
        raise ValueError("the mask selects unobserved (NaN) labels; remove them from the mask.")
    dev = torch.device(device) if device else settings.default_device()
    as_t = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float64, device=dev)  # noqa: E731
    u, r = as_t(directions), as_t(norms)
    mu, precision = as_t(prior_mean), 1.0 / prior_variance
    d = u.shape[1]
    eye = torch.eye(d, dtype=torch.float64, device=dev)
    vectors, covariances, evidence, iters = [], [], [], 0
    for start in range(0, len(labels), chunk):
        y = as_t(np.nan_to_num(labels[start:start + chunk]))
        w = as_t(mask[start:start + chunk])
        v = mu.expand(len(y), d).clone()
        for it in range(max_iter):
            p = torch.sigmoid(v @ u.T - r)  # (m, n_items)
            grad = ((p - y) * w) @ u + precision * (v - mu)  # (m, d)
            curv = w * p * (1 - p)  # (m, n_items)
            hess = torch.einsum("mn,nd,ne->mde", curv, u, u) + precision * eye  # (m, d, d)
            step = torch.linalg.solve(hess, grad.unsqueeze(-1)).squeeze(-1)  # (m, d)
            # Damping: halve the step of any model whose posterior got worse (Newton can overshoot).
            before, scale = _objective(v, u, r, y, w, mu, precision), torch.ones(len(y), 1, dtype=v.dtype, device=dev)
            for _ in range(20):
                worse = _objective(v - scale * step, u, r, y, w, mu, precision) > before + 1e-12
                if not worse.any():
                    break
                scale[worse] *= 0.5
            v = v - scale * step
            iters = max(iters, it + 1)
            if float((scale * step).abs().max()) < tol:
                break
        p = torch.sigmoid(v @ u.T - r)
        hess = torch.einsum("mn,nd,ne->mde", w * p * (1 - p), u, u) + precision * eye
        vectors.append(v.cpu().numpy())
        covariances.append(torch.linalg.inv(hess).cpu().numpy())
        # log p(y) ~ log p(y | v) + log N(v; mu, I / precision) + (d/2) log 2 pi - (1/2) log det H
        evidence.append((-_objective(v, u, r, y, w, mu, precision) + 0.5 * d * np.log(precision)
                         - 0.5 * torch.linalg.slogdet(hess).logabsdet).cpu().numpy())
    return OnboardResult(np.concatenate(vectors).astype(np.float32), np.concatenate(covariances), iters,
                         np.concatenate(evidence))
