"""`jeirt estimate` (a new model's accuracy on every question of a dataset from a few answers) and
`jeirt suggest` (which k questions each new model should answer next). The rules and posteriors are
`jeirt.tasks.evaluation`'s (`score_new_models`, `suggest_questions`); this module reads and writes files."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import numpy as np

from jeirt.cli import common
from jeirt.cli.checks import Verb, check_list
from jeirt.cli.errors import UsageError
from jeirt.files import finite_json

if TYPE_CHECKING:
    import pandas as pd

# `jeirt suggest`'s columns beside each question, which `jeirt estimate` reads back
# (`jeirt.tasks.evaluation.answers`, where they are declared; kept here as names for the help texts).
RANDOM_COLUMN, INCLUSION_COLUMN = "random", "inclusion_probability"


def _bank_and_answers(args: argparse.Namespace, results: str | None) -> tuple:
    """The dataset, its questions as a bank of the saved model, and the answers of the results CSV on
    them (`jeirt.tasks.evaluation.answers_from_table`, the one reader of the answers and of `jeirt
    suggest`'s columns; None without --results)."""
    from jeirt.tasks.evaluation.answers import answers_from_table
    from jeirt.tasks.evaluation.bank import QuestionBank

    table = common.read_results("--results", results) if results else None  # a bad file is named before any work
    model = common.load_model(args.model, args.quiet)
    ds = common.dataset(args.dataset)
    # questions without text or features are refused by the library (`Dataset.features`), named here
    bank = common.judged(
        "--dataset", ds.name, lambda: QuestionBank.from_model(model, ds, prior_covariance=args.prior_covariance)
    )
    if table is None:
        return ds, bank, None
    answers = common.judged("--results", str(results), lambda: answers_from_table(bank, table, where=str(results)))
    known = [m for m in answers.models if m in set(model.models_)]
    if known:
        print(
            f"warning: --results: {len(known)} model(s) have the name of a model {args.model} already knows "
            f"({known[:3]}); they are scored as new models from these answers alone.",
            file=sys.stderr,
        )
    return ds, bank, answers


def run_estimate(args: argparse.Namespace) -> None:
    """`jeirt estimate`: a new model's accuracy on every question of a dataset from a few answers
    (`score_new_models`): overall design-based, per benchmark the shrunk design-based estimate, the
    design-based and the model-based numbers beside them."""
    from jeirt.tasks.evaluation.scoring import score_new_models

    ds, bank, answers = _bank_and_answers(args, args.results)
    scores = score_new_models(
        bank,
        answers.labels,
        answers.inclusion,
        draws=args.draws,
        level=args.level,
        seed=args.seed,
        models=answers.models,
        progress=not args.quiet,
    )
    for m, block in scores.groupby("model", sort=False):
        print(
            f"{m}: {int(block['asked'].iloc[0])} answers ({int(block['sampled'].iloc[0])} random draws), "
            f"estimated accuracy on {ds.name} ({bank.n_items} questions), {args.level:.0%} interval.\n{REPORTED}"
        )
        table, clipped = printable(block[["group", "items", "asked", "sampled", *SHOWN]])
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        if clipped:
            print(
                "* clipped to [0, 1]: with so few random draws the design-based estimate or its interval left "
                "[0, 1]; --json keeps the values as computed (an unbiased estimate may stray outside)"
            )
    if args.json:
        common.write_summary(args.json, finite_json(_estimate_summary(ds.name, bank.n_items, args.level, scores)))


SHOWN = ["estimate", "lower", "upper", "source", "design_estimate", "model_estimate"]  # `jeirt estimate`'s columns
REPORTED = (
    "estimate: overall, design-based (the model's predictions corrected by the random draws' residuals: "
    "unbiased whatever the model gets wrong); per benchmark, design-based with the benchmark's correction "
    "shrunk toward the overall one by how few random draws it has ('design, shrunk'); design_estimate: the "
    "design-based number unshrunk (valid, wide with a handful of draws); model_estimate: JE-IRT's "
    "model-based one (narrower, biased where the model is off for this model), reported only where there "
    "is no random draw"
)


def _estimate_summary(dataset: str, questions: int, level: float, scores: pd.DataFrame) -> dict:
    """`jeirt estimate --json`: per model and group, every number of the table with its sd."""
    kept = ["asked", "sampled", *SHOWN, "sd"] + [f"{kind}_{c}" for kind in ("design", "model") for c in NUMBERS]
    return {
        "dataset": dataset,
        "questions": questions,
        "level": level,
        "reported": "overall: design-based ('design'); per benchmark: design-based, shrunk toward the overall "
        "correction ('design, shrunk'); model-based where there is no random draw ('model: ...')",
        "interval": "design: t interval of the random draws' residuals (shrunk: with the benchmarks' spread); "
        "model: predictive (posterior draws)",
        "models": {
            m: {
                "asked": int(block["asked"].iloc[0]),
                **{row["group"]: {c: row[c] for c in dict.fromkeys(kept)} for row in block.to_dict("records")},
            }
            for m, block in scores.groupby("model", sort=False)
        },
    }


NUMBERS = ("estimate", "sd", "lower", "upper")


def printable(table: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """`jeirt estimate`'s table as printed: an accuracy and its interval within [0, 1] (a group with few
    random draws can give a design-based estimate of -0.06, or a t interval of -2.5 to 3.5), the rows
    clipped marked '*' in `source`; and whether any was."""
    columns = [c for c in table.columns if c.endswith(("estimate", "lower", "upper"))]
    outside = ((table[columns] < 0) | (table[columns] > 1)).any(axis=1)
    shown = table.assign(**{c: table[c].clip(0, 1) for c in columns})
    shown["source"] = shown["source"].where(~outside, shown["source"] + " *")
    return shown, bool(outside.any())


def check_suggest(args: argparse.Namespace) -> None:
    """--llms names each new LLM once."""
    if args.llms is not None:
        check_list("--llms", args.llms, llms=True)


def run_suggest(args: argparse.Namespace) -> None:
    """`jeirt suggest`: which k questions each new model should answer next (the models of --results,
    then the names of --llms), by `jeirt.tasks.evaluation.suggest_questions`. The output's `random`
    and `inclusion_probability` columns are what `jeirt estimate` needs."""
    import pandas as pd

    from jeirt.tasks.evaluation.selection import suggest_questions

    ds, bank, answers = _bank_and_answers(args, args.results)
    models = [] if answers is None else answers.models
    typed = [] if args.llms is None else check_list("--llms", args.llms, llms=True)
    models += [m for m in typed if m not in models]
    models = models or ["new-model"]
    labels = np.full((len(models), bank.n_items), np.nan)
    drawn = None  # each model's earlier random draws (its answers' `random` column; None: every answer)
    if answers is not None:
        labels[: len(answers.models)] = answers.labels
        if answers.random is not None:
            drawn = np.zeros(labels.shape, dtype=bool)
            drawn[: len(answers.models)] = answers.random
    open_questions = np.isnan(labels).sum(axis=1)  # (n_models,) questions not yet answered
    if args.k > open_questions.min():
        who = models[int(open_questions.argmin())]
        raise UsageError(
            f"--k {args.k}: {who!r} has {int(open_questions.min())} questions of {ds.name} it has not answered; "
            f"give --k at most {int(open_questions.min())}."
        )
    picks, random, probability = suggest_questions(
        bank, labels, args.k, args.rule, drawn=drawn, seed=args.seed, progress=not args.quiet
    )
    table = pd.DataFrame(
        {
            "model": np.repeat(models, args.k),
            "item_id": bank.item_ids[picks].ravel(),
            "benchmark": bank.groups[picks].ravel(),
            "text": bank.texts[picks].ravel(),
            RANDOM_COLUMN: random.ravel().astype(int),
            INCLUSION_COLUMN: probability.ravel(),
        }
    )
    if args.out:
        common.write_csv(args.out, table, index=False)
    summary = {
        "dataset": ds.name,
        "rule": args.rule,
        "k": args.k,
        "models": len(models),
        "already_answered": int((~np.isnan(labels)).sum()),
        "random_draws": int(random.sum()),
        "per_benchmark": table.groupby("benchmark").size().floordiv(len(models)).to_dict(),
        "out": args.out,
    }
    common.emit(summary, None)
    if args.json:
        item_ids = {m: block["item_id"].tolist() for m, block in table.groupby("model", sort=False)}
        common.write_summary(args.json, {**summary, "item_ids": item_ids})


ESTIMATE = Verb("estimate", run_estimate)
SUGGEST = Verb("suggest", run_suggest, check_suggest, out_suffix=".csv")


def _common(p: argparse.ArgumentParser) -> None:
    """The options `estimate` and `suggest` share."""
    from jeirt.tasks import PRIOR_COVARIANCES

    common.add_model(p)
    p.add_argument(
        "--dataset",
        required=True,
        help="the questions: a dataset name or results CSV; their "
        "texts or precomputed embeddings place them in the model's geometry",
    )
    p.add_argument(
        "--prior-covariance",
        choices=PRIOR_COVARIANCES,
        default="full",
        help="covariance S of the prior N(mu, c S) on the new model's vector, fitted to the saved model's vectors: "
        "full (Ledoit-Wolf, the general-ability direction widened) or isotropic (default full)",
    )
    common.refuse_renamed(p, "--prior", "--prior-covariance")


def add_parsers(add: common.AddParser) -> None:
    """Add `estimate` and `suggest` to the `jeirt` command."""
    _add_estimate(add)
    _add_suggest(add)


def _add_estimate(add: common.AddParser) -> None:
    p = add(
        ESTIMATE,
        "estimate a new LLM's accuracy overall and per benchmark from its answers to a few questions. Reported "
        "overall: the design-based estimate (the answers count as they are, the questions not asked get the "
        "model's predictions corrected by the mean residual, answer minus prediction, of the questions drawn at "
        "random, weighted by their inclusion probabilities): unbiased whatever the model gets wrong about this "
        "LLM, with a t interval from the residuals' spread. Reported per benchmark: the same with the "
        "benchmark's correction shrunk toward the overall one by how few random draws it has against how much "
        "the benchmarks differ (source 'design, shrunk'), since a benchmark holds a handful of random draws "
        "and its own design-based number (design_estimate, beside it) is then valid but wide; on held-out "
        "LLMs the shrunk one was about as sharp as the model-based one and kept its coverage (DECISIONS.md, "
        "'Per-benchmark estimates'). JE-IRT's model-based estimate (model_estimate) is reported only where "
        "there is no random draw (the source column says so). Safe rules: random and stratified (every answer "
        "a random draw); on held-out model families the adaptive rules did not beat random "
        "(results/new_models_design.json)",
    )
    _common(p)
    common.add_seed(p, "seed of the posterior and answer draws (default 0)")
    p.add_argument(
        "--results",
        required=True,
        help="long CSV model,item_id,label (model: the LLM that answered): the answers so far, with `jeirt "
        f"suggest`'s {RANDOM_COLUMN!r} and {INCLUSION_COLUMN!r} columns kept beside them, which must agree on "
        "every row (a random draw: 1 and a probability below 1; a pick by choice: 0 and 1). Without them every "
        "answer is read as one simple random sample of the dataset's questions (right for the random rule); "
        f"a file whose {RANDOM_COLUMN!r} column marks picks by choice (0) but has no inclusion probabilities "
        "is refused",
    )
    p.add_argument("--draws", type=int, default=200, help="posterior draws for the model-based interval (default 200)")
    p.add_argument("--level", type=float, default=0.9, help="interval level (default 0.9)")


def _offered_rule(name: str) -> str:
    """--rule: a selection rule the command line offers; a withdrawn one is refused with the reason."""
    from jeirt.tasks import SELECTION_RULES, WITHDRAWN_RULES

    if name in WITHDRAWN_RULES:
        raise argparse.ArgumentTypeError(
            f"{name!r} was withdrawn: {WITHDRAWN_RULES[name]}; use stratified (the default) or random"
        )
    if name not in SELECTION_RULES:
        offered = [rule for rule in SELECTION_RULES if rule not in WITHDRAWN_RULES]
        raise argparse.ArgumentTypeError(f"{name!r} is not a rule; choose from {offered}")
    return name


def _add_suggest(add: common.AddParser) -> None:
    from jeirt.tasks import SELECTION_RULES, WITHDRAWN_RULES

    p = add(SUGGEST, "choose which k questions a new LLM should answer next")
    _common(p)
    common.add_seed(p, "seed of the random draws and of kmeans (default 0)")
    p.add_argument("--k", type=int, required=True, help="how many questions to suggest to each LLM")
    offered = [rule for rule in SELECTION_RULES if rule not in WITHDRAWN_RULES]
    p.add_argument(
        "--rule",
        type=_offered_rule,
        default="stratified",
        metavar="{" + ",".join(offered) + "}",
        help="selection rule (default stratified). random and stratified: every answer is a random draw, so "
        "`jeirt estimate` corrects the model's errors with all of them. kmeans picks by choice only (no "
        "design-based estimate). The adaptive rules were withdrawn: on held-out model families they did not "
        "beat the random rule's error at any k (results/new_models_design.json); the Python API keeps them "
        "(jeirt.tasks.evaluation.suggest_questions). Each LLM gets its own questions, none it has answered",
    )
    p.add_argument(
        "--results",
        help="long CSV model,item_id,label of the LLMs' answers so far (optional), with the "
        f"{RANDOM_COLUMN!r} and {INCLUSION_COLUMN!r} columns of earlier suggestions kept; each LLM of it gets "
        "its own questions",
    )
    p.add_argument(
        "--llms",
        help="comma-separated names of new LLMs without answers yet, each with its own questions as --rule says "
        "(default: one, 'new-model', when --results is not given); spelt as names in a results file are (Unicode "
        "NFC)",
    )
    common.refuse_renamed(p, "--models", "--llms")
    p.add_argument(
        "--out",
        help=f"write the suggested questions here (CSV model,item_id,benchmark,text,{RANDOM_COLUMN},"
        f"{INCLUSION_COLUMN}; model: the LLM; {RANDOM_COLUMN}: 1 for a random draw, 0 for a pick by choice; "
        f"{INCLUSION_COLUMN}: the chance the draw took the question among those the LLM had not answered (1 for "
        "a pick by choice): keep both beside the answers for `jeirt estimate` and the next round)",
    )
