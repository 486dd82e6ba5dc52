"""Ability probes (jeirt.analysis.probes) and soft labels (jeirt.data helpers, the trainer's checks)."""

from __future__ import annotations

import numpy as np
import pytest

from jeirt import metrics
from jeirt.analysis import probes
from jeirt.data import Dataset
from jeirt.estimator import JEIRT
from jeirt.model import JEIRTNet
from jeirt.simulate import draw_labels, simulate, soft_labels_from_draws
from jeirt.splits import split_by_question
from jeirt.train import TrainConfig, train

# ---------------------------------------------------------------------------------------------
# The rule

POSITIVE = [
    "What is 3 + 4?\nA. 5\nB. 7\nC. 8",  # an explicit operation
    "Compute 2^10 modulo 7.\nA. one\nB. two",  # a power, options in words
    "Find x if $x = 5 \\times 3$.",  # LaTeX operator, no options at all
    "A car travels 60 km in 1.5 hours. What is its average speed?\nA. 30 km/h\nB. 40 km/h\nC. 90 km/h",
    "A company bought equipment for $100 million with a 20-year life. Depreciation?\n(A) $5,000,000\n(B) $4,000,000",
]
NEGATIVE = [
    "Which of the following is a mammal?\nA. shark\nB. whale\nC. trout",  # no numbers
    "A 9-year-old boy has had a fever for 2 days. Diagnosis?\nA. flu\nB. measles",  # numbers, word options
    "Which treaty ended the war of 1914-1918?\nA. Versailles\nB. Utrecht",  # a range is not a subtraction
    "Her blood pressure is 120/80 mm Hg. What is normal?\nA. yes\nB. no",  # a ratio is not a division
    "In which year did the war end?\nA. 1918\nB. 1945\nC. 1815",  # numeric options, one number in the stem
]


@pytest.mark.parametrize("text", POSITIVE)
def test_rule_marks_questions_that_combine_numbers(text):
    assert probes.needs_arithmetic(text), probes.arithmetic_evidence(text)


@pytest.mark.parametrize("text", NEGATIVE)
def test_rule_leaves_other_questions_unmarked(text):
    assert not probes.needs_arithmetic(text), probes.arithmetic_evidence(text)


def test_stem_and_options_are_split_at_the_first_option_line():
    text = "Add 2 and 3.\nA. 5\nB. 6\nC. seven"
    assert probes.question_stem(text) == "Add 2 and 3."
    assert probes.option_texts(text) == ["5", "6", "seven"]
    assert probes.arithmetic_evidence(text) == {"expression": "", "stem numbers": 2, "numeric options": 2 / 3}
    assert probes.question_stem("no options here") == "no options here"
    np.testing.assert_array_equal(probes.mark(["1 + 1", "why?"]), [True, False])


# ---------------------------------------------------------------------------------------------
# Direction, projection, AUCs


def test_difference_of_means_worked_by_hand():
    # Unit rows: (1, 0), (0, 1) marked; (1, 0), (0, -1) not. Means (.5, .5) and (.5, -.5): axis (0, 1).
    x = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0], [0.0, -3.0]])
    w = probes.difference_of_means(x, np.array([True, True, False, False]))
    np.testing.assert_allclose(w, [0.0, 1.0])
    np.testing.assert_allclose(probes.project(np.array([[3.0, 4.0], [-6.0, 0.0]]), w), [0.8, 0.0])
    # A row's length does not count: only its direction.
    x2 = np.array([[10.0, 0.0], [0.0, 0.1], [1.0, 0.0], [0.0, -1.0]])
    np.testing.assert_allclose(probes.difference_of_means(x2, np.array([True, True, False, False])), w)


def test_difference_of_means_needs_both_kinds():
    with pytest.raises(ValueError, match="both kinds"):
        probes.difference_of_means(np.eye(3), np.array([True, True, True]))
    with pytest.raises(ValueError, match="one flag per row"):
        probes.difference_of_means(np.eye(3), np.array([True, False]))


def test_within_group_auc_worked_by_hand():
    scores = np.array([1, 2, 3, 5, 4, 6, 1, 9, 8])
    marked = np.array([0, 1, 1, 1, 0, 0, 1, 1, 1], dtype=bool)
    groups = np.array(["a"] * 3 + ["b"] * 4 + ["c"] * 2)
    # a: marked {2, 3} above unmarked {1}: 1. b: marked {5, 1} vs {4, 6}: only 5 > 4 of 4 pairs, 0.25.
    # c: all marked, left out.
    mean, table = probes.within_group_auc(scores, marked, groups)
    assert list(table.index) == ["a", "b"]
    np.testing.assert_allclose(table["auc"], [1.0, 0.25])
    assert mean == pytest.approx(0.625)
    pairs = [(s > t) + 0.5 * (s == t) for s in scores[marked] for t in scores[~marked]]  # ties: one half
    assert metrics.auc(scores, marked) == pytest.approx(np.mean(pairs))
    # A score that only knows the group: 0.5 within every group, whatever the overall AUC.
    base = probes.group_baseline(marked, groups, groups)
    np.testing.assert_allclose(probes.within_group_auc(base, marked, groups)[1]["auc"], 0.5)
    _, strict = probes.within_group_auc(scores, marked, groups, min_each=2)
    assert list(strict.index) == ["b"]


