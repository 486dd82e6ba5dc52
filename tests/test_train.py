"""The trainer and onboarding on data drawn from JE-IRT itself, where every parameter is known."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from jeirt.data import Dataset
from jeirt.estimator import JEIRT
from jeirt.fitcache import fit_cached
from jeirt.metrics import evaluate
from jeirt.model import JEIRTNet
from jeirt.onboard import fit_model_vectors
from jeirt.simulate import simulate
from jeirt.splits import hold_out_models, split_by_question
from jeirt.train import FAST, PAPER, TrainConfig, train

# Low-dimensional features and many questions per parameter: enough data to recover the truth.
SIM = dict(n_models=60, n_items=20000, feature_dim=16, d=8, seed=0)
# No regulariser and a slow decay: the simulated data have no noise beyond the Bernoulli draws.
FIT = {
    "d": 8,
    "encoder": "simulated",
    "dropout": 0.0,
    "feature_noise": 0.0,
    "progress": False,
    "training": {
        "lr": 1e-2,
        "batch_items": 512,
        "weight_decay": 1e-4,
        "lr_decay": 0.95,
        "max_epochs": 200,
        "patience": 8,
    },
}


@pytest.fixture(scope="module")
def recovery():
    """The simulation, its split and a JE-IRT fitted on it: through the session's fit cache, so a second
    test worker that runs tests of this module reads the fit instead of repeating it."""
    ds, truth = simulate(**SIM)
    split = split_by_question(ds, seed=0)
    return ds, truth, split, fit_cached(JEIRT(**FIT), ds, split)


def test_parameter_recovery(recovery):
    ds, truth, split, model = recovery
    probs = model.predict_proba(ds)
    corr = np.corrcoef(probs[split.test], truth.probabilities[split.test])[0, 1]
    fitted_auc = evaluate(probs, ds, split.test)["overall"]["auc"]
    true_auc = evaluate(truth.probabilities, ds, split.test)["overall"]["auc"]
    assert corr >= 0.95
    assert abs(fitted_auc - true_auc) <= 0.01
    # Norms track the true difficulty (the norm of the true question embedding).
    norm_corr = np.corrcoef(model.question_norms(ds), np.linalg.norm(truth.question_embeddings, axis=1))[0, 1]
    assert norm_corr > 0.9


def test_best_checkpoint_is_restored(recovery):
    _, _, _, model = recovery
    h = model.history_
    assert h.val_loss[h.best_epoch] <= min(h.val_loss) + 1e-5  # later "improvements" under 1e-5 don't count
    assert len(h.train_loss) - 1 - h.best_epoch <= model.training_.patience


def test_onboarding_with_all_data_matches_joint_training(recovery):
    ds, _, split, joint = recovery
    held = hold_out_models(ds, split, 10, seed=1)
    rows = ds.model_index(held.held_out)
    model = JEIRT(**FIT).fit(ds, held)  # held-out vectors are fitted by onboarding inside fit()
    acc = lambda m: np.mean(
        [evaluate(m.predict_proba(ds), ds, split.test)["per_model"].loc[name, "accuracy"] for name in held.held_out]
    )
    assert abs(acc(model) - acc(joint)) <= 0.005
    assert split.test[rows].any()


def test_onboarding_recovers_a_known_vector_exactly_in_the_limit():
    """With the true question embeddings and probabilities as soft labels, MAP with a weak prior
    returns the true model vectors."""
    ds, truth = simulate(n_models=5, n_items=3000, feature_dim=16, d=4, soft=True, seed=2)
    q = truth.question_embeddings.astype(np.float64)
    r = np.linalg.norm(q, axis=1)
    result = fit_model_vectors(
        q / r[:, None],
        r,
        truth.probabilities,
        np.ones_like(ds.labels, bool),
        prior_mean=np.zeros(4),
        prior_widths=1e6,
    )
    np.testing.assert_allclose(result.vectors, truth.model_vectors, atol=1e-3)
    assert result.covariances.shape == (5, 4, 4) and result.iterations < 20


def test_same_seed_same_result_on_cpu(small_sim):
    ds, _ = small_sim
    split = split_by_question(ds, seed=0)
    fits = [
        JEIRT(d=8, encoder="simulated", training={"max_epochs": 3}, device="cpu", progress=False).fit(ds, split)
        for _ in range(2)
    ]
    np.testing.assert_array_equal(fits[0].predict_proba(ds), fits[1].predict_proba(ds))
    other = JEIRT(d=8, encoder="simulated", training={"max_epochs": 3}, device="cpu", random_state=1, progress=False)
    assert not np.array_equal(other.fit(ds, split).predict_proba(ds), fits[0].predict_proba(ds))


def test_trainer_refuses_bad_input(small_sim):
    ds, _ = small_sim
    split = split_by_question(ds, seed=0)
    x = ds.embeddings["simulated"].copy()
    net = JEIRTNet(x.shape[1], ds.n_models, 4)
    with pytest.raises(ValueError, match="selects no labels"):
        train(net, x, ds.labels, np.zeros_like(split.train), split.val, progress=False)
    x[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        train(net, x, ds.labels, split.train, split.val, progress=False)


def test_divergence_is_reported(small_sim):
    ds, _ = small_sim
    split = split_by_question(ds, seed=0)
    net = JEIRTNet(32, ds.n_models, 4)
    with torch.no_grad():
        net.adapter.net[-1].weight.fill_(float("inf"))
    with pytest.raises(FloatingPointError, match="lower the learning rate"):
        train(net, ds.embeddings["simulated"], ds.labels, split.train, split.val, progress=False)


def test_log_evidence_matches_numerical_integration_in_one_dimension():
    """Laplace evidence against the marginal likelihood integrated on a grid (d = 1, 200 answers:
    the posterior is near Gaussian, so the two agree to a small fraction of a nat)."""
    rng = np.random.default_rng(0)
    u, r = np.ones((200, 1)), rng.normal(0, 1, 200)
    y = (rng.random(200) < 1 / (1 + np.exp(-(0.7 - r)))).astype(float)
    result = fit_model_vectors(u, r, y[None], np.ones((1, 200), bool), prior_mean=np.zeros(1), prior_widths=2.0)
    grid = np.linspace(-6, 6, 20001)
    z = grid[:, None] - r[None]
    log_lik = (y * -np.logaddexp(0, -z) + (1 - y) * -np.logaddexp(0, z)).sum(axis=1)
    log_prior = -(grid**2) / 4 - 0.5 * np.log(2 * np.pi * 2.0)
    peak = (log_lik + log_prior).max()
    exact = peak + np.log(np.trapezoid(np.exp(log_lik + log_prior - peak), grid))
    assert abs(result.log_evidence[0] - exact) < 0.05


def test_auto_prior_widens_for_new_models_far_from_the_known_ones(small_sim, one_thread):
    """'auto' picks the width with the largest evidence; new vectors drawn 10x wider than the known
    ones' spread need a wider prior than the known vectors' own variance."""
    ds, _ = small_sim
    split = split_by_question(ds, seed=0)
    model = JEIRT(d=4, encoder="simulated", training={"max_epochs": 5}, device="cpu", progress=False).fit(ds, split)
    emb = model.question_embeddings(ds).astype(np.float64)
    norms = np.linalg.norm(emb, axis=1)
    rng = np.random.default_rng(1)
    known = model.net_.model_vectors.detach().numpy()
    vectors = known.mean(0) + rng.normal(0, 10 * known.std(0).mean(), (20, 4))
    labels = rng.random((20, ds.n_items)) < 1 / (1 + np.exp(-(vectors @ (emb / norms[:, None]).T - norms)))
    new = Dataset("new", [f"new{i}" for i in range(20)], ds.items, labels.astype(np.float32), ds.embeddings)
    model.onboard(new)
    assert model.onboard_prior_width_ == max(model.onboard_evidence_, key=model.onboard_evidence_.get)
    assert model.onboard_prior_width_ >= 10
    model.onboard(new, replace=True, prior_width=1.0)
    assert list(model.onboard_evidence_) == [1.0]
    with pytest.raises(ValueError, match="auto"):
        model.onboard(new, replace=True, prior_width="wide")
    with pytest.warns(FutureWarning, match="renamed prior_width"):  # the old keyword, kept for one release
        model.onboard(new, replace=True, prior_scale=4.0)
    assert list(model.onboard_evidence_) == [4.0]


def test_recipes_size_their_steps_from_the_data():
    # FAST: 40 steps an epoch on any dataset (mmlu_pro, zeroeval, metabench training questions)
    assert [FAST.questions_per_step(n, 30.0) for n in (9626, 2270, 860)] == [241, 57, 22]
    assert PAPER.questions_per_step(9626, 33.0) == 16  # about 512 (model, question) rows a step
    assert PAPER.questions_per_step(860, 4000.0) == 1  # never less than one question
    assert TrainConfig().questions_per_step(9626, 33.0) == 256  # a fixed batch stays fixed
    for bad in ({"optimizer": "sgd"}, {"batch_items": 0}, {"batch_labels": -1}, {"decay_epochs": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TrainConfig(**bad)


@pytest.mark.parametrize(
    "recipe, init, sd",
    [("paper", None, lambda d: 1.0), ("fast", None, lambda d: 0.1 / d**0.5), ("fast", "normal", lambda d: 1.0)],
)
def test_recipes_start_the_model_vectors_as_their_code_does(small_sim, recipe, init, sd):
    """The paper recipe starts E_M at N(0, 1), as the authors' nn.Embedding does; the default at sd
    0.1 / sqrt(d); `init` overrides the recipe's. One epoch at a learning rate of 1e-12 leaves the start
    in place: over 40 x 64 entries the sample sd is within four standard errors (sd / sqrt(2n))."""
    ds, _ = small_sim
    model = JEIRT(
        d=64,
        encoder="simulated",
        recipe=recipe,
        init=init,
        calibrate=False,
        device="cpu",
        progress=False,
        training={"max_epochs": 1, "lr": 1e-12},
    ).fit(ds, split_by_question(ds, seed=0))
    vectors = model.net_.model_vectors.detach().numpy()
    assert model.init_ == (init or {"paper": "normal", "fast": "small"}[recipe])
    assert abs(vectors.std() - sd(64)) < 4 * sd(64) / np.sqrt(2 * vectors.size)
    with pytest.raises(ValueError, match="init="):
        JEIRT(init="uniform").fit(ds)
