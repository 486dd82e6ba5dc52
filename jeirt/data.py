"""Correctness data: which LLM answered which question correctly.

One container, `Dataset`, holds the model names, an item table (`item_id, benchmark, subject, text`),
a label matrix of shape (n_models, n_items) and any precomputed question embeddings. Labels are 1/0,
soft values in [0, 1] are allowed, and NaN means "not evaluated" (never read as wrong).

Sources: a long table (model, item_id, label) as users have it (`from_long`, `read_results_csv`); the
local layout of `$JEIRT_DATA/<name>/` (`load_local`); EmbedLLM from the Hugging Face hub
(`load_embedllm`, at a pinned commit; its official split is `jeirt.splits.official_split`). Splits
live in `jeirt.splits`, simulated data in `jeirt.simulate`.

Every CSV a user gives (results, questions, item tables) is read by `read_csv_table`: cells as text,
so a model named `NA`, `None` or `1e3` keeps its name; names that are empty or padded with spaces,
repeated header columns and damaged (truncated, undecompressable) files are refused. Row numbers in
messages count data rows from 1 (the header row is not counted).
"""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
import warnings
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TypedDict

import numpy as np
import pandas as pd
from tqdm import tqdm

from jeirt import settings
from jeirt.files import atomic_write, write_json

ITEM_COLUMNS = ["item_id", "benchmark", "subject", "text"]
LONG_COLUMNS = ["model", "item_id", "label"]


# ----------------------------------------------------------------------------------------------------
# The container


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


# ----------------------------------------------------------------------------------------------------
# Reading a user's CSV: one reader for results, questions and item tables

NAME_COLUMNS = ("model", "item_id")  # cells that name things: never parsed; one Unicode spelling (NFC)


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


def column_name(header: str) -> str:
    """The column a CSV header names: NFC, without surrounding spaces, in lower case, so that `Random`,
    ` random` and `RANDOM` are all the `random` column. Every reader of a user's CSV uses it
    (`read_csv_table`)."""
    return unicodedata.normalize("NFC", str(header)).strip().lower()


_DAMAGED = (EOFError, zlib.error, zipfile.BadZipFile, OSError)  # truncated or undecompressable files


def _regular_file(path: Path) -> Path:
    """`path` if it names an existing regular file (not a folder, FIFO or device: reading one would
    hang or fail later), else ValueError saying what it is."""
    if not path.exists():
        raise ValueError(f"{path}: no such file; check the path.")
    if path.is_dir():
        raise ValueError(f"{path} is a folder; give a file.")
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file (a FIFO, socket or device); give a file.")
    return path


def _first_row(mask: np.ndarray | pd.Series) -> int:
    """The 1-based data row of the first True in `mask`."""
    return int(np.flatnonzero(np.asarray(mask))[0]) + 1


def check_names(values: pd.Series, column: str, where: str) -> list[str]:
    """The distinct names of `values` in order of first appearance, as text; missing, empty and padded
    (leading or trailing space) names are refused with the first one's data row (1-based): ` Athene-70B`
    would otherwise sit beside `Athene-70B`. Each distinct name is checked once (results repeat them)."""
    unique = pd.Series(pd.unique(values), dtype=object)
    missing = unique.isna().to_numpy()
    text = unique.where(~missing, "").astype(str)
    for bad, problem in (
        (missing, "is missing"),
        (text.str.strip().to_numpy() == "", "is empty"),
        (text.str.strip().to_numpy() != text.to_numpy(), "has spaces before or after it"),
    ):
        if bad.any():
            name = unique[bad].iloc[0]
            row = _first_row(values.isna() if pd.isna(name) else values == name)
            raise ValueError(
                f"{where}: the {column} {'' if pd.isna(name) else repr(name) + ' '}on data row "
                f"{row} {problem}; write every {column} exactly, without surrounding spaces."
            )
    return text.tolist()


def read_csv_table(
    path: str | Path,
    *,
    required: Sequence[str] = (),
    unique: Sequence[str] = (),
    numbers: Sequence[str] = (),
    names: Sequence[str] = NAME_COLUMNS,
) -> pd.DataFrame:
    """A user's CSV as a table of text cells: no NA or number parsing, so `NA`, `None`, `1e3` and ""
    stay strings; the `numbers` columns (e.g. label) are parsed as floats where every cell is one (a
    column with other cells stays text for its reader to name the row).

    Refused with a ValueError naming `path`: a file that is not a regular file, empty, damaged
    (truncated gzip, bad zip) or not UTF-8 CSV; a header with repeated, empty-after-strip or padded
    column names; missing `required` columns; NUL bytes in any cell; missing, empty or padded names in
    the `names` columns;
    repeated values in the `unique` columns (with their data rows, counted from 1).
    """
    path = _regular_file(Path(path).expanduser())
    written = [str(c) for c in _read_csv(path, header=None, nrows=1, dtype=str).iloc[0].tolist()]
    _refuse_nul_bytes(path, written)
    header = [column_name(c) for c in written]  # `Label`, ` label` and `label` are one column
    repeated = sorted({c for c in header if c and header.count(c) > 1})
    if repeated:
        spellings = [w for w, c in zip(written, header) if c == repeated[0]]
        raise ValueError(
            f"{path}: the header names column(s) {repeated} more than once (as {spellings}; headers are "
            "read without case or surrounding spaces); keep one of each."
        )
    missing = [c for c in required if c not in header]
    if missing:
        raise ValueError(f"{path} lacks column(s) {missing}; it has {header[:8]}.")
    dtype = {w: str for w in written}
    parsed = {w: np.float64 for w, c in zip(written, header) if c in numbers}
    try:  # numbers parsed by the C parser: a label column of millions of rows
        table = _read_csv(path, dtype=dtype | parsed)
    except ValueError:  # a cell that is not a number: read it as text, its reader names the row
        table = _read_csv(path, dtype=dtype)
    table.columns = header
    for column in NAME_COLUMNS:
        if column in table.columns:
            table[column] = normal_names(table[column])
    _check_cells(table, path, names, unique)
    return table


