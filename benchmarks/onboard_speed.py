"""Onboarding speed: the current solver (`jeirt.onboard.fit_model_vectors`) against the previous one.

On mmlu_pro (question split, seed 0), `--models` LLMs are held out of a JE-IRT fit (d = 256 by
default); both solvers then fit those LLMs' vectors from all their training answers under the
isotropic prior N(mean, s var I) of `prior_from_vectors`, every width s of
`OLD_PRIOR_WIDTH_GRID` and the best by summed Laplace evidence, and the vectors are scored on the
LLMs' test answers. (`JEIRT.onboard` now uses N(mu, c S) of `onboard.vector_prior`, solved by the same
`fit_model_vectors` in whitened coordinates, where that prior is isotropic: this measures that solver.)

The previous solver is kept below as `reference_fit_model_vectors`: one full float64 Newton solve per
width from the prior mean, an (m, n, d) einsum Hessian per step plus one more at the end, and
covariances for every width. Both run on the same inputs in the same process, in alternating
rounds, one thread each by default. Prints ms per model, the speed-up, and both solvers' accuracy,
log loss and largest vector difference.

    python benchmarks/onboard_speed.py [--models 10] [--d 256] [--rounds 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from jeirt.data import load_dataset
from jeirt.estimator import JEIRT
from jeirt.onboard import OnboardResult, fit_model_vectors
from jeirt.splits import hold_out_models, split_by_question

# the old prior's isotropic widths, in multiples of the known vectors' variance
OLD_PRIOR_WIDTH_GRID = (1.0, 10.0, 100.0, 1000.0, 10000.0)


def prior_from_vectors(vectors: np.ndarray) -> tuple[np.ndarray, float]:
    """The old empirical-Bayes prior from known model vectors: their mean and mean per-coordinate variance."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if len(vectors) < 2:
        raise ValueError("a prior needs at least two known model vectors.")
    return vectors.mean(axis=0), float(vectors.var(axis=0, ddof=1).mean())


def _reference_objective(v, u, r, y, w, mu, precision):
    z = v @ u.T - r
    nll = (torch.nn.functional.softplus(z) - y * z) * w
    return nll.sum(dim=1) + 0.5 * precision * ((v - mu) ** 2).sum(dim=1)


def reference_fit_model_vectors(
    directions: np.ndarray,
    norms: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray,
    prior_mean: np.ndarray,
    prior_width: float,
    max_iter: int = 50,
    tol: float = 1e-6,
    chunk: int = 16,
) -> OnboardResult:
    """The previous solver, unchanged but for the device (CPU): damped Newton, float64, one width."""
    as_t = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float64)  # noqa: E731
    u, r = as_t(directions), as_t(norms)
    mu, precision = as_t(prior_mean), 1.0 / prior_width
    d = u.shape[1]
    eye = torch.eye(d, dtype=torch.float64)
    vectors, covariances, evidence, iters = [], [], [], 0
    for start in range(0, len(labels), chunk):
        y = as_t(np.nan_to_num(labels[start : start + chunk]))
        w = as_t(mask[start : start + chunk])
        v = mu.expand(len(y), d).clone()
        for it in range(max_iter):
            p = torch.sigmoid(v @ u.T - r)
            grad = ((p - y) * w) @ u + precision * (v - mu)
            curv = w * p * (1 - p)
            hess = torch.einsum("mn,nd,ne->mde", curv, u, u) + precision * eye
            step = torch.linalg.solve(hess, grad.unsqueeze(-1)).squeeze(-1)
            before, scale = _reference_objective(v, u, r, y, w, mu, precision), torch.ones(len(y), 1, dtype=v.dtype)
            for _ in range(20):
                worse = _reference_objective(v - scale * step, u, r, y, w, mu, precision) > before + 1e-12
                if not worse.any():
                    break
                scale[worse] *= 0.5
            v = v - scale * step
            iters = max(iters, it + 1)
            if float((scale * step).abs().max()) < tol:
                break
        p = torch.sigmoid(v @ u.T - r)
        hess = torch.einsum("mn,nd,ne->mde", w * p * (1 - p), u, u) + precision * eye
        vectors.append(v.numpy())
        covariances.append(torch.linalg.inv(hess).numpy())
        evidence.append(
            (
                -_reference_objective(v, u, r, y, w, mu, precision)
                + 0.5 * d * np.log(precision)
                - 0.5 * torch.linalg.slogdet(hess).logabsdet
            ).numpy()
        )
    return OnboardResult(
        np.concatenate(vectors).astype(np.float32), np.concatenate(covariances), iters, np.concatenate(evidence)
    )


