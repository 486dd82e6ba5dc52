"""The house style of a figure, checked by the tests of the pages' figure functions."""

from __future__ import annotations

import matplotlib.pyplot as plt


def check_figure(fig: plt.Figure) -> None:
    """Raise AssertionError if `fig` has a title or an axis label with capitals (house style)."""
    for ax in fig.axes:
        assert not ax.get_title(), f"axes has title {ax.get_title()!r}; put it in the caption."
        for label in (ax.get_xlabel(), ax.get_ylabel()):
            assert label == label.lower() or "$" in label, f"axis label {label!r} should be lowercase."
    assert not fig._suptitle, "figure has a suptitle; put it in the caption."
