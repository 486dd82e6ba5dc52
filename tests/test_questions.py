"""Known questions: per-question corrections (jeirt.questions), the known-question split, and the
per-question IRT baseline that onboards new models (jeirt.baselines.irt); new questions: their text
embedding refined by known models' answers (`refine_questions`)."""

from __future__ import annotations

import numpy as np
import pytest

from jeirt.baselines.irt import OnePL, PerQuestionIRT, TwoPL
from jeirt.estimator import JEIRT
from jeirt.metrics import accuracy
from jeirt.model import sigmoid
from jeirt.questions import (
    QuestionCorrections,
    fit_corrections,
    known_question_split,
    question_probabilities,
    refine_questions,
)
from jeirt.simulate import simulate
from jeirt.splits import hold_out_models, split_by_question


def _offset_world(n_models=30, n_items=1500, d=8, sd=1.0, seed=0):
    """Text terms (u, r), model vectors, and answers drawn with a true per-question difficulty offset."""
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(n_models, d)) + 1.0
    E = rng.normal(size=(n_items, d))
    r = np.linalg.norm(E, axis=1)
    U = E / r[:, None]
    delta = rng.normal(size=n_items) * sd
    y = (rng.random((n_models, n_items)) < sigmoid(V @ U.T - r - delta)).astype(float)
    ids = np.array([f"q{i}" for i in range(n_items)])
    return ids, U, r, V, y, delta


def test_corrections_recover_offsets_and_vanish_where_unanswered():
    ids, U, r, V, y, delta = _offset_world()
    mask = np.ones_like(y, dtype=bool)
    mask[:, :100] = False  # nobody answered the first 100 questions
    corr = fit_corrections(ids, U, r, V, y, mask)
    assert len(corr) == len(ids) - 100 and "q0" not in set(corr.item_ids)
    assert corr.offset_scale == 1.0  # the true sd is on the grid and the evidence finds it
    assert np.corrcoef(corr.offsets, delta[100:])[0, 1] > 0.8
    new_u, new_r = corr.apply(ids, U, r)
    np.testing.assert_array_equal(new_r[:100], r[:100])  # untouched: through the text alone
    np.testing.assert_array_equal(new_u[:100], U[:100])
    # The corrected questions predict the models' answers better than the text alone.
    truth = sigmoid(V @ U.T - r - delta)[:, 100:]
    before = np.abs(sigmoid(V @ U.T - r)[:, 100:] - truth).mean()
    after = np.abs(sigmoid(V @ new_u.T - new_r)[:, 100:] - truth).mean()
    assert after < 0.6 * before


def test_warm_started_widths_reach_the_cold_started_optimum():
    """fit_corrections starts each prior width at the last one's optimum: the same corrections and
    evidence as fitting every width from zero (the per-question problems are convex)."""
    ids, U, r, V, y, _ = _offset_world(n_items=300)
    mask = np.ones_like(y, dtype=bool)
    warm = fit_corrections(ids, U, r, V, y, mask)  # "auto": 5 offset widths, then 3 shift widths
    cold = fit_corrections(
        ids,
        U,
        r,
        V,
        y,
        mask,
        offset_scale=warm.offset_scale,
        shift_scale=warm.shift_scale * np.sqrt((V**2).sum(axis=1).mean()),
    )  # one width, from 0
    np.testing.assert_allclose(warm.offsets, cold.offsets, atol=1e-6)
    np.testing.assert_allclose(warm.shifts, cold.shifts, atol=1e-6)
    assert len(warm.log_evidence) == 8


def test_no_offset_gives_small_corrections_and_fixed_scales_are_used():
    ids, U, r, V, y, _ = _offset_world(sd=0.0, seed=1)
    corr = fit_corrections(ids, U, r, V, y, np.ones_like(y, dtype=bool))
    assert corr.offset_scale == 0.25  # the narrowest width on the grid wins
    assert np.abs(corr.offsets).mean() < 0.15
    fixed = fit_corrections(ids, U, r, V, y, np.ones_like(y, dtype=bool), offset_scale=0.5, shift_scale=0.1)
    assert list(fixed.log_evidence) == ["0.5,0.1"] and fixed.offset_scale == 0.5
    assert np.abs(fixed.shifts).sum() > 0


