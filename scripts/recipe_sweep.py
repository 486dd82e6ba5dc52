"""Does one change to JE-IRT's default recipe lower the validation loss on every dataset and seed?

Runs JE-IRT's bounded search without a time budget (`JEIRT(search=True)`: the recipe, then each change
in `jeirt.estimator.SEARCH_GRID` alone) on each dataset and seed of the question split (MiniLM), and
keeps every candidate's best validation loss (before temperature scaling). A change worth making the
default would beat the recipe on all of them; the summary counts where each one does.

    OMP_NUM_THREADS=1 python scripts/recipe_sweep.py --out results/recipe_sweep.json
"""
from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import torch
from tqdm import tqdm

from jeirt.data import load_dataset
from jeirt.estimator import JEIRT, SEARCH_GRID
from jeirt.files import results_parser, run_record, write_json
from jeirt.splits import split_by_question


def main(argv: list[str] | None = None) -> int:
    args = results_parser(__doc__, "results/recipe_sweep.json", datasets="mmlu_pro,zeroeval,metabench").parse_args(argv)
    torch.set_num_threads(1)
    seeds, names = args.seeds, args.datasets
    blob = {**run_record("scripts/recipe_sweep.py", argv), "encoder": args.encoder,
            "grid": list(SEARCH_GRID), "runs": []}
    for name in tqdm(names, desc="datasets"):
        ds = load_dataset(name)
        for seed in seeds:
            est = JEIRT(encoder=args.encoder, random_state=seed, progress=False, search=True, search_budget=1e9,
                        calibrate=False).fit(ds, split_by_question(ds, seed=seed))
            recipe = est.search_results_[0]["val_loss"]
            for result in est.search_results_:
                blob["runs"].append({"dataset": name, "seed": seed, "change": str(result["change"] or "recipe"),
                                     "val_loss": result["val_loss"], "minus_recipe": result["val_loss"] - recipe,
                                     "seconds": result["seconds"]})
            write_json(args.out, blob, indent=1)
    summary = {}
    for change in dict.fromkeys(r["change"] for r in blob["runs"]):
        rows = [r for r in blob["runs"] if r["change"] == change]
        summary[change] = {"mean_minus_recipe": float(np.mean([r["minus_recipe"] for r in rows])),
                           "runs_better": sum(r["minus_recipe"] < 0 for r in rows), "runs": len(rows),
                           "per_dataset": {n: float(np.mean([r["minus_recipe"] for r in rows if r["dataset"] == n]))
                                           for n in names}}
    blob["summary"] = summary
    blob["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json(args.out, blob, indent=1)
    for change, s in summary.items():
        print(f"{change:>24}: validation loss minus the recipe's {s['mean_minus_recipe']:+.4f} on average, "
              f"lower in {s['runs_better']} of {s['runs']} runs; " +
              ", ".join(f"{n} {v:+.4f}" for n, v in s["per_dataset"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
