"""The verdicts results pages print about the paper's claims: one power-aware engine, rows declared as tables.

A page never writes "holds" by hand. It declares its claims as a short table, one dict per row:
the claim, its source, the paper's words, the statistic it reads (`stat=`, a name into the page's
dict of `Stat`s) and the rule with its threshold. `show` completes the rows (`declare`) and turns
each into a `Claim` whose verdict the named rule computed (`judge`):

    stats = ood.dataset_stats(...)   # name -> Stat(value, se= or interval=, spec, unit, label, note)
    verdicts.show("ood_paper_vs_book", [
        dict(claim="leaving a benchmark out lowers its accuracy (Table 3)", source="paper: Table 3",
             paper=("t3.modernbert.diff.overall", "t3.sent.diff.overall"), stat="drop mmlu_pro",
             rule="matches", value=(1.8, 4.5), margin=2.0, sign=1),
        dict(claim=..., source="v2 summary", stat="ranks", rule="untestable", why="one encoder here"),
    ], stats, data=where, setting=run, limit="14 benchmarks")

A `Stat` is a number with its spread and how it prints: the row's 'this book' cell is `Stat.text()`
('overall drop +2.10 +- 0.40 points (benchmarks: ...)'), its estimate and se (or interval) go to
the rule, and the measurement's own data, setting and `rule_args` (limit=, a band set by the data)
fill what the row leaves out. A `str` in place of a Stat is the text of a row with no number (a
not-testable one). The statistics are computed by library functions (`jeirt_book.<page>`'s
`*_stats`, on `jeirt.analysis` and `jeirt.tasks`), so a page's hidden code is the table alone.

Row keys: `claim` (a few words, with the place), `source`, `paper` (`jeirt_book.paper.quote` or
`paper.no_number`, or a tuple of quote keys), `ours` (from the stat, or given), `data` (dataset
and encoder), `setting` (`setting(cfg, ...)`), `rule` (a name in `RULES`) and that rule's arguments.

Sources (`SOURCES`; a row's `source` starts with one): 'paper: <place>' (section, table or figure,
e.g. 'paper: Sec. 3.1, Fig. 1'), 'v2 summary' (the AI-written summary of the paper's v2, never the
paper), 'IRT-Net: "<its words>"' (quoted from ../shared/paper/irt-net.md), 'this book' (the book's
own tests) and 'mathematics' (numerical checks of the paper's propositions, listed outside the tally).

The spread convention, used by every rule: an interval is the estimate +- `SE_MULTIPLIER` (= 2)
standard errors (SE), about 95% for a normal estimate; a rule given `interval=(low, high)` in place
of `se` (a Fisher-z rho interval, a bootstrap percentile interval) uses it as that interval.
Every rule first asks what the data can resolve (is the interval narrower than the effect, the margin
or the headroom at stake?), then reads the estimate. Verdicts (`VERDICTS`, the leading words; reasons
and numbers come after them, never inside):

    holds                  the interval excludes the claim's negation
    matches within noise   the paper's value lies inside an interval narrow enough (half-width at
                           most the row's `margin`) to have excluded a difference that matters
    holds in direction     the sign or ordering is met beyond noise, the claimed size is not
    does not hold          the interval excludes the claim (or any effect that matters, `margin`)
    inconclusive here      the data cannot separate the claim from its negation: 'inconclusive
                           here: <limit>' with the reason in words ('33 models', 'one benchmark')
    not testable           'not testable here: why' (the data or encoder lack it) or 'not testable
                           in the <profile> profile: why'

The rules (`RULES`; each returns the verdict text and the rule in words, which the row keeps):

    above     one-sided, estimate > bound (optionally by at least `size`): holds when low > bound
              (and > size when given); holds in direction when low > bound but high < size; does
              not hold when high < bound + margin; inconclusive otherwise, or when `headroom` (the
              most the data allows, e.g. oracle minus best model) is below the size claimed
    below     the mirror of `above`: estimate < bound
    matches   two-sided, estimate equals the paper's `value` within `margin`: holds when the interval
              lies inside value +- margin; matches within noise when it holds the value and its
              half-width is at most the margin; `sign` (+1 or -1: the claim also says which way,
              e.g. 'lowers accuracy, by 12 points'): holds in direction when the interval excludes
              `null` (default 0; 0.5 for an AUC) on that side but not the size (too wide to test
              it, or off it); else inconclusive when the half-width exceeds the margin, does not
              hold when it excludes the value.
              `floor` (with `floor_se`): what a trivial method scores on the same scale (1% of
              the answers, the prior mean); when the floor would match too, the test has no
              power and the verdict is inconclusive
    bound     the paper's bound, estimate <= `bound` (or >= with side='>='): holds when the whole
              interval obeys it, does not hold when the whole interval breaks it, matches within
              noise when it straddles the bound and is narrower than 2 x margin, else inconclusive
    between   estimate strictly inside (low_band, high_band), e.g. better than a null band and
              short of perfect: holds when the interval is inside, does not hold when it is wholly
              outside, else inconclusive
    peak      a curve peaks at `at`: inconclusive when the curve's span (max - min) is within
              SE_MULTIPLIER x sqrt(2) x the `se` of a point (its seed spread); else holds when `at`
              is the only point within that distance of the best, matches within noise when it is
              one of several, does not hold when it is not among them
    unresolved  'inconclusive here: <limit> (why)' for a number without a spread (one draw, one seed)
    untestable  'not testable ...' with `why` (and `profile` for the smoke slice)

`show` glues the table and, when `$JEIRT_CLAIMS_DIR` is set (scripts/build_book.py sets it), writes
the page's rows there as JSON; `scorecard` gathers them for the Reproducing page, `tally` counts the
verdicts by source (the paper's claims alone, each other source apart, the mathematics outside), and

    python -m jeirt_book.verdicts tally results/claims_full_mmlu_pro.json

prints that tally. tests/test_book.py checks that every results page builds its table here, quotes
the paper through `jeirt_book.paper` and writes no verdict by hand; tests/test_verdicts.py plants data
where a claim is true, false and pure noise.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import pandas as pd

HOLDS = "holds"
NOISE = "matches within noise"
DIRECTION = "holds in direction"
FAILS = "does not hold"
INCONCLUSIVE = "inconclusive here"
UNTESTABLE = "not testable"
VERDICTS = (HOLDS, NOISE, DIRECTION, FAILS, INCONCLUSIVE, UNTESTABLE)  # the only words a verdict cell starts with
COLUMNS = ("claim", "source", "paper", "this book", "dataset and encoder", "setting", "verdict")
SOURCES = ("paper", "v2 summary", "IRT-Net", "this book", "mathematics")  # what a row's `source` starts with
SE_MULTIPLIER = 2.0  # every interval: estimate +- 2 standard errors (SE), about 95%
# Datasets whose `benchmark` column holds the categories of one benchmark (MMLU-Pro's 14), not benchmarks.
ONE_BENCHMARK = ("mmlu_pro",)


def benchmarks(ds) -> int:
    """How many benchmarks a dataset holds (1 for `ONE_BENCHMARK`'s, whose categories stand in for them)."""
    return 1 if ds.name in ONE_BENCHMARK else int(ds.items["benchmark"].nunique())


def verdict(
    holds: bool | None, direction: bool = False, why: str = "", noise: bool = False, profile: str | None = None
) -> str:
    """The verdict text from decided conditions: `holds` True -> 'holds'; else 'matches within noise'
    when `noise`, else 'holds in direction' when `direction`, else 'does not hold'. `holds` None ->
    'not testable here: ' + `why`, or with `profile` (the smoke slice cannot carry the claim) 'not
    testable in the <profile> profile: ' + `why`; a reason is required. A non-empty `why` is appended
    to a testable verdict as '(why)'. The rules below decide the conditions; pages call the rules."""
    if holds is None:
        if not why:
            raise ValueError("verdict(None, ...) needs why=: say why the claim is not testable here.")
        return f"{UNTESTABLE} in the {profile} profile: {why}" if profile else f"{UNTESTABLE} here: {why}"
    word = HOLDS if bool(holds) else NOISE if bool(noise) else DIRECTION if bool(direction) else FAILS
    return f"{word} ({why})" if why else word


def inconclusive(limit: str, detail: str = "") -> str:
    """'inconclusive here: <limit>' (the data's limit in words, e.g. '33 models'), then `detail`."""
    if not isinstance(limit, str) or not limit.strip():
        raise ValueError("limit=: say in words what keeps the data from deciding (e.g. '33 models', 'one benchmark').")
    return f"{INCONCLUSIVE}: {limit}" + (f" ({detail})" if detail else "")


def _g(x: float) -> str:
    """A number for a verdict's reason or rule text: 3 significant digits."""
    return f"{x:.3g}"


def _interval(estimate: float, se: float | None, interval: Sequence[float] | None) -> tuple[float, float]:
    """The interval a rule reads: `interval` as given, or estimate +- SE_MULTIPLIER x `se`."""
    if not math.isfinite(float(estimate)):
        raise ValueError(f"estimate={estimate}; expected a finite number.")
    if (se is None) == (interval is None):
        raise ValueError("give the estimate's spread as se= (a standard error) or interval=(low, high), one of them.")
    if interval is not None:
        lo, hi = (float(v) for v in interval)
        if not lo <= hi:
            raise ValueError(f"interval={interval}; expected (low, high) with low <= high.")
        return lo, hi
    assert se is not None  # one of the two, checked above
    if not (math.isfinite(float(se)) and se >= 0):
        raise ValueError(f"se={se}; expected a finite, non-negative standard error.")
    return float(estimate) - SE_MULTIPLIER * se, float(estimate) + SE_MULTIPLIER * se


def above(
    estimate: float,
    *,
    limit: str,
    bound: float = 0.0,
    se: float | None = None,
    interval: Sequence[float] | None = None,
    size: float | None = None,
    margin: float = 0.0,
    headroom: float | None = None,
) -> tuple[str, str]:
    """One-sided claim 'estimate > bound' (by at least `size` when given): (verdict, rule in words).
    `margin`: the smallest excess that matters (below bound + margin the claim fails); `headroom`: the
    largest value the data allows (a claimed size above it is inconclusive)."""
    return _one_sided(estimate, limit, bound, se, interval, size, margin, headroom, sign=1.0)


def below(
    estimate: float,
    *,
    limit: str,
    bound: float = 0.0,
    se: float | None = None,
    interval: Sequence[float] | None = None,
    size: float | None = None,
    margin: float = 0.0,
    headroom: float | None = None,
) -> tuple[str, str]:
    """One-sided claim 'estimate < bound' (by `size`, i.e. below `size`, when given): the mirror of `above`;
    `headroom` is then the lowest value the data allows."""
    return _one_sided(estimate, limit, bound, se, interval, size, margin, headroom, sign=-1.0)


def _one_sided(estimate, limit, bound, se, interval, size, margin, headroom, sign: float) -> tuple[str, str]:
    """`above` (sign 1) and `below` (sign -1) on the flipped axis."""
    inconclusive(limit)  # checks the words up front, so a missing reason fails on every machine
    if margin < 0:
        raise ValueError(f"margin={margin}; expected a non-negative smallest effect that matters.")
    lo, hi = _interval(estimate, se, interval)
    op, lo_s, hi_s = (">", lo, hi) if sign > 0 else ("<", -hi, -lo)
    b, s = sign * bound, None if size is None else sign * size
    if s is not None and s < b:
        raise ValueError(f"size={size} lies on the wrong side of bound={bound} for a claim 'estimate {op} bound'.")
    rule = f"one-sided: estimate {op} {_g(bound)}" + (f" by at least {_g(size)}" if size is not None else "")
    rule += f"; interval +-{_g(SE_MULTIPLIER)} SE" if interval is None else "; interval given"
    rule += f"; fails beyond a margin of {_g(margin)}" if margin else ""
    span = f"interval {_g(lo)} to {_g(hi)}"
    if headroom is not None and sign * headroom <= (s if s is not None else b + margin):
        return inconclusive(limit, f"the most the data allows is {_g(headroom)}; {span}"), rule
    target = s if s is not None else b
    if lo_s > target:
        return HOLDS, rule
    if hi_s < b + margin:
        return FAILS, rule
    if s is not None and hi_s < s:
        return (DIRECTION, rule) if lo_s > b else (FAILS, rule)
    return inconclusive(limit, span), rule


def matches(
    estimate: float,
    *,
    value: float | tuple[float, float],
    margin: float,
    limit: str,
    se: float | None = None,
    interval: Sequence[float] | None = None,
    sign: int = 0,
    null: float = 0.0,
    floor: float | None = None,
    floor_se: float | None = None,
) -> tuple[str, str]:
    """Two-sided claim 'estimate equals the paper's `value`' (a number, or a (low, high) range of its
    settings) within `margin`, the smallest difference that matters; `sign` +1 / -1 when the claim
    also says which way (the value's sign): (verdict, rule in words)."""
    inconclusive(limit)
    if not margin > 0:
        raise ValueError(f"margin={margin}; state the smallest difference that matters (a positive number).")
    v_lo, v_hi = (value, value) if isinstance(value, (int, float)) else (float(value[0]), float(value[1]))
    if v_lo > v_hi:
        raise ValueError(f"value={value}; expected a number or a (low, high) range with low <= high.")
    if sign not in (-1, 0, 1):
        raise ValueError(f"sign={sign}; expected +1 or -1 (the claim's direction) or 0 (none).")
    lo, hi = _interval(estimate, se, interval)
    rule = f"equals {_g(v_lo)}" + (f" to {_g(v_hi)}" if v_hi > v_lo else "") + f" within +-{_g(margin)}"
    rule += f"; interval +-{_g(SE_MULTIPLIER)} SE" if interval is None else "; interval given"
    rule += f"; direction {'>' if sign > 0 else '<'} {_g(null)}" if sign else ""
    wide = (hi - lo) / 2 > margin
    span = f"interval {_g(lo)} to {_g(hi)}"
    if floor is not None:
        if floor_se is None:
            raise ValueError("floor= needs floor_se=, the standard error of the trivial method's score.")
        f_lo, f_hi = _interval(floor, floor_se, None)
        if f_hi >= v_lo - margin and f_lo <= v_hi + margin:
            return inconclusive(limit, f"the floor {_g(floor)} +-{_g(2 * floor_se)} matches too: no power"), rule
    if not wide and v_lo - margin <= lo and hi <= v_hi + margin:
        return HOLDS, rule
    if not wide and lo <= v_hi and hi >= v_lo:
        return NOISE, rule
    if sign and (lo > null if sign > 0 else hi < null):
        why = f"the size: {span} is wider than the margin +-{_g(margin)}" if wide else f"{span} misses the size"
        return f"{DIRECTION} ({why})", rule
    if wide:
        return inconclusive(limit, f"{span} is wider than the margin +-{_g(margin)}"), rule
    return FAILS, rule


def bound(
    estimate: float,
    *,
    bound: float,
    margin: float,
    limit: str,
    side: str = "<=",
    se: float | None = None,
    interval: Sequence[float] | None = None,
) -> tuple[str, str]:
    """A bound of the paper, 'estimate <= bound' (or '>='), tested as a bound: (verdict, rule in words).
    `margin`: how far across the bound an interval may reach and still count as on it."""
    inconclusive(limit)
    if side not in ("<=", ">="):
        raise ValueError(f"side={side!r}; expected '<=' or '>='.")
    if margin < 0:
        raise ValueError(f"margin={margin}; expected a non-negative number.")
    lo, hi = _interval(estimate, se, interval)
    rule = f"bound: estimate {side} {_g(bound)}; interval " + (
        f"+-{_g(SE_MULTIPLIER)} SE" if interval is None else "given"
    )
    obeys, breaks = (hi <= bound, lo > bound) if side == "<=" else (lo >= bound, hi < bound)
    if obeys:
        return HOLDS, rule
    if breaks:
        return FAILS, rule
    if (hi - lo) / 2 <= margin:
        return NOISE, rule
    return inconclusive(limit, f"interval {_g(lo)} to {_g(hi)} straddles the bound {_g(bound)}"), rule


def between(
    estimate: float,
    *,
    low: float,
    high: float,
    limit: str,
    se: float | None = None,
    interval: Sequence[float] | None = None,
) -> tuple[str, str]:
    """Claim 'low < estimate < high' (e.g. above a null band from random partitions and short of an
    upper band): (verdict, rule in words)."""
    inconclusive(limit)
    if not low < high:
        raise ValueError(f"low={low}, high={high}; expected low < high.")
    lo, hi = _interval(estimate, se, interval)
    rule = f"between {_g(low)} and {_g(high)}; interval " + (
        f"+-{_g(SE_MULTIPLIER)} SE" if interval is None else "given"
    )
    if low < lo and hi < high:
        return HOLDS, rule
    if hi <= low or lo >= high:
        return FAILS, rule
    return inconclusive(limit, f"interval {_g(lo)} to {_g(hi)} crosses a band's edge"), rule


def peak(curve: Mapping[float, float], *, at: float, se: float, limit: str) -> tuple[str, str]:
    """Claim 'the curve peaks at `at`', judged against the `se` of one point (its seed spread): two
    points differ beyond noise when their gap exceeds SE_MULTIPLIER x sqrt(2) x se."""
    inconclusive(limit)
    if at not in curve:
        raise ValueError(f"at={at} is not a point of the curve {sorted(curve)}; measure it there first.")
    if not (math.isfinite(se) and se >= 0):
        raise ValueError(f"se={se}; expected a finite, non-negative standard error.")
    tie = SE_MULTIPLIER * math.sqrt(2) * se
    best, span = max(curve.values()), max(curve.values()) - min(curve.values())
    rule = f"peak at {_g(at)}: points within {_g(tie)} ({_g(SE_MULTIPLIER)} SE of a difference) of the best tie"
    if span <= tie:
        return inconclusive(limit, f"the curve spans {_g(span)}, within its noise {_g(tie)}"), rule
    near = [x for x, v in curve.items() if v >= best - tie]
    if at not in near:
        return FAILS, rule
    return (HOLDS if near == [at] else NOISE), rule


def unresolved(limit: str, why: str) -> tuple[str, str]:
    """'inconclusive here: <limit> (why)' for a number measured without a spread (one simulated
    draw, one seed): a verdict rests on a spread, so it decides nothing. (verdict, rule in words)."""
    if not why.strip():
        raise ValueError("why=: say why the number has no spread (e.g. 'one seed in the smoke profile').")
    return inconclusive(limit, why), "no spread: decides nothing"


def untestable(why: str, profile: str | None = None) -> tuple[str, str]:
    """'not testable here: why' (or 'in the <profile> profile'): (verdict, rule in words)."""
    return verdict(None, why=why, profile=profile), "not testable"


RULES = {
    "above": above,
    "below": below,
    "matches": matches,
    "bound": bound,
    "between": between,
    "peak": peak,
    "unresolved": unresolved,
    "untestable": untestable,
}


def rho_interval(rho: float, n: int, sds: float = SE_MULTIPLIER) -> tuple[float, float]:
    """An approximate interval for a Spearman rho over `n` points: rho +- `sds` standard errors on
    Fisher's z, whose standard error for Spearman's rho is 1.06 / sqrt(n - 3) (Fieller, Hartley and
    Pearson 1957), mapped back to rho."""
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


def compared(gap: float, se: float, sds: float = SE_MULTIPLIER) -> str:
    """'ahead of', 'behind' or 'level with': the sign of `gap` where it exceeds `sds` standard errors.
    A description for prose and tables, not a verdict."""
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


def source_kind(source: str) -> str:
    """Which of `SOURCES` a row's `source` names ('' for a row built before sources existed)."""
    if not source:
        return ""
    found = [s for s in SOURCES if source == s or source.startswith(s + ":") or source.startswith(s + " ")]
    if not found:
        raise ValueError(
            f"source={source!r}; start it with one of {SOURCES} ('paper: Sec. 3.1, Fig. 1', 'v2 summary', "
            "'IRT-Net: \"<its words>\"', 'this book', 'mathematics')."
        )
    kind = found[0]
    if kind == "paper" and not source.removeprefix("paper").strip(" :"):
        raise ValueError(f"source={source!r}; name the paper's place: 'paper: Sec. 3.4, Table 3'.")
    if kind == "IRT-Net" and '"' not in source:
        raise ValueError(f"source={source!r}; quote IRT-Net's words: 'IRT-Net: \"<its words>\"'.")
    return kind


@dataclass(frozen=True)
class Claim:
    """One row of a page's "paper vs this book" table; `judge` builds it from a declared row."""

    claim: str  # the claim in a few words, with where the paper makes it (section, table, figure)
    paper: str  # paper.quote(...) ("Table 5: 0.389 / 0.418", the v2 summary's cited as such) or paper.no_number(...)
    ours: str  # our number(s), formatted
    data: str  # dataset and encoder ("simulated" for a simulation)
    verdict: str  # from a rule, never typed by hand
    setting: str = ""  # `setting(cfg, ...)`: profile, test questions, d, seeds
    source: str = ""  # one of SOURCES, with its place: 'paper: Table 5', 'v2 summary', 'this book', ...
    rule: str = ""  # the rule that gave the verdict, in words

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, str) or (f.name not in ("setting", "source", "rule") and not value.strip()):
                raise ValueError(f"Claim.{f.name}={value!r}; expected a non-empty string.")
        if not self.verdict.startswith(VERDICTS):
            raise ValueError(
                f"Claim.verdict={self.verdict!r}; declare the row with a rule (verdicts.RULES), "
                f"whose verdicts start with one of {VERDICTS}."
            )
        if "not available" in self.paper:
            raise ValueError(
                f"Claim.paper={self.paper!r}; quote the paper with jeirt_book.paper.quote, or "
                "paper.no_number(place) where it prints no number."
            )
        source_kind(self.source)


