"""Metrics against hand-computed values, and `evaluate`'s grouping."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from jeirt.data import Dataset
from jeirt.metrics import accuracy, auc, brier, ece, evaluate, log_loss, score

P = np.array([0.9, 0.2, 0.6, 0.4])
Y = np.array([1.0, 0.0, 0.0, 1.0])


def test_metrics_by_hand():
    assert accuracy(P, Y) == 0.5
    assert auc(P, Y) == 0.75  # positives {0.9, 0.4} vs negatives {0.2, 0.6}: 3 of 4 pairs ordered
    assert brier(P, Y) == pytest.approx((0.01 + 0.04 + 0.36 + 0.36) / 4)
    assert log_loss(P, Y) == pytest.approx(-(math.log(0.9) + math.log(0.8) + math.log(0.4) + math.log(0.4)) / 4)
    # Two bins of 2 (n_bins=2): [0.2, 0.4] mean p 0.3, mean y 0.5; [0.9, 0.6] mean p 0.75, mean y 0.5.
    assert ece(P, Y, n_bins=2) == pytest.approx(0.5 * 0.2 + 0.5 * 0.25)
    assert math.isnan(auc(P, np.ones(4)))


def test_soft_labels_count_as_correct_from_one_half():
    assert accuracy(np.array([0.7, 0.3]), np.array([0.5, 0.49])) == 1.0


def test_score_refuses_nan_and_empty():
    with pytest.raises(ValueError, match="NaN"):
        score(P, np.array([1, np.nan, 0, 1]))
    with pytest.raises(ValueError, match="nothing to score"):
        score(np.array([]), np.array([]))


def test_evaluate_groups_and_skips_unobserved():
    items = pd.DataFrame({"item_id": ["a", "b", "c", "d"], "benchmark": ["x", "x", "y", "y"], "text": ""})
    labels = np.array([Y, [1, 1, np.nan, 0]], dtype=np.float32)
    ds = Dataset("t", ["m1", "m2"], items, labels)
    probs = np.vstack([P, [0.8, 0.3, 0.5, 0.1]])
    report = evaluate(probs, ds, np.ones_like(labels, dtype=bool))
    assert report["overall"]["n"] == 7
    assert report["per_model"].loc["m2", "accuracy"] == pytest.approx(2 / 3)
    assert report["per_benchmark"].loc["y", "n"] == 3
