"""The book build's parallel page execution (scripts/build_book.py) and its per-cell times
(book/_ext/cell_timing.py): pages run outside jupyter-book must land in the execution cache under the
key jupyter-book looks up, or every build would run every page twice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import build_book  # noqa: E402
import glued_values  # noqa: E402
from cell_timing import cell_timings  # noqa: E402

PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A page

```{{code-cell}} ipython3
x = {value}
```

Some prose.

```{{code-cell}} ipython3
:tags: [hide-output]
print(x + 1)
```
"""


def test_book_pages_are_the_toc_notebooks_in_order():
    pages = [p.relative_to(ROOT).as_posix() for p in build_book.book_pages()]
    assert pages[0] == "book/intro.md" and "book/efficient.md" in pages and "book/reproducing.md" in pages
    assert "book/bibliography.md" not in pages  # plain Markdown, nothing to execute
    assert len(pages) == len(set(pages))


def test_pages_run_in_parallel_are_found_in_the_cache_with_cell_times(tmp_path):
    from jupyter_cache import get_cache

    pages = []
    for value in (1, 2):
        page = tmp_path / f"page{value}.md"
        page.write_text(PAGE.format(value=value))
        pages.append(page)
    cache_dir = tmp_path / "cache"
    failed, _ = build_book.execute_missing(pages, cache_dir, jobs=2, timeout=120)
    assert failed == 0
    cache = get_cache(str(cache_dir))
    for value, page in zip((1, 2), pages):
        record = cache.match_cache_notebook(build_book.read_page(page))  # KeyError: a key jupyter-book would miss
        nb = cache.get_cache_bundle(record.pk).nb
        code = [cell for cell in nb.cells if cell.cell_type == "code"]
        assert code[1].outputs[0]["text"] == f"{value + 1}\n"
        assert all("execution" not in cell.metadata for cell in code)  # the times would change the key
        times = cell_timings(nb)
        assert len(times) == 2 and all(t.get("iopub.execute_input") and t.get("shell.execute_reply") for t in times)
        assert record.data["execution_seconds"] > 0 and record.data["cpu_seconds"] > 0  # the kernel's own
    assert build_book.execute_missing(pages, cache_dir, jobs=2, timeout=120) == (0, 0.0)  # nothing re-run


