"""The onboarding page's metabench recipe against the library's, on validation loss, in both profiles.

The page's "onboarding rate" section fits JE-IRT on metabench with its held-out models removed
(`jeirt_book.experiments.onboarding.complete_models` and `new_models`: 200 held out of 400 models in the smoke
profile, 1,000 of all in the full one) for d = 4, 16, 64, with 64 questions a step at lr 1e-2
instead of the library's `FAST` recipe. This fits both for each d (seed 0, the profile's epoch cap)
and records the best validation loss, the best epoch and the epochs run. It needs the page's split,
not its onboarding loop.

    OMP_NUM_THREADS=1 python scripts/onboarding_recipe.py --out results/onboarding_recipe_metabench.json
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import torch
from result_files import run_record
from tqdm import tqdm

import jeirt_book.experiments.onboarding as onb
from jeirt.estimator import JEIRT
from jeirt.files import write_json
from jeirt_book import page_settings

PAGE_RECIPE = {"batch_items": 64, "lr": 1e-2}  # what book/onboarding.md's make_small trains with


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="results/onboarding_recipe_metabench.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    blob = {**run_record("scripts/onboarding_recipe.py", argv), "page_recipe": PAGE_RECIPE, "runs": []}
    for profile in ("smoke", "full"):
        cfg = page_settings(profile)
        n_new = 200 if cfg.smoke else 1000  # as the page
        mb = replace(cfg, dataset="metabench", max_models=2 * n_new if cfg.smoke else None).load_dataset()
        names = onb.complete_models(mb, n_new, cfg.seed)  # the page's new models
        held = onb.new_models(mb, cfg.split_for(mb, cfg.seed), names, cfg.seed).split
        cap = {"max_epochs": cfg.max_epochs or 200}
        for d in tqdm(onb.RATE_DIMS, desc=profile):
            for recipe, training in (("page", PAGE_RECIPE | cap), ("library", cap)):
                model = JEIRT(d=d, encoder=cfg.encoder, training=training, random_state=cfg.seed, progress=False).fit(
                    mb, held
                )
                history = model.history_
                blob["runs"].append(
                    {
                        "profile": profile,
                        "d": d,
                        "recipe": recipe,
                        "best_val_loss": min(history.val_loss),
                        "best_epoch": history.best_epoch + 1,
                        "epochs": len(history.val_loss),
                        "seconds": history.seconds,
                    }
                )
                print(blob["runs"][-1], flush=True)
    write_json(args.out, blob)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
