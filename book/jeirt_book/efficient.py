"""The Efficient-evaluation page's figures: the error of the few-question estimate against the
budget k, and one model's estimates with their intervals. The estimate is `jeirt.tasks.evaluation`'s,
the protocol's pieces `jeirt_book.experiments.new_models`'.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from jeirt_book.figures import PALETTE, style


def error_by_k(
    ax: plt.Axes,
    summary: pd.DataFrame,
    value: str = "mae",
    ylabel: str = "mean absolute error",
    baseline: str = "plain mean",
    rules: list[str] | None = None,
) -> plt.Axes:
    """`value` against the number of questions asked k, both axes logarithmic, one line per
    selection rule of `summary` (columns rule, k, value); the `baseline` rule is drawn in black and
    dashed so that every rule reads against it."""
    rules = rules or [r for r in pd.unique(summary["rule"]) if r != baseline]
    for i, rule in enumerate(rules):
        rows = summary[summary["rule"] == rule].sort_values("k")
        s = style(i)
        ax.plot(rows["k"], rows[value], color=s["color"], marker=s["marker"], linestyle="-", label=rule)
    if baseline in set(summary["rule"]):
        rows = summary[summary["rule"] == baseline].sort_values("k")
        ax.plot(rows["k"], rows[value], color="black", marker="x", linestyle="--", label=baseline)
    ks = sorted(summary["k"].unique())
    ax.set_xscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_yscale("log")  # errors fall like 1/sqrt(k): a straight line of slope -1/2 on these axes
    ax.yaxis.set_major_locator(mpl.ticker.LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))
    ax.yaxis.set_major_formatter(mpl.ticker.FormatStrFormatter("%g"))
    ax.minorticks_off()
    ax.set_xlabel("questions asked, k (log scale)")
    ax.set_ylabel(f"{ylabel.lower()} (log scale)")
    ax.legend()
    return ax


def estimates_with_intervals(
    ax: plt.Axes, table: pd.DataFrame, truth: pd.Series, label: str = "estimate, 90% interval"
) -> plt.Axes:
    """One row per group (index of `table`, columns estimate, lower, upper): the estimate as a dot
    with its interval as a bar, and the true value (`truth`, same index) as a cross."""
    rows = np.arange(len(table))[::-1]
    ax.errorbar(
        table["estimate"],
        rows,
        xerr=[table["estimate"] - table["lower"], table["upper"] - table["estimate"]],
        fmt="o",
        color=PALETTE[0],
        capsize=2,
        label=label,
    )
    ax.scatter(truth.reindex(table.index), rows, marker="x", color="black", zorder=3, label="true accuracy")
    ax.set_yticks(rows)
    ax.set_yticklabels([str(g) for g in table.index])
    ax.set_xlabel("accuracy")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower right")
    return ax


VERDICTS = ["bias_verdict", "coverage_verdict", "mae_verdict"]  # the goal columns of the stored table


def stored_goals(name: str = "new_models") -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """The stored run of `benchmarks/new_models.py` (results/<name>.json), which the build does not
    rerun: its settings (with the command that made it), the cells per goal and verdict, and every
    JE-IRT cell's goals."""
    stored = _stored(name)
    index = [c for c in ("dataset", "group", "method", "goal") if c in stored["goal_counts"][0]]
    counts = pd.DataFrame(stored["goal_counts"]).set_index(index)
    return stored["config"], counts, pd.DataFrame(stored["goals"])


def _stored(name: str) -> dict:
    import json

    from jeirt.settings import REPO_ROOT

    return json.loads((REPO_ROOT / "results" / f"{name}.json").read_text())


# A goal's verdict as one mark beside its number, so that a goal table fits the page's column.
MARKS = {"meets": "✓", "misses": "✗", "inconclusive here": "?", "-": ""}
LEGEND = "✓ meets the goal, ✗ misses it, ? inconclusive here (its 95% interval straddles a bound)"
GROUPS = {"held-out folds": "(a)", "held-out family": "(b)"}  # the protocols as the page names them


