"""The claims every results page tests, declared as data in one file (`claims.yml` beside this module),
and the one helper that turns a page's numbers into its "paper vs this book" table.

The file holds what does not depend on a run: per page (its glue prefix: 'onb', 'dim', ...) a list of
rows, each the claim in a few words, its source, what the paper says (a quote of its numbers, or the
place where it prints none), the statistic it reads and the rule that judges it, with the rule's
thresholds. A page computes its statistics (`jeirt_book.<page>`'s `*_stats`, a dict of
`verdicts.Stat`) and calls

    claims.show("onb", stats, values={...}, data=where, setting=run)

which reads the page's rows, fills them in, judges each with its rule (`verdicts.show`) and glues
the table; the same call writes the rows for the scorecard when the build asks for them.

A row's fields, in `claims.yml`:

    claim, source   words; `source` starts with one of `verdicts.SOURCES`
    paper           words, or one of  {quote: [keys], lead:, sep:, unit:, spec:}  (`paper.quote`),
                    {no_number: [place, words]}  (`paper.no_number`), {not_claimed: words}
                    (`paper.not_claimed`); `note:` beside any of them adds words after it
    stat            the name of the page's statistic the row reads (its number, spread, 'this book'
                    cell and the rule arguments the data sets, such as `limit`)
    rule            a name in `verdicts.RULES`; the rule's thresholds beside it (margin, bound,
                    value, size, sign, ...)
    data, setting, ours, why, profile, limit   as in `verdicts.declare`, where the stat or the page's
                    shared values do not give them
    for             the name of a list the page passes in `values`: the row is repeated once per
                    item (a dict of words and numbers, e.g. one per dataset); with `rows:` (a list
                    of rows) in place of the row's own fields, the group is repeated together, so
                    a row that continues the one before ('... by about 10 points') stays beside it

Any text may hold `{name}` placeholders, filled from `values` and the row's `for` item; a field that
is exactly one placeholder takes the value itself (a number, a tuple), and `{paper: key}` in place of
a number is the paper's value (`paper.value`). A statistic the data cannot decide is a
`verdicts.NoVerdict` in the page's stats: its row becomes not testable (or inconclusive, for a number
without a spread) with the reason it gives, whatever rule the file names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

import pandas as pd

CLAIMS_FILE = Path(__file__).with_name("claims.yml")
_ONE = re.compile(r"^\{(\w+)\}$")  # a field that is one placeholder takes the value itself


@lru_cache(maxsize=4)
def _load(path: str, stamp: int) -> dict:
    """The file's rows by page; `stamp` (its modification time) makes an edited file read again."""
    import yaml

    table = yaml.safe_load(Path(path).read_text())
    if not isinstance(table, dict):
        raise ValueError(f"{path}: expected one list of rows per page prefix, e.g. 'onb:'.")
    return table


def declared(prefix: str, path: Path = CLAIMS_FILE) -> list[dict]:
    """The rows `claims.yml` declares for the page with glue prefix `prefix`, as written there."""
    table = _load(str(path), Path(path).stat().st_mtime_ns)
    if prefix not in table:
        raise KeyError(f"no claims for {prefix!r} in {path}; the pages there are {sorted(table)}.")
    rows = table[prefix]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{path}, {prefix}: expected a list of rows (mappings).")
    for row in [r for spec in rows for r in spec.get("rows", [spec])]:
        odd = [k for k in row if not isinstance(k, str)]
        if odd:
            raise ValueError(f'{path}, {prefix}, row {row.get("claim")!r}: keys {odd} are no words (quote "null").')
    return rows


def _fill(value, context: Mapping):
    """A field with its placeholders filled from `context`, paper references read."""
    from jeirt_book import paper

    if isinstance(value, str):
        whole = _ONE.match(value)
        if whole:
            if whole.group(1) not in context:
                raise KeyError(f"placeholder {value} is not among the page's values {sorted(context)}.")
            return context[whole.group(1)]
        try:
            return value.format_map(context) if "{" in value else value
        except KeyError as err:
            raise KeyError(
                f"placeholder {err} in {value!r} is not among the page's values {sorted(context)}."
            ) from None
    if isinstance(value, list):
        return tuple(_fill(v, context) for v in value)
    if isinstance(value, dict):
        filled = {k: _fill(v, context) for k, v in value.items()}
        note = filled.pop("note", "")
        if set(filled) == {"paper"}:
            return paper.value(filled["paper"])
        if "quote" in filled:
            keys = filled.pop("quote")
            text = paper.quote(*((keys,) if isinstance(keys, str) else keys), **filled)
        elif "no_number" in filled:
            text = paper.no_number(*filled.pop("no_number"))
        elif "not_claimed" in filled:
            text = paper.not_claimed(filled.pop("not_claimed"))
        else:
            raise ValueError(
                f"{value}: expected {{paper: key}}, {{quote: ...}}, {{no_number: ...}} or {{not_claimed: ...}}."
            )
        return text + note
    return value


def rows(prefix: str, values: Mapping | None = None, path: Path = CLAIMS_FILE) -> list[dict]:
    """The page's declared rows with every placeholder filled from `values` (and each `for` item), in
    the file's order: what `verdicts.declare` completes from the page's stats."""
    values = dict(values or {})
    out = []
    for spec in declared(prefix, path):
        loop = spec.get("for")
        items = [{}] if loop is None else values.get(loop)
        if items is None:
            raise KeyError(f"{prefix}: a row repeats over {loop!r}, which the page's values do not give.")
        group = spec.get("rows", [spec])  # a group: its rows repeated together, in order, per item
        for item in items:
            context = values | dict(item)
            for row in group:
                out.append({k: _fill(v, context) for k, v in row.items() if k not in ("for", "rows")})
    return out


def show(prefix: str, stats: Mapping, values: Mapping | None = None, **shared) -> pd.DataFrame:
    """The page's "paper vs this book" table: its rows from `claims.yml` (filled from `values`),
    completed from `stats` and `shared` (data=, setting=, limit=), judged, glued as
    '<prefix>_paper_vs_book' and written for the scorecard (`verdicts.show`)."""
    from jeirt_book import verdicts

    return verdicts.show(f"{prefix}_paper_vs_book", rows(prefix, values), stats, **shared)
