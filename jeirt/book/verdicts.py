"""The verdicts results pages print about the paper's claims, computed from numbers in one place.

A page never writes "holds" by hand: it passes the measured quantity here and glues what comes back,
so a rerun that contradicts the paper says so.
"""
from __future__ import annotations


def yes_no(holds: bool) -> str:
    """'yes' when the claim's condition holds on the measured numbers, else 'no'."""
    return "yes" if bool(holds) else "no"


def within(gap: float, tolerance: float, above: str = "higher", below: str = "lower") -> str:
    """'yes' when |gap| <= tolerance; otherwise 'no: ' plus `above` (gap > 0) or `below` (gap < 0)."""
    if abs(gap) <= tolerance:
        return "yes"
    return "no: " + (above if gap > 0 else below)


def compared(gap: float, se: float, sds: float = 2.0) -> str:
    """'ahead of', 'behind' or 'level with': the sign of `gap` where it exceeds `sds` standard errors."""
    if gap > sds * se:
        return "ahead of"
    if gap < -sds * se:
        return "behind"
    return "level with"
