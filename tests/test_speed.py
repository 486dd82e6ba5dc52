"""Onboarding's fast solver against a plain Newton solve (at small d and along the paths d = 256
takes), and the cache of fitted models."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from jeirt import fitcache
from jeirt.estimator import JEIRT
from jeirt.onboard import fit_model_vectors
from jeirt.simulate import simulate
from jeirt.splits import split_by_question


def _relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """||a - b|| / ||b|| (Frobenius for matrices): a tolerance on it holds whatever the entries' scale."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _plain_newton(u, r, y, w, mu, var, iters=60):
    """Undamped float64 Newton with a fresh Hessian every step: the textbook solve to compare with."""
    v = np.tile(mu, (len(y), 1)).astype(np.float64)
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(v @ u.T - r)))
        for k in range(len(y)):
            g = ((p[k] - y[k]) * w[k]) @ u + (v[k] - mu) / var
            h = (u.T * (w[k] * p[k] * (1 - p[k]))) @ u + np.eye(len(mu)) / var
            v[k] -= np.linalg.solve(h, g)
    return v


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    n, d, m = 800, 12, 5
    u = rng.normal(size=(n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    r = np.abs(rng.normal(1, 0.5, n))
    mu = rng.normal(0, 0.1, d)
    truth = mu + rng.normal(0, 1.0, (m, d))
    y = (rng.random((m, n)) < 1 / (1 + np.exp(-(truth @ u.T - r)))).astype(float)
    mask = rng.random((m, n)) < 0.6
    mask[:2] = mask[0]  # two models answered the same questions: they share the first Hessian
    return u, r, y, mask, mu


def test_fast_solver_matches_plain_newton_at_every_width(problem):
    u, r, y, mask, mu = problem
    widths = [0.01, 0.1, 1.0, 10.0]
    both = fit_model_vectors(u, r, y, mask, mu, widths, device="cpu", covariances=False)
    assert both.covariances is None and list(both.evidence) == widths
    for var in widths:
        alone = fit_model_vectors(u, r, y, mask, mu, var, device="cpu")
        np.testing.assert_allclose(alone.vectors, _plain_newton(u, r, y, mask, mu, var), atol=1e-5)
        assert both.evidence[var] == pytest.approx(float(alone.log_evidence.sum()), abs=1e-4)
    best = max(both.evidence, key=both.evidence.get)
    assert both.prior_width == best
    np.testing.assert_allclose(both.vectors, _plain_newton(u, r, y, mask, mu, best), atol=1e-5)


def test_models_with_fewer_answers_than_2d_get_the_plain_newton_fit_at_every_width(problem):
    """Few answers a model (< 2d: the batched float64 Hessians over padded answers), as when a new
    model was asked a few questions: the same optimum, evidence and covariance as plain Newton."""
    u, r, y, _, mu = problem
    rng = np.random.default_rng(2)
    mask = np.zeros(y.shape, bool)
    for k, count in enumerate((3, 8, 15, 20, 23)):
        mask[k, rng.choice(len(u), count, replace=False)] = True
    widths = [0.1, 1.0, 10.0]
    each = fit_model_vectors(u, r, y, mask, mu, widths, device="cpu", select="each")
    d = len(mu)
    for k in range(len(y)):
        var = each.prior_widths[k]
        v = _plain_newton(u, r, y[[k]], mask[[k]], mu, var)
        np.testing.assert_allclose(each.vectors[k], v[0], atol=1e-5)
        p = 1 / (1 + np.exp(-(v[0] @ u.T - r)))
        hess = (u.T * (mask[k] * p * (1 - p))) @ u + np.eye(d) / var
        # float32 Hessians, whose rounding follows the CPU's vector width: the whole matrix by norm
        assert _relative_error(each.covariances[k], np.linalg.inv(hess)) < 1e-5, k


def test_models_answering_all_most_or_half_the_questions_get_the_exact_fit_and_evidence(problem):
    """A model's Hessian sums over all the chunk's questions (zero curvature where it did not answer)
    or over a gathered copy of its own; each model stops on its own; the Laplace evidence matches the
    textbook formula at the plain Newton optimum, in float64."""
    u, r, y, _, mu = problem
    rng = np.random.default_rng(1)
    mask = np.ones(y.shape, bool)
    mask[1] = rng.random(len(u)) < 0.95  # most: summed over all, with zeros
    mask[2] = rng.random(len(u)) < 0.5  # half: summed over its own
    mask[3, :40] = False  # all but a few
    widths = [0.1, 1.0]
    fit = fit_model_vectors(u, r, y, mask, mu, widths, device="cpu", covariances=False)
    d = len(mu)
    for var in widths:
        v = _plain_newton(u, r, y, mask, mu, var)
        z = v @ u.T - r
        p = 1 / (1 + np.exp(-z))
        nll = (mask * (np.logaddexp(0, z) - y * z)).sum(axis=1) + 0.5 * ((v - mu) ** 2).sum(axis=1) / var
        hess = np.einsum("mn,nd,ne->mde", mask * p * (1 - p), u, u) + np.eye(d) / var
        evidence = -nll - 0.5 * d * np.log(var) - 0.5 * np.linalg.slogdet(hess)[1]
        assert fit.evidence[var] == pytest.approx(evidence.sum(), abs=1e-4)
        if var == fit.prior_width:
            np.testing.assert_allclose(fit.vectors, v, atol=1e-5)
            np.testing.assert_allclose(fit.log_evidence, evidence, atol=1e-5)


def test_covariances_of_the_chosen_width_only_when_asked(problem):
    u, r, y, mask, mu = problem
    fit = fit_model_vectors(u, r, y, mask, mu, [0.1, 1.0, 10.0], device="cpu", covariances=True)
    alone = fit_model_vectors(u, r, y, mask, mu, fit.prior_width, device="cpu")
    assert fit.covariances.shape == (len(y), u.shape[1], u.shape[1])
    for k in range(len(y)):  # float32 Hessians summed in another order (another chunk shape): by norm
        assert _relative_error(fit.covariances[k], alone.covariances[k]) < 1e-5, k
    with pytest.raises(ValueError, match="prior_width"):
        fit_model_vectors(u, r, y, mask, mu, [1.0, -1.0])


def test_each_model_its_own_width_is_each_model_fitted_alone(problem):
    u, r, y, mask, mu = problem
    widths = [0.01, 0.1, 1.0, 10.0]
    y = y.copy()
    y[3] = y[3] * (np.arange(len(u)) % 7 == 0)  # a model that answers almost nothing right wants another width
    each = fit_model_vectors(u, r, y, mask, mu, widths, device="cpu", select="each")
    assert len(set(each.prior_widths)) > 1  # the models do not all choose the same width
    for k in range(len(y)):
        alone = fit_model_vectors(u, r, y[[k]], mask[[k]], mu, widths, device="cpu")
        assert each.prior_widths[k] == alone.prior_width
        np.testing.assert_allclose(each.vectors[k], alone.vectors[0], atol=1e-5)
        assert _relative_error(each.covariances[k], alone.covariances[0]) < 1e-5, k  # float32 Hessians: by norm
    with pytest.raises(ValueError, match="select"):
        fit_model_vectors(u, r, y, mask, mu, widths, select="best")


# ----------------------------------------------------------------------------- the paths d = 256 takes
# Above d = 64 a data Hessian U^T diag(c) U is a float32 product over the model's own answers: one padded
# batched product when every model of a chunk answered fewer than 2d questions, otherwise per model over
# a gathered copy of its questions or over all of the chunk's, block row by block row of its lower
# triangle when it answered 2d or more. The optimum's gradients are float64; the covariance and evidence
# carry the float32 rounding of the Hessian.


def _map_newton(u, r, y, w, mu, var):
    """MAP vectors by float64 Newton-Raphson, each model alone, to convergence: the reference."""
    v = np.tile(mu, (len(y), 1)).astype(np.float64)
    for k in range(len(y)):
        for _ in range(50):
            p = 1 / (1 + np.exp(-(u @ v[k] - r)))
            g = ((p - y[k]) * w[k]) @ u + (v[k] - mu) / var
            h = (u.T * (w[k] * p * (1 - p))) @ u + np.eye(len(mu)) / var
            step = np.linalg.solve(h, g)
            v[k] -= step
            if np.abs(step).max() < 1e-12:
                break
        else:
            raise AssertionError(f"the reference Newton did not converge for model {k}")
    return v


def _answer_counts_problem(d: int, counts: tuple[int, ...], n: int = 1400, seed: int = 0):
    """Unit directions (n, d), norms, labels drawn from Eq. (3) and masks of `counts` answers per model."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    r = np.abs(rng.normal(1, 0.5, n))
    mu = rng.normal(0, 0.1, d)
    truth = mu + rng.normal(0, 3 / np.sqrt(d), (len(counts), d))  # logits u . v of sd about 3
    y = (rng.random((len(counts), n)) < 1 / (1 + np.exp(-(truth @ u.T - r)))).astype(float)
    mask = np.zeros((len(counts), n), bool)
    for k, count in enumerate(counts):
        mask[k, rng.choice(n, count, replace=False)] = True
    return u, r, y, mask, mu


@pytest.mark.parametrize("d", [8, 100, 256])
def test_data_hessians_of_every_path_are_the_float64_product(d):
    """Each way a chunk builds its data Hessians (one product for all at small d; padded batched; over
    all questions or a gathered copy, plain or block-wise; d = 100 ends in a partial block) gives
    U^T diag(c) U to float32 rounding."""
    from jeirt.onboard import _Chunk

    u, r, y, mask, _ = _answer_counts_problem(d, (40, 150, 400, 200, 600, 1300, 1400))
    rng = np.random.default_rng(1)
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    for rows in ([0, 1, 2], [3, 4, 5, 6]):  # every model under 2d answers (padded), then a mix
        chunk = _Chunk(t(u), t(u).float(), t(r), t(y[rows]), t(mask[rows]), mask[rows])
        if d == 256:  # the paths this test is for (thresholds as onboard.py sets them)
            assert chunk.padded_hessians == (rows == [0, 1, 2])
            if rows != [0, 1, 2]:
                assert [c is None for c in chunk.cols] == [False, False, True, True]  # gathered, then all
                assert list(chunk.counts < 2 * d) == [True, False, False, False]  # plain, then block-wise
        z = rng.normal(0, 2, (len(rows), len(u)))
        got = chunk.hessian_from_logits(t(z)).numpy()
        for i, k in enumerate(rows):
            p = 1 / (1 + np.exp(-z[i]))
            exact = (u.T * (mask[k] * p * (1 - p))) @ u
            # float32 products: each entry a sum of float32 terms, ~1e-7 of the whole (measured <= 3e-7)
            assert _relative_error(got[i], exact) < 2e-6, (d, k)


@pytest.mark.parametrize("d", [8, 256])
def test_many_models_of_different_answer_counts_solved_together_get_the_float64_newton_fit(d):
    """Nine models (40 to 1,400 answers; two with the same questions, which share the first Hessian)
    solved three to a chunk and all in one, at one fixed prior width: the MAP vectors, Laplace
    covariances and evidence of a float64 Newton-Raphson on each model alone."""
    counts = (40, 150, 400, 600, 1300, 1400, 200, 700, 700)  # chunks of 3: padded; gathered and all; a mix
    u, r, y, mask, mu = _answer_counts_problem(d, counts)
    mask[8] = mask[7]
    var = 10.0
    reference = _map_newton(u, r, y, mask, mu, var)
    for chunk in (3, 64):
        fit = fit_model_vectors(u, r, y, mask, mu, [var], chunk=chunk, device="cpu")
        assert fit.prior_width == var and fit.covariances.shape == (len(counts), d, d)
        for k in range(len(counts)):
            z = u @ reference[k] - r
            p = 1 / (1 + np.exp(-z))
            hess = (u.T * (mask[k] * p * (1 - p))) @ u + np.eye(d) / var
            nll = (mask[k] * (np.logaddexp(0, z) - y[k] * z)).sum() + 0.5 * ((reference[k] - mu) ** 2).sum() / var
            evidence = -nll - 0.5 * d * np.log(var) - 0.5 * np.linalg.slogdet(hess)[1]
            # The solver stops when no coordinate would move by 1e-6 (its gradients are float64); the
            # vectors come back float32. Measured <= 7e-7.
            assert _relative_error(fit.vectors[k], reference[k]) < 1e-5, (chunk, k)
            # The covariance inverts a float32-rounded Hessian (~1e-7 relative) of condition number
            # under 10 here: ~1e-6 at most, measured <= 4e-7; compared by norm, as the entries' rounding
            # follows the CPU's vector width and the chunk's shape.
            assert _relative_error(fit.covariances[k], np.linalg.inv(hess)) < 1e-5, (chunk, k)
            # Half the log determinant of that Hessian moves by (1/2) tr(H^-1 dH), under d x 1e-7 x 10 / 2
            # (1.3e-4 at d = 256) at worst, about its square root for rounding of random sign: measured <= 3e-6.
            assert fit.log_evidence[k] == pytest.approx(evidence, abs=1e-4), (chunk, k)


def test_fit_cache_returns_the_same_fit_and_misses_on_any_change(tmp_path, one_thread):
    ds, _ = simulate(n_models=12, n_items=300, feature_dim=8, d=4, seed=0)
    split = split_by_question(ds, seed=0)
    make = lambda **kw: JEIRT(d=4, encoder="simulated", training={"max_epochs": 3}, progress=False, **kw)  # noqa: E731
    first = fitcache.fit_cached(make(), ds, split, tmp_path)
    again = fitcache.fit_cached(make(), ds, split, tmp_path)
    assert again is not first and len(list(tmp_path.glob("*.pt"))) == 1
    np.testing.assert_array_equal(again.predict_proba(ds), first.predict_proba(ds))
    assert again.history_.val_loss == first.history_.val_loss
    # Another config, split, or labels: another key.
    keys = {
        fitcache.fit_key(make(), ds, split),
        fitcache.fit_key(make(random_state=1), ds, split),
        fitcache.fit_key(make(), ds, split_by_question(ds, seed=1)),
    }
    changed = ds.subset()
    changed.labels[0, 0] = 1 - np.nan_to_num(changed.labels[0, 0])
    keys.add(fitcache.fit_key(make(), changed, split))
    assert len(keys) == 4
    # A damaged entry is refitted and replaced, with a warning.
    entry = next(tmp_path.glob("*.pt"))
    entry.write_bytes(b"not a model")
    with pytest.warns(UserWarning, match="could not be read"):
        refit = fitcache.fit_cached(make(), ds, split, tmp_path)
    np.testing.assert_allclose(refit.predict_proba(ds), first.predict_proba(ds), atol=1e-6)
    assert torch.load(entry, weights_only=False).history_.val_loss == first.history_.val_loss


def test_fit_many_writes_where_the_environment_says_at_each_call(tmp_path, monkeypatch):
    """Workers outlive a call; the cache folder is chosen by the caller, so a later $JEIRT_FIT_CACHE holds."""
    from jeirt.baselines import BenchmarkAccuracy, ModelAccuracy

    ds, _ = simulate(n_models=8, n_items=200, feature_dim=8, d=4, seed=0)
    splits = [split_by_question(ds, seed=0)] * 2
    for name in ("first", "second"):
        monkeypatch.setenv("JEIRT_FIT_CACHE", str(tmp_path / name))
        fitcache.fit_many([ModelAccuracy(), BenchmarkAccuracy()], ds, splits, n_jobs=2)
        assert len(list((tmp_path / name).glob("*.pt"))) == 2, name


def test_fit_many_takes_one_dataset_per_fit(tmp_path):
    from jeirt.baselines import ModelAccuracy

    ds, _ = simulate(n_models=8, n_items=200, feature_dim=8, d=4, seed=0)
    flipped = ds.subset()
    flipped.labels = 1 - flipped.labels
    split = split_by_question(ds, seed=0)
    fits = fitcache.fit_many(
        [ModelAccuracy(), ModelAccuracy()], [ds, flipped], [split, split], n_jobs=2, folder=tmp_path
    )
    np.testing.assert_allclose(fits[1].predict_proba(ds), 1 - fits[0].predict_proba(ds))
    with pytest.raises(ValueError, match="datasets"):
        fitcache.fit_many([ModelAccuracy(), ModelAccuracy()], [ds], [split, split])


def test_null_refits_side_by_side_equal_the_refits_made_here():
    from jeirt.baselines.irt import TwoPL
    from jeirt.baselines.irt_diagnostics import null_shares

    ds, _ = simulate(n_models=30, n_items=60, feature_dim=8, d=2, seed=0)
    fits, data = {"sim": TwoPL(device="cpu").fit(ds)}, {"sim": ds}
    apart = null_shares(fits, data, (0, 1), device="cpu", n_jobs=2)
    here = null_shares(fits, data, (0, 1), device="cpu", n_jobs=1)
    assert apart == here and len(here["sim"]) == 2 and here["sim"][0] != here["sim"][1]


def test_code_version_changes_with_the_package_source(monkeypatch, tmp_path):
    """Every module of the package counts, a subpackage's too (the book's page code lives outside it)."""
    core = tmp_path / "jeirt"
    (core / "tasks").mkdir(parents=True)
    (core / "a.py").write_text("x = 1\n")
    (core / "tasks" / "workflow.py").write_text("y = 1\n")
    monkeypatch.setattr(fitcache, "_CORE", core)
    before = fitcache.code_version()
    assert fitcache.code_version() == before  # the same source, the same key
    (core / "tasks" / "workflow.py").write_text("y = 2\n")
    after_tasks = fitcache.code_version()
    assert after_tasks != before
    (core / "a.py").write_text("x = 2\n")
    assert fitcache.code_version() not in (before, after_tasks)


def test_page_times_reads_per_cell_times_from_executed_notebooks():
    import sys
    from pathlib import Path

    import nbformat

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import page_times

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# title"),
            nbformat.v4.new_code_cell("# a comment\nmodel = fit(ds)\n"),
            nbformat.v4.new_code_cell("x = 1"),
        ]
    )
    nb.cells[1].metadata["execution"] = {
        "iopub.execute_input": "2026-01-01T10:00:00.500000Z",
        "shell.execute_reply": "2026-01-01T10:02:03.000000Z",
    }
    rows = page_times._cell_rows(nb)
    assert rows == [
        {"cell": 1, "seconds": 122.5, "code": "model = fit(ds)"},
        {"cell": 2, "seconds": None, "code": "x = 1"},
    ]
