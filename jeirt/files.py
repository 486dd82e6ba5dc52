"""Files jeirt writes: all or nothing (`atomic_write`), and JSON that holds numpy numbers.

A reader, or a process killed half-way, sees either the old file or the whole new one: the bytes go
to a temporary file in the same folder, are flushed to disk, and replace the target in one step.
"""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Call `write(f)` on a temporary file beside `path`, fsync it, then `os.replace` it onto `path`."""
    path = Path(path)
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex}-{path.name}")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def json_number(value: object) -> object:
    """`json.dumps(default=...)`: numpy scalars as JSON numbers, anything else as its text."""
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)


def write_json(path: str | Path, blob: object, indent: int = 2) -> Path:
    """`blob` as strict JSON (NaN refused), written atomically."""
    text = json.dumps(blob, indent=indent, default=json_number, allow_nan=False)
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))
