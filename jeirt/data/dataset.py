"""The container of correctness data: which LLM answered which question correctly.

`Dataset` holds the model names, an item table (`item_id, benchmark, subject, text`), a label matrix of
shape (n_models, n_items) and any precomputed question embeddings. Labels are 1/0, soft values in
[0, 1] are allowed, and NaN means "not evaluated" (never read as wrong). A name (a model's, an item's)
has one spelling, Unicode NFC (`normal_name`), wherever it is read or looked up (`name_positions`).
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

ITEM_COLUMNS = ["item_id", "benchmark", "subject", "text"]


@dataclass
class Dataset:
    """Models x items correctness labels with the item table and any precomputed embeddings."""

    name: str
    models: list[str]  # (n_models,)
    items: pd.DataFrame  # (n_items, 4): item_id (str), benchmark, subject, text
    labels: np.ndarray  # (n_models, n_items) float32 in [0, 1]; NaN = not evaluated
    embeddings: dict[str, np.ndarray] = field(default_factory=dict)  # encoder -> (n_items, dim)

    def __post_init__(self) -> None:
        self.models = [str(m) for m in self.models]
        self.items = _clean_items(self.items)
        self.labels = np.asarray(self.labels, dtype=np.float32)
        n_models, n_items = len(self.models), len(self.items)
        if self.labels.shape != (n_models, n_items):
            raise ValueError(
                f"labels has shape {self.labels.shape}; expected (n_models, n_items) = ({n_models}, {n_items})."
            )
        if n_models == 0 or n_items == 0:
            raise ValueError(f"dataset {self.name!r} is empty: {n_models} models, {n_items} items.")
        _check_unique(self.models, "model names")
        _check_unique(self.items["item_id"], "item_id")
        observed = self.labels[~np.isnan(self.labels)]
        if observed.size and (observed.min() < 0 or observed.max() > 1):
            raise ValueError(
                "labels must lie in [0, 1] (NaN = not evaluated); found values in "
                f"[{observed.min()}, {observed.max()}]."
            )
        for encoder, emb in self.embeddings.items():
            if emb.ndim != 2 or emb.shape[0] != n_items:
                raise ValueError(f"embeddings[{encoder!r}] has shape {emb.shape}; expected ({n_items}, dim).")

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def benchmarks(self) -> list[str]:
        """Benchmark names in order of first appearance."""
        return list(pd.unique(self.items["benchmark"]))

    @property
    def observed(self) -> np.ndarray:
        """(n_models, n_items) bool: which (model, item) pairs were evaluated."""
        return ~np.isnan(self.labels)

    def features(self, encoder: str = "all-MiniLM-L6-v2", progress: bool = True) -> np.ndarray:
        """(n_items, dim) question features: the precomputed ones when present, else encoded (cached)."""
        from jeirt.encoders import canonical_name, embed_texts

        name = canonical_name(encoder)
        if name in self.embeddings:
            return self.embeddings[name]
        blank = (self.items["text"].str.strip() == "").to_numpy()
        if blank.any():  # encoding "" would place every such question at one point
            raise ValueError(
                f"dataset {self.name!r}: {int(blank.sum())} of {self.n_items} questions have no text "
                f"and no precomputed {name} features (e.g. item_id "
                f"{self.items['item_id'].iloc[int(np.flatnonzero(blank)[0])]!r}), so they cannot be "
                "encoded; add a 'text' column, an item table with the texts, or precomputed embeddings."
            )
        return embed_texts(self.items["text"].tolist(), name, progress=progress)

    def model_index(self, models: str | Sequence[str]) -> np.ndarray:
        """Row numbers of `models` (`name_positions`); an unknown name raises KeyError naming it."""
        return name_positions(models, self.models, f"dataset {self.name!r} has no such model")

    def subset(
        self, models: Sequence[str] | np.ndarray | None = None, items: Sequence[str] | np.ndarray | None = None
    ) -> Dataset:
        """A copy restricted to some models and items (names, integer positions or boolean masks)."""
        rows = self._positions(models, self.n_models, self.model_index)
        cols = self._positions(items, self.n_items, self._item_index)
        return Dataset(
            name=self.name,
            models=[self.models[i] for i in rows],
            items=self.items.iloc[cols].reset_index(drop=True),
            labels=self.labels[np.ix_(rows, cols)],
            embeddings={k: v[cols] for k, v in self.embeddings.items()},
        )

    def accuracy(self, by: str | None = None, mask: np.ndarray | None = None) -> pd.DataFrame | pd.Series:
        """Each model's mean label over the items it was evaluated on (and `mask` selects, e.g. a
        split's training part), overall or per `by` column; NaN where a model has none."""
        labels = self.labels if mask is None else np.where(mask, self.labels, np.nan)
        with warnings.catch_warnings():  # a model with no label in a group gets NaN, not a warning
            warnings.simplefilter("ignore", RuntimeWarning)
            if by is None:
                return pd.Series(np.nanmean(labels, axis=1), index=self.models, name="accuracy")
            groups = self.items.groupby(by, sort=False).indices.items()
            return pd.DataFrame({g: np.nanmean(labels[:, idx], axis=1) for g, idx in groups}, index=self.models)

    def describe(self) -> pd.DataFrame:
        """One row per benchmark: items, models evaluated, labels, density and mean accuracy."""
        rows = []
        for bench, idx in self.items.groupby("benchmark", sort=False).indices.items():
            block = self.labels[:, idx]
            seen = ~np.isnan(block)
            rows.append(
                {
                    "benchmark": bench,
                    "items": len(idx),
                    "models": int(seen.any(axis=1).sum()),
                    "labels": int(seen.sum()),
                    "density": seen.mean(),
                    "accuracy": np.nanmean(block),
                }
            )
        table = pd.DataFrame(rows)
        seen = self.observed
        total = {
            "benchmark": "all",
            "items": self.n_items,
            "models": int(seen.any(axis=1).sum()),
            "labels": int(seen.sum()),
            "density": seen.mean(),
            "accuracy": np.nanmean(self.labels),
        }
        return pd.concat([table, pd.DataFrame([total])], ignore_index=True)

    def to_long(self) -> pd.DataFrame:
        """The observed labels as a long table (model, item_id, label)."""
        rows, cols = np.nonzero(self.observed)
        return pd.DataFrame(
            {
                "model": np.asarray(self.models, dtype=object)[rows],
                "item_id": self.items["item_id"].to_numpy()[cols],
                "label": self.labels[rows, cols],
            }
        )

    def _item_index(self, item_ids: Sequence[str]) -> np.ndarray:
        lookup = {v: i for i, v in enumerate(self.items["item_id"])}
        unknown = [i for i in item_ids if str(i) not in lookup]
        if unknown:
            raise KeyError(f"unknown item_id(s) {unknown[:5]} in dataset {self.name!r}.")
        return np.array([lookup[str(i)] for i in item_ids], dtype=np.int64)

    @staticmethod
    def _positions(which, size: int, by_name) -> np.ndarray:
        if which is None:
            return np.arange(size)
        which = np.asarray(which)
        if which.dtype == bool:
            if which.shape != (size,):
                raise ValueError(f"a boolean selection must have shape ({size},), not {which.shape}.")
            return np.flatnonzero(which)
        if np.issubdtype(which.dtype, np.integer):
            return which.astype(np.int64)
        return by_name(list(which))


