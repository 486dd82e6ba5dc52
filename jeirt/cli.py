"""`jeirt`: fit, evaluate, predict with and extend a JE-IRT model from the shell.

    jeirt data                                    list local datasets ($JEIRT_DATA) and describe one
    jeirt fit --dataset mmlu_pro --out model.pt   train on a seeded question split, report test scores
    jeirt evaluate --model model.pt --dataset mmlu_pro
    jeirt predict --model model.pt --questions q.csv --out probs.csv
    jeirt onboard --model model.pt --results new.csv --out model2.pt
    jeirt route --model model.pt --questions q.csv [--prices p.csv] [--lam 0.0] [--out routes.csv]

Each command prints a short summary; `--json FILE` also writes it as JSON. Every argument is checked
before any work starts; every file is written atomically (a kill leaves the old file or the new one),
never over an input, and over an existing file only with `--force`.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from jeirt import settings
from jeirt.files import write_json, write_text
from jeirt.interrupts import INTERRUPTED, MESSAGE, interrupted

if TYPE_CHECKING:  # pandas, torch and the workflows are imported where a command uses them, so that
    import pandas as pd  # `jeirt --help` and a usage error answer at once (see jeirt/__main__.py)

# ----------------------------------------------------------------------------------------------------
# Failures: one exception type and one exit code per kind; no traceback unless --debug

EXIT_CODES = """exit codes:
  0    success
  1    internal error: a bug in jeirt (rerun with --debug and report the traceback)
  2    usage: an option is missing, empty, repeated or out of range, or an input path is not a file
  3    data: an input file's contents (CSV, dataset, results, price table) are malformed or do not fit
  4    model: the --model file is not a readable jeirt model
  5    output: an output file exists (pass --force), would overwrite an input, a dataset, its
       checksum manifest or a file of the jeirt package, or cannot be written (disk full)
  6    environment: the device, memory, network or cache folder is not available, or a JEIRT_*
       variable is set to nothing usable (empty, a file for a folder)
  130  interrupted (Ctrl-C)
"""


class CLIError(Exception):
    """A failure the user can fix; `code` is the exit status (see EXIT_CODES)."""

    code = 1


class UsageError(CLIError):
    """A bad command line: an option missing, out of range, or naming no file."""

    code = 2


class DataError(CLIError):
    """An input file's contents are malformed or do not fit the command."""

    code = 3


class ModelFileError(CLIError):
    """The --model file is not a readable jeirt model."""

    code = 4


class OutputError(CLIError):
    """An output exists without --force, would overwrite an input, or cannot be written."""

    code = 5


class EnvironmentFailure(CLIError):
    """The device, memory, network or cache folder is not available."""

    code = 6


# ----------------------------------------------------------------------------------------------------
# Checks made before any work starts

INPUT_OPTIONS = ("model", "questions", "results", "validation", "items", "prices")  # paths a command reads
RANGES = {  # option: (lowest, highest, what it is); ints unless the bound is a float
    "d": (1, 65536, "an embedding dimension"),
    "max_epochs": (1, 100_000, "a number of epochs"),
    "limit_items": (1, None, "a number of questions"),
    "seed": (0, 2**32 - 1, "a seed"),
    "draws": (2, 1_000_000, "a number of posterior draws (two or more: the sd needs two)"),
    "k": (1, None, "a number of questions"),
    "threads": (1, 1024, "a number of threads"),
    "search_budget": (0.0, None, "a number of seconds"),
}
DATASET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a folder right under $JEIRT_DATA
RANDOM_COLUMN = "random"  # `jeirt suggest`'s column (and `estimate`'s): 1 where a question was a random draw
INCLUSION_COLUMN = "inclusion_probability"  # `jeirt suggest`'s column: the chance the draw took the question


def _option(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _check_input_file(option: str, path: str) -> Path:
    """An input path must name an existing, readable regular file (not a folder, FIFO or device)."""
    p = Path(path).expanduser()
    if not str(path).strip():
        raise UsageError(f"{option} is empty; give a file.")
    if not os.path.exists(p):  # os.path: False, not an error, for a name too long to look up
        raise UsageError(f"{option} {path}: no such file; check the path.")
    if os.path.isdir(p):
        raise UsageError(f"{option} {path} is a folder; give a file.")
    if not os.path.isfile(p):
        raise UsageError(f"{option} {path} is not a regular file (a FIFO, socket or device); give a file.")
    if not os.access(p, os.R_OK):
        raise UsageError(f"{option} {path} cannot be read (permission denied).")
    return p


def _check_dataset_arg(option: str, name: str) -> None:
    """A dataset is 'embedllm', a folder name right under $JEIRT_DATA, or a results CSV file."""
    if name.endswith((".csv", ".csv.gz")) or os.sep in name or "/" in name:
        if not name.endswith((".csv", ".csv.gz")):
            raise UsageError(
                f"{option} {name!r}: a dataset is a name under $JEIRT_DATA ({settings.data_dir()}, "
                "see `jeirt data`) or a results CSV file (.csv or .csv.gz); a path to anything "
                "else is not read."
            )
        _check_input_file(option, name)
    elif not DATASET_NAME.match(name):
        raise UsageError(
            f"{option} {name!r} is not a dataset name; names are folders right under "
            f"$JEIRT_DATA ({settings.data_dir()}, see `jeirt data`) or 'embedllm'."
        )


def _check_environment() -> None:
    """The JEIRT_* variables that are set must say something usable (`settings.check_environment`)."""
    try:
        settings.check_environment()
    except ValueError as err:
        raise EnvironmentFailure(str(err)) from None


def _check_device(device: str | None) -> None:
    """--device (else $JEIRT_DEVICE) must parse as a torch device and be present on this machine; the
    advice names what this command takes (an option, or the variable)."""
    option = "--device"
    if device is None and os.environ.get("JEIRT_DEVICE"):
        device, option = os.environ["JEIRT_DEVICE"], "JEIRT_DEVICE"
    if device is None:
        return
    import torch

    cpu = "use --device cpu" if option == "--device" else "unset JEIRT_DEVICE or set JEIRT_DEVICE=cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise UsageError(f"{option} {device!r} is not a torch device; use cpu, cuda, cuda:0 or mps.") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise EnvironmentFailure(
            f"{option} {device}: this machine has no CUDA GPU that torch can use; "
            + (
                "leave --device out (it picks what is present) or use --device cpu."
                if option == "--device"
                else f"{cpu} (unset, jeirt picks what is present)."
            )
        )
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise EnvironmentFailure(f"{option} {device}: only {torch.cuda.device_count()} CUDA device(s) here.")
    if dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise EnvironmentFailure(f"{option} {device}: Apple MPS is not available here; {cpu}.")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise UsageError(f"{option} {device!r}: jeirt runs on cpu, cuda or mps.")