def _read_csv(path: Path, **kwargs) -> pd.DataFrame:
    """`pd.read_csv` of a user's file with every cell as written (keyword arguments go to it), its
    failures as ValueErrors naming `path` and what to do."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # a row longer than the header
            return pd.read_csv(
                path,
                keep_default_na=False,
                na_filter=False,
                index_col=False,
                encoding="utf-8-sig",
                skip_blank_lines=False,
                **kwargs,
            )  # utf-8-sig: Excel's BOM; a blank line is a row
    except pd.errors.ParserWarning:
        raise ValueError(
            f"{path} has rows with more cells than the header has columns; give every row "
            "one cell per column (quote cells that hold commas)."
        ) from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} is empty: expected a CSV with a header row.") from None
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path} is not UTF-8 text ({err.reason} at byte {err.start}); save it as UTF-8 comma-separated values."
        ) from None
    except (pd.errors.ParserError, ValueError) as err:
        raise ValueError(
            f"{path} could not be read as CSV ({str(err).splitlines()[0]}); expected UTF-8 "
            "comma-separated values with a header row."
        ) from None
    except PermissionError:
        raise ValueError(f"{path} cannot be read (permission denied).") from None
    except _DAMAGED as err:
        raise ValueError(
            f"{path} could not be read: the file is damaged or cut short ({type(err).__name__}: "
            f"{err}); restore or re-create it."
        ) from None


def _refuse_nul_bytes(path: Path, header: list[str]) -> None:
    """A ValueError where the file's text holds NUL bytes (no text: a binary or damaged file, or a name
    that prints as another), naming the first one's column and up to six data rows, read from the bytes:
    pandas' C parser before 3.1 cut a cell at its first NUL, so there the parsed cells cannot tell
    `a<NUL>b` from `a`. The text is read as pandas reads it (compression inferred from the name by pandas
    itself); rows and columns are counted by line and comma (exact unless a quoted cell spans lines or
    holds a comma). Each line is looked at once, so a file of NULs (what a crash can leave) is read in
    linear time. A damaged file is left to the parse, which names it."""
    rows: list[int] = []  # line numbers (0: the header) holding NUL bytes, at most six
    column = None  # the first NUL's column
    line, commas = 0, 0  # at the chunk's start: its line number, and the commas of that line before it
    try:
        text = pd.io.common.get_handle(path, "rb", compression="infer", is_text=False)
    except _DAMAGED:
        return
    with text:
        while len(rows) < 6 and (chunk := _read_chunk(text.handle)):
            here, counted = line, 0  # `here`: the line number of offset `counted` in the chunk
            at = chunk.find(b"\x00")
            while at >= 0 and len(rows) < 6:
                here += chunk.count(b"\n", counted, at)
                if column is None:
                    start = chunk.rfind(b"\n", 0, at) + 1
                    before = chunk.count(b",", start, at) + (commas if start == 0 else 0)
                    column = header[before] if before < len(header) else f"number {before + 1}"
                if not rows or rows[-1] != here:
                    rows.append(here)
                counted = chunk.find(b"\n", at)  # the rest of this line adds nothing: one look a line
                if counted < 0:
                    break
                at = chunk.find(b"\x00", counted)
            line += chunk.count(b"\n")
            end = chunk.rfind(b"\n")
            commas = chunk.count(b",", end + 1) + (commas if end < 0 else 0)
    if rows:
        where = "its header holds NUL bytes" if rows[0] == 0 else f"column {column!r} holds NUL bytes"
        data_rows = [r for r in rows if r > 0]
        raise ValueError(
            f"{path}: {where}{f' (data rows {data_rows})' if data_rows else ''}; is it a text CSV? "
            "Remove the NUL characters or re-export the file as UTF-8 text."
        )


def _read_chunk(stream) -> bytes:
    """The next 16 MB of `stream`, or b"" at its end or where it is damaged (the parse names that)."""
    try:
        return stream.read(1 << 24)
    except _DAMAGED:
        return b""


def _check_cells(table: pd.DataFrame, path: Path, names: Sequence[str], unique: Sequence[str]) -> None:
    """`read_csv_table`'s checks of the cells (NUL bytes were refused before the parse,
    `_refuse_nul_bytes`): the `names` columns' names well formed, no repeated value in the `unique`
    columns (rows counted from 1)."""
    for column in names:
        if column in table.columns:
            check_names(table[column], column, str(path))
    for column in unique:
        if column in table.columns:
            repeats = table[column].duplicated(keep=False).to_numpy()
            if repeats.any():
                rows = (np.flatnonzero(repeats) + 1)[:6].tolist()
                raise ValueError(
                    f"{path} repeats {column} {table[column][repeats].iloc[0]!r} (data rows {rows}); give each one row."
                )


# ----------------------------------------------------------------------------------------------------
# From a long table: what users have


DUPLICATE_POLICIES = ("error", "mean", "first")


def from_long(
    responses: pd.DataFrame, items: pd.DataFrame | None = None, *, name: str = "custom", duplicates: str = "error"
) -> Dataset:
    """Build a Dataset from a long table with columns model, item_id, label (plus item columns).

    Item columns (benchmark, subject, text) come from `items` or, failing that, from `responses`.
    `duplicates` says what to do with repeated (model, item_id) rows: "error" (default), "mean" (a
    soft label, the share correct) or "first".
    """
    missing = [c for c in LONG_COLUMNS if c not in responses.columns]
    if missing:
        raise ValueError(
            f"the results table lacks column(s) {missing}; expected at least "
            f"{LONG_COLUMNS} (one row per graded model-question pair)."
        )
    if len(responses) == 0:
        raise ValueError("the results table has no rows.")
    if duplicates not in DUPLICATE_POLICIES:
        raise ValueError(f"duplicates={duplicates!r}; expected one of {DUPLICATE_POLICIES}.")
    df = responses.reset_index(drop=True).copy()
    distinct = {}  # column -> its names in order of first appearance, each checked once
    for column in ("model", "item_id"):
        df[column] = normal_names(df[column])  # one spelling of each name (NFC)
        distinct[column] = check_names(df[column], column, "the results table")
        df[column] = df[column].astype(str)
    labels = pd.to_numeric(df["label"], errors="coerce")
    bad = labels.isna() | (labels < 0) | (labels > 1)
    if bad.any():
        first = (np.flatnonzero(bad.to_numpy()) + 1)[:5].tolist()
        raise ValueError(
            f"{int(bad.sum())} label(s) are missing, not numbers or outside [0, 1] "
            f"(data rows {first}, counted from 1; the first is {df['label'].iloc[first[0] - 1]!r}); a pair "
            "that was not evaluated must be left out, not NaN."
        )
    df["label"] = labels.astype(np.float32)
    key = ["model", "item_id"]
    dup = df.duplicated(key, keep=False)
    if dup.any():
        if duplicates == "error":
            example = df.loc[dup, key].head(3).to_dict("records")
            raise ValueError(
                f"{int(dup.sum())} rows repeat a (model, item_id) pair, e.g. {example}; "
                "pass duplicates='mean' (soft label) or 'first' to choose a policy."
            )
        agg = "mean" if duplicates == "mean" else "first"
        df = df.groupby(key, sort=False, as_index=False).agg(
            {"label": agg, **{c: "first" for c in df.columns if c not in key + ["label"]}}
        )

    if items is None:
        cols = [c for c in ("benchmark", "subject", "text") if c in df.columns]
        items = df.drop_duplicates(["item_id"] + cols)[["item_id"] + cols].copy()
        clash = items["item_id"].duplicated(keep=False).to_numpy()
        if clash.any():  # one question, two texts (or benchmarks): which one is meant?
            item = items["item_id"][clash].iloc[0]
            rows = (np.flatnonzero((df["item_id"] == item).to_numpy()) + 1)[:4].tolist()
            raise ValueError(
                f"the results table gives item_id {item!r} different {'/'.join(cols)} on data rows "
                f"{rows}; give each question one text, benchmark and subject (or an item table)."
            )
        items["benchmark"] = items.get("benchmark", "all")
        items["text"] = items.get("text", "")
    else:
        check_names(items["item_id"], "item_id", "the item table")
    items = _clean_items(items)
    unknown = sorted(pd.Index(distinct["item_id"]).difference(items["item_id"]))  # vectorised: millions of rows
    if unknown:
        raise ValueError(
            f"{len(unknown)} item_id(s) in the results are missing from the item table, e.g. {unknown[:5]}."
        )
    models = distinct["model"]
    row = pd.Index(models).get_indexer(df["model"])
    col = pd.Index(items["item_id"]).get_indexer(df["item_id"])
    matrix = np.full((len(models), len(items)), np.nan, dtype=np.float32)
    matrix[row, col] = df["label"].to_numpy()
    return Dataset(name=name, models=models, items=items, labels=matrix)


def read_results_table(path: str | Path) -> pd.DataFrame:
    """A user's long CSV of results (model, item_id, label[, benchmark, subject, text]) as a table, read
    by `read_csv_table` (names kept as written, labels as numbers)."""
    table = read_csv_table(path, required=LONG_COLUMNS, numbers=("label",), names=())  # from_long checks them
    if table.empty:
        raise ValueError(f"{path} has a header but no results; give one row per graded model-question pair.")
    return table


def read_items_csv(path: str | Path) -> pd.DataFrame:
    """A user's item table CSV (item_id, benchmark[, subject], text), each item_id once."""
    table = read_csv_table(path, required=("item_id", "text"), unique=("item_id",))
    if table.empty:
        raise ValueError(f"{path} has a header but no items; give one row per question.")
    if "benchmark" not in table.columns:
        table["benchmark"] = "all"
    return table