def test_pages_with_much_work_run_alone_with_every_core(tmp_path, monkeypatch, capsys):
    """A page alone gets every core as worker processes and as its kernel's threads; pages side by side
    share them (pages x threads <= cores)."""
    from jupyter_cache import get_cache

    for name in ("JEIRT_WORKERS", *build_book.THREAD_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    pages = []
    for value in (1, 2, 3, 4):
        page = tmp_path / f"page{value}.md"
        # the kernel's environment as one number: workers, OMP threads and MKL threads as digits
        env = 'int(e["JEIRT_WORKERS"]) * 100 + int(e["OMP_NUM_THREADS"]) * 10 + int(e["MKL_NUM_THREADS"])'
        page.write_text(PAGE.format(value=f'(lambda e: {env})(__import__("os").environ)  # page {value}'))
        pages.append(page)
    expected = {pages[0]: 1.0, pages[1]: 30.0, pages[2]: 2.0, pages[3]: 20.0}  # one-core seconds last time
    failed, _ = build_book.execute_missing(
        pages, tmp_path / "cache", jobs=2, timeout=120, expected=expected, cores=4, alone_over=10.0
    )
    assert failed == 0
    out = capsys.readouterr().out
    assert "4 pages: 2 alone with 4 workers each, then 2 2 at a time" in out
    assert out.index("page2.md executed") < out.index("page4.md executed") < out.index("page3.md executed")
    cache = get_cache(str(tmp_path / "cache"))
    for page, workers in zip(pages, (2, 4, 2, 4)):
        record = cache.match_cache_notebook(build_book.read_page(page))
        nb = cache.get_cache_bundle(record.pk).nb
        handed = workers * 111  # 4 workers and 4 threads alone, 2 and 2 side by side on 4 cores
        assert [c for c in nb.cells if c.cell_type == "code"][1].outputs[0]["text"] == f"{handed + 1}\n"
        assert record.data["workers"] == workers  # kept, so that the next build knows the page's work
    # Without a threshold (times guessed from sizes) no page goes alone.
    build_book.execute_missing(pages, tmp_path / "guessed", jobs=2, timeout=120, expected=expected, cores=4)
    assert "4 pages: 4 2 at a time" in capsys.readouterr().out


def test_page_threads_share_the_cores_unless_the_user_set_them():
    assert build_book.page_threads(2, 2, {}) == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert build_book.page_threads(2, 16, {}) == {"OMP_NUM_THREADS": "8", "MKL_NUM_THREADS": "8"}
    assert build_book.page_threads(4, 2, {}) == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # at least one
    assert build_book.page_threads(2, 16, {"OMP_NUM_THREADS": "3"}) == {"MKL_NUM_THREADS": "8"}  # the user's 3 kept
    assert build_book.page_threads(1, 2, {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "2"}) == {}


def test_the_build_clears_its_cache_when_either_package_changes(tmp_path, monkeypatch):
    """The execution cache's fingerprint follows the source of jeirt and of the book's package beside the
    pages (book/jeirt_book): an edit to either re-runs the pages."""
    for folder in ("jeirt", "book/jeirt_book"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "module.py").write_text("x = 1\n")
    monkeypatch.setattr(build_book, "ROOT", tmp_path)
    before = build_book.fingerprint()["jeirt_code"]
    assert build_book.fingerprint()["jeirt_code"] == before
    (tmp_path / "book" / "jeirt_book" / "module.py").write_text("x = 2\n")
    book_edited = build_book.fingerprint()["jeirt_code"]
    assert book_edited != before
    (tmp_path / "jeirt" / "module.py").write_text("x = 2\n")
    assert build_book.fingerprint()["jeirt_code"] not in (before, book_edited)


def test_expected_seconds_count_the_workers_a_page_had(tmp_path, monkeypatch):
    """A page that ran alone with 2 workers in 160 s has up to 320 s of one-core work: over ALONE_SECONDS,
    alone again."""
    import json

    pages = [build_book.ROOT / "book" / name for name in ("dimension.md", "intro.md", "data.md")]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "book_times_full_x.json").write_text(
        json.dumps(
            {
                "pages_seconds": {"book/dimension.md": 160.0, "book/intro.md": 4.0},
                "pages_workers": {"book/dimension.md": 2},
            }
        )
    )
    monkeypatch.setattr(build_book, "ROOT", tmp_path)
    for page in pages:  # the pages themselves, under the fake root
        (tmp_path / "book").mkdir(exist_ok=True)
        (tmp_path / "book" / page.name).write_text("x" * 5000)
    pages = [tmp_path / "book" / page.name for page in pages]
    expected, measured = build_book.expected_seconds(pages, {"profile": "full", "dataset": "x"})
    # data.md, not measured: as the longest measured page, at most ALONE_SECONDS (300): first of the pairs, not alone
    assert measured and expected == {pages[0]: 320.0, pages[1]: 4.0, pages[2]: build_book.ALONE_SECONDS}
    assert expected[pages[0]] > build_book.ALONE_SECONDS
    expected, measured = build_book.expected_seconds(pages, {"profile": "smoke", "dataset": "x"})
    assert not measured and expected[pages[0]] == 5.0
    # With CPU seconds recorded: the larger of wall and CPU seconds. 160 s on 2 workers that used 250 CPU-s
    # is 250 s of one-core work, under ALONE_SECONDS: beside another page next time; intro.md waited (wall).
    (tmp_path / "results" / "book_times_full_x.json").write_text(
        json.dumps(
            {
                "pages_seconds": {"book/dimension.md": 160.0, "book/intro.md": 4.0},
                "pages_workers": {"book/dimension.md": 2},
                "pages_cpu_seconds": {"book/dimension.md": 250.0, "book/intro.md": 3.1},
            }
        )
    )
    expected, _ = build_book.expected_seconds(pages, {"profile": "full", "dataset": "x"})
    assert expected[pages[0]] == 250.0 and expected[pages[1]] == 4.0


BURN_PAGE = """---
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# Two worker processes, 1.5 CPU-seconds each

```{code-cell} ipython3
import time
from joblib import Parallel, delayed


def burn(seconds: float) -> None:
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


Parallel(n_jobs=2)(delayed(burn)(1.5) for _ in range(2));
```
"""


def test_a_page_s_cpu_seconds_count_its_worker_processes(tmp_path):
    """The CPU seconds a build records for a page include its kernel's worker processes (joblib's)."""
    page = tmp_path / "burn.md"
    page.write_text(BURN_PAGE)
    _, _, seconds, cpu, error = build_book.execute_page(str(page), 120)
    assert error is None and cpu >= 3.0, (seconds, cpu)


def test_a_failing_page_is_reported_and_not_cached(tmp_path, capsys):
    from jupyter_cache import get_cache

    page = tmp_path / "broken.md"
    page.write_text(PAGE.format(value="1 / 0"))
    failed, _ = build_book.execute_missing([page], tmp_path / "cache", jobs=1, timeout=120)
    assert failed == 1
    assert "ZeroDivisionError" in capsys.readouterr().out
    with pytest.raises(KeyError):
        get_cache(str(tmp_path / "cache")).match_cache_notebook(build_book.read_page(page))


def test_workers_follow_jeirt_workers(monkeypatch):
    import os

    from jeirt.settings import workers

    monkeypatch.delenv("JEIRT_WORKERS", raising=False)
    assert workers() == min(2, os.cpu_count() or 1)
    monkeypatch.setenv("JEIRT_WORKERS", "3")
    assert workers() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("JEIRT_WORKERS", bad)
        with pytest.raises(ValueError, match="JEIRT_WORKERS"):
            workers()