def _check_list(option: str, raw: Sequence[str] | str | None, *, allowed: Sequence[str] | None = None) -> list[str]:
    """A comma-separated / repeatable option's names: none empty, none twice (a run counted twice
    would weigh double), each in `allowed` when given."""
    values = [raw] if isinstance(raw, str) else list(raw or [])
    parts = [p.strip() for value in values for p in value.split(",")]
    shown = ",".join(values)
    if not parts or any(not p for p in parts):
        raise UsageError(
            f"{option} {shown!r}: an empty name; give comma-separated names, e.g. "
            f"{','.join(allowed[:2]) if allowed else 'a,b'}."
        )
    repeated = sorted({p for p in parts if parts.count(p) > 1})
    if repeated:
        raise UsageError(f"{option} {shown!r} names {repeated} more than once; give each once.")
    if allowed is not None:
        unknown = [p for p in parts if p not in allowed]
        if unknown:
            raise UsageError(f"{option} {unknown}: not known here; choose from {list(allowed)}.")
    return parts


def _check_options(args: argparse.Namespace) -> None:
    """Option values that need no file: ranges, lists, encoder and split names, output suffixes."""
    for dest, (low, high, what) in RANGES.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        if (
            (isinstance(value, float) and not math.isfinite(value))
            or value < low
            or (high is not None and value > high)
        ):
            allowed = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise UsageError(f"{_option(dest)} {value}: expected {what} {allowed}.")
    level = getattr(args, "level", None)
    if level is not None and not 0 < level < 1:
        raise UsageError(f"--level {level}: expected an interval level strictly between 0 and 1, e.g. 0.9.")
    seeds = getattr(args, "seeds", None)
    if seeds is not None:
        parts = _list([seeds])
        if not parts or not all(re.fullmatch(r"\d+", p) for p in parts):
            raise UsageError(f"--seeds {seeds!r}: expected comma-separated seeds >= 0, such as 0,1,2.")
        if len({int(p) for p in parts}) < len(parts):
            raise UsageError(f"--seeds {seeds!r} repeats a seed; a seed run twice would count twice. Give each once.")
    lam = getattr(args, "lam", None)
    if lam is not None and (not math.isfinite(lam) or lam < 0):
        raise UsageError(f"--lam {lam}: expected a finite number >= 0 (probability given up per USD).")
    if args.func is run_compare_command:
        from jeirt.tasks import compare

        split = args.split
        if not (split == "question" or re.fullmatch(r"known:\d+", split) or re.fullmatch(r"without:.+", split)):
            raise UsageError(f"--split {split!r}: expected 'question', 'without:<benchmark>' or 'known:<n>'.")
        catalogue = compare.KNOWN_QUESTION_METHODS if split.startswith("known:") else compare.METHODS
        _check_list("--methods", args.methods, allowed=list(catalogue) + list(compare.VARIANTS))
        _check_list("--dataset", args.dataset)
        if args.encoder is not None:
            _check_list("--encoder", args.encoder)
    encoders = getattr(args, "encoder", None)
    if encoders is not None:
        from jeirt.encoders import ENCODERS, canonical_name

        for name in _list([encoders] if isinstance(encoders, str) else encoders):
            if canonical_name(name) not in ENCODERS:
                raise UsageError(f"--encoder {name!r} is not known; use one of {sorted(ENCODERS)}.")
    if getattr(args, "models", None) is not None:
        _check_list("--models", args.models)
    if args.func is cmd_onboard and args.items and args.dataset:
        raise UsageError(
            "onboard: give --dataset (its item table has the questions) or --items (an item table "
            "of your own), not both."
        )
    if getattr(args, "in_place", False) and getattr(args, "out", None):
        raise UsageError("onboard: give either --out FILE (a new model) or --in-place (replace --model), not both.")
    if args.func is cmd_onboard and not args.in_place and args.out is None:
        raise UsageError(
            "onboard writes the extended model to a new file: give --out FILE, or --in-place to replace --model."
        )
    for dest in ("out", "json"):
        value = getattr(args, dest, None)
        if value is not None and not value.strip():
            raise UsageError(f"{_option(dest)} is empty; give a file name (or leave {_option(dest)} out).")
    suffix = OUT_SUFFIXES.get(args.func)
    if suffix and getattr(args, "out", None) and not args.out.endswith(suffix) and not os.path.isdir(args.out):
        raise UsageError(
            f"--out {args.out}: `jeirt {args.command}` writes a {suffix} file; give a name ending in {suffix}."
        )


