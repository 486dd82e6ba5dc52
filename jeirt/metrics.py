"""Scores for predicted probabilities against labels: accuracy, ROC AUC, Brier, log loss, ECE.

Every function takes flat arrays of probabilities and labels (soft labels allowed: accuracy and AUC
read a label as correct when it is at least 0.5, Brier and log loss use it as it is). `evaluate`
scores a (n_models, n_items) prediction under a mask, overall, per model and per benchmark.
`spearman` is the rank correlation that the book uses wherever two orderings are compared.
`reliability` gives the bins behind ECE, `scale_temperature` undoes (or applies) temperature scaling,
and `ece_bootstrap` / `ece_floor` say how much ECE a finite set of questions leaves by chance.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_auc_score

from jeirt.data.dataset import Dataset


def accuracy(probs: np.ndarray, labels: np.ndarray) -> float:
    """Share of predictions on the right side of 0.5."""
    return float(np.mean((probs >= 0.5) == (labels >= 0.5)))


def auc(probs: np.ndarray, labels: np.ndarray) -> float:
    """ROC AUC; NaN when only one class is present."""
    hard = labels >= 0.5
    if hard.all() or not hard.any():
        return float("nan")
    return float(roc_auc_score(hard, probs))


def brier(probs: np.ndarray, labels: np.ndarray) -> float:
    """Mean squared error of the probabilities."""
    return float(np.mean((probs - labels) ** 2))


def log_loss(probs: np.ndarray, labels: np.ndarray, eps: float = 1e-7) -> float:
    """Mean binary cross-entropy, probabilities clipped to [eps, 1 - eps]."""
    p = np.clip(probs, eps, 1 - eps)
    return float(-np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)))


def ece(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> float:
    """Expected calibration error: |mean label - mean probability| over equal-width bins, weighted."""
    bins = np.minimum((probs * n_bins).astype(int), n_bins - 1)
    total = 0.0
    for b in np.unique(bins):
        sel = bins == b
        total += sel.sum() * abs(labels[sel].mean() - probs[sel].mean())
    return float(total / len(probs))


def reliability(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> pd.DataFrame:
    """The bins behind `ece`, for a reliability diagram: per equal-width bin of the probability, its edges,
    the labels in it, their mean probability and mean label (empty bins left out). `ece` is the
    n-weighted mean of |mean label - mean probability| over these rows."""
    probs, labels = np.asarray(probs, dtype=np.float64).ravel(), np.asarray(labels, dtype=np.float64).ravel()
    bins = np.minimum((probs * n_bins).astype(int), n_bins - 1)  # as `ece` bins them
    n = np.bincount(bins, minlength=n_bins)
    keep = n > 0
    table = pd.DataFrame(
        {
            "low": np.arange(n_bins) / n_bins,
            "high": np.arange(1, n_bins + 1) / n_bins,
            "n": n,
            "mean_prob": np.bincount(bins, probs, n_bins) / np.maximum(n, 1),
            "mean_label": np.bincount(bins, labels, n_bins) / np.maximum(n, 1),
        }
    )
    return table[keep].reset_index(drop=True)


def scale_temperature(probs: np.ndarray, temperature: float) -> np.ndarray:
    """Probabilities with their logits divided by `temperature`. A model calibrated with temperature T
    (`JEIRT.temperature_`) gave `scale_temperature(p, 1 / T)` before it was calibrated."""
    if not temperature > 0:
        raise ValueError(f"temperature={temperature!r}; expected a positive number.")
    p = np.clip(np.asarray(probs, dtype=np.float64), 1e-12, 1 - 1e-12)
    return 1.0 / (1.0 + np.exp(-(np.log(p) - np.log1p(-p)) / temperature))


def _question_bins(
    probs: np.ndarray, labels: np.ndarray, questions: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per question and `ece` bin: labels, sum of probabilities, sum of labels, each (n_questions, n_bins)."""
    _, q = np.unique(np.asarray(questions), return_inverse=True)
    bins = np.minimum((probs * n_bins).astype(int), n_bins - 1)
    cell, size = q * n_bins + bins, (q.max() + 1) * n_bins
    count, prob_sum, label_sum = (np.bincount(cell, w, size).reshape(-1, n_bins) for w in (None, probs, labels))
    return count, prob_sum, label_sum


def ece_bootstrap(
    probs: np.ndarray, labels: np.ndarray, questions: np.ndarray, n_boot: int = 1000, seed: int = 0, n_bins: int = 15
) -> np.ndarray:
    """`ece` on `n_boot` resamples of the questions (with replacement, each with all its labels): how
    much the test ECE moves with which questions were drawn. Labels of one question are correlated
    across models, so the question, not the label, is the unit that is resampled. (n_boot,)"""
    probs, labels = np.asarray(probs, dtype=np.float64).ravel(), np.asarray(labels, dtype=np.float64).ravel()
    n, sum_p, sum_y = _question_bins(probs, labels, np.asarray(questions).ravel(), n_bins)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(len(n), np.full(len(n), 1 / len(n)), size=n_boot).astype(np.float64)
    return np.abs(weights @ sum_y - weights @ sum_p).sum(axis=1) / (weights @ n).sum(axis=1)


