"""The Out-of-distribution page's tables: ours in the layout of the paper's Tables 3 and 4. The
protocol is `jeirt_book.experiments.ood`, the alignment `jeirt.analysis.alignment`.
"""

from __future__ import annotations

import pandas as pd


def paper_layout(table: pd.DataFrame, alignment: pd.Series, encoder: str = "sent") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Our `jeirt_book.experiments.ood.left_out_table` and alignment in the layout of the paper's Tables 3 and 4 (in %,
    x 100; Table 3's diff is the drop, all - leave-out, as the paper prints it), under the paper's row
    label `encoder` ("sent": a sentence-transformer, as our MiniLM and mpnet are), for
    `jeirt_book.paper.side_by_side`."""
    t3 = 100 * table[["leave-out", "all"]].T
    t3.loc["diff"] = t3.loc["all"] - t3.loc["leave-out"]
    t3.index = pd.MultiIndex.from_product([[encoder], t3.index], names=["encoder", "setting"])
    t4 = (100 * alignment).to_frame(encoder).T.rename_axis("encoder")
    return t3.rename_axis(columns=None), t4.rename_axis(columns=None)


# The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`).


def dataset_stats(name: str, table: pd.DataFrame, alignment: pd.Series, rho: float, directions, seed: int = 0) -> dict:
    """One dataset's numbers ('<what> <name>'): the overall drop (points; se of the mean drop over
    the benchmarks left out), the range of the alignment cosines (x 100; bootstrap se over questions,
    `alignment_range_se` on `directions`, the questions' directions with a 'benchmark' per row; the
    97.5% point of the same range over random partitions of the questions, `random_partition_ranges`,
    as the null its direction must clear: the range is positive by construction) and Spearman's rho
    of alignment and drop (Fisher-z interval, `verdicts.rho_interval`)."""
    import numpy as np

    from jeirt.analysis.alignment import alignment_range_se, random_partition_ranges
    from jeirt_book.verdicts import Stat, rho_interval

    drops = -100 * table.drop(index="overall")["diff"]
    n = len(drops)
    x, groups = directions
    null = 100 * random_partition_ranges(x, groups, seed=seed)
    return {
        f"drop {name}": Stat(
            -100 * float(table.loc["overall", "diff"]),
            se=float(drops.std(ddof=1) / np.sqrt(n)),
            spec="+.2f",
            unit=" points",
            label="overall drop",
            note=f"benchmarks: mean {drops.mean():+.2f}, sd {drops.std(ddof=1):.2f}",
            rule_args={"limit": f"{n} benchmarks"},
        ),
        f"spread {name}": Stat(
            100 * float(alignment.max() - alignment.min()),
            se=100 * alignment_range_se(x, groups, seed=seed),
            spec=".1f",
            label="range of the cosines",
            note=f"{100 * alignment.min():.2f} to {100 * alignment.max():.2f}; se over questions; random "
            f"partitions of the questions {null.mean():.1f}, 97.5% {np.quantile(null, 0.975):.1f}",
            rule_args={"limit": f"{len(alignment)} benchmarks", "null": float(np.quantile(null, 0.975))},
        ),
        f"trend {name}": Stat(
            rho,
            interval=rho_interval(rho, n) if n >= 4 else (-1.0, 1.0),
            spec="+.2f",
            label="Spearman rho",
            note=f"over {n} benchmarks",
            rule_args={"limit": f"{n} benchmarks"},
        ),
    }


def benchmark_stats(cfg, per_benchmark: pd.DataFrame) -> dict:
    """Per (dataset, encoder) of `per_benchmark` (drop and se per benchmark left out, points): the drop
    of the least sure benchmark (smallest drop / se), every benchmark's beside it ('each <dataset>
    <encoder>')."""
    from jeirt_book import verdicts
    from jeirt_book.verdicts import Stat

    stats = {}
    for (name, encoder), each in per_benchmark.groupby(level=["dataset", "encoder"], sort=False):
        each = each.droplevel(["dataset", "encoder"])
        weakest = (each["drop"] / each["se"]).idxmin()
        w = each.loc[weakest]
        stats[f"each {name} {encoder}"] = Stat(
            w["drop"],
            se=w["se"],
            spec="+.1f",
            unit=" points",
            label=f"least sure drop ({weakest})",
            note=f"the least of {len(each)}, all on the OOD page; all - leave-out, se over questions",
            data=f"{name}, {encoder}",
            setting=verdicts.setting(cfg, int(each["questions"].sum()), seeds=1),
            rule_args={"limit": f"{weakest}: {int(w['questions'])} questions"},
        )
    return stats