def _outputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """(option, path) of every file the command will write."""
    outs = []
    for dest in ("out", "json"):
        value = getattr(args, dest, None)
        if value:
            outs.append((_option(dest), Path(value).expanduser()))
    if getattr(args, "func", None) is run_compare_command and args.out:
        outs.append(("--out (its .json)", Path(args.out).expanduser().with_suffix(".json")))
    if getattr(args, "in_place", False):
        outs.append(("--in-place (--model)", Path(args.model).expanduser()))
    return outs


def _check_outputs(args: argparse.Namespace, inputs: list[tuple[str, Path]]) -> None:
    """Every output passes `jeirt.files.check_output` (not an input, dataset, manifest or package file;
    an existing file only with --force; --in-place replaces --model by request) and no two are one file."""
    from jeirt.files import OutputRefused, check_output

    outs, targets = _outputs(args), []
    for option, path in outs:
        in_place = option.startswith("--in-place")
        try:
            target = check_output(
                path, reads=inputs, force=getattr(args, "force", False), replaces="--model" if in_place else None
            )
        except OutputRefused as err:
            hint = (
                " Or use --in-place to replace --model." if args.func is cmd_onboard and "--model" in str(err) else ""
            )
            raise OutputError(f"{option} {err}{hint}") from None
        for other, other_target in targets:
            if os.path.realpath(other_target) == os.path.realpath(target):
                raise OutputError(f"{option} and {other} are the same file {path}; give two names.")
        targets.append((option, target))


def validate(args: argparse.Namespace) -> None:
    """Check every argument of a parsed command line, before any data is loaded; raise the matching
    CLIError at the first problem."""
    _check_environment()
    _check_options(args)
    inputs = []
    for dest in INPUT_OPTIONS:
        value = getattr(args, dest, None)
        if value is not None:
            inputs.append((_option(dest), _check_input_file(_option(dest), value)))
    datasets = getattr(args, "dataset", None)
    for name in [datasets] if isinstance(datasets, str) else _list(datasets):
        if name == "verify" and args.func is cmd_data:
            continue
        _check_dataset_arg("--dataset", name)
        if name.endswith((".csv", ".csv.gz")):
            inputs.append(("--dataset", Path(name).expanduser()))
        else:  # every file of the dataset's folder is an input
            folder = settings.data_dir() / name
            inputs += [("--dataset", f) for f in folder.rglob("*") if f.is_file()] if folder.is_dir() else []
    _check_device(getattr(args, "device", None))
    _check_outputs(args, inputs)


