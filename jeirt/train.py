"""A question-batched trainer for any model that scores questions against every LLM at once.

The net maps a batch of question features (B, in_dim) to logits (B, n_models). Each step sends B
questions through the adapter once and scores them against all models, with a binary cross-entropy
masked to the observed training labels (soft labels allowed). A plain trainer would instead loop over
(model, question, label) rows and recompute the adapter for the same question once per model; on
EmbedLLM's 112 models that is 112 times the work (`benchmarks/train_speed.py` measures it).

AdamW, a per-epoch exponential learning-rate decay, early stopping on the validation loss, and the
best checkpoint restored at the end. Frozen features are moved to the device once, never re-encoded.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from tqdm import tqdm

from jeirt import settings


@dataclass(frozen=True)
class TrainConfig:
    """The optimisation recipe. Every trained model (JE-IRT and the neural baselines) holds one."""

    # Defaults chosen on validation loss (mmlu_pro, question split seed 0, MiniLM features, d = 256).
    # With 256 questions a step (8k label cells) lr 1e-3 reaches its best validation loss within
    # 5-10 epochs (a few seconds on 2 cores). The paper's lr 5e-5 with per-epoch decay 0.75 barely
    # moves in that many steps; even lr 1e-4 with 32-question steps took 50 s for a worse validation
    # loss (0.5955 against 0.5938). Weight decay (1e-4 to 0.1) and dropout (0 to 0.5) changed the
    # validation loss by less than 0.001; the adapter's overfitting is met by feature noise instead
    # (`JEIRT(feature_noise=1.0)`).
    lr: float = 1e-3  # AdamW learning rate
    weight_decay: float = 1e-4  # AdamW decoupled weight decay on every parameter
    lr_decay: float = 0.95  # learning rate multiplied by this after each epoch
    batch_items: int = 256  # questions per step (each scored against every model)
    max_epochs: int = 200  # upper bound; early stopping usually ends training far sooner
    patience: int = 8  # epochs without a better validation loss before stopping

    def __post_init__(self) -> None:
        for name in ("batch_items", "max_epochs", "patience"):
            if not isinstance(getattr(self, name), (int, np.integer)) or getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected a positive integer.")
        if not (self.lr > 0 and np.isfinite(self.lr)):
            raise ValueError(f"lr={self.lr!r}; expected a positive learning rate.")
        if not 0 < self.lr_decay <= 1:
            raise ValueError(f"lr_decay={self.lr_decay!r}; expected a factor in (0, 1].")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay={self.weight_decay!r}; expected a non-negative number.")


def training_recipe(default: TrainConfig, training: TrainConfig | dict | None) -> TrainConfig:
    """An estimator's recipe: `training` itself, or its `default` with the fields in a dict changed
    (e.g. `{"max_epochs": 30}`), or the default when None."""
    if training is None:
        return default
    if isinstance(training, TrainConfig):
        return training
    if isinstance(training, dict):
        unknown = set(training) - set(TrainConfig.__dataclass_fields__)
        if unknown:
            raise ValueError(f"training has unknown field(s) {sorted(unknown)}; TrainConfig's fields are "
                             f"{list(TrainConfig.__dataclass_fields__)}.")
        return replace(default, **training)
    raise TypeError(f"training={training!r}; expected a TrainConfig, a dict of its fields, or None.")


def batch_for_steps(n_items: int, steps: int = 48, smallest: int = 16) -> int:
    """Questions per step, `n_items // steps` (at least `smallest`): `steps` steps per pass over `n_items`.

    The learning rate decays once an epoch, so with the default 256 questions a step a small dataset
    gets few steps before the rate is gone (metabench's 1,075 questions: 4). Given all of a dataset's
    questions, of which a question split trains on 80%, 48 gives about 38 steps an epoch: what the
    default gives the whole of mmlu_pro (9,626 training questions / 256).
    """
    if n_items < 1 or steps < 1 or smallest < 1:
        raise ValueError(f"n_items={n_items}, steps={steps}, smallest={smallest}; expected positive integers.")
    return max(smallest, n_items // steps)


@dataclass
class TrainHistory:
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    best_epoch: int = -1
    seconds: float = 0.0
    rows_per_second: float = 0.0  # observed training labels processed per second


def masked_bce(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean binary cross-entropy over the entries where `mask` is true; labels may be soft."""
    loss = F.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    return (loss * mask).sum() / mask.sum().clamp_min(1)


def as_item_major(labels: np.ndarray, mask: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(n_models, n_items) labels with NaN and a mask -> item-major float tensors (n_items, n_models)."""
    y = torch.from_numpy(np.nan_to_num(labels, nan=0.0).T.astype(np.float32)).to(device)
    m = torch.from_numpy(np.ascontiguousarray(mask.T).astype(np.float32)).to(device)
    return y, m


@torch.no_grad()
def evaluate_loss(net: nn.Module, features: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor,
                  batch_items: int = 4096) -> float:
    """Masked BCE of `net` over every question that has a label under `mask`."""
    net.eval()
    rows = torch.nonzero(mask.sum(dim=1) > 0).squeeze(1)
    total, count = 0.0, 0.0
    for start in range(0, len(rows), batch_items):
        idx = rows[start:start + batch_items]
        loss = F.binary_cross_entropy_with_logits(net(features[idx]), labels[idx], reduction="none")
        total += float((loss * mask[idx]).sum())
        count += float(mask[idx].sum())
    return total / max(count, 1.0)


def train(net: nn.Module, features: np.ndarray, labels: np.ndarray, train_mask: np.ndarray,
          val_mask: np.ndarray, config: TrainConfig | None = None, *, seed: int = 0,
          device: str | torch.device | None = None, progress: bool = True) -> TrainHistory:
    """Fit `net` in place on the labels under `train_mask`; keep the epoch with the best val loss.

    features: (n_items, in_dim); labels, train_mask, val_mask: (n_models, n_items). `seed` fixes the
    batch order (the caller seeds the initialisation), `device` defaults to the fastest one present,
    `progress` shows a bar over epochs.
    """
    cfg = config or TrainConfig()
    if not train_mask.any():
        raise ValueError("the training mask selects no labels; check the split.")
    if not val_mask.any():
        raise ValueError("the validation mask selects no labels; early stopping needs some.")
    if not np.isfinite(features).all():
        raise ValueError("features contain NaN or infinite values; check the encoder output.")
    for part, mask in (("train", train_mask), ("val", val_mask)):
        used = np.asarray(labels)[np.asarray(mask, dtype=bool)]
        bad = ~np.isfinite(used) | (used < 0) | (used > 1)  # NaN compares False: caught by isfinite
        if bad.any():
            raise ValueError(f"labels under the {part} mask must be numbers in [0, 1] (0/1, or soft: a share "
                             f"correct); found {int(bad.sum())} others, e.g. {used[bad][:3].tolist()}. Leave "
                             "pairs that were not graded out of the mask (Split.restrict_to(ds.observed)).")
    device = torch.device(device) if device else settings.default_device()
    net.to(device)
    x = torch.from_numpy(np.asarray(features, dtype=np.float32)).to(device)  # (n_items, in_dim)
    y, m_train = as_item_major(labels, train_mask, device)  # (n_items, n_models) each
    _, m_val = as_item_major(labels, val_mask, device)
    train_rows = torch.nonzero(m_train.sum(dim=1) > 0).squeeze(1)  # questions with a training label
    n_labels = float(m_train.sum())

    optimizer = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=cfg.lr_decay)
    generator = torch.Generator().manual_seed(seed)
    history = TrainHistory()
    best_loss, best_state, stale = float("inf"), None, 0
    start = time.perf_counter()
    bar = tqdm(range(cfg.max_epochs), desc="epochs", disable=not progress, leave=False)
    for epoch in bar:
        net.train()
        order = train_rows[torch.randperm(len(train_rows), generator=generator).to(device)]
        epoch_loss = 0.0
        for s in range(0, len(order), cfg.batch_items):
            idx = order[s:s + cfg.batch_items]
            loss = masked_bce(net(x[idx]), y[idx], m_train[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            epoch_loss += float(loss.detach()) * float(m_train[idx].sum())
        scheduler.step()
        history.train_loss.append(epoch_loss / n_labels)
        history.val_loss.append(evaluate_loss(net, x, y, m_val))
        if not np.isfinite(history.val_loss[-1]):
            raise FloatingPointError(f"training diverged at epoch {epoch} (validation loss "
                                     f"{history.val_loss[-1]}); lower the learning rate.")
        bar.set_postfix(train=f"{history.train_loss[-1]:.4f}", val=f"{history.val_loss[-1]:.4f}")
        if history.val_loss[-1] < best_loss - 1e-5:
            best_loss, best_state, stale = history.val_loss[-1], copy.deepcopy(net.state_dict()), 0
            history.best_epoch = epoch
        else:
            stale += 1
            if stale >= cfg.patience:
                break
    net.load_state_dict(best_state)
    net.eval()
    history.seconds = time.perf_counter() - start
    history.rows_per_second = n_labels * len(history.train_loss) / history.seconds
    return history
