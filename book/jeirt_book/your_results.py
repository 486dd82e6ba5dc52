"""The "Your own results" page: a user's long CSV of results, made here from a shipped dataset.

The page itself only calls the public API (`jeirt.data.read_results_csv`, `jeirt.estimator.JEIRT`,
`jeirt.tasks.evaluation`, `jeirt.tasks.routing`); this module writes the CSVs it starts from, as a user
would have them, and hands the page the shipped question vectors so that it need not encode the texts.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from jeirt.data import Dataset

COLUMNS = ["model", "item_id", "label", "benchmark", "text"]  # a long CSV's columns (read_results_csv)


def long_table(ds: Dataset, models: list[str]) -> pd.DataFrame:
    """One row per graded (model, question) pair of `models` in `ds`: the long table a user keeps, with
    each question's benchmark and text (pairs that were not graded have no row)."""
    rows = ds.model_index(models)
    labels = ds.labels[rows]  # (n_models, n_items)
    model, item = np.nonzero(~np.isnan(labels))
    label = labels[model, item]
    return pd.DataFrame(
        {
            "model": np.asarray(models)[model],
            "item_id": ds.items["item_id"].to_numpy()[item],
            "label": label.astype(int) if np.all(label == np.round(label)) else label,  # 0/1 as written
            "benchmark": ds.items["benchmark"].to_numpy()[item],
            "text": ds.items["text"].to_numpy()[item],
        }
    )[COLUMNS]


def write_example(ds: Dataset, folder: str | Path, new_model: str) -> tuple[Path, Path]:
    """Two long CSVs in `folder` from `ds`: results.csv, every model but `new_model`, and
    new_model.csv, that model's answers alone (a model released after the fit)."""
    if new_model not in ds.models:
        raise KeyError(f"new_model={new_model!r} is not a model of {ds.name!r}; pick one of {ds.models[:5]}, ...")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    trained = [m for m in ds.models if m != new_model]
    results, new = folder / "results.csv", folder / "new_model.csv"
    long_table(ds, trained).to_csv(results, index=False)
    long_table(ds, [new_model]).to_csv(new, index=False)
    return results, new


def with_shipped_vectors(user: Dataset, source: Dataset, encoder: str) -> Dataset:
    """`user` with the `encoder` features that `source` ships for the same questions (by item_id), so
    that a fit need not encode the texts. Every question of `user` must be one of `source`'s."""
    from jeirt.encoders import canonical_name

    name = canonical_name(encoder)
    if name not in source.embeddings:
        raise KeyError(f"{source.name!r} ships no {name} features; it has {sorted(source.embeddings)}.")
    rows = pd.Index(source.items["item_id"]).get_indexer(user.items["item_id"])
    if (rows < 0).any():
        missing = user.items["item_id"].to_numpy()[rows < 0][:5].tolist()
        raise ValueError(f"{int((rows < 0).sum())} question(s) of {user.name!r} are not in {source.name!r}: {missing}")
    return replace(user, embeddings={name: source.embeddings[name][rows]})
