"""How a difficulty score tracks wrong answers (the paper's Sec. 3.5, Fig. 3, App. F): the plain
difficulty (share of models wrong, also seen from each pair without its own answer), the ROC-like
curve and AUC of a score over graded (model, question) pairs with a bootstrap over questions, and
accuracy in equal-count bins of the question norm. The Difficulty page (book/difficulty.md) calls
these; `jeirt_book.difficulty` draws the results.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn import metrics as skm


def share_wrong(labels: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """The plain difficulty of each question (n_items,): the share of its graded models (under `mask`)
    that answered it wrong (label < 0.5); NaN where none was graded. labels (n_models, n_items)."""
    seen = _graded(labels, mask)
    wrong = (np.nan_to_num(labels, nan=1.0) < 0.5) & seen
    with np.errstate(invalid="ignore", divide="ignore"):
        return wrong.sum(axis=0) / np.where(seen.any(axis=0), seen.sum(axis=0), np.nan)


def share_wrong_others(labels: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Plain difficulty seen from each pair (n_models, n_items): the share of the *other* graded models
    that answered the question wrong, so a pair's own label never enters its score; NaN where no other
    model was graded."""
    seen = _graded(labels, mask)
    wrong = ((np.nan_to_num(labels, nan=1.0) < 0.5) & seen).astype(np.float64)
    others_wrong = wrong.sum(axis=0, keepdims=True) - wrong  # (n_models, n_items)
    others_seen = seen.sum(axis=0, keepdims=True) - seen
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(others_seen > 0, others_wrong / others_seen, np.nan)


