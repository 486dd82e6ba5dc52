"""Ctrl-C and SIGTERM on the command line: the exit status and the one line an interrupt ends `jeirt`
with, and the handlers the console entry (`jeirt/__main__.py`) installs. Standard library only, so that
the entry can install them before anything else is imported.

SIGTERM (`kill`, a supervisor, a batch system's time limit) is handled as Ctrl-C is: it raises
KeyboardInterrupt, so the atomic writer's `finally` removes its temporary file, and the process ends
with one line. Its exit status is 143 (128 + SIGTERM), what a shell, systemd or Kubernetes report for
a process ended by SIGTERM, so that whoever sent it sees its own signal rather than a Ctrl-C.
"""

import os
import signal
import sys
import time

INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
TERMINATED = 143  # 128 + SIGTERM
MESSAGE = "interrupted; files being written were left as they were."  # Ctrl-C before any output was written
SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: list[tuple[float, int]] = []  # (when, which signal) for each one while `raise_interrupt` handled it


def interrupted() -> bool:
    """Whether Ctrl-C or SIGTERM came while the console entry ran the command (never when
    `jeirt.cli.main` is called in-process): whatever exception the command then ends with, it was
    interrupted."""
    return bool(_received)


def _written() -> list[str]:
    """The outputs written in full so far (`jeirt.files.WRITTEN`), read without importing the core."""
    return list(getattr(sys.modules.get("jeirt.files"), "WRITTEN", []))


def exit_code() -> int:
    """The status an interrupted command ends with: 143 after SIGTERM, else 130."""
    return TERMINATED if any(signum == signal.SIGTERM for _, signum in _received) else INTERRUPTED


def message() -> str:
    """The one line an interrupted command ends with: which signal, and which outputs were already
    written in full (they stay: each was replaced whole) or that none was."""
    what = "terminated (SIGTERM)" if exit_code() == TERMINATED else "interrupted"
    written = _written()
    if not written:
        return f"{what}; files being written were left as they were."
    done = ", ".join(dict.fromkeys(written))
    return f"{what} after {done} had been written in full; any file still being written was left as it was."


def raise_interrupt(signum: int, frame: object) -> None:
    """SIGINT or SIGTERM while the command imports or works: note it (a library may turn the
    KeyboardInterrupt into another error, as numpy's import makes it an ImportError, or swallow it)
    and raise it."""
    _received.append((time.time(), signum))
    raise KeyboardInterrupt


def stop(signum: int | None = None, frame: object = None) -> None:
    """End the process now: exit 130 (143 after SIGTERM) with one line, ignoring further signals meanwhile."""
    for each in SIGNALS:
        signal.signal(each, signal.SIG_IGN)
    if signum is not None:
        _received.append((time.time(), signum))
    try:
        sys.stderr.write(message() + "\n")
        sys.stderr.flush()
    finally:
        os._exit(exit_code())
