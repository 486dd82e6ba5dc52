"""Reading a user's CSV: one reader for results, questions and item tables, and a `Dataset` from a
long table (model, item_id, label) as users have it (`from_long`, `read_results_csv`).

Every CSV a user gives (results, questions, item tables) is read by `read_csv_table`: cells as text,
so a model named `NA`, `None` or `1e3` keeps its name; names that are empty or padded with spaces,
repeated header columns and damaged (truncated, undecompressable) files are refused. Row numbers in
messages count data rows from 1 (the header row is not counted).
"""

from __future__ import annotations

import unicodedata
import warnings
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from jeirt.data.dataset import Dataset, _clean_items, normal_names

LONG_COLUMNS = ["model", "item_id", "label"]


NAME_COLUMNS = ("model", "item_id")  # cells that name things: never parsed; one Unicode spelling (NFC)


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
