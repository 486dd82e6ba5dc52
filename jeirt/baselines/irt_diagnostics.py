"""Checks of a fitted IRT model, and the analyses of Section 3.1 and Appendix J that show where one
ability per model fails on LLM data.

Checks on the residuals y - P. They read a (test takers, items) matrix of 0/1 answers (NaN: not
answered) beside the fitted probabilities of the same shape, e.g.
`TwoPL().fit(ds).predict_proba(ds)`; they know nothing of how P was made. Outfit and infit
(`item_fit`) ask whether each item's residuals are as large as the model says (Wright and Masters
1982): near 1 when the item fits, above 1 when its answers are noisier than its curve (flatter in
truth), below 1 when they are more predictable (steeper in truth). Q3 (Yen 1984, `q3`) asks whether
residuals of two items move together once ability is accounted for: under local independence about
-1/(J - 1) with estimated abilities, clearly positive for items that share a dimension the model
lacks. An item whose curve the fit flattened to follow a second dimension can have outfit near 1
and still show in Q3 (`fit_by_group` puts both side by side for groups of items; the primer shows
such a case). `patterns_given_score` shows the Rasch model's sufficient statistic at work.

Section 3.1 and Appendix J (the page "Why one number fails"): the shares of items with a
discrimination that is negative or near zero (`discrimination_shares`), measured against the chance
level and spread of data redrawn from the fit with no falling (or flat) item (`null_dataset`,
`null_shares`, `excess_over_null`); saturation, the items on which a fit predicts the same outcome
for every model, beside the fit's own forecast of unanimity (`saturation`, `expected_unanimity`,
`paired_share_gap`); and correct-set inclusion, whether a stronger model answers a superset of a
weaker one's questions (`correct_set_inclusion`, `mean_inclusion_gap`). The thresholds (`NEAR_ZERO`,
`NEAR_UNANIMOUS`) are fixed once, not per dataset.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from jeirt.baselines.irt import MarginalTwoPL, TwoPL, sample_labels
from jeirt.data.dataset import Dataset
from jeirt.parallel import side_by_side


def _residuals(labels: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(labels, dtype=np.float64)
    p = np.asarray(probs, dtype=np.float64)
    if y.ndim != 2 or y.shape != p.shape:
        raise ValueError(
            f"labels {y.shape} and probs {p.shape} must be matrices of the same shape (test takers, items)."
        )
    answered = np.isfinite(y)
    if not np.isin(y[answered], (0.0, 1.0)).all():
        raise ValueError("labels must be 0, 1 or NaN (not answered).")
    if not ((p[answered] > 0) & (p[answered] < 1)).all():
        raise ValueError("probs must lie strictly between 0 and 1 where a label is given.")
    return np.where(answered, y - p, np.nan), p


def item_fit(labels: np.ndarray, probs: np.ndarray) -> pd.DataFrame:
    """Per item (column): outfit, the mean squared standardised residual (y - P)^2 / (P (1 - P)) over
    the test takers who answered it, and infit, its information-weighted form
    sum (y - P)^2 / sum P (1 - P). Both have expectation 1 when the answers follow P."""
    resid, p = _residuals(labels, probs)
    var = np.where(np.isfinite(resid), p * (1 - p), np.nan)  # (n, J) Bernoulli variances
    return pd.DataFrame(
        {"outfit": np.nanmean(resid**2 / var, axis=0), "infit": np.nansum(resid**2, axis=0) / np.nansum(var, axis=0)}
    )


def q3(labels: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Yen's Q3: the correlation across test takers of the residuals y - P of every pair of items,
    (items, items), each pair over the test takers who answered both; 1 on the diagonal."""
    resid, _ = _residuals(labels, probs)
    return pd.DataFrame(resid).corr().to_numpy()


