"""Tests for jeirt.baselines.irt: the 1PL/2PL estimators (recovery, identification, masks, errors) and the
Section 3.1 / Appendix J analyses on hand-worked toy matrices."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.exceptions import NotFittedError

from jeirt.baselines import irt
from jeirt.baselines import irt_diagnostics as diag
from jeirt.data import Dataset

torch.set_num_threads(1)


def make_dataset(labels: np.ndarray, name: str = "toy") -> Dataset:
    n_models, n_items = labels.shape
    items = pd.DataFrame(
        {
            "item_id": [f"q{j}" for j in range(n_items)],
            "benchmark": "b",
            "subject": "",
            "text": [f"question {j}" for j in range(n_items)],
        }
    )
    return Dataset(name, [f"m{i}" for i in range(n_models)], items, labels)


def simulate_2pl(
    n_models: int, n_items: int, seed: int = 0, share_negative: float = 0.15, density: float = 0.9, one_pl: bool = False
):
    """Labels from a known 2PL (a share of items with negative discrimination) and the truth."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_models)
    if one_pl:
        a = np.full(n_items, 1.3)
    else:
        a = rng.uniform(0.6, 2.5, size=n_items)
        a[rng.random(n_items) < share_negative] *= -1
    b = rng.normal(0, 1, size=n_items)
    labels = irt.sample_labels(irt.icc(theta[:, None], a, b), rng.random((n_models, n_items)) < density, seed)
    return make_dataset(labels, "simulated"), theta, a, b


@pytest.fixture(scope="module")
def fitted():
    ds, theta, a, b = simulate_2pl(1200, 120, seed=1)
    return ds, theta, a, b, irt.TwoPL().fit(ds)


# ---------------------------------------------------------------------------------------------
# Estimators


def test_2pl_recovers_parameters_including_negative_discriminations(fitted):
    ds, theta, a, b, model = fitted
    assert model.converged_
    assert (a < 0).sum() >= 10, "the simulation should include negative discriminations"
    assert np.corrcoef(model.discrimination_, a)[0, 1] >= 0.9
    assert np.corrcoef(model.ability_, theta)[0, 1] >= 0.9
    ok = np.isfinite(model.difficulty_)
    assert np.corrcoef(model.difficulty_[ok], b[ok])[0, 1] >= 0.9
    # Negative items are found negative: the sign is not forced.
    assert np.mean(np.sign(model.discrimination_[a < 0]) == -1) >= 0.9


def test_2pl_identification_standardises_and_orients_abilities(fitted):
    ds, *_, model = fitted
    assert abs(model.ability_.mean()) < 1e-9 and abs(model.ability_.std() - 1) < 1e-9
    assert np.corrcoef(model.ability_, ds.accuracy().to_numpy())[0, 1] > 0
    # Probabilities follow the slope-intercept form and the (a, b) form alike.
    z = model.ability_[:, None] * model.discrimination_ + model.intercept_
    probs = model.predict_proba(ds)
    assert np.allclose(probs, 1 / (1 + np.exp(-z)))
    ok = np.isfinite(model.difficulty_)
    assert np.allclose(probs[:, ok], irt.icc(model.ability_[:, None], model.discrimination_[ok], model.difficulty_[ok]))


def test_sign_convention_follows_accuracy_when_labels_flip():
    ds, *_ = simulate_2pl(300, 40, seed=2, share_negative=0.0)
    flipped = make_dataset(1 - ds.labels)  # the worst model becomes the best
    a, b = irt.TwoPL().fit(ds), irt.TwoPL().fit(flipped)
    assert np.corrcoef(a.ability_, b.ability_)[0, 1] < -0.99  # ability still rises with accuracy
    assert np.corrcoef(a.discrimination_, b.discrimination_)[0, 1] > 0.99  # so the slopes keep their sign


def test_soft_labels_are_fitted_as_expected_counts():
    rng = np.random.default_rng(8)
    theta, a, b = rng.normal(size=600), rng.uniform(-2, 2, size=25), rng.normal(size=25)
    probs = irt.icc(theta[:, None], a, b)
    model = irt.TwoPL(prior_sd_discrimination=10, prior_sd_intercept=10).fit(make_dataset(probs))
    # Soft labels equal to the true probabilities carry no sampling noise: the fit returns them.
    assert np.abs(model.predict_proba(make_dataset(probs)) - probs).max() < 0.03


