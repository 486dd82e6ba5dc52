"""A question-batched trainer for any model that scores questions against every LLM at once.

The net maps a batch of question features (B, in_dim) to logits (B, n_models). Each step sends B
questions through the adapter once and scores them against all models, with a binary cross-entropy
masked to the observed training labels (soft labels allowed). A plain trainer would instead loop over
(model, question, label) rows and recompute the adapter for the same question once per model; on
EmbedLLM's 112 models that is 112 times the work (`benchmarks/train_speed.py` measures it).

AdamW (or Adam, L2 in the gradient), a step decay of the learning rate, early stopping on the validation loss,
and the best checkpoint restored at the end. Frozen features are moved to the device once, never
re-encoded.

The schedule is counted in optimiser steps. A `TrainConfig` may fix the questions a step
(`batch_items`), or leave them to the data: `batch_labels` sizes a step by the observed labels it holds
(the paper's 512 (model, question) rows), and with neither an epoch is `steps_per_epoch` steps on any
dataset. "Epoch" then means the same number of steps on 1,000 and on 36,000 questions, and so do the
decay (every `decay_epochs` epochs), the validation checks (one an epoch) and the patience.
`FAST` is JE-IRT's default recipe, `PAPER` the JE-IRT authors' one.
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
from jeirt.params import TRAINING_PARAMS, check_params


@dataclass(frozen=True)
class TrainConfig:
    """The optimisation recipe. Every trained model (JE-IRT and the neural baselines) holds one.

    The field defaults are the neural baselines' recipe (each baseline documents what it was chosen
    against); JE-IRT's default is `FAST` below, the JE-IRT authors' is `PAPER`.
    """

    optimizer: str = "adamw"  # "adamw" (decoupled weight decay, as the JE-IRT authors') or "adam" (L2 in the gradient)
    lr: float = 1e-3  # learning rate at the first step
    weight_decay: float = 1e-4  # weight decay on every parameter (decoupled for adamw)
    lr_decay: float = 0.95  # learning rate multiplied by this every `decay_epochs` epochs (StepLR)
    decay_epochs: int = 1  # epochs between two decays (StepLR's step_size)
    batch_items: int | None = 256  # questions a step; None: sized from the data (next two fields)
    batch_labels: int | None = None  # with batch_items None: questions a step holding about this many labels
    steps_per_epoch: int = 40  # with both None: questions a step = training questions / this
    max_epochs: int = 200  # upper bound; early stopping usually ends training far sooner
    patience: int = 8  # epochs without a better validation loss before stopping

    def __post_init__(self) -> None:
        check_params("TrainConfig", TRAINING_PARAMS, {"max_epochs": self.max_epochs})  # the CLI's --max-epochs too
        for name in ("decay_epochs", "steps_per_epoch", "patience"):
            if not isinstance(getattr(self, name), (int, np.integer)) or getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected a positive integer.")
        for name in ("batch_items", "batch_labels"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
                raise ValueError(f"{name}={value!r}; expected a positive integer or None (sized from the data).")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={self.optimizer!r}; expected one of {sorted(OPTIMIZERS)}.")
        if not (self.lr > 0 and np.isfinite(self.lr)):
            raise ValueError(f"lr={self.lr!r}; expected a positive learning rate.")
        if not 0 < self.lr_decay <= 1:
            raise ValueError(f"lr_decay={self.lr_decay!r}; expected a factor in (0, 1].")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay={self.weight_decay!r}; expected a non-negative number.")

    def questions_per_step(self, n_items: int, labels_per_item: float) -> int:
        """Questions in one step, given `n_items` training questions with `labels_per_item` labels each
        on average: `batch_items`, or enough for `batch_labels` labels, or one `steps_per_epoch`-th."""
        if self.batch_items is not None:
            return int(self.batch_items)
        if self.batch_labels is not None:
            return max(1, round(self.batch_labels / max(labels_per_item, 1e-9)))
        return max(1, -(-n_items // self.steps_per_epoch))  # ceil: exactly steps_per_epoch steps or fewer


OPTIMIZERS = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam}

# JE-IRT's default recipe (with the adapter's dropout 0.5 and no feature noise, `jeirt.estimator.RECIPES`):
# the best validation loss on all three local datasets at once; DECISIONS.md has the runs behind each field.
FAST = TrainConfig(
    optimizer="adamw",
    lr=3e-3,
    weight_decay=1e-2,
    lr_decay=0.75,
    batch_items=None,
    steps_per_epoch=40,
    max_epochs=60,
    patience=6,
)

# The JE-IRT authors' recipe, as their training code runs it for the sentence encoder at d = 256
# (github.com/ruyi101/JE-IRT, run_sent-trans.sh and train_hyper_select.py): AdamW at lr 3e-5 with
# weight decay 0.01, 512 (model, question) rows a batch, StepLR with gamma 0.7 each epoch, at most 100
# epochs, early stopping after 10 epochs without a lower validation loss, and the checkpoint with the
# lowest one. Their rows come here as whole questions scored against every model, so a step holds
# about 512 labels (at least one question). With it go dropout 0.5 and E_M started at N(0, 1)
# (`jeirt.estimator.RECIPES`). Their scripts tune lr (3e-5 or 5e-5), gamma (0.65-0.75) and dropout
# (0.4-0.5) per d and encoder; these are the d = 256 values, the dimension of JEIRT's default.
PAPER = TrainConfig(
    optimizer="adamw",
    lr=3e-5,
    weight_decay=1e-2,
    lr_decay=0.7,
    decay_epochs=1,
    batch_items=None,
    batch_labels=512,
    max_epochs=100,
    patience=10,
)


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
            raise ValueError(
                f"training has unknown field(s) {sorted(unknown)}; TrainConfig's fields are "
                f"{list(TrainConfig.__dataclass_fields__)}."
            )
        return replace(default, **training)
    raise TypeError(f"training={training!r}; expected a TrainConfig, a dict of its fields, or None.")


@dataclass
class TrainHistory:
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    best_epoch: int = -1
    seconds: float = 0.0
    rows_per_second: float = 0.0  # observed training labels processed per second
    batch_items: int = 0  # questions a step, as the recipe sized it for this data
    steps: int = 0  # optimiser steps taken
    seconds_to_best: float = 0.0  # wall time until the end of the epoch that was kept


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
def evaluate_loss(
    net: nn.Module, features: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, batch_items: int = 4096
) -> float:
    """Masked BCE of `net` over every question that has a label under `mask`."""
    net.eval()
    rows = torch.nonzero(mask.sum(dim=1) > 0).squeeze(1)
    total, count = 0.0, 0.0
    for start in range(0, len(rows), batch_items):
        idx = rows[start : start + batch_items]
        loss = F.binary_cross_entropy_with_logits(net(features[idx]), labels[idx], reduction="none")
        total += float((loss * mask[idx]).sum())
        count += float(mask[idx].sum())
    return total / max(count, 1.0)


def train(
    net: nn.Module,
    features: np.ndarray,
    labels: np.ndarray,
    train_mask: np.ndarray,
    val_mask: np.ndarray,
    config: TrainConfig | None = None,
    *,
    seed: int = 0,
    device: str | torch.device | None = None,
    progress: bool = True,
) -> TrainHistory:
    """Fit `net` in place on the labels under `train_mask`; keep the epoch with the best val loss.

    features: (n_items, in_dim); labels, train_mask, val_mask: (n_models, n_items). `seed` fixes the
    batch order (the caller seeds the initialisation), `device` defaults to the fastest one present,
    `progress` shows a bar over epochs.
    """
    cfg = config or TrainConfig()
    _check_training_inputs(features, labels, train_mask, val_mask)
    device = torch.device(device) if device else settings.default_device()
    net.to(device)
    x = torch.from_numpy(np.asarray(features, dtype=np.float32)).to(device)  # (n_items, in_dim)
    y, m_train = as_item_major(labels, train_mask, device)  # (n_items, n_models) each
    _, m_val = as_item_major(labels, val_mask, device)
    train_rows = torch.nonzero(m_train.sum(dim=1) > 0).squeeze(1)  # questions with a training label
    n_labels = float(m_train.sum())
    batch = cfg.questions_per_step(len(train_rows), n_labels / max(len(train_rows), 1))

    optimizer, scheduler = _optimizer(net, cfg, device)
    generator = torch.Generator().manual_seed(seed)
    history = TrainHistory(batch_items=batch)
    best_loss, best_state, stale = float("inf"), None, 0
    start = time.perf_counter()
    bar = tqdm(range(cfg.max_epochs), desc="epochs", disable=not progress, leave=False)
    for epoch in bar:
        order = train_rows[torch.randperm(len(train_rows), generator=generator).to(device)]
        epoch_loss = _epoch(net, optimizer, order, batch, x, y, m_train, history)
        scheduler.step()
        history.train_loss.append(epoch_loss / n_labels)
        history.val_loss.append(_finite_loss(evaluate_loss(net, x, y, m_val), epoch))
        bar.set_postfix(train=f"{history.train_loss[-1]:.4f}", val=f"{history.val_loss[-1]:.4f}")
        if history.val_loss[-1] < best_loss - 1e-5:
            best_loss, best_state, stale = history.val_loss[-1], copy.deepcopy(net.state_dict()), 0
            history.best_epoch = epoch
            history.seconds_to_best = time.perf_counter() - start
        else:
            stale += 1
            if stale >= cfg.patience:
                break
    assert best_state is not None, "the first epoch's finite validation loss is always kept"
    net.load_state_dict(best_state)
    net.eval()
    history.seconds = time.perf_counter() - start
    history.rows_per_second = n_labels * len(history.train_loss) / history.seconds
    return history


def _optimizer(
    net: nn.Module, cfg: TrainConfig, device: torch.device
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.StepLR]:
    """The recipe's optimizer over `net`'s parameters and its step decay of the learning rate.

    The fused kernel updates every parameter in one pass: the same AdamW, a quarter of the per-tensor
    step's time on a CPU (equal to ~1e-4 after 60 steps: float operations in another order)."""
    fused = device.type in ("cpu", "cuda")
    optimizer = OPTIMIZERS[cfg.optimizer](net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, fused=fused)
    return optimizer, torch.optim.lr_scheduler.StepLR(optimizer, step_size=cfg.decay_epochs, gamma=cfg.lr_decay)


