"""Exercises that check themselves: a page records its answers once, where it computes them, and the
reader's cell checks an answer against them without showing them.

    key = AnswerKey()
    key.add("5", info, tolerance=0.01, hint="the information at theta = b, in 'Item and test information'")
    ...
    answer_5 = None        # the reader's number
    key.check("5", answer_5)   # prints one line: not answered yet / correct / not quite, with the hint

The tolerance is absolute and belongs to the exercise (what a careful answer by hand can reach);
the hint names a section or a table by its title, never a raw label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

RAW_LABEL = re.compile(r"\{(eq|numref|ref|doc)\}|\b(eq|fig|tab|sec)-[\w-]+")  # MyST roles and labels


@dataclass
class AnswerKey:
    """A page's computed answers, each with its tolerance and a hint; `check` grades one answer."""

    answers: dict = field(default_factory=dict, repr=False)  # name -> (value, tolerance, hint)

    def add(self, name: str, value: float, tolerance: float, hint: str) -> None:
        """Record the answer to exercise `name`, computed by the page."""
        if name in self.answers:
            raise ValueError(f"exercise {name!r} already has an answer; give each exercise one name.")
        if not tolerance >= 0:
            raise ValueError(f"tolerance={tolerance}; expected a non-negative number.")
        if RAW_LABEL.search(hint):
            raise ValueError(
                f"hint={hint!r} holds a raw label, which a printed line cannot resolve; "
                "name the section, table or figure by its title instead."
            )
        self.answers[name] = (float(value), float(tolerance), hint)

    def message(self, name: str, answer) -> str:
        """The verdict on `answer` for exercise `name`, as one line that does not give the answer away."""
        if name not in self.answers:
            raise KeyError(f"no answer recorded for exercise {name!r}; recorded: {sorted(self.answers)}.")
        value, tolerance, hint = self.answers[name]
        if answer is None:
            return f"Exercise {name}: not answered yet; replace None by your number. Hint: {hint}."
        if abs(float(answer) - value) <= tolerance:
            return f"Exercise {name}: correct."
        return f"Exercise {name}: not quite ({float(answer):.4g}). Look at {hint}."

    def check(self, name: str, answer) -> None:
        """Print the verdict on `answer` (once; nothing is returned, so a notebook shows one line)."""
        print(self.message(name, answer))
