"""New models, measured right: few-question scores of held-out models under every selection rule.

For each fold, JE-IRT is fitted (the library's default recipe, `fit_cached`) on the models not held
out; the trained models answer every question outside validation (`known_question_split`), which
gives the per-question corrections (`JEIRT.fit_corrections`) and a per-question Rasch model
(`OnePL`) fitted on the same known answers. Each held-out model is asked k of its graded questions
by the random, stratified and adaptive rules (`select_questions`, `adaptive_selection`; the adaptive
questions are chosen by the bank that estimates, so with and without corrections they differ) and
its accuracy on all of them is estimated by

- JE-IRT without and with corrections: `estimate_scores` (the model-based estimate, its 90% interval)
  and `design_estimates` (method "design": the design-based one, unbiased whatever the model gets
  wrong, from the inclusion probabilities the rule recorded);
- the plain mean of the k answers (`plain_means`), and a Rasch estimate from the same answers
  (`irt_estimates`).

Folds:
- `mmlu_pro`: its 33 models in `--folds` groups of a seeded shuffle, each held out in turn (the default,
  33, leaves one model out; every model is held out once whatever N);
- `metabench`: a held-out low-accuracy tenth (the tenth of the models graded on every question with
  the lowest accuracy) and a random tenth of those models; `--metabench-held` of each are evaluated
  and JE-IRT is trained on a seeded sample of `--metabench-train` of the models outside the held-out
  tenth (all 6,349 would take minutes a fit on two cores; the sample is said in the settings file).

- (b) held-out families (`--protocols families`): every model of one family (`FAMILIES`, by a word of
  the name: vendor or base model) of `--family-datasets` held out at once, JE-IRT fitted on the rest:
  models unlike every trained one (metabench: `--metabench-held` of the family, `--metabench-train`
  others).

Each held-out model is asked `--repeats` draws of questions per rule (seeded by the fold and the
repeat: no two folds share a draw). Writes `<out>.csv` (one row per dataset, fold, repeat, rule,
corrections, method, k and model), a `<out>.json` with the settings, the summary and the goal table,
and prints them: per dataset, group (the metabench tenth), rule, method, corrections and k, the MAE,
bias (mean error) and 90% coverage of the overall accuracy; then per JE-IRT cell (model- and
design-based) each goal (|bias| <= 0.01, coverage 0.85-0.95, an error at most the random rule's at the
same k, at k = 100 an error at most Rasch's) judged on its 95% interval over the held-out models:
"meets" (inside the goal), "misses" (outside) or "inconclusive here" (straddling a bound) (`goals`), the
goal table (`goal_table`) and the counts. `--report` rewrites the JSON and the tables from an earlier
`<out>.csv` without rerunning.

    python benchmarks/new_models.py --rules random,stratified,adaptive,adaptive-accuracy   # everything
    python benchmarks/new_models.py --datasets mmlu_pro --folds 6 --ks 50,100   # a quick look
    # parts run one after another (each its own --out), then joined into one result and its goal table:
    python benchmarks/new_models.py --join a.csv,b.csv --out results/new_models_design.csv --note "..."

The stored `results/new_models_design.*` was made in parts and joined; its settings hold each part's
command and how the run was sized.
"""

from __future__ import annotations

import functools
import itertools
import json
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from jeirt.baselines.irt import OnePL
from jeirt.data import Dataset, load_dataset
from jeirt.estimator import JEIRT
from jeirt.files import comma_list, write_json
from jeirt.fitcache import fit_cached
from jeirt.questions import known_question_split
from jeirt.splits import hold_out_models, split_by_question
from jeirt.tasks.evaluation import (
    DESIGN,
    PLAIN,
    QuestionBank,
    design_estimates,
    estimate_scores,
    irt_estimates,
    plain_means,
)
from jeirt_book.experiments.new_models import NESTED, questions_asked, score_rows, training_only, true_scores

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # result_files, shared with the scripts
from onboarding_prior import mmlu_pro_folds  # noqa: E402  (this folder's: a seeded shuffle in groups)
from result_files import results_parser, run_record  # noqa: E402

RULES = ("random", "stratified", "adaptive", "adaptive-accuracy")  # the last: expected error reduction
RASCH = "rasch (per question)"


