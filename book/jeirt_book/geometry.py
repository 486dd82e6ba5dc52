"""The Geometry page's figures (book/geometry.md): the bound of Props. 2-3 against |dP|, a map of
the model vectors by family, the question directions' cosines to their means, a kernel PCA map by
benchmark, and one opposite pair of questions. The measurements are in `jeirt.analysis.geometry`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from jeirt.analysis.geometry import OTHER_FAMILY
from jeirt_book.figures import MARKERS, PALETTE, shorten_name, style

if TYPE_CHECKING:
    from jeirt.estimator import JEIRT

COSINE_LABELS = {
    "global": "to the mean direction of all questions",
    "own benchmark": "to the mean direction of its benchmark",
}


def cosine_histograms(
    ax: plt.Axes, cosines: pd.DataFrame, columns=("global", "own benchmark"), bins: int = 40, log: bool = True
) -> plt.Axes:
    """Histograms (share of questions) of the cosine columns of `cosine_to_means`,
    as outlines with different line styles so they read in grey; a log scale (`log`) keeps the
    thin tail visible next to the peak near 1."""
    edges = np.linspace(-1, 1, bins + 1)
    for i, column in enumerate(columns):
        values = cosines[column].to_numpy()
        s = style(i)
        ax.hist(
            values,
            bins=edges.tolist(),
            weights=np.full(len(values), 1 / len(values)),
            histtype="step",
            color=s["color"],
            linestyle=s["linestyle"],
            linewidth=1.5,
            label=COSINE_LABELS.get(column, column),
        )
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("cosine of a question's direction to a mean direction")
    ax.set_ylabel("share of questions" + (" (log scale)" if log else ""))
    ax.legend(loc="upper left")
    return ax


def opposite_pair(
    ax: plt.Axes,
    models,
    labels: np.ndarray,
    probs: np.ndarray,
    questions=("question a", "question b"),
    max_names: int = 40,
) -> plt.Axes:
    """Each model's answers to two questions: JE-IRT's P(correct) as lines, the observed answer as
    a marker on the line (filled: correct, open: wrong, none: not graded). `labels`, `probs`:
    (n_models, 2), models in the order given; their names label the axis when there are at most
    `max_names` of them (shortened to the part after the last "/")."""
    x = np.arange(len(models))
    for k in range(2):
        s = style(k)
        ax.plot(
            x,
            probs[:, k],
            color=s["color"],
            linestyle=s["linestyle"],
            marker="none",
            label=f"{questions[k]}: je-irt p(correct)",
        )
        right, wrong = labels[:, k] == 1, labels[:, k] == 0
        ax.scatter(
            x[right],
            probs[right, k],
            marker=s["marker"],
            color=s["color"],
            s=28,
            zorder=3,
            label=f"{questions[k]}: answered correctly",
        )
        ax.scatter(
            x[wrong],
            probs[wrong, k],
            marker=s["marker"],
            facecolor="white",
            edgecolor=s["color"],
            s=28,
            zorder=3,
            label=f"{questions[k]}: answered wrongly",
        )
    if len(models) <= max_names:
        short = [shorten_name(m) for m in models]
        ax.set_xticks(x)
        ax.set_xticklabels(short, rotation=90, fontsize=9)
    else:
        ax.set_xticks([])
    ax.set_ylabel("p(correct)")
    ax.set_xlabel("models, least to most accurate overall")
    ax.grid(axis="x", visible=False)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.02), ncols=2, fontsize=9)
    return ax


def bound_scatter(
    ax: plt.Axes,
    bound: np.ndarray,
    gap: np.ndarray,
    label: str | None = None,
    index: int = 0,
    max_points: int = 20000,
    seed: int = 0,
) -> plt.Axes:
    """|dP| against its bound (one point per question pair and model) with the diagonal y = x:
    a bound that holds leaves every point on or below it. Shows at most `max_points` points."""
    bound, gap = np.ravel(bound), np.ravel(gap)
    if len(bound) > max_points:
        keep = np.random.default_rng(seed).choice(len(bound), size=max_points, replace=False)
        bound, gap = bound[keep], gap[keep]
    s = style(index)
    ax.scatter(
        bound, gap, s=6, alpha=0.3, color=s["color"], marker=s["marker"], edgecolor="none", rasterized=True, label=label
    )
    drawn = ax.get_xlim()[1] if ax.lines else 0.0  # a diagonal from an earlier series
    top = max(drawn, 1.05 * max(bound.max(), gap.max()))
    ax.plot([0, top], [0, top], color="black", linestyle="--", linewidth=0.8, marker="none")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    return ax


def bound_panels(checks: dict, panels: dict, seed: int = 0) -> plt.Figure:
    """One panel per entry of `panels` (panel name -> names of `checks` drawn in it; `checks`: name ->
    (bound, |dP|)), each named in its corner; one axis label for all (the bound of Eq. 4)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(7.2, 2.8), squeeze=False)
    k = 0
    for ax, (panel, names) in zip(axes[0], panels.items()):
        for name in names:
            bound, gap = checks[name]
            bound_scatter(ax, bound, gap, label=name if len(names) > 1 else None, index=k, seed=seed)
            k += 1
        ax.text(0.03, 0.97, panel, transform=ax.transAxes, va="top", fontsize=9)
        if len(names) > 1:  # under the panel's name, where no point lies
            ax.legend(
                loc="upper left",
                bbox_to_anchor=(0.0, 0.9),
                markerscale=3,
                fontsize=9,
                handletextpad=0.2,
                borderaxespad=0.2,
            )
    axes[0, 0].set_ylabel(r"$|P_1 - P_2|$")
    axes[0, len(panels) // 2].set_xlabel(r"bound $(\|E_M\|\,\|u_1 - u_2\| + |r_1 - r_2|)\,/\,4$")
    return fig


def family_map(ax: plt.Axes, xy: np.ndarray, families, top: int = 5) -> plt.Axes:
    """A 2-D map (n, 2) of models, the `top` largest families each in its own colour and marker,
    the rest (and "other") as light grey dots; counts in the legend."""
    families = pd.Series(np.asarray(families, dtype=object))
    if len(families) != len(xy):
        raise ValueError(f"families has {len(families)} entries; xy has {len(xy)} rows.")
    counts = families[families != OTHER_FAMILY].value_counts(sort=True)
    shown = list(counts.index[:top])
    group = families.where(families.isin(shown), OTHER_FAMILY)
    sizes = group.value_counts()
    frame = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "family": [f"{g} ({sizes[g]})" for g in group]})
    rest = frame[group == OTHER_FAMILY]
    ax.scatter(
        rest["x"], rest["y"], s=30, color="0.75", marker=".", edgecolor="none", label=f"{OTHER_FAMILY} ({len(rest)})"
    )
    names = [f"{g} ({sizes[g]})" for g in shown]
    sns.scatterplot(
        data=frame[group != OTHER_FAMILY],
        x="x",
        y="y",
        hue="family",
        style="family",
        hue_order=names,
        style_order=names,
        palette=PALETTE[: len(names)],
        markers=MARKERS[: len(names)],
        s=45,
        edgecolor="none",
        ax=ax,
    )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(title="family", loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=9, title_fontsize=9)
    return ax


