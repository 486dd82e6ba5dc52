"""Where JE-IRT trails (metabench): validation curves of JE-IRT and of the methods it is compared with.

For each seed of the question split (MiniLM features), the validation loss by epoch of JE-IRT (its
default recipe; the row `jeirt compare` reports adds the bounded search), of the variant with the
question's benchmark as a feature (`JEIRT(benchmark_feature=True)`), of IRT-Net and of EmbedLLM's MF,
and the validation (and test) log loss and accuracy of every method at the checkpoint it keeps,
including each model's training accuracy on the question's benchmark, which has no epochs. What the
validation labels would have said about the test ranking, before any test label is read.

    OMP_NUM_THREADS=1 python scripts/validation_curves.py --out results/validation_curves_metabench.json
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import numpy as np
import torch
from result_files import results_parser, run_record
from tqdm import tqdm

from jeirt.baselines import BenchmarkAccuracy, EmbedLLMMF, IRTNet
from jeirt.data import load_dataset
from jeirt.estimator import JEIRT
from jeirt.files import write_json
from jeirt.metrics import evaluate
from jeirt.splits import split_by_question

# name -> factory(encoder, seed); names as `jeirt compare` writes them
METHODS = {
    "je-irt": lambda encoder, seed: JEIRT(encoder=encoder, random_state=seed, progress=False),
    "je-irt+benchmark": lambda encoder, seed: JEIRT(
        encoder=encoder, random_state=seed, progress=False, benchmark_feature=True
    ),
    "irt-net": lambda encoder, seed: IRTNet(encoder=encoder, random_state=seed),
    "embedllm-mf": lambda encoder, seed: EmbedLLMMF(encoder=encoder, random_state=seed),
    "benchmark-accuracy": lambda encoder, seed: BenchmarkAccuracy(),
}


def main(argv: list[str] | None = None) -> int:
    parser = results_parser(__doc__, "results/validation_curves_metabench.json")
    parser.add_argument("--dataset", default="metabench")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    ds = load_dataset(args.dataset)
    seeds = args.seeds
    blob = {
        **run_record("scripts/validation_curves.py", argv),
        "dataset": ds.name,
        "encoder": args.encoder,
        "seeds": seeds,
        "runs": [],
    }
    bar = tqdm(total=len(seeds) * len(METHODS), desc="fits")
    for seed in seeds:
        split = split_by_question(ds, seed=seed)
        for method, factory in METHODS.items():
            start = time.perf_counter()
            est = factory(args.encoder, seed).fit(ds, split)
            seconds = time.perf_counter() - start
            probs = est.predict_proba(ds)
            row = {"method": method, "seed": seed, "fit_seconds": seconds}
            for part in ("val", "test"):
                scores = evaluate(probs, ds, getattr(split, part))["overall"]
                row |= {f"{part}_{k}": scores[k] for k in ("log_loss", "accuracy", "auc", "ece")}
            if hasattr(est, "history_"):  # the uncalibrated curve; JE-IRT's val_log_loss above is after T
                row |= {
                    "val_loss_by_epoch": est.history_.val_loss,
                    "train_loss_by_epoch": est.history_.train_loss,
                    "best_epoch": est.history_.best_epoch + 1,
                }
            blob["runs"].append(row)
            write_json(args.out, blob, indent=1)
            bar.update()
    bar.close()
    blob["summary"] = {
        method: {
            key: float(np.mean([r[key] for r in blob["runs"] if r["method"] == method]))
            for key in ("val_log_loss", "val_accuracy", "test_log_loss", "test_accuracy")
        }
        for method in METHODS
    }
    blob["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json(args.out, blob, indent=1)
    for method, s in blob["summary"].items():
        print(
            f"{method:>20}: val log loss {s['val_log_loss']:.4f}, val accuracy {s['val_accuracy']:.4f}; "
            f"test {s['test_log_loss']:.4f}, {s['test_accuracy']:.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