def test_1pl_recovers_difficulty_with_one_positive_slope():
    ds, theta, a, b = simulate_2pl(800, 60, seed=3, one_pl=True)
    model = irt.OnePL().fit(ds)
    assert model.converged_
    assert np.ptp(model.discrimination_) == 0 and model.discrimination_[0] > 0
    assert abs(model.discrimination_[0] - 1.3) < 0.2  # abilities are standardised like the truth
    assert np.corrcoef(model.difficulty_, b)[0, 1] >= 0.95
    assert np.corrcoef(model.ability_, theta)[0, 1] >= 0.95


def test_fit_uses_only_labels_under_the_mask():
    ds, *_ = simulate_2pl(200, 30, seed=4)
    mask = ds.observed & (np.random.default_rng(0).random(ds.labels.shape) < 0.7)
    changed = ds.labels.copy()
    changed[ds.observed & ~mask] = 1 - changed[ds.observed & ~mask]  # alter every unused label
    a = irt.TwoPL().fit(ds, mask=mask)
    b = irt.TwoPL().fit(make_dataset(changed), mask=mask)
    assert np.allclose(a.discrimination_, b.discrimination_) and np.allclose(a.ability_, b.ability_)


def test_unlabelled_items_and_models_get_nan_and_are_refused():
    ds, *_ = simulate_2pl(50, 12, seed=5)
    mask = ds.observed.copy()
    mask[:, 3] = False  # item q3 unused
    mask[7, :] = False  # model m7 unused
    model = irt.TwoPL().fit(ds, mask=mask)
    assert np.isnan(model.discrimination_[3]) and np.isnan(model.ability_[7])
    with pytest.raises(ValueError, match="no label"):
        model.predict_proba(ds)
    keep = ds.subset(models=[m for m in ds.models if m != "m7"], items=[f"q{j}" for j in range(12) if j != 3])
    assert model.predict_proba(keep).shape == (49, 11)


def test_predict_proba_refuses_items_and_models_it_was_not_fitted_on():
    ds, *_ = simulate_2pl(60, 10, seed=6)
    model = irt.TwoPL().fit(ds.subset(items=np.arange(8)))
    with pytest.raises(ValueError, match="predicts only items it was fitted on"):
        model.predict_proba(ds)
    other = make_dataset(ds.labels[:, :8])
    other.models = [f"new{i}" for i in range(ds.n_models)]
    with pytest.raises(ValueError, match="predicts only models it was fitted on"):
        model.predict_proba(other)
    probs = model.predict_proba(ds.subset(models=["m3", "m1"], items=["q5", "q0"]))
    full = model.predict_proba(ds.subset(items=np.arange(8)))
    assert np.allclose(probs, full[np.ix_([3, 1], [5, 0])])


def test_errors_name_the_argument():
    with pytest.raises(NotFittedError, match="not fitted"):
        irt.TwoPL().predict_proba(make_dataset(np.ones((2, 2))))
    with pytest.raises(ValueError, match="prior_sd_discrimination"):
        irt.TwoPL(prior_sd_discrimination=0)
    with pytest.raises(ValueError, match="dtype"):
        irt.OnePL(dtype="float16")
    ds = make_dataset(np.array([[1, np.nan], [0, 1], [1, 0]], dtype=np.float32))
    with pytest.raises(ValueError, match="mask has shape"):
        irt.TwoPL().fit(ds, mask=np.ones((2, 2), dtype=bool))
    with pytest.raises(ValueError, match="unobserved"):
        irt.TwoPL().fit(ds, mask=np.ones((3, 2), dtype=bool))


def test_difficulty_is_nan_only_where_discrimination_is_tiny(fitted):
    *_, model = fitted
    tiny = np.abs(model.discrimination_) < model.min_discrimination
    assert np.array_equal(np.isnan(model.difficulty_), tiny)
    table = model.item_parameters()
    assert list(table.columns) == ["item_id", "benchmark", "discrimination", "intercept", "difficulty"]


# ---------------------------------------------------------------------------------------------
# Analyses on hand-worked matrices


def test_icc_midpoint_and_slope():
    assert irt.icc(0.7, 2.0, 0.7) == pytest.approx(0.5)
    h = 1e-6
    slope = (irt.icc(0.7 + h, 2.0, 0.7) - irt.icc(0.7 - h, 2.0, 0.7)) / (2 * h)
    assert slope == pytest.approx(2.0 / 4)  # a / 4 at theta = b
    assert irt.icc(1.0, -1.0, 0.0) < 0.5 < irt.icc(-1.0, -1.0, 0.0)  # negative a: falls with ability


