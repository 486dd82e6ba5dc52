"""Every kind of verdict rule on planted worlds: is "holds" rare where the claim sits on its boundary,
and common where it is far from it?

Each kind of rule of `jeirt_book.verdicts` meets data shaped like the rows that use it (a gap paired
over 3 or 20 seeds, (seed, model) pairs, thousands of questions, a share against 12 null redraws, a
curve over seeds, ...), drawn 200 times in each of three worlds:

    boundary    the claim exactly on its edge (no gap; the gap at the margin; a value on the bound; a
                flat curve): "holds" must come out at most 5% of the time
    far         the claim true, twice the interval's reach (2 q SE, `verdicts.multiplier`) inside its
                edge: "holds" at least 80% of the time
    opposite    the claim false by as much: "does not hold" at least 80% of the time (where the rule
                can say it)

A positive verdict is "holds", or "holds in direction" for a rule that reads a direction, or "matches
within noise" for an equivalence. The designs marked "before" are the rules as the book read them
until now (2 SE whatever the replicates; (seed, model) pairs as independent; a curve's points
unpaired): they show what the t quantiles and the clustered SEs fix, and are not held to the bounds.

    python scripts/calibrate_rules.py      # the table, and exit status 1 where a bound is missed
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from jeirt_book import verdicts

DRAWS = 200
WORLDS = ("far", "boundary", "opposite")
BOUNDARY_MAX = 0.05  # "holds" at most this often on the boundary
FAR_MIN = 0.80  # "holds" (far) and "does not hold" (opposite) at least this often


@dataclass(frozen=True)
class Design:
    """A kind of rule on data shaped like its rows: `draw(shift, rng)` plants a world whose true value
    is the boundary moved by `shift` reaches towards the claim (+1: far, 0: boundary, -1: opposite) and
    returns the verdict's word."""

    kind: str  # the rule kind (one-sided, equivalence within a margin, bound, direction, ...)
    design: str  # the data, as the rows that use it have it
    draw: Callable[[float, np.random.Generator], str]
    before: bool = False  # the old reading, shown for comparison, held to no bound
    opposite: bool = True  # whether the rule can say "does not hold" on this design


def _word(result: tuple[str, str]) -> str:
    return verdicts.word(result[0])


def _paired_seeds(n_seeds: int, df: bool = True) -> Callable[[float, np.random.Generator], str]:
    """'one-sided': a gap paired over `n_seeds` seeds, sd 1 per seed; claim gap > 0."""
    reach = verdicts.multiplier(n_seeds - 1 if df else None) / np.sqrt(n_seeds)

    def draw(shift: float, rng: np.random.Generator) -> str:
        gaps = rng.normal(2 * shift * reach, 1.0, n_seeds)
        spread = verdicts.paired_over_seeds(gaps)
        if not df:
            spread.pop("df")
        return _word(verdicts.above(**spread, limit=f"{n_seeds} seeds"))

    return draw


def _seed_model(
    n_seeds: int, n_models: int, clustered: bool = True, seed_sd: float = 1.0
) -> Callable[[float, np.random.Generator], str]:
    """'one-sided' on (seed, model) pairs: `n_models` models drawn per seed (a seed effect, sd `seed_sd`,
    shared by its models: the fits and split; a model effect, sd 1); claim mean > 0."""
    true_se = np.sqrt(seed_sd**2 / n_seeds + 1 / (n_seeds * n_models) + 0.25 / (n_seeds * n_models))
    reach = verdicts.multiplier(min(n_seeds, n_models) - 1) * true_se
    index = pd.MultiIndex.from_product([range(n_seeds), range(n_models)], names=["seed", "model"])

    def draw(shift: float, rng: np.random.Generator) -> str:
        seed_effect = np.repeat(rng.normal(0, seed_sd, n_seeds), n_models)
        values = 2 * shift * reach + seed_effect + rng.normal(0, 1, n_seeds * n_models) + rng.normal(0, 0.5, len(index))
        values = pd.Series(values, index=index)
        if clustered:
            spread = verdicts.clustered_se(values)
        else:
            mean, se = verdicts.mean_and_se(values)
            spread = {"estimate": mean, "se": se}
        return _word(verdicts.above(**spread, limit="pairs"))

    return draw


def _large_sample(n: int) -> Callable[[float, np.random.Generator], str]:
    """'one-sided' on a mean over `n` questions (sd 1 each): the normal case, 2 SE."""
    reach = verdicts.multiplier() / np.sqrt(n)

    def draw(shift: float, rng: np.random.Generator) -> str:
        mean, se = verdicts.mean_and_se(rng.normal(2 * shift * reach, 1.0, n))
        return _word(verdicts.above(mean, se=se, limit=f"{n} questions"))

    return draw


