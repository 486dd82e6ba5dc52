"""The onboarding prior's width, measured: test log loss, accuracy and AUC of held-out models onboarded
from 1% to 100% of their training answers, under the old prior and the one `JEIRT.onboard` now uses.

For each fold, JE-IRT (the library's default recipe, `fit_cached`) is trained without some models;
each held-out model's training answers are put in a seeded random order and the first share of them
(1, 2, 5, 10, 25, 50, 100%: nested, so a larger share holds every answer of a smaller one) onboards
it; it is scored on its answers to the test questions. Priors:

- `before`: the old `JEIRT.onboard`, N(mean, s var I) with the trained vectors' mean and mean
  per-coordinate variance, s in `onboard_speed.OLD_PRIOR_WIDTH_GRID` (1 to 1e4) by the evidence summed over the
  held-out models;
- `evidence`: N(mu, c S), S the trained vectors' Ledoit-Wolf covariance, each model's c its most evident
  of `onboard.PRIOR_WIDTH_GRID` (`JEIRT.onboard`'s default, the posterior `jeirt estimate` uses);
- `c = 1`: the same prior, c fixed at 1 (the trained vectors' own spread);
- `own fifth`: the same prior, c of `onboard.VALIDATION_PRIOR_WIDTH_GRID` chosen on a random fifth of the
  onboarding answers held out, then fitted on all of them (what a user without answers to other
  questions could do);
- `validation`: the same prior, c of `onboard.VALIDATION_PRIOR_WIDTH_GRID` chosen on the held-out models' answers
  to the validation questions (`JEIRT.onboard(val_mask=...)`): all of them at every share (one number for
  all held-out models; with the same share of them as of the training answers, 5 answers a model at 5%
  on metabench, the choice is noisy: `--val-share`).

With `--corrections`, the model also gets per-question corrections fitted on the trained models'
training answers (`JEIRT.fit_corrections`), and the `validation` prior is onboarded with and without
them: the bias (mean predicted minus actual accuracy) on the training questions (corrected) and on the
test questions (without corrections) says whether corrections move new questions.

Folds: `mmlu_pro`, its models in `--folds` groups by a seeded shuffle, each held out in turn;
`metabench`, `--metabench-models` models graded on every question (seeded sample), a tenth held out.

    python benchmarks/onboarding_prior.py            # both datasets, results/onboarding_prior.{json,txt}
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from jeirt.data import Dataset, load_dataset
from jeirt.estimator import JEIRT
from jeirt.files import write_json, write_text
from jeirt.fitcache import fit_cached
from jeirt.metrics import auc
from jeirt.model import probability
from jeirt.onboard import fit_model_vectors
from jeirt.splits import Split, hold_out_models, split_by_question

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # result_files, shared with the scripts
from onboard_speed import OLD_PRIOR_WIDTH_GRID, prior_from_vectors  # noqa: E402  (this folder's)
from result_files import results_parser, run_record  # noqa: E402

SHARES = (0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)
PRIOR_VARIANTS = ("before", "evidence", "c = 1", "own fifth", "validation")


def first_share(mask: np.ndarray, share: float, seed: int) -> np.ndarray:
    """The first `share` (at least one) of each row's True entries in a seeded random order of its own:
    nested in the share."""
    rng = np.random.default_rng(seed)
    out = np.zeros_like(mask)
    for i, row in enumerate(mask):
        cols = rng.permutation(np.flatnonzero(row))
        out[i, cols[: max(1, int(round(share * len(cols))))]] = True
    return out


def scores(probs: np.ndarray, labels: np.ndarray, mask: np.ndarray) -> dict:
    """Mean over models of test log loss and accuracy, AUC over all their test answers, and the bias of
    the predicted accuracy (mean over models of mean p minus mean y)."""
    y, p = np.nan_to_num(labels), np.clip(probs.astype(np.float64), 1e-7, 1 - 1e-7)
    loss = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    rows = [i for i in range(len(y)) if mask[i].any()]
    return {
        "log_loss": float(np.mean([loss[i][mask[i]].mean() for i in rows])),
        "accuracy": float(np.mean([((p[i] >= 0.5) == (y[i] >= 0.5))[mask[i]].mean() for i in rows])),
        "auc": float(auc(p[mask], y[mask])),
        "bias": float(np.mean([(p[i] - y[i])[mask[i]].mean() for i in rows])),
    }


def fold_rows(
    ds: Dataset, held: list[str], seed: int, corrections: bool, fold: str, val_share: bool = False
) -> list[dict]:
    """Every (prior, share) of the models `held`, held out of a JE-IRT trained on the others."""
    split = hold_out_models(ds, split_by_question(ds, seed=seed), held)
    model = fit_cached(
        JEIRT(random_state=seed, progress=False), ds, Split(split.train, split.val, split.test, split.name)
    )  # onboarded below, not at fit
    idx = ds.model_index(held)
    new = ds.subset(models=held)
    test = split.test[idx] & new.observed
    val_all = split_by_question(ds, seed=seed).val[idx] & new.observed  # their answers to the validation questions
    trained = [i for i, m in enumerate(model.models_) if m not in set(held)]
    out = []

    def add(
        prior: str, share: float, corrected: bool, seconds: float, width: float, probs: np.ndarray, mask: np.ndarray
    ) -> None:
        base = {
            "dataset": ds.name,
            "fold": fold,
            "seed": seed,
            "prior": prior,
            "share": share,
            "corrections": corrected,
            "width": width,
            "seconds": seconds,
        }
        out.append({**base, "part": "test", **scores(probs, new.labels, test)})
        out.append({**base, "part": "train", **scores(probs, new.labels, mask)})

    def onboarded(mask: np.ndarray, val: np.ndarray | None, scale: float | str = "auto") -> tuple:
        start = time.perf_counter()
        model.onboard(new, mask, replace=True, prior_width=scale, val_mask=val)
        return time.perf_counter() - start, model.onboard_prior_width_, model.predict_proba(new)

    def own_fifth(mask: np.ndarray) -> tuple:
        """c chosen on a random fifth of the onboarding answers themselves, then a fit on all of them."""
        start = time.perf_counter()
        inner = mask & (np.random.default_rng(seed + 2).random(mask.shape) < 0.2)
        if not inner.any():  # too few answers to spare a fifth: the evidence's choice
            return onboarded(mask, None)
        model.onboard(new, mask & ~inner, replace=True, val_mask=inner)
        seconds, width, probs = onboarded(mask, None, model.onboard_prior_width_)
        return time.perf_counter() - start, width, probs

    for share in SHARES:
        mask = first_share(split.onboard[idx], share, seed)
        val = first_share(val_all, share, seed + 1) if val_share else val_all
        # before: the isotropic prior, widths by the evidence summed over the held-out models
        directions, norms = model.question_terms(new)
        mean, var = prior_from_vectors(model.model_vectors_[trained])
        start = time.perf_counter()
        old = fit_model_vectors(
            directions, norms, new.labels, mask, mean, [var * s for s in OLD_PRIOR_WIDTH_GRID], covariances=False
        )
        add(
            "before",
            share,
            False,
            time.perf_counter() - start,
            old.prior_width / var,
            probability(directions, norms, old.vectors).T,
            mask,
        )
        add("evidence", share, False, *onboarded(mask, None), mask)
        add("c = 1", share, False, *onboarded(mask, None, 1.0), mask)
        add("own fifth", share, False, *own_fifth(mask), mask)
        add("validation", share, False, *onboarded(mask, val), mask)
    if corrections:
        model.fit_corrections(
            ds.subset(models=[model.models_[i] for i in trained]), split.train[trained] & ds.observed[trained]
        )
        for share in SHARES:
            mask = first_share(split.onboard[idx], share, seed)
            val = first_share(val_all, share, seed + 1) if val_share else val_all
            add("validation", share, True, *onboarded(mask, val), mask)
            add("evidence", share, True, *onboarded(mask, None), mask)
    return out


def mmlu_pro_folds(n_folds: int, seed: int) -> tuple[Dataset, list[tuple[str, list[str]]]]:
    """mmlu_pro's models in `n_folds` groups (a seeded shuffle), each held out in turn."""
    ds = load_dataset("mmlu_pro")
    order = np.random.default_rng(seed).permutation(ds.n_models)
    return ds, [
        (f"fold {k}", [ds.models[i] for i in sorted(part)]) for k, part in enumerate(np.array_split(order, n_folds))
    ]