def read_results_csv(
    path: str | Path, items_path: str | Path | None = None, *, name: str | None = None, duplicates: str = "error"
) -> Dataset:
    """Read a user's long CSV of results (model, item_id, label[, benchmark, subject, text]), with the
    item table from `items_path` (`read_items_csv`) when given."""
    responses = read_results_table(path)
    items = read_items_csv(items_path) if items_path is not None else None
    return from_long(responses, items, name=name or Path(path).stem, duplicates=duplicates)


# ----------------------------------------------------------------------------------------------------
# Local datasets: $JEIRT_DATA/<name>/{items,responses}.csv.gz and embeddings/<encoder>.npz, with a
# checksum manifest $JEIRT_DATA/checksums.json


MANIFEST = "checksums.json"  # in the data folder: {"files": {relative path: {"size", "sha256"}}}


def local_datasets(root: Path | None = None) -> list[str]:
    """Names of the datasets present under `root` (default `$JEIRT_DATA`)."""
    root = Path(root) if root is not None else settings.data_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "responses.csv.gz").is_file())


def load_local(name: str, root: Path | None = None) -> Dataset:
    """Load `root/name` (default root `$JEIRT_DATA`) with its precomputed embeddings, checked by hash.

    Every file the folder's checksum manifest lists is checked first (`verify_files`), so a damaged or
    edited file is named before anything is computed from it.
    """
    root = Path(root) if root is not None else settings.data_dir()
    if Path(name).name != name or name in ("", ".", ".."):
        raise ValueError(
            f"dataset name {name!r} is not a folder name; give the name of a folder under "
            f"JEIRT_DATA ({root}), or a path to a results CSV."
        )
    folder = root / name
    if not (folder / "responses.csv.gz").is_file():
        raise FileNotFoundError(
            f"no dataset {name!r} under {root} (looked for {folder}/responses.csv.gz); datasets found there: "
            f"{local_datasets(root) or 'none'}. The datasets ship in the data/ folder of the jeirt "
            f"repository, not in the installed package: clone it (git clone {settings.REPO_URL}) and set "
            "JEIRT_DATA to its data/ folder, or to a folder of your own datasets."
        )
    verify_files(root, prefix=f"{name}/")
    ds = _parsed_results(folder / "responses.csv.gz", read_items_csv(folder / "items.csv.gz"), name)
    for path in sorted((folder / "embeddings").glob("*.npz")):
        ds.embeddings[path.stem] = _read_embeddings(path, ds.items)
    return ds