def fold_rows(
    ds: Dataset,
    held: list[str],
    seed: int,
    ks: list[int],
    rules: list[str],
    draws: int,
    fold: str,
    repeats: int = 1,
) -> list[dict]:
    """Every estimate of the models `held` of `ds`, held out of a JE-IRT fitted on the others: each rule
    asks `repeats` draws of questions, seeded by (seed, fold, repeat) so that no two folds share a draw
    (with one seed for all, every mmlu_pro fold's one model was asked the same questions, and the
    models' mean error measured that one draw's difficulty, not the estimator's bias)."""
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
            out.append(
                {"dataset": ds.name, "fold": fold, **r, "repeat": repeat, "method": method, "corrections": corrections}
            )

    for rule, repeat in itertools.product(rules, range(repeats)):
        draw_seed = int(np.random.SeedSequence([seed, zlib.crc32(fold.encode()), repeat]).generate_state(1)[0])
        # The adaptive questions depend on the bank that chooses them; the other rules' do not.
        choosers = banks if rule in NESTED and rule != "random" else {None: banks[False]}
        for corrections, chooser in choosers.items():
            for k, picked in questions_asked(chooser, labels, rule, ks, seed=draw_seed).items():
                for with_corrections in banks if corrections is None else [corrections]:
                    estimate = estimate_scores(
                        banks[with_corrections],
                        labels,
                        picked.asked,
                        targets=graded,
                        draws=draws,
                        seed=draw_seed,
                        models=held,
                        posterior=picked.posterior,
                        sampled=picked.sampled,
                    )
                    add(estimate, rule, "je-irt", with_corrections, k)
                    design = design_estimates(
                        banks[with_corrections], labels, picked.asked, picked.inclusion, targets=graded, models=held
                    )
                    add(design, rule, DESIGN, with_corrections, k)
                    add(shrunk(design), rule, SHRUNK, with_corrections, k)
                add(irt_estimates(irt, new, picked.asked), rule, RASCH, corrections, k)
                add(plain_means(banks[False], labels, picked.asked, held), rule, PLAIN, corrections, k)
    return out


SHRUNK = "design, shrunk"  # the method name of the per-benchmark design-based estimate shrunk toward the overall


def shrunk(design: pd.DataFrame) -> pd.DataFrame:
    """`design_estimates`' table with its shrunk numbers as the estimate (overall: the design-based one)."""
    numbers = ("estimate", "sd", "lower", "upper")
    return design.drop(columns=list(numbers)).rename(columns={f"shrunk_{c}": c for c in numbers})


# Families of related models, by a word of the name (first match in this order): a held-out family is a
# kind of model the fit has never seen. Names without one belong to no family and are never held out.
FAMILIES = {
    "mistral": ("mistral", "mixtral", "mathstral"),
    "llama": ("llama",),
    "qwen": ("qwen",),
    "yi": ("yi-",),
    "google": ("gemma", "gemini"),
    "openai": ("gpt", "chatgpt", "o1-"),
    "claude": ("claude",),
    "deepseek": ("deepseek",),
    "phi": ("phi-",),
    "cohere": ("command", "c4ai"),
}


def family(name: str) -> str | None:
    """The family of a model name (`FAMILIES`), or None. A word of three letters must start the name
    (after metabench's uploader) or follow a hyphen; a longer one may sit anywhere."""
    lower = name.lower().rsplit("/", 1)[-1]
    for f, words in FAMILIES.items():
        if any(w in lower if len(w) > 3 else lower.startswith(w) or f"-{w}" in lower for w in words):
            return f
    return None


