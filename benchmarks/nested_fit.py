"""`jeirt fit`'s default and the nested variant's cost: JE-IRT and `JEIRT(nested=True)` side by side.

On each dataset's question split, for a few seeds (MiniLM features), fits JE-IRT as `jeirt fit` does by
default (the fast recipe, temperature scaling, no search), JE-IRT with the bounded search `jeirt
compare` gives it, and the nested variant, alternating in one process, and prints per dataset the
validation log loss of each final model (what chooses the default: validation questions only), the
fit seconds and their ratios, and the test accuracy and AUC for reference.

    OMP_NUM_THREADS=1 python benchmarks/nested_fit.py --out results/nested_fit.json
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from jeirt.data import load_dataset
from jeirt.estimator import JEIRT
from jeirt.files import write_json
from jeirt.metrics import evaluate
from jeirt.splits import split_by_question
from jeirt.tasks.compare import JEIRT_SEARCH_BUDGET

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from result_files import results_parser, run_record  # noqa: E402

FITS = {
    "je-irt": {},
    "je-irt, search": {"search": True, "search_budget": JEIRT_SEARCH_BUDGET},
    "nested": {"nested": True},
}


def main(argv: list[str] | None = None) -> int:
    parser = results_parser(__doc__, "results/nested_fit.json", datasets="mmlu_pro,zeroeval,metabench")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for name in args.datasets:
        ds = load_dataset(name)
        for seed in args.seeds:
            split = split_by_question(ds, seed=seed)
            for label, options in FITS.items():
                start = time.perf_counter()
                model = JEIRT(encoder=args.encoder, random_state=seed, progress=False, **options).fit(ds, split)
                seconds = time.perf_counter() - start
                probs = model.predict_proba(ds)
                val, test = (evaluate(probs, ds, getattr(split, part))["overall"] for part in ("val", "test"))
                rows.append(
                    {"dataset": name, "seed": seed, "fit": label, "seconds": seconds, "val_log_loss": val["log_loss"]}
                    | {"test_accuracy": test["accuracy"], "test_auc": test["auc"]}
                )
                print(rows[-1], flush=True)
    runs = pd.DataFrame(rows)
    table = runs.groupby(["dataset", "fit"], sort=False)[["val_log_loss", "seconds", "test_accuracy", "test_auc"]]
    summary = table.mean()
    seconds = summary["seconds"].unstack()
    ratios = pd.DataFrame(
        {
            "nested / je-irt": seconds["nested"] / seconds["je-irt"],
            "nested / je-irt with search": seconds["nested"] / seconds["je-irt, search"],
        }
    )
    print(summary.round(4).to_string(), "\n", ratios.round(2).to_string(), sep="")
    blob = run_record("benchmarks/nested_fit.py", argv) | {
        "encoder": args.encoder,
        "seeds": args.seeds,
        "runs": rows,
        "summary": {f"{d} / {f}": dict(v) for (d, f), v in summary.iterrows()},
        "ratios": {d: dict(v) for d, v in ratios.iterrows()},
        "threads": torch.get_num_threads(),
    }
    write_json(args.out, blob, indent=1)
    print(f"wrote {args.out}; best validation loss: {summary['val_log_loss'].unstack().idxmin(axis=1).to_dict()}")
    assert np.isfinite(runs["val_log_loss"]).all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
