"""`jeirt`: fit, evaluate, predict with and extend a JE-IRT model from the shell.

    jeirt data                                    list local datasets ($JEIRT_DATA) and describe one
    jeirt fit --dataset mmlu_pro --out model.pt   train on a seeded question split, report test scores
    jeirt evaluate --model model.pt --dataset mmlu_pro
    jeirt predict --model model.pt --questions q.csv --out probs.csv
    jeirt onboard --model model.pt --results new.csv --out model2.pt
    jeirt route --model model.pt --questions q.csv [--prices p.csv] [--lam 0.0] [--out routes.csv]

Each command prints a short summary; `--json FILE` also writes it as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from jeirt import settings


def _dataset(name: str, limit_items: int | None = None, seed: int = 0):
    """Load a dataset by name or CSV path, optionally cut to a seeded per-benchmark item sample."""
    from jeirt.book import sample_items
    from jeirt.data import load_dataset

    ds = load_dataset(name)
    if limit_items and ds.n_items > limit_items:
        ds = ds.subset(items=sample_items(ds.items["benchmark"].to_numpy(), limit_items,
                                          np.random.default_rng(seed)))
    return ds


def _emit(summary: dict, args: argparse.Namespace) -> None:
    """Print `summary` readably and write it to --json if given."""
    for key, value in summary.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for k, v in value.items():
                print(f"  {k:<12} {v:.4f}" if isinstance(v, float) else f"  {k:<12} {v}")
        else:
            print(f"{key:<14} {value:.4f}" if isinstance(value, float) else f"{key:<14} {value}")
    if getattr(args, "json", None):
        Path(args.json).write_text(json.dumps(summary, indent=2, default=str))


def cmd_data(args: argparse.Namespace) -> None:
    from jeirt.data import local_datasets

    if args.dataset is None:
        names = local_datasets()
        _emit({"data_dir": str(settings.data_dir()), "datasets": names + ["embedllm (hub)"]}, args)
        return
    ds = _dataset(args.dataset)
    table = ds.describe()
    print(f"{ds.name}: {ds.n_models} models x {ds.n_items} items; embeddings: {sorted(ds.embeddings) or 'none'}")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if args.json:
        Path(args.json).write_text(json.dumps({"name": ds.name, "models": ds.models,
                                               "embeddings": sorted(ds.embeddings),
                                               "benchmarks": table.to_dict("records")}, indent=2))


def _scores(model, ds, mask) -> dict:
    from jeirt.metrics import evaluate

    report = evaluate(model.predict_proba(ds), ds, mask)
    return report["overall"], report["per_benchmark"]


def cmd_fit(args: argparse.Namespace) -> None:
    from jeirt.data import split_by_question
    from jeirt.estimator import JEIRT

    ds = _dataset(args.dataset, args.limit_items, args.seed)
    split = split_by_question(ds, seed=args.seed)
    model = JEIRT(d=args.d, encoder=args.encoder, random_state=args.seed, device=args.device,
                  max_epochs=args.max_epochs, progress=not args.quiet).fit(ds, split)
    overall, per_bench = _scores(model, ds, split.test)
    h = model.history_
    summary = {"dataset": ds.name, "models": ds.n_models, "items": ds.n_items, "encoder": model.config.encoder,
               "d": args.d, "split": split.name, "epochs": len(h.train_loss), "best_epoch": h.best_epoch + 1,
               "train_seconds": h.seconds, "test": overall}
    if args.out:
        summary["saved"] = str(model.save(args.out))
    _emit(summary, args)
    if args.per_benchmark:
        print(per_bench.to_string(float_format=lambda x: f"{x:.4f}"))


def cmd_evaluate(args: argparse.Namespace) -> None:
    from jeirt.data import split_by_question
    from jeirt.estimator import JEIRT

    model = JEIRT.load(args.model)
    ds = _dataset(args.dataset)
    unknown = [m for m in ds.models if m not in model.models_]
    if unknown:
        raise SystemExit(f"error: the model does not know {len(unknown)} of the dataset's models "
                         f"(e.g. {unknown[:3]}); add them with `jeirt onboard` first.")
    mask = split_by_question(ds, seed=args.seed).test if args.part == "test" else ds.observed
    overall, per_bench = _scores(model, ds, mask)
    _emit({"model": args.model, "dataset": ds.name, "part": args.part, "scores": overall}, args)
    print(per_bench.to_string(float_format=lambda x: f"{x:.4f}"))


def cmd_predict(args: argparse.Namespace) -> None:
    from jeirt.estimator import JEIRT

    model = JEIRT.load(args.model)
    questions = pd.read_csv(args.questions)
    if "text" not in questions.columns:
        raise SystemExit(f"error: {args.questions} needs a 'text' column (and optionally 'item_id').")
    if questions["text"].isna().any():
        raise SystemExit(f"error: {args.questions} has {int(questions['text'].isna().sum())} empty text(s).")
    ids = questions["item_id"] if "item_id" in questions.columns else pd.RangeIndex(len(questions))
    probs = model.predict_proba(questions["text"].astype(str).tolist())  # (n_models, n_questions)
    table = pd.DataFrame(probs.T, index=pd.Index(ids, name="item_id"), columns=model.models_)
    if args.out:
        table.to_csv(args.out)
    best = table.idxmax(axis=1)
    summary = {"questions": len(table), "models": len(model.models_), "out": args.out,
               "mean_probability": float(probs.mean()),
               "most_likely_correct": best.value_counts().head(5).to_dict()}
    _emit(summary, args)


def cmd_onboard(args: argparse.Namespace) -> None:
    from jeirt.data import from_long, read_results_csv
    from jeirt.estimator import JEIRT
    from jeirt.metrics import score

    model = JEIRT.load(args.model)
    if args.dataset:  # questions (and their precomputed embeddings) come from a known dataset
        base = _dataset(args.dataset)
        new = from_long(pd.read_csv(args.results), base.items, name=Path(args.results).stem,
                        duplicates=args.duplicates)
        new.embeddings = base.embeddings
    else:
        new = read_results_csv(args.results, args.items, duplicates=args.duplicates)
    if (new.items["text"] == "").any() and model.config.encoder not in new.embeddings:
        raise ValueError(f"{args.results}: some questions have no text to embed; give --dataset (whose "
                         "item table has the texts) or --items, or add a 'text' column.")
    model.onboard(new, replace=args.replace)
    probs = model.predict_proba(new)
    fit = score(probs[new.observed], new.labels[new.observed])
    path = model.save(args.out or args.model)
    _emit({"onboarded": new.models, "items": new.n_items, "labels": int(new.observed.sum()),
           "prior_scale": model.onboard_prior_scale_, "fit_on_own_labels": fit, "saved": str(path)}, args)


def cmd_route(args: argparse.Namespace) -> None:
    """Route each question to the model with the largest P(correct) - lam * cost (jeirt.routing)."""
    from jeirt import routing
    from jeirt.estimator import JEIRT

    model = JEIRT.load(args.model)
    questions = pd.read_csv(args.questions)
    if "text" not in questions.columns or questions["text"].isna().any() or questions.empty:
        raise ValueError(f"{args.questions} needs a 'text' column with at least one question and no empty "
                         "cells (optionally item_id and benchmark).")
    costs = routing.question_costs(routing.read_prices(args.prices), model.models_)  # USD per 1,000 questions
    probs = model.predict_proba(questions["text"].astype(str).tolist())  # (n_models, n_questions)
    choice = routing.choose(probs, costs=costs.to_numpy(), lam=args.lam)
    cols = np.arange(len(questions))
    table = pd.DataFrame({"item_id": questions["item_id"] if "item_id" in questions.columns else cols,
                          "model": np.asarray(model.models_, dtype=object)[choice], "p_correct": probs[choice, cols],
                          "usd_per_1k_questions": costs.to_numpy()[choice]})
    if "benchmark" in questions.columns:
        table.insert(1, "benchmark", questions["benchmark"].to_numpy())
    if args.out:
        table.to_csv(args.out, index=False)
    print(table.head(20).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    _emit({"questions": len(table), "lam": args.lam, "out": args.out,
           "mean_p_correct": float(table["p_correct"].mean()),
           "mean_usd_per_1k_questions": float(table["usd_per_1k_questions"].mean()),
           "routed_to": table["model"].value_counts().head(5).to_dict()}, args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jeirt", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--json", help="also write the summary to this JSON file")
        p.set_defaults(func=func)
        return p

    p = add("data", cmd_data, "list the local datasets, or describe one")
    p.add_argument("dataset", nargs="?", help="dataset name or results CSV")

    p = add("fit", cmd_fit, "train JE-IRT on a seeded question split and report test scores")
    p.add_argument("--dataset", required=True, help="'embedllm', a folder under $JEIRT_DATA, or a results CSV")
    p.add_argument("--encoder", default="all-MiniLM-L6-v2")
    p.add_argument("--d", type=int, default=256, help="embedding dimension (default 256)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-epochs", type=int, default=200)
    p.add_argument("--limit-items", type=int, help="train on a seeded sample of this many questions")
    p.add_argument("--device", help="torch device (default: CUDA, MPS, CPU)")
    p.add_argument("--out", help="save the fitted model here (.pt)")
    p.add_argument("--per-benchmark", action="store_true", help="also print scores per benchmark")
    p.add_argument("--quiet", action="store_true", help="no progress bar")

    p = add("evaluate", cmd_evaluate, "score a saved model on a dataset")
    p.add_argument("--model", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--part", choices=["test", "all"], default="test",
                   help="the seeded question split's test part (default) or every label")
    p.add_argument("--seed", type=int, default=0, help="seed of the question split")

    p = add("predict", cmd_predict, "P(correct) of every known model on new questions (CSV with a text column)")
    p.add_argument("--model", required=True)
    p.add_argument("--questions", required=True, help="CSV with columns text and optionally item_id")
    p.add_argument("--out", help="write the (question x model) probabilities here (CSV)")

    p = add("onboard", cmd_onboard, "add new models from a CSV of their results, all else frozen")
    p.add_argument("--model", required=True)
    p.add_argument("--results", required=True, help="long CSV: model,item_id,label[,benchmark,subject,text]")
    p.add_argument("--dataset", help="dataset whose questions the results refer to (by item_id)")
    p.add_argument("--items", help="item table CSV (item_id,benchmark,subject,text) if not in --results")
    p.add_argument("--duplicates", choices=["error", "mean", "first"], default="error")
    p.add_argument("--replace", action="store_true", help="refit models the model already knows")
    p.add_argument("--out", help="where to save the extended model (default: overwrite --model)")

    p = add("route", cmd_route, "send each new question to the model most likely right, net of lam x cost")
    p.add_argument("--model", required=True)
    p.add_argument("--questions", required=True, help="CSV with columns text and optionally item_id, benchmark")
    p.add_argument("--prices", help="price table CSV (model,usd_per_mtok_input,usd_per_mtok_output,...); "
                                    "default: data/prices.csv of this checkout")
    p.add_argument("--lam", type=float, default=0.0,
                   help="probability given up per USD per 1,000 questions (default 0: ignore cost)")
    p.add_argument("--out", help="write item_id, model, p_correct, usd_per_1k_questions here (CSV)")

    from jeirt.compare import add_compare_parser
    from jeirt.evaluation import add_evaluation_parsers

    add_compare_parser(sub)  # jeirt compare: every method side by side
    add_evaluation_parsers(sub)  # jeirt estimate / suggest: a new model's scores from few questions
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (ValueError, KeyError, FileNotFoundError, ConnectionError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
