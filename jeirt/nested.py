"""This book's variant of JE-IRT, not the paper's method: JE-IRT nested on each LLM's benchmark accuracy.

A model that cannot tell a new question from its neighbours should fall back on what it knows for
sure, the LLM's accuracy on the question's benchmark. The variant makes that fallback its origin
(`jeirt.model.NestedJEIRTNet`):

    logit(m, q) = O[m, b(q)] + lambda (<E_Q/|E_Q|, E_M> - |E_Q|),

O[m, b] the logit of m's training accuracy on benchmark b (`benchmark_offsets`), fixed; JE-IRT learns
how each question departs from it (its adapter reads the benchmark as well as the text), and lambda
in [0, 1] says how much of that departure carries to questions the adapter never saw. With lambda = 0
the model is the benchmark accuracy itself.

lambda is measured by cross-fitting (`fit_nested`). The training questions are cut into K folds
(seeded, within each benchmark), and K JE-IRTs of dimension d / K are trained, each without one fold
(early stopping on the validation questions, as JE-IRT's own fit). Each one's logits on the fold it
never saw fit lambda (`residual_weight`: the weight of least log loss, in [0, 1]); together they are
the model, whose Eq. (3) logit is their mean (one JE-IRT of dimension d, `NestedJEIRTNet.from_parts`).
The mean of K fits is less noisy than one, which the out-of-fold weight does not see: it is divided by
the share of one fit's variance that the mean keeps, on the validation questions (the correction for
regression dilution), then capped at 1. Only training and validation labels are read.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize_scalar

from jeirt.metrics import log_loss
from jeirt.model import NestedJEIRTNet, sigmoid
from jeirt.onboard import OnboardResult
from jeirt.splits import Split, seeded_order
from jeirt.train import TrainConfig, TrainHistory, train

FOLDS = 4  # cross-fitting folds, so four JE-IRTs of d / 4 each (DECISIONS.md: why four)
PRIOR_ANSWERS = 2.0  # O's smoothing: this many answers at the LLM's overall accuracy added to each benchmark's


def group_columns(benchmarks: Sequence, known: Sequence[str]) -> np.ndarray:
    """One-hot (n_items, len(known) + 1) of each question's benchmark among `known`; the last column marks
    a benchmark without training questions (its offset is the LLM's overall logit)."""
    column = {b: j for j, b in enumerate(known)}
    onehot = np.zeros((len(benchmarks), len(known) + 1), dtype=np.float32)
    for i, b in enumerate(np.asarray(benchmarks).astype(str)):
        onehot[i, column.get(b, len(known))] = 1.0
    return onehot


def benchmark_offsets(
    labels: np.ndarray, mask: np.ndarray, groups: np.ndarray, prior: float = PRIOR_ANSWERS
) -> np.ndarray:
    """O (n_models, n_groups): the logit of each LLM's accuracy per group of `groups` (n_items, n_groups,
    one-hot) on its labels under `mask` (n_models, n_items), with `prior` answers at its overall accuracy
    added (which has `prior` answers at the mean of all LLMs added); the last group, no benchmark of the
    training ones, gets the overall accuracy. Finite for an LLM with every answer right, or none."""
    seen = np.asarray(mask, dtype=bool) & ~np.isnan(labels)
    right = np.where(seen, np.nan_to_num(labels), 0.0).astype(np.float64) @ groups  # (n_models, n_groups)
    asked = seen.astype(np.float64) @ groups
    if not asked.sum():
        raise ValueError("no labels under the mask: the offsets need some training answers.")
    overall = (right.sum(axis=1) + prior * right.sum() / asked.sum()) / (asked.sum(axis=1) + prior)  # (n_models,)
    accuracy = (right + prior * overall[:, None]) / (asked + prior)
    accuracy[:, -1] = overall
    return np.log(accuracy) - np.log1p(-accuracy)


def question_folds(
    item_ids: Sequence, benchmarks: Sequence, train_items: np.ndarray, folds: int, seed: int
) -> np.ndarray:
    """Fold (0 .. folds - 1) of each training question, -1 for the others: within each benchmark the
    questions in their seeded order (`seeded_order`, by item id) dealt out in turn."""
    fold = np.full(len(item_ids), -1, dtype=np.int64)
    ids, bench = np.asarray(item_ids).astype(str), np.asarray(benchmarks).astype(str)
    for b in sorted(set(bench[train_items])):
        rows = train_items[bench[train_items] == b]
        fold[rows[seeded_order(ids[rows], seed)]] = np.arange(len(rows)) % folds
    return fold


def residual_weight(
    offsets: np.ndarray, residuals: np.ndarray, labels: np.ndarray, bounds: tuple[float, float] = (0.0, 1.0)
) -> float:
    """The lambda in `bounds` of least mean log loss of sigmoid(offsets + lambda residuals) on `labels`
    (flat arrays of one length: logits, logits, labels in [0, 1])."""
    o, r, y = (np.asarray(a, dtype=np.float64) for a in (offsets, residuals, labels))

    def loss(weight: float) -> float:
        z = o + weight * r
        return float(np.mean(np.logaddexp(0.0, z) - y * z))

    return float(minimize_scalar(loss, bounds=bounds, method="bounded", options={"xatol": 1e-4}).x)


@dataclass
class NestedFit:
    """`fit_nested`'s result: the net (weight folded in), the parts' histories and what chose the weight."""

    net: NestedJEIRTNet
    histories: list[TrainHistory]
    weight: float  # lambda, folded into the net's E_Q and E_M
    record: dict[str, Any] = field(default_factory=dict)  # out-of-fold weight, kept variance, losses
    seconds: float = 0.0


def fit_nested(
    features: np.ndarray,
    labels: np.ndarray,
    split: Split,
    offsets: np.ndarray,
    folds: np.ndarray,
    arch: dict[str, Any],
    training: TrainConfig,
    *,
    init: str,
    weigh: bool = True,
    seed: int = 0,
    device: str | None = None,
    progress: bool = False,
) -> NestedFit:
    """The K parts trained without their fold each, joined, and lambda measured (`weigh`; else 1).

    features: (n_items, in_dim + n_groups) frozen features then the benchmark one-hot; offsets: O
    (n_models, n_groups); folds: each question's fold (`question_folds`); arch: d (the joined
    dimension, d / K a part), dropout and feature noise of each part."""
    start = time.perf_counter()
    n_folds = int(folds.max()) + 1
    n_groups = offsets.shape[1]
    in_dim = features.shape[1] - n_groups
    trained = split.items_of("train")
    group_scale = float(np.median(np.linalg.norm(features[trained, :in_dim], axis=1)))  # the one-hot's size
    parts, histories = [], []
    for k in range(n_folds):
        torch.manual_seed(int(np.random.SeedSequence([seed, k]).generate_state(1)[0]))
        part = NestedJEIRTNet(
            in_dim, labels.shape[0], n_groups, arch["d"] // n_folds, 1, arch["dropout"], arch["feature_noise"], init
        )
        part.offsets.copy_(torch.from_numpy(offsets.astype(np.float32)))
        part.group_scale.fill_(group_scale)
        without = split.train & (folds != k)[None, :]
        histories.append(
            train(part, features, labels, without, split.val, training, seed=seed + k, device=device, progress=progress)
        )
        parts.append(part.cpu().eval())
    net = NestedJEIRTNet.from_parts(parts).eval()
    weight, record = 1.0, {"parts": n_folds, "best_epochs": [h.best_epoch + 1 for h in histories]}
    if weigh:
        weight, measured = _measure_weight(parts, net, features, labels, split, folds)
        record |= measured
        net.scale_embeddings(weight)
    return NestedFit(net, histories, weight, record, time.perf_counter() - start)


@torch.no_grad()
def _measure_weight(
    parts: list[NestedJEIRTNet],
    net: NestedJEIRTNet,
    features: np.ndarray,
    labels: np.ndarray,
    split: Split,
    folds: np.ndarray,
) -> tuple[float, dict[str, float]]:
    """lambda: the out-of-fold weight (each part on its own fold's training labels) over the share of a
    part's variance the joined net keeps on the validation questions, capped at 1; and the record."""
    x = torch.from_numpy(np.asarray(features, dtype=np.float32))
    held_o, held_r, held_y = [], [], []
    for k, part in enumerate(parts):
        items = np.flatnonzero(folds == k)
        sel = split.train[:, items] & ~np.isnan(labels[:, items])
        base = (x[items, part.in_dim :] @ part.offsets.T).numpy().T  # (n_models, n_fold) the offsets
        full = part(x[items]).numpy().T
        held_o.append(base[sel])
        held_r.append((full - base)[sel])
        held_y.append(labels[:, items][sel])
    out_of_fold = residual_weight(np.concatenate(held_o), np.concatenate(held_r), np.concatenate(held_y))
    val = split.items_of("val")
    seen = split.val[:, val] & ~np.isnan(labels[:, val])
    base = (x[val, net.in_dim :] @ net.offsets.T).numpy().T

    def departure(model: NestedJEIRTNet) -> np.ndarray:  # Eq. (3)'s part of the logits, validation labels
        return (model(x[val]).numpy().T - base)[seen].astype(np.float64)

    joined = departure(net)
    kept = float(np.var(joined)) / max(float(np.mean([np.var(departure(part)) for part in parts])), 1e-12)
    weight = float(min(1.0, out_of_fold / max(kept, 1e-12)))
    y, o = labels[:, val][seen].astype(np.float64), base[seen].astype(np.float64)
    record = {"out_of_fold_weight": out_of_fold, "kept_variance": kept, "weight": weight}
    record |= {
        f"val_log_loss_{k}": log_loss(sigmoid(o + w * joined), y) for k, w in (("before", 1.0), ("after", weight))
    }
    return weight, record


def joined_history(histories: Sequence[TrainHistory]) -> TrainHistory:
    """One record of several fits (the nested variant's parts): each epoch's mean train and validation
    loss over the parts still training, the epoch of the lowest mean, seconds and steps summed."""
    longest = max(len(h.val_loss) for h in histories)
    mean = {
        part: [float(np.mean([getattr(h, part)[e] for h in histories if e < len(h.val_loss)])) for e in range(longest)]
        for part in ("train_loss", "val_loss")
    }
    seconds = sum(h.seconds for h in histories)
    return TrainHistory(
        train_loss=mean["train_loss"],
        val_loss=mean["val_loss"],
        best_epoch=int(np.argmin(mean["val_loss"])),
        seconds=seconds,
        rows_per_second=float(np.mean([h.rows_per_second for h in histories])),
        batch_items=histories[0].batch_items,
        steps=sum(h.steps for h in histories),
        seconds_to_best=seconds,
    )


def joined_results(results: Sequence[OnboardResult]) -> OnboardResult:
    """Onboarding fits of one LLM each (the nested variant's, each with its own offsets) as one result:
    vectors and widths stacked, evidence summed per width, covariances stacked where kept."""
    if len(results) == 1:
        return results[0]
    widths = [r.prior_widths for r in results if r.prior_widths is not None]
    assert len(widths) == len(results)  # (fit_new_vectors always gives them)
    covariances = [r.covariances for r in results if r.covariances is not None]
    return OnboardResult(
        np.concatenate([r.vectors for r in results]),
        np.concatenate(covariances) if len(covariances) == len(results) else None,
        max(r.iterations for r in results),
        np.concatenate([np.atleast_1d(r.log_evidence) for r in results]),
        np.nan,
        {w: sum(r.evidence.get(w, 0.0) for r in results) for w in results[0].evidence},
        np.concatenate(widths),
        {},
    )