def test_glued_values_reads_glue_outputs_and_figures(tmp_path):
    """myst-nb's glue outputs keep their text under a mime prefix (application/papermill.record/)."""
    import base64
    import json
    import sqlite3

    cache = tmp_path / ".jupyter_cache"
    (cache / "executed" / "k1").mkdir(parents=True)
    png = base64.b64encode(b"not really a png").decode()
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {"scrapbook": {"name": "acc", "mime_prefix": "application/papermill.record/"}},
                        "data": {"application/papermill.record/text/plain": "0.6844"},
                    },
                    {"output_type": "display_data", "metadata": {}, "data": {"image/png": png}},
                ],
            }
        ]
    }
    (cache / "executed" / "k1" / "base.ipynb").write_text(json.dumps(nb))
    with sqlite3.connect(cache / "global.db") as db:
        db.execute("CREATE TABLE nbcache (pk INTEGER, uri TEXT, hashkey TEXT, created TEXT)")
        db.execute("INSERT INTO nbcache VALUES (1, '/x/book/page.md', 'k1', '2026-01-01')")
    pages = glued_values.collect(tmp_path)
    assert pages["page"]["glue"] == {"acc": "0.6844"}
    assert len(pages["page"]["figures"]) == 1
    changed = {"page": {"glue": {"acc": "0.6850"}, "figures": pages["page"]["figures"]}}
    assert glued_values.compare(pages, changed) == ["page: acc: '0.6844' -> '0.6850'"]


def verdict_table(*verdicts: str) -> str:
    """A paper-vs-book table's HTML, as jeirt_book.verdicts.show glues it."""
    import pandas as pd

    table = pd.DataFrame(
        {
            "claim": [f"claim {i}" for i in range(len(verdicts))],
            "paper": "Table 1: 1.0",
            "this book": "0.9 & <1>",
            "setting": "smoke profile",
            "verdict": list(verdicts),
        }
    )
    return table.to_html(index=False, border=0, classes="paper-vs-book")


def test_smoke_values_are_held_against_the_snapshot(tmp_path, monkeypatch):
    """jeirt_book.glue writes each value to $JEIRT_GLUE_LOG; --check finds every moved number (beyond
    RTOL), changed word or verdict, lost or new value, and lets glued times vary."""
    import json

    import numpy as np
    from IPython.display import HTML

    import jeirt_book as book

    monkeypatch.setattr("myst_nb.glue", lambda *args, **kwargs: None)  # no kernel to display to
    monkeypatch.setenv("JEIRT_GLUE_LOG", str(tmp_path / "log"))
    for name, value in (
        ("x_acc", np.float64(0.6844)),
        ("x_words", "below"),
        ("x_fit_s", 12.5),
        ("x_note", "64.77% at d = 2"),
        ("x_paper_vs_book", HTML(verdict_table("holds", "does not hold"))),
    ):
        book.glue(name, value)
    logged = glued_values.read_log(tmp_path / "log")
    assert logged["x_acc"]["text"] == "0.6844" and logged["x_words"]["text"] == "'below'"
    assert glued_values.verdicts_from_html(logged["x_paper_vs_book"]["html"]) == [
        ["claim 0", "holds"],
        ["claim 1", "does not hold"],
    ]
    snapshot = {
        "x": {
            "glue": {
                "x_acc": "0.6844",
                "x_words": "'below'",
                "x_fit_s": "3.1",
                "x_note": "'64.77% at d = 2'",
                "x_paper_vs_book": "<IPython.core.display.HTML object>",
            },
            "verdicts": {"x_paper_vs_book": [["claim 0", "holds"], ["claim 1", "does not hold"]]},
            "figures": [],
        },
        "y": {"glue": {"y_acc": "0.5"}, "verdicts": {}, "figures": []},
    }  # a page this run did not reach
    assert glued_values.check(snapshot, logged) == []
    moved = dict(
        snapshot,
        x=dict(
            snapshot["x"],
            glue=dict(snapshot["x"]["glue"], x_acc="0.6880", x_note="'64.70% at d = 2'", x_words="'above'"),
        ),
    )
    assert glued_values.check(moved, logged) == [
        "x: x_acc: '0.6880' -> '0.6844'",
        "x: x_note: \"'64.70% at d = 2'\" -> \"'64.77% at d = 2'\"",
        "x: x_words: \"'above'\" -> \"'below'\"",
    ]
    within = dict(
        snapshot,
        x=dict(snapshot["x"], glue=dict(snapshot["x"]["glue"], x_acc=repr(0.6844 * (1 + 0.5 * glued_values.RTOL)))),
    )
    assert glued_values.check(within, logged) == []
    flipped = dict(
        snapshot, x=dict(snapshot["x"], verdicts={"x_paper_vs_book": [["claim 0", "holds"], ["claim 1", "holds"]]})
    )
    assert glued_values.check(flipped, logged) == ["x: x_paper_vs_book: 'claim 1': 'holds' -> 'does not hold'"]
    gone = dict(snapshot, x=dict(snapshot["x"], glue=dict(snapshot["x"]["glue"], x_more="1")))
    assert glued_values.check(gone, logged) == ["x: x_more: not glued any more (was '1')"]
    book.glue("x_new", 1.0)
    assert glued_values.check(snapshot, glued_values.read_log(tmp_path / "log")) == ["x_new: new, not in the snapshot"]
    (tmp_path / "snapshot.json").write_text(json.dumps({"build": None, "pages": snapshot}))
    assert glued_values.main(["--check", str(tmp_path / "snapshot.json"), "--log", str(tmp_path / "log")]) == 1


