"""The Embedding-dimension page (Sec. 3.2, Fig. 2): JE-IRT's test accuracy across d and encoders,
against EmbedLLM's matrix factorisation and KNN.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from tqdm import tqdm

from jeirt.book import seeded_split
from jeirt.book.figures import LINESTYLES, style
from jeirt.data import Dataset
from jeirt.estimator import Estimator
from jeirt.fitcache import fit_cached, fit_many
from jeirt.metrics import evaluate
from jeirt.splits import Split


# Embedding dimension and onboarding (chapters "Embedding dimension" and "Onboarding new LLMs";
# numbers from jeirt.book.dimension)
def accuracy_vs_dimension(ax: plt.Axes, summary: pd.DataFrame, baselines: pd.DataFrame | None = None) -> plt.Axes:
    """Test accuracy against d (log axis), one line per encoder with a band from the worst to the best
    seed (`sweep_summary`); `baselines` (method, encoder, accuracy) as horizontal
    lines in the encoder's colour, one line style per method."""
    encoders = list(dict.fromkeys(summary["encoder"]))
    methods = [] if baselines is None else list(dict.fromkeys(baselines["method"]))
    for i, encoder in enumerate(encoders):
        rows = summary[summary["encoder"] == encoder].sort_values("d")
        s = style(i)
        ax.fill_between(rows["d"], rows["accuracy_min"], rows["accuracy_max"], color=s["color"], alpha=0.15,
                        linewidth=0)
        ax.plot(rows["d"], rows["accuracy_mean"], color=s["color"], marker=s["marker"], linestyle="-",
                label=f"je-irt, {encoder}")
        for j, method in enumerate(methods):
            value = baselines[(baselines["encoder"] == encoder) & (baselines["method"] == method)]["accuracy"]
            if len(value):
                ax.axhline(float(value.mean()), color=s["color"], linestyle=LINESTYLES[(j + 1) % len(LINESTYLES)],
                           linewidth=1, label=f"{method}, {encoder}")
    grid = sorted(summary["d"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(grid)
    ax.set_xticklabels([str(d) for d in grid])
    ax.minorticks_off()
    ax.set_xlabel("embedding dimension d (log scale)")
    ax.set_ylabel("test accuracy")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax


# Accuracy against the embedding dimension (Sec. 3.2, Figure 2): the grid is the profile's d_grid
PAPER_ENCODERS = ("all-mpnet-base-v2", "ModernBERT-large")  # Figure 2's two encoders


@dataclass
class RunScores:
    """Test scores of fitted models, one row per run, per (run, model) and per (run, benchmark)."""

    runs: pd.DataFrame  # one row per run: its keys, test metrics, n, best validation loss, epochs, seconds
    per_model: pd.DataFrame  # one row per run and LLM: keys, model, accuracy, log_loss, n
    per_benchmark: pd.DataFrame  # one row per run and benchmark: keys, benchmark, accuracy, log_loss, n

    @classmethod
    def concat(cls, parts: Sequence["RunScores"]) -> "RunScores":
        """All rows of `parts`, in order."""
        return cls(*(pd.concat([getattr(p, name) for p in parts], ignore_index=True)
                     for name in ("runs", "per_model", "per_benchmark")))


def score_test(model: Estimator, ds: Dataset, split: Split, keys: dict) -> RunScores:
    """Score a fitted `model` on `split.test`: overall, per LLM and per benchmark, each row led by `keys`."""
    items = split.items_of("test")  # predict only what is scored
    test = ds.subset(items=items)
    result = evaluate(model.predict_proba(test), test, split.test[:, items])
    history = getattr(model, "history_", None)
    run = {**keys, **{m: result["overall"][m] for m in ("accuracy", "auc", "log_loss")},
           "n": result["overall"]["n"],
           "val_loss": min(history.val_loss) if history is not None else np.nan,
           "epochs": len(history.val_loss) if history is not None else np.nan}
    tables = []
    for name in ("per_model", "per_benchmark"):
        table = result[name][["accuracy", "log_loss", "n"]].reset_index()
        tables.append(table.assign(**keys)[list(keys) + list(table.columns)])
    return RunScores(pd.DataFrame([run]), *tables)


def fit_and_score(model: Estimator, ds: Dataset, split: Split, keys: dict) -> RunScores:
    """Fit `model` on `split` (shared with other pages through `jeirt.fitcache`) and score it on the
    test part (`score_test`), with the fit's time: the training time the fit recorded when it keeps a
    history (so a fit read from the cache shows how long it trained), else the wall time."""
    start = time.perf_counter()
    model = fit_cached(model, ds, split)
    return _score_fitted(model, ds, split, keys, time.perf_counter() - start)


def _score_fitted(model: Estimator, ds: Dataset, split: Split, keys: dict, seconds: float) -> RunScores:
    scores = score_test(model, ds, split, keys)
    history = getattr(model, "history_", None)
    scores.runs["fit_seconds"] = getattr(history, "seconds", None) or seconds
    return scores


def dimension_sweep(ds: Dataset, make_model: Callable[[str, int, int], Estimator], encoders: Sequence[str],
                    d_grid: Sequence[int], seeds: Sequence[int], progress: bool = True,
                    n_jobs: int | None = None,
                    split_for: Callable[[Dataset, int], Split] = seeded_split) -> RunScores:
    """Figure 2: fit `make_model(encoder, d, seed)` for every encoder, d and seed; score each on the test part.

    Seed s sets the question split (`split_by_question(ds, seed=s)`, 80/10/10) as well as the model's
    own initialisation, so the spread over seeds covers both; every encoder and d sees the same splits.
    `split_for(ds, seed)` replaces that split (the book's `cfg.split_for`: EmbedLLM's official split in
    the paper's setting, the same for every seed).
    The checkpoint is whatever the estimator picks (JE-IRT: lowest validation loss). The fits are
    independent: `jeirt.fitcache.fit_many` runs them side by side (`n_jobs` processes, default one per
    core, at most 2), each through the cache of fitted models; `fit_seconds` is each fit's own
    training time (`history_.seconds`), else the sweep's wall time per fit.
    """
    if not encoders or not d_grid or not seeds:
        raise ValueError(f"encoders={list(encoders)}, d_grid={list(d_grid)}, seeds={list(seeds)}; "
                         "each needs at least one entry.")
    if min(d_grid) < 1:
        raise ValueError(f"d_grid={list(d_grid)}; expected positive dimensions.")
    splits = {seed: split_for(ds, seed) for seed in seeds}
    runs = [(encoder, int(d), int(seed)) for encoder in encoders for d in d_grid for seed in seeds]
    start = time.perf_counter()
    models = fit_many([make_model(*run) for run in runs], ds, [splits[seed] for _, _, seed in runs], n_jobs)
    per_fit = (time.perf_counter() - start) / len(runs)
    return RunScores.concat([
        _score_fitted(model, ds, splits[seed], {"encoder": encoder, "d": d, "seed": seed}, per_fit)
        for (encoder, d, seed), model in tqdm(list(zip(runs, models)), desc="dimension sweep", disable=not progress)])


def baseline_reference(ds: Dataset, encoders: Sequence[str], seeds: Sequence[int],
                       max_epochs: int | None = None, progress: bool = True,
                       split_for: Callable[[Dataset, int], Split] = seeded_split) -> RunScores:
    """Figure 2's reference lines: EmbedLLM's matrix factorisation and KNN (`jeirt.baselines`), fitted on
    the same splits as `dimension_sweep` (seed s: `split_for(ds, s)`, by default `split_by_question`).

    `max_epochs` caps the factorisation's training as the sweep caps JE-IRT's (None: its default).
    `fit_seconds` is each fit's own training time (the factorisation's history), or its wall time (KNN).
    """
    from jeirt.baselines import (  # imported here: only this protocol needs them
        KNN,
        EmbedLLMMF,
    )

    training = {"max_epochs": max_epochs} if max_epochs else None
    makers = {"embedllm-mf": lambda enc, seed: EmbedLLMMF(encoder=enc, training=training, random_state=seed),
              "knn": lambda enc, seed: KNN(encoder=enc)}
    splits = {seed: split_for(ds, seed) for seed in seeds}
    runs = [(method, encoder, int(seed)) for seed in seeds for encoder in encoders for method in makers]
    # The factorisations train (and record their training time): made side by side on the cores first,
    # through the cache (`fit_many`); KNN, whose fit is timed by the wall clock, is fitted below.
    trained = [run for run in runs if run[0] == "embedllm-mf"]
    fitted = dict(zip(trained, fit_many([makers[method](encoder, seed) for method, encoder, seed in trained], ds,
                                        [splits[seed] for _, _, seed in trained])))

    def scores(method: str, encoder: str, seed: int) -> RunScores:
        keys = {"method": method, "encoder": encoder, "seed": seed}
        if (method, encoder, seed) in fitted:
            return _score_fitted(fitted[method, encoder, seed], ds, splits[seed], keys, np.nan)
        return fit_and_score(makers[method](encoder, seed), ds, splits[seed], keys)

    return RunScores.concat([scores(*run) for run in tqdm(runs, desc="baselines", disable=not progress)])


def sweep_summary(runs: pd.DataFrame, by: Sequence[str] = ("encoder", "d")) -> pd.DataFrame:
    """Mean, sd, min and max over seeds of test accuracy, plus mean validation loss, AUC and fit time."""
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


def available_encoders(ds: Dataset, wanted: Sequence[str] = PAPER_ENCODERS,
                       try_loading: bool = False) -> tuple[list[str], dict[str, str]]:
    """Which of `wanted` encoders a chapter can use on `ds`, and why each other one is skipped.

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
            except Exception as err:  # any failure to find or load weights means: skip it, say why
                skipped[name] = f"{type(err).__name__}: {str(err).splitlines()[0]}"
    return usable, skipped
