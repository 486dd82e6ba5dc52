"""Design-based estimates: unbiased whatever the model gets wrong (`design_estimates`).

A difference estimator (prediction-powered inference): the answers asked count as they are, the rest get
the model's cross-fitted predictions corrected by the random draws' residuals, weighted by their
inclusion probabilities (`inclusion_probabilities`). `jeirt estimate` reports it beside the
model-based estimate (`jeirt.tasks.evaluation.scoring.score_new_models`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from jeirt.tasks.evaluation.bank import GROUP_SD, OVERALL, QuestionBank, check_estimate_inputs

DESIGN = "design"  # the method name of `design_estimates` in tables beside the model-based "je-irt"


def inclusion_probabilities(
    asked: np.ndarray, sampled: np.ndarray, pool: np.ndarray, strata: np.ndarray | None = None
) -> np.ndarray:
    """(n_new, n_items) each question's probability of having been drawn, as a selection rule drew it:
    1 for a question asked by choice (an adaptive or kmeans pick, a certainty unit), n_h / N_h for one of
    the n_h questions drawn at random from the N_h questions of its stratum h in `pool` (the questions
    the draw could take; `strata` (n_items,) the benchmarks for the stratified rule, None for one
    stratum), 0 for a question not asked. `sampled` marks the random draws among the `asked`. The picks
    by choice leave the pool: the random draws stand for the questions not picked by choice (for an
    adaptive rule, whose picks follow the answers drawn before them, that is the design read as a
    simple random sample of the rest, which `benchmarks/new_models.py` measures)."""
    asked, sampled = np.atleast_2d(np.asarray(asked, dtype=bool)), np.atleast_2d(np.asarray(sampled, dtype=bool))
    pool = np.broadcast_to(np.asarray(pool, dtype=bool), asked.shape)
    if sampled.shape != asked.shape or (sampled & ~asked).any() or (sampled & ~pool).any():
        raise ValueError(
            f"sampled (shape {sampled.shape}) must mark asked questions of the pool only, shaped like "
            f"asked {asked.shape}."
        )
    codes = np.zeros(asked.shape[1], dtype=np.int64) if strata is None else pd.factorize(np.asarray(strata))[0]
    if len(codes) != asked.shape[1]:
        raise ValueError(f"strata has {len(codes)} entries; expected one per question ({asked.shape[1]}).")
    out = np.where(asked, 1.0, 0.0)
    pool = pool & ~(asked & ~sampled)
    for i in range(len(asked)):
        drawn = np.bincount(codes[sampled[i]], minlength=codes.max() + 1)
        size = np.bincount(codes[pool[i]], minlength=codes.max() + 1)
        out[i, sampled[i]] = (drawn / np.maximum(size, 1))[codes[sampled[i]]]
    return out


def design_estimates(
    bank: QuestionBank,
    labels: np.ndarray,
    asked: np.ndarray,
    inclusion: np.ndarray,
    targets: np.ndarray | None = None,
    level: float = 0.9,
    models: Sequence[str] | None = None,
    predictions: np.ndarray | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Each new model's accuracy overall and per benchmark, unbiased by design (a difference estimator,
    prediction-powered inference): for the questions Q of a group,

        acc(Q) = ( sum_{asked} y_q + sum_{not asked} p_q + M r_bar ) / |Q|,

    the answers asked counted as they are, the M questions not asked given the model's prediction p_q,
    and r_bar the mean residual y - p of the questions drawn at random (inclusion probability pi < 1),
    weighted by 1 / pi - 1 (Hajek: the stratified rule's strata each at their share). Whatever p gets
    wrong, r_bar measures it on a probability sample of the questions not picked by choice, so the
    estimate errs only by that sample's noise; the model's quality only narrows the interval.

    The predictions must not have seen the random answers they are checked on. Default (cross-fitting):
    the random draws are split in two halves, benchmark by benchmark (`seed`); each half's residuals
    are taken from E[P(q)] under `bank.posterior` of the picks by choice (pi = 1) and the other half,
    and the estimate is the mean of the two halves' (each unbiased given the other half: it is a random
    sample of the questions the other half left). Given `predictions` (n_new, n_items) fixed in
    advance, they serve for every draw. `inclusion` (n_new, n_items): `inclusion_probabilities` (1 for
    a pick by choice, which counts as observed; 0 where not asked). The interval: estimate +- t_{n-1} x
    se, se^2 = (M / |Q|)^2 (1 - n / (n + M)) s_w^2 / n, s_w^2 the weighted variance of the n random
    draws' residuals (finite-population correction for the rest). With fewer than 2 random draws in a
    group the interval is NaN (and with none the estimate too): `note` says so. Returns one row per
    (model, group): items, asked, sampled, estimate, sd (its standard error), lower, upper, note.
    """
    labels, asked = bank._check(labels, asked)
    inclusion = _check_inclusion(bank, asked, inclusion)
    targets, models, _ = check_estimate_inputs(asked, targets, level, models, None)
    chosen = asked & (inclusion >= 1)
    sampled = asked & ~chosen
    half, predictions = _cross_fitted(bank, labels, chosen, sampled, seed, predictions)
    rows = []
    for i, name in enumerate(models):
        groups = []  # this model's groups: (row, the draws' residuals and weights, M, |Q|, known, prediction sum)
        for group in [OVERALL] + bank.benchmarks:
            inside = targets[i] & (True if group == OVERALL else bank.groups == group)
            if not inside.any():
                continue
            at, rest, size = inside & sampled[i], inside & ~asked[i], int(inside.sum())
            row = {"model": name, "group": group, "items": size, "asked": int((inside & asked[i]).sum())}
            known = labels[i, inside & asked[i]].sum()
            parts = []
            for j, p in enumerate(predictions):  # each half's residuals under the predictions that did not see it
                part = at & (half[i] == j)
                if part.any():
                    parts.append((labels[i, part], p[i, part], inclusion[i, part], p[i, rest].sum()))
            row |= _difference_estimate(known, size, int(at.sum()), int(rest.sum()), parts, level)
            rest_sum = float(np.mean([p[i, rest].sum() for p in predictions]))
            groups.append((row, _Draws.of(parts), int(rest.sum()), size, known, rest_sum))
        rows += _with_shrunk(groups, level)
    return pd.DataFrame(rows)


