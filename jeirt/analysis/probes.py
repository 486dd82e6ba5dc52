"""What a direction of a question space encodes: a difference-of-means probe for a property that
cuts across subjects, scored within subjects so that a subject detector gets no credit, and the
model side of it (Eq. 3: a model vector's projection on the probe is the model-dependent part of
its logit gap between marked and unmarked questions).

The property here is a readable rule, "needs arithmetic" (`needs_arithmetic`), so that every
verdict can be traced to the text; any rule `str -> bool` works with `mark`. The book's page
"Beyond the paper" runs the probe; `jeirt_book.beyond` draws it."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from jeirt.metrics import auc
from jeirt.model import unit_rows

# 1. The rule: "needs arithmetic"
#
# A question needs arithmetic when (a) its stem (the text before the options) holds an explicit
# operation between two numbers, e.g. "3 + 4", "2^10", "6 \times 7", "x = 5 * 2"; or (b) its stem
# gives at least two numbers and at least half of its options are numbers, e.g. "$100 million ...
# 20-year life ... what is the depreciation?" with options "$7,500,000", "$5,000,000", ....
# Left out on purpose: "-" and "/" as operators, which mostly mark ranges, ages and units
# ("9-year-old", "1914-1918", "120/80 mm Hg", "km/h"); numbers glued to letters count as numbers
# ("20-year" gives 20), so years and ages can make a stem "numeric", but the options must be numbers too.
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")  # 12, 3.5, 7,500,000


EXPRESSION = re.compile(r"\d\s*(?:[+*×÷^=]|\\times|\\cdot|\\div)\s*[-(]?\s*\d")  # digit operator digit


FIRST_OPTION = re.compile(r"\n\(?A[.)]\s")  # options start at a line "A. ..." or "(A) ..."


OPTION_LINE = re.compile(r"^\(?[A-J][.)]\s+(.*)$", re.MULTILINE)


NUMERIC_OPTION = re.compile(r"^[-−+±$€£~≈(]*\s*\d")  # an option that starts with a number


MIN_STEM_NUMBERS = 2  # rule (b): numbers the stem must give


MIN_NUMERIC_OPTIONS = 0.5  # rule (b): share of options that must be numbers


def question_stem(text: str) -> str:
    """The text before the first option line ("A. ..."); the whole text when there are no options."""
    match = FIRST_OPTION.search(text)
    return text if match is None else text[: match.start()]


def option_texts(text: str) -> list[str]:
    """The options' texts (lines "A. ..." to "J. ..." after the stem); empty when there are none."""
    match = FIRST_OPTION.search(text)
    return [] if match is None else [o.strip() for o in OPTION_LINE.findall(text[match.start() :])]


def arithmetic_evidence(text: str) -> dict:
    """What the rule sees in one text: an expression in the stem, the stem's numbers, numeric options."""
    stem, options = question_stem(text), option_texts(text)
    numeric = float(np.mean([bool(NUMERIC_OPTION.match(o)) for o in options])) if options else 0.0
    expression = EXPRESSION.search(stem)
    return {
        "expression": expression.group(0) if expression else "",
        "stem numbers": len(NUMBER.findall(stem)),
        "numeric options": numeric,
    }


def needs_arithmetic(text: str) -> bool:
    """True if the stem has an operation between numbers, or gives numbers and asks for a number."""
    e = arithmetic_evidence(text)
    return bool(e["expression"]) or (
        e["stem numbers"] >= MIN_STEM_NUMBERS and e["numeric options"] >= MIN_NUMERIC_OPTIONS
    )


def mark(texts: Sequence[str], rule: Callable[[str], bool] = needs_arithmetic) -> np.ndarray:
    """`rule` applied to every text: a boolean array (n,)."""
    if not callable(rule):
        raise TypeError(f"rule={rule!r}; expected a function from a question's text to True or False.")
    return np.array([bool(rule(str(t))) for t in texts], dtype=bool)


