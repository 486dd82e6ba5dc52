"""Onboarding new LLMs (paper Sec. 3.3, Tables 1-2, Appendix D): the steps of the experiment.

With the adapter frozen, a new LLM is one d-vector fitted from its answers (`JEIRT.onboard`: a
logistic regression, Eq. 3 with the question side fixed). The experiment holds LLMs out of joint
training (`new_models`), trains on the rest, then onboards the held-out vectors from a share of
their training answers (`jeirt.splits.subsample_items`, Table 1's columns) or from their first n
answers (`first_items`, Appendix D's rate) and scores each on its test labels
(`onboard_and_score`, one step of the loop; the loops over shares and budgets are written on the
Onboarding page). `joint_scores` scores the same LLMs when they were trained jointly (Table 1's
"All" column); `onboarding_table`, `onboarding_gap` and `rate_table` / `rate_summary` aggregate
the rows. The library holds the step, not the loop, so that the page shows the protocol.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from jeirt.data import Dataset
from jeirt.estimator import JEIRT, Estimator
from jeirt.fitcache import fit_many
from jeirt.splits import Split, hold_out_models, split_by_question

ONBOARD_FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0)  # Table 1's shares of the answers
RATE_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256, 512)  # answers per new LLM, for Appendix D's rate
RATE_DIMS = (4, 16, 64)  # dimensions compared for the rate: the answers needed grow with d

# Public release month of each mmlu_pro model (vendor announcements and model cards; month
# precision), to pick "recent" models for the analogue of Table 2.
MMLU_PRO_RELEASES = {
    "Llama-2-7b-hf": "2023-07",
    "Llama-2-13b-hf": "2023-07",
    "Llama-2-70b-hf": "2023-07",
    "Mistral-7B-v0.1": "2023-09",
    "Mistral-7B-Instruct-v0.1": "2023-09",
    "Yi-6B": "2023-11",
    "Yi-6b-Chat": "2023-11",
    "Yi-34B": "2023-11",
    "Mistral-7B-Instruct-v0.2": "2023-12",
    "Mixtral-8x7B-v0.1": "2023-12",
    "Mixtral-8x7B-Instruct-v0.1": "2023-12",
    "Qwen1.5-7B-Chat": "2024-02",
    "Qwen1.5-72B-Chat": "2024-02",
    "gemma-7b": "2024-02",
    "Mistral-7B-v0.2-hf": "2024-03",
    "c4ai-command-r-v01": "2024-03",
    "Qwen1.5-110B": "2024-04",
    "Meta-Llama-3-8B": "2024-04",
    "Meta-Llama-3-8B-Instruct": "2024-04",
    "Meta-Llama-3-70B": "2024-04",
    "llama-3-8b-quantized": "2024-04",
    "Phi-3-mini-4k-instruct": "2024-04",
    "gpt-4o(2024-05-13)": "2024-05",
    "deepseek-chat(2024-05)": "2024-05",
    "DeepSeek-Coder-V2": "2024-06",
    "mathstral-7B": "2024-07",
    "Meta-Llama-3_1-8B": "2024-07",
    "Meta-Llama-3_1-8B-Instruct": "2024-07",
    "Meta-Llama-3_1-70B": "2024-07",
    "Meta-Llama-3_1-70B-Instruct": "2024-07",
    "jamba-1.5-large": "2024-08",
    "gemini-1.5-flash-002": "2024-09",
    "gemini-1.5-pro-002": "2024-09",
}


@dataclass
class NewModels:
    """LLMs held out of joint training: what they may be onboarded from, and their test labels."""

    split: Split  # the split with them held out (`hold_out_models`): what the model trains on
    trained_on: str  # the name of the split before they were held out (a joint fit's split)
    names: list[str]  # the held-out LLMs
    data: Dataset  # their rows of the dataset, every item
    answers: np.ndarray  # (n_new, n_items) their training labels, to onboard from
    test: Dataset  # their rows on the test items
    test_mask: np.ndarray  # (n_new, n_test_items) their observed test labels
    validation: np.ndarray | None = None  # (n_new, n_items) their validation labels: pick the prior's width


def new_models(ds: Dataset, split: Split, held_out: int | Sequence[str], seed: int = 0) -> NewModels:
    """Hold `held_out` LLMs (a seeded number of them, or names) out of `split`'s training and
    validation (`jeirt.splits.hold_out_models`); their training labels become their `answers`."""
    held = hold_out_models(ds, split, held_out if isinstance(held_out, int) else list(held_out), seed)
    names = list(held.held_out)
    rows = ds.model_index(names)
    data = ds.subset(models=names)
    items = np.flatnonzero(split.test[rows].any(axis=0))
    test = data.subset(items=items)
    test_mask = split.test[np.ix_(rows, items)] & test.observed
    assert held.onboard is not None  # (hold_out_models gives their answers)
    return NewModels(
        held, split.name, names, data, held.onboard[rows], test, test_mask, split.val[rows] & data.observed
    )


def complete_models(ds: Dataset, n: int, seed: int = 0) -> list[str]:
    """`n` LLMs drawn with `seed` among those graded on every item (Appendix D's new models: every
    budget of answers is then available to each of them)."""
    complete = np.flatnonzero(ds.observed.all(axis=1))
    if not 0 < n <= len(complete) - 2:
        raise ValueError(
            f"n={n}; {len(complete)} LLMs of {ds.name!r} are graded on every item, so "
            f"draw between 1 and {len(complete) - 2} (two must stay to train)."
        )
    rng = np.random.default_rng(seed)
    return [ds.models[i] for i in np.sort(rng.choice(complete, size=n, replace=False))]


def joint_models(
    ds: Dataset,
    make_model: Callable[[int], Estimator],
    seeds: Sequence[int],
    split_for: Callable[[Dataset, int], Split] | None = None,
) -> dict[int, Estimator]:
    """Table 1's "All" column: one model per seed trained on every LLM (`split_for(ds, seed)`, by
    default `split_by_question(ds, seed=seed)`); the fits run side by side through the cache
    (`jeirt.fitcache.fit_many`)."""
    seeds = [int(seed) for seed in seeds]
    if not seeds:
        raise ValueError("seeds=[]; give at least one seed.")
    split_for = split_for or (lambda data, seed: split_by_question(data, seed=seed))
    fits = fit_many([make_model(seed) for seed in seeds], ds, [split_for(ds, seed) for seed in seeds])
    return dict(zip(seeds, fits))


def fraction_label(fraction: float) -> str:
    """0.05 -> "5%": Table 1's column names."""
    return f"{fraction * 100:g}%"


