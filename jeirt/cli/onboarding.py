"""`jeirt onboard`: fit vectors for new models from a CSV of their results, everything else frozen; the
questions come from --dataset, --items or the results' own columns."""

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
    """--dataset or --items, not both; --out or --in-place, exactly one."""
    if args.items and args.dataset:
        raise UsageError(
            "onboard: give --dataset (its item table has the questions) or --items (an item table "
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


def _validation(args: argparse.Namespace, table, items) -> tuple:
    """`--validation`: the new models' answers held out of the fit, judged on their own (errors name
    --validation and its rows), each of a model in --results and none an answer --results gives."""
    held = common.read_results("--validation", args.validation)
    common.results_dataset("--validation", args.validation, held, items, duplicates=args.duplicates)
    strangers = sorted(set(held["model"]) - set(table["model"]))
    if strangers:
        raise DataError(
            f"--validation {args.validation}: model(s) {strangers[:5]} have no answers in --results "
            f"{args.results}; validation answers choose the prior of models being onboarded."
        )
    pairs = ["model", "item_id"]
    both = held[pairs].merge(table[pairs].drop_duplicates(), on=pairs)
    if len(both):
        raise DataError(
            f"--validation {args.validation}: {len(both)} answer(s) are also in --results {args.results} "
            f"(e.g. {both.head(2).to_dict('records')}); an answer is fitted or held out, not both."
        )
    return held


def _answer_mask(ds, table) -> np.ndarray:
    """(models, items) bool: the (model, item_id) pairs of `table` in `ds`."""
    import pandas as pd

    mask = np.zeros(ds.labels.shape, dtype=bool)
    columns = pd.Index(ds.items["item_id"]).get_indexer(table["item_id"].astype(str))
    mask[ds.model_index(table["model"].astype(str)), columns] = True
    return mask


def run(args: argparse.Namespace) -> None:
    """`jeirt onboard`: the extended model, saved to --out (or over --model with --in-place). In place, the
    model file's lock (`files.locked`) is held from load to save: two at once run one after the other, and
    both new models land (the second says on stderr that it waits)."""
    with files.locked(args.model) if args.in_place else contextlib.nullcontext():
        _onboard(args)


def _onboard(args: argparse.Namespace) -> None:
    """Load --model, onboard --results' models into it, save it (to --out or over --model)."""
    import pandas as pd

    from jeirt.data.csv_tables import read_items_csv
    from jeirt.metrics import score

    model = common.load_model(args.model, args.quiet)
    items, embeddings = None, {}
    if args.dataset:  # questions (and their precomputed embeddings) come from a known dataset
        base = common.dataset(args.dataset)
        items, embeddings = base.items, base.embeddings
    elif args.items:
        try:
            items = read_items_csv(args.items)
        except ValueError as err:
            raise DataError(f"--items {err}") from None
    name = Path(args.results).stem
    table = common.read_results("--results", args.results)
    new = common.results_dataset("--results", args.results, table, items, name=name, duplicates=args.duplicates)
    held, val_mask = None, None
    if args.validation:  # both files judged on their own first, so that an error names its file and rows
        held = _validation(args, table, items)
        new = common.results_dataset(
            "--results and --validation",
            f"{args.results} + {args.validation}",
            pd.concat([table, held], ignore_index=True),
            items,
            name=name,
            duplicates=args.duplicates,
        )
        val_mask = _answer_mask(new, held)  # the prior's width on these answers, the vectors on --results alone
    fit_mask = new.observed if val_mask is None else new.observed & ~val_mask
    new.embeddings = embeddings
    blank = int((new.items["text"].str.strip() == "").sum())
    if blank and model.encoder_ not in new.embeddings:
        raise DataError(
            f"--results {args.results}: {blank} of {new.n_items} questions have no text to embed; give "
            "--dataset (whose item table has the texts) or --items, or add a 'text' column."
        )
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
    p.add_argument("--items", help="item table CSV (item_id,benchmark,subject,text) if not in --results")
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
