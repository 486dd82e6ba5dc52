"""Eq. (2)-(3) against a hand computation, and the propositions of Appendices A-C on random draws."""
from __future__ import annotations

import itertools
import math

import numpy as np
import torch

from jeirt.model import Adapter, JEIRTNet, jeirt_logits


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_logits_match_hand_computation():
    # E_Q = (3, 4): |E_Q| = 5, direction (0.6, 0.8). E_M = (10, 0) and (0, 5).
    q = torch.tensor([[3.0, 4.0]])
    m = torch.tensor([[10.0, 0.0], [0.0, 5.0]])
    logits = jeirt_logits(q, m)
    np.testing.assert_allclose(logits.numpy(), [[0.6 * 10 - 5, 0.8 * 5 - 5]], rtol=1e-6)
    assert sigmoid(float(logits[0, 0])) == sigmoid(1.0)  # 6 - 5


def test_adapter_shape_hidden_twice_input_and_net_forward():
    adapter = Adapter(in_dim=6, d=4)
    assert adapter.net[0].out_features == 12 and adapter.net[-1].out_features == 4
    net = JEIRTNet(in_dim=6, n_models=3, d=4)
    x = torch.randn(5, 6)
    assert net(x).shape == (5, 3)  # (n_items, n_models)
    manual = jeirt_logits(net.adapter(x), net.model_vectors)
    torch.testing.assert_close(net(x), manual)


def test_zero_question_embedding_stays_finite():
    logits = jeirt_logits(torch.zeros(1, 3), torch.ones(2, 3))
    assert torch.isfinite(logits).all()


def test_feature_noise_only_in_training():
    net = JEIRTNet(in_dim=6, n_models=2, d=4, feature_noise=1.0).eval()
    x = torch.randn(5, 6)
    torch.testing.assert_close(net(x), net(x))
    net.train()
    assert not torch.allclose(net(x), net(x))


def test_proposition_1_any_subset_of_models_can_be_exactly_the_ones_likely_right():
    """With d >= n and orthogonal model vectors c e_m, a question with direction proportional to
    sum_{m in S} e_m - sum_{m not in S} e_m and norm r < c / sqrt(n) gives P > 1/2 exactly on S:
    something 2PL's nested correct sets cannot do."""
    n, c = 5, 2.0
    models = c * torch.eye(n)
    r = 0.5 * c / math.sqrt(n)
    for size in range(n + 1):
        for subset in itertools.combinations(range(n), size):
            sign = -torch.ones(n)
            sign[list(subset)] = 1
            question = r * sign / sign.norm()
            likely = torch.sigmoid(jeirt_logits(question[None], models))[0] > 0.5
            assert set(torch.nonzero(likely).flatten().tolist()) == set(subset)


def test_propositions_2_and_3_lipschitz_bounds_hold_on_random_draws():
    """|P(q1) - P(q2)| <= |E_M| |u1 - u2| / 4 for equal norms (Prop. 2), <= |r1 - r2| / 4 for equal
    directions (Prop. 3), and their sum in general: the sigmoid is 1/4-Lipschitz."""
    gen = torch.Generator().manual_seed(0)
    d, n = 8, 20000
    m = 3 * torch.randn(n, d, generator=gen, dtype=torch.float64)
    u1 = torch.nn.functional.normalize(torch.randn(n, d, generator=gen, dtype=torch.float64), dim=1)
    u2 = torch.nn.functional.normalize(u1 + 0.5 * torch.randn(n, d, generator=gen, dtype=torch.float64), dim=1)
    r1, r2 = 3 * torch.rand(n, 1, generator=gen, dtype=torch.float64), 3 * torch.rand(n, 1, generator=gen, dtype=torch.float64)

    def prob(u, r):
        return torch.sigmoid((u * m).sum(dim=1, keepdim=True) - r)

    angle_term = m.norm(dim=1, keepdim=True) * (u1 - u2).norm(dim=1, keepdim=True) / 4
    norm_term = (r1 - r2).abs() / 4
    assert ((prob(u1, r1) - prob(u2, r1)).abs() <= angle_term + 1e-12).all()  # Prop. 2
    assert ((prob(u1, r1) - prob(u1, r2)).abs() <= norm_term + 1e-12).all()  # Prop. 3
    gap = (prob(u1, r1) - prob(u2, r2)).abs()
    assert (gap <= angle_term + norm_term + 1e-12).all()
    assert (gap / (angle_term + norm_term)).max() > 0.5  # the bound is not vacuous
