"""New models on known questions: onboarding accuracy against the share of answers, with baselines.

For each seed: the question split of `mmlu_pro` (seed s), `--held-out` models drawn with seed s leave
training (`hold_out_models`), and the trained models answer every question outside validation
(`jeirt.questions.known_question_split`). Each held-out model is onboarded from 1% / 10% / 100% of its
training answers (`subsample_items`, seed s) and scored on its test answers by

- plain mean: each new model's mean answer, predicted for every question;
- JE-IRT (the paper's model): `JEIRT.onboard`, questions from their text;
- JE-IRT + corrections: the same trained network, plus per-question corrections fitted from the trained
  models' answers (`JEIRT.fit_corrections`), then `onboard`;
- Rasch and 2PL (`PerQuestionIRT`): items fitted on the same known answers, the new abilities by Newton;
- joint training: JE-IRT trained with every model (the held-out ones' training answers included), with
  and without corrections ("All" rows).

Writes `<out>.csv` (one row per seed, method, share) and `<out>.json` (config, rows, summary).

    flock /tmp/jeirt-heavy.lock python benchmarks/known_questions.py --seeds 0,1,2
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
from jeirt_book.experiments.new_models import known_question_onboarding


def run(dataset: str, held_out: int, seeds: list[int], fractions: list[float], d: int) -> pd.DataFrame:
    """The protocol of `jeirt_book.experiments.new_models.known_question_onboarding` on the whole dataset."""

    def make_model(seed: int) -> JEIRT:
        return JEIRT(d=d, random_state=seed, progress=False)

    return known_question_onboarding(load_dataset(dataset), make_model, held_out, fractions, seeds)


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd over seeds per method and share."""
    grouped = runs.groupby(["method", "setting"], sort=False)[["accuracy", "auc", "log_loss", "seconds_per_model"]]
    return grouped.mean().add_suffix("_mean").join(grouped.std(ddof=1).add_suffix("_sd")).reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="mmlu_pro")
    parser.add_argument("--held-out", type=int, default=10)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--fractions", default="0.01,0.1,1")
    parser.add_argument("--d", type=int, default=256)
    parser.add_argument("--out", default="results/onboard_known_questions.csv")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    fractions = [float(f) for f in args.fractions.split(",")]
    config = {
        "dataset": args.dataset,
        "held_out": args.held_out,
        "seeds": seeds,
        "fractions": fractions,
        "d": args.d,
        "encoder": "all-MiniLM-L6-v2",
        "jeirt_version": __version__,
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "python benchmarks/known_questions.py "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()),
    }
    runs = run(args.dataset, args.held_out, seeds, fractions, args.d)
    summary = summarize(runs)
    runs.to_csv(args.out, index=False, float_format="%.6g")
    records = lambda t: t.astype(object).where(t.notna(), None).to_dict("records")
    write_json(
        args.out.replace(".csv", ".json"),
        {"format": "jeirt-known-questions", "config": config, "runs": records(runs), "summary": records(summary)},
        indent=1,
    )
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4f}"))


if __name__ == "__main__":
    main()
