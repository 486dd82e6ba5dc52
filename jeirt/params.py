"""The public entry points' parameters, each declared once with its type and range (scikit-learn's
`_parameter_constraints`), and checked by one function, `check_params`.

A module declares the constraints of its entry point beside it (`JEIRT_PARAMS` in `jeirt.estimator`,
`SCORE_PARAMS` and `SUGGEST_PARAMS` in `jeirt.tasks.evaluation`, `ROUTE_PARAMS` in `jeirt.tasks.routing`,
...) with `declare`, which keeps them in `DECLARED`. The command line checks each numeric option
against the declaration of the parameter it feeds (`jeirt.cli.checks.OPTION_PARAMS` names, for each
option, that very object), so an option's range and its parameter's cannot drift apart; it only turns
the failure into its exit code and names the option. The standard library only: `jeirt --help` imports
this without numpy or torch.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

DECLARED: dict[str, dict[str, Interval]] = {}  # entry point -> its parameters' constraints


@dataclass(frozen=True)
class Interval:
    """A number of `kind` (int or float) between `low` and `high` (None: unbounded; `closed` says which
    ends belong: "both", "left", "right" or "neither"), finite; `none`: None is allowed too (a default
    chosen elsewhere). `what` names the quantity in messages ("an embedding dimension")."""

    kind: type
    low: float | None
    high: float | None
    what: str
    closed: str = "both"
    none: bool = False

    def admits(self, value: object) -> bool:
        """Whether `value` is of the kind and inside the range (bool is not a number here)."""
        if value is None:
            return self.none
        wanted = numbers.Integral if self.kind is int else numbers.Real
        if isinstance(value, bool) or not isinstance(value, wanted) or not math.isfinite(float(value)):
            return False
        x = float(value)
        low_ok = self.low is None or (x >= self.low if self.closed in ("both", "left") else x > self.low)
        high_ok = self.high is None or (x <= self.high if self.closed in ("both", "right") else x < self.high)
        return low_ok and high_ok

    def describe(self) -> str:
        """The range in words: "an embedding dimension between 1 and 65536"."""
        if self.low is not None and self.high is not None:
            if self.closed == "both":
                bounds = f"between {_show(self.low)} and {_show(self.high)}"
            else:
                left = "[" if self.closed in ("both", "left") else "("
                right = "]" if self.closed in ("both", "right") else ")"
                bounds = f"in {left}{_show(self.low)}, {_show(self.high)}{right}"
        elif self.low is not None:
            bounds = f"at least {_show(self.low)}" if self.closed in ("both", "left") else f"above {_show(self.low)}"
        elif self.high is not None:
            bounds = f"at most {_show(self.high)}"
        else:
            bounds = "(any finite value)"
        kind = " (a whole number)" if self.kind is int else ""
        return f"{self.what}{kind} {bounds}" + (", or None" if self.none else "")


def _show(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


class InvalidParameter(ValueError, TypeError):
    """A parameter outside its declared type or range; `name`, `value` and `constraint` say which (a
    ValueError and a TypeError, as scikit-learn's InvalidParameterError: either `except` catches it)."""

    def __init__(self, where: str, name: str, value: object, constraint: Interval):
        self.where, self.name, self.value, self.constraint = where, name, value, constraint
        super().__init__(f"{where}: {name}={value!r}; expected {constraint.describe()}.")


def declare(where: str, **constraints: Interval) -> dict[str, Interval]:
    """Record the constraints of entry point `where` (a module-level declaration) and return them."""
    DECLARED[where] = dict(constraints)
    return DECLARED[where]


def check_params(where: str, constraints: Mapping[str, Interval], values: Mapping[str, object]) -> None:
    """Raise `InvalidParameter` for the first of `values` outside its constraint (values without one are
    not looked at)."""
    for name, constraint in constraints.items():
        if name in values and not constraint.admits(values[name]):
            raise InvalidParameter(where, name, values[name], constraint)


SEED = Interval(int, 0, 2**32 - 1, "a seed")  # every seed of the library (numpy's generators take these)
THREADS = Interval(int, 1, 1024, "a number of threads")  # torch's CPU threads (torch.set_num_threads)
TORCH_PARAMS = declare("torch.set_num_threads", threads=THREADS)

# The declarations. Each entry point checks its own with `check_params`; the command line's options name
# these objects (`jeirt.cli.checks.OPTION_PARAMS`).
JEIRT_PARAMS = declare(
    "JEIRT",
    d=Interval(int, 1, 65536, "an embedding dimension"),
    search_budget=Interval(float, 0, None, "a number of seconds", closed="neither"),
    random_state=SEED,
    dropout=Interval(float, 0, 1, "a probability", closed="left", none=True),
    feature_noise=Interval(float, 0, None, "a noise scale relative to the features' norm", none=True),
    folds=Interval(int, 2, 65536, "a number of cross-fitting folds (nested=True)"),
)
TRAINING_PARAMS = declare("TrainConfig", max_epochs=Interval(int, 1, 100_000, "a number of epochs"))
SAMPLE_PARAMS = declare("sample_items", n=Interval(int, 1, None, "a number of questions"))
SCORE_PARAMS = declare(
    "score_new_models",
    draws=Interval(int, 2, 1_000_000, "a number of posterior draws (two or more: the sd needs two)"),
    level=Interval(float, 0, 1, "an interval level", closed="neither"),
    seed=SEED,
)
SUGGEST_PARAMS = declare(
    "suggest_questions",
    k=Interval(int, 1, None, "a number of questions"),
    seed=SEED,
    random_share=Interval(float, 0, 1, "a share"),
)
ROUTE_PARAMS = declare("choose", lam=Interval(float, 0, None, "a price weight (probability given up per USD)"))