def test_corrections_are_the_map_under_a_partial_mask_in_chunks():
    """Soft labels, answers (some NaN) outside the mask and several chunks: each correction is a
    stationary point of its negative log posterior, with the answers outside the mask left out."""
    ids, U, r, V, y, _ = _offset_world(n_items=150, seed=2)
    rng = np.random.default_rng(3)
    y = np.clip(y + rng.normal(0, 0.2, size=y.shape), 0, 1)  # soft labels
    mask = rng.random(y.shape) < 0.7
    y[~mask & (rng.random(y.shape) < 0.5)] = np.nan  # unobserved; the other unmasked answers are known but left out
    corr = fit_corrections(ids, U, r, V, y, mask, offset_scale=1.0, shift_scale=0.3, chunk=64)
    resid = np.where(mask, sigmoid(V @ (U + corr.shifts).T - (r + corr.offsets)) - np.nan_to_num(y), 0.0)
    np.testing.assert_allclose(resid.T @ V + corr.shifts / corr.shift_scale**2, 0, atol=1e-6)  # d/dw_q
    np.testing.assert_allclose(-resid.sum(axis=0) + corr.offsets / corr.offset_scale**2, 0, atol=1e-6)  # d/ddelta_q


def test_corrections_refuse_bad_input():
    ids, U, r, V, y, _ = _offset_world(n_items=50)
    mask = np.ones_like(y, dtype=bool)
    with pytest.raises(ValueError, match="n_models, n_items"):
        fit_corrections(ids, U, r, V, y[:, :10], mask[:, :10])
    with pytest.raises(ValueError, match="offset_scale"):
        fit_corrections(ids, U, r, V, y, mask, offset_scale="wide")
    with pytest.raises(ValueError, match="no answer"):
        fit_corrections(ids, U, r, V, y, np.zeros_like(mask))
    bad = y.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit_corrections(ids, U, r, V, bad, mask)
    with pytest.raises(ValueError, match="repeat"):
        QuestionCorrections(np.array(["a", "a"]), np.zeros((2, 3)), np.zeros(2), 1.0, 0.0)


def test_known_question_split(small_sim):
    ds, _ = small_sim
    held = hold_out_models(ds, split_by_question(ds, seed=0), 5, seed=0)
    known = known_question_split(held)
    rows = ds.model_index(list(held.held_out))
    others = np.setdiff1d(np.arange(ds.n_models), rows)
    assert not known.train[rows].any() and not known.test[others].any()
    np.testing.assert_array_equal(known.test[rows], held.test[rows])
    np.testing.assert_array_equal(known.train[others], held.train[others] | held.test[others])
    with pytest.raises(ValueError, match="holds out no model"):
        known_question_split(split_by_question(ds, seed=0))


def test_irt_onboard_recovers_new_abilities(small_sim):
    ds, _ = small_sim
    held = known_question_split(hold_out_models(ds, split_by_question(ds, seed=0), 8, seed=0))
    rows = ds.model_index(list(held.held_out))
    joint = OnePL().fit(ds)  # every model fitted together: the reference abilities
    baseline = PerQuestionIRT("1pl").fit(ds, held)
    onboarded = baseline.irt_.ability_[-8:]
    assert baseline.models_[-8:] == list(held.held_out)
    assert np.corrcoef(onboarded, joint.ability_[rows])[0, 1] > 0.95
    new = ds.subset(models=rows)
    probs = baseline.predict_proba(new)
    mask = held.test[rows]
    assert accuracy(probs[mask], new.labels[mask]) > 0.6
    with pytest.raises(ValueError, match="already fitted"):
        baseline.irt_.onboard(new)
    two = PerQuestionIRT("2pl").fit(ds, held)
    assert two.predict_proba(new).shape == new.labels.shape
    with pytest.raises(ValueError, match="kind"):
        PerQuestionIRT("3pl").fit(ds, held)
    unknown_item = TwoPL().fit(ds.subset(items=np.arange(100)))
    with pytest.raises(ValueError, match="no parameters"):
        unknown_item.onboard(new, replace=True)