def family_folds(
    name: str, families: list[str] | None, n_held: int, n_train: int, seed: int, smallest: int = 2
) -> list[tuple[str, Dataset, list[str]]]:
    """Hold out a whole family (`family`) at a time: each of `families` (default: every family with at
    least `smallest` models) of dataset `name`, fitted on the models of every other family and of none.
    metabench: `n_held` of the family's models graded on every question are evaluated and `n_train` of
    the other models trained on (seeded)."""
    ds = load_dataset(name)
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    of = np.array([family(m) or "" for m in ds.models])
    complete = ds.observed.all(axis=1) if name == "metabench" else np.ones(ds.n_models, dtype=bool)
    sizes = {f: int(((of == f) & complete).sum()) for f in families or FAMILIES}
    skipped = [f for f, n in sizes.items() if n < smallest]
    if skipped:
        print(f"{name}: families with fewer than {smallest} models, not held out: {skipped}", flush=True)
    out = []
    for f in sorted(f for f, n in sizes.items() if n >= smallest):
        members = np.flatnonzero((of == f) & complete)
        if name != "metabench":
            out.append((f"family {f}", ds, [ds.models[i] for i in members]))
            continue
        evaluated = np.sort(rng.choice(members, min(n_held, len(members)), replace=False))
        rest = np.flatnonzero(of != f)
        train = rng.choice(rest, min(n_train, len(rest)), replace=False)
        sub = ds.subset(models=np.sort(np.concatenate([train, evaluated])))
        out.append((f"family {f}", sub, [ds.models[i] for i in evaluated]))
    return out


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


CELL = ["dataset", "group", "method", "rule", "corrections", "k"]  # one cell of the goal table
BIAS_GOAL, COVERAGE_GOAL, GOAL_K = 0.01, (0.85, 0.95), 100
VERDICTS = ("meets", "inconclusive here", "misses")


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """MAE, bias and 90% coverage of the overall estimate per dataset, group, rule, method,
    corrections and k (the metabench groups apart; mmlu_pro's folds together)."""
    runs = labelled(runs)
    grouped = runs.groupby(CELL, sort=False)
    table = grouped.agg(mae=("abs_error", "mean"), bias=("error", "mean"), estimates=("abs_error", "size"))
    if "covered" in runs:
        table["coverage"] = grouped["covered"].mean()
    if "bench_mae" in runs:  # per benchmark: each model's mean over its benchmarks, then over the models
        table["bench_mae"] = grouped["bench_mae"].mean()
    if "bench_covered" in runs:
        table["bench_coverage"] = grouped["bench_covered"].mean()
    return table.reset_index()


