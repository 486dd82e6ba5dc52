"""Files jeirt writes: all or nothing (`atomic_write`), and JSON that holds numpy numbers.

A reader, or a process killed half-way, sees either the old file or the whole new one: the bytes go
to a temporary file in the same folder, are flushed to disk, and replace the target in one step.
Temporary files left by a killed writer (`.tmp-<pid>-<uuid>-<name>`) are removed by the next write
into the same folder once their process is gone (`remove_stale_temporaries`).
"""
from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np

_TEMPORARY = re.compile(r"^\.tmp-(?:(\d+)-)?[0-9a-f]{32}-")  # .tmp-<pid>-<uuid>-<name>; older files lack the pid
STALE_SECONDS = 60.0  # a dead writer's temporary file is removed once it is this old
ABANDONED_SECONDS = 24 * 3600.0  # any temporary file this old is removed, whoever wrote it


def _alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (on Windows, where `os.kill` would end the
    process, every writer counts as running)."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:
        return False
    return True


def remove_stale_temporaries(folder: str | Path) -> list[Path]:
    """Delete the temporary files of writers that were killed before `os.replace`; return them.

    A file counts as stale when its writer's process is gone and it is older than `STALE_SECONDS`
    (or, whoever wrote it, older than `ABANDONED_SECONDS`); a running writer's file is otherwise left
    alone.
    """
    removed = []
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if not match:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            age = now - entry.stat(follow_symlinks=False).st_mtime
            pid = int(match.group(1)) if match.group(1) else None
            dead = pid is None or (pid != os.getpid() and not _alive(pid))
            if (dead and age > STALE_SECONDS) or age > ABANDONED_SECONDS:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:  # another process removed or replaced it first
            continue
    return removed


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Call `write(f)` on a temporary file beside `path`, fsync it, then `os.replace` it onto `path`.

    A kill at any moment leaves `path` as it was or whole and new, never partly written. The folder
    must exist; `path` must not be a folder.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give a file name to write to.")
    remove_stale_temporaries(path.parent)
    tmp = path.with_name(f".tmp-{os.getpid()}-{uuid.uuid4().hex}-{path.name}")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_folder(path.parent)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _fsync_folder(folder: Path) -> None:
    """Flush the folder entry too, so the rename itself survives a power cut (POSIX; a no-op elsewhere)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_text(path: str | Path, text: str) -> Path:
    """`text` as UTF-8, written atomically (CSV tables, reports)."""
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def json_number(value: object) -> object:
    """`json.dumps(default=...)`: numpy scalars as JSON numbers, anything else as its text."""
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)


def write_json(path: str | Path, blob: object, indent: int = 2) -> Path:
    """`blob` as strict JSON (NaN refused), written atomically."""
    text = json.dumps(blob, indent=indent, default=json_number, allow_nan=False)
    return write_text(path, text)


def comma_list(text: str) -> list[str]:
    """'a, b,c' -> ['a', 'b', 'c'] (empty items dropped): a command-line list."""
    return [item.strip() for item in text.split(",") if item.strip()]


def results_parser(doc: str, out: str, seeds: str = "0,1,2", datasets: str | None = None):
    """The options the scripts that write `results/` share: --encoder, --seeds (comma-separated
    integers), --out, and --datasets (comma-separated names) when given a default; `doc`'s first line
    describes the script."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    if datasets is not None:
        parser.add_argument("--datasets", type=comma_list, default=datasets)
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    parser.add_argument("--seeds", type=lambda text: [int(s) for s in comma_list(text)], default=seeds)
    parser.add_argument("--out", default=out)
    return parser


def run_record(script: str, argv: list[str] | None = None) -> dict:
    """Where a result file came from: the command that made it (`script` with `argv`, or this process's
    arguments), the jeirt, torch and Python versions, and the start time (UTC)."""
    import platform
    import shlex
    import sys
    from datetime import datetime, timezone

    import torch

    from jeirt import __version__

    args = sys.argv[1:] if argv is None else argv
    return {"command": f"python {script} " + shlex.join(args), "jeirt_version": __version__,
            "torch_version": torch.__version__, "python": platform.python_version(),
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
