"""What the command handlers share: the options many commands take (each with its help text), loading a
model or a dataset with its failures as the command line's errors, printing a summary, and writing
files (each noted for the Ctrl-C message, `jeirt.interrupts`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from jeirt.cli.checks import Verb
from jeirt.cli.errors import DataError, EnvironmentFailure, ModelError, UsageError
from jeirt.files import finite_json, write_json, write_text

if TYPE_CHECKING:  # pandas, torch and the library are imported where a command uses them, so that
    import pandas as pd  # `jeirt --help` and a usage error answer at once (see jeirt/__main__.py)

    from jeirt.data.dataset import Dataset
    from jeirt.estimator import JEIRT

# ----------------------------------------------------------------------------------------------------
# Options many commands take

# A verb module's parsers are added through this: (verb, help) -> its parser, which already has the
# options every command takes (--json, --quiet, --force, --debug); see `jeirt.cli.build_parser`.
AddParser = Callable[[Verb, str], argparse.ArgumentParser]


def add_model(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="a model saved by `jeirt fit` or `jeirt onboard` (.pt)")


def add_seed(p: argparse.ArgumentParser, help: str = "random seed (default 0)") -> None:
    p.add_argument("--seed", type=int, default=0, help=help)


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", help="also write the summary to this JSON file")


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress lines")


class _Renamed(argparse.Action):
    """An option's old spelling: refused with a message naming the new one (argparse would otherwise
    take `--prior` as an abbreviation of `--prior-covariance`, or refuse it without a hint)."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kwargs: Any):
        kwargs["default"] = argparse.SUPPRESS  # nothing in the parsed namespace
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} was renamed {self.new}; write {self.new} {values or ''}".rstrip() + ".")


def refuse_renamed(p: argparse.ArgumentParser, old: str, new: str) -> None:
    """Refuse `old`, an option renamed `new`, with a usage error that names `new`."""
    p.add_argument(old, action=_Renamed, new=new, dest=f"_renamed_{old.lstrip('-').replace('-', '_')}")


# ----------------------------------------------------------------------------------------------------
# Reading


