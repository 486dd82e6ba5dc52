"""Eq. (2)-(3) in `jeirt.model` against hand-worked numbers, the torch and numpy forms against each
other, the network's forward pass against `jeirt_logits`, and the propositions of Appendices A-C
through jeirt's own functions (`jeirt.analysis.geometry`) applied to the model's embeddings."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from jeirt.analysis import geometry
from jeirt.model import Adapter, Dropout, JEIRTNet, jeirt_logits, probability, sigmoid, unit_rows


def logistic(x: float) -> float:
    return 1 / (1 + math.exp(-x))


# ----------------------------------------------------------------------------- dropout


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_keeps_the_share_and_the_expectation_of_nn_dropout(p):
    x = torch.full((400, 500), 2.0)
    out = Dropout(p).train()(x)
    kept = out != 0
    assert abs(float(kept.float().mean()) - (1 - p)) < 0.005  # 200,000 draws: sd ~0.001
    torch.testing.assert_close(out[kept], torch.full((int(kept.sum()),), 2.0 / (1 - p)))
    assert abs(float(out.mean()) - 2.0) < 0.02


def test_dropout_is_seeded_passes_through_in_eval_and_backpropagates_through_the_mask():
    x = torch.randn(50, 60, requires_grad=True)
    layer = Dropout(0.5).train()
    torch.manual_seed(3)
    first = layer(x)
    torch.manual_seed(3)
    torch.testing.assert_close(layer(x), first)
    first.sum().backward()
    torch.testing.assert_close(x.grad, (first != 0).float() * 2.0)  # d out / d x = mask / (1 - p)
    assert layer.eval()(x) is x
    assert Dropout(1.0).train()(x).abs().sum() == 0
    assert Dropout(0.0).train()(x) is x


# ----------------------------------------------------------------------------- Eq. (3) by hand


def test_logits_match_hand_computation():
    # E_Q = (3, 4): |E_Q| = 5, direction (0.6, 0.8). E_M = (10, 0) and (0, 5).
    q = torch.tensor([[3.0, 4.0]])
    m = torch.tensor([[10.0, 0.0], [0.0, 5.0]])
    logits = jeirt_logits(q, m)
    np.testing.assert_allclose(logits.numpy(), [[0.6 * 10 - 5, 0.8 * 5 - 5]], rtol=1e-6)
    assert sigmoid(float(logits[0, 0])) == pytest.approx(logistic(1.0))  # 6 - 5


def test_torch_logits_and_numpy_probability_by_hand():
    # E_Q = (3, 4), E_M = (1, 2): logit = 0.6 * 1 + 0.8 * 2 - 5 = -2.8; with E_M = (-2, 1): -1.2 + 0.8 - 5 = -5.4
    q = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
    m = np.array([[1.0, 2.0], [-2.0, 1.0]])
    np.testing.assert_allclose(jeirt_logits(q, torch.from_numpy(m)).numpy(), [[-2.8, -5.4]], rtol=1e-7)
    p = probability(np.array([0.6, 0.8]), 5.0, m)
    assert p.shape == (1, 2)
    np.testing.assert_allclose(p, [[logistic(-2.8), logistic(-5.4)]], rtol=1e-12)
    np.testing.assert_allclose(p, [[0.0573241, 0.0044962]], atol=1e-7)  # the numbers themselves
    # the documented route from raw embeddings E_Q to `probability`
    e = np.array([[3.0, 4.0], [0.0, -2.0]])  # second question: norm 2, direction (0, -1)
    p = probability(unit_rows(e), np.linalg.norm(e, axis=1), m)
    np.testing.assert_allclose(p[1], [logistic(-2.0 - 2), logistic(-1.0 - 2)], rtol=1e-12)


def test_sigmoid_and_unit_rows():
    np.testing.assert_allclose(sigmoid(np.array([0.0, 2.0, -2.0])), [0.5, logistic(2.0), logistic(-2.0)], rtol=1e-12)
    with np.errstate(all="raise"):  # no overflow warnings at the extremes
        np.testing.assert_array_equal(sigmoid(np.array([-1e4, 1e4])), [0.0, 1.0])
    np.testing.assert_allclose(unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])), [[0.6, 0.8], [0.0, 0.0]])


def test_torch_and_numpy_forms_agree_on_random_inputs():
    rng = np.random.default_rng(0)
    for d in (1, 3, 16):
        e = rng.normal(0, rng.uniform(0.1, 4), size=(50, d))
        e[0] = 0.0  # a zero embedding: direction 0, norm 0, logit 0 in both
        m = rng.normal(0, 2, size=(7, d))
        torch_p = torch.sigmoid(jeirt_logits(torch.from_numpy(e), torch.from_numpy(m))).numpy()
        numpy_p = probability(unit_rows(e), np.linalg.norm(e, axis=1), m)
        assert torch_p.shape == numpy_p.shape == (50, 7)
        np.testing.assert_allclose(torch_p, numpy_p, atol=1e-7)
        np.testing.assert_allclose(numpy_p[0], 0.5)


def test_zero_question_embedding_stays_finite():
    logits = jeirt_logits(torch.zeros(1, 3), torch.ones(2, 3))
    assert torch.isfinite(logits).all()


# ----------------------------------------------------------------------------- the network


def test_adapter_shape_hidden_twice_input():
    adapter = Adapter(in_dim=6, d=4)
    assert adapter.net[0].out_features == 12 and adapter.net[-1].out_features == 4
    assert adapter(torch.randn(5, 6)).shape == (5, 4)


def test_forward_is_jeirt_logits_of_the_question_embeddings():
    torch.manual_seed(0)
    # dropout and feature noise on: eval mode must switch both off
    net = JEIRTNet(in_dim=6, n_models=3, d=4, dropout=0.5, feature_noise=1.0, init=2.0).eval()
    x = torch.randn(5, 6)
    out = net(x)
    assert out.shape == (5, 3)  # (n_items, n_models)
    torch.testing.assert_close(net.question_embeddings(x), net.adapter(x))
    torch.testing.assert_close(out, jeirt_logits(net.question_embeddings(x), net.model_vectors))
    other = torch.randn(2, 4)  # scoring against given model vectors instead of the learned ones
    torch.testing.assert_close(net(x, other), jeirt_logits(net.question_embeddings(x), other))
    assert net(x, other).shape == (5, 2)


@pytest.mark.parametrize("d", [16, 256])
def test_model_vectors_start_small_or_at_nn_embeddings_standard_normal(d):
    """ "small": entries of sd 0.1 / sqrt(d) (|E_M| about 0.1); "normal": N(0, 1), as nn.Embedding draws
    them; a number is E_M's norm. Over n = 200 d entries the sample sd and mean are within four of
    their standard errors (sd / sqrt(2n) and sd / sqrt(n)) of the truth."""
    torch.manual_seed(0)
    n = 200 * d
    for init, sd in (("small", 0.1 / math.sqrt(d)), ("normal", 1.0), (3.0, 3.0 / math.sqrt(d))):
        vectors = JEIRTNet(in_dim=6, n_models=200, d=d, init=init).model_vectors.detach()
        assert vectors.shape == (200, d)
        assert abs(float(vectors.std()) - sd) < 4 * sd / math.sqrt(2 * n), init
        assert abs(float(vectors.mean())) < 4 * sd / math.sqrt(n), init
    for bad in ("uniform", 0.0, -1.0, float("nan"), True):
        with pytest.raises(ValueError, match="init="):
            JEIRTNet(in_dim=6, n_models=2, d=4, init=bad)


def test_feature_noise_only_in_training():
    net = JEIRTNet(in_dim=6, n_models=2, d=4, feature_noise=1.0).eval()
    x = torch.randn(5, 6)
    torch.testing.assert_close(net(x), net(x))
    net.train()
    assert not torch.allclose(net(x), net(x))


# ----------------------------------------------------------------------------- the norm is difficulty


def test_scaling_a_question_embedding_lowers_every_models_probability():
    """E_Q -> c E_Q (c > 1) keeps the direction, so <u, E_M> is fixed, and raises the norm by
    (c - 1)|E_Q|: every model's logit drops by exactly that."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(40, 8, generator=gen, dtype=torch.float64)
    m = 3 * torch.randn(10, 8, generator=gen, dtype=torch.float64)
    base = jeirt_logits(q, m)
    norms = q.norm(dim=1, keepdim=True)
    for c in (1.01, 1.5, 4.0):
        scaled = jeirt_logits(c * q, m)
        assert (scaled < base).all()
        torch.testing.assert_close(base - scaled, (c - 1) * norms.expand_as(base))
        # the same through the numpy form: same direction, larger norm
        u = unit_rows(q.numpy())
        lower = probability(u, c * norms[:, 0].numpy(), m.numpy())
        assert (lower < probability(u, norms[:, 0].numpy(), m.numpy())).all()
    # and only the direction says which model is better: the ranking of models is the same at every norm
    order = torch.argsort(base, dim=1)
    torch.testing.assert_close(torch.argsort(jeirt_logits(4.0 * q, m), dim=1), order)