def _load_model(path: str, quiet: bool = False):
    """JEIRT.load, its failures as ModelFileError naming the file and its warnings (a file without a
    weights checksum) as one line each on stderr; progress bars (encoding questions) unless `quiet`."""
    import warnings

    from jeirt.estimator import JEIRT

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            model = JEIRT.load(path)
    except (ValueError, KeyError, TypeError, RuntimeError, EOFError, OSError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        raise ModelFileError(f"--model: {message}") from err
    for warning in caught:
        print(f"warning: --model: {warning.message}", file=sys.stderr)
    model.progress = not quiet
    return model


def _read_csv(option: str, path: str, **kwargs) -> pd.DataFrame:
    """A user's CSV read by `jeirt.data.read_csv_table` (cells as text, names kept as written; keyword
    arguments go to it), its failures as DataError naming the option and the file."""
    from jeirt.data import read_csv_table

    try:
        return read_csv_table(path, **kwargs)
    except ValueError as err:
        raise DataError(f"{option} {err}") from None


def _write_csv(path: str | Path, table: pd.DataFrame, **kwargs) -> Path:
    """A table as CSV, atomically."""
    return write_text(path, table.to_csv(**kwargs))


def _dataset(name: str, limit_items: int | None = None, seed: int = 0):
    """Load a dataset by name or CSV path, optionally cut to a seeded per-benchmark item sample."""
    import pandas as pd

    from jeirt.data import load_dataset
    from jeirt.splits import sample_items

    try:
        ds = load_dataset(name)
    except ConnectionError as err:
        raise EnvironmentFailure(f"--dataset {name}: {err}") from err
    except FileNotFoundError as err:  # a name that names no dataset: like a path to no file
        raise UsageError(f"--dataset {name}: {err}") from err
    except (ValueError, KeyError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        raise DataError(f"--dataset {message}" if message.startswith(name) else f"--dataset {name}: {message}") from err
    if limit_items and ds.n_items > limit_items:
        ds = ds.subset(items=sample_items(ds.items["benchmark"].to_numpy(), limit_items, np.random.default_rng(seed)))
    return ds


def _emit(summary: dict, args: argparse.Namespace) -> None:
    """Print `summary` readably and write it to --json if given; a number that is undefined (NaN, e.g.
    an AUC of answers all of one class) prints as "undefined" and is null in the JSON."""
    from jeirt.files import finite_json

    summary = finite_json(summary)
    show = lambda v: "undefined" if v is None else f"{v:.4f}" if isinstance(v, float) else v
    for key, value in summary.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for k, v in value.items():
                print(f"  {k:<12} {show(v)}")
        else:
            print(f"{key:<14} {show(value)}")
    if getattr(args, "json", None):
        write_json(args.json, summary)


def _questions(path: str) -> pd.DataFrame:
    """A questions CSV (text, optionally item_id and benchmark) read by `jeirt.data.read_csv_table`: at
    least one row, no empty text, item_ids named and each once."""
    questions = _read_csv("--questions", path, required=("text",), unique=("item_id",))
    if questions.empty:
        raise DataError(f"--questions {path} has a header but no questions; add one row per question.")
    empty = questions["text"].str.strip() == ""
    if empty.any():
        raise DataError(
            f"--questions {path} has {int(empty.sum())} empty text cell(s) (first on data row "
            f"{int(np.flatnonzero(empty.to_numpy())[0]) + 1}); give every question its text."
        )
    return questions


def _check_texts(ds, model, option: str) -> None:
    """Refuse questions without text when the model's encoder has no precomputed features for them:
    encoding "" for each would score the wrong questions."""
    if model.encoder_ in ds.embeddings:
        return
    missing = int((ds.items["text"].astype(str).str.strip() == "").sum())
    if missing:
        raise DataError(
            f"{option} {ds.name}: {missing} of {ds.n_items} questions have no text and no precomputed "
            f"{model.encoder_} features; add a 'text' column (or give a dataset that has them)."
        )


def cmd_data(args: argparse.Namespace) -> None:
    """`jeirt data`: list the datasets; `jeirt data NAME`: describe one; `jeirt data verify`: check them."""
    from jeirt.data import local_datasets, verify_files

    if args.dataset is None:
        names = local_datasets()
        _emit({"data_dir": str(settings.data_dir()), "datasets": names + ["embedllm (hub)"]}, args)
        return
    if args.dataset == "verify":
        root = settings.data_dir()
        checked = verify_files(root, full=True)
        if not checked:
            raise ValueError(
                f"{root} has no checksum manifest (checksums.json) to verify against; the "
                "repository's data/ folder has one."
            )
        _emit({"data_dir": str(root), "verified": f"{len(checked)} files match checksums.json"}, args)
        return
    ds = _dataset(args.dataset)
    table = ds.describe()
    print(f"{ds.name}: {ds.n_models} models x {ds.n_items} items; embeddings: {sorted(ds.embeddings) or 'none'}")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if args.json:
        from jeirt.files import finite_json

        write_json(
            args.json,
            finite_json(
                {
                    "name": ds.name,
                    "models": ds.models,
                    "embeddings": sorted(ds.embeddings),
                    "benchmarks": table.to_dict("records"),
                }
            ),
        )


def _scores(model, ds, mask) -> dict:
    from jeirt.metrics import evaluate

    report = evaluate(model.predict_proba(ds), ds, mask)
    return report["overall"], report["per_benchmark"]


def cmd_fit(args: argparse.Namespace) -> None:
    from jeirt.estimator import JEIRT
    from jeirt.splits import default_split

    ds = _dataset(args.dataset, args.limit_items, args.seed)
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
        "corrections": _corrections(model),
    }
    if args.search:
        summary["search"] = {
            "tried": len(model.search_results_),
            "seconds": model.search_seconds_,
            "chosen": str(min(model.search_results_, key=lambda r: r["val_loss"])["change"] or "recipe"),
        }
    if args.out:
        summary["saved"] = str(model.save(args.out))
    _emit(summary, args)
    if args.per_benchmark:
        print(per_bench.to_string(float_format=lambda x: f"{x:.4f}"))


def _corrections(model) -> str:
    """The model's per-question corrections in a few words (`jeirt fit --corrections`)."""
    c = model.corrections_
    if c is None:
        return "none (fit --corrections adds them)"
    return (
        f"{len(c)} questions, from the known models' training answers (offset scale {c.offset_scale:.3g}, "
        f"shift scale {c.shift_scale:.3g})"
    )


def cmd_evaluate(args: argparse.Namespace) -> None:
    from jeirt.splits import default_split

    model = _load_model(args.model, args.quiet)
    ds = _dataset(args.dataset)
    if args.results:  # onboarded models' answers on the dataset's questions, scored on the split's test part
        from jeirt.data import from_long

        try:
            new = from_long(_read_csv("--results", args.results), ds.items, name=ds.name)
        except (ValueError, KeyError) as err:
            raise DataError(f"--results {args.results}: {err.args[0] if err.args else err}") from err
        new.embeddings, ds = ds.embeddings, new
    known = set(model.models_)
    unknown = [m for m in ds.models if m not in known]
    if unknown:
        raise DataError(
            f"the model does not know {len(unknown)} of the dataset's models "
            f"(e.g. {unknown[:3]}); add them with `jeirt onboard` first."
        )
    _check_texts(ds, model, "--dataset")
    mask = default_split(ds, seed=args.seed).test if args.part == "test" else ds.observed
    overall, per_bench = _scores(model, ds, mask)
    _emit(
        {
            "model": args.model,
            "dataset": ds.name,
            "part": args.part,
            "corrections": _corrections(model),
            "scores": overall,
        },
        args,
    )
    print(per_bench.to_string(float_format=lambda x: f"{x:.4f}"))


def cmd_predict(args: argparse.Namespace) -> None:
    import pandas as pd

    model = _load_model(args.model, args.quiet)
    questions = _questions(args.questions)
    ids = questions["item_id"] if "item_id" in questions.columns else pd.RangeIndex(len(questions))
    probs = model.predict_proba(questions["text"].astype(str).tolist())  # (n_models, n_questions)
    table = pd.DataFrame(probs.T, index=pd.Index(ids, name="item_id"), columns=model.models_)
    if args.out:
        _write_csv(args.out, table)
    best = table.idxmax(axis=1)
    summary = {
        "questions": len(table),
        "models": len(model.models_),
        "out": args.out,
        "mean_probability": float(probs.mean()),
        "most_likely_correct": best.value_counts().head(5).to_dict(),
    }
    _emit(summary, args)


def _validation_table(args: argparse.Namespace, table: pd.DataFrame) -> pd.DataFrame:
    """`jeirt onboard --validation`: the new models' answers held out of the fit, each of a model in
    --results and none an answer --results already gives."""
    from jeirt.data import read_results_table

    try:
        held = read_results_table(args.validation)
    except ValueError as err:
        raise DataError(f"--validation {err}") from None
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


def _answer_mask(ds, table: pd.DataFrame) -> np.ndarray:
    """(models, items) bool: the (model, item_id) pairs of `table` in `ds`."""
    import pandas as pd

    mask = np.zeros(ds.labels.shape, dtype=bool)
    columns = pd.Index(ds.items["item_id"]).get_indexer(table["item_id"].astype(str))
    mask[ds.model_index(table["model"].astype(str)), columns] = True
    return mask


def cmd_onboard(args: argparse.Namespace) -> None:
    """`jeirt onboard`: fit vectors for the new models of --results, everything else frozen; the questions
    come from --dataset, --items or the results' own columns."""
    import pandas as pd

    from jeirt.data import from_long, read_items_csv, read_results_table
    from jeirt.metrics import score

    model = _load_model(args.model, args.quiet)
    items, embeddings = None, {}
    if args.dataset:  # questions (and their precomputed embeddings) come from a known dataset
        base = _dataset(args.dataset)
        items, embeddings = base.items, base.embeddings
    elif args.items:
        try:
            items = read_items_csv(args.items)
        except ValueError as err:
            raise DataError(f"--items {err}") from None
    try:
        table = read_results_table(args.results)
    except ValueError as err:
        raise DataError(f"--results {err}") from None
    held = _validation_table(args, table) if args.validation else None
    answers = table if held is None else pd.concat([table, held])
    try:
        new = from_long(answers, items, name=Path(args.results).stem, duplicates=args.duplicates)
    except (ValueError, KeyError) as err:
        raise DataError(f"--results {args.results}: {err.args[0] if err.args else err}") from err
    # With --validation, the prior's width on those answers and the vectors on --results alone.
    val_mask = None if held is None else _answer_mask(new, held)
    fit_mask = new.observed if held is None else new.observed & ~val_mask
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
        "prior_scale": model.onboard_prior_scale_,
        "fit_on_own_labels": fit,
    }
    if val_mask is not None:
        summary["validation_labels"] = int(val_mask.sum())
        summary["fit_on_validation"] = score(probs[val_mask], new.labels[val_mask])
    if not np.isfinite(fit.get("auc", 0.0)):
        summary["note"] = "auc is undefined: the labels are all of one class (null in --json)"
    summary["saved"] = str(args.model if args.in_place else args.out)
    model.save(args.model if args.in_place else args.out)  # atomic: a kill leaves the old file
    _emit(summary, args)


