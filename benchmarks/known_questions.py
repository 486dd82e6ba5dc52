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
import time
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from jeirt import __version__
from jeirt.baselines.irt import PerQuestionIRT
from jeirt.data import Split, load_dataset
from jeirt.estimator import JEIRT
from jeirt.files import write_json
from jeirt.metrics import score
from jeirt.questions import known_question_split
from jeirt.splits import hold_out_models, split_by_question, subsample_items


def _row(seed: int, method: str, setting: str, probs: np.ndarray, labels: np.ndarray, mask: np.ndarray,
         seconds: float, n_models: int, answers: float) -> dict:
    s = score(probs[mask], labels[mask])
    return {"seed": seed, "method": method, "setting": setting, "accuracy": s["accuracy"], "auc": s["auc"],
            "log_loss": s["log_loss"], "n_test": int(mask.sum()), "answers_per_model": answers,
            "seconds": seconds, "seconds_per_model": seconds / n_models}


def run(dataset: str, held_out: int, seeds: list[int], fractions: list[float], d: int) -> pd.DataFrame:
    ds = load_dataset(dataset)
    rows = []
    for seed in tqdm(seeds, desc="seeds"):
        base = split_by_question(ds, seed=seed)
        held = hold_out_models(ds, base, held_out, seed)
        known = known_question_split(held)
        names = list(held.held_out)
        idx = ds.model_index(names)
        new = ds.subset(models=names)
        test_mask = known.test[idx]
        labels = np.nan_to_num(new.labels)
        trained = np.flatnonzero(~np.isin(np.asarray(ds.models), names))

        start = time.perf_counter()
        model = JEIRT(d=d, random_state=seed, progress=False).fit(ds, known)
        train_seconds = time.perf_counter() - start
        start = time.perf_counter()
        corrections = model.fit_corrections(ds.subset(models=trained), known.train[trained]).corrections_
        correction_seconds = time.perf_counter() - start
        irts = {kind: PerQuestionIRT(kind).fit(ds, known) for kind in ("1pl", "2pl")}
        for fraction in tqdm(fractions, desc=f"shares (seed {seed})", leave=False):
            mask = subsample_items(held.onboard[idx], fraction, seed)
            setting = f"{fraction * 100:g}%"
            answers = float(mask.sum(axis=1).mean())
            start = time.perf_counter()
            mean = (labels * mask).sum(axis=1) / mask.sum(axis=1)
            plain = np.broadcast_to(mean[:, None], labels.shape)
            rows.append(_row(seed, "plain mean", setting, plain, labels, test_mask, time.perf_counter() - start,
                             len(names), answers))
            for method, corr in (("je-irt", None), ("je-irt + corrections", corrections)):
                model.corrections_ = corr
                start = time.perf_counter()
                model.onboard(new, mask, replace=True)
                seconds = time.perf_counter() - start
                rows.append(_row(seed, method, setting, model.predict_proba(new), labels, test_mask, seconds,
                                 len(names), answers) | {"prior_scale": model.onboard_prior_scale_})
            for kind, irt in irts.items():
                start = time.perf_counter()
                irt.onboard(new, mask, replace=True)
                seconds = time.perf_counter() - start
                rows.append(_row(seed, f"{'rasch' if kind == '1pl' else '2pl'} (per question)", setting,
                                 irt.predict_proba(new), labels, test_mask, seconds, len(names), answers))
        # Joint training: every model trained together, the held-out ones on their training answers.
        joint_split = Split(known.train | held.onboard, known.val, known.test, f"{known.name}-joint")
        start = time.perf_counter()
        joint = JEIRT(d=d, random_state=seed, progress=False).fit(ds, joint_split)
        seconds = time.perf_counter() - start
        answers = float(held.onboard[idx].sum(axis=1).mean())
        rows.append(_row(seed, "je-irt", "All", joint.predict_proba(new), labels, test_mask, seconds, len(names),
                         answers))
        joint.fit_corrections(ds, joint_split.train)
        rows.append(_row(seed, "je-irt + corrections", "All", joint.predict_proba(new), labels, test_mask, seconds,
                         len(names), answers) | {"correction_seconds": correction_seconds,
                                                 "train_seconds": train_seconds,
                                                 "offset_scale": corrections.offset_scale,
                                                 "shift_scale": corrections.shift_scale})
    return pd.DataFrame(rows)


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
    config = {"dataset": args.dataset, "held_out": args.held_out, "seeds": seeds, "fractions": fractions,
              "d": args.d, "encoder": "all-MiniLM-L6-v2", "jeirt_version": __version__,
              "torch_version": torch.__version__, "python": platform.python_version(),
              "threads": torch.get_num_threads(), "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python benchmarks/known_questions.py " + " ".join(
                  f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items())}
    runs = run(args.dataset, args.held_out, seeds, fractions, args.d)
    summary = summarize(runs)
    runs.to_csv(args.out, index=False, float_format="%.6g")
    records = lambda t: t.astype(object).where(t.notna(), None).to_dict("records")  # noqa: E731
    write_json(args.out.replace(".csv", ".json"), {"format": "jeirt-known-questions", "config": config,
                                                   "runs": records(runs), "summary": records(summary)}, indent=1)
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4f}"))


if __name__ == "__main__":
    main()
