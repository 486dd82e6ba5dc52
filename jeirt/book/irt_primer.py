"""The IRT primer page: a short course in item response theory, each idea with a small worked example.

What the page (book/irt_primer.md) computes, top to bottom: item characteristic curves (2PL and 3PL,
with the guessing floor c), the log-likelihood of one test taker's answers with its gradient and
Hessian and a Newton fit of the ability, joint (JML) against marginal (MML, by EM over Gauss-Hermite
nodes) maximum likelihood for the Rasch model, the Rasch sum-score sufficiency, item and test
information with standard errors, item fit (outfit, infit) and local dependence (Yen's Q3), a small
compensatory multidimensional IRT (MIRT) fitted by MAP for the held-out comparison of 1PL, 2PL and
MIRT, and the exercise checker. Classic 1PL/2PL fits come from `jeirt.baselines.irt`; everything here
is small and exact, for teaching, and runs in well under a second on the page's matrices.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit, logsumexp

from jeirt.book.figures import PALETTE, style


# Classic IRT pictures (chapters "An IRT primer" and "Why one number fails", Section 3.1)
def icc_curves(ax: plt.Axes, pairs: list[tuple[float, float]], theta_range: tuple[float, float] = (-4, 4)) -> plt.Axes:
    """One 2PL item characteristic curve sigmoid(a (theta - b)) per (a, b) pair, each in its own style."""
    theta = np.linspace(*theta_range, 401)
    for i, (a, b) in enumerate(pairs):
        s = style(i)
        ax.plot(theta, 1 / (1 + np.exp(-a * (theta - b))), color=s["color"], linestyle=s["linestyle"],
                marker=s["marker"], markevery=(10 * i, 80), label=f"a = {a:g}, b = {b:g}")
    ax.axhline(0.5, color="0.6", linewidth=0.6, linestyle=":")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"ability $\theta$")
    ax.set_ylabel("p(correct)")
    ax.legend(loc="best")
    return ax


def parameter_recovery(ax: plt.Axes, true: np.ndarray, fitted: np.ndarray, name: str = "discrimination a") -> plt.Axes:
    """Fitted against true values of one parameter, with the identity line and their correlation."""
    ok = np.isfinite(true) & np.isfinite(fitted)
    ax.scatter(true[ok], fitted[ok], s=10, alpha=0.6, color=PALETTE[0], edgecolor="none")
    lo, hi = np.nanmin([true[ok].min(), fitted[ok].min()]), np.nanmax([true[ok].max(), fitted[ok].max()])
    ax.plot([lo, hi], [lo, hi], color="0.3", linewidth=0.8, linestyle="--", marker="")
    ax.text(0.03, 0.95, f"r = {np.corrcoef(true[ok], fitted[ok])[0, 1]:.2f}", transform=ax.transAxes, va="top")
    ax.set_xlabel(f"true {name}")
    ax.set_ylabel(f"fitted {name}")
    return ax


# The three-parameter curve and the ICC explorer
def icc3(theta: np.ndarray | float, a: float | np.ndarray, b: float | np.ndarray,
         c: float | np.ndarray = 0.0) -> np.ndarray:
    """3PL: c + (1 - c) sigmoid(a (theta - b)); c is the guessing floor (c = 0: the 2PL)."""
    c = np.asarray(c, dtype=np.float64)
    if np.any((c < 0) | (c >= 1)):
        raise ValueError(f"c={c}; the guessing floor must lie in [0, 1).")
    return c + (1 - c) * expit(np.multiply(a, np.subtract(theta, b)))


def draw_icc(ax: plt.Axes, a: float, b: float, c: float = 0.0, index: int = 0,
             theta_range: tuple[float, float] = (-4, 4)) -> plt.Axes:
    """One 3PL curve with its floor c (dotted) and its midpoint (c + 1) / 2 at theta = b (a dot)."""
    theta = np.linspace(*theta_range, 201)
    s = style(index)
    ax.plot(theta, icc3(theta, a, b, c), color=s["color"], linestyle=s["linestyle"], marker="")
    ax.axhline(c, color="0.6", linewidth=0.6, linestyle=":")
    ax.plot([b], [(1 + c) / 2], color=s["color"], marker="o", linestyle="")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlim(*theta_range)
    return ax


def icc_small_multiples(a_values: tuple[float, ...] = (0.5, 1.0, 2.5), c_values: tuple[float, ...] = (0.0, 0.1, 0.25),
                        b_values: tuple[float, ...] = (-1.0, 0.0, 1.5)) -> plt.Figure:
    """The ICC explorer as a static grid: rows are discriminations a, columns guessing floors c, one
    curve per difficulty b in each panel (the Colab page has sliders for the same three numbers)."""
    fig, axes = plt.subplots(len(a_values), len(c_values), figsize=(7.2, 1.9 * len(a_values) + 0.6),
                             sharex=True, sharey=True)
    axes = np.atleast_2d(axes)
    for r, a in enumerate(a_values):
        for k, c in enumerate(c_values):
            ax = axes[r, k]
            for i, b in enumerate(b_values):
                draw_icc(ax, a, b, c, index=i)
            ax.text(0.03, 0.95, f"a = {a:g}, c = {c:g}", transform=ax.transAxes, va="top", fontsize=8)
            if r == len(a_values) - 1:
                ax.set_xlabel(r"ability $\theta$")
            if k == 0:
                ax.set_ylabel("p(correct)")
    handles = [plt.Line2D([], [], **{key: style(i)[key] for key in ("color", "linestyle")}) for i in range(len(b_values))]
    fig.legend(handles, [f"b = {b:g}" for b in b_values], loc="outside upper center", ncols=len(b_values))
    return fig


def icc_explorer() -> None:
    """Sliders for a, b and c over one ICC (ipywidgets; for Colab or Jupyter with a live kernel)."""
    from ipywidgets import FloatSlider, interact

    def show(a: float = 1.0, b: float = 0.0, c: float = 0.1) -> None:
        _, ax = plt.subplots(figsize=(5.0, 3.0))
        draw_icc(ax, a, b, c)
        info = item_information(np.array([b]), a, b, c)[0]
        ax.set_xlabel(rf"ability $\theta$  (information at b: {info:.2f})")
        ax.set_ylabel("p(correct)")
        plt.show()

    interact(show, a=FloatSlider(value=1.0, min=-2.0, max=4.0, step=0.1),
             b=FloatSlider(value=0.0, min=-3.0, max=3.0, step=0.1),
             c=FloatSlider(value=0.1, min=0.0, max=0.5, step=0.05))


# The likelihood of one test taker's answers (2PL items with known parameters)
def loglik_theta(theta: float, y: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Log-likelihood of answers y (n_items,) at ability theta, with its first and second derivatives:
    l = sum y log P + (1 - y) log(1 - P),  l' = sum a (y - P),  l'' = -sum a^2 P (1 - P)."""
    y, a, b = (np.asarray(v, dtype=np.float64) for v in (y, a, b))
    z = a * (theta - b)
    p = expit(z)
    ll = float(np.sum(y * z - np.logaddexp(0.0, z)))  # y log P + (1 - y) log(1 - P), computed stably
    return ll, float(np.sum(a * (y - p))), float(-np.sum(a**2 * p * (1 - p)))