def test_estimator_corrections_predict_onboard_and_persist(small_sim, tmp_path):
    ds, _ = small_sim
    held = known_question_split(hold_out_models(ds, split_by_question(ds, seed=0), 5, seed=0))
    model = JEIRT(d=8, encoder="simulated", training={"max_epochs": 3}, progress=False).fit(ds, held)
    plain = model.predict_proba(ds)
    trained = np.flatnonzero(~np.isin(np.asarray(ds.models), list(held.held_out)))
    model.fit_corrections(ds.subset(models=trained), held.train[trained])
    assert len(model.corrections_) == len(held.items_of("train"))
    corrected = model.predict_proba(ds)
    unseen = np.setdiff1d(np.arange(ds.n_items), held.items_of("train"))
    np.testing.assert_allclose(corrected[:, unseen], plain[:, unseen], rtol=1e-4, atol=1e-6)
    assert np.abs(corrected - plain).max() > 1e-3
    np.testing.assert_allclose(model.predict_proba(ds.embeddings["simulated"]), plain, rtol=1e-4, atol=1e-6)
    new = ds.subset(models=list(held.held_out))
    model.onboard(new, held.onboard[ds.model_index(list(held.held_out))], replace=True)
    path = model.save(tmp_path / "m.pt")
    again = JEIRT.load(path)
    np.testing.assert_allclose(again.corrections_.offsets, model.corrections_.offsets, rtol=1e-6)
    np.testing.assert_allclose(again.predict_proba(ds), model.predict_proba(ds), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="mask has shape"):
        model.fit_corrections(ds, np.ones((2, 2), dtype=bool))


def test_irt_onboarding_is_what_a_rasch_gives_on_the_onboarded_answers():
    """The onboarded ability maximises its own posterior: a small move either way lowers it."""
    rng = np.random.default_rng(3)
    from jeirt.simulate import simulate

    ds, _ = simulate(n_models=12, n_items=200, feature_dim=8, d=4, seed=3)
    irt = OnePL().fit(ds.subset(models=np.arange(10)))
    new = ds.subset(models=[10, 11])
    irt.onboard(new)
    a, c = irt.discrimination_, irt.intercept_
    for i in range(2):
        theta = irt.ability_[10 + i]

        def post(t, y=new.labels[i]):
            z = t * a + c
            return float((y * z - np.logaddexp(0, z)).sum() - 0.5 * t**2)

        step = 1e-3 * (1 + rng.random())
        assert post(theta) >= max(post(theta - step), post(theta + step))


def test_compare_on_the_known_question_split():
    """`compare(split="known:<n>")`: the per-question methods run, and on known questions they beat
    each model's plain training accuracy."""
    from jeirt.simulate import simulate
    from jeirt.tasks import compare as cmp

    ds, _ = simulate(n_models=24, n_items=300, feature_dim=16, d=4, seed=0)
    runs = cmp.compare(
        [ds], ["simulated"], seeds=[0], methods=["rasch", "2pl", "model-accuracy"], split="known:6", progress=False
    )
    assert (runs["split"] == "question-seed0-heldout6-known").all()
    auc = runs.set_index("method")["auc"]  # a per-model constant cannot rank one model's questions
    assert auc["rasch"] > auc["model-accuracy"] + 0.05 and auc["2pl"] > auc["model-accuracy"] + 0.05
    assert runs["n_test"].iloc[0] == 6 * len(split_by_question(ds, seed=0).items_of("test"))
    with pytest.raises(ValueError, match="known:<number"):
        cmp.make_split(ds, "known:x", 0)


def test_question_correction_parameter_fits_them_during_fit(small_sim, tmp_path):
    ds, _ = small_sim
    held = known_question_split(hold_out_models(ds, split_by_question(ds, seed=0), 5, seed=0))
    model = JEIRT(d=8, encoder="simulated", training={"max_epochs": 2}, question_correction=True, progress=False).fit(
        ds, held
    )
    assert model.corrections_ is not None and len(model.corrections_) == len(held.items_of("train"))
    again = JEIRT.load(model.save(tmp_path / "qc.pt"))
    assert again.question_correction and again.corrections_ is not None
    plain = JEIRT(d=8, encoder="simulated", training={"max_epochs": 2}, progress=False).fit(ds, held)
    assert plain.corrections_ is None  # the paper's JE-IRT by default


# ---------------------------------------------------------------------------------------------
# A new question: its text embedding refined by the known models' answers


