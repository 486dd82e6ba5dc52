"""The Onboarding page (Sec. 3.3, Tables 1-2, App. D): new LLMs fitted by their vector alone, the
curve over how many answers they give, and the rate at which the error falls.
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from tqdm import tqdm

from jeirt.book import seeded_split
from jeirt.book.figures import style
from jeirt.data import Dataset
from jeirt.estimator import Estimator
from jeirt.fitcache import fit_cached, fit_many
from jeirt.splits import Split, hold_out_models, split_by_question, subsample_items


def onboarding_curves(ax: plt.Axes, tables: dict[str, pd.DataFrame]) -> plt.Axes:
    """Accuracy of onboarded LLMs against the share of their training items (log axis), mean with a
    +-1 sd band, one line per table of `onboarding_table`; each table's "All"
    column (joint training) as a horizontal line in the same colour."""
    for i, (label, table) in enumerate(tables.items()):
        s = style(i)
        shares = [c for c in table.columns if c != "All"]
        x = np.array([float(c.rstrip("%")) / 100 for c in shares])
        mean, sd = table.loc["mean", shares].to_numpy(float), table.loc["sd", shares].to_numpy(float)
        ax.fill_between(x, mean - sd, mean + sd, color=s["color"], alpha=0.12, linewidth=0)
        ax.plot(x, mean, color=s["color"], marker=s["marker"], linestyle="-", label=f"{label}: onboarded")
        if "All" in table.columns:
            ax.axhline(table.at["mean", "All"], color=s["color"], linestyle="--", linewidth=1,
                       label=f"{label}: trained jointly (all)")
    ax.set_xscale("log")
    ticks = [0.01, 0.05, 0.1, 0.2, 0.4, 1.0]
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:.0%}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("share of the new model's training items used (log scale)")
    ax.set_ylabel("test accuracy of the new models")
    ax.legend(loc="lower right")
    return ax


def rate_accuracy(ax: plt.Axes, summaries: dict[int, pd.DataFrame]) -> plt.Axes:
    """Mean test accuracy of new LLMs against the items each was onboarded from (log axis), one line
    per d (`rate_summary`); the all-items accuracy dashed in the same colour."""
    for i, (d, summary) in enumerate(summaries.items()):
        s = style(i)
        rows = summary.drop(index="all", errors="ignore")
        ax.plot(rows["items"], rows["accuracy"], color=s["color"], marker=s["marker"], linestyle="-", label=f"d = {d}")
        if "all" in summary.index:
            ax.axhline(summary.at["all", "accuracy"], color=s["color"], linestyle="--", linewidth=0.9)
    _budget_ticks(ax, summaries)
    ax.set_xlabel("items seen per new model, n (log scale)")
    ax.set_ylabel("test accuracy")
    ax.legend(loc="lower right")
    return ax


def _budget_ticks(ax: plt.Axes, summaries: dict[int, pd.DataFrame]) -> None:
    """A base-2 log x axis with every other budget of `summaries` as a plain-number tick."""
    seen = sorted({int(n) for sm in summaries.values() for n in sm["items"].drop(index="all", errors="ignore")})
    ax.set_xscale("log", base=2)
    ax.set_xticks(seen[::2] if len(seen) > 6 else seen)
    ax.set_xticklabels([str(n) for n in (seen[::2] if len(seen) > 6 else seen)])
    ax.minorticks_off()


def rate_loglog(ax: plt.Axes, summaries: dict[int, pd.DataFrame], column: str = "kl",
                ylabel: str = "excess log loss over the all-items fit") -> plt.Axes:
    """`column` of each `rate_summary` against the items seen, both axes logarithmic, one line per d;
    non-positive values cannot be drawn on a log axis and are left out. A grey line of slope -1
    (through the first d's value at the middle budget) shows the d/n rate of the excess log loss (the
    square of Appendix D's O(sqrt(d/n)) error of the vector)."""
    anchor = None
    for i, (d, summary) in enumerate(summaries.items()):
        s = style(i)
        rows = summary.drop(index="all", errors="ignore")
        rows = rows[rows[column] > 0]
        ax.plot(rows["items"], rows[column], color=s["color"], marker=s["marker"], linestyle="-", label=f"d = {d}")
        if anchor is None and len(rows):
            anchor = rows.iloc[len(rows) // 2]
    if anchor is not None:
        seen = pd.concat([sm["items"].drop(index="all", errors="ignore") for sm in summaries.values()])
        n = np.array([seen.min(), seen.max()], dtype=float)
        ax.plot(n, anchor[column] * anchor["items"] / n, color="0.45", linestyle=":", marker="", linewidth=1.2,
                label="slope -1 (rate 1/n)")
    _budget_ticks(ax, summaries)
    ax.set_yscale("log")
    ax.set_xlabel("items seen per new model, n (log scale)")
    ax.set_ylabel(ylabel.lower())
    ax.legend(loc="lower left")
    return ax


# Onboarding new LLMs (Sec. 3.3, Tables 1-2, Appendix D)
ONBOARD_FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0)  # Table 1's shares of a model's training items


RATE_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256, 512)  # items seen per new model, for Appendix D's rate


