"""Tests for the calibration helpers of jeirt.metrics: reliability bins, temperature, and the ECE that a
finite set of questions leaves by chance (bootstrap over questions, floor of a calibrated predictor)."""

from __future__ import annotations

import numpy as np
import pytest

from jeirt.metrics import (
    ece,
    ece_bootstrap,
    ece_floor,
    question_spread,
    reliability,
    scale_temperature,
)


def draw(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """200 questions x 500 models; each question's true rate strays from p by spread 0.6, one way."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, size=(500, 200))
    sign = rng.choice([-1.0, 1.0], size=200)
    y = (rng.random(p.shape) < p + 0.6 * sign * np.minimum(p, 1 - p)).astype(float)
    questions = np.broadcast_to(np.arange(200), p.shape)
    return p.ravel(), y.ravel(), questions.ravel()


@pytest.fixture(scope="module")
def draws():
    return draw(0)


def test_reliability_bins_are_those_of_ece(draws):
    p, y, _ = draws
    table = reliability(p, y, n_bins=10)
    assert table["n"].sum() == p.size and (table["n"] > 0).all()
    gap = (table["n"] * (table["mean_label"] - table["mean_prob"]).abs()).sum() / table["n"].sum()
    assert gap == pytest.approx(ece(p, y, n_bins=10), abs=1e-12)
    assert ((table["mean_prob"] >= table["low"]) & (table["mean_prob"] <= table["high"])).all()


def test_scale_temperature_round_trips_and_sharpens():
    p = np.array([0.1, 0.4, 0.5, 0.9])
    np.testing.assert_allclose(scale_temperature(scale_temperature(p, 1.7), 1 / 1.7), p, atol=1e-12)
    sharper = scale_temperature(p, 0.5)
    assert sharper[0] < p[0] and sharper[2] == pytest.approx(0.5) and sharper[3] > p[3]
    with pytest.raises(ValueError, match="temperature"):
        scale_temperature(p, 0.0)


def test_question_spread_recovers_the_spread_and_the_floor_grows_with_it(draws):
    p, y, questions = draws
    assert question_spread(p, y, questions) == pytest.approx(0.6, abs=0.1)
    independent = (np.random.default_rng(1).random(p.size) < p).astype(float)
    assert question_spread(p, independent, questions) < 0.25  # sampling noise only, far below 0.6
    flat = ece_floor(p, questions, spread=0.0, n_sim=20)
    shared = ece_floor(p, questions, spread=0.6, n_sim=20)
    assert shared.mean() > 2 * flat.mean()  # 100,000 labels, but only 200 questions
    np.testing.assert_array_equal(
        ece_floor(p, questions, 0.6, n_sim=5, seed=3), ece_floor(p, questions, 0.6, n_sim=5, seed=3)
    )
    with pytest.raises(ValueError, match="spread"):
        ece_floor(p, questions, spread=1.5)


def test_bootstrap_resamples_whole_questions(draws):
    p, y, questions = draws
    boot = ece_bootstrap(p, y, questions, n_boot=300, seed=0)
    assert boot.shape == (300,) and np.isfinite(boot).all()
    assert ece(p, y) < np.quantile(boot, 0.95)  # (ECE is a sum of |gaps|: resamples lean above it)
    by_label = ece_bootstrap(p, y, np.arange(p.size), n_boot=40, seed=0)  # as if labels were independent
    assert boot.std() > 2 * by_label.std()  # correlated labels: questions, not labels, set the spread
    # ... and the spread is the one a fresh draw of questions gives, neither narrower nor wider (a
    # bound on one side would pass a bootstrap of pure noise): measured ratio 0.83 against 20 fresh
    # draws (whose sd is itself known to about 16%); resampling labels instead gives 0.17.
    fresh = np.array([ece(*draw(seed)[:2]) for seed in range(1, 21)])
    assert 0.5 < boot.std() / fresh.std(ddof=1) < 2, (boot.std(), fresh.std(ddof=1))
    # one question only: every resample is that question, so every ECE is the ECE itself
    one = ece_bootstrap(p[questions == 0], y[questions == 0], questions[questions == 0], n_boot=5)
    np.testing.assert_allclose(one, ece(p[questions == 0], y[questions == 0]))
