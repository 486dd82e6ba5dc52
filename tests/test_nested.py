"""Tests for this book's nested variant (`jeirt.nested`, `JEIRT(nested=True)`): the offsets it starts
from, the folds, the joined network, the residual's weight, the estimator's fit, files and onboarding,
and the learning curve's split (`fewer_training_questions`)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from jeirt.estimator import JEIRT
from jeirt.metrics import log_loss
from jeirt.model import NestedJEIRTNet, sigmoid
from jeirt.nested import benchmark_offsets, group_columns, question_folds, residual_weight
from jeirt.simulate import simulate
from jeirt.splits import fewer_training_questions, split_by_question

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def sim():
    ds, _ = simulate(n_models=20, n_items=300, feature_dim=16, d=4, seed=0)
    return ds


@pytest.fixture(scope="module")
def fitted(sim):
    split = split_by_question(sim, seed=0)
    est = JEIRT(d=8, encoder="simulated", nested=True, training={"max_epochs": 4}, progress=False)
    return est.fit(sim, split), split


def test_offsets_are_each_llms_smoothed_benchmark_accuracy():
    labels = np.array([[1, 1, 0, np.nan], [1, 1, 1, 1]], dtype=np.float32)  # 2 LLMs x 4 questions
    groups = group_columns(["a", "a", "b", "b"], ["a", "b"])  # (4, 3): a, b, other
    assert groups.tolist() == [[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0]]
    offsets = benchmark_offsets(labels, np.ones_like(labels, dtype=bool), groups, prior=2.0)
    mean_all = 6 / 7  # 6 of the 7 answers right
    overall = [(2 + 2 * mean_all) / (3 + 2), (4 + 2 * mean_all) / (4 + 2)]
    expected = [[(2 + 2 * overall[0]) / 4, (0 + 2 * overall[0]) / 3], [(2 + 2 * overall[1]) / 4] * 2]
    accuracy = sigmoid(offsets)
    np.testing.assert_allclose(accuracy[:, :2], expected, rtol=1e-12)
    np.testing.assert_allclose(accuracy[:, 2], overall, rtol=1e-12)  # no training benchmark: the overall
    assert np.isfinite(offsets).all()  # the LLM with every answer right stays finite
    with pytest.raises(ValueError, match="no labels"):
        benchmark_offsets(labels, np.zeros_like(labels, dtype=bool), groups)


def test_folds_deal_each_benchmarks_training_questions_in_turn(sim):
    split = split_by_question(sim, seed=0)
    trained = split.items_of("train")
    folds = question_folds(sim.items["item_id"], sim.items["benchmark"], trained, 4, seed=3)
    assert (folds[trained] >= 0).all() and (np.delete(folds, trained) == -1).all()
    for bench in sim.items["benchmark"].unique():
        counts = np.bincount(folds[trained][sim.items["benchmark"].to_numpy()[trained] == bench], minlength=4)
        assert counts.max() - counts.min() <= 1
    shuffled = np.random.default_rng(0).permutation(sim.n_items)  # rows in another order: the same folds by id
    again = question_folds(
        sim.items["item_id"].to_numpy()[shuffled],
        sim.items["benchmark"].to_numpy()[shuffled],
        np.flatnonzero(np.isin(shuffled, trained)),
        4,
        seed=3,
    )
    assert (again == folds[shuffled]).all()


def test_joined_parts_give_the_mean_of_their_logits_and_weight_zero_the_offsets():
    torch.manual_seed(0)
    parts = [NestedJEIRTNet(6, 5, 3, d=4, parts=1) for _ in range(3)]
    offsets = torch.randn(5, 3)
    for part in parts:
        part.offsets.copy_(offsets)
    rows = torch.cat([torch.randn(7, 6), torch.eye(3)[torch.randint(0, 3, (7,))]], dim=1)  # features, one-hot
    joined = NestedJEIRTNet.from_parts(parts).eval()
    base = rows[:, 6:] @ offsets.T
    with torch.no_grad():
        mean = torch.stack([part.eval()(rows) - base for part in parts]).mean(dim=0)
        torch.testing.assert_close(joined(rows) - base, mean, rtol=1e-5, atol=1e-5)
        assert joined.question_embeddings(rows).shape == (7, 12)
        joined.scale_embeddings(0.0)
        torch.testing.assert_close(joined(rows), base)  # weight 0: each LLM's benchmark accuracy, nested
    with pytest.raises(ValueError, match="divisor"):
        NestedJEIRTNet(6, 5, 3, d=10, parts=3)


def test_residual_weight_recovers_the_weight_that_made_the_labels():
    rng = np.random.default_rng(0)
    offsets, residuals = rng.normal(size=200_000), rng.normal(size=200_000)
    labels = (rng.random(200_000) < sigmoid(offsets + 0.4 * residuals)).astype(float)
    assert residual_weight(offsets, residuals, labels) == pytest.approx(0.4, abs=0.03)
    assert residual_weight(offsets, -residuals, labels) == pytest.approx(0.0, abs=1e-3)  # never below 0
    assert residual_weight(offsets, 0.2 * residuals, labels) == pytest.approx(1.0, abs=1e-3)  # never above 1


def test_nested_fit_predicts_saves_loads_and_never_trails_its_offsets_on_validation(fitted, sim, tmp_path):
    est, split = fitted
    record = est.calibration_
    assert record["parts"] == 4 and len(record["best_epochs"]) == 4
    assert 0.0 <= record["weight"] <= 1.0 and record["kept_variance"] > 0
    assert est.model_vectors_.shape == (sim.n_models, 8) and est.question_embeddings(sim).shape == (sim.n_items, 8)
    probs = est.predict_proba(sim)
    assert probs.shape == sim.labels.shape and np.isfinite(probs).all()
    back = JEIRT.load(est.save(tmp_path / "nested.pt"))
    np.testing.assert_allclose(back.predict_proba(sim), probs, atol=1e-6)
    # weight 0 is the offsets alone: the fitted model is at least as good on the labels that chose it
    start = back.net_.offsets.numpy()[:, :-1] @ group_columns(sim.items["benchmark"], back.benchmarks_)[:, :-1].T
    sel = split.train & sim.observed
    train_items = np.flatnonzero(sel.any(axis=0))
    assert log_loss(probs[:, train_items][sel[:, train_items]], sim.labels[:, train_items][sel[:, train_items]]) <= (
        log_loss(sigmoid(start)[:, train_items][sel[:, train_items]], sim.labels[:, train_items][sel[:, train_items]])
    )
    with pytest.raises(ValueError, match="nested variant"):
        est.question_terms(sim)


def test_nested_onboarding_fits_a_new_llms_offsets_and_vector(fitted, sim):
    est, _ = fitted
    newcomer = sim.subset(models=[0])
    newcomer.models = ["newcomer"]
    before = est.predict_proba(sim)
    grown = copy.deepcopy(est).onboard(newcomer)
    assert grown.models_[-1] == "newcomer" and grown.net_.offsets.shape[0] == sim.n_models + 1
    np.testing.assert_allclose(grown.predict_proba(sim, models=sim.models), before, atol=1e-6)  # the others unchanged
    new = grown.predict_proba(sim, models=["newcomer"])[0]
    old = before[0]
    assert np.corrcoef(new, old)[0, 1] > 0.8  # the same answers: close to the LLM it copies


def test_nested_settings_are_checked(sim):
    for kwargs, message in [
        ({"search": True}, "does not combine"),
        ({"benchmark_feature": True}, "does not combine"),
        ({"folds": 1}, "folds=1"),
        ({"folds": 3}, "multiple"),
    ]:
        with pytest.raises(ValueError, match=message):
            JEIRT(d=8, encoder="simulated", nested=True, progress=False, **kwargs).fit(sim)


def test_fewer_training_questions_keeps_shares_and_grows_by_adding(sim):
    split = split_by_question(sim, seed=1)
    small, large = (fewer_training_questions(sim, split, n, seed=1) for n in (40, 120))
    kept_small, kept_large = small.items_of("train"), large.items_of("train")
    assert len(kept_small) == 40 and len(kept_large) == 120 and set(kept_small) <= set(kept_large)
    assert (small.val == split.val).all() and (small.test == split.test).all()
    shares = sim.items["benchmark"].iloc[kept_large].value_counts(normalize=True)
    full = sim.items["benchmark"].iloc[split.items_of("train")].value_counts(normalize=True)
    assert (shares - full).abs().max() < 0.02
    assert small.name == f"{split.name}-train40"
    with pytest.raises(ValueError, match="training questions"):
        fewer_training_questions(sim, split, len(split.items_of("train")) + 1)


def test_compare_runs_the_variant_on_fewer_training_questions_with_paired_intervals(sim):
    from jeirt.tasks import compare as cmp

    runs = cmp.compare(
        [sim], ["simulated"], seeds=(0, 1, 2), methods=["je-irt+nested", "benchmark-accuracy"], split="question:120"
    )
    assert set(runs["split"]) == {f"question-seed{s}-train120" for s in (0, 1, 2)}
    fitted = json.loads(runs.loc[runs["method"] == "je-irt+nested", "fitted"].iloc[0])
    assert {"weight", "out_of_fold_weight", "kept_variance"} <= set(fitted)
    versus = cmp.paired_margins(runs, "je-irt+nested", against=["benchmark-accuracy"])
    assert set(versus["other"]) == {"benchmark-accuracy"} and (versus["seeds"] == 3).all()
    assert ((versus["low"] <= versus["margin_mean"]) & (versus["margin_mean"] <= versus["high"])).all()
    diff = runs.pivot_table(index="seed", columns="method", values="accuracy")
    diff = diff["je-irt+nested"] - diff["benchmark-accuracy"]
    half = 4.302653 * diff.std(ddof=1) / np.sqrt(3)  # t(0.975, 2 df)
    row = versus[versus["metric"] == "accuracy"].iloc[0]
    assert row["low"] == pytest.approx(diff.mean() - half) and row["high"] == pytest.approx(diff.mean() + half)
    beyond = cmp.variant_margins(runs)
    assert set(beyond["variant"]) == {"je-irt+nested"} and set(beyond["other"]) == {"benchmark-accuracy"}
    assert beyond["best"].any() and (~beyond["best"]).any()  # the best other, then each named one
    with pytest.raises(ValueError, match="question:<number"):
        cmp.make_split(sim, "question:many", 0)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["fit", "--dataset", "mmlu_pro", "--nested", "--search"], "--nested does not combine with --search"),
        (["compare", "--dataset", "zeroeval", "--split", "question:few"], "--split 'question:few'"),
    ],
)
def test_the_command_line_refuses_what_the_variant_cannot_do(argv, fragment, capsys):
    from jeirt.cli import main

    assert main(argv) == 2
    assert fragment in capsys.readouterr().err
