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
from jeirt.files import InputRefused, check_input

LONG_COLUMNS = ["model", "item_id", "label"]
# The file names a results CSV may have: plain or compressed as pandas reads them (`load_dataset` reads a
# name ending so as a file, any other as a dataset's name).
CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.zip", ".csv.bz2", ".csv.xz")


NAME_COLUMNS = ("model", "item_id")  # cells that name things: never parsed; one Unicode spelling (NFC)


def column_name(header: str) -> str:
    """The column a CSV header names: NFC, without surrounding spaces, in lower case, so that `Random`,
    ` random` and `RANDOM` are all the `random` column. Every reader of a user's CSV uses it
    (`read_csv_table`)."""
    return unicodedata.normalize("NFC", str(header)).strip().lower()


_DAMAGED = (EOFError, zlib.error, zipfile.BadZipFile, OSError)  # truncated or undecompressable files


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
    try:
        path = check_input(path)
    except InputRefused as err:
        raise ValueError(str(err)) from None
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
        raise ValueError(
            f"{path} lacks column(s) {missing}; it has {header[:8]}. Add them to the header row, or rename the column that holds them."
        )
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


class RepeatedPairs(ValueError):
    """A results table that gives one (model, item_id) pair more than once, under `duplicates="error"`;
    `rows` are the data rows (from 1) of the first pair repeated, `count` how many rows repeat one."""

    def __init__(self, count: int, pair: dict, rows: list[int]):
        self.count, self.pair, self.rows = count, pair, rows
        super().__init__(
            f"{count} rows repeat a (model, item_id) pair, e.g. {pair} on data rows {rows}; pass "
            "duplicates='mean' (a soft label, the share right) or 'first' to choose a policy."
        )


def from_long(
    responses: pd.DataFrame, items: pd.DataFrame | None = None, *, name: str = "custom", duplicates: str = "error"
) -> Dataset:
    """Build a Dataset from a long table with columns model, item_id, label (plus item columns).

    Item columns (benchmark, subject, text) come from `items` or, failing that, from `responses`.
    `duplicates` says what to do with repeated (model, item_id) rows: "error" (default, `RepeatedPairs`),
    "mean" (a soft label, the share correct) or "first".
    """
    if not isinstance(responses, pd.DataFrame):
        raise TypeError(
            f"from_long takes the results as a pandas DataFrame (responses), not a {type(responses).__name__}; "
            "a Dataset is already built."
        )
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
    df["label"] = _labels(df["label"])
    df = _one_row_a_pair(df, duplicates)
    items = _item_table(df, items)
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


def _labels(cells: pd.Series) -> pd.Series:
    """The label column as float32 numbers in [0, 1]; a cell missing, not a number or outside is refused
    with its data row."""
    labels = pd.to_numeric(cells, errors="coerce")
    bad = labels.isna() | (labels < 0) | (labels > 1)
    if bad.any():
        first = (np.flatnonzero(bad.to_numpy()) + 1)[:5].tolist()
        raise ValueError(
            f"{int(bad.sum())} label(s) are missing, not numbers or outside [0, 1] "
            f"(data rows {first}, counted from 1; the first is {cells.iloc[first[0] - 1]!r}); a pair "
            "that was not evaluated must be left out, not NaN."
        )
    return labels.astype(np.float32)


def _one_row_a_pair(df: pd.DataFrame, duplicates: str) -> pd.DataFrame:
    """`df` with each (model, item_id) pair once: repeated pairs refused (`RepeatedPairs`), averaged or
    the first kept, as `duplicates` says."""
    key = ["model", "item_id"]
    dup = df.duplicated(key, keep=False)
    if not dup.any():
        return df
    if duplicates == "error":
        first = df.loc[dup, key].iloc[0]
        same = (df["model"] == first["model"]) & (df["item_id"] == first["item_id"])
        raise RepeatedPairs(int(dup.sum()), first.to_dict(), (np.flatnonzero(same.to_numpy()) + 1)[:6].tolist())
    agg = "mean" if duplicates == "mean" else "first"
    return df.groupby(key, sort=False, as_index=False).agg(
        {"label": agg, **{c: "first" for c in df.columns if c not in key + ["label"]}}
    )