def groups_one_by_one(
    xy: np.ndarray, groups, ncols: int = 4, size: float = 4, xlabel: str = "kernel pc 1", ylabel: str = "kernel pc 2"
) -> plt.Figure:
    """Small multiples of a 2-D map (n, 2): one panel per group (largest first), its points in colour
    over all points in light grey, the group's name and count in the panel's corner."""
    groups = pd.Series(np.asarray(groups, dtype=object))
    if len(groups) != len(xy):
        raise ValueError(f"groups has {len(groups)} entries; xy has {len(xy)} rows.")
    order = groups.value_counts().index
    nrows = int(np.ceil(len(order) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.2, 1.3 * nrows + 0.4), sharex=True, sharey=True, squeeze=False)
    for ax, name in zip(axes.flat, order):
        rows = (groups == name).to_numpy()
        ax.scatter(xy[:, 0], xy[:, 1], s=size, color="0.85", edgecolor="none", rasterized=True)
        ax.scatter(xy[rows, 0], xy[rows, 1], s=size, color=PALETTE[0], edgecolor="none", rasterized=True)
        ax.text(0.03, 0.97, f"{name} ({rows.sum()})", transform=ax.transAxes, va="top", fontsize=9)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    for ax in axes.flat[len(order) :]:
        ax.set_axis_off()
    fig.supxlabel(xlabel, fontsize=9)
    fig.supylabel(ylabel, fontsize=9)
    return fig


