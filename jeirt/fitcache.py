"""A content-addressed cache of fitted models: the same fit, asked for twice, is trained once.

`fit_cached(estimator, ds, split)` returns `estimator.fit(ds, split)`, or the identical fitted
estimator saved by an earlier call with the same inputs. The key is a SHA-256 of everything the fit
depends on:

    data     the dataset's name, models, item table, labels and precomputed embeddings
    split    its name, masks, held-out models and onboarding mask
    config   the estimator's class and constructor parameters (`get_params`; `progress` aside)
    code     the source of the whole `jeirt` package (the book's page code, `jeirt_book`, is not part of
             it), the versions of jeirt, torch, numpy and scikit-learn, and the default device

so a change to any of them (a new training recipe, another split, an edited trainer) is a different
key and a fresh fit; stale entries are never read. Entries are whole pickled estimators (every
learned attribute, training history included), written atomically under `JEIRT_FIT_CACHE` (default
`JEIRT_CACHE`/fits; old entries can be deleted at any time, they are only ever refitted); they
are this machine's own files, read back with `torch.load(weights_only=False)`, so do not point the
cache at files from elsewhere. An entry that cannot be read is refitted and replaced, with a warning.
`fit_many` runs independent fits in worker processes, one per core, each through the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import sklearn
import torch
from sklearn.base import BaseEstimator

from jeirt import settings
from jeirt._version import __version__
from jeirt.data.dataset import Dataset
from jeirt.files import atomic_write
from jeirt.parallel import side_by_side
from jeirt.splits import Split

if TYPE_CHECKING:
    from jeirt.estimator import Estimator

E = TypeVar("E", bound="Estimator")
_CORE = Path(__file__).resolve().parent  # the jeirt package


def code_version() -> str:
    """SHA-256 of the `jeirt` package's source (all of it) and the library versions it runs on."""
    digest = hashlib.sha256()
    for path in sorted(_CORE.rglob("*.py")):
        rel = path.relative_to(_CORE)
        digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    versions = [
        __version__,
        torch.__version__,
        np.__version__,
        sklearn.__version__,
        str(settings.default_device()),
    ]
    digest.update(" ".join(versions).encode())
    return digest.hexdigest()


def _update_array(digest, array: np.ndarray | None) -> None:
    if array is None:
        digest.update(b"none")
        return
    array = np.ascontiguousarray(array)
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(array.tobytes())


def data_key(ds: Dataset) -> str:
    """SHA-256 of a dataset's content: name, models, item table, labels, embeddings."""
    digest = hashlib.sha256()
    digest.update(json.dumps([ds.name, list(ds.models)]).encode())
    for column in ds.items.columns:
        digest.update(json.dumps([str(column), ds.items[column].astype(str).tolist()]).encode())
    _update_array(digest, ds.labels)
    for encoder in sorted(ds.embeddings):
        digest.update(encoder.encode())
        _update_array(digest, ds.embeddings[encoder])
    return digest.hexdigest()


def split_key(split: Split) -> str:
    """SHA-256 of a split: its name, masks, held-out models and onboarding mask."""
    digest = hashlib.sha256()
    digest.update(json.dumps([split.name, list(split.held_out)]).encode())
    for mask in (split.train, split.val, split.test, split.onboard):
        _update_array(digest, mask)
    return digest.hexdigest()


def config_key(estimator: BaseEstimator) -> str:
    """SHA-256 of the estimator's class and constructor parameters (`progress` only shows bars)."""
    params = {k: v for k, v in estimator.get_params(deep=False).items() if k != "progress"}
    kind = f"{type(estimator).__module__}.{type(estimator).__qualname__}"
    text = json.dumps([kind, params], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def default_folder() -> Path:
    """Where fitted models are kept: `$JEIRT_FIT_CACHE`, else `fits/` in the `JEIRT_CACHE` folder."""
    chosen = os.environ.get("JEIRT_FIT_CACHE")
    return Path(chosen).expanduser() if chosen else settings.cache_dir() / "fits"


def fit_key(estimator: BaseEstimator, ds: Dataset, split: Split) -> str:
    """The cache key of `estimator.fit(ds, split)`: data, split, config and code version together."""
    parts = [data_key(ds), split_key(split), config_key(estimator), code_version()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def fit_cached(estimator: E, ds: Dataset, split: Split, folder: str | Path | None = None) -> E:
    """`estimator.fit(ds, split)`, from the cache when the same fit was made before.

    On a hit the saved estimator is returned (a new object, `estimator` is left unfitted); on a miss
    `estimator` is fitted, saved, and returned. `folder` defaults to `default_folder()`.
    """
    if not hasattr(estimator, "get_params") or not hasattr(estimator, "fit"):
        raise TypeError(f"{type(estimator).__name__} is not a scikit-learn-style estimator (get_params, fit).")
    folder = Path(folder) if folder is not None else default_folder()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{fit_key(estimator, ds, split)}.pt"
    if path.is_file():
        try:
            cached = torch.load(path, weights_only=False)
        except Exception as err:  # a damaged entry: refit below and replace it
            warnings.warn(
                f"fit cache entry {path} could not be read ({type(err).__name__}: {err}); refitting.", stacklevel=2
            )
        else:
            if type(cached) is type(estimator):
                return cached
            warnings.warn(
                f"fit cache entry {path} holds a {type(cached).__name__}, not a {type(estimator).__name__}; refitting.",
                stacklevel=2,
            )
    estimator.fit(ds, split)
    atomic_write(path, lambda f: torch.save(estimator, f))
    return estimator


def fit_many(
    estimators: Sequence[E],
    ds: Dataset | Sequence[Dataset],
    splits: Sequence[Split],
    n_jobs: int | None = None,
    folder: str | Path | None = None,
) -> list[E]:
    """`fit_cached(estimators[i], ds, splits[i])` for every i, independent fits side by side.

    `ds` is one dataset for every fit, or one per estimator (fits on different labels of the same
    questions, say). `n_jobs` worker processes (default: `jeirt.settings.workers()`) run the fits,
    one thread each; the fitted estimators come back in order. With one job, or one fit, everything
    runs in this process. Estimators that are not scikit-learn style (no `get_params`) cannot be
    keyed: they are fitted here, one after the other, and not cached.
    """
    if len(estimators) != len(splits):
        raise ValueError(f"{len(estimators)} estimators and {len(splits)} splits; give one split per estimator.")
    datasets = [ds] * len(estimators) if isinstance(ds, Dataset) else list(ds)
    if len(datasets) != len(estimators):
        raise ValueError(
            f"{len(estimators)} estimators and {len(datasets)} datasets; give one dataset, or one per estimator."
        )
    jobs = settings.workers() if n_jobs is None else int(n_jobs)
    if jobs < 1:
        raise ValueError(f"n_jobs={n_jobs}; expected a positive number of worker processes (or None).")
    if not all(hasattr(est, "get_params") for est in estimators):
        return [est.fit(data, split) for est, data, split in zip(estimators, datasets, splits)]
    # Chosen here, not in the workers: joblib keeps its worker processes between calls, and they would
    # still see the environment ($JEIRT_FIT_CACHE) of the call that started them.
    folder = Path(folder) if folder is not None else default_folder()
    return side_by_side(fit_cached, list(zip(estimators, datasets, splits, [folder] * len(estimators))), n_jobs=jobs)