def cmd_route(args: argparse.Namespace) -> None:
    """Route each question to the model with the largest P(correct) - lam * cost (jeirt.tasks.routing)."""
    import pandas as pd

    from jeirt.tasks import routing

    model = _load_model(args.model, args.quiet)
    questions = _questions(args.questions)
    costs = routing.question_costs(routing.read_prices(args.prices), model.models_)  # USD per 1,000 questions
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
        _write_csv(args.out, table, index=False)
    print(table.head(20).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    _emit(
        {
            "questions": len(table),
            "lam": args.lam,
            "out": args.out,
            "mean_p_correct": float(table["p_correct"].mean()),
            "mean_usd_per_1k_questions": float(table["usd_per_1k_questions"].mean()),
            "routed_to": table["model"].value_counts().head(5).to_dict(),
        },
        args,
    )


# ----------------------------------------------------------------------------------------------------
# `jeirt estimate` and `jeirt suggest`: a new model's scores from a few questions


def _bank_and_answers(args: argparse.Namespace) -> tuple:
    """The dataset, its questions as a bank of the saved model, the models of the results CSV, their
    answers as a (n_new, n_items) label matrix aligned with the bank (NaN: not answered), and their
    inclusion probabilities (`jeirt suggest`'s column; None when the CSV has none)."""
    import pandas as pd

    from jeirt.data import LONG_COLUMNS
    from jeirt.tasks.evaluation import QuestionBank

    table = None
    if getattr(args, "results", None):  # read first: a bad file is named before any work
        table = _read_csv("--results", args.results, required=LONG_COLUMNS, numbers=("label",))
        if table.empty:
            raise DataError(
                f"--results {args.results} has a header but no answers; give one row per question "
                "asked (model,item_id,label), or leave --results out."
            )
        labels = pd.to_numeric(table["label"], errors="coerce")
        bad = (labels.isna() | ~labels.between(0, 1)).to_numpy()
        if bad.any():
            raise DataError(
                f"--results {args.results}: the label on data row {int(np.flatnonzero(bad)[0]) + 1} is "
                f"{table['label'].iloc[int(np.flatnonzero(bad)[0])]!r}; every label must be a number "
                "in [0, 1]."
            )
        repeated = table.duplicated(["model", "item_id"], keep=False).to_numpy()
        if repeated.any():
            raise DataError(
                f"--results {args.results} repeats a (model, item_id) pair (data rows "
                f"{(np.flatnonzero(repeated) + 1)[:4].tolist()}); give one answer per question."
            )
    model = _load_model(args.model, getattr(args, "quiet", False))
    ds = _dataset(args.dataset)
    _check_texts(ds, model, "--dataset")
    bank = QuestionBank.from_model(model, ds, prior=args.prior)
    if table is None:
        return ds, bank, [], np.full((1, ds.n_items), np.nan), None
    unknown = sorted(set(table["item_id"]) - set(bank.item_ids))
    if unknown:
        raise DataError(
            f"--results {args.results}: {len(unknown)} item_id(s) are not questions of {ds.name!r}, e.g. {unknown[:5]}."
        )
    models = list(pd.unique(table["model"]))
    fitted = set(model.models_)
    known = [m for m in models if m in fitted]
    if known:
        print(
            f"warning: --results: {len(known)} model(s) have the name of a model {args.model} already knows "
            f"({known[:3]}); they are scored as new models from these answers alone.",
            file=sys.stderr,
        )
    matrix = np.full((len(models), bank.n_items), np.nan)
    at = (pd.Index(models).get_indexer(table["model"]), pd.Index(bank.item_ids).get_indexer(table["item_id"]))
    matrix[at] = labels.to_numpy(np.float64)
    drawn = None  # which answers were random draws (`jeirt suggest`'s column), when the CSV says
    if RANDOM_COLUMN in table.columns:
        flags = table[RANDOM_COLUMN].astype(str).str.strip()
        bad = ~flags.isin(["0", "1"]).to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"--results {args.results}: the {RANDOM_COLUMN!r} cell on data row {row + 1} is "
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
                f"--results {args.results}: the {INCLUSION_COLUMN!r} cell on data row {row + 1} is "
                f"{table[INCLUSION_COLUMN].iloc[row]!r}; it must be a number in (0, 1] as `jeirt suggest` "
                "wrote it (1: a pick by choice)."
            )
        inclusion = np.zeros(matrix.shape)
        inclusion[at] = values.to_numpy(np.float64)
    elif drawn is not None and (~drawn[~np.isnan(matrix)]).any():
        raise DataError(
            f"--results {args.results} has picks by choice ({RANDOM_COLUMN} = 0: an adaptive or kmeans rule) "
            f"but no {INCLUSION_COLUMN!r} column, so the estimate cannot tell what the random draws stand "
            f"for; keep `jeirt suggest`'s {INCLUSION_COLUMN} column beside the answers (1 for a pick by "
            "choice, the draw's share of the questions it was drawn from for a random draw)."
        )
    return ds, bank, models, matrix, inclusion