def mean_q3(matrix: np.ndarray, members: np.ndarray) -> float:
    """The mean of Q3 over the pairs of distinct items within a group (`members`, a boolean mask or
    indices of the group's items)."""
    idx = np.flatnonzero(members) if np.asarray(members).dtype == bool else np.asarray(members)
    if len(idx) < 2:
        raise ValueError(f"members selects {len(idx)} item(s); a mean over pairs needs at least two.")
    block = np.asarray(matrix)[np.ix_(idx, idx)]
    return float(block[~np.eye(len(idx), dtype=bool)].mean())


# ---------------------------------------------------------------------------------------------
# Checks of item fit and local dependence by group of items


def fit_by_group(labels: np.ndarray, probs: np.ndarray, groups: Sequence) -> pd.DataFrame:
    """One row per group of items (`groups`: one name per item, column of `labels`): the mean outfit
    and infit of its items and the mean Q3 over pairs of its items, in the groups' first-seen order."""
    groups = pd.Series(np.asarray(groups))
    if len(groups) != np.shape(labels)[1]:
        raise ValueError(f"{len(groups)} group names for {np.shape(labels)[1]} items; give one per item.")
    fits, corr = item_fit(labels, probs), q3(labels, probs)
    rows = {}
    for name in pd.unique(groups):
        members = (groups == name).to_numpy()
        rows[name] = {
            "outfit": fits["outfit"][members].mean(),
            "infit": fits["infit"][members].mean(),
            "Q3 within": mean_q3(corr, members),
        }
    return pd.DataFrame(rows).T.rename_axis("items")


def patterns_given_score(b: np.ndarray, score: int, thetas: Sequence[float] = (-1.0, 2.0)) -> pd.DataFrame:
    """Every answer pattern with the given sum score and its probability given that score under the
    Rasch model with difficulties `b`, one column per ability in `thetas`: the columns agree, since
    the sum score is sufficient for the ability."""
    b = np.asarray(b, dtype=np.float64)
    if b.ndim != 1 or len(b) > 16:
        raise ValueError(f"b has shape {b.shape}; expected one difficulty per item, at most 16 items.")
    patterns = [p for p in itertools.product((0, 1), repeat=len(b)) if sum(p) == score]
    if not patterns:
        raise ValueError(f"score={score}; expected 0 to {len(b)} for {len(b)} items.")
    rows = np.array(patterns, dtype=np.float64)  # (n_patterns, J)
    out = {}
    for theta in thetas:
        z = theta - b
        like = np.exp(rows @ z - np.logaddexp(0.0, z).sum())  # P(pattern | theta)
        out[f"theta = {theta:g}"] = like / like.sum()
    index = ["".join(str(int(v)) for v in r) for r in rows]
    return pd.DataFrame(out, index=pd.Index(index, name="pattern"))


# ---------------------------------------------------------------------------------------------
# Section 3.1 and Appendix J: where one ability per model fails on LLM data

# Fixed thresholds of the book's analyses (Section 3.1). They are chosen once, not per dataset.
NEAR_ZERO = 0.25  # |a| < NEAR_ZERO: from -2 to +2 sd of ability the log-odds move by less than 1
NEAR_UNANIMOUS = 0.05  # an item is near-unanimous when at most 5% of its graded models dissent