def test_probe_report_refuses_overlap_and_scores_held_out_items():
    rng = np.random.default_rng(0)
    marked = np.arange(40) % 2 == 0
    x = rng.normal(size=(40, 3)) + 3.0 * marked[:, None] * np.array([1.0, 0, 0])
    groups = np.repeat(["a", "b"], 20)
    report = probes.probe_report(
        x, marked, groups, np.arange(0, 40, 2)[:10].tolist() + list(range(1, 21, 2)), np.arange(20, 40)
    )
    assert report["auc"] > 0.9 and report["groups compared"] == 1
    with pytest.raises(ValueError, match="share items"):
        probes.probe_report(x, marked, groups, np.arange(30), np.arange(20, 40))


def test_accuracy_gap_and_partial_spearman_by_hand():
    labels = np.array([[1, 1, 0, 0], [1, 0, 1, np.nan]])  # (models, items)
    marked = np.array([True, False, True, False])
    groups = np.array(["a", "a", "b", "b"])
    # Overall: model 0: 1/2 - 1/2 = 0; model 1: 1 - 0 = 1.
    np.testing.assert_allclose(probes.accuracy_gap(labels, marked), [0.0, 1.0])
    # Within groups (2 questions each): a: 0 and 1; b: 0 and (1 - NaN) -> only a counts for model 1.
    np.testing.assert_allclose(probes.accuracy_gap(labels, marked, groups=groups), [0.0, 1.0])
    rng = np.random.default_rng(0)
    skill = rng.uniform(size=2000)
    shared, own = rng.normal(scale=0.1, size=(2, 2000))
    # Both follow skill: a high Spearman, but nothing in common once skill is taken out ...
    assert metrics.spearman(skill + shared, skill + own) > 0.8
    assert abs(probes.partial_spearman(skill + shared, skill + own, skill)) < 0.1
    # ... unless they share more than skill.
    assert probes.partial_spearman(skill + shared, skill + shared + 0.01 * own, skill) > 0.9
    assert np.isnan(metrics.spearman([1.0, 2.0], [2.0, 1.0]))


# ---------------------------------------------------------------------------------------------
# Soft labels


def test_soft_labels_from_draws_by_hand():
    draws = np.array([[[1, 0, np.nan]], [[1, 1, np.nan]], [[0, np.nan, np.nan]]])  # (3 draws, 1 model, 3 items)
    np.testing.assert_allclose(soft_labels_from_draws(draws), [[2 / 3, 0.5, np.nan]])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        soft_labels_from_draws(np.full((2, 1, 1), 2.0))
    drawn = draw_labels(np.array([[0.2, np.nan, 1.0]]), 4000, seed=0)
    assert drawn.shape == (4000, 1, 3) and set(np.unique(drawn[:, 0, 0])) == {0.0, 1.0}
    rates = soft_labels_from_draws(drawn)
    assert abs(rates[0, 0] - 0.2) < 0.03 and np.isnan(rates[0, 1]) and rates[0, 2] == 1.0


def test_trainer_accepts_fractional_labels_and_refuses_others(small_sim, one_thread):
    ds, truth = small_sim
    split = split_by_question(ds, seed=0)
    x = ds.embeddings["simulated"]
    config = TrainConfig(max_epochs=2)
    soft = truth.probabilities.astype(np.float32)  # strictly between 0 and 1
    history = train(
        JEIRTNet(x.shape[1], ds.n_models, 4), x, soft, split.train, split.val, config, device="cpu", progress=False
    )
    assert np.isfinite(history.val_loss).all()
    for bad, what in ((1.5, "1.5"), (-0.1, "-0.1"), (np.nan, "nan")):
        labels = soft.copy()
        labels[np.argwhere(split.train)[0][0], np.argwhere(split.train)[0][1]] = bad
        with pytest.raises(ValueError, match=rf"train mask must be numbers in \[0, 1\].*{what}"):
            train(
                JEIRTNet(x.shape[1], ds.n_models, 4),
                x,
                labels,
                split.train,
                split.val,
                config,
                device="cpu",
                progress=False,
            )
    # Not graded (NaN) outside the masks is fine: the masks say what is read.
    labels = soft.copy()
    labels[split.test] = np.nan
    train(JEIRTNet(x.shape[1], ds.n_models, 4), x, labels, split.train, split.val, config, device="cpu", progress=False)
    with pytest.raises(ValueError, match="val mask"):
        train(JEIRTNet(x.shape[1], ds.n_models, 4), x, labels, split.train, split.val | split.test, config)


def test_training_on_true_probabilities_recovers_them_better_than_one_draw(one_thread):
    sim, truth = simulate(n_models=20, n_items=1500, feature_dim=16, d=4, soft=True, seed=1)
    split = split_by_question(sim, seed=0)
    p = truth.probabilities
    fits = {}
    for name, labels in (("truth", p), ("one draw", draw_labels(p, 1, seed=0)[0])):
        ds = Dataset(sim.name, sim.models, sim.items, labels, sim.embeddings)
        # The recipe of the simulated fits in test_experiments: no dropout, a slow decay.
        model = JEIRT(
            d=4,
            encoder="simulated",
            dropout=0.0,
            feature_noise=0.0,
            device="cpu",
            progress=False,
            training={"lr": 1e-2, "max_epochs": 40, "batch_items": 64, "lr_decay": 0.95, "weight_decay": 1e-4},
        ).fit(ds, split)
        fits[name] = model.predict_proba(sim)[split.test]
    kl = {
        k: np.mean(
            p[split.test] * np.log(p[split.test] / q) + (1 - p[split.test]) * np.log((1 - p[split.test]) / (1 - q))
        )
        for k, q in fits.items()
    }
    corr = {k: np.corrcoef(q, p[split.test])[0, 1] for k, q in fits.items()}
    assert kl["truth"] < 0.8 * kl["one draw"], kl  # 0.57-0.70 over simulation seeds 1-3
    assert corr["truth"] > corr["one draw"], corr
