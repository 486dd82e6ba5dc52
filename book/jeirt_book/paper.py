"""The paper's numbers, in one place: every value a page quotes, with its key, where the paper prints
it (table, figure or section) and what it is.

The tables are typed as the paper prints them (arXiv 2509.22888, the text in the project's paper
folder), in its rows and columns, so each can be read against the paper line by line; `TEXT` holds
the numbers of its prose and captions, and `V2` those of its second version's summary, which are cited
as "v2 summary", never as the paper. `values()` flattens all of them to one table (key, value, where,
text); pages quote a value with `quote(key)` and show a table in the paper's layout with `table(name)`.
Where the paper prints no number for a claim, `no_number(where)` says so, and refuses a place that
does print one.

    >>> quote("t3.modernbert.all.overall")
    'Table 3: 75.05'
"""

from __future__ import annotations

from functools import lru_cache
from io import StringIO

import pandas as pd

ENCODERS = {"modernbert": "ModernBERT-Large", "sent": "all-mpnet-base-v2"}  # the paper's two encoders (Sec. 3.2)
BENCHMARKS = ("asdiv", "gpqa", "gsm8k", "logiqa", "mathqa", "medmcqa", "mmlu", "piqa", "social", "truthfulqa")

# Table 1: test accuracy (%) of 10 held-out LLMs onboarded with a fraction of their answers; mean and
# standard deviation over the 10 models; "all": the same models trained jointly with the other 111.
TABLE_1 = """\
encoder stat 1% 5% 10% 20% 40% 60% 80% 100% all
modernbert mean 71.03 73.86 74.18 74.35 74.35 74.35 74.39 74.30 74.69
modernbert std 3.93 2.14 2.16 2.07 2.10 2.11 2.11 2.15 2.07
sent mean 72.30 73.63 73.60 73.78 73.74 73.81 73.71 73.81 73.85
sent std 2.87 2.43 2.37 2.34 2.31 2.39 2.44 2.42 2.42
"""
# Table 2: test accuracy (%) of 6 recent LLMs (App. I: 29,640 questions, 8 benchmarks) onboarded
# with a fraction of their answers; mean over the 6 models. No joint-training ("all") column.
TABLE_2 = """\
encoder 1% 5% 10% 20% 40% 60% 80% 100%
modernbert 63.15 65.09 68.48 70.02 71.70 72.00 72.06 72.42
sent 73.45 73.67 74.12 74.69 75.12 75.13 75.22 75.42
"""
# Table 3: leave-one-benchmark-out test accuracy (%); "diff" = all - leave-out (the drop, positive).
TABLE_3 = """\
encoder setting asdiv gpqa gsm8k logiqa mathqa medmcqa mmlu piqa social truthfulqa overall
modernbert leave-out 96.26 85.08 59.05 67.14 66.11 58.02 46.50 26.67 61.19 65.67 62.80
modernbert all 96.93 87.25 74.86 67.56 68.86 63.17 68.40 79.96 67.87 70.63 75.05
modernbert diff 0.67 2.17 15.81 0.42 2.75 5.15 21.90 53.29 6.68 4.96 12.24
sent leave-out 93.97 79.01 59.05 64.68 66.27 54.43 50.49 28.81 64.88 67.36 62.94
sent all 96.86 87.11 73.94 66.82 67.30 63.09 67.84 78.66 67.67 69.92 74.56
sent diff 2.89 8.10 14.89 2.14 1.02 3.66 17.35 49.85 2.79 2.56 11.62
"""
# Table 4: cosine (x 100) between a benchmark's mean question direction and that of all the others.
TABLE_4 = """\
encoder asdiv gpqa gsm8k logiqa mathqa medmcqa mmlu piqa social truthfulqa
modernbert 40.82 84.63 36.39 97.04 96.75 96.24 92.51 70.98 92.10 94.27
sent 59.85 61.38 51.75 96.71 96.45 96.97 73.10 16.51 92.31 95.02
"""
# Table 5: KMeans (K = 57) clusters of MMLU's question embeddings against its 57 subjects.
TABLE_5 = """\
encoder purity inverse_purity nmi homogeneity completeness
modernbert 0.346 0.254 0.380 0.389 0.371
sent 0.372 0.265 0.409 0.418 0.399
"""
# Table 6: cosine (%) of each question's direction to its benchmark's mean ("global": to the mean of all).
TABLE_6 = """\
encoder stat asdiv gpqa gsm8k logiqa mathqa medmcqa mmlu piqa social truthfulqa global
modernbert mean 96.19 97.70 97.60 98.08 97.69 97.82 93.53 96.75 98.41 99.59 85.94
modernbert std 3.95 1.98 2.65 1.11 1.59 1.31 4.32 3.01 0.80 0.69 16.48
sent mean 98.56 98.21 97.86 97.17 93.83 95.06 87.38 91.83 97.56 99.81 77.52
sent std 2.74 3.52 2.94 3.05 7.23 5.02 10.03 10.56 1.89 0.25 21.88
"""
TABLES = {
    "Table 1": TABLE_1,
    "Table 2": TABLE_2,
    "Table 3": TABLE_3,
    "Table 4": TABLE_4,
    "Table 5": TABLE_5,
    "Table 6": TABLE_6,
}
TABLE_SPEC = {f"Table {n}": ".3f" if n == 5 else ".2f" for n in range(1, 7)}  # as the paper prints them
TABLE_TEXT = {  # what one value of each table is
    "Table 1": "test accuracy (%) of 10 held-out LLMs onboarded with a fraction of their answers",
    "Table 2": "test accuracy (%) of 6 recent LLMs onboarded with a fraction of their answers",
    "Table 3": "test accuracy (%) with a benchmark left out of training or not, and the drop",
    "Table 4": "cosine (x 100) between a benchmark's mean direction and the rest's",
    "Table 5": "agreement of 57 KMeans clusters with MMLU's 57 subjects",
    "Table 6": "cosine (%) of a question's direction to its benchmark's mean (global: to all)",
}

