"""Every glued value, verdict and figure of a built book, as one JSON file, to compare two builds; and
the check of a test run's glued values against a committed snapshot.

Reads the executed notebooks of the execution cache `_build/.jupyter_cache/` (what `make book` leaves
behind; the copies in `_build/jupyter_execute/` lack the glue outputs) and writes, per page, each
`glue` name with its text, the verdict column of its paper-vs-book table (`verdicts`, claim and
verdict, row by row) and the SHA-256 of each PNG in cell order. Two builds computed the same book when
their files are equal; `--compare OLD NEW` lists what differs.

`make test` runs every chapter under nbval in the smoke profile with `JEIRT_GLUE_LOG` set, so each page
writes what it glues there as it runs (`jeirt_book.glue`); `--check SNAPSHOT --log FOLDER` then holds
those values against the committed smoke snapshot: each verdict by its category word
(`jeirt_book.verdicts.VERDICTS`), other words exactly, each number within its own noise (the noise
file beside the snapshot, `noise_path`: `K` times its spread over seeds, at least `RTOL` / `ATOL`),
glued times (`TIMES`) and figures (their bytes follow the matplotlib version) not at all.
`--noise SNAPSHOT --log SEED1 --log SEED2 --seeds 1 2` writes that noise file from the glue logs of
the chapters run with other seeds (`make snapshot` makes the snapshot and its noise file together).

    python scripts/glued_values.py --save        # after a build: results/glued_<profile>_<dataset>.json
    python scripts/glued_values.py --compare before.json after.json
    python scripts/glued_values.py --check results/glued_smoke_mmlu_pro.json --log _build/test-glue
    python scripts/glued_values.py --noise results/glued_smoke_mmlu_pro.json --log L1 --log L2 --seeds 1 2
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

from jeirt.files import write_text
from jeirt_book import page_settings

ROOT = Path(__file__).resolve().parents[1]

# The floor of a number's tolerance against the snapshot, |new - old| <= ATOL + RTOL * max(|new|, |old|):
# what one machine's thread counts move (the difficulty page with 1 and 2 torch threads: one of 24 values
# moved, by 4.8e-5 of itself; RTOL is 20 times that). It holds alone for a value the noise file lacks
# or whose spread is zero (counts, settings, the paper's numbers).
RTOL = 1e-3
ATOL = 1e-9
# Above the floor, a number may move K times its spread over seeds (the sample SD over the snapshot's
# seed and the noise file's seeds; JEIRT_SEED moves the question sample, the split and the training).
# Another environment trains to another optimum of the same problem, as another seed does, but keeps the
# sample and the split: at caed064 another environment's numbers were a median 0.23 spreads and at most
# 1.73 from the snapshot's (DECISIONS.md, "Glued values across machines"). Below 3: a planted move of
# 3 spreads fails.
K = 2.5
# Glued times (a name ending so) differ from run to run, and where a page read rows from (`_origin`:
# a build's other pages, or the committed snapshot when the page runs alone, as under the tests):
# checked for presence, not value.
TIMES = re.compile(r"_(s|seconds|minutes|speedup|origin)$")
# Verdict rows decided by measured times (a ratio of two timed calls), found by words of their claim:
# checked for presence, as glued times are. A loaded or slower machine moves them across their mark
# (onboarding's "far cheaper than retraining" read "does not hold" under another machine's kernels).
TIMED_CLAIMS = ("far cheaper than retraining",)
# The settings a smoke snapshot is made with (a snapshot's build info overrides): a test run with others
# (JEIRT_DATASET=zeroeval make test) is not held against it.
SNAPSHOT_SETTINGS = {"profile": "smoke", "dataset": "mmlu_pro", "encoder": "all-MiniLM-L6-v2", "seed": 0}
NUMBER = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")
VARIES = "varies"  # a value whose words change from seed to seed: held for its presence only


def verdicts_from_html(table: str) -> list[list[str]]:
    """[[claim, verdict], ...] from a paper-vs-book table's HTML (`jeirt_book.verdicts.show`)."""

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


def _verdict_changes(
    old: list | None, new: list | None, key=lambda verdict: verdict
) -> list[tuple[str, str | None, str | None]]:
    """(claim, old verdict, new verdict) for every row whose `key` of the verdict differs (the whole
    text; `category`: its verdict word), rows matched by claim."""
    old, new = dict(map(tuple, old or [])), dict(map(tuple, new or []))
    return [
        (claim, old.get(claim), new.get(claim))
        for claim in list(old) + [c for c in new if c not in old]
        if claim not in old or claim not in new or key(old[claim]) != key(new[claim])
    ]


