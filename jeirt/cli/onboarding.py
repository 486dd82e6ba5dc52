"""`jeirt onboard`: fit vectors for new models from a CSV of their results, everything else frozen; the
questions come from --dataset, --questions or the results' own columns."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

import numpy as np

from jeirt import files
from jeirt.cli import common
from jeirt.cli.checks import Verb
from jeirt.cli.errors import DataError, UsageError


def check(args: argparse.Namespace) -> None:
    """--dataset or --questions, not both; --out or --in-place, exactly one."""
    if args.questions and args.dataset:
        raise UsageError(
            "onboard: give --dataset (its item table has the questions) or --questions (a question table "
            "of your own), not both."
        )
    if args.in_place and args.out:
        raise UsageError("onboard: give either --out FILE (a new model) or --in-place (replace --model), not both.")
    if not args.in_place and args.out is None:
        raise UsageError(
            "onboard writes the extended model to a new file: give --out FILE, or --in-place to replace --model."
        )


def outputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """--in-place writes over --model."""
    return [("--in-place (--model)", Path(args.model).expanduser())] if args.in_place else []


def run(args: argparse.Namespace) -> None:
    """`jeirt onboard`: the extended model, saved to --out (or over --model with --in-place). In place, the
    model file's lock (`files.locked`) is held from load to save: two at once run one after the other, and
    both new models land (the second says on stderr that it waits)."""
    with files.locked(args.model) if args.in_place else contextlib.nullcontext():
        _onboard(args)


def _onboard(args: argparse.Namespace) -> None:
    """Load --model, onboard --results' models into it, save it (to --out or over --model)."""
    from jeirt.data.csv_tables import read_items_csv, with_validation
    from jeirt.metrics import score

    model = common.load_model(args.model, args.quiet)
    items, embeddings = None, {}
    if args.dataset:  # questions (and their precomputed embeddings) come from a known dataset
        base = common.dataset(args.dataset)
        items, embeddings = base.items, base.embeddings
    elif args.questions:
        try:
            items = read_items_csv(args.questions)
        except ValueError as err:
            raise DataError(f"--questions {err}") from None
    name = Path(args.results).stem
    table = common.read_results("--results", args.results)
    new = common.results_dataset("--results", args.results, table, items, name=name, duplicates=args.duplicates)
    val_mask = None
    if args.validation:  # held out of the fit: the prior's width on these answers, the vectors on --results alone
        held = common.read_results("--validation", args.validation)
        new, val_mask = common.judged(
            "--validation",
            args.validation,
            lambda: with_validation(table, held, items, name=name, duplicates=args.duplicates, where=args.validation),
            duplicates_option=True,
        )
    fit_mask = new.observed if val_mask is None else new.observed & ~val_mask
    new.embeddings = embeddings
    common.judged("--results", args.results, lambda: new.features(model.encoder_, progress=not args.quiet))
    try:
        model.onboard(new, mask=fit_mask, replace=args.replace, val_mask=val_mask)
    except ValueError as err:
        raise DataError(f"--results {args.results}: {str(err).replace('pass replace=True', 'pass --replace')}") from err
    probs = model.predict_proba(new)
    fit = score(probs[fit_mask], new.labels[fit_mask])
    summary = {
        "onboarded": new.models,
        "items": new.n_items,
        "labels": int(fit_mask.sum()),
        "prior_width": model.onboard_prior_width_,
        "fit_on_own_labels": fit,
    }
    if val_mask is not None:
        summary["validation_labels"] = int(val_mask.sum())
        summary["fit_on_validation"] = score(probs[val_mask], new.labels[val_mask])
    if not np.isfinite(fit.get("auc", 0.0)):
        summary["note"] = "auc is undefined: the labels are all of one class (null in --json)"
    target = args.model if args.in_place else args.out
    summary["saved"] = str(target)
    common.save(target, model.save)  # atomic: a kill leaves the old file
    common.emit(summary, args.json)


VERB = Verb("onboard", run, check, out_suffix=".pt", outputs=outputs)


def add_parsers(add: common.AddParser) -> None:
    """Add `onboard` to the `jeirt` command."""
    p = add(VERB, "add new models from a CSV of their results, all else frozen")
    common.add_model(p)
    p.add_argument("--results", required=True, help="long CSV: model,item_id,label[,benchmark,subject,text]")
    p.add_argument("--dataset", help="dataset whose questions the results refer to (by item_id)")
    p.add_argument(
        "--questions", help="question table CSV (item_id,text[,benchmark,subject]) if not in --results or --dataset"
    )
    common.refuse_renamed(p, "--items", "--questions")
    p.add_argument(
        "--duplicates",
        choices=["error", "mean", "first"],
        default="error",
        help="a (model, item_id) pair given twice: refuse it (default), average the labels (a soft label) "
        "or keep the first",
    )
    p.add_argument("--replace", action="store_true", help="refit models the model already knows")
    p.add_argument(
        "--validation",
        help="long CSV of more answers of the same models, held out of the fit, best on questions the model "
        "did not train on: the prior's width is the one that predicts them best (without: each model's most "
        "evident width, which widens as answers on the training questions accumulate)",
    )
    p.add_argument("--out", help="save the extended model to this new file (or give --in-place)")
    p.add_argument(
        "--in-place",
        action="store_true",
        help="replace --model with the extended model (atomically: a kill leaves the old one)",
    )
