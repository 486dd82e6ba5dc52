"""The verdicts results pages print about the paper's claims, computed from numbers in one place.

A page never writes "holds" by hand: it passes the measured quantity here and glues what comes back,
so a rerun that contradicts the paper says so. Every results page opens its findings with the table
`paper_vs_book` builds: one `Claim` per row, with the paper's number (quoted from `jeirt.book.paper`,
the one table of the paper's values, or `paper.no_number(place)` where the paper prints none), ours,
the dataset and encoder, the setting it ran in (`setting`: profile, test questions, d, seeds) and one
of five verdicts:

    holds                  the claim's condition is met on our numbers
    matches within noise   not met by the number itself, but within its spread (an interval over
                           seeds or questions, or the statistic's p-value) of meeting it
    holds in direction     the sign or the ordering is met, the size is not
    does not hold          none of these
    not testable ...       'not testable here: why' (the data or the encoder lack it) or 'not testable
                           in the smoke profile: why' (the smoke slice is too small to carry it)

`show` glues the table and, when `$JEIRT_CLAIMS_DIR` is set (scripts/build_book.py sets it), writes
the page's rows there as JSON; `scorecard` gathers them for the Reproducing page and `count` tallies
the verdicts. tests/test_book.py checks that every results page builds its table here, quotes the
paper through `jeirt.book.paper` and writes no verdict by hand.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pandas as pd

HOLDS = "holds"
NOISE = "matches within noise"
DIRECTION = "holds in direction"
FAILS = "does not hold"
UNTESTABLE = "not testable"
VERDICTS = (HOLDS, NOISE, DIRECTION, FAILS, UNTESTABLE)  # the only words a verdict cell starts with
COLUMNS = ("claim", "paper", "this book", "dataset and encoder", "setting", "verdict")


def verdict(
    holds: bool | None, direction: bool = False, why: str = "", noise: bool = False, profile: str | None = None
) -> str:
    """The verdict on one claim: `holds` True -> 'holds'; else 'matches within noise' when `noise`,
    else 'holds in direction' when `direction`, else 'does not hold'. `holds` None -> 'not testable
    here: ' + `why`, or with `profile` (the smoke slice cannot carry the claim) 'not testable in the
    <profile> profile: ' + `why`; a reason is required. A non-empty `why` is appended to a testable
    verdict too, as '(why)'."""
    if holds is None:
        if not why:
            raise ValueError("verdict(None, ...) needs why=: say why the claim is not testable here.")
        return f"{UNTESTABLE} in the {profile} profile: {why}" if profile else f"{UNTESTABLE} here: {why}"
    word = HOLDS if bool(holds) else NOISE if bool(noise) else DIRECTION if bool(direction) else FAILS
    return f"{word} ({why})" if why else word


def against(
    ours: float,
    paper: float | tuple[float, float],
    tolerance: float,
    direction: bool = False,
    why: str = "",
    se: float | None = None,
    sds: float = 2.0,
) -> str:
    """Verdict of a number against the paper's: 'holds' when `ours` lies within `tolerance` of
    `paper` (a value, or a (low, high) range of the paper's settings); else, given the standard
    error `se` of ours (over seeds or questions), 'matches within noise' when `ours` +- `sds` * `se`
    reaches that interval; else 'holds in direction' when `direction` (the sign or ordering the claim
    rests on is met), else 'does not hold'."""
    if tolerance < 0:
        raise ValueError(f"tolerance={tolerance}; expected a non-negative number.")
    if se is not None and not se >= 0:
        raise ValueError(f"se={se}; expected a non-negative standard error (or None: no spread known).")
    lo, hi = (paper, paper) if isinstance(paper, (int, float)) else paper
    if lo > hi:
        raise ValueError(f"paper={paper}; expected a value or a (low, high) range with low <= high.")
    lo, hi, ours = lo - tolerance, hi + tolerance, float(ours)
    spread = sds * se if se is not None else 0.0
    return verdict(
        lo <= ours <= hi,
        direction=direction,
        why=why,
        noise=se is not None and ours - spread <= hi and ours + spread >= lo,
    )


def rho_interval(rho: float, n: int, sds: float = 2.0) -> tuple[float, float]:
    """An approximate interval for a Spearman rho over `n` points: rho +- `sds` standard errors on
    Fisher's z, whose standard error for Spearman's rho is 1.06 / sqrt(n - 3) (Fieller, Hartley and
    Pearson 1957), mapped back to rho."""
    import math

    if n < 4:
        raise ValueError(f"n={n}; a Spearman interval needs at least 4 points.")
    z, se = math.atanh(max(min(rho, 0.999999), -0.999999)), 1.06 / (n - 3) ** 0.5
    return math.tanh(z - sds * se), math.tanh(z + sds * se)


def setting(
    cfg,
    test_questions: int | None,
    d: int | str | None = None,
    seeds: int | Sequence[int] | None = None,
    held_out: bool = True,
) -> str:
    """The 'setting' cell of a verdict row: the profile, how many test questions the number rests
    on, the embedding dimension and how many seeds (default `cfg.d` and `cfg.seeds`), e.g.
    'full profile; 1,203 test questions; d = 256; 3 seeds'. `test_questions` None: no held-out
    questions (a fit to every answer, a simulation); `held_out` False: the number rests on that many
    questions, trained on or not (a clustering of every question's direction)."""
    d = cfg.d if d is None else d
    seeds = len(cfg.seeds) if seeds is None else seeds if isinstance(seeds, int) else len(seeds)
    if seeds < 1:
        raise ValueError(f"seeds={seeds}; expected at least one seed.")
    kind = "test questions" if held_out else "questions"
    questions = f"no {kind}" if test_questions is None else f"{int(test_questions):,} {kind}"
    return f"{cfg.profile} profile; {questions}; d = {d}; {seeds} seed{'s' if seeds > 1 else ''}"


def compared(gap: float, se: float, sds: float = 2.0) -> str:
    """'ahead of', 'behind' or 'level with': the sign of `gap` where it exceeds `sds` standard errors.
    A description for prose and tables, not a verdict; pass `compared(...) == 'ahead of'` to `verdict`."""
    if gap > sds * se:
        return "ahead of"
    if gap < -sds * se:
        return "behind"
    return "level with"


def mean_and_se(gaps) -> tuple[float, float]:
    """Mean and standard error of paired differences (one per model, seed or start)."""
    import numpy as np

    gaps = np.asarray(gaps, dtype=float)
    if len(gaps) < 2:
        raise ValueError(f"{len(gaps)} paired difference(s); a standard error needs at least 2.")
    return float(gaps.mean()), float(gaps.std(ddof=1) / np.sqrt(len(gaps)))


def ahead(gap: float, se: float, sds: float = 2.0) -> str:
    """The verdict on "ours is ahead" from a gap (positive: ours better) and its standard error:
    'holds' beyond `sds` standard errors, 'matches within noise' within them, else 'does not hold'."""
    side = compared(gap, se, sds)
    return verdict(side == "ahead of", noise=side == "level with")


@dataclass(frozen=True)
class Claim:
    """One row of a page's "paper vs this book" table."""

    claim: str  # the claim in a few words, with where the paper makes it (section, table, figure)
    paper: str  # paper.quote(...) ("Table 5: 0.389 / 0.418", the v2 summary's cited as such) or paper.no_number(...)
    ours: str  # our number(s), formatted
    data: str  # dataset and encoder ("simulated" for a simulation)
    verdict: str  # from `verdict` or `against`, never typed by hand
    setting: str = ""  # `setting(cfg, ...)`: profile, test questions, d, seeds

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, str) or (f.name != "setting" and not value.strip()):
                raise ValueError(f"Claim.{f.name}={value!r}; expected a non-empty string.")
        if not self.verdict.startswith(VERDICTS):
            raise ValueError(
                f"Claim.verdict={self.verdict!r}; build it with verdicts.verdict or "
                f"verdicts.against, which start with one of {VERDICTS}."
            )
        if "not available" in self.paper:
            raise ValueError(
                f"Claim.paper={self.paper!r}; quote the paper with jeirt.book.paper.quote, or "
                "paper.no_number(place) where it prints no number."
            )


def paper_vs_book(claims: Sequence[Claim]) -> pd.DataFrame:
    """The table every results page opens its findings with: one row per claim, columns `COLUMNS`."""
    if not claims:
        raise ValueError("paper_vs_book needs at least one Claim.")
    bad = [type(c).__name__ for c in claims if not isinstance(c, Claim)]
    if bad:
        raise TypeError(f"paper_vs_book takes Claim rows; got {bad}.")
    rows = [(c.claim, c.paper, c.ours, c.data, c.setting, c.verdict) for c in claims]
    return pd.DataFrame(rows, columns=list(COLUMNS)).set_index("claim")


def word(text: str) -> str:
    """The verdict word a verdict cell starts with (one of `VERDICTS`)."""
    found = [w for w in VERDICTS if text.startswith(w)]
    if not found:
        raise ValueError(f"verdict {text!r} starts with none of {VERDICTS}.")
    return max(found, key=len)


def count(table: pd.DataFrame) -> pd.Series:
    """How many rows of a `paper_vs_book` (or `scorecard`) table got each verdict, in `VERDICTS` order."""
    return table["verdict"].map(word).value_counts().reindex(list(VERDICTS), fill_value=0)


def claims_dir() -> Path | None:
    """Where `show` writes each page's rows: `$JEIRT_CLAIMS_DIR` (the build sets it), else None."""
    folder = os.environ.get("JEIRT_CLAIMS_DIR")
    return Path(folder).expanduser().resolve() if folder else None


def show(name: str, claims: Sequence[Claim]) -> pd.DataFrame:
    """Build the table, glue it under `name` as HTML with one header row (the page shows it at the top
    with a `{glue}` directive), write its rows to `claims_dir()/<page>.json` when set (the page is
    `name` less its '_paper_vs_book', e.g. 'ood') and return it."""
    from IPython.display import HTML

    from jeirt.book import glue

    if not name.endswith("_paper_vs_book"):
        raise ValueError(f"name={name!r}; expected '<page prefix>_paper_vs_book'.")
    table = paper_vs_book(claims)
    glue(name, HTML(table.reset_index().to_html(index=False, border=0, classes="paper-vs-book")), display=False)
    folder = claims_dir()
    if folder is not None:
        from jeirt.files import write_json

        folder.mkdir(parents=True, exist_ok=True)
        write_json(
            folder / f"{name.removesuffix('_paper_vs_book')}.json",
            {"name": name, "claims": [asdict(c) for c in claims]},
            indent=1,
        )
    return table


# The glue prefix of each results page's table ('<prefix>_paper_vs_book') and the page's file in book/.
PAGES = {
    "one": "one_number",
    "dim": "dimension",
    "onb": "onboarding",
    "ood": "ood",
    "dif": "difficulty",
    "tax": "taxonomy",
    "geo": "geometry",
    "rt": "routing",
    "bey": "beyond",
    "eff": "efficient",
    "kna": "known_answers",
}


def scorecard(folder: str | Path, pages: dict[str, str] | None = None) -> pd.DataFrame:
    """Every page's claim rows from `folder` (what `show` wrote, one JSON file per page; or a
    `save_claims` snapshot file), one row per
    claim with the page it comes from (`pages`: glue prefix -> page file, default `PAGES`), sorted into
    the paper's order (`jeirt.book.paper.position` of the claim, a row starting '...' kept beside the
    one before it; within a place, page order, then row order). A page with no file there is a
    `FileNotFoundError` naming it."""
    from jeirt.book.paper import position

    folder, pages = Path(folder), PAGES if pages is None else pages
    if folder.is_file():  # a snapshot from save_claims
        found = json.loads(folder.read_text())["pages"]
    else:
        found = {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}
    missing = [prefix for prefix in pages if prefix not in found]
    if missing:
        raise FileNotFoundError(
            f"no claim rows for {missing} in {folder}; build the book "
            f"(scripts/build_book.py writes them) or run those pages with JEIRT_CLAIMS_DIR set."
        )
    rows = []
    for prefix, page in pages.items():
        where = 9.0
        for claim in found[prefix]["claims"]:
            # a row that continues the one before ('... by about 10 points') stays beside it
            where = where if claim["claim"].startswith("...") else position(claim["claim"])
            rows.append(
                {
                    "position": where,
                    **{k: claim[k] for k in ("claim", "paper", "ours", "data", "setting", "verdict")},
                    "page": page,
                }
            )
    return pd.DataFrame(rows).sort_values("position", kind="stable").reset_index(drop=True)


def save_claims(folder: str | Path, path: str | Path, note: str) -> Path:
    """Bundle every page's claim rows in `folder` into one JSON file at `path` (a results snapshot,
    e.g. results/claims_full_mmlu_pro.json), with `note` saying which build made them; `scorecard`
    reads it in place of the folder."""
    folder = Path(folder)
    from jeirt.files import write_json

    if not note.strip():
        raise ValueError("note: say which build (commit, profile, date) made these rows.")
    pages = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    if not pages:
        raise FileNotFoundError(f"no claim rows in {folder}; build the book first.")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return write_json(path, {"note": note, "pages": pages}, indent=1)


def tally(source: str | Path, pages: dict[str, str] | None = None) -> dict[str, int]:
    """The scorecard's counts per verdict word (holds, matches within noise, holds in direction, does
    not hold, not testable), from a build's claims folder or a `save_claims` snapshot: what the README
    quotes."""
    return {k: int(v) for k, v in count(scorecard(source, pages)).items()}
