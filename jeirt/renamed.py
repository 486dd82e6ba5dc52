"""Old spellings of the public API, declared once and each answered with its new name, as the command
line answers `--prior` with `--prior-covariance` (CHANGELOG.md says when each was renamed)."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")

RENAMED = {  # (where, old name) -> new name
    ("jeirt.onboard", "PRIOR_WIDTHS"): "PRIOR_WIDTH_GRID",
    ("jeirt.onboard", "VALIDATION_WIDTHS"): "VALIDATION_PRIOR_WIDTH_GRID",
    ("jeirt.onboard", "ABILITY_WIDTH"): "ABILITY_WIDENING",
    ("JEIRT", "onboard_prior_scale_"): "onboard_prior_width_",
    ("JEIRT", "onboard_prior_scales_"): "onboard_prior_widths_",
    ("QuestionBank", "prior"): "unanswered",
    ("QuestionBank.from_model", "prior"): "prior_covariance",
    ("JEIRT.onboard", "prior_scale"): "prior_width",
    ("jeirt.tasks", "RULES"): "SELECTION_RULES",  # one word for a question: not "item" at the boundary
    ("jeirt.tasks.evaluation", "RULES"): "SELECTION_RULES",
    ("jeirt.tasks.evaluation", "select_items"): "select_questions",
    ("jeirt.tasks.evaluation", "next_items"): "next_questions",
}


def missing_attribute(where: str, name: str) -> AttributeError:
    """The AttributeError for `where.name`: naming the new name when `name` is an old one."""
    new = RENAMED.get((where, name))
    if new is None:
        return AttributeError(f"{where} has no attribute {name!r}")
    return AttributeError(f"{where}.{name} was renamed {new}; use {where}.{new}.")


def renamed_keyword(where: str, old: str) -> TypeError:
    """The TypeError for the keyword `old` of `where`, renamed: names the new one."""
    return TypeError(f"{where}({old}=...) was renamed {RENAMED[(where, old)]}; write {RENAMED[(where, old)]}=...")


def one_spelling(where: str, old: str, old_value: T | None, new_value: T, default: T) -> T:
    """A keyword given in its old spelling (`old_value`, None when not given) or its new one: the value
    meant; both given (two values for one parameter) is a TypeError naming both."""
    if old_value is None:
        return new_value
    new = RENAMED[(where, old)]
    if new_value is not default and new_value is not None:
        raise TypeError(
            f"{where} was given {new}={new_value!r} and its old spelling {old}={old_value!r}: two values for one "
            f"parameter; give {new} only."
        )
    return old_value
