"""Compare two builds' claim rows: every row whose verdict moved category, and rows only one build has.

Each argument is a build's claims folder (what `make book` writes, `_build/claims/`) or a snapshot made
from one (`jeirt_book.verdicts.save_claims`, e.g. results/claims_full_mmlu_pro.json). Rows are matched
by page, claim, source and data (and their order where those repeat); a row's category is its
verdict's leading words (`verdicts.word`: holds, holds in direction, ...), so a moved number with the
same category is no move. Two builds of one commit under other CPU kernels or thread counts must give
the same category on every row: a row that moves is a row whose interval misses a noise source.

    python scripts/compare_claims.py results/claims_full_mmlu_pro.json _build/claims
    python scripts/compare_claims.py a.json b.json --all     # every row, moved or not

Exit status: 0 when every row has the same category in both, 1 when any moved or is in one build only,
2 for a file that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

KEY = ["page", "claim", "source", "data"]


def rows_of(path: Path) -> pd.DataFrame:
    """A build's claim rows (`verdicts.scorecard`), with each row's category and its place among rows
    of the same page, claim, source and data."""
    from jeirt_book import verdicts

    names = json.loads(path.read_text())["pages"] if path.is_file() else {p.stem for p in path.glob("*.json")}
    pages = {prefix: page for prefix, page in verdicts.PAGES.items() if prefix in names}
    if not pages:
        raise ValueError(f"{path} holds no page's claim rows")
    card = verdicts.scorecard(path, pages)  # a page one build lacks: its rows are in the other only
    card["category"] = card["verdict"].map(verdicts.word)
    card["repeat"] = card.groupby(KEY, sort=False).cumcount()
    return card


def compare(a: Path, b: Path) -> pd.DataFrame:
    """One row per claim row of either build: its key, both categories and verdicts ('' where a build
    lacks the row) and whether it moved (a category that differs, or a row in one build only)."""
    left, right = rows_of(a), rows_of(b)
    both = left.merge(right, on=[*KEY, "repeat"], how="outer", suffixes=(" a", " b"), sort=False)
    for side in ("a", "b"):
        both[[f"category {side}", f"verdict {side}", f"ours {side}"]] = both[
            [f"category {side}", f"verdict {side}", f"ours {side}"]
        ].fillna("")
    both["moved"] = both["category a"] != both["category b"]
    return both[[*KEY, "category a", "category b", "verdict a", "verdict b", "ours a", "ours b", "moved"]]


def report(table: pd.DataFrame, a: Path, b: Path, every: bool = False) -> str:
    """The comparison in words: a count line, then each moved row (old -> new, both numbers)."""
    moved = table[table["moved"]]
    lines = [f"A: {a}", f"B: {b}", f"{len(table)} rows, {len(moved)} moved category"]
    for _, r in (table if every else moved).iterrows():
        a_word, b_word = r["category a"] or "(no row)", r["category b"] or "(no row)"
        mark = "MOVED" if r["moved"] else "same"
        lines.append(f"{mark}: [{r['page']}] {r['claim']} | {r['data']}: {a_word} -> {b_word}")
        if r["moved"] or every:
            lines.append(f"    A: {r['verdict a']} | {r['ours a']}")
            lines.append(f"    B: {r['verdict b']} | {r['ours b']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("a", type=Path, help="a claims folder or snapshot (the reference build)")
    parser.add_argument("b", type=Path, help="the other build's claims folder or snapshot")
    parser.add_argument("--all", action="store_true", help="list every row, not only those that moved")
    args = parser.parse_args(argv)
    for path in (args.a, args.b):
        if not path.exists():
            print(f"error: {path} does not exist; give a claims folder or a snapshot of one.", file=sys.stderr)
            return 2
    try:
        table = compare(args.a, args.b)
    except (OSError, ValueError, KeyError) as err:
        print(f"error: cannot read the claim rows: {err}", file=sys.stderr)
        return 2
    print(report(table, args.a, args.b, every=args.all))
    return 1 if table["moved"].any() else 0


if __name__ == "__main__":
    sys.exit(main())
