"""Exercises that check themselves: a page records each answer where it computes it, and the reader's cell
checks an answer against it without showing it.

    key = AnswerKey()
    key.add("info", info, tolerance=0.01, hint="the information at theta = b, in 'Item and test information'",
            mistakes={0.5: "that is the curve's slope a/4 at theta = b; the information is a^2 P (1 - P)"})
    ...
    answer_info = None             # the reader's number
    key.check("info", answer_info)  # one line: not answered yet / correct / not quite, with feedback

An exercise has one name on its page: the label of its `{exercise}` directive without the page's `ex-`
prefix (tests/test_exercises.py checks every page). Recording a name again replaces its answer, so a
notebook can be run top to bottom as often as one likes. An answer is a number, within an absolute
tolerance that belongs to the exercise (what a careful answer by hand can reach), or a word from a short
list of choices (`choices=`), compared without case. `mistakes` maps the typical wrong answers to the
feedback each deserves; the hint names a section or a table by its title, never a raw label.

The cells that record answers are tagged `remove-cell` (out of the site) and carry
`jupyter: {source_hidden: true}`, so JupyterLab and Notebook 7 open them collapsed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

RAW_LABEL = re.compile(r"\{(eq|numref|ref|doc)\}|\b(eq|fig|tab|sec)-[\w-]+")  # MyST roles and labels
NAME = re.compile(r"[a-z0-9][a-z0-9-]*")  # a name as it appears in the exercise's label, ex-<name>


@dataclass(frozen=True)
class Answer:
    """One exercise's answer: a number (with its tolerance) or a word (one of `choices`), the hint, and
    the feedback for each typical mistake."""

    value: float | str
    tolerance: float
    hint: str
    mistakes: dict = field(default_factory=dict)  # wrong answer -> what that answer gets wrong
    choices: tuple[str, ...] = ()  # the words a reader may answer, for a question answered by a word

    def matches(self, answer, value) -> bool:
        """Whether `answer` is `value`: within the tolerance for a number, the same word otherwise."""
        if self.choices:
            return _word(answer) == _word(value)
        return abs(float(answer) - float(value)) <= self.tolerance


@dataclass
class AnswerKey:
    """A page's answers, recorded where the page computes them; `check` grades one answer."""

    answers: dict[str, Answer] = field(default_factory=dict, repr=False)

    def add(
        self,
        name: str,
        value: float | str,
        tolerance: float = 0.0,
        hint: str = "",
        mistakes: dict | None = None,
        choices: tuple[str, ...] | list[str] = (),
    ) -> None:
        """Record the answer to exercise `name` (again: the new answer replaces the old one)."""
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ValueError(f"name={name!r}; expected lowercase letters, digits and dashes (the exercise's label).")
        if not hint:
            raise ValueError(f"exercise {name!r} has no hint; name where on the page the answer comes from.")
        if RAW_LABEL.search(hint):
            raise ValueError(
                f"hint={hint!r} holds a raw label, which a printed line cannot resolve; "
                "name the section, table or figure by its title instead."
            )
        choices = tuple(_word(c) for c in choices)
        if choices:
            if not isinstance(value, str) or _word(value) not in choices:
                raise ValueError(f"exercise {name!r}: the answer {value!r} is not one of the choices {choices}.")
        elif isinstance(value, str) or not math.isfinite(float(value)):
            raise ValueError(f"exercise {name!r}: answer {value!r}; expected a finite number, or give choices=.")
        if not tolerance >= 0:
            raise ValueError(f"tolerance={tolerance}; expected a non-negative number.")
        answer = Answer(value if choices else float(value), float(tolerance), hint, {}, choices)
        for wrong, why in (mistakes or {}).items():
            if choices and _word(wrong) not in choices:
                raise ValueError(f"exercise {name!r}: the mistake {wrong!r} is not one of the choices {choices}.")
            if answer.matches(wrong, answer.value):
                raise ValueError(
                    f"exercise {name!r}: the mistake {wrong!r} would be graded correct; "
                    "a typical mistake must lie outside the tolerance."
                )
            if not why or RAW_LABEL.search(why):
                raise ValueError(f"exercise {name!r}: the feedback for {wrong!r} must be words without raw labels.")
            answer.mistakes[_word(wrong) if choices else float(wrong)] = why
        self.answers[name] = answer

    def message(self, name: str, answer) -> str:
        """The verdict on `answer` for exercise `name`, as one line that does not give the answer away."""
        if name not in self.answers:
            raise KeyError(f"no answer recorded for exercise {name!r}; recorded: {sorted(self.answers)}.")
        key = self.answers[name]
        if answer is None:
            what = f"one of {', '.join(key.choices)}" if key.choices else "your number"
            return f"Exercise {name}: not answered yet; replace None by {what}."
        if key.choices:
            if _word(answer) not in key.choices:
                return f"Exercise {name}: answer one of {', '.join(key.choices)} (got {answer!r})."
            shown = repr(_word(answer))
        else:
            try:
                number = float(answer)
            except (TypeError, ValueError):
                return f"Exercise {name}: expected a number, got {answer!r}."
            shown = f"{number:.4g}"
        if key.matches(answer, key.value):
            return f"Exercise {name}: correct."
        for wrong, why in key.mistakes.items():
            if key.matches(answer, wrong):
                return f"Exercise {name}: not quite ({shown}): {why}. Look again at {key.hint}."
        return f"Exercise {name}: not quite ({shown}). Look again at {key.hint}."

    def check(self, name: str, answer) -> None:
        """Print the verdict on `answer` (nothing is returned, so a notebook shows the line once)."""
        print(self.message(name, answer))


def _word(answer) -> str:
    """An answer given as a word, as it is compared: stripped, lowercase."""
    return str(answer).strip().lower()
