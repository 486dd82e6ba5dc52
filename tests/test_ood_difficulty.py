"""Out of distribution and difficulty: directional alignment, the ROC-like AUC of a difficulty score,
accuracy per norm bin and the plain difficulty, each against values worked out by hand; and the
leave-one-benchmark-out protocol, with a stand-in estimator whose predictions are known exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jeirt.analysis import difficulty
from jeirt.analysis.alignment import alignment_range_se, directional_alignment
from jeirt.estimator import JEIRT
from jeirt.simulate import simulate
from jeirt.splits import split_by_question
from jeirt_book.experiments import ood

nan = np.nan

# ---------------------------------------------------------------------------------------------
# Directional alignment (Table 4)

# Five 2-D rows in three groups. Only directions count, so (3, 0) is the unit vector (1, 0).
#   a: (1, 0), (0, 1)  mean unit direction (1/2, 1/2)     ~ (1, 1) / sqrt 2
#   b: (3, 0)          (1, 0)
#   c: (0, -1)         (0, -1)
# a vs the rest {(1, 0), (0, -1)}: mean (1/2, -1/2), orthogonal to (1, 1): cosine 0.
# b vs the rest {(1, 0), (0, 1), (0, -1)}: mean (1/3, 0), along (1, 0): cosine 1.
# c vs the rest {(1, 0), (0, 1), (1, 0)}: mean (2/3, 1/3) ~ (2, 1) / sqrt 5; with (0, -1): -1/sqrt 5.
TOY_X = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.0, -1.0]])
TOY_GROUPS = ["a", "a", "b", "c"]


def test_directional_alignment_by_hand():
    alignment = directional_alignment(TOY_X, TOY_GROUPS)
    assert list(alignment.index) == ["a", "b", "c"]
    assert alignment["a"] == pytest.approx(0.0, abs=1e-12)
    assert alignment["b"] == pytest.approx(1.0)
    assert alignment["c"] == pytest.approx(-1 / np.sqrt(5))


def test_directional_alignment_ignores_norms_and_is_symmetric_for_two_groups():
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    scaled = x * np.array([[5.0], [0.1], [2.0]])  # same directions, other norms
    a = directional_alignment(x, ["p", "p", "q"])
    assert a.equals(directional_alignment(scaled, ["p", "p", "q"]))
    assert a["p"] == pytest.approx(a["q"])  # with two groups "the rest" of one is the other
    assert a["p"] == pytest.approx(1.0)  # mean of (1, 0) and (0, 1) points along (1, 1)


@pytest.mark.parametrize("x, groups, message", [(TOY_X, ["a", "b"], "groups has 2"), (TOY_X, ["a"] * 4, "at least 2")])
def test_directional_alignment_errors(x, groups, message):
    with pytest.raises(ValueError, match=message):
        directional_alignment(x, groups)


def test_alignment_range_se_shrinks_with_more_questions():
    # two groups around fixed directions, with noise: the range's spread falls as questions grow
    rng = np.random.default_rng(0)

    def draw(n: int) -> tuple[np.ndarray, list[str]]:
        centres = np.array([[1.0, 0.2, 0.0], [0.3, 1.0, 0.0], [0.0, 0.3, 1.0]])
        x = np.concatenate([c + 0.8 * rng.standard_normal((n, 3)) for c in centres])
        return x, [g for g in "abc" for _ in range(n)]

    small, large = alignment_range_se(*draw(20), draws=100), alignment_range_se(*draw(2000), draws=100)
    assert 0 < large < small / 4  # about sqrt(100) = 10 times smaller, with room for noise
    x, groups = draw(20)
    assert alignment_range_se(x, groups, seed=1) == alignment_range_se(x, groups, seed=1)
    with pytest.raises(ValueError, match="draws"):
        alignment_range_se(x, groups, draws=1)


# ---------------------------------------------------------------------------------------------
# Difficulty scores against failures (App. F)

# Two models, four questions of difficulty score 1, 2, 3, 4; the last is not graded for model 1.
#   model 0: right, wrong, wrong, right
#   model 1: right, right, wrong, (not graded)
# Graded pairs as (score, wrong): (1, no) (2, yes) (3, yes) (4, no) (1, no) (2, no) (3, yes).
# Wrong scores {2, 3, 3}; right scores {1, 4, 1, 2}. Of the 3 x 4 = 12 (wrong, right) pairs the wrong one
# scores higher in: 2 > 1, 1 (2); 3 > 1, 1, 2 twice (6); ties 2 = 2 (one half): AUC = 8.5 / 12.
TOY_SCORES = np.array([1.0, 2.0, 3.0, 4.0])
TOY_LABELS = np.array([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, nan]])


def test_difficulty_auc_by_hand():
    assert difficulty.difficulty_auc(TOY_SCORES, TOY_LABELS) == pytest.approx(8.5 / 12)


def test_difficulty_auc_gap_is_paired_over_questions():
    rng = np.random.default_rng(0)
    hard = rng.random(300)  # (n_items,) the true difficulty
    labels = (rng.random((30, 300)) > hard).astype(float)
    noisy = hard + rng.normal(0, 0.3, 300)  # a worse score of the same difficulty
    gap, se = difficulty.difficulty_auc_gap(hard, noisy, labels, n_boot=100)
    assert gap == pytest.approx(difficulty.difficulty_auc(hard, labels) - difficulty.difficulty_auc(noisy, labels))
    assert gap > 3 * se > 0  # the truer score is clearly ahead
    # pairing: the gap's SE is below what two independent SEs would add up to
    alone = np.hypot(
        difficulty.difficulty_auc_se(hard, labels, n_boot=100), difficulty.difficulty_auc_se(noisy, labels, n_boot=100)
    )
    assert se < alone
    same, same_se = difficulty.difficulty_auc_gap(hard, hard, labels, n_boot=20)
    assert same == 0 and same_se == 0
    with pytest.raises(ValueError, match="one per question"):
        difficulty.difficulty_auc_gap(hard, np.ones((30, 300)), labels)


@pytest.mark.parametrize("masked", [False, True])
def test_the_bootstrap_counts_the_same_auc_as_difficulty_auc_on_each_draw(masked):
    """The bootstrap scores each draw from per-question counts; a draw's AUC over its pairs (repeated
    questions, tied and missing scores, ungraded and masked pairs, soft labels) is the same number."""
    rng = np.random.default_rng(3)
    labels = np.where(rng.random((20, 150)) < 0.1, nan, rng.random((20, 150)))  # soft, some ungraded
    tied, missing = np.round(rng.random(150), 1), np.where(rng.random(150) < 0.05, nan, rng.random(150))
    mask = rng.random(labels.shape) < 0.8 if masked else None
    se, gap_se = (difficulty._auc_bootstrap_se(s, labels, mask, 30, seed=4) for s in ([tied], [tied, missing]))
    draws = np.random.default_rng(4)
    aucs = []
    for _ in range(30):
        cols = draws.integers(0, 150, 150)
        sub = None if mask is None else mask[:, cols]
        aucs.append([difficulty.difficulty_auc(s[cols], labels[:, cols], sub) for s in (tied, missing)])
    aucs = np.array(aucs)
    assert se == pytest.approx(np.std(aucs[:, 0], ddof=1), rel=1e-9)
    assert gap_se == pytest.approx(np.std(aucs[:, 0] - aucs[:, 1], ddof=1), rel=1e-9)


def test_difficulty_auc_per_pair_scores_mask_and_soft_labels():
    per_pair = np.broadcast_to(TOY_SCORES, TOY_LABELS.shape)
    assert difficulty.difficulty_auc(per_pair, TOY_LABELS) == pytest.approx(8.5 / 12)
    # Without question 3 (score 4, right): wrong {2, 3, 3} vs right {1, 1, 2}: 2 + 0.5 + 6 = 8.5 of 9.
    mask = np.ones_like(TOY_LABELS, dtype=bool)
    mask[:, 3] = False
    assert difficulty.difficulty_auc(TOY_SCORES, TOY_LABELS, mask) == pytest.approx(8.5 / 9)
    # A soft label counts as correct from 0.5 up, as everywhere in jeirt.metrics.
    soft = np.where(TOY_LABELS == 1.0, 0.75, np.where(TOY_LABELS == 0.0, 0.25, nan))
    assert difficulty.difficulty_auc(TOY_SCORES, soft) == pytest.approx(8.5 / 12)
    # Reversing the score reverses the ranking.
    assert difficulty.difficulty_auc(-TOY_SCORES, TOY_LABELS) == pytest.approx(1 - 8.5 / 12)


def test_difficulty_roc_is_the_curve_of_that_auc():
    roc = difficulty.difficulty_roc(TOY_SCORES, TOY_LABELS)
    assert (roc["fpr"].iloc[0], roc["tpr"].iloc[0]) == (0.0, 0.0)
    assert (roc["fpr"].iloc[-1], roc["tpr"].iloc[-1]) == (1.0, 1.0)
    # Threshold 3: wrong pairs with score >= 3: 2 of 3; right ones: 1 (score 4) of 4.
    at3 = roc.loc[roc["threshold"] == 3.0].iloc[0]
    assert (at3["tpr"], at3["fpr"]) == pytest.approx((2 / 3, 1 / 4))
    area = np.sum(np.diff(roc["fpr"]) * (roc["tpr"].iloc[1:].to_numpy() + roc["tpr"].iloc[:-1].to_numpy()) / 2)
    assert area == pytest.approx(8.5 / 12)


def test_difficulty_scores_refuse_bad_input():
    with pytest.raises(ValueError, match="one per question"):
        difficulty.difficulty_auc(TOY_SCORES[:3], TOY_LABELS)
    with pytest.raises(ValueError, match="mask has shape"):
        difficulty.difficulty_auc(TOY_SCORES, TOY_LABELS, np.ones((3, 4), dtype=bool))
    with pytest.raises(ValueError, match="both outcomes"):
        difficulty.difficulty_roc(TOY_SCORES, np.ones((2, 4)))
    assert np.isnan(difficulty.difficulty_auc(TOY_SCORES, np.zeros((2, 4))))  # all wrong: no ranking


def test_share_wrong_by_hand():
    np.testing.assert_allclose(difficulty.share_wrong(TOY_LABELS), [0.0, 0.5, 1.0, 0.0])
    # Per pair, the other model's answer: model 0 sees model 1's, and the reverse.
    others = difficulty.share_wrong_others(TOY_LABELS)
    np.testing.assert_allclose(others, [[0.0, 0.0, 1.0, nan], [0.0, 1.0, 1.0, 0.0]])
    mask = np.array([[True, True, True, True], [False, False, False, False]])
    np.testing.assert_allclose(difficulty.share_wrong(TOY_LABELS, mask), [0.0, 1.0, 1.0, 0.0])


def test_norm_bin_accuracy_by_hand():
    # Norms 0.4, 0.1, 0.3, 0.2 -> two equal bins: {q1, q3} (0.1, 0.2) and {q0, q2} (0.3, 0.4).
    norms = np.array([0.4, 0.1, 0.3, 0.2])
    table = difficulty.norm_bin_accuracy(norms, TOY_LABELS, n_bins=2)
    assert list(table.index) == [1, 2]
    assert table["questions"].tolist() == [2, 2]
    # Bin 1: q1 (wrong, right) and q3 (right, not graded): 2 of 3 pairs right.
    # Bin 2: q0 (right, right) and q2 (wrong, wrong): 2 of 4.
    assert table["pairs"].tolist() == [3, 4]
    np.testing.assert_allclose(table["accuracy"], [2 / 3, 2 / 4])
    np.testing.assert_allclose(table[["low", "high"]].to_numpy(), [[0.1, 0.2], [0.3, 0.4]])
    with pytest.raises(ValueError, match="n_bins=5"):
        difficulty.norm_bin_accuracy(norms, TOY_LABELS, n_bins=5)


def test_norm_bins_have_equal_counts_and_follow_a_monotone_truth():
    rng = np.random.default_rng(0)
    norms = rng.uniform(0, 3, size=1000)
    labels = (rng.uniform(size=(30, 1000)) < 1 / (1 + np.exp(norms - 1.5))).astype(float)
    table = difficulty.norm_bin_accuracy(norms, labels, n_bins=20)
    assert set(table["questions"]) == {50}
    assert table["accuracy"].is_monotonic_decreasing or np.corrcoef(table.index, table["accuracy"])[0, 1] < -0.95
    assert difficulty.difficulty_auc(norms, labels) > 0.7


# ---------------------------------------------------------------------------------------------
# Leave one benchmark out (Table 3)


class ModelRate:
    """Stand-in estimator: predicts each model's share correct on its training labels, for every
    question; it records the split it was fitted on, so the test can check what it saw."""

    def fit(self, ds, split):
        self.split_ = split
        self.rate_ = ood._model_rates(ds.labels, split.train)
        return self

    def predict_proba(self, ds):
        return np.broadcast_to(self.rate_[:, None], ds.labels.shape).copy()


@pytest.fixture(scope="module")
def sim():
    ds, _ = simulate(n_models=12, n_items=240, feature_dim=8, d=4, n_benchmarks=3, seed=1)
    return ds, split_by_question(ds, seed=0)


def test_leave_benchmark_out_protocol(sim):
    ds, split = sim
    fitted = []

    def make():
        fitted.append(ModelRate())
        return fitted[-1]

    full = ModelRate().fit(ds, split)
    table = ood.leave_benchmark_out(ds, make, split, full)
    assert list(table.index) == ds.benchmarks + ["overall"]
    assert len(fitted) == len(ds.benchmarks)
    bench = ds.items["benchmark"].to_numpy()
    for model, name in zip(fitted, ds.benchmarks):
        seen = model.split_.train | model.split_.val
        assert not seen[:, bench == name].any(), f"the leave-out fit for {name} saw its labels"
        # Every benchmark is scored on its test-part pairs of the question split, for both columns.
        test = split.test & (bench == name)
        assert table.loc[name, "pairs"] == test.sum()
        # The stand-in predicts the training rate, so leave-out equals base by construction.
        assert table.loc[name, "leave-out"] == pytest.approx(table.loc[name, "base"])
        expected_all = np.mean((full.predict_proba(ds)[test] >= 0.5) == (ds.labels[test] >= 0.5))
        assert table.loc[name, "all"] == pytest.approx(expected_all)
        expected_bias = model.predict_proba(ds)[test].mean() - ds.labels[test].mean()
        assert table.loc[name, "bias"] == pytest.approx(expected_bias)
    np.testing.assert_allclose(table["diff"], table["leave-out"] - table["all"])
    assert table.loc["overall", "pairs"] == table["pairs"].iloc[:-1].sum()


def test_leave_benchmark_out_with_jeirt_and_errors(sim):
    ds, split = sim
    make = lambda: JEIRT(d=4, training={"max_epochs": 2}, random_state=0, progress=False)  # noqa: E731
    full = make().fit(ds, split)
    table = ood.leave_benchmark_out(ds, make, split, full, benchmarks=ds.benchmarks[:1], metric="auc")
    assert table.shape[0] == 2 and table[["leave-out", "all", "base"]].notna().all().all()
    with pytest.raises(ValueError, match="benchmarks="):
        ood.leave_benchmark_out(ds, make, split, full, benchmarks=["nope"])
    with pytest.raises(ValueError, match="metric="):
        ood.leave_benchmark_out(ds, make, split, full, metric="f1")


def test_one_leave_out_run_refuses_a_split_that_saw_the_benchmark(sim):
    ds, split = sim
    full = ModelRate().fit(ds, split)
    bench = ds.benchmarks[0]
    with pytest.raises(ValueError, match="split_leave_benchmark_out"):
        ood.left_out_pairs(ds, bench, split, split, full, full.predict_proba(ds))
    with pytest.raises(ValueError, match="runs is empty"):
        ood.left_out_table({})


def test_spread_pick():
    values = pd.Series({"a": 0.9, "b": 0.1, "c": 0.5, "d": 0.3, "e": 0.7})
    assert ood.spread_pick(values, 3) == ["b", "c", "a"]  # lowest, middle, highest
    assert ood.spread_pick(values, 9) == ["b", "d", "c", "e", "a"]
    assert ood.spread_pick(values, 1) == ["c"]
    with pytest.raises(ValueError, match="k=0"):
        ood.spread_pick(values, 0)