def test_discrimination_shares_toy():
    shares = diag.discrimination_shares(np.array([-1.0, -0.1, 0.0, 0.2, 1.0, np.nan]), near_zero=0.25)
    assert shares == {"items": 5, "nonpositive": 0.6, "near_zero": 0.6, "clearly_negative": 0.2}


def test_saturation_matches_hand_worked_toy():
    labels = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 0], [1, np.nan, 1]])  # 4 models x 3 items
    probs = np.array(
        [[0.9, 0.4, 0.5], [0.8, 0.3, 0.1], [0.6, 0.2, 0.2], [0.7, 0.9, 0.3]]
    )  # 0.9 on item 1 belongs to an ungraded pair: ignored
    exact = diag.saturation(probs, labels, tolerance=0.0)
    assert exact["models"].tolist() == [4, 3, 4]
    assert np.allclose(exact["predicted_share"], [1, 0, 0.25])  # p = 0.5 counts as correct
    assert np.allclose(exact["actual_share"], [1, 2 / 3, 0.25])
    assert exact["predicted_unanimous"].tolist() == [True, True, False]
    assert exact["actual_unanimous"].tolist() == [True, False, False]
    near = diag.saturation(probs, labels, tolerance=0.25)  # one dissenter in four allowed
    assert near["predicted_unanimous"].tolist() == [True, True, True]
    assert near["actual_unanimous"].tolist() == [True, False, True]
    with pytest.raises(ValueError, match="tolerance"):
        diag.saturation(probs, labels, tolerance=0.5)


def test_correct_set_inclusion_matches_hand_worked_toy():
    labels = np.array(
        [
            [1, 0, 0, 1],  # m0: accuracy 1/2
            [1, 1, 0, 0],  # m1: accuracy 1/2
            [1, 1, 1, np.nan],
        ]
    )  # m2: accuracy 1, not graded on item 3
    ratio = diag.correct_set_inclusion(labels, ["m0", "m1", "m2"])
    assert list(ratio.index) == ["m0", "m1", "m2"]  # least to most accurate, ties in input order
    expected = np.array(
        [
            [np.nan, 1 / 2, 0],  # m0 solves {0, 3}; m1 misses 3; on shared {0,1,2} m2 misses none
            [1 / 2, np.nan, 0],  # m1 solves {0, 1}; m0 misses 1
            [2 / 3, 1 / 3, np.nan],
        ]
    )  # m2 solves {0, 1, 2}; m0 misses 1, 2; m1 misses 2
    assert np.allclose(ratio.to_numpy(), expected, equal_nan=True)
    assert diag.mean_inclusion_gap(ratio) == pytest.approx(1 / 6)
    assert diag.mean_inclusion_gap(ratio, weakest=1 / 3) == pytest.approx(1 / 4)  # row m0 only
    by_hand_order = diag.correct_set_inclusion(labels, ["m0", "m1", "m2"], order=np.array([2, 0, 1]))
    assert list(by_hand_order.index) == ["m2", "m0", "m1"]
    assert by_hand_order.loc["m2", "m0"] == pytest.approx(2 / 3)


def test_inclusion_is_zero_above_the_diagonal_on_a_perfect_scale():
    ability = np.arange(6)[:, None]
    labels = (ability > np.array([0, 1, 1, 2, 3, 4, 4])[None, :]).astype(float)  # Guttman pattern
    ratio = diag.correct_set_inclusion(labels)
    upper = ratio.to_numpy()[np.triu_indices(6, k=1)]
    assert np.nansum(upper) == 0 and diag.mean_inclusion_gap(ratio) == 0


def test_expected_unanimity_on_known_probabilities():
    certain = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert np.array_equal(diag.expected_unanimity(certain, tolerance=0.0, n_draws=5), [1.0, 1.0])
    coin = np.full((3, 4000), 0.5)  # three fair coins agree with probability 2 / 8
    assert diag.expected_unanimity(coin, tolerance=0.0, n_draws=3).mean() == pytest.approx(0.25, abs=0.02)


def test_null_dataset_keeps_graded_pairs_and_has_no_falling_items(fitted):
    ds, *_, model = fitted
    null = diag.null_dataset(model, ds, seed=0)
    assert np.array_equal(null.observed, ds.observed)
    falling = model.discrimination_ < -1
    # Where the fitted item falls with ability, the null data are flat in ability instead.
    top, bottom = model.ability_ > 1, model.ability_ < -1
    with np.errstate(invalid="ignore"):
        gap_data = np.nanmean(ds.labels[top][:, falling]) - np.nanmean(ds.labels[bottom][:, falling])
        gap_null = np.nanmean(null.labels[top][:, falling]) - np.nanmean(null.labels[bottom][:, falling])
    assert gap_data < -0.3 and abs(gap_null) < 0.05