def first_items(mask: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """Keep the first `n` True entries of each row of `mask` in a seeded random order (all when a row
    has fewer). With one seed the selections nest: the 8 items kept for n = 8 include the 4 for 4."""
    if n < 1:
        raise ValueError(f"n={n}; expected a positive number of items.")
    order = np.random.default_rng(seed).permutation(mask.shape[1])  # one order shared by every row
    ranks = np.cumsum(mask[:, order], axis=1)  # (n_rows, n_items) running count of kept entries
    out = np.zeros_like(mask)
    out[:, order] = mask[:, order] & (ranks <= n)
    return out


def score_new(
    model: Estimator, new: NewModels, items: np.ndarray, reference: np.ndarray | None = None, **keys
) -> pd.DataFrame:
    """One row per new LLM with a test label: `keys`, its test accuracy and log loss (as `jeirt.metrics`
    defines them, vectorised over LLMs), `items` (answers it was fitted from), n (test labels) and
    kl, the mean over its test questions of KL(reference || this fit) (`reference`: predictions of
    another fit of the same LLMs on `new.test`; None: this fit itself, so 0)."""
    probs = model.predict_proba(new.test)  # (n_new, n_test_items)
    mask = new.test_mask
    labels = np.nan_to_num(new.test.labels)
    p = np.clip(probs.astype(np.float64), 1e-7, 1 - 1e-7)
    n = mask.sum(axis=1)
    right = ((probs >= 0.5) == (labels >= 0.5)) & mask
    loss = -(labels * np.log(p) + (1 - labels) * np.log(1 - p)) * mask
    kl = np.zeros(len(n)) if reference is None else (bernoulli_kl(reference, probs) * mask).sum(axis=1)
    return pd.DataFrame(
        [
            {
                **keys,
                "model": m,
                "accuracy": right[i].sum() / n[i],
                "log_loss": loss[i].sum() / n[i],
                "items": int(items[i]),
                "n": int(n[i]),
                "kl": kl[i] / n[i],
            }
            for i, m in enumerate(new.names)
            if n[i] > 0
        ]
    )


def onboard_and_score(
    model: JEIRT,
    new: NewModels,
    mask: np.ndarray,
    reference: np.ndarray | None = None,
    prior_width: float | str = "auto",
    validation: np.ndarray | None = None,
    **keys,
) -> pd.DataFrame:
    """One step of the onboarding experiment: fit the vectors of the new LLMs from their answers under
    `mask` (all at once, everything else frozen: `JEIRT.onboard`, replacing earlier fits) and score
    them on their test labels (`score_new`). With `prior_width="auto"` the width is the one that best
    predicts the new LLMs' validation answers (`new.validation`; the Laplace evidence when there are none):
    with more answers the evidence widens the prior past what new questions want (DECISIONS.md). The rows
    add seconds (onboarding all of them) and prior_width (the width used, the most common one).
    `validation` replaces `new.validation` (e.g. `capped_validation`: no more of them than `mask` has)."""
    if mask.shape != new.answers.shape:
        raise ValueError(f"mask has shape {mask.shape}; expected the new LLMs' answers' {new.answers.shape}.")
    if (mask & ~new.answers).any():
        raise ValueError(
            "mask selects labels outside the new LLMs' training answers; take a subset of "
            "`new.answers` (subsample_items, first_items)."
        )
    start = time.perf_counter()
    validation = (new.validation if validation is None else validation) if prior_width == "auto" else None
    model.onboard(new.data, mask, replace=True, prior_width=prior_width, val_mask=validation)
    seconds = time.perf_counter() - start
    rows = score_new(model, new, mask.sum(axis=1), reference, **keys)
    return rows.assign(seconds=seconds, prior_width=model.onboard_prior_width_)


def capped_validation(validation: np.ndarray, mask: np.ndarray, seed: int = 0) -> np.ndarray:
    """Each new LLM's validation answers (`validation`, (n_new, n_items)) cut to a seeded choice of as
    many as it is onboarded from under `mask`: the prior's width then rests on no more of a model's
    answers than the share under test (all of them would be about 12 times the 1% on mmlu_pro)."""
    validation, mask = np.asarray(validation, dtype=bool), np.asarray(mask, dtype=bool)
    if validation.shape != mask.shape:
        raise ValueError(f"validation has shape {validation.shape}; expected mask's {mask.shape}.")
    order = np.random.default_rng(seed).permutation(mask.shape[1])
    ranks = np.cumsum(validation[:, order], axis=1)  # (n_new, n_items) running count, in a seeded order
    out = np.zeros_like(validation)
    out[:, order] = validation[:, order] & (ranks <= mask.sum(axis=1)[:, None])
    return out


PRIOR_MEAN_WIDTH = 1e-8  # a prior this narrow pins a new vector to the prior mean: what 0 answers give


def prior_mean_scores(model: JEIRT, new: NewModels, **keys) -> pd.DataFrame:
    """The floor of an onboarding curve: every new LLM scored at the prior mean (the known vectors'
    mean: no answer of its own moves it; `items` 0), the 0-answer accuracy a share of answers must beat."""
    model.onboard(new.data, new.answers, replace=True, prior_width=PRIOR_MEAN_WIDTH)
    rows = score_new(model, new, np.zeros(len(new.names), dtype=int), **keys)
    return rows.assign(seconds=np.nan, prior_width=0.0)


def joint_scores(joint: Estimator, new: NewModels, **keys) -> pd.DataFrame:
    """Table 1's "All" rows (setting "All" unless `keys` say otherwise): the new LLMs scored by `joint`,
    a model fitted with every LLM on the split they were held out of (seconds: its training time)."""
    trained_on = getattr(joint, "split_name_", new.trained_on)
    if trained_on != new.trained_on:
        raise ValueError(
            f"the joint model was fitted on split {trained_on!r}; expected {new.trained_on!r} "
            "(fit it with joint_models on the same dataset and seeds)."
        )
    seconds = getattr(getattr(joint, "history_", None), "seconds", np.nan)
    rows = score_new(joint, new, new.answers.sum(axis=1), **{"setting": "All", **keys})
    return rows.assign(seconds=seconds, prior_width=np.nan)


def onboarding_table(curve: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """Table 1's layout: one column per setting ("1%" ... "All"); rows mean and sd over held-out LLMs
    (and seeds), and the mean number of training items seen."""
    if metric not in curve.columns:
        raise ValueError(f"metric={metric!r} is not a column of the curve; it has {list(curve.columns)}.")
    order = list(dict.fromkeys(curve["setting"]))  # settings in the order they were run
    grouped = curve.groupby("setting", sort=False)
    table = pd.DataFrame(
        {"mean": grouped[metric].mean(), "sd": grouped[metric].std(ddof=1), "items": grouped["items"].mean()}
    ).T
    return table[order]


def onboarding_gap(
    curve: pd.DataFrame, setting: str = "100%", reference: str = "All", metric: str = "accuracy"
) -> pd.Series:
    """`setting` minus `reference` for each (seed, held-out LLM): paired, so the spread is the LLMs'."""
    wide = curve.pivot_table(index=["seed", "model"], columns="setting", values=metric)
    missing = [s for s in (setting, reference) if s not in wide.columns]
    if missing:
        raise ValueError(f"settings {missing} are not in the curve; it has {list(wide.columns)}.")
    return (wide[setting] - wide[reference]).rename(f"{setting} - {reference}")


def recent_models(
    models: Sequence[str], since: str = "2024-05", releases: dict[str, str] = MMLU_PRO_RELEASES
) -> list[str]:
    """The `models` released in month `since` ("YYYY-MM") or later, by `releases`; unknown names raise."""
    unknown = [m for m in models if m not in releases]
    if unknown:
        raise KeyError(
            f"no release month for model(s) {unknown[:5]}; add them to `releases` "
            f"(known: {len(releases)} models, e.g. {list(releases)[:3]})."
        )
    return [m for m in models if releases[m] >= since]


def bernoulli_kl(p: np.ndarray, q: np.ndarray, eps: float = 1e-7) -> np.ndarray:
    """KL(Bernoulli(p) || Bernoulli(q)), elementwise, probabilities clipped to [eps, 1 - eps]."""
    p = np.clip(np.asarray(p, dtype=np.float64), eps, 1 - eps)
    q = np.clip(np.asarray(q, dtype=np.float64), eps, 1 - eps)
    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


def rate_table(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Appendix D's rows from `onboard_and_score` tables with a `budget` key (n answers, or "all" for
    the fit from every answer, the reference): adds accuracy_gap (the all-answers accuracy minus this
    one) and excess_log_loss (test log loss minus the all-answers fit's); rows by budget, "all" last."""
    table = pd.concat(parts, ignore_index=True)
    if "budget" not in table.columns or not (table["budget"] == "all").any():
        raise ValueError("expected rows with a `budget` key, some of them budget='all' (the reference fit).")
    ref = table[table["budget"] == "all"].set_index("model")
    table["excess_log_loss"] = table["log_loss"] - table["model"].map(ref["log_loss"])
    table["accuracy_gap"] = table["model"].map(ref["accuracy"]) - table["accuracy"]
    order = [b for b in dict.fromkeys(table["budget"]) if b != "all"] + ["all"]
    return table.sort_values("budget", key=lambda b: b.map(order.index), kind="stable").reset_index(drop=True)


def rate_summary(rate: pd.DataFrame) -> pd.DataFrame:
    """Per budget n: mean items seen, accuracy (and sd), accuracy gap, excess log loss and KL over the
    held-out LLMs, and the seconds it took to onboard all of them."""
    grouped = rate.groupby("budget", sort=False)
    return pd.DataFrame(
        {
            "items": grouped["items"].mean(),
            "accuracy": grouped["accuracy"].mean(),
            "accuracy_sd": grouped["accuracy"].std(ddof=1),
            "accuracy_gap": grouped["accuracy_gap"].mean(),
            "excess_log_loss": grouped["excess_log_loss"].mean(),
            "kl": grouped["kl"].mean(),
            "models": grouped.size(),
            "seconds": grouped["seconds"].first(),
        }
    )


def rate_slope(summary: pd.DataFrame, lo: float, hi: float) -> float:
    """Least-squares log-log slope of the KL against the answers seen, over the budgets with
    lo <= n <= hi (NaN with fewer than two positive ones); the d/n rate has slope -1."""
    rows = summary.drop(index="all", errors="ignore")
    rows = rows[(rows["items"] >= lo) & (rows["items"] <= hi) & (rows["kl"] > 0)]
    if len(rows) < 2:
        return float("nan")
    return float(np.polyfit(np.log(rows["items"]), np.log(rows["kl"]), 1)[0])


def rate_dimension(summaries: dict[int, pd.DataFrame], hi: float = 512) -> int:
    """The largest d whose budgets 4d <= n <= hi hold at least three positive KLs, so that its slope has
    a residual spread (`rate_slope_se`) to be judged on; ValueError when no d has."""
    usable = [d for d, s in summaries.items() if np.isfinite(rate_slope_se(s, 4 * d, hi))]
    if not usable:
        raise ValueError(f"no d in {list(summaries)} has three budgets between 4d and {hi} answers with a positive KL.")
    return max(usable)


def rate_slope_se(summary: pd.DataFrame, lo: float, hi: float) -> float:
    """The standard error of `rate_slope`'s least-squares slope from its residuals (NaN with fewer than
    three positive budgets): the spread a verdict on the rate reads."""
    rows = summary.drop(index="all", errors="ignore")
    rows = rows[(rows["items"] >= lo) & (rows["items"] <= hi) & (rows["kl"] > 0)]
    if len(rows) < 3:
        return float("nan")
    x, y = np.log(rows["items"].to_numpy(float)), np.log(rows["kl"].to_numpy(float))
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    return float(np.sqrt(resid @ resid / (len(x) - 2) / ((x - x.mean()) @ (x - x.mean()))))
