"""Routing: send each question to the model predicted most likely to answer it right.

Any fitted predictor (JE-IRT, IRT-Net, the baselines of `jeirt.baselines`) gives a matrix of predicted
P(correct), models x questions. A router sends question q to the model

    m*(q) = argmax_m  P(m answers q) - lambda * cost_m                                        (1)

with lambda = 0 the model most likely to be right (the routing experiment of the JE-IRT paper and of
IRT-Net). The router's accuracy is the *true* label of the chosen model, averaged over the questions
(labels in [0, 1] are used as they are: for 0/1 labels, the share answered right).

Ungraded pairs. Some datasets (zeroeval) did not grade every model on every question, and a choice of
an ungraded model cannot be scored. Every policy here therefore chooses only among the models graded
on the question (`RoutingSet.graded`); a question with no graded model is refused with an error, never
dropped. The reference policies follow the same rule, so all of them are scored on the same questions
with the same choice sets:

- best single model: the highest accuracy on the training labels among the models graded on every test
  question (a model one could deploy alone); chosen without the test labels;
- per-benchmark best: the same rule per benchmark, on that benchmark's training labels and questions;
- random: the expected accuracy of a uniformly random graded model (the mean label of the question);
- oracle: right if any graded model is right (the largest label); its cost is that of the cheapest
  model that is right (of the cheapest graded model when none is).

Costs. `prices.csv` beside this module (package data, so it comes with any install: `default_prices()`)
holds approximate public list prices in USD per
million input and output tokens, one row per model of the `mmlu_pro` and `zeroeval` datasets. API
models carry their provider's list price at release (the `source` and `note` columns say which);
open-weight models carry a typical hosted price by parameter count (`OPEN_WEIGHT_RULE`). One question
is assumed to cost `INPUT_TOKENS` prompt tokens and `OUTPUT_TOKENS` answer tokens, so

    cost_m = 1000 * (INPUT_TOKENS * usd_per_mtok_input + OUTPUT_TOKENS * usd_per_mtok_output) / 1e6

in USD per 1,000 questions. These are list prices under an assumed token count, not measured bills;
reasoning models (o1) also bill hidden reasoning tokens, which the rule leaves out. `frontier` sweeps
lambda in (1) from 0 to where every question goes to its cheapest graded model: average cost per
question against accuracy; `cheapest_within` finds the cheapest point within a tolerance of a target
accuracy (e.g. the best single model's).
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from tqdm import tqdm

from jeirt.data.csv_tables import read_csv_table
from jeirt.data.dataset import Dataset
from jeirt.params import ROUTE_PARAMS, check_params
from jeirt.splits import Split

if TYPE_CHECKING:
    from jeirt.estimator import Estimator

PRICE_COLUMNS = ("model", "usd_per_mtok_input", "usd_per_mtok_output", "source", "note")
INPUT_TOKENS = 400  # assumed prompt tokens per question: instructions, question and its options
OUTPUT_TOKENS = 300  # assumed answer tokens per question: a short chain of thought and the answer
# Open-weight models: a typical serverless price (USD per million tokens, input and output alike) by
# parameter count, after the tiers of hosted inference providers in 2024 (e.g. Together AI).
OPEN_WEIGHT_RULE = {
    "up to 4B": 0.10,
    "4.1B-8B": 0.20,
    "8.1B-21B": 0.30,
    "21.1B-41B": 0.80,
    "41.1B-80B": 0.90,
    "80.1B-110B": 1.80,
    "mixture of experts up to 56B": 0.60,
    "405B": 5.00,
}


# ----------------------------------------------------------------------------------------------------
# The questions a router is scored on


@dataclass(frozen=True)
class RoutingSet:
    """Test questions: the true labels of the graded (model, question) pairs, NaN elsewhere."""

    models: tuple[str, ...]  # (n_models,)
    labels: np.ndarray  # (n_models, n_questions) in [0, 1]; NaN = not graded, never chosen
    benchmarks: np.ndarray  # (n_questions,) each question's benchmark
    item_ids: np.ndarray  # (n_questions,)

    def __post_init__(self) -> None:
        labels = np.asarray(self.labels, dtype=np.float64)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "models", tuple(str(m) for m in self.models))
        object.__setattr__(self, "benchmarks", np.asarray(self.benchmarks, dtype=object))
        object.__setattr__(self, "item_ids", np.asarray(self.item_ids, dtype=object))
        if labels.ndim != 2 or labels.shape[1] == 0:
            raise ValueError(
                f"labels has shape {labels.shape}; expected (n_models, n_questions) with at "
                "least one question: the question set is empty."
            )
        if labels.shape[0] != len(self.models):
            raise ValueError(f"labels has {labels.shape[0]} rows but {len(self.models)} models are named.")
        n = labels.shape[1]
        if self.benchmarks.shape != (n,) or self.item_ids.shape != (n,):
            raise ValueError(
                f"benchmarks {self.benchmarks.shape} and item_ids {self.item_ids.shape} must "
                f"have one entry per question ({n},)."
            )
        seen = labels[~np.isnan(labels)]
        if seen.size and (seen.min() < 0 or seen.max() > 1):
            raise ValueError(f"labels must lie in [0, 1] (NaN = not graded); found [{seen.min()}, {seen.max()}].")
        orphans = ~self.graded.any(axis=0)
        if orphans.any():
            raise ValueError(
                f"{int(orphans.sum())} question(s) have no graded model, e.g. "
                f"{list(self.item_ids[orphans][:3])}; drop them from the question set."
            )

    @property
    def graded(self) -> np.ndarray:
        """(n_models, n_questions) bool: the pairs a router may choose."""
        return ~np.isnan(self.labels)

    @property
    def n_questions(self) -> int:
        return self.labels.shape[1]

    @classmethod
    def from_dataset(cls, ds: Dataset, mask: np.ndarray) -> RoutingSet:
        """The questions with a graded pair under `mask` (e.g. `split.test`), labels outside it NaN."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != ds.labels.shape:
            raise ValueError(f"mask has shape {mask.shape}; expected the dataset's {ds.labels.shape}.")
        mask = mask & ds.observed
        cols = np.flatnonzero(mask.any(axis=0))
        if len(cols) == 0:
            raise ValueError("the mask selects no graded pair: the question set is empty.")
        labels = np.where(mask, ds.labels, np.nan)[:, cols]
        return cls(
            tuple(ds.models), labels, ds.items["benchmark"].to_numpy()[cols], ds.items["item_id"].to_numpy()[cols]
        )

    def columns_of(self, ds: Dataset) -> np.ndarray:
        """Positions of these questions among `ds`'s items (to cut a prediction to them)."""
        cols = pd.Index(ds.items["item_id"]).get_indexer(list(self.item_ids))
        if (cols < 0).any():
            raise KeyError(f"item_id(s) {list(self.item_ids[cols < 0][:3])} are not in dataset {ds.name!r}.")
        return cols


