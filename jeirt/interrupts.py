"""Ctrl-C on the command line: the exit status and the one line an interrupt ends `jeirt` with, and the
SIGINT handlers the console entry (`jeirt/__main__.py`) installs. Standard library only, so that the
entry can install them before anything else is imported."""

import os
import signal
import sys
import time

INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
MESSAGE = "interrupted; files being written were left as they were."
_received: list[float] = []  # when each SIGINT came while `raise_interrupt` was the handler
_written: list[str] = []  # the outputs the command wrote in full, in order (`wrote`)


def forget_written() -> None:
    """A new command starts (`jeirt.cli.main`, also when called several times in one process)."""
    _written.clear()


def wrote(path: str) -> None:
    """Note an output the command has written in full, so that an interrupt after it says so."""
    _written.append(path)


def message() -> str:
    """The one line an interrupt ends with: `MESSAGE`, naming the outputs already written when there are."""
    if not _written:
        return MESSAGE
    return (
        f"interrupted; {', '.join(_written)} had been written in full; any file still being written was left as it was."
    )


def interrupted() -> bool:
    """Whether Ctrl-C came while the console entry ran the command (never when `jeirt.cli.main` is
    called in-process): whatever exception the command then ends with, it was interrupted."""
    return bool(_received)


def raise_interrupt(signum: int, frame: object) -> None:
    """SIGINT while the command imports or works: note it (a library may turn the KeyboardInterrupt
    into another error, as numpy's import makes it an ImportError, or swallow it) and raise it."""
    _received.append(time.time())
    raise KeyboardInterrupt


def stop(signum: int | None = None, frame: object = None) -> None:
    """End the process now: exit 130 with one line, ignoring any further Ctrl-C meanwhile."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        sys.stderr.write(message() + "\n")
        sys.stderr.flush()
    finally:
        os._exit(INTERRUPTED)
