"""`jeirt compare`: every method fitted on several seeds of a split, side by side (`jeirt.tasks.compare`)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from jeirt import params
from jeirt.cli import common
from jeirt.cli.checks import Verb, check_encoders, check_list, names
from jeirt.cli.errors import UsageError


def check(args: argparse.Namespace) -> None:
    """--seeds whole numbers each once; --split one of the three forms; --methods, --dataset and --encoder
    names each once, the methods from the split's catalogue."""
    from jeirt.tasks import compare

    parts = names(args.seeds)
    if not parts or not all(re.fullmatch(r"-?\d+", p) and params.SEED.admits(int(p)) for p in parts):
        raise UsageError(
            f"--seeds {args.seeds!r}: expected comma-separated seeds, each {params.SEED.describe()}, such as 0,1,2."
        )
    if len({int(p) for p in parts}) < len(parts):
        raise UsageError(f"--seeds {args.seeds!r} repeats a seed; a seed run twice would count twice. Give each once.")
    split = args.split
    if not (re.fullmatch(r"question(:\d+)?|known:\d+", split) or re.fullmatch(r"without:.+", split)):
        raise UsageError(
            f"--split {split!r}: expected 'question', 'question:<n>', 'without:<benchmark>' or 'known:<n>'."
        )
    catalogue = compare.KNOWN_QUESTION_METHODS if split.startswith("known:") else compare.METHODS
    check_list("--methods", args.methods, allowed=list(catalogue) + list(compare.VARIANTS))
    check_list("--dataset", args.dataset)
    if args.encoder is not None:
        check_list("--encoder", args.encoder)
        check_encoders(args.encoder)


def outputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """--out's .json, written beside it."""
    return [("--out (its .json)", Path(args.out).expanduser().with_suffix(".json"))] if args.out else []


def run(args: argparse.Namespace) -> int:
    """Run `jeirt compare` from parsed arguments; print the table and the margins of JE-IRT."""
    import torch

    from jeirt.tasks.compare import compare, format_table, margins, records, summarize, variant_margins

    seeds = [int(s) for s in names(args.seeds)]  # checked: whole numbers, each once
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    runs = compare(
        names(args.dataset),
        names(args.encoder) or ["all-MiniLM-L6-v2"],
        seeds,
        names(args.methods),
        split=args.split,
        out=args.out,
        encode_missing=args.encode_missing,
        progress=not args.quiet,
    )
    summary = summarize(runs)
    print(format_table(summary))
    lead = margins(summary)
    if len(lead):
        print("\nJE-IRT minus the best other method (> 0: JE-IRT leads):")
        print(lead.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    beyond = variant_margins(runs)
    if len(beyond):
        print("\nVariants beyond the paper minus each other method, seed by seed (95% t interval over seeds):")
        shown = ["variant", "dataset", "encoder", "metric", "other", "margin_mean", "low", "high", "seeds_won", "seeds"]
        print(beyond[shown].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    if args.out:
        print(f"\nwrote {args.out} and {Path(args.out).with_suffix('.json')}")
    if args.json:
        common.write_summary(args.json, {"config": runs.attrs["config"], "summary": records(summary)}, indent=1)
    return 0


VERB = Verb("compare", run, check, out_suffix=".csv", outputs=outputs)


def add_parsers(add: common.AddParser) -> None:
    """Add `compare` to the `jeirt` command."""
    from jeirt.tasks import METHOD_NAMES as METHODS
    from jeirt.tasks import VARIANT_NAMES as VARIANTS

    p = add(VERB, "fit every method on several seeds of a split and tabulate accuracy, AUC, Brier, ECE, fit time")
    p.add_argument(
        "--dataset",
        action="append",
        required=True,
        help="dataset name or results CSV; repeat the option or separate names by commas",
    )
    p.add_argument(
        "--encoder",
        action="append",
        default=None,
        help="frozen question encoder(s), repeatable or comma-separated (default all-MiniLM-L6-v2)",
    )
    p.add_argument(
        "--split",
        default="question",
        help="'question' (default), 'question:<n>' (the same with only n of its training questions: a "
        "learning curve's point), 'without:<benchmark>' or 'known:<n>' (n new models onboarded onto "
        "questions the others answered)",
    )
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    p.add_argument(
        "--methods",
        default=",".join(METHODS),
        help=f"comma-separated subset of {','.join(METHODS)}; "
        f"variants beyond the paper, run only when named: {','.join(VARIANTS)}",
    )
    p.add_argument("--out", help="write the runs here (.csv; a .json with config and summary goes beside it)")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's own)")
    p.add_argument(
        "--encode-missing",
        action="store_true",
        help="encode texts when a dataset has no precomputed embeddings (slow on a CPU; a progress line "
        "shows how far it is)",
    )
