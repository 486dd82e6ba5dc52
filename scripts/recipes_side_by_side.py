"""JE-IRT's two named recipes side by side: `fast` (the default) and `paper` (the JE-IRT authors').

Both fit JE-IRT (d = 256) on the same seeded question split of one dataset and encoder, on this
machine's CPU, and are scored on the test questions: accuracy, AUC, ECE (after temperature scaling,
and before it), the wall time to the checkpoint each kept (the end of its best epoch) and in all,
epochs, optimiser steps and questions a step. The paper recipe runs to its early stop (at most 100
epochs) unless `--paper-max-epochs` cuts it, and the file then records what was run.

With `--init-seeds`, each recipe is also fitted with each start of the model vectors
(`jeirt.model.INITS`: "small", jeirt's default, and "normal", N(0, 1) as in the authors' code) for
each of those training seeds on the same split, and `init_check` keeps the best validation loss (the
number an initialisation is chosen on) beside the test scores; `init_summary` gives their mean and
standard deviation over the seeds.

    OMP_NUM_THREADS=1 python scripts/recipes_side_by_side.py --dataset mmlu_pro --encoder all-MiniLM-L6-v2 \
        --seed 0 --init-seeds 0,1,2 --out results/recipes_mmlu_pro.json
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
from dataclasses import asdict
from datetime import datetime, timezone

import numpy as np
import torch

from jeirt._version import __version__
from jeirt.data import load_dataset
from jeirt.estimator import JEIRT
from jeirt.files import write_json
from jeirt.metrics import ece, evaluate
from jeirt.model import INITS
from jeirt.splits import split_by_question


def run(ds, split, recipe: str, encoder: str, seed: int, max_epochs: int | None, init: str | None = None) -> dict:
    """Fit one recipe (with E_M started by `init`; None: the recipe's) and score it on `split.test`."""
    model = JEIRT(
        encoder=encoder,
        recipe=recipe,
        init=init,
        random_state=seed,
        progress=True,
        training={"max_epochs": max_epochs} if max_epochs else None,
    ).fit(ds, split)
    probs = model.predict_proba(ds)
    overall = evaluate(probs, ds, split.test)["overall"]
    sel = split.test & ds.observed
    p = np.clip(probs[sel].astype(np.float64), 1e-12, 1 - 1e-12)
    before = 1 / (1 + (p / (1 - p)) ** -model.temperature_)  # the same fit before temperature scaling
    h = model.history_
    return {
        "recipe": recipe,
        "seed": seed,
        "init": model.init_,
        "training": asdict(model.training_),
        "dropout": model.dropout_,
        "feature_noise": model.feature_noise_,
        "d": model.d_,
        "test": {k: overall[k] for k in ("accuracy", "auc", "brier", "log_loss", "ece", "n")},
        "test_ece_before_temperature": ece(before, ds.labels[sel]),
        "temperature": model.temperature_,
        "calibration_on_val": model.calibration_,
        "seconds_to_selected_checkpoint": h.seconds_to_best,
        "seconds_total": h.seconds,
        "epochs_run": len(h.val_loss),
        "selected_epoch": h.best_epoch + 1,
        "steps": h.steps,
        "questions_per_step": h.batch_items,
        "best_val_loss": min(h.val_loss),
        "val_loss_by_epoch": h.val_loss,
        "train_loss_by_epoch": h.train_loss,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="mmlu_pro")
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paper-max-epochs", type=int, help="cut the paper recipe's 100 epochs (recorded)")
    parser.add_argument(
        "--init-seeds",
        type=lambda text: [int(s) for s in text.split(",")],
        default=[],
        help="training seeds (comma-separated) on which to fit each recipe with each init",
    )
    parser.add_argument("--out", default="results/recipes_mmlu_pro.json")
    args = parser.parse_args(argv)
    ds = load_dataset(args.dataset)
    split = split_by_question(ds, seed=args.seed)
    runs = [
        run(ds, split, "fast", args.encoder, args.seed, None),
        run(ds, split, "paper", args.encoder, args.seed, args.paper_max_epochs),
    ]
    init_check = []  # every (recipe, init, training seed); the pairs in `runs` are not fitted twice
    for seed in args.init_seeds:
        for recipe, max_epochs in (("fast", None), ("paper", args.paper_max_epochs)):
            for init in INITS:
                done = [r for r in runs if (r["recipe"], r["init"], r["seed"]) == (recipe, init, seed)]
                r = done[0] if done else run(ds, split, recipe, args.encoder, seed, max_epochs, init)
                init_check.append(
                    {
                        k: r[k]
                        for k in (
                            "recipe",
                            "init",
                            "seed",
                            "best_val_loss",
                            "test",
                            "selected_epoch",
                            "epochs_run",
                            "seconds_total",
                        )
                    }
                )
    init_summary = {}
    for key in dict.fromkeys((r["recipe"], r["init"]) for r in init_check):
        rows = [r for r in init_check if (r["recipe"], r["init"]) == key]
        values = {
            "val_loss": [r["best_val_loss"] for r in rows],
            "test_accuracy": [r["test"]["accuracy"] for r in rows],
            "test_auc": [r["test"]["auc"] for r in rows],
        }
        init_summary[f"{key[0]} init={key[1]}"] = {"seeds": [r["seed"] for r in rows]} | {
            f"{name}_{stat}": float(f(v, **kw))
            for name, v in values.items()
            for stat, f, kw in (("mean", np.mean, {}), ("sd", np.std, {"ddof": 1 if len(v) > 1 else 0}))
        }
    blob = {
        "command": "python scripts/recipes_side_by_side.py " + shlex.join(sys.argv[1:] if argv is None else argv),
        "dataset": ds.name,
        "encoder": args.encoder,
        "seed": args.seed,
        "split": split.name,
        "paper_epochs_cut_to": args.paper_max_epochs,
        "device": "cpu" if not torch.cuda.is_available() else "cuda",
        "threads": torch.get_num_threads(),
        "jeirt_version": __version__,
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "runs": runs,
        "init_seeds": args.init_seeds,
        "init_check": init_check,
        "init_summary": init_summary,
    }
    write_json(args.out, blob, indent=1)
    for r in runs:
        print(
            f"{r['recipe']:>6}: accuracy {r['test']['accuracy']:.4f}  AUC {r['test']['auc']:.4f}  "
            f"ECE {r['test']['ece']:.4f} (before T {r['test_ece_before_temperature']:.4f})  "
            f"{r['seconds_to_selected_checkpoint']:.0f} s to the kept epoch {r['selected_epoch']} of "
            f"{r['epochs_run']} ({r['seconds_total']:.0f} s in all, {r['steps']} steps of "
            f"{r['questions_per_step']} questions)"
        )
    for key, s in init_summary.items():
        print(
            f"{key:>18}: validation loss {s['val_loss_mean']:.4f} +- {s['val_loss_sd']:.4f}, test accuracy "
            f"{s['test_accuracy_mean']:.4f} +- {s['test_accuracy_sd']:.4f}, AUC {s['test_auc_mean']:.4f} +- "
            f"{s['test_auc_sd']:.4f} (training seeds {s['seeds']})"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
