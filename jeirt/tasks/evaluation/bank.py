"""The question bank: the questions a new LLM can be asked, as a trained JE-IRT model sees them, and the
posterior of a new LLM's vector given its answers.

Once JE-IRT is trained, each question is a fixed unit direction u_q and norm r_q, each LLM a vector v,
and P(v answers q) = sigmoid(u_q . v - r_q) (Eq. 3). The prior is N(mu, c S) of
`jeirt.onboard.vector_prior` (the trained vectors' mean and Ledoit-Wolf covariance, its general-ability
direction widened), each LLM's prior width c its most evident of `jeirt.onboard.PRIOR_WIDTH_GRID`: the
posterior `JEIRT.onboard` fits too (`fit_new_vectors`), in whitened coordinates z (v = mu + L z,
S = L L^T, prior N(0, c I), feature f_q = L^T u_q, offset o_q = r_q - u_q . mu). The questions' side
is the model's `question_terms` (with per-question corrections where the model has them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from tqdm import (
    tqdm,  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets
)

from jeirt.data import Dataset
from jeirt.estimator import JEIRT
from jeirt.model import sigmoid
from jeirt.onboard import PRIOR_WIDTH_GRID, fit_model_vectors, vector_prior, whitened
from jeirt.renamed import missing_attribute, renamed_keyword

GROUP_SD = 0.35  # prior sd (logits) of a new model's own shift on one benchmark (how chosen: DECISIONS.md)
# Prior sds (logits) of a new model's misfit, a shift of all its logits: per model, the one its random
# answers' residuals make most likely; the narrowest sets the interval's width when they see no misfit.
MISFIT_SDS = (0.2, 0.5, 1.0, 2.0)


OVERALL = "overall"  # the group name of every question together in score tables


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
        *,
        prior: None = None,
    ) -> QuestionBank:
        """The questions of `ds` embedded by a fitted `JEIRT`, with the prior fitted to the vectors of
        `prior_models` (default: every model `model` knows; leave out the ones under evaluation);
        `prior_covariance` is S's kind, "full" or "isotropic" (`jeirt.onboard.vector_prior`)."""
        if prior is not None:
            raise renamed_keyword("QuestionBank.from_model", "prior")
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

    if not TYPE_CHECKING:  # (the type checker keeps refusing names that do not exist)

        def __getattr__(self, name: str) -> object:
            """Only for attributes not found: an old name answers with its new one (`jeirt.renamed`)."""
            raise missing_attribute("QuestionBank", name)

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
        labels = check_labels(labels)
        asked = np.atleast_2d(np.asarray(asked, dtype=bool))
        if labels.shape[1] != self.n_items or asked.shape != labels.shape:
            raise ValueError(
                f"labels {labels.shape} and asked {asked.shape} must both be (n_new, n_items) "
                f"with n_items = {self.n_items}, the bank's questions."
            )
        if np.isnan(labels[asked]).any():
            raise ValueError("asked marks questions without an answer (NaN label); ask only answered ones.")
        return labels, asked


def check_labels(labels: np.ndarray) -> np.ndarray:
    """`labels` (n_new, n_items) as floats: each answer 1 (right), 0 (wrong) or a share right in [0, 1],
    NaN where not asked, as the command line's reader (`jeirt.data.from_long`) takes them."""
    try:
        labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    except (TypeError, ValueError) as err:
        raise TypeError(f"labels must be numbers (an array of n_new x n_items answers): {err}") from None
    bad = ~np.isnan(labels) & ((labels < 0) | (labels > 1))
    if bad.any():
        i, q = np.argwhere(bad)[0]
        raise ValueError(
            f"labels[{i}, {q}] is {labels[i, q]:g}; labels must be in [0, 1] (1 right, 0 wrong, or a share "
            "right), NaN where not asked."
        )
    return labels


def check_estimate_inputs(
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
