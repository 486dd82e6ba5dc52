"""Efficient evaluation on simulated data, where the true model vectors and question embeddings are known.

A bank built from the true geometry must recover held-out models' vectors, estimate their accuracy
better than the plain mean of the same answers, and give intervals that cover; each selection rule
must respect its contract; refining a question's embedding with known answers must move it towards
the truth; and the `estimate` / `suggest` verbs must run end to end.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from jeirt import cli
from jeirt.model import sigmoid
from jeirt.onboard import vector_prior
from jeirt.simulate import simulate
from jeirt.tasks import evaluation as ev
from jeirt.tasks.evaluation import model_based, selection
from jeirt_book.experiments import new_models

N_TRAINED = 60  # simulated models whose vectors form the prior; the rest are "new"


@pytest.fixture(scope="module")
def sim():
    """100 models x 1,000 questions, d = 8, drawn from JE-IRT; the last 40 models are the new ones."""
    ds, truth = simulate(n_models=100, n_items=1000, feature_dim=32, d=8, seed=1)
    bank = ev.QuestionBank.from_embeddings(
        truth.question_embeddings,
        truth.model_vectors[:N_TRAINED],
        groups=ds.items["benchmark"],
        item_ids=ds.items["item_id"],
    )
    return ds, truth, bank, ds.labels[N_TRAINED:].astype(np.float64)


def asked_mask(picks: np.ndarray, n_items: int) -> np.ndarray:
    asked = np.zeros((len(picks), n_items), dtype=bool)
    np.put_along_axis(asked, picks, True, axis=1)
    return asked


# ---------------------------------------------------------------------------------------------
# Prior, posterior, estimates


def test_vector_prior_kinds_and_errors():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(5, 20)) * np.linspace(0.1, 3, 20)
    mean, cov = vector_prior(vectors, "full")
    assert mean.shape == (20,) and cov.shape == (20, 20)
    assert np.linalg.eigvalsh(cov).min() > 0  # shrinkage keeps it invertible with n << d
    # The Ledoit-Wolf covariance with its first principal component, and only it, widened ABILITY_WIDENING times.
    from sklearn.covariance import ledoit_wolf

    from jeirt.onboard import ABILITY_WIDENING

    base, _ = ledoit_wolf(vectors)
    values, axes = np.linalg.eigh(base)
    np.testing.assert_allclose(
        axes.T @ cov @ axes, np.diag(np.r_[values[:-1], ABILITY_WIDENING * values[-1]]), atol=1e-10
    )
    _, iso = vector_prior(vectors, "isotropic")
    np.testing.assert_allclose(iso, vectors.var(axis=0, ddof=1).mean() * np.eye(20))
    with pytest.raises(ValueError, match="covariance='flat'"):
        vector_prior(vectors, "flat")
    with pytest.raises(ValueError, match="n_models >= 2"):
        vector_prior(vectors[:1])


def test_whitened_features_reproduce_equation_3(sim):
    ds, truth, bank, _ = sim
    v = truth.model_vectors[N_TRAINED]
    z = np.linalg.solve(bank.factor, v - bank.prior_mean)  # v = mu + L z
    np.testing.assert_allclose(
        sigmoid(bank.features @ z - bank.offsets), truth.probabilities[N_TRAINED], rtol=1e-6, atol=1e-9
    )


def test_posterior_recovers_true_vectors(sim):
    ds, truth, bank, labels = sim
    post = bank.posterior(labels, ~np.isnan(labels))
    vectors, covs = bank.vectors(post)
    true = truth.model_vectors[N_TRAINED:]
    cosine = (vectors * true).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(true, axis=1)
    assert np.median(cosine) > 0.95, cosine
    # The true vector lies as far from the posterior mean as the Laplace covariance says: Mahalanobis
    # distances of a d-dimensional Gaussian, chi-square with 8 degrees of freedom (median 7.34; measured
    # 5.5). Two-sided: covariances 100 times too wide give a median of 0.06, 0.3 times give 18.4.
    maha = [float((v - t) @ np.linalg.solve(c, v - t)) for v, t, c in zip(vectors, true, covs)]
    assert 3 < np.median(maha) < 15, np.median(maha)


def test_nothing_asked_gives_the_prior_and_everything_asked_is_exact(sim):
    ds, truth, bank, labels = sim
    none = bank.posterior(labels, np.zeros_like(labels, dtype=bool))
    assert np.allclose(none.mean, 0) and np.allclose(none.dense(), np.eye(8))
    every = ~np.isnan(labels)
    est = ev.estimate_scores(bank, labels, every, draws=50)
    overall = est[est["group"] == ev.OVERALL]
    np.testing.assert_allclose(overall["estimate"], np.nanmean(labels, axis=1))
    assert np.allclose(overall["sd"], 0) and (overall["asked"] == 1000).all()
    assert set(est["group"]) == {ev.OVERALL, *bank.benchmarks}


def test_estimates_beat_the_plain_mean_and_intervals_cover(sim):
    ds, truth, bank, labels = sim
    errors, plain_errors, covered, widths = [], [], [], []
    for seed in range(3):
        asked = asked_mask(ev.select_questions(bank, 40, "random", labels=labels, seed=seed), bank.n_items)
        est = ev.estimate_scores(bank, labels, asked, draws=200, seed=seed)
        overall = est[est["group"] == ev.OVERALL].reset_index(drop=True)
        true = np.nanmean(labels, axis=1)
        plain = ev.plain_means(bank, labels, asked)
        errors += list(np.abs(overall["estimate"] - true))
        plain_errors += list(np.abs(plain.loc[plain["group"] == ev.OVERALL, "estimate"].to_numpy() - true))
        covered += list((overall["lower"] <= true) & (true <= overall["upper"]))
        widths += list(overall["upper"] - overall["lower"])
    # With the true geometry the posterior is the Bayes estimate: about 20% below the plain mean's
    # error at k = 40 here (models differ in 8 directions; the gain grows as they differ in fewer).
    assert np.mean(errors) < 0.9 * np.mean(plain_errors), (np.mean(errors), np.mean(plain_errors))
    # 90% intervals, 120 of them: coverage within about three binomial sd (measured 0.95), and narrow
    # (measured mean width 0.22): an interval that is always [0, 1] covers everything and fails here.
    assert 0.80 <= np.mean(covered) <= 0.99, np.mean(covered)
    assert np.mean(widths) < 0.35, np.mean(widths)


def test_estimate_checks_its_inputs(sim):
    ds, truth, bank, labels = sim
    with pytest.raises(ValueError, match="n_items = 1000"):
        ev.estimate_scores(bank, labels[:, :10], np.ones((40, 10), dtype=bool))
    bad = labels.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN label"):
        bank.posterior(bad, np.ones_like(bad, dtype=bool))
    with pytest.raises(ValueError, match="level=1.5"):
        ev.estimate_scores(bank, labels, ~np.isnan(labels), level=1.5)


# ---------------------------------------------------------------------------------------------
# Selection rules


@pytest.mark.parametrize("rule", ["random", "stratified", "kmeans", "adaptive", "adaptive-accuracy"])
def test_rules_pick_k_distinct_candidates(sim, rule):
    ds, truth, bank, labels = sim
    rng = np.random.default_rng(0)
    candidates = rng.random(labels.shape) < 0.5
    picks = ev.select_questions(bank, 30, rule, labels=np.where(candidates, labels, np.nan)[:4], seed=0)
    assert picks.shape == (4, 30)
    for row, cand in zip(picks, candidates[:4]):
        assert len(set(row)) == 30 and cand[row].all()


def test_stratified_keeps_benchmark_shares(sim):
    ds, truth, bank, labels = sim
    picks = ev.select_questions(bank, 100, "stratified", n_new=1, seed=0)[0]
    shares = pd.Series(bank.groups[picks]).value_counts(normalize=True)
    expected = pd.Series(bank.groups).value_counts(normalize=True)
    assert (shares.reindex(expected.index) - expected).abs().max() < 0.015


def test_rules_reject_bad_requests(sim):
    ds, truth, bank, labels = sim
    with pytest.raises(ValueError, match="rule='best'"):
        ev.select_questions(bank, 5, "best")
    with pytest.raises(ValueError, match="pass labels"):
        ev.select_questions(bank, 5, "adaptive")
    with pytest.raises(ValueError, match="k=2000"):
        ev.select_questions(bank, 2000, "random")


def _ten_new_models(counts: list[int], seed: int) -> tuple[ev.QuestionBank, np.ndarray, np.ndarray]:
    """A d = 48 bank from 30 simulated models, the other 10's labels, and `counts[i]` questions asked of each."""
    ds, truth = simulate(n_models=40, n_items=400, feature_dim=64, d=48, seed=3)
    bank = ev.QuestionBank.from_embeddings(truth.question_embeddings, truth.model_vectors[:30])
    labels = ds.labels[30:].astype(np.float64)
    rng = np.random.default_rng(seed)
    asked = np.zeros_like(labels, dtype=bool)
    for i, k in enumerate(counts):
        asked[i, rng.choice(np.flatnonzero(~np.isnan(labels[i])), k, replace=False)] = True
    return bank, labels, asked


