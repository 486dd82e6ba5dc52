"""`jeirt estimate` (a new model's accuracy on every question of a dataset from a few answers) and
`jeirt suggest` (which k questions each new model should answer next). The rules and posteriors are
`jeirt.tasks.evaluation`'s (`score_new_models`, `suggest_questions`); this module reads and writes files."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import numpy as np

from jeirt.cli import common
from jeirt.cli.checks import Verb, check_list, names
from jeirt.cli.errors import DataError, UsageError

if TYPE_CHECKING:
    import pandas as pd

RANDOM_COLUMN = "random"  # `jeirt suggest`'s column (and `estimate`'s): 1 where a question was a random draw
INCLUSION_COLUMN = "inclusion_probability"  # `jeirt suggest`'s column: the chance the draw took the question


def _bank_and_answers(args: argparse.Namespace, results: str | None) -> tuple:
    """The dataset, its questions as a bank of the saved model, the models of the results CSV, their
    answers as a (n_new, n_items) label matrix aligned with the bank (NaN: not answered), and their
    inclusion probabilities (`jeirt suggest`'s column; None when the CSV has none). `jeirt.data.from_long`
    judges the results CSV."""
    import pandas as pd

    from jeirt.tasks.evaluation.bank import QuestionBank

    table = common.read_results("--results", results) if results else None  # a bad file is named before any work
    model = common.load_model(args.model, args.quiet)
    ds = common.dataset(args.dataset)
    common.check_texts(ds, model, "--dataset")
    bank = QuestionBank.from_model(model, ds, prior_covariance=args.prior_covariance)
    if table is None:
        return ds, bank, [], np.full((1, ds.n_items), np.nan), None
    new = common.results_dataset("--results", str(results), table, ds.items, name=ds.name)
    known = [m for m in new.models if m in set(model.models_)]
    if known:
        print(
            f"warning: --results: {len(known)} model(s) have the name of a model {args.model} already knows "
            f"({known[:3]}); they are scored as new models from these answers alone.",
            file=sys.stderr,
        )
    columns = pd.Index(new.items["item_id"]).get_indexer(bank.item_ids)  # the bank's order
    matrix = new.labels[:, columns].astype(np.float64)
    at = (new.model_index(table["model"].astype(str)), pd.Index(bank.item_ids).get_indexer(table["item_id"]))
    drawn = None  # which answers were random draws (`jeirt suggest`'s column), when the CSV says
    if RANDOM_COLUMN in table.columns:
        flags = table[RANDOM_COLUMN].astype(str).str.strip()
        bad = ~flags.isin(["0", "1"]).to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"--results {results}: the {RANDOM_COLUMN!r} cell on data row {row + 1} is "
                f"{table[RANDOM_COLUMN].iloc[row]!r}; it must be 1 (a random draw of `jeirt suggest`) "
                "or 0, as suggest wrote it."
            )
        drawn = np.zeros(matrix.shape, dtype=bool)
        drawn[at] = (flags == "1").to_numpy()
    inclusion = None  # each answer's inclusion probability (`jeirt suggest`'s column), when the CSV says
    if INCLUSION_COLUMN in table.columns:
        values = pd.to_numeric(table[INCLUSION_COLUMN], errors="coerce")
        bad = (values.isna() | (values <= 0) | (values > 1)).to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"--results {results}: the {INCLUSION_COLUMN!r} cell on data row {row + 1} is "
                f"{table[INCLUSION_COLUMN].iloc[row]!r}; it must be a number in (0, 1] as `jeirt suggest` "
                "wrote it (1: a pick by choice)."
            )
        inclusion = np.zeros(matrix.shape)
        inclusion[at] = values.to_numpy(np.float64)
    elif drawn is not None and (~drawn[~np.isnan(matrix)]).any():
        raise DataError(
            f"--results {results} has picks by choice ({RANDOM_COLUMN} = 0: an adaptive or kmeans rule) "
            f"but no {INCLUSION_COLUMN!r} column, so the estimate cannot tell what the random draws stand "
            f"for; keep `jeirt suggest`'s {INCLUSION_COLUMN} column beside the answers (1 for a pick by "
            "choice, the draw's share of the questions it was drawn from for a random draw)."
        )
    return ds, bank, list(new.models), matrix, inclusion


def check_estimate(args: argparse.Namespace) -> None:
    """--level is strictly between 0 and 1."""
    if not 0 < args.level < 1:
        raise UsageError(f"--level {args.level}: expected an interval level strictly between 0 and 1, e.g. 0.9.")


def run_estimate(args: argparse.Namespace) -> None:
    """`jeirt estimate`: a new model's accuracy on every question of a dataset from a few answers, the
    design-based estimate reported (`score_new_models`), the model-based one beside it."""
    from jeirt.tasks.evaluation.scoring import score_new_models

    ds, bank, models, labels, inclusion = _bank_and_answers(args, args.results)
    scores = score_new_models(
        bank,
        labels,
        inclusion,
        draws=args.draws,
        level=args.level,
        seed=args.seed,
        models=models,
        progress=not args.quiet,
    )
    shown = ["estimate", "lower", "upper", "source", "model_estimate", "model_lower", "model_upper"]
    summary = {
        "dataset": ds.name,
        "questions": bank.n_items,
        "level": args.level,
        "reported": "design-based where the group has random draws (source 'design'), else model-based",
        "interval": "design: t interval of the random draws' residuals; model: predictive (posterior draws)",
        "models": {
            m: {
                "asked": int(block["asked"].iloc[0]),
                **{
                    row["group"]: {c: row[c] for c in ["asked", "sampled", *shown, "model_sd", "sd"]}
                    for row in block.to_dict("records")
                },
            }
            for m, block in scores.groupby("model", sort=False)
        },
    }
    for m, block in scores.groupby("model", sort=False):
        print(
            f"{m}: {int(block['asked'].iloc[0])} answers ({int(block['sampled'].iloc[0])} random draws), "
            f"estimated accuracy on {ds.name} ({bank.n_items} questions), {args.level:.0%} interval.\n"
            "estimate: design-based, the model's predictions corrected by the random draws' residuals "
            "(unbiased whatever the model gets wrong); model_*: JE-IRT's model-based estimate (narrower, "
            "biased where the model is off for this model), reported only where a group has no random draw"
        )
        table, clipped = printable(block[["group", "items", "asked", "sampled", *shown]])
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        if clipped:
            print(
                "* clipped to [0, 1]: with so few random draws the design-based estimate or its interval left "
                "[0, 1]; --json keeps the values as computed (an unbiased estimate may stray outside)"
            )
    if args.json:
        common.write_summary(args.json, summary)


def printable(table: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """`jeirt estimate`'s table as printed: an accuracy and its interval within [0, 1] (a group with few
    random draws can give a design-based estimate of -0.06, or a t interval of -2.5 to 3.5), the rows
    clipped marked '*' in `source`; and whether any was."""
    columns = ["estimate", "lower", "upper", "model_estimate", "model_lower", "model_upper"]
    outside = ((table[columns] < 0) | (table[columns] > 1)).any(axis=1)
    shown = table.assign(**{c: table[c].clip(0, 1) for c in columns})
    shown["source"] = shown["source"].where(~outside, shown["source"] + " *")
    return shown, bool(outside.any())


def check_suggest(args: argparse.Namespace) -> None:
    """--models names each new model once."""
    if args.models is not None:
        check_list("--models", args.models)


def run_suggest(args: argparse.Namespace) -> None:
    """`jeirt suggest`: which k questions each new model should answer next (the models of --results,
    then the names of --models), by `jeirt.tasks.evaluation.suggest_questions`. The output's `random`
    and `inclusion_probability` columns are what `jeirt estimate` needs."""
    import pandas as pd

    from jeirt.tasks.evaluation.selection import suggest_questions

    ds, bank, models, labels, inclusion = _bank_and_answers(args, args.results)
    drawn = None if inclusion is None else inclusion < 1
    extra = [m for m in names(args.models) if m not in models]
    if extra:
        labels = np.vstack([labels[: len(models)], np.full((len(extra), bank.n_items), np.nan)])
        drawn = None if drawn is None else np.vstack([drawn, np.zeros((len(extra), bank.n_items), dtype=bool)])
        models = models + extra
    models = models or ["new-model"]
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


ESTIMATE = Verb("estimate", run_estimate, check_estimate)
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
    from jeirt.tasks import RULES

    p = add(
        ESTIMATE,
        "estimate a new model's accuracy overall and per benchmark from its answers to a few questions. The "
        "estimate reported is design-based: the answers count as they are, the questions not asked get the "
        "model's predictions, corrected by the mean residual (answer minus prediction) of the questions drawn "
        "at random, weighted by their inclusion probabilities: unbiased whatever the model gets wrong about "
        "this new model, with a t interval from the residuals' spread. JE-IRT's model-based estimate is "
        "printed beside it (model_*): narrower, but biased where the model is off for this new model; it is "
        "reported only for a benchmark without the random draws for an interval (the source column says so). "
        "Safe rules: random and stratified (every answer a random draw); on held-out model families the "
        "adaptive rules did not beat random (results/new_models_design.json)",
    )
    _common(p)
    common.add_seed(p, "seed of the posterior and answer draws (default 0)")
    p.add_argument(
        "--results",
        required=True,
        help="long CSV model,item_id,label: the answers so far, with `jeirt suggest`'s "
        f"{INCLUSION_COLUMN!r} column (and {RANDOM_COLUMN!r}) kept beside them: the chance the draw took "
        "each question, 1 for a pick by choice. Without the column every answer is read as one simple "
        f"random sample of the dataset's questions (right for the random rule); a file whose {RANDOM_COLUMN!r} "
        "column marks picks by choice (0) but has no inclusion probabilities is refused",
    )
    p.add_argument("--draws", type=int, default=200, help="posterior draws for the model-based interval (default 200)")
    p.add_argument("--level", type=float, default=0.9, help="interval level (default 0.9)")

    p = add(SUGGEST, "choose which k questions a new model should answer next")
    _common(p)
    common.add_seed(p, "seed of the random draws and of kmeans (default 0)")
    p.add_argument("--k", type=int, required=True, help="how many questions to suggest to each model")
    p.add_argument(
        "--rule",
        choices=RULES,
        default="stratified",
        help="selection rule (default stratified). random and stratified are the safe choices: every "
        "answer is a random draw, so `jeirt estimate` corrects the model's errors with all of them; on "
        "held-out model families no adaptive rule beat the random rule's error at the same k "
        "(results/new_models_design.json). kmeans picks by choice only (no design-based estimate); adaptive and "
        "adaptive-accuracy draw half of all the model's questions at random and pick the rest as the most "
        "informative given the answers so far. Each model gets its own questions, none it has answered",
    )
    p.add_argument(
        "--results",
        help="long CSV model,item_id,label of the models' answers so far (optional), with the "
        f"{INCLUSION_COLUMN!r} column of earlier suggestions kept; each model of it gets its own questions",
    )
    p.add_argument(
        "--models",
        help="comma-separated names of new models without answers yet, each with its own "
        "questions as --rule says (default: one, 'new-model', when --results is not given)",
    )
    p.add_argument(
        "--out",
        help=f"write the suggested questions here (CSV model,item_id,benchmark,text,{RANDOM_COLUMN},"
        f"{INCLUSION_COLUMN}; {RANDOM_COLUMN}: 1 for a random draw, 0 for a pick by choice; "
        f"{INCLUSION_COLUMN}: the chance the draw took the question (1 for a pick by choice): keep both "
        "beside the answers for `jeirt estimate`)",
    )
