"""Every glued value, verdict and figure of a built book, as one JSON file, to compare two builds; and
the check of a test run's glued values against a committed snapshot.

Reads the executed notebooks of the execution cache `_build/.jupyter_cache/` (what `make book` leaves
behind; the copies in `_build/jupyter_execute/` lack the glue outputs) and writes, per page, each
`glue` name with its text, the verdict column of its paper-vs-book table (`verdicts`, claim and
verdict, row by row) and the SHA-256 of each PNG in cell order. Two builds computed the same book when
their files are equal; `--compare OLD NEW` lists what differs.

`make test` runs every chapter under nbval in the smoke profile with `JEIRT_GLUE_LOG` set, so each page
writes what it glues there as it runs (`jeirt.book.glue`); `--check SNAPSHOT --log FOLDER` then holds
those values against the committed smoke snapshot: verdicts and words exactly, numbers within
`RTOL` / `ATOL`, glued times (`TIMES`) and figures (their bytes follow the matplotlib version) not at all.

    python scripts/glued_values.py --save        # after a build: results/glued_<profile>_<dataset>.json
    python scripts/glued_values.py --compare before.json after.json
    python scripts/glued_values.py --check results/glued_smoke_mmlu_pro.json --log _build/test-glue
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import re
import sys
from pathlib import Path

from jeirt.book import page_settings
from jeirt.files import write_text

ROOT = Path(__file__).resolve().parents[1]

# Numbers of a test run against the snapshot: |new - old| <= ATOL + RTOL * max(|new|, |old|). The smoke
# pages are seeded: run twice on one machine they agree to the last digit, but float sums in another
# order move a fit a little. The difficulty page run with 1 and with 2 torch threads (and 1 or 2 worker
# processes) glued 24 values, 23 identical and one, the mpnet fit's AUC, 0.67817 against 0.67814
# (4.8e-5 of itself); another CPU's BLAS kernels do the same. RTOL is 20 times that, and a tenth of a
# percent: 7 of the smoke slice's 9,867 test pairs (33 models x 299 questions) answered the other way.
# Verdicts and words are compared exactly, so a result that crosses a verdict's threshold is seen.
RTOL = 1e-3
ATOL = 1e-9
# Glued times (a name ending so) differ from run to run, and where a page read rows from (`_origin`:
# a build's other pages, or the committed snapshot when the page runs alone, as under the tests):
# checked for presence, not value.
TIMES = re.compile(r"_(s|seconds|minutes|speedup|origin)$")
# The settings a smoke snapshot is made with (a snapshot's build info overrides): a test run with others
# (JEIRT_DATASET=zeroeval make test) is not held against it.
SNAPSHOT_SETTINGS = {"profile": "smoke", "dataset": "mmlu_pro", "encoder": "all-MiniLM-L6-v2", "seed": 0}
NUMBER = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")


def verdicts_from_html(table: str) -> list[list[str]]:
    """[[claim, verdict], ...] from a paper-vs-book table's HTML (`jeirt.book.verdicts.show`)."""

    def cells(row: str, tag: str) -> list[str]:
        found = re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", row, re.DOTALL)
        return [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in found]

    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.DOTALL)
    if not rows:
        raise ValueError("no table rows in the paper-vs-book HTML")
    header = cells(rows[0], "th")
    if "claim" not in header or "verdict" not in header:
        raise ValueError(f"paper-vs-book table without claim and verdict columns: {header}")
    claim, verdict = header.index("claim"), header.index("verdict")
    return [[r[claim], r[verdict]] for r in (cells(row, "td") for row in rows[1:]) if r]


def collect(build: Path) -> dict:
    """{page: {"glue": {name: text}, "verdicts": {name: [[claim, verdict], ...]}, "figures": [sha256, ...]}}
    from the executed notebooks (for a page cached more than once, the latest)."""
    import sqlite3

    pages = {}
    cache = build / ".jupyter_cache"
    with sqlite3.connect(cache / "global.db") as db:
        rows = db.execute("SELECT uri, hashkey FROM nbcache ORDER BY created, pk").fetchall()
    for uri, key in rows:
        nb = json.loads((cache / "executed" / key / "base.ipynb").read_text())
        glue, verdicts, figures = {}, {}, []
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                scrapbook = out.get("metadata", {}).get("scrapbook", {})
                if "name" in scrapbook:  # a glue output: its data keys carry the mime prefix
                    prefix = scrapbook.get("mime_prefix", "")
                    text = data.get(prefix + "text/plain", data.get("text/plain", ""))
                    glue[scrapbook["name"]] = "".join(text)
                    if scrapbook["name"].endswith("_paper_vs_book"):
                        verdicts[scrapbook["name"]] = verdicts_from_html("".join(data[prefix + "text/html"]))
                elif "image/png" in data:
                    figures.append(hashlib.sha256(base64.b64decode(data["image/png"])).hexdigest()[:16])
        pages[Path(uri).stem] = {"glue": glue, "verdicts": verdicts, "figures": figures}
    if not pages:
        raise SystemExit(f"no executed notebooks in {cache}; run `make book` first.")
    return dict(sorted(pages.items()))


