"""How much of a new question's difficulty its text tells, and what knowing it would be worth next to
each LLM's accuracy on the question's benchmark (the Beyond page "When the question text pays").

A question's difficulty is the logit of the share of its graded LLMs that got it wrong; what text
could add to the benchmark accuracy is its shift, that difficulty minus the mean of its benchmark's
training questions. `text_r2` asks how much of the shifts of the test questions a ridge regression
on the frozen features explains (its penalty chosen on the training questions alone). `shift_ladder`
prices it in the currency of predictions: on the test labels, each LLM's accuracy on the benchmark
(`jeirt.nested.benchmark_offsets`), then that plus the shift the text predicts, then that plus the
question's true shift, read from the other LLMs' answers to it, an upper bound for anything that
knows one number per question (the weight of each shift is fitted on the validation questions, built
the same way). The distance from the first rung to the third is what a question's difficulty could
add; the share of it the second reaches is the text's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.linear_model import RidgeCV

from jeirt.data import Dataset
from jeirt.metrics import score
from jeirt.model import sigmoid
from jeirt.nested import benchmark_offsets, group_columns, residual_weight
from jeirt.splits import Split

ALPHAS = tuple(10.0**k for k in range(-2, 5))  # ridge penalties tried (leave-one-out on training questions)
CLIP = 0.005  # shares of right answers are clipped to [CLIP, 1 - CLIP] before the logit


def logit_difficulty(labels: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Each question's difficulty (n_items,): -logit of its graded LLMs' mean label (under `mask`),
    the mean clipped to [CLIP, 1 - CLIP]; NaN where no LLM was graded."""
    seen = ~np.isnan(labels) if mask is None else np.asarray(mask, dtype=bool) & ~np.isnan(labels)
    with np.errstate(invalid="ignore", divide="ignore"):
        right = np.where(seen, np.nan_to_num(labels), 0.0).sum(axis=0) / seen.sum(axis=0)
    right = np.clip(right, CLIP, 1 - CLIP)
    return np.log1p(-right) - np.log(right)


def benchmark_shift(difficulty: np.ndarray, benchmarks: Sequence, train_items: np.ndarray) -> np.ndarray:
    """`difficulty` minus the mean difficulty of its benchmark's training questions (n_items,); a
    benchmark without training questions is centred on the mean of all of them."""
    bench = np.asarray(benchmarks).astype(str)
    centre = {b: float(np.nanmean(difficulty[train_items][bench[train_items] == b])) for b in set(bench[train_items])}
    overall = float(np.nanmean(difficulty[train_items]))
    return difficulty - np.array([centre.get(b, overall) for b in bench])


def text_r2(
    features: np.ndarray, shift: np.ndarray, train_items: np.ndarray, test_items: np.ndarray
) -> tuple[float, np.ndarray, float]:
    """Ridge from `features` to each question's `shift`, fitted on `train_items` (penalty from
    `ALPHAS` by leave-one-out there): (R^2 on `test_items` against the shifts' own spread about 0,
    the prediction for every question, the penalty chosen)."""
    ridge = RidgeCV(alphas=ALPHAS).fit(features[train_items], shift[train_items])
    predicted = ridge.predict(features)
    truth = shift[test_items]
    r2 = 1.0 - float(np.sum((truth - predicted[test_items]) ** 2) / np.sum(truth**2))
    return r2, predicted, float(ridge.alpha_)


def _others_shift(labels: np.ndarray, items: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """For each (LLM, question of `items`): the question's shift from the *other* graded LLMs' answers,
    minus `centre` (its benchmark's mean difficulty), (n_models, len(items)); the pair's own label
    never enters it."""
    block = labels[:, items]
    seen = ~np.isnan(block)
    right = np.where(seen, block, 0.0)
    others_right = right.sum(axis=0, keepdims=True) - right
    others_seen = seen.sum(axis=0, keepdims=True) - seen
    share = np.clip(others_right / np.maximum(others_seen, 1), CLIP, 1 - CLIP)
    return np.log1p(-share) - np.log(share) - centre[None, :]


def shift_ladder(ds: Dataset, split: Split, features: np.ndarray) -> tuple[pd.DataFrame, dict[str, float]]:
    """The three rungs' test scores (accuracy, AUC, Brier, log loss, ECE, n), one row each, and the
    R^2 of the text's shift on the test questions with the weights fitted on the validation ones."""
    train, val, test = (split.items_of(part) for part in ("train", "val", "test"))
    bench = ds.items["benchmark"].to_numpy().astype(str)
    names = sorted(set(bench[train]))
    groups = group_columns(bench, names)
    base = benchmark_offsets(ds.labels, split.train, groups) @ groups.T  # (n_models, n_items) logits
    difficulty = logit_difficulty(ds.labels, split.train | split.val | split.test)
    shift = benchmark_shift(difficulty, bench, train)
    centre = difficulty - shift  # each question's benchmark mean
    r2, predicted, alpha = text_r2(features, shift, train, test)
    text = np.broadcast_to(-predicted[None, :], base.shape)  # a harder question: a lower logit
    rungs = {"benchmark accuracy": np.zeros_like(base), "+ the text's shift": text}
    true_shift = np.zeros_like(base)
    for items in (val, test):
        true_shift[:, items] = -_others_shift(ds.labels, items, centre[items])
    rungs["+ the true shift"] = true_shift
    rows, weights = [], {}
    val_sel, test_sel = split.val & ds.observed, split.test & ds.observed
    for name, extra in rungs.items():
        weight = 0.0
        if extra.any():
            weight = residual_weight(base[val_sel], extra[val_sel], ds.labels[val_sel], bounds=(0.0, 2.0))
        weights[name] = weight
        probs = sigmoid(base + weight * extra)
        rows.append({"predictor": name, "weight": weight} | score(probs[test_sel], ds.labels[test_sel]))
    record = {"r2": r2, "alpha": alpha, "n_train": float(len(train)), "n_test": float(len(test))}
    return pd.DataFrame(rows).set_index("predictor"), record