def reference_auto(directions, norms, labels, mask, mean, var) -> tuple[np.ndarray, float]:
    """The previous `JEIRT.onboard(prior_width="auto")`: every width solved and kept, the best chosen."""
    fits = {
        s: reference_fit_model_vectors(directions, norms, labels, mask, mean, var * s) for s in OLD_PRIOR_WIDTH_GRID
    }
    best = max(fits, key=lambda s: float(fits[s].log_evidence.sum()))
    return fits[best].vectors, best


def current_auto(directions, norms, labels, mask, mean, var) -> tuple[np.ndarray, float]:
    """What `JEIRT.onboard(prior_width="auto")` runs now (no covariances asked for)."""
    fit = fit_model_vectors(
        directions, norms, labels, mask, mean, [var * s for s in OLD_PRIOR_WIDTH_GRID], device="cpu", covariances=False
    )
    return fit.vectors, fit.prior_width / var


def score(
    vectors: np.ndarray, directions: np.ndarray, norms: np.ndarray, labels: np.ndarray, test: np.ndarray
) -> tuple[float, float]:
    """Accuracy and log loss of sigmoid(u . v - r) on the test answers."""
    p = 1 / (1 + np.exp(-(vectors.astype(np.float64) @ directions.T - norms)))
    y, p = labels[test], np.clip(p[test], 1e-7, 1 - 1e-7)
    return float(((p >= 0.5) == (y >= 0.5)).mean()), float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="mmlu_pro")
    parser.add_argument("--models", type=int, default=10, help="LLMs held out and onboarded")
    parser.add_argument("--d", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the current solver")
    parser.add_argument("--reference-rounds", type=int, default=1, help="timed rounds of the previous one")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ds = load_dataset(args.dataset)
    split = hold_out_models(ds, split_by_question(ds, seed=args.seed), args.models, args.seed)
    model = JEIRT(d=args.d, random_state=args.seed, device="cpu", progress=False).fit(ds, split)
    rows = ds.model_index(list(split.held_out))
    emb = model.question_embeddings(ds).astype(np.float64)
    norms = np.linalg.norm(emb, axis=1)
    directions = emb / norms[:, None]
    trained = [i for i, m in enumerate(model.models_) if m not in split.held_out]
    mean, var = prior_from_vectors(model.net_.model_vectors.detach().numpy()[trained])
    labels, mask, test = ds.labels[rows], split.onboard[rows] & ds.observed[rows], split.test[rows] & ds.observed[rows]
    inputs = (directions, norms, labels, mask, mean, var)
    times = {"previous": [], "current": []}
    out = {}
    for _ in range(max(args.rounds, args.reference_rounds)):
        for name, solve in (("previous", reference_auto), ("current", current_auto)):
            if len(times[name]) >= (args.reference_rounds if name == "previous" else args.rounds):
                continue
            start = time.perf_counter()
            out[name] = solve(*inputs)
            times[name].append(time.perf_counter() - start)
    print(
        f"data: {args.dataset}, {len(rows)} held-out LLMs x {int(mask.sum(axis=1).mean())} training answers "
        f"each (mean), d={args.d}, prior_width=auto over {len(OLD_PRIOR_WIDTH_GRID)} widths, "
        f"{args.threads} thread(s), device=cpu"
    )
    print(f"{'solver':10} {'ms/model':>10} {'rounds':>7} {'scale':>7} {'accuracy':>9} {'log_loss':>9}")
    for name in ("previous", "current"):
        vectors, scale = out[name]
        acc, loss = score(vectors, directions, norms, labels, test)
        ms = 1000 * min(times[name]) / len(rows)
        print(f"{name:10} {ms:10.1f} {len(times[name]):7d} {scale:7g} {acc:9.4f} {loss:9.4f}")
    diff = float(np.abs(out["previous"][0] - out["current"][0]).max())
    print(
        f"speed-up: {min(times['previous']) / min(times['current']):.1f}x (best rounds); "
        f"largest vector difference {diff:.2e}; goal: under 100 ms a model"
    )
    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end "
        "(other work on the machine slows both solvers alike)"
    )


if __name__ == "__main__":
    main()