RATE_DIMS = (4, 16, 64)  # dimensions compared for the rate: the items a new model needs grow with d


# Public release month of each mmlu_pro model (vendor announcements and model cards; month precision),
# to pick "recent" models for the analogue of Table 2.
MMLU_PRO_RELEASES = {
    "Llama-2-7b-hf": "2023-07", "Llama-2-13b-hf": "2023-07", "Llama-2-70b-hf": "2023-07",
    "Mistral-7B-v0.1": "2023-09", "Mistral-7B-Instruct-v0.1": "2023-09",
    "Yi-6B": "2023-11", "Yi-6b-Chat": "2023-11", "Yi-34B": "2023-11",
    "Mistral-7B-Instruct-v0.2": "2023-12", "Mixtral-8x7B-v0.1": "2023-12", "Mixtral-8x7B-Instruct-v0.1": "2023-12",
    "Qwen1.5-7B-Chat": "2024-02", "Qwen1.5-72B-Chat": "2024-02", "gemma-7b": "2024-02",
    "Mistral-7B-v0.2-hf": "2024-03", "c4ai-command-r-v01": "2024-03",
    "Qwen1.5-110B": "2024-04", "Meta-Llama-3-8B": "2024-04", "Meta-Llama-3-8B-Instruct": "2024-04",
    "Meta-Llama-3-70B": "2024-04", "llama-3-8b-quantized": "2024-04", "Phi-3-mini-4k-instruct": "2024-04",
    "gpt-4o(2024-05-13)": "2024-05", "deepseek-chat(2024-05)": "2024-05", "DeepSeek-Coder-V2": "2024-06",
    "mathstral-7B": "2024-07", "Meta-Llama-3_1-8B": "2024-07", "Meta-Llama-3_1-8B-Instruct": "2024-07",
    "Meta-Llama-3_1-70B": "2024-07", "Meta-Llama-3_1-70B-Instruct": "2024-07",
    "jamba-1.5-large": "2024-08", "gemini-1.5-flash-002": "2024-09", "gemini-1.5-pro-002": "2024-09",
}


def recent_models(models: Sequence[str], since: str = "2024-05",
                  releases: dict[str, str] = MMLU_PRO_RELEASES) -> list[str]:
    """The `models` released in month `since` ("YYYY-MM") or later, by `releases`; unknown names raise."""
    unknown = [m for m in models if m not in releases]
    if unknown:
        raise KeyError(f"no release month for model(s) {unknown[:5]}; add them to `releases` "
                       f"(known: {len(releases)} models, e.g. {list(releases)[:3]}).")
    return [m for m in models if releases[m] >= since]


def fraction_label(fraction: float) -> str:
    """0.05 -> "5%": Table 1's column names."""
    return f"{fraction * 100:g}%"


def joint_models(ds: Dataset, make_model: Callable[[int], Estimator], seeds: Sequence[int],
                 progress: bool = True,
                 split_for: Callable[[Dataset, int], Split] = seeded_split) -> dict[int, Estimator]:
    """Table 1's "All" column: one model per seed trained on every LLM (`split_for(ds, seed)`, by default
    `split_by_question(ds, seed)`); fits run side by side (`jeirt.fitcache.fit_many`) and are shared with
    other pages."""
    seeds = [int(seed) for seed in seeds]
    fits = fit_many([make_model(seed) for seed in seeds], ds, [split_for(ds, seed) for seed in seeds])
    return dict(zip(seeds, fits))


