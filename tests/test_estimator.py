"""The JEIRT estimator: prediction shapes, onboarding rules, persistence and its errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError

from jeirt.data import from_long
from jeirt.estimator import JEIRT
from jeirt.splits import split_by_question


@pytest.fixture(scope="module")
def fitted(small_sim):
    ds, _ = small_sim
    model = JEIRT(d=8, encoder="simulated", training={"max_epochs": 5}, progress=False).fit(ds, split_by_question(ds))
    return ds, model


def test_predictions_and_geometry_are_consistent(fitted):
    ds, model = fitted
    probs = model.predict_proba(ds)
    assert probs.shape == ds.labels.shape and ((probs > 0) & (probs < 1)).all()
    emb = model.question_embeddings(ds)
    norms, dirs = model.question_norms(ds), model.question_directions(ds)
    np.testing.assert_allclose(dirs * norms[:, None], emb, rtol=1e-5, atol=1e-6)
    manual = 1 / (1 + np.exp(-(model.model_vectors_ @ dirs.T - norms)))
    np.testing.assert_allclose(probs, manual, rtol=1e-4, atol=1e-6)
    sub = model.predict_proba(ds, models=[ds.models[3]])
    # One model's logits come from another matrix product than all models' (float32, summed in an order
    # that depends on the shape and the CPU's vector width): |dp| <= |dz| / 4 with dz a few float32 ulps
    # of |z| (measured 6e-8, 1.6e-7 relative; 3.2e-7 relative with MKL restricted to SSE4.2).
    np.testing.assert_allclose(sub[0], probs[3], rtol=0, atol=1e-6)
    np.testing.assert_allclose(model.predict_proba(ds.embeddings["simulated"]), probs, rtol=1e-6)


def test_save_load_gives_identical_predictions(fitted, tmp_path):
    ds, model = fitted
    path = model.save(tmp_path / "m.pt")
    again = JEIRT.load(path)
    np.testing.assert_array_equal(again.predict_proba(ds), model.predict_proba(ds))
    assert again.models_ == model.models_ and again.get_params() == model.get_params() | {
        "training": model.training_,
        "dropout": model.dropout_,
        "feature_noise": model.feature_noise_,
        "search": False,
    }  # the settings that made the weights, resolved from the recipe
    assert again.temperature_ == model.temperature_ and again.calibration_ == model.calibration_


def test_temperature_is_fitted_on_validation_and_folded_into_eq3(small_sim):
    ds, _ = small_sim
    split = split_by_question(ds)
    kw = {"d": 8, "encoder": "simulated", "training": {"max_epochs": 5}, "progress": False}
    raw, scaled = JEIRT(calibrate=False, **kw).fit(ds, split), JEIRT(**kw).fit(ds, split)
    t = scaled.temperature_
    assert raw.temperature_ == 1.0 and t != 1.0 and 0.05 < t < 20
    logit = lambda p: np.log(p / (1 - p))
    np.testing.assert_allclose(logit(scaled.predict_proba(ds)), logit(raw.predict_proba(ds)) / t, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(scaled.question_directions(ds), raw.question_directions(ds), atol=1e-5)
    cal = scaled.calibration_
    assert cal["val_log_loss_after"] <= cal["val_log_loss_before"] + 1e-9  # T minimises it; T = 1 is a candidate


def test_search_keeps_the_lowest_validation_loss_and_saves_what_it_chose(small_sim, tmp_path, monkeypatch):
    import jeirt.search

    ds, _ = small_sim
    monkeypatch.setattr(jeirt.search, "SEARCH_GRID", ({"d": 4}, {"lr": 3e-3}))
    model = JEIRT(d=8, encoder="simulated", training={"max_epochs": 5}, search=True, progress=False).fit(ds)
    losses = [r["val_loss"] for r in model.search_results_]
    assert len(losses) == 3 and min(losses) == min(model.history_.val_loss)
    again = JEIRT.load(model.save(tmp_path / "s.pt"))
    assert again.d == model.d_ and again.search is False
    np.testing.assert_array_equal(again.predict_proba(ds), model.predict_proba(ds))
    with pytest.raises(ValueError, match="recipe="):
        JEIRT(recipe="slow").fit(ds)


def test_load_rejects_other_files(tmp_path):
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="could not read"):
        JEIRT.load(tmp_path / "junk.pt")
    torch.save({"something": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a model saved by jeirt"):
        JEIRT.load(tmp_path / "other.pt")


def test_unfitted_unknown_models_and_wrong_features(fitted):
    ds, model = fitted
    with pytest.raises(NotFittedError, match="not fitted"):
        JEIRT().predict_proba(ds)
    with pytest.raises(KeyError, match="onboard"):
        model.predict_proba(ds, models=["gpt-17"])
    with pytest.raises(ValueError, match="trained on 32-d"):
        model.predict_proba(np.zeros((3, 5), dtype=np.float32))
    with pytest.raises(ValueError, match="d=0"):
        JEIRT(d=0).fit(ds)  # scikit-learn style: the constructor stores, fit validates


def test_onboard_appends_and_refuses_silent_overwrite(fitted, tmp_path):
    ds, model = fitted
    model = JEIRT.load(model.save(tmp_path / "copy.pt"))  # a private copy
    rows = ds.to_long()
    rows = rows[rows["model"].isin(ds.models[:2])].assign(model=lambda df: df["model"] + "-new")
    new = from_long(rows, ds.items)
    new.embeddings = ds.embeddings
    model.onboard(new)
    assert model.models_[-2:] == [ds.models[0] + "-new", ds.models[1] + "-new"]
    assert model.onboard_covariances_ == {}  # d x d per model only when asked for
    model.onboard(new, replace=True, covariances=True)
    assert set(model.onboard_covariances_) == set(new.models)
    assert all(c.dtype == np.float32 and c.shape == (model.d, model.d) for c in model.onboard_covariances_.values())
    with pytest.raises(ValueError, match="replace=True"):
        model.onboard(new)
    model.onboard(new, replace=True)
    mixed_rows = ds.to_long()
    mixed_rows = mixed_rows[mixed_rows["model"].isin(ds.models[1:3])].assign(model=lambda df: df["model"] + "-new")
    mixed = from_long(mixed_rows, ds.items)  # one model it knows (models[1]-new), one it does not
    mixed.embeddings = ds.embeddings
    before = list(model.models_)
    model.onboard(mixed, replace=True)
    assert model.models_ == before + [ds.models[2] + "-new"]  # the known one refitted in its place
    assert model.net_.model_vectors.shape[0] == len(model.models_)
    empty = new.subset()
    empty.labels[:] = np.nan
    with pytest.raises(ValueError, match="no labels to onboard"):
        model.onboard(empty, replace=True)


def test_fit_refuses_a_split_from_another_dataset(fitted):
    ds, _ = fitted
    other = ds.subset(models=ds.models[:5])
    with pytest.raises(ValueError, match="Make the split from this dataset"):
        JEIRT(encoder="simulated", progress=False).fit(ds, split_by_question(other))


def test_onboard_width_by_validation_answers_is_the_one_that_predicts_them_best(fitted):
    """val_mask: the width of `VALIDATION_PRIOR_WIDTH_GRID` whose fit (from mask alone) has the least log loss on the
    held-out answers, one for all new models; overlapping or empty validation answers are refused."""
    from jeirt.onboard import VALIDATION_PRIOR_WIDTH_GRID

    ds, model = fitted
    new = ds.subset(models=list(ds.models[:4]))
    new.models = [f"copy{i}" for i in range(4)]
    rng = np.random.default_rng(0)
    held = new.observed & (rng.random(new.labels.shape) < 0.3)
    model.onboard(new, new.observed & ~held, val_mask=held)
    assert set(model.onboard_evidence_) == set(VALIDATION_PRIOR_WIDTH_GRID)
    chosen = model.onboard_prior_width_
    assert chosen == max(model.onboard_evidence_, key=model.onboard_evidence_.get)
    assert set(model.onboard_prior_widths_.values()) == {chosen}
    scored = dict(model.onboard_evidence_)  # minus each width's validation log loss
    fixed = {}
    grid = VALIDATION_PRIOR_WIDTH_GRID
    for width in (chosen, grid[0], grid[-1]):  # the same fit at that width alone
        model.onboard(new, new.observed & ~held, replace=True, prior_width=width)
        p = np.clip(model.predict_proba(new)[held], 1e-7, 1 - 1e-7)
        y = new.labels[held]
        fixed[width] = -(y * np.log(p) + (1 - y) * np.log(1 - p)).sum()
    assert fixed[chosen] <= min(fixed.values()) + 1e-6 * abs(fixed[chosen])
    assert abs(-fixed[chosen] - scored[chosen]) < 1e-3 * abs(fixed[chosen])
    with pytest.raises(ValueError, match="that mask fits on too"):
        model.onboard(new, new.observed, replace=True, val_mask=new.observed)  # all in the fit: none left
