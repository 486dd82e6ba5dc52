"""Tests for scripts/plain_notebooks.py: an executed page's MyST markdown becomes markdown any Jupyter renders
(glued values, numbered maths and figures, citations, exercises with collapsible solutions)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import plain_notebooks  # noqa: E402

nbformat = pytest.importorskip("nbformat")


def executed_page() -> dict:
    """A small executed page as myst-nb leaves it: a glued number and table, a figure, maths, exercises."""
    md = nbformat.v4.new_markdown_cell
    glue = nbformat.v4.new_code_cell("glue_numbers('pg', {'x': 0.12345})")
    glue.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"application/papermill.record/text/plain": "0.12345"},
            metadata={"scrapbook": {"name": "pg_x", "mime_prefix": "application/papermill.record/"}},
        ),
        nbformat.v4.new_output(
            "display_data",
            data={"application/papermill.record/text/html": "<table><tr><td>1</td></tr></table>"},
            metadata={"scrapbook": {"name": "pg_table", "mime_prefix": "application/papermill.record/"}},
        ),
    ]
    figure = nbformat.v4.new_code_cell(
        "plot()", metadata={"mystnb": {"figure": {"name": "fig-a", "caption": "A\n curve."}}}
    )
    cells = [
        md("(sec-a)=\n## Part A\n\n```{math}\n:label: eq-a\n\na = b\n```\n\nAs {eq}`eq-a` says {cite}`lord1980irt`."),
        glue,
        figure,
        md(
            "The value {glue:text}`pg_x:.2f` and {numref}`fig-a`; see {ref}`sec-a` and {doc}`irt_primer`."
            "\n\n:::{glue} pg_table\n:::"
        ),
        md(":::{exercise} A sum (compute)\n:label: ex-pg-sum\n\nCompute $1 + 1$.\n:::"),
        md(":::{solution} ex-pg-sum\n:class: dropdown\n\nTwo, {ref}`ex-pg-sum`.\n:::"),
        md(":::{solution-start} ex-pg-sum\n:class: dropdown\n:::\n\nThe cell shows it."),
        nbformat.v4.new_code_cell("1 + 1", metadata={"jupyter": {"source_hidden": True}}),
        md(":::{solution-end}\n:::\n\n:::{note}\nA note.\n:::"),
    ]
    return nbformat.v4.new_notebook(cells=cells)


def test_myst_markdown_becomes_plain_markdown(tmp_path):
    cites = plain_notebooks.read_bib(ROOT / "book" / "references.bib")
    assert cites["lord1980irt"] == "Lord 1980" and cites["chalmers2012mirt"] == "Chalmers 2012"
    plain = plain_notebooks.convert({"page": executed_page()}, cites)["page"]
    markdown = [c["source"] for c in plain["cells"] if c["cell_type"] == "markdown"]
    assert markdown[0] == "## Part A\n\n$$\na = b\n\\tag{1}\n$$\n\nAs (1) says (Lord 1980)."
    assert markdown[1] == "*Figure 1.* A curve."  # the caption follows its figure
    assert markdown[2].startswith("The value 0.12 and Figure 1; see Part A and [irt_primer](irt_primer.ipynb).")
    assert markdown[2].endswith("<table><tr><td>1</td></tr></table>")
    assert markdown[3] == "**Exercise 1: A sum (compute).** Compute $1 + 1$."
    assert markdown[4] == "<details><summary>Solution to Exercise 1</summary>\n\nTwo, Exercise 1.\n\n</details>"
    assert markdown[5] == "<details><summary>Solution to Exercise 1</summary>\n\nThe cell shows it.\n\n</details>"
    assert markdown[6] == "> **Note.** A note."
    code = [c for c in plain["cells"] if c["cell_type"] == "code"]
    assert len(code) == 3 and code[2]["metadata"] == {"jupyter": {"source_hidden": True}}  # still collapsed
    for path in ("page.ipynb",):
        nbformat.write(executed_page(), tmp_path / path)
    assert plain_notebooks.main([str(tmp_path / "page.ipynb"), "--out", str(tmp_path / "plain")]) == 0
    nbformat.validate(nbformat.read(tmp_path / "plain" / "page.ipynb", as_version=4))


def test_a_reference_to_another_notebook_names_it():
    first = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("```{math}\n:label: eq-one\nx\n```")])
    second = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("By {eq}`eq-one`, {eq}`eq-nowhere`.")])
    plain = plain_notebooks.convert({"first": first, "second": second}, {})
    assert plain["second"]["cells"][0]["source"] == "By (1) of [first](first.ipynb), (eq-nowhere)."


def test_bad_arguments_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        plain_notebooks.main([str(tmp_path / "missing.ipynb"), "--out", str(tmp_path)])
    assert "no such notebook" in capsys.readouterr().err
    nbformat.write(executed_page(), tmp_path / "page.ipynb")
    with pytest.raises(SystemExit):
        plain_notebooks.main([str(tmp_path / "page.ipynb"), "--out", str(tmp_path)])
    assert "holds the notebooks themselves" in capsys.readouterr().err
