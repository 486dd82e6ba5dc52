"""Splits: which labels train the model, which pick its checkpoint, which test it.

A `Split` is three boolean masks over a dataset's (n_models, n_items) label matrix. By question
(`split_by_question`, the paper's protocol), with one benchmark left out for out-of-distribution tests
(`split_leave_benchmark_out`), or with some models held out of joint training for onboarding
(`hold_out_models`). `sample_items` draws a per-benchmark sample of questions.

Which part a question falls in depends on its `item_id` and the seed alone (`seeded_order`), never on
the order of the rows: the same data read from the results CSV or from a separate item table gives
the same test questions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jeirt.data.dataset import Dataset, normal_name
from jeirt.data.embedllm import EMBEDLLM
from jeirt.params import SAMPLE_PARAMS, SEED, check_params


@dataclass(frozen=True)
class Split:
    """Which labels are used to train, to pick the checkpoint, and to test; each (n_models, n_items)."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    name: str
    held_out: tuple[str, ...] = ()  # models left out of joint training (fitted by onboarding)
    onboard: np.ndarray | None = None  # (n_models, n_items) labels onboarding may use for them

    def __post_init__(self) -> None:
        shapes = {self.train.shape, self.val.shape, self.test.shape}
        if len(shapes) != 1:
            raise ValueError(f"train, val and test masks differ in shape: {shapes}.")
        if (self.train & self.val).any() or (self.train & self.test).any() or (self.val & self.test).any():
            raise ValueError(f"split {self.name!r}: train, val and test overlap.")
        for part in ("train", "val", "test"):
            if not getattr(self, part).any():
                raise ValueError(
                    f"split {self.name!r}: the {part} part is empty; use a larger dataset or other fractions."
                )

    def restrict_to(self, observed: np.ndarray) -> Split:
        """The same split with every unobserved (NaN) label removed from all parts."""
        onboard = None if self.onboard is None else self.onboard & observed
        return Split(
            self.train & observed, self.val & observed, self.test & observed, self.name, self.held_out, onboard
        )

    def items_of(self, part: str) -> np.ndarray:
        """Column numbers of the items that have at least one label in `part`."""
        return np.flatnonzero(getattr(self, part).any(axis=0))


def official_split(ds: Dataset) -> Split:
    """The split a dataset ships with, read from its items' `part` column (train / val / test): every
    model in every part, unobserved labels left out. Works on a `Dataset.subset` too."""
    if "part" not in ds.items.columns:
        raise ValueError(
            f"dataset {ds.name!r} has no official split (its item table has no 'part' column); "
            "use jeirt.splits.split_by_question for a seeded split."
        )
    part = ds.items["part"].to_numpy()
    unknown = sorted(set(part) - set(EMBEDLLM["splits"]))
    if unknown:
        raise ValueError(f"dataset {ds.name!r}: 'part' holds {unknown[:3]}; expected train, val or test.")
    rows = np.ones((ds.n_models, 1), dtype=bool)
    split = Split(
        train=rows & (part == "train"),
        val=rows & (part == "val"),
        test=rows & (part == "test"),
        name=f"{ds.name}-official",
    )
    return split.restrict_to(ds.observed)


def _check_fractions(fractions: Sequence[float]) -> None:
    if len(fractions) != 3 or min(fractions) <= 0 or not np.isclose(sum(fractions), 1):
        raise ValueError(f"fractions={tuple(fractions)}; expected three positive numbers summing to 1.")


def seeded_order(names: Sequence[str], seed: int) -> np.ndarray:
    """Positions of `names` (item ids, model names) sorted by a seeded hash of each: a shuffle that
    ignores row order.

    The key of a name is the first 8 bytes of BLAKE2b(f"{seed}:{name}"), so an item keeps its place
    whatever rows come before it; ties (practically never) are broken by the name itself.
    """
    ids = [str(i) for i in names]
    keys = [int.from_bytes(hashlib.blake2b(f"{seed}:{i}".encode(), digest_size=8).digest(), "big") for i in ids]
    return np.array(sorted(range(len(ids)), key=lambda k: (keys[k], ids[k])), dtype=np.int64)


def _assign_items(ds: Dataset, fractions: Sequence[float], seed: int, stratify: str | None) -> np.ndarray:
    """0/1/2 (train/val/test) per item, each stratum ordered by `seeded_order` (seeded by item id)."""
    part = np.zeros(ds.n_items, dtype=np.int8)
    groups = ds.items.groupby(stratify, sort=True).indices.values() if stratify else [np.arange(ds.n_items)]
    ids = ds.items["item_id"].to_numpy()
    for idx in groups:
        idx = idx[seeded_order(ids[idx], seed)]
        n_train = int(round(fractions[0] * len(idx)))
        n_val = int(round(fractions[1] * len(idx)))
        part[idx[n_train : n_train + n_val]] = 1
        part[idx[n_train + n_val :]] = 2
    return part


def split_by_question(
    ds: Dataset, fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0, stratify: str | None = "benchmark"
) -> Split:
    """Items split 80/10/10 (seeded, stratified by benchmark); every model is in every part."""
    if not isinstance(ds, Dataset):
        raise TypeError(f"split_by_question takes a jeirt.data.Dataset (ds), not a {type(ds).__name__}.")
    check_params("split_by_question", {"seed": SEED}, {"seed": seed})
    _check_fractions(fractions)
    part = _assign_items(ds, fractions, seed, stratify)
    rows = np.ones((ds.n_models, 1), dtype=bool)
    split = Split(rows & (part == 0), rows & (part == 1), rows & (part == 2), f"question-seed{seed}")
    return split.restrict_to(ds.observed)


