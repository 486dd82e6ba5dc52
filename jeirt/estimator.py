"""`JEIRT`: the model behind a scikit-learn-style interface (fit, predict_proba, onboard, save, load).

Hyperparameters go to the constructor; `fit` learns the adapter and one vector per model from a
`Dataset` and a `Split`, picking the epoch with the lowest validation loss; learned state ends in `_`.
Questions can be given as a Dataset, a list of texts, or an array of frozen-encoder features.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from jeirt import __version__
from jeirt.data import Dataset
from jeirt.encoders import canonical_name, embed_texts
from jeirt.files import atomic_write
from jeirt.model import JEIRTNet, jeirt_logits
from jeirt.onboard import PRIOR_SCALES, fit_model_vectors, prior_from_vectors
from jeirt.splits import Split, split_by_question
from jeirt.train import TrainConfig, TrainHistory, train, training_recipe

Questions = Dataset | Sequence[str] | np.ndarray


class Estimator(Protocol):
    """What every predictor here offers (JEIRT and `jeirt.baselines`): fit on a split, then
    probabilities (n_models, n_items) aligned with `Dataset.labels`."""

    def fit(self, ds: Dataset, split: Split) -> "Estimator": ...

    def predict_proba(self, ds: Dataset) -> np.ndarray: ...


class JEIRT(BaseEstimator):
    """Joint Embedding IRT: P(m answers q) = sigmoid(<E_Q/|E_Q|, E_M> - |E_Q|).

    d             embedding dimension shared by questions and models
    encoder       frozen text encoder (see `jeirt.encoders`); features come precomputed or are encoded
    dropout       dropout between the adapter's two layers (the paper's 0.4-0.5; 0 here, see below)
    feature_noise training-time noise on frozen features, relative to their norm. Not in the paper:
                  without it the adapter memorises the training questions by epoch 2-3 (mmlu_pro
                  validation loss 0.5979 -> 0.5938 with it; 0.5 and 1.5 were worse)
    training      the optimisation recipe: a `TrainConfig`, or a dict of fields that change the
                  default one (e.g. {"max_epochs": 30}); None keeps `JEIRT.TRAINING`
    random_state  seeds initialisation, batch order and the default split
    device        torch device; None: CUDA, then MPS, then CPU
    progress      progress bars while encoding and training
    """

    TRAINING = TrainConfig()

    def __init__(self, d: int = 256, encoder: str = "all-MiniLM-L6-v2", dropout: float = 0.0,
                 feature_noise: float = 1.0, training: TrainConfig | dict | None = None, random_state: int = 0,
                 device: str | None = None, progress: bool = True):
        self.d = d
        self.encoder = encoder
        self.dropout = dropout
        self.feature_noise = feature_noise
        self.training = training
        self.random_state = random_state
        self.device = device
        self.progress = progress

    def _check_params(self) -> None:
        if not isinstance(self.d, (int, np.integer)) or not 1 <= self.d <= 65536:
            raise ValueError(f"d={self.d!r}; expected an embedding dimension between 1 and 65536.")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout={self.dropout!r}; expected a probability in [0, 1).")
        if not self.feature_noise >= 0:
            raise ValueError(f"feature_noise={self.feature_noise!r}; expected a non-negative number.")
        self.encoder_ = canonical_name(self.encoder)
        self.training_ = training_recipe(self.TRAINING, self.training)

    # -- fitting ---------------------------------------------------------------------------------

    def fit(self, ds: Dataset, split: Split | None = None) -> "JEIRT":
        """Learn the adapter and every model's vector on `split.train` (default: question split)."""
        self._check_params()
        split = split or split_by_question(ds, seed=self.random_state)
        if split.train.shape != ds.labels.shape:
            raise ValueError(f"split masks have shape {split.train.shape}; the dataset's labels have "
                             f"{ds.labels.shape}. Make the split from this dataset.")
        features = ds.features(self.encoder_, progress=self.progress)
        torch.manual_seed(self.random_state)
        self.net_ = JEIRTNet(features.shape[1], ds.n_models, self.d, self.dropout, self.feature_noise)
        self.history_: TrainHistory = train(self.net_, features, ds.labels, split.train, split.val, self.training_,
                                            seed=self.random_state, device=self.device, progress=self.progress)
        self.net_.cpu()
        self.models_ = list(ds.models)
        self.feature_dim_ = features.shape[1]
        self.split_name_ = split.name
        if split.held_out:  # their vectors were never trained: fit them now from split.onboard
            self.onboard(ds.subset(models=list(split.held_out)), split.onboard[ds.model_index(split.held_out)],
                         replace=True)
        return self

    def onboard(self, ds: Dataset, mask: np.ndarray | None = None, replace: bool = False,
                prior_scale: float | str = "auto") -> "JEIRT":
        """Fit the vectors of `ds.models` from their labels under `mask`, all else frozen.

        New names are appended; a name the model knows is refused unless `replace=True`. The prior is
        N(mean, s I) with the jointly trained vectors' mean and mean per-coordinate variance times
        `prior_scale`. "auto" picks the scale from `onboard.PRIOR_SCALES` with the largest Laplace
        evidence of the new models' answers (empirical Bayes): the trained vectors' variance, spread
        over all d coordinates, is far narrower than how far a new model's vector must move (on
        mmlu_pro at d = 256 "auto" picks 100-1000). The choice is kept in `onboard_prior_scale_`.
        """
        self._check_fitted()
        mask = ds.observed if mask is None else np.asarray(mask, dtype=bool) & ds.observed
        if mask.shape != ds.labels.shape:
            raise ValueError(f"mask has shape {mask.shape}; expected the dataset's {ds.labels.shape}.")
        empty = [m for m, row in zip(ds.models, mask) if not row.any()]
        if empty:
            raise ValueError(f"no labels to onboard model(s) {empty[:5]} from; give each some answers.")
        known = [m for m in ds.models if m in self.models_]
        if known and not replace:
            raise ValueError(f"model(s) {known[:5]} are already fitted; pass replace=True to refit them.")
        emb = self.question_embeddings(ds).astype(np.float64)
        norms = np.linalg.norm(emb, axis=1)
        trained = [i for i, m in enumerate(self.models_) if m not in ds.models]
        mean, var = prior_from_vectors(self.net_.model_vectors.detach().numpy()[trained])
        if isinstance(prior_scale, str) and prior_scale != "auto":
            raise ValueError(f"prior_scale={prior_scale!r}; expected a positive number or 'auto'.")
        scales = PRIOR_SCALES if prior_scale == "auto" else (float(prior_scale),)
        fits = {s: fit_model_vectors(emb / norms[:, None], norms, ds.labels, mask, mean, var * s,
                                     device=self.device) for s in scales}
        self.onboard_evidence_ = {s: float(fit.log_evidence.sum()) for s, fit in fits.items()}
        self.onboard_prior_scale_ = max(self.onboard_evidence_, key=self.onboard_evidence_.get)
        result = fits[self.onboard_prior_scale_]
        vectors = self.net_.model_vectors.detach().clone()
        for name, vec in zip(ds.models, torch.from_numpy(result.vectors)):
            if name in self.models_:
                vectors[self.models_.index(name)] = vec
            else:
                vectors = torch.cat([vectors, vec[None]])
                self.models_.append(name)
        self.net_.model_vectors = torch.nn.Parameter(vectors)
        self.onboard_covariances_ = dict(zip(ds.models, result.covariances))
        return self

    # -- prediction ------------------------------------------------------------------------------

    def question_features(self, questions: Questions) -> np.ndarray:
        """Frozen-encoder features (n_items, feature_dim) of a Dataset, a list of texts or an array."""
        self._check_fitted()
        if isinstance(questions, Dataset):
            feats = questions.features(self.encoder_, progress=self.progress)
        elif isinstance(questions, np.ndarray) and questions.dtype != object:
            feats = questions
        else:
            feats = embed_texts(list(questions), self.encoder_, progress=self.progress)
        if feats.ndim != 2 or feats.shape[1] != self.feature_dim_:
            raise ValueError(f"question features have shape {feats.shape}; this model was trained on "
                             f"{self.feature_dim_}-d features from {self.encoder_}.")
        return np.asarray(feats, dtype=np.float32)

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
        if models is None:
            models = questions.models if isinstance(questions, Dataset) else self.models_
        rows = self.model_index(models)
        emb = torch.from_numpy(self.question_embeddings(questions))
        return torch.sigmoid(jeirt_logits(emb, self.net_.model_vectors[rows])).numpy().T

    # -- persistence -----------------------------------------------------------------------------

    def save(self, path: str | Path) -> Path:
        """Write the weights with the config, model names and encoder id that made them, atomically."""
        self._check_fitted()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        params = self.get_params() | {"training": asdict(self.training_), "encoder": self.encoder_}
        blob = {"format": "jeirt-model", "version": __version__, "config": params,
                "models": self.models_, "feature_dim": self.feature_dim_, "split": self.split_name_,
                "history": asdict(self.history_), "state_dict": self.net_.state_dict()}
        atomic_write(path, lambda f: torch.save(blob, f))  # a kill mid-save leaves the old file whole
        return path

    @classmethod
    def load(cls, path: str | Path) -> "JEIRT":
        """Read a model written by `save`."""
        try:
            blob = torch.load(Path(path), map_location="cpu", weights_only=True)
        except Exception as err:
            raise ValueError(f"could not read a jeirt model from {path}: {err}") from err
        if not isinstance(blob, dict) or blob.get("format") != "jeirt-model":
            raise ValueError(f"{path} is not a model saved by jeirt (JEIRT.save).")
        config = dict(blob["config"])
        unknown = set(config) - set(cls._get_param_names())
        if unknown:
            raise ValueError(f"{path} holds settings this version of jeirt does not know: {sorted(unknown)}; "
                             "it was written by another version. Refit the model or use that version.")
        self = cls(**(config | {"training": TrainConfig(**config["training"])}))
        self._check_params()
        self.models_ = list(blob["models"])
        self.feature_dim_ = blob["feature_dim"]
        self.split_name_ = blob["split"]
        self.history_ = TrainHistory(**blob["history"])
        self.net_ = JEIRTNet(self.feature_dim_, len(self.models_), self.d, self.dropout, self.feature_noise)
        try:
            self.net_.load_state_dict(blob["state_dict"])
        except RuntimeError as err:
            raise ValueError(f"{path}: the weights do not fit the model its settings describe "
                             f"({err.args[0].splitlines()[0]}); the file is damaged or edited.") from None
        self.net_.eval()
        return self

    # -- helpers ---------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise NotFittedError("this JEIRT is not fitted yet; call fit(dataset) or JEIRT.load(path).")

    def model_index(self, models: Sequence[str]) -> list[int]:
        """Rows of `models` in `model_vectors_`; an unknown name raises KeyError naming it."""
        lookup = {m: i for i, m in enumerate(self.models_)}
        unknown = [m for m in models if m not in lookup]
        if unknown:
            raise KeyError(f"unknown model(s) {unknown[:5]}: this JEIRT knows {len(self.models_)} models "
                           f"(e.g. {self.models_[:3]}); add new ones with onboard().")
        return [lookup[m] for m in models]
