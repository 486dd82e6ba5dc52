"""Local datasets: `$JEIRT_DATA/<name>/{items,responses}.csv.gz` and `embeddings/<encoder>.npz`, every
file checked against the folder's checksum manifest `$JEIRT_DATA/checksums.json` (`verify_files`), the
parsed results kept in the cache.
"""

from __future__ import annotations

import hashlib
import json
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd

from jeirt import settings
from jeirt.data.csv_tables import _DAMAGED, from_long, read_items_csv, read_results_table
from jeirt.data.dataset import Dataset
from jeirt.files import atomic_write

MANIFEST = "checksums.json"  # in the data folder: {"files": {relative path: {"size", "sha256"}}}


def local_datasets(root: Path | None = None) -> list[str]:
    """Names of the datasets present under `root` (default `$JEIRT_DATA`)."""
    root = Path(root) if root is not None else settings.data_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "responses.csv.gz").is_file())


def load_local(name: str, root: Path | None = None) -> Dataset:
    """Load `root/name` (default root `$JEIRT_DATA`) with its precomputed embeddings, checked by hash.

    Every file the folder's checksum manifest lists is checked first (`verify_files`), so a damaged or
    edited file is named before anything is computed from it.
    """
    root = Path(root) if root is not None else settings.data_dir()
    if Path(name).name != name or name in ("", ".", ".."):
        raise ValueError(
            f"dataset name {name!r} is not a folder name; give the name of a folder under "
            f"JEIRT_DATA ({root}), or a path to a results CSV."
        )
    folder = root / name
    if not (folder / "responses.csv.gz").is_file():
        raise FileNotFoundError(
            f"no dataset {name!r} under {root} (looked for {folder}/responses.csv.gz); datasets found there: "
            f"{local_datasets(root) or 'none'}. The datasets ship in the data/ folder of the jeirt "
            f"repository, not in the installed package: clone it (git clone {settings.REPO_URL}) and set "
            "JEIRT_DATA to its data/ folder, or to a folder of your own datasets."
        )
    verify_files(root, prefix=f"{name}/")
    ds = _parsed_results(folder / "responses.csv.gz", read_items_csv(folder / "items.csv.gz"), name)
    for path in sorted((folder / "embeddings").glob("*.npz")):
        ds.embeddings[path.stem] = _read_embeddings(path, ds.items)
    return ds


def _parsed_results(path: Path, items: pd.DataFrame, name: str) -> Dataset:
    """`from_long` of a local dataset's results file, kept parsed in the cache (`datasets/`): metabench's
    6.8 million rows take seconds to read and check, their label matrix milliseconds to load. The key is
    the file's SHA-256, the source of the `jeirt.data` modules that read it and pandas' version. An entry that cannot be read, or is not
    of these items, is parsed again and replaced, with a warning (a cache is never an input to fix)."""
    source = b"".join(p.read_bytes() for p in sorted(Path(__file__).parent.glob("*.py")))  # jeirt/data/
    key = hashlib.sha256(source + pd.__version__.encode() + sha256_file(path).encode())
    entry = settings.cache_dir() / "datasets" / f"{name}-{key.hexdigest()[:24]}.npz"
    if entry.is_file():
        try:
            with np.load(entry, allow_pickle=False) as npz:
                models, ids, labels = npz["models"].tolist(), npz["item_id"].tolist(), npz["labels"]
            if ids != items["item_id"].astype(str).tolist() or labels.shape != (len(models), len(ids)):
                raise ValueError("its questions are not the item table's")
            return Dataset(name=name, models=models, items=items, labels=labels)
        except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as err:
            warnings.warn(f"dataset cache entry {entry} is unreadable ({err}); parsing {path} again.", stacklevel=3)
    ds = from_long(read_results_table(path), items, name=name)
    arrays = {"models": np.array(ds.models, dtype=str), "item_id": ds.items["item_id"].to_numpy(dtype=str)}
    _write_cache(entry, lambda f: np.savez(f, **arrays, labels=ds.labels))
    for stale in entry.parent.iterdir():  # this dataset's entries of other code or files: never read again
        if stale != entry and stale.name[: -len(".npz") - 24] == f"{name}-" and stale.suffix == ".npz":
            stale.unlink(missing_ok=True)
    return ds


