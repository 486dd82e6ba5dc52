"""Every glued value and every figure of a built book, as one JSON file, to compare two builds.

Reads the executed notebooks of the execution cache `_build/.jupyter_cache/` (what `make book` leaves
behind; the copies in `_build/jupyter_execute/` lack the glue outputs) and writes,
per page, each `glue` name with its text, and the SHA-256 of each PNG in cell order. Two builds
computed the same book when their files are equal; `--compare OLD NEW` lists what differs.

    python scripts/glued_values.py --out results/glued_smoke.json
    python scripts/glued_values.py --compare before.json after.json
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
from pathlib import Path

from jeirt.files import write_text

ROOT = Path(__file__).resolve().parents[1]


def collect(build: Path) -> dict:
    """{page: {"glue": {name: text}, "figures": [sha256, ...]}} from the executed notebooks."""
    import sqlite3

    pages = {}
    cache = build / ".jupyter_cache"
    with sqlite3.connect(cache / "global.db") as db:
        rows = db.execute("SELECT uri, hashkey FROM nbcache").fetchall()
    for uri, key in sorted(rows):
        nb = json.loads((cache / "executed" / key / "base.ipynb").read_text())
        glue, figures = {}, []
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                scrapbook = out.get("metadata", {}).get("scrapbook", {})
                if "name" in scrapbook:  # a glue output: its data keys carry the mime prefix
                    text = data.get(scrapbook.get("mime_prefix", "") + "text/plain", data.get("text/plain", ""))
                    glue[scrapbook["name"]] = "".join(text)
                elif "image/png" in data:
                    figures.append(hashlib.sha256(base64.b64decode(data["image/png"])).hexdigest()[:16])
        pages[Path(uri).stem] = {"glue": glue, "figures": figures}
    if not pages:
        raise SystemExit(f"no executed notebooks in {cache}; run `make book` first.")
    return pages


def compare(old: dict, new: dict) -> list[str]:
    """Human-readable differences between two collections."""
    lines = []
    for page in sorted(set(old) | set(new)):
        a, b = old.get(page), new.get(page)
        if a is None or b is None:
            lines.append(f"{page}: only in {'new' if a is None else 'old'} build")
            continue
        for name in sorted(set(a["glue"]) | set(b["glue"])):
            if a["glue"].get(name) != b["glue"].get(name):
                lines.append(f"{page}: {name}: {a['glue'].get(name)!r} -> {b['glue'].get(name)!r}")
        if a["figures"] != b["figures"]:
            changed = sum(x != y for x, y in zip(a["figures"], b["figures"]))
            lines.append(f"{page}: figures differ ({len(a['figures'])} -> {len(b['figures'])}, {changed} changed)")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "_build", help="the build folder (default _build)")
    parser.add_argument("--out", type=Path, help="write the collection here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"), help="compare two collections")
    args = parser.parse_args(argv)
    if args.compare:
        old, new = (json.loads(p.read_text()) for p in args.compare)
        diff = compare(old, new)
        n_glue = sum(len(p["glue"]) for p in new.values())
        n_fig = sum(len(p["figures"]) for p in new.values())
        print("\n".join(diff) or f"identical: {len(new)} pages, {n_glue} glued values, {n_fig} figures")
        return 1 if diff else 0
    pages = collect(args.build)
    text = json.dumps(pages, indent=1, sort_keys=True)
    if args.out:
        write_text(args.out, text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