def test_a_posterior_kept_in_its_span_acts_as_its_dense_covariance():
    """Models asked fewer than d questions keep their posteriors in their questions' span (zero-padded
    to the most asked): covariance products, variances and estimates equal the dense ones."""
    bank, labels, asked = _ten_new_models([3, 10, 20, 24, 17, 0, 5, 22, 10, 20], seed=1)
    rng = np.random.default_rng(1)
    post = bank.posterior(np.where(asked, labels, 0.0), asked)
    asked_more = asked.copy()
    asked_more[3, np.flatnonzero(~asked[3] & ~np.isnan(labels[3]))[0]] = True  # 25 > d / 2: dense
    assert bank.posterior(np.where(asked_more, labels, 0.0), asked_more).basis is None
    assert post.basis is not None and post.basis.shape == (10, 48, 24)
    dense = ev.Posterior(post.mean, post.dense())
    np.testing.assert_allclose(dense.cov[5], np.eye(48) * min(bank.prior_widths))  # asked nothing: the prior
    rows, x = np.arange(10), rng.normal(size=(10, 48))
    np.testing.assert_allclose(post.apply(rows, x), dense.apply(rows, x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(post.variances(rows, bank.features), dense.variances(rows, bank.features), rtol=1e-9)
    est = ev.estimate_scores(bank, labels, asked, targets=~np.isnan(labels), draws=4000, posterior=post)
    est_dense = ev.estimate_scores(bank, labels, asked, targets=~np.isnan(labels), draws=4000, posterior=dense)
    np.testing.assert_allclose(est["estimate"], est_dense["estimate"], atol=1e-6)  # the same expectation
    np.testing.assert_allclose(est["sd"], est_dense["sd"], rtol=0.1, atol=2e-3)  # other draws, the same spread


def test_posterior_in_the_span_of_few_answers_is_the_full_fit():
    """With fewer answers than d, the posterior is solved in their span: the same MAP vector, width
    and covariance as the d-dimensional fit (here d = 48, models asked 5 to 60 questions)."""
    from jeirt.onboard import fit_model_vectors

    bank, labels, asked = _ten_new_models([5, 10, 20, 40, 47, 60, 5, 30, 10, 20], seed=0)
    post = bank.posterior(labels, asked)
    for i in range(len(labels)):
        cols = np.flatnonzero(asked[i])
        full = fit_model_vectors(
            bank.features[cols],
            bank.offsets[cols],
            labels[[i]][:, cols],
            asked[[i]][:, cols],
            np.zeros(48),
            list(bank.prior_widths),
            chunk=1,
            device="cpu",
        )
        np.testing.assert_allclose(post.mean[i], full.vectors[0], atol=1e-5)
        np.testing.assert_allclose(post.dense()[i], full.covariances[0], rtol=1e-5, atol=1e-5)  # float32 Hessians


def test_greedy_batch_uses_the_rank_one_update(sim):
    """The second pick of a batch must be the best item under the covariance updated by the first."""
    ds, truth, bank, labels = sim
    post = bank.unanswered(1)
    first, second = ev.next_questions(bank, post, 2, np.ones((1, bank.n_items), dtype=bool))[0]
    F = bank.features
    w = sigmoid(F @ post.mean[0] - bank.offsets)
    w = w * (1 - w)
    cov = np.linalg.inv(np.linalg.inv(post.dense()[0]) + w[first] * np.outer(F[first], F[first]))
    gain = w * ((F @ cov) * F).sum(1)
    gain[first] = -np.inf
    assert second == int(np.argmax(gain))


@pytest.mark.parametrize("target", ["vector", "accuracy"])
def test_greedy_batch_equals_dense_covariance_updates(target):
    """A batch of 12 picks for 4 models from a fitted posterior (d = 48): the same picks as the
    greedy rule with every covariance updated in full after each pick, in float64."""
    ds, truth = simulate(n_models=40, n_items=400, feature_dim=64, d=48, seed=3)
    bank = ev.QuestionBank.from_embeddings(truth.question_embeddings, truth.model_vectors[:30])
    labels = ds.labels[30:34].astype(np.float64)
    asked = asked_mask(ev.select_questions(bank, 20, "random", labels=labels, seed=0), bank.n_items)
    post = bank.posterior(labels, asked)
    free = ~np.isnan(labels) & ~asked
    picks = ev.next_questions(bank, post, 12, free, target=target)
    F = bank.features
    for i in range(len(labels)):
        cov, left = post.dense()[i].copy(), free[i].copy()
        w = sigmoid(F @ post.mean[i] - bank.offsets)
        w = w * (1 - w)
        g = cov @ (w @ F) / bank.n_items  # Sigma g, g the gradient of the overall accuracy
        for q in picks[i]:
            s = ((F @ cov) * F).sum(1)
            gain = w * s if target == "vector" else w * (F @ g) ** 2 / (1 + w * s)
            assert q == int(np.argmax(np.where(left, gain, -np.inf)))
            left[q] = False
            sq = cov @ F[q]
            scale = w[q] / (1 + w[q] * s[q])
            g = g - scale * sq * (F[q] @ g)
            cov = cov - scale * np.outer(sq, sq)


def test_adaptive_selection_hands_over_its_posteriors(sim):
    """The posteriors the adaptive selection keeps are those of the answers asked so far; the order is
    `select_questions`'s; and only the batch ends asked for are kept (5 and 10 are, 12 is not)."""
    ds, truth, bank, labels = sim
    order, kept = ev.adaptive_selection(bank, 15, labels[:5], "adaptive-accuracy", keep=(5, 10, 12, 15))
    np.testing.assert_array_equal(order, ev.select_questions(bank, 15, "adaptive-accuracy", labels=labels[:5]))
    assert sorted(kept) == [5, 10, 15]
    for j, post in kept.items():
        again = bank.posterior(labels[:5], asked_mask(order[:, :j], bank.n_items))
        np.testing.assert_array_equal(post.mean, again.mean)
        np.testing.assert_array_equal(post.dense(), again.dense())
    with pytest.raises(ValueError, match="rule='random'"):
        ev.adaptive_selection(bank, 5, labels[:5], "random")


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """||a - b|| / ||b|| (Frobenius for matrices): a tolerance on it holds whatever the entries' scale."""
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), np.finfo(float).tiny))


