"""`JEIRT`: the model behind a scikit-learn-style interface (fit, predict_proba, onboard, save, load).

Hyperparameters go to the constructor; `fit` learns the adapter and one vector per model from a
`Dataset` and a `Split`, picking the epoch with the lowest validation loss; learned state ends in `_`.
Questions can be given as a Dataset, a list of texts, or an array of frozen-encoder features.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
import torch
from scipy.optimize import minimize_scalar
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from jeirt._version import __version__
from jeirt.data.dataset import Dataset, name_positions
from jeirt.encoders import canonical_name, embed_texts
from jeirt.files import OutputRefused, as_path, atomic_write, identity, locked, protected
from jeirt.metrics import ece, log_loss
from jeirt.model import INITS, JEIRTNet, NestedJEIRTNet, jeirt_logits, probability, sigmoid
from jeirt.modelfile import FORMAT_VERSION, ModelFileError, not_finite, read_model_file, weights_checksum
from jeirt.nested import (
    FOLDS,
    benchmark_offsets,
    fit_nested,
    group_columns,
    joined_history,
    joined_results,
    question_folds,
)
from jeirt.onboard import (
    PRIOR_WIDTH_GRID,
    VALIDATION_PRIOR_WIDTH_GRID,
    OnboardResult,
    fit_new_vectors,
    vector_prior,
)
from jeirt.params import JEIRT_PARAMS, check_params
from jeirt.questions import QuestionCorrections, fit_corrections
from jeirt.renamed import missing_attribute, one_spelling
from jeirt.search import train_best
from jeirt.splits import Split, split_by_question
from jeirt.train import FAST, PAPER, TrainConfig, TrainHistory, training_recipe

Questions = Dataset | Sequence[str] | np.ndarray

# Named recipes: (training, dropout, feature_noise, init of E_M). "fast" is the default (`jeirt.train.FAST`:
# the paper's dropout 0.5, no feature noise, a faster schedule); "paper" is the JE-IRT authors' code at
# d = 256 (`jeirt.train.PAPER`), whose E_M starts at N(0, 1) as nn.Embedding's does. DECISIONS.md has the
# runs behind both initialisations.
RECIPES: dict[str, tuple[TrainConfig, float, float, str]] = {
    "fast": (FAST, 0.5, 0.0, "small"),
    "paper": (PAPER, 0.5, 0.0, "normal"),
}


_Self = TypeVar("_Self", bound="Estimator")


class Estimator(Protocol):
    """What every predictor here offers (JEIRT and `jeirt.baselines`): fit on a split (returning
    itself, as scikit-learn's fit does), then probabilities (n_models, n_items) aligned with
    `Dataset.labels`."""

    def fit(self: _Self, ds: Dataset, split: Split) -> _Self: ...

    def predict_proba(self, ds: Dataset) -> np.ndarray: ...


class JEIRT(BaseEstimator):
    """Joint Embedding IRT: P(m answers q) = sigmoid(<E_Q/|E_Q|, E_M> - |E_Q|).

    d             embedding dimension shared by questions and models
    encoder       frozen text encoder (see `jeirt.encoders`); features come precomputed or are encoded
    recipe        "fast" (default) or "paper" (the JE-IRT authors'): the training recipe, dropout, init
                  and feature noise used wherever the next four are None (see `RECIPES`)
    dropout       dropout between the adapter's two layers; None: the recipe's (0.5, as the paper's)
    init          how the model vectors E_M start (`jeirt.model.INITS`): "small" (|E_M| about 0.1) or
                  "normal" (N(0, 1) entries, nn.Embedding's, as the authors' code); None: the recipe's
                  ("small" for fast, "normal" for paper)
    feature_noise training-time noise on frozen features, relative to their norm; None: the recipe's
                  (0 in both). Not in the paper; why it is off: DECISIONS.md
    training      the optimisation recipe: a `TrainConfig`, or a dict of fields that change the
                  recipe's (e.g. {"max_epochs": 30}); None keeps the recipe's
    calibrate     temperature scaling: one scalar T fitted on the validation loss after training and
                  folded into the weights (E_Q and E_M divided by T, which is Eq. 3's logit over T), so
                  every use of the model sees calibrated probabilities; T is kept in `temperature_`
    search        a bounded hyperparameter search on validation labels only: after the recipe itself,
                  the changes in `jeirt.search.SEARCH_GRID` (lr, weight decay, dropout, feature noise, d) in order
                  until `search_budget` seconds are spent; the lowest validation loss wins
    search_budget seconds after which the search starts no new candidate
    question_correction  after training, also fit per-question corrections of the training questions
                  from the trained models' answers (`fit_corrections`, `jeirt.questions`). Not in the
                  paper, off by default (the paper's JE-IRT); new questions always go through the text
    benchmark_feature  append a one-hot of each question's benchmark to its frozen features (scaled to
                  the features' median norm), for datasets whose bare prompts say less than their
                  benchmark label (metabench). Not in the paper, off by default; benchmarks without a
                  training question get no one-hot, and questions must then come as a Dataset
    nested        this book's variant, not the paper's method (`jeirt.nested`): Eq. (3) as the departure
                  from each LLM's training accuracy on the question's benchmark, fitted as `folds`
                  JE-IRTs of d / folds, each without one fold of the training questions, whose mean
                  logit, weighted by how much of it carries to the folds they never saw (with
                  `calibrate`; else 1), is added to that accuracy's logit. With the weight 0 it is the
                  benchmark accuracy itself. Questions given as texts, without a benchmark, start from
                  each LLM's overall accuracy. Not with search, question_correction or benchmark_feature
    folds         with nested: the cross-fitting folds, and so the JE-IRTs fitted (d a multiple of it)
    random_state  seeds initialisation, batch order and the default split
    device        torch device; None: CUDA, then MPS, then CPU
    progress      progress bars while encoding and training
    """

    def __init__(
        self,
        d: int = 256,
        encoder: str = "all-MiniLM-L6-v2",
        recipe: str = "fast",
        dropout: float | None = None,
        feature_noise: float | None = None,
        init: str | None = None,
        training: TrainConfig | dict | None = None,
        calibrate: bool = True,
        search: bool = False,
        search_budget: float = 300.0,
        question_correction: bool = False,
        random_state: int = 0,
        device: str | None = None,
        progress: bool = True,
        benchmark_feature: bool = False,
        nested: bool = False,
        folds: int = FOLDS,
    ):
        self.d = d
        self.encoder = encoder
        self.recipe = recipe
        self.dropout = dropout
        self.feature_noise = feature_noise
        self.init = init
        self.training = training
        self.calibrate = calibrate
        self.search = search
        self.search_budget = search_budget
        self.question_correction = question_correction
        self.random_state = random_state
        self.device = device
        self.progress = progress
        self.benchmark_feature = benchmark_feature
        self.nested = nested
        self.folds = folds

    def _check_params(self) -> None:
        if self.recipe not in RECIPES:
            raise ValueError(f"recipe={self.recipe!r}; expected one of {list(RECIPES)}.")
        recipe_training, recipe_dropout, recipe_noise, recipe_init = RECIPES[self.recipe]
        check_params("JEIRT", JEIRT_PARAMS, self.get_params())  # d, search_budget, random_state, dropout, noise
        self.dropout_ = recipe_dropout if self.dropout is None else self.dropout
        self.feature_noise_ = recipe_noise if self.feature_noise is None else self.feature_noise
        self.init_ = recipe_init if self.init is None else self.init
        if not isinstance(self.init_, str) or self.init_ not in INITS:
            raise ValueError(f"init={self.init!r}; expected one of {list(INITS)} or None (the recipe's).")
        self.d_ = int(self.d)
        if self.nested:
            _check_nested(self)
        self.encoder_ = canonical_name(self.encoder)
        self.training_ = training_recipe(recipe_training, self.training)

    # -- fitting ---------------------------------------------------------------------------------

    def fit(self, ds: Dataset, split: Split | None = None) -> JEIRT:
        """Learn the adapter and every model's vector on `split.train` (default: question split);
        `split.val` picks the epoch, the search candidate (with `search`) and the temperature."""
        split = self._check_fit_inputs(ds, split)
        features = self._fit_features(ds, split)  # (n_items, feature_dim)
        self.net_: JEIRTNet | NestedJEIRTNet
        arch = {"d": self.d_, "dropout": self.dropout_, "feature_noise": self.feature_noise_}
        if self.nested:
            self._fit_nested(ds, split, features, arch)
        else:
            self._fit_jeirt(ds, split, features, arch)
        self.net_.cpu()
        self.models_ = list(ds.models)
        self.feature_dim_ = features.shape[1]
        self.split_name_ = split.name
        self.corrections_: QuestionCorrections | None = None
        if self.question_correction:  # from the trained models' training answers (`fit_corrections`)
            rows = np.flatnonzero(~np.isin(np.asarray(ds.models), list(split.held_out)))
            self.fit_corrections(ds.subset(models=rows), split.train[rows])
        if split.held_out:  # their vectors were never trained: fit them now from split.onboard
            assert split.onboard is not None  # (Split checks it comes with held-out models)
            self.onboard(
                ds.subset(models=list(split.held_out)), split.onboard[ds.model_index(split.held_out)], replace=True
            )
        return self

    def _fit_jeirt(self, ds: Dataset, split: Split, features: np.ndarray, arch: dict[str, Any]) -> None:
        """The paper's model: the recipe (and with `search` the candidates around it), then the temperature."""
        found = train_best(
            features,
            ds.labels,
            split,
            arch,
            self.training_,
            init=self.init_,
            search=self.search,
            budget=self.search_budget,
            seed=self.random_state,
            device=self.device,
            progress=self.progress,
        )
        self.net_, self.history_, self.training_ = found.net, found.history, found.training
        self.d_, self.dropout_, self.feature_noise_ = (
            found.arch["d"],
            found.arch["dropout"],
            found.arch["feature_noise"],
        )
        self.search_results_: list[dict[str, Any]] = found.results
        self.search_seconds_ = found.seconds
        self.temperature_ = 1.0
        self.calibration_: dict[str, float] = {}
        if self.calibrate:
            self._calibrate(features, ds.labels, split.val)

    def _fit_nested(self, ds: Dataset, split: Split, features: np.ndarray, arch: dict[str, Any]) -> None:
        """This book's variant (`jeirt.nested.fit_nested`): the offsets from the training labels, the
        parts on their folds, their weight (with `calibrate`) folded in; the record in `calibration_`."""
        offsets = benchmark_offsets(ds.labels, split.train, self._groups(features))
        trained = split.items_of("train")
        folds = question_folds(ds.items["item_id"], ds.items["benchmark"], trained, self.folds, self.random_state)
        found = fit_nested(
            features,
            ds.labels,
            split,
            offsets,
            folds,
            arch,
            self.training_,
            init=self.init_,
            weigh=self.calibrate,
            seed=self.random_state,
            device=self.device,
            progress=self.progress,
        )
        self.net_, self.history_ = found.net, joined_history(found.histories)
        self.search_results_ = [{"change": {}, "val_loss": self.history_.val_loss[self.history_.best_epoch]}]
        self.search_seconds_ = found.seconds
        self.temperature_ = 1.0
        self.calibration_ = found.record

    def _check_fit_inputs(self, ds: Dataset, split: Split | None) -> Split:
        """`fit`'s inputs checked and its parameters resolved; the split to train on (default: by question)."""
        _check_dataset("fit", ds)
        if split is not None and not isinstance(split, Split):
            raise TypeError(
                f"fit takes a jeirt.splits.Split as split, not a {type(split).__name__}; make one with "
                "jeirt.splits.split_by_question(ds) (or split_by_model), or leave it out."
            )
        self._check_params()
        split = split or split_by_question(ds, seed=self.random_state)
        if split.train.shape != ds.labels.shape:
            raise ValueError(
                f"split masks have shape {split.train.shape}; the dataset's labels have "
                f"{ds.labels.shape}. Make the split from this dataset."
            )
        return split

    def _fit_features(self, ds: Dataset, split: Split) -> np.ndarray:
        """The frozen features of `ds`'s questions, checked finite; with `benchmark_feature`, the one-hot of
        the benchmarks that have training questions appended (their names and scale kept for later)."""
        features = _finite(ds.features(self.encoder_, progress=self.progress), ds, "fit")
        self.benchmarks_: list[str] | None = None
        self.benchmark_scale_ = 1.0
        if self.benchmark_feature or self.nested:  # the benchmarks that have training questions, in a fixed order
            trained = np.asarray(split.train).any(axis=0)
            self.benchmarks_ = sorted(set(ds.items["benchmark"].astype(str)[trained]))
            if self.benchmark_feature:
                self.benchmark_scale_ = float(np.median(np.linalg.norm(features[trained], axis=1)))
            features = self._with_benchmarks(features, ds.items["benchmark"])
        return features

    @torch.no_grad()
    def _calibrate(self, features: np.ndarray, labels: np.ndarray, val_mask: np.ndarray) -> None:
        """Temperature scaling: the T > 0 minimising the validation log loss of logit / T, folded into
        the weights (adapter output and model vectors divided by T; directions are unchanged)."""
        self.net_.cpu().eval()
        items = np.flatnonzero(val_mask.any(axis=0))
        logits = self.net_(torch.from_numpy(np.asarray(features[items], dtype=np.float32))).numpy().T.astype(np.float64)
        sel = val_mask[:, items]
        z, y = logits[sel], labels[:, items][sel]  # flat validation logits and labels

        def loss(log_t: float) -> float:
            return float(np.mean(np.logaddexp(0.0, z / np.exp(log_t)) - y * z / np.exp(log_t)))

        found = minimize_scalar(loss, bounds=(-3.0, 3.0), method="bounded", options={"xatol": 1e-4})
        t = float(np.exp(found.x))
        before, after = sigmoid(z), sigmoid(z / t)
        self.calibration_ = {
            "temperature": t,
            "val_log_loss_before": log_loss(before, y),
            "val_log_loss_after": log_loss(after, y),
            "val_ece_before": ece(before, y),
            "val_ece_after": ece(after, y),
        }
        self.net_.scale_embeddings(1 / t)  # E_Q / T and E_M / T: the logit over T
        self.temperature_ = t

    def onboard(
        self,
        ds: Dataset,
        mask: np.ndarray | None = None,
        replace: bool = False,
        prior_width: float | str = "auto",
        covariances: bool = False,
        val_mask: np.ndarray | None = None,
        *,
        prior_scale: float | str | None = None,
    ) -> JEIRT:
        """Fit the vectors of `ds.models` from their labels under `mask`, all else frozen.

        New names are appended; a name the model knows is refused unless `replace=True`. The prior is
        the one the few-question estimate uses (`jeirt.onboard.fit_new_vectors`): N(mu, c S), mu and S
        the jointly trained vectors' mean and Ledoit-Wolf covariance. `prior_width` is c: a number, or
        "auto": each model's most evident of `onboard.PRIOR_WIDTH_GRID`, or, given `val_mask` (answers of
        the new models held out of the fit, best on questions the network did not train on), the one of
        `onboard.VALIDATION_PRIOR_WIDTH_GRID` that predicts them best. The evidence widens the prior as answers
        on the network's own training questions accumulate, where test questions want it narrower
        (`benchmarks/onboarding_prior.py`): with many answers give `val_mask`. Each model's width is
        kept in `onboard_prior_widths_`, the most common in `onboard_prior_width_`. `prior_scale` (old name).
        With `covariances`, each new vector's Laplace posterior covariance (d x d, float32) is kept in
        `onboard_covariances_`; without, nothing of size d x d per model is kept.
        """
        self._check_fitted()
        _check_dataset("onboard", ds)
        mask = _onboard_mask(ds, mask, val_mask)
        if prior_scale is not None:
            prior_width = _renamed_prior_scale(prior_scale, prior_width)
        widths, val_mask = _onboard_widths(ds, mask, prior_width, val_mask)
        position = {m: i for i, m in enumerate(self.models_)}  # (sets and dicts: thousands of models)
        known = [m for m in ds.models if m in position]
        if known and not replace:
            raise ValueError(f"model(s) {known[:5]} are already fitted; pass replace=True to refit them.")
        results, offsets = self._fit_new_vectors(ds, mask, widths, val_mask, covariances)
        self._keep_onboarded(ds, joined_results(results), position, offsets)
        return self

    def _fit_new_vectors(
        self, ds: Dataset, mask: np.ndarray, widths, val_mask: np.ndarray | None, covariances: bool
    ) -> tuple[list, np.ndarray | None]:
        """`onboard`'s fit: the new LLMs' vectors under the trained vectors' prior, all else frozen; for a
        nested model, one LLM at a time with its own benchmark offsets (returned, else None)."""
        directions, norms = self._question_terms(ds)
        new_names = set(ds.models)
        trained = [i for i, m in enumerate(self.models_) if m not in new_names]
        mean, cov = vector_prior(self.net_.model_vectors.detach().numpy()[trained])
        offsets = None  # nested: each new LLM's offsets, folded into its own questions' norms
        if self.nested:
            offsets = benchmark_offsets(ds.labels, mask, self._groups(self.question_features(ds)))
        rows = [slice(None)] if offsets is None else [slice(i, i + 1) for i in range(ds.n_models)]
        results = [
            fit_new_vectors(
                directions,
                norms if offsets is None else norms - self._offset_logits(ds, offsets[row])[0],
                ds.labels[row],
                mask[row],
                mean,
                cov,
                widths,
                val_mask=None if val_mask is None else val_mask[row],
                covariances=covariances,
                device=self.device,
            )
            for row in rows
        ]
        return results, offsets

    def _groups(self, features: np.ndarray) -> np.ndarray:
        """Nested: the benchmark one-hot (n_items, n_groups) at the end of `question_features`' rows."""
        return features[:, features.shape[1] - len(self.benchmarks_ or []) - 1 :]

    def _offset_logits(self, ds: Dataset, offsets: np.ndarray) -> np.ndarray:
        """Nested: each LLM's offset on each question of `ds` (n_models, n_items) from O (n_models, n_groups)."""
        return offsets @ group_columns(ds.items["benchmark"], self.benchmarks_ or []).T

    def _keep_onboarded(
        self, ds: Dataset, result: OnboardResult, position: dict[str, int], offsets: np.ndarray | None = None
    ) -> None:
        """`onboard`'s fit kept: the vectors of `ds.models` written over the known ones (at `position`)
        or appended (nested: their `offsets` too), their widths, evidence and covariances in the
        `onboard_*_` attributes."""
        self.onboard_evidence_ = dict(result.evidence)  # width -> summed log evidence (with val_mask: -log loss)
        each = result.prior_widths  # (n_new,) each model's width
        assert each is not None  # (fit_new_vectors always gives them)
        self.onboard_prior_widths_ = dict(zip(ds.models, each.tolist()))
        chosen, counts = np.unique(each, return_counts=True)
        self.onboard_prior_width_ = float(chosen[np.argmax(counts)])
        vectors = self.net_.model_vectors.detach().clone()
        fitted = torch.from_numpy(result.vectors)
        is_known = np.array([name in position for name in ds.models], dtype=bool)
        vectors[[position[name] for name in ds.models if name in position]] = fitted[is_known]
        self.models_ += [name for name in ds.models if name not in position]  # new names, in their order
        self.net_.model_vectors = torch.nn.Parameter(torch.cat([vectors, fitted[~is_known]]))
        if offsets is not None:
            assert isinstance(self.net_, NestedJEIRTNet)
            rows = torch.from_numpy(offsets.astype(np.float32))
            kept = self.net_.offsets.clone()
            kept[[position[name] for name in ds.models if name in position]] = rows[is_known]
            self.net_.offsets = torch.cat([kept, rows[~is_known]])
        self.onboard_covariances_ = (
            {} if result.covariances is None else dict(zip(ds.models, result.covariances.astype(np.float32)))
        )

    def fit_corrections(
        self,
        ds: Dataset,
        mask: np.ndarray | None = None,
        offset_scale: float | str = "auto",
        shift_scale: float | str = "auto",
    ) -> JEIRT:
        """Fit per-question corrections (`jeirt.questions`) from the answers of `ds.models` (all known to
        this JEIRT) under `mask` (default: all), their vectors and everything else frozen.

        The mirror image of `onboard`: known models, known questions. Replaces earlier corrections;
        questions of `ds` without an answer under `mask` get none. Kept in `corrections_`.
        """
        self._check_fitted()
        _check_dataset("fit_corrections", ds)
        mask = ds.observed if mask is None else np.asarray(mask, dtype=bool)
        if mask.shape != ds.labels.shape:
            raise ValueError(f"mask has shape {mask.shape}; expected the dataset's {ds.labels.shape}.")
        mask = mask & ds.observed
        emb = self.question_embeddings(ds).astype(np.float64)
        norms = np.linalg.norm(emb, axis=1)
        self.corrections_ = fit_corrections(
            ds.items["item_id"].to_numpy(),
            emb / norms[:, None],
            norms,
            self.model_vectors_[self.model_index(ds.models)],
            ds.labels,
            mask,
            offset_scale,
            shift_scale,
            progress=self.progress,
        )
        return self

    # -- prediction ------------------------------------------------------------------------------

    def question_terms(self, questions: Questions) -> tuple[np.ndarray, np.ndarray]:
        """Each question's side of Eq. (3), float64: directions (n_items, d) and norms (n_items,), so that
        P = sigmoid(directions . E_M - norms). The unit E_Q/|E_Q| and |E_Q|, plus the question's
        correction where `corrections_` has one (only a Dataset's questions, matched by item id). Not for
        a nested JEIRT, whose logits also hold each LLM's offset: the few-question evaluation built on
        these terms needs the paper's model."""
        if self.nested:
            raise ValueError(
                "this JEIRT is the nested variant (nested=True): its probabilities add each LLM's benchmark "
                "offset to Eq. (3), which the questions' terms alone do not give. For few-question "
                "evaluation fit the paper's JE-IRT (jeirt fit without --nested; nested=False)."
            )
        return self._question_terms(questions)

    def _question_terms(self, questions: Questions) -> tuple[np.ndarray, np.ndarray]:
        emb = self.question_embeddings(questions).astype(np.float64)
        norms = np.linalg.norm(emb, axis=1)
        directions = emb / np.maximum(norms[:, None], 1e-12)
        corrections = getattr(self, "corrections_", None)
        if corrections is not None and isinstance(questions, Dataset):
            directions, norms = corrections.apply(questions.items["item_id"], directions, norms)
        return directions, norms

    def question_features(self, questions: Questions) -> np.ndarray:
        """Frozen-encoder features (n_items, feature_dim) of a Dataset, a list of texts or an array
        (with `benchmark_feature`, the one-hot of each Dataset question's benchmark appended)."""
        self._check_fitted()
        _check_questions("predict_proba", questions)
        benchmarks = getattr(self, "benchmarks_", None)
        if isinstance(questions, Dataset):
            feats = questions.features(self.encoder_, progress=self.progress)
            if benchmarks is not None:
                feats = self._with_benchmarks(feats, questions.items["benchmark"])
        elif self.nested and not isinstance(questions, np.ndarray):  # texts: no benchmark, the overall offset
            feats = self._with_benchmarks(
                embed_texts(list(questions), self.encoder_, progress=self.progress), [""] * len(questions)
            )
        elif benchmarks is not None and not isinstance(questions, np.ndarray):
            raise ValueError(
                "this JEIRT takes each question's benchmark as a feature (benchmark_feature=True); "
                "give the questions as a Dataset, whose items name their benchmark."
            )
        elif isinstance(questions, np.ndarray) and questions.dtype != object:
            feats = questions
        else:
            feats = embed_texts(list(questions), self.encoder_, progress=self.progress)
        if feats.ndim != 2 or feats.shape[1] != self.feature_dim_:
            raise ValueError(
                f"question features have shape {feats.shape}; this model was trained on "
                f"{self.feature_dim_}-d features from {self.encoder_}."
            )
        return _finite(np.asarray(feats, dtype=np.float32), questions, "predict_proba")

    def _with_benchmarks(self, features: np.ndarray, benchmark: Sequence) -> np.ndarray:
        """`features` (n_items, dim) with the one-hot of each question's benchmark among `benchmarks_`
        appended, times `benchmark_scale_` (n_items, dim + n_benchmarks); unknown benchmarks get zeros."""
        assert self.benchmarks_ is not None, "only with benchmark_feature or nested"
        if self.nested:  # the offsets' one-hot: the last column for a benchmark without training questions
            onehot = group_columns(benchmark, self.benchmarks_)
            return np.concatenate([np.asarray(features, dtype=np.float32), onehot], axis=1)
        column = {b: j for j, b in enumerate(self.benchmarks_)}
        onehot = np.zeros((len(features), len(self.benchmarks_)), dtype=np.float32)
        for i, b in enumerate(np.asarray(benchmark).astype(str)):
            if b in column:
                onehot[i, column[b]] = self.benchmark_scale_
        return np.concatenate([np.asarray(features, dtype=np.float32), onehot], axis=1)

    @torch.no_grad()
    def question_embeddings(self, questions: Questions) -> np.ndarray:
        """E_Q (n_items, d): direction = what a question is about, norm = how hard it is."""
        self.net_.eval()
        return self.net_.question_embeddings(torch.from_numpy(self.question_features(questions))).numpy()

    def question_norms(self, questions: Questions) -> np.ndarray:
        """|E_Q| (n_items,): the model's difficulty of each question."""
        return np.linalg.norm(self.question_embeddings(questions), axis=1)

    def question_directions(self, questions: Questions) -> np.ndarray:
        """E_Q / |E_Q| (n_items, d): unit vectors, what each question is about."""
        emb = self.question_embeddings(questions)
        return emb / np.linalg.norm(emb, axis=1, keepdims=True)

    @property
    def model_vectors_(self) -> np.ndarray:
        """E_M (n_models, d), rows in the order of `models_`."""
        self._check_fitted()
        return self.net_.model_vectors.detach().numpy().copy()

    @torch.no_grad()
    def predict_proba(self, questions: Questions, models: Sequence[str] | None = None) -> np.ndarray:
        """P(correct) with shape (n_models, n_items), aligned with `Dataset.labels`.

        `models` defaults to the questions' dataset models (when given a Dataset) or all known ones.
        """
        self._check_fitted()
        _check_questions("predict_proba", questions)
        if isinstance(models, str):
            raise TypeError(f"models is one string ({models!r:.40}); pass a list of model names, e.g. [name].")
        if not isinstance(questions, (Dataset, np.ndarray)):
            blank = [i for i, text in enumerate(questions) if isinstance(text, str) and not text.strip()]
            if blank:
                raise ValueError(
                    f"questions[{blank[0]}] is an empty text ({len(blank)} of {len(questions)} are); "
                    "every question needs its text to be placed in the model's geometry."
                )
        if models is None:
            models = questions.models if isinstance(questions, Dataset) else self.models_
        rows = self.model_index(models)
        if getattr(self, "corrections_", None) is not None and isinstance(questions, Dataset):
            directions, norms = self.question_terms(questions)
            return probability(directions, norms, self.model_vectors_[rows]).T.astype(np.float32)
        if self.nested:  # each LLM's offset plus Eq. (3)
            self.net_.eval()
            return torch.sigmoid(self.net_(torch.from_numpy(self.question_features(questions)))[:, rows]).numpy().T
        emb = torch.from_numpy(self.question_embeddings(questions))
        return torch.sigmoid(jeirt_logits(emb, self.net_.model_vectors[rows])).numpy().T

    # -- persistence -----------------------------------------------------------------------------

    def save(self, path: str | Path) -> Path:
        """Write the weights with the config, model names and encoder id that made them, and a checksum
        of the weights (`weights_checksum`), atomically; weights with NaN or inf are refused.

        Refused (`OutputRefused`), as the command line refuses them: a dataset file, its folder or the
        checksum manifest under `$JEIRT_DATA`, or a file of the jeirt package. Saving over the file
        this model was loaded from, once another process has written it since (two in-place
        onboardings at once), raises `ModelFileError` rather than losing that process's update.
        """
        self._check_fitted()
        path = Path(path).expanduser()
        why = protected(path)
        if why:
            raise OutputRefused(f"not saving {path}: it is {why}, which jeirt never writes; save to another file.")
        if path.is_dir():
            raise OutputRefused(f"not saving {path}: it is a folder; give a file name inside it.")
        path.parent.mkdir(parents=True, exist_ok=True)
        blob = self._file_contents()
        bad = not_finite(blob)
        if bad:
            raise ValueError(
                f"not saving {path}: the model's {bad}; a fit that diverged predicts nothing. Refit "
                "it (a smaller learning rate, or the default recipe)."
            )
        blob["checksum"] = weights_checksum(blob)
        source = getattr(self, "_source", None) or (None, None)  # (real path, identity) when loaded
        in_place = source[0] is not None and source[0] == _real(path)  # over the file this model was loaded from
        with locked(path) if in_place else contextlib.nullcontext():  # check and write as one step
            if in_place and identity(path) != source[1]:
                raise ModelFileError(
                    f"not saving {path}: another process wrote it after this model was loaded from it "
                    "(e.g. two in-place onboardings at once); saving would lose that update. Load it "
                    "again and redo this change."
                )
            atomic_write(path, lambda f: torch.save(blob, f))  # a kill mid-save leaves the old file whole
            self._source = (_real(path), identity(path))
        return path

    def _file_contents(self) -> dict:
        """What a model file holds (`jeirt.modelfile`), its checksum aside: the weights with the settings,
        model names and encoder that made them, the training and calibration records."""
        # the settings that made these weights: a search's winner, not the candidates it started from
        params = self.get_params() | {
            "training": asdict(self.training_),
            "encoder": self.encoder_,
            "d": self.d_,
            "dropout": self.dropout_,
            "feature_noise": self.feature_noise_,
            "search": False,
        }
        blob = {
            "format": "jeirt-model",
            "format_version": FORMAT_VERSION,
            "version": __version__,
            "config": params,
            "models": self.models_,
            "feature_dim": self.feature_dim_,
            "split": self.split_name_,
            "history": asdict(self.history_),
            "state_dict": self.net_.state_dict(),
            "temperature": self.temperature_,
            "calibration": self.calibration_,  # T is folded into the weights
            "search_results": self.search_results_,
        }
        corrections = getattr(self, "corrections_", None)
        if corrections is not None:
            blob["corrections"] = corrections.to_dict()
        if getattr(self, "benchmarks_", None) is not None:  # benchmark_feature: the one-hot's columns
            blob["benchmarks"] = {"names": self.benchmarks_, "scale": self.benchmark_scale_}
        return blob

    @classmethod
    def load(cls, path: str | Path) -> JEIRT:
        """Read a model written by `save`, onto the device at hand (tensors to the CPU; a `device` the
        file names that this machine lacks becomes None, the default). ModelFileError, naming the
        file and the part at fault, for a file that is unreadable, damaged (its weights do not match
        their checksum, or hold NaN or inf; a part missing or of the wrong type), edited, or of a
        format this jeirt does not read; a file without a checksum (format 1) loads with a warning."""
        seen = (_real(as_path(path)), identity(path))  # before reading: a write after it is found at save
        blob, config = read_model_file(path, cls._get_param_names())
        try:
            self = cls(**(config | {"training": TrainConfig(**config["training"])}))
            self._check_params()
            self.history_ = TrainHistory(**blob["history"])
        except (TypeError, ValueError) as err:
            raise ModelFileError(
                f"{path}: its settings do not fit this version of jeirt ({err}); refit the model "
                "or use the version that wrote it."
            ) from None
        self.models_ = list(blob["models"])
        self.feature_dim_ = blob["feature_dim"]
        self.split_name_ = blob["split"]
        self.temperature_ = float(blob.get("temperature", 1.0))  # already folded into the saved weights
        self.calibration_ = dict(blob.get("calibration", {}))
        self.search_results_ = list(blob.get("search_results", []))
        try:
            self.corrections_ = QuestionCorrections.from_dict(blob["corrections"]) if "corrections" in blob else None
        except (KeyError, TypeError, ValueError) as err:
            raise ModelFileError(
                f"{path}: its question corrections are damaged ({type(err).__name__}: {err}); the file was "
                "edited or damaged. Restore it or refit the model."
            ) from None
        benchmarks = blob.get("benchmarks")
        if (self.benchmark_feature or self.nested) and not (
            isinstance(benchmarks, dict)
            and isinstance(benchmarks.get("names"), list)
            and isinstance(benchmarks.get("scale"), (int, float))
        ):
            raise ModelFileError(
                f"{path} was fitted with benchmark_feature or nested but lacks its benchmark names and scale; "
                "the file is damaged or edited. Refit the model."
            )
        self.benchmarks_, self.benchmark_scale_ = None, 1.0
        if (self.benchmark_feature or self.nested) and isinstance(benchmarks, dict):  # (checked above)
            self.benchmarks_, self.benchmark_scale_ = list(benchmarks["names"]), float(benchmarks["scale"])
        self.net_ = self._empty_net()
        try:
            self.net_.load_state_dict(blob["state_dict"])
        except RuntimeError as err:
            detail = [line.strip() for line in err.args[0].splitlines()[1:] if line.strip()] or [err.args[0]]
            raise ModelFileError(
                f"{path}: the weights do not fit the model its settings describe "
                f"({detail[0]}); the file is damaged or edited: restore it or refit the model."
            ) from None
        self.net_.eval()
        self._source = seen
        return self

    # -- helpers ---------------------------------------------------------------------------------

    def _empty_net(self) -> JEIRTNet | NestedJEIRTNet:
        """The network a model file's weights go into, shaped by the settings read from it."""
        if not self.nested:
            return JEIRTNet(self.feature_dim_, len(self.models_), self.d_, self.dropout_, self.feature_noise_)
        groups = len(self.benchmarks_ or []) + 1
        in_dim, n_models = self.feature_dim_ - groups, len(self.models_)
        return NestedJEIRTNet(in_dim, n_models, groups, self.d_, self.folds, self.dropout_, self.feature_noise_)

    if not TYPE_CHECKING:  # (the type checker keeps refusing names that do not exist)

        def __getattr__(self, name: str) -> object:
            """Only for attributes not found: an old name answers with its new one (`jeirt.renamed`)."""
            raise missing_attribute("JEIRT", name)

    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise NotFittedError("this JEIRT is not fitted yet; call fit(dataset) or JEIRT.load(path).")

    def model_index(self, models: str | Sequence[str]) -> np.ndarray:
        """Rows of `models` in `model_vectors_` (`jeirt.data.name_positions`); an unknown name raises
        KeyError naming it."""
        return name_positions(models, self.models_, "this JEIRT was not fitted on it; add new models with onboard()")


# ----------------------------------------------------------------------------------------------------
# The public methods' inputs: the type each takes, and finite features


def _check_dataset(method: str, ds: object) -> None:
    """`ds` must be a Dataset: a TypeError saying how to make one, not an AttributeError deep inside."""
    if not isinstance(ds, Dataset):
        raise TypeError(
            f"{method} takes a jeirt.data.Dataset, not a {type(ds).__module__}.{type(ds).__name__}; load one "
            "with jeirt.data.load_dataset(name) or build one from a long table (model, item_id, label) "
            "with jeirt.data.from_long(table)."
        )


def _check_questions(method: str, questions: object) -> None:
    """Questions come as a Dataset, an array of features or a list of texts; anything else (one string,
    a DataFrame, whose iteration gives its column names, a list holding non-texts) is a TypeError."""
    if isinstance(questions, (Dataset, np.ndarray)):
        return
    if isinstance(questions, str):
        raise TypeError(
            f"questions is one string ({questions!r:.40}); pass a list of question texts, e.g. "
            "[text], a Dataset or an array of features."
        )
    kind = f"{type(questions).__module__}.{type(questions).__name__}"
    if kind.startswith("pandas.") or not isinstance(questions, Sequence):
        raise TypeError(
            f"{method} takes a Dataset, a list of question texts or an array of features, not a {kind}; "
            "for a table of questions pass its texts, e.g. table['text'].tolist()."
        )
    odd = [i for i, text in enumerate(questions) if not isinstance(text, str)]
    if odd:
        raise TypeError(
            f"questions[{odd[0]}] is a {type(questions[odd[0]]).__name__}, not a text ({len(odd)} of "
            f"{len(questions)} are not); pass the questions' texts."
        )


def _finite(features: np.ndarray, questions: object, method: str) -> np.ndarray:
    """`features` if every value is finite; else a ValueError with the count and the first question
    (its item_id for a Dataset, else its row): NaN features give NaN probabilities."""
    bad = ~np.isfinite(features)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        where = (
            f"item_id {questions.items['item_id'].iloc[int(rows[0])]!r} of dataset {questions.name!r}"
            if isinstance(questions, Dataset)
            else f"row {int(rows[0])}"
        )
        raise ValueError(
            f"{method}: the question features hold {int(bad.sum())} NaN or infinite value(s) in "
            f"{len(rows)} question(s), the first {where}; recompute those embeddings (or drop those "
            "questions): a NaN feature gives a NaN probability."
        )
    return features


def _check_nested(model: JEIRT) -> None:
    """The nested variant's settings: folds dividing d, and none of the options it does not combine with."""
    folds = model.folds  # a whole number of at least 2 (`JEIRT_PARAMS`)
    if folds > model.d_ or model.d_ % folds:
        raise ValueError(
            f"d={model.d_} with folds={folds}: each of the {folds} JE-IRTs is d / folds wide; make d a multiple."
        )
    clash = [name for name in ("search", "question_correction", "benchmark_feature") if getattr(model, name)]
    if clash:
        raise ValueError(
            f"nested=True does not combine with {', '.join(f'{c}=True' for c in clash)}: the variant's folds "
            "take the search's place, and the offsets the benchmark's. Turn those off."
        )


def _onboard_mask(ds: Dataset, mask: np.ndarray | None, val_mask: np.ndarray | None = None) -> np.ndarray:
    """`JEIRT.onboard`'s mask (default: every label of `ds` that `val_mask` does not hold out) on observed
    labels, giving each model some."""
    if val_mask is not None and np.shape(val_mask) != ds.labels.shape:
        raise ValueError(f"val_mask has shape {np.shape(val_mask)}; expected the dataset's {ds.labels.shape}.")
    if mask is None:
        mask = ds.observed if val_mask is None else ds.observed & ~np.asarray(val_mask, dtype=bool)
    mask = np.asarray(mask, dtype=bool) & ds.observed
    if mask.shape != ds.labels.shape:
        raise ValueError(f"mask has shape {mask.shape}; expected the dataset's {ds.labels.shape}.")
    empty = [m for m, row in zip(ds.models, mask) if not row.any()]
    if empty:
        raise ValueError(f"no labels to onboard model(s) {empty[:5]} from; give each some answers.")
    return mask


def _renamed_prior_scale(prior_scale: float | str, prior_width: float | str) -> float | str:
    """`JEIRT.onboard(prior_scale=)`, the old name of `prior_width`: its value, with a FutureWarning."""
    prior_width = one_spelling("JEIRT.onboard", "prior_scale", prior_scale, prior_width, "auto")
    warnings.warn(
        "JEIRT.onboard(prior_scale=...) is renamed prior_width; prior_scale goes in the next release.",
        FutureWarning,
        stacklevel=3,
    )
    return prior_width


def _onboard_widths(
    ds: Dataset, mask: np.ndarray, prior_width: float | str, val_mask: np.ndarray | None
) -> tuple[tuple[float, ...], np.ndarray | None]:
    """`JEIRT.onboard`'s prior widths to choose among, and the answers outside `mask` to choose on
    (None: each model's evidence chooses)."""
    if isinstance(prior_width, str) and prior_width != "auto":
        raise ValueError(f"prior_width={prior_width!r}; expected a positive number or 'auto'.")
    if val_mask is not None:
        val_mask = np.asarray(val_mask, dtype=bool)
        if val_mask.shape != ds.labels.shape:
            raise ValueError(f"val_mask has shape {val_mask.shape}; expected the dataset's {ds.labels.shape}.")
        for bad, why in (
            (val_mask & ~ds.observed, "labels that are NaN (not answered)"),
            (val_mask & mask, "answers that mask fits on too (an answer is fitted or held out, not both)"),
        ):
            if bad.any():
                i, q = np.argwhere(bad)[0]
                raise ValueError(
                    f"val_mask marks {int(bad.sum())} {why} (e.g. model {ds.models[i]!r}, question "
                    f"{ds.items['item_id'].iloc[q]!r})."
                )
    if prior_width != "auto":
        return (float(prior_width),), None
    return (PRIOR_WIDTH_GRID if val_mask is None else VALIDATION_PRIOR_WIDTH_GRID), val_mask


def _real(path: str | Path) -> str:
    return os.path.realpath(Path(path).expanduser())
