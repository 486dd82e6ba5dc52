"""How long each page, and each cell of it, of the last build took to run, from the execution cache.

    python scripts/page_times.py                       # table of the pages in _build/.jupyter_cache
    python scripts/page_times.py --cells 15            # and the 15 slowest cells of the whole book
    python scripts/page_times.py --json results/book_times_full_mmlu_pro.json
    JEIRT_PROFILE=full python scripts/page_times.py --run book/onboarding.md --json results/x.json

`--run PAGE ...` executes those pages alone (jupytext + nbclient, in book/, with the current
settings and working tree), without a book build, and reports the same per-page and per-cell times:
how to time one slow page.

The JSON keeps the settings and machine of `_build/build_info.json` (written by build_book.py)
beside the per-page seconds (with the worker processes and CPU seconds each page had) and, for every
page, the seconds of each code cell with its first line (recorded by book/_ext/cell_timing.py), so a
measured build time is a file the book can show, not a number typed into prose, and the next slow
page is found by reading a file.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

from jupyter_cache import get_cache

from jeirt.files import write_json

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from cell_timing import cell_timings  # noqa: E402


def page_seconds(build: Path, field: str = "execution_seconds") -> dict[str, float]:
    """Seconds of execution per page (path relative to the repository root), in build order; with
    field="workers" the worker processes each page had, with field="cpu_seconds" its CPU seconds, its
    kernel's and their worker processes' (`build_book.py` records all three; NaN where not recorded)."""
    cache = build / ".jupyter_cache"
    if not cache.is_dir():
        raise SystemExit(f"no execution cache at {cache}; build the book first (python scripts/build_book.py).")
    root = build.parent.resolve()
    seconds = {}
    for record in sorted(get_cache(str(cache)).list_cache_records(), key=lambda r: r.created):
        page = Path(record.uri)
        name = page.relative_to(root).as_posix() if page.is_relative_to(root) else record.uri
        seconds[name] = round(float(record.data.get(field, float("nan"))), 1)
    return seconds


def _page_name(uri: str, root: Path) -> str:
    page = Path(uri)
    return page.relative_to(root).as_posix() if page.is_relative_to(root) else uri


def _label(source: str) -> str:
    """A cell's first line that is code, not a comment or a blank (else its first line), cut to 100."""
    lines = [ln.strip() for ln in source.splitlines() if ln.strip()]
    code = [ln for ln in lines if not ln.startswith("#")]
    return ((code or lines or [""])[0])[:100]


def cell_seconds(build: Path) -> dict[str, list[dict]]:
    """Per page, one entry per code cell in order: index (among the page's cells), seconds (None when
    the cell carries no timing: a build without book/_ext/cell_timing.py) and its first code line."""
    cache = build / ".jupyter_cache"
    root = build.parent.resolve()
    store = get_cache(str(cache))
    pages = {}
    for record in sorted(store.list_cache_records(), key=lambda r: r.created):
        pages[_page_name(record.uri, root)] = _cell_rows(store.get_cache_bundle(record.pk).nb)
    return pages


def run_pages(
    pages: list[Path], timeout: int = 3600
) -> tuple[dict[str, float], dict[str, float], dict[str, list[dict]]]:
    """Execute each page (a MyST markdown notebook) alone in book/; seconds and CPU seconds per page (as
    `build_book.py` counts them), seconds per cell."""
    import time

    import jupytext
    from build_book import children_cpu_seconds  # scripts/, beside this one
    from nbclient import NotebookClient

    seconds, cpu, cells = {}, {}, {}
    for page in pages:
        page = page.resolve()
        if not page.is_file():
            raise SystemExit(f"no page at {page}; give a book/*.md file.")
        nb = jupytext.read(page)
        start, used = time.perf_counter(), children_cpu_seconds()
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            record_timing=True,
            resources={"metadata": {"path": str(page.parent)}},
        ).execute()
        name = _page_name(str(page), ROOT)
        seconds[name] = round(time.perf_counter() - start, 1)
        cpu[name] = round(children_cpu_seconds() - used, 1)
        cells[name] = _cell_rows(nb)
        print(f"{seconds[name]:9.1f} s  {name}", flush=True)
    return seconds, cpu, cells


def _cell_rows(nb) -> list[dict]:
    rows = []
    timings = iter(cell_timings(nb))
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        timing = next(timings)
        start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        seconds = None
        if start and end:
            seconds = round(
                (
                    datetime.fromisoformat(end.replace("Z", "+00:00"))
                    - datetime.fromisoformat(start.replace("Z", "+00:00"))
                ).total_seconds(),
                2,
            )
        rows.append({"cell": i, "seconds": seconds, "code": _label(cell.source)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "_build", help="the build folder (default _build)")
    parser.add_argument("--json", type=Path, help="also write the times and the build's settings here")
    parser.add_argument("--cells", type=int, default=10, metavar="N", help="print the N slowest cells (default 10)")
    parser.add_argument(
        "--run", type=Path, nargs="+", metavar="PAGE", help="execute these pages alone (no book build) and time them"
    )
    args = parser.parse_args(argv)
    if args.cells < 0:
        parser.error(f"--cells {args.cells}: expected a number of cells, 0 or more.")
    build = args.build.resolve()
    if args.run:
        pages, cpu, cells = run_pages(args.run)
        from jeirt.settings import workers

        had = {page: workers() for page in pages}
    else:
        had = {page: int(n) for page, n in page_seconds(build, "workers").items() if n == n}  # NaN: not recorded
        cpu = {page: c for page, c in page_seconds(build, "cpu_seconds").items() if c == c}
        pages = page_seconds(build)
        for page, seconds in pages.items():
            print(f"{seconds:9.1f} s  {page}")
        cells = cell_seconds(build)
    print(f"{sum(pages.values()):9.1f} s  all pages")
    timed = sorted(
        (
            (c["seconds"], page, c["cell"], c["code"])
            for page, cs in cells.items()
            for c in cs
            if c["seconds"] is not None
        ),
        reverse=True,
    )
    if args.cells and timed:
        print(f"slowest {min(args.cells, len(timed))} cells:")
        for seconds, page, index, code in timed[: args.cells]:
            print(f"{seconds:9.1f} s  {page} cell {index}: {code}")
    elif args.cells:
        print("no per-cell times in this cache (book/_ext/cell_timing.py was not loaded when it was built)")
    if args.json:
        info_path = build / "build_info.json"
        info = json.loads(info_path.read_text()) if info_path.is_file() and not args.run else {}
        if args.run:  # what the pages ran with, as build_book.py records it for a build
            import os
            import platform

            from jeirt_book import page_settings

            info = {
                "pages_run_alone": [_page_name(str(p.resolve()), ROOT) for p in args.run],
                "settings": json.loads(json.dumps(page_settings().as_dict())),
                "cpu_cores": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "finished": datetime.now().astimezone().strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_json(
            args.json,
            {
                "build": info,
                "pages_seconds": pages,
                "pages_workers": had,
                "pages_cpu_seconds": cpu,
                "pages_total_seconds": round(sum(pages.values()), 1),
                "cells_seconds": cells,
            },
            indent=1,
        )
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