def discrimination_shares(discrimination: np.ndarray, near_zero: float = NEAR_ZERO) -> dict:
    """Shares of items with a <= 0, with |a| < near_zero, and with a <= -near_zero (NaN a ignored)."""
    if near_zero <= 0:
        raise ValueError(f"near_zero={near_zero}; expected a positive threshold.")
    a = np.asarray(discrimination, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        raise ValueError("no finite discrimination to summarise.")
    return {
        "items": int(a.size),
        "nonpositive": float(np.mean(a <= 0)),
        "near_zero": float(np.mean(np.abs(a) < near_zero)),
        "clearly_negative": float(np.mean(a <= -near_zero)),
    }


def share_gap_se(share: float, chance: float, n: int) -> float:
    """The standard error of `share` - `chance`, both read as independent binomial shares of `n` items."""
    if n < 1:
        raise ValueError(f"n={n}; expected the number of items, at least 1.")
    return float(np.sqrt((share * (1 - share) + chance * (1 - chance)) / n))


def excess_over_null(share: float, null: Sequence[float]) -> dict:
    """A share measured on the data against the same share on data simulated under a null (a parametric
    bootstrap, e.g. `null_shares`): the null's mean and spread (sd over its replicates: what sampling
    noise alone makes), the excess share - null mean and its standard error, the null sd times
    sqrt(1 + 1/R) for R replicates (the null mean is itself estimated). Needs at least 3 replicates."""
    values = np.asarray(null, dtype=float)
    if values.ndim != 1 or len(values) < 3 or not np.isfinite(values).all():
        raise ValueError(f"null has {values.size} value(s); give at least 3 finite shares from null replicates.")
    spread = float(values.std(ddof=1))
    return {
        "share": float(share),
        "null_mean": float(values.mean()),
        "null_sd": spread,
        "excess": float(share - values.mean()),
        "se": spread * float(np.sqrt(1 + 1 / len(values))),
        "replicates": len(values),
    }


def paired_share_gap(first: np.ndarray, second: np.ndarray, times: float = 1.0) -> dict:
    """The share of items with `first` minus `times` the share with `second` (per item a flag or a
    probability, e.g. predicted and actual unanimity; `times` 2: is the first at least twice the
    second?), with the standard error of that difference over items (the paired differences' sd /
    sqrt(n))."""
    x, y = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2:
        raise ValueError(f"first {x.shape} and second {y.shape} must be values of the same items, at least two.")
    diff = x - times * y
    return {
        "first": float(x.mean()),
        "second": float(y.mean()),
        "gap": float(diff.mean()),
        "se": float(diff.std(ddof=1) / np.sqrt(len(diff))),
        "items": len(diff),
    }


def saturation(
    probs: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None, tolerance: float = NEAR_UNANIMOUS
) -> pd.DataFrame:
    """Per item: does the model predict (nearly) the same outcome for every graded model, and do the
    models actually agree?

    A model's predicted outcome on an item is "correct" when its probability is >= 1/2. An item's
    predicted share is the share of its graded models predicted correct; its actual share is their
    mean label. An item is (near-)unanimous when its share is <= `tolerance` or >= 1 - `tolerance`
    (tolerance 0: exactly unanimous). Items without a graded model are left out.
    Returns columns: models, predicted_share, actual_share, predicted_unanimous, actual_unanimous.
    """
    probs, labels = np.asarray(probs, dtype=float), np.asarray(labels, dtype=float)
    if probs.shape != labels.shape:
        raise ValueError(f"probs has shape {probs.shape} and labels {labels.shape}; expected equal shapes.")
    if not 0 <= tolerance < 0.5:
        raise ValueError(f"tolerance={tolerance}; expected a share in [0, 0.5).")
    mask = ~np.isnan(labels) if mask is None else np.asarray(mask, dtype=bool) & ~np.isnan(labels)
    n = mask.sum(axis=0)
    keep = n > 0
    predicted = ((probs >= 0.5) & mask).sum(axis=0)[keep] / n[keep]
    actual = np.where(mask, labels, 0.0).sum(axis=0)[keep] / n[keep]
    return pd.DataFrame(
        {
            "models": n[keep],
            "predicted_share": predicted,
            "actual_share": actual,
            "predicted_unanimous": _unanimous(predicted, tolerance),
            "actual_unanimous": _unanimous(actual, tolerance),
        },
        index=pd.Index(np.flatnonzero(keep), name="item"),
    )


def _unanimous(share: np.ndarray, tolerance: float) -> np.ndarray:
    """Shares within `tolerance` of 0 or 1 (shares are ratios of counts: compared with a little slack)."""
    eps = 1e-12
    return (share <= tolerance + eps) | (share >= 1 - tolerance - eps)


def expected_unanimity(
    probs: np.ndarray,
    mask: np.ndarray | None = None,
    tolerance: float = NEAR_UNANIMOUS,
    n_draws: int = 100,
    seed: int = 0,
) -> np.ndarray:
    """Per item, the chance that its labels are (near-)unanimous if every graded model answered
    independently with the given probabilities: the share of `n_draws` seeded draws in which the item
    is (near-)unanimous, in the sense of `saturation`. It is the model's own forecast of
    `saturation(...)["actual_unanimous"]`, to set beside the data's."""
    probs = np.asarray(probs, dtype=float)
    mask = np.ones(probs.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if mask.shape != probs.shape:
        raise ValueError(f"mask has shape {mask.shape} and probs {probs.shape}; expected equal shapes.")
    if n_draws < 1:
        raise ValueError(f"n_draws={n_draws}; expected a positive integer.")
    rng = np.random.default_rng(seed)
    n = mask.sum(axis=0)
    keep = n > 0
    count = np.zeros(probs.shape[1])
    for _ in range(n_draws):
        share = ((rng.random(probs.shape) < probs) & mask).sum(axis=0)[keep] / n[keep]
        count[keep] += _unanimous(share, tolerance)
    return count[keep] / n_draws


# The worlds `null_dataset` can draw, each named by the share of `discrimination_shares` it is the null
# of (and 'flat', the alternative of 'near_zero'): every fitted discrimination a that makes the claim
# true is moved to the claim's boundary, the least favourable world in which the claim is false, and
# every other a is left where it is. On the boundary an item re-measures on either side about half the
# time: that is the noise a claim must beat.
WORLDS = ("nonpositive", "clearly_negative", "near_zero", "flat")


def world_discrimination(a: np.ndarray, world: str, near_zero: float = NEAR_ZERO) -> np.ndarray:
    """The discriminations of a null `world` (`WORLDS`): 'nonpositive' raises every a <= 0 to 0 (no item
    favours weaker models); 'clearly_negative' raises every a <= -near_zero to -near_zero (none clearly
    does); 'near_zero' moves every |a| < near_zero to the nearer of +-near_zero, leaving a clearly negative
    item where it is (no flat item); 'flat' is the alternative: every |a| < near_zero set to 0."""
    a = np.asarray(a, dtype=float)
    if world == "nonpositive":
        return np.maximum(a, 0.0)
    if world == "clearly_negative":
        return np.maximum(a, -near_zero)
    flat = np.abs(a) < near_zero
    if world == "near_zero":
        return np.where(flat, np.where(a < 0, -near_zero, near_zero), a)
    if world == "flat":
        return np.where(flat, 0.0, a)
    raise ValueError(f"world={world!r}; expected one of {WORLDS}.")


def null_dataset(fit: TwoPL, ds: Dataset, seed: int = 0, world: str = "nonpositive") -> Dataset:
    """`ds` with its labels (same graded pairs) redrawn from the fitted 2PL with its discriminations
    moved to `world`'s (`world_discrimination`): with 'nonpositive', data in which no item favours
    weaker models; with 'near_zero', data without a flat item. Refitting a 2PL to it shows how many
    such discriminations sampling noise alone produces."""
    rows, cols = fit._positions(ds)
    a = world_discrimination(fit.discrimination_[cols], world)
    z = fit.ability_[rows, None] * a[None, :] + fit.intercept_[None, cols]
    labels = sample_labels(1.0 / (1.0 + np.exp(-z)), ds.observed, seed)
    return Dataset(f"{ds.name}-null{seed}", ds.models, ds.items, labels)


def _null_shares(fit: TwoPL, ds: Dataset, seed: int, device: str | None, world: str) -> dict:
    """`discrimination_shares` of the fit's estimator (same class and settings) refitted to
    `null_dataset(fit, ds, seed, world)` (one worker's job); a `MarginalTwoPL` starts from the world's items."""
    null = null_dataset(fit, ds, seed=seed, world=world)
    refit = type(fit)(**{**fit.get_params(), "device": device})
    if isinstance(refit, MarginalTwoPL):  # the same class as `fit`
        cols = fit._positions(ds)[1]
        refit.fit(null, start=(world_discrimination(fit.discrimination_[cols], world), fit.intercept_[cols]))
    else:
        refit.fit(null)
    return discrimination_shares(refit.discrimination_)


def null_shares(
    fits: dict[str, TwoPL],
    data: dict[str, Dataset],
    seeds: Sequence[int],
    device: str | None = None,
    n_jobs: int | None = None,
    world: str = "nonpositive",
) -> dict[str, list[dict]]:
    """For each name of `fits`, the `discrimination_shares` of a 2PL refitted to
    `null_dataset(fits[name], data[name], seed, world)`, one per seed: the chance level of each share in
    that world, and over the seeds its spread.

    The refits are independent: `jeirt.parallel.side_by_side` makes them in `n_jobs` worker
    processes, each on one thread (a 2PL fit's own default), so they equal fits made here.
    """
    missing = set(fits) - set(data)
    if missing:
        raise ValueError(f"no dataset for the fits {sorted(missing)}; give data one per name of fits.")
    jobs = [(name, int(seed)) for name in fits for seed in seeds]
    shares = side_by_side(
        _null_shares, [(fits[name], data[name], seed, device, world) for name, seed in jobs], n_jobs=n_jobs
    )
    out: dict[str, list[dict]] = {name: [] for name in fits}
    for (name, _), share in zip(jobs, shares):
        out[name].append(share)
    return out


def correct_set_inclusion(
    labels: np.ndarray, models: list[str] | None = None, mask: np.ndarray | None = None, order: np.ndarray | None = None
) -> pd.DataFrame:
    """Appendix J: R(M_i, M_j) = |Q(M_i) \\ Q(M_j)| / |Q(M_i)|, the share of the items model i answers
    correctly that model j gets wrong, counted over the items both were graded on.

    Rows and columns are sorted from least to most accurate model (or by `order`, model positions), so
    under one ability ordering every model (a perfect Guttman scale) the upper triangle, row weaker
    than column, would be 0. Probabilities in place of 0/1 labels give the ratio of expected counts
    under a model that answers independently with those probabilities. The diagonal is NaN, as is
    any pair where model i has no correct answer on the shared items.
    """
    labels = np.asarray(labels, dtype=float)
    if labels.ndim != 2:
        raise ValueError(f"labels has shape {labels.shape}; expected (n_models, n_items).")
    mask = ~np.isnan(labels) if mask is None else np.asarray(mask, dtype=bool) & ~np.isnan(labels)
    models = list(models) if models is not None else [f"model {i}" for i in range(len(labels))]
    if len(models) != len(labels):
        raise ValueError(f"{len(models)} model names for {len(labels)} rows of labels.")
    w = mask.astype(float)
    y = np.where(mask, labels, 0.0)  # (n_models, n_items), 0 where not graded
    if order is None:
        with np.errstate(invalid="ignore"):
            accuracy = y.sum(axis=1) / w.sum(axis=1)
        order = np.argsort(np.nan_to_num(accuracy, nan=-1.0), kind="stable")
    order = np.asarray(order)
    y, w = y[order], w[order]
    solved = y @ w.T  # (n_models, n_models): sum_q y_iq w_jq, i's correct answers on shared items
    missed = y @ (w * (1.0 - y)).T  # sum_q y_iq (1 - y_jq) w_jq: ... that j got wrong
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(solved > 0, missed / solved, np.nan)
    np.fill_diagonal(ratio, np.nan)
    names = [models[i] for i in order]
    return pd.DataFrame(ratio, index=pd.Index(names, name="model i"), columns=pd.Index(names, name="model j"))


def mean_inclusion_gap(ratio: pd.DataFrame, weakest: float | None = None) -> float:
    """Mean of R(M_i, M_j) over pairs where i comes before j (weaker than j, as sorted): the average
    share of a weaker model's correct answers that a stronger model misses; 0 on a perfect scale.
    `weakest` in (0, 1] keeps only that share of the least accurate models as i (rows)."""
    values = np.asarray(ratio, dtype=float)
    n_rows = len(values)
    if weakest is not None:
        if not 0 < weakest <= 1:
            raise ValueError(f"weakest={weakest}; expected a share in (0, 1].")
        n_rows = max(1, int(round(weakest * len(values))))
    upper = values[np.triu_indices(n_rows, k=1, m=values.shape[1])]
    return float(np.nanmean(upper))


def inclusion_gap(ds: Dataset, device: str | None = None) -> float:
    """Appendix J's failure of inclusion beyond one ability: the mean R above the diagonal on `ds`'s
    answers (`mean_inclusion_gap` of `correct_set_inclusion`) minus the same mean under a 1PL fitted to
    them, the models in the data's order (what chance answers under one number per model give)."""
    from jeirt.baselines.irt import OnePL

    observed = correct_set_inclusion(ds.labels, ds.models)
    one_pl = OnePL(device=device).fit(ds)
    order = ds.model_index(list(observed.index))
    expected = correct_set_inclusion(one_pl.predict_proba(ds), ds.models, mask=ds.observed, order=order)
    return mean_inclusion_gap(observed) - mean_inclusion_gap(expected)


def inclusion_gap_se(
    ds: Dataset, n_boot: int = 30, max_models: int = 300, seed: int = 0, device: str | None = None
) -> dict:
    """The standard error of `inclusion_gap` over the questions: a bootstrap that resamples `ds`'s
    questions and refits the 1PL to each resample, so both sides' noise is in it (the 1PL's expected R
    is a mean of fitted probabilities over many model pairs, not a binomial share). On more than
    `max_models` models a seeded subset of that many is resampled (the questions' part of the noise does
    not shrink with more models; fewer models only add their own). Returns the se, the replicates and
    the models used."""
    if n_boot < 3:
        raise ValueError(f"n_boot={n_boot}; a bootstrap SE needs at least 3 replicates.")
    rng = np.random.default_rng(seed)
    if ds.n_models > max_models:
        ds = ds.subset(models=np.sort(rng.choice(ds.n_models, max_models, replace=False)))
    gaps = []
    for b in range(n_boot):
        rows = rng.integers(0, ds.n_items, ds.n_items)
        items = ds.items.iloc[rows].reset_index(drop=True).assign(item_id=[f"q{i}" for i in range(len(rows))])
        gaps.append(inclusion_gap(Dataset(f"{ds.name}-boot{b}", ds.models, items, ds.labels[:, rows]), device))
    return {"se": float(np.std(gaps, ddof=1)), "replicates": n_boot, "models": ds.n_models}


def pick_icc_examples(fit: TwoPL, ds: Dataset, near_zero: float = NEAR_ZERO) -> dict[str, int]:
    """Four items to draw (column positions in `ds`): the most negative a, the flattest item on which
    models split (actual share correct in [0.3, 0.7]), and two positive items on which models split:
    the sharpest, and the one closest to the median positive a."""
    params = fit.item_parameters().set_index("item_id").loc[ds.items["item_id"]]
    a = params["discrimination"].to_numpy()
    with np.errstate(invalid="ignore"):
        share = np.nanmean(ds.labels, axis=0)
    split = (share >= 0.2) & (share <= 0.8) & np.isfinite(a)
    middle = (share >= 0.3) & (share <= 0.7) & np.isfinite(a)
    positive = np.flatnonzero(split & (a >= near_zero))
    if not np.isfinite(a).any() or not middle.any() or len(positive) < 2:
        raise ValueError("too few items on which models split to pick examples; use more items.")
    median = np.median(a[positive])
    sharpest = positive[np.argmax(a[positive])]
    typical = positive[np.argsort(np.abs(a[positive] - median))]
    typical = typical[typical != sharpest][0]
    return {
        "negative": int(np.nanargmin(a)),
        "near zero": int(np.flatnonzero(middle)[np.argmin(np.abs(a[middle]))]),
        "positive, typical": int(typical),
        "positive, sharpest": int(sharpest),
    }