def _parsed_results(path: Path, items: pd.DataFrame, name: str) -> Dataset:
    """`from_long` of a local dataset's results file, kept parsed in the cache (`datasets/`): metabench's
    6.8 million rows take seconds to read and check, their label matrix milliseconds to load. The key is
    the file's SHA-256, this module's source and pandas' version. An entry that cannot be read, or is not
    of these items, is parsed again and replaced, with a warning (a cache is never an input to fix)."""
    key = hashlib.sha256(Path(__file__).read_bytes() + pd.__version__.encode() + sha256_file(path).encode())
    entry = settings.cache_dir() / "datasets" / f"{name}-{key.hexdigest()[:24]}.npz"
    if entry.is_file():
        try:
            with np.load(entry, allow_pickle=False) as npz:
                models, ids, labels = npz["models"].tolist(), npz["item_id"].tolist(), npz["labels"]
            if ids != items["item_id"].astype(str).tolist() or labels.shape != (len(models), len(ids)):
                raise ValueError("its questions are not the item table's")
            return Dataset(name=name, models=models, items=items, labels=labels)
        except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as err:
            warnings.warn(f"dataset cache entry {entry} is unreadable ({err}); parsing {path} again.", stacklevel=3)
    ds = from_long(read_results_table(path), items, name=name)
    arrays = {"models": np.array(ds.models, dtype=str), "item_id": ds.items["item_id"].to_numpy(dtype=str)}
    _write_cache(entry, lambda f: np.savez(f, **arrays, labels=ds.labels))
    for stale in entry.parent.iterdir():  # this dataset's entries of other code or files: never read again
        if stale != entry and stale.name[: -len(".npz") - 24] == f"{name}-" and stale.suffix == ".npz":
            stale.unlink(missing_ok=True)
    return ds