def cmd_estimate(args: argparse.Namespace) -> None:
    """`jeirt estimate`: a new model's accuracy on every question of a dataset from a few answers, the
    design-based estimate reported (`score_new_models`), the model-based one beside it."""
    from jeirt.tasks.evaluation import score_new_models

    ds, bank, models, labels, inclusion = _bank_and_answers(args)
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
        print(
            block[["group", "items", "asked", "sampled", *shown]].to_string(
                index=False, float_format=lambda x: f"{x:.3f}"
            )
        )
    if args.json:
        write_json(args.json, summary)


def cmd_suggest(args: argparse.Namespace) -> None:
    """`jeirt suggest`: which k questions each new model should answer next (the models of --results,
    then the names of --models), chosen by `jeirt.tasks.evaluation.suggest_questions`; the output's
    `random` and `inclusion_probability` columns are what `jeirt estimate` needs."""
    import pandas as pd

    from jeirt.tasks.evaluation import suggest_questions

    ds, bank, models, labels, inclusion = _bank_and_answers(args)
    drawn = None if inclusion is None else inclusion < 1
    extra = [m for m in _list([args.models]) if m not in models] if args.models else []
    if extra:
        labels = np.vstack([labels[: len(models)], np.full((len(extra), bank.n_items), np.nan)])
        drawn = None if drawn is None else np.vstack([drawn, np.zeros((len(extra), bank.n_items), dtype=bool)])
        models = models + extra
    models = models or ["new-model"]
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
        _write_csv(args.out, table, index=False)
    summary = {
        "dataset": ds.name,
        "rule": args.rule,
        "k": args.k,
        "models": len(models),
        "already_answered": int((~np.isnan(labels)).sum()),
        "random_draws": int(random.sum()),
        "per_benchmark": table.groupby("benchmark").size().floordiv(len(models)).to_dict(),
        "out": args.out,
        "item_ids": {m: block["item_id"].tolist() for m, block in table.groupby("model", sort=False)},
    }
    _emit({k: v for k, v in summary.items() if k != "item_ids"}, args)
    if args.json:
        write_json(args.json, summary)


