"""The experiments of the chapters "Embedding dimension" (Fig. 2) and "Onboarding new LLMs" (Tables
1-2, Appendix D): their steps (`jeirt_book.experiments.dimension`, `jeirt_book.experiments.onboarding`), run here in the
loops the pages write, their tables, their seeds, the rate measurement, and the pages' figures.

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
from figure_checks import check_figure

import jeirt_book.experiments.dimension as dim
import jeirt_book.experiments.onboarding as onb
from jeirt import encoders
from jeirt.estimator import JEIRT
from jeirt.fitcache import fit_many
from jeirt.metrics import evaluate
from jeirt.simulate import simulate
from jeirt.splits import split_by_question, subsample_items
from jeirt_book import dimension, figures, onboarding

ENC = "simulated"


def make_jeirt(d: int = 8, epochs: int = 20):
    """A factory of small JE-IRT fits on the simulated features, seeded by its argument: 64 questions
    a step, lr 1e-2 decayed 0.95 an epoch, weight decay 1e-4, no dropout: validation loss 0.610 at
    d = 8 (the true model: 0.581). The default recipe (dropout 0.5, decay 0.75 an epoch) stops at 0.642
    here: 640 simulated questions whose labels have no noise beyond the Bernoulli draws need no dropout."""
    return lambda seed: JEIRT(
        d=d,
        encoder=ENC,
        dropout=0.0,
        random_state=seed,
        progress=False,
        training={"max_epochs": epochs, "batch_items": 64, "lr": 1e-2, "lr_decay": 0.95, "weight_decay": 1e-4},
    )


@pytest.fixture(scope="module")
def sim():
    """50 models x 800 items, true d = 8, every label observed."""
    ds, _ = simulate(n_models=50, n_items=800, feature_dim=32, d=8, seed=1)
    return ds


def run_sweep(ds, encoders, d_grid, seeds) -> dim.RunScores:
    """The Dimension page's loop: every (encoder, d, seed) fitted side by side, then scored."""
    splits = {seed: split_by_question(ds, seed=seed) for seed in seeds}
    runs = dim.sweep_runs(encoders, d_grid, seeds)
    fits = fit_many([make_jeirt(d)(seed) for _, d, seed in runs], ds, [splits[seed] for *_, seed in runs])
    return dim.RunScores.concat(
        [
            dim.score_test(model, ds, splits[seed], {"encoder": e, "d": d, "seed": seed})
            for (e, d, seed), model in zip(runs, fits)
        ]
    )


@pytest.fixture(scope="module")
def sweep(sim):
    return run_sweep(sim, [ENC], (1, 8), (0, 1))


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
    assert dim.best_dimension(runs).to_dict() == {ENC: 8}


def test_sweep_summary_and_best_dimension_on_a_known_table():
    runs = pd.DataFrame(
        {
            "encoder": ["a"] * 4 + ["b"] * 2,
            "d": [2, 2, 4, 4, 2, 4],
            "seed": [0, 1, 0, 1, 0, 0],
            "accuracy": [0.6, 0.7, 0.8, 0.9, 0.5, 0.4],
            "val_loss": [0.5, 0.5, 0.4, 0.6, 0.3, 0.2],
            "auc": 0.7,
            "fit_seconds": 1.0,
        }
    )
    table = dim.sweep_summary(runs).set_index(["encoder", "d"])
    assert table.at[("a", 2), "accuracy_mean"] == pytest.approx(0.65)
    assert (table.at[("a", 4), "accuracy_min"], table.at[("a", 4), "accuracy_max"]) == (0.8, 0.9)
    assert table.at[("a", 2), "seeds"] == 2 and np.isnan(table.at[("b", 2), "accuracy_std"])
    # a: d = 2 and 4 tie on mean validation loss (0.5); idxmin keeps the first; b: d = 4.
    assert dim.best_dimension(runs).to_dict() == {"a": 2, "b": 4}
    with pytest.raises(ValueError, match="lack columns"):
        dim.sweep_summary(runs.drop(columns="auc"))
    # The page's table for people: accuracy in percent, "–" where one seed has no sd.
    shown = dimension.summary_table(dim.sweep_summary(runs))
    assert shown.at[("a", 2), "accuracy (%)"] == 65.0 and shown.at[("b", 2), "sd over seeds"] == "–"