def category(verdict: str) -> str:
    """A verdict cell's category: the word of `jeirt_book.verdicts.VERDICTS` it starts with (the reason
    after it may hold numbers, which move with the machine); the whole text when it starts with none,
    so that such a cell is compared exactly."""
    from jeirt_book import verdicts

    try:
        return verdicts.word(verdict)
    except ValueError:
        return verdict


def close(
    old: str, new: str, rtol: float = RTOL, atol: float = ATOL, spread: list[float] | None = None, k: float = K
) -> bool:
    """Whether two glued texts agree: the same words, and each number within `tolerance` (its
    `spread`, one per number of the text, from the noise file; None: the floor alone)."""
    a, b = NUMBER.split(old), NUMBER.split(new)
    if len(a) != len(b):
        return False
    for i, (x, y) in enumerate(zip(a, b)):
        if i % 2 == 0:  # words between the numbers
            if x != y:
                return False
        else:
            sd = spread[i // 2] if spread is not None and i // 2 < len(spread) else 0.0
            if abs(float(x) - float(y)) > tolerance(float(x), float(y), sd, rtol, atol, k):
                return False
    return True


def tolerance(old: float, new: float, sd: float = 0.0, rtol: float = RTOL, atol: float = ATOL, k: float = K) -> float:
    """How far a glued number may move: `k` times its spread over seeds `sd`, at least the floor."""
    return max(atol + rtol * max(abs(old), abs(new)), k * sd)


def spreads(runs: list[dict[str, str]]) -> dict[str, list[float] | str]:
    """{name: [sample SD of each number of its text over `runs`], or VARIES where the words differ
    between runs} for every name glued in all of `runs` (glued texts of one profile, one seed each)
    but times and paper-vs-book tables (compared by verdict category, not by noise)."""
    import numpy as np

    if len(runs) < 2:
        raise ValueError(f"a spread needs at least 2 runs (seeds), got {len(runs)}")
    found = {}
    for name in sorted(set.intersection(*(set(run) for run in runs))):
        if TIMES.search(name) or name.endswith("_paper_vs_book"):
            continue
        parts = [NUMBER.split(run[name]) for run in runs]
        if any(p[0::2] != parts[0][0::2] for p in parts):
            found[name] = VARIES
            continue
        numbers = np.array([[float(x) for x in p[1::2]] for p in parts])  # (runs, numbers in the text)
        found[name] = [float(sd) for sd in numbers.std(axis=0, ddof=1)]
    return found


def noise_path(snapshot: Path) -> Path:
    """The noise file beside a snapshot: results/glued_smoke_mmlu_pro.json -> ....noise.json."""
    return snapshot.with_suffix(".noise.json")


def snapshot_key(pages: dict) -> str:
    """SHA-256 of a snapshot's glued texts, so that a noise file names the snapshot it was made for."""
    glued = {page: values["glue"] for page, values in pages.items()}
    return hashlib.sha256(json.dumps(glued, sort_keys=True).encode()).hexdigest()


def make_noise(snapshot: dict, logs: list[dict[str, dict]], seeds: list[int]) -> dict:
    """The noise file's content: each glued number's spread over the snapshot's seed and `seeds`, the
    glue logs (`read_log`) of the chapters run with those seeds. A log of the snapshot's own seed from
    another machine or other package versions adds that noise: values that no seed moves (a page's
    fits with a fixed seed) have no other spread."""
    if len(logs) != len(seeds) or not logs:
        raise ValueError(f"one seed per log: {len(logs)} logs, seeds {seeds}")
    made = {k: (snapshot.get("build") or {}).get("settings", {}).get(k, v) for k, v in SNAPSHOT_SETTINGS.items()}
    pages = pages_of(snapshot)
    runs = [{name: text for values in pages.values() for name, text in values["glue"].items()}]
    runs += [{name: record["text"] for name, record in log.items()} for log in logs]
    return {
        "about": "Each glued value's spread over seeds (sample SD of each number in its text; 'varies': its "
        "words change with the seed), for scripts/glued_values.py --check; made by `make snapshot`.",
        "snapshot_sha256": snapshot_key(pages),
        "settings": made,
        "seeds": [made["seed"], *seeds],
        "spread": spreads(runs),
    }


def read_log(folder: Path) -> dict[str, dict]:
    """{name: {"text": ..., "html": ...}} that the pages wrote with `$JEIRT_GLUE_LOG` set."""
    records = {}
    for path in sorted(Path(folder).glob("*.json")):
        record = json.loads(path.read_text())
        records[record["name"]] = record
    return records


def check(
    snapshot: dict,
    logged: dict[str, dict],
    rtol: float = RTOL,
    atol: float = ATOL,
    noise: dict[str, list[float] | str] | None = None,
    k: float = K,
) -> list[str]:
    """What the logged values of a test run change against `snapshot` (a `collect`ion), for every page
    the run reached: numbers moved beyond their noise (`noise`: a noise file's spreads; None: the floor
    alone), changed words, changed verdict categories, values gone or new (a new name with a page's
    prefix; other names, such as a unit test's, are no page's)."""
    noise = noise or {}
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
                for claim, was, new in _verdict_changes(values.get("verdicts", {}).get(name), now, category):
                    if was and new and any(words in claim for words in TIMED_CLAIMS):
                        continue  # a timed verdict: present is all that can be asked
                    lines.append(f"{page}: {name}: {claim!r}: {was!r} -> {new!r}")
            elif noise.get(name) == VARIES:
                continue  # its words change with the seed: present is all that can be asked
            elif not close(old, logged[name]["text"], rtol, atol, noise.get(name), k):
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
    parser.add_argument(
        "--noise", type=Path, metavar="SNAPSHOT", help="write the noise file beside SNAPSHOT from --log (one per seed)"
    )
    parser.add_argument(
        "--log",
        type=Path,
        action="append",
        help="a folder a test run wrote its glued values to ($JEIRT_GLUE_LOG); --noise takes one per seed",
    )
    parser.add_argument("--seeds", type=int, nargs="+", help="with --noise: the JEIRT_SEED of each --log, in order")
    args = parser.parse_args(argv)
    if args.compare:
        old, new = (pages_of(json.loads(p.read_text())) for p in args.compare)
        diff = compare(old, new)
        n_glue = sum(len(p["glue"]) for p in new.values())
        n_fig = sum(len(p["figures"]) for p in new.values())
        print("\n".join(diff) or f"identical: {len(new)} pages, {n_glue} glued values, {n_fig} figures")
        return 1 if diff else 0
    if args.check or args.noise:
        snapshot_file = args.check or args.noise
        for folder in args.log or [None]:
            if folder is None or not folder.is_dir():
                parser.error(f"--log {folder}: not a folder; give the folder a test run wrote with JEIRT_GLUE_LOG set")
        logs = [read_log(folder) for folder in args.log]
        for folder, logged in zip(args.log, logs):
            if not logged:
                parser.error(f"--log {folder} holds no glued values; run the chapters with JEIRT_GLUE_LOG={folder}")
        snapshot = json.loads(snapshot_file.read_text())
    if args.noise:
        try:
            noise = make_noise(snapshot, logs, args.seeds or [])
        except ValueError as err:
            parser.error(f"--noise: {err}")
        out = noise_path(args.noise)
        write_text(out, json.dumps(noise, indent=1, sort_keys=True) + "\n")
        varies = sum(v == VARIES for v in noise["spread"].values())
        print(f"glued_values: wrote {out}: {len(noise['spread'])} values over seeds {noise['seeds']} ({varies} vary)")
        return 0
    if args.check:
        if len(args.log) != 1:
            parser.error(f"--check takes one --log, got {len(args.log)}")
        logged = logs[0]
        made = {k: (snapshot.get("build") or {}).get("settings", {}).get(k, v) for k, v in SNAPSHOT_SETTINGS.items()}
        ran = {k: v for k, v in page_settings("smoke").as_dict().items() if k in made}
        if ran != made:
            print(f"glued values not checked: the chapters ran with {ran}, {args.check} holds {made}")
            return 0
        noise_file, noise = noise_path(args.check), None
        if noise_file.is_file():
            blob = json.loads(noise_file.read_text())
            if blob.get("snapshot_sha256") != snapshot_key(pages_of(snapshot)):
                print(f"{noise_file} was made for another snapshot than {args.check}; run `make snapshot`")
                return 1
            noise = blob["spread"]
        else:
            print(f"no noise file {noise_file}: numbers held within the floor alone (rtol={RTOL:g}); `make snapshot`")
        diff = check(pages_of(snapshot), logged, noise=noise)
        allowed = f"{K:g} x their spread over seeds ({noise_file.name}), at least " if noise else ""
        if diff:
            print(
                f"{len(diff)} glued value(s) differ from {args.check} (numbers allowed {allowed}rtol={RTOL:g}, "
                f"atol={ATOL:g}; verdicts by category):\n" + "\n".join(diff) + "\nIf the change is meant, "
                "regenerate the snapshot and its noise: make snapshot"
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