def newton_theta(y: np.ndarray, a: np.ndarray, b: np.ndarray, theta0: float = 0.0, tol: float = 1e-10,
                 max_iter: int = 50) -> dict:
    """Maximum-likelihood ability by Newton-Raphson, theta <- theta - l'/l''; its standard error is
    1 / sqrt(-l'') at the maximum (the inverse square root of the test information there)."""
    y = np.asarray(y, dtype=np.float64)
    if np.all(y == y.flat[0]) and np.all(np.asarray(a) > 0):
        raise ValueError("all answers are equal: the likelihood keeps rising, so no finite ability maximises it.")
    theta, path = float(theta0), [float(theta0)]
    for _ in range(max_iter):
        _, grad, hess = loglik_theta(theta, y, a, b)
        step = grad / hess
        theta -= step
        path.append(theta)
        if abs(step) < tol:
            break
    _, _, hess = loglik_theta(theta, y, a, b)
    return {"theta": theta, "se": float(1 / np.sqrt(-hess)), "iterations": len(path) - 1, "path": path}


# Information
def item_information(theta: np.ndarray, a: float | np.ndarray, b: float | np.ndarray,
                     c: float | np.ndarray = 0.0) -> np.ndarray:
    """Fisher information of a 3PL item: a^2 (P - c)^2 (1 - P) / ((1 - c)^2 P); with c = 0 the 2PL's
    a^2 P (1 - P). Shapes broadcast, so theta (n, 1) and item arrays (m,) give (n, m)."""
    p = icc3(theta, a, b, c)
    return np.asarray(a, dtype=np.float64) ** 2 * (p - c) ** 2 * (1 - p) / ((1 - np.asarray(c)) ** 2 * p)


