"""KNN speed: fitting and predicting with this tree's `jeirt.baselines.KNN` against a commit's.

On each dataset (seed-0 question split, MiniLM features, the default grid of k and weightings), KNN is
fitted (k and the weighting chosen on the validation questions: every k at once) and then predicts
every (model, question) pair, with `jeirt/baselines/simple.py` as it is in this tree and as it was at
`--base` (read with `git show`), alternating, in one process, one thread. Prints seconds per fit and
per prediction, their ratios, the k chosen by each, and how many predictions differ: only where two
training questions are exactly as similar to a question (duplicates), which the base code ordered as
`torch.topk` happened to and this tree orders by column.

    python benchmarks/knn_speed.py [--base 55256e1] [--datasets mmlu_pro zeroeval metabench] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from jeirt.baselines import KNN
from jeirt.data import load_dataset
from jeirt.splits import split_by_question

sys.path.insert(0, str(Path(__file__).resolve().parent))
from few_item_speed import module_at  # noqa: E402


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="55256e1", help="the commit to compare with (default 55256e1)")
    parser.add_argument("--datasets", nargs="+", default=["mmlu_pro", "zeroeval", "metabench"])
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per dataset (default 2)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    old = module_at(args.base, "jeirt/baselines/simple.py", "simple_base")
    print(f"KNN, this tree against {args.base}; one thread (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})")
    for name in args.datasets:
        ds = load_dataset(name)
        split = split_by_question(ds, seed=0)
        times = {"base": {"fit": [], "predict": []}, "this tree": {"fit": [], "predict": []}}
        out = {}
        for _ in range(args.rounds):
            for label, cls in (("base", old.KNN), ("this tree", KNN)):
                est, fit_s = timed(lambda: cls(encoder="all-MiniLM-L6-v2").fit(ds, split))  # noqa: B023
                probs, predict_s = timed(lambda: est.predict_proba(ds))  # noqa: B023
                times[label]["fit"].append(fit_s)
                times[label]["predict"].append(predict_s)
                out[label] = (est, probs)
        (base, p0), (new, p1) = out["base"], out["this tree"]
        fit0, fit1 = (min(times[k]["fit"]) for k in ("base", "this tree"))
        pred0, pred1 = (min(times[k]["predict"]) for k in ("base", "this tree"))
        differ = int((p0 != p1).sum())
        print(
            f"{name} ({ds.n_models} models x {ds.n_items} questions): fit {fit0:.1f} -> {fit1:.1f} s "
            f"({fit0 / fit1:.2f}x), predict {pred0:.1f} -> {pred1:.1f} s ({pred0 / pred1:.2f}x); k {base.k_} / "
            f"{new.k_}, {base.weighting_} / {new.weighting_}; {differ} of {p0.size} predictions differ "
            f"(largest by {np.abs(p0 - p1).max():.1e})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