def question_spread(probs: np.ndarray, labels: np.ndarray, questions: np.ndarray) -> float:
    """How far the questions' true rates stray from the probabilities, on the scale `ece_floor` draws
    them on: sqrt(variance of the questions' mean residual beyond what coin flips give) over the mean
    min(p, 1 - p); 0 when the residuals are no more spread than independent labels would leave them."""
    probs, labels = np.asarray(probs, dtype=np.float64).ravel(), np.asarray(labels, dtype=np.float64).ravel()
    _, q = np.unique(np.asarray(questions).ravel(), return_inverse=True)
    count = np.bincount(q)
    resid = np.bincount(q, labels - probs) / count  # (n_questions,) mean residual of each question
    noise = np.bincount(q, probs * (1 - probs)) / count**2  # its variance if labels were coin flips
    margin = np.bincount(q, np.minimum(probs, 1 - probs)) / count
    excess = np.mean(resid**2) - np.mean(noise)
    return float(np.sqrt(max(excess, 0.0)) / np.mean(margin))


def ece_floor(
    probs: np.ndarray, questions: np.ndarray, spread: float = 0.0, n_sim: int = 200, seed: int = 0, n_bins: int = 15
) -> np.ndarray:
    """ECE of `probs` against `n_sim` sets of labels for which they are calibrated by construction: the
    ECE a perfectly calibrated predictor shows on these questions by chance. (n_sim,)

    Each question draws a sign s = +1 or -1 (even odds) and its labels are coin flips with
    P = p + s * spread * min(p, 1 - p): every question's true rate strays from p in one direction for
    all its models, as difficulty errors do, and E[label | p] = p holds exactly. spread=0: independent
    coin flips with P = p; `question_spread` measures the spread of real labels.
    """
    if not 0 <= spread <= 1:
        raise ValueError(f"spread={spread!r}; expected a number in [0, 1].")
    probs = np.asarray(probs, dtype=np.float64).ravel()
    _, q = np.unique(np.asarray(questions).ravel(), return_inverse=True)
    rng = np.random.default_rng(seed)
    margin = spread * np.minimum(probs, 1 - probs)
    out = np.empty(n_sim)
    for i in range(n_sim):
        sign = rng.choice([-1.0, 1.0], size=q.max() + 1)[q]
        out[i] = ece(probs, (rng.random(probs.size) < probs + sign * margin).astype(np.float64), n_bins)
    return out


METRICS = {"accuracy": accuracy, "auc": auc, "brier": brier, "log_loss": log_loss, "ece": ece}


def score(probs: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Every metric in METRICS, plus the number of labels scored."""
    probs, labels = np.asarray(probs, dtype=np.float64).ravel(), np.asarray(labels, dtype=np.float64).ravel()
    if probs.shape != labels.shape:
        raise ValueError(f"probs has {probs.size} values but labels has {labels.size}.")
    if probs.size == 0:
        raise ValueError("nothing to score: the selection holds no labels.")
    if np.isnan(labels).any() or np.isnan(probs).any():
        raise ValueError("probs or labels contain NaN; score only observed labels.")
    return {name: fn(probs, labels) for name, fn in METRICS.items()} | {"n": int(probs.size)}


def evaluate(probs: np.ndarray, ds: Dataset, mask: np.ndarray) -> dict:
    """Scores of a (n_models, n_items) prediction on the labels under `mask`.

    Returns {"overall": dict, "per_model": DataFrame, "per_benchmark": DataFrame}.
    """
    if probs.shape != ds.labels.shape or mask.shape != ds.labels.shape:
        raise ValueError(f"probs {probs.shape} and mask {mask.shape} must match the labels {ds.labels.shape}.")
    mask = mask & ds.observed
    per_model = {m: score(probs[i, mask[i]], ds.labels[i, mask[i]]) for i, m in enumerate(ds.models) if mask[i].any()}
    per_bench = {}
    for bench, cols in ds.items.groupby("benchmark", sort=False).indices.items():
        sub = mask[:, cols]
        if sub.any():
            per_bench[bench] = score(probs[:, cols][sub], ds.labels[:, cols][sub])
    table = lambda rows, name: pd.DataFrame(rows).T.rename_axis(name).astype({"n": int})  # noqa: E731
    return {
        "overall": score(probs[mask], ds.labels[mask]),
        "per_model": table(per_model, "model"),
        "per_benchmark": table(per_bench, "benchmark"),
    }


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation over the entries where both are finite (NaN with fewer than 3)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    return float(stats.spearmanr(a[ok], b[ok]).statistic) if ok.sum() >= 3 else float("nan")
