"""The verdicts results pages print about the paper's claims: one power-aware engine, rows declared as tables.

A page never writes "holds" by hand. Its claims are data: rows in `claims.yml` beside this module
(`jeirt_book.claims` reads them), each the claim, its source, the paper's words, the statistic it
reads (`stat:`, a name into the page's dict of `Stat`s) and the rule with its threshold. The page
computes its statistics and calls `claims.show`, which fills the rows in and hands them to `show`;
`show` completes them (`declare`) and turns each into a `Claim` whose verdict the named rule
computed (`judge`):

    stats = ood.dataset_stats(...)   # name -> Stat(value, se=, df= or interval=, spec, unit, label, note)
    claims.show("ood", stats, values, data=where, setting=run)   # the rows of claims.yml's 'ood:'

A `Stat` is a number with its spread and how it prints: the row's 'this book' cell is `Stat.text()`
('overall drop +2.10 +- 0.40 points (benchmarks: ...)'), its estimate, se and degrees of freedom
(or interval) go to the rule, and the measurement's own data, setting and `rule_args` (limit=, a
band set by the data) fill what the row leaves out. A `NoVerdict` in place of a Stat is a statistic
the data cannot decide (one seed, one encoder): its row is not testable, or inconclusive for a
number without a spread, with the reason it gives. A `Curve` is what a `peak` row reads. The
statistics are computed by functions of the book's package (`jeirt_book.<page>`'s `*_stats`, on
`jeirt.analysis` and `jeirt.tasks`), so a page's hidden code is the values the rows name.

Row keys: `claim` (a few words, with the place), `source`, `paper` (`jeirt_book.paper.quote` or
`paper.no_number`, or a tuple of quote keys), `ours` (from the stat, or given), `data` (dataset
and encoder), `setting` (`setting(cfg, ...)`), `rule` (a name in `RULES`) and that rule's arguments.

Sources (`SOURCES`; a row's `source` starts with one): 'paper: <place>' (section, table or figure,
e.g. 'paper: Sec. 3.1, Fig. 1'), 'v2 summary' (the AI-written summary of the paper's v2, never the
paper), 'IRT-Net: "<its words>"' (quoted from ../shared/paper/irt-net.md), 'this book' (the book's
own tests) and 'mathematics' (numerical checks of the paper's propositions, listed outside the tally).

The spread convention, used by every rule: an interval is the estimate +- q standard errors (SE),
q = `multiplier(df, tests)`: `SE_MULTIPLIER` (= 2, about 95%) for a normal estimate, and the t
quantile t(0.975, df) where it is larger, for an SE from few replicates (`df`: its degrees of
freedom, e.g. 3 seeds: df = 2, q = 4.30); `tests` > 1 widens it for the largest of that many
comparisons (Bonferroni). A rule given `interval=(low, high)` in place of `se` (a Fisher-z rho
interval, a bootstrap percentile interval) uses it as that interval. What the SE is made of is the
page's: both sides' noise (a trained reference refitted over the same seeds, paired by seed:
`paired_over_seeds`), (seed, model) rows clustered by seed and by model (`clustered_se`), and one
noise model for all the rows that read one curve (`paired_over_seeds` on its per-seed values).
Every rule first asks what the data can resolve (is the interval narrower than the effect, the margin
or the headroom at stake?), then reads the estimate; scripts/calibrate_rules.py checks each kind of
rule on planted worlds (on the claim's boundary "holds" at most 5% of the time, far from it at least
80%). Verdicts (`VERDICTS`, the leading words; reasons and numbers come after them, never inside):

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
              most the data allows, e.g. oracle minus best model) is below the size claimed, or
              when `given` (what, low, high: the interval of a premise the claim rests on, e.g. the
              mean gain whose spread over models is judged) does not lie above 0
    below     the mirror of `above`: estimate < bound
    matches   two-sided, estimate equals the paper's `value` within `margin`: holds when the interval
              lies inside value +- margin; matches within noise when it holds the value and its
              half-width is at most the margin; an interval wholly outside value +- margin refutes
              the size, however wide it is: does not hold, or, with `sign` (+1 or -1: the claim
              also says which way, e.g. 'lowers accuracy, by 12 points'), holds in direction when
              it excludes `null` (default 0; 0.5 for an AUC) on that side; an interval that
              reaches into value +- margin but is wider than the margin: holds in direction when it
              excludes `null` on the claimed side (the size untested), else inconclusive.
              `floor` (with `floor_se`): what a trivial method scores on the same scale (1% of
              the answers, the prior mean); when the floor would match too, the test has no
              power and the verdict is inconclusive
    bound     the paper's bound, estimate <= `bound` (or >= with side='>='): holds when the whole
              interval obeys it, does not hold when the whole interval breaks it, matches within
              noise when it straddles the bound and is narrower than 2 x margin, else inconclusive
    between   estimate strictly inside (low_band, high_band), e.g. better than a null band and
              short of perfect: holds when the interval is inside, does not hold when it is wholly
              outside, else inconclusive
    peak      a curve peaks at `at`, read on its per-seed values (x -> one value per seed, the
              seeds in one order), each point's gap to `at` paired over the seeds (t, seeds - 1
              df): holds when `at` is above every other point beyond q SE; does not hold when some
              point is above `at` beyond the quantile for the largest of the k - 1 comparisons;
              otherwise inconclusive (flat around `at` within its noise)
    unresolved  'inconclusive here: <limit> (why)' for a number without a spread (one draw, one seed)
    untestable  'not testable ...' with `why` (and `profile` for the smoke slice)

`show` glues the table and, when `$JEIRT_CLAIMS_DIR` is set (scripts/build_book.py sets it), writes
the page's rows there as JSON; `scorecard` gathers them for the Reproducing page, `tally` counts the
verdicts by source (the paper's claims alone, each other source apart, the mathematics outside), and

    python -m jeirt_book.verdicts tally results/claims_full_mmlu_pro.json

prints that tally; scripts/compare_claims.py lists the rows whose category moved between two builds.
Every decided row must be able to turn (`can_turn`: its rule, moved along its estimate with its spread
and thresholds kept, reaches the opposite verdict), or `show` refuses it. tests/test_book.py checks
that every results page builds its table here, quotes the paper through `jeirt_book.paper` and writes
no verdict by hand; tests/test_verdicts.py plants data where a claim is true, false and pure noise,
and `jeirt_book.calibration` (scripts/calibrate_rules.py) plants 200 of each world per kind of rule.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
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


def multiplier(df: float | None = None, tests: int = 1) -> float:
    """How many SEs an interval reaches either side: `SE_MULTIPLIER` (2) for a normal estimate, or the
    t quantile t(1 - 0.025 / tests, df) where that is larger (an SE from `df` degrees of freedom: 3
    seeds give df = 2 and 4.30); `tests` > 1 for the largest of that many comparisons (Bonferroni:
    the normal quantile 1 - 0.025 / tests without `df`)."""
    from scipy import stats

    if tests < 1 or int(tests) != tests:
        raise ValueError(f"tests={tests}; expected a whole number of comparisons, at least 1.")
    level = 1 - 0.025 / tests
    if df is None:
        return max(SE_MULTIPLIER, float(stats.norm.ppf(level)))
    if not (math.isfinite(float(df)) and df > 0):
        raise ValueError(f"df={df}; expected positive degrees of freedom (replicates - 1), or None for a normal SE.")
    return max(SE_MULTIPLIER, float(stats.t.ppf(level, df)))


def _interval(
    estimate: float,
    se: float | None,
    interval: Sequence[float] | None,
    df: float | None = None,
    tests: int = 1,
) -> tuple[float, float]:
    """The interval a rule reads: `interval` as given, or estimate +- `multiplier(df, tests)` x `se`."""
    if not math.isfinite(float(estimate)):
        raise ValueError(f"estimate={estimate}; expected a finite number.")
    if (se is None) == (interval is None):
        raise ValueError("give the estimate's spread as se= (a standard error) or interval=(low, high), one of them.")
    if interval is not None:
        if df is not None or tests != 1:
            raise ValueError("df= and tests= widen an se; an interval given as interval= is read as it is.")
        lo, hi = (float(v) for v in interval)
        if not lo <= hi:
            raise ValueError(f"interval={interval}; expected (low, high) with low <= high.")
        return lo, hi
    assert se is not None  # one of the two, checked above
    if not (math.isfinite(float(se)) and se >= 0):
        raise ValueError(f"se={se}; expected a finite, non-negative standard error.")
    q = multiplier(df, tests)
    return float(estimate) - q * se, float(estimate) + q * se


def _spread_words(interval: Sequence[float] | None, df: float | None = None, tests: int = 1) -> str:
    """How a rule's interval was made, for its words: 'interval +-2 SE', '+-4.3 SE (t, 2 df)', 'given'."""
    if interval is not None:
        return "interval given"
    words = f"interval +-{_g(multiplier(df, tests))} SE"
    detail = ([f"t, {_g(df)} df"] if df is not None else []) + ([f"largest of {tests}"] if tests > 1 else [])
    return words + (f" ({'; '.join(detail)})" if detail else "")


