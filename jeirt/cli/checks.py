"""The command line's one validation layer: every option and path is checked here, before any data is
loaded; the contents of a results CSV are judged by `jeirt.data` alone, when a command reads it.

Each command is a `Verb` (its handler, its own checks, the suffix its --out takes), stored on the parsed
arguments as `args.verb`. `validate` runs the checks every command shares over the options the parsed
command line holds (ranges, input files, datasets, the device, output files), then the verb's own.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from jeirt import params, settings
from jeirt.cli.errors import EnvironmentFailure, OutputError, UsageError
from jeirt.files import comma_list

INPUT_OPTIONS = ("model", "questions", "results", "validation", "items", "prices")  # paths a command reads
OUTPUT_OPTIONS = ("out", "json")  # paths a command writes
# Each numeric option and the library's declaration of the parameter it feeds (`jeirt.params`): its range
# is checked against that declaration, never one of the command line's own.
OPTION_PARAMS = {
    "d": params.JEIRT_PARAMS["d"],
    "search_budget": params.JEIRT_PARAMS["search_budget"],
    "max_epochs": params.TRAINING_PARAMS["max_epochs"],
    "limit_questions": params.SAMPLE_PARAMS["n"],
    "seed": params.SEED,
    "draws": params.SCORE_PARAMS["draws"],
    "level": params.SCORE_PARAMS["level"],
    "k": params.SUGGEST_PARAMS["k"],
    "lam": params.ROUTE_PARAMS["lam"],
    "threads": params.THREADS,
}
DATASET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a folder right under $JEIRT_DATA


def no_checks(args: argparse.Namespace) -> None:
    """A verb without checks of its own."""


def no_outputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """A verb that writes nothing beyond --out and --json."""
    return []


@dataclass(frozen=True)
class Verb:
    """One `jeirt` command: what runs it, what it checks beyond the shared checks, what it writes."""

    name: str
    run: Callable[[argparse.Namespace], int | None]  # the handler, after `validate`
    check: Callable[[argparse.Namespace], None] = no_checks  # the verb's own checks of its options
    out_suffix: str | None = None  # the suffix its --out takes (.pt, .csv), when it has one
    outputs: Callable[[argparse.Namespace], list[tuple[str, Path]]] = no_outputs  # files written beyond --out/--json


def option(dest: str) -> str:
    """The command-line spelling of an argparse destination: max_epochs -> --max-epochs."""
    return "--" + dest.replace("_", "-")


def names(values: Sequence[str] | str | None) -> list[str]:
    """Repeatable and comma-separated options flattened: ["a,b", "c"] -> ["a", "b", "c"]."""
    return [name for value in ([values] if isinstance(values, str) else values or []) for name in comma_list(value)]


def check_input_file(flag: str, path: str) -> Path:
    """An input path must name an existing, readable regular file (`jeirt.files.check_input`)."""
    from jeirt.files import InputRefused, check_input

    try:
        return check_input(path)
    except InputRefused as err:
        raise UsageError(f"{flag} {err}") from None


def check_dataset(flag: str, name: str) -> list[Path]:
    """A dataset is 'embedllm', a folder name right under $JEIRT_DATA, or a results CSV file (a name
    ending in one of `jeirt.data.CSV_SUFFIXES`, plain or compressed); returns the files it reads (which
    no output may replace). A path to anything else, or a file named as if it were a dataset, is refused."""
    from jeirt.data.csv_tables import CSV_SUFFIXES

    csv = " or ".join(CSV_SUFFIXES)
    if name.lower().endswith(CSV_SUFFIXES):
        return [check_input_file(flag, name)]
    named_file = os.path.isfile(name) and not (settings.data_dir() / name).is_dir()  # `data.csv.tar`, `results`
    if os.sep in name or "/" in name or named_file:
        raise UsageError(
            f"{flag} {name!r}: a dataset is a name under $JEIRT_DATA ({settings.data_dir()}, see `jeirt data`) "
            f"or a results CSV file ({csv}); a path to anything else is not read: give one of these."
        )
    if not DATASET_NAME.match(name):
        raise UsageError(
            f"{flag} {name!r} is not a dataset name; names are folders right under "
            f"$JEIRT_DATA ({settings.data_dir()}, see `jeirt data`) or 'embedllm': give one of them."
        )
    folder = settings.data_dir() / name  # every file of the dataset's folder is an input
    return [f for f in folder.rglob("*") if f.is_file()] if folder.is_dir() else []


def check_environment() -> None:
    """The JEIRT_* variables that are set must say something usable (`settings.check_environment`)."""
    try:
        settings.check_environment()
    except ValueError as err:
        raise EnvironmentFailure(str(err)) from None


def check_device(device: str | None) -> None:
    """--device (else $JEIRT_DEVICE) must parse as a torch device and be present on this machine; the
    advice names what this command takes (an option, or the variable)."""
    flag = "--device"
    if device is None and os.environ.get("JEIRT_DEVICE"):
        device, flag = os.environ["JEIRT_DEVICE"], "JEIRT_DEVICE"
    if device is None:
        return
    import torch

    cpu = "use --device cpu" if flag == "--device" else "unset JEIRT_DEVICE or set JEIRT_DEVICE=cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise UsageError(f"{flag} {device!r} is not a torch device; use cpu, cuda, cuda:0 or mps.") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise EnvironmentFailure(
            f"{flag} {device}: this machine has no CUDA GPU that torch can use; "
            + (
                "leave --device out (it picks what is present) or use --device cpu."
                if flag == "--device"
                else f"{cpu} (unset, jeirt picks what is present)."
            )
        )
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise EnvironmentFailure(f"{flag} {device}: only {torch.cuda.device_count()} CUDA device(s) here.")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise EnvironmentFailure(f"{flag} {device}: Apple MPS is not available here; {cpu}.")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise UsageError(f"{flag} {device!r}: jeirt runs on cpu, cuda or mps.")


def check_list(
    flag: str, raw: Sequence[str] | str | None, *, allowed: Sequence[str] | None = None, llms: bool = False
) -> list[str]:
    """A comma-separated / repeatable option's names: none empty, none twice (a run counted twice
    would weigh double), each in `allowed` when given. `llms`: the names are LLMs', spelt as names read
    from a file are (`jeirt.data.normal_name`: `café` typed in either Unicode form is one LLM)."""
    values = [raw] if isinstance(raw, str) else list(raw or [])
    parts = [p.strip() for value in values for p in value.split(",")]
    if llms:
        from jeirt.data import normal_name

        parts = [normal_name(p) for p in parts]
    shown = ",".join(values)
    if not parts or any(not p for p in parts):
        raise UsageError(
            f"{flag} {shown!r}: an empty name; give comma-separated names, e.g. "
            f"{','.join(allowed[:2]) if allowed else 'a,b'}."
        )
    repeated = sorted({p for p in parts if parts.count(p) > 1})
    if repeated:
        raise UsageError(f"{flag} {shown!r} names {repeated} more than once; give each once.")
    if allowed is not None:
        unknown = [p for p in parts if p not in allowed]
        if unknown:
            raise UsageError(f"{flag} {unknown}: not known here; choose from {list(allowed)}.")
    return parts


def check_encoders(values: Sequence[str] | str) -> None:
    """Every --encoder name is a registered encoder with weights (`jeirt.encoders.ENCODERS`); tfidf-svd,
    fitted on a corpus in Python, is not one the command line can build."""
    from jeirt.encoders import ENCODERS, canonical_name

    usable = sorted({spec.name for spec in ENCODERS.values() if spec.kind != "tfidf-svd"})
    for name in names(values):
        if canonical_name(name) not in ENCODERS:
            raise UsageError(f"--encoder {name!r} is not known; use one of {usable}.")
        if ENCODERS[canonical_name(name)].kind == "tfidf-svd":
            raise UsageError(
                f"--encoder {name!r} is fitted on a corpus of texts in Python (jeirt.encoders.TfidfSVDEncoder), "
                f"not by the command line; use one of {usable}."
            )


def _check_ranges(given: dict[str, object]) -> None:
    """Every numeric option the command line holds is inside the range the library declares for the
    parameter it feeds (`OPTION_PARAMS`)."""
    for dest, constraint in OPTION_PARAMS.items():
        value = given.get(dest)
        if value is not None and not constraint.admits(value):
            raise UsageError(f"{option(dest)} {value}: expected {constraint.describe()}.")


def _check_outputs(args: argparse.Namespace, given: dict[str, object], inputs: list[tuple[str, Path]]) -> None:
    """Every output passes `jeirt.files.check_output` (not an input, dataset, manifest or package file;
    an existing file only with --force; --in-place replaces --model by request) and no two are one file."""
    from jeirt.files import OutputRefused, check_output

    verb: Verb = args.verb
    outs = [(option(dest), Path(str(given[dest])).expanduser()) for dest in OUTPUT_OPTIONS if given.get(dest)]
    outs += verb.outputs(args)
    targets: list[tuple[str, Path]] = []
    for flag, path in outs:
        in_place = flag.startswith("--in-place")
        try:
            target = check_output(path, reads=inputs, force=args.force, replaces="--model" if in_place else None)
        except OutputRefused as err:
            hint = " Or use --in-place to replace --model." if verb.name == "onboard" and "--model" in str(err) else ""
            raise OutputError(f"{flag} {err}{hint}") from None
        for other, other_target in targets:
            if os.path.realpath(other_target) == os.path.realpath(target):
                raise OutputError(f"{flag} and {other} are the same file {path}; give two names.")
        targets.append((flag, target))


def validate(args: argparse.Namespace) -> None:
    """Check every argument of a parsed command line, before any data is loaded; raise the matching
    CLIError at the first problem."""
    verb: Verb = args.verb
    given = vars(args)  # the options this command has, as parsed
    check_environment()
    _check_ranges(given)
    for dest in OUTPUT_OPTIONS:
        value = given.get(dest)
        if isinstance(value, str) and not value.strip():
            raise UsageError(f"{option(dest)} is empty; give a file name (or leave {option(dest)} out).")
    out = given.get("out")
    if verb.out_suffix and isinstance(out, str) and not out.endswith(verb.out_suffix) and not os.path.isdir(out):
        raise UsageError(
            f"--out {out}: `jeirt {verb.name}` writes a {verb.out_suffix} file; "
            f"give a name ending in {verb.out_suffix}."
        )
    verb.check(args)
    inputs = [
        (option(dest), check_input_file(option(dest), str(given[dest])))
        for dest in INPUT_OPTIONS
        if given.get(dest) is not None
    ]
    raw = given.get("dataset")
    for name in names(raw if isinstance(raw, (str, list)) else None):
        inputs += [("--dataset", path) for path in check_dataset("--dataset", name)]
    device = given.get("device")
    check_device(device if isinstance(device, str) else None)
    _check_outputs(args, given, inputs)
