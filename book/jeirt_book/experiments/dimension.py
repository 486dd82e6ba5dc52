"""The embedding-dimension experiment (paper Sec. 3.2, Fig. 2): JE-IRT's test accuracy across d and
text encoders, against EmbedLLM's matrix factorisation and KNN on the same splits.

The sweep itself, a loop over encoders x d x seeds, is written on the Dimension page; this module
holds its parts: the grid of runs (`sweep_runs`, validated), the scores of one fitted model
(`score_test`: overall, per LLM, per benchmark, gathered in a `RunScores`), the reference lines
(`baseline_reference`), the tables over seeds (`sweep_summary`), the choice of d without the test
questions (`best_dimension`) and which encoders a machine can use (`available_encoders`).
Seed s sets the question split as well as the model's initialisation, so the spread over seeds
covers both; every encoder and d sees the same splits.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from jeirt.data import Dataset
from jeirt.estimator import Estimator
from jeirt.fitcache import fit_cached, fit_many
from jeirt.metrics import evaluate
from jeirt.splits import Split, split_by_question

PAPER_ENCODERS = ("all-mpnet-base-v2", "ModernBERT-large")  # Figure 2's two encoders


@dataclass
class RunScores:
    """Test scores of fitted models, one row per run, per (run, model) and per (run, benchmark)."""

    runs: pd.DataFrame  # one row per run: keys, test metrics, n, best validation loss, epochs, fit_seconds
    per_model: pd.DataFrame  # one row per run and LLM: keys, model, accuracy, log_loss, n
    per_benchmark: pd.DataFrame  # one row per run and benchmark: keys, benchmark, accuracy, log_loss, n

    @classmethod
    def concat(cls, parts: Sequence[RunScores]) -> RunScores:
        """All rows of `parts`, in order."""
        if not parts:
            raise ValueError("no RunScores to concatenate; give at least one.")
        return cls(
            *(
                pd.concat([getattr(p, name) for p in parts], ignore_index=True)
                for name in ("runs", "per_model", "per_benchmark")
            )
        )


def sweep_runs(encoders: Sequence[str], d_grid: Sequence[int], seeds: Sequence[int]) -> list[tuple[str, int, int]]:
    """Figure 2's grid: every (encoder, d, seed), encoders outermost."""
    if not encoders or not d_grid or not seeds:
        raise ValueError(
            f"encoders={list(encoders)}, d_grid={list(d_grid)}, seeds={list(seeds)}; each needs at least one entry."
        )
    if min(d_grid) < 1:
        raise ValueError(f"d_grid={list(d_grid)}; expected positive dimensions.")
    return [(encoder, int(d), int(seed)) for encoder in encoders for d in d_grid for seed in seeds]


def score_test(model: Estimator, ds: Dataset, split: Split, keys: dict, seconds: float = np.nan) -> RunScores:
    """Score a fitted `model` on `split.test`: overall, per LLM and per benchmark, each row led by
    `keys`. fit_seconds is the training time the fit recorded (`history_.seconds`, also for a fit
    read from the cache), else `seconds`."""
    items = split.items_of("test")  # predict only what is scored
    test = ds.subset(items=items)
    result = evaluate(model.predict_proba(test), test, split.test[:, items])
    history = getattr(model, "history_", None)
    run = {
        **keys,
        **{m: result["overall"][m] for m in ("accuracy", "auc", "log_loss")},
        "n": result["overall"]["n"],
        "val_loss": min(history.val_loss) if history is not None else np.nan,
        "epochs": len(history.val_loss) if history is not None else np.nan,
        "fit_seconds": getattr(history, "seconds", None) or seconds,
    }
    tables = []
    for name in ("per_model", "per_benchmark"):
        table = result[name][["accuracy", "log_loss", "n"]].reset_index()
        tables.append(table.assign(**keys)[list(keys) + list(table.columns)])
    return RunScores(pd.DataFrame([run]), *tables)


def fit_and_score(model: Estimator, ds: Dataset, split: Split, keys: dict) -> RunScores:
    """Fit `model` on `split` (through the cache, `jeirt.fitcache`) and score it (`score_test`); a fit
    without a training history is timed by the wall clock."""
    start = time.perf_counter()
    model = fit_cached(model, ds, split)
    return score_test(model, ds, split, keys, time.perf_counter() - start)