def _clean_items(items: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("item_id", "benchmark", "text") if c not in items.columns]
    if missing:
        raise ValueError(f"the item table lacks column(s) {missing}; expected {ITEM_COLUMNS}.")
    items = items.reset_index(drop=True).copy()
    if "subject" not in items.columns:
        items["subject"] = ""
    items["item_id"] = items["item_id"].astype(str)
    items["benchmark"] = items["benchmark"].fillna("unknown").astype(str)
    items["subject"] = items["subject"].fillna("").astype(str)
    items["text"] = items["text"].fillna("").astype(str)
    return items[ITEM_COLUMNS + [c for c in items.columns if c not in ITEM_COLUMNS]]


def _check_unique(values, what: str) -> None:
    values = pd.Series(list(values))
    dup = values[values.duplicated()].unique()
    if len(dup):
        raise ValueError(f"{what} must be unique; repeated: {list(dup[:5])}.")


def normal_name(name: str) -> str:
    """One spelling of a model name or item id: Unicode NFC, so that `Café` typed as e + combining
    accent (NFD, as macOS file names and some exports write it) is the same model as `Café`. Spaces
    are not removed: a padded name is refused where it is read (`check_names`)."""
    return unicodedata.normalize("NFC", name)


def normal_names(values: pd.Series) -> pd.Series:
    """`normal_name` of every text cell (each distinct value once: results repeat their names); other
    cells (missing, numbers) as they are, for their reader to name."""
    spelling = {v: normal_name(v) for v in pd.unique(values) if isinstance(v, str)}
    changed = {v: n for v, n in spelling.items() if n != v}
    return values.replace(changed) if changed else values


def name_positions(names: str | Sequence[str], known: Sequence[str], what: str) -> np.ndarray:
    """Positions (int64) of `names` among `known`, each looked up in its one spelling (`normal_name`):
    the model index of a Dataset, a JEIRT and a baseline. An unknown name raises a KeyError naming it,
    with `what` (whose names `known` are, and what to do) and a few known ones."""
    lookup = {m: i for i, m in enumerate(known)}
    names = [names] if isinstance(names, str) else list(names)
    names = [normal_name(m) if isinstance(m, str) else m for m in names]
    unknown = [m for m in names if m not in lookup]
    if unknown:
        raise KeyError(f"unknown model(s) {unknown[:5]}: {what} (it knows {len(known)}, e.g. {list(known)[:3]}).")
    return np.array([lookup[m] for m in names], dtype=np.int64)