def onboarding_curve(ds: Dataset, make_model: Callable[[int], Estimator], held_out: int | Sequence[str],
                     fractions: Sequence[float] = ONBOARD_FRACTIONS, seeds: Sequence[int] = (0,),
                     joint: dict[int, Estimator] | None = None, prior_scale: float | str = "auto",
                     progress: bool = True,
                     split_for: Callable[[Dataset, int], Split] = seeded_split) -> pd.DataFrame:
    """Tables 1-2: test accuracy of LLMs left out of training, onboarded from a share of their items.

    For each seed s: the split `split_for(ds, s)` (by default `split_by_question(ds, seed=s)`; give
    `joint_models` the same); `held_out` LLMs (a number drawn
    with seed s, or names) leave training (`hold_out_models`); `make_model(s)` is fitted on the rest;
    then, with everything else frozen, the held-out LLMs' vectors are fitted (`onboard`, all at once)
    from each `fraction` of their training items (`subsample_items`, seed s) and scored on their test
    items. `joint[s]`, a model fitted on the same split with every LLM, gives the "All" rows: the same
    LLMs, the same test labels, when trained jointly.

    `prior_scale` is the onboarding prior's width (`JEIRT.onboard`; "auto": by Laplace evidence, for
    each fraction; the rows record the width used).

    Returns one row per seed, setting ("1%", ..., "100%", "All") and held-out LLM: accuracy, log_loss,
    items (training items seen), n (test labels), seconds (onboarding all of them; the joint fit for All),
    prior_scale.
    """
    bad = [f for f in fractions if not 0 < f <= 1]
    if bad or not fractions:
        raise ValueError(f"fractions={list(fractions)}; expected shares in (0, 1].")
    rows = []
    splits = {int(seed): split_for(ds, int(seed)) for seed in seeds}
    helds = {seed: hold_out_models(ds, split, held_out if isinstance(held_out, int) else list(held_out), seed)
             for seed, split in splits.items()}
    fitted = dict(zip(helds, fit_many([make_model(seed) for seed in helds], ds, list(helds.values()))))
    for seed in tqdm(seeds, desc="onboarding", disable=not progress):
        split, held = splits[int(seed)], helds[int(seed)]
        names = list(held.held_out)
        idx = ds.model_index(names)
        new = ds.subset(models=names)
        items = np.flatnonzero(split.test[idx].any(axis=0))
        test, test_mask = new.subset(items=items), split.test[np.ix_(idx, items)]
        model = fitted[int(seed)]  # fitted side by side above (`fit_many`), through the cache
        for fraction in fractions:
            mask = subsample_items(held.onboard[idx], fraction, seed)
            start = time.perf_counter()
            model.onboard(new, mask, replace=True, prior_scale=prior_scale)
            seconds = time.perf_counter() - start
            rows += _per_model_rows(model, test, test_mask, mask.sum(axis=1),
                                    {"seed": int(seed), "setting": fraction_label(fraction), "fraction": fraction,
                                     "seconds": seconds, "prior_scale": model.onboard_prior_scale_})
        if joint is not None:
            full = joint[int(seed)]
            if getattr(full, "split_name_", split.name) != split.name:
                raise ValueError(f"joint[{seed}] was fitted on split {full.split_name_!r}; expected {split.name!r} "
                                 "(use joint_models with the same dataset and seeds).")
            seconds = getattr(getattr(full, "history_", None), "seconds", np.nan)
            rows += _per_model_rows(full, test, test_mask, split.train[idx].sum(axis=1),
                                    {"seed": int(seed), "setting": "All", "fraction": np.nan, "seconds": seconds,
                                     "prior_scale": np.nan})
    curve = pd.DataFrame(rows)
    return curve