def above(
    estimate: float,
    *,
    limit: str,
    bound: float = 0.0,
    se: float | None = None,
    interval: Sequence[float] | None = None,
    df: float | None = None,
    tests: int = 1,
    size: float | None = None,
    margin: float = 0.0,
    headroom: float | None = None,
    given: Sequence | None = None,
) -> tuple[str, str]:
    """One-sided claim 'estimate > bound' (by at least `size` when given): (verdict, rule in words).
    `margin`: the smallest excess that matters (below bound + margin the claim fails); `headroom`: the
    largest value the data allows (a claimed size above it is inconclusive); `given`: (what, low, high),
    the interval of a premise the claim rests on, which must lie above 0 for the claim to be read."""
    return _one_sided(estimate, limit, bound, (se, interval, df, tests), size, margin, headroom, given, sign=1.0)


def below(
    estimate: float,
    *,
    limit: str,
    bound: float = 0.0,
    se: float | None = None,
    interval: Sequence[float] | None = None,
    df: float | None = None,
    tests: int = 1,
    size: float | None = None,
    margin: float = 0.0,
    headroom: float | None = None,
    given: Sequence | None = None,
) -> tuple[str, str]:
    """One-sided claim 'estimate < bound' (by `size`, i.e. below `size`, when given): the mirror of `above`;
    `headroom` is then the lowest value the data allows."""
    return _one_sided(estimate, limit, bound, (se, interval, df, tests), size, margin, headroom, given, sign=-1.0)


