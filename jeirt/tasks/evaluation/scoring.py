"""Scores of new LLMs side by side: `score_new_models` (what `jeirt estimate` reports: the design-based
and the model-based estimate), and the baselines `plain_means` (the mean of the answers asked, no
model) and `irt_estimates` (the same estimate from a per-question Rasch / 2PL model, the baseline
tinyBenchmarks would use).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from jeirt.baselines.irt import OnePL, TwoPL
from jeirt.data import Dataset
from jeirt.params import SCORE_PARAMS, check_params
from jeirt.tasks.evaluation.bank import OVERALL, QuestionBank, check_labels
from jeirt.tasks.evaluation.design_based import design_estimates, inclusion_probabilities
from jeirt.tasks.evaluation.model_based import estimate_scores

PLAIN = "plain mean"  # the rule name of the no-model baseline: the mean of k random answers


def score_new_models(
    bank: QuestionBank,
    labels: np.ndarray,
    inclusion: np.ndarray | None = None,
    *,
    draws: int = 200,
    level: float = 0.9,
    seed: int = 0,
    models: Sequence[str] | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """`jeirt estimate`'s table: each new model's accuracy overall and per benchmark from its answers
    `labels` (n_new, n_items; NaN = not asked, else in [0, 1]). Reported (estimate, sd, lower, upper,
    `source` says which): overall, the design-based estimate (`design_estimates`, source "design"); per
    benchmark, its shrunk design-based estimate (source "design, shrunk": the benchmark's correction
    pulled toward the overall one by how few random draws it has; a benchmark has a handful, and its own
    design-based number is then valid but wide); where the model has no random draw for an interval,
    the model-based one (`estimate_scores`, source "model: " and why). Beside them: the design-based
    numbers as they are (design_*) and the model-based ones (model_*). `inclusion` (n_new, n_items) as
    `inclusion_probabilities`; None reads every answer as one simple random sample of the bank's
    questions (pi = n / N), as the random rule draws them."""
    check_params("score_new_models", SCORE_PARAMS, {"draws": draws, "level": level, "seed": seed})
    labels = check_labels(labels)
    asked = ~np.isnan(labels)
    if inclusion is None:
        inclusion = inclusion_probabilities(asked, asked, np.ones(labels.shape[1], dtype=bool))
    sampled = asked & (np.asarray(inclusion) < 1)
    model = estimate_scores(
        bank, labels, asked, draws=draws, level=level, seed=seed, models=models, sampled=sampled, progress=progress
    )
    design = design_estimates(bank, labels, asked, inclusion, level=level, models=models)
    keys, numbers = ["model", "group"], ("estimate", "sd", "lower", "upper")
    model = model.rename(columns={c: f"model_{c}" for c in numbers})
    table = design.merge(model.drop(columns=["items", "asked"]), on=keys, how="left")
    table = table.rename(columns={c: f"design_{c}" for c in numbers})
    has_interval = table["shrunk_lower"].notna()
    shrunk = (table["group"] != OVERALL) & (table["asked"] < table["items"])  # a benchmark not asked in full
    design_source = np.where(shrunk, "design, shrunk", "design")
    table["source"] = np.where(has_interval, design_source, "model: " + table["note"].replace("", "no interval"))
    for c in numbers:
        table[c] = table[f"shrunk_{c}"].where(has_interval, table[f"model_{c}"])
    return table.drop(columns=[f"shrunk_{c}" for c in numbers])


def plain_means(
    bank: QuestionBank, labels: np.ndarray, asked: np.ndarray, models: Sequence[str] | None = None
) -> pd.DataFrame:
    """The no-model baseline: each model's mean answer over the asked questions, overall and per
    benchmark (a benchmark with no asked question gets the overall mean). Columns as
    `estimate_scores` without the interval."""
    labels, asked = bank._check(labels, asked)
    models = [f"new{i}" for i in range(len(labels))] if models is None else list(models)
    rows = []
    for i, name in enumerate(models):
        if not asked[i].any():
            raise ValueError(f"model {name!r} was asked no question; the plain mean needs at least one answer.")
        overall = labels[i, asked[i]].mean()
        rows.append({"model": name, "group": OVERALL, "asked": int(asked[i].sum()), "estimate": overall})
        for g in bank.benchmarks:
            sel = asked[i] & (bank.groups == g)
            rows.append(
                {
                    "model": name,
                    "group": g,
                    "asked": int(sel.sum()),
                    "estimate": labels[i, sel].mean() if sel.any() else overall,
                }
            )
    return pd.DataFrame(rows)


def irt_estimates(irt: OnePL | TwoPL, new: Dataset, asked: np.ndarray) -> pd.DataFrame:
    """The per-question IRT baseline: each new model's ability fitted from its asked answers with the
    items of a fitted `OnePL` / `TwoPL` frozen (`onboard`, which adds or refits the models in `irt`),
    then the estimate of this module's docstring with the IRT's probabilities. One row per (model,
    group): asked, estimate (no interval). `new` holds the new models' answers on the bank's questions."""
    asked = np.asarray(asked, dtype=bool)
    if asked.shape != new.labels.shape:
        raise ValueError(f"asked has shape {asked.shape}; expected the new models' labels' {new.labels.shape}.")
    if not asked.any(axis=1).all():
        raise ValueError("a model was asked no question; the IRT estimate needs at least one answer.")
    irt.onboard(new, asked, replace=True)
    probs = irt.predict_proba(new)  # (n_new, n_items)
    graded = new.observed
    filled = np.where(asked, np.nan_to_num(new.labels), probs)
    groups = new.items["benchmark"].astype(str).to_numpy()
    rows = []
    for i, name in enumerate(new.models):
        for g in [OVERALL] + list(pd.unique(groups)):
            sel = graded[i] & (True if g == OVERALL else groups == g)
            if sel.any():
                rows.append(
                    {
                        "model": name,
                        "group": g,
                        "asked": int((asked[i] & sel).sum()),
                        "estimate": float(filled[i, sel].mean()),
                    }
                )
    return pd.DataFrame(rows)