def _per_model_rows(model: Estimator, test: Dataset, test_mask: np.ndarray, items: np.ndarray,
                    keys: dict, probs: np.ndarray | None = None) -> list[dict]:
    """One row per LLM of `test` with a test label: `keys`, its test accuracy and log loss (as
    `jeirt.metrics` defines them, vectorised over LLMs), `items` seen in training, n test labels."""
    probs = model.predict_proba(test) if probs is None else probs  # (n_models, n_items)
    mask = test_mask & test.observed
    labels = np.nan_to_num(test.labels)
    p = np.clip(probs.astype(np.float64), 1e-7, 1 - 1e-7)
    n = mask.sum(axis=1)
    right = ((probs >= 0.5) == (labels >= 0.5)) & mask
    loss = -(labels * np.log(p) + (1 - labels) * np.log(1 - p)) * mask
    return [{**keys, "model": m, "accuracy": right[i].sum() / n[i], "log_loss": loss[i].sum() / n[i],
             "items": int(items[i]), "n": int(n[i])}
            for i, m in enumerate(test.models) if n[i] > 0]


def onboarding_table(curve: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """Table 1's layout: one column per setting ("1%" ... "All"); rows mean and sd over held-out LLMs
    (and seeds), and the mean number of training items seen."""
    order = list(dict.fromkeys(curve["setting"]))  # settings in the order they were run
    grouped = curve.groupby("setting", sort=False)
    table = pd.DataFrame({"mean": grouped[metric].mean(), "sd": grouped[metric].std(ddof=1),
                          "items": grouped["items"].mean()}).T
    return table[order]


def onboarding_gap(curve: pd.DataFrame, setting: str = "100%", reference: str = "All",
                   metric: str = "accuracy") -> pd.Series:
    """`setting` minus `reference` for each (seed, held-out LLM): paired, so the spread is the LLMs'."""
    wide = curve.pivot_table(index=["seed", "model"], columns="setting", values=metric)
    missing = [s for s in (setting, reference) if s not in wide.columns]
    if missing:
        raise ValueError(f"settings {missing} are not in the curve; it has {list(wide.columns)}.")
    return (wide[setting] - wide[reference]).rename(f"{setting} - {reference}")


def first_items(mask: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """Keep the first `n` True entries of each row of `mask` in a seeded random order (all when a row has
    fewer). With one seed the selections nest: the 8 items kept for n = 8 include the 4 for n = 4."""
    if n < 1:
        raise ValueError(f"n={n}; expected a positive number of items.")
    order = np.random.default_rng(seed).permutation(mask.shape[1])  # one order shared by every row
    ranks = np.cumsum(mask[:, order], axis=1)  # (n_rows, n_items) running count of kept entries
    out = np.zeros_like(mask)
    out[:, order] = mask[:, order] & (ranks <= n)
    return out


def onboarding_rate(ds: Dataset, make_model: Callable[[int], Estimator], held_out: int | Sequence[str],
                    counts: Sequence[int] = RATE_COUNTS, seed: int = 0, prior_scale: float | str = "auto",
                    progress: bool = True) -> pd.DataFrame:
    """Appendix D: many new LLMs onboarded at once from n items each; how their error falls with n.

    `held_out` LLMs (a number drawn with `seed` among the LLMs graded on every item, or names) leave
    training; `make_model(seed)` is fitted on the rest of `split_by_question(ds, seed)`; each held-out
    vector is then fitted from all its training items (budget "all") and from the first n of them
    (`first_items`, nested in n) for each n in `counts`. `prior_scale` as in `onboarding_curve`.

    Returns one row per budget and LLM: budget (n), items (seen; fewer than n when the LLM has fewer),
    test accuracy and log_loss, n (test labels), accuracy_gap (all-items accuracy minus this one),
    excess_log_loss (test log loss minus the all-items fit's), kl (mean over the LLM's test questions of
    KL(p_all || p_n): the expected excess log loss if the all-items fit were the truth; Appendix D's
    d/(2n) rate is for this quantity), seconds (onboarding every held-out LLM once), prior_scale.
    """
    if not counts or min(counts) < 1:
        raise ValueError(f"counts={list(counts)}; expected positive item counts.")
    split, held = _rate_split(ds, held_out, seed)
    names = list(held.held_out)
    idx = ds.model_index(names)
    new = ds.subset(models=names)
    items = np.flatnonzero(split.test[idx].any(axis=0))
    test, test_mask = new.subset(items=items), split.test[np.ix_(idx, items)] & new.observed[:, items]
    model = fit_cached(make_model(int(seed)), ds, held)
    rows, reference = [], None
    for n in tqdm([None, *counts], desc="items per new model", disable=not progress):
        mask = held.onboard[idx] if n is None else first_items(held.onboard[idx], int(n), seed)
        start = time.perf_counter()
        model.onboard(new, mask, replace=True, prior_scale=prior_scale)
        seconds = time.perf_counter() - start
        probs = model.predict_proba(test)  # (n_new, n_test_items)
        reference = probs if n is None else reference
        kl = (_bernoulli_kl(reference, probs) * test_mask).sum(axis=1) / test_mask.sum(axis=1).clip(1)
        scored = _per_model_rows(model, test, test_mask, mask.sum(axis=1),
                                 {"budget": "all" if n is None else int(n), "seconds": seconds,
                                  "prior_scale": model.onboard_prior_scale_}, probs)
        at = {name: i for i, name in enumerate(names)}
        rows += [{**row, "kl": kl[at[row["model"]]]} for row in scored]
    table = pd.DataFrame(rows)
    ref = table[table["budget"] == "all"].set_index("model")
    table["excess_log_loss"] = table["log_loss"] - table["model"].map(ref["log_loss"])
    table["accuracy_gap"] = table["model"].map(ref["accuracy"]) - table["accuracy"]
    order = [*counts, "all"]  # rows by budget, the all-items fit last
    table = table.sort_values("budget", key=lambda b: b.map(order.index), kind="stable").reset_index(drop=True)
    return table


def _rate_split(ds: Dataset, held_out: int | Sequence[str], seed: int) -> tuple[Split, Split]:
    """`onboarding_rate`'s splits: `split_by_question(ds, seed)`, and the same with `held_out` LLMs (a
    number drawn with `seed` among the LLMs graded on every item, or names) held out of it."""
    split = split_by_question(ds, seed=seed)
    if isinstance(held_out, int):
        complete = np.flatnonzero(ds.observed.all(axis=1))
        if not 0 < held_out <= len(complete) - 2:
            raise ValueError(f"held_out={held_out}; {len(complete)} LLMs of {ds.name!r} are graded on every "
                             f"item, so hold out between 1 and {len(complete) - 2} (two must stay to train).")
        rng = np.random.default_rng(seed)
        held_out = [ds.models[i] for i in np.sort(rng.choice(complete, size=held_out, replace=False))]
    return split, hold_out_models(ds, split, list(held_out), seed)


def onboarding_rates(ds: Dataset, make_models: dict, held_out: int | Sequence[str],
                     counts: Sequence[int] = RATE_COUNTS, seed: int = 0, prior_scale: float | str = "auto",
                     progress: bool = True) -> dict:
    """`onboarding_rate` for each `make_models[key]` (one per d, say) on the same held-out LLMs.

    Their fits are independent: made side by side on the cores first (`jeirt.fitcache.fit_many`), so
    each `onboarding_rate` reads its fit back from the cache. Returns {key: its table}.
    """
    _, held = _rate_split(ds, held_out, seed)
    fit_many([make(int(seed)) for make in make_models.values()], ds, [held] * len(make_models))
    return {key: onboarding_rate(ds, make, list(held.held_out), counts, seed, prior_scale, progress)
            for key, make in make_models.items()}


def _bernoulli_kl(p: np.ndarray, q: np.ndarray, eps: float = 1e-7) -> np.ndarray:
    """KL(Bernoulli(p) || Bernoulli(q)), elementwise, probabilities clipped to [eps, 1 - eps]."""
    p = np.clip(p.astype(np.float64), eps, 1 - eps)
    q = np.clip(q.astype(np.float64), eps, 1 - eps)
    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


def rate_summary(rate: pd.DataFrame) -> pd.DataFrame:
    """Per budget n: mean items seen, accuracy (and sd), accuracy gap, excess log loss and KL over the
    held-out LLMs, and the seconds it took to onboard all of them."""
    grouped = rate.groupby("budget", sort=False)
    return pd.DataFrame({"items": grouped["items"].mean(), "accuracy": grouped["accuracy"].mean(),
                         "accuracy_sd": grouped["accuracy"].std(ddof=1),
                         "accuracy_gap": grouped["accuracy_gap"].mean(),
                         "excess_log_loss": grouped["excess_log_loss"].mean(), "kl": grouped["kl"].mean(),
                         "models": grouped.size(), "seconds": grouped["seconds"].first()})
