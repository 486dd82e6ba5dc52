"""Tests for jeirt.baselines: hand-computed plain baselines, exact k-NN, the networks' formulas, every
baseline above chance on simulated data and on every real dataset, and scikit-learn's clone and
set_params."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import require_dataset
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from jeirt.baselines import (
    KNN,
    MIRT,
    BenchmarkAccuracy,
    EmbedLLMMF,
    IRTNet,
    ModelAccuracy,
)
from jeirt.baselines.irt import TwoPL
from jeirt.baselines.neural import EmbedLLMNet, IRTNetModule, MIRTNet
from jeirt.data import Dataset
from jeirt.metrics import auc
from jeirt.simulate import simulate
from jeirt.splits import Split, hold_out_models, split_by_question
from jeirt.train import TrainConfig

NAN = np.nan


pytestmark = pytest.mark.usefixtures("one_thread")


def neural(cls, **kwargs):
    """A neural baseline sized for tests: few epochs, no progress bar."""
    return cls(**{"encoder": "simulated", "training": {"max_epochs": 15, "patience": 3}, **kwargs})


ALL = {
    "model-accuracy": lambda: ModelAccuracy(),
    "benchmark-accuracy": lambda: BenchmarkAccuracy(),
    "knn": lambda: KNN(encoder="simulated"),
    "embedllm-mf": lambda: neural(EmbedLLMMF),
    "irt-net": lambda: neural(IRTNet, n_experts=4, hidden=64, expert_dim=32),
    "mirt": lambda: neural(MIRT),
}


@pytest.fixture(scope="module")
def tiny() -> tuple[Dataset, Split]:
    """3 models x 6 items in benchmarks a (items 0-3) and b (4-5), with a hand-made split."""
    labels = np.array([[1, 0, 1, NAN, 1, 0], [0, 0, 1, 1, NAN, NAN], [NAN, NAN, NAN, NAN, 1, 1]], dtype=np.float32)
    items = pd.DataFrame(
        {
            "item_id": [f"q{i}" for i in range(6)],
            "benchmark": list("aaaabb"),
            "text": [f"question {i}" for i in range(6)],
        }
    )
    features = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9], [-1, 0], [-0.8, 0.3]], dtype=np.float32)
    ds = Dataset("tiny", ["m0", "m1", "m2"], items, labels, {"toy": features})
    part = np.array([0, 0, 1, 0, 0, 2])  # items 0, 1, 3, 4 train; 2 val; 5 test
    rows = np.ones((3, 1), dtype=bool)
    split = Split(rows & (part == 0), rows & (part == 1), rows & (part == 2), "hand").restrict_to(ds.observed)
    return ds, split


@pytest.fixture(scope="module")
def sim() -> tuple[Dataset, Split]:
    ds, _ = simulate(n_models=30, n_items=600, feature_dim=32, d=8, density=0.8, seed=0)
    return ds, split_by_question(ds, seed=0)


# ----------------------------------------------------------------------------- plain baselines by hand


def test_model_accuracy_is_the_mean_training_label(tiny):
    ds, split = tiny
    probs = ModelAccuracy().fit(ds, split).predict_proba(ds)
    # m0 trains on items 0,1,4 -> (1+0+1)/3; m1 on 0,1,3 -> 1/3; m2 on item 4 only -> 1
    expected = np.array([2 / 3, 1 / 3, 1.0])
    np.testing.assert_allclose(probs, np.repeat(expected[:, None], 6, axis=1), rtol=1e-6)


def test_benchmark_accuracy_with_its_fallback(tiny):
    ds, split = tiny
    est = BenchmarkAccuracy().fit(ds, split)
    # benchmark a (train items 0,1,3): m0 1/2, m1 1/3, m2 none -> its overall 1.0
    # benchmark b (train item 4):      m0 1,   m1 none -> its overall 1/3, m2 1
    expected_a, expected_b = np.array([0.5, 1 / 3, 1.0]), np.array([1.0, 1 / 3, 1.0])
    probs = est.predict_proba(ds)
    np.testing.assert_allclose(probs[:, :4], np.repeat(expected_a[:, None], 4, axis=1), rtol=1e-6)
    np.testing.assert_allclose(probs[:, 4:], np.repeat(expected_b[:, None], 2, axis=1), rtol=1e-6)
    # a benchmark unseen in training falls back to the model's overall training accuracy
    other = ds.subset(items=[0, 5])
    other.items.loc[1, "benchmark"] = "new"
    np.testing.assert_allclose(est.predict_proba(other)[:, 1], [2 / 3, 1 / 3, 1.0], rtol=1e-6)


def test_a_model_without_training_labels_gets_the_global_mean(tiny):
    ds, split = tiny
    train = split.train.copy()
    train[2] = False  # m2 loses its only training label
    split2 = Split(train, split.val, split.test, "hand-2")
    probs = ModelAccuracy().fit(ds, split2).predict_proba(ds)
    np.testing.assert_allclose(probs[2], 3 / 6)  # m0, m1 training labels: 1,0,1,0,0,1
    probs = BenchmarkAccuracy().fit(ds, split2).predict_proba(ds)
    np.testing.assert_allclose(probs[2], 3 / 6)


# ----------------------------------------------------------------------------- k nearest neighbours


def test_knn_with_k1_returns_the_nearest_observed_training_label(tiny):
    ds, split = tiny
    est = KNN(encoder="toy", k_grid=(1,), weightings=("uniform",)).fit(ds, split)
    assert (est.k_, est.weighting_) == (1, "uniform")
    probs = est.predict_proba(ds)
    # item 2 = (0, 1): its nearest training item is 3 = (0.1, 0.9), which m0 was not evaluated on; m0's
    # nearest is item 1 (cosine 0.11) -> 0; m1 -> item 3's label, 1; m2 has only item 4 -> 1
    np.testing.assert_array_equal(probs[:, 2], [0, 1, 1])
    # item 5 = (-0.8, 0.3): nearest is item 4 = (-1, 0) for m0 and m2; m1 lacks it -> item 3 (0.1, 0.9) -> 1
    np.testing.assert_array_equal(probs[:, 5], [1, 1, 1])


def test_knn_matches_a_brute_force_neighbour_mean():
    ds, _ = simulate(n_models=12, n_items=300, feature_dim=16, d=4, density=0.5, seed=3)
    split = split_by_question(ds, seed=1)
    est = KNN(encoder="simulated", block_cells=5_000).fit(ds, split)  # tiny blocks: many chunks, doubling
    x = ds.embeddings["simulated"] / np.linalg.norm(ds.embeddings["simulated"], axis=1, keepdims=True)
    for weighting in ("uniform", "cosine"):
        got = est._predict_grid(ds.embeddings["simulated"], np.arange(ds.n_models), (7,), (weighting,))[weighting][0]
        for m in range(0, ds.n_models, 3):
            cols = np.flatnonzero(split.train[m])
            for q in range(0, ds.n_items, 29):
                sims = x[cols] @ x[q]
                top = np.argsort(-sims, kind="stable")[:7]
                w = np.clip(sims[top], 1e-6, None) if weighting == "cosine" else np.ones(len(top))
                assert got[m, q] == pytest.approx((w * ds.labels[m, cols[top]]).sum() / w.sum(), abs=1e-5)


def test_knn_orders_equally_similar_questions_by_column_whatever_the_blocks():
    """Duplicate questions tie; the nearer-by-index one counts first, in every block size (which
    changes how many candidates each model ranks), with models evaluated on few or many questions."""
    ds, _ = simulate(n_models=9, n_items=240, feature_dim=8, d=3, density=0.3, seed=5)
    emb = ds.embeddings["simulated"]
    emb[120:] = emb[:120]  # every question twice
    split = split_by_question(ds, seed=2)
    dense = np.ones_like(split.train[0])
    split.train[0] = dense & ~(split.val[0] | split.test[0])  # model 0 evaluated on every training question
    ds.observed[0] = True
    ds.labels[0] = np.nan_to_num(ds.labels[0])
    x = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    for cells in (5_000, 5_000_000):
        est = KNN(encoder="simulated", block_cells=cells).fit(ds, split)
        got = est._predict_grid(emb, np.arange(ds.n_models), (1, 4), ("uniform",))["uniform"]
        for m in range(ds.n_models):
            cols = np.flatnonzero(split.train[m] & ds.observed[m])
            for q in range(0, ds.n_items, 7):
                sims = np.array([x[c] @ x[q] for c in cols], dtype=np.float32)  # one dot each: duplicates tie exactly
                order = cols[np.argsort(-sims, kind="stable")]  # ties: lower column first
                for j, k in enumerate((1, 4)):
                    assert got[j, m, q] == pytest.approx(ds.labels[m, order[:k]].mean(), abs=1e-6)


def test_knn_chooses_k_on_validation_and_rejects_bad_grids(sim):
    ds, split = sim
    est = KNN(encoder="simulated", k_grid=(1, 25)).fit(ds, split)
    assert est.k_ == 25  # a single neighbour's 0/1 label has a far worse validation log loss
    assert est.validation_log_loss_.idxmin() == (est.weighting_, est.k_)
    with pytest.raises(ValueError, match="weightings"):
        KNN(encoder="simulated", weightings=("gaussian",)).fit(ds, split)
    with pytest.raises(ValueError, match="k_grid"):
        KNN(encoder="simulated", k_grid=(0, 5)).fit(ds, split)


# ----------------------------------------------------------------------------- the networks' formulas


def test_embedllm_net_is_w_dot_elementwise_product_plus_c():
    torch.manual_seed(0)
    net = EmbedLLMNet(in_dim=5, n_models=3, dim=4).eval()
    x = torch.randn(2, 5)
    q = net.project(x)
    e, w, c = net.model_embeddings.weight, net.classifier.weight[0], net.classifier.bias[0]
    explicit = torch.stack([torch.stack([(w * (e[m] * q[b])).sum() + c for m in range(3)]) for b in range(2)])
    torch.testing.assert_close(net(x), explicit)


def test_irt_net_routed_experts_give_the_written_out_mixture_and_no_gradient_elsewhere():
    torch.manual_seed(0)
    net = IRTNetModule(in_dim=6, n_models=4, d=3, n_experts=5, top_k=2, hidden=8, expert_dim=4).eval()
    x = torch.randn(32, 6)
    a, b = net.item_parameters(x)
    # the mixture written out: every expert on every question, the top-k ones softmax-weighted, the rest zero
    logits = net.gate(x)
    chosen = torch.topk(logits + net.gate_bias, 2, dim=1).indices
    gates = torch.zeros_like(logits).scatter(1, chosen, torch.softmax(logits.gather(1, chosen), dim=1))
    experts = torch.relu(torch.einsum("bi,eih->ebh", x, net.w1) + net.b1) @ net.w2 + net.b2  # (E, B, out)
    mixed = net.shared(x) + torch.einsum("be,ebo->bo", gates, experts)
    torch.testing.assert_close(a, net.discrimination(mixed))
    torch.testing.assert_close(b, net.difficulty(mixed))
    net.gate_bias[:] = torch.tensor([0.0, 0.0, 0.0, -1e9, -1e9])  # experts 3 and 4 never chosen
    net.zero_grad()
    net(x).sum().backward()
    assert net.w1.grad[3:].abs().sum() == 0 and net.w2.grad[3:].abs().sum() == 0
    assert net.w1.grad[:3].abs().sum() > 0


def test_irt_net_routes_top_k_experts_and_balances_them():
    torch.manual_seed(0)
    net = IRTNetModule(in_dim=6, n_models=4, d=3, n_experts=5, top_k=2, hidden=8, expert_dim=4)
    x = torch.randn(32, 6)
    net.eval()
    a, b = net.item_parameters(x)
    assert a.shape == (32, 3) and b.shape == (32, 1)
    torch.testing.assert_close(net(x), a @ net.ability.T - b)
    net.train()
    before = net.gate_bias.clone()
    net(x)
    assert not torch.equal(before, net.gate_bias)  # the balancing bias moved
    with pytest.raises(ValueError, match="top_k"):
        IRTNetModule(6, 4, n_experts=3, top_k=4)


def test_mirt_discriminations_are_non_negative():
    torch.manual_seed(0)
    net = MIRTNet(in_dim=6, n_models=4, d=3, hidden=8).eval()
    a, b = net.item_parameters(torch.randn(50, 6) * 10)
    assert (a >= 0).all() and b.shape == (50, 1)


# ----------------------------------------------------------------------------- all baselines

BLIND = "model-accuracy"  # the question-blind baseline: one number per model, whatever the question
MARGIN = 0.04  # AUC by which a method that reads the question (its text or benchmark) must beat it


@pytest.fixture(scope="module")
def blind_auc(sim) -> float:
    """The question-blind baseline's test AUC on `sim` (0.60: the models' abilities differ)."""
    ds, split = sim
    return auc(ALL[BLIND]().fit(ds, split).predict_proba(ds)[split.test], ds.labels[split.test])


@pytest.mark.parametrize("method", list(ALL))
def test_each_baseline_beats_chance_and_the_question_aware_ones_beat_the_blind_one(sim, blind_auc, method):
    """Above chance is not enough: the question-blind baseline is above it too (0.60), so a method that
    ignored the question would pass. Each method that reads the question must beat the blind one by
    MARGIN; measured margins 0.07 (IRT-Net, 15 epochs) to 0.13 (MIRT)."""
    ds, split = sim
    est = ALL[method]().fit(ds, split)
    probs = est.predict_proba(ds)
    assert probs.shape == ds.labels.shape and np.isfinite(probs).all()
    assert ((probs >= 0) & (probs <= 1)).all()
    sel = split.test
    score = auc(probs[sel], ds.labels[sel])
    assert score > 0.55
    if method != BLIND:
        assert score > blind_auc + MARGIN, f"{method}: test AUC {score:.3f}, the question-blind {blind_auc:.3f}"


@pytest.mark.parametrize("method", list(ALL))
def test_fit_returns_self_and_unfitted_or_unknown_models_are_refused(tiny, method):
    ds, split = tiny
    est = ALL[method]()
    if hasattr(est, "encoder"):
        est.encoder = "toy"
    with pytest.raises(NotFittedError):
        est.predict_proba(ds)
    assert est.fit(ds, split) is est
    probs = est.predict_proba(ds.subset(models=["m2", "m0"]))  # rows follow the given models
    np.testing.assert_allclose(probs, est.predict_proba(ds)[[2, 0]], rtol=1e-6)
    renamed = Dataset("other", ["m0", "stranger", "m2"], ds.items, ds.labels, ds.embeddings)
    with pytest.raises(KeyError, match="stranger"):
        est.predict_proba(renamed)
    wrong = Split(split.train[:2], split.val[:2], split.test[:2], "wrong-shape")
    with pytest.raises(ValueError, match="shape"):
        ALL[method]().fit(ds, wrong)


def test_neural_baselines_refuse_held_out_models(sim):
    ds, split = sim
    with pytest.raises(ValueError, match="onboard"):
        neural(MIRT).fit(ds, hold_out_models(ds, split, 2))
    probs = ModelAccuracy().fit(ds, hold_out_models(ds, split, 2)).predict_proba(ds)  # uses split.onboard
    assert np.isfinite(probs).all()


# ----------------------------------------------------------------------------- scikit-learn protocol

CLONEABLE = {  # each baseline, a parameter to change and its new value
    "model-accuracy": (ModelAccuracy, None, None),
    "benchmark-accuracy": (BenchmarkAccuracy, None, None),
    "knn": (lambda: KNN(encoder="toy", k_grid=(1, 2)), "k_grid", (3,)),
    "embedllm-mf": (lambda: EmbedLLMMF(encoder="toy", dim=8, training={"max_epochs": 2}), "dim", 4),
    "irt-net": (
        lambda: IRTNet(encoder="toy", d=7, n_experts=3, hidden=8, expert_dim=4, training={"max_epochs": 2}),
        "d",
        3,
    ),
    "mirt": (lambda: MIRT(encoder="toy", d=5, hidden=8, training={"max_epochs": 2}), "hidden", 16),
    "2pl": (lambda: TwoPL(prior_sd_ability=2.0), "prior_sd_discrimination", 3.0),
}


def fit_any(est, ds, split):
    """`fit(ds, split)`, or for classic IRT (which scores only the questions it was fitted on) `fit(ds)`."""
    return est.fit(ds) if isinstance(est, TwoPL) else est.fit(ds, split)


@pytest.mark.parametrize("method", list(CLONEABLE))
def test_clone_gives_an_unfitted_copy_with_equal_params_and_set_params_changes_one(tiny, method):
    ds, split = tiny
    make, name, value = CLONEABLE[method]
    est = fit_any(make(), ds, split)
    est.predict_proba(ds)  # fitted
    copy = clone(est)
    assert type(copy) is type(est) and copy is not est
    assert copy.get_params() == est.get_params()
    with pytest.raises(NotFittedError, match="not fitted"):
        copy.predict_proba(ds)
    assert not [k for k in vars(copy) if k.endswith("_") and not k.startswith("_")]  # no learned state
    fit_any(copy, ds, split).predict_proba(ds)  # the copy fits on its own
    if name is None:  # the plain baselines have no hyperparameter at all
        assert est.get_params() == {}
        with pytest.raises(ValueError, match="Invalid parameter"):
            est.set_params(smoothing=1.0)
        return
    assert est.get_params()[name] != value
    changed = clone(est).set_params(**{name: value})
    assert changed.get_params()[name] == value and getattr(changed, name) == value
    assert est.get_params()[name] != value  # the original is untouched
    others = {k: v for k, v in changed.get_params().items() if k != name}
    assert others == {k: v for k, v in est.get_params().items() if k != name}
    fit_any(changed, ds, split)
    if method == "knn":
        assert changed.k_ == 3  # the only k left on the grid
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(no_such_parameter=1)


@pytest.mark.parametrize("cls", [IRTNet, MIRT, EmbedLLMMF])
def test_a_training_dict_changes_only_its_fields_of_the_class_recipe(tiny, cls):
    ds, split = tiny
    est = cls(encoder="toy", training={"max_epochs": 2}).fit(ds, split)
    assert est.training_ == replace(cls.TRAINING, max_epochs=2)
    assert est.training_.lr == cls.TRAINING.lr and est.training_.batch_items == cls.TRAINING.batch_items
    assert len(est.history_.train_loss) <= 2  # it trained for at most 2 epochs
    # set_params on a clone, then refit: the resolved recipe follows
    other = clone(est).set_params(training={"max_epochs": 1, "lr": 5e-4}).fit(ds, split)
    assert (other.training_.max_epochs, other.training_.lr) == (1, 5e-4)
    assert other.training_.batch_items == cls.TRAINING.batch_items
    assert len(other.history_.train_loss) == 1
    assert est.training_.max_epochs == 2  # the original keeps its own
    assert cls(encoder="toy").fit(ds, split).training_ == cls.TRAINING  # None: the class's default
    with pytest.raises(ValueError, match="unknown field"):
        cls(encoder="toy", training={"epochs": 2}).fit(ds, split)


def test_mirt_and_embedllm_recipes_differ_from_the_generic_default():
    # so the test above would notice a training dict applied to TrainConfig() instead of cls.TRAINING
    assert MIRT.TRAINING.lr != TrainConfig().lr and EmbedLLMMF.TRAINING.batch_items != TrainConfig().batch_items


# ----------------------------------------------------------------------------- real data (smoke)

REAL = ("mmlu_pro", "zeroeval", "metabench")


@pytest.fixture(scope="module")
def real_slices() -> dict[str, Dataset]:
    """A small slice of each real dataset (best-covered 40 models, 300 questions)."""
    slices = {}
    for name in REAL:
        ds = require_dataset(name)
        models = np.argsort(-ds.observed.sum(axis=1), kind="stable")[:40]
        items = np.random.default_rng(0).choice(ds.n_items, size=300, replace=False)
        slices[name] = ds.subset(models=np.sort(models), items=np.sort(items))
    return slices


@pytest.mark.parametrize("name", REAL)
@pytest.mark.parametrize("method", list(ALL))
def test_each_baseline_beats_a_constant_on_every_real_dataset(real_slices, name, method):
    """Fitted on a 40-model x 300-question slice, every baseline ranks the test labels better than
    a constant predictor does (AUC 0.5). Observed lowest: benchmark-accuracy on mmlu_pro, 0.62 (about
    17 training questions per benchmark); the neural ones 0.67 or more."""
    ds = real_slices[name]
    split = split_by_question(ds, seed=0)
    est = ALL[method]()
    if hasattr(est, "encoder"):
        est.encoder = "all-MiniLM-L6-v2"
    if hasattr(est, "training"):
        # 2 epochs of 16-question steps (about 15 steps an epoch on 240 training questions): with the
        # default 256-question steps, 2 epochs are 2 steps, and IRT-Net's AUC was 0.51 on zeroeval
        est.training = {"max_epochs": 2, "batch_items": 16}
    probs = est.fit(ds, split).predict_proba(ds)
    assert probs.shape == ds.labels.shape
    assert np.isfinite(probs).all() and ((probs >= 0) & (probs <= 1)).all()
    sel = split.test & ds.observed
    labels = ds.labels[sel]
    assert sel.sum() > 500 and 0.2 < labels.mean() < 0.8  # enough test labels of both kinds
    score = auc(probs[sel], labels)
    assert score > 0.6, f"{method} on {name}: test AUC {score:.3f}, barely above a constant's 0.5"


@pytest.mark.parametrize("name", REAL)
def test_knn_on_question_text_beats_the_question_blind_baseline_on_every_real_dataset(real_slices, name):
    """On the same slices, the neighbours of a question's text predict better than each model's overall
    accuracy (measured test AUC margins 0.04 mmlu_pro, 0.09 zeroeval, 0.03 metabench). The trained
    baselines, at two epochs of a 240-question training set, do not all beat it here (MIRT 0.65 against
    0.71 on metabench): their margin is checked on simulated data above."""
    ds = real_slices[name]
    split = split_by_question(ds, seed=0)
    sel = split.test & ds.observed
    scores = {}
    for est in (ModelAccuracy(), KNN(encoder="all-MiniLM-L6-v2")):
        scores[type(est).__name__] = auc(est.fit(ds, split).predict_proba(ds)[sel], ds.labels[sel])
    assert scores["KNN"] > scores["ModelAccuracy"] + 0.02, scores