def compare(old: dict, new: dict) -> list[str]:
    """Human-readable differences between two collections."""
    lines = []
    for page in sorted(set(old) | set(new)):
        a, b = old.get(page), new.get(page)
        if a is None or b is None:
            lines.append(f"{page}: only in {'new' if a is None else 'old'} build")
            continue
        renamed = renames(
            {page: {n: t for n, t in a["glue"].items() if n not in b["glue"]}},
            {n: t for n, t in b["glue"].items() if n not in a["glue"]},
        )
        lines += [f"{page}: {old} -> {new}: renamed, the same value {b['glue'][new]!r}" for old, new in renamed.items()]
        for name in sorted(set(a["glue"]) | set(b["glue"])):
            if name in renamed or name in renamed.values():
                continue
            if a["glue"].get(name) != b["glue"].get(name):
                lines.append(f"{page}: {name}: {a['glue'].get(name)!r} -> {b['glue'].get(name)!r}")
        for name in sorted(set(a.get("verdicts", {})) | set(b.get("verdicts", {}))):
            for claim, was, now in _verdict_changes(a.get("verdicts", {}).get(name), b.get("verdicts", {}).get(name)):
                lines.append(f"{page}: {name}: {claim!r}: {was!r} -> {now!r}")
        if a["figures"] != b["figures"]:
            changed = sum(x != y for x, y in zip(a["figures"], b["figures"]))
            lines.append(f"{page}: figures differ ({len(a['figures'])} -> {len(b['figures'])}, {changed} changed)")
    return lines


def _verdict_changes(old: list | None, new: list | None) -> list[tuple[str, str | None, str | None]]:
    """(claim, old verdict, new verdict) for every row that differs, rows matched by claim."""
    old, new = dict(map(tuple, old or [])), dict(map(tuple, new or []))
    return [
        (claim, old.get(claim), new.get(claim))
        for claim in list(old) + [c for c in new if c not in old]
        if old.get(claim) != new.get(claim)
    ]