OTHER_MACHINE = ROOT / "tests" / "fixtures" / "other_machine"


def other_machine() -> tuple[dict, dict[str, dict], dict]:
    """The caed064 snapshot, what another machine glued at caed064 as a test run's log, and the snapshot's
    noise. That machine's verdict tables were not kept: the log holds the snapshot's verdicts."""
    import json

    snapshot = glued_values.pages_of(json.loads((OTHER_MACHINE / "snapshot_caed064.json").read_text()))
    values = json.loads((OTHER_MACHINE / "values_caed064.json").read_text())["values"]
    logged = {name: {"text": text} for name, text in values.items() if not name.endswith("_paper_vs_book")}
    for page in snapshot.values():
        for name, rows in page["verdicts"].items():
            logged[name] = {"text": "", "html": claims_table(rows)}
    noise = json.loads(glued_values.noise_path(OTHER_MACHINE / "snapshot_caed064.json").read_text())
    assert noise["snapshot_sha256"] == glued_values.snapshot_key(snapshot)
    return snapshot, logged, noise["spread"]


def claims_table(rows: list[list[str]]) -> str:
    """A paper-vs-book table's HTML with these [claim, verdict] rows."""
    import pandas as pd

    table = pd.DataFrame(rows, columns=["claim", "verdict"]).assign(paper="Table 1: 1.0")
    return table.to_html(index=False, border=0, classes="paper-vs-book")


def test_values_of_another_machine_pass_within_their_noise():
    """At caed064, another machine's 44 glued numbers beyond rtol 1e-3 of the snapshot (and a 45th inside a
    verdict's reason, not kept) are within K spreads."""
    snapshot, logged, noise = other_machine()
    assert len(glued_values.check(snapshot, logged)) == 44  # the floor alone: what `make test` failed on
    assert glued_values.check(snapshot, logged, noise=noise) == []


def test_a_planted_change_of_three_spreads_fails():
    """Every number moved by 3 of its spreads (beyond the floor) is found, by name; 1 spread passes."""
    snapshot, logged, noise = other_machine()
    texts = {name: text for page in snapshot.values() for name, text in page["glue"].items()}
    planted = {}
    for name, spread in noise.items():
        if spread == glued_values.VARIES or not spread or name not in logged:
            continue
        old = float(glued_values.NUMBER.findall(texts[name])[0])
        if 3 * spread[0] > glued_values.tolerance(old, old + 3 * spread[0]) and name not in planted:
            planted[name] = (old, spread[0])
    assert len(planted) > 100, "the spreads of most trained models' numbers are above the floor"
    for sds, fails in ((3.0, True), (1.0, False)):
        moved = dict(logged)
        for name, (old, sd) in planted.items():
            moved[name] = {"text": glued_values.NUMBER.sub(repr(old + sds * sd), texts[name], count=1)}
        found = {line.split(": ")[1] for line in glued_values.check(snapshot, moved, noise=noise)}
        assert found == (set(planted) if fails else set()), sorted(found ^ set(planted))[:5]