# Datasets with several benchmarks, for App. E.2's benchmark-level statements (mmlu_pro is one benchmark)
MULTI_BENCHMARK = ("metabench", "zeroeval")


def fits_on(
    cfg, encoders: list[str], names: tuple[str, ...] = MULTI_BENCHMARK, seeds=None, **options
) -> dict[tuple[str, str], tuple]:
    """One JE-IRT per dataset in `names`, encoder in `encoders` and seed in `seeds` (default `cfg.seed`
    alone), with the page's settings (`cfg`'s d, recipe, epoch cap, slice, split of each seed) and
    `options` (e.g. `recipe=`), fitted side by side through the cache: (dataset, encoder) -> (dataset,
    [its fits, one per seed])."""
    from dataclasses import replace

    from jeirt.estimator import JEIRT
    from jeirt.fitcache import fit_many

    seeds = [cfg.seed] if seeds is None else list(seeds)
    data = {name: replace(cfg, dataset=name).load_dataset() for name in names}
    keys = [(name, encoder, seed) for name in names for encoder in encoders for seed in seeds]
    settings = dict(d=cfg.d, recipe=cfg.recipe, progress=False)
    settings |= {"training": {"max_epochs": cfg.max_epochs or 200}} | options
    models = [JEIRT(encoder=encoder, random_state=seed, **settings) for _, encoder, seed in keys]
    splits = [cfg.split_for(data[name], seed) for name, _, seed in keys]
    fitted = fit_many(models, [data[name] for name, _, _ in keys], splits)
    out: dict[tuple[str, str], tuple] = {}
    for (name, encoder, _), model in zip(keys, fitted):
        out.setdefault((name, encoder), (data[name], []))[1].append(model)
    return out


def spread_table(fits: dict[str, JEIRT], floor: dict[str, float], seed: int = 0) -> pd.DataFrame:
    """One row per fit (name -> fitted JE-IRT) and one for the untrained floor
    (`geometry.untrained_floor`): Eq. 7's rank of the model vectors and the first principal
    component's share of their variance, each with its standard error (bootstrap over models; the
    floor's: the sd of one draw)."""
    from jeirt.analysis import geometry

    rows = {}
    for name, fit in fits.items():
        m = fit.model_vectors_  # (n_models, d)
        rows[name] = {
            "Eq. 7 rank": geometry.covariance_effective_rank(m),
            "se": geometry.rank_se(m, seed=seed),
            "first component": float(geometry.cumulative_variance(m, 1)[0]),
            "first component se": geometry.first_component_se(m, seed=seed),
        }
    rows["untrained N(0, 1)"] = {
        "Eq. 7 rank": floor["erank"],
        "se": floor["erank sd"],
        "first component": floor["pc1"],
        "first component se": floor["pc1 sd"],
    }
    return pd.DataFrame(rows).T


def rank_runs(fits: dict[str, dict[int, JEIRT]], seed: int = 0) -> pd.DataFrame:
    """One row per fit (encoder -> d -> fitted JE-IRT): encoder, d, Eq. 7's rank of its model vectors
    and that rank's bootstrap standard error over models (`geometry.rank_se`), for
    `geometry.rank_alignment`."""
    from jeirt.analysis import geometry

    rows = [
        {
            "encoder": encoder,
            "d": d,
            "rank": geometry.covariance_effective_rank(fit.model_vectors_),
            "se": geometry.rank_se(fit.model_vectors_, seed=seed),
        }
        for encoder, by_d in fits.items()
        for d, fit in by_d.items()
    ]
    return pd.DataFrame(rows)


BANDWIDTHS = (1.0, 0.5, 0.25)  # multiples of Scott's bandwidth the peaks of the cosines are counted at


