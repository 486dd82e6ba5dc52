"""`jeirt`: fit, evaluate, predict with and extend a JE-IRT model from the shell.

    jeirt data                                    list local datasets ($JEIRT_DATA) and describe one
    jeirt fit --dataset mmlu_pro --out model.pt   train on a seeded question split, report test scores
    jeirt evaluate --model model.pt --dataset mmlu_pro
    jeirt predict --model model.pt --questions q.csv --out probs.csv
    jeirt onboard --model model.pt --results new.csv --out model2.pt
    jeirt route --model model.pt --questions q.csv [--prices p.csv] [--lam 0.0] [--out routes.csv]

Each command prints a short summary; `--json FILE` also writes it as JSON. Every argument is checked
before any work starts (`jeirt.cli.checks`); every file is written atomically (a kill leaves the old file
or the new one), never over an input, and over an existing file only with `--force`.

One module per group of commands, each with its parser, its checks and its handler: `datasets` (data),
`fitting` (fit, evaluate), `predicting` (predict, route), `onboarding` (onboard), `evaluation` (estimate,
suggest), `compare`; `errors` holds the exit codes, `checks` the checks every command shares, `common`
the options and file handling several commands share. This module builds the parser and runs a command.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import traceback
from typing import IO, Any, NoReturn

from jeirt import files
from jeirt.cli import compare, datasets, evaluation, fitting, onboarding, predicting
from jeirt.cli.checks import Verb, validate
from jeirt.cli.errors import (
    EXIT_CODES,
    CLIError,
    DataError,
    EnvironmentFailure,
    ModelError,
    OutputError,
    UsageError,
    internal,
)
from jeirt.interrupts import exit_code, interrupted, message

__all__ = [
    "EXIT_CODES",
    "CLIError",
    "DataError",
    "EnvironmentFailure",
    "ModelError",
    "OutputError",
    "UsageError",
    "build_parser",
    "main",
    "validate",
]

VERB_MODULES = (datasets, fitting, predicting, onboarding, compare, evaluation)  # in `jeirt --help`'s order


class _Parser(argparse.ArgumentParser):
    """argparse's parser, ending a usage error with the one line every jeirt failure ends with (argparse
    prints its usage block first, which buries what is wrong), saying where the options are listed."""

    def error(self, message: str) -> NoReturn:
        self.exit(UsageError.code, f"error: {message.rstrip('.')}; `{self.prog} --help` lists what it takes.\n")


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
    """The `jeirt` command and its verbs; each parsed command line holds its `Verb` as `args.verb`."""
    parser = _Parser(
        prog="jeirt",
        description=(__doc__ or "").split("\n")[0],
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help="show the full traceback of any failure")
    sub = parser.add_subparsers(dest="command", required=True)
    shared = _Parser(add_help=False)  # options every command takes, after its name too
    shared.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show the full traceback of any failure"
    )
    shared.add_argument("--force", action="store_true", help="replace output files that exist")

    def add(verb: Verb, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(
            verb.name,
            parents=[shared],
            help=help,
            description=help,
            epilog=EXIT_CODES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        for key in (None, "store"):  # every single-value option of the command: given at most once
            p.register("action", key, _StoreOnce)
        p.add_argument("--json", help="also write the summary to this JSON file")
        p.add_argument("--quiet", action="store_true", help="no progress lines")
        p.set_defaults(verb=verb)
        return p

    for module in VERB_MODULES:
        module.add_parsers(add)
    return parser


class _LogLines:
    """stderr when it is not a terminal (a log file, a pipe): a progress bar's redraws (after a carriage
    return, which a log shows as one endless line) become lines of their own, one every `every` seconds
    at most, and the bar's last state when it closes."""

    def __init__(self, stream: IO[str], every: float = 10.0):
        self.stream, self.every = stream, every
        self._shown = -math.inf  # when the last progress line was written
        self._pending: str | None = None  # the latest redraw not written yet
        self._in_bar = False

    def write(self, text: str) -> int:
        if "\r" in text:  # a redraw: its last state, as one line
            line = text.rsplit("\r", 1)[-1].rstrip()
            if line:
                self._in_bar, self._pending = True, line
                if time.monotonic() - self._shown >= self.every:
                    self._flush_pending()
            return len(text)
        self._flush_pending()
        if self._in_bar and text == "\n":  # the bar's own closing newline: its line already ended
            self._in_bar = False
            return len(text)
        self._in_bar = False
        return self.stream.write(text)

    def _flush_pending(self) -> None:
        if self._pending is not None:
            self.stream.write(self._pending + "\n")
            self._pending, self._shown = None, time.monotonic()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def main(argv: list[str] | None = None) -> int:
    """Run one `jeirt` command; return its exit status (see EXIT_CODES) instead of raising."""
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # named with the command's own help, not the top level's
            _Parser(prog=f"jeirt {args.command}").error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exit_:  # argparse: --help (0) or a usage error (2), already printed
        return int(exit_.code or 0)
    vars(args).pop("_given_once", None)  # _StoreOnce's record of the options given
    files.new_command()  # main may run several in one process
    stderr = sys.stderr
    if not stderr.isatty():  # progress as lines a log can show
        sys.stderr = _LogLines(stderr)
    try:
        validate(args)
        result = args.verb.run(args)
    except (KeyboardInterrupt, Exception) as err:
        if isinstance(err, KeyboardInterrupt) or interrupted():  # Ctrl-C, also when a library made it another error
            if args.debug:
                raise
            print(message(), file=sys.stderr)
            return exit_code()  # 130 for Ctrl-C, 143 for SIGTERM
        if args.debug and not isinstance(err, CLIError):
            raise
        if args.debug:
            traceback.print_exc()
        code, text = (err.code, str(err)) if isinstance(err, CLIError) else internal(err)
        print(f"error: {text}", file=sys.stderr)
        return code
    finally:
        if isinstance(sys.stderr, _LogLines):
            sys.stderr._flush_pending()
        sys.stderr = stderr
    return int(result or 0)
