"""Protocols of the chapters "Embedding dimension" (Fig. 2) and "Onboarding new LLMs" (Tables 1-2,
Appendix D): their tables, their seeds, the rate measurement, and the figure helpers.

Everything runs on simulated data drawn from JE-IRT itself (`jeirt.simulate`), where the answer
is known: the true dimension is 8, and a model's vector is recoverable from its answers.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from jeirt import encoders
from jeirt.book import dimension, figures, onboarding
from jeirt.estimator import JEIRT
from jeirt.metrics import evaluate
from jeirt.simulate import simulate
from jeirt.splits import split_by_question

ENC = "simulated"


def make_jeirt(d: int = 8, epochs: int = 20):
    """A factory of small JE-IRT fits on the simulated features, seeded by its argument: 64 questions
    a step, lr 1e-2 decayed 0.95 an epoch, weight decay 1e-4, no dropout: validation loss 0.610 at
    d = 8 (the true model: 0.581). The default recipe (dropout 0.5, decay 0.75 an epoch) stops at 0.642
    here: 640 simulated questions whose labels have no noise beyond the Bernoulli draws need no dropout."""
    return lambda seed: JEIRT(d=d, encoder=ENC, dropout=0.0, random_state=seed, progress=False,
                              training={"max_epochs": epochs, "batch_items": 64, "lr": 1e-2,
                                        "lr_decay": 0.95, "weight_decay": 1e-4})


@pytest.fixture(scope="module")
def sim():
    """50 models x 800 items, true d = 8, every label observed."""
    ds, _ = simulate(n_models=50, n_items=800, feature_dim=32, d=8, seed=1)
    return ds


@pytest.fixture(scope="module")
def sweep(sim):
    return dimension.dimension_sweep(sim, lambda enc, d, seed: make_jeirt(d)(seed), [ENC], (1, 8), (0, 1),
                                       progress=False)


# ---------------------------------------------------------------------------------------------
# Dimension sweep (Fig. 2)


def test_dimension_sweep_tables_and_the_true_dimension_wins(sim, sweep):
    runs = sweep.runs
    assert len(runs) == 4 and set(runs["d"]) == {1, 8} and set(runs["seed"]) == {0, 1}
    assert runs[["accuracy", "auc", "log_loss", "val_loss", "fit_seconds"]].notna().all().all()
    # Each seed has its own split, shared by both dimensions: the same number of test labels.
    n = runs.set_index(["seed", "d"])["n"]
    assert n[(0, 1)] == n[(0, 8)] and n[(1, 1)] == n[(1, 8)]
    assert len(sweep.per_model) == 4 * sim.n_models
    assert set(sweep.per_benchmark["benchmark"]) == set(sim.benchmarks)
    # Data drawn with d = 8 cannot be fitted as well in one dimension.
    mean = runs.groupby("d")[["val_loss", "log_loss"]].mean()
    assert mean.at[8, "val_loss"] < mean.at[1, "val_loss"] - 0.01
    assert mean.at[8, "log_loss"] < mean.at[1, "log_loss"]
    assert dimension.best_dimension(runs).to_dict() == {ENC: 8}


def test_sweep_summary_and_best_dimension_on_a_known_table():
    runs = pd.DataFrame({"encoder": ["a"] * 4 + ["b"] * 2, "d": [2, 2, 4, 4, 2, 4],
                         "seed": [0, 1, 0, 1, 0, 0], "accuracy": [0.6, 0.7, 0.8, 0.9, 0.5, 0.4],
                         "val_loss": [0.5, 0.5, 0.4, 0.6, 0.3, 0.2], "auc": 0.7, "fit_seconds": 1.0})
    table = dimension.sweep_summary(runs).set_index(["encoder", "d"])
    assert table.at[("a", 2), "accuracy_mean"] == pytest.approx(0.65)
    assert (table.at[("a", 4), "accuracy_min"], table.at[("a", 4), "accuracy_max"]) == (0.8, 0.9)
    assert table.at[("a", 2), "seeds"] == 2 and np.isnan(table.at[("b", 2), "accuracy_std"])
    # a: d = 2 and 4 tie on mean validation loss (0.5); idxmin keeps the first; b: d = 4.
    assert dimension.best_dimension(runs).to_dict() == {"a": 2, "b": 4}


def test_dimension_sweep_rejects_empty_or_bad_grids(sim):
    with pytest.raises(ValueError, match="d_grid"):
        dimension.dimension_sweep(sim, lambda e, d, s: None, [ENC], (), (0,))
    with pytest.raises(ValueError, match="positive"):
        dimension.dimension_sweep(sim, lambda e, d, s: None, [ENC], (0, 4), (0,))


def test_baselines_use_the_same_splits_as_the_sweep(sim, sweep):
    reference = dimension.baseline_reference(sim, [ENC], (0,), max_epochs=5, progress=False)
    runs = reference.runs
    assert list(runs["method"]) == ["embedllm-mf", "knn"]
    assert runs["accuracy"].between(0.5, 1).all()
    sweep_n = sweep.runs.query("seed == 0")["n"].iloc[0]
    assert (runs["n"] == sweep_n).all()  # scored on the same test labels
    assert set(reference.per_benchmark["method"]) == {"embedllm-mf", "knn"}


def test_available_encoders_uses_precomputed_features_and_says_why_it_skips(sim, monkeypatch):
    usable, skipped = dimension.available_encoders(sim, wanted=(ENC, "all-mpnet-base-v2"))
    assert usable == [ENC] and "no precomputed features" in skipped["all-mpnet-base-v2"]

    def offline(name, **kwargs):
        raise FileNotFoundError(f"no weights found for encoder {name!r}\n  - tried everything")

    monkeypatch.setattr(encoders, "get_encoder", offline)
    usable, skipped = dimension.available_encoders(sim, wanted=("ModernBERT-large",), try_loading=True)
    assert usable == [] and skipped["ModernBERT-large"].startswith("FileNotFoundError: no weights found")
    monkeypatch.setattr(encoders, "get_encoder", lambda name, **kwargs: object())
    assert dimension.available_encoders(sim, wanted=("minilm",), try_loading=True)[0] == ["all-MiniLM-L6-v2"]


def test_score_test_rows_match_metrics_evaluate(sim, sweep):
    model = make_jeirt()(0).fit(sim, split_by_question(sim, seed=0))
    split = split_by_question(sim, seed=0)
    scores = dimension.score_test(model, sim, split, {"tag": "x"})
    direct = evaluate(model.predict_proba(sim), sim, split.test)
    assert scores.runs.at[0, "accuracy"] == pytest.approx(direct["overall"]["accuracy"])
    per_model = scores.per_model.set_index("model")["log_loss"]
    np.testing.assert_allclose(per_model.to_numpy(), direct["per_model"]["log_loss"].to_numpy(), rtol=1e-6)
    # The onboarding tables' vectorised scorer agrees too.
    items = split.items_of("test")
    test = sim.subset(items=items)
    rows = pd.DataFrame(onboarding._per_model_rows(model, test, split.test[:, items],
                                                    np.zeros(sim.n_models), {}))
    np.testing.assert_allclose(rows["accuracy"], direct["per_model"]["accuracy"], rtol=1e-9)
    np.testing.assert_allclose(rows["log_loss"], direct["per_model"]["log_loss"], rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# Onboarding (Tables 1-2)


@pytest.fixture(scope="module")
def onboarded(sim):
    joint = onboarding.joint_models(sim, make_jeirt(), (0,), progress=False)
    curve = onboarding.onboarding_curve(sim, make_jeirt(), 8, fractions=(0.02, 0.2, 1.0), seeds=(0,),
                                         joint=joint, progress=False)
    return joint, curve


def test_onboarding_curve_rows_items_and_accuracy(sim, onboarded):
    _, curve = onboarded
    assert list(dict.fromkeys(curve["setting"])) == ["2%", "20%", "100%", "All"]
    assert curve.groupby("setting").size().eq(8).all()  # 8 held-out models in every setting
    items = curve.groupby("setting", sort=False)["items"].mean()
    assert items["2%"] < items["20%"] < items["100%"] == items["All"]
    table = onboarding.onboarding_table(curve)
    assert list(table.index) == ["mean", "sd", "items"] and list(table.columns) == ["2%", "20%", "100%", "All"]
    # More answers, a better vector (by log loss, the proper score: with d = 8 and 13 answers the
    # prior from the known models already gets most of the accuracy); from all of them, no worse than
    # joint training (here, with a short joint fit, the exact onboarding fit is about two points better).
    log_loss = curve.groupby("setting")["log_loss"].mean()
    assert log_loss["100%"] < log_loss["20%"] and log_loss["100%"] < log_loss["2%"]
    assert table.at["mean", "100%"] >= table.at["mean", "2%"]
    assert table.at["mean", "100%"] > table.at["mean", "All"] - 0.01


def test_onboarding_gap_is_paired_per_model():
    curve = pd.DataFrame({"seed": 0, "model": ["a", "b", "a", "b"], "setting": ["100%", "100%", "All", "All"],
                          "accuracy": [0.70, 0.60, 0.65, 0.62]})
    gap = onboarding.onboarding_gap(curve)
    assert gap.to_dict() == pytest.approx({(0, "a"): 0.05, (0, "b"): -0.02})
    with pytest.raises(ValueError, match="not in the curve"):
        onboarding.onboarding_gap(curve, setting="50%")


def test_onboarding_refuses_a_joint_model_from_another_split(sim, onboarded):
    joint, _ = onboarded
    with pytest.raises(ValueError, match="was fitted on split"):
        onboarding.onboarding_curve(sim, make_jeirt(epochs=2), 5, fractions=(1.0,), seeds=(1,),
                                     joint={1: joint[0]}, progress=False)
    with pytest.raises(ValueError, match="fractions"):
        onboarding.onboarding_curve(sim, make_jeirt(), 5, fractions=(0.0, 1.0), progress=False)


def test_onboarding_curve_takes_named_models(sim):
    names = sim.models[:3]
    curve = onboarding.onboarding_curve(sim, make_jeirt(epochs=3), names, fractions=(1.0,), progress=False)
    assert sorted(curve["model"]) == sorted(names)


def test_recent_models_by_release_month():
    models = ["gpt-4o(2024-05-13)", "Llama-2-7b-hf", "gemini-1.5-pro-002"]
    assert onboarding.recent_models(models) == ["gpt-4o(2024-05-13)", "gemini-1.5-pro-002"]
    assert onboarding.recent_models(models, since="2024-06") == ["gemini-1.5-pro-002"]
    with pytest.raises(KeyError, match="no release month"):
        onboarding.recent_models(["some-new-model"])


# ---------------------------------------------------------------------------------------------
# The O(d/n) rate (Appendix D)


def test_first_items_keeps_n_per_row_and_nests():
    rng = np.random.default_rng(0)
    mask = rng.random((6, 50)) < 0.5
    mask[0] = False
    mask[1, :] = False
    mask[1, :3] = True  # a row with fewer than n entries keeps all of them
    small, large = onboarding.first_items(mask, 4, seed=3), onboarding.first_items(mask, 10, seed=3)
    assert not (small & ~mask).any() and not (large & ~mask).any()
    assert list(small.sum(axis=1)) == [0, 3, 4, 4, 4, 4]
    assert (small <= large).all()  # nested
    assert not np.array_equal(small, onboarding.first_items(mask, 4, seed=4))
    with pytest.raises(ValueError, match="n=0"):
        onboarding.first_items(mask, 0)


def test_onboarding_rate_error_falls_with_n(sim):
    rate = onboarding.onboarding_rate(sim, make_jeirt(), 10, counts=(2, 16, 128), seed=0, progress=False)
    summary = onboarding.rate_summary(rate)
    assert list(summary.index) == [2, 16, 128, "all"] and (summary["models"] == 10).all()
    assert (rate["kl"] >= 0).all()
    assert summary.at["all", "kl"] == 0 and summary.at["all", "excess_log_loss"] == 0
    assert summary.at[2, "kl"] > summary.at[16, "kl"] > summary.at[128, "kl"]
    assert summary.at[128, "accuracy"] > summary.at[2, "accuracy"]
    assert list(summary["items"].iloc[:3]) == [2, 16, 128]


def test_onboarding_rate_draws_only_fully_graded_models():
    ds, _ = simulate(n_models=12, n_items=200, feature_dim=16, d=4, density=0.9, seed=0)
    with pytest.raises(ValueError, match="graded on every"):
        onboarding.onboarding_rate(ds, make_jeirt(4, 2), 5, counts=(4,), progress=False)
    with pytest.raises(ValueError, match="counts"):
        onboarding.onboarding_rate(ds, make_jeirt(4, 2), ds.models[:2], counts=(), progress=False)


def test_bernoulli_kl_is_zero_on_equal_and_positive_otherwise():
    p = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(onboarding._bernoulli_kl(p, p), 0, atol=1e-12)
    assert (onboarding._bernoulli_kl(p, p[::-1])[[0, 2]] > 0.5).all()


# ---------------------------------------------------------------------------------------------
# Figures


def test_figure_helpers_follow_the_house_style(sweep):
    summary = dimension.sweep_summary(sweep.runs)
    baselines = pd.DataFrame({"method": ["knn"], "encoder": [ENC], "accuracy": [0.7]})
    table = pd.DataFrame({"mean": [0.6, 0.7, 0.72], "sd": [0.1, 0.05, 0.04], "items": [5, 50, 50]},
                         index=["10%", "100%", "All"]).T
    rate = pd.DataFrame({"items": [2, 8, 32, 100], "accuracy": [0.6, 0.65, 0.7, 0.7],
                         "kl": [0.1, 0.03, -1e-3, 0.0]}, index=pd.Index([2, 8, 32, "all"], dtype=object))
    fig, axes = plt.subplots(2, 3)
    dimension.accuracy_vs_dimension(axes[0, 0], summary, baselines)
    figures.dots_by_group(axes[0, 1], pd.DataFrame({"a": [0.6, 0.7], "b": [0.65, 0.5]}, index=["x", "y"]))
    onboarding.onboarding_curves(axes[0, 2], {"random": table})
    onboarding.rate_accuracy(axes[1, 0], {4: rate})
    onboarding.rate_loglog(axes[1, 1], {4: rate})
    figures.check_figure(fig)
    assert len(axes[0, 0].lines) == 2  # one JE-IRT line, one baseline line
    x, _ = axes[1, 1].lines[0].get_data()
    assert list(x) == [2, 8]  # a non-positive excess cannot be drawn on a log axis
    plt.close(fig)
