"""Record the size and SHA-256 of every dataset file under the data folder in its `checksums.json`,
the manifest `jeirt.data.verify_files` checks. For maintainers who change the shipped data on purpose
(data/README.md); the tests make manifests of their own folders with it.

    python scripts/write_manifest.py [FOLDER]   # default: $JEIRT_DATA, else data/
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from jeirt import settings
from jeirt.data import MANIFEST, local_datasets, sha256_file
from jeirt.files import atomic_write


def write_manifest(root: Path | None = None) -> Path:
    """Record size and SHA-256 of every dataset file under `root` in `root/checksums.json`."""
    root = Path(root) if root is not None else settings.data_dir()
    files = {
        p.relative_to(root).as_posix(): {"size": p.stat().st_size, "sha256": sha256_file(p)}
        for name in local_datasets(root)
        for p in sorted((root / name).rglob("*"))
        if p.is_file()
    }
    text = json.dumps({"files": files}, indent=1, sort_keys=True) + "\n"
    return atomic_write(root / MANIFEST, lambda f: f.write(text.encode()))


if __name__ == "__main__":
    print(write_manifest(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