ROW_KEYS = ("claim", "source", "paper", "ours", "data", "setting", "rule")


@dataclass(frozen=True)
class Stat:
    """A number a declared row reads (`declare`'s `stat=`): its value, its spread (a standard error `se`
    or an `interval`) and how it prints, so the row's 'this book' cell comes from the number itself:
    '<label> <value> +- <se><unit> (<note>)', or '<label> <value><unit> (interval <low> to <high><unit>)'."""

    value: float
    se: float | None = None
    interval: tuple[float, float] | None = None
    spec: str = ".3f"  # format spec of the value and its spread ('.1f', '.1%', '.3g')
    unit: str = ""  # after each number ('%', ' points', ' s')
    label: str = ""  # what the number is, before it ('own-minus-global gap')
    note: str = ""  # the numbers beside it, after it in parentheses ('own 95.1, global 60.0')
    data: str = ""  # where it was measured (dataset and encoder), when not the page's own
    setting: str = ""  # `setting(cfg, ...)` of that measurement, when not the page's own
    rule_args: Mapping = field(default_factory=dict)  # rule arguments the data fixes: limit=, a band's edge

    def __post_init__(self) -> None:
        if self.se is not None and self.interval is not None:
            raise ValueError("Stat: give its spread as se= or interval=, not both.")
        if self.se is None and self.interval is None:
            _interval(self.value, 0.0, None)  # checks the value alone
        else:
            _interval(self.value, self.se, self.interval)

    def spread(self) -> dict:
        """The rule arguments: estimate and se (or interval); a Stat without a spread has none to give."""
        if self.se is None and self.interval is None:
            raise ValueError(
                f"Stat {self.label or self.value!r} has no spread (se= or interval=); a verdict rests on one: "
                "measure it, or declare the row rule='untestable' (or inconclusive) with the reason."
            )
        out: dict = {"estimate": float(self.value)}
        if self.se is not None:
            out["se"] = float(self.se)
        else:
            out["interval"] = tuple(float(v) for v in self.interval)  # type: ignore[union-attr]
        return out

    def __str__(self) -> str:
        return self.text()

    def text(self) -> str:
        """The 'this book' cell: label, value, spread, note."""

        def num(x: float, spread: bool = False) -> str:
            return f"{x:{self.spec.replace('+', '') if spread else self.spec}}"

        words = f"{self.label} {num(self.value)}" if self.label else num(self.value)
        if self.se is not None:
            words += f" +- {num(self.se, spread=True)}{self.unit}"
        elif self.interval is None:
            words += self.unit
        else:  # the interval and the note share one parenthesis
            span = f"interval {num(self.interval[0])} to {num(self.interval[1])}{self.unit}"
            return f"{words}{self.unit} ({span}" + (f"; {self.note})" if self.note else ")")
        return words + (f" ({self.note})" if self.note else "")