def test_posteriors_of_many_answers_each_keep_their_own_width():
    """With d > 32, models with at least d answers are solved several at a time, each under its own
    width: the same as fitting each alone."""
    from jeirt.onboard import fit_model_vectors

    ds, truth = simulate(n_models=50, n_items=400, feature_dim=64, d=48, seed=4)
    bank = ev.QuestionBank.from_embeddings(truth.question_embeddings, truth.model_vectors[:30])
    labels = ds.labels[30:].astype(np.float64)
    labels[:3] = 1.0 - labels[:3] * (labels[:3] > 0.5)  # models unlike the trained ones: a wider prior wins
    rng = np.random.default_rng(0)
    asked = np.zeros_like(labels, dtype=bool)
    for i in range(len(labels)):
        asked[i, rng.choice(np.flatnonzero(~np.isnan(labels[i])), 60 + 10 * (i % 4), replace=False)] = True
    post = bank.posterior(labels, asked)
    widths = set()
    for i in range(len(labels)):
        cols = np.flatnonzero(asked[i])
        alone = fit_model_vectors(
            bank.features[cols],
            bank.offsets[cols],
            labels[[i]][:, cols],
            asked[[i]][:, cols],
            np.zeros(48),
            list(bank.prior_widths),
            chunk=1,
            device="cpu",
        )
        widths.add(alone.prior_width)
        # The Hessians are float32 sums whose order depends on the chunk and on the CPU's vector width
        # (AVX2 vs AVX-512), so entries differ at float32 rounding times the covariance's condition
        # number: compare whole vectors and matrices by relative norm (measured about 2e-7; an entry-wise
        # 1e-5 failed on one entry of 2,304 on an AVX-512 machine).
        assert relative_error(post.mean[i], alone.vectors[0]) < 1e-5
        assert relative_error(post.dense()[i], alone.covariances[0]) < 1e-5
    assert len(widths) > 1, widths  # the chunks mix models of different widths


def test_random_positions_keep_the_share_at_every_batch_end():
    """An adaptive order's random draws are round(share x j) of its first j questions at each batch end j,
    the first ones of their batch; share 0 draws none, share 1 all."""
    drawn = ev.random_positions(300, 0.5)
    end, ends = 0, []
    while end < 300:
        end += selection._batch(end, 300, 5, 0.25)
        ends.append(end)
    for j in ends:
        assert drawn[:j].sum() == round(0.5 * j), j
    assert not ev.random_positions(50, 0.0).any() and ev.random_positions(50, 1.0).all()
    with pytest.raises(ValueError, match="random_share=1.5"):
        ev.random_positions(10, 1.5)


def test_adaptive_random_share_is_a_random_sample(sim):
    """The random picks of an adaptive order are as hard as the questions at large (two-sided, within 3
    standard errors), while its adaptive picks are not: they seek the questions of largest whitened norm."""
    ds, truth, bank, labels = sim
    order = ev.select_questions(bank, 40, "adaptive", labels=labels, seed=0, random_share=0.5)
    drawn = ev.random_positions(40, 0.5)
    size = np.linalg.norm(bank.features, axis=1)
    random_picks, adaptive_picks = order[:, drawn].ravel(), order[:, ~drawn].ravel()
    se = size.std() / np.sqrt(len(random_picks))
    assert abs(size[random_picks].mean() - size.mean()) < 3 * se, (size[random_picks].mean(), size.mean(), se)
    assert size[adaptive_picks].mean() > size.mean() + 6 * se
    default = ev.select_questions(bank, 40, "adaptive", labels=labels, seed=0)  # the default rule
    np.testing.assert_array_equal(order, default)


def wrong_bank(bank: ev.QuestionBank) -> ev.QuestionBank:
    """The bank with a misfit the adaptive rule finds: the questions of large whitened norm, which it
    prefers, made easier than they are (by one sd of the norm per sd)."""
    import dataclasses

    size = np.linalg.norm(bank.features, axis=1)
    return dataclasses.replace(bank, norms=bank.norms - (size - size.mean()) / size.std())


def overall_errors(bank: ev.QuestionBank, labels: np.ndarray, k: int, share: float) -> tuple[np.ndarray, float]:
    """Errors of the overall estimates of the adaptive rule with `share` random, and 90% coverage."""
    order = ev.select_questions(bank, k, "adaptive", labels=labels, random_share=share)
    asked = asked_mask(order, bank.n_items)
    sampled = asked_mask(order[:, ev.random_positions(k, share)], bank.n_items)
    est = ev.estimate_scores(bank, labels, asked, sampled=sampled if share else None, draws=200)
    overall = est[est["group"] == ev.OVERALL]
    truth = np.nanmean(labels, axis=1)
    covered = ((overall["lower"] <= truth) & (truth <= overall["upper"])).mean()
    return overall["estimate"].to_numpy() - truth, float(covered)


