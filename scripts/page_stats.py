"""What a reader of each page sees of its code: glue calls, shown, folded and removed code lines, the
longest shown cell, lines wider than the rendered column.

    python scripts/page_stats.py [--width 88] [--json FILE]

"shown" counts the lines of code cells a reader sees as they open the page, "folded" those behind a
click (hide-input, hide-cell), "removed" those not on the page at all (remove-cell, remove-input).
Used for issue notes; tests/test_readable.py holds the limits.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
REMOVED_TAGS = {"remove-cell", "remove-input"}
FOLDED_TAGS = {"hide-input", "hide-cell"}


def page_stats(path: Path, width: int = 88) -> dict:
    """The counts above for one book/*.md page."""
    nb = jupytext.read(path)
    shown = folded = removed = glues = longest = wide = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        lines = cell.source.splitlines()
        glues += len(re.findall(r"\bglue(?:_numbers)?\(", cell.source))
        tags = set(cell.metadata.get("tags", []))
        if REMOVED_TAGS & tags:
            removed += len(lines)
            continue
        if FOLDED_TAGS & tags:
            folded += len(lines)
        else:
            shown += len(lines)
            longest = max(longest, len(lines))
        wide += sum(len(line) > width for line in lines)
    return {
        "page": path.stem,
        "glue calls": glues,
        "shown lines": shown,
        "folded lines": folded,
        "removed lines": removed,
        "longest shown cell": longest,
        f"lines > {width}": wide,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=88)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = [
        page_stats(p, args.width)
        for p in sorted((ROOT / "book").glob("*.md"))
        if p.stem not in {"_template", "bibliography", "api"}
    ]
    keys = list(rows[0])
    print("  ".join(f"{k:>20}" if i else f"{k:<14}" for i, k in enumerate(keys)))
    for row in rows:
        print("  ".join(f"{row[k]:>20}" if i else f"{row[k]:<14}" for i, k in enumerate(keys)))
    total = {k: sum(r[k] for r in rows) for k in keys[1:]}
    print("  ".join([f"{'total':<14}"] + [f"{total[k]:>20}" for k in keys[1:]]))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