# Numbers of the paper's prose and captions: key, value, where, text.
TEXT = [
    ("s3.models", 112, "Sec. 3", "LLMs in the EmbedLLM correctness dataset"),
    ("s3.benchmarks", 10, "Sec. 3", "benchmarks in the EmbedLLM correctness dataset"),
    (
        "s31.saturated_share",
        49,
        "Sec. 3.1",
        "% of items (1,275 of 3,000) on which the 2PL fit saturates to near-unanimous predictions",
    ),
    ("s31.saturated_items", 1275, "Sec. 3.1", "items on which the 2PL fit saturates (of 3,000)"),
    ("s31.unanimous_share", 2.7, "Sec. 3.1", "% of items (80 of 3,000) the models answer unanimously"),
    ("s31.unanimous_items", 80, "Sec. 3.1", "items the models answer unanimously (of 3,000)"),
    ("s31.items", 3000, "Sec. 3.1", "items of the EmbedLLM test set the 2PL is fitted to"),
    ("s32.peak_d", 256, "Sec. 3.2 / Fig. 2", "embedding dimension near which test accuracy peaks"),
    ("s32.embedllm_dim", 252, "Sec. 3.2 / Fig. 2", "dimension of the EmbedLLM baseline's model embeddings"),
    ("s32.cross_modernbert", 16, "Sec. 3.2 / Fig. 2", "smallest d at which JE-IRT with ModernBERT passes EmbedLLM"),
    ("s32.cross_sent", 64, "Sec. 3.2 / Fig. 2", "d (about) at which JE-IRT with the sentence encoder passes EmbedLLM"),
    ("s33.models", 10, "Sec. 3.3 / App. H", "held-out LLMs of the leave-one-out onboarding study"),
    ("s33.within", 0.5, "Sec. 3.3", "points: from 10% of its answers, onboarding is within this of All"),
    ("s33.recent_models", 6, "Sec. 3.3 / App. I", "recent LLMs onboarded in Table 2"),
    ("appI.questions", 29640, "App. I", "questions the 6 recent LLMs are evaluated on (8 benchmarks, split 80/10/10)"),
    ("s35.bins", 20, "Sec. 3.5 / Fig. 3", "quantile bins of the norm in the binned accuracy"),
    ("s35.auc_lo", 0.73, "Sec. 3.5 / Fig. 3", "lowest AUC of the norm as a score for wrong answers (two encoders)"),
    ("s35.auc_hi", 0.77, "Sec. 3.5 / Fig. 3", "highest AUC of the norm as a score for wrong answers (two encoders)"),
    ("s36.k", 57, "Sec. 3.6", "KMeans clusters, as many as MMLU's subjects"),
    ("s36.lo", 0.25, "Sec. 3.6", "lower end of Table 5's moderate range"),
    ("s36.hi", 0.42, "Sec. 3.6", "upper end of Table 5's moderate range"),
    ("appE.pcs", 64, "App. E.1 / Fig. 4", "principal components of the model embeddings shown"),
    ("appE.asdiv_acc", 3, "App. E.2", "% combined accuracy of the models on ASDiv"),
]
# The summary of the paper's second version (a secondary source): cite as "v2 summary".
V2 = [
    ("v2.jeirt", 75, "v2 summary", "% test accuracy of JE-IRT on EmbedLLM (about)"),
    ("v2.embedllm", 74.09, "v2 summary", "% test accuracy of the EmbedLLM baseline"),
    ("v2.knn", 71.52, "v2 summary", "% test accuracy of the KNN baseline"),
    ("v2.routing_gain", 10, "v2 summary", "points JE-IRT's router gains over the best-average model (about)"),
    ("v2.onboard_share", 10, "v2 summary", "% of a new model's answers that bring it near joint training"),
]


