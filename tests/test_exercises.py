"""Tests for jeirt_book.exercises: answers are graded against what a page recorded, within the
exercise's tolerance, in one printed line that never shows the answer."""

from __future__ import annotations

import pytest

from jeirt_book.exercises import AnswerKey


def test_answer_key_grades_without_showing_the_answer(capsys):
    key = AnswerKey()
    key.add("8", 1.3291, 0.01, "the slope in 'Joint and marginal maximum likelihood'")
    assert key.message("8", None).startswith("Exercise 8: not answered yet")
    assert key.message("8", 1.33) == "Exercise 8: correct."
    wrong = key.message("8", 1.25)  # J / (J - 1), not what the page measured
    assert wrong.startswith("Exercise 8: not quite (1.25)") and "Joint and marginal" in wrong
    assert all("1.329" not in key.message("8", answer) for answer in (None, 1.33, 1.25))
    assert key.check("8", 1.33) is None  # nothing returned: a notebook shows the line once
    assert capsys.readouterr().out == "Exercise 8: correct.\n"


def test_answer_key_refuses_duplicates_unknown_names_and_bad_tolerances():
    key = AnswerKey()
    key.add("9", 2, 0, "the held-out table")
    assert key.message("9", 2) == "Exercise 9: correct." and "not quite" in key.message("9", 3)
    with pytest.raises(ValueError, match="already has an answer"):
        key.add("9", 3, 0, "x")
    with pytest.raises(KeyError, match="no answer recorded for exercise '10'"):
        key.message("10", 1.0)
    with pytest.raises(ValueError, match="tolerance"):
        key.add("11", 1.0, -0.1, "x")


def test_answer_key_refuses_hints_with_raw_labels():
    key = AnswerKey()
    for hint in ("Eq. (eq-irt-3pl)", "{eq}`eq-irt-tcc`", "the figure fig-q3"):
        with pytest.raises(ValueError, match="raw label"):
            key.add("7", 0.55, 0.005, hint)
    key.add("7", 0.55, 0.005, "the 3PL equation in 'Guessing: the three-parameter model'")
