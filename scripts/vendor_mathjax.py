"""Vendor MathJax 3 into `book/_static/mathjax/` so the book typesets maths with no CDN.

Sphinx's default `mathjax_path` is a jsdelivr URL; `_config.yml` points it at
`mathjax/tex-chtml.js` under the book's static folder instead, and this script puts the file there.
It fetches one pinned release with `npm pack` (the npm registry is reachable where CDNs are not),
checks the tarball's SHA-256, and copies the TeX-to-CHTML bundle with what it loads lazily:
fonts (`output/chtml/fonts/woff-v2`), TeX extensions (`\\require`, autoload), the menu and the
accessibility code. The result is git-ignored; `make setup` and `make book` run this script.

    python scripts/vendor_mathjax.py                  # npm pack mathjax@3.2.2, verify, copy
    MATHJAX_TGZ=/path/mathjax-3.2.2.tgz python ...    # use a tarball you already have
    python scripts/vendor_mathjax.py --force          # re-vendor even if the stamp matches
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from jeirt.data import (
    sha256_file,  # the package is installed before MathJax is vendored
)

# The one registered download: name, pinned version, checksum of the npm tarball.
PACKAGE = "mathjax"
VERSION = "3.2.2"
SHA256 = "1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"

ROOT = Path(__file__).resolve().parents[1]
DEST = ROOT / "book" / "_static" / "mathjax"
STAMP = DEST / "VERSION"

# What to keep from the tarball's `package/es5/`: the bundle and everything it may load later.
KEEP_FILES = ["tex-chtml.js", "startup.js", "loader.js", "core.js"]
KEEP_DIRS = ["input", "output/chtml", "ui", "a11y", "adaptors", "sre"]


def fetch(tmp: Path) -> Path:
    """The tarball: `$MATHJAX_TGZ` if set, else `npm pack mathjax@VERSION` into `tmp`."""
    if os.environ.get("MATHJAX_TGZ"):
        return Path(os.environ["MATHJAX_TGZ"]).expanduser()
    npm = shutil.which("npm")
    if npm is None:
        sys.exit(
            "vendor_mathjax: npm not found; install Node.js (apt-get install npm) "
            f"or set MATHJAX_TGZ to a copy of {PACKAGE}-{VERSION}.tgz"
        )
    subprocess.run(
        [npm, "pack", f"{PACKAGE}@{VERSION}", "--silent", "--pack-destination", str(tmp)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return tmp / f"{PACKAGE}-{VERSION}.tgz"


def wanted(member: str) -> str | None:
    """Path under DEST for a tarball member we keep, else None."""
    prefix = "package/es5/"
    if not member.startswith(prefix):
        return "LICENSE" if member == "package/LICENSE" else None
    rel = member[len(prefix) :]
    if rel in KEEP_FILES or any(rel.startswith(d + "/") for d in KEEP_DIRS):
        return rel
    return None


def vendor(force: bool = False) -> Path:
    if not force and STAMP.is_file() and STAMP.read_text().strip() == VERSION and (DEST / "tex-chtml.js").is_file():
        print(f"vendor_mathjax: {PACKAGE} {VERSION} already in {DEST.relative_to(ROOT)}")
        return DEST
    with tempfile.TemporaryDirectory() as tmp:
        tgz = fetch(Path(tmp))
        got = sha256_file(tgz)
        if got != SHA256:
            sys.exit(
                f"vendor_mathjax: {tgz} has SHA-256 {got}, expected {SHA256} ({PACKAGE} {VERSION}); refusing to use it"
            )
        if DEST.exists():
            shutil.rmtree(DEST)
        DEST.mkdir(parents=True)
        with tarfile.open(tgz, "r:gz") as tar:
            for member in tar.getmembers():
                rel = wanted(member.name)
                if rel is None or not member.isfile():
                    continue
                out = DEST / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(member) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    STAMP.write_text(VERSION + "\n")
    n = sum(1 for p in DEST.rglob("*") if p.is_file())
    print(f"vendor_mathjax: {PACKAGE} {VERSION} -> {DEST.relative_to(ROOT)} ({n} files)")
    return DEST


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="re-vendor even if already present")
    vendor(force=parser.parse_args().force)
