"""`jeirt predict` (P(correct) of every known model on new questions) and `jeirt route` (each question to
the model most likely right, net of lam x its price)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from jeirt.cli import common
from jeirt.cli.checks import Verb
from jeirt.cli.errors import DataError


def run_predict(args: argparse.Namespace) -> None:
    """`jeirt predict`: a (question x model) table of probabilities."""
    import pandas as pd

    model = common.load_model(args.model, args.quiet)
    questions = common.questions(args.questions)
    ids = questions["item_id"] if "item_id" in questions.columns else pd.RangeIndex(len(questions))
    probs = model.predict_proba(questions["text"].astype(str).tolist())  # (n_models, n_questions)
    table = pd.DataFrame(probs.T, index=pd.Index(ids, name="item_id"), columns=model.models_)
    if args.out:
        common.write_csv(args.out, table)
    best = table.idxmax(axis=1)
    summary = {
        "questions": len(table),
        "models": len(model.models_),
        "out": args.out,
        "mean_probability": float(probs.mean()),
        "most_likely_correct": best.value_counts().head(5).to_dict(),
    }
    common.emit(summary, args.json)


def _costs(args: argparse.Namespace, models: list[str]):
    """USD per 1,000 questions for each model, from --prices or the shipped table; a failure names the
    option and the file."""
    from jeirt.tasks import routing

    where = (
        f"--prices {args.prices}"
        if args.prices
        else f"the price table that ships with jeirt ({routing.default_prices()})"
    )
    try:
        return routing.question_costs(routing.read_prices(args.prices), models)
    except ValueError as err:
        message = str(err)
        spellings = {args.prices, str(Path(args.prices)), str(Path(args.prices).expanduser())} if args.prices else set()
        for path in sorted(spellings, key=len, reverse=True):  # the file is named once, in `where`
            if message.startswith(path):
                message = message[len(path) :].lstrip(": ")
                break
        raise DataError(f"{where}: {message}") from None


def run_route(args: argparse.Namespace) -> None:
    """Route each question to the model with the largest P(correct) - lam * cost (jeirt.tasks.routing)."""
    import pandas as pd

    from jeirt.tasks import routing

    model = common.load_model(args.model, args.quiet)
    questions = common.questions(args.questions)
    costs = _costs(args, list(model.models_))  # USD per 1,000 questions
    probs = model.predict_proba(questions["text"].astype(str).tolist())  # (n_models, n_questions)
    choice = routing.choose(probs, costs=costs.to_numpy(), lam=args.lam)
    cols = np.arange(len(questions))
    table = pd.DataFrame(
        {
            "item_id": questions["item_id"] if "item_id" in questions.columns else cols,
            "model": np.asarray(model.models_, dtype=object)[choice],
            "p_correct": probs[choice, cols],
            "usd_per_1k_questions": costs.to_numpy()[choice],
        }
    )
    if "benchmark" in questions.columns:
        table.insert(1, "benchmark", questions["benchmark"].to_numpy())
    if args.out:
        common.write_csv(args.out, table, index=False)
    print(table.head(20).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    summary = {
        "questions": len(table),
        "lam": args.lam,
        "out": args.out,
        "mean_p_correct": float(table["p_correct"].mean()),
        "mean_usd_per_1k_questions": float(table["usd_per_1k_questions"].mean()),
        "routed_to": table["model"].value_counts().head(5).to_dict(),
    }
    common.emit(summary, args.json)


PREDICT = Verb("predict", run_predict, out_suffix=".csv")
ROUTE = Verb("route", run_route, out_suffix=".csv")


def add_parsers(add: common.AddParser) -> None:
    """Add `predict` and `route` to the `jeirt` command."""
    p = add(PREDICT, "P(correct) of every known model on new questions (CSV with a text column)")
    common.add_model(p)
    p.add_argument("--questions", required=True, help="CSV with columns text and optionally item_id")
    p.add_argument("--out", help="write the (question x model) probabilities here (CSV)")

    p = add(ROUTE, "send each new question to the model most likely right, net of lam x cost")
    common.add_model(p)
    p.add_argument("--questions", required=True, help="CSV with columns text and optionally item_id, benchmark")
    p.add_argument(
        "--prices",
        help="price table CSV (model,usd_per_mtok_input,usd_per_mtok_output,...); "
        "default: the table that ships with jeirt (jeirt/tasks/prices.csv)",
    )
    p.add_argument(
        "--lam",
        type=float,
        default=0.0,
        help="probability given up per USD per 1,000 questions (default 0: ignore cost)",
    )
    p.add_argument("--out", help="write item_id, model, p_correct, usd_per_1k_questions here (CSV)")