def _write_cache(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """`atomic_write` into the cache folder, a failure named as the environment's (JEIRT_CACHE) to fix."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, write)
    except OSError as err:
        raise OSError(
            err.errno,
            f"the cache file {path} cannot be written ({err.strerror or err}); point "
            "JEIRT_CACHE at a writable folder with free space",
            str(path),
        ) from err


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_files(root: Path | None = None, prefix: str = "", full: bool = False) -> list[str]:
    """Check the files of `root/checksums.json` (those whose path starts with `prefix`); their paths.

    Size first; the SHA-256 only when a file's size or modification time differs from when it last
    matched (remembered in the cache), or always with `full`. A folder without a manifest (your own
    datasets) is not checked. Raises ValueError naming the first bad file and how to restore it.
    """
    root = Path(root) if root is not None else settings.data_dir()
    manifest_path = root / MANIFEST
    if not manifest_path.is_file():
        return []
    restore_manifest = f"restore it with `git checkout -- {manifest_path}`"
    try:
        manifest = json.loads(manifest_path.read_text())["files"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
        raise ValueError(
            f"{manifest_path} is not a readable checksum manifest ({type(err).__name__}: {err}); {restore_manifest}."
        ) from None
    entry_ok = lambda e: (
        isinstance(e, dict)
        and isinstance(e.get("size"), int)
        and not isinstance(e["size"], bool)
        and isinstance(e.get("sha256"), str)
    )
    if not isinstance(manifest, dict) or not all(isinstance(k, str) and entry_ok(v) for k, v in manifest.items()):
        raise ValueError(
            f'{manifest_path}: \'files\' must map each relative path to {{"size": bytes, "sha256": '
            f"hex}}; it holds a {type(manifest).__name__} that does not; {restore_manifest}."
        )
    seen_path = settings.cache_dir() / "verified-data.json"
    try:
        seen = json.loads(seen_path.read_text()) if seen_path.is_file() else {}
    except ValueError:
        seen = {}  # a damaged record of past checks only costs a re-hash
    checked, changed = [], False
    for rel, want in sorted(manifest.items()):
        if not rel.startswith(prefix):
            continue
        path = root / rel
        restore = f"restore it with `git checkout -- {path}` (or a fresh clone of the repository)"
        if not path.is_file():
            raise ValueError(f"{path} is missing; {restore}.")
        stat = path.stat()
        if stat.st_size != want["size"]:
            raise ValueError(
                f"{path} has {stat.st_size} bytes where {MANIFEST} records {want['size']}: "
                f"the file is damaged or was edited; {restore}."
            )
        key, stamp = str(path.resolve()), [stat.st_size, stat.st_mtime_ns, want["sha256"]]
        if full or seen.get(key) != stamp:
            if sha256_file(path) != want["sha256"]:
                raise ValueError(
                    f"{path} does not match its SHA-256 in {manifest_path}: the file is damaged "
                    f"or was edited; {restore}."
                )
            seen[key], changed = stamp, True
        checked.append(rel)
    if changed:
        _write_cache(seen_path, lambda f: f.write(json.dumps(seen, indent=0).encode()))
    return checked


def _read_embeddings(path: Path, items: pd.DataFrame) -> np.ndarray:
    """Precomputed (n_items, dim) embeddings, refused unless item ids and text hashes match."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            ids, hashes, emb = npz["item_id"].astype(str), npz["text_sha256"].astype(str), npz["emb"]
    except KeyError as err:
        raise ValueError(
            f"{path} lacks the array {err}; expected item_id, text_sha256 and emb: re-create the embeddings."
        ) from None
    except (*_DAMAGED, ValueError) as err:
        raise ValueError(
            f"{path} could not be read: the file is damaged or cut short ({type(err).__name__}: "
            f"{err}); restore or re-create it."
        ) from None
    if len(ids) != len(items) or not np.array_equal(ids, items["item_id"].to_numpy(dtype=str)):
        raise ValueError(f"{path}: item ids differ from the item table; re-create the embeddings.")
    expected = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in items["text"]]
    stale = np.flatnonzero(hashes != np.asarray(expected))
    if len(stale):
        raise ValueError(
            f"{path}: {len(stale)} embeddings were computed from other texts than the "
            f"item table holds (e.g. item {ids[stale[0]]}); re-create the embeddings."
        )
    return emb.astype(np.float32)


# ----------------------------------------------------------------------------------------------------
# EmbedLLM (Hugging Face hub) with its official split
#
# The hub files, as the EmbedLLM authors publish them: train.csv, val.csv and test.csv hold one row per
# (model, prompt, category) with the columns of EMBEDLLM["columns"]; question_order.csv holds each prompt
# once (prompt_id, prompt); model_order.csv lists the models. `category` is a task variant
# (`mmlu_<subject>`, `gpqa_<subset>_<prompting>`, `gsm8k`, `social_iqa`, ...), not a benchmark.


class _HubDataset(TypedDict):
    """The registry entry of a dataset on the Hugging Face hub (`EMBEDLLM`)."""

    repo_id: str
    repo_type: str
    revision: str
    splits: tuple[str, ...]
    questions: str
    columns: tuple[str, ...]
    rows: dict[str, dict[str, int]]  # revision -> split -> rows of its file


EMBEDLLM: _HubDataset = {
    "repo_id": "RZ412/EmbedLLM",
    "repo_type": "dataset",
    # The hub commit loaded by default; `load_embedllm(revision=...)` or JEIRT_EMBEDLLM_REVISION
    # overrides it. The first download records each file's SHA-256 in <cache>/embedllm/lock.json and
    # later loads of the same commit insist on them.
    "revision": "266ae3e180ccb533c86afc9cfb2f5db99d171aea",
    "splits": ("train", "val", "test"),
    "questions": "question_order.csv",  # prompt_id, prompt: every prompt's text, once
    "columns": ("prompt_id", "model_id", "category_id", "label", "model_name", "category", "prompt"),
    # Rows of train/val/test.csv at a known commit (112 models x 34,056 / 3,424 / 3,469 rows), checked
    # on every load so that a truncated download is refused instead of read as a smaller dataset.
    "rows": {"266ae3e180ccb533c86afc9cfb2f5db99d171aea": {"train": 3_814_272, "val": 383_488, "test": 388_528}},
}
EMBEDLLM_FAMILIES = ("mmlu", "gpqa")  # categories `<family>_<rest>`: benchmark = family, subject = rest
EMBEDLLM_DUPLICATES = ("rows", "mean")
_LABEL_COLUMNS = [c for c in EMBEDLLM["columns"] if c != "prompt"]