def _graded(labels: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Boolean (n_models, n_items): graded (not NaN) and, when given, under `mask`."""
    labels = np.asarray(labels, dtype=np.float64)
    if labels.ndim != 2:
        raise ValueError(f"labels has shape {labels.shape}; expected (n_models, n_items).")
    seen = ~np.isnan(labels)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != labels.shape:
            raise ValueError(f"mask has shape {mask.shape}; expected the labels' {labels.shape}.")
        seen &= mask
    return seen


def difficulty_pairs(
    scores: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The (score, answered incorrectly) of every graded pair under `mask` whose score is finite.

    `scores` is one difficulty per question (n_items,), given to each of its pairs, or one per pair
    (n_models, n_items). Returns two flat arrays: scores (float) and wrong (bool, label < 0.5).
    """
    labels = np.asarray(labels, dtype=np.float64)
    seen = _graded(labels, mask)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape == (labels.shape[1],):
        scores = np.broadcast_to(scores, labels.shape)
    elif scores.shape != labels.shape:
        raise ValueError(
            f"scores has shape {scores.shape}; expected one per question ({labels.shape[1]},) "
            f"or one per pair {labels.shape}."
        )
    keep = seen & np.isfinite(scores)
    if not keep.any():
        raise ValueError("no graded pair with a finite score under the mask.")
    return scores[keep], labels[keep] < 0.5


def difficulty_auc(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None) -> float:
    """App. F's AUC: the chance that a random wrongly answered pair has a higher difficulty score than a
    random correctly answered one (ties count one half), over the graded pairs under `mask`.

    0.5: the score says nothing about failure; 1: every failure scores above every success. NaN when
    the pairs are all right or all wrong.
    """
    s, wrong = difficulty_pairs(scores, labels, mask)
    if wrong.all() or not wrong.any():
        return float("nan")
    return float(skm.roc_auc_score(wrong, s))


def difficulty_auc_se(
    scores: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None, n_boot: int = 200, seed: int = 0
) -> float:
    """Standard error of `difficulty_auc` by a bootstrap over questions: the questions are drawn with
    replacement, each with all its graded pairs (the pairs of one question share its score, so they
    are not independent draws). `scores` is one difficulty per question (n_items,)."""
    return _auc_bootstrap_se([scores], labels, mask, n_boot, seed)


def difficulty_auc_gap(
    first: np.ndarray,
    second: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray | None = None,
    n_boot: int = 200,
    seed: int = 0,
) -> tuple[float, float]:
    """`difficulty_auc(first) - difficulty_auc(second)` on the same pairs, and its standard error by a
    paired bootstrap over questions (both scores see the same draws, so what the questions share
    cancels). `first` and `second` are one difficulty per question (n_items,)."""
    gap = difficulty_auc(first, labels, mask) - difficulty_auc(second, labels, mask)
    return float(gap), _auc_bootstrap_se([first, second], labels, mask, n_boot, seed)


def _auc_bootstrap_se(scores: list, labels: np.ndarray, mask: np.ndarray | None, n_boot: int, seed: int) -> float:
    """SE over `n_boot` draws of questions with replacement of the AUC of `scores[0]`, or of the gap
    `scores[0] - scores[1]` when two are given (each one per question)."""
    if n_boot < 2:
        raise ValueError(f"n_boot={n_boot}; expected at least 2 bootstrap draws.")
    labels = np.asarray(labels, dtype=np.float64)
    scores = [np.asarray(score, dtype=np.float64) for score in scores]
    for score in scores:
        if score.shape != (labels.shape[1],):
            raise ValueError(f"scores has shape {score.shape}; expected one per question ({labels.shape[1]},).")
    seen = _graded(labels, mask)
    wrong = (labels < 0.5) & seen  # NaN compares False
    counts = []  # per score: its values, and each question's wrong and right pairs with a finite score
    for score in scores:
        finite = np.isfinite(score)
        counts.append((np.where(finite, score, 0.0), wrong.sum(0) * finite, (seen & ~wrong).sum(0) * finite))
    rng = np.random.default_rng(seed)
    n = labels.shape[1]
    draws = []
    for _ in range(n_boot):
        cols = rng.integers(0, n, n)
        aucs = [_counted_auc(score[cols], n_wrong[cols], n_right[cols]) for score, n_wrong, n_right in counts]
        draws.append(aucs[0] if len(aucs) == 1 else aucs[0] - aucs[1])
    return float(np.nanstd(draws, ddof=1))


def _counted_auc(score: np.ndarray, n_wrong: np.ndarray, n_right: np.ndarray) -> float:
    """`difficulty_auc` from one score per question and its counts of wrong and right pairs: the
    Mann-Whitney count over tied scores (ties one half), in time of the questions, not of the pairs."""
    values, at = np.unique(score, return_inverse=True)
    wrong, right = np.bincount(at, n_wrong, len(values)), np.bincount(at, n_right, len(values))
    if wrong.sum() == 0 or right.sum() == 0:
        return float("nan")
    right_below = np.cumsum(right) - right
    return float((wrong * (right_below + 0.5 * right)).sum() / (wrong.sum() * right.sum()))


def difficulty_roc(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None) -> pd.DataFrame:
    """App. F's ROC-like curve: for each threshold t on the difficulty score, the share of wrongly
    answered pairs with score >= t ("tpr") against the share of correctly answered ones ("fpr")."""
    s, wrong = difficulty_pairs(scores, labels, mask)
    if wrong.all() or not wrong.any():
        raise ValueError("the pairs are all right or all wrong; a ROC curve needs both outcomes.")
    fpr, tpr, threshold = skm.roc_curve(wrong, s)
    return pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": threshold})


def norm_bin_accuracy(
    norms: np.ndarray, labels: np.ndarray, n_bins: int = 20, mask: np.ndarray | None = None
) -> pd.DataFrame:
    """Questions in `n_bins` equal-count bins of their norm (n_items,), lowest first (Fig. 3): per bin
    the norm range and mean, the number of questions and graded pairs, and the accuracy (share of
    graded pairs under `mask` answered correctly). Questions with no graded pair are left out first."""
    norms = np.asarray(norms, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    if norms.shape != (labels.shape[1],):
        raise ValueError(f"norms has shape {norms.shape}; expected one per question ({labels.shape[1]},).")
    seen = _graded(labels, mask)
    keep = np.flatnonzero(seen.any(axis=0) & np.isfinite(norms))
    if not 1 <= n_bins <= len(keep):
        raise ValueError(f"n_bins={n_bins}; expected between 1 and the {len(keep)} questions with labels.")
    rank = np.empty(len(keep), dtype=np.int64)
    rank[np.argsort(norms[keep], kind="stable")] = np.arange(len(keep))
    bins = rank * n_bins // len(keep)  # equal counts (to within one), ties split by position
    right = ((np.nan_to_num(labels) >= 0.5) & seen)[:, keep].sum(axis=0)
    pairs = seen[:, keep].sum(axis=0)
    frame = pd.DataFrame({"bin": bins + 1, "norm": norms[keep], "right": right, "pairs": pairs})
    out = frame.groupby("bin").agg(
        low=("norm", "min"),
        high=("norm", "max"),
        mean_norm=("norm", "mean"),
        questions=("norm", "size"),
        pairs=("pairs", "sum"),
        right=("right", "sum"),
    )
    out["accuracy"] = out.pop("right") / out["pairs"]
    return out.rename(columns={"mean_norm": "mean norm"})