def test_estimate_with_a_wrong_model_stays_honest_under_the_adaptive_rule(sim):
    """With a model wrong where the adaptive rule looks, its picks alone bias the estimate (by -0.056 at k =
    60 on these 40 models) and the interval covers 75%; with half the questions random, whose residuals
    teach the misfit shift, the bias is within +-0.025 and the coverage between 0.8 and 0.99."""
    ds, truth, bank, labels = sim
    bad = wrong_bank(bank)
    errors, _ = overall_errors(bad, labels, 60, 0.0)
    assert errors.mean() < -0.04
    errors, covered = overall_errors(bad, labels, 60, 0.5)
    assert abs(errors.mean()) < 0.025, errors.mean()
    assert 0.8 <= covered <= 0.99, covered


def test_misfit_width_follows_the_evidence_of_the_residuals():
    """Residuals that sum to about their noise keep the narrowest misfit width; a large sum picks a wide
    one, and the shift then follows the residuals almost fully."""
    mean, var = model_based._misfit(1.0, 10.0, (0.2, 2.0))
    assert var == pytest.approx(1 / (25 + 10))
    mean, var = model_based._misfit(20.0, 10.0, (0.2, 2.0))
    assert var == pytest.approx(1 / (0.25 + 10)) and mean == pytest.approx(20 / 10.25)
    assert model_based._misfit(5.0, 10.0, ()) == (0.0, 0.0)
    # Weighted residuals: the sum's noise is sum w^2 info, not info; unit weights are the plain case.
    assert model_based._misfit(20.0, 10.0, (0.2, 2.0), noise=10.0) == model_based._misfit(20.0, 10.0, (0.2, 2.0))
    mean, var = model_based._misfit(20.0, 10.0, (2.0,), noise=40.0)
    assert var == pytest.approx(1 / (0.25 + 100 / 40)) and mean == pytest.approx(20 * 10 / 40 * var)
    assert model_based._misfit(0.0, 0.0, (0.2, 2.0), noise=0.0) == (0.0, pytest.approx(0.04))


def test_design_weights_make_a_stratified_sample_stand_for_the_targets():
    """Ten questions of each of three benchmarks sized 100, 300 and 600 are weighted to the targets'
    shares 0.1 / 0.3 / 0.6; a benchmark with no sampled question gives its weight to the others."""
    group = np.repeat([0, 1, 2], [100, 300, 600])
    sampled = np.zeros(len(group), dtype=bool)
    for g in range(3):
        sampled[np.flatnonzero(group == g)[:10]] = True
    w = model_based._design_weights(group, sampled, 3)
    assert w.sum() == pytest.approx(30)
    shares = np.bincount(group[sampled], weights=w) / w.sum()
    np.testing.assert_allclose(shares, [0.1, 0.3, 0.6])
    sampled[group == 2] = False
    w = model_based._design_weights(group, sampled, 3)
    np.testing.assert_allclose(np.bincount(group[sampled], weights=w, minlength=3) / w.sum(), [0.25, 0.75, 0.0])
    assert model_based._design_weights(group, np.zeros(len(group), dtype=bool), 3).size == 0


def test_estimate_refuses_sampled_questions_not_asked(sim):
    ds, truth, bank, labels = sim
    asked = asked_mask(ev.select_questions(bank, 10, "random", labels=labels[:2], seed=0), bank.n_items)
    with pytest.raises(ValueError, match="sampled"):
        ev.estimate_scores(bank, labels[:2], asked, sampled=~asked, draws=0)


def test_adaptive_learns_more_about_the_vector_than_random(sim):
    ds, truth, bank, labels = sim
    logdet = {}
    for rule in ("random", "adaptive"):
        asked = asked_mask(ev.select_questions(bank, 40, rule, labels=labels, seed=0), bank.n_items)
        logdet[rule] = np.linalg.slogdet(bank.posterior(labels, asked).dense())[1].mean()
    assert logdet["adaptive"] < logdet["random"] - 0.5, logdet


def test_few_item_protocol_scores_every_rule(sim):
    """The efficient page's loop: the questions each rule asks at every k, estimated and scored."""
    _, _, bank, labels = sim
    labels, models = labels[:6], [f"new{i}" for i in range(6)]
    scores, graded = new_models.true_scores(bank, labels, models), ~np.isnan(labels)
    rows = []
    for rule in ("random", "adaptive", "stratified"):
        plan = new_models.questions_asked(bank, labels, rule, [40, 10], seed=0)
        assert list(plan) == [10, 40] and all((q.asked.sum(axis=1) == k).all() for k, q in plan.items())
        if rule in new_models.NESTED:  # one order to the largest k, read as prefixes
            assert (plan[10].asked <= plan[40].asked).all()
        assert (plan[40].sampled is None) == (rule != "adaptive")
        if rule == "adaptive":  # the random share is part of what was asked
            assert (plan[40].sampled <= plan[40].asked).all() and plan[40].sampled.any()
        for k, q in plan.items():
            est = ev.estimate_scores(
                bank, labels, q.asked, targets=graded, draws=20, models=models, posterior=q.posterior, sampled=q.sampled
            )
            rows += new_models.score_rows(est, scores, rule, k, 0)
            if rule == "random":
                rows += new_models.score_rows(ev.plain_means(bank, labels, q.asked, models), scores, ev.PLAIN, k, 0)
    results = pd.DataFrame(rows)
    assert len(results) == 6 * 2 * 4  # models x ks x (random, plain, adaptive, stratified)
    summary = new_models.summarize_few_item(results)
    assert {"mae", "bench_mae", "coverage", "mean_sd"} <= set(summary.columns)
    assert (summary.loc[summary["rule"] != ev.PLAIN, "coverage"].between(0, 1)).all()
    assert summary.groupby("rule")["mae"].apply(lambda s: s.iloc[-1] <= s.iloc[0] + 0.02).all()
    with pytest.raises(ValueError, match="rule="):
        new_models.questions_asked(bank, labels, "alphabetical", [10])


# ---------------------------------------------------------------------------------------------
# The protocols for new models and new questions (jeirt_book.experiments.new_models)


