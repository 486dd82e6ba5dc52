"""Where jeirt finds data and writes its cache, read from the environment in one place.

`JEIRT_DATA`  folder with one sub-folder per local dataset (default: `data/` of the repository that
              this package was installed from; the datasets ship there, not in the wheel).
`JEIRT_CACHE` folder for encoder caches and downloads (default: `data/cache/` of this checkout when
              it is writable, else `~/.cache/jeirt`).
`JEIRT_DEVICE` torch device to use (default: CUDA, then MPS, then CPU).
`JEIRT_WORKERS` worker processes for independent fits and runs (default: one per CPU core, at most 2;
              the book build sets it to the cores left to each page it runs at the same time).
"""

from __future__ import annotations

import errno
import importlib
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported where a device is chosen: `jeirt --help` need not load it
    import torch

REPO_ROOT = Path(__file__).resolve().parents[1]  # the checkout, when jeirt runs from one
# The project's repository, where its datasets are: `JEIRT_REPO_URL`, set where the site is built for
# publishing (.github/workflows/publish.yml); else a placeholder, as the project is not published yet
# (the book then shows no launch buttons: `jeirt_book.repo_url`).
REPO_URL_PLACEHOLDER = "https://github.com/jeirt/jeirt"
REPO_URL = os.environ.get("JEIRT_REPO_URL", "").strip().rstrip("/") or REPO_URL_PLACEHOLDER


def _set(name: str) -> str | None:
    """The value of environment variable `name`, None when unset; set but empty (or only spaces) is an
    error naming it, never read as the current folder."""
    value = os.environ.get(name)
    if value is not None and not value.strip():
        raise ValueError(f"{name} is set but empty; unset it (jeirt then uses its default) or give it a value.")
    return value


def data_dir() -> Path:
    """The folder that holds local datasets (`JEIRT_DATA`)."""
    return Path(_set("JEIRT_DATA") or REPO_ROOT / "data").expanduser().resolve()


def cache_dir() -> Path:
    """A writable folder for caches (`JEIRT_CACHE`), created on first use; a failure names JEIRT_CACHE."""
    chosen = _set("JEIRT_CACHE")
    if chosen is not None:
        path = Path(chosen).expanduser()
        if path.exists() and not path.is_dir():
            raise NotADirectoryError(
                errno.ENOTDIR,
                "JEIRT_CACHE must name a folder (or a path to create one), not a file; point it elsewhere or unset it",
                str(path),
            )
    elif os.access(REPO_ROOT / "data", os.W_OK):
        path = REPO_ROOT / "data" / "cache"
    else:
        path = Path.home() / ".cache" / "jeirt"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        source = "JEIRT_CACHE" if chosen is not None else "the default cache folder (set JEIRT_CACHE to move it)"
        raise type(err)(
            err.errno,
            f"the cache folder cannot be created ({err.strerror}); it is {source}: "
            "point JEIRT_CACHE at a writable folder",
            str(path),
        ) from None
    return path.resolve()


def workers() -> int:
    """How many worker processes independent fits may use (`JEIRT_WORKERS`, else one per core, at most 2)."""
    chosen = _set("JEIRT_WORKERS")
    if chosen is None:
        return min(2, os.cpu_count() or 1)
    if not chosen.strip().isdigit() or int(chosen) < 1:
        raise ValueError(f"JEIRT_WORKERS={chosen!r}; expected a positive whole number of worker processes.")
    return int(chosen)


def device_name() -> str | None:
    """`JEIRT_DEVICE` as given (None when unset; empty is an error naming it)."""
    chosen = _set("JEIRT_DEVICE")
    return None if chosen is None else chosen.strip()


def check_environment() -> None:
    """ValueError naming the first JEIRT_* variable that is set to nothing usable: empty JEIRT_DATA,
    JEIRT_CACHE or JEIRT_DEVICE, a JEIRT_DATA or JEIRT_CACHE that names a file, a JEIRT_WORKERS that is no
    count."""
    data = data_dir()
    if _set("JEIRT_DATA") is not None and data.exists() and not data.is_dir():
        raise ValueError(
            f"JEIRT_DATA={os.environ['JEIRT_DATA']!r} names a file; it must name a folder with one sub-folder "
            "per dataset: point it at one or unset it (jeirt then uses the repository's data/)."
        )
    device_name()
    workers()
    chosen = _set("JEIRT_CACHE")
    if chosen is not None and Path(chosen).expanduser().exists() and not Path(chosen).expanduser().is_dir():
        raise ValueError(
            f"JEIRT_CACHE={chosen!r} names a file; it must name a folder (or a path to create one): "
            "point it elsewhere or unset it."
        )


def default_device() -> torch.device:
    """`JEIRT_DEVICE` if set, else the fastest device present: CUDA, then Apple MPS, then CPU."""
    import torch

    chosen = device_name()
    if chosen is not None:
        return torch.device(chosen)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def import_quietly(module: str, name: str) -> Any:  # Any: whatever `name` holds, as getattr gives it
    """`module.name` from a Hugging Face library, without tqdm's "IProgress not found" warning that
    their `tqdm.auto` import writes to stderr in a notebook without ipywidgets (the book fails such
    pages). The attribute is read inside the filter too: huggingface_hub imports submodules lazily."""
    from tqdm import TqdmWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TqdmWarning)
        return getattr(importlib.import_module(module), name)