# The Rasch model: joint and marginal maximum likelihood, sum-score sufficiency
def _check_binary(labels: np.ndarray) -> np.ndarray:
    y = np.asarray(labels, dtype=np.float64)
    if y.ndim != 2 or not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"labels must be a complete 0/1 matrix (persons, items); got shape {y.shape} "
                         "with values outside {0, 1} or missing.")
    return y


def rasch_jml(labels: np.ndarray, tol: float = 1e-8, max_iter: int = 500) -> dict:
    """Joint maximum likelihood for the Rasch model P = sigmoid(theta_i - b_j): alternate one Newton step
    for every ability and every difficulty, centring the difficulties (mean 0) to fix the scale.

    Persons with a perfect or zero score, and items everyone or no one answers, have no finite
    estimate: pass a matrix without them (an error says which)."""
    y = _check_binary(labels)
    rows, cols = y.sum(axis=1), y.sum(axis=0)
    bad_rows = np.flatnonzero((rows == 0) | (rows == y.shape[1]))
    bad_cols = np.flatnonzero((cols == 0) | (cols == y.shape[0]))
    if len(bad_rows) or len(bad_cols):
        raise ValueError(f"persons {bad_rows.tolist()} and items {bad_cols.tolist()} have extreme scores "
                         "(all right or all wrong) and no finite JML estimate; drop them first.")
    theta = np.log(rows / (y.shape[1] - rows))
    b = -np.log(cols / (y.shape[0] - cols))
    b -= b.mean()
    for it in range(1, max_iter + 1):
        p = expit(theta[:, None] - b[None, :])
        theta_step = (rows - p.sum(axis=1)) / (p * (1 - p)).sum(axis=1)
        theta = theta + theta_step
        p = expit(theta[:, None] - b[None, :])
        b_step = (p.sum(axis=0) - cols) / (p * (1 - p)).sum(axis=0)
        b = b + b_step
        b -= b.mean()
        if max(np.abs(theta_step).max(), np.abs(b_step).max()) < tol:
            break
    return {"theta": theta, "b": b, "iterations": it}


def rasch_mml_em(labels: np.ndarray, n_nodes: int = 31, tol: float = 1e-8, max_iter: int = 1000) -> dict:
    """Marginal maximum likelihood for the Rasch model with theta ~ N(0, 1), by EM (Bock and Aitkin):
    E-step, each person's posterior over Gauss-Hermite nodes x_k; M-step, one Newton step per item on
    the expected counts n_k (persons at node k) and r_jk (of them right on item j). Returns the
    difficulties, each person's posterior mean ability (EAP) and the marginal log-likelihood path."""
    y = _check_binary(labels)
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)  # probabilists' Hermite: weight exp(-x^2 / 2)
    log_w = np.log(weights / weights.sum())  # (K,) N(0, 1) quadrature weights
    cols = y.sum(axis=0)
    b = -np.log(np.clip(cols, 0.5, None) / np.clip(y.shape[0] - cols, 0.5, None))
    path = []
    for it in range(1, max_iter + 1):
        z = nodes[:, None] - b[None, :]  # (K, J)
        log_like = y @ (-np.logaddexp(0.0, -z)).T + (1 - y) @ (-np.logaddexp(0.0, z)).T  # (N, K)
        joint = log_like + log_w[None, :]
        marginal = logsumexp(joint, axis=1)  # (N,)
        path.append(float(marginal.sum()))
        post = np.exp(joint - marginal[:, None])  # (N, K) E-step
        n_k = post.sum(axis=0)  # (K,)
        r_jk = post.T @ y  # (K, J)
        p = expit(z)
        step = (n_k[:, None] * p - r_jk).sum(axis=0) / (n_k[:, None] * p * (1 - p)).sum(axis=0)
        b = b + step  # M-step: one Newton step per item
        if np.abs(step).max() < tol:
            break
    return {"b": b, "eap": post @ nodes, "loglik": np.array(path), "iterations": it}


