"""The Onboarding page's tables and figures (Sec. 3.3, Tables 1-2, App. D): the curve over the share
of answers, the rate at which the error falls and Table 1's layout in percent. The experiment's
steps are in `jeirt_book.experiments.onboarding`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from jeirt_book.figures import style


def onboarding_curves(ax: plt.Axes, tables: dict[str, pd.DataFrame]) -> plt.Axes:
    """Accuracy of onboarded LLMs against the share of their training items (log axis), mean with a
    +-1 sd band, one line per table of `onboarding_table`; each table's "All"
    column (joint training) as a horizontal line in the same colour."""
    for i, (label, table) in enumerate(tables.items()):
        s = style(i)
        shares = [c for c in table.columns if c != "All"]
        x = np.array([float(c.rstrip("%")) / 100 for c in shares])
        mean, sd = table.loc["mean", shares].to_numpy(float), table.loc["sd", shares].to_numpy(float)
        ax.fill_between(x, mean - sd, mean + sd, color=s["color"], alpha=0.12, linewidth=0)
        ax.plot(x, mean, color=s["color"], marker=s["marker"], linestyle="-", label=f"{label}: onboarded")
        if "All" in table.columns:
            ax.axhline(
                table.at["mean", "All"],
                color=s["color"],
                linestyle="--",
                linewidth=1,
                label=f"{label}: trained jointly (all)",
            )
    ax.set_xscale("log")
    ticks = [0.01, 0.05, 0.1, 0.2, 0.4, 1.0]
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:.0%}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("share of the new model's training items used (log scale)")
    ax.set_ylabel("test accuracy of the new models")
    ax.legend(loc="lower right")
    return ax


def rate_accuracy(ax: plt.Axes, summaries: dict[int, pd.DataFrame]) -> plt.Axes:
    """Mean test accuracy of new LLMs against the items each was onboarded from (log axis), one line
    per d (`rate_summary`); the all-items accuracy dashed in the same colour."""
    for i, (d, summary) in enumerate(summaries.items()):
        s = style(i)
        rows = summary.drop(index="all", errors="ignore")
        ax.plot(rows["items"], rows["accuracy"], color=s["color"], marker=s["marker"], linestyle="-", label=f"d = {d}")
        if "all" in summary.index:
            ax.axhline(summary.at["all", "accuracy"], color=s["color"], linestyle="--", linewidth=0.9)
    _budget_ticks(ax, summaries)
    ax.set_xlabel("items seen per new model, n (log scale)")
    ax.set_ylabel("test accuracy")
    ax.legend(loc="lower right")
    return ax


def _budget_ticks(ax: plt.Axes, summaries: dict[int, pd.DataFrame]) -> None:
    """A base-2 log x axis with every other budget of `summaries` as a plain-number tick."""
    seen = sorted({int(n) for sm in summaries.values() for n in sm["items"].drop(index="all", errors="ignore")})
    ax.set_xscale("log", base=2)
    ax.set_xticks(seen[::2] if len(seen) > 6 else seen)
    ax.set_xticklabels([str(n) for n in (seen[::2] if len(seen) > 6 else seen)])
    ax.minorticks_off()


def rate_loglog(
    ax: plt.Axes,
    summaries: dict[int, pd.DataFrame],
    column: str = "kl",
    ylabel: str = "excess log loss over the all-items fit",
) -> plt.Axes:
    """`column` of each `rate_summary` against the items seen, both axes logarithmic, one line per d;
    non-positive values cannot be drawn on a log axis and are left out. A grey line of slope -1
    (through the first d's value at the middle budget) shows the d/n rate of the excess log loss (the
    square of Appendix D's O(sqrt(d/n)) error of the vector)."""
    anchor = None
    for i, (d, summary) in enumerate(summaries.items()):
        s = style(i)
        rows = summary.drop(index="all", errors="ignore")
        rows = rows[rows[column] > 0]
        ax.plot(rows["items"], rows[column], color=s["color"], marker=s["marker"], linestyle="-", label=f"d = {d}")
        if anchor is None and len(rows):
            anchor = rows.iloc[len(rows) // 2]
    if anchor is not None:
        seen = pd.concat([sm["items"].drop(index="all", errors="ignore") for sm in summaries.values()])
        n = np.array([seen.min(), seen.max()], dtype=float)
        ax.plot(
            n,
            anchor[column] * anchor["items"] / n,
            color="0.45",
            linestyle=":",
            marker="",
            linewidth=1.2,
            label="slope -1 (rate 1/n)",
        )
    _budget_ticks(ax, summaries)
    ax.set_yscale("log")
    ax.set_xlabel("items seen per new model, n (log scale)")
    ax.set_ylabel(ylabel.lower())
    ax.legend(loc="lower left")
    return ax


def stored_prior_rises() -> pd.Series:
    """The largest rise of the test log loss from one share to the next, over the datasets of the stored
    run of `benchmarks/onboarding_prior.py` (results/onboarding_prior.json), by (prior, corrections):
    the page quotes it for the width it uses and for the evidence's, which the build does not rerun."""
    import json

    from jeirt.settings import REPO_ROOT

    stored = json.loads((REPO_ROOT / "results" / "onboarding_prior.json").read_text())
    test = pd.DataFrame(stored["summary"]).query("part == 'test'").sort_values("share")
    rises = test.groupby(["prior", "corrections", "dataset"], sort=False)["log_loss"].apply(lambda x: x.diff().max())
    return rises.groupby(["prior", "corrections"], sort=False).max()


def stored_recipe_runs() -> pd.DataFrame:
    """Best validation loss of the library's recipe and the metabench section's own, by profile and d,
    from the stored run of `scripts/onboarding_recipe.py` (results/onboarding_recipe_metabench.json)."""
    import json

    from jeirt.settings import REPO_ROOT

    stored = json.loads((REPO_ROOT / "results" / "onboarding_recipe_metabench.json").read_text())
    runs = pd.DataFrame(stored["runs"])
    return runs.pivot_table(index=["profile", "d"], columns="recipe", values="best_val_loss", sort=False)


def as_percent(table: pd.DataFrame) -> pd.DataFrame:
    """An `onboarding_table` for people, one row per setting ("1%" ... "All"): test accuracy
    "mean ± sd" in percent, and the items each model saw."""
    cells = [f"{100 * table.at['mean', c]:.2f} ± {100 * table.at['sd', c]:.2f}" for c in table.columns]
    items = table.loc["items"].round().astype(int).to_numpy()
    out = pd.DataFrame({"accuracy (%)": cells, "items seen": items}, index=table.columns)
    out.index.name = "answers used"
    return out


def paper_rows(table: pd.DataFrame, stats: dict) -> pd.DataFrame:
    """An `onboarding_table` in the paper's layout: rows (encoder, stat) in %, columns 1% ... 100%, all."""
    out = 100 * table.loc[list(stats)].rename(index=stats, columns={"All": "all"})
    out.index = pd.MultiIndex.from_product([["sent"], out.index])
    return out.astype(float)


def capped(gap: pd.Series, joint: dict, cap: int) -> str:
    """A note for the row when onboarding is better and a joint fit ran into the epoch `cap`."""
    hit = any(len(m.history_.val_loss) == cap for m in joint.values())
    return f"; the joint fit stopped at the {cap}-epoch cap" if gap.mean() > 0.005 and hit else ""


# The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`).


def table1_stats(paired: pd.DataFrame, mean: pd.Series, floor_acc: float, notes: dict[str, str], models: int) -> dict:
    """Table 1's rows on the held-out models' paired gaps (points; `paired`: share -> '- All', '- 0
    answers', '- 1%' and their se): each share of `notes` against joint training ('<share>', the prior
    mean's gap as the floor), 100% over 1% ('curve') and 1% over the prior mean ('floor'); `mean`:
    accuracy (%) per share, `floor_acc`: the prior mean's (%), `notes`: share -> words after the row;
    `models`: how many held-out models the gaps are paired over."""
    from jeirt_book.verdicts import Stat

    stats: dict[str, Stat | str] = {}
    limit = {"limit": f"{models} held-out models"}
    for share, note in notes.items():
        p = paired.loc[share]
        stats[share] = Stat(
            p["- All"],
            se=p["- All se"],
            spec="+.2f",
            unit=" points",
            label=f"{share} - joint",
            note=f"{mean[share]:.2f}% vs {mean['All']:.2f}%; 0 answers {floor_acc:.2f}% ({share} - 0 answers "
            f"{p['- 0 answers']:+.2f} +- {p['- 0 answers se']:.2f})" + note,
            rule_args=limit
            | {"floor": -paired.at["All", "- 0 answers"], "floor_se": paired.at["All", "- 0 answers se"]},
        )
    gap = paired.at["100%", "- 1%"]
    stats["curve"] = Stat(
        gap,
        se=paired.at["100%", "- 1% se"],
        spec="+.2f",
        unit=" points",
        label="100% - 1%",
        note=f"{mean['1%']:.2f}% from 1% to {mean['100%']:.2f}% from 100%; 0 answers {floor_acc:.2f}%",
        rule_args={"limit": f"{models} held-out models, a curve of {gap:+.2f} points from 1% to 100%"},
    )
    stats["floor"] = Stat(
        paired.at["1%", "- 0 answers"],
        se=paired.at["1%", "- 0 answers se"],
        spec="+.2f",
        unit=" points",
        label="1% - 0 answers",
        note=f"{mean['1%']:.2f}% vs {floor_acc:.2f}%",
        rule_args=limit,
    )
    return stats


def other_stats(
    recent_loss: pd.Series,
    recent_accuracy: tuple[float, float],
    slopes: dict,
    d: int,
    rate_se: float,
    timed: list[float],
    retrain: float,
) -> dict:
    """The recent models' loss from 100% to 1% of the answers ('recent', points, se over the models),
    Appendix D's log-log slope at `d` ('rate', se `rate_se`; `slopes`: d -> slope) and onboarding's
    speed-up over retraining ('speed', read on the slowest and fastest of the `timed` calls)."""
    from jeirt_book import verdicts
    from jeirt_book.verdicts import Stat

    one = float(np.median(timed))
    return {
        "recent": Stat(
            recent_loss.mean(),
            se=verdicts.mean_and_se(recent_loss)[1],
            spec=".2f",
            unit=" points",
            label="loss from 100% to 1%",
            note=f"{len(recent_loss)} models from May 2024 on: {recent_accuracy[0]:.2f}% to "
            f"{recent_accuracy[1]:.2f}%, sd {recent_loss.std():.2f}",
            rule_args={"limit": f"{len(recent_loss)} recent models"},
        ),
        "rate": Stat(
            slopes[d],
            se=rate_se,
            spec=".2f",
            label=f"log-log slope at d = {d}",
            rule_args={"limit": f"the budgets from {4 * d} to 512 answers"},
            note="slopes " + ", ".join(f"{v:.2f} (d = {k})" for k, v in slopes.items()),
        ),
        "speed": Stat(
            retrain / one,
            interval=(retrain / max(timed), retrain / min(timed)),
            spec=".0f",
            label="times faster",
            rule_args={"limit": f"{len(timed)} timed calls"},
            note=f"{one:.3f} s ({min(timed):.3f} to {max(timed):.3f} s over {len(timed)} calls) vs {retrain:.1f} s",
        ),
    }
