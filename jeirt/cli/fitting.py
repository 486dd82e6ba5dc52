"""`jeirt fit` (train on a seeded question split, report test scores) and `jeirt evaluate` (score a saved
model on a dataset, or onboarded models on their answers)."""

from __future__ import annotations

import argparse

from jeirt.cli import common
from jeirt.cli.checks import Verb, check_encoders
from jeirt.cli.errors import DataError, UsageError


def _scores(model, ds, mask) -> tuple:
    """(overall scores, per-benchmark table) of `model` on the labels of `ds` under `mask`."""
    from jeirt.metrics import evaluate

    report = evaluate(model.predict_proba(ds), ds, mask)
    return report["overall"], report["per_benchmark"]


def check_fit(args: argparse.Namespace) -> None:
    """--encoder names a registered encoder; --nested comes without --search and --corrections."""
    check_encoders(args.encoder)
    clash = [flag for flag, on in (("--search", args.search), ("--corrections", args.corrections)) if on]
    if args.nested and clash:
        raise UsageError(f"--nested does not combine with {' or '.join(clash)}: leave {' and '.join(clash)} out.")


def run_fit(args: argparse.Namespace) -> None:
    """`jeirt fit`: train JE-IRT on the dataset's split and print its test scores."""
    from jeirt.estimator import JEIRT
    from jeirt.splits import default_split

    ds = common.dataset(args.dataset, args.limit_questions, args.seed)
    split = default_split(ds, seed=args.seed)
    model = JEIRT(
        d=args.d,
        encoder=args.encoder,
        recipe=args.recipe,
        random_state=args.seed,
        device=args.device,
        training=None if args.max_epochs is None else {"max_epochs": args.max_epochs},
        calibrate=not args.no_calibrate,
        search=args.search,
        search_budget=args.search_budget,
        question_correction=args.corrections,
        nested=args.nested,
        progress=not args.quiet,
    ).fit(ds, split)
    overall, per_bench = _scores(model, ds, split.test)
    h = model.history_
    summary = {
        "dataset": ds.name,
        "models": ds.n_models,
        "items": ds.n_items,
        "encoder": model.encoder_,
        "recipe": args.recipe,
        "d": model.d_,
        "split": split.name,
        "epochs": len(h.train_loss),
        "best_epoch": h.best_epoch + 1,
        "train_seconds": h.seconds,
        "temperature": model.temperature_,
        "test": overall,
        "corrections": common.corrections(model),
    }
    if args.nested:  # the residual's weight and what measured it (`jeirt.nested`)
        summary["nested"] = model.calibration_
    if args.search:
        summary["search"] = {
            "tried": len(model.search_results_),
            "seconds": model.search_seconds_,
            "chosen": str(min(model.search_results_, key=lambda r: r["val_loss"])["change"] or "recipe"),
        }
    if args.out:
        summary["saved"] = str(common.save(args.out, model.save))
    common.emit(summary, args.json)
    if args.per_benchmark:
        print(per_bench.to_string(float_format=lambda x: f"{x:.4f}"))


def run_evaluate(args: argparse.Namespace) -> None:
    """`jeirt evaluate`: a saved model's scores on a dataset's test part (or every label), or those of
    onboarded models from --results."""
    from jeirt.splits import default_split

    model = common.load_model(args.model, args.quiet)
    ds = common.dataset(args.dataset)
    if args.results:  # onboarded models' answers on the dataset's questions, scored on the split's test part
        table = common.read_results("--results", args.results)
        new = common.results_dataset("--results", args.results, table, ds.items, name=ds.name)
        new.embeddings, ds = ds.embeddings, new
    known = set(model.models_)
    unknown = [m for m in ds.models if m not in known]
    if unknown:
        raise DataError(
            f"the model does not know {len(unknown)} of the dataset's models "
            f"(e.g. {unknown[:3]}); add them with `jeirt onboard` first."
        )
    mask = default_split(ds, seed=args.seed).test if args.part == "test" else ds.observed
    # questions without text or features are refused by the library (`Dataset.features`), named here
    overall, per_bench = common.judged("--dataset", args.dataset, lambda: _scores(model, ds, mask))
    summary = {
        "model": args.model,
        "dataset": ds.name,
        "part": args.part,
        "corrections": common.corrections(model),
        "scores": overall,
    }
    common.emit(summary, args.json)
    print(per_bench.to_string(float_format=lambda x: f"{x:.4f}"))


