"""What every baseline shares: the split check, the labels it may learn from, model lookup and
scikit-learn's parameter protocol (`BaseEstimator`: get_params, set_params, clone)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from jeirt.data.dataset import Dataset, name_positions
from jeirt.splits import Split


# Shared helpers
def _check_split(ds: Dataset, split: Split) -> None:
    """Refuse a split that was not made from `ds`."""
    if split.train.shape != ds.labels.shape:
        raise ValueError(
            f"split masks have shape {split.train.shape}; the dataset's labels have "
            f"{ds.labels.shape}. Make the split from this dataset."
        )


def _history_mask(ds: Dataset, split: Split) -> np.ndarray:
    """The labels a non-neural baseline may learn from: train, plus held-out models' onboarding labels."""
    mask = split.train & ds.observed
    if split.onboard is not None:
        mask = mask | (split.onboard & ds.observed)
    return mask


def _model_rows(known: Sequence[str], models: Sequence[str]) -> np.ndarray:
    """Positions of `models` among the fitted `known` names (`jeirt.data.name_positions`)."""
    return name_positions(models, known, "this estimator was not fitted on it; refit it on a dataset that has it")


def _training_view(ds: Dataset, split: Split) -> Dataset:
    """`ds` with every label a baseline may not learn from (see `_history_mask`) set to NaN."""
    mask = _history_mask(ds, split)
    if not mask.any():
        raise ValueError("the split's training part selects no labels; check the split.")
    return dataclasses.replace(ds, labels=np.where(mask, ds.labels, np.nan))


class Baseline(BaseEstimator):
    """scikit-learn's parameter protocol for the dataclass baselines, plus the "not fitted" check."""

    def _check_fitted(self) -> None:
        if not hasattr(self, "models_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(dataset, split).")