def declare(rows: Sequence[Mapping], stats: Mapping[str, Stat | str] | None = None, **shared) -> list[dict]:
    """A page's claims as declared rows, completed: a row's `stat` (a name in `stats`) gives its
    estimate, spread and 'this book' cell (`Stat.text`, unless the row has `ours`), and its data,
    setting and `rule_args` where the row names none (a `str` stat is the text of a row with no
    number, a not-testable one); a `paper` given as a tuple of keys is `jeirt_book.paper.quote(*keys)`;
    `shared` (data=, setting=, limit=) fills the keys left. The rows go on to `show` (or `judge`)."""
    from jeirt_book import paper

    stats = {} if stats is None else stats
    unknown = [k for k in shared if k not in (*ROW_KEYS, "limit")]
    if unknown:
        raise ValueError(f"shared keys {unknown}; only row keys {ROW_KEYS} and limit can be shared across rows.")
    out = []
    for given in rows:
        decided = given.get("rule") not in ("untestable", "unresolved")  # rules that read a number
        row = {k: v for k, v in shared.items() if given.get("rule") != "untestable" or k != "limit"} | dict(given)
        name = row.pop("stat", None)
        if name is not None:
            if name not in stats:
                raise KeyError(f"row {row.get('claim')!r}: stat={name!r} is not among the stats {sorted(stats)}.")
            stat = stats[name]
            if isinstance(stat, str):  # words only: a row the data cannot test
                if decided:
                    raise ValueError(f"row {row.get('claim')!r}: stat {name!r} is words only; a rule needs a Stat.")
                row.setdefault("ours", stat)
            else:
                row |= {k: getattr(stat, k) for k in ("data", "setting") if getattr(stat, k) and k not in given}
                if decided:
                    row |= stat.spread() | {k: v for k, v in stat.rule_args.items() if k not in given}
                row.setdefault("ours", stat.text())
        if isinstance(row.get("paper"), tuple):
            row["paper"] = paper.quote(*row["paper"])
        out.append(row)
    return out