def load_model(path: str, quiet: bool = False) -> JEIRT:
    """JEIRT.load, its failures as ModelError naming the file and its warnings (a file without a
    weights checksum) as one line each on stderr; progress lines (encoding questions) unless `quiet`."""
    import warnings

    from jeirt.estimator import JEIRT

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            model = JEIRT.load(path)
    except (ValueError, KeyError, TypeError, RuntimeError, EOFError, OSError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        raise ModelError(f"--model: {message}") from err
    for warning in caught:
        print(f"warning: --model: {warning.message}", file=sys.stderr)
    model.progress = not quiet
    return model


def read_csv(flag: str, path: str, **kwargs: Any) -> pd.DataFrame:
    """A user's CSV read by `jeirt.data.read_csv_table` (cells as text, names kept as written; keyword
    arguments go to it), its failures as DataError naming the option and the file."""
    from jeirt.data.csv_tables import read_csv_table

    try:
        return read_csv_table(path, **kwargs)
    except ValueError as err:
        raise DataError(f"{flag} {err}") from None


def read_results(flag: str, path: str) -> pd.DataFrame:
    """A long results CSV (`jeirt.data.read_results_table`), its failures as DataError naming `flag`."""
    from jeirt.data.csv_tables import read_results_table

    try:
        return read_results_table(path)
    except ValueError as err:
        raise DataError(f"{flag} {err}") from None


def results_dataset(flag: str, path: str, table: pd.DataFrame, items: pd.DataFrame | None, **kwargs: Any) -> Dataset:
    """`jeirt.data.from_long` on one file's rows (the only judge of a results table), its failures as
    DataError naming `flag` and the file, with that file's data rows."""
    from jeirt.data.csv_tables import from_long

    return judged(flag, path, lambda: from_long(table, items, **kwargs), duplicates_option="duplicates" in kwargs)


T = TypeVar("T")


def judged(flag: str, path: str, read: Callable[[], T], duplicates_option: bool = False) -> T:
    """`read()`, the library judging one file's rows, its failures as DataError naming `flag` and the file
    in the command's terms: repeated pairs answered with --duplicates where the command has it."""
    from jeirt.data.csv_tables import RepeatedPairs

    try:
        return read()
    except RepeatedPairs as err:
        fix = (
            "pass --duplicates mean (a soft label, the share right) or --duplicates first"
            if duplicates_option
            else "give each pair one row (several grades of one answer: their share right, in [0, 1])"
        )
        raise DataError(
            f"{flag} {path}: {err.count} rows repeat a (model, item_id) pair, e.g. {err.pair} on data rows "
            f"{err.rows}; {fix}."
        ) from err
    except (ValueError, KeyError) as err:
        message = str(err.args[0] if err.args else err)
        raise DataError(f"{flag} {message}" if message.startswith(path) else f"{flag} {path}: {message}") from err


def dataset(name: str, limit_questions: int | None = None, seed: int = 0) -> Dataset:
    """Load a dataset by name or CSV path, optionally cut to a seeded per-benchmark item sample."""
    import pandas as pd

    from jeirt.data.loader import load_dataset
    from jeirt.splits import sample_items

    try:
        ds = load_dataset(name)
    except ConnectionError as err:
        raise EnvironmentFailure(f"--dataset {name}: {err}") from err
    except FileNotFoundError as err:  # a name that names no dataset: like a path to no file
        raise UsageError(f"--dataset {name}: {err}") from err
    except (ValueError, KeyError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        raise DataError(f"--dataset {message}" if message.startswith(name) else f"--dataset {name}: {message}") from err
    if limit_questions and ds.n_items > limit_questions:
        ds = ds.subset(
            items=sample_items(ds.items["benchmark"].to_numpy(), limit_questions, np.random.default_rng(seed))
        )
    return ds


def questions(path: str) -> pd.DataFrame:
    """A questions CSV (`jeirt.data.read_questions_csv`), its failures as DataError naming --questions."""
    from jeirt.data.csv_tables import read_questions_csv

    return judged("--questions", path, lambda: read_questions_csv(path))


def corrections(model: JEIRT) -> str:
    """The model's per-question corrections in a few words (`jeirt fit --corrections`)."""
    c = model.corrections_
    if c is None:
        return "none (fit --corrections adds them)"
    return (
        f"{len(c)} questions, from the known models' training answers (offset scale {c.offset_scale:.3g}, "
        f"shift scale {c.shift_scale:.3g})"
    )


# ----------------------------------------------------------------------------------------------------
# Writing and printing


def save(path: str | Path, write: Callable[[str | Path], Path]) -> Path:
    """Write one output with `write` (atomic: `jeirt.files`, which notes it for the Ctrl-C message)."""
    return write(path)


def write_csv(path: str | Path, table: pd.DataFrame, **kwargs: Any) -> Path:
    """A table as CSV, atomically."""
    return save(path, lambda p: write_text(p, table.to_csv(**kwargs)))


def write_summary(path: str | Path, blob: object, indent: int = 2) -> Path:
    """A JSON summary, atomically."""
    return save(path, lambda p: write_json(p, blob, indent=indent))


def emit(summary: dict, json_path: str | None) -> None:
    """Print `summary` readably and write it to `json_path` if given; a number that is undefined (NaN,
    e.g. an AUC of answers all of one class) prints as "undefined" and is null in the JSON."""
    clean = finite_json(summary)
    assert isinstance(clean, dict)
    show = lambda v: "undefined" if v is None else f"{v:.4f}" if isinstance(v, float) else v
    for key, value in clean.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for k, v in value.items():
                print(f"  {k:<12} {show(v)}")
        else:
            print(f"{key:<14} {show(value)}")
    if json_path:
        write_summary(json_path, clean)