def test_pick_icc_examples_returns_the_four_kinds(fitted):
    ds, *_, model = fitted
    picks = diag.pick_icc_examples(model, ds)
    a = model.discrimination_
    assert list(picks) == ["negative", "near zero", "positive, typical", "positive, sharpest"]
    assert len(set(picks.values())) == 4
    assert a[picks["negative"]] == np.nanmin(a)
    assert a[picks["positive, sharpest"]] >= a[picks["positive, typical"]] >= diag.NEAR_ZERO


def test_fit_restores_torch_threads():
    ds, *_ = simulate_2pl(40, 8, seed=7)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        irt.TwoPL(cpu_threads=1, device="cpu").fit(ds)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="cpu_threads"):
        irt.TwoPL(cpu_threads=0)


def test_sum64_accumulates_in_float64():
    x = torch.rand(3000, 1000, generator=torch.Generator().manual_seed(0))  # float32
    total = irt.sum64(x)
    assert total.dtype == torch.float64 and total.dim() == 0
    exact = x.numpy().astype(np.float64).sum()
    assert abs(float(total) - exact) < 1e-9 * exact  # a float32 sum is off by ~1e-8 relative here
    assert float(irt.sum64(x[:0])) == 0.0


# ---------------------------------------------------------------------------------------------
# Classic IRT with known item parameters (the primer's algorithms)


