"""Run one page of the book as a notebook, outputs included, into _build/pages/<page>.ipynb (`make page`).

The settings come from the environment as for the whole book (`jeirt_book`): JEIRT_PROFILE (a page on
its own defaults to smoke), JEIRT_DATASET, JEIRT_DEVICE, JEIRT_SEED. The kernel runs in book/, as the
build runs it, so the page reads what it reads there; a failing cell stops the run with its traceback.

    python scripts/run_page.py onboarding
    JEIRT_PROFILE=full JEIRT_DEVICE=cuda python scripts/run_page.py onboarding
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("page", help="a page of book/, by name (onboarding) or path (book/onboarding.md)")
    parser.add_argument("--out", help="the executed notebook (default _build/pages/<page>.ipynb)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds a cell may run (default 3600)")
    args = parser.parse_args(argv)
    page = ROOT / "book" / f"{Path(args.page).stem}.md"
    if not page.is_file():
        pages = sorted(p.stem for p in (ROOT / "book").glob("*.md") if p.read_text().startswith("---\njupytext:"))
        parser.error(f"no page {page.relative_to(ROOT)}; the pages are {', '.join(pages)}.")
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    from jeirt.files import write_text
    from jeirt_book import build_source

    notebook = jupytext.reads(build_source(page.read_text()), fmt="md:myst")
    out = Path(args.out) if args.out else ROOT / "_build" / "pages" / f"{page.stem}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"running {page.relative_to(ROOT)} ({len(notebook.cells)} cells) in book/ ...", file=sys.stderr)
    start = time.perf_counter()
    client = NotebookClient(
        notebook, timeout=args.timeout, kernel_name="python3", resources={"metadata": {"path": str(page.parent)}}
    )
    try:
        client.execute()
    finally:  # a failing page is written too, up to its failing cell
        write_text(out, nbformat.writes(notebook))
    print(f"wrote {out} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
