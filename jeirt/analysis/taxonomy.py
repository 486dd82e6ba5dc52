"""How clusters of question directions agree with human classes (the paper's Sec. 3.6, Table 5):
purity and inverse purity, the entropy-based scores (NMI, homogeneity, completeness), k-means on unit
directions (so a question's norm, its difficulty, plays no part), a random partition with the same
cluster sizes as the floor, and per-cluster summaries. The Taxonomy page (book/taxonomy.md) calls
these on the learned and the frozen embeddings; `jeirt_book.taxonomy` draws the results.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn import metrics as skm
from sklearn.cluster import KMeans

from jeirt.data.dataset import Dataset
from jeirt.model import unit_rows

MMLU = "mmlu"  # the benchmark whose subjects Table 5 clusters (57 of them on EmbedLLM)


# Clustering agreement (Sec. 3.6, Table 5)
def _contingency(labels_true: Sequence | np.ndarray, labels_pred: Sequence | np.ndarray) -> np.ndarray:
    """Counts (n_classes, n_clusters) of items in each (human class, cluster) pair."""
    labels_true, labels_pred = np.asarray(labels_true), np.asarray(labels_pred)
    if labels_true.shape != labels_pred.shape or labels_true.ndim != 1:
        raise ValueError(
            f"labels_true {labels_true.shape} and labels_pred {labels_pred.shape} must be "
            "1-D arrays of the same length."
        )
    if labels_true.size == 0:
        raise ValueError("labels are empty; expected at least one item.")
    return skm.cluster.contingency_matrix(labels_true, labels_pred)


def purity(labels_true: Sequence | np.ndarray, labels_pred: Sequence | np.ndarray) -> float:
    """Share of items whose cluster's majority class is their own class (Zhao & Karypis 2001).

    1 when every cluster holds one class; it rewards many small clusters, hence `inverse_purity`.
    """
    table = _contingency(labels_true, labels_pred)  # (n_classes, n_clusters)
    return float(table.max(axis=0).sum() / table.sum())


def inverse_purity(labels_true: Sequence | np.ndarray, labels_pred: Sequence | np.ndarray) -> float:
    """Share of items in the cluster that holds most of their class: purity with roles swapped.

    1 when every class lies in one cluster; it rewards one big cluster, hence `purity`.
    """
    return purity(labels_pred, labels_true)


def cluster_agreement(labels_true: Sequence | np.ndarray, labels_pred: Sequence | np.ndarray) -> dict[str, float]:
    """Purity, inverse purity, NMI, homogeneity and completeness of a clustering vs human classes."""
    homogeneity, completeness, nmi = skm.homogeneity_completeness_v_measure(labels_true, labels_pred)
    return {
        "purity": purity(labels_true, labels_pred),
        "inverse purity": inverse_purity(labels_true, labels_pred),
        "nmi": float(nmi),  # arithmetic-mean NMI, equal to the V-measure
        "homogeneity": float(homogeneity),
        "completeness": float(completeness),
    }


def kmeans_directions(x: np.ndarray, k: int, seed: int = 0, n_init: int = 4) -> np.ndarray:
    """Cluster ids (n,) from k-means on the unit-normalised rows of `x`: clusters of directions,
    so a question's difficulty (JE-IRT's norm) plays no part."""
    x = np.asarray(x)
    if not 1 <= k <= len(x):
        raise ValueError(f"k={k}; expected 1 <= k <= number of rows ({len(x)}).")
    return KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(unit_rows(x))


def random_partition(labels_pred: Sequence | np.ndarray, seed: int = 0) -> np.ndarray:
    """A random shuffle of `labels_pred`: a partition with the same cluster sizes and no information,
    the floor any representation should clear."""
    return np.random.default_rng(seed).permutation(np.asarray(labels_pred))


def taxonomy_labels(ds: Dataset) -> tuple[np.ndarray, np.ndarray, str]:
    """(item positions, human class per item, column name) for the taxonomy analysis of dataset `ds`.

    The classes are the `subject` column on the items that have one (MMLU-Pro's 91 source subjects;
    MMLU's subjects on metabench); where a benchmark named "mmlu" has subjects, only its items (Table
    5's setting: on EmbedLLM the subject column also holds GPQA's variants, which are no MMLU subject);
    a dataset without subjects falls back to `benchmark` on all items.
    """
    subject = ds.items["subject"].fillna("").astype(str).to_numpy()
    mmlu = ds.items["benchmark"].astype(str).to_numpy() == MMLU
    keep = np.flatnonzero((subject != "") & (mmlu if (mmlu & (subject != "")).any() else True))
    if len(keep) and len(np.unique(subject[keep])) > 1:
        return keep, subject[keep], "subject"
    return np.arange(ds.n_items), ds.items["benchmark"].astype(str).to_numpy(), "benchmark"


ORIGINAL_MMLU = "ori_mmlu-"  # MMLU-Pro's subject prefix of the questions it took from MMLU


def table5_questions(ds: Dataset) -> tuple[np.ndarray, np.ndarray] | None:
    """Table 5's setting where a dataset holds it: (item positions, MMLU subject per item) of its
    original MMLU questions, those MMLU-Pro took from MMLU (subject `ori_mmlu-<subject>`, the prefix
    dropped: 6,810 questions in 56 of MMLU's 57 subjects, moral_scenarios left out by MMLU-Pro), else
    those of a benchmark named "mmlu" with subjects; None where it has neither."""
    subject = ds.items["subject"].fillna("").astype(str)
    original = subject.str.startswith(ORIGINAL_MMLU).to_numpy()
    if original.any():
        keep = np.flatnonzero(original)
        return keep, np.char.replace(subject.to_numpy()[keep].astype(str), ORIGINAL_MMLU, "")
    mmlu = (ds.items["benchmark"].astype(str).to_numpy() == MMLU) & (subject.to_numpy() != "")
    if mmlu.any():
        keep = np.flatnonzero(mmlu)
        return keep, subject.to_numpy()[keep]
    return None


def taxonomy_table(
    representations: dict[str, np.ndarray], labels_true: Sequence | np.ndarray, k: int | None = None, seed: int = 0
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Agreement of k-means clusters of each representation (name -> (n, dim)) with `labels_true`,
    plus a random partition of the first representation's cluster sizes.

    Returns the table (one row per representation, one column per metric) and the cluster ids.
    `k` defaults to the number of human classes.
    """
    labels_true = np.asarray(labels_true)
    k = len(np.unique(labels_true)) if k is None else k
    clusters = {}
    for name, x in representations.items():
        if len(x) != len(labels_true):
            raise ValueError(f"representation {name!r} has {len(x)} rows; labels_true has {len(labels_true)}.")
        clusters[name] = kmeans_directions(x, k, seed)
    first = next(iter(clusters.values()))
    clusters["random partition"] = random_partition(first, seed)
    table = pd.DataFrame({name: cluster_agreement(labels_true, c) for name, c in clusters.items()}).T
    table.index.name = "representation"
    return table, clusters


def cluster_examples(
    clusters: np.ndarray,
    labels_true: Sequence | np.ndarray,
    texts: Sequence[str] | np.ndarray,
    which: Sequence[int],
    n_classes: int = 3,
    n_texts: int = 2,
    seed: int = 0,
    max_chars: int = 160,
) -> pd.DataFrame:
    """For each cluster id in `which`: its size, its `n_classes` most common human classes (with their
    share of the cluster) and `n_texts` random questions from it, shortened to `max_chars`."""
    clusters, labels_true, texts = np.asarray(clusters), np.asarray(labels_true), np.asarray(texts)
    rng = np.random.default_rng(seed)
    rows = []
    for c in which:
        members = np.flatnonzero(clusters == c)
        if len(members) == 0:
            raise ValueError(f"cluster {c} is empty; expected ids from {sorted(set(clusters))[:10]}...")
        share = pd.Series(labels_true[members]).value_counts(normalize=True).head(n_classes)
        picked = rng.choice(members, size=min(n_texts, len(members)), replace=False)
        rows.append(
            {
                "cluster": int(c),
                "size": len(members),
                "top classes": "; ".join(f"{name} ({s:.0%})" for name, s in share.items()),
                **{f"question {i + 1}": _shorten(texts[j], max_chars) for i, j in enumerate(picked)},
            }
        )
    return pd.DataFrame(rows).set_index("cluster")


def _shorten(text: str, max_chars: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def cluster_purities(clusters: np.ndarray, labels_true: Sequence | np.ndarray) -> pd.DataFrame:
    """Per cluster: size, majority class and its share (the cluster's purity), largest share first."""
    table = pd.crosstab(np.asarray(clusters), np.asarray(labels_true))  # (n_clusters, n_classes)
    out = pd.DataFrame(
        {
            "size": table.sum(axis=1),
            "majority class": table.idxmax(axis=1),
            "purity": table.max(axis=1) / table.sum(axis=1),
        }
    )
    out.index.name = "cluster"
    return out.sort_values(["purity", "size"], ascending=False)


def agreement_over_starts(
    x: np.ndarray, labels_true: Sequence | np.ndarray, k: int, seed: int = 0, starts: int = 5
) -> pd.DataFrame:
    """The spread a verdict on the agreement scores reads: per k-means start (seed, seed + 1, ...),
    the scores of the clusters of `x` ("learned") and of a random partition with their sizes
    ("random"); columns (kind, metric), one row per start."""
    if starts < 2:
        raise ValueError(f"starts={starts}; a spread needs at least 2 k-means starts.")
    rows = []
    for start in range(starts):
        ids = kmeans_directions(x, k, seed=seed + start)
        learned = cluster_agreement(labels_true, ids)
        chance = cluster_agreement(labels_true, random_partition(ids, seed + start))
        rows.append(
            {**{("learned", m): v for m, v in learned.items()}, **{("random", m): v for m, v in chance.items()}}
        )
    out = pd.DataFrame(rows).rename_axis("start")
    out.columns = pd.MultiIndex.from_tuples(out.columns, names=["kind", "metric"])
    return out