# 2-3. The probe direction, projections and how well they detect the property
def difference_of_means(x: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """Unit vector (d,): mean unit row of `x` (n, d) where `marked`, minus the mean where not, normalised."""
    u, marked = unit_rows(x), np.asarray(marked, dtype=bool)
    if marked.shape != (len(u),):
        raise ValueError(f"marked has shape {marked.shape}; expected one flag per row of x, ({len(u)},).")
    if marked.all() or not marked.any():
        raise ValueError(f"{int(marked.sum())} of {len(u)} rows are marked; a difference of means needs both kinds.")
    diff = u[marked].mean(axis=0) - u[~marked].mean(axis=0)
    norm = np.linalg.norm(diff)
    if norm == 0:
        raise ValueError("the marked and unmarked rows have the same mean direction; there is no probe axis.")
    return diff / norm


def project(x: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Projection (n,) of each row's unit direction on `direction` (a cosine when it has unit length)."""
    direction = np.asarray(direction, dtype=np.float64)
    if direction.shape != (np.shape(x)[1],):
        raise ValueError(
            f"direction has shape {direction.shape}; expected one entry per column of x, ({np.shape(x)[1]},)."
        )
    return unit_rows(x) @ direction


def within_group_auc(
    scores: np.ndarray, marked: np.ndarray, groups: Sequence | np.ndarray, min_each: int = 1
) -> tuple[float, pd.DataFrame]:
    """AUC of `scores` for `marked` inside each group with at least `min_each` of both kinds.

    Returns (the mean over those groups, each weighted equally; a table per group with columns
    questions, marked, auc). A score that only tells groups apart gets 0.5 here.
    """
    scores, marked, groups = np.asarray(scores, dtype=np.float64), np.asarray(marked, dtype=bool), np.asarray(groups)
    if not (len(scores) == len(marked) == len(groups)):
        raise ValueError(
            f"scores ({len(scores)}), marked ({len(marked)}) and groups ({len(groups)}) "
            "must have one entry per question."
        )
    rows = []
    for g in pd.unique(groups):
        sel = groups == g
        n_marked = int(marked[sel].sum())
        if min(n_marked, int(sel.sum()) - n_marked) >= min_each:
            rows.append(
                {"group": g, "questions": int(sel.sum()), "marked": n_marked, "auc": auc(scores[sel], marked[sel])}
            )
    table = pd.DataFrame(rows, columns=["group", "questions", "marked", "auc"]).set_index("group")
    return (float(table["auc"].mean()) if len(table) else float("nan")), table


def group_baseline(
    marked_train: np.ndarray, groups_train: Sequence | np.ndarray, groups: Sequence | np.ndarray
) -> np.ndarray:
    """A "subject detector": each question scored by the share of marked training questions in its
    group (the overall share for a group unseen in training). Its within-group AUC is 0.5."""
    if len(marked_train) != len(groups_train):
        raise ValueError(
            f"marked_train ({len(marked_train)}) and groups_train ({len(groups_train)}) must "
            "have one entry per training question."
        )
    share = pd.Series(np.asarray(marked_train, dtype=float)).groupby(np.asarray(groups_train)).mean()
    return pd.Series(np.asarray(groups)).map(share).fillna(float(np.mean(marked_train))).to_numpy()


def group_means(scores: np.ndarray, marked: np.ndarray, groups: Sequence | np.ndarray) -> pd.DataFrame:
    """Per group: questions, share marked and mean score, sorted by the mean score (largest first)."""
    if not (len(scores) == len(marked) == len(groups)):
        raise ValueError(
            f"scores ({len(scores)}), marked ({len(marked)}) and groups ({len(groups)}) "
            "must have one entry per question."
        )
    frame = pd.DataFrame(
        {
            "group": np.asarray(groups),
            "marked": np.asarray(marked, dtype=float),
            "score": np.asarray(scores, dtype=np.float64),
        }
    )
    out = frame.groupby("group").agg(
        questions=("score", "size"), share_marked=("marked", "mean"), mean_projection=("score", "mean")
    )
    return out.rename(columns={"share_marked": "share marked", "mean_projection": "mean projection"}).sort_values(
        "mean projection", ascending=False
    )


def probe_report(
    x: np.ndarray,
    marked: np.ndarray,
    groups: Sequence | np.ndarray,
    train: np.ndarray,
    held_out: np.ndarray,
    min_each: int = 1,
) -> dict:
    """Steps 2-3 for one representation `x` (n_items, d): the direction fitted on the `train` items
    (positions), its projections of all items, and AUCs on the `held_out` items (positions).

    Returns {"direction", "projection" (n_items,), "auc", "within auc", "per group" (table),
    "groups compared"}.
    """
    marked, groups = np.asarray(marked, dtype=bool), np.asarray(groups)
    train, held_out = np.asarray(train), np.asarray(held_out)
    if np.intersect1d(train, held_out).size:
        raise ValueError("train and held_out share items; the probe must be scored on questions it was not fitted on.")
    direction = difference_of_means(x[train], marked[train])
    projection = project(x, direction)
    within, table = within_group_auc(projection[held_out], marked[held_out], groups[held_out], min_each)
    return {
        "direction": direction,
        "projection": projection,
        "auc": auc(projection[held_out], marked[held_out]),
        "within auc": within,
        "per group": table,
        "groups compared": len(table),
    }


# 4. The model side
def accuracy_gap(
    labels: np.ndarray, marked: np.ndarray, items: np.ndarray | None = None, groups: Sequence | np.ndarray | None = None
) -> np.ndarray:
    """Each model's accuracy on marked questions minus on unmarked ones (n_models,), over `items`
    (positions; default all). With `groups`, the gap is taken inside each group that has both kinds
    and averaged over groups weighted by their questions, so subjects' mix does not count.
    labels (n_models, n_items), NaN = not graded."""
    labels, marked = np.asarray(labels, dtype=np.float64), np.asarray(marked, dtype=bool)
    if labels.ndim != 2 or marked.shape != (labels.shape[1],):
        raise ValueError(
            f"labels has shape {labels.shape} and marked {marked.shape}; expected "
            "(n_models, n_items) and one flag per item, (n_items,)."
        )
    items = np.arange(labels.shape[1]) if items is None else np.asarray(items)
    groups = np.zeros(labels.shape[1]) if groups is None else np.asarray(groups)
    total, weight = np.zeros(labels.shape[0]), np.zeros(labels.shape[0])
    for g in pd.unique(groups[items]):
        cols = items[groups[items] == g]
        yes, no = cols[marked[cols]], cols[~marked[cols]]
        if len(yes) == 0 or len(no) == 0:
            continue
        with warnings.catch_warnings():  # a model graded on neither kind in a group gets NaN there
            warnings.simplefilter("ignore", RuntimeWarning)
            gap = np.nanmean(labels[:, yes], axis=1) - np.nanmean(labels[:, no], axis=1)
        ok = np.isfinite(gap)
        total[ok] += len(cols) * gap[ok]
        weight[ok] += len(cols)
    if not weight.any():
        raise ValueError("no group holds both marked and unmarked questions among `items`; no gap to measure.")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight > 0, total / weight, np.nan)


def model_table(
    model_vectors: np.ndarray,
    direction: np.ndarray,
    labels: np.ndarray,
    marked: np.ndarray,
    items: np.ndarray,
    groups: Sequence | np.ndarray,
    names: Sequence[str],
) -> pd.DataFrame:
    """Per model: its vector's projection on the probe (v . w, not normalised: |v| is skill), its
    accuracy gap (marked minus unmarked) on `items` overall and within groups, and its accuracy there."""
    labels = np.asarray(labels, dtype=np.float64)
    return pd.DataFrame(
        {
            "projection": np.asarray(model_vectors, dtype=np.float64) @ direction,
            "gap": accuracy_gap(labels, marked, items),
            "gap within groups": accuracy_gap(labels, marked, items, groups),
            "accuracy": np.nanmean(labels[:, items], axis=1),
        },
        index=list(names),
    )


def partial_spearman(a: np.ndarray, b: np.ndarray, control: np.ndarray) -> float:
    """Spearman correlation of `a` and `b` with `control` taken out: the Pearson correlation of the
    residuals of their ranks after a straight-line fit on the ranks of `control`."""
    a, b, c = (np.asarray(v, dtype=np.float64) for v in (a, b, control))
    if not (a.shape == b.shape == c.shape) or a.ndim != 1:
        raise ValueError(f"a {a.shape}, b {b.shape} and control {c.shape} must be 1-D of one length.")
    ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    if ok.sum() < 4:
        return float("nan")
    ra, rb, rc = (stats.rankdata(v[ok]) for v in (a, b, c))
    design = np.column_stack([np.ones_like(rc), rc])
    resid = [r - design @ np.linalg.lstsq(design, r, rcond=None)[0] for r in (ra, rb)]
    return float(np.corrcoef(*resid)[0, 1])