def read(name: str) -> pd.DataFrame:
    """One of the paper's tables ("Table 1" ... "Table 6") in its layout: one row per encoder (and
    setting or statistic), one column per benchmark or fraction."""
    if name not in TABLES:
        raise ValueError(f"name={name!r}; expected one of {sorted(TABLES)}.")
    frame = pd.read_csv(StringIO(TABLES[name]), sep=" ")
    index = [c for c in ("encoder", "setting", "stat") if c in frame.columns]
    return frame.set_index(index)


@lru_cache(maxsize=1)
def values() -> pd.DataFrame:
    """Every number the book quotes from the paper: index key; columns value, where, text. Table keys
    are 't<n>.<encoder>[.<setting or stat>].<column>', e.g. 't3.sent.diff.mmlu'."""
    rows = []
    for name, what in TABLE_TEXT.items():
        n = name.split()[1]
        frame = read(name)
        for index, row in frame.iterrows():
            index = index if isinstance(index, tuple) else (index,)
            for column, value in row.items():
                key = ".".join([f"t{n}", *index, str(column).rstrip("%")])
                label = ", ".join([ENCODERS[index[0]], *index[1:], str(column)])
                rows.append((key, float(value), name, f"{what}: {label}"))
    rows += [(k, float(v), w, t) for k, v, w, t in TEXT + V2]
    table = pd.DataFrame(rows, columns=["key", "value", "where", "text"])
    if table["key"].duplicated().any():
        raise AssertionError(f"duplicate keys: {sorted(table.loc[table['key'].duplicated(), 'key'])}")
    return table.set_index("key")


def value(key: str) -> float:
    """The paper's number under `key` (see `values()`)."""
    table = values()
    if key not in table.index:
        close = [k for k in table.index if k.startswith(key.rsplit(".", 1)[0])][:8]
        raise KeyError(
            f"no paper value {key!r}; keys with that stem: {close or 'none'} (see jeirt_book.paper.values())."
        )
    return float(table.at[key, "value"])


def where(key: str) -> str:
    """Where the paper prints the value under `key` ("Table 3", "Sec. 3.5 / Fig. 3", "v2 summary")."""
    value(key)
    return str(values().at[key, "where"])


def fmt(number: float, spec: str = "") -> str:
    """A paper's number as the paper prints it: integers without decimals, others as given (or `spec`)."""
    if spec:
        return format(number, spec)
    return f"{number:,.0f}" if float(number).is_integer() and abs(number) >= 100 else f"{number:g}"


def quote(*keys: str, sep: str = " / ", spec: str = "", unit: str = "", lead: str = "") -> str:
    """The "paper" cell of a verdict row: where the values are printed, then the values, e.g.
    quote('t5.modernbert.homogeneity', 't5.sent.homogeneity') -> 'Table 5: 0.389 / 0.418'. Keys from
    different places name each place. `lead` is prepended to the numbers ('ModernBERT ', 'drop ')."""
    if not keys:
        raise ValueError("quote() needs at least one key.")
    places = [where(k) for k in keys]
    numbers = [fmt(value(k), spec or TABLE_SPEC.get(p, "")) + unit for k, p in zip(keys, places)]
    if len(set(places)) == 1:
        return f"{places[0]}: {lead}{sep.join(numbers)}"
    return f"{lead}" + sep.join(f"{n} ({p})" for n, p in zip(numbers, places))


def no_number(place: str, what: str = "") -> str:
    """The "paper" cell where the paper makes a claim without a number: 'the paper prints no number
    (Fig. 1)'. Refuses a place whose numbers `values()` holds: quote those instead."""
    held = values().index[values()["where"] == place]
    if len(held):
        raise ValueError(
            f"place={place!r}: the paper prints numbers there ({', '.join(held[:4])}, ...); "
            f"quote them with paper.quote."
        )
    return f"{what + '; ' if what else ''}the paper prints no number ({place})"