def _one_sided(estimate, limit, bound, spread, size, margin, headroom, given, sign: float) -> tuple[str, str]:
    """`above` (sign 1) and `below` (sign -1) on the flipped axis; `spread`: (se, interval, df, tests)."""
    inconclusive(limit)  # checks the words up front, so a missing reason fails on every machine
    if margin < 0:
        raise ValueError(f"margin={margin}; expected a non-negative smallest effect that matters.")
    lo, hi = _interval(estimate, *spread)
    op, lo_s, hi_s = (">", lo, hi) if sign > 0 else ("<", -hi, -lo)
    b, s = sign * bound, None if size is None else sign * size
    if s is not None and s < b:
        raise ValueError(f"size={size} lies on the wrong side of bound={bound} for a claim 'estimate {op} bound'.")
    rule = f"one-sided: estimate {op} {_g(bound)}" + (f" by at least {_g(size)}" if size is not None else "")
    rule += "; " + _spread_words(spread[1], *spread[2:])
    rule += f"; fails beyond a margin of {_g(margin)}" if margin else ""
    span = f"interval {_g(lo)} to {_g(hi)}"
    if given is not None:
        what, g_lo, g_hi = given
        rule += f"; read only where {what} lies above 0"
        if not float(g_lo) > 0:
            return inconclusive(limit, f"{what} is not above 0 beyond noise: interval {_g(g_lo)} to {_g(g_hi)}"), rule
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
    df: float | None = None,
    sign: int = 0,
    null: float = 0.0,
    floor: float | None = None,
    floor_se: float | None = None,
    floor_df: float | None = None,
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
    lo, hi = _interval(estimate, se, interval, df)
    rule = f"equals {_g(v_lo)}" + (f" to {_g(v_hi)}" if v_hi > v_lo else "") + f" within +-{_g(margin)}"
    rule += "; " + _spread_words(interval, df)
    rule += f"; direction {'>' if sign > 0 else '<'} {_g(null)}" if sign else ""
    wide = (hi - lo) / 2 > margin
    span = f"interval {_g(lo)} to {_g(hi)}"
    if floor is not None:
        if floor_se is None:
            raise ValueError("floor= needs floor_se=, the standard error of the trivial method's score.")
        f_lo, f_hi = _interval(floor, floor_se, None, floor_df)
        if f_hi >= v_lo - margin and f_lo <= v_hi + margin:
            return inconclusive(
                limit, f"the floor {_g(floor)} (interval {_g(f_lo)} to {_g(f_hi)}) matches too: no power"
            ), rule
    if not wide and v_lo - margin <= lo and hi <= v_hi + margin:
        return HOLDS, rule
    if not wide and lo <= v_hi and hi >= v_lo:
        return NOISE, rule
    directed = sign != 0 and (lo > null if sign > 0 else hi < null)
    if hi < v_lo - margin or lo > v_hi + margin:  # the size refuted, however wide the interval
        return (f"{DIRECTION} ({span} misses the size)", rule) if directed else (FAILS, rule)
    # the interval reaches into value +- margin without lying inside it: the size is neither shown nor refuted
    why = f"{span} is wider than the margin +-{_g(margin)}" if wide else f"{span} straddles the margin's edge"
    if directed:
        return f"{DIRECTION} (the size untested: {why})", rule
    return inconclusive(limit, why), rule