def close(old: str, new: str, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether two glued texts agree: the same words, and each number within the tolerances."""
    a, b = NUMBER.split(old), NUMBER.split(new)
    if len(a) != len(b):
        return False
    for i, (x, y) in enumerate(zip(a, b)):
        if i % 2 == 0:  # words between the numbers
            if x != y:
                return False
        elif abs(float(x) - float(y)) > atol + rtol * max(abs(float(x)), abs(float(y))):
            return False
    return True


def read_log(folder: Path) -> dict[str, dict]:
    """{name: {"text": ..., "html": ...}} that the pages wrote with `$JEIRT_GLUE_LOG` set."""
    records = {}
    for path in sorted(Path(folder).glob("*.json")):
        record = json.loads(path.read_text())
        records[record["name"]] = record
    return records


def check(snapshot: dict, logged: dict[str, dict], rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """What the logged values of a test run change against `snapshot` (a `collect`ion), for every page
    the run reached: moved numbers, changed words and verdicts, values gone or new (a new name with a
    page's prefix; other names, such as a unit test's, are no page's)."""
    page_of = {name: page for page, values in snapshot.items() for name in values["glue"]}
    prefixes = {name.split("_")[0] for name in page_of}  # each page's names start with its own prefix
    unknown = sorted(name for name in logged if name not in page_of and name.split("_")[0] in prefixes)
    reached = sorted(
        {page_of[name] for name in logged if name in page_of}
        | {page for page, values in snapshot.items() for name in unknown if name.split("_")[0] == _prefix(values)}
    )
    renamed = renames(
        {page: {n: t for n, t in v["glue"].items() if n not in logged} for page, v in snapshot.items()},
        {name: logged[name]["text"] for name in unknown},
    )
    lines = [f"{name}: new, not in the snapshot" for name in unknown if name not in renamed.values()]
    lines += [f"{old} -> {new}: renamed, the same value {logged[new]['text']!r}" for old, new in renamed.items()]
    for page in reached:
        values = snapshot[page]
        for name, old in sorted(values["glue"].items()):
            if name in renamed:
                continue
            if name not in logged:
                lines.append(f"{page}: {name}: not glued any more (was {old!r})")
            elif TIMES.search(name):
                continue
            elif name.endswith("_paper_vs_book"):
                now = verdicts_from_html(logged[name].get("html", ""))
                for claim, was, new in _verdict_changes(values.get("verdicts", {}).get(name), now):
                    lines.append(f"{page}: {name}: {claim!r}: {was!r} -> {new!r}")
            elif not close(old, logged[name]["text"], rtol, atol):
                lines.append(f"{page}: {name}: {old!r} -> {logged[name]['text']!r}")
    return lines


def _prefix(values: dict) -> str | None:
    """The prefix every glue name of a page starts with (`onb` for onboarding), None for a page without."""
    prefixes = {name.split("_")[0] for name in values["glue"]}
    return prefixes.pop() if len(prefixes) == 1 else None


def renames(gone: dict[str, dict[str, str]], new: dict[str, str]) -> dict[str, str]:
    """{old name: new name} for values glued under a new name: a name gone from a page paired with a new
    name of the same prefix whose text is the same (each used once; ambiguous pairs left unpaired)."""
    pairs = {}
    for values in gone.values():
        for old, text in values.items():
            same = [
                n
                for n, t in new.items()
                if t == text and n.split("_")[0] == old.split("_")[0] and n not in pairs.values()
            ]
            if len(same) == 1 and sum(t == text for t in values.values()) == 1:
                pairs[old] = same[0]
    return pairs


def pages_of(blob: dict) -> dict:
    """The pages of a saved collection: {"build": ..., "pages": {...}}, or the bare pages of older files."""
    return blob["pages"] if "pages" in blob else blob


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "_build", help="the build folder (default _build)")
    parser.add_argument("--out", type=Path, help="write the collection here")
    parser.add_argument(
        "--save",
        action="store_true",
        help="write the collection to results/glued_<profile>_<dataset>.json (the build's settings)",
    )
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"), help="compare two collections")
    parser.add_argument("--check", type=Path, metavar="SNAPSHOT", help="hold a test run's --log against SNAPSHOT")
    parser.add_argument("--log", type=Path, help="the folder a test run wrote its glued values to ($JEIRT_GLUE_LOG)")
    args = parser.parse_args(argv)
    if args.compare:
        old, new = (pages_of(json.loads(p.read_text())) for p in args.compare)
        diff = compare(old, new)
        n_glue = sum(len(p["glue"]) for p in new.values())
        n_fig = sum(len(p["figures"]) for p in new.values())
        print("\n".join(diff) or f"identical: {len(new)} pages, {n_glue} glued values, {n_fig} figures")
        return 1 if diff else 0
    if args.check:
        if args.log is None or not args.log.is_dir():
            parser.error(f"--check needs --log, the folder a test run wrote with JEIRT_GLUE_LOG set (got {args.log})")
        logged = read_log(args.log)
        if not logged:
            parser.error(f"--log {args.log} holds no glued values; run the chapters with JEIRT_GLUE_LOG={args.log}")
        snapshot = json.loads(args.check.read_text())
        made = {k: (snapshot.get("build") or {}).get("settings", {}).get(k, v) for k, v in SNAPSHOT_SETTINGS.items()}
        ran = {k: v for k, v in page_settings("smoke").as_dict().items() if k in made}
        if ran != made:
            print(f"glued values not checked: the chapters ran with {ran}, {args.check} holds {made}")
            return 0
        diff = check(pages_of(snapshot), logged)
        if diff:
            print(
                f"{len(diff)} glued value(s) differ from {args.check} (numbers allowed rtol={RTOL:g}, "
                f"atol={ATOL:g}):\n" + "\n".join(diff) + "\nIf the change is meant, regenerate the snapshot: "
                "JEIRT_PROFILE=smoke make book && .venv/bin/python scripts/glued_values.py --save"
            )
            return 1
        print(f"glued values match {args.check}: {len(logged)} values of the pages the tests ran")
        return 0
    info_file = args.build / "build_info.json"
    info = json.loads(info_file.read_text()) if info_file.is_file() else None
    out = args.out
    if args.save:
        if info is None or info.get("returncode") != 0:
            parser.error(f"--save needs a finished build ({info_file}); run `make book` first")
        settings = info["settings"]
        out = ROOT / "results" / f"glued_{settings['profile']}_{settings['dataset']}.json"
    text = json.dumps({"build": info, "pages": collect(args.build)}, indent=1, sort_keys=True)
    if out:
        write_text(out, text + "\n")
        print(f"glued_values: wrote {out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
