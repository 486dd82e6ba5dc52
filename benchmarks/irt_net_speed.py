"""IRT-Net's mixture of experts: each question through its top-k experts only, against all experts.

`IRTNetModule.item_parameters` runs each routed expert on the questions that chose it; before, every
expert ran on every question and the unselected ones were weighted zero. The model is the same (the
unselected experts' outputs and gradients were exactly zero); the dropout masks are drawn for the
routed rows only, so the random stream, and with it every fit, differs. This fits IRT-Net on the
question split of each dataset both ways, alternating, for a few seeds, and prints the milliseconds per
training step, their ratio, the fit seconds, the best validation loss and test accuracy / AUC.

    OMP_NUM_THREADS=1 python benchmarks/irt_net_speed.py [--datasets mmlu_pro zeroeval] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import contextlib

import torch
from step_kernels import (  # benchmarks/, beside this script
    compare,
    describe,
    fit_and_score,
)
from torch.nn import functional as F

from jeirt.baselines.neural import IRTNet, IRTNetModule
from jeirt.data import load_dataset
from jeirt.splits import split_by_question


def all_experts(self: IRTNetModule, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The previous forward: every expert on every question, the unselected ones weighted zero."""
    if self.training and self.noise > 0:
        features = features + self.noise * torch.randn_like(features)
    logits = self.gate(features)
    chosen = torch.topk(logits + self.gate_bias, self.top_k, dim=1).indices
    weights = torch.zeros_like(logits).scatter(1, chosen, 1.0)
    gates = torch.softmax(logits.masked_fill(weights == 0, float("-inf")), dim=1)
    if self.training and self.balance_speed > 0:
        with torch.no_grad():
            load = weights.mean(dim=0)
            self.gate_bias += self.balance_speed * torch.sign(load.mean() - load)
    h = self.dropout(F.relu(torch.einsum("bi,eih->ebh", features, self.w1) + self.b1))  # (E, B, h)
    experts = torch.einsum("ebh,eho->ebo", h, self.w2) + self.b2  # (E, B, out)
    mixed = self.shared(features) + torch.einsum("be,ebo->bo", gates, experts)
    return self.discrimination(mixed), self.difficulty(mixed)


@contextlib.contextmanager
def forward(kind: str):
    """Within: IRT-Net's item parameters from all experts ("all") or the routed ones ("top-k")."""
    routed = IRTNetModule.item_parameters
    if kind == "all":
        IRTNetModule.item_parameters = all_experts
    try:
        yield
    finally:
        IRTNetModule.item_parameters = routed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["mmlu_pro", "zeroeval"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    torch.set_num_threads(1)
    runs = {(name, kind): [] for name in args.datasets for kind in ("all", "top-k")}
    for name in args.datasets:
        ds = load_dataset(name)
        for seed in args.seeds:
            split = split_by_question(ds, seed=seed)
            for kind in ("all", "top-k"):  # alternating: both meet the same load
                with forward(kind):
                    run = fit_and_score(IRTNet(random_state=seed), ds, split)
                runs[name, kind].append(run)
                print(f"{name:9s} seed {seed} {kind:5s} experts: {describe(run)}", flush=True)
    print(f"\nseeds {args.seeds}, one thread (means over seeds):")
    for name in args.datasets:
        print(f"{name:9s} " + compare(runs[name, "all"], runs[name, "top-k"], ("all", "top-k")))


if __name__ == "__main__":
    main()
