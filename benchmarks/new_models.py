"""New models, measured right: few-question scores of held-out models under every selection rule.

For each fold, JE-IRT is fitted (the library's default recipe, `fit_cached`) on the models not held
out; the trained models answer every question outside validation (`known_question_split`), which
gives the per-question corrections (`JEIRT.fit_corrections`) and a per-question Rasch model
(`OnePL`) fitted on the same known answers. Each held-out model is asked k of its graded questions
by the random, stratified and adaptive rules (`select_items`, `adaptive_selection`; the adaptive
questions are chosen by the bank that estimates, so with and without corrections they differ) and
its accuracy on all of them is estimated by

- JE-IRT without and with corrections: `estimate_scores` (the library's estimate, its 90% interval);
- the plain mean of the k answers (`plain_means`), and a Rasch estimate from the same answers
  (`irt_estimates`).

Folds:
- `mmlu_pro`: leave one model out (33 folds; `--folds N` takes the first N models by name);
- `metabench`: a held-out low-accuracy tenth (the tenth of the models graded on every question with
  the lowest accuracy) and a random tenth of those models; `--metabench-held` of each are evaluated
  and JE-IRT is trained on a seeded sample of `--metabench-train` of the models outside the held-out
  tenth (all 6,349 would take minutes a fit on two cores; the sample is said in the settings file).

Writes `<out>.csv` (one row per dataset, fold, seed, rule, corrections, method, k and model), a
`<out>.json` with the settings and the summary, and prints the summary: per dataset, group (the
metabench tenth), rule, method, corrections and k, the MAE, bias (mean error) and 90% coverage of the
overall accuracy.

    python benchmarks/new_models.py                       # everything
    python benchmarks/new_models.py --datasets mmlu_pro --folds 6 --ks 50,100   # a quick look
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from jeirt.baselines.irt import OnePL
from jeirt.data import Dataset, load_dataset
from jeirt.estimator import JEIRT
from jeirt.files import comma_list, results_parser, run_record, write_json
from jeirt.fitcache import fit_cached
from jeirt.questions import known_question_split
from jeirt.splits import hold_out_models, split_by_question
from jeirt.tasks.evaluation import (
    PLAIN,
    QuestionBank,
    adaptive_selection,
    estimate_scores,
    irt_estimates,
    plain_means,
    random_positions,
    select_items,
)
from jeirt.tasks.new_models import score_rows, training_only, true_scores

RULES = ("random", "stratified", "adaptive")
RASCH = "rasch (per question)"


def fold_rows(
    ds: Dataset, held: list[str], seed: int, ks: list[int], rules: list[str], draws: int, fold: str
) -> list[dict]:
    """Every estimate of the models `held` of `ds`, held out of a JE-IRT fitted on the others."""
    split = known_question_split(hold_out_models(ds, split_by_question(ds, seed=seed), held))
    trained = [m for m in ds.models if m not in set(held)]
    rows = ds.model_index(trained)
    known = (split.train | split.val)[rows] & ds.observed[rows]
    model = fit_cached(JEIRT(random_state=seed, progress=False), ds, training_only(split))
    banks = {False: QuestionBank.from_model(model, ds, prior_models=trained)}
    model.fit_corrections(ds.subset(models=rows), known)
    banks[True] = QuestionBank.from_model(model, ds, prior_models=trained)
    irt = OnePL().fit(ds.subset(models=rows), known)
    new = ds.subset(models=held)
    labels = new.labels.astype(np.float64)
    graded = ~np.isnan(labels)
    truth = true_scores(banks[False], labels, held)
    out = []

    def add(est: pd.DataFrame, rule: str, method: str, corrections: bool | None, k: int) -> None:
        for r in score_rows(est, truth, rule, k, seed):
            out.append({"dataset": ds.name, "fold": fold, **r, "method": method, "corrections": corrections})

    def asked_of(order: np.ndarray, k: int) -> np.ndarray:
        asked = np.zeros_like(graded)
        np.put_along_axis(asked, order[:, :k], True, axis=1)
        return asked

    for rule in rules:
        if rule == "adaptive":  # the questions depend on the bank that chooses them
            drawn = random_positions(max(ks))  # which of the order's questions were drawn at random
            for corrections, bank in banks.items():
                order, posteriors = adaptive_selection(bank, max(ks), labels, rule, seed=seed, keep=ks)
                for k in ks:
                    asked = asked_of(order, k)
                    sampled = np.zeros_like(asked)
                    np.put_along_axis(sampled, order[:, :k][:, drawn[:k]], True, axis=1)
                    add(
                        estimate_scores(
                            bank,
                            labels,
                            asked,
                            targets=graded,
                            draws=draws,
                            seed=seed,
                            models=held,
                            posterior=posteriors.get(k),
                            sampled=sampled,
                        ),
                        rule,
                        "je-irt",
                        corrections,
                        k,
                    )
                    add(irt_estimates(irt, new, asked), rule, RASCH, corrections, k)
                    add(plain_means(bank, labels, asked, held), rule, PLAIN, corrections, k)
            continue
        order = select_items(banks[False], max(ks), "random", labels=labels, seed=seed) if rule == "random" else None
        for k in ks:
            asked = (
                asked_of(order, k)
                if rule == "random"
                else asked_of(select_items(banks[False], k, rule, labels=labels, seed=seed), k)
            )
            for corrections, bank in banks.items():
                add(
                    estimate_scores(bank, labels, asked, targets=graded, draws=draws, seed=seed, models=held),
                    rule,
                    "je-irt",
                    corrections,
                    k,
                )
            add(irt_estimates(irt, new, asked), rule, RASCH, None, k)
            add(plain_means(banks[False], labels, asked, held), rule, PLAIN, None, k)
    return out


def mmlu_pro_folds(folds: int | None) -> tuple[Dataset, list[tuple[str, list[str]]]]:
    """Leave one model out: each model of mmlu_pro (by name), the first `folds` of them if given."""
    ds = load_dataset("mmlu_pro")
    names = sorted(ds.models)[:folds]
    return ds, [(name, [name]) for name in names]


def metabench_folds(n_held: int, n_train: int, seed: int) -> list[tuple[str, Dataset, list[str]]]:
    """metabench's low-accuracy tenth and a random tenth of the models graded on every question, held
    out: `n_held` of each evaluated, JE-IRT trained on `n_train` models from outside that tenth."""
    meta = load_dataset("metabench")
    rng = np.random.default_rng(seed)
    complete = np.flatnonzero(meta.observed.all(axis=1))
    accuracy = np.nanmean(meta.labels[complete], axis=1)
    tenth = len(complete) // 10
    groups = {
        "low tenth": complete[np.argsort(accuracy, kind="stable")[:tenth]],
        "random tenth": rng.choice(complete, tenth, replace=False),
    }
    out = []
    for group, out_rows in groups.items():
        evaluated = np.sort(rng.choice(out_rows, min(n_held, len(out_rows)), replace=False))
        rest = np.setdiff1d(np.arange(meta.n_models), out_rows)
        train = rng.choice(rest, min(n_train, len(rest)), replace=False)
        sub = meta.subset(models=np.sort(np.concatenate([train, evaluated])))
        out.append((group, sub, [meta.models[i] for i in evaluated]))
    return out


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """MAE, bias and 90% coverage of the overall estimate per dataset, group, rule, method,
    corrections and k (the metabench groups apart; mmlu_pro's folds together)."""
    runs = runs.assign(
        group=np.where(runs["dataset"] == "metabench", runs["fold"], "leave one out"),
        corrections=runs["corrections"].map({True: "with", False: "without"}).fillna("-"),
    )
    grouped = runs.groupby(["dataset", "group", "rule", "method", "corrections", "k"], sort=False)
    table = grouped.agg(mae=("abs_error", "mean"), bias=("error", "mean"), estimates=("abs_error", "size"))
    if "covered" in runs:
        table["coverage"] = grouped["covered"].mean()
    return table.reset_index()


def main() -> None:
    parser = results_parser(__doc__, "results/new_models.csv", seeds="0", datasets="mmlu_pro,metabench")
    parser.add_argument("--ks", type=lambda t: [int(k) for k in comma_list(t)], default="50,100,300")
    parser.add_argument("--rules", type=comma_list, default=",".join(RULES))
    parser.add_argument("--folds", type=int, default=None, help="mmlu_pro: the first N leave-one-out folds")
    parser.add_argument("--metabench-held", type=int, default=50, help="evaluated models of each tenth")
    parser.add_argument("--metabench-train", type=int, default=600, help="training models sampled")
    parser.add_argument("--draws", type=int, default=200)
    args = parser.parse_args()
    unknown = [r for r in args.rules if r not in RULES]
    if unknown:
        parser.error(f"--rules {unknown}; expected some of {list(RULES)}.")
    config = {**vars(args), **run_record("benchmarks/new_models.py")}
    rows = []

    def run_fold(ds: Dataset, held: list[str], seed: int, name: str) -> None:
        rows.extend(fold_rows(ds, held, seed, args.ks, args.rules, args.draws, name))
        pd.DataFrame(rows).to_csv(args.out, index=False, float_format="%.6g")  # every fold so far
        print(f"{ds.name} {name} (seed {seed}) done", flush=True)

    for seed in args.seeds:
        if "mmlu_pro" in args.datasets:
            ds, folds = mmlu_pro_folds(args.folds)
            for name, held in folds:
                run_fold(ds, held, seed, name)
        if "metabench" in args.datasets:
            for group, sub, held in metabench_folds(args.metabench_held, args.metabench_train, seed):
                run_fold(sub, held, seed, group)
    runs = pd.DataFrame(rows)
    summary = summarize(runs)
    records = summary.astype(object).where(summary.notna(), None).to_dict("records")
    write_json(
        args.out.replace(".csv", ".json"),
        {"format": "jeirt-new-models", "config": config, "summary": records},
        indent=1,
    )
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4f}"))


if __name__ == "__main__":
    main()