def test_training_only_fits_the_same_questions_without_onboarding():
    from jeirt.estimator import JEIRT
    from jeirt.splits import hold_out_models, split_by_question

    ds, _ = simulate(n_models=30, n_items=300, feature_dim=16, d=4, seed=4)
    split = hold_out_models(ds, split_by_question(ds, seed=0), 5, seed=0)
    make = lambda: JEIRT(d=4, encoder="simulated", training={"max_epochs": 5}, progress=False)  # noqa: E731
    full, lean = make().fit(ds, split), make().fit(ds, new_models.training_only(split))
    assert not hasattr(lean, "onboard_evidence_") and hasattr(full, "onboard_evidence_")
    for a, b in zip(full.question_terms(ds), lean.question_terms(ds)):
        np.testing.assert_array_equal(a, b)
    trained = [m for m in ds.models if m not in split.held_out]
    np.testing.assert_array_equal(
        full.model_vectors_[full.model_index(trained)], lean.model_vectors_[lean.model_index(trained)]
    )


def _make_small_jeirt(seed: int):
    from jeirt.estimator import JEIRT

    return JEIRT(d=4, encoder="simulated", training={"max_epochs": 3}, random_state=seed, progress=False)


def test_few_question_comparison_runs_datasets_and_seeds_side_by_side_as_one_by_one():
    first, _ = simulate(n_models=24, n_items=240, feature_dim=16, d=4, seed=5)
    second, _ = simulate(n_models=30, n_items=200, feature_dim=16, d=4, seed=6)
    second.name = "second"
    kwargs = dict(ks=(10, 20), seeds=(0, 1), draws=20, progress=False)
    alone = new_models.few_question_comparison([first, second], _make_small_jeirt, [3, 4], **kwargs)
    together = new_models.few_question_comparison([first, second], _make_small_jeirt, [3, 4], n_jobs=2, **kwargs)
    pd.testing.assert_frame_equal(alone, together)
    assert list(pd.unique(alone["dataset"])) == [first.name, "second"]
    per_run = alone.groupby(["dataset", "seed", "method", "k"]).size()  # one row per held-out model
    assert set(per_run[first.name]) == {3} and set(per_run["second"]) == {4}
    assert set(alone["method"]) == set(new_models.FEW_METHODS)
    with pytest.raises(ValueError, match="held_out"):
        new_models.few_question_comparison([first, second], _make_small_jeirt, [3], **kwargs)


def test_known_question_onboarding_shares_its_fit_with_the_few_question_comparison(tmp_path, monkeypatch):
    monkeypatch.setenv("JEIRT_FIT_CACHE", str(tmp_path))
    monkeypatch.setenv("JEIRT_WORKERS", "1")
    ds, _ = simulate(n_models=24, n_items=240, feature_dim=16, d=4, seed=5)
    runs = new_models.known_question_onboarding(
        ds, _make_small_jeirt, 3, fractions=(0.1, 1.0), seeds=(0,), progress=False
    )
    assert set(runs["method"]) == set(new_models.KNOWN_METHODS)
    assert list(pd.unique(runs["setting"])) == ["10%", "100%", "All"]
    assert runs["accuracy"].between(0, 1).all() and (runs["n_test"] > 0).all()
    fits = set(tmp_path.glob("*.pt"))
    assert len(fits) == 2  # the known-question fit and the one with every model
    from jeirt.estimator import JEIRT

    fitted = []
    monkeypatch.setattr(JEIRT, "fit", lambda self, *args, **kw: fitted.append(self))
    new_models.few_question_comparison(ds, _make_small_jeirt, 3, ks=(10,), seeds=(0,), draws=20, progress=False)
    assert not fitted and set(tmp_path.glob("*.pt")) == fits  # its fit came from the cache
    table = new_models.known_question_table(runs)
    assert list(table.index) == list(new_models.KNOWN_METHODS) and "s / model (100%)" in table


def test_question_onboarding_experiment_on_a_fitted_model():
    from jeirt.estimator import JEIRT
    from jeirt.splits import split_leave_benchmark_out

    ds, _ = simulate(n_models=30, n_items=600, feature_dim=32, d=8, seed=2)
    model = JEIRT(d=8, encoder="simulated", training={"max_epochs": 15}, progress=False).fit(
        ds, split_leave_benchmark_out(ds, "bench0")
    )
    table = new_models.question_onboarding_experiment(
        model,
        ds,
        "bench0",
        ns=(0, 3, 10),
        question_prior_sds=(1.0,),
        whats=("embedding", "norm"),
        seeds=(0,),
        progress=False,
    )
    assert set(table["method"]) == {"embedding", "norm", "known mean"}
    curve = table[table["method"] == "embedding"].set_index("n")["log_loss"]
    assert curve[10] < curve[0], curve  # answers of 10 models help the 20 others
    assert (table["pairs"] == table["pairs"].iloc[0]).all()  # the same scored pairs for every n
    with pytest.raises(ValueError, match="ns="):
        new_models.question_onboarding_experiment(model, ds, "bench0", ns=(0, 30), progress=False)