def bound(
    estimate: float,
    *,
    bound: float,
    margin: float,
    limit: str,
    side: str = "<=",
    se: float | None = None,
    interval: Sequence[float] | None = None,
    df: float | None = None,
) -> tuple[str, str]:
    """A bound of the paper, 'estimate <= bound' (or '>='), tested as a bound: (verdict, rule in words).
    `margin`: how far across the bound an interval may reach and still count as on it."""
    inconclusive(limit)
    if side not in ("<=", ">="):
        raise ValueError(f"side={side!r}; expected '<=' or '>='.")
    if margin < 0:
        raise ValueError(f"margin={margin}; expected a non-negative number.")
    lo, hi = _interval(estimate, se, interval, df)
    rule = f"bound: estimate {side} {_g(bound)}; " + _spread_words(interval, df)
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
    df: float | None = None,
) -> tuple[str, str]:
    """Claim 'low < estimate < high' (e.g. above a null band from random partitions and short of an
    upper band): (verdict, rule in words)."""
    inconclusive(limit)
    if not low < high:
        raise ValueError(f"low={low}, high={high}; expected low < high.")
    lo, hi = _interval(estimate, se, interval, df)
    rule = f"between {_g(low)} and {_g(high)}; " + _spread_words(interval, df)
    if low < lo and hi < high:
        return HOLDS, rule
    if hi <= low or lo >= high:
        return FAILS, rule
    return inconclusive(limit, f"interval {_g(lo)} to {_g(hi)} crosses a band's edge"), rule


def peak(curve: Mapping, *, at: float, limit: str) -> tuple[str, str]:
    """Claim 'the curve peaks at `at`', on the curve's per-seed values (`curve`: x -> one value per seed,
    the seeds in the same order for every x), each point's gap to `at` paired over the seeds: holds when
    `at` is above every other point beyond `multiplier(seeds - 1)` SE of its gap (each comparison must
    pass, so no correction for their number); does not hold when some point is above `at` beyond the
    quantile for the largest of the k - 1 comparisons (`multiplier(seeds - 1, k - 1)`); otherwise the
    curve is flat around `at` within its noise: inconclusive (whether `at` shares a top with its
    neighbours or the curve is flat throughout, a peak at `at` is not shown)."""
    inconclusive(limit)
    points = {float(x): [float(v) for v in values] for x, values in curve.items()}
    if float(at) not in points:
        raise ValueError(f"at={at} is not a point of the curve {sorted(points)}; measure it there first.")
    n_seeds = {len(v) for v in points.values()}
    if len(n_seeds) != 1 or min(n_seeds) < 2 or len(points) < 2:
        raise ValueError(f"curve: {sorted(n_seeds)} value(s) per point; give 2 points or more, one value per seed.")
    df, others = min(n_seeds) - 1, len(points) - 1
    q, q_any = multiplier(df), multiplier(df, tests=others)
    gaps = [mean_and_se([a - b for a, b in zip(points[float(at)], v)]) for x, v in points.items() if x != float(at)]
    rule = (
        f"peak at {_g(at)}: above every other point beyond +-{_g(q)} SE of the gap paired over seeds; "
        f"below one beyond +-{_g(q_any)} SE (the largest of {others}) fails"
    )
    if all(g - q * se > 0 for g, se in gaps):
        return HOLDS, rule
    if any(g + q_any * se < 0 for g, se in gaps):
        return FAILS, rule
    return inconclusive(limit, f"the curve is flat around {_g(at)} within its noise"), rule


