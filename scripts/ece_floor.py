"""How much ECE a finite test set leaves by chance: JE-IRT's test ECE against its sampling floor.

Labels of one question are correlated across models (a question JE-IRT finds too hard is too hard for
all of them), so a test set of a few hundred questions holds only a few hundred independent draws, not
the tens of thousands of labels it counts. For each dataset and seed this fits JE-IRT with its defaults
(calibrated by temperature scaling on the validation labels; MiniLM features, the seeded question
split) and scores its test probabilities:

    test ECE        after temperature scaling, and before it (`jeirt.metrics.scale_temperature`)
    bootstrap       the ECE over resamples of the test questions (each with all its labels): 90% interval
    floor           the ECE of the same probabilities against labels drawn so that they are calibrated
                    by construction (`jeirt.metrics.ece_floor`): with independent coin flips (spread 0),
                    and with each question's rate straying one way for all its models by the spread
                    measured on the test labels (`jeirt.metrics.question_spread`); and the whole protocol
                    on probabilities right by construction (the model's before temperature scaling):
                    validation labels drawn, T fitted on them, test labels drawn, test ECE

    OMP_NUM_THREADS=1 python scripts/ece_floor.py --out results/ece_floor.json
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import numpy as np
import torch
from result_files import results_parser, run_record
from scipy.optimize import minimize_scalar
from tqdm import tqdm

from jeirt.data import load_dataset
from jeirt.estimator import JEIRT
from jeirt.files import write_json
from jeirt.metrics import (
    ece,
    ece_bootstrap,
    ece_floor,
    question_spread,
    scale_temperature,
)
from jeirt.splits import split_by_question


def interval(values: np.ndarray) -> dict:
    """Mean, the 5% and 95% quantiles, and the share of values above 0.02 (the issue's ECE bar)."""
    return {
        "mean": float(np.mean(values)),
        "q05": float(np.quantile(values, 0.05)),
        "q95": float(np.quantile(values, 0.95)),
        "share_above_0.02": float(np.mean(values > 0.02)),
    }


def draw(probs: np.ndarray, questions: np.ndarray, spread: float, rng: np.random.Generator) -> np.ndarray:
    """Labels for which `probs` are calibrated by construction, as `jeirt.metrics.ece_floor` draws them."""
    sign = rng.choice([-1.0, 1.0], size=questions.max() + 1)[questions]
    return (rng.random(probs.size) < probs + sign * spread * np.minimum(probs, 1 - probs)).astype(np.float64)


def floor_with_temperature(val: tuple, test: tuple, spread: float, n_sim: int, seed: int) -> np.ndarray:
    """The whole protocol on probabilities that are right by construction: draw validation labels, fit
    a temperature on them (as `JEIRT` does: the T minimising their log loss), apply it to the test
    probabilities, draw test labels, and take the test ECE. (n_sim,)"""
    rng = np.random.default_rng(seed)
    (p_val, q_val), (p_test, q_test) = val, test
    z_val = np.log(p_val) - np.log1p(-p_val)
    out = np.empty(n_sim)
    for i in range(n_sim):
        y = draw(p_val, q_val, spread, rng)
        found = minimize_scalar(
            lambda t, y=y: float(np.mean(np.logaddexp(0.0, z_val / np.exp(t)) - y * z_val / np.exp(t))),
            bounds=(-3.0, 3.0),
            method="bounded",
            options={"xatol": 1e-4},
        )
        out[i] = ece(scale_temperature(p_test, float(np.exp(found.x))), draw(p_test, q_test, spread, rng))
    return out


def flat(model: JEIRT, ds, mask: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The model's probabilities, the labels and each label's question number under `mask` on `items`."""
    part = ds.subset(items=items)
    sel = mask[:, items] & part.observed  # (n_models, n_items)
    questions = np.broadcast_to(np.arange(len(items)), sel.shape)[sel]
    return (model.predict_proba(part)[sel].astype(np.float64), part.labels[sel].astype(np.float64), questions)


def one_fit(ds, seed: int, encoder: str, n_boot: int, n_sim: int) -> dict:
    """Fit JE-IRT (defaults) on the seeded split and set its test ECE beside the ECE that chance leaves."""
    split = split_by_question(ds, seed=seed)
    start = time.perf_counter()
    model = JEIRT(encoder=encoder, random_state=seed, progress=False).fit(ds, split)
    seconds = time.perf_counter() - start
    probs, labels, questions = flat(model, ds, split.test, split.items_of("test"))
    p_val, _, q_val = flat(model, ds, split.val, split.items_of("val"))
    spread = question_spread(probs, labels, questions)
    uncalibrated = scale_temperature(p_val, 1 / model.temperature_), scale_temperature(probs, 1 / model.temperature_)
    return {
        "seed": seed,
        "fit_seconds": seconds,
        "temperature": model.temperature_,
        "test_questions": len(np.unique(questions)),
        "test_labels": int(labels.size),
        "test_ece": ece(probs, labels),
        "test_ece_before_temperature": ece(scale_temperature(probs, 1 / model.temperature_), labels),
        "bootstrap_over_questions": interval(ece_bootstrap(probs, labels, questions, n_boot, seed)),
        "floor_independent_labels": interval(ece_floor(probs, questions, 0.0, n_sim, seed)),
        "question_spread": spread,
        "floor_question_spread": interval(ece_floor(probs, questions, min(spread, 1.0), n_sim, seed)),
        "floor_question_spread_with_temperature": interval(
            floor_with_temperature(
                (uncalibrated[0], q_val), (uncalibrated[1], questions), min(spread, 1.0), n_sim, seed
            )
        ),
        "val_ece_after_temperature": model.calibration_.get("val_ece_after"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = results_parser(__doc__, "results/ece_floor.json", datasets="mmlu_pro,zeroeval,metabench")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples of the test questions")
    parser.add_argument("--n-sim", type=int, default=100, help="label sets drawn for each floor")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    seeds, names = args.seeds, args.datasets
    blob = {
        **run_record("scripts/ece_floor.py", argv),
        "encoder": args.encoder,
        "n_boot": args.n_boot,
        "n_sim": args.n_sim,
        "datasets": {},
    }
    bar = tqdm(total=len(names) * len(seeds), desc="fits")
    for name in names:
        ds = load_dataset(name)
        runs = []
        for seed in seeds:
            runs.append(one_fit(ds, seed, args.encoder, args.n_boot, args.n_sim))
            bar.update()
            blob["datasets"][name] = {"runs": runs}
            write_json(args.out, blob, indent=1)  # what is finished survives an interruption
        blob["datasets"][name]["mean"] = {
            key: float(np.mean([r[key] if not isinstance(r[key], dict) else r[key]["mean"] for r in runs]))
            for key in (
                "test_ece",
                "test_ece_before_temperature",
                "bootstrap_over_questions",
                "floor_independent_labels",
                "question_spread",
                "floor_question_spread",
                "floor_question_spread_with_temperature",
            )
        }
        write_json(args.out, blob, indent=1)
    bar.close()
    blob["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json(args.out, blob, indent=1)
    for name, block in blob["datasets"].items():
        m = block["mean"]
        print(
            f"{name}: test ECE {m['test_ece']:.4f} (before T {m['test_ece_before_temperature']:.4f}); floor, "
            f"independent labels {m['floor_independent_labels']:.4f}, question spread {m['question_spread']:.2f}: "
            f"{m['floor_question_spread']:.4f}, with T fitted on drawn validation labels "
            f"{m['floor_question_spread_with_temperature']:.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