def benchmark_statements(multi: dict[tuple[str, str], tuple], seed: int = 0) -> tuple[dict, dict, pd.DataFrame]:
    """App. E.2's benchmark statements on the fits of `fits_on` ((dataset, encoder) -> (data, fits, one
    per seed)): on the first seed's fit, the per-benchmark table (`geometry.benchmark_directions`) and
    the peak counts of the cosines to the global mean for the data and 200 resamples at each of
    `BANDWIDTHS` (`geometry.peak_counts`: (dataset, encoder) -> bandwidth -> counts); on every seed's
    fit, the gaps behind "MMLU most dispersed" (its own cosine against the lowest of the others) and
    "GSM8K isolated" (its alignment against the others' median), each with its bootstrap standard error
    over questions (`geometry.extreme_gap`), pooled over the seeds (`over_seeds_and_questions`: the
    fits' own training noise is in the SE)."""
    from jeirt.analysis import geometry

    directions, peaks, gaps = {}, {}, {}
    for (name, encoder), (data, fits) in multi.items():
        groups = data.items["benchmark"].to_numpy()
        first = fits[0].question_embeddings(data)  # (n_items, d)
        directions[name, encoder] = geometry.benchmark_directions(first, groups)
        to_global = geometry.cosine_to_means(first, groups)["global"].to_numpy()
        peaks[name, encoder] = {bw: geometry.peak_counts(to_global, 200, seed=seed, bandwidth=bw) for bw in BANDWIDTHS}
        gsm = "gsm8k" if "gsm8k" in groups else "gsm"
        asked = {"GSM8K isolated": (gsm, "alignment", "median")}
        if "mmlu" in groups:
            asked = {"MMLU most dispersed": ("mmlu", "own cosine", "lowest")} | asked
        for statement, (target, column, versus) in asked.items():
            per_seed = [
                geometry.extreme_gap(fit.question_embeddings(data), groups, target, column, seed=seed, versus=versus)
                for fit in fits
            ]
            pooled = over_seeds_and_questions([g["gap"] for g in per_seed], [g["se"] for g in per_seed])
            gaps[statement, name, encoder] = per_seed[0] | pooled | {"seeds": len(fits)}
    gaps = pd.DataFrame(gaps).T.rename_axis(["statement", "dataset", "encoder"])
    return directions, peaks, gaps


def over_seeds_and_questions(values: Sequence[float], ses: Sequence[float], boot_df: int = 199) -> dict:
    """A statistic measured on the same questions with the fits of several seeds, each with its bootstrap
    SE over the questions: the mean over the seeds, its SE from both sources (the questions' part is
    shared by the seeds, so it stays; the training part, the seeds' spread, shrinks with their number),
    on Satterthwaite's df of the two parts. With one seed: its value and bootstrap SE."""
    gap, se = np.asarray(values, dtype=float), np.asarray(ses, dtype=float)
    questions = float(np.mean(se**2))
    if len(gap) < 2:
        return {"gap": float(gap[0]), "se": float(np.sqrt(questions)), "df": float(boot_df)}
    training = float(gap.var(ddof=1) / len(gap))
    df = (questions + training) ** 2 / (questions**2 / boot_df + training**2 / (len(gap) - 1))
    return {"gap": float(gap.mean()), "se": float(np.sqrt(questions + training)), "df": float(df)}


# The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`), one function per part of the page.


def proposition_stats(n: int, n_ok: int, n_2pl: int, reversed_pairs: tuple[int, int], bounds: dict) -> dict:
    """Props. 1-3's numerical checks as failed-check counts (exact: no spread): Prop. 1's construction
    over the 2^n subsets of `n` models (`n_ok` found; 2PL `n_2pl`) and the model pairs the trained
    model reverses; Props. 2 and 3's bound violations (`bounds`: '2' and '3' -> a
    `geometry.bound_summary` table)."""
    from jeirt_book.verdicts import Stat

    n_reversed, n_model_pairs = reversed_pairs
    stats = {
        "prop 1": Stat(
            2**n - n_ok + (n_reversed == 0),
            se=0.0,
            spec=".0f",
            label="failed checks",
            note=f"{n_reversed} of {n_model_pairs} model pairs reversed on the trained model; "
            f"construction: {n_ok} of {2**n} solver subsets (2PL: {n_2pl})",
        )
    }
    for k, table in bounds.items():
        failed = int(table["violations"].sum())
        stats[f"prop {k}"] = Stat(
            failed, se=0.0, spec=".0f", label="failed checks", note=f"{int(table['points'].sum()):,} checks"
        )
    return stats