# ---------------------------------------------------------------------------------------------
# The verbs, end to end on a slice of mmlu_pro


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`jeirt.cli.main` on `argv`: its exit code, stdout and stderr."""
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_estimate_and_suggest_verbs(tmp_path, capsys, mmlu_pro):
    from jeirt.cli import main

    model = tmp_path / "m.pt"
    assert (
        main(
            [
                "fit",
                "--dataset",
                "mmlu_pro",
                "--limit-questions",
                "1500",
                "--d",
                "16",
                "--max-epochs",
                "3",
                "--quiet",
                "--out",
                str(model),
            ]
        )
        == 0
    )
    capsys.readouterr()

    code, out, _ = run_cli(
        capsys,
        "suggest",
        "--model",
        str(model),
        "--dataset",
        "mmlu_pro",
        "--k",
        "20",
        "--rule",
        "stratified",
        "--out",
        str(tmp_path / "next.csv"),
    )
    asked = pd.read_csv(tmp_path / "next.csv", dtype={"item_id": str})
    assert code == 0 and len(asked) == 20 and "per_benchmark" in out

    # Answer them as a real model did, then ask for 10 more adaptively.
    name = "gpt-4o(2024-05-13)"  # noqa: F841 (read by the query below as @name)
    answers = mmlu_pro.to_long().query("model == @name").set_index("item_id").loc[asked["item_id"]].reset_index()
    answers = answers.assign(model="new-model")[["model", "item_id", "label"]]
    answers.to_csv(tmp_path / "answers.csv", index=False)
    code, out, _ = run_cli(
        capsys,
        "suggest",
        "--model",
        str(model),
        "--dataset",
        "mmlu_pro",
        "--k",
        "10",
        "--results",
        str(tmp_path / "answers.csv"),
        "--json",
        str(tmp_path / "s.json"),
    )
    suggested = json.loads((tmp_path / "s.json").read_text())
    assert code == 0 and suggested["already_answered"] == 20 and len(suggested["item_ids"]["new-model"]) == 10
    assert not set(suggested["item_ids"]["new-model"]) & set(asked["item_id"])
    # The stratified round's inclusion probabilities are each benchmark's share; a kmeans round's picks
    # by choice have 1. Kept beside the answers, `estimate` reads them; without them it refuses picks by choice.
    share = asked.groupby("benchmark")["inclusion_probability"].agg(["min", "max", "size"])
    sizes = mmlu_pro.items["benchmark"].value_counts()
    np.testing.assert_allclose(share["min"], share["size"] / sizes[share.index])
    assert (share["min"] == share["max"]).all() and (asked["random"] == 1).all()
    code, _, _ = run_cli(
        capsys, "suggest", "--model", str(model), "--dataset", "mmlu_pro", "--k", "10", "--rule", "kmeans",
        "--results", str(tmp_path / "answers.csv"), "--out", str(tmp_path / "chosen.csv"), "--quiet",
    )  # fmt: skip
    more = pd.read_csv(tmp_path / "chosen.csv", dtype={"item_id": str})
    assert code == 0 and len(more) == 10 and (more.loc[more["random"] == 0, "inclusion_probability"] == 1).all()
    both = pd.concat([asked, more]).merge(mmlu_pro.to_long().query("model == @name")[["item_id", "label"]])
    both = both.assign(model="new-model")[["model", "item_id", "label", "random", "inclusion_probability"]]
    both.to_csv(tmp_path / "both.csv", index=False)
    code, out, _ = run_cli(
        capsys, "estimate", "--model", str(model), "--dataset", "mmlu_pro", "--results", str(tmp_path / "both.csv"),
        "--json", str(tmp_path / "both.json"),
    )  # fmt: skip
    reported = json.loads((tmp_path / "both.json").read_text())["models"]["new-model"][ev.OVERALL]
    assert code == 0 and "design-based" in out and reported["source"] == "design" and reported["sampled"] == 20
    both.drop(columns="inclusion_probability").to_csv(tmp_path / "old.csv", index=False)
    code, _, err = run_cli(
        capsys, "estimate", "--model", str(model), "--dataset", "mmlu_pro", "--results", str(tmp_path / "old.csv")
    )
    assert code == 3 and "inclusion_probability" in err
    # Many models at once, each with its own draw (same --seed).
    code, out, _ = run_cli(
        capsys,
        "suggest",
        "--model",
        str(model),
        "--dataset",
        "mmlu_pro",
        "--k",
        "10",
        "--rule",
        "random",
        "--llms",
        "a,b,c",
        "--json",
        str(tmp_path / "m.json"),
    )
    many = json.loads((tmp_path / "m.json").read_text())["item_ids"]
    assert code == 0 and list(many) == ["a", "b", "c"] and all(len(v) == 10 for v in many.values())
    assert len({tuple(v) for v in many.values()}) == 3

    code, out, _ = run_cli(
        capsys,
        "estimate",
        "--model",
        str(model),
        "--dataset",
        "mmlu_pro",
        "--results",
        str(tmp_path / "answers.csv"),
        "--json",
        str(tmp_path / "e.json"),
    )
    summary = json.loads((tmp_path / "e.json").read_text())["models"]["new-model"]
    assert code == 0 and "new-model" in out and summary["asked"] == 20
    overall = summary[ev.OVERALL]
    assert 0 < overall["lower"] <= overall["estimate"] <= overall["upper"] < 1
    assert set(mmlu_pro.benchmarks) < set(summary)

    bad = answers.assign(item_id="no-such-question")
    bad.head(1).to_csv(tmp_path / "bad.csv", index=False)
    code, _, err = run_cli(
        capsys, "estimate", "--model", str(model), "--dataset", "mmlu_pro", "--results", str(tmp_path / "bad.csv")
    )
    assert code == 3 and "no-such-question" in err  # a data error (exit codes: `jeirt --help`)


def test_evaluate_scores_onboarded_models_on_the_test_questions(tmp_path, capsys, mmlu_pro):
    """`jeirt onboard` from the split's training questions, then `jeirt evaluate --results` on its test part."""
    from jeirt.cli import main
    from jeirt.splits import split_by_question

    model = tmp_path / "m.pt"
    assert (
        main(
            [
                "fit",
                "--dataset",
                "mmlu_pro",
                "--limit-questions",
                "600",
                "--d",
                "8",
                "--max-epochs",
                "2",
                "--quiet",
                "--out",
                str(model),
            ]
        )
        == 0
    )
    capsys.readouterr()
    long = mmlu_pro.to_long().query("model == 'gpt-4o(2024-05-13)'").assign(model="newcomer")
    test_ids = set(mmlu_pro.items["item_id"][split_by_question(mmlu_pro, seed=0).items_of("test")])
    long[~long["item_id"].isin(test_ids)][["model", "item_id", "label"]].to_csv(tmp_path / "train.csv", index=False)
    long[["model", "item_id", "label"]].to_csv(tmp_path / "all.csv", index=False)
    code, _, _ = run_cli(
        capsys,
        "onboard",
        "--model",
        str(model),
        "--dataset",
        "mmlu_pro",
        "--results",
        str(tmp_path / "train.csv"),
        "--out",
        str(tmp_path / "m2.pt"),
    )
    assert code == 0
    code, _, _ = run_cli(
        capsys,
        "evaluate",
        "--model",
        str(tmp_path / "m2.pt"),
        "--dataset",
        "mmlu_pro",
        "--results",
        str(tmp_path / "all.csv"),
        "--json",
        str(tmp_path / "ev.json"),
    )
    scores = json.loads((tmp_path / "ev.json").read_text())["scores"]
    assert code == 0 and scores["n"] == len(test_ids) and 0.5 < scores["accuracy"] <= 1
    code, _, err = run_cli(
        capsys, "evaluate", "--model", str(model), "--dataset", "mmlu_pro", "--results", str(tmp_path / "all.csv")
    )
    assert code != 0 and "newcomer" in err and "onboard" in err


# ---------------------------------------------------------------------------------------------
# Known questions: corrected banks, wider priors, per-benchmark shifts, the per-question IRT baseline