def test_sweep_runs_rejects_empty_or_bad_grids():
    assert dim.sweep_runs(["a", "b"], (2, 4), (0,)) == [("a", 2, 0), ("a", 4, 0), ("b", 2, 0), ("b", 4, 0)]
    with pytest.raises(ValueError, match="d_grid"):
        dim.sweep_runs([ENC], (), (0,))
    with pytest.raises(ValueError, match="positive"):
        dim.sweep_runs([ENC], (0, 4), (0,))


def test_baselines_use_the_same_splits_as_the_sweep(sim, sweep):
    reference = dim.baseline_reference(sim, [ENC], (0,), max_epochs=5)
    runs = reference.runs
    assert list(runs["method"]) == ["embedllm-mf", "knn"]
    assert runs["accuracy"].between(0.5, 1).all()
    sweep_n = sweep.runs.query("seed == 0")["n"].iloc[0]
    assert (runs["n"] == sweep_n).all()  # scored on the same test labels
    assert set(reference.per_benchmark["method"]) == {"embedllm-mf", "knn"}


def test_available_encoders_uses_precomputed_features_and_says_why_it_skips(sim, monkeypatch):
    usable, skipped = dim.available_encoders(sim, wanted=(ENC, "all-mpnet-base-v2"))
    assert usable == [ENC] and "no precomputed features" in skipped["all-mpnet-base-v2"]

    def offline(name, **kwargs):
        raise FileNotFoundError(f"no weights found for encoder {name!r}\n  - tried everything")

    monkeypatch.setattr(encoders, "get_encoder", offline)
    usable, skipped = dim.available_encoders(sim, wanted=("ModernBERT-large",), try_loading=True)
    assert usable == [] and skipped["ModernBERT-large"].startswith("FileNotFoundError: no weights found")
    monkeypatch.setattr(encoders, "get_encoder", lambda name, **kwargs: object())
    assert dim.available_encoders(sim, wanted=("minilm",), try_loading=True)[0] == ["all-MiniLM-L6-v2"]


def test_score_test_rows_match_metrics_evaluate(sim, sweep):
    model = make_jeirt()(0).fit(sim, split_by_question(sim, seed=0))
    split = split_by_question(sim, seed=0)
    scores = dim.score_test(model, sim, split, {"tag": "x"})
    direct = evaluate(model.predict_proba(sim), sim, split.test)
    assert scores.runs.at[0, "accuracy"] == pytest.approx(direct["overall"]["accuracy"])
    per_model = scores.per_model.set_index("model")["log_loss"]
    np.testing.assert_allclose(per_model.to_numpy(), direct["per_model"]["log_loss"].to_numpy(), rtol=1e-6)
    # The onboarding tables' vectorised scorer agrees too (every model taken as new, nothing held out).
    new = onb.NewModels(
        split,
        split.name,
        list(sim.models),
        sim,
        split.train,
        sim.subset(items=split.items_of("test")),
        split.test[:, split.items_of("test")],
    )
    rows = onb.score_new(model, new, np.zeros(sim.n_models, dtype=int))
    np.testing.assert_allclose(rows["accuracy"], direct["per_model"]["accuracy"], rtol=1e-9)
    np.testing.assert_allclose(rows["log_loss"], direct["per_model"]["log_loss"], rtol=1e-5)
    assert (rows["kl"] == 0).all()  # no reference: measured against itself


# ---------------------------------------------------------------------------------------------
# Onboarding (Tables 1-2)


def onboarding_curve(ds, make_model, held_out, fractions, seeds, joint=None) -> pd.DataFrame:
    """The Onboarding page's loop: per seed, hold models out, fit the rest, onboard them from each share
    of their answers (`onb.onboard_and_score`), and score the joint fit's "All" rows."""
    new = {s: onb.new_models(ds, split_by_question(ds, seed=s), held_out, s) for s in seeds}
    fits = fit_many([make_model(s) for s in new], ds, [held.split for held in new.values()])
    rows = []
    for (seed, held), model in zip(new.items(), fits):
        for fraction in fractions:
            mask = subsample_items(held.answers, fraction, seed)
            rows.append(
                onb.onboard_and_score(
                    model, held, mask, seed=seed, fraction=fraction, setting=onb.fraction_label(fraction)
                )
            )
        if joint is not None:
            rows.append(onb.joint_scores(joint[seed], held, seed=seed))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def onboarded(sim):
    joint = onb.joint_models(sim, make_jeirt(), (0,))
    curve = onboarding_curve(sim, make_jeirt(), 8, (0.02, 0.2, 1.0), (0,), joint)
    return joint, curve