def two_pl_test(n_people: int, n_items: int, seed: int, theta: float | None = None):
    """Answers of n_people to n_items 2PL items (a in [0.5, 2], b ~ N(0, 1)); everyone at `theta`
    if given, else abilities drawn from N(0, 1). Returns labels, a, d = -a b and the abilities."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0.5, 2.0, n_items), rng.normal(size=n_items)
    abilities = np.full(n_people, theta) if theta is not None else rng.normal(size=n_people)
    labels = (rng.random((n_people, n_items)) < irt.icc(abilities[:, None], a, b)).astype(float)
    return labels, a, -a * b, abilities


def test_icc_with_guessing_and_information():
    assert irt.icc(0.3, 1.7, 0.3, guessing=0.1) == pytest.approx(0.55)  # (1 + c) / 2 at theta = b
    assert irt.icc(-50.0, 1.0, 0.0, guessing=0.25) == pytest.approx(0.25)  # the floor
    with pytest.raises(ValueError, match="guessing"):
        irt.icc(0.0, 1.0, 0.0, guessing=1.0)
    assert irt.item_information(0.0, 2.0, 0.0) == pytest.approx(1.0)  # a^2 / 4 at theta = b
    # The information is the expected curvature of the log-likelihood: for the 3PL, by finite
    # differences of log P and log(1 - P) weighted by P and 1 - P.
    theta, a, b, c, h = 0.4, 1.5, -0.2, 0.2, 1e-4
    p = lambda t: irt.icc(t, a, b, c)  # noqa: E731
    curv = lambda f: (f(theta + h) - 2 * f(theta) + f(theta - h)) / h**2  # noqa: E731
    expected = -(p(theta) * curv(lambda t: np.log(p(t))) + (1 - p(theta)) * curv(lambda t: np.log(1 - p(t))))
    assert irt.item_information(theta, a, b, c) == pytest.approx(expected, rel=1e-4)


def test_ability_loglik_derivatives_match_finite_differences():
    labels, a, d, _ = two_pl_test(1, 15, seed=0, theta=0.5)
    y = labels[0]
    h = 1e-5
    ll, grad, hess = irt.ability_loglik(0.2, y, a, d)
    up, down = irt.ability_loglik(0.2 + h, y, a, d), irt.ability_loglik(0.2 - h, y, a, d)
    assert grad == pytest.approx((up[0] - down[0]) / (2 * h), rel=1e-5)
    assert hess == pytest.approx((up[1] - down[1]) / (2 * h), rel=1e-5)
    p = irt.icc(0.2, a, -d / a)
    assert ll == pytest.approx(np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)))


def test_ml_ability_is_the_maximum_and_its_se_is_the_spread_of_repeated_tests():
    labels, a, d, _ = two_pl_test(3000, 40, seed=1, theta=0.7)
    fit = irt.estimate_ability(labels, a, d, method="ml")
    _, grad, _ = irt.ability_loglik(fit["theta"].to_numpy(), labels, a, d)
    assert np.abs(grad).max() < 1e-6
    assert fit["se"][0] == pytest.approx(1 / np.sqrt(irt.item_information(fit["theta"][0], a, -d / a).sum()))
    # Asymptotically the ML estimate has sd 1 / sqrt(I(theta)); 40 items are enough for 10%.
    assert fit["theta"].std() == pytest.approx(1 / np.sqrt(irt.item_information(0.7, a, -d / a).sum()), rel=0.1)
    assert abs(fit["theta"].mean() - 0.7) < 0.05
    with pytest.raises(ValueError, match="no finite maximum-likelihood"):
        irt.estimate_ability(np.ones((2, 40)), a, d, method="ml")
    # With a falling item, all right is no longer unbounded.
    assert np.isfinite(irt.estimate_ability(np.ones(3), [1.0, 1.0, -1.0], [0.0, 0.0, 0.0], method="ml")["theta"][0])


def test_eap_and_map_are_the_posterior_mean_and_mode():
    labels, a, d, theta = two_pl_test(4000, 20, seed=2)
    eap = irt.estimate_ability(labels, a, d, method="eap")
    # EAP = E[theta | answers]: regressing the truth on it gives slope 1, and the law of total
    # variance gives var(EAP) + mean posterior variance = var(theta) = 1 (the prior).
    assert np.polyfit(eap["theta"], theta, 1)[0] == pytest.approx(1.0, abs=0.05)
    assert eap["theta"].var() + (eap["se"] ** 2).mean() == pytest.approx(1.0, abs=0.05)
    # The posterior-sd interval covers the truth about 68% of the time.
    assert np.mean(np.abs(eap["theta"] - theta) < eap["se"]) == pytest.approx(0.683, abs=0.03)
    mode = irt.estimate_ability(labels, a, d, method="map", prior_sd=1.0)
    _, grad, hess = irt.ability_loglik(mode["theta"].to_numpy(), labels, a, d)
    assert np.abs(grad - mode["theta"]).max() < 1e-6  # the log posterior's gradient is l' - theta = 0
    assert np.allclose(mode["se"], 1 / np.sqrt(-hess + 1))
    wide = irt.estimate_ability(labels, a, d, method="map", prior_sd=100.0)
    assert np.mean(np.abs(mode["theta"]) <= np.abs(wide["theta"]) + 1e-12) == 1.0  # the prior shrinks
    assert np.isfinite(eap["theta"]).all() and np.isfinite(mode["theta"]).all()  # all-right rows too
    with pytest.raises(ValueError, match="method"):
        irt.estimate_ability(labels, a, d, method="mle")
    with pytest.raises(ValueError, match="one parameter per item"):
        irt.estimate_ability(labels, a[:5], d)


def test_item_standard_errors_match_the_spread_of_refits():
    rng = np.random.default_rng(3)
    theta = rng.normal(size=400)
    a_true, b_true = 1.2, 0.3
    y = (rng.random((500, 400)) < irt.icc(theta, a_true, b_true)).astype(float)  # 500 replications
    x = np.stack([theta, np.ones(400)], axis=1)  # (400, 2): the item is a logistic regression on theta
    beta = np.zeros((500, 2))
    for _ in range(25):  # Newton steps for every replication at once
        p = 1 / (1 + np.exp(-(beta @ x.T)))
        hess = np.einsum("rn,ni,nj->rij", p * (1 - p), x, x)
        beta += np.linalg.solve(hess, ((y - p) @ x)[..., None])[..., 0]
    sd = np.array([beta[:, 0], beta[:, 1], -beta[:, 1] / beta[:, 0]]).std(axis=1)
    se = irt.item_standard_errors(np.zeros((400, 1)), theta, [a_true], [-a_true * b_true])
    assert list(se.columns) == ["discrimination", "intercept", "difficulty"]
    assert se.iloc[0].to_numpy() == pytest.approx(sd, rel=0.1)


def test_fit_item_3pl_recovers_the_floor_and_fixing_it_costs_likelihood():
    rng = np.random.default_rng(4)
    theta = rng.normal(size=20000)
    y = (rng.random(20000) < irt.icc(theta, 1.5, 0.5, 0.2)).astype(float)
    free, two_pl = irt.fit_item_3pl(theta, y), irt.fit_item_3pl(theta, y, guessing=0.0)
    assert (free["a"], free["b"], free["c"]) == pytest.approx((1.5, 0.5, 0.2), abs=0.1)
    assert free["loglik"] > two_pl["loglik"] + 10 and two_pl["c"] == 0.0
    with pytest.raises(ValueError, match="guessing"):
        irt.fit_item_3pl(theta, y, guessing=1.5)


def test_rasch_jml_stretches_a_short_test_and_mml_does_not():
    rng = np.random.default_rng(5)
    b_true = np.linspace(-1.5, 1.5, 5)
    theta = rng.normal(size=3000)
    data = (rng.random((3000, 5)) < irt.icc(theta[:, None], 1.0, b_true)).astype(float)
    inner = (data.sum(axis=1) > 0) & (data.sum(axis=1) < 5)
    # JML's stretch of a J-item Rasch test is about J / (J - 1): 1.25 for five items.
    assert np.polyfit(b_true, irt.rasch_jml(data[inner])["b"], 1)[0] == pytest.approx(1.25, abs=0.1)
    mml = irt.rasch_mml_em(data)
    assert np.abs(mml["b"] - b_true).max() < 0.12 and np.all(np.diff(mml["loglik"]) > -1e-9)  # EM never falls
    with pytest.raises(ValueError, match="extreme scores"):
        irt.rasch_jml(data)
    tiny = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1], [0, 0, 1]])
    by_hand = irt.rasch_jml(tiny)
    assert by_hand["theta"][0] == pytest.approx(by_hand["theta"][3])  # equal sum scores, equal abilities


def test_fit_mirt_finds_the_second_dimension_on_held_out_answers():
    from jeirt import metrics

    rng = np.random.default_rng(6)
    theta = rng.normal(size=(300, 2))
    load = np.zeros((30, 2))
    load[:15, 0], load[15:, 1] = 1.8, 1.8
    labels = (rng.random((300, 30)) < 1 / (1 + np.exp(-(theta @ load.T)))).astype(float)
    train = rng.random(labels.shape) < 0.8
    loss = {}
    for dims in (1, 2):
        t, a, d = irt.fit_mirt(labels, train, dims, seed=0)
        assert t.shape == (300, dims) and a.shape == (30, dims) and d.shape == (30,)
        p = 1 / (1 + np.exp(-(t @ a.T + d)))
        loss[dims] = metrics.log_loss(p[~train], labels[~train])
    assert loss[2] < loss[1] - 0.03
    with pytest.raises(ValueError, match="dims"):
        irt.fit_mirt(labels, train, 0)


# ---------------------------------------------------------------------------------------------
# Item fit and local dependence (jeirt.baselines.irt_diagnostics)


def test_item_fit_is_one_on_the_true_curve_and_moves_with_misfit():
    rng = np.random.default_rng(7)
    theta = rng.normal(size=(20000, 1))
    b = np.linspace(-1, 1, 6)
    model = irt.icc(theta, 1.5, b)  # the curves the "fit" claims
    fits = diag.item_fit((rng.random(model.shape) < model).astype(float), model)
    assert np.allclose(fits["outfit"], 1.0, atol=0.06) and np.allclose(fits["infit"], 1.0, atol=0.03)
    flatter = (rng.random(model.shape) < irt.icc(theta, 0.3, b)).astype(float)  # noisier than claimed
    steeper = (rng.random(model.shape) < irt.icc(theta, 5.0, b)).astype(float)  # more predictable
    assert (diag.item_fit(flatter, model)["outfit"] > 1.3).all() and (
        diag.item_fit(flatter, model)["infit"] > 1.2
    ).all()
    assert (diag.item_fit(steeper, model)["outfit"] < 0.8).all() and (
        diag.item_fit(steeper, model)["infit"] < 0.8
    ).all()
    with pytest.raises(ValueError, match="same shape"):
        diag.item_fit(flatter, model[:, :3])
    with pytest.raises(ValueError, match="strictly between"):
        diag.item_fit(flatter, np.round(model))


def test_q3_finds_a_second_dimension_that_outfit_misses():
    rng = np.random.default_rng(8)
    n, j1, j2 = 1000, 24, 12
    theta = rng.normal(size=(n, 2))
    load = np.zeros((j1 + j2, 2))
    load[:j1, 0], load[j1:, 1] = rng.uniform(1, 2.5, j1), rng.uniform(1, 2.5, j2)
    labels = (rng.random((n, j1 + j2)) < 1 / (1 + np.exp(-(theta @ load.T + rng.normal(size=j1 + j2))))).astype(float)
    second = np.arange(j1 + j2) >= j1
    # One dimension: Q3 near -1/(J - 1) among items of the fitted dimension (Yen 1993).
    uni = make_dataset(labels[:, ~second])
    p_uni = irt.TwoPL().fit(uni).predict_proba(uni)
    assert diag.mean_q3(diag.q3(labels[:, ~second], p_uni), np.ones(j1, dtype=bool)) == pytest.approx(
        -1 / (j1 - 1), abs=0.02
    )
    # Two dimensions, one fitted: the 2PL flattens the second group's curves, so their outfit stays
    # near 1, while their residuals correlate.
    ds = make_dataset(labels)
    p = irt.TwoPL().fit(ds).predict_proba(ds)
    fits, corr = diag.item_fit(labels, p), diag.q3(labels, p)
    assert fits["outfit"][second].mean() == pytest.approx(1.0, abs=0.1)
    assert diag.mean_q3(corr, second) > 0.1 > diag.mean_q3(corr, ~second) + 0.1
    assert np.allclose(np.diag(corr), 1.0) and np.allclose(corr, corr.T)
    with pytest.raises(ValueError, match="at least two"):
        diag.mean_q3(corr, [3])
    by_group = diag.fit_by_group(labels, p, np.where(second, "second", "first"))
    assert list(by_group.index) == ["first", "second"]
    assert by_group.loc["second", "Q3 within"] == pytest.approx(diag.mean_q3(corr, second))
    assert by_group.loc["second", "outfit"] == pytest.approx(fits["outfit"][second].mean())
    with pytest.raises(ValueError, match="one per item"):
        diag.fit_by_group(labels, p, ["first"] * 3)


def test_rasch_patterns_given_their_score_do_not_depend_on_ability():
    table = diag.patterns_given_score(np.array([-1.0, 0.0, 1.0]), 1, thetas=(-2.0, 0.0, 3.0))
    assert list(table.index) == ["001", "010", "100"]
    assert np.allclose(table.to_numpy(), table.iloc[:, [0]].to_numpy())  # the sum score is sufficient
    assert np.allclose(table.sum(), 1.0)
    weights = np.exp(-np.array([1.0, 0.0, -1.0]))  # P(pattern | score) is proportional to exp(-b_j)
    assert np.allclose(table.iloc[:, 0], weights / weights.sum())
    with pytest.raises(ValueError, match="score=4"):
        diag.patterns_given_score(np.zeros(3), 4)


# ---------------------------------------------------------------------------------------------
# The 2PL by marginal maximum likelihood (Section 3.1's fit)


def simulate_test(seed: int, n_models: int = 2000, n_items: int = 40):
    """A 2,000 x 40 test from a known 2PL with positive slopes, theta ~ N(0, 1): the issue's setting."""
    rng = np.random.default_rng(seed)
    theta, a, b = rng.normal(size=n_models), rng.uniform(0.5, 2.5, n_items), rng.normal(size=n_items)
    return make_dataset(irt.sample_labels(irt.icc(theta[:, None], a, b), seed=seed)), theta, a, b


