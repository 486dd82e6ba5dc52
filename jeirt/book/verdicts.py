"""The verdicts results pages print about the paper's claims, computed from numbers in one place.

A page never writes "holds" by hand: it passes the measured quantity here and glues what comes back,
so a rerun that contradicts the paper says so. Every results page opens its findings with the table
`paper_vs_book` builds: one `Claim` per row, with the paper's number (or its v2 summary's, cited as
such, or `NOT_AVAILABLE`), ours, the dataset and encoder, and one of four verdicts:

    holds                  the claim's condition is met on our numbers
    holds in direction     the sign or the ordering is met, the size is not
    does not hold          neither
    not testable here: why this build cannot test it (the data, the encoder or the profile lacks it)

tests/test_book.py checks that every results page builds its table here and writes no verdict by hand.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields

import pandas as pd

HOLDS = "holds"
DIRECTION = "holds in direction"
FAILS = "does not hold"
UNTESTABLE = "not testable here"
VERDICTS = (HOLDS, DIRECTION, FAILS, UNTESTABLE)  # the only words a verdict cell starts with
NOT_AVAILABLE = "not available here"  # the paper's number where its text could not be consulted
COLUMNS = ("claim", "paper", "this book", "dataset and encoder", "verdict")


def verdict(holds: bool | None, direction: bool = False, why: str = "") -> str:
    """The verdict on one claim: `holds` True -> 'holds', else 'holds in direction' when `direction`,
    else 'does not hold'; `holds` None -> 'not testable here: ' + `why` (a reason is required).
    A non-empty `why` is appended to a testable verdict too, as '(why)'."""
    if holds is None:
        if not why:
            raise ValueError("verdict(None, ...) needs why=: say why the claim is not testable here.")
        return f"{UNTESTABLE}: {why}"
    word = HOLDS if bool(holds) else DIRECTION if bool(direction) else FAILS
    return f"{word} ({why})" if why else word


def against(ours: float, paper: float | tuple[float, float], tolerance: float, direction: bool = False,
            why: str = "") -> str:
    """Verdict of a number against the paper's: 'holds' when `ours` lies within `tolerance` of
    `paper` (a value, or a (low, high) range of the paper's settings); otherwise 'holds in
    direction' when `direction` (the sign or ordering the claim rests on is met), else 'does not hold'."""
    if tolerance < 0:
        raise ValueError(f"tolerance={tolerance}; expected a non-negative number.")
    lo, hi = (paper, paper) if isinstance(paper, (int, float)) else paper
    if lo > hi:
        raise ValueError(f"paper={paper}; expected a value or a (low, high) range with low <= high.")
    return verdict(lo - tolerance <= float(ours) <= hi + tolerance, direction=direction, why=why)


def compared(gap: float, se: float, sds: float = 2.0) -> str:
    """'ahead of', 'behind' or 'level with': the sign of `gap` where it exceeds `sds` standard errors.
    A description for prose and tables, not a verdict; pass `compared(...) == 'ahead of'` to `verdict`."""
    if gap > sds * se:
        return "ahead of"
    if gap < -sds * se:
        return "behind"
    return "level with"


@dataclass(frozen=True)
class Claim:
    """One row of a page's "paper vs this book" table."""

    claim: str  # the claim in a few words, with where the paper makes it (section, table, figure)
    paper: str  # the paper's number ("Table 5: .346 / .372"), the v2 summary's (cited as such) or NOT_AVAILABLE
    ours: str  # our number(s), formatted
    data: str  # dataset and encoder (or "exact, no data")
    verdict: str  # from `verdict` or `against`, never typed by hand

    def __post_init__(self) -> None:
        for f in fields(self):
            if not isinstance(getattr(self, f.name), str) or not getattr(self, f.name).strip():
                raise ValueError(f"Claim.{f.name}={getattr(self, f.name)!r}; expected a non-empty string.")
        if not self.verdict.startswith(VERDICTS):
            raise ValueError(f"Claim.verdict={self.verdict!r}; build it with verdicts.verdict or "
                             f"verdicts.against, which start with one of {VERDICTS}.")


def paper_vs_book(claims: Sequence[Claim]) -> pd.DataFrame:
    """The table every results page opens its findings with: one row per claim, columns `COLUMNS`."""
    if not claims:
        raise ValueError("paper_vs_book needs at least one Claim.")
    bad = [type(c).__name__ for c in claims if not isinstance(c, Claim)]
    if bad:
        raise TypeError(f"paper_vs_book takes Claim rows; got {bad}.")
    return pd.DataFrame([astuple(c) for c in claims], columns=list(COLUMNS)).set_index("claim")


def count(table: pd.DataFrame) -> pd.Series:
    """How many rows of a `paper_vs_book` table got each verdict (for a one-line summary in prose)."""
    first = table["verdict"].map(lambda v: next(w for w in (DIRECTION, HOLDS, FAILS, UNTESTABLE) if v.startswith(w)))
    return first.value_counts().reindex(list(VERDICTS), fill_value=0)


def show(name: str, claims: Sequence[Claim]) -> pd.DataFrame:
    """Build the table, glue it under `name` as HTML with one header row (the page shows it at the top
    with a `{glue}` directive) and return it."""
    from IPython.display import HTML

    from jeirt.book import glue

    table = paper_vs_book(claims)
    glue(name, HTML(table.reset_index().to_html(index=False, border=0, classes="paper-vs-book")),
         display=False)
    return table