def test_bank_prior_widths_and_group_shift(sim):
    import dataclasses

    ds, truth, bank, labels = sim
    with pytest.raises(ValueError, match="prior_widths"):
        dataclasses.replace(bank, prior_widths=(0.0,))
    asked = asked_mask(ev.select_questions(bank, 50, "random", labels=labels, seed=0), bank.n_items)
    narrow = dataclasses.replace(bank, prior_widths=(1.0,), group_sd=0.0)
    wide = dataclasses.replace(bank, group_sd=0.5)
    a = ev.estimate_scores(narrow, labels, asked, draws=100)
    b = ev.estimate_scores(wide, labels, asked, draws=100)
    per_bench = lambda t: t[t["group"] != ev.OVERALL]  # noqa: E731
    # A benchmark shift can only widen the per-benchmark intervals.
    assert (per_bench(b)["upper"] - per_bench(b)["lower"]).mean() > (
        per_bench(a)["upper"] - per_bench(a)["lower"]
    ).mean()
    # Before any answer, the posterior is the narrowest prior.
    assert np.allclose(bank.unanswered(1).dense()[0], np.eye(bank.directions.shape[1]) * min(bank.prior_widths))


def test_irt_estimates_count_asked_answers_and_track_the_truth(sim):
    from jeirt.baselines.irt import OnePL

    ds, _, bank, labels = sim
    irt = OnePL().fit(ds.subset(models=np.arange(N_TRAINED)))
    new = ds.subset(models=np.arange(N_TRAINED, ds.n_models))
    asked = asked_mask(ev.select_questions(bank, 100, "random", labels=labels, seed=0), bank.n_items)
    est = ev.irt_estimates(irt, new, asked)
    overall = est[est["group"] == ev.OVERALL].set_index("model")["estimate"]
    truth = pd.Series(np.nanmean(labels, axis=1), index=new.models)
    assert np.abs(overall - truth).mean() < 0.04
    everything = ev.irt_estimates(irt, new, new.observed)  # every answer asked: the estimate is the truth
    np.testing.assert_allclose(everything[everything["group"] == ev.OVERALL]["estimate"], truth, atol=1e-9)
    with pytest.raises(ValueError, match="asked no question"):
        ev.irt_estimates(irt, new, np.zeros_like(asked))


def test_bank_from_a_corrected_model_uses_the_corrected_questions(small_sim):
    from jeirt.estimator import JEIRT
    from jeirt.splits import split_by_question

    ds, _ = small_sim
    model = JEIRT(d=8, encoder="simulated", training={"max_epochs": 2}, progress=False).fit(ds, split_by_question(ds))
    plain = ev.QuestionBank.from_model(model, ds)
    model.fit_corrections(ds)
    corrected = ev.QuestionBank.from_model(model, ds)
    directions, norms = model.question_terms(ds)
    np.testing.assert_allclose(corrected.norms, norms)
    np.testing.assert_allclose(corrected.directions, directions)
    assert np.abs(corrected.norms - plain.norms).max() > 1e-3


def test_a_sample_heavy_on_one_benchmark_is_weighted_back_to_the_targets(sim, monkeypatch):
    """A model wrong on one benchmark only (its questions made 1 logit too hard) and a design that asks
    that benchmark 40 questions and each other one 10. With unit weights the wrong benchmark's residuals
    set most of the shift of every question; weighted to the targets' shares (a quarter each) they set
    a quarter of it. Measured on these 40 models: bias +0.024 unweighted, +0.013 weighted (what remains
    is the benchmark's own shift, shrunk by its prior sd 0.35 against a misfit of 1 logit); the test asks
    the paired gap to exceed 4 of its standard errors (0.010, se 0.0015) and the weighted bias to be the
    smaller one, two-sided."""
    import dataclasses

    ds, truth, bank, labels = sim
    bad = dataclasses.replace(bank, norms=bank.norms + (bank.groups == "bench0"))
    rng = np.random.default_rng(0)
    asked = np.zeros_like(labels, dtype=bool)
    for i in range(len(labels)):
        for g, n in (("bench0", 40), ("bench1", 10), ("bench2", 10), ("bench3", 10)):
            asked[i, rng.choice(np.flatnonzero(bank.groups == g), n, replace=False)] = True

    def errors() -> np.ndarray:
        est = ev.estimate_scores(bad, labels, asked, draws=0)
        return est[est["group"] == ev.OVERALL]["estimate"].to_numpy() - np.nanmean(labels, axis=1)

    weighted = errors()
    monkeypatch.setattr(model_based, "_design_weights", lambda group, sampled, n: np.ones(int(sampled.sum())))
    gap = errors() - weighted
    assert gap.mean() > 4 * gap.std(ddof=1) / np.sqrt(len(gap)), gap.mean()
    assert abs(weighted.mean()) < abs((weighted + gap).mean()), (weighted.mean(), gap.mean())


# ---------------------------------------------------------------------------------------------
# Design-based estimates


def planted_population(sim, shift: float = 0.1) -> tuple[ev.QuestionBank, np.ndarray, str]:
    """One new model's answers to every question, drawn from the bank's own probabilities for its true
    vector except on one benchmark, where the truth is `shift` below them: a model off by +shift there."""
    ds, truth, bank, _ = sim
    p = sigmoid(bank.directions @ truth.model_vectors[N_TRAINED] - bank.norms)
    off = bank.benchmarks[0]
    p = np.where(bank.groups == off, np.clip(p - shift, 0.0, 1.0), p)
    return bank, (np.random.default_rng(5).random(bank.n_items) < p).astype(np.float64), off


def repeated_draws(bank: ev.QuestionBank, y: np.ndarray, rule: str, k: int, draws: int) -> dict:
    """`draws` independent draws of k questions by `rule` for the same answers `y` (one row each), their
    inclusion probabilities as `new_models.questions_asked` gives them, and both estimates. The draws are
    one call's new models, as a user's several models are: each row has its own random order and its own
    posterior (the adaptive rule's fits run as one batch)."""
    labels = np.tile(y, (draws, 1))
    drawn = new_models.questions_asked(bank, labels, rule, [k], seed=0)[k]
    asked, inclusion = drawn.asked, drawn.inclusion
    assert len({row.tobytes() for row in asked}) > 0.9 * draws  # independent draws, not one repeated
    design = ev.design_estimates(bank, labels, asked, inclusion)
    sampled = asked & (inclusion < 1)
    model = ev.estimate_scores(bank, labels, asked, sampled=sampled, draws=0)
    return {"design": design, "model": model, "inclusion": inclusion, "asked": asked}


def group_errors(table: pd.DataFrame, y: np.ndarray, bank: ev.QuestionBank, group: str) -> np.ndarray:
    rows = table[table["group"] == group]
    truth = y.mean() if group == ev.OVERALL else y[bank.groups == group].mean()
    return rows["estimate"].to_numpy() - truth