@pytest.fixture(scope="module")
def refine_world():
    """100 models x 1,000 questions, d = 8, drawn from JE-IRT (the true geometry is known)."""
    return simulate(n_models=100, n_items=1000, feature_dim=32, d=8, seed=1)


def test_question_probabilities_are_eq3():
    rng = np.random.default_rng(0)
    E, V = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    r = np.linalg.norm(E, axis=1)
    np.testing.assert_allclose(question_probabilities(E, V), sigmoid(V @ (E / r[:, None]).T - r), atol=1e-12)


def test_refine_questions_moves_towards_the_truth(refine_world):
    ds, truth = refine_world
    rng = np.random.default_rng(0)
    true_q = truth.question_embeddings[:200]
    text = true_q + rng.normal(scale=0.4, size=true_q.shape)  # a noisy "text" prediction
    V = truth.model_vectors
    known = np.zeros((100, 200), dtype=bool)
    known[:30] = True  # the first 30 models answered; predict the other 70
    full = ds.labels[:, :200]

    def loss(emb: np.ndarray) -> float:  # log loss of the 70 models not known
        p = question_probabilities(emb, V[30:])
        return float(-np.mean(np.log(np.where(full[30:] == 1, p, 1 - p))))

    for what in ("embedding", "norm"):
        refined = refine_questions(text, V, full, known, prior_sd=0.4, what=what)
        assert loss(refined) < loss(text) - 0.01, (what, loss(refined), loss(text))
    same = refine_questions(text, V, full, np.zeros_like(known), prior_sd=0.4)
    np.testing.assert_allclose(same, text, atol=1e-6)
    norm_only = refine_questions(text, V, np.ones_like(full), known, prior_sd=1.0, what="norm")
    assert (np.linalg.norm(norm_only, axis=1) < np.linalg.norm(text, axis=1)).all()  # all right: easier
    cos = (norm_only * text).sum(1) / np.linalg.norm(norm_only, axis=1) / np.linalg.norm(text, axis=1)
    np.testing.assert_allclose(cos, 1, atol=1e-6)  # direction kept
    with pytest.raises(ValueError, match="what='direction'"):
        refine_questions(text, V, full, known, prior_sd=1, what="direction")


def test_refined_embeddings_are_the_map(refine_world):
    """The (r + 1)-dimensional Newton solve is a stationary point of the d-dimensional objective, and no
    worse than L-BFGS run to convergence on all coordinates at once."""
    import torch

    ds, truth = refine_world
    rng = np.random.default_rng(1)
    V = truth.model_vectors
    text = truth.question_embeddings[:150] + rng.normal(scale=0.4, size=(150, V.shape[1]))
    known = np.zeros((len(V), 150), dtype=bool)
    known[:7] = rng.random((7, 150)) < 0.9  # 7 known models, a few answers missing
    labels, sd = ds.labels[:, :150].astype(np.float64), 0.5

    def objective(E: torch.Tensor) -> torch.Tensor:
        norm = E.norm(dim=1, keepdim=True)
        z = (E / norm) @ torch.as_tensor(V).T - norm
        y, w = torch.as_tensor(np.nan_to_num(labels).T), torch.as_tensor(known.T, dtype=torch.float64)
        nll = (torch.nn.functional.binary_cross_entropy_with_logits(z, y, reduction="none") * w).sum()
        return nll + 0.5 / sd**2 * ((E - torch.as_tensor(text)) ** 2).sum()

    refined = torch.tensor(refine_questions(text, V, labels, known, prior_sd=sd), requires_grad=True)
    loss = objective(refined)
    (grad,) = torch.autograd.grad(loss, refined)
    loss = loss.detach()
    assert float(grad.abs().max()) < 1e-6
    lbfgs = torch.tensor(text, requires_grad=True)
    opt = torch.optim.LBFGS(
        [lbfgs], max_iter=2000, tolerance_grad=1e-9, tolerance_change=1e-14, line_search_fn="strong_wolfe"
    )

    def closure() -> torch.Tensor:
        opt.zero_grad()
        value = objective(lbfgs)
        value.backward()
        return value

    opt.step(closure)
    assert float(loss) <= float(objective(lbfgs).detach()) + 1e-9
    np.testing.assert_allclose(refined.detach().numpy(), lbfgs.detach().numpy(), atol=1e-4)
