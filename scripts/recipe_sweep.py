"""Does one change to JE-IRT's default recipe lower the validation loss on every dataset and seed?

Runs JE-IRT's bounded search without a time budget (`JEIRT(search=True)`: the recipe, then each change
in `jeirt.search.SEARCH_GRID` alone) on each dataset and seed of the question split (MiniLM), and
keeps every candidate's best validation loss (before temperature scaling). The model vectors' other
starts (`jeirt.model.INITS`, e.g. "normal", N(0, 1) as in the JE-IRT authors' code) are fitted beside
them as one more change each. A change worth making the default would beat the recipe on all of them;
the summary counts where each one does. `--inits-only` skips the search: the recipe against its
other starts of E_M alone.

    OMP_NUM_THREADS=1 python scripts/recipe_sweep.py --out results/recipe_sweep.json
    OMP_NUM_THREADS=1 python scripts/recipe_sweep.py --inits-only --out results/recipes_init_sweep.json
"""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import torch
from result_files import results_parser, run_record
from tqdm import tqdm

from jeirt.data import load_dataset
from jeirt.estimator import JEIRT, RECIPES
from jeirt.files import write_json
from jeirt.model import INITS
from jeirt.search import SEARCH_GRID
from jeirt.splits import split_by_question


def main(argv: list[str] | None = None) -> int:
    parser = results_parser(__doc__, "results/recipe_sweep.json", datasets="mmlu_pro,zeroeval,metabench")
    parser.add_argument("--inits-only", action="store_true", help="no search: the recipe and its other inits")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    seeds, names = args.seeds, args.datasets
    inits = [init for init in INITS if init != RECIPES["fast"][3]]  # the default recipe's other starts of E_M
    blob = {
        **run_record("scripts/recipe_sweep.py", argv),
        "encoder": args.encoder,
        "grid": ([] if args.inits_only else list(SEARCH_GRID)) + [{"init": init} for init in inits],
        "runs": [],
    }
    for name in tqdm(names, desc="datasets"):
        ds = load_dataset(name)
        for seed in seeds:
            split = split_by_question(ds, seed=seed)
            est = JEIRT(
                encoder=args.encoder,
                random_state=seed,
                progress=False,
                search=not args.inits_only,
                search_budget=1e9,
                calibrate=False,
            ).fit(ds, split)
            results = list(est.search_results_)
            for init in inits:
                h = (
                    JEIRT(encoder=args.encoder, init=init, random_state=seed, progress=False, calibrate=False)
                    .fit(ds, split)
                    .history_
                )
                results.append({"change": {"init": init}, "val_loss": min(h.val_loss), "seconds": h.seconds})
            recipe = results[0]["val_loss"]
            for result in results:
                blob["runs"].append(
                    {
                        "dataset": name,
                        "seed": seed,
                        "change": str(result["change"] or "recipe"),
                        "val_loss": result["val_loss"],
                        "minus_recipe": result["val_loss"] - recipe,
                        "seconds": result["seconds"],
                    }
                )
            write_json(args.out, blob, indent=1)
    summary = {}
    for change in dict.fromkeys(r["change"] for r in blob["runs"]):
        rows = [r for r in blob["runs"] if r["change"] == change]
        summary[change] = {
            "mean_minus_recipe": float(np.mean([r["minus_recipe"] for r in rows])),
            "runs_better": sum(r["minus_recipe"] < 0 for r in rows),
            "runs": len(rows),
            "per_dataset": {n: float(np.mean([r["minus_recipe"] for r in rows if r["dataset"] == n])) for n in names},
        }
    blob["summary"] = summary
    blob["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json(args.out, blob, indent=1)
    for change, s in summary.items():
        print(
            f"{change:>24}: validation loss minus the recipe's {s['mean_minus_recipe']:+.4f} on average, "
            f"lower in {s['runs_better']} of {s['runs']} runs; "
            + ", ".join(f"{n} {v:+.4f}" for n, v in s["per_dataset"].items())
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