# ----------------------------------------------------------------------------- the propositions


@pytest.mark.parametrize("n", [2, 4, 5])
def test_proposition_1_construction_through_the_torch_model(n):
    """`geometry.expressive_construction` fed to `jeirt_logits` as E_Q = norm * direction: exactly the
    models of the subset get P > 1/2, for all 2**n subsets, while a 2PL realises n + 1 of them."""
    realised = set()
    for subset in geometry.all_subsets(n):
        vectors, direction, norm = geometry.expressive_construction(n, subset, scale=2.0)
        q = torch.from_numpy(norm * direction)[None]
        p = torch.sigmoid(jeirt_logits(q, torch.from_numpy(vectors)))[0]
        likely = frozenset(torch.nonzero(p > 0.5).flatten().tolist())
        assert likely == frozenset(subset), (subset, p)
        realised.add(likely)
    abilities = np.arange(n, dtype=float)  # n distinct abilities
    two_pl = geometry.realisable_subsets_2pl(abilities)
    assert len(realised) == 2**n and len(two_pl) == n + 1 and two_pl < realised
    # the construction's limit is real: at norm >= scale / sqrt(n) it is refused
    with pytest.raises(ValueError, match="norm"):
        geometry.expressive_construction(n, [0], scale=2.0, norm=2.0 / math.sqrt(n))