def add_evaluation_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Add `estimate` and `suggest` to the `jeirt` command's subparsers."""
    from jeirt.tasks import PRIORS, RULES

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", required=True, help="a model saved by `jeirt fit` (.pt)")
        p.add_argument(
            "--dataset",
            required=True,
            help="the questions: a dataset name or results CSV; their "
            "texts or precomputed embeddings place them in the model's geometry",
        )
        p.add_argument(
            "--prior",
            choices=PRIORS,
            default="full",
            help="prior on the new model's vector, from the saved model's vectors (default full)",
        )
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--json", help="also write the summary to this JSON file")
        p.add_argument("--quiet", action="store_true", help="no progress bars")

    text = "estimate a new model's accuracy overall and per benchmark from its answers to a few questions"
    p = subparsers.add_parser(
        "estimate",
        help=text,
        description=text + ". The estimate reported is design-based: the answers count as they are, the "
        "questions not asked get the model's predictions, corrected by the mean residual (answer minus "
        "prediction) of the questions drawn at random, weighted by their inclusion probabilities: unbiased "
        "whatever the model gets wrong about this new model, with a t interval from the residuals' spread. "
        "JE-IRT's model-based estimate is printed beside it (model_*): narrower, but biased where the model "
        "is off for this new model; it is reported only for a benchmark without the random draws for an "
        "interval (the source column says so). Safe rules: random and stratified (every answer a random "
        "draw); the adaptive rules' picks by choice only count as asked, their random half does the "
        "correcting, and on held-out model families they did not beat random (results/new_models_design.json).",
    )
    common(p)
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
    p.set_defaults(func=cmd_estimate)

    text = "choose which k questions a new model should answer next"
    p = subparsers.add_parser("suggest", help=text, description=text)
    common(p)
    p.add_argument("--k", type=int, required=True, help="how many questions to suggest")
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
    p.set_defaults(func=cmd_suggest)


# ----------------------------------------------------------------------------------------------------
# `jeirt compare`: every method side by side