def _write_cache(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """`atomic_write` into the cache folder, a failure named as the environment's (JEIRT_CACHE) to fix."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, write)
    except OSError as err:
        raise OSError(
            err.errno,
            f"the cache file {path} cannot be written ({err.strerror or err}); point "
            "JEIRT_CACHE at a writable folder with free space",
            str(path),
        ) from err


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_files(root: Path | None = None, prefix: str = "", full: bool = False) -> list[str]:
    """Check the files of `root/checksums.json` (those whose path starts with `prefix`); their paths.

    Size first; the SHA-256 only when a file's size or modification time differs from when it last
    matched (remembered in the cache), or always with `full`. A folder without a manifest (your own
    datasets) is not checked. Raises ValueError naming the first bad file and how to restore it.
    """
    root = Path(root) if root is not None else settings.data_dir()
    manifest_path = root / MANIFEST
    if not manifest_path.is_file():
        return []
    restore_manifest = f"restore it with `git checkout -- {manifest_path}`"
    try:
        manifest = json.loads(manifest_path.read_text())["files"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
        raise ValueError(
            f"{manifest_path} is not a readable checksum manifest ({type(err).__name__}: {err}); {restore_manifest}."
        ) from None
    entry_ok = lambda e: (
        isinstance(e, dict)
        and isinstance(e.get("size"), int)
        and not isinstance(e["size"], bool)
        and isinstance(e.get("sha256"), str)
    )
    if not isinstance(manifest, dict) or not all(isinstance(k, str) and entry_ok(v) for k, v in manifest.items()):
        raise ValueError(
            f'{manifest_path}: \'files\' must map each relative path to {{"size": bytes, "sha256": '
            f"hex}}; it holds a {type(manifest).__name__} that does not; {restore_manifest}."
        )
    seen_path = settings.cache_dir() / "verified-data.json"
    try:
        seen = json.loads(seen_path.read_text()) if seen_path.is_file() else {}
    except ValueError:
        seen = {}  # a damaged record of past checks only costs a re-hash
    checked, changed = [], False
    for rel, want in sorted(manifest.items()):
        if not rel.startswith(prefix):
            continue
        path = root / rel
        restore = f"restore it with `git checkout -- {path}` (or a fresh clone of the repository)"
        if not path.is_file():
            raise ValueError(f"{path} is missing; {restore}.")
        stat = path.stat()
        if stat.st_size != want["size"]:
            raise ValueError(
                f"{path} has {stat.st_size} bytes where {MANIFEST} records {want['size']}: "
                f"the file is damaged or was edited; {restore}."
            )
        key, stamp = str(path.resolve()), [stat.st_size, stat.st_mtime_ns, want["sha256"]]
        if full or seen.get(key) != stamp:
            if sha256_file(path) != want["sha256"]:
                raise ValueError(
                    f"{path} does not match its SHA-256 in {manifest_path}: the file is damaged "
                    f"or was edited; {restore}."
                )
            seen[key], changed = stamp, True
        checked.append(rel)
    if changed:
        _write_cache(seen_path, lambda f: f.write(json.dumps(seen, indent=0).encode()))
    return checked


def _read_embeddings(path: Path, items: pd.DataFrame) -> np.ndarray:
    """Precomputed (n_items, dim) embeddings, refused unless item ids and text hashes match."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            ids, hashes, emb = npz["item_id"].astype(str), npz["text_sha256"].astype(str), npz["emb"]
    except KeyError as err:
        raise ValueError(
            f"{path} lacks the array {err}; expected item_id, text_sha256 and emb: re-create the embeddings."
        ) from None
    except (*_DAMAGED, ValueError) as err:
        raise ValueError(
            f"{path} could not be read: the file is damaged or cut short ({type(err).__name__}: "
            f"{err}); restore or re-create it."
        ) from None
    if len(ids) != len(items) or not np.array_equal(ids, items["item_id"].to_numpy(dtype=str)):
        raise ValueError(f"{path}: item ids differ from the item table; re-create the embeddings.")
    expected = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in items["text"]]
    stale = np.flatnonzero(hashes != np.asarray(expected))
    if len(stale):
        raise ValueError(
            f"{path}: {len(stale)} embeddings were computed from other texts than the "
            f"item table holds (e.g. item {ids[stale[0]]}); re-create the embeddings."
        )
    return emb.astype(np.float32)