def labelled(runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` with a `group` (the metabench tenth, (a) mmlu_pro's held-out folds, or (b) a held-out family) and
    corrections as text."""
    fold = runs["fold"].astype(str)
    return runs.assign(
        group=np.where(
            fold.str.startswith("family "),
            "held-out family",
            np.where(runs["dataset"] == "metabench", fold, "held-out folds"),
        ),
        corrections=runs["corrections"].map({True: "with", False: "without"}).fillna("-"),
    )


def verdict(low: float, high: float, goal: tuple[float, float]) -> str:
    """A goal judged on the spread of a measure, its 95% interval [low, high]: 'meets' when the interval
    lies inside `goal`, 'misses' when it lies outside, 'inconclusive here' when it straddles a bound."""
    if goal[0] <= low and high <= goal[1]:
        return "meets"
    return "misses" if high < goal[0] or low > goal[1] else "inconclusive here"


def wilson(hits: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson 95% interval of a proportion `hits` / `n`."""
    p = hits / n
    centre, half = (p + z * z / (2 * n)), z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def bootstrap_interval(values: np.ndarray, boot: np.ndarray) -> tuple[float, float]:
    """The 95% interval of the mean of `values` over the resamples `boot` (rows of indices)."""
    return tuple(np.quantile(values[boot].mean(axis=1), [0.025, 0.975]))


def goals(runs: pd.DataFrame, resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The goals per cell of the JE-IRT model-based and design-based estimates, each judged on its spread
    (each model's errors first averaged over its draws of the questions): bias (mean error) with a
    bootstrap 95% interval over the held-out models, |bias| <= 0.01; 90% coverage with its Wilson
    interval over the models, 0.85-0.95; for the rules other than random, the paired gap of the absolute
    errors to the random rule's (same method, corrections, k and models; bootstrap), at most 0: the
    rule earns its place; and at k = 100 the paired gap to the Rasch estimate from the same answers, at
    most 0: JE-IRT no worse than Rasch."""
    runs = per_model(labelled(runs))
    rasch = runs[runs["method"] == RASCH]
    # A random or stratified draw serves both JE-IRT banks; an adaptive one was chosen by one bank.
    rasch = pd.concat(
        [rasch[rasch["corrections"] != "-"]]
        + [rasch[rasch["corrections"] == "-"].assign(corrections=c) for c in ("with", "without")]
    )
    keys = [c for c in CELL if c != "method"] + ["fold", "seed", "model"]
    ours = runs[runs["method"].isin(["je-irt", DESIGN])]
    ours = ours.merge(rasch[keys + ["abs_error"]].rename(columns={"abs_error": "rasch_error"}), on=keys, how="left")
    random = ours[ours["rule"] == "random"].drop(columns=["rule", "rasch_error"])
    paired = [c for c in keys if c != "rule"] + ["method"]
    ours = ours.merge(
        random[paired + ["abs_error"]].rename(columns={"abs_error": "random_error"}), on=paired, how="left"
    )
    rows = []
    for cell, part in ours.groupby(CELL, sort=False):
        rng = np.random.default_rng([seed, zlib.crc32(repr(cell).encode())])  # a cell's own resamples
        boot = rng.integers(0, len(part), (resamples, len(part)))
        interval = functools.partial(bootstrap_interval, boot=boot)
        errors, covered = part["error"].to_numpy(), part["covered"].to_numpy()
        row = {**dict(zip(CELL, cell)), "models": len(part), "mae": part["abs_error"].mean(), "bias": errors.mean()}
        row["mae_lo"], row["mae_hi"] = interval(part["abs_error"].to_numpy())
        row["bias_lo"], row["bias_hi"] = interval(errors)
        row["bias_verdict"] = verdict(row["bias_lo"], row["bias_hi"], (-BIAS_GOAL, BIAS_GOAL))
        covered = covered[~np.isnan(covered)]
        if len(covered):
            row["coverage"] = covered.mean()
            row["coverage_lo"], row["coverage_hi"] = wilson(covered.sum(), len(covered))
            row["coverage_verdict"] = verdict(row["coverage_lo"], row["coverage_hi"], COVERAGE_GOAL)
        if row["rule"] != "random" and part["random_error"].notna().all():
            gap = (part["abs_error"] - part["random_error"]).to_numpy()
            row["random_mae"] = part["random_error"].mean()
            row["random_gap_lo"], row["random_gap_hi"] = interval(gap)
            row["random_verdict"] = verdict(row["random_gap_lo"], row["random_gap_hi"], (-np.inf, 0.0))
        if row["k"] == GOAL_K:
            gap = (part["abs_error"] - part["rasch_error"]).to_numpy()
            row["rasch_mae"] = part["rasch_error"].mean()
            row["gap_lo"], row["gap_hi"] = interval(gap)
            row["mae_verdict"] = verdict(row["gap_lo"], row["gap_hi"], (-np.inf, 0.0))
        rows.append(row)
    return pd.DataFrame(rows)


def goal_table(table: pd.DataFrame, summary: pd.DataFrame, corrections: str = "with") -> pd.DataFrame:
    """The goal table for people: one row per group, dataset, rule and k (`corrections` with or without);
    the design-based estimate's MAE, bias and coverage with their 95% intervals and verdicts and its
    error's paired gap to the random rule's, the model-based estimate's, and the plain mean's and
    Rasch's MAE / bias from the same answers (rule '-' rows: a draw both banks share)."""
    keys = ["group", "dataset", "rule", "k"]
    gaps = ["random_mae", "random_gap_lo", "random_gap_hi", "random_verdict"]  # absent when only random ran
    table = table.reindex(columns=table.columns.union(gaps, sort=False))
    spread = lambda t, v, sign="": [  # noqa: E731
        f"{x:{sign}.3f} [{lo:{sign}.3f}, {hi:{sign}.3f}]" for x, lo, hi in zip(t[v], t[f"{v}_lo"], t[f"{v}_hi"])
    ]
    out = {}
    for method, name in ((DESIGN, "design"), ("je-irt", "model")):
        part = table[(table["method"] == method) & (table["corrections"] == corrections)].set_index(keys)
        columns = {f"{name} MAE": spread(part, "mae"), f"{name} bias": spread(part, "bias", "+")}
        columns[f"{name} bias goal"] = part["bias_verdict"].to_numpy()
        columns[f"{name} coverage"] = spread(part, "coverage")
        columns[f"{name} coverage goal"] = part["coverage_verdict"].to_numpy()
        gap = part["mae"] - part["random_mae"]
        columns[f"{name} MAE - random's"] = [
            "-" if np.isnan(g) else f"{g:+.3f} [{lo:+.3f}, {hi:+.3f}] {v}"
            for g, lo, hi, v in zip(gap, part["random_gap_lo"], part["random_gap_hi"], part["random_verdict"])
        ]
        out[name] = pd.DataFrame(columns, index=part.index)
    base = summary[summary["corrections"].isin([corrections, "-"])]
    for method, name in ((PLAIN, "plain mean"), (RASCH, "Rasch")):
        part = base[base["method"] == method].drop_duplicates(keys).set_index(keys)
        out[name] = pd.DataFrame(
            {f"{name} MAE / bias": [f"{m:.3f} / {b:+.3f}" for m, b in zip(part["mae"], part["bias"])]}, index=part.index
        )
    return out["design"].join([out["model"], out["plain mean"], out["Rasch"]]).reset_index()


def per_model(runs: pd.DataFrame) -> pd.DataFrame:
    """Each model's error, absolute error and coverage averaged over its draws of the questions (one row
    per model and cell: the models, not the draws, are what a bootstrap resamples)."""
    keys = CELL + ["fold", "seed", "model"]
    if "repeat" not in runs:
        return runs
    return runs.groupby(keys, sort=False)[["error", "abs_error", "covered"]].mean().reset_index()


def goal_counts(table: pd.DataFrame) -> pd.DataFrame:
    """How many cells meet, miss or are inconclusive on each goal, per dataset, group and method."""
    verdicts = [c for c in ("bias_verdict", "coverage_verdict", "random_verdict", "mae_verdict") if c in table]
    long = table.melt(id_vars=["dataset", "group", "method"], value_vars=verdicts, var_name="goal").dropna()
    long["goal"] = long["goal"].str.replace("_verdict", "")
    counts = long.groupby(["dataset", "group", "method", "goal", "value"]).size().unstack("value", fill_value=0)
    return counts.reindex(columns=list(VERDICTS), fill_value=0)


def main() -> None:
    parser = results_parser(__doc__, "results/new_models.csv", seeds="0", datasets="mmlu_pro,metabench")
    parser.add_argument("--ks", type=lambda t: [int(k) for k in comma_list(t)], default="50,100,300")
    parser.add_argument("--rules", type=comma_list, default=",".join(RULES[:3]))
    parser.add_argument(
        "--folds", type=int, default=33, help="mmlu_pro: its models in N seeded groups (33: leave one out)"
    )
    parser.add_argument("--metabench-held", type=int, default=50, help="evaluated models of each tenth")
    parser.add_argument("--metabench-train", type=int, default=600, help="training models sampled")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="draws of the questions per rule and model")
    parser.add_argument(
        "--protocols",
        type=comma_list,
        default="folds,families",
        help="folds: (a) mmlu_pro's held-out folds and the metabench tenths; families: (b) each family held out",
    )
    parser.add_argument(
        "--families", type=comma_list, default=None, help="(b): these families only (default: every one, FAMILIES)"
    )
    parser.add_argument("--family-datasets", type=comma_list, default="mmlu_pro,zeroeval,metabench")
    parser.add_argument(
        "--metabench-families",
        type=comma_list,
        default=None,
        help="(b) on metabench: these families (default --families)",
    )
    parser.add_argument("--note", default="", help="a line kept in the settings (e.g. how the run was scoped)")
    parser.add_argument("--report", action="store_true", help="only rewrite <out>.json and the tables from <out>")
    parser.add_argument(
        "--join",
        type=comma_list,
        default=None,
        help="CSVs of earlier runs (parts of one protocol, run one after another): join them into <out> and report",
    )
    args = parser.parse_args()
    for option in ("families", "metabench_families"):
        strange = [f for f in getattr(args, option) or [] if f not in FAMILIES]
        if strange:
            parser.error(f"--{option.replace('_', '-')} {strange}; expected some of {list(FAMILIES)}.")
    unknown = [r for r in args.rules if r not in RULES]
    if unknown:
        parser.error(f"--rules {unknown}; expected some of {list(RULES)}.")
    config = {**vars(args), **run_record("benchmarks/new_models.py")}
    if args.report:  # the goal table of an earlier run, its settings kept
        earlier = json.loads(Path(args.out.replace(".csv", ".json")).read_text())["config"]
        report(pd.read_csv(args.out, keep_default_na=False, na_values=[""]), earlier, args.out)
        return
    if args.join:  # runs made one after another (each its own part of the protocol) as one result
        runs, config = joined(args.join, args.note)
        runs.to_csv(args.out, index=False, float_format="%.6g")
        report(runs, {**config, "out": args.out}, args.out)
        return
    rows = []

    def run_fold(ds: Dataset, held: list[str], seed: int, name: str) -> None:
        rows.extend(fold_rows(ds, held, seed, args.ks, args.rules, args.draws, name, args.repeats))
        pd.DataFrame(rows).to_csv(args.out, index=False, float_format="%.6g")  # every fold so far
        print(f"{ds.name} {name} (seed {seed}) done", flush=True)

    for seed in args.seeds:
        if "families" in args.protocols:
            for name in args.family_datasets:
                chosen = args.metabench_families or args.families if name == "metabench" else args.families
                for fold, ds, held in family_folds(name, chosen, args.metabench_held, args.metabench_train, seed):
                    run_fold(ds, held, seed, fold)
        if "folds" not in args.protocols:
            continue
        if "mmlu_pro" in args.datasets:
            ds, folds = mmlu_pro_folds(args.folds, seed)
            for name, held in folds:
                run_fold(ds, held, seed, name)
        if "metabench" in args.datasets:
            for group, sub, held in metabench_folds(args.metabench_held, args.metabench_train, seed):
                run_fold(sub, held, seed, group)
    report(pd.DataFrame(rows), config, args.out)


def joined(parts: list[str], note: str) -> tuple[pd.DataFrame, dict]:
    """The rows of the runs `parts` (CSVs written by this script) together, and their settings: each
    part's command from its `.json`, or, for a part stopped before its end (no `.json`), the folds it
    finished; `note` says why they were run apart."""
    frames, commands = [], []
    for part in parts:
        frames.append(pd.read_csv(part, keep_default_na=False, na_values=[""]))
        settings = Path(part).with_suffix(".json")
        if settings.is_file():
            commands.append(json.loads(settings.read_text())["config"]["command"])
        else:
            done = ", ".join(pd.unique(frames[-1]["dataset"] + " " + frames[-1]["fold"].astype(str)))
            commands.append(f"(stopped before its end, {part}: finished {done})")
    runs = pd.concat(frames, ignore_index=True)
    keys = ["dataset", "fold", "seed", "repeat", "rule", "method", "corrections", "k", "model"]
    if runs.duplicated(keys).any():
        raise ValueError(f"--join {parts}: the parts share rows (the same fold and draw); join distinct parts.")
    record = run_record("benchmarks/new_models.py")
    return runs, {**record, "joined_by": record["command"], "command": " ; ".join(commands), "note": note}


def records(table: pd.DataFrame) -> list[dict]:
    return table.astype(object).where(table.notna(), None).to_dict("records")


def report(runs: pd.DataFrame, config: dict, out: str) -> None:
    """Write `<out>.json` (settings, summary, the goal table and its counts) and print them."""
    summary, table = summarize(runs), goals(runs)
    counts = goal_counts(table)
    people = {c: goal_table(table, summary, c) for c in ("with", "without")}
    write_json(
        out.replace(".csv", ".json"),
        {
            "format": "jeirt-new-models",
            "config": config,
            "summary": records(summary),
            "goals": records(table),
            "goal_counts": records(counts.reset_index()),
            "goal_table": {c: records(t) for c, t in people.items()},
        },
        indent=1,
    )
    number = lambda x: f"{x:.4f}"  # noqa: E731
    print(summary.to_string(index=False, float_format=number))
    print(table.to_string(index=False, float_format=number))
    print(counts.to_string())
    with pd.option_context("display.width", 250, "display.max_columns", None):
        for c, t in people.items():
            print(f"\nThe goal table, {c} corrections:\n{t.to_string(index=False)}")


if __name__ == "__main__":
    main()
