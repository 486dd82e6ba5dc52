"""The structure figures issue reviews quote: CLI lines per module, the longest functions of the library
(jeirt/) and of the book's package (book/jeirt_book/), how many run past 60 lines, and each page's code
lines, hidden (cells tagged remove-cell, remove-input, hide-input or hide-cell: out of sight until the
reader asks) and shown, with the shown share.

    python scripts/code_stats.py [ROOT]      (default: this repository)

Lines are counted as they stand in the source, blank lines and docstrings included (a function's
span from `def` to its last line, as `ast` gives it).
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

FENCE = re.compile(r"^(`{3,})\{code-cell\}")
HIDDEN_TAGS = ("remove-cell", "remove-input", "hide-input", "hide-cell")
LONG = 60


def function_lengths(package: Path) -> list[tuple[int, str]]:
    """(lines, 'module:qualified.name') for every function and method under `package`."""
    found: list[tuple[int, str]] = []
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package.parent).with_suffix("").as_posix().replace("/", ".")

        visit(ast.parse(path.read_text(encoding="utf-8")), f"{module}:", found)
    return sorted(found, reverse=True)


def visit(node: ast.AST, prefix: str, found: list[tuple[int, str]]) -> None:
    """Append (lines, prefix + name) for each function under `node`, methods and inner functions too."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{child.name}"
            found.append(((child.end_lineno or child.lineno) - child.lineno + 1, name))
            visit(child, f"{name}.", found)
        elif isinstance(child, ast.ClassDef):
            visit(child, f"{prefix}{child.name}.", found)


def page_code_lines(page: Path) -> tuple[int, int]:
    """(hidden, shown) code lines of a MyST page: lines inside code cells, the cell options excluded."""
    hidden = shown = 0
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        close = fence.group(1)
        i += 1
        tags, code = "", 0
        if i < len(lines) and lines[i].strip() == "---":  # YAML header of cell options
            i += 1
            while i < len(lines) and lines[i].strip() != "---":
                tags += lines[i]
                i += 1
            i += 1
        while i < len(lines) and lines[i].startswith(":") and re.match(r"^:[\w-]+:", lines[i]):
            tags += lines[i]
            i += 1
        while i < len(lines) and lines[i].rstrip() != close:
            code += bool(lines[i].strip())
            i += 1
        i += 1
        if any(tag in tags for tag in HIDDEN_TAGS):
            hidden += code
        else:
            shown += code
    return hidden, shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parents[1])
    root = parser.parse_args().root.resolve()

    print("CLI lines per module (jeirt/cli/):")
    cli = sorted((root / "jeirt" / "cli").glob("*.py"))
    for path in cli:
        print(f"  {len(path.read_text(encoding='utf-8').splitlines()):5d}  {path.name}")
    print(f"  {sum(len(p.read_text(encoding='utf-8').splitlines()) for p in cli):5d}  in all")

    for package in (root / "jeirt", root / "book" / "jeirt_book"):
        lengths = function_lengths(package)
        long = [(n, name) for n, name in lengths if n > LONG]
        print(f"\nFunctions of {package.name}: {len(lengths)}; over {LONG} lines: {len(long)}")
        for n, name in long or lengths[:5]:
            print(f"  {n:5d}  {name}")

    print("\nPage code lines (non-blank), hidden / shown:")
    total_hidden = total_shown = 0
    for page in sorted((root / "book").glob("*.md")):
        hidden, shown = page_code_lines(page)
        total_hidden, total_shown = total_hidden + hidden, total_shown + shown
        print(f"  {hidden:5d} / {shown:4d}  {page.name}")
    share = total_shown / max(total_hidden + total_shown, 1)
    print(f"  {total_hidden:5d} / {total_shown:4d}  in all: {share:.0%} of the pages' code is shown")


if __name__ == "__main__":
    main()
