"""The Known-answers page's figure: a new benchmark's predictions against the number of models whose
answers are known. The protocols are `jeirt_book.experiments.new_models`', the refinement of a new question
`jeirt.questions.refine_questions`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from jeirt_book.figures import LINESTYLES, style


def curves_by_n(
    ax: plt.Axes,
    table: pd.DataFrame,
    value: str = "accuracy",
    by: str = "method",
    references: dict[str, float] | None = None,
    ylabel: str | None = None,
) -> plt.Axes:
    """Mean `value` of `table` against n (models whose answers are known), one line per `by` (colour,
    marker and line style), with the spread over seeds as error bars where there are several seeds;
    `references` are horizontal lines (label -> value)."""
    for i, (name, rows) in enumerate(table.groupby(by, sort=False)):
        stats = rows.groupby("n")[value].agg(["mean", "std"])
        spread = stats["std"] if rows["seed"].nunique() > 1 else None  # no bars over one seed
        s = style(i)
        ax.errorbar(
            stats.index,
            stats["mean"],
            yerr=spread,
            color=s["color"],
            marker=s["marker"],
            linestyle=s["linestyle"],
            capsize=2,
            label=str(name),
        )
    for j, (name, level) in enumerate((references or {}).items()):
        ax.axhline(level, color="0.4", linestyle=LINESTYLES[(j + 1) % len(LINESTYLES)], linewidth=1, label=name)
    ns = sorted(table["n"].unique())
    ax.set_xticks(ns)
    ax.set_xlabel("models whose answers are known, n")
    ax.set_ylabel((ylabel or value).lower())
    ax.legend()
    return ax


# The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`).
OTHERS = ("je-irt", "rasch (per question)", "2pl (per question)")


def claim_stats(
    kq_runs: pd.DataFrame, at100: pd.Series, accuracy: pd.Series, n_test: int, gains: pd.Series, emb: pd.Series
) -> dict:
    """Per dataset at k = 100 known questions, the corrected estimate's error minus JE-IRT's and the
    Rasch model's ('<method> <dataset>', paired by seed and model, the SE clustered by seed and by
    model: a seed's held-out models share its fits; `kq_runs`: one row per run,
    `at100`: mean error by dataset and method); the corrected predictions' accuracy (x 100) from all
    the answers over the best of `OTHERS` ('all answers', binomial se over `n_test` test questions at
    its widest); what 10 models' answers add to a new question's accuracy ('few', paired over the seeds
    of `gains`, seeds - 1 df; a `NoVerdict` with one seed; `emb`: accuracy by number of models)."""
    from jeirt_book import verdicts
    from jeirt_book.verdicts import Stat

    stats = _error_gaps(kq_runs, at100)
    mine, others = accuracy["je-irt + corrections", "100%"], [accuracy[m, "100%"] for m in OTHERS]
    stats["all answers"] = Stat(
        mine - max(others),
        se=100 * (2 * 0.25 / n_test) ** 0.5,
        spec="+.1f",
        unit=" points",
        label="over the best other",
        note=f"{mine:.1f}% vs {others[0]:.1f}% (JE-IRT), {others[1]:.1f}% (Rasch), {others[2]:.1f}% (2PL); "
        "SE: binomial over the test questions, at its widest",
        rule_args={"limit": f"{n_test:,} test questions"},
    )
    words = f"{emb[0]:.3f} -> {emb[10]:.3f} accuracy"
    stats["few"] = (
        Stat(
            gains.mean(),
            se=verdicts.mean_and_se(gains)[1],
            df=len(gains) - 1,
            spec="+.3f",
            label="gain from 10 models' answers",
            note=words,
            rule_args={"limit": f"{len(gains)} seeds"},
        )
        if len(gains) > 1
        else verdicts.NoVerdict(words, "one seed: no spread", profile="smoke")
    )
    return stats


def _error_gaps(kq_runs: pd.DataFrame, at100: pd.Series) -> dict:
    """Per dataset at k = 100, the corrected estimate's error minus JE-IRT's and the Rasch model's,
    paired by seed and model, the SE clustered by both (a `NoVerdict` with one seed)."""
    from jeirt_book import verdicts
    from jeirt_book.verdicts import Stat

    stats: dict[str, Stat | verdicts.NoVerdict] = {}
    for name in at100.index.unique("dataset"):
        k100 = kq_runs[(kq_runs["dataset"] == name) & (kq_runs["k"] == 100)]
        errors = k100.set_index(["method", "seed", "model"])["abs_error"]  # paired by seed and model
        for method in OTHERS[:2]:
            paired = errors["je-irt + corrections"] - errors[method]
            seeds = paired.index.get_level_values(0).nunique()
            models = paired.groupby(level=0).size().max()  # held out per seed
            note = f"error {at100[name, 'je-irt + corrections']:.4f} vs {at100[name, method]:.4f}"
            limit = f"{seeds} seeds x {models} held-out models"
            if seeds < 2:
                words = f"error gap {paired.mean():+.4f} ({note})"
                stats[f"{method} {name}"] = verdicts.NoVerdict(words, "one seed: no spread over seeds", limit=limit)
                continue
            g = verdicts.clustered_se(paired)
            stats[f"{method} {name}"] = Stat(
                g["estimate"],
                se=g["se"],
                df=g["df"],
                spec="+.4f",
                label="error gap",
                note=note,
                rule_args={"limit": limit},
            )
    return stats