def _list(values: Sequence[str] | None) -> list[str]:
    """Repeatable and comma-separated options flattened: ["a,b", "c"] -> ["a", "b", "c"]."""
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def add_compare_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `compare` to the `jeirt` command's subparsers."""
    from jeirt.tasks import METHOD_NAMES as METHODS
    from jeirt.tasks import VARIANT_NAMES as VARIANTS

    text = "fit every method on several seeds of a split and tabulate accuracy, AUC, Brier, ECE, fit time"
    p = subparsers.add_parser("compare", help=text, description=text)
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
        help="'question' (default), 'without:<benchmark>' or "
        "'known:<n>' (n new models onboarded onto questions the others answered)",
    )
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    p.add_argument(
        "--methods",
        default=",".join(METHODS),
        help=f"comma-separated subset of {','.join(METHODS)}; "
        f"variants beyond the paper, run only when named: {','.join(VARIANTS)}",
    )
    p.add_argument("--out", help="write the runs here (.csv; a .json with config and summary goes beside it)")
    p.add_argument("--json", help="also write the summary table to this JSON file")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's own)")
    p.add_argument(
        "--encode-missing",
        action="store_true",
        help="encode texts when a dataset has no precomputed embeddings (slow on a CPU)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_compare_command)
    return p


def run_compare_command(args: argparse.Namespace) -> int:
    """Run `jeirt compare` from parsed arguments; print the table and the margins of JE-IRT."""
    import torch

    from jeirt.tasks.compare import compare, format_table, margins, records, summarize

    seeds = [int(s) for s in _list([args.seeds])]  # checked by validate: whole numbers, each once
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    runs = compare(
        _list(args.dataset),
        _list(args.encoder) or ["all-MiniLM-L6-v2"],
        seeds,
        _list([args.methods]),
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
    if args.out:
        print(f"\nwrote {args.out} and {Path(args.out).with_suffix('.json')}")
    if args.json:
        write_json(args.json, {"config": runs.attrs["config"], "summary": records(summary)}, indent=1)
    return 0


# The suffix each command's --out takes (checked before any work: `_check_options`)
OUT_SUFFIXES = {
    cmd_fit: ".pt",
    cmd_onboard: ".pt",
    cmd_predict: ".csv",
    cmd_route: ".csv",
    cmd_suggest: ".csv",
    run_compare_command: ".csv",
}


class _StoreOnce(argparse._StoreAction):
    """argparse's `store`, refusing an option given twice in one command line (`--dataset a --dataset b`
    would otherwise keep the last without a word)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_given_once", set())
        if option_string is not None and self.dest in given:
            parser.error(f"{'/'.join(self.option_strings)} given twice; give it once.")
        given.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jeirt",
        description=__doc__.split("\n")[0],
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help="show the full traceback of any failure")
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)  # options every command takes, after its name too
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show the full traceback of any failure"
    )
    common.add_argument("--force", action="store_true", help="replace output files that exist")
    sub_parser = sub.add_parser

    def add_parser(name: str, **kwargs) -> argparse.ArgumentParser:
        kwargs.setdefault("epilog", EXIT_CODES)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        p = sub_parser(name, parents=[common], **kwargs)
        for key in (None, "store"):  # every single-value option of the command: given at most once
            p.register("action", key, _StoreOnce)
        return p

    sub.add_parser = add_parser  # compare, estimate, suggest get the common options too

    def add(name: str, func, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--json", help="also write the summary to this JSON file")
        p.add_argument("--quiet", action="store_true", help="no progress bars")
        p.set_defaults(func=func)
        return p

    p = add("data", cmd_data, "list the local datasets, describe one, or verify their checksums")
    p.add_argument(
        "dataset",
        nargs="?",
        help="dataset name or results CSV; 'verify' re-hashes every file listed in $JEIRT_DATA/checksums.json",
    )

    p = add(
        "fit",
        cmd_fit,
        "train JE-IRT and report test scores (on EmbedLLM's official split, else a seeded 80/10/10 question split)",
    )
    p.add_argument("--dataset", required=True, help="'embedllm', a folder under $JEIRT_DATA, or a results CSV")
    p.add_argument("--encoder", default="all-MiniLM-L6-v2")
    p.add_argument("--d", type=int, default=256, help="embedding dimension (default 256)")
    p.add_argument("--seed", type=int, default=0)
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
    p.add_argument("--no-calibrate", action="store_true", help="skip temperature scaling on the validation labels")
    p.add_argument("--limit-items", type=int, help="train on a seeded sample of this many questions")
    p.add_argument("--device", help="torch device (default: CUDA, MPS, CPU)")
    p.add_argument("--out", help="save the fitted model here (.pt)")
    p.add_argument("--per-benchmark", action="store_true", help="also print scores per benchmark")
    p.add_argument(
        "--corrections",
        action="store_true",
        help="also fit per-question corrections from the known models' training answers (the API's "
        "question_correction=True), saved in the model; `jeirt evaluate` shows them",
    )

    p = add("evaluate", cmd_evaluate, "score a saved model on a dataset")
    p.add_argument("--model", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument(
        "--part",
        choices=["test", "all"],
        default="test",
        help="the split's test part (default: the dataset's own split where it ships one, as EmbedLLM "
        "does, else the seeded question split) or every label",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the question split (unused with an official split)")
    p.add_argument(
        "--results",
        help="long CSV model,item_id,label of onboarded models' answers on the dataset's "
        "questions: score those models (on the split's test part: onboard them from the other "
        "questions' answers for an out-of-sample score)",
    )

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

    p = add("route", cmd_route, "send each new question to the model most likely right, net of lam x cost")
    p.add_argument("--model", required=True)
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

    add_compare_parser(sub)  # jeirt compare: every method side by side
    add_evaluation_parsers(sub)  # jeirt estimate / suggest: a new model's scores from few questions
    return parser


def _internal(err: BaseException) -> tuple[int, str]:
    """Exit code and message for an exception no check anticipated."""
    torch = sys.modules.get("torch")  # not imported: the failure cannot be torch's
    if isinstance(err, MemoryError) or (torch is not None and isinstance(err, torch.cuda.OutOfMemoryError)):
        return EnvironmentFailure.code, (
            f"out of memory ({type(err).__name__}); use a smaller --d, --limit-items, or a machine with more memory."
        )
    if isinstance(err, ConnectionError):
        return EnvironmentFailure.code, f"network: {err}"
    from jeirt.files import WriteError

    if isinstance(err, WriteError):  # an output that could not be written (disk full ...), named
        return OutputError.code, f"{err.strerror}."
    if isinstance(err, OSError) and err.errno is not None:  # disk full, permissions, cache folder ...
        return EnvironmentFailure.code, f"{err.strerror}: {err.filename or err}"
    if isinstance(err, (ValueError, KeyError)):  # the library's checks of the data it was given
        return DataError.code, str(err.args[0] if isinstance(err, KeyError) and err.args else err)
    return 1, (
        f"internal error ({type(err).__name__}: {err}); this is a bug in jeirt: rerun with --debug "
        "and report the traceback."
    )


def main(argv: list[str] | None = None) -> int:
    """Run one `jeirt` command; return its exit status (see EXIT_CODES) instead of raising."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: --help (0) or a usage error (2), already printed
        return int(exit_.code or 0)
    vars(args).pop("_given_once", None)  # _StoreOnce's record of the options given
    try:
        validate(args)
        result = args.func(args)
    except (KeyboardInterrupt, Exception) as err:
        if isinstance(err, KeyboardInterrupt) or interrupted():  # Ctrl-C, also when a library made it another error
            if args.debug:
                raise
            print(MESSAGE, file=sys.stderr)
            return INTERRUPTED
        if args.debug and not isinstance(err, CLIError):
            raise
        if args.debug:
            traceback.print_exc()
        code, message = (err.code, str(err)) if isinstance(err, CLIError) else _internal(err)
        print(f"error: {message}", file=sys.stderr)
        return code
    return int(result or 0)


if __name__ == "__main__":  # `python -m jeirt.cli`; the console script and `python -m jeirt` run jeirt.__main__
    sys.exit(main())
