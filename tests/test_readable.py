"""What a reader sees: page code that fits the rendered column (scripts/format_pages.py), tables that
fit it (scripts/check_html.py), figures legible at the size shown and told apart without colour
(jeirt_book.figures), figure images with their caption as alt text (book/_ext/figure_alt.py)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import jupytext
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from docutils import nodes

from jeirt_book import SETUP_CELL, figures

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import check_html  # noqa: E402
import figure_alt  # noqa: E402
import format_pages  # noqa: E402
import screenshots  # noqa: E402

PAGES = sorted((ROOT / "book").glob("*.md"))
FRONT = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
    jupytext_version: 1.19.6
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def cells_of(path: Path) -> list[tuple[str, dict, str]]:
    """(type, metadata, source) of every cell, as jupytext reads the page."""
    return [(c.cell_type, dict(c.metadata), c.source) for c in jupytext.read(path).cells]


def test_page_code_lines_fit_the_column():
    """Every code line of every page at most 80 characters: the site shows 88 at 1280 pixels."""
    long = [
        f"{page.relative_to(ROOT)}:{line} ({n} characters)"
        for page in PAGES
        for line, n in format_pages.long_lines(page.read_text())
    ]
    assert not long, (
        f"{len(long)} code line(s) over {format_pages.LINE_LENGTH} characters; run "
        "scripts/format_pages.py (and shorten what ruff cannot wrap: comments, strings):\n" + "\n".join(long[:40])
    )


# A shown cell (not removed, not folded behind a click) holds one step a reader can take in at a glance.
MAX_SHOWN_LINES = 15
HIDDEN = {"remove-cell", "remove-input", "hide-input", "hide-cell"}


def long_shown_cells(path: Path) -> list[str]:
    """'page: N lines: first line' for each shown code cell of `path` over MAX_SHOWN_LINES lines."""
    return [
        f"{path.name}: {len(source.splitlines())} lines: {source.splitlines()[0][:60]}"
        for kind, meta, source in cells_of(path)
        if kind == "code" and not HIDDEN & set(meta.get("tags", [])) and len(source.splitlines()) > MAX_SHOWN_LINES
    ]


def test_shown_code_cells_are_short():
    """The protocol on the page in steps: no code cell a reader sees unfolded runs past 15 lines
    (after ruff format, which puts a long call's arguments one a line)."""
    long = [cell for page in PAGES if page.stem != "api" for cell in long_shown_cells(page)]
    assert not long, (
        f"shown code cells over {MAX_SHOWN_LINES} lines; split them or move the work "
        "into the library:\n" + "\n".join(long)
    )


def test_a_long_shown_cell_is_caught(tmp_path):
    page = tmp_path / "page.md"
    body = "\n".join(f"x{i} = {i}" for i in range(MAX_SHOWN_LINES + 1))
    page.write_text(
        FRONT + f"\n```{{code-cell}} ipython3\n{body}\n```\n\n"
        f"```{{code-cell}} ipython3\n:tags: [remove-cell]\n\n{body}\n```\n"
    )
    assert long_shown_cells(page) == [f"page.md: {MAX_SHOWN_LINES + 1} lines: x0 = 0"]


def test_a_long_code_line_is_caught_and_formatted(tmp_path):
    page = tmp_path / "page.md"
    long_call = "table = summarise(first_argument, second_argument, third_argument, fourth_argument)"
    page.write_text(
        FRONT + "\n# A page\n\nSome prose with a long line " + "x" * 100 + ".\n\n"
        "```{code-cell} ipython3\n:tags: [hide-input]\n\nshort = 1\n" + long_call + "\n```\n\n"
        "```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    caption: |\n      A caption.\n"
        "    name: fig-x\n---\n%matplotlib inline\nx = [1,2]\n```\n"
    )
    assert len(long_call) > 80
    assert format_pages.long_lines(page.read_text()) == [(22, len(long_call))]  # prose lines not counted
    before = cells_of(page)
    assert format_pages.main(["--check", str(page)]) == 1
    assert page.read_text().count(long_call) == 1  # --check changes nothing
    assert format_pages.main([str(page)]) == 0
    assert format_pages.long_lines(page.read_text()) == []
    after = cells_of(page)
    assert [(t, m) for t, m, _ in after] == [(t, m) for t, m, _ in before]  # cell types and metadata kept
    assert after[0][2] == before[0][2]  # the prose as it was, long line and all
    assert (
        after[1][2]
        == "short = 1\ntable = summarise(\n    first_argument, second_argument, third_argument, fourth_argument\n)"
    )
    assert after[2][2] == "%matplotlib inline\nx = [1, 2]"  # a magic is kept, the code formatted
    assert format_pages.main(["--check", str(page)]) == 0  # formatted pages stay as they are


def test_formatting_keeps_every_page_s_structure(tmp_path):
    """On a copy of the pages: formatting changes code only, and formatting again changes nothing."""
    for source in PAGES:
        page = tmp_path / source.name
        page.write_text(source.read_text())
        before = cells_of(page)
        text, _ = format_pages.format_page(page.read_text(), page.name)
        page.write_text(text)
        after = cells_of(page)
        assert [(t, m) for t, m, _ in after] == [(t, m) for t, m, _ in before], source.name
        assert [s for t, _, s in after if t != "code"] == [s for t, _, s in before if t != "code"], source.name
        assert format_pages.format_page(text, page.name)[1] == [], f"{source.name}: formatting twice changes it"
        setup = [s for t, _, s in before if t == "code" and s.strip() == SETUP_CELL.strip()]
        assert setup == [s for t, _, s in after if t == "code" and s.strip() == SETUP_CELL.strip()]


def test_check_html_reports_wide_tables_and_long_cells(tmp_path):
    def table(n_columns, cell="0.12", index=True):
        head = "<tr>" + ("<th></th>" if index else "") + "".join(f"<th>c{i}</th>" for i in range(n_columns))
        body = "<tr>" + ("<th>row</th>" if index else "") + "".join(f"<td>{cell}</td>" for _ in range(n_columns))
        return f"<table><thead>{head}</tr></thead><tbody>{body}</tr></tbody></table>"

    parser = check_html.PageParser()
    parser.feed(
        "<html><body>"
        + table(8)
        + table(9, index=False)
        + table(3, cell="word " * 40)
        + "<table><tr><td colspan='10'>a wide note</td></tr></table></body></html>"
    )
    assert [t["columns"] for t in parser.tables] == [8, 9, 3, 10]  # a DataFrame's index is not a column
    problems = check_html.table_problems(parser.tables)
    assert len(problems) == 3
    assert "table 2 has 9 columns (more than 8)" in problems[0]
    assert "table 3 has a cell of 199 characters (more than 160)" in problems[1]
    assert "table 4 has 10 columns" in problems[2]
    page = tmp_path / "page.html"
    page.write_text("<html><body>" + table(12) + "</body></html>")
    found = check_html.check_page(page, tmp_path, in_toc=True, allow_stderr=False, css_seen=set())
    assert [p for p in found if p.startswith("table")] == [
        "table 1 has 12 columns (more than 8): transpose, split or cut it ('c0' ...)"
    ]


def test_figure_images_get_their_caption_as_alt():
    caption = nodes.caption(
        "", "", nodes.Text("Accuracy against "), nodes.math("", "d"), nodes.Text(",\n one line per  encoder.")
    )
    glued = nodes.figure("", nodes.image(uri="_images/abc.png", alt="../_images/abc.png"), caption)
    authored = nodes.figure(
        "", nodes.image(uri="_images/b.png", alt="a hand-written description"), nodes.caption("", "A caption.")
    )
    uncaptioned = nodes.figure("", nodes.image(uri="_images/c.png"))
    loose = nodes.image(uri="_images/d.png")
    tree = nodes.section("", glued, authored, uncaptioned, loose)
    assert figure_alt.set_figure_alt(tree) == 1
    assert glued[0]["alt"] == "Accuracy against d, one line per encoder."
    assert authored[0]["alt"] == "a hand-written description"
    assert "alt" not in uncaptioned[0] and "alt" not in loose


def test_screenshots_names_each_element_that_does_not_fit():
    layout = {
        "code": [{"cell": 3, "cutLines": 2, "longest": 95, "fits": 89, "first": "x = 1"}],
        "maths": [{"equation": 1, "width": 800, "room": 688, "tex": "a+b"}],
        "tables": [{"table": 2, "width": 1400, "column": 688, "columns": 15, "first": "col"}],
        "pathAlt": ["../_images/abc.png"],
        "fit": {},
    }
    problems = screenshots.layout_problems(layout)
    assert [p.split(":")[0] for p in problems] == [
        "code cell 3",
        "display equation 1 is 800 px wide in 688 px",
        "table 2 (15 columns) is 1400 px wide, the text column 688 px",
        "image with its file path as alt text",
    ]
    assert "2 line(s) cut" in problems[0]
    assert screenshots.layout_problems({"code": [], "maths": [], "tables": [], "pathAlt": []}) == []


@pytest.fixture
def styled():
    matplotlib.use("Agg")
    figures.use_style()
    yield
    plt.close("all")


def draw_shared_plots(rng) -> dict:
    """Each shared plot of jeirt_book.figures with three classes, in its own default-size figure."""
    made = {}
    three = pd.DataFrame(rng.random((3, 4)), index=["learned", "frozen", "random"], columns=list("abcd"))
    roc = pd.DataFrame({"fpr": np.linspace(0, 1, 20), "tpr": np.linspace(0, 1, 20) ** 0.5})
    reliability = pd.DataFrame({"mean_prob": [0.1, 0.5, 0.9], "mean_label": [0.2, 0.5, 0.8], "n": [5, 9, 4]})
    plots = {
        "curves": lambda ax: figures.curves(ax, {k: rng.random(10) for k in "abc"}, "epoch", "loss"),
        "roc_curves": lambda ax: figures.roc_curves(ax, {k: roc for k in "abc"}),
        "reliability_diagram": lambda ax: figures.reliability_diagram(ax, {k: reliability for k in "abc"}),
        "dots_by_group": lambda ax: figures.dots_by_group(ax, three.T),
        "heatmap": lambda ax: figures.heatmap(ax, three),
        "bar_by_group": lambda ax: figures.bar_by_group(ax, three["a"], highlight=["frozen"]),
        "labelled_scatter": lambda ax: figures.labelled_scatter(ax, rng.random(20), rng.random(20), names=range(20)),
    }
    for name, plot in plots.items():
        fig, ax = plt.subplots()
        plot(ax)
        made[name] = fig
    return made


def test_shared_plots_tell_classes_apart_without_colour(styled):
    made = draw_shared_plots(np.random.default_rng(0))

    def line_looks(fig):
        return [
            (line.get_marker(), str(line.get_linestyle()))
            for line in fig.axes[0].lines
            if line.get_label() not in ("chance", "calibrated") and not line.get_label().startswith("_")
        ]

    def marker_shapes(fig):
        return [tuple(np.round(c.get_paths()[0].vertices, 3).ravel()) for c in fig.axes[0].collections]

    for name in ("curves", "roc_curves"):
        looks = line_looks(made[name])
        assert len(looks) == 3 and len(set(looks)) == 3, name
    for name in ("reliability_diagram", "dots_by_group"):
        shapes = marker_shapes(made[name])
        assert len(shapes) == 3 and len(set(shapes)) == 3, name


def test_shared_plots_are_legible_at_the_size_shown(styled):
    for name, fig in draw_shared_plots(np.random.default_rng(1)).items():
        assert figures.small_text(fig) == [], name
    assert (
        type(draw_shared_plots(np.random.default_rng(2))["heatmap"].axes[0].collections[0]).__name__ == "QuadMesh"
    )  # drawn by seaborn
    fig, ax = plt.subplots()
    ax.set_xlabel("tiny", fontsize=6)
    assert figures.small_text(fig) == ["'tiny' (6.8 pt)"]  # 6 pt, shown at 1.13x
    fig, ax = plt.subplots(figsize=(14, 4))
    ax.set_xlabel("wide", fontsize=10)
    assert figures.small_text(fig)  # a 14-inch figure is shrunk to the column: 10 pt shows as ~5


@pytest.mark.skipif(not shutil.which("chromium"), reason="needs Chromium (apt-get install -y chromium)")
def test_screenshots_measure_what_is_cut_in_a_browser(tmp_path):
    """A page like the theme's at 1280 pixels (a 652-px code box, the book's CSS): an 88-character
    line fits, a 95-character one is cut; a 15-column table and an image with a path as alt are found."""
    build, out = tmp_path / "html", tmp_path / "shots"
    (build / "_static").mkdir(parents=True)
    shutil.copy(ROOT / "book" / "_static" / "custom.css", build / "_static" / "custom.css")
    fig, ax = plt.subplots(figsize=(1, 1))
    fig.savefig(build / "plot.png")
    plt.close(fig)
    code = "\n".join("x = '" + "a" * (n - 6) + "'" for n in (80, 88, 95))
    cells = "".join(f"<td>{i}.123456</td>" for i in range(15))
    (build / "page.html").write_text(
        "<html><head><link rel='stylesheet' href='_static/custom.css'></head><body>"
        "<article class='bd-article' style='width: 688px'>"
        f"<div class='cell_input' style='width: 652px'><div class='highlight'><pre>{code}</pre></div></div>"
        "<div style='overflow-x: auto'><table><tr>" + cells + "</tr></table></div>"
        "<img alt='_images/plot.png' src='plot.png'></article></body></html>"
    )
    toc = tmp_path / "_toc.yml"
    toc.write_text("format: jb-book\nroot: page\n")
    assert screenshots.main(["--build", str(build), "--toc", str(toc), "--out", str(out)]) == 1
    layout = json.loads((out / "layout.json").read_text())["pages"]["page.html"]
    assert layout["fit"]["charsPerLine"] >= 88
    assert [(c["cutLines"], c["longest"]) for c in layout["code"]] == [(1, 95)]
    assert [t["columns"] for t in layout["tables"]] == [15]
    assert layout["pathAlt"] == ["_images/plot.png"] and layout["maths"] == []
    assert (out / "page.png").is_file()