def test_verdicts_and_numbers_inside_phrases_are_held_within_noise():
    """A verdict by its category word (the numbers of its reason move with the machine); a phrase's
    words exactly and each of its numbers within its own spread."""
    snapshot = {
        "x": {
            "glue": {"x_note": "'64.77% at d = 2'", "x_seeded": "'math'", "x_paper_vs_book": "<HTML>"},
            "verdicts": {"x_paper_vs_book": [["a gap", "does not hold: the gap of -1.86 points"], ["b", "odd"]]},
            "figures": [],
        }
    }
    noise = {"x_note": [0.5, 0.0], "x_seeded": glued_values.VARIES}

    def run(note: str, gap_verdict: str, other: str = "odd", seeded: str = "'law'") -> list[str]:
        logged = {
            "x_note": {"text": note},
            "x_seeded": {"text": seeded},
            "x_paper_vs_book": {"text": "", "html": claims_table([["a gap", gap_verdict], ["b", other]])},
        }
        return glued_values.check(snapshot, logged, noise=noise)

    assert run("'65.70% at d = 2'", "does not hold: the gap of -1.67 points") == []  # 0.93 < 2.5 x 0.5
    assert run("'66.30% at d = 2'", "does not hold: the gap of -1.86 points") == [
        "x: x_note: \"'64.77% at d = 2'\" -> \"'66.30% at d = 2'\""
    ]  # 1.53 > 2.5 x 0.5
    assert len(run("'64.77% at d = 3'", "does not hold: the gap of -1.86 points")) == 1  # no spread: the floor
    assert len(run("'64.77% at k = 2'", "does not hold: the gap of -1.86 points")) == 1  # words exactly
    assert run("'64.77% at d = 2'", "holds in direction: the gap of -1.86 points") == [
        "x: x_paper_vs_book: 'a gap': 'does not hold: the gap of -1.86 points' -> "
        "'holds in direction: the gap of -1.86 points'"
    ]
    assert len(run("'64.77% at d = 2'", "does not hold: the gap of -1.86 points", other="odder")) == 1  # no category
    timed = glued_values.TIMED_CLAIMS[0]  # a verdict on measured times: present, whatever its category
    snapshot["x"]["verdicts"]["x_paper_vs_book"][1] = [timed, "holds"]
    logged = {"x_note": {"text": "'64.77% at d = 2'"}, "x_seeded": {"text": "'law'"}}
    rows = [["a gap", "does not hold: the gap of -1.86 points"], [timed, "does not hold"]]
    assert (
        glued_values.check(
            snapshot, logged | {"x_paper_vs_book": {"text": "", "html": claims_table(rows)}}, noise=noise
        )
        == []
    )
    gone = glued_values.check(
        snapshot, logged | {"x_paper_vs_book": {"text": "", "html": claims_table(rows[:1])}}, noise=noise
    )
    assert gone == [f"x: x_paper_vs_book: {timed!r}: 'holds' -> None"]


def test_noise_file_is_made_from_seed_logs_and_names_its_snapshot(tmp_path, capsys):
    """--noise writes each value's spread over the snapshot's seed and the logs' (VARIES where the words
    change); --check uses it, and refuses a noise file made for another snapshot."""
    import json

    snapshot = {
        "build": {"settings": {"profile": "smoke", "seed": 0}},
        "pages": {"x": {"glue": {"x_acc": "0.60", "x_word": "'a'", "x_fit_s": "3"}, "verdicts": {}, "figures": []}},
    }
    (tmp_path / "snap.json").write_text(json.dumps(snapshot))
    for seed, (acc, word) in {1: ("0.62", "'a'"), 2: ("0.64", "'b'")}.items():
        (tmp_path / f"log{seed}").mkdir()
        for name, text in {"x_acc": acc, "x_word": word, "x_fit_s": "9"}.items():
            (tmp_path / f"log{seed}" / f"{name}.json").write_text(json.dumps({"name": name, "text": text}))
    logs = ["--log", str(tmp_path / "log1"), "--log", str(tmp_path / "log2")]
    assert glued_values.main(["--noise", str(tmp_path / "snap.json"), *logs, "--seeds", "1", "2"]) == 0
    noise = json.loads((tmp_path / "snap.noise.json").read_text())
    assert noise["seeds"] == [0, 1, 2] and set(noise["spread"]) == {"x_acc", "x_word"}
    assert noise["spread"]["x_acc"][0] == pytest.approx(0.02) and noise["spread"]["x_word"] == glued_values.VARIES
    with pytest.raises(SystemExit):
        glued_values.main(["--noise", str(tmp_path / "snap.json"), *logs, "--seeds", "1"])
    assert "one seed per log: 2 logs, seeds [1]" in capsys.readouterr().err
    check = ["--check", str(tmp_path / "snap.json"), "--log", str(tmp_path / "log2")]
    assert glued_values.main(check) == 0  # 0.64 is 2 spreads from 0.60; 'b' varies with the seed
    snapshot["pages"]["x"]["glue"]["x_acc"] = "0.50"
    (tmp_path / "snap.json").write_text(json.dumps(snapshot))
    assert glued_values.main(check) == 1
    assert "made for another snapshot" in capsys.readouterr().out


def test_the_snapshot_has_its_noise_file():
    """results/glued_smoke_mmlu_pro.json comes with the noise file made for it (`make snapshot`)."""
    import json

    snapshot = ROOT / "results" / "glued_smoke_mmlu_pro.json"
    noise = json.loads(glued_values.noise_path(snapshot).read_text())
    pages = glued_values.pages_of(json.loads(snapshot.read_text()))
    assert noise["snapshot_sha256"] == glued_values.snapshot_key(pages), "run `make snapshot`"
    assert len(noise["seeds"]) >= 3 and noise["settings"]["profile"] == "smoke"