# ----------------------------------------------------------------------------------------------------
# Costs: a price table, and one cost per model


def default_prices() -> Path:
    """The price table that ships with jeirt (package data: present in a wheel as in a checkout)."""
    with importlib.resources.as_file(importlib.resources.files("jeirt.tasks") / "prices.csv") as path:
        return Path(path)


def read_prices(path: str | Path | None = None) -> pd.DataFrame:
    """The price table at `path` (default `default_prices()`), checked: columns, names, numbers."""
    path = Path(path) if path is not None else default_prices()
    if not path.is_file():
        raise FileNotFoundError(f"no price table at {path}; pass one with columns {list(PRICE_COLUMNS)}.")
    table = read_csv_table(path, required=PRICE_COLUMNS[:3], names=())  # names as written; check_prices checks them
    return check_prices(table, str(path))


def check_prices(table: pd.DataFrame, where: str = "the price table") -> pd.DataFrame:
    """Refuse empty or repeated model names and missing, NaN or negative prices; return a clean copy."""
    table = table.copy()
    if table["model"].isna().any() or (table["model"].astype(str).str.strip() == "").any():
        raise ValueError(f"{where} has rows without a model name; name every model.")
    table["model"] = table["model"].astype(str)
    padded = table.loc[table["model"].str.strip() != table["model"], "model"].tolist()
    if padded:
        raise ValueError(
            f"{where} has model name(s) {padded[:3]} with spaces before or after them; write each "
            "name exactly as the model file has it."
        )
    repeated = table.loc[table["model"].duplicated(), "model"].unique()
    if len(repeated):
        raise ValueError(f"{where} lists model(s) {list(repeated[:5])} more than once; keep one row each.")
    for column in ("usd_per_mtok_input", "usd_per_mtok_output"):
        values = pd.to_numeric(table[column], errors="coerce")
        bad = table.loc[values.isna(), "model"].tolist()
        if bad:
            raise ValueError(
                f"{where}: {column} is missing, NaN or not a number for {bad[:5]}; give a "
                "price in USD per million tokens."
            )
        negative = table.loc[values < 0, "model"].tolist()
        if negative:
            raise ValueError(f"{where}: {column} is negative for {negative[:5]}; prices must be >= 0.")
        infinite = table.loc[np.isinf(values), "model"].tolist()  # inf/inf is NaN, which argmax would pick
        if infinite:
            raise ValueError(
                f"{where}: {column} is infinite for {infinite[:5]}; give a finite price, or "
                "leave the model out of the routing."
            )
        table[column] = values.astype(float)
    for column in PRICE_COLUMNS[3:]:
        table[column] = table[column].fillna("").astype(str) if column in table.columns else ""
    return table


