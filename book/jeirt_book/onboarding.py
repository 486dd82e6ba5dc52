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


def paired_table(curve: pd.DataFrame, settings: list[str], references: list[str]) -> pd.DataFrame:
    """One row per setting: for each reference, the mean gap setting - reference over the (seed,
    held-out model) pairs, in points, and its SE clustered by seed and by model
    (`verdicts.clustered_se`; with one seed, the pairs' SE as if independent); a setting is not
    compared with itself. E.g. each share against the prior mean's floor and "All"."""
    from jeirt_book import verdicts
    from jeirt_book.experiments.onboarding import onboarding_gap

    rows = {}
    for setting in settings:
        row = {}
        for ref in references:
            if ref != setting:
                gap = 100 * onboarding_gap(curve, setting, ref).dropna()
                if gap.index.get_level_values("seed").nunique() > 1:
                    row[f"- {ref}"], row[f"- {ref} se"] = (verdicts.clustered_se(gap)[k] for k in ("estimate", "se"))
                else:
                    row[f"- {ref}"], row[f"- {ref} se"] = verdicts.mean_and_se(gap)
        rows[setting] = row
    return pd.DataFrame(rows).T


# The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`).


def table1_stats(curve: pd.DataFrame, notes: dict[str, str], profile: str) -> dict:
    """Table 1's rows on the held-out models' gaps (points), each paired per (seed, model) and its SE
    clustered by seed and by model (`verdicts.clustered_se`: a seed's held-out models share its two
    fits, the joint one and the one without them, so the joint fit's own training noise is in the
    interval): each share of `notes` against joint training ('<share>', the prior mean's gap as the
    floor), 100% over 1% ('curve') and 1% over the prior mean ('floor'). `curve`: the onboarding rows
    with "All" and the prior mean's "0 answers"; `notes`: share -> words after the row. With one seed
    (the smoke `profile`) there is no spread over seeds: no verdict."""
    from jeirt_book import verdicts
    from jeirt_book.experiments.onboarding import onboarding_gap
    from jeirt_book.verdicts import Stat

    mean = 100 * curve.groupby("setting")["accuracy"].mean()
    seeds = curve["seed"].nunique()

    def gap(setting: str, reference: str) -> dict | None:
        values = 100 * onboarding_gap(curve, setting, reference).dropna()
        return verdicts.clustered_se(values) if seeds > 1 else None

    def stat(setting: str, reference: str, label: str, note: str, **rule_args) -> Stat | verdicts.NoVerdict:
        g = gap(setting, reference)
        if g is None:
            words = f"{label} {mean[setting] - mean[reference]:+.2f} points ({note})"
            return verdicts.NoVerdict(words, "one seed: no spread over seeds", profile=profile)
        models = curve.groupby("seed")["model"].nunique().max()  # held out per seed
        limit = f"{seeds} seeds x {models} held-out models"
        return Stat(
            g["estimate"],
            se=g["se"],
            df=g["df"],
            spec="+.2f",
            unit=" points",
            label=label,
            note=note,
            rule_args={"limit": limit} | rule_args,
        )

    floor = gap("All", "0 answers")
    stats: dict = {}
    for share, extra in notes.items():
        words = f"{mean[share]:.2f}% vs {mean['All']:.2f}%; 0 answers {mean['0 answers']:.2f}%" + extra
        no_power = (
            {} if floor is None else {"floor": -floor["estimate"], "floor_se": floor["se"], "floor_df": floor["df"]}
        )
        stats[share] = stat(share, "All", f"{share} - joint", words, **no_power)
    span = mean["100%"] - mean["1%"]
    stats["curve"] = stat(
        "100%",
        "1%",
        "100% - 1%",
        f"{mean['1%']:.2f}% from 1% to {mean['100%']:.2f}% from 100%; 0 answers {mean['0 answers']:.2f}%",
        limit=f"{seeds} seeds, a curve of {span:+.2f} points from 1% to 100%",
    )
    stats["floor"] = stat("1%", "0 answers", "1% - 0 answers", f"{mean['1%']:.2f}% vs {mean['0 answers']:.2f}%")
    return stats


def other_stats(
    recent_curve: pd.DataFrame,
    profile: str,
    slopes: dict,
    d: int,
    rate: tuple[float, int],
    timed: list[float],
    retrain: float,
) -> dict:
    """The recent models' loss from 100% to 1% of the answers ('recent', points; the same models in
    every seed, so the SE is clustered by seed and by model), Appendix D's log-log slope at `d`
    ('rate'; `rate`: its SE from the fit's residuals and the budgets it rests on, df = budgets - 2;
    `slopes`: d -> slope) and onboarding's speed against retraining ('speed': the retraining time over
    the slowest and the fastest of the `timed` calls; the ratio is shown, only 'faster' is judged)."""
    from jeirt_book.verdicts import Stat

    recent = _recent_loss(recent_curve, profile)
    one = float(np.median(timed))
    rate_se, budgets = rate
    return {
        "recent": recent,
        "rate": Stat(
            slopes[d],
            se=rate_se,
            df=budgets - 2,
            spec=".2f",
            label=f"log-log slope at d = {d}",
            rule_args={"limit": f"the {budgets} budgets from {4 * d} to 512 answers"},
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


def _recent_loss(recent_curve: pd.DataFrame, profile: str):
    """The recent models' loss from 100% to 1% of the answers, points; the same models in every seed,
    so the SE is clustered by seed and by model (a `NoVerdict` with one seed)."""
    from jeirt_book import verdicts
    from jeirt_book.experiments.onboarding import onboarding_gap
    from jeirt_book.verdicts import Stat

    loss = 100 * onboarding_gap(recent_curve, "100%", "1%").dropna()
    ends = 100 * recent_curve.groupby("setting")["accuracy"].mean()
    models, seeds = loss.index.get_level_values("model").nunique(), loss.index.get_level_values("seed").nunique()
    words = f"{models} models from May 2024 on, {seeds} seed(s): {ends['1%']:.2f}% to {ends['100%']:.2f}%"
    if seeds > 1:
        g = verdicts.clustered_se(loss)
        recent: Stat | verdicts.NoVerdict = Stat(
            g["estimate"],
            se=g["se"],
            df=g["df"],
            spec=".2f",
            unit=" points",
            label="loss from 100% to 1%",
            note=words,
            rule_args={"limit": f"{models} recent models x {seeds} seeds"},
        )
    else:
        recent = verdicts.NoVerdict(
            f"loss from 100% to 1% {loss.mean():.2f} points ({words})",
            "one seed: no spread over seeds",
            profile=profile,
        )
    return recent
