"""Directional alignment (Sec. 3.4, Table 4): how closely a benchmark's questions point where the
rest of the data points. The paper reads it as the reason a benchmark left out of training is
predicted well or badly (`jeirt_book.experiments.ood` runs that protocol); only directions count, so a
question's difficulty (its norm) plays no part."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from jeirt.model import unit_rows


def directional_alignment(x: np.ndarray, groups: Sequence[str] | np.ndarray) -> pd.Series:
    """Per group (benchmark), the cosine between the mean unit direction of its rows of `x` (n, d)
    and the mean unit direction of all the other rows, pooled over questions (Table 4).

    Near 1: the rest of the data already points where this group points, so a model trained without
    it has seen its direction; near 0 or below: the group points somewhere the rest does not.
    """
    u = unit_rows(x)
    labels = np.asarray(groups)
    if len(labels) != len(u):
        raise ValueError(f"groups has {len(labels)} entries; x has {len(u)} rows.")
    names = sorted(np.unique(labels))
    if len(names) < 2:
        raise ValueError(f"groups holds {len(names)} distinct value(s); alignment needs at least 2.")
    mean_direction = lambda rows: unit_rows(rows.mean(axis=0)[None])[0]
    out = {g: float(mean_direction(u[labels == g]) @ mean_direction(u[labels != g])) for g in names}
    return pd.Series(out, name="alignment").rename_axis("benchmark")


def alignment_range_se(x: np.ndarray, groups: Sequence[str], draws: int = 200, seed: int = 0) -> float:
    """Bootstrap standard error of the range (max - min) of `directional_alignment` over groups:
    questions resampled with replacement within each group, `draws` times (seeded)."""
    if draws < 2:
        raise ValueError(f"draws={draws}; a standard error needs at least 2 resamples.")
    labels = np.asarray(groups)
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(labels == g) for g in sorted(np.unique(labels))]
    ranges = []
    for _ in range(draws):
        rows = np.concatenate([rng.choice(m, len(m), replace=True) for m in members])
        a = directional_alignment(x[rows], labels[rows])
        ranges.append(float(a.max() - a.min()))
    return float(np.std(ranges, ddof=1))


def random_partition_ranges(x: np.ndarray, groups: Sequence[str], n_perm: int = 100, seed: int = 0) -> np.ndarray:
    """The range (max - min) of `directional_alignment` over `n_perm` seeded random partitions of the
    rows into groups of the same sizes: what groups that mean nothing make. A small group's mean
    direction is a noisy one, so its cosine to the rest is lower than a large group's, and the range
    is positive by construction; only its excess over these says the groups differ."""
    labels = np.asarray(groups)
    rng = np.random.default_rng(seed)
    ranges = []
    for _ in range(n_perm):
        a = directional_alignment(x, rng.permutation(labels))
        ranges.append(float(a.max() - a.min()))
    return np.array(ranges)
