"""Analysis helpers shared by the book's chapters: taxonomy, geometry, and the paper's propositions.

Each section below answers one question about a fitted JE-IRT model; the functions take plain
arrays (embeddings, labels, names) so they work on any fit, and the chapters only call them.

    Clustering agreement    k-means on unit directions vs human subjects: purity, inverse purity,
                            NMI, homogeneity, completeness (Sec. 3.6, Table 5)
    Spectrum                cumulative PCA variance and the entropic effective rank (App. E, Fig. 4)
    Model families          a documented name rule that groups LLMs into families (App. E, Fig. 5)
    Question directions     cosine to the global and per-benchmark mean direction (App. E, Table 6,
                            Fig. 7), kernel PCA with a cosine kernel
    Opposite abilities      the most opposite pair of questions and how models answer it (App. G)
    Propositions            Prop. 1's construction (any subset of models can be the solvers of a
                            question) and the Lipschitz bound of Props. 2-3 (Apps. A-C)
    Out of distribution     directional alignment of a benchmark with the rest (Sec. 3.4, Table 4);
    and difficulty          accuracy per norm bin, the ROC-like curve and AUC of a difficulty score
                            (norm, 2PL b, share wrong) for failure (Sec. 3.5, Fig. 3, App. F)

Our reading of the propositions, with P = sigmoid(<u, E_M> - r) for a question of unit direction u
and norm r (Eq. 3):

- Prop. 1 (expressiveness): with d >= n models there are model vectors such that every subset S of
  the models is exactly the set with P > 1/2 on some question. 2PL cannot: its solvers of any item
  are the models above an ability threshold, so only n + 1 subsets occur.
- Props. 2-3 (smoothness): for a fixed model, |P1 - P2| <= (|E_M| ||u1 - u2|| + |r1 - r2|) / 4,
  because the sigmoid is 1/4-Lipschitz and |<u1 - u2, E_M>| <= |E_M| ||u1 - u2|| (Cauchy-Schwarz);
  with equal norms only the direction term remains, with equal directions only the norm term.
"""
from __future__ import annotations

import re
from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd
from sklearn import metrics as skm
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA, KernelPCA
from sklearn.manifold import TSNE

EPS = 1e-12  # guards divisions by a zero norm


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows of `x` (n, d) scaled to unit length (a zero row stays zero)."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), EPS)