def design_table(name: str = "new_models_design", corrections: str = "with", estimate: str = "design") -> pd.DataFrame:
    """The goal table of a stored run with design-based estimates, as `benchmarks/new_models.py` built it
    (`goal_table`), one row per group ((a) held-out folds, (b) held-out families), dataset, rule and k:
    `estimate`'s ("design" or "model") MAE, bias and 90% coverage, each goal's verdict as a mark
    (`MARKS`; the intervals behind them are in the stored run and `--report`), and its MAE minus the
    random rule's at the same k, marked the same way; the model-based table also has the plain mean's
    and Rasch's MAE and bias, in that order (`corrections` with or without)."""
    if estimate not in ("design", "model"):
        raise ValueError(f"estimate={estimate!r}; expected 'design' or 'model'.")
    table = pd.DataFrame(_stored(name)["goal_table"][corrections]).set_index(["group", "dataset", "rule", "k"])
    table = table.rename(columns=lambda c: c.removeprefix(f"{estimate} "))

    def number(column: str) -> pd.Series:
        return table[column].str.split(" [", n=1, regex=False).str[0]  # '0.036 [0.031, 0.042]' -> '0.036'

    def marked(column: str, goal: str) -> pd.Series:
        return number(column) + " " + table[goal].map(MARKS)

    shown = pd.DataFrame(
        {
            "MAE": number("MAE"),
            "bias": marked("bias", "bias goal"),
            "coverage": marked("coverage", "coverage goal"),
            "vs random": table["MAE - random's"].map(_marked_gap),
        }
    )
    if estimate == "model":
        for method in ("plain mean", "Rasch"):  # 'MAE bias': '0.050 +0.001'
            shown[method] = table[f"{method} MAE / bias"].str.replace(" / ", " ", regex=False)
    return shown.rename(index=GROUPS, level="group")


def _marked_gap(text: str) -> str:
    """'+0.007 [+0.000, +0.013] misses' -> '+0.007 ✗'; '-' (the random rule itself) stays."""
    if text == "-":
        return text
    value, rest = text.split(" [", 1)
    return f"{value} {MARKS[rest.split('] ', 1)[1]]}"


def bias_by_method(cells: pd.DataFrame) -> pd.DataFrame:
    """Each cell's bias with its 95% interval and verdict mark, one column per method (design-based,
    JE-IRT model-based), one row per group, dataset and k."""
    text = [f"{r.bias:+.3f} [{r.bias_lo:+.3f}, {r.bias_hi:+.3f}] {MARKS[r.bias_verdict]}" for r in cells.itertuples()]
    table = cells.assign(bias=text, group=cells["group"].map(GROUPS).fillna(cells["group"]))
    return table.set_index(["group", "dataset", "k", "method"])["bias"].unstack("method")


def adaptive_against_random(name: str = "new_models_design") -> pd.DataFrame:
    """Per group and dataset, the adaptive rules' design-based cells (with and without corrections, every
    k) by their verdict against the random rule's error at the same k, and how many of those that meet
    it also keep the bias goal: does any adaptive rule earn its place?"""
    cells = pd.DataFrame(_stored(name)["goals"])
    cells = cells[(cells["method"] == "design") & cells["rule"].str.startswith("adaptive")]
    counts = pd.crosstab([cells["group"], cells["dataset"]], cells["random_verdict"])
    counts = counts.reindex(columns=["meets", "inconclusive here", "misses"], fill_value=0)
    earned = (cells["random_verdict"] == "meets") & (cells["bias_verdict"] != "misses")
    counts["meets, bias not missed"] = earned.groupby([cells["group"], cells["dataset"]]).sum()
    counts["cells"] = cells.groupby(["group", "dataset"]).size()
    return counts


def claim_stats(summary_at_k: pd.DataFrame, runs: pd.DataFrame, name: str, setting: str, k: int = 100) -> dict:
    """The page's two statistics on one dataset at budget `k`, named '<name> error' and '<name> gap': the
    best rule's mean absolute error (the plain mean left out) and its paired gap to the plain mean, each
    with its SE clustered by held-out model (a model's error averaged over the seeds' question draws
    first; models - 1 df) and its interval widened for the best of the rules compared (`tests`)."""
    from jeirt.tasks.evaluation import PLAIN
    from jeirt_book.verdicts import Stat, mean_and_se

    candidates = summary_at_k.drop(index=PLAIN)["mae"]
    rule = candidates.idxmin()
    per_model = runs[runs["k"] == k].groupby(["rule", "model"])["abs_error"].mean()
    gap, gap_se = mean_and_se(per_model[rule] - per_model[PLAIN])
    best, plain = summary_at_k.loc[rule, "mae"], summary_at_k.loc[PLAIN, "mae"]
    models = per_model[rule].size
    held = f"{models} held-out models"
    where: dict = dict(setting=f"{setting}; {held}", rule_args={"limit": held}, df=models - 1, tests=len(candidates))
    return {
        f"{name} error": Stat(
            best, se=mean_and_se(per_model[rule])[1], note=f"{rule}, the best of {len(candidates)}", **where
        ),
        f"{name} gap": Stat(gap, se=gap_se, spec="+.3f", label="gap", note=f"{best:.3f} vs {plain:.3f}", **where),
    }
