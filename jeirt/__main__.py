"""The `jeirt` console script and `python -m jeirt`: `jeirt.cli.main` with Ctrl-C and SIGTERM clean from
the first import to the last byte written (the one module above the CLI).

Only the standard library is imported before SIGINT is handled (`jeirt.interrupts`), so the window in
which Python's own traceback can appear is the interpreter's start-up (its `site` module) alone. From
then on an interrupt exits 130 (SIGTERM: 143, `jeirt.interrupts`) with one line on stderr, whenever it
comes:
- while the command's modules import or it works and writes: SIGINT raises KeyboardInterrupt as usual
  (the command's writes are atomic and remove their temporary file, see `jeirt.files.atomic_write`),
  and is also noted, since a library
  may turn it into another error or swallow it;
- once the output is written: the handler ends the process at once. The exit handlers run and the
  process ends with `os._exit`, so the interpreter's teardown of torch and the rest, where an interrupt
  used to print a traceback and exit 0, never starts.
"""

import atexit
import os
import signal
import sys

from jeirt.interrupts import SIGNALS, exit_code, interrupted, raise_interrupt, stop


def main() -> None:
    """Run one `jeirt` command (arguments from sys.argv) and end the process with its exit status."""
    for signum in SIGNALS:
        signal.signal(signum, raise_interrupt)
    try:
        from jeirt.cli import main as run_command  # the command's modules, imported under the handler

        code = run_command()  # an interrupt during the work: 130 after its one line
        for signum in SIGNALS:  # from here on an interrupt ends the process at once
            signal.signal(signum, stop)
        if interrupted() and code != exit_code():  # swallowed by a library on the way: not said yet
            stop()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:  # the reader (`| head`) has gone: nothing is left to say to it
            pass
    except BaseException:
        if not interrupted():  # a failure of the command line itself (the command's are caught there)
            raise
        if "--debug" in sys.argv[1:]:
            import traceback

            traceback.print_exc()
        stop()
    atexit._run_exitfuncs()  # what the interpreter's shutdown would run first, still under `stop`
    os._exit(code)


if __name__ == "__main__":
    main()
