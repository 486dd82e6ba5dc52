"""`JEIRT.fit`'s training step: the recipe itself and, with `search`, a bounded search around it.

`train_best` trains the recipe, then (with `search=True`) each change of `SEARCH_GRID` in order until
the time budget is spent, every candidate from the same seed, and keeps the one with the lowest
validation loss. Only validation labels choose; the test labels are never seen.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from jeirt.model import JEIRTNet
from jeirt.splits import Split
from jeirt.train import TrainConfig, TrainHistory, train

# The bounded search (`JEIRT(search=True)`): candidates tried in this order, after the recipe itself,
# until the time budget is spent; the one with the lowest validation loss is kept. Each entry changes
# one thing of the recipe (learning rate, regularisation or d), in the order of what moved the
# validation loss most when "fast" was chosen (DECISIONS.md).
SEARCH_GRID: tuple[dict, ...] = (
    {"lr": 1e-3},
    {"lr_decay": 0.85},
    {"d": 64},
    {"dropout": 0.3},
    {"weight_decay": 0.1},
)


@dataclass
class Trained:
    """The candidate kept: its network and history, its architecture (d, dropout, feature_noise) and
    training recipe, with every candidate's record (change, validation loss, seconds)."""

    net: JEIRTNet
    history: TrainHistory
    arch: dict[str, Any]
    training: TrainConfig
    results: list[dict[str, Any]]
    seconds: float  # the whole step's wall time


def train_best(
    features: np.ndarray,
    labels: np.ndarray,
    split: Split,
    arch: dict[str, Any],
    training: TrainConfig,
    *,
    init: str,
    search: bool,
    budget: float,
    seed: int,
    device: str | None,
    progress: bool,
) -> Trained:
    """Train `arch` (d, dropout, feature_noise) with `training` on `split.train`, and with `search` each
    change of `SEARCH_GRID` after it until `budget` seconds are spent; the lowest validation loss wins."""
    candidates = [{}] + (list(SEARCH_GRID) if search else [])
    start, best = time.perf_counter(), None
    results: list[dict[str, Any]] = []
    for change in candidates:
        if results and time.perf_counter() - start > budget:
            break
        tried = arch | {k: v for k, v in change.items() if k in arch}
        recipe = replace(training, **{k: v for k, v in change.items() if k not in arch})
        torch.manual_seed(seed)
        net = JEIRTNet(features.shape[1], labels.shape[0], tried["d"], tried["dropout"], tried["feature_noise"], init)
        history = train(
            net, features, labels, split.train, split.val, recipe, seed=seed, device=device, progress=progress
        )
        loss = min(history.val_loss)
        results.append({"change": change, "val_loss": loss, "seconds": history.seconds})
        if best is None or loss < best[0]:
            best = (loss, net, history, tried, recipe)
    assert best is not None  # the recipe itself always runs
    _, net, history, tried, recipe = best
    return Trained(net, history, tried, recipe, results, time.perf_counter() - start)