def unresolved(limit: str, why: str) -> tuple[str, str]:
    """'inconclusive here: <limit> (why)' for a number measured without a spread (one simulated
    draw, one seed): a verdict rests on a spread, so it decides nothing. (verdict, rule in words)."""
    if not why.strip():
        raise ValueError("why=: say why the number has no spread (e.g. 'one seed in the smoke profile').")
    return inconclusive(limit, why), "no spread: decides nothing"


def untestable(why: str, profile: str | None = None) -> tuple[str, str]:
    """'not testable here: why' (or 'in the <profile> profile'): (verdict, rule in words)."""
    return verdict(None, why=why, profile=profile), "not testable"


RULES: dict[str, Callable[..., tuple[str, str]]] = {
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
    gaps = np.asarray(gaps, dtype=float)
    if len(gaps) < 2:
        raise ValueError(f"{len(gaps)} paired difference(s); a standard error needs at least 2.")
    return float(gaps.mean()), float(gaps.std(ddof=1) / np.sqrt(len(gaps)))


def paired_over_seeds(gaps) -> dict:
    """A gap paired by seed (one value per seed: a method minus the reference trained on the same split
    from the same seed, or two points of one curve), as a rule reads it: {'estimate', 'se', 'df'}, the
    mean, its SE over the seeds and seeds - 1 degrees of freedom (t quantiles: 3 seeds decide only a
    gap of 4.3 SE)."""
    mean, se = mean_and_se(gaps)
    return {"estimate": mean, "se": se, "df": len(np.asarray(gaps)) - 1}


def clustered_se(values: pd.Series) -> dict:
    """The mean of per-(seed, model) values (`values`: a Series on a (seed, model) MultiIndex, e.g. one
    held-out model's gap per seed) with an SE clustered by seed and by model, as a rule reads it:
    {'estimate', 'se', 'df'}. Rows of one seed share that seed's fits and split; rows of one model share
    the model: neither is an independent draw. Two-way cluster-robust variance (Cameron, Gelbach and
    Miller 2011): V_seed + V_model - V_rows, at least the larger of the first two; its degrees of
    freedom by Satterthwaite's approximation over the three parts (each on its clusters - 1), so a seed
    part that is large leaves the few seeds' df and a small one leaves the models' (planted worlds:
    "holds" at most 3.3% on the boundary, scripts/calibrate_rules.py). With models nested in seeds
    (other models per seed) it is the SE of the per-seed means; with the same models in every seed it
    adds the models' spread."""
    if not isinstance(values.index, pd.MultiIndex) or values.index.nlevels != 2:
        raise ValueError("values: a Series on a (seed, model) MultiIndex, one value per pair.")
    x = values.astype(float).dropna()
    seeds, models = (x.index.get_level_values(i) for i in (0, 1))
    n_seeds, n_models = len(set(seeds)), len(set(models))
    if n_seeds < 2 or n_models < 2:
        raise ValueError(f"{n_seeds} seed(s) and {n_models} model(s); an SE clustered by both needs 2 of each.")
    residual = x - x.mean()

    def cluster_variance(groups) -> tuple[float, int]:
        sums = residual.groupby(np.asarray(groups)).sum().to_numpy()
        g = len(sums)
        return float(g / (g - 1) * (sums**2).sum() / len(x) ** 2), g - 1

    (v_seed, df_seed), (v_model, df_model), (v_rows, df_rows) = (
        cluster_variance(groups) for groups in (seeds, models, np.arange(len(x)))
    )
    v = v_seed + v_model - v_rows
    if v < max(v_seed, v_model):  # the larger one-way part, on its own clusters
        v, df = (v_seed, float(df_seed)) if v_seed >= v_model else (v_model, float(df_model))
    else:
        df = v**2 / (v_seed**2 / df_seed + v_model**2 / df_model + v_rows**2 / df_rows)
    return {"estimate": float(x.mean()), "se": float(np.sqrt(v)), "df": float(max(df, 1.0))}


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
    # what the rule read: {'rule': its name in RULES, and its arguments}, numbers and words only, so a
    # build's rows can be judged again (scripts/compare_claims.py, tests of each row's rule)
    inputs: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name == "inputs":
                continue
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
class NoVerdict:
    """A statistic the data cannot decide, in place of a `Stat` in a page's stats: the row that reads it
    becomes not testable ('not testable here: why', or in the smoke `profile`), or, for a number without
    a spread (`limit` given: one seed, one draw), inconclusive with `why` (`unresolved`)."""

    words: str  # the row's 'this book' cell ('1 peak at 0.92', 'not fitted (one encoder)')
    why: str  # why no verdict: 'one benchmark', 'one seed: no spread'
    profile: str | None = None  # the profile that cannot carry the claim (the smoke slice), if that is why
    limit: str | None = None  # a number measured without a spread: 'inconclusive here: <limit> (why)'

    def __post_init__(self) -> None:
        if not self.words.strip() or not self.why.strip():
            raise ValueError("NoVerdict: give the row's words and why the data cannot decide it.")

    def __str__(self) -> str:
        return f"{self.words} (no verdict: {self.why})"

    def text(self) -> str:
        """The row's 'this book' cell."""
        return self.words

    def rule_args(self) -> dict:
        """The row's rule and its arguments: `unresolved` with `limit`, else `untestable`."""
        if self.limit is not None:
            return {"rule": "unresolved", "limit": self.limit, "why": self.why}
        return {"rule": "untestable", "why": self.why} | ({"profile": self.profile} if self.profile else {})


@dataclass(frozen=True)
class Stat:
    """A number a declared row reads (`declare`'s `stat=`): its value, its spread (a standard error `se`
    or an `interval`) and how it prints, so the row's 'this book' cell comes from the number itself:
    '<label> <value> +- <se><unit> (<note>)', or '<label> <value><unit> (interval <low> to <high><unit>)'."""

    value: float
    se: float | None = None
    interval: tuple[float, float] | None = None
    df: float | None = None  # the se's degrees of freedom where it rests on few replicates (seeds - 1)
    tests: int = 1  # the largest of this many comparisons (its interval widened for the choice)
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
            _interval(self.value, self.se, self.interval, self.df, self.tests)

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
            out |= {"df": float(self.df)} if self.df is not None else {}
            out |= {"tests": int(self.tests)} if self.tests != 1 else {}
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
            said = [f"SE on {self.df:g} df"] if self.df is not None else []
            said += [f"the largest of {self.tests}"] if self.tests != 1 else []
            if said:
                return words + f" ({'; '.join(said + ([self.note] if self.note else []))})"
        elif self.interval is None:
            words += self.unit
        else:  # the interval and the note share one parenthesis
            span = f"interval {num(self.interval[0])} to {num(self.interval[1])}{self.unit}"
            return f"{words}{self.unit} ({span}" + (f"; {self.note})" if self.note else ")")
        return words + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Curve:
    """A curve a `peak` row reads, in place of a `Stat`: per point x its values, one per seed in one
    order (`peak` pairs the points over the seeds), and the row's 'this book' cell."""

    values: Mapping  # x -> [one value per seed]
    words: str  # the 'this book' cell ('best d = 128 (all-mpnet-base-v2)')
    data: str = ""
    setting: str = ""
    rule_args: Mapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        counts = {len(v) for v in self.values.values()}
        if len(self.values) < 2 or len(counts) != 1 or min(counts) < 2:
            raise ValueError("Curve: give 2 points or more, each with one value per seed (2 seeds or more).")

    def spread(self) -> dict:
        return {"curve": {x: [float(v) for v in vals] for x, vals in self.values.items()}}

    def text(self) -> str:
        return self.words

    def __str__(self) -> str:
        return f"{self.words} ({len(next(iter(self.values.values())))} seeds)"


def declare(rows: Sequence[Mapping], stats: Mapping[str, Stat | NoVerdict] | None = None, **shared) -> list[dict]:
    """A page's claims as declared rows, completed: a row's `stat` (a name in `stats`) gives its
    estimate, spread and 'this book' cell (`Stat.text`, unless the row has `ours`), and its data,
    setting and `rule_args` where the row names none; a `NoVerdict` stat makes the row not testable
    (or unresolved) with its reason, whatever rule the row names; a `paper` given as a tuple of keys
    is `jeirt_book.paper.quote(*keys)`; `shared` (data=, setting=, limit=) fills the keys left. The
    rows go on to `show` (or `judge`)."""
    from jeirt_book import paper

    stats = {} if stats is None else stats
    unknown = [k for k in shared if k not in (*ROW_KEYS, "limit")]
    if unknown:
        raise ValueError(f"shared keys {unknown}; only row keys {ROW_KEYS} and limit can be shared across rows.")
    out = []
    for given in rows:
        row = dict(given)
        name = row.pop("stat", None)
        if name is not None and name not in stats:
            raise KeyError(f"row {row.get('claim')!r}: stat={name!r} is not among the stats {sorted(stats)}.")
        stat = stats[name] if name is not None else None
        if isinstance(stat, NoVerdict):  # the data cannot decide: the stat says why
            row = {k: v for k, v in row.items() if k in ROW_KEYS} | stat.rule_args()
            row.setdefault("ours", stat.words)
        if isinstance(stat, str):
            raise TypeError(f"row {row.get('claim')!r}: stat {name!r} is words; give a NoVerdict with the reason.")
        untestable = row.get("rule") == "untestable"
        row = {k: v for k, v in shared.items() if not (untestable and k == "limit")} | row
        if isinstance(stat, (Stat, Curve)):
            row |= {k: getattr(stat, k) for k in ("data", "setting") if getattr(stat, k) and k not in given}
            if row.get("rule") not in ("untestable", "unresolved"):  # rules that read a number
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
        text, rule = RULES[name](**args)
    except TypeError as err:
        raise TypeError(f"row {row['claim']!r}, rule {name!r}: {err}") from None
    keep = {k: row[k] for k in ("claim", "paper", "ours", "data", "setting", "source")}
    return Claim(**keep, verdict=text, rule=rule, inputs={"rule": name, **_plain(args)})


def _plain(value):
    """A rule's arguments as JSON holds them: numbers as float or int, tuples as lists, keys as text."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value


def rejudge(inputs: Mapping) -> str:
    """The verdict a row's rule gives on `inputs` (a `Claim.inputs`, as a build wrote it): its name and
    arguments, a peak's curve keys read back as numbers."""
    args = {k: v for k, v in inputs.items() if k != "rule"}
    if inputs["rule"] == "peak":
        args["curve"] = {float(x): v for x, v in args["curve"].items()}
    for key in ("interval", "given"):
        if key in args and args[key] is not None:
            args[key] = tuple(args[key])
    return RULES[inputs["rule"]](**args)[0]


# What a decided verdict's opposite is: a row that holds must be able to fail on data of its shape, and
# the reverse; an inconclusive row claims nothing either way.
OPPOSITE = {HOLDS: (FAILS,), NOISE: (FAILS,), DIRECTION: (FAILS,), FAILS: (HOLDS, NOISE, DIRECTION)}


def reachable(inputs: Mapping) -> set[str]:
    """The verdict words a row's rule gives on data of that row's shape planted at other values: its
    estimate moved (a given interval with it, a peak's claimed point moved against the others), its
    spread, degrees of freedom and thresholds kept. Every region the rule's edges cut the line into is
    visited (the estimate at each edge, plus and minus the interval's reach, and between them)."""
    name = inputs["rule"]
    if name in ("untestable", "unresolved"):
        return set()
    if name == "peak":
        curve = {float(x): [float(v) for v in vals] for x, vals in inputs["curve"].items()}
        at = float(inputs["at"])
        n = len(curve[at])
        reach = multiplier(n - 1, tests=max(len(curve) - 1, 1))
        edges = []
        for x, vals in curve.items():
            if x != at:
                g, se = mean_and_se([a - b for a, b in zip(curve[at], vals)])
                edges += [-g + k * reach * se for k in (-1, 0, 1)] + [-g + k * multiplier(n - 1) * se for k in (-1, 1)]
        shifts = _between(edges)
        lifted = (
            {**inputs, "curve": {x: [v + s if x == at else v for v in vals] for x, vals in curve.items()}}
            for s in shifts
        )
        return {word(rejudge(m)) for m in lifted}
    estimate = float(inputs["estimate"])
    if inputs.get("interval") is not None:
        lo, hi = (float(v) for v in inputs["interval"])
    else:
        q = multiplier(inputs.get("df"), inputs.get("tests", 1))
        lo, hi = estimate - q * float(inputs["se"]), estimate + q * float(inputs["se"])
    thresholds = [0.0]  # the default bound of `above` and `below`, the default null of `matches`
    for key in ("bound", "size", "margin", "null", "low", "high", "headroom", "value"):
        value = inputs.get(key)
        if isinstance(value, (int, float)):
            thresholds.append(float(value))
        elif isinstance(value, (list, tuple)):
            thresholds += [float(v) for v in value]
    margin = float(inputs.get("margin") or 0.0)
    points = [t + m for t in thresholds for m in (-margin, 0.0, margin)] + [estimate]
    edges = [p - estimate + e for p in points for e in (estimate - lo, 0.0, estimate - hi)]
    words = set()
    for s in _between(edges):
        moved = {**inputs, "estimate": estimate + s}
        if inputs.get("interval") is not None:
            moved["interval"] = [lo + s, hi + s]
        words.add(word(rejudge(moved)))
    return words


def _between(edges: Sequence[float]) -> list[float]:
    """Points that visit every region the sorted `edges` cut the line into: each edge, the midpoints
    between neighbours, and one beyond each end."""
    cuts = sorted(set(float(e) for e in edges))
    span = 10 * max(cuts[-1] - cuts[0], 1.0) if cuts else 1.0
    mids = [(a + b) / 2 for a, b in zip(cuts, cuts[1:])]
    return [cuts[0] - span, *cuts, *mids, cuts[-1] + span] if cuts else [0.0]


def can_turn(claim: Claim) -> bool:
    """Whether `claim`'s rule can return the opposite of its verdict (`OPPOSITE`) on data of the row's
    shape (`reachable`): True for an inconclusive or untestable row, which claims nothing."""
    said = word(claim.verdict)
    if not claim.inputs:  # a Claim built by hand (tests, old snapshots): no rule to move
        return True
    return said not in OPPOSITE or bool(reachable(claim.inputs) & set(OPPOSITE[said]))


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
    (the page is `name` less its '_paper_vs_book', e.g. 'ood') and return it. A decided row whose rule
    cannot return the opposite verdict on data of its shape (`can_turn`) is an error: a claim that
    cannot fail is no test."""
    from IPython.display import HTML

    from jeirt_book import glue

    if not name.endswith("_paper_vs_book"):
        raise ValueError(f"name={name!r}; expected '<page prefix>_paper_vs_book'.")
    if stats is not None or shared:
        rows = [r if isinstance(r, Claim) else declare([r], stats, **shared)[0] for r in rows]
    claims = [judge(r) if isinstance(r, Mapping) else r for r in rows]
    stuck = [f"{c.claim!r} ({c.verdict})" for c in claims if not can_turn(c)]
    if stuck:
        raise ValueError(
            f"{name}: the rule of {'; '.join(stuck)} cannot return the opposite verdict on data of the row's "
            "shape: test the claim against a null it can fail (random partitions, a null world), or declare it "
            "untestable with the reason."
        )
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
