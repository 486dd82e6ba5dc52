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
from jeirt.data import Dataset, load_dataset
from jeirt.estimator import JEIRT
from jeirt.metrics import evaluate
from jeirt.splits import Split, split_by_question


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


def fit_and_score(estimator, ds: Dataset, split: Split) -> dict:
    """Fit `estimator` on `split` and time it: ms a training step, steps, fit seconds (fit and nothing
    else), best validation loss, test accuracy and AUC. The A/B benchmarks of training kernels share it."""
    start = time.perf_counter()
    fitted = estimator.fit(ds, split)
    seconds = time.perf_counter() - start
    test = evaluate(fitted.predict_proba(ds), ds, split.test)["overall"]
    history = fitted.history_
    return {
        "step_ms": 1000 * history.seconds / history.steps,
        "steps": history.steps,
        "seconds": seconds,
        "val_loss": min(history.val_loss),
        "accuracy": test["accuracy"],
        "auc": test["auc"],
    }


def describe(run: dict) -> str:
    """One fit of `fit_and_score`, in a line."""
    return (
        f"{run['step_ms']:5.1f} ms a step, {run['steps']} steps, {run['seconds']:6.2f} s; best val loss "
        f"{run['val_loss']:.4f}, test accuracy {run['accuracy']:.4f}, AUC {run['auc']:.4f}"
    )


def compare(before: list[dict], after: list[dict], names: tuple[str, str]) -> str:
    """Means over seeds of two lists of `fit_and_score` runs, side by side, with the step-time ratio."""
    a, b = ({k: np.mean([r[k] for r in runs]) for k in before[0]} for runs in (before, after))
    return (
        f"{names[0]} / {names[1]}: {a['step_ms']:5.1f} / {b['step_ms']:5.1f} ms a step "
        f"({a['step_ms'] / b['step_ms']:.2f}x), fits {a['seconds']:.1f} / {b['seconds']:.1f} s; val loss "
        f"{a['val_loss']:.4f} / {b['val_loss']:.4f}, accuracy {a['accuracy']:.4f} / {b['accuracy']:.4f}, "
        f"AUC {a['auc']:.4f} / {b['auc']:.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="mmlu_pro")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    torch.set_num_threads(1)
    ds = load_dataset(args.dataset)
    makers = {
        "je-irt": lambda seed: JEIRT(random_state=seed, progress=False),
        "irt-net": lambda seed: IRTNet(random_state=seed, progress=False),
    }
    runs = {(method, kernels): [] for method in makers for kernels in ("stock", "jeirt")}
    for seed in args.seeds:
        split = split_by_question(ds, seed=seed)
        for method, make in makers.items():
            for kernels in ("stock", "jeirt"):  # alternating: both meet the same load
                with stock_kernels() if kernels == "stock" else contextlib.nullcontext():
                    run = fit_and_score(make(seed), ds, split)
                runs[method, kernels].append(run)
                print(f"{method:8s} seed {seed} {kernels:5s} kernels: {describe(run)}", flush=True)
    print(f"\n{ds.name}, seeds {args.seeds}, one thread (means over seeds):")
    for method in makers:
        print(f"{method:8s} " + compare(runs[method, "stock"], runs[method, "jeirt"], ("stock", "jeirt")))


if __name__ == "__main__":
    main()
