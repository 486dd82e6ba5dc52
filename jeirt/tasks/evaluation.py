"""Efficient evaluation: a new LLM's scores from a few questions, a new question's answers from a few LLMs.

Once JE-IRT is trained, each question is a fixed unit direction u_q and norm r_q, each model a
vector v, and P(v answers q) = sigmoid(u_q . v - r_q) (Eq. 3).

**A new model, few questions** (what tinyBenchmarks and Anchor Points do with plain IRT). Ask the new
model k questions chosen by a rule (`select_items`: random, stratified by benchmark, k-means over
question directions, or adaptive, whose batches open with `RANDOM_SHARE` drawn at random:
`random_positions`), fit its vector by maximum a posteriori (`QuestionBank.posterior`, jeirt.onboard's
Newton solver) and estimate its accuracy on a set Q of questions as

    acc(Q) = ( sum_{q in Q asked} y_q + sum_{q in Q not asked} E[P(q)] ) / |Q|

with E over the Laplace posterior of v (`estimate_scores`: overall and per benchmark, with a
predictive interval from posterior draws). The model's misfit for this new model, a shift of all its
logits (sd from `MISFIT_SDS`) and one per benchmark (sd `GROUP_SD`), is learnt from the leave-one-out
residuals of the answers drawn at random and widens the interval. `design_estimates` is the
design-based estimate (a difference estimator, prediction-powered inference): the answers asked
count as they are, the rest get the model's cross-fitted predictions corrected by the random draws'
residuals weighted by their inclusion probabilities (`inclusion_probabilities`), unbiased whatever the
model gets wrong; `jeirt estimate` reports it (`score_new_models`), the model-based one beside it.

The prior is N(mu, c S) of `jeirt.onboard.vector_prior` (the trained vectors' mean and Ledoit-Wolf
covariance, its general-ability direction widened), each model's prior width c its most evident of
`jeirt.onboard.PRIOR_WIDTH_GRID`: the posterior `JEIRT.onboard` fits too (`fit_new_vectors`), in
whitened coordinates z (v = mu + L z, S = L L^T, prior N(0, c I), feature f_q = L^T u_q, offset
o_q = r_q - u_q . mu). The questions' side is the model's `question_terms` (with per-question
corrections where the model has them); `irt_estimates` is the same estimate from a per-question
Rasch / 2PL model, the baseline tinyBenchmarks would use. Why each piece, and what it was measured to
do: DECISIONS.md ("Few-question estimates").

**A new question, few models.** `refine_questions` moves a new question's text embedding to the MAP
under N(text embedding, tau^2 I) given some models' answers, every model vector frozen.

The book's protocols that use this module are in `jeirt.experiments.new_models`; the `jeirt
estimate` and `jeirt suggest` verbs in `jeirt.cli.evaluation` (`suggest_questions` is the latter's rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from scipy import stats
from scipy.linalg import lapack
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from tqdm import (
    tqdm,  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets
)

from jeirt.baselines.irt import OnePL, TwoPL
from jeirt.data import Dataset
from jeirt.estimator import JEIRT
from jeirt.model import sigmoid
from jeirt.onboard import PRIOR_WIDTH_GRID, fit_model_vectors, vector_prior, whitened
from jeirt.splits import sample_items
from jeirt.tasks import RULES  # the names, where the command line reads them without this module

RANDOM_SHARE = 0.5  # share of an adaptive rule's questions drawn at random: the sample its estimate checks itself on


GROUP_SD = 0.35  # prior sd (logits) of a new model's own shift on one benchmark (how chosen: DECISIONS.md)
# Prior sds (logits) of a new model's misfit, a shift of all its logits: per model, the one its random
# answers' residuals make most likely; the narrowest sets the interval's width when they see no misfit.
MISFIT_SDS = (0.2, 0.5, 1.0, 2.0)


OVERALL = "overall"  # the group name of every question together in score tables


PLAIN = "plain mean"  # the rule name of the no-model baseline: the mean of k random answers


# The question bank: frozen question geometry plus the prior on a new model's vector
@dataclass
class Posterior:
    """Laplace posteriors N(mean_i, Sigma_i) of new models' vectors, in the bank's whitened coordinates z.

    Without `basis`, Sigma_i = cov_i. A model asked k < d questions learns only in the span of their
    features; there Sigma_i = B_i cov_i B_i^T + floor_i (I - B_i B_i^T), with B_i (d, r) an orthonormal
    basis of the span (zero columns pad models asked fewer than r), cov_i (r, r) the posterior in it
    and floor_i the prior's variance everywhere else. Kept so, every product below costs r instead of
    d dimensions, and 300 models asked 10 questions each (d = 256) hold 6 MB instead of 157.
    """

    mean: np.ndarray  # (n_new, d) MAP z
    cov: np.ndarray  # (n_new, d, d) inverse Hessian at the MAP; with `basis`, (n_new, r, r) in the basis
    basis: np.ndarray | None = None  # (n_new, d, r) orthonormal columns, or zero (padding)
    floor: np.ndarray | None = None  # (n_new,) variance off the basis: the prior's

    def __len__(self) -> int:
        return len(self.mean)

    def in_basis(self) -> tuple[np.ndarray, np.ndarray]:
        """(basis, floor) of posteriors kept in a basis."""
        if self.basis is None or self.floor is None:
            raise ValueError("these posteriors are kept in full (no basis); use `cov`.")
        return self.basis, self.floor

    def dense(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Sigma_i (len(rows), d, d) in full."""
        if self.basis is None:
            return self.cov[rows]
        basis, floor = self.in_basis()
        B, c = basis[rows], floor[rows]
        # c I + B (cov - c I) B^T: the zero columns of B drop out
        out = B @ (self.cov[rows] - c[:, None, None] * np.eye(B.shape[2])) @ B.transpose(0, 2, 1)
        diagonal = np.arange(B.shape[1])
        out[:, diagonal, diagonal] += c[:, None]
        return out

    def apply(self, rows: np.ndarray | slice, x: np.ndarray) -> np.ndarray:
        """Sigma_i x_i (len(x), d) for the posteriors `rows` (indices, or a slice: no copy) and the rows
        x_i of x."""
        if self.basis is None:
            return np.matmul(self.cov[rows], x[:, :, None].astype(self.cov.dtype))[:, :, 0]
        basis, floor = self.in_basis()
        B, c = basis[rows], floor[rows][:, None]
        inside = np.matmul(x[:, None, :], B)[:, 0]  # (m, r) B^T x
        moved = np.matmul(self.cov[rows], inside[:, :, None])[:, :, 0] - c * inside
        return c * x + np.matmul(B, moved[:, :, None])[:, :, 0]

    def take(self, rows: np.ndarray) -> Posterior:
        """The posteriors of the models `rows` only."""
        pick = lambda a: None if a is None else a[rows]  # noqa: E731
        return Posterior(self.mean[rows], self.cov[rows], pick(self.basis), pick(self.floor))

    def variances(self, rows: np.ndarray | slice, F: np.ndarray) -> np.ndarray:
        """f^T Sigma_i f (len(rows), n) for the posteriors `rows` (indices or a slice) and every row f
        of F (n, d), in F's precision."""
        rows = np.arange(len(self))[rows]
        out = np.empty((len(rows), len(F)), dtype=F.dtype)
        if self.basis is None:
            for j, i in enumerate(rows):
                out[j] = np.einsum("nd,nd->n", F @ self.cov[i].astype(F.dtype), F)
            return out
        basis, floor = self.in_basis()
        squared = np.einsum("nd,nd->n", F, F)
        for j, i in enumerate(rows):
            G = F @ basis[i].astype(F.dtype)  # (n, r) B^T f
            off = np.maximum(squared - np.einsum("nr,nr->n", G, G), 0.0)  # |f|^2 off the basis
            out[j] = floor[i] * off + np.einsum("nr,nr->n", G @ self.cov[i].astype(F.dtype), G)
        return out


