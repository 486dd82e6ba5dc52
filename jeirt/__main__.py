"""The `jeirt` console script and `python -m jeirt`: `jeirt.cli.main` with Ctrl-C clean from the first
import to the last byte written.

Only the standard library is imported before SIGINT is handled, so the window in which Python's own
traceback can appear is the interpreter's start-up (its `site` module) alone. From then on an interrupt
exits 130 with one line on stderr, whenever it comes:
- while the command's modules import or it works and writes: SIGINT raises KeyboardInterrupt as usual
  (the command's writes are atomic, see `jeirt.files.atomic_write`), and is also noted, since a library
  may turn it into another error (numpy's import makes it an ImportError) or swallow it;
- once the output is written: the handler ends the process at once. The exit handlers run and the
  process ends with `os._exit`, so the interpreter's teardown of torch and the rest, where an interrupt
  used to print a traceback and exit 0, never starts.
"""
import atexit
import os
import signal
import sys

INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
MESSAGE = "interrupted; files being written were left as they were."
_interrupts = []  # the SIGINTs received while the command ran (their times): read by `interrupted`


def interrupted() -> bool:
    """Whether Ctrl-C came while the console script ran the command (never, when jeirt.cli.main is
    called in-process): whatever exception the command then ends with, it was interrupted."""
    return bool(_interrupts)


def _interrupt(signum: int, frame: object) -> None:
    """SIGINT while the command runs: note it and raise KeyboardInterrupt where the command is."""
    import time

    _interrupts.append(time.time())
    raise KeyboardInterrupt


def _stop(signum: int | None = None, frame: object = None) -> None:
    """End the process now: exit 130 with one line, ignoring any further Ctrl-C meanwhile."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        sys.stderr.write(MESSAGE + "\n")
        sys.stderr.flush()
    finally:
        os._exit(INTERRUPTED)


def main() -> None:
    """Run one `jeirt` command (arguments from sys.argv) and end the process with its exit status."""
    signal.signal(signal.SIGINT, _interrupt)
    try:
        from jeirt.cli import main as run_command  # the command's modules, imported under the handler

        code = run_command()  # an interrupt during the work: 130 after its one line
        signal.signal(signal.SIGINT, _stop)  # from here on an interrupt ends the process at once
        if code != INTERRUPTED and interrupted():  # swallowed by a library on the way
            _stop()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        if not interrupted():  # a failure of the command line itself (the command's are caught there)
            raise
        if "--debug" in sys.argv[1:]:
            import traceback

            traceback.print_exc()
        _stop()
    atexit._run_exitfuncs()  # what the interpreter's shutdown would run first, still under `_stop`
    os._exit(code)


if __name__ == "__main__":  # `python -m jeirt`: run as the module jeirt.cli imports, so they share one state
    from jeirt.__main__ import main as console

    console()
