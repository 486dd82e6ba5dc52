"""Training throughput: the question-batched trainer against a plain per-row trainer, side by side.

At EmbedLLM's scale (112 models x 35,673 questions, 768-d features, d = 256, labels simulated from
JE-IRT itself), both train the same JEIRTNet with the same AdamW:

- question-batched (`jeirt.train`): 256 questions a step, each sent through the adapter once and
  scored against all 112 models, masked BCE;
- per-row: a DataLoader over (model, question, label) rows, 512 rows a step, the adapter run once per
  row, as a straightforward implementation (and the paper's code) does.

Both are timed on the same machine in one run, in alternating rounds so that both meet the same load;
the per-row epoch is extrapolated from a fixed number of steps (a full one takes many minutes on a
CPU). Prints rows/s, seconds per epoch and the ratio.

    python benchmarks/train_speed.py [--device cuda] [--row-steps 40] [--rounds 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from jeirt.model import JEIRTNet
from jeirt.settings import default_device
from jeirt.simulate import simulate
from jeirt.splits import split_by_question
from jeirt.train import TrainConfig, masked_bce, train


def per_row_steps(
    net: JEIRTNet, features: torch.Tensor, labels: np.ndarray, mask: np.ndarray, steps: int, device: torch.device
) -> tuple[float, int]:
    """Run `steps` steps of a plain per-row trainer; returns (seconds, rows processed)."""
    rows, cols = np.nonzero(mask)
    data = TensorDataset(
        torch.from_numpy(rows), torch.from_numpy(cols), torch.from_numpy(labels[rows, cols].astype(np.float32))
    )
    loader = DataLoader(data, batch_size=512, shuffle=True, generator=torch.Generator().manual_seed(0))
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=1e-4)
    net.train()
    done, start = 0, None
    for step, (model_idx, item_idx, y) in enumerate(loader):
        if step == 3:  # warm-up steps are not timed
            _sync(device)
            start, done = time.perf_counter(), 0
        q = net.question_embeddings(features[item_idx.to(device)])  # (512, d): adapter once per row
        norms = q.norm(dim=1)
        logits = (q / norms[:, None] * net.model_vectors[model_idx.to(device)]).sum(dim=1) - norms
        loss = masked_bce(logits, y.to(device), torch.ones_like(logits))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        done += len(y)
        if step + 1 >= steps + 3:
            break
    _sync(device)
    return time.perf_counter() - start, done


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default=None, help="torch device (default: CUDA, MPS, CPU)")
    parser.add_argument("--row-steps", type=int, default=40, help="timed per-row steps in each round")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of (one question-batched epoch, --row-steps per-row steps)"
    )
    args = parser.parse_args()
    device = torch.device(args.device) if args.device else default_device()

    ds, _ = simulate(n_models=112, n_items=35673, feature_dim=768, d=256, n_benchmarks=10, seed=0)
    split = split_by_question(ds, seed=0)
    features = ds.embeddings["simulated"]
    n_rows = int(split.train.sum())
    print(
        f"data: {ds.n_models} models x {ds.n_items} questions, 768-d features, d=256; "
        f"{n_rows:,} training rows; device={device}, threads={torch.get_num_threads()}"
    )

    # Alternate the two trainers in rounds so that both see the same machine load.
    batched_seconds = batched_rows = row_seconds = row_rows = 0.0
    cfg = TrainConfig(max_epochs=1, patience=1)
    for round_ in range(args.rounds):
        torch.manual_seed(round_)
        history = train(
            JEIRTNet(768, ds.n_models, 256),
            features,
            ds.labels,
            split.train,
            split.val,
            cfg,
            device=device,
            progress=False,
        )
        batched_seconds += history.seconds
        batched_rows += n_rows
        torch.manual_seed(round_)
        net = JEIRTNet(768, ds.n_models, 256).to(device)
        seconds, rows = per_row_steps(
            net, torch.from_numpy(features).to(device), ds.labels, split.train, args.row_steps, device
        )
        row_seconds += seconds
        row_rows += rows
    batched_rate, row_rate = batched_rows / batched_seconds, row_rows / row_seconds
    batched_epoch = n_rows / batched_rate

    print(f"{'trainer':<18}{'rows/s':>14}{'s/epoch':>12}")
    print(
        f"{'question-batched':<18}{batched_rate:>14,.0f}{batched_epoch:>12.1f}   "
        f"({args.rounds} epochs, each with its validation pass)"
    )
    print(
        f"{'per-row (512)':<18}{row_rate:>14,.0f}{n_rows / row_rate:>12.1f}   "
        f"(extrapolated from {args.rounds} x {args.row_steps} steps)"
    )
    print(f"speed-up: {batched_rate / row_rate:.1f}x (goal: at least 50x)")


if __name__ == "__main__":
    main()