# Where each place of the paper stands in its order (Sec. 2's propositions first, the appendices'
# measurements after Sec. 3.6, then the v2 summary, IRT-Net and the book's own claims): `position`.
ORDER = [
    ("Prop. 1", 2.1),
    ("App. A", 2.1),
    ("Prop. 2", 2.2),
    ("App. C", 2.2),
    ("Prop. 3", 2.3),
    ("App. B", 2.3),
    ("Sec. 3.1", 3.1),
    ("Fig. 1", 3.1),
    ("App. J", 3.15),
    ("Sec. 3.2", 3.2),
    ("Fig. 2", 3.2),
    ("Sec. 3.3", 3.3),
    ("Table 1", 3.3),
    ("Table 2", 3.32),
    ("App. D", 3.35),
    ("Sec. 3.4", 3.4),
    ("Table 3", 3.4),
    ("Table 4", 3.4),
    ("Sec. 3.5", 3.5),
    ("Fig. 3", 3.5),
    ("App. F", 3.5),
    ("Sec. 3.6", 3.6),
    ("Table 5", 3.6),
    ("Sec. 5", 5.0),
    ("Fig. 4", 6.1),
    ("Eq. 7", 6.1),
    ("Fig. 5", 6.2),
    ("Table 6", 6.3),
    ("Fig. 6", 6.4),
    ("App. E", 6.0),
    ("App. G", 6.5),
    ("Fig. 8", 6.5),
    ("v2", 7.0),
    ("IRT-Net", 8.0),
]


def position(claim: str) -> float:
    """Where a claim stands in the paper's order, from the first place it cites in brackets
    ('... (Sec. 3.4)', '(Table 5)', '(v2 summary)'); 9 for a claim that cites none (the book's own)."""
    import re

    for group in re.findall(r"\(([^()]*)\)", claim):
        hits = [(group.find(place), rank) for place, rank in ORDER if place in group]
        if hits:
            return min(hits)[1]
    return 9.0


def not_claimed(source: str = "") -> str:
    """The "paper" cell of a row that tests the book's own claim, not the paper's: 'not a claim of
    the paper', with where the idea comes from (`source`, e.g. 'tinyBenchmarks: per-question IRT')."""
    return "not a claim of the paper" + (f"; {source}" if source else "")


def alignment_drop_spearman(encoder: str, recomputed: bool = False) -> tuple[float, float]:
    """Spearman's rho (and p) between Table 4's alignment and Table 3's drop over the ten benchmarks:
    the paper's own evidence for "better-aligned benchmarks drop less" (Sec. 3.4), which it does not
    print as a number. ModernBERT -0.37 (p 0.29), the sentence encoder -0.70 (p 0.03). `recomputed`:
    the drop as All minus Leave-Out, where Table 3 prints Sent-Trans MedMCQA's as 3.66 for 8.66
    (63.09 - 54.43); the sentence encoder's rho is then -0.62 (p 0.054)."""
    from scipy.stats import spearmanr

    if encoder not in ENCODERS:
        raise ValueError(f"encoder={encoder!r}; expected one of {sorted(ENCODERS)}.")
    cos = read("Table 4").loc[encoder, list(BENCHMARKS)]
    t3 = read("Table 3")
    drop = (
        t3.loc[(encoder, "all"), list(BENCHMARKS)] - t3.loc[(encoder, "leave-out"), list(BENCHMARKS)]
        if recomputed
        else t3.loc[(encoder, "diff"), list(BENCHMARKS)]
    )
    rho, p = spearmanr(cos.to_numpy(), drop.to_numpy())
    return float(rho), float(p)


def side_by_side(name: str, ours: pd.DataFrame, rows: dict | None = None) -> pd.DataFrame:
    """The paper's `name` table beside ours in its layout: for each of the paper's rows (or the
    `rows` mapping paper row -> our row), a 'paper' line, an 'ours' line and their difference over the
    columns both hold; columns only one side holds stay empty on the other (different data)."""
    theirs = read(name)
    if not isinstance(ours, pd.DataFrame) or ours.empty:
        raise ValueError("ours: expected a non-empty DataFrame in the paper's layout.")
    rows = rows or {r: r for r in theirs.index if r in ours.index}
    if not rows:
        raise ValueError(f"ours has none of {name}'s rows {list(theirs.index)}; pass rows={{paper: ours}}.")
    columns = list(theirs.columns) + [c for c in ours.columns if c not in theirs.columns]
    lines = {}
    for mine_row in dict.fromkeys(rows.values()):  # our rows, each once, beside every paper row mapped to it
        for paper_row in [p for p, m in rows.items() if m == mine_row]:
            label = paper_row if isinstance(paper_row, tuple) else (paper_row,)
            paper, book, difference = ((*label, part) for part in ("paper", "this book", "difference"))
            lines[paper] = theirs.loc[paper_row].reindex(columns)
            lines[book] = ours.loc[mine_row].reindex(columns)
            lines[difference] = lines[book] - lines[paper]
    out = pd.DataFrame(lines).T.astype(float)
    out.index = pd.MultiIndex.from_tuples(list(lines))
    return out