def question_costs(
    prices: pd.DataFrame,
    models: Sequence[str],
    input_tokens: int = INPUT_TOKENS,
    output_tokens: int = OUTPUT_TOKENS,
    strict: bool = False,
) -> pd.Series:
    """USD per 1,000 questions for each of `models` (indexed by name), from a checked price table.

    Every model needs a row. Rows for other models are ignored (one table serves several datasets)
    unless `strict`, which refuses them.
    """
    if input_tokens < 0 or output_tokens < 0:
        raise ValueError(f"input_tokens={input_tokens}, output_tokens={output_tokens}; expected >= 0.")
    prices = check_prices(prices)
    table = prices.set_index("model")
    models = [str(m) for m in models]
    missing = [m for m in models if m not in table.index]
    extra = [m for m in table.index if m not in set(models)]
    if missing:
        others = f" (it has rows for other names, e.g. {extra[:3]}: a typo?)" if extra else ""
        raise ValueError(
            f"no price for model(s) {missing[:5]} ({len(missing)} in all); add rows for them to the price "
            f"table{others}."
        )
    if strict and extra:
        raise ValueError(
            f"the price table names model(s) {extra[:5]} that are not among the "
            f"{len(models)} models routed; remove them or pass strict=False."
        )
    per_token = (input_tokens * table["usd_per_mtok_input"] + output_tokens * table["usd_per_mtok_output"]) / 1e6
    return (1000 * per_token).loc[models].rename("usd_per_1k_questions")


def align_costs(costs: Mapping[str, float] | pd.Series, models: Sequence[str]) -> np.ndarray:
    """(n_models,) costs in the order of `models`; unknown, missing, NaN or negative ones raise."""
    costs = pd.Series(costs, dtype=float) if not isinstance(costs, pd.Series) else costs.astype(float)
    models = [str(m) for m in models]
    unknown = [m for m in costs.index if m not in set(models)]
    if unknown:
        raise ValueError(
            f"costs name unknown model(s) {unknown[:5]}; the models routed are {models[:5]}"
            f"{' ...' if len(models) > 5 else ''}."
        )
    missing = [m for m in models if m not in costs.index]
    if missing:
        raise ValueError(f"no cost for model(s) {missing[:5]} ({len(missing)} in all); give every model a cost.")
    if costs.index.duplicated().any():
        raise ValueError(f"costs repeat model(s) {list(costs.index[costs.index.duplicated()][:5])}.")
    values = costs.loc[models].to_numpy(dtype=np.float64)
    if np.isnan(values).any():
        raise ValueError(f"cost is NaN for {[m for m, v in zip(models, values) if np.isnan(v)][:5]}; give a number.")
    if (values < 0).any():
        raise ValueError(
            f"cost is negative for {[m for m, v in zip(models, values) if v < 0][:5]}; costs must be >= 0."
        )
    if np.isinf(values).any():
        raise ValueError(
            f"cost is infinite for {[m for m, v in zip(models, values) if np.isinf(v)][:5]}; give a finite cost."
        )
    return values