def patterns_given_score(b: np.ndarray, score: int, thetas: tuple[float, ...] = (-1.0, 2.0)) -> pd.DataFrame:
    """Every answer pattern with the given sum score and its probability given that score under the
    Rasch model, for each ability in `thetas`: the columns agree, since the sum score is sufficient."""
    b = np.asarray(b, dtype=np.float64)
    patterns = [p for p in itertools.product((0, 1), repeat=len(b)) if sum(p) == score]
    if not patterns:
        raise ValueError(f"score={score}; expected 0 to {len(b)} for {len(b)} items.")
    rows = np.array(patterns, dtype=np.float64)  # (n_patterns, J)
    out = {}
    for theta in thetas:
        z = theta - b
        like = np.exp(rows @ z - np.logaddexp(0.0, z).sum())  # P(pattern | theta)
        out[f"P(pattern | score, theta = {theta:g})"] = like / like.sum()
    return pd.DataFrame(out, index=["".join(str(int(v)) for v in r) for r in rows]).rename_axis("pattern")


# Item fit and local independence
def item_fit(labels: np.ndarray, probs: np.ndarray) -> pd.DataFrame:
    """Per item: outfit, the mean squared standardised residual (y - P)^2 / (P (1 - P)), and infit, the
    information-weighted sum(y - P)^2 / sum P (1 - P). Both are near 1 for an item the model fits."""
    y, p = np.asarray(labels, dtype=np.float64), np.clip(np.asarray(probs, dtype=np.float64), 1e-9, 1 - 1e-9)
    if y.shape != p.shape:
        raise ValueError(f"labels {y.shape} and probs {p.shape} must have the same shape.")
    var = p * (1 - p)
    return pd.DataFrame({"outfit": ((y - p) ** 2 / var).mean(axis=0),
                         "infit": ((y - p) ** 2).sum(axis=0) / var.sum(axis=0)})


def q3(labels: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Yen's Q3: correlations across persons between the residuals y - P of every pair of items
    (items, items). Under local independence they are near 0 (slightly negative, about -1/(J - 1))."""
    resid = np.asarray(labels, dtype=np.float64) - np.asarray(probs, dtype=np.float64)
    return np.corrcoef(resid, rowvar=False)


# A small compensatory multidimensional IRT (MIRT), for the held-out comparison
def fit_mirt(labels: np.ndarray, mask: np.ndarray, dims: int, seed: int = 0, prior_sd: float = 2.0,
             max_iter: int = 2000) -> Callable[[], np.ndarray]:
    """MAP fit of P = sigmoid(<theta_i, a_j> + c_j), theta_i ~ N(0, I), a_j and c_j ~ N(0, prior_sd^2),
    on the cells where `mask` is True (L-BFGS with the analytic gradient). Returns a function giving
    the fitted probabilities (persons, items) for every cell."""
    y = np.asarray(labels, dtype=np.float64)
    m = np.asarray(mask, dtype=bool)
    if y.shape != m.shape or dims < 1:
        raise ValueError(f"labels {y.shape} and mask {m.shape} must match, and dims={dims} must be >= 1.")
    n, j = y.shape
    y = np.where(m, y, 0.0)
    rng = np.random.default_rng(seed)
    x0 = np.concatenate([0.1 * rng.normal(size=n * dims), 0.1 * rng.normal(size=j * dims), np.zeros(j)])

    def unpack(x):
        return x[: n * dims].reshape(n, dims), x[n * dims: (n + j) * dims].reshape(j, dims), x[(n + j) * dims:]

    def objective(x):
        theta, a, c = unpack(x)
        z = theta @ a.T + c
        nll = np.sum(m * (np.logaddexp(0.0, z) - y * z))
        prior = 0.5 * (np.sum(theta**2) + (np.sum(a**2) + np.sum(c**2)) / prior_sd**2)
        g = m * (expit(z) - y)  # (n, j) d nll / d z
        grad = np.concatenate([(g @ a + theta).ravel(), (g.T @ theta + a / prior_sd**2).ravel(),
                               g.sum(axis=0) + c / prior_sd**2])
        return nll + prior, grad

    result = minimize(objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    theta, a, c = unpack(result.x)
    return lambda: expit(theta @ a.T + c)


# Exercises: checked answers
def check(answer, expected: float, hint: str, tolerance: float = 1e-2) -> str:
    """Compare an exercise's answer with the computed one: 'correct', 'not answered yet' (answer None)
    or 'not quite' plus `hint`, what to look at. Prints and returns the message."""
    if answer is None:
        message = f"Not answered yet. Hint: {hint}"
    elif abs(float(answer) - expected) <= tolerance * max(1.0, abs(expected)):
        message = f"Correct: {expected:.4g}."
    else:
        message = f"Not quite ({float(answer):.4g}). Look at: {hint}"
    print(message)
    return message
