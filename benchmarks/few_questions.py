"""Few-question scores of new models: mean absolute error and 90% interval coverage, with baselines.

For each dataset and seed: the question split (seed s), `--held-out` models drawn with seed s leave
training and the trained models answer every question outside validation
(`jeirt.questions.known_question_split`); on `metabench` a seeded sample of `--metabench-models` models
of the models with at least 2 max(k) graded answers stands in for all 6,349. Each held-out model is
asked k of its graded questions at random (its own
draw; one order per model, read as prefixes for every k) and its accuracy on all its graded questions,
overall and per benchmark, is estimated by

- plain mean: the mean of the k answers (per benchmark: of the answers there, else overall);
- JE-IRT (the paper's model): `estimate_scores` on `QuestionBank.from_model`, questions from their text;
- JE-IRT + corrections: the same trained network with per-question corrections fitted from the trained
  models' answers (`JEIRT.fit_corrections`);
- Rasch (per question): `irt_estimates` with a `OnePL` fitted on the same known answers.

Writes `<out>.csv` (one row per dataset, seed, method, k and model) and `<out>.json` (config, summary).

    flock /tmp/jeirt-heavy.lock python benchmarks/few_questions.py
"""

from __future__ import annotations

import argparse
import platform
from datetime import datetime, timezone

import pandas as pd
import torch

from jeirt import __version__
from jeirt.data import load_dataset
from jeirt.estimator import JEIRT
from jeirt.files import write_json
from jeirt_book.experiments.new_models import few_question_comparison, few_question_table


def run(dataset: str, seeds: list[int], ks: list[int], held_out: int, n_models: int | None, draws: int) -> pd.DataFrame:
    """The protocol of `jeirt_book.experiments.new_models.few_question_comparison` on one dataset."""

    def make_model(seed: int) -> JEIRT:
        return JEIRT(random_state=seed, progress=False)

    return few_question_comparison(load_dataset(dataset), make_model, held_out, ks, seeds, n_models, draws)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="mmlu_pro,metabench")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--ks", default="50,100,300")
    parser.add_argument("--held-out", type=int, default=10, help="held-out models on mmlu_pro")
    parser.add_argument("--metabench-models", type=int, default=1000)
    parser.add_argument("--metabench-held-out", type=int, default=100)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--out", default="results/few_questions.csv")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    ks = [int(k) for k in args.ks.split(",")]
    config = {
        **vars(args),
        "jeirt_version": __version__,
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    frames = []
    for name in args.datasets.split(","):
        meta = name == "metabench"
        frames.append(
            run(
                name,
                seeds,
                ks,
                args.metabench_held_out if meta else args.held_out,
                args.metabench_models if meta else None,
                args.draws,
            )
        )
    runs = pd.concat(frames, ignore_index=True)
    summary = few_question_table(runs)
    runs.to_csv(args.out, index=False, float_format="%.6g")
    records = lambda t: t.astype(object).where(t.notna(), None).to_dict("records")
    config["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json(
        args.out.replace(".csv", ".json"),
        {"format": "jeirt-few-questions", "config": config, "summary": records(summary)},
        indent=1,
    )
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4f}"))


if __name__ == "__main__":
    main()