# The between-benchmark sd (accuracy units) of a new model's mean residual that the shrunk estimate
# assumes at least (with 3 or more benchmarks drawn: more where the draws show more), and assumes where
# fewer benchmarks were drawn (the model-based estimate's per-benchmark prior, GROUP_SD logits, near
# p = 0.5). How they were chosen: DECISIONS.md ("Per-benchmark estimates").
SHRINK_FLOOR_SD = 0.05
SHRINK_PRIOR_SD = 0.25 * GROUP_SD


@dataclass
class _Draws:
    """One group's random draws: residuals (each under the predictions that did not see it) and design
    weights."""

    resid: np.ndarray
    weight: np.ndarray

    @classmethod
    def of(cls, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]]) -> _Draws:
        if not parts:
            return cls(np.zeros(0), np.zeros(0))
        return cls(
            np.concatenate([y - p for y, p, _, _ in parts]), design_weights(np.concatenate([pi for *_, pi, _ in parts]))
        )

    @property
    def n(self) -> int:
        return len(self.resid)

    @property
    def mean(self) -> float:
        return float(self.weight @ self.resid / self.weight.sum())

    @property
    def effective_n(self) -> float:
        return float(self.weight.sum() ** 2 / (self.weight**2).sum())


def _with_shrunk(groups: list[tuple], level: float) -> list[dict]:
    """The rows of one model's groups with `shrunk_*` columns: overall, the design-based estimate; each
    benchmark's correction (its draws' mean residual) shrunk toward the model's overall one (empirical
    Bayes), by how few draws it has against how much the benchmarks' mean residuals differ: valid where
    a benchmark has a handful of draws (or none), sharp where the design-based number is not, and the
    design-based number itself where a benchmark has many draws."""
    overall = next((g for g in groups if g[0]["group"] == OVERALL), None)
    benches = [g for g in groups if g[0]["group"] != OVERALL]
    drawn = [g for g in benches if g[1].n]
    everything = _Draws(
        np.concatenate([g[1].resid for g in drawn] or [np.zeros(0)]),
        np.concatenate([g[1].weight * g[1].n / g[1].weight.sum() for g in drawn] or [np.zeros(0)]),
    )  # each benchmark's draws at their own share (the weights are each benchmark's, up to a factor)
    n = everything.n
    rows = [g[0] | _shrunk_columns(g[0]) for g in groups]
    if overall is None or n < 2:
        return rows
    within = sum(float(((g[1].resid - g[1].mean) ** 2).sum()) for g in drawn)
    s2 = within / (n - len(drawn)) if n > len(drawn) else float(np.var(everything.resid, ddof=1))
    centre = everything.mean
    centre_var = s2 / everything.effective_n
    tau2 = _between_variance(drawn, centre, s2)
    df = n - 1
    for row, (base, draws, m, size, known, rest) in zip(rows, groups):
        if base["group"] == OVERALL or not m:
            continue
        v = s2 / draws.effective_n * max(1.0 - draws.n / (draws.n + m), 0.0) if draws.n else np.inf
        b = 1.0 if not draws.n else v / (v + tau2)
        correction = b * centre + (1 - b) * (draws.mean if draws.n else 0.0)
        mse = ((1 - b) ** 2 * v if draws.n else 0.0) + b**2 * (tau2 + centre_var)
        estimate = (known + rest + m * correction) / size
        se = m / size * np.sqrt(mse)
        half_width = stats.t.ppf((1 + level) / 2, df) * se
        row |= {"shrunk_estimate": estimate, "shrunk_sd": se, "shrunk_lower": estimate - half_width}
        row["shrunk_upper"] = estimate + half_width
    return rows