def mmlu_stats(
    cfg, frame: pd.DataFrame, questions: int, ranks: dict, mmlu_all: pd.Series | None, drops: pd.DataFrame
) -> dict:
    """'MMLU is the exception': MMLU's drop minus the other benchmarks' mean drop (points). Smoke: on
    its test part (`frame`, drop per benchmark as a share; `questions` of MMLU's), with the binomial se
    of a drop at its widest (accuracy 1/2); full: on all its questions cross-fitted (`mmlu_all`,
    `question_drops`'s row), the se from its own and the others' (`drops`: each benchmark's drop and se
    on the same data, MMLU's among them). Words only when MMLU was not left out. `ranks`: MMLU's
    alignment and drop ranks among `n`."""
    import numpy as np

    from jeirt_book import verdicts
    from jeirt_book.verdicts import Stat

    said = f"ranks {ranks['align_rank']} in alignment, {ranks['drop_rank']} in drop of {ranks['n']}"  # 1 = most
    if mmlu_all is not None:
        others = drops.drop(index="mmlu")
        q = int(mmlu_all["questions"])
        excess = mmlu_all["drop"] - others["drop"].mean()
        se = np.sqrt(mmlu_all["se"] ** 2 + (others["se"] ** 2).sum() / len(others) ** 2)
        note = (
            f"MMLU {mmlu_all['drop']:+.2f} +- {mmlu_all['se']:.2f} ({q} questions, cross-fitted), "
            f"others {others['drop'].mean():+.2f}; {said}"
        )
        limit = f"{q} MMLU questions, {len(others)} other benchmarks"
    elif questions:
        q = questions
        excess = 100 * float(frame.at["mmlu", "drop"] - frame["drop"].drop("mmlu").mean())
        se, note, limit = 100 * np.sqrt(2 * 0.25 / q), said, f"{q} test questions of MMLU"
    else:
        return {"mmlu": verdicts.NoVerdict("not left out here", "MMLU is not left out here")}
    return {
        "mmlu": Stat(
            float(excess),
            se=float(se),
            spec="+.2f",
            unit=" points",
            label="MMLU's drop - others' mean",
            note=note,
            setting=verdicts.setting(cfg, q, seeds=1),
            rule_args={"limit": limit},
        )
    }


def encoder_stats(per_benchmark: pd.DataFrame, name: str, encoders: list[str], profile: str) -> dict:
    """'The drops depend on the encoder': on dataset `name`, the benchmark whose drops (points) differ
    most between `encoders` (two) relative to the se of the difference, its interval widened for the
    largest of that many (`tests`); a `NoVerdict` with one encoder (the smoke `profile` fits one)."""
    import numpy as np

    from jeirt_book.verdicts import NoVerdict, Stat

    if len(encoders) < 2 or (name, encoders[1]) not in per_benchmark.index.droplevel("benchmark"):
        if profile == "smoke":
            return {"encoders": NoVerdict(f"one encoder, {encoders[0]}", "the smoke profile fits one encoder", profile)}
        return {"encoders": NoVerdict(f"one encoder, {encoders[0]}", "no second encoder's features ship with the data")}
    a, b = (per_benchmark.loc[(name, e)] for e in encoders[:2])
    diff, diff_se = a["drop"] - b["drop"], np.sqrt(a["se"] ** 2 + b["se"] ** 2)
    most = (diff.abs() / diff_se).idxmax()  # the benchmark that differs most
    return {
        "encoders": Stat(
            abs(float(diff[most])),
            se=float(diff_se[most]),
            spec=".1f",
            unit=" points",
            label=f"largest difference ({most})",
            note=f"{encoders[0]} - {encoders[1]}, of {len(diff)} benchmarks",
            tests=len(diff),
            rule_args={"limit": f"{len(diff)} benchmarks, the largest difference of them"},
        )
    }