def test_results_scripts_share_their_options():
    """The scripts that write results/ parse --seeds and --datasets as lists (scripts/result_files.py)."""
    from result_files import results_parser

    parser = results_parser("What it does.\n\nMore.", "results/x.json", datasets="mmlu_pro, zeroeval")
    assert parser.description == "What it does."
    args = parser.parse_args([])
    assert (args.datasets, args.seeds, args.out) == (["mmlu_pro", "zeroeval"], [0, 1, 2], "results/x.json")
    args = parser.parse_args(["--seeds", "3, 4,", "--datasets", "metabench", "--encoder", "all-mpnet-base-v2"])
    assert (args.seeds, args.datasets, args.encoder) == ([3, 4], ["metabench"], "all-mpnet-base-v2")
    with pytest.raises(SystemExit):
        parser.parse_args(["--seeds", "zero"])
    assert not hasattr(results_parser("x", "y.json").parse_args([]), "datasets")


MINI_CONFIG = """\
title: launch buttons
only_build_toc_files: true
execute:
  execute_notebooks: force
"""


@pytest.mark.slow
def test_launch_buttons_only_for_a_real_repository(tmp_path):
    """A one-page book with the site's repository, launch-button and Colab settings (from _config.yml and
    book/_ext/colab_links.py), built without and with JEIRT_REPO_URL."""
    import json
    import os
    import shutil
    import subprocess

    import yaml

    import jeirt_book as book

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    mini = yaml.safe_load(MINI_CONFIG)
    mini["html"] = {"use_repository_button": config["html"]["use_repository_button"]}
    mini["repository"], mini["launch_buttons"] = config["repository"], config["launch_buttons"]
    mini["sphinx"] = {
        "local_extensions": {"colab_links": "_ext"},
        "config": {k: v for k, v in config["sphinx"]["config"].items() if k.startswith("jeirt_colab")},
    }
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(mini))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/page\n")
    shutil.copytree(ROOT / "book" / "_ext", tmp_path / "_ext")
    (tmp_path / "book").mkdir()
    page = (ROOT / "book" / "intro.md").read_text()
    header, rest = page.split("\n---\n", 1)
    first = rest.index("```{code-cell}")
    (tmp_path / "book" / "page.md").write_text(
        header + "\n---\n\n# A page\n\n" + rest[first : rest.index("```\n", first) + 4]
    )
    assert book.SETUP_CELL in (tmp_path / "book" / "page.md").read_text()
    jb = Path(sys.executable).with_name("jupyter-book")

    def build(url: str | None) -> str:
        env = {k: v for k, v in os.environ.items() if k != "JEIRT_REPO_URL"} | ({"JEIRT_REPO_URL": url} if url else {})
        result = subprocess.run(
            [str(jb), "build", str(tmp_path), "--path-output", str(tmp_path), "-W", "--all"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        return (tmp_path / "_build" / "html" / "book" / "page.html").read_text()

    html = build(None)  # the placeholder: no buttons that lead nowhere, and the set-up cell out of sight
    assert "colab.research.google.com" not in html and "github.com" not in html
    assert "make setup" not in html and "clone --quiet" not in json.dumps(html)
    html = build("https://github.com/owner/jeirt")
    assert "https://colab.research.google.com/github/owner/jeirt/blob/notebooks/book/page.ipynb" in html
    assert 'href="https://github.com/owner/jeirt"' in html  # the repository button
    notebook = json.loads((tmp_path / "_build" / "html" / "_sources" / "book" / "page.ipynb").read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert "".join(code[0]["source"]).strip() == book.setup_cell("https://github.com/owner/jeirt").strip()


def test_build_source_puts_the_colab_cell_first_only_for_a_real_url(monkeypatch):
    import jeirt_book as book
    from jeirt import settings

    page = "---\nx: 1\n---\n\n```{code-cell} ipython3\n:tags: [hide-output]\n\n" + book.SETUP_CELL + "```\n\nText.\n"
    assert book.repo_url() is None and book.build_source(page) == page  # the placeholder, as the pages carry
    monkeypatch.setattr(settings, "REPO_URL", "https://github.com/owner/jeirt")
    assert book.build_source(page) == page.replace(book.SETUP_CELL, book.setup_cell("https://github.com/owner/jeirt"))
    assert "git clone --quiet --depth 1 https://github.com/owner/jeirt /content/jeirt" in book.build_source(page)
    for bad in ("https://gitlab.com/owner/jeirt", "github.com/owner/jeirt", "https://github.com/owner"):
        monkeypatch.setattr(settings, "REPO_URL", bad)
        with pytest.raises(ValueError, match="JEIRT_REPO_URL"):
            book.repo_url()


def test_one_grid_of_dimensions():
    """Every page that compares d reads the profile's one d_grid (the Reproducing page prints it); the
    full grid holds Fig. 2's 16 to 1024."""
    import jeirt_book as book

    full = book.PROFILE_DEFAULTS["full"]["d_grid"]
    assert {16, 64, 256, 1024} <= set(full) and list(full) == sorted(full)
    pages = {path.name: path.read_text() for path in (ROOT / "book").glob("*.md")}
    assert "d_grid = cfg.d_grid\n" in pages["dimension.md"] and "set(cfg.d_grid)" in pages["geometry.md"]
    for name, text in pages.items():
        assert "D_GRID" not in text, f"book/{name} has its own grid of d; read cfg.d_grid"
    for path in (ROOT / "book" / "jeirt_book").rglob("*.py"):
        assert "D_GRID" not in path.read_text(), f"{path.name} has its own grid of d; pages read cfg.d_grid"


def test_make_book_builds_the_full_profile_on_the_shipped_data(monkeypatch):
    assert build_book.BUILD_DEFAULTS == {"JEIRT_PROFILE": "full", "JEIRT_DATASET": "mmlu_pro"}
    makefile = (ROOT / "Makefile").read_text()
    assert "\t$(BIN)/python scripts/build_book.py\n" in makefile  # make book: the script, its defaults
    ci = (ROOT / ".ci" / "run").read_text()
    # CI runs the README's two commands: the tests, then the site as `make book` builds it
    assert ci.rstrip().endswith("make test\nmake book")


PLANTED_TORCH_MISUSES = """
import torch

def planted(x: torch.Tensor, net: torch.nn.Linear) -> int:
    torch.nn.Linear(3, "4")
    optimiser = torch.optim.AdamW(net.parameters(), lr="fast")
    torch.optim.lr_scheduler.ExponentialLR(optimiser, gamma="slow")
    label: str = torch.sigmoid(x)
    torch.save(net.state_dict(), 3.5)
    return torch.zeros(3)
"""


def test_the_package_passes_mypy(tmp_path):
    """mypy on jeirt/ and the book's package (book/jeirt_book/; [tool.mypy] in pyproject.toml names both),
    as `make typecheck` runs it. `make test` runs it here, beside the other tests: on a fresh clone (no
    mypy cache) it takes a quarter of a minute of one core. The torch modules the configuration skips must
    not hide what jeirt calls: six misuses of it planted in a file of their own are each reported (with the
    configuration's cache, seconds)."""
    import subprocess

    mypy = Path(sys.executable).with_name("mypy")
    assert mypy.is_file(), "mypy is missing: pip install -e '.[dev]' installs it"
    result = subprocess.run([str(mypy)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f"mypy:\n{result.stdout}{result.stderr}"
    planted = tmp_path / "planted.py"
    planted.write_text(PLANTED_TORCH_MISUSES)
    result = subprocess.run([str(mypy), str(planted)], cwd=ROOT, capture_output=True, text=True)
    reported = sorted(int(line.split(":")[1]) for line in result.stdout.splitlines() if ": error:" in line)
    assert reported == [5, 6, 7, 8, 9, 10], f"mypy missed a planted misuse of torch:\n{result.stdout}"


def test_the_workflows_pass_actionlint(tmp_path):
    """Two workflows in .github/workflows/ without a finding of actionlint (which finds a planted one):
    publish.yml builds the site as the README does (make book), test.yml runs make test on Linux x86-64
    and macOS arm64; both install from the lock file, as make setup does."""
    import re
    import subprocess

    import yaml

    actionlint = Path(sys.executable).with_name("actionlint")
    assert actionlint.is_file(), "actionlint is missing: pip install -e '.[dev]' installs it"
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
    assert [w.name for w in workflows] == ["publish.yml", "test.yml"], "one workflow publishes, one tests"
    result = subprocess.run([str(actionlint), "-no-color", *map(str, workflows)], capture_output=True, text=True)
    assert result.returncode == 0, f"actionlint:\n{result.stdout}{result.stderr}"
    planted = tmp_path / "planted.yml"
    planted.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.no_such }}\n"
    )
    result = subprocess.run([str(actionlint), "-no-color", str(planted)], capture_output=True, text=True)
    assert result.returncode == 1 and "no_such" in result.stdout, result.stdout + result.stderr

    def runs(workflow: Path) -> tuple[dict, str]:
        jobs = yaml.safe_load(workflow.read_text())["jobs"]
        steps = [step for job in jobs.values() for step in job.get("steps", [])]
        return jobs, "\n".join(step.get("run", "") for step in steps)

    publish, test = (runs(w) for w in workflows)
    for _, commands in (publish, test):
        assert re.search(r"^make setup$", commands, re.MULTILINE), "install from the lock, as make setup does"
        assert "pip install" not in commands, "no package outside the lock"
    assert re.search(r"^make book$", publish[1], re.MULTILINE), "the workflow builds the site with the README's command"
    assert re.search(r"^make test$", test[1], re.MULTILINE), "the tests as the README runs them"
    assert test[0]["test"]["strategy"]["matrix"]["os"] == ["ubuntu-latest", "macos-14"]
    text = workflows[0].read_text()
    assert "${{ github.server_url }}/${{ github.repository }}" in text  # JEIRT_REPO_URL: this repository
    uses = {step.get("uses", "").split("@")[0] for job in publish[0].values() for step in job.get("steps", [])}
    assert {"actions/upload-pages-artifact", "actions/deploy-pages"} <= uses


def test_setup_installs_the_lock_file_with_hashes():
    """make setup installs requirements/lock.txt with --require-hashes, then jeirt and the book's package
    without dependencies; the lock pins torch as requirements/torch.txt says, every pin carries a hash, and
    environment.yml follows it."""
    import re

    makefile = (ROOT / "Makefile").read_text()
    assert "--require-hashes $(TORCH_INDEX) -r $(LOCK)" in makefile
    assert "pip install -q --no-deps -e ." in makefile
    assert "pip install -q --no-deps -e book" in makefile  # the book's package, beside jeirt
    lock = (ROOT / "requirements" / "lock.txt").read_text()
    pins = re.findall(r"^([A-Za-z0-9_.\-]+)==([^ ;\\\n]+)(.*?)(?=^\S|\Z)", lock, re.MULTILINE | re.DOTALL)
    assert len(pins) > 100, "the lock holds every package make setup installs"
    for name, version, rest in pins:
        assert "--hash=sha256:" in rest, f"requirements/lock.txt: {name}=={version} has no hash"
    wanted = re.findall(
        r"^(torch==\S+) ; (sys_platform == \S+)", (ROOT / "requirements" / "torch.txt").read_text(), re.M
    )
    locked = {
        (f"torch=={v}", rest.split(";")[1].split("\\")[0].strip().replace("'", '"'))
        for n, v, rest in pins
        if n == "torch"
    }
    assert {(pin, marker) for pin, marker in wanted} == locked and len(locked) == 2  # Linux CPU build, macOS
    assert "-r requirements/lock.txt" in (ROOT / "environment.yml").read_text()
    assert "pip install --no-deps -e . -e book" in (ROOT / "environment.yml").read_text()


def test_check_html_finds_links_to_the_placeholder_repository(tmp_path, capsys):
    import check_html

    site = tmp_path / "html"
    site.mkdir()
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: page\n")
    body = '<a href="https://colab.research.google.com/github/{}/blob/notebooks/page.ipynb">Colab</a>'
    (site / "page.html").write_text(body.format("owner/jeirt"))
    assert check_html.main(["--build", str(site), "--toc", str(tmp_path / "_toc.yml")]) == 0
    (site / "page.html").write_text(body.format("jeirt/jeirt") + '<a href="https://github.com/jeirt/jeirt">repo</a>')
    assert check_html.main(["--build", str(site), "--toc", str(tmp_path / "_toc.yml")]) == 1
    assert "2 link(s) to the placeholder repository" in capsys.readouterr().err


def test_make_page_names_the_pages_when_given_none_of_them():
    """`make page PAGE=...` runs scripts/run_page.py; a name that is no page is refused with the list."""
    makefile = (ROOT / "Makefile").read_text()
    assert "\t$(BIN)/python scripts/run_page.py $(PAGE)\n" in makefile
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_page.py"), "no_such_page"], capture_output=True, text=True
    )
    assert run.returncode == 2 and "no page book/no_such_page.md" in run.stderr and "onboarding" in run.stderr


def test_the_wheel_holds_jeirt_alone(tmp_path):
    """`pip install jeirt` ships the library: the wheel built from pyproject.toml holds the package `jeirt`
    (its modules, py.typed and prices.csv) and nothing of the book (its pages, or its own package
    `jeirt_book`, book/pyproject.toml's). Built offline from a copy of the files the build reads."""
    import shutil
    import zipfile

    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "_build", "*.ipynb")
    for folder in ("jeirt", "book"):
        shutil.copytree(ROOT / folder, source / folder, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(source)]
    result = subprocess.run([*build, "-w", str(tmp_path / "wheel")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = (tmp_path / "wheel").glob("jeirt-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"jeirt"}, f"the wheel holds more than jeirt: {sorted(tops)}"
    modules = {n.removeprefix("jeirt/") for n in names if n.endswith(".py")}
    shipped = {p.relative_to(ROOT / "jeirt").as_posix() for p in (ROOT / "jeirt").rglob("*.py")}
    assert modules == shipped, f"missing: {sorted(shipped - modules)}, extra: {sorted(modules - shipped)}"
    assert {"jeirt/py.typed", "jeirt/tasks/prices.csv"} <= set(names)
    assert not [n for n in names if "book" in n.split("/")[-1] or n.endswith(".md")], "book files in the wheel"