def embedllm_benchmark(category: str) -> tuple[str, str]:
    """(benchmark, subject) of an EmbedLLM category: `mmlu_anatomy` -> ("mmlu", "anatomy"),
    `gpqa_main_zeroshot` -> ("gpqa", "main_zeroshot"); any other category is its own benchmark with no
    subject (`social_iqa` -> ("social_iqa", ""), `truthfulqa_mc1` -> ("truthfulqa_mc1", ""))."""
    family, _, rest = str(category).partition("_")
    if family in EMBEDLLM_FAMILIES and rest:
        return family, rest
    return str(category), ""


def _embedllm_rows(frames: Sequence[pd.DataFrame], with_texts: bool) -> pd.DataFrame:
    """EmbedLLM's train, val and test frames as one long table with their label columns (and `prompt`
    when `with_texts`) and `part` (0, 1, 2: the file), its labels checked to lie in [0, 1]."""
    need = _LABEL_COLUMNS + (["prompt"] if with_texts else [])
    parts = []
    for code, (part, frame) in enumerate(zip(EMBEDLLM["splits"], frames)):
        missing = [c for c in need if c not in frame.columns]
        if missing:
            raise ValueError(
                f"EmbedLLM {part}.csv lacks column(s) {missing}; expected {list(EMBEDLLM['columns'])}"
                + (" (or pass question_order.csv as questions)" if with_texts else "")
                + "."
            )
        if len(frame) == 0:
            raise ValueError(f"EmbedLLM {part}.csv has no rows.")
        parts.append(frame[[c for c in need]].assign(part=np.int8(code)))
    long = pd.concat(parts, ignore_index=True)
    labels = pd.to_numeric(long["label"], errors="coerce")
    bad = labels.isna() | (labels < 0) | (labels > 1)
    if bad.any():
        raise ValueError(
            f"EmbedLLM: {int(bad.sum())} label(s) are missing or outside [0, 1], e.g. row "
            f"{long.loc[bad].head(1).to_dict('records')}."
        )
    long["label"] = labels.astype(np.float32)
    long["prompt_id"] = long["prompt_id"].astype(np.int64)
    long["category"] = long["category"].astype(str)
    return long


