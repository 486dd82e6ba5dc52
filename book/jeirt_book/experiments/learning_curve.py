"""When the question text pays: a learning curve over the number of training questions.

Each point is `jeirt compare` on the question split with only n of its training questions kept
(split "question:<n>", `jeirt.splits.fewer_training_questions`): every method sees the same n
questions, picks its checkpoint on the same validation questions and is scored on the same test
questions, whatever n, so the curves differ only in what each method learns from n questions. The
largest point, all training questions, is the plain question split that
`results/compare_question_split.csv` already holds (the same splits, methods and seeds), so it is
read from there rather than fitted again (`with_full_size`).

`crossings` says, per dataset, from how many training questions on a method that reads the text
beats each LLM's accuracy on the question's benchmark, which reads none: the first size at which
the paired interval over seeds lies above zero with a mean gap of at least 0.3 points, and where
the mean curves cross (linear in log n).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from jeirt.data import load_dataset
from jeirt.splits import split_by_question
from jeirt.tasks import compare

# Training questions per point (below the full split's own), per dataset: from a few per benchmark to
# half of what the split trains on, spaced about evenly in log n.
SIZES = {
    "mmlu_pro": (250, 600, 1500, 4000),  # the full split trains on 9,626
    "zeroeval": (140, 350, 900),  # 2,272
    "metabench": (100, 215, 430),  # 860
}
# The methods on the curve: JE-IRT, this book's nested variant, the plain baseline it nests, and the
# comparison's three neural methods that read the text.
METHODS = ("je-irt", "je-irt+nested", "benchmark-accuracy", "embedllm-mf", "mirt", "irt-net")
TEXT_METHODS = ("je-irt", "je-irt+nested", "embedllm-mf", "mirt", "irt-net")  # those that read the text
BASELINE = "benchmark-accuracy"
PAYS = 0.003  # the text pays when a method leads the baseline beyond noise and by at least 0.3 points
EMBEDLLM_QUESTIONS = 35_673  # the paper's data (EmbedLLM): questions in all its splits (data chapter)


def run(
    datasets: Sequence[str],
    encoder: str,
    seeds: Sequence[int],
    sizes: dict[str, Sequence[int]] | None = None,
    methods: Sequence[str] = METHODS,
    out: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Every method x seed at every size of `sizes` (default `SIZES`) of each dataset: the runs of
    `jeirt compare` on split "question:<n>", merged, with `out` (.csv) rewritten after each size."""
    chosen: dict[str, Sequence[int]] = dict(SIZES if sizes is None else sizes)
    parts: list[pd.DataFrame] = []
    for name in datasets:
        for n in chosen[name]:
            parts.append(
                compare.compare([name], [encoder], seeds, list(methods), split=f"question:{n}", progress=progress)
            )
            if out is not None:
                compare.save(compare.merge(*parts), out)
    return compare.merge(*parts)


def full_sizes(datasets: Sequence[str], seed: int = 0) -> dict[str, int]:
    """The training questions of each dataset's full question split (the same for every seed: each
    benchmark is split 80/10/10 by count)."""
    return {name: len(split_by_question(load_dataset(name), seed=seed).items_of("train")) for name in datasets}


def training_size(split_name: str, full: dict[str, int], dataset: str) -> int:
    """The training questions of a run from its split's name ("question-seed0-train250" -> 250); the
    plain question split's are `full[dataset]`."""
    tail = split_name.rsplit("-train", 1)
    return int(tail[1]) if len(tail) == 2 else int(full[dataset])


def with_full_size(curve: pd.DataFrame, full_runs: pd.DataFrame, full: dict[str, int]) -> pd.DataFrame:
    """The curve's runs plus the full split's runs of the same datasets, encoder, methods and seeds,
    with a column `n` (training questions)."""
    keys = ["dataset", "encoder", "method"]
    wanted = curve[keys].drop_duplicates().merge(full_runs, on=keys)
    wanted = wanted[wanted["seed"].isin(set(curve["seed"]))]
    both = pd.concat([curve, wanted], ignore_index=True)
    both["n"] = [training_size(s, full, d) for s, d in zip(both["split"], both["dataset"])]
    return both.sort_values(["dataset", "method", "n", "seed"], ignore_index=True)


def curve_table(runs: pd.DataFrame, metric: str = "accuracy", level: float = 0.95) -> pd.DataFrame:
    """Mean of `metric` over seeds per dataset, method and n, with a t interval (low, high) and the seeds."""
    from scipy import stats

    grouped = runs.groupby(["dataset", "encoder", "method", "n"])[metric]
    table = grouped.agg(mean="mean", sd="std", seeds="count").reset_index()
    half = stats.t.ppf(0.5 + level / 2, (table["seeds"] - 1).clip(lower=1)) * table["sd"] / np.sqrt(table["seeds"])
    return table.assign(low=table["mean"] - half, high=table["mean"] + half)


def paired_gaps(runs: pd.DataFrame, metric: str = "accuracy", baseline: str = BASELINE) -> pd.DataFrame:
    """Each method minus `baseline` seed by seed at each n: mean, t interval (low, high), seeds won."""
    rows = []
    for (dataset, encoder, n), block in runs.groupby(["dataset", "encoder", "n"]):
        wide = block.pivot_table(index="seed", columns="method", values=metric)
        if baseline not in wide:
            continue
        for method in [m for m in wide.columns if m != baseline]:
            pair = wide[[method, baseline]].dropna()
            head = {"dataset": dataset, "encoder": encoder, "n": n, "method": method}
            rows.append(head | compare._paired(pair[method] - pair[baseline], 0.95))
    return pd.DataFrame(rows)


def crossings(gaps: pd.DataFrame, methods: Sequence[str] = TEXT_METHODS, size: float = PAYS) -> pd.DataFrame:
    """Per dataset and method: the first n at which it pays, its paired interval against the baseline
    above zero and its mean gap at least `size` (NaN if never), and, for a method that gets there, the
    n where the mean gap last rises through zero, linear in log n between the sizes that bracket it
    (the smallest n if it is above zero throughout; NaN for a method that never pays, whose curve may
    wander about zero)."""
    rows = []
    for (dataset, method), block in gaps[gaps["method"].isin(methods)].groupby(["dataset", "method"]):
        block = block.sort_values("n")
        n, gap = block["n"].to_numpy(dtype=float), block["margin_mean"].to_numpy()
        pays = block.loc[(block["low"] > 0) & (block["margin_mean"] >= size), "n"]
        rows.append(
            {
                "dataset": dataset,
                "method": method,
                "pays_from": float(pays.iloc[0]) if len(pays) else np.nan,
                "crossing_n": _crossing(n, gap) if len(pays) else np.nan,
                "gap_at_largest": float(gap[-1]),
            }
        )
    return pd.DataFrame(rows)


def _crossing(n: np.ndarray, gap: np.ndarray) -> float:
    """Where `gap` (at sizes `n`, increasing) last rises through zero, by linear interpolation in log n."""
    if (gap > 0).all():
        return float(n[0])
    ups = [i for i in range(len(gap) - 1) if gap[i] <= 0 < gap[i + 1]]
    if not ups or gap[-1] <= 0:
        return float("nan")
    i = ups[-1]
    t = -gap[i] / (gap[i + 1] - gap[i])
    return float(np.exp(np.log(n[i]) + t * (np.log(n[i + 1]) - np.log(n[i]))))
