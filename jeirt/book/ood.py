"""The Out-of-distribution page (Sec. 3.4): leave one benchmark out, and how far its questions point
away from the rest (directional alignment).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from jeirt.data import Dataset
from jeirt.estimator import Estimator
from jeirt.fitcache import fit_many
from jeirt.metrics import METRICS
from jeirt.model import unit_rows
from jeirt.splits import Split, split_leave_benchmark_out


# Directional alignment (Sec. 3.4, Table 4)
def directional_alignment(x: np.ndarray, groups: Sequence[str]) -> pd.Series:
    """Per group (benchmark), the cosine between the mean unit direction of its rows of `x` (n, d)
    and the mean unit direction of all the other rows, pooled over questions (Table 4).

    Near 1: the rest of the data already points where this group points, so a model trained without
    it has seen its direction; near 0 or below: the group points somewhere the rest does not.
    """
    u = unit_rows(x)
    groups = np.asarray(groups)
    if len(groups) != len(u):
        raise ValueError(f"groups has {len(groups)} entries; x has {len(u)} rows.")
    names = sorted(np.unique(groups))
    if len(names) < 2:
        raise ValueError(f"groups holds {len(names)} distinct value(s); alignment needs at least 2.")
    mean_direction = lambda rows: unit_rows(rows.mean(axis=0)[None])[0]  # noqa: E731
    out = {g: float(mean_direction(u[groups == g]) @ mean_direction(u[groups != g])) for g in names}
    return pd.Series(out, name="alignment").rename_axis("benchmark")


# Leave one benchmark out (Sec. 3.4, Table 3)
def leave_benchmark_out(ds: Dataset, make_model: Callable[[], Estimator], split: Split, full: Estimator,
                        benchmarks: Sequence[str] | None = None, metric: str = "accuracy", seed: int = 0,
                        progress: bool = True) -> pd.DataFrame:
    """Table 3: how much worse a benchmark is predicted when it was never trained on.

    For each benchmark B, a fresh `make_model()` is fitted on `split_leave_benchmark_out(ds, B, seed)`
    (every other benchmark; B's questions are all unseen), and scored on B's questions in the test
    part of the question split `split` ("leave-out"). `full` is a model already fitted on `split`, so
    it trained on B's training-part questions, not these; it is scored on the same pairs ("all"). Both
    columns therefore score the same (model, question) pairs, and "diff" = leave-out - all (negative:
    leaving B out hurts). "base" scores the constant prediction of each model's own accuracy on the
    leave-out training labels: what is known of B without any question geometry. "bias" is the
    leave-out model's mean predicted probability minus the observed accuracy on those pairs: how far
    it misjudges the new benchmark's overall level (positive: it thinks B easier than it is).

    The last row, "overall", pools the pairs of every listed benchmark (each scored by its own
    leave-out model), so large benchmarks weigh more. Returns one row per benchmark with the
    columns questions, pairs, leave-out, all, diff, base, bias and best epoch (of the leave-out fit,
    when the model records a history).
    """
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r}; expected one of {sorted(METRICS)}.")
    if split.train.shape != ds.labels.shape:
        raise ValueError(f"split masks have shape {split.train.shape}; the dataset's labels have "
                         f"{ds.labels.shape}. Make the split from this dataset.")
    benchmarks = list(ds.benchmarks if benchmarks is None else benchmarks)
    unknown = [b for b in benchmarks if b not in ds.benchmarks]
    if unknown or not benchmarks:
        raise ValueError(f"benchmarks={benchmarks}; expected a non-empty list from {ds.benchmarks}.")
    score = METRICS[metric]
    full_probs = full.predict_proba(ds)  # (n_models, n_items)
    item_bench = ds.items["benchmark"].to_numpy()
    rows, pooled = [], {"leave-out": [], "all": [], "base": [], "labels": []}
    for bench in benchmarks:
        if not (split.test & (item_bench == bench)[None, :]).any():
            raise ValueError(f"benchmark {bench!r} has no question in the test part of split "
                             f"{split.name!r}; use a larger dataset or another split.")
    helds = [split_leave_benchmark_out(ds, bench, seed=seed) for bench in benchmarks]
    # The fits are independent: side by side on the cores, each through the cache of fitted models.
    models = fit_many([make_model() for _ in benchmarks], ds, helds)
    for bench, held, model in tqdm(list(zip(benchmarks, helds, models)), desc="leave one benchmark out",
                                   disable=not progress):
        test = split.test & (item_bench == bench)[None, :]  # B's test-part pairs: (n_models, n_items)
        probs = model.predict_proba(ds)
        rate = _model_rates(ds.labels, held.train)  # (n_models,) each model's accuracy without B
        labels = ds.labels[test]
        parts = {"leave-out": probs[test], "all": full_probs[test],
                 "base": np.broadcast_to(rate[:, None], ds.labels.shape)[test]}
        row = {"benchmark": bench, "questions": int(test.any(axis=0).sum()), "pairs": int(test.sum())}
        row |= {name: score(p, labels) for name, p in parts.items()}
        row["bias"] = float(parts["leave-out"].mean() - labels.mean())
        history = getattr(model, "history_", None)
        row["best epoch"] = getattr(history, "best_epoch", np.nan)
        rows.append(row)
        for name, p in parts.items():
            pooled[name].append(p)
        pooled["labels"].append(labels)
    labels = np.concatenate(pooled.pop("labels"))
    overall = {"benchmark": "overall", "questions": sum(r["questions"] for r in rows),
               "pairs": len(labels), "best epoch": np.nan}
    overall |= {name: score(np.concatenate(p), labels) for name, p in pooled.items()}
    overall["bias"] = float(np.concatenate(pooled["leave-out"]).mean() - labels.mean())
    table = pd.DataFrame(rows + [overall]).set_index("benchmark")
    table.insert(table.columns.get_loc("all") + 1, "diff", table["leave-out"] - table["all"])
    return table[["questions", "pairs", "leave-out", "all", "diff", "base", "bias", "best epoch"]]


def _model_rates(labels: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Each model's share of correct answers among its labels under `mask` (n_models,); a model with
    none gets the mean over all its peers' labels."""
    used = mask & ~np.isnan(labels)
    right = np.where(used, np.nan_to_num(labels), 0.0).sum(axis=1)
    count = used.sum(axis=1)
    pooled = right.sum() / max(count.sum(), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, right / np.maximum(count, 1), pooled)


def spread_pick(values: pd.Series, k: int) -> list:
    """The index labels of `k` entries of `values` spread evenly over their rank order, lowest and
    highest included (all of them when k >= len(values)): fewer conditions that still span the range."""
    if k < 1:
        raise ValueError(f"k={k}; expected a positive number of entries to pick.")
    order = values.sort_values(kind="stable").index
    if k >= len(order):
        return list(order)
    if k == 1:
        return [order[len(order) // 2]]
    positions = np.unique(np.round(np.linspace(0, len(order) - 1, k)).astype(int))
    return [order[i] for i in positions]


def paper_layout(table: pd.DataFrame, alignment: pd.Series, encoder: str = "sent") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Our `leave_benchmark_out` table and alignment in the layout of the paper's Tables 3 and 4 (in %,
    x 100; Table 3's diff is the drop, all - leave-out, as the paper prints it), under the paper's row
    label `encoder` ("sent": a sentence-transformer, as our MiniLM and mpnet are), for
    `jeirt.book.paper.side_by_side`."""
    t3 = 100 * table[["leave-out", "all"]].T
    t3.loc["diff"] = t3.loc["all"] - t3.loc["leave-out"]
    t3.index = pd.MultiIndex.from_product([[encoder], t3.index], names=["encoder", "setting"])
    t4 = (100 * alignment).to_frame(encoder).T.rename_axis("encoder")
    return t3.rename_axis(columns=None), t4.rename_axis(columns=None)
