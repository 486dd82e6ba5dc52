"""Scores for predicted probabilities against labels: accuracy, ROC AUC, Brier, log loss, ECE.

Every function takes flat arrays of probabilities and labels (soft labels allowed: accuracy and AUC
read a label as correct when it is at least 0.5, Brier and log loss use it as it is). `evaluate`
scores a (n_models, n_items) prediction under a mask, overall, per model and per benchmark.
`spearman` is the rank correlation that the book uses wherever two orderings are compared.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_auc_score

from jeirt.data import Dataset


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
    per_model = {m: score(probs[i, mask[i]], ds.labels[i, mask[i]])
                 for i, m in enumerate(ds.models) if mask[i].any()}
    per_bench = {}
    for bench, cols in ds.items.groupby("benchmark", sort=False).indices.items():
        sub = mask[:, cols]
        if sub.any():
            per_bench[bench] = score(probs[:, cols][sub], ds.labels[:, cols][sub])
    table = lambda rows, name: pd.DataFrame(rows).T.rename_axis(name).astype({"n": int})  # noqa: E731
    return {"overall": score(probs[mask], ds.labels[mask]),
            "per_model": table(per_model, "model"), "per_benchmark": table(per_bench, "benchmark")}


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation over the entries where both are finite (NaN with fewer than 3)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    return float(stats.spearmanr(a[ok], b[ok]).statistic) if ok.sum() >= 3 else float("nan")