def judge(row: Mapping) -> Claim:
    """One declared row (a dict: `ROW_KEYS` and the arguments of its rule) -> its `Claim`, the verdict
    computed by `RULES[row['rule']]`."""
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        raise ValueError(f"row {row.get('claim', row)!r} lacks {missing}; a row needs {ROW_KEYS}.")
    if not row["source"]:
        raise ValueError(f"row {row['claim']!r}: name its source, one of {SOURCES}.")
    name = row["rule"]
    if name not in RULES:
        raise ValueError(f"row {row['claim']!r}: rule={name!r}; expected one of {sorted(RULES)}.")
    args = {k: v for k, v in row.items() if k not in ROW_KEYS}
    try:
        text, rule = RULES[name](**args)  # type: ignore[operator]
    except TypeError as err:
        raise TypeError(f"row {row['claim']!r}, rule {name!r}: {err}") from None
    keep = {k: row[k] for k in ("claim", "paper", "ours", "data", "setting", "source")}
    return Claim(**keep, verdict=text, rule=rule)


def paper_vs_book(claims: Sequence[Claim | Mapping]) -> pd.DataFrame:
    """The table every results page opens its findings with: one row per claim, columns `COLUMNS`."""
    if not claims:
        raise ValueError("paper_vs_book needs at least one row.")
    judged = [judge(c) if isinstance(c, Mapping) else c for c in claims]
    bad = [type(c).__name__ for c in judged if not isinstance(c, Claim)]
    if bad:
        raise TypeError(f"paper_vs_book takes declared rows (dicts) or Claim rows; got {bad}.")
    rows = [(c.claim, c.source, c.paper, c.ours, c.data, c.setting, c.verdict) for c in judged]
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