def _embedllm_models(long: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The models (model_id, model_name), one name per id, ordered by model_id, and each row's model."""
    names = long.drop_duplicates(["model_id", "model_name"])[["model_id", "model_name"]]
    clash = names[names["model_id"].duplicated(keep=False) | names["model_name"].duplicated(keep=False)]
    if len(clash):
        raise ValueError(
            f"EmbedLLM: model_id and model_name do not match one to one, e.g. {clash.head(4).to_dict('records')}."
        )
    names = names.sort_values("model_id")
    return names, pd.Index(names["model_id"]).get_indexer(long["model_id"])


def _embedllm_items(
    long: pd.DataFrame, item_code: np.ndarray, questions: pd.DataFrame | None, duplicates: str
) -> pd.DataFrame:
    """The item table, one row per item code in order: prompt_id, category (under "mean" all of a
    prompt's, `a|b`), part, benchmark and subject (from the first category), item_id and text."""
    firsts = long.assign(code=item_code).drop_duplicates("code").sort_values("code")
    items = pd.DataFrame(
        {
            "prompt_id": firsts["prompt_id"].to_numpy(),
            "category": firsts["category"].to_numpy(),
            "part": np.asarray(EMBEDLLM["splits"])[firsts["part"].to_numpy()],
        }
    )
    family = [embedllm_benchmark(c) for c in items["category"]]
    items["benchmark"], items["subject"] = [f for f, _ in family], [s for _, s in family]
    if duplicates == "rows":
        items["item_id"] = items["prompt_id"].astype(str) + ":" + items["category"]
    else:
        items["item_id"] = items["prompt_id"].astype(str)
        every = long.assign(code=item_code).drop_duplicates(["code", "category"]).groupby("code", sort=True)
        items["category"] = every["category"].agg("|".join).to_numpy()
    items["text"] = _embedllm_texts(long if questions is None else questions, items["prompt_id"])
    return items


def embedllm_from_frames(
    train: pd.DataFrame,
    val: pd.DataFrame,
    test: pd.DataFrame,
    questions: pd.DataFrame | None = None,
    *,
    duplicates: str = "rows",
) -> Dataset:
    """EmbedLLM's split files (and `questions`, question_order.csv) as one Dataset.

    The split frames need the label columns (`prompt_id, model_id, category_id, label, model_name,
    category`); the texts come from `questions` (columns prompt_id, prompt), or from the frames' own
    `prompt` column when `questions` is None. The item table gains `prompt_id`, `category` and `part`
    (train / val / test: the file the item came from); `jeirt.splits.official_split(ds)` makes the
    official split from `part`, also after `Dataset.subset`.

    About 13% of EmbedLLM's rows repeat a (model, prompt) pair under another category (the same GPQA
    question in `gpqa_main_*` and `gpqa_diamond_*`, say), sometimes with different labels.
    `duplicates` says what an item is:

    - "rows" (default; the JE-IRT authors' choice): an item is a (prompt, category) pair, so every row
      is its own sample, with its own label, and the test score counts rows, as theirs does. Two items
      of one prompt share its text and so its features.
    - "mean": an item is a prompt; its rows are averaged into a soft label (the share correct). Its
      benchmark and subject are those of its first category, `category` lists all of them
      (`a|b`). Accuracy reads a soft label as correct when it is >= 0.5, so a prompt answered once
      right and once wrong counts as one label, scored right whenever the prediction is >= 0.5,
      where "rows" scores it as two labels, one of them wrong whatever the prediction.

    An item found in more than one split file belongs to the first of train, val, test that holds it:
    its rows in the later files are left out, with a warning that counts them, so that no test item
    was trained on. (Under "rows" an item is a (prompt, category) pair, so a prompt may still be in
    train under one category and in test under another, as in the authors' files and scores.)
    """
    if duplicates not in EMBEDLLM_DUPLICATES:
        raise ValueError(
            f"duplicates={duplicates!r}; expected one of {EMBEDLLM_DUPLICATES}: 'rows' (every row "
            "a sample, the JE-IRT authors' choice) or 'mean' (one soft label per prompt)."
        )
    long = _embedllm_rows((train, val, test), with_texts=questions is None)  # (n_rows, ...)

    names, model_row = _embedllm_models(long)  # (n_models,), (n_rows,)

    long, item_code, model_row = _embedllm_first_split(long, model_row, duplicates)
    matrix = _embedllm_labels(long, item_code, model_row, len(names), duplicates)  # (n_models, n_items)
    items = _embedllm_items(long, item_code, questions, duplicates)
    ds = Dataset(
        name="embedllm",
        models=names["model_name"].astype(str).tolist(),
        items=items[ITEM_COLUMNS + ["prompt_id", "category", "part"]],
        labels=matrix,
    )
    return ds


def _embedllm_first_split(
    long: pd.DataFrame, model_row: np.ndarray, duplicates: str
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """EmbedLLM's rows with each item's code (n_rows,): a (prompt, category) pair ("rows") or a prompt
    ("mean"), in order of appearance. An item's rows in a later split file than its first are left
    out, with a warning that counts them."""
    key = ["prompt_id", "category"] if duplicates == "rows" else ["prompt_id"]
    item_code = long.groupby(key, sort=False).ngroup().to_numpy()  # (n_rows,) in order of appearance
    first_part = pd.Series(long["part"].to_numpy()).groupby(item_code).transform("min").to_numpy()
    late = long["part"].to_numpy() != first_part
    if late.any():
        moved = pd.Series(long["part"].to_numpy()[late]).map(dict(enumerate(EMBEDLLM["splits"])))
        warnings.warn(
            f"EmbedLLM: {int(pd.unique(item_code[late]).size)} item(s) appear in more than one split "
            f"file; each belongs to the first of train, val, test, and its "
            f"{int(late.sum())} row(s) in later files ({moved.value_counts().to_dict()}) are left out.",
            UserWarning,
            stacklevel=3,
        )
        long, item_code, model_row = long[~late], item_code[~late], model_row[~late]
    return long, item_code, model_row


def _embedllm_labels(
    long: pd.DataFrame, item_code: np.ndarray, model_row: np.ndarray, n_models: int, duplicates: str
) -> np.ndarray:
    """The label matrix (n_models, n_items): each (model, item)'s rows averaged (a soft label where
    they differ), NaN where none; under "rows" a repeated (model, prompt, category) gets a warning."""
    n_items = int(item_code.max()) + 1
    cell = model_row.astype(np.int64) * n_items + item_code  # (n_rows,) one number per (model, item)
    repeats = pd.Series(cell).duplicated(keep=False).to_numpy()
    if duplicates == "rows" and repeats.any():
        warnings.warn(
            f"EmbedLLM: {int(repeats.sum())} rows repeat a (model, prompt, category) triple; "
            "they are averaged into one soft label each.",
            UserWarning,
            stacklevel=3,
        )
    sums = np.bincount(cell, weights=long["label"].to_numpy(np.float64), minlength=n_models * n_items)
    counts = np.bincount(cell, minlength=n_models * n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / counts, np.nan).reshape(n_models, n_items)


def _embedllm_texts(source: pd.DataFrame, prompt_ids: pd.Series) -> np.ndarray:
    """The text of each prompt id, from a frame with prompt_id and prompt; an id without one is an error."""
    missing = [c for c in ("prompt_id", "prompt") if c not in source.columns]
    if missing:
        raise ValueError(f"EmbedLLM question_order.csv lacks column(s) {missing}; expected prompt_id, prompt.")
    table = pd.Series(source["prompt"].to_numpy(), index=source["prompt_id"].astype(np.int64).to_numpy())
    found = table[~table.index.duplicated()].reindex(prompt_ids.to_numpy())
    if found.isna().any():
        absent = prompt_ids[found.isna().to_numpy()].head(5).tolist()
        raise ValueError(
            f"EmbedLLM: {int(found.isna().sum())} prompt id(s) have no text in question_order.csv, "
            f"e.g. {absent}; the files come from different revisions: delete the cache folder "
            "and download them again."
        )
    return found.astype(str).to_numpy()


def load_embedllm(cache: Path | None = None, *, revision: str | None = None, duplicates: str = "rows") -> Dataset:
    """Download (once) and load EmbedLLM (its official split: `jeirt.splits.official_split`); offline it
    fails at once.

    `revision`: a hub commit, default `$JEIRT_EMBEDLLM_REVISION`, else the pinned `EMBEDLLM["revision"]`.
    Each split file's row count is checked against the counts registered for that commit, so a
    truncated download is refused. Labels are read without the prompt text (`usecols`), and each text
    once, from question_order.csv. `duplicates`: see `embedllm_from_frames`.
    """
    if duplicates not in EMBEDLLM_DUPLICATES:  # before any download
        raise ValueError(f"duplicates={duplicates!r}; expected one of {EMBEDLLM_DUPLICATES}.")
    try:
        hf_hub_download = settings.import_quietly("huggingface_hub", "hf_hub_download")
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("EmbedLLM needs huggingface_hub: pip install 'jeirt[encoders]'.") from err
    revision = revision or os.environ.get("JEIRT_EMBEDLLM_REVISION") or EMBEDLLM["revision"]
    folder = (Path(cache) if cache else settings.cache_dir()) / "embedllm"
    lock_path = folder / "lock.json"
    lock = json.loads(lock_path.read_text()) if lock_path.is_file() else {}
    files = [f"{part}.csv" for part in EMBEDLLM["splits"]] + [EMBEDLLM["questions"]]
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")  # read now, not at import
    try:
        paths = {
            f: Path(
                hf_hub_download(
                    EMBEDLLM["repo_id"],
                    f,
                    repo_type=EMBEDLLM["repo_type"],
                    revision=revision,
                    cache_dir=folder / "hub",
                    etag_timeout=10,
                    local_files_only=offline,
                )
            )
            for f in tqdm(files, desc="EmbedLLM files", unit="file", disable=len(files) < 2)
        }
    except Exception as err:
        raise ConnectionError(
            f"could not fetch EmbedLLM ({EMBEDLLM['repo_id']} at {revision}) from the Hugging Face hub: {err}. "
            "Without network access use a local dataset instead: set JEIRT_DATA to a folder of datasets "
            "(e.g. JEIRT_DATA=../shared/data) and load 'mmlu_pro', 'zeroeval' or 'metabench'."
        ) from err
    digests = {f: sha256_file(p) for f, p in paths.items()}
    if lock.get("revision") == revision and any(lock.get("sha256", {}).get(f, d) != d for f, d in digests.items()):
        raise ValueError(
            f"EmbedLLM files at revision {revision} differ from the checksums recorded in "
            f"{lock_path}; delete {folder} to download them again."
        )
    frames = {}
    for part in EMBEDLLM["splits"]:
        frames[part] = _read_embedllm_labels(paths[f"{part}.csv"], part, revision, folder)
    questions = pd.read_csv(
        paths[EMBEDLLM["questions"]], usecols=["prompt_id", "prompt"], dtype={"prompt": str}, keep_default_na=False
    )
    folder.mkdir(parents=True, exist_ok=True)
    write_json(lock_path, {"revision": revision, "sha256": digests}, indent=1)
    return embedllm_from_frames(frames["train"], frames["val"], frames["test"], questions, duplicates=duplicates)


def _read_embedllm_labels(path: Path, part: str, revision: str, folder: Path) -> pd.DataFrame:
    """One split file without its prompt text, its row count checked against the registered one."""
    try:
        # Names as written (a model called "NA" or "None" stays one); only an empty number cell is missing.
        frame = pd.read_csv(
            path,
            usecols=_LABEL_COLUMNS,
            dtype={"model_name": str, "category": str},
            keep_default_na=False,
            na_values={c: [""] for c in ("prompt_id", "model_id", "category_id", "label")},
        )
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(
            f"EmbedLLM {part}.csv ({path}) could not be read ({err}): the download is damaged or "
            f"not EmbedLLM's; delete {folder} to download it again."
        ) from err
    expected = EMBEDLLM["rows"].get(revision, {}).get(part)
    if expected is not None and len(frame) != expected:
        raise ValueError(
            f"EmbedLLM {part}.csv has {len(frame):,} rows where revision {revision} has "
            f"{expected:,}: the download is truncated or damaged; delete {folder} to download it again."
        )
    return frame


def load_dataset(name: str) -> Dataset:
    """A dataset by name: 'embedllm' (hub), a folder under `$JEIRT_DATA`, or a path to a results CSV."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"dataset={name!r}; expected a dataset name (see `jeirt data`) or a results CSV.")
    if name.lower() == "embedllm":
        return load_embedllm()
    if name.endswith(".csv") or name.endswith(".csv.gz"):
        return read_results_csv(name)
    return load_local(name)
