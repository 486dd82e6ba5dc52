"""Build the book the way `make book` does: vendor MathJax, build with Jupyter Book, check the HTML.

1. `scripts/vendor_mathjax.py`: a pinned local MathJax, so pages typeset maths offline.
2. Clear the execution cache when what the pages compute with has changed. Jupyter Book's `cache`
   mode re-runs a page only when its code cells change; it does not notice a change to the
   `jeirt` package, to the `JEIRT_*` settings or to the data. A fingerprint of those is kept in
   `_build/.jupyter_cache/jeirt-fingerprint.json`; a different one empties the cache and
   rebuilds every page (`--all`).
3. `jupyter-book build . --path-output . -W --keep-going`: any warning (broken reference, missing
   citation, failing cell) fails the build, after reporting all of them.
4. Write `_build/build_info.json` (settings, seconds, machine) and run `scripts/check_html.py`.

    python scripts/build_book.py            # what `make book` runs
    python scripts/build_book.py --no-check # skip step 4's HTML check
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
CACHE = BUILD / ".jupyter_cache"
STAMP = CACHE / "jeirt-fingerprint.json"
sys.path.insert(0, str(ROOT / "scripts"))  # sibling scripts, not the package (that is installed)

import check_html  # noqa: E402
from jeirt.files import write_json  # noqa: E402
import vendor_mathjax  # noqa: E402


def fingerprint() -> dict:
    """What the pages' outputs depend on besides their own code."""
    from jeirt import settings as jsettings
    from jeirt.book import page_settings

    cfg = page_settings()
    code = hashlib.sha256()
    for path in sorted((ROOT / "jeirt").rglob("*.py")):
        code.update(path.relative_to(ROOT).as_posix().encode())
        code.update(path.read_bytes())
    data = hashlib.sha256()
    folder = jsettings.data_dir()
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if path.is_file() and "cache" not in path.relative_to(folder).parts:
            stat = path.stat()
            data.update(f"{path.relative_to(folder)}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    found = {"settings": cfg.as_dict(), "jeirt_code": code.hexdigest(),
             "data_dir": str(folder), "data_files": data.hexdigest()}
    return json.loads(json.dumps(found))  # tuples as lists, as they come back from the stamp file


def refresh_cache(current: dict) -> bool:
    """Empty the execution cache if the fingerprint changed; True if every page must be re-run."""
    previous = json.loads(STAMP.read_text()) if STAMP.is_file() else None
    stale = previous != current
    if stale and CACHE.exists():
        changed = sorted(k for k in current if previous is None or previous.get(k) != current[k])
        print(f"build_book: {', '.join(changed)} changed; clearing {CACHE.relative_to(ROOT)}")
        shutil.rmtree(CACHE)
    CACHE.mkdir(parents=True, exist_ok=True)
    write_json(STAMP, current, indent=1)
    return stale


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-check", action="store_true", help="skip scripts/check_html.py")
    args = parser.parse_args(argv)

    if os.environ.get("JEIRT_DATA"):  # notebooks run in book/: a relative path would break
        os.environ["JEIRT_DATA"] = str(Path(os.environ["JEIRT_DATA"]).resolve())
    vendor_mathjax.vendor()
    current = fingerprint()
    stale = refresh_cache(current)
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(ROOT), "--path-output", str(ROOT),
           "-W", "--keep-going"]
    if stale:  # Sphinx would otherwise keep pages whose source did not change, old outputs and all
        cmd.append("--all")
    print("build_book:", " ".join(cmd), flush=True)
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=ROOT)
    seconds = time.perf_counter() - start
    info = {"seconds": round(seconds, 1), "returncode": result.returncode,
            "settings": current["settings"], "cpu_cores": os.cpu_count(),
            "platform": platform.platform(), "python": platform.python_version(),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    write_json(BUILD / "build_info.json", info, indent=1)
    print(f"build_book: jupyter-book finished in {seconds:.0f} s with code {result.returncode}")
    if result.returncode != 0:
        # A failed page leaves partial state; force it to re-run next time.
        STAMP.unlink(missing_ok=True)
        return result.returncode
    return 0 if args.no_check else check_html.main(["--build", str(BUILD / "html")])


if __name__ == "__main__":
    sys.exit(main())