def show(name: str, rows: Sequence[Claim | Mapping], stats: Mapping[str, Stat] | None = None, **shared) -> pd.DataFrame:
    """Judge the declared rows (completed by `declare` from `stats` and the `shared` keys), glue the
    table under `name` as HTML with one header row (the page shows it at the top with a `{glue}`
    directive), write its rows to `claims_dir()/<page>.json` when set
    (the page is `name` less its '_paper_vs_book', e.g. 'ood') and return it."""
    from IPython.display import HTML

    from jeirt_book import glue

    if not name.endswith("_paper_vs_book"):
        raise ValueError(f"name={name!r}; expected '<page prefix>_paper_vs_book'.")
    if stats is not None or shared:
        rows = [r if isinstance(r, Claim) else declare([r], stats, **shared)[0] for r in rows]
    claims = [judge(r) if isinstance(r, Mapping) else r for r in rows]
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
    "txt": "text_pays",
    "eff": "efficient",
    "kna": "known_answers",
}


def scorecard(folder: str | Path, pages: dict[str, str] | None = None) -> pd.DataFrame:
    """Every page's claim rows from `folder` (what `show` wrote, one JSON file per page; or a
    `save_claims` snapshot file), one row per claim with the page it comes from (`pages`: glue prefix
    -> page file, default `PAGES`) and its source kind (`source_kind`), sorted into the paper's order
    (`jeirt_book.paper.position` of the claim, a row starting '...' kept beside the one before it;
    within a place, page order, then row order). A page with no file there is a `FileNotFoundError`
    naming it."""
    from jeirt_book.paper import position

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
            source = claim.get("source", "")
            rows.append(
                {
                    "position": where,
                    **{k: claim[k] for k in ("claim", "paper", "ours", "data", "setting", "verdict")},
                    "source": source,
                    "kind": source_kind(source),
                    "rule": claim.get("rule", ""),
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


# The tally's groups, in print order: the paper's claims (the tally the README and the Reproducing
# page quote), then each other source apart, the mathematics last and outside the tally.
TALLY_GROUPS = ("paper", "v2 summary", "IRT-Net", "this book", "mathematics", "")


def tally(source: str | Path, pages: dict[str, str] | None = None) -> dict[str, dict[str, int]]:
    """The scorecard's counts per verdict word, by source kind: {'paper': {'holds': n, ...}, 'v2 summary':
    ..., 'mathematics': ...}, from a build's claims folder or a `save_claims` snapshot. Only the kinds
    present appear; '' gathers rows built before sources existed (rebuild to name them)."""
    card = scorecard(source, pages)
    out = {}
    for kind in TALLY_GROUPS:
        part = card[card["kind"] == kind]
        if len(part):
            out[kind] = {k: int(v) for k, v in count(part).items()}
    return out


def tally_text(counts: dict[str, dict[str, int]]) -> str:
    """`tally`'s counts as the lines the command prints: the paper's claims first, the others apart."""
    names = {
        "paper": "the paper's claims (the tally)",
        "v2 summary": "the v2 summary (AI-written, not the paper)",
        "IRT-Net": "IRT-Net",
        "this book": "this book's own claims",
        "mathematics": "checks of the mathematics (outside the tally)",
        "": "rows without a source (built before sources; rebuild)",
    }
    lines = []
    for kind, by_word in counts.items():
        words = ", ".join(f"{n} {w}" for w, n in by_word.items() if n)
        lines.append(f"{names[kind]}: {sum(by_word.values())} rows: {words}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m jeirt_book.verdicts tally <claims folder or snapshot>`: print the tally by source."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m jeirt_book.verdicts", description=main.__doc__)
    parser.add_argument("command", choices=["tally"])
    parser.add_argument("claims", help="a build's claims folder or a snapshot, e.g. results/claims_full_mmlu_pro.json")
    args = parser.parse_args(argv)
    path = Path(args.claims)
    if not path.exists():
        parser.error(f"{path} does not exist; give a build's claims folder or a snapshot from save_claims.")
    print(tally_text(tally(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