def _equivalence(n_seeds: int) -> Callable[[float, np.random.Generator], str]:
    """'equivalence within a margin': a gap paired over `n_seeds` seeds (sd 1) against 0 within a
    margin of 2 reaches: far is a gap of 0, the boundary a gap at the margin, opposite one reach past it."""
    reach = verdicts.multiplier(n_seeds - 1) / np.sqrt(n_seeds)
    margin = 2 * reach

    def draw(shift: float, rng: np.random.Generator) -> str:
        true = margin * (1 - shift) if shift >= 0 else margin + 2 * reach
        spread = verdicts.paired_over_seeds(rng.normal(true, 1.0, n_seeds))
        return _word(verdicts.matches(**spread, value=0.0, margin=margin, limit=f"{n_seeds} seeds"))

    return draw


def _bound(points: int) -> Callable[[float, np.random.Generator], str]:
    """'bound': a log-log slope at or below -1 fitted through `points` budgets (its SE from the
    residuals, `points` - 2 df; true SE 0.1)."""
    df = points - 2
    reach = verdicts.multiplier(df) * 0.1

    def draw(shift: float, rng: np.random.Generator) -> str:
        slope = -1.0 - 2 * shift * reach + rng.normal(0, 0.1)
        se = 0.1 * np.sqrt(rng.chisquare(df) / df)
        return _word(verdicts.bound(slope, se=se, df=df, bound=-1.0, margin=0.1 * reach, limit="budgets"))

    return draw


def _direction(n: int) -> Callable[[float, np.random.Generator], str]:
    """'direction': an AUC over `n` questions (SE 0.5 / sqrt(n)) claimed above chance and near a paper's
    0.75 that it misses: the boundary is chance, 0.5."""
    se = 0.5 / np.sqrt(n)
    reach = verdicts.multiplier() * se

    def draw(shift: float, rng: np.random.Generator) -> str:
        auc = 0.5 + 2 * shift * reach + rng.normal(0, se)
        return _word(verdicts.matches(auc, se=se, value=0.75, margin=0.01, sign=1, null=0.5, limit="questions"))

    return draw


def _excess(replicates: int, df: bool = True) -> Callable[[float, np.random.Generator], str]:
    """'excess over a null': a share against `replicates` redraws of a null world (a parametric bootstrap;
    sd 1 each), the excess's SE the null's sd times sqrt(1 + 1 / R), on R - 1 df."""
    factor = np.sqrt(1 + 1 / replicates)
    reach = verdicts.multiplier(replicates - 1 if df else None) * factor

    def draw(shift: float, rng: np.random.Generator) -> str:
        null = rng.normal(0, 1, replicates)
        share = 2 * shift * reach + rng.normal(0, 1)
        se = null.std(ddof=1) * factor
        dof = replicates - 1 if df else None
        return _word(verdicts.above(share - null.mean(), se=se, df=dof, limit=f"{replicates} redraws"))

    return draw


def _band(starts: int) -> Callable[[float, np.random.Generator], str]:
    """'between two bands': a score over `starts` k-means starts (sd 1 each) claimed above a null band
    (0) and below a ceiling far above; the boundary is the null band's edge."""
    reach = verdicts.multiplier(starts - 1) / np.sqrt(starts)

    def draw(shift: float, rng: np.random.Generator) -> str:
        spread = verdicts.paired_over_seeds(rng.normal(2 * shift * reach, 1.0, starts))
        return _word(verdicts.between(**spread, low=0.0, high=100.0, limit=f"{starts} starts"))

    return draw


def _peak(n_seeds: int, paired: bool = True) -> Callable[[float, np.random.Generator], str]:
    """'peak': a curve of 8 points over `n_seeds` seeds; each seed shifts the whole curve (sd 1: its
    split), each point adds noise (sd 0.2). Far: the claimed point stands 2 reaches of a paired gap above
    the rest; boundary: a flat curve; opposite: the claimed point 2 reaches below, the reach of the
    largest of 7 comparisons (what failing needs)."""
    xs = [8, 16, 32, 64, 128, 256, 512, 1024]
    gap_se = 0.2 * np.sqrt(2 / n_seeds)
    # holding needs every gap beyond q SE; failing needs one beyond the quantile for the largest of 7
    reach = {1.0: verdicts.multiplier(n_seeds - 1), -1.0: verdicts.multiplier(n_seeds - 1, len(xs) - 1), 0.0: 0.0}

    def draw(shift: float, rng: np.random.Generator) -> str:
        seed_shift = rng.normal(0, 1.0, n_seeds)
        lift = 2 * shift * reach[shift] * gap_se
        curve = {x: seed_shift + rng.normal(0, 0.2, n_seeds) + (lift if x == 256 else 0.0) for x in xs}
        if paired:
            return _word(verdicts.peak(curve, at=256, limit="seeds"))
        # before: each point's mean against the others' with the SE of a point over seeds, unpaired
        means = {x: float(np.mean(v)) for x, v in curve.items()}
        point_se = float(np.mean([np.std(v, ddof=1) / np.sqrt(n_seeds) for v in curve.values()]))
        tie = verdicts.SE_MULTIPLIER * np.sqrt(2) * point_se
        best = max(means.values())
        if best - min(means.values()) <= tie:
            return verdicts.INCONCLUSIVE
        near = [x for x, m in means.items() if m >= best - tie]
        return verdicts.HOLDS if near == [256] else (verdicts.NOISE if 256 in near else verdicts.FAILS)

    return draw


