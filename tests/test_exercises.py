"""Tests for the exercises: `jeirt_book.exercises.AnswerKey` grades an answer against what a page
recorded without showing it, takes a second recording (a notebook run again), and names the typical
mistakes; and every page writes its exercises one way (sphinx-exercise directives, a solution for each,
answer keys collapsed and out of the site, every key name an exercise of the page)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from jeirt_book.exercises import AnswerKey

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import check_html  # noqa: E402

jupytext = pytest.importorskip("jupytext")

PAGES = [
    doc
    for doc in [*check_html.toc_files(ROOT / "_toc.yml"), "book/_template"]
    if (ROOT / f"{doc}.md").read_text().startswith("---\njupytext:")
]
PRIMER = [doc for doc in PAGES if Path(doc).name.startswith("irt_primer")]
LABEL = re.compile(r"^:::\{exercise\}(?P<title>.*)\n:label: (?P<label>ex-[\w-]+)$", re.MULTILINE)
SOLUTION = re.compile(r"^:::\{solution(?:-start)?\} (ex-[\w-]+)$", re.MULTILINE)
KEY = re.compile(r"^(\w+) = AnswerKey\(\)", re.MULTILINE)  # the page's answer key, usually `key`


def test_answer_key_grades_without_showing_the_answer(capsys):
    key = AnswerKey()
    key.add("stretch", 1.3291, 0.01, "the slope in 'Joint and marginal maximum likelihood'")
    assert key.message("stretch", None).startswith("Exercise stretch: not answered yet")
    assert key.message("stretch", 1.33) == "Exercise stretch: correct."
    wrong = key.message("stretch", 1.25)
    assert wrong.startswith("Exercise stretch: not quite (1.25)") and "Joint and marginal" in wrong
    assert all("1.329" not in key.message("stretch", answer) for answer in (None, 1.33, 1.25, "x"))
    assert "expected a number" in key.message("stretch", "a lot")
    assert key.check("stretch", 1.33) is None  # nothing returned: a notebook shows the line once
    assert capsys.readouterr().out == "Exercise stretch: correct.\n"


def test_a_second_recording_replaces_the_first():
    """A notebook run twice records every answer twice: the second replaces the first."""
    key = AnswerKey()
    key.add("best-k", 2, 0, "the held-out table")
    key.add("best-k", 2, 0, "the held-out table")
    assert key.message("best-k", 2) == "Exercise best-k: correct."
    key.add("best-k", 3, 0, "the held-out table")
    assert key.message("best-k", 3) == "Exercise best-k: correct." and len(key.answers) == 1


def test_typical_mistakes_get_their_feedback_and_never_pass():
    key = AnswerKey()
    key.add(
        "info",
        1.0,
        0.01,
        "the 2PL information",
        mistakes={0.5: "that is the curve's slope", 4.0: "a^2 alone leaves out P (1 - P)"},
    )
    assert key.message("info", 0.504) == (
        "Exercise info: not quite (0.504): that is the curve's slope. Look again at the 2PL information."
    )
    assert "a^2 alone" in key.message("info", 4) and "slope" not in key.message("info", 4)
    assert key.message("info", 0.7) == "Exercise info: not quite (0.7). Look again at the 2PL information."
    with pytest.raises(ValueError, match="would be graded correct"):
        key.add("info", 1.0, 0.01, "the 2PL information", mistakes={1.005: "close enough to pass"})
    with pytest.raises(ValueError, match="raw labels"):
        key.add("info", 1.0, 0.01, "the 2PL information", mistakes={0.5: "see {eq}`eq-irt-information`"})


def test_answers_given_as_words():
    key = AnswerKey()
    key.add("kind", "flat", hint="the projection", choices=("rising", "flat", "falling"), mistakes={"rising": "no"})
    assert key.message("kind", " Flat ") == "Exercise kind: correct."
    assert key.message("kind", "rising") == "Exercise kind: not quite ('rising'): no. Look again at the projection."
    assert key.message("kind", "up") == "Exercise kind: answer one of rising, flat, falling (got 'up')."
    assert "one of rising, flat, falling" in key.message("kind", None)
    with pytest.raises(ValueError, match="not one of the choices"):
        key.add("kind", "steep", hint="h", choices=("rising", "flat"))
    with pytest.raises(ValueError, match="expected a finite number"):
        key.add("kind", "flat", hint="h")


def test_answer_key_refuses_bad_names_hints_and_values():
    key = AnswerKey()
    with pytest.raises(KeyError, match="no answer recorded for exercise 'x'"):
        key.message("x", 1.0)
    with pytest.raises(ValueError, match="tolerance"):
        key.add("x", 1.0, -0.1, "h")
    with pytest.raises(ValueError, match="finite"):
        key.add("x", float("nan"), 0.1, "h")
    with pytest.raises(ValueError, match="lowercase letters"):
        key.add("Exercise 3", 1.0, 0.1, "h")
    with pytest.raises(ValueError, match="no hint"):
        key.add("x", 1.0, 0.1, "")
    for hint in ("Eq. (eq-irt-3pl)", "{eq}`eq-irt-tcc`", "the figure fig-q3"):
        with pytest.raises(ValueError, match="raw label"):
            key.add("x", 0.55, 0.005, hint)
    key.add("x", 0.55, 0.005, "the 3PL equation in 'Guessing: the three-parameter model'")


def exercise_section(doc: str) -> str:
    text = (ROOT / f"{doc}.md").read_text()
    assert "\n## Exercises\n" in text, f"{doc}: no '## Exercises' section"
    section = text.split("\n## Exercises\n", 1)[1]
    return re.split(r"\n## ", section, maxsplit=1)[0]


@pytest.mark.parametrize("doc", PAGES)
def test_every_exercise_is_a_directive_with_one_solution(doc):
    section = exercise_section(doc)
    assert ":::{dropdown} Solution" not in section and not re.search(r"^\d+\. ", section, re.MULTILINE), (
        f"{doc}: write each exercise as :::{{exercise}} with a :label: and its answer as :::{{solution}} "
        "(sphinx-exercise), not a numbered list and dropdowns"
    )
    labels = [m["label"] for m in LABEL.finditer(section)]
    assert labels and len(labels) == section.count(":::{exercise}"), f"{doc}: every exercise needs a :label:"
    assert len(set(labels)) == len(labels), f"{doc}: two exercises share a label"
    solved = SOLUTION.findall(section)
    assert sorted(solved) == sorted(labels), f"{doc}: exercises {labels} but solutions to {solved}"
    assert section.count(":::{solution-start}") == section.count(":::{solution-end}"), f"{doc}: unclosed solution"


@pytest.mark.parametrize("doc", PAGES)
def test_answer_keys_are_collapsed_and_name_the_page_s_exercises(doc):
    notebook = jupytext.read(ROOT / f"{doc}.md")
    labels = [m["label"] for m in LABEL.finditer(exercise_section(doc))]
    shared = os.path.commonprefix(labels) if len(labels) > 1 else labels[0]
    page = shared[: shared.rindex("-") + 1]  # ex-<page>-, what every label of the page starts with
    assert page.count("-") >= 2, f"{doc}: label every exercise ex-<page>-<name>, one <page> a page: {labels}"
    keys = KEY.findall("\n".join(c.source for c in notebook.cells if c.cell_type == "code"))
    if not keys:
        return  # a page whose exercises are all written ones
    names = re.compile(rf"\b{keys[0]}\.(add|check)\(\s*\"([^\"]+)\"")
    added, checked = set(), set()
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        found = names.findall(cell.source)
        added |= {name for kind, name in found if kind == "add"}
        checked |= {name for kind, name in found if kind == "check"}
        if f"{keys[0]}.add(" in cell.source:
            assert "remove-cell" in cell.metadata.get("tags", []), f"{doc}: an answer key cell must be remove-cell"
            assert cell.metadata.get("jupyter", {}).get("source_hidden"), (
                f"{doc}: give an answer key cell `jupyter: {{source_hidden: true}}` (collapsed in JupyterLab)"
            )
    assert checked <= added, f"{doc}: key.check of exercises never recorded: {sorted(checked - added)}"
    for name in added:
        assert f"{page}{name}" in labels, f"{doc}: answer {name!r} belongs to no exercise (label {page}{name})"
    for loop in re.findall(r"for name, answer in \[(.*?)\]", "\n".join(c.source for c in notebook.cells), re.S):
        checked |= set(re.findall(r"\(\"([^\"]+)\",", loop))
    assert added <= checked, f"{doc}: answers recorded but never checked: {sorted(added - checked)}"


@pytest.mark.parametrize("doc", PAGES)
def test_solution_code_is_collapsed_in_a_notebook(doc):
    """A solution's code cells sit inside its dropdown on the site and open collapsed in a notebook."""
    section = exercise_section(doc)
    for block in re.findall(r":::\{solution-start\}.*?:::\{solution-end\}", section, re.S):
        for header in re.findall(r"```\{code-cell\} ipython3\n(.*?)\n```", block, re.S):
            assert "source_hidden: true" in header and "outputs_hidden: true" in header, (
                f"{doc}: a solution's code cell needs `jupyter: {{source_hidden: true, outputs_hidden: true}}`"
            )


@pytest.mark.parametrize("doc", PRIMER)
def test_primer_exercises_compute_or_predict(doc):
    """The primer's exercises ask for a computation or a prediction, said in the title, never a look-up."""
    titles = [m["title"].strip() for m in LABEL.finditer(exercise_section(doc))]
    kinds = [re.search(r"\((compute|predict)\)$", title) for title in titles]
    assert all(kinds), f"{doc}: end every exercise's title with (compute) or (predict): {titles}"