def _item_table(df: pd.DataFrame, items: pd.DataFrame | None) -> pd.DataFrame:
    """The questions: `items` (its names checked), or the results' own item columns (benchmark,
    subject, text), each question once with one text."""
    if items is not None:
        check_names(items["item_id"], "item_id", "the item table")
        return _clean_items(items)
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
    return _clean_items(items)


def with_validation(
    results: pd.DataFrame,
    validation: pd.DataFrame,
    items: pd.DataFrame | None = None,
    *,
    name: str = "custom",
    duplicates: str = "error",
    where: str = "the validation table",
) -> tuple[Dataset, np.ndarray]:
    """New LLMs' answers to fit (`results`) and answers of the same LLMs held out of the fit (`validation`,
    which choose `JEIRT.onboard`'s prior width: its `val_mask`), as one Dataset and the (models, items)
    mask of the held-out answers. The validation table is judged on its own (`from_long`: errors name
    `where` and its own data rows), every LLM of it must have answers in `results`, and no answer may be
    in both (an answer is fitted or held out, not both)."""
    try:
        from_long(validation, items, name=name, duplicates=duplicates)
    except RepeatedPairs:
        raise
    except (ValueError, KeyError) as err:
        raise ValueError(f"{where}: {err.args[0] if err.args else err}") from err
    held = validation.assign(**{c: normal_names(validation[c]).astype(str) for c in ("model", "item_id")})
    fitted = results.assign(**{c: normal_names(results[c]).astype(str) for c in ("model", "item_id")})
    strangers = sorted(set(held["model"]) - set(fitted["model"]))
    if strangers:
        raise ValueError(
            f"{where}: LLM(s) {strangers[:5]} have no answers to fit (in the results); validation answers "
            "choose the prior of LLMs being onboarded."
        )
    pairs = ["model", "item_id"]
    both = held[pairs].reset_index().merge(fitted[pairs].drop_duplicates(), on=pairs)
    if len(both):
        rows = (both["index"].to_numpy() + 1)[:5].tolist()
        raise ValueError(
            f"{where}: {len(both)} answer(s) are also in the results (data rows {rows}, e.g. "
            f"{both[pairs].head(2).to_dict('records')}); an answer is fitted or held out, not both."
        )
    ds = from_long(pd.concat([fitted, held], ignore_index=True), items, name=name, duplicates=duplicates)
    val_mask = np.zeros(ds.labels.shape, dtype=bool)
    columns = pd.Index(ds.items["item_id"]).get_indexer(held["item_id"])
    val_mask[ds.model_index(held["model"]), columns] = True
    return ds, val_mask


def read_results_table(path: str | Path) -> pd.DataFrame:
    """A user's long CSV of results (model, item_id, label[, benchmark, subject, text]) as a table, read
    by `read_csv_table` (names kept as written, labels as numbers)."""
    table = read_csv_table(path, required=LONG_COLUMNS, numbers=("label",), names=())  # from_long checks them
    if table.empty:
        raise ValueError(f"{path} has a header but no results; give one row per graded model-question pair.")
    return table


def read_questions_csv(path: str | Path) -> pd.DataFrame:
    """A user's questions CSV (text, optionally item_id and benchmark), read by `read_csv_table`: at least
    one row, every text given (an empty one would be placed where no question is), item_ids each once."""
    table = read_csv_table(path, required=("text",), unique=("item_id",))
    if table.empty:
        raise ValueError(f"{path} has a header but no questions; add one row per question.")
    empty = (table["text"].str.strip() == "").to_numpy()
    if empty.any():
        raise ValueError(
            f"{path} has {int(empty.sum())} empty text cell(s) (first on data row "
            f"{int(np.flatnonzero(empty)[0]) + 1}); give every question its text."
        )
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