def default_split(ds: Dataset, seed: int = 0) -> Split:
    """The split a dataset is scored on by default: its own train / val / test where it ships one
    (EmbedLLM's files, as the paper reports; the same for every seed), else `split_by_question(ds, seed=seed)`."""
    return official_split(ds) if "part" in ds.items.columns else split_by_question(ds, seed=seed)


def split_leave_benchmark_out(
    ds: Dataset, benchmark: str | Sequence[str], val_fraction: float = 0.1, seed: int = 0
) -> Split:
    """Test on every item of `benchmark` (one name, or several, in either Unicode form: `normal_name`);
    train and validate on the others."""
    spelled = {normal_name(str(b)): b for b in ds.benchmarks}  # the dataset's spelling of each name
    typed = [normal_name(str(b)) for b in ([benchmark] if isinstance(benchmark, str) else benchmark)]
    if not typed or any(b not in spelled for b in typed):
        raise ValueError(
            f"benchmark={benchmark!r}: expected one or more of dataset {ds.name!r}'s benchmarks {ds.benchmarks}."
        )
    left_out = [spelled[b] for b in typed]
    is_test = ds.items["benchmark"].isin(left_out).to_numpy()
    rest = np.flatnonzero(~is_test)
    rest = rest[seeded_order(ds.items["item_id"].to_numpy()[rest], seed)]
    is_val = np.zeros(ds.n_items, dtype=bool)
    is_val[rest[: int(round(val_fraction * len(rest)))]] = True
    rows = np.ones((ds.n_models, 1), dtype=bool)
    split = Split(rows & ~is_test & ~is_val, rows & is_val, rows & is_test, "without-" + "+".join(left_out))
    return split.restrict_to(ds.observed)


def hold_out_models(ds: Dataset, split: Split, models: Sequence[str] | int, seed: int = 0) -> Split:
    """Take `models` (names, or a seeded number of them) out of joint training and validation.

    Their training labels move to `split.onboard`, for fitting their vectors afterwards; their test
    labels stay in `split.test`.
    """
    if isinstance(models, int):
        if not 0 < models < ds.n_models:
            raise ValueError(f"models={models}; expected between 1 and {ds.n_models - 1}.")
        picked = seeded_order(ds.models, seed)[:models]  # by name, whatever the row order
        models = [ds.models[i] for i in sorted(picked)]
    rows = ds.model_index(models)
    keep = np.ones((ds.n_models, 1), dtype=bool)
    keep[rows] = False
    onboard = np.zeros_like(split.train)
    onboard[rows] = split.train[rows]
    return Split(
        split.train & keep, split.val & keep, split.test, f"{split.name}-heldout{len(rows)}", tuple(models), onboard
    )


def fewer_training_questions(ds: Dataset, split: Split, n: int, seed: int = 0) -> Split:
    """`split` with only `n` of its training questions left in training (validation and test unchanged):
    a learning curve's point. Each benchmark keeps about its share: its training questions in seeded
    order (`seeded_order`, by item id), the k-th of n_b placed at (k + 1/2) / n_b, and the first `n`
    of all by place kept, so that a larger n keeps every question a smaller one kept."""
    trained = split.items_of("train")
    if not (isinstance(n, (int, np.integer)) and 1 <= n <= len(trained)):
        raise ValueError(f"n={n!r}; expected a whole number from 1 to the split's {len(trained)} training questions.")
    ids, bench = ds.items["item_id"].to_numpy().astype(str), ds.items["benchmark"].to_numpy().astype(str)
    place = np.empty(len(trained))
    for b in np.unique(bench[trained]):
        rows = np.flatnonzero(bench[trained] == b)
        place[rows[seeded_order(ids[trained][rows], seed)]] = (np.arange(len(rows)) + 0.5) / len(rows)
    order = np.lexsort((ids[trained], bench[trained], place))  # by place; equal places by benchmark, then id
    kept = np.zeros(ds.n_items, dtype=bool)
    kept[trained[order[:n]]] = True
    return Split(split.train & kept, split.val, split.test, f"{split.name}-train{n}", split.held_out, split.onboard)


def subsample_items(mask: np.ndarray, fraction: float, seed: int = 0) -> np.ndarray:
    """Keep a seeded `fraction` of each row's True entries (at least one where the row has any): the
    first ones of a seeded order of each row, so that with one seed a larger fraction keeps everything a
    smaller one kept (a curve over fractions adds answers, it never swaps them)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction={fraction}; expected a number in (0, 1].")
    rng = np.random.default_rng(seed)
    out = np.zeros_like(mask)
    for row in np.flatnonzero(mask.any(axis=1)):
        cols = rng.permutation(np.flatnonzero(mask[row]))
        keep = max(1, int(round(fraction * len(cols))))
        out[row, cols[:keep]] = True
    return out


def sample_items(groups: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted positions of `n` items drawn without replacement, each group keeping its share."""
    check_params("sample_items", SAMPLE_PARAMS, {"n": n})
    groups = np.asarray(groups)
    if n >= len(groups):
        return np.arange(len(groups))
    names, counts = np.unique(groups, return_counts=True)
    quota = np.floor(counts * n / len(groups)).astype(int)
    # Hand the leftover slots to the groups with the largest remainders, so quotas sum to n.
    remainder = counts * n / len(groups) - quota
    quota[np.argsort(-remainder, kind="stable")[: n - quota.sum()]] += 1
    picked = [rng.choice(np.flatnonzero(groups == g), size=q, replace=False) for g, q in zip(names, quota)]
    return np.sort(np.concatenate(picked))