FIT = Verb("fit", run_fit, check_fit, out_suffix=".pt")
EVALUATE = Verb("evaluate", run_evaluate)


def add_parsers(add: common.AddParser) -> None:
    """Add `fit` and `evaluate` to the `jeirt` command."""
    p = add(
        FIT, "train JE-IRT and report test scores (on EmbedLLM's official split, else a seeded 80/10/10 question split)"
    )
    p.add_argument("--dataset", required=True, help="'embedllm', a folder under $JEIRT_DATA, or a results CSV")
    p.add_argument(
        "--encoder",
        default="all-MiniLM-L6-v2",
        help="frozen question encoder whose features JE-IRT adapts (default all-MiniLM-L6-v2; "
        "the paper's: all-mpnet-base-v2, ModernBERT-large)",
    )
    p.add_argument("--d", type=int, default=256, help="embedding dimension (default 256)")
    common.add_seed(p, "seed of the question split, the item sample and the initial weights (default 0)")
    p.add_argument("--max-epochs", type=int, help="upper bound on epochs (default: the recipe's)")
    p.add_argument(
        "--recipe",
        choices=["fast", "paper"],
        default="fast",
        help="training recipe: fast (default) or paper (the JE-IRT authors' code: N(0, 1) model vectors, "
        "AdamW lr 3e-5, early stopping)",
    )
    p.add_argument(
        "--search",
        action="store_true",
        help="bounded hyperparameter search on the validation labels (lr, regularisation, d)",
    )
    p.add_argument(
        "--search-budget",
        type=float,
        default=300.0,
        help="seconds after which the search starts no new candidate (default 300)",
    )
    p.add_argument(
        "--no-calibrate",
        action="store_true",
        help="skip temperature scaling on the validation labels (with --nested: JE-IRT's part keeps weight 1)",
    )
    p.add_argument("--limit-questions", type=int, help="train on a seeded sample of this many questions")
    common.refuse_renamed(p, "--limit-items", "--limit-questions")
    p.add_argument("--device", help="torch device (default: CUDA, MPS, CPU)")
    p.add_argument("--out", help="save the fitted model here (.pt)")
    p.add_argument("--per-benchmark", action="store_true", help="also print scores per benchmark")
    p.add_argument(
        "--nested",
        action="store_true",
        help="this book's variant (not the paper's method): JE-IRT nested on each LLM's accuracy on the "
        "question's benchmark, as 4 cross-fitted JE-IRTs whose departure is weighted by how much of it "
        "carries to questions they never saw; never far below that accuracy (the API's nested=True)",
    )
    p.add_argument(
        "--corrections",
        action="store_true",
        help="also fit per-question corrections from the known models' training answers (the API's "
        "question_correction=True), saved in the model; `jeirt evaluate` shows them",
    )

    _add_evaluate(add)


def _add_evaluate(add: common.AddParser) -> None:
    p = add(EVALUATE, "score a saved model on a dataset")
    common.add_model(p)
    p.add_argument("--dataset", required=True, help="'embedllm', a folder under $JEIRT_DATA, or a results CSV")
    p.add_argument(
        "--part",
        choices=["test", "all"],
        default="test",
        help="the split's test part (default: the dataset's own split where it ships one, as EmbedLLM "
        "does, else the seeded question split) or every label",
    )
    common.add_seed(p, "seed of the question split (unused with an official split; default 0)")
    p.add_argument(
        "--results",
        help="long CSV model,item_id,label of onboarded models' answers on the dataset's "
        "questions: score those models (on the split's test part: onboard them from the other "
        "questions' answers for an out-of-sample score)",
    )