def _finite_loss(loss: float, epoch: int) -> float:
    """An epoch's validation loss, or FloatingPointError where training diverged (NaN or inf)."""
    if not np.isfinite(loss):
        raise FloatingPointError(
            f"training diverged at epoch {epoch} (validation loss {loss}); lower the learning rate."
        )
    return loss


def _check_training_inputs(
    features: np.ndarray, labels: np.ndarray, train_mask: np.ndarray, val_mask: np.ndarray
) -> None:
    """`train`'s inputs refused with what to do: empty masks, features that are not finite, labels
    under a mask outside [0, 1]."""
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
            raise ValueError(
                f"labels under the {part} mask must be numbers in [0, 1] (0/1, or soft: a share "
                f"correct); found {int(bad.sum())} others, e.g. {used[bad][:3].tolist()}. Leave "
                "pairs that were not graded out of the mask (Split.restrict_to(ds.observed))."
            )


def _epoch(
    net: nn.Module,
    optimizer: torch.optim.Optimizer,
    order: torch.Tensor,
    batch: int,
    x: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    history: TrainHistory,
) -> float:
    """One pass over the training questions in `order`, `batch` questions a step; the summed loss of
    the labels under `mask` (each step's mean loss times its labels)."""
    net.train()
    epoch_loss = 0.0
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        loss = masked_bce(net(x[idx]), y[idx], mask[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        history.steps += 1
        epoch_loss += float(loss.detach()) * float(mask[idx].sum())
    return epoch_loss
