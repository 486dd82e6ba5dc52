"""Training-step kernels: torch's stock dropout and per-tensor AdamW against jeirt's, side by side.

`jeirt.model.Dropout` draws its mask by comparing uniform numbers (torch's CPU Bernoulli sampler draws
one number at a time) and `jeirt.train` asks for the fused AdamW kernel. Neither changes what is
computed, only the random masks drawn and the order of float operations. This fits JE-IRT and IRT-Net
on a dataset's question split with both kernel sets, alternating, for a few seeds, and prints the
milliseconds per training step (the fits stop at different epochs, so whole-fit seconds differ by more
than the kernels), their ratio, the fit seconds, the best validation loss and test accuracy / AUC.

    OMP_NUM_THREADS=1 python benchmarks/step_kernels.py [--dataset mmlu_pro] [--seeds 0 1 2]
"""
from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np
import torch
from torch import nn

from jeirt import model as jeirt_model
from jeirt import train as jeirt_train
from jeirt.baselines.neural import IRTNet
from jeirt.data import load_dataset
from jeirt.estimator import JEIRT
from jeirt.metrics import evaluate
from jeirt.splits import split_by_question


@contextlib.contextmanager
def stock_kernels():
    """Within: `nn.Dropout`'s Bernoulli mask and AdamW's per-tensor (foreach) step, as before."""
    forward, optimizers = jeirt_model.Dropout.forward, dict(jeirt_train.OPTIMIZERS)
    jeirt_model.Dropout.forward = nn.Dropout.forward
    for name, cls in optimizers.items():
        jeirt_train.OPTIMIZERS[name] = lambda params, fused, cls=cls, **kw: cls(params, **kw)
    try:
        yield
    finally:
        jeirt_model.Dropout.forward = forward
        jeirt_train.OPTIMIZERS.update(optimizers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="mmlu_pro")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    torch.set_num_threads(1)
    ds = load_dataset(args.dataset)
    makers = {"je-irt": lambda seed: JEIRT(random_state=seed, progress=False),
              "irt-net": lambda seed: IRTNet(random_state=seed, progress=False)}
    rows = []
    for seed in args.seeds:
        split = split_by_question(ds, seed=seed)
        for method, make in makers.items():
            for kernels in ("stock", "jeirt"):  # alternating: both meet the same load
                with stock_kernels() if kernels == "stock" else contextlib.nullcontext():
                    start = time.perf_counter()
                    fitted = make(seed).fit(ds, split)
                    seconds = time.perf_counter() - start
                test = evaluate(fitted.predict_proba(ds), ds, split.test)["overall"]
                history = fitted.history_
                step_ms = 1000 * history.seconds / history.steps
                rows.append((method, seed, kernels, step_ms, seconds, min(history.val_loss), test["accuracy"],
                             test["auc"]))
                print(f"{method:8s} seed {seed} {kernels:5s} kernels: {step_ms:5.1f} ms a step, {history.steps} "
                      f"steps, {seconds:6.2f} s; best val loss {rows[-1][5]:.4f}, test accuracy "
                      f"{test['accuracy']:.4f}, AUC {test['auc']:.4f}", flush=True)
    print(f"\n{ds.name}, seeds {args.seeds}, one thread (means over seeds):")
    for method in makers:
        mean = {k: np.mean([r[3:] for r in rows if r[0] == method and r[2] == k], axis=0) for k in ("stock", "jeirt")}
        stock, ours = mean["stock"], mean["jeirt"]
        print(f"{method:8s} stock / jeirt: {stock[0]:5.1f} / {ours[0]:5.1f} ms a step ({stock[0] / ours[0]:.2f}x), "
              f"fits {stock[1]:.1f} / {ours[1]:.1f} s; val loss {stock[2]:.4f} / {ours[2]:.4f}, "
              f"accuracy {stock[3]:.4f} / {ours[3]:.4f}, AUC {stock[4]:.4f} / {ours[4]:.4f}")


if __name__ == "__main__":
    main()