def test_marginal_2pl_recovers_discriminations_where_the_joint_map_inflates_them():
    mml, jmap = [], []
    for seed in range(3):
        ds, _, a, _ = simulate_test(seed)
        model = irt.MarginalTwoPL(device="cpu").fit(ds)
        assert model.converged_
        mml.append(model.discrimination_.mean() / a.mean())
        jmap.append(irt.TwoPL(device="cpu").fit(ds).discrimination_.mean() / a.mean())
    assert abs(np.mean(mml) - 1) < 0.04  # within a few %
    assert np.mean(jmap) > 1.05  # the joint MAP, rescaled, inflates them (about 10% here)


def test_marginal_2pl_item_intervals_cover_at_their_nominal_level():
    z = {"discrimination": [], "intercept": []}
    for seed in range(10, 20):
        ds, _, a, b = simulate_test(seed)
        model = irt.MarginalTwoPL(device="cpu").fit(ds)
        se = model.standard_errors(ds)
        z["discrimination"].append((model.discrimination_ - a) / se["discrimination"].to_numpy())
        z["intercept"].append((model.intercept_ + a * b) / se["intercept"].to_numpy())
    for values in z.values():
        values = np.concatenate(values)  # 400 intervals
        for level, k in ((0.95, 1.96), (0.90, 1.645)):
            noise = np.sqrt(level * (1 - level) / len(values))
            assert abs(np.mean(np.abs(values) <= k) - level) < 3.5 * noise


