"""New LLMs' answers as users keep them: a long table (model, item_id, label) with the two columns
`jeirt suggest` writes beside each question, read by one function (`answers_from_table`) that the
command line and Python users share.

    random                 1 where the question was a random draw, 0 where it was a pick by choice
    inclusion_probability  the chance the draw took the question: in (0, 1) for a random draw (the
                           draw's share of the questions it could take), 1 for a pick by choice

The two must agree row by row: a random draw has a probability below 1 and above 0, a pick by choice
has 1. A table with neither column reads every answer as one simple random sample of the questions (the
random rule's design); one with `random` alone may hold no pick by choice, since what a random draw
stood for is then unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from jeirt.data.csv_tables import from_long
from jeirt.data.dataset import normal_names
from jeirt.tasks.evaluation.bank import QuestionBank

RANDOM_COLUMN = "random"
INCLUSION_COLUMN = "inclusion_probability"
SUGGEST_COLUMNS = ("model", "item_id", "benchmark", "text", RANDOM_COLUMN, INCLUSION_COLUMN)  # `jeirt suggest --out`


@dataclass
class Answers:
    """New LLMs' answers aligned with a bank's questions."""

    models: list[str]
    labels: np.ndarray  # (n_new, n_items) answers, NaN where not asked
    random: np.ndarray | None  # (n_new, n_items) bool, the random draws among the asked; None: no column said
    inclusion: np.ndarray | None  # (n_new, n_items) inclusion probabilities, 0 where not asked; None: unknown


def answers_from_table(bank: QuestionBank, table: pd.DataFrame, *, where: str = "the results table") -> Answers:
    """The answers of `table` (long: model, item_id, label, and `jeirt suggest`'s columns when kept) on
    the questions of `bank`. The table is judged by `jeirt.data.from_long` (names, labels in [0, 1], each
    pair once, item_ids of the bank); `random` must be 0 or 1, `inclusion_probability` a number in (0, 1],
    and the two must agree on every row. A ValueError names `where` and the first data rows at fault."""
    items = pd.DataFrame({"item_id": bank.item_ids, "benchmark": bank.groups, "text": bank.texts})
    new = from_long(table, items)
    columns = pd.Index(new.items["item_id"]).get_indexer(bank.item_ids)  # the bank's order
    labels = new.labels[:, columns].astype(np.float64)
    names, ids = (normal_names(table[column]).astype(str) for column in ("model", "item_id"))
    at = (new.model_index(names), pd.Index(bank.item_ids).get_indexer(ids))  # each row's place
    flags = _random_flags(table, where)
    probabilities = _inclusion(table, where)
    if flags is not None and probabilities is not None:
        _check_agreement(flags, probabilities, where)
    elif flags is not None and not flags.all():
        raise ValueError(
            f"{where} has picks by choice ({RANDOM_COLUMN} = 0: an adaptive or kmeans rule) but no "
            f"{INCLUSION_COLUMN!r} column, so the estimate cannot tell what the random draws stand for; keep "
            f"`jeirt suggest`'s {INCLUSION_COLUMN} column beside the answers (1 for a pick by choice, the "
            "draw's share of the questions it was drawn from for a random draw)."
        )
    if flags is None and probabilities is not None:
        flags = probabilities < 1
    random = inclusion = None
    if flags is not None:
        random = np.zeros(labels.shape, dtype=bool)
        random[at] = flags
    if probabilities is not None:
        inclusion = np.zeros(labels.shape)
        inclusion[at] = probabilities
    return Answers(list(new.models), labels, random, inclusion)


def _rows(bad: np.ndarray) -> list[int]:
    """The first data rows (from 1) where `bad` holds."""
    return (np.flatnonzero(bad) + 1)[:5].tolist()


def _random_flags(table: pd.DataFrame, where: str) -> np.ndarray | None:
    """The `random` column as bools (None without it); a cell other than 0 or 1 is refused."""
    if RANDOM_COLUMN not in table.columns:
        return None
    values = pd.to_numeric(table[RANDOM_COLUMN].astype(str).str.strip(), errors="coerce")
    bad = ~values.isin([0, 1]).to_numpy()
    if bad.any():
        row = _rows(bad)[0]
        raise ValueError(
            f"{where}: the {RANDOM_COLUMN!r} cell on data row {row} is {table[RANDOM_COLUMN].iloc[row - 1]!r}; it "
            "must be 1 (a random draw of `jeirt suggest`) or 0, as suggest wrote it."
        )
    return (values == 1).to_numpy()


def _inclusion(table: pd.DataFrame, where: str) -> np.ndarray | None:
    """The `inclusion_probability` column as floats in (0, 1] (None without it)."""
    if INCLUSION_COLUMN not in table.columns:
        return None
    values = pd.to_numeric(table[INCLUSION_COLUMN], errors="coerce")
    bad = (values.isna() | (values <= 0) | (values > 1)).to_numpy()
    if bad.any():
        row = _rows(bad)[0]
        raise ValueError(
            f"{where}: the {INCLUSION_COLUMN!r} cell on data row {row} is {table[INCLUSION_COLUMN].iloc[row - 1]!r}; "
            "it must be a number in (0, 1] as `jeirt suggest` wrote it (1: a pick by choice)."
        )
    return values.to_numpy(np.float64)


def _check_agreement(flags: np.ndarray, probabilities: np.ndarray, where: str) -> None:
    """A random draw (random 1) has a probability below 1; a pick by choice (random 0) has 1."""
    for bad, said in (
        (flags & (probabilities >= 1), f"{RANDOM_COLUMN} = 1 (a random draw) with {INCLUSION_COLUMN} = 1"),
        (~flags & (probabilities < 1), f"{RANDOM_COLUMN} = 0 (a pick by choice) with {INCLUSION_COLUMN} below 1"),
    ):
        if bad.any():
            rows = _rows(bad)
            raise ValueError(
                f"{where}: data row {rows[0]} (of {int(bad.sum())}, rows {rows}) says {said} (it has "
                f"{probabilities[rows[0] - 1]:g}): the two columns contradict each other. A random draw has a "
                f"probability below 1, a pick by choice has 1; keep both columns as `jeirt suggest` wrote them."
            )
