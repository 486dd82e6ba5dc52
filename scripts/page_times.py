"""How long each page of the last build took to run, from Jupyter Book's execution cache.

    python scripts/page_times.py                       # table of the pages in _build/.jupyter_cache
    python scripts/page_times.py --json results/book_times_full_mmlu_pro.json

The JSON keeps the settings and machine of `_build/build_info.json` (written by build_book.py)
beside the per-page seconds, so a measured build time is a file the book can show, not a number
typed into prose.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[1]


def page_seconds(build: Path) -> dict[str, float]:
    """Seconds of execution per page (path relative to the repository root), in build order."""
    cache = build / ".jupyter_cache"
    if not cache.is_dir():
        raise SystemExit(f"no execution cache at {cache}; build the book first (python scripts/build_book.py).")
    root = build.parent.resolve()
    seconds = {}
    for record in sorted(get_cache(str(cache)).list_cache_records(), key=lambda r: r.created):
        page = Path(record.uri)
        name = page.relative_to(root).as_posix() if page.is_relative_to(root) else record.uri
        seconds[name] = round(float(record.data.get("execution_seconds", float("nan"))), 1)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "_build", help="the build folder (default _build)")
    parser.add_argument("--json", type=Path, help="also write the times and the build's settings here")
    args = parser.parse_args(argv)
    build = args.build.resolve()
    pages = page_seconds(build)
    for page, seconds in pages.items():
        print(f"{seconds:9.1f} s  {page}")
    print(f"{sum(pages.values()):9.1f} s  all pages")
    if args.json:
        info_path = build / "build_info.json"
        info = json.loads(info_path.read_text()) if info_path.is_file() else {}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"build": info, "pages_seconds": pages,
                                         "pages_total_seconds": round(sum(pages.values()), 1)}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