def test_marginal_2pl_masks_missing_answers_and_abilities_are_eap():
    ds, theta, a, b = simulate_2pl(800, 40, seed=7, density=0.7)
    model = irt.MarginalTwoPL(device="cpu").fit(ds)
    ok = np.isfinite(model.difficulty_)
    assert np.corrcoef(model.discrimination_, a)[0, 1] > 0.95 and np.corrcoef(model.difficulty_[ok], b[ok])[0, 1] > 0.95
    assert np.corrcoef(model.ability_, theta)[0, 1] > 0.9 and (model.ability_se_ > 0).all()
    # the posterior mean and sd, as estimate_ability's Gauss-Hermite EAP gives them (the grids differ a little)
    eap = irt.estimate_ability(ds.labels, model.discrimination_, model.intercept_, method="eap")
    assert np.allclose(eap["theta"], model.ability_, atol=0.01) and np.allclose(eap["se"], model.ability_se_, atol=0.01)
    mask = ds.observed.copy()
    mask[:, 3], mask[5, :] = False, False
    changed = ds.labels.copy()
    changed[ds.observed & ~mask] = 1 - changed[ds.observed & ~mask]
    one, two = (
        irt.MarginalTwoPL(device="cpu").fit(ds, mask),
        irt.MarginalTwoPL(device="cpu").fit(make_dataset(changed), mask),
    )
    assert np.isnan(one.discrimination_[3]) and np.isnan(one.ability_[5])
    assert np.allclose(one.discrimination_, two.discrimination_, equal_nan=True)