def test_onboarding_curve_rows_items_and_accuracy(sim, onboarded):
    _, curve = onboarded
    assert list(dict.fromkeys(curve["setting"])) == ["2%", "20%", "100%", "All"]
    assert curve.groupby("setting").size().eq(8).all()  # 8 held-out models in every setting
    items = curve.groupby("setting", sort=False)["items"].mean()
    assert items["2%"] < items["20%"] < items["100%"] == items["All"]
    table = onb.onboarding_table(curve)
    assert list(table.index) == ["mean", "sd", "items"] and list(table.columns) == ["2%", "20%", "100%", "All"]
    # More answers, a better vector (by log loss, the proper score: with d = 8 and 13 answers the
    # prior from the known models already gets most of the accuracy); from all of them, no worse than
    # joint training (here, with a short joint fit, the exact onboarding fit is about two points better).
    log_loss = curve.groupby("setting")["log_loss"].mean()
    assert log_loss["100%"] < log_loss["20%"] and log_loss["100%"] < log_loss["2%"]
    assert table.at["mean", "100%"] >= table.at["mean", "2%"]
    assert table.at["mean", "100%"] > table.at["mean", "All"] - 0.01


def test_onboarding_gap_is_paired_per_model():
    curve = pd.DataFrame(
        {
            "seed": 0,
            "model": ["a", "b", "a", "b"],
            "setting": ["100%", "100%", "All", "All"],
            "accuracy": [0.70, 0.60, 0.65, 0.62],
        }
    )
    gap = onb.onboarding_gap(curve)
    assert gap.to_dict() == pytest.approx({(0, "a"): 0.05, (0, "b"): -0.02})
    with pytest.raises(ValueError, match="not in the curve"):
        onb.onboarding_gap(curve, setting="50%")


def test_onboarding_refuses_a_joint_model_from_another_split_and_foreign_masks(sim, onboarded):
    joint, _ = onboarded
    held = onb.new_models(sim, split_by_question(sim, seed=1), 5, 1)
    with pytest.raises(ValueError, match="was fitted on split"):
        onb.joint_scores(joint[0], held)
    with pytest.raises(ValueError, match="outside the new LLMs' training answers"):
        onb.onboard_and_score(joint[0], held, ~held.answers)
    with pytest.raises(ValueError, match="shape"):
        onb.onboard_and_score(joint[0], held, held.answers[:2])


def test_new_models_take_named_models(sim):
    names = sim.models[:3]
    held = onb.new_models(sim, split_by_question(sim, seed=0), names)
    assert held.names == list(names) and held.answers.shape == (3, sim.n_items)
    assert not held.split.train[sim.model_index(names)].any()  # out of training
    assert held.test_mask.shape == (3, held.test.n_items) and held.test_mask.all(axis=1).any()


def test_recent_models_by_release_month():
    models = ["gpt-4o(2024-05-13)", "Llama-2-7b-hf", "gemini-1.5-pro-002"]
    assert onb.recent_models(models) == ["gpt-4o(2024-05-13)", "gemini-1.5-pro-002"]
    assert onb.recent_models(models, since="2024-06") == ["gemini-1.5-pro-002"]
    with pytest.raises(KeyError, match="no release month"):
        onb.recent_models(["some-new-model"])


# ---------------------------------------------------------------------------------------------
# The O(d/n) rate (Appendix D)