def spread_stats(spread: pd.DataFrame, floor: dict, agreement: pd.DataFrame, aligned: pd.DataFrame | None) -> dict:
    """App. E.1's numbers: per recipe (rows '<name> recipe' of `spread_table`), the first principal
    component's share of the model vectors' variance (bootstrap se over models), read only where
    training moved Eq. 7's rank off its untrained N(0, 1) start (`given`: the start's rank minus the
    trained one, with both spreads); the smallest map agreement (`geometry.map_agreement` rows) with
    its shuffled null's sd as se; the encoders' largest relative rank gap (`geometry.rank_alignment`,
    a `NoVerdict` when one encoder was fitted)."""
    from jeirt_book.verdicts import NoVerdict, Stat, multiplier

    stats: dict[str, Stat | NoVerdict] = {}
    for name, row in spread.drop(index="untrained N(0, 1)").iterrows():
        moved = floor["erank"] - row["Eq. 7 rank"]  # how far below its start training took the rank
        reach = multiplier() * float(np.hypot(row["se"], floor["erank sd"]))
        stats[str(name)] = Stat(
            row["first component"],
            se=row["first component se"],
            spec=".0%",
            label="first component",
            note=f"Eq. 7 rank {row['Eq. 7 rank']:.2f} +- {row['se']:.2f}; untrained N(0, 1): "
            f"{floor['erank']:.2f} (sd {floor['erank sd']:.2f}), first component {floor['pc1']:.0%}",
            rule_args={
                "given": (
                    f"its rank's distance below the untrained start's {floor['erank']:.2f}",
                    moved - reach,
                    moved + reach,
                )
            },
        )
    worst = agreement["agreement"].idxmin()
    stats["maps"] = Stat(
        agreement.at[worst, "agreement"],
        se=agreement.at[worst, "null sd"],
        label="smallest agreement",
        note=f"{worst}; shuffled {agreement.at[worst, 'null mean']:+.2f}; Spearman of pairwise model distances",
        rule_args={"bound": agreement.at[worst, "null mean"]},
    )
    if aligned is None:
        stats["ranks"] = NoVerdict("not fitted (one encoder)", "the smoke profile fits one encoder", profile="smoke")
    else:  # the d where the encoders' ranks differ most, relative to their mean
        at = (aligned["relative gap"].abs() + 2 * aligned["se"]).idxmax()
        stats["ranks"] = Stat(
            abs(aligned.at[at, "relative gap"]),
            se=aligned.at[at, "se"],
            spec=".1%",
            label=f"largest relative gap (d = {at})",
            note=f"of {len(aligned)} d from {aligned.index.min()} to {aligned.index.max()}; Eq. 7's rank, "
            "encoder 1 - encoder 2",
        )
    return stats


def question_stats(cfg, ds, cosines: pd.DataFrame, null_gaps: np.ndarray, peaks, by_cosine: pd.DataFrame) -> dict:
    """App. E.2 and G's numbers on the page's data: Table 6's own-minus-global gap (points of cosine,
    se over questions), with the 97.5% point of the same gap over random partitions of the questions
    (`null_gaps`, `geometry.random_partition_gaps`: the gap is positive by construction) as the null a
    direction must clear; the peaks of the cosines to the global mean (the 2.5% to 97.5% range of 200
    resamples' counts at each of `BANDWIDTHS`, pooled; a `NoVerdict` for a dataset of one benchmark); and
    the answer correlation (phi) of the most opposite cosine bin minus the most aligned (their se
    combined)."""
    from jeirt.analysis import geometry
    from jeirt_book import verdicts

    own_means = cosines.groupby("benchmark")["own benchmark"].mean()
    global_mean = cosines["global"].mean()
    per_q = 100 * (cosines["own benchmark"] - cosines["global"])  # per question
    null_band = 100 * float(np.quantile(null_gaps, 0.975))
    stats: dict = {
        "table 6": verdicts.Stat(
            100 * float(own_means.mean() - global_mean),
            se=float(per_q.std() / np.sqrt(len(per_q))),
            spec=".1f",
            unit=" points",
            label="own-minus-global gap",
            note=f"own {100 * own_means.mean():.1f}, global {100 * global_mean:.1f}; random partitions of the "
            f"questions {100 * float(np.mean(null_gaps)):.2f}, 97.5% {null_band:.2f} ({len(null_gaps)} partitions)",
            rule_args={"null": null_band},
        )
    }
    at = ", ".join(f"{p:.2f}" for p in peaks)
    if ds.name in verdicts.ONE_BENCHMARK:
        stats["peaks"] = verdicts.NoVerdict(
            f"{len(peaks)} peak(s) at {at}", f"one benchmark ({ds.name}'s {len(ds.benchmarks)} categories)"
        )
    else:
        values = cosines["global"].to_numpy()
        draws = {bw: geometry.peak_counts(values, 200, cfg.seed, bandwidth=bw) for bw in BANDWIDTHS}
        stats["peaks"] = peaks_stat(draws, len(ds.benchmarks), ds.n_items, note=f"at {at}")
    filled = by_cosine.dropna()  # cosine bins with pairs in them
    stats["phi"] = verdicts.Stat(
        float(filled["mean phi"].iloc[0] - filled["mean phi"].iloc[-1]),
        se=float(np.hypot(*filled["standard error"].iloc[[0, -1]])),
        label="mean phi, most opposite minus most aligned",
        note=f"{filled['mean phi'].iloc[0]:.3f} vs {filled['mean phi'].iloc[-1]:.3f}, random pairs",
        rule_args={"limit": f"{len(filled)} cosine bins of random pairs"},
    )
    return stats