def test_marginal_2pl_refuses_bad_arguments():
    ds, *_ = simulate_2pl(60, 10, seed=8)
    with pytest.raises(ValueError, match="n_nodes"):
        irt.MarginalTwoPL(n_nodes=2)
    with pytest.raises(ValueError, match="start must be"):
        irt.MarginalTwoPL(device="cpu").fit(ds, start=(np.ones(3), np.zeros(3)))
    model = irt.MarginalTwoPL(device="cpu").fit(ds)
    with pytest.raises(ValueError, match="fitted on"):
        model.standard_errors(ds.subset(items=np.arange(5)))


def test_null_dataset_floor_and_excess_over_null(fitted):
    ds, *_, model = fitted
    null = diag.null_dataset(model, ds, seed=0, world="clearly_negative")
    refit = irt.TwoPL().fit(null)
    assert np.mean(refit.discrimination_ < -1) < 0.01  # no clearly falling item left beyond noise
    # each world moves only the items that make its claim true, to the claim's boundary
    a = np.array([-1.0, -0.3, -0.1, 0.0, 0.1, 0.3, 1.0])
    np.testing.assert_allclose(diag.world_discrimination(a, "nonpositive"), [0, 0, 0, 0, 0.1, 0.3, 1])
    np.testing.assert_allclose(diag.world_discrimination(a, "clearly_negative"), [-0.25, -0.25, -0.1, 0, 0.1, 0.3, 1])
    np.testing.assert_allclose(diag.world_discrimination(a, "near_zero"), [-1, -0.3, -0.25, 0.25, 0.25, 0.3, 1])
    np.testing.assert_allclose(diag.world_discrimination(a, "flat"), [-1, -0.3, 0, 0, 0, 0.3, 1])
    with pytest.raises(ValueError, match="world="):
        diag.world_discrimination(a, "floor")
    result = diag.excess_over_null(0.30, [0.10, 0.12, 0.14])
    assert result["excess"] == pytest.approx(0.18) and result["null_sd"] == pytest.approx(0.02)
    assert result["se"] == pytest.approx(0.02 * np.sqrt(4 / 3))
    with pytest.raises(ValueError, match="at least 3"):
        diag.excess_over_null(0.3, [0.1, 0.2])
    gap = diag.paired_share_gap(np.array([1, 1, 0, 0], bool), np.array([1, 0, 0, 0], bool))
    assert gap["gap"] == pytest.approx(0.25) and gap["se"] == pytest.approx(0.5 / 2)
    twice = diag.paired_share_gap(np.array([1, 1, 0, 0], bool), np.array([1, 0, 0, 0], bool), times=2.0)
    assert twice["gap"] == pytest.approx(0.0) and twice["second"] == pytest.approx(0.25)