def test_first_items_keeps_n_per_row_and_nests():
    rng = np.random.default_rng(0)
    mask = rng.random((6, 50)) < 0.5
    mask[0] = False
    mask[1, :] = False
    mask[1, :3] = True  # a row with fewer than n entries keeps all of them
    small, large = onb.first_items(mask, 4, seed=3), onb.first_items(mask, 10, seed=3)
    assert not (small & ~mask).any() and not (large & ~mask).any()
    assert list(small.sum(axis=1)) == [0, 3, 4, 4, 4, 4]
    assert (small <= large).all()  # nested
    assert not np.array_equal(small, onb.first_items(mask, 4, seed=4))
    with pytest.raises(ValueError, match="n=0"):
        onb.first_items(mask, 0)


def test_onboarding_rate_error_falls_with_n(sim):
    # The Onboarding page's rate loop: all answers first (the reference), then the first n.
    new = onb.new_models(sim, split_by_question(sim, seed=0), onb.complete_models(sim, 10, seed=0))
    model = fit_many([make_jeirt()(0)], sim, [new.split])[0]
    parts = [onb.onboard_and_score(model, new, new.answers, budget="all")]
    reference = model.predict_proba(new.test)
    for n in (2, 16, 128):
        parts.append(onb.onboard_and_score(model, new, onb.first_items(new.answers, n, 0), reference, budget=n))
    rate = onb.rate_table(parts)
    summary = onb.rate_summary(rate)
    assert list(summary.index) == [2, 16, 128, "all"] and (summary["models"] == 10).all()
    assert (rate["kl"] >= 0).all()
    assert summary.at["all", "kl"] == 0 and summary.at["all", "excess_log_loss"] == 0
    assert summary.at[2, "kl"] > summary.at[16, "kl"] > summary.at[128, "kl"]
    assert summary.at[128, "accuracy"] > summary.at[2, "accuracy"]
    assert list(summary["items"].iloc[:3]) == [2, 16, 128]
    assert onb.rate_slope(summary, 2, 128) < 0
    with pytest.raises(ValueError, match="budget='all'"):
        onb.rate_table(parts[1:])


def test_complete_models_draws_only_fully_graded_models():
    ds, _ = simulate(n_models=12, n_items=200, feature_dim=16, d=4, density=0.9, seed=0)
    with pytest.raises(ValueError, match="graded on every"):
        onb.complete_models(ds, 5)
    full, _ = simulate(n_models=12, n_items=50, feature_dim=16, d=4, seed=0)
    drawn = onb.complete_models(full, 5, seed=3)
    assert len(set(drawn)) == 5 and drawn == onb.complete_models(full, 5, seed=3)


def test_bernoulli_kl_is_zero_on_equal_and_positive_otherwise():
    p = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(onb.bernoulli_kl(p, p), 0, atol=1e-12)
    assert (onb.bernoulli_kl(p, p[::-1])[[0, 2]] > 0.5).all()


# ---------------------------------------------------------------------------------------------
# Figures


def test_figure_helpers_follow_the_house_style(sweep):
    summary = dim.sweep_summary(sweep.runs)
    baselines = pd.DataFrame({"method": ["knn"], "encoder": [ENC], "accuracy": [0.7]})
    table = pd.DataFrame(
        {"mean": [0.6, 0.7, 0.72], "sd": [0.1, 0.05, 0.04], "items": [5, 50, 50]}, index=["10%", "100%", "All"]
    ).T
    rate = pd.DataFrame(
        {"items": [2, 8, 32, 100], "accuracy": [0.6, 0.65, 0.7, 0.7], "kl": [0.1, 0.03, -1e-3, 0.0]},
        index=pd.Index([2, 8, 32, "all"], dtype=object),
    )
    fig, axes = plt.subplots(2, 3)
    dimension.accuracy_vs_dimension(axes[0, 0], summary, baselines)
    figures.dots_by_group(axes[0, 1], pd.DataFrame({"a": [0.6, 0.7], "b": [0.65, 0.5]}, index=["x", "y"]))
    onboarding.onboarding_curves(axes[0, 2], {"random": table})
    onboarding.rate_accuracy(axes[1, 0], {4: rate})
    onboarding.rate_loglog(axes[1, 1], {4: rate})
    check_figure(fig)
    assert len(axes[0, 0].lines) == 2  # one JE-IRT line, one baseline line
    x, _ = axes[1, 1].lines[0].get_data()
    assert list(x) == [2, 8]  # a non-positive excess cannot be drawn on a log axis
    plt.close(fig)