def peaks_stat(draws: dict[float, np.ndarray], benchmarks: int, questions: int, **fields):
    """A peak count as a verdict reads it: `draws` (bandwidth -> the data's count, then 200 resamples'),
    the count at Scott's bandwidth, its interval the widest 2.5% to 97.5% range of the resamples over
    all the bandwidths (a count that a narrower kernel changes is not shown), the band of 'several
    and fewer than the benchmarks' up to `benchmarks` - 0.5."""
    from jeirt_book import verdicts

    lows = [float(np.quantile(d[1:], 0.025)) for d in draws.values()]
    highs = [float(np.quantile(d[1:], 0.975)) for d in draws.values()]
    counts = "bandwidth " + ", ".join(f"x{bw:g}: {int(d[0])} ({np.mean(d[1:] >= 2):.0%})" for bw, d in draws.items())
    counts += " (share of 200 resamples with 2 or more)"
    note = fields.pop("note", "")
    return verdicts.Stat(
        float(draws[1.0][0]),
        interval=(min(lows), max(highs)),
        spec=".3g",
        label="peaks",
        note=(f"{note}; " if note else "") + f"{benchmarks} benchmarks; {counts}",
        rule_args={"high": benchmarks - 0.5, "limit": f"{questions:,} questions"},
        **fields,
    )


def benchmark_stats(cfg, multi: dict, peak_draws: dict, gaps: pd.DataFrame) -> dict:
    """App. E.2's benchmark statements on the datasets with several benchmarks (`benchmark_statements`):
    per (dataset, encoder), the peak count with its resamples' range over the bandwidths
    (`peaks_stat`; 'peaks <dataset> <encoder>') and the MMLU and GSM8K gaps with their SE over the
    questions and the seeds' fits ('<statement> <dataset> <encoder>')."""
    from jeirt_book import verdicts

    stats: dict = {}
    for (name, encoder), draws in peak_draws.items():
        data = multi[name, encoder][0]
        stats[f"peaks {name} {encoder}"] = peaks_stat(
            draws,
            len(data.benchmarks),
            data.n_items,
            data=f"{name}, {encoder}",
            setting=verdicts.setting(cfg, data.n_items, seeds=1, held_out=False),
        )
    for (statement, name, encoder), g in gaps.iterrows():
        data = multi[name, encoder][0]
        target = "mmlu" if statement.startswith("MMLU") else ("gsm8k" if "gsm8k" in data.benchmarks else "gsm")
        n_q = int((data.items["benchmark"] == target).sum())
        stats[f"{statement} {name} {encoder}"] = verdicts.Stat(
            g["gap"],
            se=g["se"],
            df=g["df"],
            spec="+.3f",
            label=f"{target}: gap",
            note=f"rank {int(g['rank'])} of {int(g['benchmarks'])} on the first fit, 1 = lowest "
            + ("own cosine" if target == "mmlu" else "alignment")
            + f"; SE over the questions and {int(g['seeds'])} fits",
            data=f"{name}, {encoder}",
            setting=verdicts.setting(cfg, data.n_items, seeds=int(g["seeds"]), held_out=False),
            rule_args={"limit": f"{n_q} {target} questions, {int(g['benchmarks'])} benchmarks"},
        )
    return stats


def paper_table6_gap() -> dict[str, float]:
    """The paper's Table 6 own-minus-global gap per encoder, in points of cosine (x 100): the mean of
    its per-benchmark means minus the global mean."""
    from jeirt_book import paper

    t6 = paper.read("Table 6")
    return {
        e: float(t6.loc[(e, "mean"), list(paper.BENCHMARKS)].mean() - t6.at[(e, "mean"), "global"])
        for e in paper.ENCODERS
    }