def sigmoid(z: np.ndarray) -> np.ndarray:
    """The logistic function, computed without overflow warnings."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64)))


# ---------------------------------------------------------------------------------------------
# Clustering agreement (Sec. 3.6, Table 5)


def _contingency(labels_true: Sequence, labels_pred: Sequence) -> np.ndarray:
    """Counts (n_classes, n_clusters) of items in each (human class, cluster) pair."""
    labels_true, labels_pred = np.asarray(labels_true), np.asarray(labels_pred)
    if labels_true.shape != labels_pred.shape or labels_true.ndim != 1:
        raise ValueError(f"labels_true {labels_true.shape} and labels_pred {labels_pred.shape} must be "
                         "1-D arrays of the same length.")
    if labels_true.size == 0:
        raise ValueError("labels are empty; expected at least one item.")
    return skm.cluster.contingency_matrix(labels_true, labels_pred)


def purity(labels_true: Sequence, labels_pred: Sequence) -> float:
    """Share of items whose cluster's majority class is their own class (Zhao & Karypis 2001).

    1 when every cluster holds one class; it rewards many small clusters, hence `inverse_purity`.
    """
    table = _contingency(labels_true, labels_pred)  # (n_classes, n_clusters)
    return float(table.max(axis=0).sum() / table.sum())


def inverse_purity(labels_true: Sequence, labels_pred: Sequence) -> float:
    """Share of items in the cluster that holds most of their class: purity with roles swapped.

    1 when every class lies in one cluster; it rewards one big cluster, hence `purity`.
    """
    return purity(labels_pred, labels_true)


def cluster_agreement(labels_true: Sequence, labels_pred: Sequence) -> dict[str, float]:
    """Purity, inverse purity, NMI, homogeneity and completeness of a clustering vs human classes."""
    homogeneity, completeness, nmi = skm.homogeneity_completeness_v_measure(labels_true, labels_pred)
    return {"purity": purity(labels_true, labels_pred),
            "inverse purity": inverse_purity(labels_true, labels_pred),
            "nmi": float(nmi),  # arithmetic-mean NMI, equal to the V-measure
            "homogeneity": float(homogeneity), "completeness": float(completeness)}


def kmeans_directions(x: np.ndarray, k: int, seed: int = 0, n_init: int = 4) -> np.ndarray:
    """Cluster ids (n,) from k-means on the unit-normalised rows of `x`: clusters of directions,
    so a question's difficulty (JE-IRT's norm) plays no part."""
    x = np.asarray(x)
    if not 1 <= k <= len(x):
        raise ValueError(f"k={k}; expected 1 <= k <= number of rows ({len(x)}).")
    return KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(unit_rows(x))


def random_partition(labels_pred: Sequence, seed: int = 0) -> np.ndarray:
    """A random shuffle of `labels_pred`: a partition with the same cluster sizes and no information,
    the floor any representation should clear."""
    return np.random.default_rng(seed).permutation(np.asarray(labels_pred))


def taxonomy_labels(ds) -> tuple[np.ndarray, np.ndarray, str]:
    """(item positions, human class per item, column name) for the taxonomy analysis of dataset `ds`.

    The classes are the `subject` column on the items that have one (MMLU-Pro's 91 source subjects;
    MMLU's subjects on metabench); a dataset without subjects falls back to `benchmark` on all items.
    """
    subject = ds.items["subject"].fillna("").astype(str).to_numpy()
    keep = np.flatnonzero(subject != "")
    if len(keep) and len(np.unique(subject[keep])) > 1:
        return keep, subject[keep], "subject"
    return np.arange(ds.n_items), ds.items["benchmark"].astype(str).to_numpy(), "benchmark"


def taxonomy_table(representations: dict[str, np.ndarray], labels_true: Sequence, k: int | None = None,
                   seed: int = 0) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
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


def cluster_examples(clusters: np.ndarray, labels_true: Sequence, texts: Sequence[str],
                     which: Sequence[int], n_classes: int = 3, n_texts: int = 2, seed: int = 0,
                     max_chars: int = 160) -> pd.DataFrame:
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
        rows.append({"cluster": int(c), "size": len(members),
                     "top classes": "; ".join(f"{name} ({s:.0%})" for name, s in share.items()),
                     **{f"question {i + 1}": _shorten(texts[j], max_chars) for i, j in enumerate(picked)}})
    return pd.DataFrame(rows).set_index("cluster")


def _shorten(text: str, max_chars: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def cluster_purities(clusters: np.ndarray, labels_true: Sequence) -> pd.DataFrame:
    """Per cluster: size, majority class and its share (the cluster's purity), largest share first."""
    table = pd.crosstab(np.asarray(clusters), np.asarray(labels_true))  # (n_clusters, n_classes)
    out = pd.DataFrame({"size": table.sum(axis=1), "majority class": table.idxmax(axis=1),
                        "purity": table.max(axis=1) / table.sum(axis=1)})
    out.index.name = "cluster"
    return out.sort_values(["purity", "size"], ascending=False)


# ---------------------------------------------------------------------------------------------
# Spectrum of an embedding matrix (App. E, Fig. 4)


def effective_rank(x: np.ndarray, center: bool = False) -> float:
    """Entropic effective rank exp(H(p)), p = singular values / their sum (Roy & Vetterli 2007).

    Between 1 (one direction) and min(x.shape) (all singular values equal). `center=True` removes the
    column means first, measuring the spread around the mean instead of around the origin.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or min(x.shape) == 0:
        raise ValueError(f"x has shape {x.shape}; expected a non-empty 2-D matrix.")
    if center:
        x = x - x.mean(axis=0)
    s = np.linalg.svd(x, compute_uv=False)
    if s.sum() <= 0:
        raise ValueError("x is all zeros; its effective rank is undefined.")
    p = s / s.sum()
    p = p[p > 0]
    return float(np.exp(-(p * np.log(p)).sum()))


def cumulative_variance(x: np.ndarray, n_components: int = 64) -> np.ndarray:
    """Cumulative share of variance of the first principal components of rows `x` (n, d); at most
    min(n_components, n, d) values, rising to 1 when every component is kept."""
    x = np.asarray(x, dtype=np.float64)
    n = min(n_components, *x.shape)
    return np.cumsum(PCA(n_components=n).fit(x).explained_variance_ratio_)


# ---------------------------------------------------------------------------------------------
# Model families (App. E, Fig. 5)

# The first pattern found anywhere in the model name (case-insensitive) names the family; the order
# matters (e.g. "deepseek" before "llama", since DeepSeek-Coder-V2-Lite-Instruct is not a Llama).
# Names are all the rule sees: fine-tunes named after their base model join its family, others
# (e.g. "Matter-7B", a Mistral fine-tune) fall to "other", and "GPT" also catches open GPT-style
# models (GPT-2, GPT-J, GPT-NeoX) whose names say "gpt".
FAMILIES: tuple[tuple[str, str], ...] = (
    ("DeepSeek", r"deepseek"),
    ("Mistral", r"mistral|mixtral|mathstral|codestral"),
    ("Qwen", r"qwen"),
    ("Yi", r"(^|[/_\- ])yi([/_\-. ]|$)"),
    ("Gemma/Gemini", r"gemma|gemini"),
    ("GPT", r"gpt|(^|[/_\- ])o1([/_\-. ]|$)"),
    ("Phi", r"(^|[/_\- ])phi[-_]?\d"),
    ("Claude", r"claude"),
    ("Llama", r"llama"),
)
OTHER_FAMILY = "other"


def model_family(name: str) -> str:
    """The family of model `name` by the first matching rule in `FAMILIES`, else "other"."""
    for family, pattern in FAMILIES:
        if re.search(pattern, str(name), flags=re.IGNORECASE):
            return family
    return OTHER_FAMILY


def model_families(names: Sequence[str]) -> np.ndarray:
    """`model_family` of each name, as an array (n,)."""
    return np.array([model_family(n) for n in names], dtype=object)


def tsne_map(x: np.ndarray, seed: int = 0, perplexity: float | None = None) -> np.ndarray:
    """2-D t-SNE coordinates (n, 2) of rows `x` on the cosine distance; perplexity defaults to
    min(30, (n - 1) / 3) so a few dozen models still have enough neighbours."""
    n = len(x)
    if n < 4:
        raise ValueError(f"t-SNE needs at least 4 rows; got {n}.")
    perplexity = min(30.0, (n - 1) / 3) if perplexity is None else perplexity
    if not 0 < perplexity < n:
        raise ValueError(f"perplexity={perplexity}; expected 0 < perplexity < n = {n}.")
    return TSNE(n_components=2, perplexity=perplexity, metric="cosine", init="pca",
                random_state=seed).fit_transform(np.asarray(x, dtype=np.float64))


# ---------------------------------------------------------------------------------------------
# Question directions (App. E, Table 6, Fig. 7)


def cosine_to_means(x: np.ndarray, groups: Sequence[str]) -> pd.DataFrame:
    """Per row of `x` (n, d): its group, its cosine to the mean direction of all rows ("global") and
    to the mean direction of its group's rows ("own benchmark"). Means are of unit directions."""
    u = unit_rows(x)
    groups = np.asarray(groups)
    if len(groups) != len(u):
        raise ValueError(f"groups has {len(groups)} entries; x has {len(u)} rows.")
    global_mean = u.mean(axis=0)
    own = np.empty(len(u))
    for g in np.unique(groups):
        rows = groups == g
        own[rows] = u[rows] @ _unit(u[rows].mean(axis=0))
    return pd.DataFrame({"benchmark": groups, "global": u @ _unit(global_mean), "own benchmark": own})


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(np.linalg.norm(v), EPS)


def cosine_table(cosines: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd of each cosine column of `cosine_to_means` per benchmark, and over all questions."""
    stats = cosines.groupby("benchmark").agg(["mean", "std"])
    stats.loc["all questions"] = cosines.drop(columns="benchmark").agg(["mean", "std"]).T.stack()
    return stats


def kernel_pca_cosine(x: np.ndarray, n_components: int = 2, max_rows: int | None = 3000,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Kernel PCA with the cosine kernel: (row positions used, coordinates (n_used, n_components)).

    The kernel matrix is n x n, so at most `max_rows` rows are used (a seeded sample)."""
    n = len(x)
    rows = np.arange(n)
    if max_rows is not None and n > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(n, size=max_rows, replace=False))
    kpca = KernelPCA(n_components=n_components, kernel="cosine", random_state=seed)
    return rows, kpca.fit_transform(np.asarray(x, dtype=np.float64)[rows])


# ---------------------------------------------------------------------------------------------
# Opposite abilities (App. G)


def most_opposite_pairs(x: np.ndarray, n_pairs: int = 1, block: int = 2048) -> pd.DataFrame:
    """The `n_pairs` pairs of rows of `x` (n, d) with the most negative cosine, most negative first:
    columns i, j (row positions, i < j) and cosine. Works in blocks, so n can be tens of thousands."""
    u = unit_rows(x).astype(np.float32)
    n = len(u)
    if n < 2:
        raise ValueError(f"x has {n} rows; need at least 2 to form a pair.")
    best_cos, best_i, best_j = np.zeros(0, np.float32), np.zeros(0, int), np.zeros(0, int)
    for start in range(0, n, block):
        cos = u[start:start + block] @ u.T  # (block, n)
        rows = np.arange(start, start + len(cos))[:, None]
        cos = np.where(np.arange(n)[None, :] > rows, cos, np.inf)  # each pair once: j > i
        k = min(n_pairs, cos.size)
        flat = np.argpartition(cos, k - 1, axis=None)[:k]
        i, j = np.unravel_index(flat, cos.shape)
        best_cos = np.concatenate([best_cos, cos[i, j]])
        best_i, best_j = np.concatenate([best_i, i + start]), np.concatenate([best_j, j])
        keep = np.isfinite(best_cos)
        order = np.lexsort((best_j[keep], best_i[keep], best_cos[keep]))[:n_pairs]
        best_cos, best_i, best_j = best_cos[keep][order], best_i[keep][order], best_j[keep][order]
    return pd.DataFrame({"i": best_i, "j": best_j, "cosine": best_cos.astype(np.float64)})


def exactly_one_right(a: np.ndarray, b: np.ndarray, p_a: np.ndarray | None = None,
                      p_b: np.ndarray | None = None) -> dict[str, float]:
    """How many models get exactly one of two questions right, against two predictions.

    `a`, `b`: each model's labels (n_models,) on the two questions, NaN = not graded (dropped).
    "independence": if success on the two were independent across models with the observed marginals
    rates p, q, the expected share is p(1 - q) + (1 - p)q. "je-irt" (when `p_a`, `p_b` are given): the
    mean over models of P_a(1 - P_b) + (1 - P_a)P_b from the model's own probabilities.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"a {a.shape} and b {b.shape} must have the same shape (one label per model).")
    seen = ~np.isnan(a) & ~np.isnan(b)
    if not seen.any():
        raise ValueError("no model was graded on both questions.")
    a, b = a[seen], b[seen]
    p, q = a.mean(), b.mean()
    out = {"models": int(seen.sum()), "observed": float(np.mean(a * (1 - b) + (1 - a) * b)),
           "independence": float(p * (1 - q) + (1 - p) * q)}
    if p_a is not None and p_b is not None:
        pa, pb = np.asarray(p_a, dtype=float)[seen], np.asarray(p_b, dtype=float)[seen]
        out["je-irt"] = float(np.mean(pa * (1 - pb) + (1 - pa) * pb))
    return out


def answer_correlation(labels: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Phi coefficient (Pearson correlation of 0/1 answers) across models between questions i and j,
    for each pair (n_pairs,); models not graded on both are left out, NaN where a question has no
    variance (all right or all wrong). labels (n_models, n_items), NaN = not graded."""
    a, b = labels[:, np.asarray(i)], labels[:, np.asarray(j)]  # (n_models, n_pairs)
    seen = ~np.isnan(a) & ~np.isnan(b)
    a, b = np.where(seen, a, 0.0), np.where(seen, b, 0.0)
    n = seen.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a, mean_b = a.sum(axis=0) / n, b.sum(axis=0) / n
        cov = (a * b).sum(axis=0) / n - mean_a * mean_b
        var_a = (a * a).sum(axis=0) / n - mean_a ** 2
        var_b = (b * b).sum(axis=0) / n - mean_b ** 2
        phi = cov / np.sqrt(var_a * var_b)
    return np.where((var_a > EPS) & (var_b > EPS), phi, np.nan)


def correlation_by_cosine(x: np.ndarray, labels: np.ndarray, n_pairs: int = 20000,
                          bins: Sequence[float] = (-1.0, -0.5, 0.0, 0.5, 0.9, 1.0),
                          seed: int = 0) -> pd.DataFrame:
    """Random question pairs grouped by the cosine of their directions: per cosine bin, the number of
    pairs and the mean and standard error of their answer correlation across models (App. G's claim,
    on many pairs instead of one: opposite directions, less alike answers)."""
    i, j = random_pairs(len(x), n_pairs, seed)
    u = unit_rows(x)
    cos = np.einsum("nd,nd->n", u[i], u[j])
    names = [f"{lo:g} to {hi:g}" for lo, hi in zip(bins[:-1], bins[1:])]
    frame = pd.DataFrame({"cosine bin": pd.cut(cos, list(bins), labels=names, include_lowest=True),
                          "phi": answer_correlation(labels, i, j)}).dropna()
    out = frame.groupby("cosine bin", observed=False)["phi"].agg(["size", "mean", "sem"])
    return out.rename(columns={"size": "pairs", "mean": "mean phi", "sem": "standard error"})


# ---------------------------------------------------------------------------------------------
# Propositions (Apps. A-C)


def probability(directions: np.ndarray, norms: np.ndarray, model_vectors: np.ndarray) -> np.ndarray:
    """Eq. (3) from a question's unit direction u and norm r: sigmoid(<u, E_M> - r).

    directions (n_items, d), norms (n_items,), model_vectors (n_models, d) -> (n_items, n_models).
    """
    directions = np.atleast_2d(np.asarray(directions, dtype=np.float64))
    logits = directions @ np.atleast_2d(model_vectors).T - np.reshape(norms, (-1, 1))
    return sigmoid(logits)


def expressive_construction(n: int, subset: Sequence[int], scale: float = 1.0,
                            norm: float | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Prop. 1's construction for `n` models in d = n dimensions: (model vectors (n, n), question
    direction (n,), question norm) such that exactly the models in `subset` have P > 1/2.

    Model m is scale * e_m; the direction is (sum over S of e_m - sum over the rest) / sqrt(n); so
    model m's logit is +-scale / sqrt(n) - norm, and any norm < scale / sqrt(n) (default: half of it)
    puts the models of S above 1/2 and the others below.
    """
    subset = sorted(set(int(m) for m in subset))
    if n < 1 or any(not 0 <= m < n for m in subset):
        raise ValueError(f"subset={subset} with n={n}; expected n >= 1 and model ids in [0, {n}).")
    limit = scale / np.sqrt(n)
    norm = limit / 2 if norm is None else norm
    if not 0 <= norm < limit:
        raise ValueError(f"norm={norm}; the construction needs 0 <= norm < scale / sqrt(n) = {limit:.4g}.")
    sign = -np.ones(n)
    sign[subset] = 1.0
    return scale * np.eye(n), sign / np.sqrt(n), float(norm)


def realisable_subsets_2pl(abilities: np.ndarray) -> set[frozenset[int]]:
    """The sets of models with P > 1/2 that any 2PL item (positive discrimination) can produce for
    models of these abilities: those above a threshold, n + 1 sets for n distinct abilities."""
    order = np.argsort(-np.asarray(abilities), kind="stable")
    return {frozenset(int(m) for m in order[:k]) for k in range(len(order) + 1)}


def all_subsets(n: int) -> list[tuple[int, ...]]:
    """Every subset of range(n), smallest first (2**n of them)."""
    return [s for k in range(n + 1) for s in combinations(range(n), k)]


def bound_delta_p(model_vectors: np.ndarray, u1: np.ndarray, u2: np.ndarray, r1: np.ndarray,
                  r2: np.ndarray) -> np.ndarray:
    """Props. 2-3: the bound (|E_M| ||u1 - u2|| + |r1 - r2|) / 4 on |P1 - P2| for each question pair
    and model.

    model_vectors (n_models, d) or (d,); u1, u2 (n_pairs, d) or (d,) unit directions; r1, r2 norms
    (n_pairs,) or scalars. Returns (n_pairs, n_models), without the axes that were given 1-D/scalar.
    """
    m = np.asarray(model_vectors, dtype=np.float64)
    u1, u2 = np.asarray(u1, dtype=np.float64), np.asarray(u2, dtype=np.float64)
    if u1.shape != u2.shape or u1.shape[-1] != m.shape[-1]:
        raise ValueError(f"u1 {u1.shape}, u2 {u2.shape} and model_vectors {m.shape} must share the "
                         "last (embedding) dimension, and u1, u2 the same shape.")
    gap = np.linalg.norm(np.atleast_2d(u1) - np.atleast_2d(u2), axis=1)  # (n_pairs,)
    dr = np.abs(np.broadcast_to(np.asarray(r1, dtype=np.float64) - np.asarray(r2, dtype=np.float64),
                                gap.shape))
    bound = 0.25 * (np.outer(gap, np.linalg.norm(np.atleast_2d(m), axis=1)) + dr[:, None])
    if m.ndim == 1:
        bound = bound[:, 0]
    return bound[0] if u1.ndim == 1 else bound


def delta_p(model_vectors: np.ndarray, u1: np.ndarray, u2: np.ndarray, r1: np.ndarray,
            r2: np.ndarray) -> np.ndarray:
    """|P1 - P2| for the same pairs and models as `bound_delta_p`, with the same shape."""
    m = np.atleast_2d(model_vectors)
    gap = np.abs(probability(u1, np.broadcast_to(r1, np.atleast_2d(u1).shape[:1]), m)
                 - probability(u2, np.broadcast_to(r2, np.atleast_2d(u2).shape[:1]), m))
    if np.ndim(model_vectors) == 1:
        gap = gap[:, 0]
    return gap[0] if np.ndim(u1) == 1 else gap


def random_pairs(n: int, n_pairs: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`n_pairs` random pairs (i, j), i != j, of positions in range(n), seeded."""
    if n < 2:
        raise ValueError(f"n={n}; need at least 2 items to pair.")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=n_pairs)
    j = (i + rng.integers(1, n, size=n_pairs)) % n  # never equal to i
    return i, j


def nearest_direction_pairs(x: np.ndarray, n_pairs: int, seed: int = 0,
                            block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """`n_pairs` pairs (i, j) where j is the row whose direction is closest to that of row i (i a
    seeded sample of rows): pairs of related questions, where Props. 2-3 say answers barely change."""
    n = len(x)
    if n < 2:
        raise ValueError(f"x has {n} rows; need at least 2 to form a pair.")
    u = unit_rows(x).astype(np.float32)
    i = np.sort(np.random.default_rng(seed).choice(n, size=min(n_pairs, n), replace=False))
    j = np.empty_like(i)
    for start in range(0, len(i), block):
        rows = i[start:start + block]
        cos = u[rows] @ u.T  # (block, n)
        cos[np.arange(len(rows)), rows] = -np.inf  # not itself
        j[start:start + block] = cos.argmax(axis=1)
    return i, j


# ---------------------------------------------------------------------------------------------
# Out of distribution and difficulty (Secs. 3.4-3.5, Tables 3-4, Fig. 3, App. F)


def directional_alignment(x: np.ndarray, groups: Sequence[str]) -> pd.Series:
    """Per group (benchmark), the cosine between the mean unit direction of its rows of `x` (n, d)
    and the mean unit direction of all the other rows, pooled over questions (Table 4).

    Near 1: the rest of the data already points where this group points, so a model trained without
    it has seen its direction; near 0 or below: the group points somewhere the rest does not.
    """
    u = unit_rows(x)
    groups = np.asarray(groups)
    if len(groups) != len(u):
        raise ValueError(f"groups has {len(groups)} entries; x has {len(u)} rows.")
    names = sorted(np.unique(groups))
    if len(names) < 2:
        raise ValueError(f"groups holds {len(names)} distinct value(s); alignment needs at least 2.")
    out = {g: float(_unit(u[groups == g].mean(axis=0)) @ _unit(u[groups != g].mean(axis=0)))
           for g in names}
    return pd.Series(out, name="alignment").rename_axis("benchmark")


def share_wrong(labels: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """The plain difficulty of each question (n_items,): the share of its graded models (under `mask`)
    that answered it wrong (label < 0.5); NaN where none was graded. labels (n_models, n_items)."""
    seen = _graded(labels, mask)
    wrong = (np.nan_to_num(labels, nan=1.0) < 0.5) & seen
    with np.errstate(invalid="ignore", divide="ignore"):
        return wrong.sum(axis=0) / np.where(seen.any(axis=0), seen.sum(axis=0), np.nan)


def share_wrong_others(labels: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Plain difficulty seen from each pair (n_models, n_items): the share of the *other* graded models
    that answered the question wrong, so a pair's own label never enters its score; NaN where no other
    model was graded."""
    seen = _graded(labels, mask)
    wrong = ((np.nan_to_num(labels, nan=1.0) < 0.5) & seen).astype(np.float64)
    others_wrong = wrong.sum(axis=0, keepdims=True) - wrong  # (n_models, n_items)
    others_seen = seen.sum(axis=0, keepdims=True) - seen
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(others_seen > 0, others_wrong / others_seen, np.nan)


def _graded(labels: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Boolean (n_models, n_items): graded (not NaN) and, when given, under `mask`."""
    labels = np.asarray(labels, dtype=np.float64)
    if labels.ndim != 2:
        raise ValueError(f"labels has shape {labels.shape}; expected (n_models, n_items).")
    seen = ~np.isnan(labels)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != labels.shape:
            raise ValueError(f"mask has shape {mask.shape}; expected the labels' {labels.shape}.")
        seen &= mask
    return seen


def difficulty_pairs(scores: np.ndarray, labels: np.ndarray,
                     mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The (score, answered incorrectly) of every graded pair under `mask` whose score is finite.

    `scores` is one difficulty per question (n_items,), given to each of its pairs, or one per pair
    (n_models, n_items). Returns two flat arrays: scores (float) and wrong (bool, label < 0.5).
    """
    labels = np.asarray(labels, dtype=np.float64)
    seen = _graded(labels, mask)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape == (labels.shape[1],):
        scores = np.broadcast_to(scores, labels.shape)
    elif scores.shape != labels.shape:
        raise ValueError(f"scores has shape {scores.shape}; expected one per question ({labels.shape[1]},) "
                         f"or one per pair {labels.shape}.")
    keep = seen & np.isfinite(scores)
    if not keep.any():
        raise ValueError("no graded pair with a finite score under the mask.")
    return scores[keep], labels[keep] < 0.5


def difficulty_auc(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None) -> float:
    """App. F's AUC: the chance that a random wrongly answered pair has a higher difficulty score than a
    random correctly answered one (ties count one half), over the graded pairs under `mask`.

    0.5: the score says nothing about failure; 1: every failure scores above every success. NaN when
    the pairs are all right or all wrong.
    """
    s, wrong = difficulty_pairs(scores, labels, mask)
    if wrong.all() or not wrong.any():
        return float("nan")
    return float(skm.roc_auc_score(wrong, s))


def difficulty_roc(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None) -> pd.DataFrame:
    """App. F's ROC-like curve: for each threshold t on the difficulty score, the share of wrongly
    answered pairs with score >= t ("tpr") against the share of correctly answered ones ("fpr")."""
    s, wrong = difficulty_pairs(scores, labels, mask)
    if wrong.all() or not wrong.any():
        raise ValueError("the pairs are all right or all wrong; a ROC curve needs both outcomes.")
    fpr, tpr, threshold = skm.roc_curve(wrong, s)
    return pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": threshold})


def norm_bin_accuracy(norms: np.ndarray, labels: np.ndarray, n_bins: int = 20,
                      mask: np.ndarray | None = None) -> pd.DataFrame:
    """Questions in `n_bins` equal-count bins of their norm (n_items,), lowest first (Fig. 3): per bin
    the norm range and mean, the number of questions and graded pairs, and the accuracy (share of
    graded pairs under `mask` answered correctly). Questions with no graded pair are left out first."""
    norms = np.asarray(norms, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    if norms.shape != (labels.shape[1],):
        raise ValueError(f"norms has shape {norms.shape}; expected one per question ({labels.shape[1]},).")
    seen = _graded(labels, mask)
    keep = np.flatnonzero(seen.any(axis=0) & np.isfinite(norms))
    if not 1 <= n_bins <= len(keep):
        raise ValueError(f"n_bins={n_bins}; expected between 1 and the {len(keep)} questions with labels.")
    rank = np.empty(len(keep), dtype=np.int64)
    rank[np.argsort(norms[keep], kind="stable")] = np.arange(len(keep))
    bins = rank * n_bins // len(keep)  # equal counts (to within one), ties split by position
    right = ((np.nan_to_num(labels) >= 0.5) & seen)[:, keep].sum(axis=0)
    pairs = seen[:, keep].sum(axis=0)
    frame = pd.DataFrame({"bin": bins + 1, "norm": norms[keep], "right": right, "pairs": pairs})
    out = frame.groupby("bin").agg(low=("norm", "min"), high=("norm", "max"), mean_norm=("norm", "mean"),
                                   questions=("norm", "size"), pairs=("pairs", "sum"), right=("right", "sum"))
    out["accuracy"] = out.pop("right") / out["pairs"]
    return out.rename(columns={"mean_norm": "mean norm"})