def baseline_reference(
    ds: Dataset,
    encoders: Sequence[str],
    seeds: Sequence[int],
    max_epochs: int | None = None,
    split_for: Callable[[Dataset, int], Split] | None = None,
) -> RunScores:
    """Figure 2's reference lines: EmbedLLM's matrix factorisation and KNN (`jeirt.baselines`), fitted
    on the splits the sweep uses (seed s: `split_for(ds, s)`, by default `split_by_question(ds,
    seed=s)`). `max_epochs` caps the factorisation's training as the sweep caps JE-IRT's (None: its
    default)."""
    from jeirt.baselines import (  # imported here: only this protocol needs them
        KNN,
        EmbedLLMMF,
    )

    if not encoders or not seeds:
        raise ValueError(f"encoders={list(encoders)}, seeds={list(seeds)}; each needs an entry.")
    training = {"max_epochs": max_epochs} if max_epochs else None
    split_for = split_for or (lambda data, seed: split_by_question(data, seed=seed))
    splits = {int(seed): split_for(ds, int(seed)) for seed in seeds}
    runs = [(encoder, seed) for seed in splits for encoder in encoders]
    # The factorisations train: side by side, through the cache. KNN's fit is timed by the wall clock.
    fits = fit_many(
        [EmbedLLMMF(encoder=enc, training=training, random_state=seed) for enc, seed in runs],
        ds,
        [splits[seed] for _, seed in runs],
    )
    parts = []
    for (encoder, seed), mf in zip(runs, fits):
        parts.append(score_test(mf, ds, splits[seed], {"method": "embedllm-mf", "encoder": encoder, "seed": seed}))
        parts.append(
            fit_and_score(KNN(encoder=encoder), ds, splits[seed], {"method": "knn", "encoder": encoder, "seed": seed})
        )
    return RunScores.concat(parts)


def sweep_summary(runs: pd.DataFrame, by: Sequence[str] = ("encoder", "d")) -> pd.DataFrame:
    """Mean, sd, min and max over seeds of test accuracy, plus mean validation loss, AUC and fit time."""
    missing = [c for c in (*by, "accuracy", "val_loss", "auc", "fit_seconds") if c not in runs.columns]
    if missing:
        raise ValueError(f"runs lack columns {missing}; give RunScores.runs.")
    grouped = runs.groupby(list(by), sort=True)
    table = grouped["accuracy"].agg(["mean", "std", "min", "max"]).add_prefix("accuracy_")
    table["val_loss"] = grouped["val_loss"].mean()
    table["auc"] = grouped["auc"].mean()
    table["fit_seconds"] = grouped["fit_seconds"].mean()
    table["seeds"] = grouped.size()
    return table.reset_index()


def best_dimension(runs: pd.DataFrame) -> pd.Series:
    """Per encoder, the d with the lowest mean validation loss over seeds (chosen without the test set)."""
    mean = runs.groupby(["encoder", "d"])["val_loss"].mean().reset_index()
    return mean.loc[mean.groupby("encoder")["val_loss"].idxmin()].set_index("encoder")["d"]


def available_encoders(
    ds: Dataset, wanted: Sequence[str] = PAPER_ENCODERS, try_loading: bool = False
) -> tuple[list[str], dict[str, str]]:
    """Which of `wanted` encoders can be used on `ds`, and why each other one is skipped.

    An encoder with precomputed features (`ds.embeddings`) is always usable. Another one is usable only
    when `try_loading` and its weights load (`jeirt.encoders.get_encoder`); then `ds.features` encodes
    the texts, which is slow without a GPU. Offline, loading fails at once (no download is attempted
    when `HF_HUB_OFFLINE=1`) and the reason names what was tried.
    """
    from jeirt.encoders import canonical_name, get_encoder

    usable, skipped = [], {}
    for name in (canonical_name(n) for n in wanted):
        if name in ds.embeddings:
            usable.append(name)
        elif not try_loading:
            skipped[name] = f"no precomputed features in {ds.name!r} (this profile does not encode texts)"
        else:
            try:
                get_encoder(name)
                usable.append(name)
            except Exception as err:  # noqa: BLE001 (any failure to load weights: skip it, say why)
                skipped[name] = f"{type(err).__name__}: {str(err).splitlines()[0]}"
    return usable, skipped


def gain_spread(gaps: pd.Series, drop: float = 0.1) -> dict[str, float]:
    """Sec. 3.2's "not driven by a handful of outlier models": per-model gaps (`gaps`, one per model,
    e.g. JE-IRT's accuracy minus the best baseline's, in points) summarised as their mean and standard
    error, the same after dropping the `drop` share of models with the largest gaps (at least one: the
    handful), and the share of models with a positive gap. A mean gain that survives the drop is not
    the outliers'; one that vanishes is."""
    gaps = pd.Series(gaps, dtype=float).dropna()
    if len(gaps) < 4:
        raise ValueError(f"{len(gaps)} per-model gaps; a spread over models needs at least 4.")
    if not 0 < drop < 0.5:
        raise ValueError(f"drop={drop}; expected a share of models between 0 and 0.5.")
    n_drop = max(1, int(round(drop * len(gaps))))
    kept = gaps.sort_values().iloc[:-n_drop]
    se = lambda g: float(g.std(ddof=1) / np.sqrt(len(g)))
    return {
        "models": len(gaps),
        "mean": float(gaps.mean()),
        "se": se(gaps),
        "dropped": n_drop,
        "mean without the top": float(kept.mean()),
        "se without the top": se(kept),
        "share positive": float((gaps > 0).mean()),
    }