DESIGNS = (
    Design("one-sided", "a gap paired over 3 seeds (t, 2 df)", _paired_seeds(3)),
    Design("one-sided", "a gap paired over 3 seeds, 2 SE", _paired_seeds(3, df=False), before=True),
    Design("one-sided", "a gap paired over 20 seeds (t, 19 df)", _paired_seeds(20)),
    Design("one-sided", "10 models drawn per seed x 3 seeds, clustered", _seed_model(3, 10)),
    Design("one-sided", "10 models x 3 seeds, a small seed part (sd 0.3), clustered", _seed_model(3, 10, seed_sd=0.3)),
    Design("one-sided", "10 models drawn per seed x 3 seeds, pairs as independent", _seed_model(3, 10, False), True),
    Design("one-sided", "a mean over 1,000 questions (normal, 2 SE)", _large_sample(1000)),
    Design("equivalence within a margin", "a gap paired over 20 seeds (t, 19 df)", _equivalence(20)),
    Design("equivalence within a margin", "a gap paired over 3 seeds (t, 2 df)", _equivalence(3)),
    Design("bound", "a log-log slope through 4 budgets (t, 2 df)", _bound(4)),
    Design("direction", "an AUC over 1,000 questions, the paper's size missed", _direction(1000), opposite=False),
    Design("excess over a null", "a share against 12 null redraws (t, 11 df)", _excess(12)),
    Design("excess over a null", "a share against 12 null redraws, 2 SE", _excess(12, df=False), before=True),
    Design("between two bands", "a score over 5 k-means starts (t, 4 df)", _band(5)),
    Design("peak", "8 points x 3 seeds, gaps paired over seeds (t, 2 df)", _peak(3)),
    Design("peak", "8 points x 3 seeds, points unpaired", _peak(3, paired=False), before=True),
)
SHIFTS = {"far": 1.0, "boundary": 0.0, "opposite": -1.0}
POSITIVE = (verdicts.HOLDS, verdicts.DIRECTION, verdicts.NOISE)


def calibrate(draws: int = DRAWS, seed: int = 0, designs: tuple[Design, ...] = DESIGNS) -> pd.DataFrame:
    """One row per design and world: the share of `draws` planted data sets that got each verdict, the
    bound the world is held to and whether it is met (None for a design shown only for comparison)."""
    rows = []
    for design in designs:
        key = zlib.crc32(f"{design.kind}: {design.design}".encode())  # a design's draws do not move with the list
        for j, world in enumerate(WORLDS):
            rng = np.random.default_rng([seed, key, j])
            words = pd.Series([design.draw(SHIFTS[world], rng) for _ in range(draws)])
            share = {w: float((words == w).mean()) for w in verdicts.VERDICTS}
            positive = sum(share[w] for w in POSITIVE)
            if world == "boundary":
                bound, met = f"holds <= {BOUNDARY_MAX:.0%}", positive <= BOUNDARY_MAX
            elif world == "far":
                bound, met = f"holds >= {FAR_MIN:.0%}", positive >= FAR_MIN
            elif design.opposite:
                bound, met = f"does not hold >= {FAR_MIN:.0%}", share[verdicts.FAILS] >= FAR_MIN
            else:
                bound, met = "(cannot say it)", True
            rows.append(
                {
                    "rule kind": design.kind,
                    "design": design.design + (" [before]" if design.before else ""),
                    "world": world,
                    "holds": positive,
                    "does not hold": share[verdicts.FAILS],
                    "inconclusive": share[verdicts.INCONCLUSIVE],
                    "bound": bound,
                    "met": None if design.before else bool(met),
                }
            )
    return pd.DataFrame(rows)


def table_text(table: pd.DataFrame) -> str:
    """The calibration table as the command prints it: shares in %, 'yes' / 'NO' / '-' for the bound."""
    shown = table.copy()
    for column in ("holds", "does not hold", "inconclusive"):
        shown[column] = shown[column].map(lambda x: f"{100 * x:.1f}%")
    shown["met"] = shown["met"].map({True: "yes", False: "NO", None: "-"})
    return shown.to_string(index=False)