# ----------------------------------------------------------------------------------------------------
# Routing: Eq. (1)


def choose(
    probs: np.ndarray, allowed: np.ndarray | None = None, costs: np.ndarray | None = None, lam: float = 0.0
) -> np.ndarray:
    """(n_questions,) row of the chosen model: argmax of probs - lam * costs over `allowed` models.

    probs: (n_models, n_questions) in [0, 1]; allowed: same shape, bool (default: all); costs:
    (n_models,) aligned with the rows (see `align_costs`). Ties go to the first row.
    """
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[1] == 0:
        raise ValueError(
            f"probs has shape {probs.shape}; expected (n_models, n_questions) with at least one "
            "question: the question set is empty."
        )
    allowed = np.ones(probs.shape, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    if allowed.shape != probs.shape:
        raise ValueError(
            f"probs has shape {probs.shape} but the graded mask has {allowed.shape}; "
            "predict the same models and questions."
        )
    if np.isnan(probs[allowed]).any():
        raise ValueError("probs has NaN for a model the router may choose; predict every graded pair.")
    if (probs[allowed] < 0).any() or (probs[allowed] > 1).any():
        raise ValueError("probs must lie in [0, 1]; pass probabilities, not logits.")
    if not allowed.any(axis=0).all():
        raise ValueError(f"{int((~allowed.any(axis=0)).sum())} question(s) have no model to choose from.")
    check_params("choose", ROUTE_PARAMS, {"lam": lam})
    score = probs.copy()
    if lam > 0:
        if costs is None:
            raise ValueError(f"lam={lam} weighs costs, but no costs were given.")
        costs = np.asarray(costs, dtype=np.float64)
        if costs.shape != (probs.shape[0],):
            raise ValueError(f"costs has shape {costs.shape}; expected one per model ({probs.shape[0]},).")
        if not np.isfinite(costs).all() or (costs < 0).any():
            raise ValueError("costs must be finite numbers >= 0 (no NaN or inf); check them with align_costs.")
        score = score - lam * costs[:, None]
        # Among equal scores prefer the cheaper model: the large-lambda end is then the cheapest.
        score = score - 1e-12 * costs[:, None] / max(costs.max(), 1e-300)
    score[~allowed] = -np.inf
    return np.argmax(score, axis=0)


def _check_probs(probs: np.ndarray, test: RoutingSet) -> np.ndarray:
    """`probs` as float64, refused unless it has the test set's shape."""
    try:
        probs = np.asarray(probs, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"probs is a {type(probs).__name__}; pass P(correct) as an array (models x questions), e.g. "
            "model.predict_proba(questions)."
        ) from None
    if probs.shape != test.labels.shape:
        raise ValueError(
            f"probs has shape {probs.shape}; the test set has {test.labels.shape} (models x "
            "questions). Cut the prediction to the test questions (RoutingSet.columns_of)."
        )
    return probs


def outcome(choice: np.ndarray, test: RoutingSet, costs: np.ndarray | None = None) -> dict[str, float]:
    """Accuracy (mean true label of the chosen models) and mean cost of a choice per question."""
    choice = np.asarray(choice)
    if choice.shape != (test.n_questions,):
        raise ValueError(f"choice has shape {choice.shape}; expected one model per question ({test.n_questions},).")
    cols = np.arange(test.n_questions)
    picked = test.labels[choice, cols]
    if np.isnan(picked).any():
        raise ValueError(
            f"{int(np.isnan(picked).sum())} choice(s) fall on ungraded pairs; route among "
            "graded models only (choose(..., allowed=test.graded))."
        )
    result = {"accuracy": float(picked.mean())}
    if costs is not None:
        result["cost"] = float(np.asarray(costs, dtype=np.float64)[choice].mean())
    return result


def route(
    probs: np.ndarray, test: RoutingSet, costs: Mapping[str, float] | pd.Series | None = None, lam: float = 0.0
) -> dict[str, float]:
    """Route the test questions by Eq. (1) among graded models: accuracy and mean cost."""
    probs = _check_probs(probs, test)
    cost = None if costs is None else align_costs(costs, test.models)
    return outcome(choose(probs, test.graded, cost, lam), test, cost)


def default_lambdas(costs: np.ndarray, n: int = 60) -> np.ndarray:
    """0, then `n - 1` log-spaced values from "cost barely matters" to "always the cheapest"."""
    values = np.unique(np.round(np.asarray(costs, dtype=np.float64), 9))  # 0.1 + 0.2 == 0.3 here
    if len(values) < 2:
        return np.zeros(1)
    low = 1e-3 / (values[-1] - values[0])  # lam * (cost span) = 0.001: a tie-breaker at most
    high = 2.0 / np.diff(values).min()  # lam * (smallest cost gap) = 2 > any gap in probability
    return np.concatenate([[0.0], np.geomspace(low, high, n - 1)])


def frontier(
    probs: np.ndarray,
    test: RoutingSet,
    costs: Mapping[str, float] | pd.Series,
    lambdas: Sequence[float] | np.ndarray | None = None,
) -> pd.DataFrame:
    """Accuracy and mean cost per question of Eq. (1) for each lambda (default `default_lambdas`).

    The mean cost never rises with lambda (each question's choice moves to cheaper models).
    """
    probs = _check_probs(probs, test)
    cost = align_costs(costs, test.models)
    lambdas = default_lambdas(cost) if lambdas is None else np.asarray(lambdas, dtype=np.float64)
    if lambdas.ndim != 1 or len(lambdas) == 0:
        raise ValueError(f"lambdas={lambdas}; expected a non-empty list of numbers >= 0.")
    rows = []
    for lam in np.sort(lambdas):
        choice = choose(probs, test.graded, cost, float(lam))
        rows.append({"lam": float(lam), **outcome(choice, test, cost), "models_used": len(np.unique(choice))})
    return pd.DataFrame(rows)


def cheapest_within(points: pd.DataFrame, target: float, tolerance: float = 0.01) -> pd.Series | None:
    """The cheapest row of a frontier with accuracy >= target - tolerance; None when no row reaches it."""
    if tolerance < 0:
        raise ValueError(f"tolerance={tolerance}; expected >= 0 (an accuracy difference, e.g. 0.01).")
    missing = [c for c in ("accuracy", "cost") if c not in points.columns]
    if missing:
        raise ValueError(f"the frontier lacks column(s) {missing}; make it with routing.frontier.")
    good = points[points["accuracy"] >= target - tolerance - 1e-12]
    if good.empty:
        return None
    return good.sort_values(["cost", "accuracy"], ascending=[True, False]).iloc[0]


# ----------------------------------------------------------------------------------------------------
# Reference policies, chosen on training labels


def training_accuracy(ds: Dataset, mask: np.ndarray, by: str | None = None) -> pd.DataFrame | pd.Series:
    """Each model's accuracy on its labels under `mask` (e.g. train | val), overall or per `by`."""
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != ds.labels.shape:
        raise ValueError(f"mask has shape {mask.shape}; expected the dataset's {ds.labels.shape}.")
    if not (mask & ds.observed).any():
        raise ValueError("the training mask selects no graded label; reference policies need training labels.")
    return ds.accuracy(by=by, mask=mask)


def _best_complete(accuracy: pd.Series, graded: np.ndarray, models: Sequence[str], where: str) -> int:
    """Row of the most accurate model (by `accuracy`) among those graded on every column of `graded`."""
    complete = graded.all(axis=1)
    scores = accuracy.reindex(list(models)).to_numpy(dtype=np.float64)
    scores = np.where(complete & ~np.isnan(scores), scores, -np.inf)
    if not np.isfinite(scores).any():
        raise ValueError(
            f"no model was graded on every test question of {where} and has training labels; "
            "a single model cannot cover it. Restrict the question set or the models."
        )
    return int(np.argmax(scores))


def best_single(ds: Dataset, train_mask: np.ndarray, test: RoutingSet) -> str:
    """The model with the highest training accuracy among those graded on every test question."""
    return test.models[_best_complete(training_accuracy(ds, train_mask), test.graded, test.models, "the set")]


def best_per_benchmark(ds: Dataset, train_mask: np.ndarray, test: RoutingSet) -> pd.Series:
    """Per benchmark of the test set: the best single model by that benchmark's training labels."""
    table = training_accuracy(ds, train_mask, by="benchmark")  # (n_models, n_benchmarks)
    picks = {}
    for bench in pd.unique(test.benchmarks):
        cols = test.benchmarks == bench
        if bench not in table.columns:
            raise ValueError(f"benchmark {bench!r} has no training label; the per-benchmark best needs one.")
        picks[bench] = test.models[_best_complete(table[bench], test.graded[:, cols], test.models, repr(bench))]
    return pd.Series(picks, name="model").rename_axis("benchmark")


def reference_choices(ds: Dataset, train_mask: np.ndarray, test: RoutingSet) -> dict[str, np.ndarray]:
    """(n_questions,) rows chosen by the best single model and by the per-benchmark best."""
    rows = {m: i for i, m in enumerate(test.models)}
    per_bench = best_per_benchmark(ds, train_mask, test)
    return {
        "best single model": np.full(test.n_questions, rows[best_single(ds, train_mask, test)]),
        "per-benchmark best": np.array([rows[per_bench[b]] for b in test.benchmarks]),
    }


def references(
    ds: Dataset, train_mask: np.ndarray, test: RoutingSet, costs: Mapping[str, float] | pd.Series | None = None
) -> pd.DataFrame:
    """Accuracy (and mean cost) of best single, per-benchmark best, random and oracle on `test`."""
    cost = None if costs is None else align_costs(costs, test.models)
    choices = reference_choices(ds, train_mask, test)
    single, per_bench = choices["best single model"], choices["per-benchmark best"]
    first = {b: np.flatnonzero(test.benchmarks == b)[0] for b in pd.unique(test.benchmarks)}  # one question each
    out = {
        "best single model": {**outcome(single, test, cost), "choice": test.models[single[0]]},
        "per-benchmark best": {
            **outcome(per_bench, test, cost),
            "choice": ", ".join(f"{b}: {test.models[per_bench[q]]}" for b, q in first.items()),
        },
    }
    graded, labels = test.graded, test.labels
    random = {"accuracy": float(np.nanmean(labels, axis=0).mean()), "choice": "uniform over graded models"}
    right = np.nan_to_num(labels, nan=-1.0)
    oracle = {"accuracy": float(right.max(axis=0).mean()), "choice": "a right model if any (cheapest)"}
    if cost is not None:
        random["cost"] = float((np.where(graded, cost[:, None], 0).sum(axis=0) / graded.sum(axis=0)).mean())
        # the cheapest of the best-labelled graded models: right ones when any model is right
        best = right >= right.max(axis=0, keepdims=True)
        oracle["cost"] = float(np.where(best, cost[:, None], np.inf).min(axis=0).mean())
    out["random model"], out["oracle"] = random, oracle
    columns = ["accuracy", "cost", "choice"] if cost is not None else ["accuracy", "choice"]
    return pd.DataFrame(out).T[columns].astype({c: float for c in columns if c != "choice"}).rename_axis("policy")


def single_models(test: RoutingSet, costs: Mapping[str, float] | pd.Series | None = None) -> pd.DataFrame:
    """Test accuracy (and cost) of each model graded on every test question, routed all questions."""
    complete = np.flatnonzero(test.graded.all(axis=1))
    table = pd.DataFrame(
        {"accuracy": test.labels[complete].mean(axis=1)},
        index=pd.Index([test.models[i] for i in complete], name="model"),
    )
    if costs is not None:
        table["cost"] = align_costs(costs, test.models)[complete]
    return table.sort_values("accuracy", ascending=False)


def compare(
    predictions: Mapping[str, np.ndarray],
    ds: Dataset,
    train_mask: np.ndarray,
    test: RoutingSet,
    costs: Mapping[str, float] | pd.Series | None = None,
) -> pd.DataFrame:
    """One row per router (lam = 0, from `predictions`: name -> (n_models, n_questions) probs on `test`)
    and per reference policy: accuracy, mean cost (when `costs`) and what each chooses."""
    rows = {
        name: {**route(probs, test, costs), "choice": "argmax predicted P(correct)"}
        for name, probs in predictions.items()
    }
    routers = pd.DataFrame(rows).T.rename_axis("policy")
    table = pd.concat([routers, references(ds, train_mask, test, costs)])
    return table.astype({c: float for c in table.columns if c != "choice"})


def gap(choice: np.ndarray, baseline: np.ndarray, test: RoutingSet) -> dict[str, float]:
    """Accuracy of `choice` minus that of `baseline` on the same questions, with its paired standard
    error (the sd of the per-question differences over sqrt(n_questions))."""
    a, b = (np.asarray(c) for c in (choice, baseline))
    for name, c in (("choice", a), ("baseline", b)):
        if c.shape != (test.n_questions,):
            raise ValueError(f"{name} has shape {c.shape}; expected one model per question ({test.n_questions},).")
    cols = np.arange(test.n_questions)
    diff = test.labels[a, cols] - test.labels[b, cols]
    if np.isnan(diff).any():
        raise ValueError("a choice falls on an ungraded pair; route among graded models only.")
    se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
    return {"gap": float(diff.mean()), "se": float(se)}


# ----------------------------------------------------------------------------------------------------
# One run: fit several predictors on a split, keep their predictions on the test questions


@dataclass
class RoutingRun:
    """Predictors fitted on one split, their P(correct) on its test questions and their test scores."""

    ds: Dataset
    split: Split
    test: RoutingSet
    probs: dict[str, np.ndarray]  # name -> (n_models, n_questions), the test questions only
    scores: dict[str, dict[str, float]]  # name -> jeirt.metrics.score of every graded test pair
    fitted: dict[str, Estimator]  # name -> the fitted estimator

    @property
    def train_mask(self) -> np.ndarray:
        """The labels the reference policies may choose on: train and validation parts."""
        return self.split.train | self.split.val

    def compare(self, costs: Mapping[str, float] | pd.Series | None = None) -> pd.DataFrame:
        """`compare` for this run's routers and references."""
        return compare(self.probs, self.ds, self.train_mask, self.test, costs)

    def choice(self, name: str) -> np.ndarray:
        """(n_questions,) rows chosen by router `name` at lambda = 0, or by a reference policy."""
        if name in self.probs:
            return choose(self.probs[name], self.test.graded)
        refs = reference_choices(self.ds, self.train_mask, self.test)
        if name not in refs:
            raise KeyError(f"no router or reference named {name!r}; have {list(self.probs) + list(refs)}.")
        return refs[name]


def fit_routers(
    ds: Dataset,
    split: Split,
    factories: Mapping[str, Callable[[], Estimator]],
    progress: bool = False,
    n_jobs: int | None = None,
) -> RoutingRun:
    """Fit each `factories[name]()` (fit(ds, split), predict_proba(ds)) and route its test questions.

    n_jobs None fits them here, one after the other; a number fits them through the fitted-model cache
    (`jeirt.fitcache.fit_many`: the same fits, a fit made before is read back) in that many worker
    processes (1: here)."""
    from jeirt.fitcache import fit_many
    from jeirt.metrics import evaluate

    if not factories:
        raise ValueError("factories is empty; give at least one name -> estimator factory.")
    test = RoutingSet.from_dataset(ds, split.test)
    cols = test.columns_of(ds)
    probs, scores, fitted = {}, {}, {}
    if n_jobs is not None:
        made = fit_many([make() for make in factories.values()], ds, [split] * len(factories), n_jobs=n_jobs)
        fitted = dict(zip(factories, made))
    for name, make in tqdm(factories.items(), desc=f"routers on {ds.name}", disable=not progress, leave=False):
        if name not in fitted:
            fitted[name] = make().fit(ds, split)
        full = fitted[name].predict_proba(ds)  # (n_models, n_items)
        probs[name] = full[:, cols]
        scores[name] = evaluate(full, ds, split.test)["overall"]
    return RoutingRun(ds, split, test, probs, scores, fitted)