def test_design_estimate_stays_unbiased_where_the_model_is_off(sim):
    """A model off by +0.1 on one benchmark, 200 random draws of 100 questions: the design-based estimate
    of that benchmark and of the whole is unbiased (mean error within 3 standard errors of 0), while the
    model-based one, which trusts the model for the questions not asked, is biased upwards; paired over
    the same draws, the design-based error is the smaller by more than 4 standard errors."""
    bank, y, off = planted_population(sim)
    out = repeated_draws(bank, y, "random", 100, 200)
    for group in (off, ev.OVERALL):
        design = group_errors(out["design"], y, bank, group)
        model = group_errors(out["model"], y, bank, group)
        se = design.std(ddof=1) / np.sqrt(len(design))
        assert abs(design.mean()) < 3 * se, (group, design.mean(), se)
        if group == off:
            assert model.mean() > 0.03, model.mean()
            gap = model - design  # paired: the same draws
            assert gap.mean() > 4 * gap.std(ddof=1) / np.sqrt(len(gap)), (gap.mean(), gap.std())


@pytest.mark.parametrize("rule", ["random", "stratified", "adaptive"])
def test_inclusion_probabilities_are_the_rules_own(sim, rule):
    """Over 300 draws, the Horvitz-Thompson total of the random draws, sum y / pi over them, averages to
    the total of the questions they were drawn from (the adaptive rule's: those it did not pick by
    choice, per draw), within 3 standard errors: the probabilities are the ones the rule draws with.
    Picks by choice have pi = 1 and questions not asked pi = 0. (Probabilities 3% too small put each
    rule's mean error 3.9 to 7 standard errors off.)"""
    bank, y, _ = planted_population(sim)
    out = repeated_draws(bank, y, rule, 40, 300)
    inclusion, asked = out["inclusion"], out["asked"]
    assert (inclusion[~asked] == 0).all() and ((inclusion[asked] > 0) & (inclusion[asked] <= 1)).all()
    value = bank.norms  # any fixed number per question
    drawn = asked & (inclusion < 1)
    ht = (np.where(drawn, value / np.where(drawn, inclusion, 1.0), 0.0)).sum(axis=1)
    target = np.where(asked & ~drawn, 0.0, value).sum(axis=1)  # the questions the draw came from
    error = ht - target
    assert abs(error.mean()) < 3 * error.std(ddof=1) / np.sqrt(len(error)), (error.mean(), error.std())
    if rule == "adaptive":
        assert ((inclusion == 1).sum(axis=1) == 20).all() and (drawn.sum(axis=1) == 20).all()
    else:
        assert (inclusion[asked] < 1).all()


def test_design_interval_has_its_level_and_its_sd(sim):
    """Over 300 random draws of 60 questions, the 90% t interval covers the true accuracy 0.84-0.96 of the
    time, overall, and the mean reported se is within a quarter of the estimates' actual spread."""
    bank, y, _ = planted_population(sim, shift=0.0)
    design = repeated_draws(bank, y, "random", 60, 300)["design"]
    overall = design[design["group"] == ev.OVERALL]
    covered = ((overall["lower"] <= y.mean()) & (y.mean() <= overall["upper"])).mean()
    assert 0.84 <= covered <= 0.96, covered
    ratio = overall["sd"].mean() / overall["estimate"].std(ddof=1)
    assert 0.75 <= ratio <= 1.25, ratio


def test_design_estimate_says_where_it_has_no_sample(sim):
    """Every question asked: exact with se 0; only picks by choice (kmeans): no estimate and a note; one
    random draw in a benchmark: an estimate without an interval; a bad inclusion probability is named."""
    bank, y, _ = planted_population(sim)
    everything = np.ones((1, bank.n_items), dtype=bool)
    exact = ev.design_estimates(bank, y[None], everything, np.ones((1, bank.n_items)))
    np.testing.assert_allclose(exact.loc[exact["group"] == ev.OVERALL, "estimate"], y.mean())
    assert (exact["sd"] == 0).all()
    asked = asked_mask(ev.select_questions(bank, 20, "kmeans", n_new=1), bank.n_items)
    table = ev.design_estimates(bank, y[None], asked, asked.astype(float))
    assert table["estimate"].isna().all() and table["note"].str.contains("no random draw").all()
    one = np.zeros((1, bank.n_items), dtype=bool)
    first = np.flatnonzero(bank.groups == bank.benchmarks[0])[:1]
    one[0, first] = True
    table = ev.design_estimates(bank, y[None], one, one * 0.5).set_index("group")
    assert np.isfinite(table.loc[bank.benchmarks[0], "estimate"]) and np.isnan(table.loc[bank.benchmarks[0], "sd"])
    with pytest.raises(ValueError, match="inclusion probability 0.0 of asked question"):
        ev.design_estimates(bank, y[None], one, np.zeros((1, bank.n_items)))


def test_corrections_off_for_a_new_kind_of_model_leave_the_random_design_estimate_unbiased(small_sim):
    """`fit --corrections` on trained models that find one benchmark harder than the new model does (a
    third of their right answers there turned wrong): the corrections lower that benchmark's predictions
    (by more than 0.02 at the prior mean), wrongly for the new model. Over 200 random draws of 60
    questions, the design-based estimate from the corrected bank is still unbiased on the benchmark and
    overall (mean error within 3 standard errors of 0)."""
    from jeirt.estimator import JEIRT
    from jeirt.splits import split_by_question

    ds, _ = small_sim
    train_ds = ds.subset(models=np.arange(30))
    model = JEIRT(d=8, encoder="simulated", training={"max_epochs": 2}, progress=False, random_state=0)
    model.fit(train_ds, split_by_question(train_ds, seed=0))
    plain = ev.QuestionBank.from_model(model, ds, prior_models=train_ds.models)
    harder = train_ds.subset()
    off = harder.benchmarks[0]
    flip = (harder.items["benchmark"] == off).to_numpy() & (
        np.random.default_rng(0).random(harder.labels.shape) < 1 / 3
    )
    harder.labels[flip] = 0.0
    model.fit_corrections(harder)
    bank = ev.QuestionBank.from_model(model, ds, prior_models=train_ds.models)
    at_mean = lambda b: sigmoid(b.directions @ b.prior_mean - b.norms)[b.groups == off].mean()  # noqa: E731
    assert at_mean(plain) - at_mean(bank) > 0.02, (at_mean(plain), at_mean(bank))
    y = ds.labels[30].astype(np.float64)
    out = repeated_draws(bank, y, "random", 60, 200)
    for group in (off, ev.OVERALL):
        design = group_errors(out["design"], y, bank, group)
        se = design.std(ddof=1) / np.sqrt(len(design))
        assert abs(design.mean()) < 3 * se, (group, design.mean(), se)