@pytest.fixture(scope="module")
def related_questions():
    """A random network's embeddings of 400 questions and of slightly perturbed copies, in float64."""
    torch.manual_seed(0)
    net = JEIRTNet(in_dim=6, n_models=5, d=4, init=3.0).double().eval()
    x1 = torch.randn(400, 6, dtype=torch.float64)
    x2 = x1 + 0.3 * torch.randn(400, 6, dtype=torch.float64)
    with torch.no_grad():
        e1, e2 = net.question_embeddings(x1).numpy(), net.question_embeddings(x2).numpy()
        actual = (torch.sigmoid(net(x1)) - torch.sigmoid(net(x2))).abs().numpy()
    return net.model_vectors.detach().numpy(), e1, e2, actual


def test_propositions_2_and_3_hold_for_a_networks_embeddings(related_questions):
    """`geometry.delta_p` is the network's own |P1 - P2|, and `geometry.bound_delta_p`,
    (|E_M| ||u1 - u2|| + |r1 - r2|) / 4, bounds it: not vacuously (some pairs come near it)."""
    m, e1, e2, actual = related_questions
    u1, u2 = unit_rows(e1), unit_rows(e2)
    r1, r2 = np.linalg.norm(e1, axis=1), np.linalg.norm(e2, axis=1)
    gap = geometry.delta_p(m, u1, u2, r1, r2)
    bound = geometry.bound_delta_p(m, u1, u2, r1, r2)
    assert gap.shape == bound.shape == actual.shape == (400, 5)
    np.testing.assert_allclose(gap, actual, atol=1e-6)
    assert (gap <= bound + 1e-12).all()
    assert (gap / bound).max() > 0.5
    # the bound is built from the two terms of Props. 2 and 3
    terms = (np.outer(np.linalg.norm(u1 - u2, axis=1), np.linalg.norm(m, axis=1)) + np.abs(r1 - r2)[:, None]) / 4
    np.testing.assert_allclose(bound, terms, rtol=1e-12)


def test_proposition_2_same_norm_and_proposition_3_same_direction(related_questions):
    m, e1, e2, _ = related_questions
    u1, u2 = unit_rows(e1), unit_rows(e2)
    r = np.linalg.norm(e1, axis=1)
    # Prop. 2: same norm, different directions: |dP| <= |E_M| ||u1 - u2|| / 4
    gap = geometry.delta_p(m, u1, u2, r, r)
    angle = np.outer(np.linalg.norm(u1 - u2, axis=1), np.linalg.norm(m, axis=1)) / 4
    np.testing.assert_allclose(geometry.bound_delta_p(m, u1, u2, r, r), angle, rtol=1e-12)
    assert (gap <= angle + 1e-12).all() and (gap / angle).max() > 0.5
    # ... and the torch model agrees: rescale E_Q2 to E_Q1's norm
    same_norm = torch.from_numpy(u2 * r[:, None])
    p1 = torch.sigmoid(jeirt_logits(torch.from_numpy(e1), torch.from_numpy(m))).numpy()
    p2 = torch.sigmoid(jeirt_logits(same_norm, torch.from_numpy(m))).numpy()
    np.testing.assert_allclose(np.abs(p1 - p2), gap, atol=1e-6)
    # Prop. 3: same direction, different norms: |dP| <= |r1 - r2| / 4, tight where P = 1/2
    r2 = np.linalg.norm(e2, axis=1)
    gap = geometry.delta_p(m, u1, u1, r, r2)
    assert (gap <= np.abs(r - r2)[:, None] / 4 + 1e-12).all()
    m1 = np.array([[2.0, 0.0]])
    tiny = geometry.delta_p(m1, np.array([1.0, 0.0]), np.array([1.0, 0.0]), 2.0, 2.0 + 1e-4)
    assert tiny == pytest.approx(1e-4 / 4, rel=1e-4)