def _shrunk_columns(row: dict) -> dict:
    """A group's shrunk columns before shrinking: the design-based numbers (overall, and any group
    asked in full, keep them)."""
    return {f"shrunk_{c}": row[c] for c in ("estimate", "sd", "lower", "upper")}


def _between_variance(drawn: list[tuple], centre: float, s2: float) -> float:
    """How much the benchmarks' true mean residuals differ (variance, method of moments: the spread of
    their draws' means beyond what `s2`, the residuals' variance within a benchmark, explains), at
    least `SHRINK_FLOOR_SD` squared; `SHRINK_PRIOR_SD` squared with fewer than 3 benchmarks drawn."""
    if len(drawn) < 3:
        return SHRINK_PRIOR_SD**2
    sizes = np.array([g[1].effective_n for g in drawn])
    means = np.array([g[1].mean for g in drawn])
    spread = float(sizes @ (means - centre) ** 2)
    scale = sizes.sum() - (sizes**2).sum() / sizes.sum()
    return max((spread - (len(drawn) - 1) * s2) / scale, SHRINK_FLOOR_SD**2)


def _cross_fitted(
    bank: QuestionBank,
    labels: np.ndarray,
    chosen: np.ndarray,
    sampled: np.ndarray,
    seed: int,
    predictions: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Which half each random draw is in (`_halves`; -1 elsewhere) and the predictions (2, n_new, n_items)
    each half is checked on: those of the posterior of the picks by choice and the other half. Given
    `predictions` fixed in advance: one half, those predictions."""
    if predictions is None:
        half = _halves(bank.groups, sampled, seed)
        fits = np.concatenate([chosen | (sampled & (half == 1)), chosen | (sampled & (half == 0))])
        return half, bank.predict(bank.posterior(np.tile(labels, (2, 1)), fits)).reshape(2, *labels.shape)
    predictions = np.atleast_2d(np.asarray(predictions, dtype=np.float64))
    if predictions.shape != chosen.shape:
        raise ValueError(f"predictions has shape {predictions.shape}; expected {chosen.shape} like asked.")
    return np.where(sampled, 0, -1), predictions[None]


def _check_inclusion(bank: QuestionBank, asked: np.ndarray, inclusion: np.ndarray) -> np.ndarray:
    """`inclusion` (n_new, n_items) as floats, checked: in (0, 1] wherever a question was asked."""
    inclusion = np.atleast_2d(np.asarray(inclusion, dtype=np.float64))
    if inclusion.shape != asked.shape:
        raise ValueError(f"inclusion has shape {inclusion.shape}; expected {asked.shape} like asked.")
    bad = asked & ~((inclusion > 0) & (inclusion <= 1))
    if bad.any():
        i, q = np.argwhere(bad)[0]
        raise ValueError(
            f"inclusion probability {float(inclusion[i, q])} of asked question {str(bank.item_ids[q])!r} "
            f"(model row {i}); "
            "expected a number in (0, 1] (1: picked by choice), as `inclusion_probabilities` gives it."
        )
    return inclusion


def _difference_estimate(
    known: float, size: int, n: int, m: int, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]], level: float
) -> dict:
    """One group's design-based estimate (`design_estimates`): `known` the sum of the answers asked,
    `size` questions, n drawn at random, m not asked; `parts` (answers, predictions, inclusion
    probabilities of each half's random draws, and the predictions' sum over the m not asked)."""
    out = {"sampled": n, "estimate": np.nan, "sd": np.nan, "lower": np.nan, "upper": np.nan, "note": ""}
    if not m:
        share = known / size
        return out | {"estimate": share, "sd": 0.0, "lower": share, "upper": share, "note": "all asked"}
    if not n:
        return out | {"note": "no random draw: no design-based estimate"}
    estimates, residuals, weights = [], [], []
    for y, p, pi, rest in parts:
        w = design_weights(pi)
        r = y - p
        estimates.append((known + rest + m * (w @ r) / w.sum()) / size)
        residuals.append(r)
        weights.append(w)
    resid, weight = np.concatenate(residuals), np.concatenate(weights)
    out["estimate"] = float(np.mean(estimates))
    if n < 2:
        return out | {"note": "1 random draw: no interval"}
    mean = weight @ resid / weight.sum()
    spread = n / (n - 1) * (weight**2) @ (resid - mean) ** 2 / weight.sum() ** 2
    se = m / size * np.sqrt(max(1.0 - n / (n + m), 0.0) * spread)
    half_width = stats.t.ppf((1 + level) / 2, n - 1) * se
    return out | {"sd": se, "lower": out["estimate"] - half_width, "upper": out["estimate"] + half_width}


def design_weights(inclusion: np.ndarray) -> np.ndarray:
    """The weights 1 / pi - 1 of random draws of inclusion probabilities `inclusion` (how many questions
    not asked each stands for), up to a common factor: computed in logs and divided by the largest, so
    that equal probabilities weigh equally however small (1 / 1e-320 overflows), and the estimates that
    use them, ratios of weighted sums, are as with any other equal probability."""
    log_w = np.log1p(-inclusion) - np.log(inclusion)
    return np.exp(log_w - log_w.max()) if len(log_w) else log_w


def _halves(groups: np.ndarray, sampled: np.ndarray, seed: int) -> np.ndarray:
    """(n_new, n_items) 0 or 1 on each model's random draws (-1 elsewhere): two halves drawn at random,
    each benchmark's draws alternating between them in a seeded random order."""
    rng = np.random.default_rng(seed)
    codes = pd.factorize(np.asarray(groups))[0]
    out = np.full(sampled.shape, -1, dtype=np.int64)
    for i, row in enumerate(sampled):
        drawn = rng.permutation(np.flatnonzero(row))
        drawn = drawn[np.argsort(codes[drawn], kind="stable")]  # by benchmark, random within each
        rank = np.arange(len(drawn)) - np.searchsorted(codes[drawn], codes[drawn])  # position in its benchmark
        out[i, drawn] = (rank + rng.integers(2)) % 2
    return out