def metabench_fold(n_models: int, seed: int) -> tuple[Dataset, list[str]]:
    """`n_models` of metabench's models graded on every question (seeded), a tenth of them held out."""
    meta = load_dataset("metabench")
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(np.flatnonzero(meta.observed.all(axis=1)), n_models, replace=False))
    ds = meta.subset(models=rows)
    return ds, sorted(rng.choice(ds.models, n_models // 10, replace=False).tolist())


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, part, corrections, prior and share: the folds' metrics averaged, weighted alike."""
    keys = ["dataset", "part", "corrections", "prior", "share"]
    table = runs.groupby(keys, sort=False)[["log_loss", "accuracy", "auc", "bias", "width", "seconds"]].mean()
    return table.reset_index()


def curves(summary: pd.DataFrame) -> str:
    """The test log loss, accuracy, AUC and bias of each prior by share, one block per dataset, and
    whether each log loss curve is non-increasing."""
    lines = []
    for (name, corrected), block in summary[summary["part"] == "test"].groupby(["dataset", "corrections"], sort=False):
        lines.append(f"{name}, test questions, {'with' if corrected else 'without'} corrections")
        for metric in ("log_loss", "accuracy", "auc", "bias", "width"):
            wide = block.pivot(index="prior", columns="share", values=metric)
            wide = wide.loc[[p for p in PRIOR_VARIANTS if p in wide.index]]
            lines.append(f"  {metric}")
            lines += ["    " + line for line in wide.to_string(float_format=lambda x: f"{x:.4f}").splitlines()]
            if metric == "log_loss":
                rises = {p: float(np.diff(row.to_numpy()).max()) for p, row in wide.iterrows()}
                lines.append(
                    "    largest rise from one share to the next: "
                    + ", ".join(f"{p} {r:+.4f}" for p, r in rises.items())
                )
    train = summary[(summary["part"] == "train") & (summary["prior"] == "validation")]
    if train["corrections"].any():
        lines.append("bias of the validation prior's predicted accuracy, training (corrected) vs test questions")
        for (name, corrected), block in train.groupby(["dataset", "corrections"], sort=False):
            test = summary[
                (summary["part"] == "test")
                & (summary["prior"] == "validation")
                & (summary["dataset"] == name)
                & (summary["corrections"] == corrected)
            ]
            lines.append(
                f"  {name} {'with' if corrected else 'without'} corrections: train "
                + " ".join(f"{b:+.4f}" for b in block["bias"])
                + " | test "
                + " ".join(f"{b:+.4f}" for b in test["bias"])
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = results_parser(__doc__, "results/onboarding_prior.json", seeds="0", datasets="mmlu_pro,metabench")
    parser.add_argument("--folds", type=int, default=3, help="mmlu_pro: groups of models held out in turn")
    parser.add_argument("--metabench-models", type=int, default=300, help="metabench models sampled")
    parser.add_argument("--corrections", action="store_true", help="also onboard with question corrections")
    parser.add_argument(
        "--val-share",
        action="store_true",
        help="choose the validation width on the same share of the validation answers",
    )
    args = parser.parse_args()
    config = {**vars(args), **run_record("benchmarks/onboarding_prior.py")}
    rows = []
    for seed in args.seeds:
        if "mmlu_pro" in args.datasets:
            ds, folds = mmlu_pro_folds(args.folds, seed)
            for name, held in folds:
                rows += fold_rows(ds, held, seed, args.corrections, name, args.val_share)
                print(f"mmlu_pro {name} done", flush=True)
        if "metabench" in args.datasets:
            ds, held = metabench_fold(args.metabench_models, seed)
            rows += fold_rows(ds, held, seed, args.corrections, "tenth", args.val_share)
            print("metabench done", flush=True)
    runs = pd.DataFrame(rows)
    summary = summarize(runs)
    records = summary.astype(object).where(summary.notna(), None).to_dict("records")
    write_json(
        args.out,
        {
            "format": "jeirt-onboarding-prior",
            "config": config,
            "summary": records,
            "runs": runs.astype(object).where(runs.notna(), None).to_dict("records"),
        },
        indent=1,
    )
    text = curves(summary)
    write_text(args.out.replace(".json", ".txt"), text)
    print(text)


if __name__ == "__main__":
    main()