@dataclass
class QuestionBank:
    """The questions a new model can be asked and scored on, as JE-IRT sees them, and the prior on
    its vector. Build one with `QuestionBank.from_model`."""

    item_ids: np.ndarray  # (n_items,) str
    groups: np.ndarray  # (n_items,) str, benchmark of each question
    texts: np.ndarray  # (n_items,) str
    directions: np.ndarray  # (n_items, d) unit u_q
    norms: np.ndarray  # (n_items,) r_q, the difficulty
    prior_mean: np.ndarray  # (d,) mu
    prior_cov: np.ndarray  # (d, d) S
    prior_widths: tuple[float, ...] = PRIOR_WIDTH_GRID  # c of N(mu, c S): per model, the most evident one
    group_sd: float = GROUP_SD  # prior sd (logits) of a new model's own shift on each benchmark
    misfit_sds: tuple[float, ...] = MISFIT_SDS  # prior sds (logits) of a new model's shift on every question

    def __post_init__(self) -> None:
        n, d = self.directions.shape
        if self.norms.shape != (n,) or len(self.item_ids) != n or len(self.groups) != n:
            raise ValueError(
                f"directions {self.directions.shape}, norms {self.norms.shape}, "
                f"{len(self.item_ids)} ids and {len(self.groups)} groups must describe the "
                "same questions."
            )
        if self.prior_mean.shape != (d,) or self.prior_cov.shape != (d, d):
            raise ValueError(
                f"prior mean {self.prior_mean.shape} and covariance {self.prior_cov.shape} "
                f"must match the embedding dimension d = {d}."
            )
        widths = np.asarray(self.prior_widths, dtype=np.float64)
        if widths.ndim != 1 or not len(widths) or not (np.isfinite(widths) & (widths > 0)).all():
            raise ValueError(f"prior_widths={self.prior_widths!r}; expected one or more positive numbers.")

    @classmethod
    def from_model(
        cls,
        model: JEIRT,
        ds: Dataset,
        prior_models: Sequence[str] | None = None,
        prior_covariance: str = "full",
    ) -> QuestionBank:
        """The questions of `ds` embedded by a fitted `JEIRT`, with the prior fitted to the vectors of
        `prior_models` (default: every model `model` knows; leave out the ones under evaluation);
        `prior_covariance` is S's kind, "full" or "isotropic" (`jeirt.onboard.vector_prior`)."""
        names = model.models_ if prior_models is None else list(prior_models)
        directions, norms = model.question_terms(ds)  # corrected where the model has corrections
        mean, cov = vector_prior(model.model_vectors_[model.model_index(names)], prior_covariance)
        as_str = lambda column: ds.items[column].astype(str).to_numpy()  # noqa: E731
        return cls(as_str("item_id"), as_str("benchmark"), as_str("text"), directions, norms, mean, cov)

    @classmethod
    def from_embeddings(
        cls,
        embeddings: np.ndarray,
        model_vectors: np.ndarray,
        groups: Sequence[str] | None = None,
        item_ids: Sequence[str] | None = None,
        texts: Sequence[str] | None = None,
        prior_covariance: str = "full",
    ) -> QuestionBank:
        """A bank from question embeddings E_Q (n_items, d) and known model vectors (n_models, d)."""
        emb = np.asarray(embeddings, dtype=np.float64)
        norms = np.linalg.norm(emb, axis=1)
        n = len(emb)
        as_str = lambda values, default: np.asarray(default if values is None else values, dtype=str)  # noqa: E731
        mean, cov = vector_prior(model_vectors, prior_covariance)
        return cls(
            as_str(item_ids, [f"q{i}" for i in range(n)]),
            as_str(groups, ["all"] * n),
            as_str(texts, [""] * n),
            emb / norms[:, None],
            norms,
            mean,
            cov,
        )

    @property
    def n_items(self) -> int:
        return len(self.norms)

    @property
    def benchmarks(self) -> list[str]:
        return list(pd.unique(self.groups))

    @cached_property
    def _whitened(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(features, offsets, L) of `jeirt.onboard.whitened`: the one whitening `JEIRT.onboard` uses too."""
        return whitened(self.directions, self.norms, self.prior_mean, self.prior_cov)

    @property
    def factor(self) -> np.ndarray:
        """L (d, d), lower triangular with L L^T = S."""
        return self._whitened[2]

    @property
    def features(self) -> np.ndarray:
        """f_q = L^T u_q (n_items, d): the questions in whitened coordinates."""
        return self._whitened[0]

    @cached_property
    def features32(self) -> np.ndarray:
        """`features` in float32, for the large products of `estimate_scores`."""
        return self.features.astype(np.float32)

    @property
    def offsets(self) -> np.ndarray:
        """o_q = r_q - u_q . mu (n_items,), so that the logit is f_q . z - o_q."""
        return self._whitened[1]

    def unanswered(self, n_new: int = 1) -> Posterior:
        """The posterior before any answer: z ~ N(0, c I), c the narrowest of `prior_widths` (a basis
        of no direction)."""
        d = self.directions.shape[1]
        return Posterior(
            np.zeros((n_new, d)),
            np.zeros((n_new, 0, 0)),
            np.zeros((n_new, d, 0)),
            np.full(n_new, float(min(self.prior_widths))),
        )

    def vectors(self, posterior: Posterior) -> tuple[np.ndarray, np.ndarray]:
        """Model-space vectors v = mu + L z (n_new, d) and covariances L Sigma_z L^T (n_new, d, d)."""
        L = self.factor
        return self.prior_mean + posterior.mean @ L.T, L @ posterior.dense() @ L.T

    def predict(self, posterior: Posterior) -> np.ndarray:
        """E[P(q)] (n_new, n_items) of every question under each posterior of the vector (probit
        approximation, as `estimate_scores`), without the misfit shifts: the model's own prediction."""
        F = self.features32
        mean = posterior.mean.astype(np.float32) @ F.T - self.offsets
        var = posterior.variances(slice(None), F)
        return sigmoid(mean / np.sqrt(1.0 + np.pi * var / 8.0)).astype(np.float64)

    def posterior(self, labels: np.ndarray, asked: np.ndarray, progress: bool = False) -> Posterior:
        """MAP and Laplace covariance of z for each row of `labels` (n_new, n_items), from the
        answers under `asked`, each model under the width of `prior_widths` its answers make most
        likely (each its own, as `JEIRT.onboard` chooses it: `jeirt.onboard.fit_new_vectors`). Rows
        with nothing asked get the prior."""
        labels, asked = self._check(labels, asked)
        n_new, d = len(labels), self.features.shape[1]
        # When d is large, a model's Newton step costs its own answers x d^2 (its Hessian); the models of
        # a chunk share only the cheap logits over the union of their questions. Each keeps its own width.
        large = d > 32
        chunk = 8 if large else 32
        rows = np.flatnonzero(asked.any(axis=1))
        counts = asked.sum(axis=1)
        # Models asked fewer than d questions are solved in their span, several of a count at once. When
        # every model is, and none was asked more than d / 2 (beyond that a basis costs about what a
        # dense covariance does), their posteriors stay in their spans (`Posterior`); else all are dense.
        few = rows[counts[rows] < d] if large else rows[:0]
        r = int(counts[few].max()) if len(few) else 0
        blocks = []
        for k in np.unique(counts[few]):
            same = few[counts[few] == k]
            step = max(1, min(32, 1024 // int(k)))  # the stacked design is (block k, k): keep it small
            blocks += [same[start : start + step] for start in range(0, len(same), step)]
        if len(few) == len(rows) and r <= d // 2:
            span = self.unanswered(n_new)  # the rows with nothing asked keep it
            cov, basis, floor = np.zeros((n_new, r, r)), np.zeros((n_new, d, r)), span.floor
            assert floor is not None  # (unanswered gives the prior's)
            cov[:, np.arange(r), np.arange(r)] = 1.0  # padding: its basis columns are zero
            for part in blocks:
                k = int(counts[part[0]])
                span.mean[part], cov[part, :k, :k], basis[part, :, :k], floor[part] = self._posteriors_in_span(
                    labels[part], asked[part]
                )
            span.cov, span.basis = cov, basis
            return span
        mean, cov = np.zeros((n_new, d)), np.empty((n_new, d, d))
        cov[~asked.any(axis=1)] = float(min(self.prior_widths)) * np.eye(d)  # the prior
        for part in blocks:
            block = Posterior(*self._posteriors_in_span(labels[part], asked[part]))
            mean[part], cov[part] = block.mean, block.dense()
        rows = np.setdiff1d(rows, few)
        for start in tqdm(
            range(0, len(rows), chunk), desc="posteriors", unit="chunk", disable=not progress or len(rows) <= chunk
        ):
            part = rows[start : start + chunk]
            cols = np.flatnonzero(asked[part].any(axis=0))
            fit = fit_model_vectors(
                self.features[cols],
                self.offsets[cols],
                labels[np.ix_(part, cols)],
                asked[np.ix_(part, cols)],
                np.zeros(d),
                list(self.prior_widths),
                chunk=len(part),
                device="cpu",
                covariances=True,
                select="each",
            )
            mean[part], cov[part] = fit.vectors, fit.covariances
        return Posterior(mean, cov)

    def _posteriors_in_span(self, labels: np.ndarray, asked: np.ndarray) -> tuple[np.ndarray, ...]:
        """MAP z (m, d) of m models that were each asked k < d questions, their covariances (m, k, k) in
        the bases (m, d, k) of their questions' spans, and their widths (m,) (`Posterior`'s form): the
        optimum of the d-dimensional fit at k-dimensional cost, each model under its own width.

        With F_i = (Q_i R_i)^T (QR of model i's asked features, Q_i (d, k)) its logits are R_i^T a_i
        for a_i = Q_i^T z_i, and the prior N(0, c I) is isotropic: the MAP lies in the span of Q_i, the
        k-dimensional fit in a_i has the same evidence per width (the d - k directions orthogonal to
        the answers add log c to both terms of the Laplace evidence, which cancel), and the
        covariance is Q_i H_i^-1 Q_i^T plus the prior's c (I - Q_i Q_i^T) off the span. The m small
        problems are solved as one: the questions of model i are rows i k .. (i + 1) k of a stacked
        (m k, k) design that only model i answers."""
        cols = np.stack([np.flatnonzero(row) for row in asked])  # (m, k)
        m, k = cols.shape
        q, blocks = np.linalg.qr(self.features[cols].transpose(0, 2, 1))  # (m, d, k), (m, k, k)
        answers = np.zeros((m, m * k))
        mask = np.zeros((m, m * k), dtype=bool)
        for i, c in enumerate(cols):
            answers[i, i * k : (i + 1) * k] = labels[i, c]
            mask[i, i * k : (i + 1) * k] = True
        fit = fit_model_vectors(
            blocks.transpose(0, 2, 1).reshape(m * k, k),
            self.offsets[cols].ravel(),
            answers,
            mask,
            np.zeros(k),
            list(self.prior_widths),
            chunk=m,
            device="cpu",
            covariances=True,
            select="each",
        )
        widths = np.full(m, fit.prior_width) if fit.prior_widths is None else fit.prior_widths
        mean = np.einsum("mdk,mk->md", q, fit.vectors.astype(np.float64))
        assert fit.covariances is not None  # (asked for)
        return mean, fit.covariances, q, widths

    def _check(self, labels: np.ndarray, asked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
        asked = np.atleast_2d(np.asarray(asked, dtype=bool))
        if labels.shape[1] != self.n_items or asked.shape != labels.shape:
            raise ValueError(
                f"labels {labels.shape} and asked {asked.shape} must both be (n_new, n_items) "
                f"with n_items = {self.n_items}, the bank's questions."
            )
        if np.isnan(labels[asked]).any():
            raise ValueError("asked marks questions without an answer (NaN label); ask only answered ones.")
        return labels, asked


# Estimated scores
def estimate_scores(
    bank: QuestionBank,
    labels: np.ndarray,
    asked: np.ndarray,
    targets: np.ndarray | None = None,
    draws: int = 200,
    level: float = 0.9,
    seed: int = 0,
    models: Sequence[str] | None = None,
    posterior: Posterior | None = None,
    sampled: np.ndarray | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Estimated accuracy of each new model overall and per benchmark, with a predictive interval.

    labels, asked: (n_new, n_items) answers and which of them were asked. targets: (n_new, n_items)
    bool, the questions each accuracy is over (default: all). The estimate is the equation in this
    module's docstring, with E[P] from the probit approximation E[sigmoid(a)] ~ sigmoid(m / sqrt(1 +
    pi s^2 / 8)) for a ~ N(m, s^2). `sd`, `lower` and `upper` (the central `level` interval) come from
    `draws` posterior draws of the vector, each followed by Bernoulli draws of the answers not asked:
    they describe where the accuracy actually measured on all of Q would fall. draws=0 skips them.
    sampled: (n_new, n_items) bool, the asked questions drawn at random (default: all asked, as the
    random and stratified rules draw them; for an adaptive order, `random_positions`): only their
    leave-one-out residuals teach the model's misfit shifts, overall and per benchmark.
    Returns one row per (model, group): items, asked, estimate, sd, lower, upper.
    """
    labels, asked = bank._check(labels, asked)
    targets, models, sampled = _check_estimate_inputs(asked, targets, level, models, sampled)
    if posterior is None:
        posterior = bank.posterior(labels, asked, progress=progress)
    names = [OVERALL] + bank.benchmarks
    onehot = np.column_stack([np.ones(bank.n_items)] + [bank.groups == g for g in bank.benchmarks])
    rng = np.random.default_rng(seed)
    squared = np.einsum("nd,nd->n", bank.features32, bank.features32) if posterior.basis is not None else None
    rows = []
    for i in tqdm(range(len(labels)), desc="estimates", disable=not progress or len(labels) == 1):
        cols = np.flatnonzero(targets[i])
        if not len(cols):
            raise ValueError(f"model {models[i]!r} has no target question to estimate an accuracy over.")
        # float32 for the (n, d) products: the estimates need no more, and they are the cost here.
        F = bank.features32 if len(cols) == bank.n_items else bank.features32[cols]  # (n, d)
        G = onehot[cols]  # (n, groups)
        group = G[:, 1:].argmax(axis=1)  # (n,) each target question's benchmark
        was_asked = asked[i, cols]
        known = np.where(was_asked, labels[i, cols], 0.0)  # (n,)
        logits = _posterior_logits(posterior, i, F, bank.offsets[cols], squared, cols, models[i])
        shifts = _misfit_shifts(bank, logits, known, group, sampled[i, cols], G.shape[1] - 1)
        mean_logit = logits.mean + shifts.misfit + shifts.mean[group]
        var_logit = logits.var + shifts.misfit_var + shifts.var[group]
        p_bar = sigmoid(mean_logit / np.sqrt(1.0 + np.pi * var_logit / 8.0))
        counts = G.sum(axis=0)
        point = (known @ G + np.where(was_asked, 0.0, p_bar) @ G) / np.maximum(counts, 1)  # (groups,)
        spread = np.full((3, len(names)), np.nan)
        if draws:
            acc = _drawn_accuracies(rng, draws, F, logits, shifts, group, known, was_asked, G)
            spread = np.stack([acc.std(axis=0, ddof=1), *np.quantile(acc, [(1 - level) / 2, (1 + level) / 2], axis=0)])
        for g, name in enumerate(names):
            if counts[g]:
                rows.append(
                    {
                        "model": models[i],
                        "group": name,
                        "items": int(counts[g]),
                        "asked": int(was_asked @ G[:, g]),
                        "estimate": point[g],
                        "sd": spread[0, g],
                        "lower": spread[1, g],
                        "upper": spread[2, g],
                    }
                )
    return pd.DataFrame(rows)


def _check_estimate_inputs(
    asked: np.ndarray,
    targets: np.ndarray | None,
    level: float,
    models: Sequence[str] | None,
    sampled: np.ndarray | None,
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """`estimate_scores`' targets, model names and sampled questions, checked against `asked` and
    filled in with their defaults."""
    n_new = len(asked)
    targets = np.ones_like(asked) if targets is None else np.atleast_2d(np.asarray(targets, dtype=bool))
    if targets.shape != asked.shape:
        raise ValueError(f"targets has shape {targets.shape}; expected {asked.shape} like asked.")
    if not 0 < level < 1:
        raise ValueError(f"level={level}; expected a number in (0, 1).")
    names = [f"new{i}" for i in range(n_new)] if models is None else list(models)
    if len(names) != n_new:
        raise ValueError(f"{len(names)} model names for {n_new} rows of labels.")
    sampled = asked if sampled is None else np.atleast_2d(np.asarray(sampled, dtype=bool))
    if sampled.shape != asked.shape or (sampled & ~asked).any():
        raise ValueError(
            f"sampled (shape {sampled.shape}) must mark asked questions only, shaped like asked {asked.shape}."
        )
    return targets, names, sampled


@dataclass
class _Logits:
    """One new model's logits on its target questions under its vector's posterior: their means and
    variances, and what posterior draws of them need."""

    mean: np.ndarray  # (n,) f . mean - o
    var: np.ndarray  # (n,) f^T Sigma f
    spread: np.ndarray  # (n, d) F L with Sigma = L L^T; in a basis (n, r) (F B) L with C = L L^T
    chol: np.ndarray  # L, float32
    basis: np.ndarray | None  # (d, r) B, float32; None for a posterior kept in full
    floor: float  # c, the variance off the basis


def _posterior_logits(
    posterior: Posterior,
    i: int,
    F: np.ndarray,
    o: np.ndarray,
    squared: np.ndarray | None,
    cols: np.ndarray,
    name: str,
) -> _Logits:
    """The logits of model `i` on the questions with features F (n, d) and offsets o (n,): `cols` of
    the bank, whose squared feature norms are `squared` (with a basis)."""
    # LAPACK's potrf directly: the factor of np.linalg.cholesky, in a third of its time at d = 256.
    chol, info = lapack.dpotrf(posterior.cov[i], lower=1, clean=1)
    if info:
        raise np.linalg.LinAlgError(
            f"the posterior covariance of model {name!r} is not positive definite; its posterior cannot be sampled."
        )
    chol = chol.astype(np.float32)
    mean = F @ posterior.mean[i].astype(np.float32) - o
    if posterior.basis is None:
        # Sigma = L L^T: f^T Sigma f = |L^T f|^2, and a posterior draw's logits are F (mean + L e) =
        # F mean + (F L) e: one (n, d) x (d, d) product serves both.
        spread = F @ chol  # (n, d)
        return _Logits(mean, np.einsum("nd,nd->n", spread, spread), spread, chol, None, 0.0)
    # Sigma = B C B^T + c (I - B B^T), C = L L^T: (n, r) products
    basis, floor = posterior.in_basis()
    assert squared is not None
    B = basis[i].astype(np.float32)
    inside = F @ B  # (n, r) B^T f
    spread = inside @ chol
    off = np.maximum(squared[cols] - np.einsum("nr,nr->n", inside, inside), 0.0)  # |f|^2 off the basis
    var = floor[i] * off + np.einsum("nr,nr->n", spread, spread)
    return _Logits(mean, var, spread, chol, B, float(floor[i]))


@dataclass
class _Shifts:
    """A new model's misfit b (a shift of all its logits) and its own shift b_g on each benchmark, as
    posterior means and variances."""

    misfit: float
    misfit_var: float
    mean: np.ndarray  # (groups,) b_g
    var: np.ndarray  # (groups,)


def _misfit_shifts(
    bank: QuestionBank, logits: _Logits, known: np.ndarray, group: np.ndarray, at: np.ndarray, n_groups: int
) -> _Shifts:
    """The model's misfit: a shift b ~ N(0, misfit_sd^2) of all its logits, and its own shift on each
    benchmark, b_g ~ N(0, group_sd^2), learnt (one Newton step from 0 each, b first) from the
    leave-one-out residuals of the answers drawn at random (`at`); their posterior means move the
    logits and their variances widen them."""
    y_at, h_at = known[at], logits.var[at].astype(np.float64)
    p_at = sigmoid(logits.mean[at].astype(np.float64))
    w_at = p_at * (1 - p_at)
    # Leaving answer q out moves its logit by h_q (p_q - y_q) / (1 - w_q h_q) (one Newton step, by
    # Sherman-Morrison; h_q = f_q^T Sigma f_q): the residual it would have had, had it not been asked.
    p_out = sigmoid(logits.mean[at] + h_at * (p_at - y_at) / np.maximum(1.0 - w_at * h_at, 1e-6))
    resid, info = y_at - p_out, p_out * (1 - p_out)
    weight = _design_weights(group, at, n_groups)
    misfit, misfit_var = _misfit(weight @ resid, weight @ info, bank.misfit_sds, noise=(weight**2) @ info)
    shift_mean: np.ndarray = np.zeros(n_groups)
    shift_var: np.ndarray = np.zeros(n_groups)
    if bank.group_sd > 0:
        left = np.bincount(group[at], resid - info * misfit, minlength=n_groups)
        shift_var = 1.0 / (1.0 / bank.group_sd**2 + np.bincount(group[at], info, minlength=n_groups))
        shift_mean = left * shift_var
    return _Shifts(misfit, misfit_var, shift_mean, shift_var)


def _drawn_accuracies(
    rng: np.random.Generator,
    draws: int,
    F: np.ndarray,
    logits: _Logits,
    shifts: _Shifts,
    group: np.ndarray,
    known: np.ndarray,
    was_asked: np.ndarray,
    G: np.ndarray,
) -> np.ndarray:
    """Accuracies (draws, groups) of `draws` posterior draws of the vector and the shifts, each followed
    by Bernoulli draws of the answers not asked (the answers asked count as given)."""
    e = rng.standard_normal((draws, F.shape[1]), dtype=np.float32)
    if logits.basis is None:
        drawn_logits = e @ logits.spread.T  # (draws, n), in place from here on
    else:  # z - mean = sqrt(c) (I - B B^T) e + B L e': a draw in d dimensions, then its logits
        B = logits.basis
        along = rng.standard_normal((draws, B.shape[1]), dtype=np.float32) @ logits.chol.T
        z = np.sqrt(logits.floor, dtype=np.float32) * (e - (e @ B) @ B.T) + along @ B.T
        drawn_logits = z @ F.T
    draw_shifts = shifts.mean + np.sqrt(shifts.var) * rng.standard_normal((draws, len(shifts.mean)))
    draw_shifts += shifts.misfit + np.sqrt(shifts.misfit_var) * rng.standard_normal((draws, 1))
    drawn_logits += logits.mean.astype(np.float32)
    drawn_logits += draw_shifts.astype(np.float32)[:, group]
    drawn = (rng.random(drawn_logits.shape, dtype=np.float32) < sigmoid(drawn_logits)) & ~was_asked
    # The drawn answers are 0/1, so their float32 sums per group are exact.
    counts = G.sum(axis=0)
    return (known @ G + drawn.astype(np.float32) @ G.astype(np.float32)) / np.maximum(counts, 1)


def _design_weights(group: np.ndarray, sampled: np.ndarray, n_groups: int) -> np.ndarray:
    """Weights (summing to the number sampled) that make the sampled questions stand for the targets
    benchmark by benchmark (post-stratification): (N_g / N) / (n_g / n) for a question of benchmark g,
    N_g of the N targets and n_g of the n sampled questions in it. A sample heavy on one benchmark (a
    user's own choice of questions, or a random share drawn after the adaptive picks took many of one
    benchmark's questions) would otherwise let that benchmark's residuals set the model's shift on
    every question. For the random and stratified rules (each benchmark its share) the weights are
    near 1. Benchmarks with no sampled question share out their weight over the others."""
    targets = np.bincount(group, minlength=n_groups).astype(np.float64)
    drawn = np.bincount(group[sampled], minlength=n_groups).astype(np.float64)
    if not drawn.sum():
        return np.zeros(0)
    share = np.where(drawn > 0, targets, 0.0)
    per_group = np.divide(share / share.sum() * drawn.sum(), drawn, out=np.zeros(n_groups), where=drawn > 0)
    return per_group[group[sampled]]


def _misfit(total: float, information: float, sds: Sequence[float], noise: float | None = None) -> tuple[float, float]:
    """Posterior mean and variance of a shift b ~ N(0, tau^2) of every logit from (weighted) residuals
    summing to `total` with Fisher information `information` (one Newton step from 0): the sum is
    N(information b, noise), noise its variance without a shift (default `information`: unit weights),
    and tau the one of `sds` under which the sum is most likely (empirical Bayes: the sum is
    N(0, noise + tau^2 information^2))."""
    sds = [float(t) for t in sds if t > 0]
    noise = information if noise is None else noise
    if not sds:
        return 0.0, 0.0
    if noise <= 0:  # no answer drawn at random: the narrowest shift, unlearnt, still widens the interval
        return 0.0, sds[0] ** 2
    spread = [noise + (t * information) ** 2 for t in sds]
    tau = sds[int(np.argmax([-0.5 * np.log(v) - total**2 / (2 * v) for v in spread]))]
    var = 1.0 / (1.0 / tau**2 + information**2 / noise)
    return total * information / noise * var, var


# Design-based estimates: unbiased whatever the model gets wrong
DESIGN = "design"  # the method name of `design_estimates` in tables beside the model-based "je-irt"


def inclusion_probabilities(
    asked: np.ndarray, sampled: np.ndarray, pool: np.ndarray, strata: np.ndarray | None = None
) -> np.ndarray:
    """(n_new, n_items) each question's probability of having been drawn, as a selection rule drew it:
    1 for a question asked by choice (an adaptive or kmeans pick, a certainty unit), n_h / N_h for one of
    the n_h questions drawn at random from the N_h questions of its stratum h in `pool` (the questions
    the draw could take; `strata` (n_items,) the benchmarks for the stratified rule, None for one
    stratum), 0 for a question not asked. `sampled` marks the random draws among the `asked`. The picks
    by choice leave the pool: the random draws stand for the questions not picked by choice (for an
    adaptive rule, whose picks follow the answers drawn before them, that is the design read as a
    simple random sample of the rest, which `benchmarks/new_models.py` measures)."""
    asked, sampled = np.atleast_2d(np.asarray(asked, dtype=bool)), np.atleast_2d(np.asarray(sampled, dtype=bool))
    pool = np.broadcast_to(np.asarray(pool, dtype=bool), asked.shape)
    if sampled.shape != asked.shape or (sampled & ~asked).any() or (sampled & ~pool).any():
        raise ValueError(
            f"sampled (shape {sampled.shape}) must mark asked questions of the pool only, shaped like "
            f"asked {asked.shape}."
        )
    codes = np.zeros(asked.shape[1], dtype=np.int64) if strata is None else pd.factorize(np.asarray(strata))[0]
    if len(codes) != asked.shape[1]:
        raise ValueError(f"strata has {len(codes)} entries; expected one per question ({asked.shape[1]}).")
    out = np.where(asked, 1.0, 0.0)
    pool = pool & ~(asked & ~sampled)
    for i in range(len(asked)):
        drawn = np.bincount(codes[sampled[i]], minlength=codes.max() + 1)
        size = np.bincount(codes[pool[i]], minlength=codes.max() + 1)
        out[i, sampled[i]] = (drawn / np.maximum(size, 1))[codes[sampled[i]]]
    return out


def design_estimates(
    bank: QuestionBank,
    labels: np.ndarray,
    asked: np.ndarray,
    inclusion: np.ndarray,
    targets: np.ndarray | None = None,
    level: float = 0.9,
    models: Sequence[str] | None = None,
    predictions: np.ndarray | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Each new model's accuracy overall and per benchmark, unbiased by design (a difference estimator,
    prediction-powered inference): for the questions Q of a group,

        acc(Q) = ( sum_{asked} y_q + sum_{not asked} p_q + M r_bar ) / |Q|,

    the answers asked counted as they are, the M questions not asked given the model's prediction p_q,
    and r_bar the mean residual y - p of the questions drawn at random (inclusion probability pi < 1),
    weighted by 1 / pi - 1 (Hajek: the stratified rule's strata each at their share). Whatever p gets
    wrong, r_bar measures it on a probability sample of the questions not picked by choice, so the
    estimate errs only by that sample's noise; the model's quality only narrows the interval.

    The predictions must not have seen the random answers they are checked on. Default (cross-fitting):
    the random draws are split in two halves, benchmark by benchmark (`seed`); each half's residuals
    are taken from E[P(q)] under `bank.posterior` of the picks by choice (pi = 1) and the other half,
    and the estimate is the mean of the two halves' (each unbiased given the other half: it is a random
    sample of the questions the other half left). Given `predictions` (n_new, n_items) fixed in
    advance, they serve for every draw. `inclusion` (n_new, n_items): `inclusion_probabilities` (1 for
    a pick by choice, which counts as observed; 0 where not asked). The interval: estimate +- t_{n-1} x
    se, se^2 = (M / |Q|)^2 (1 - n / (n + M)) s_w^2 / n, s_w^2 the weighted variance of the n random
    draws' residuals (finite-population correction for the rest). With fewer than 2 random draws in a
    group the interval is NaN (and with none the estimate too): `note` says so. Returns one row per
    (model, group): items, asked, sampled, estimate, sd (its standard error), lower, upper, note.
    """
    labels, asked = bank._check(labels, asked)
    inclusion = _check_inclusion(bank, asked, inclusion)
    targets, models, _ = _check_estimate_inputs(asked, targets, level, models, None)
    chosen = asked & (inclusion >= 1)
    sampled = asked & ~chosen
    if predictions is None:
        half = _halves(bank.groups, sampled, seed)
        fits = np.concatenate([chosen | (sampled & (half == 1)), chosen | (sampled & (half == 0))])
        predictions = bank.predict(bank.posterior(np.tile(labels, (2, 1)), fits)).reshape(2, *labels.shape)
    else:
        predictions = np.atleast_2d(np.asarray(predictions, dtype=np.float64))
        if predictions.shape != asked.shape:
            raise ValueError(f"predictions has shape {predictions.shape}; expected {asked.shape} like asked.")
        half, predictions = np.where(sampled, 0, -1), predictions[None]
    rows = []
    for i, name in enumerate(models):
        for group in [OVERALL] + bank.benchmarks:
            inside = targets[i] & (True if group == OVERALL else bank.groups == group)
            if not inside.any():
                continue
            at, rest, size = inside & sampled[i], inside & ~asked[i], int(inside.sum())
            row = {"model": name, "group": group, "items": size, "asked": int((inside & asked[i]).sum())}
            known = labels[i, inside & asked[i]].sum()
            parts = []
            for j, p in enumerate(predictions):  # each half's residuals under the predictions that did not see it
                part = at & (half[i] == j)
                if part.any():
                    parts.append((labels[i, part], p[i, part], inclusion[i, part], p[i, rest].sum()))
            rows.append(row | _difference_estimate(known, size, int(at.sum()), int(rest.sum()), parts, level))
    return pd.DataFrame(rows)


def _check_inclusion(bank: QuestionBank, asked: np.ndarray, inclusion: np.ndarray) -> np.ndarray:
    """`inclusion` (n_new, n_items) as floats, checked: in (0, 1] wherever a question was asked."""
    inclusion = np.atleast_2d(np.asarray(inclusion, dtype=np.float64))
    if inclusion.shape != asked.shape:
        raise ValueError(f"inclusion has shape {inclusion.shape}; expected {asked.shape} like asked.")
    bad = asked & ~((inclusion > 0) & (inclusion <= 1))
    if bad.any():
        i, q = np.argwhere(bad)[0]
        raise ValueError(
            f"inclusion probability {float(inclusion[i, q])} of asked question {str(bank.item_ids[q])!r} "
            f"(model row {i}); "
            "expected a number in (0, 1] (1: picked by choice), as `inclusion_probabilities` gives it."
        )
    return inclusion


def _difference_estimate(
    known: float, size: int, n: int, m: int, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]], level: float
) -> dict:
    """One group's design-based estimate (`design_estimates`): `known` the sum of the answers asked,
    `size` questions, n drawn at random, m not asked; `parts` (answers, predictions, inclusion
    probabilities of each half's random draws, and the predictions' sum over the m not asked)."""
    out = {"sampled": n, "estimate": np.nan, "sd": np.nan, "lower": np.nan, "upper": np.nan, "note": ""}
    if not m:
        share = known / size
        return out | {"estimate": share, "sd": 0.0, "lower": share, "upper": share, "note": "all asked"}
    if not n:
        return out | {"note": "no random draw: no design-based estimate"}
    estimates, residuals, weights = [], [], []
    for y, p, pi, rest in parts:
        w = 1.0 / pi - 1.0
        w = np.ones(len(w)) if w.sum() <= 0 else w
        r = y - p
        estimates.append((known + rest + m * (w @ r) / w.sum()) / size)
        residuals.append(r)
        weights.append(w)
    resid, weight = np.concatenate(residuals), np.concatenate(weights)
    out["estimate"] = float(np.mean(estimates))
    if n < 2:
        return out | {"note": "1 random draw: no interval"}
    mean = weight @ resid / weight.sum()
    spread = n / (n - 1) * (weight**2) @ (resid - mean) ** 2 / weight.sum() ** 2
    se = m / size * np.sqrt(max(1.0 - n / (n + m), 0.0) * spread)
    half_width = stats.t.ppf((1 + level) / 2, n - 1) * se
    return out | {"sd": se, "lower": out["estimate"] - half_width, "upper": out["estimate"] + half_width}


def _halves(groups: np.ndarray, sampled: np.ndarray, seed: int) -> np.ndarray:
    """(n_new, n_items) 0 or 1 on each model's random draws (-1 elsewhere): two halves drawn at random,
    each benchmark's draws alternating between them in a seeded random order."""
    rng = np.random.default_rng(seed)
    codes = pd.factorize(np.asarray(groups))[0]
    out = np.full(sampled.shape, -1, dtype=np.int64)
    for i, row in enumerate(sampled):
        drawn = rng.permutation(np.flatnonzero(row))
        drawn = drawn[np.argsort(codes[drawn], kind="stable")]  # by benchmark, random within each
        rank = np.arange(len(drawn)) - np.searchsorted(codes[drawn], codes[drawn])  # position in its benchmark
        out[i, drawn] = (rank + rng.integers(2)) % 2
    return out


def score_new_models(
    bank: QuestionBank,
    labels: np.ndarray,
    inclusion: np.ndarray | None = None,
    *,
    draws: int = 200,
    level: float = 0.9,
    seed: int = 0,
    models: Sequence[str] | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """`jeirt estimate`'s table: each new model's accuracy overall and per benchmark from its answers
    `labels` (n_new, n_items; NaN = not asked), the design-based estimate (`design_estimates`) reported
    where the group has the random draws for an interval (source "design"), else the model-based one
    (`estimate_scores`, source "model: " and why), and the model-based one beside it (model_*).
    `inclusion` (n_new, n_items) as `inclusion_probabilities`; None reads every answer as one simple
    random sample of the bank's questions (pi = n / N), as the random rule draws them."""
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    asked = ~np.isnan(labels)
    if inclusion is None:
        inclusion = inclusion_probabilities(asked, asked, np.ones(labels.shape[1], dtype=bool))
    sampled = asked & (np.asarray(inclusion) < 1)
    model = estimate_scores(
        bank, labels, asked, draws=draws, level=level, seed=seed, models=models, sampled=sampled, progress=progress
    )
    design = design_estimates(bank, labels, asked, inclusion, level=level, models=models)
    keys = ["model", "group"]
    model = model.rename(columns={c: f"model_{c}" for c in ("estimate", "sd", "lower", "upper")})
    table = design.merge(model.drop(columns=["items", "asked"]), on=keys, how="left")
    has_interval = table["lower"].notna()
    table["source"] = np.where(has_interval, "design", "model: " + table["note"].replace("", "no interval"))
    for c in ("estimate", "sd", "lower", "upper"):
        table[c] = table[c].where(has_interval, table[f"model_{c}"])
    return table


def plain_means(
    bank: QuestionBank, labels: np.ndarray, asked: np.ndarray, models: Sequence[str] | None = None
) -> pd.DataFrame:
    """The no-model baseline: each model's mean answer over the asked questions, overall and per
    benchmark (a benchmark with no asked question gets the overall mean). Columns as
    `estimate_scores` without the interval."""
    labels, asked = bank._check(labels, asked)
    models = [f"new{i}" for i in range(len(labels))] if models is None else list(models)
    rows = []
    for i, name in enumerate(models):
        if not asked[i].any():
            raise ValueError(f"model {name!r} was asked no question; the plain mean needs at least one answer.")
        overall = labels[i, asked[i]].mean()
        rows.append({"model": name, "group": OVERALL, "asked": int(asked[i].sum()), "estimate": overall})
        for g in bank.benchmarks:
            sel = asked[i] & (bank.groups == g)
            rows.append(
                {
                    "model": name,
                    "group": g,
                    "asked": int(sel.sum()),
                    "estimate": labels[i, sel].mean() if sel.any() else overall,
                }
            )
    return pd.DataFrame(rows)


def irt_estimates(irt: OnePL | TwoPL, new: Dataset, asked: np.ndarray) -> pd.DataFrame:
    """The per-question IRT baseline: each new model's ability fitted from its asked answers with the
    items of a fitted `OnePL` / `TwoPL` frozen (`onboard`, which adds or refits the models in `irt`),
    then the estimate of this module's docstring with the IRT's probabilities. One row per (model,
    group): asked, estimate (no interval). `new` holds the new models' answers on the bank's questions."""
    asked = np.asarray(asked, dtype=bool)
    if asked.shape != new.labels.shape:
        raise ValueError(f"asked has shape {asked.shape}; expected the new models' labels' {new.labels.shape}.")
    if not asked.any(axis=1).all():
        raise ValueError("a model was asked no question; the IRT estimate needs at least one answer.")
    irt.onboard(new, asked, replace=True)
    probs = irt.predict_proba(new)  # (n_new, n_items)
    graded = new.observed
    filled = np.where(asked, np.nan_to_num(new.labels), probs)
    groups = new.items["benchmark"].astype(str).to_numpy()
    rows = []
    for i, name in enumerate(new.models):
        for g in [OVERALL] + list(pd.unique(groups)):
            sel = graded[i] & (True if g == OVERALL else groups == g)
            if sel.any():
                rows.append(
                    {
                        "model": name,
                        "group": g,
                        "asked": int((asked[i] & sel).sum()),
                        "estimate": float(filled[i, sel].mean()),
                    }
                )
    return pd.DataFrame(rows)


# Which questions to ask
def _candidates(
    bank: QuestionBank, candidates: np.ndarray | None, labels: np.ndarray | None, n_new: int, k: int
) -> np.ndarray:
    """(n_new, n_items) bool: the questions each new model may be asked, at least k of them."""
    if candidates is None:
        candidates = ~np.isnan(labels) if labels is not None else np.ones((n_new, bank.n_items), dtype=bool)
    candidates = np.asarray(candidates, dtype=bool)
    if candidates.ndim == 1:
        candidates = np.broadcast_to(candidates, (n_new, len(candidates)))
    if candidates.shape[1] != bank.n_items:
        raise ValueError(f"candidates has {candidates.shape[1]} columns; the bank has {bank.n_items} questions.")
    fewest = int(candidates.sum(axis=1).min())
    if not 1 <= k <= fewest:
        raise ValueError(f"k={k}; expected 1 <= k <= {fewest}, the fewest candidate questions of a model.")
    return candidates


def select_items(
    bank: QuestionBank,
    k: int,
    rule: str = "adaptive",
    *,
    candidates: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    n_new: int = 1,
    seed: int = 0,
    step: int = 5,
    growth: float = 0.25,
    random_share: float = RANDOM_SHARE,
    progress: bool = False,
) -> np.ndarray:
    """Which k questions to ask each new model, in asking order: (n_new, k) question positions.

    Rules: "random"; "stratified" (each benchmark's share of the candidates); "kmeans" (k-means with
    k centres on the question directions, the candidate nearest each centre); "adaptive" (greedy in
    the current posterior, most expected information about the vector, `next_items`); and
    "adaptive-accuracy" (greedy, largest expected drop in the variance of the estimated overall
    accuracy). The adaptive rules need the answers they reveal as they go: `labels` (n_new,
    n_items); they refit the posterior after batches of max(step, growth x asked) questions, and
    `random_share` of every prefix of their order is drawn at random (`random_positions` says where),
    which keeps their estimate honest (`estimate_scores`).
    `candidates` (n_new, n_items) or (n_items,) bool restricts the choice (default: the answered
    questions when labels are given, else all).
    """
    if rule not in RULES:
        raise ValueError(f"rule={rule!r}; expected one of {RULES}.")
    if labels is not None:
        labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
        n_new = len(labels)
    cand = _candidates(bank, candidates, labels, n_new, k)
    rng = np.random.default_rng(seed)
    if rule == "random":
        return np.stack([rng.choice(np.flatnonzero(row), size=k, replace=False) for row in cand])
    if rule == "stratified":
        return np.stack([rng.permutation(np.flatnonzero(row)[sample_items(bank.groups[row], k, rng)]) for row in cand])
    if rule == "kmeans":
        return _kmeans_items(bank, k, cand, seed)
    if labels is None:
        raise ValueError(
            f"rule={rule!r} chooses each question from the answers so far: pass labels, the "
            "answers it may reveal (or call next_items for one batch from a posterior)."
        )
    return adaptive_selection(
        bank,
        k,
        labels,
        rule,
        candidates=cand,
        step=step,
        growth=growth,
        random_share=random_share,
        seed=seed,
        progress=progress,
    )[0]


def adaptive_selection(
    bank: QuestionBank,
    k: int,
    labels: np.ndarray,
    rule: str = "adaptive",
    *,
    candidates: np.ndarray | None = None,
    step: int = 5,
    growth: float = 0.25,
    random_share: float = RANDOM_SHARE,
    seed: int = 0,
    keep: Sequence[int] = (),
    progress: bool = False,
) -> tuple[np.ndarray, dict[int, Posterior]]:
    """`select_items` for the adaptive rules, with the posteriors the selection fits on its way.

    Each batch starts with its random picks (`random_positions`): for each model the next questions of
    a seeded random order of its candidates that are not yet asked, so that they are a random sample of
    the questions the adaptive picks left; the rest of the batch is `next_items`'s.

    Returns the (n_new, k) asking order and, for each j of `keep` at which a batch ends, the posterior
    after the first j questions: the refit the selection makes there anyway, equal to `bank.posterior`
    of those answers, so that an estimate at j needs none of its own. The posterior after the last
    batch is fitted only when k is in `keep` (the selection itself no longer needs it).
    """
    if rule not in ("adaptive", "adaptive-accuracy"):
        raise ValueError(f"rule={rule!r}; expected 'adaptive' or 'adaptive-accuracy'.")
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    n_new = len(labels)
    cand = _candidates(bank, candidates, labels, n_new, k)
    target = "vector" if rule == "adaptive" else "accuracy"
    drawn = random_positions(k, random_share, step, growth)  # (k,) which picks are random
    rng = np.random.default_rng(seed)
    shuffled = [rng.permutation(np.flatnonzero(row)) for row in cand]  # each model's random order
    order = np.zeros((n_new, 0), dtype=np.int64)
    asked = np.zeros_like(cand)
    posterior, kept = bank.unanswered(n_new), {}
    bar = tqdm(total=k, desc=f"{rule} selection", disable=not progress)
    while order.shape[1] < k:
        batch = _batch(order.shape[1], k, step, growth)
        n_random = int(drawn[order.shape[1] : order.shape[1] + batch].sum())  # the batch's first n_random picks
        picked = np.zeros((n_new, batch), dtype=np.int64)  # (n_new, batch)
        for i, perm in enumerate(shuffled):
            picked[i, :n_random] = perm[~asked[i, perm]][:n_random]
            asked[i, picked[i, :n_random]] = True
        if batch > n_random:
            picked[:, n_random:] = next_items(bank, posterior, batch - n_random, cand & ~asked, target=target)
        order = np.concatenate([order, picked], axis=1)
        np.put_along_axis(asked, picked, True, axis=1)
        bar.update(batch)
        if order.shape[1] < k or k in keep:
            posterior = bank.posterior(np.where(asked, labels, 0.0), asked)
            if order.shape[1] in keep:
                kept[order.shape[1]] = posterior
    bar.close()
    return order, kept


def suggest_questions(
    bank: QuestionBank,
    labels: np.ndarray,
    k: int,
    rule: str = "stratified",
    *,
    drawn: np.ndarray | None = None,
    seed: int = 0,
    random_share: float = RANDOM_SHARE,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The next k questions for each new model (rows of `labels`, NaN = not answered yet), none it has
    answered: (n_new, k) positions, whether each was a random draw, and its inclusion probability
    (`inclusion_probabilities` of this round: the draw's share of the questions it was drawn from, 1
    for a pick by choice), which `design_estimates` needs.

    random and stratified draw each model's k (one generator, `seed`); kmeans clusters once per model
    (seed + its position), all picks by choice; the adaptive rules first draw at random what brings the
    model's random draws to `random_share` of all its questions (`drawn` (n_new, n_items) marks its
    earlier random draws; default: every earlier answer), then pick the rest from the posterior of its
    answers (`next_items`).
    """
    if rule not in RULES:
        raise ValueError(f"rule={rule!r}; expected one of {RULES}.")
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    n_new, asked = len(labels), ~np.isnan(labels)
    candidates = ~asked
    drawn = asked if drawn is None else np.atleast_2d(np.asarray(drawn, dtype=bool))
    if drawn.shape != asked.shape:
        raise ValueError(f"drawn has shape {drawn.shape}; expected {asked.shape} like labels.")
    random = np.zeros((n_new, k), dtype=bool)
    if rule in ("adaptive", "adaptive-accuracy"):
        _candidates(bank, candidates, None, n_new, k)  # checks k against what is left
        share = np.round(random_share * (asked.sum(axis=1) + k)).astype(int) - drawn.sum(axis=1)
        share = np.clip(share, 0, k)
        picks = np.zeros((n_new, k), dtype=np.int64)
        rng = np.random.default_rng(seed)
        left = candidates.copy()
        for i, n in enumerate(share):
            picks[i, :n] = rng.permutation(np.flatnonzero(left[i]))[:n]
            left[i, picks[i, :n]] = False
            random[i, :n] = True
        posterior = bank.posterior(np.nan_to_num(labels), asked, progress=progress)
        rest = k - share  # the picks by choice, from the questions neither asked nor drawn
        target = "vector" if rule == "adaptive" else "accuracy"
        for n in np.unique(rest[rest > 0]):
            rows = np.flatnonzero(rest == n)
            part = posterior if len(rows) == n_new else posterior.take(rows)
            picks[rows, k - n :] = next_items(bank, part, int(n), left[rows], target=target, progress=progress)
    elif rule == "kmeans":
        picks = np.concatenate(
            [
                select_items(bank, k, "kmeans", candidates=candidates[i : i + 1], seed=(seed + i) % 2**32)
                for i in range(n_new)
            ]
        )
    else:
        picks = select_items(bank, k, rule, candidates=candidates, n_new=n_new, seed=seed, progress=progress)
        random[:] = True
    mask = np.zeros_like(asked)
    np.put_along_axis(mask, picks, True, axis=1)
    sampled = np.zeros_like(asked)
    np.put_along_axis(sampled, picks, random, axis=1)
    inclusion = inclusion_probabilities(mask, sampled, candidates, bank.groups if rule == "stratified" else None)
    return picks, random, np.take_along_axis(inclusion, picks, axis=1)


def _batch(done: int, k: int, step: int, growth: float) -> int:
    """The size of the adaptive rules' next batch after `done` of k questions."""
    return min(k - done, max(step, int(growth * done)))


def random_positions(k: int, random_share: float = RANDOM_SHARE, step: int = 5, growth: float = 0.25) -> np.ndarray:
    """(k,) bool: which positions of an adaptive rule's asking order are random draws, the same for
    every model: at each batch end j, round(random_share x j) of the first j, first in each batch."""
    if not 0 <= random_share <= 1:
        raise ValueError(f"random_share={random_share}; expected a share between 0 and 1.")
    drawn, done = np.zeros(k, dtype=bool), 0
    while done < k:
        batch = _batch(done, k, step, growth)
        n_random = int(round(random_share * (done + batch))) - int(drawn[:done].sum())
        drawn[done : done + max(0, min(batch, n_random))] = True
        done += batch
    return drawn


def next_items(
    bank: QuestionBank,
    posterior: Posterior,
    k: int,
    candidates: np.ndarray,
    target: str = "vector",
    progress: bool = False,
) -> np.ndarray:
    """The next k questions for each model (n_new, k), chosen greedily from its current posterior.

    Asking q adds Fisher information w_q f_q f_q^T, w_q = p_q (1 - p_q), to the posterior precision.
    target="vector" picks the largest w_q f_q^T Sigma f_q (the largest gain in log det of the
    precision, D-optimal); target="accuracy" the largest drop w_q (f_q^T Sigma g)^2 / (1 + w_q
    f_q^T Sigma f_q) in the variance g^T Sigma g of the estimated overall accuracy, g its gradient.
    After each pick Sigma is updated by the rank-one formula, so a batch does not repeat itself: the
    updates are kept as their vectors Sigma_i f_{q_i} and weights, never written into a dense Sigma, so
    the j-th pick costs O(d^2 + j d) per model rather than a pass over every (d, d) covariance.
    """
    if target not in ("vector", "accuracy"):
        raise ValueError(f"target={target!r}; expected 'vector' or 'accuracy'.")
    candidates = np.atleast_2d(np.asarray(candidates, dtype=bool))
    if candidates.shape != (len(posterior), bank.n_items):
        raise ValueError(f"candidates has shape {candidates.shape}; expected ({len(posterior)}, {bank.n_items}).")
    if (candidates.sum(axis=1) < k).any():
        raise ValueError(f"k={k}, but a model has only {candidates.sum(axis=1).min()} candidate questions left.")
    F = bank.features32  # (n_items, d)
    picks = np.zeros((len(posterior), k), dtype=np.int64)
    block = 32  # models picked for together: each pick is one (models, d) x (d, n_items) product
    starts = range(0, len(posterior), block)
    for start in tqdm(starts, desc="next questions", unit="block", disable=not progress or len(starts) == 1):
        at = slice(start, min(start + block, len(posterior)))  # a slice: every pick reads these covariances
        rows = np.arange(at.stop - at.start)
        p = sigmoid(posterior.mean[at].astype(np.float32) @ F.T - bank.offsets)
        w = p * (1 - p)  # (m, n_items) Fisher weight of each question
        s = posterior.variances(at, F)  # f_q^T Sigma f_q
        hf = None  # "accuracy": (m, n_items) f_r^T Sigma g, g the accuracy's gradient, updated with Sigma below
        if target == "accuracy":
            hf = posterior.apply(at, (w @ F).astype(np.float64)) @ F.T.astype(np.float64) / bank.n_items
        taken = ~candidates[at]
        gain = np.empty(w.shape, dtype=np.result_type(w, s))  # work space of every pick
        # Sigma after j picks = cov - sum_{i < j} scales_i vecs_i vecs_i^T (the rank-one updates so far)
        vecs = np.zeros((len(rows), k, F.shape[1]), dtype=np.float32)
        scales = np.zeros((len(rows), k))
        for j in range(k):
            np.multiply(w, s, out=gain)  # "vector": w f^T Sigma f
            if hf is not None:  # "accuracy": w (f^T Sigma g)^2 / (1 + w f^T Sigma f)
                gain += 1.0
                np.divide(w * hf**2, gain, out=gain)
            np.copyto(gain, -np.inf, where=taken)
            q = np.argmax(gain, axis=1)  # (m,)
            picks[at, j], taken[rows, q] = q, True
            fq = F[q]  # (m, d)
            sq = posterior.apply(at, fq).astype(np.float32)  # (m, d) Sigma f_q
            if j:
                along = np.matmul(vecs[:, :j], fq[:, :, None])[:, :, 0]  # (m, j)
                sq -= np.matmul((scales[:, :j] * along)[:, None, :], vecs[:, :j])[:, 0]
            scale = w[rows, q] / (1 + w[rows, q] * s[rows, q])
            vecs[:, j], scales[:, j] = sq, scale
            proj = sq @ F.T  # f_r^T Sigma f_q for every r
            if hf is not None:  # every f_r^T Sigma g after the rank-one update, from proj
                hf -= (scale * hf[rows, q])[:, None] * proj
            np.square(proj, out=proj)
            proj *= scale[:, None]
            s -= proj
            np.maximum(s, 0.0, out=s)  # a variance; the clip absorbs float32 drift
    return picks


def _kmeans_items(bank: QuestionBank, k: int, candidates: np.ndarray, seed: int) -> np.ndarray:
    """k-means with k centres on the candidates' directions (first 32 principal components, for
    speed); for each model, the candidate question nearest each centre, no question twice."""
    pool = np.flatnonzero(candidates.any(axis=0))
    x = bank.directions[pool]
    if x.shape[1] > 32:
        x = PCA(32, random_state=seed).fit_transform(x)
    centres = KMeans(n_clusters=k, n_init=1, random_state=seed).fit(x).cluster_centers_  # (k, p)
    dist = (x**2).sum(1)[:, None] - 2 * x @ centres.T + (centres**2).sum(1)[None]  # (n_pool, k)
    dist = np.ascontiguousarray(dist.T)  # (k, n_pool): a centre's distances lie together
    picks = np.zeros((len(candidates), k), dtype=np.int64)
    done: dict[bytes, int] = {}  # models with the same candidates get the same questions
    for i, row in enumerate(candidates):
        key = np.packbits(row).tobytes()
        if key in done:
            picks[i] = picks[done[key]]
            continue
        done[key] = i
        d = np.where(row[pool][None, :], dist, np.inf)
        for c in np.argsort(d.min(axis=1)):  # best-served centres choose first
            j = int(np.argmin(d[c]))
            picks[i, c] = pool[j]
            d[:, j] = np.inf
    return picks
