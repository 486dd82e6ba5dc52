"""Checks of a fitted IRT model on its residuals y - P: item fit (outfit, infit) and local dependence
(Yen's Q3).

Both read a (test takers, items) matrix of 0/1 answers (NaN: not answered) beside the fitted
probabilities of the same shape, e.g. `TwoPL().fit(ds).predict_proba(ds)`; they know nothing of how
P was made. Outfit and infit ask whether each item's residuals are as large as the model says
(Wright and Masters 1982): near 1 when the item fits, above 1 when its answers are noisier than its
curve (flatter in truth), below 1 when they are more predictable (steeper in truth). Q3 (Yen 1984)
asks whether residuals of two items move together once ability is accounted for: under local
independence about -1/(J - 1) with estimated abilities, clearly positive for items that share a
dimension the model lacks. An item whose curve the fit flattened to follow a second dimension can
have outfit near 1 and still show in Q3: the primer shows such a case.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def _residuals(labels: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(labels, dtype=np.float64)
    p = np.asarray(probs, dtype=np.float64)
    if y.ndim != 2 or y.shape != p.shape:
        raise ValueError(f"labels {y.shape} and probs {p.shape} must be matrices of the same shape "
                         "(test takers, items).")
    answered = np.isfinite(y)
    if not np.isin(y[answered], (0.0, 1.0)).all():
        raise ValueError("labels must be 0, 1 or NaN (not answered).")
    if not ((p[answered] > 0) & (p[answered] < 1)).all():
        raise ValueError("probs must lie strictly between 0 and 1 where a label is given.")
    return np.where(answered, y - p, np.nan), p


def item_fit(labels: np.ndarray, probs: np.ndarray) -> pd.DataFrame:
    """Per item (column): outfit, the mean squared standardised residual (y - P)^2 / (P (1 - P)) over
    the test takers who answered it, and infit, its information-weighted form
    sum (y - P)^2 / sum P (1 - P). Both have expectation 1 when the answers follow P."""
    resid, p = _residuals(labels, probs)
    var = np.where(np.isfinite(resid), p * (1 - p), np.nan)  # (n, J) Bernoulli variances
    return pd.DataFrame({"outfit": np.nanmean(resid**2 / var, axis=0),
                         "infit": np.nansum(resid**2, axis=0) / np.nansum(var, axis=0)})


def q3(labels: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Yen's Q3: the correlation across test takers of the residuals y - P of every pair of items,
    (items, items), each pair over the test takers who answered both; 1 on the diagonal."""
    resid, _ = _residuals(labels, probs)
    return pd.DataFrame(resid).corr().to_numpy()


def mean_q3(matrix: np.ndarray, members: np.ndarray) -> float:
    """The mean of Q3 over the pairs of distinct items within a group (`members`, a boolean mask or
    indices of the group's items)."""
    idx = np.flatnonzero(members) if np.asarray(members).dtype == bool else np.asarray(members)
    if len(idx) < 2:
        raise ValueError(f"members selects {len(idx)} item(s); a mean over pairs needs at least two.")
    block = np.asarray(matrix)[np.ix_(idx, idx)]
    return float(block[~np.eye(len(idx), dtype=bool)].mean())
