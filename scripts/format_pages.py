"""Format the code cells of the book's pages with `ruff format`, at the line length the site shows.

The pages (`book/*.md`) are MyST markdown notebooks (jupytext). Only the code of each
```` ```{code-cell} ```` block changes: the fence, the cell's options (`:tags:` lines or the `---`
YAML header), the markdown between cells and the front matter stay byte for byte as they are. The
code of a page's cells goes to ruff as one notebook (so IPython magics are understood), and each
cell's formatted code is written back in place. A page's first cell, `jeirt_book.SETUP_CELL`, is
left as it is: the library holds that text (tests/test_book.py and `jeirt_book.build_source` find
it by equality), so it is formatted there.

Line length 80 (`LINE_LENGTH`): the rendered code column of a 1280-pixel-wide window holds 88
characters (book/_static/custom.css); 80 keeps 8 spare, and is the rule tests/test_readable.py checks.

    python scripts/format_pages.py [--check] [PAGE.md or FOLDER ...]   (default: book/*.md)

`--check` changes nothing: it lists the cells that would change and exits 1 if there are any.
Exits 2 when ruff cannot parse a page's code (the error names the page).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from jeirt_book import SETUP_CELL

ROOT = Path(__file__).resolve().parents[1]
LINE_LENGTH = 80
FENCE = re.compile(r"^(`{3,})\{code-cell\}\s*(ipython3|python3?|ipython)?\s*$")
OPTION = re.compile(r"^:[\w-]+:")


@dataclass
class Cell:
    """One code cell of a page: its code is `lines[start:end]` of the page (without newlines)."""

    start: int
    end: int
    code: str
    line: int  # 1-based line of the cell's fence in the page


def code_cells(text: str) -> list[Cell]:
    """The Python code cells of a MyST page, in order (other languages' cells are left out)."""
    lines = text.split("\n")
    cells, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, fence_line = match.group(1), i
        python = match.group(2) is not None
        i += 1
        if i < len(lines) and lines[i] == "---":  # YAML options up to the next ---
            i += 1
            while i < len(lines) and lines[i] != "---":
                i += 1
            i += 1
        elif i < len(lines) and OPTION.match(lines[i]):  # :key: value options, then a blank line
            while i < len(lines) and OPTION.match(lines[i]):
                i += 1
            if i < len(lines) and lines[i] == "":
                i += 1
        start = i
        while i < len(lines) and lines[i].rstrip() != fence:
            i += 1
        if i == len(lines):
            raise ValueError(f"code cell at line {fence_line + 1} has no closing {fence}")
        if python:
            cells.append(Cell(start, i, "\n".join(lines[start:i]), fence_line + 1))
        i += 1
    return cells


def long_lines(text: str, limit: int = LINE_LENGTH) -> list[tuple[int, int]]:
    """(line number in the page, length) of every code-cell line of `text` longer than `limit`."""
    found = []
    for cell in code_cells(text):
        for k, line in enumerate(cell.code.split("\n")):
            if len(line) > limit:
                found.append((cell.start + k + 1, len(line)))
    return found


def ruff_format(codes: list[str], name: str, line_length: int = LINE_LENGTH) -> list[str]:
    """`codes` (one string per cell) formatted by ruff as the cells of one notebook."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        raise RuntimeError("ruff not found: .venv/bin/pip install ruff (it is in the dev extra)")
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "id": f"c{k}",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": code.splitlines(keepends=True),
            }
            for k, code in enumerate(codes)
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    stem = Path(name).stem.replace(" ", "_") or "page"
    result = subprocess.run(
        [ruff, "format", "--line-length", str(line_length), "--stdin-filename", f"{stem}.ipynb", "-"],
        input=json.dumps(notebook),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if result.returncode != 0:
        raise SyntaxError(f"ruff format failed on {name}: {result.stderr.strip()}")
    cells = json.loads(result.stdout)["cells"]
    return ["".join(cell["source"]).rstrip("\n") for cell in cells]


def format_page(text: str, name: str = "page", line_length: int = LINE_LENGTH) -> tuple[str, list[Cell]]:
    """`text` with every Python code cell formatted (but `SETUP_CELL`), and the cells that changed."""
    cells = [c for c in code_cells(text) if c.code.strip() != SETUP_CELL.strip()]
    if not cells:
        return text, []
    formatted = ruff_format([c.code for c in cells], name, line_length)
    lines = text.split("\n")
    changed = []
    for cell, code in reversed(list(zip(cells, formatted))):
        if code != cell.code:
            changed.append(cell)
            lines[cell.start : cell.end] = code.split("\n") if code else []
    return "\n".join(lines), changed[::-1]


def pages(paths: list[Path]) -> list[Path]:
    """The .md pages named by `paths` (files, or folders whose *.md files are taken); default book/."""
    found = []
    for path in paths or [ROOT / "book"]:
        found += sorted(path.glob("*.md")) if path.is_dir() else [path]
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="pages or folders (default: book/)")
    parser.add_argument(
        "--check", action="store_true", help="change nothing; list the cells that would change, exit 1 if any"
    )
    parser.add_argument("--line-length", type=int, default=LINE_LENGTH)
    args = parser.parse_args(argv)
    would_change = 0
    for page in pages(args.paths):
        text = page.read_text()
        try:
            new, changed = format_page(text, page.name, args.line_length)
        except (SyntaxError, ValueError) as error:
            print(f"format_pages: {page}: {error}", file=sys.stderr)
            return 2
        shown = page.resolve().relative_to(ROOT) if page.resolve().is_relative_to(ROOT) else page
        for cell in changed:
            print(f"format_pages: {shown}:{cell.line}: code cell " + ("would change" if args.check else "formatted"))
        would_change += len(changed)
        if not args.check and new != text:
            page.write_text(new)
    if args.check and would_change:
        print(f"format_pages: {would_change} cell(s) would change; run scripts/format_pages.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
