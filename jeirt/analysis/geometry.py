"""The geometry of a fitted JE-IRT space (the paper's appendices A-C, E and G): how many directions
the model vectors use (effective rank, Eq. 7, principal components), model families and 2-D maps,
how question directions spread around their benchmark's mean (Table 6), pairs of questions pointing
apart and whether their answers differ (App. G), and the propositions' constructions and bounds
(Props. 1-3), checked against Eq. 3 through `jeirt.model.probability`.

Every function takes arrays (embeddings, labels), not a fitted estimator, so it applies to any model's
vectors; the Geometry page (book/geometry.md) calls them and `jeirt_book.geometry` draws the results.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import combinations, pairwise

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA, KernelPCA
from sklearn.manifold import TSNE

from jeirt.model import probability, unit_rows

EPS = 1e-12  # guards divisions by a zero norm or variance


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


def covariance_effective_rank(x: np.ndarray) -> float:
    """The paper's Eq. 7: exp(H(p)) with p = eigenvalues of the covariance of rows `x` / their sum.

    The same as `effective_rank(x, center=True)` but on squared singular values (variances), so a
    dominant direction weighs more: between 1 (one direction of variance) and min(n - 1, d)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] == 0:
        raise ValueError(f"x has shape {x.shape}; expected a 2-D matrix with at least 2 rows.")
    var = np.linalg.svd(x - x.mean(axis=0), compute_uv=False) ** 2  # (min(n, d),) covariance eigenvalues * (n - 1)
    if var.sum() <= 0:
        raise ValueError("x has no variance (all rows equal); its covariance effective rank is undefined.")
    p = var[var > 0] / var.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


def cumulative_variance(x: np.ndarray, n_components: int = 64) -> np.ndarray:
    """Cumulative share of variance of the first principal components of rows `x` (n, d); at most
    min(n_components, n, d) values, rising to 1 when every component is kept."""
    x = np.asarray(x, dtype=np.float64)
    n = min(n_components, *x.shape)
    return np.cumsum(PCA(n_components=n).fit(x).explained_variance_ratio_)


def first_component_se(x: np.ndarray, n_boot: int = 200, seed: int = 0) -> float:
    """Bootstrap standard error (over the rows, e.g. models) of the first principal component's share
    of variance: the spread a verdict on that share reads."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) < 3:
        raise ValueError(f"{len(x)} rows; a bootstrap of the first component needs at least 3.")
    rng = np.random.default_rng(seed)
    shares = [cumulative_variance(x[rng.integers(0, len(x), len(x))], 1)[0] for _ in range(n_boot)]
    return float(np.std(shares, ddof=1))


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
    return TSNE(n_components=2, perplexity=perplexity, metric="cosine", init="pca", random_state=seed).fit_transform(
        np.asarray(x, dtype=np.float64)
    )


# Question directions (App. E, Table 6, Fig. 7)
def density_peaks(values: np.ndarray, prominence: float = 0.05, grid: int = 512, bandwidth: float = 1.0) -> np.ndarray:
    """Where a Gaussian kernel density of `values` (Scott's bandwidth times `bandwidth`: 0.5 and 0.25
    look for peaks a smoother density hides) has its peaks: local maxima that rise at least
    `prominence` times the highest density above the valleys beside them."""
    from scipy.signal import find_peaks
    from scipy.stats import gaussian_kde

    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if len(values) < 3 or np.ptp(values) == 0:
        raise ValueError(f"density_peaks needs at least 3 distinct finite values; got {len(values)}.")
    if not bandwidth > 0:
        raise ValueError(f"bandwidth={bandwidth}; expected a positive multiple of Scott's bandwidth.")
    x = np.linspace(values.min(), values.max(), grid)
    kde = gaussian_kde(values)
    kde.set_bandwidth(kde.factor * bandwidth)
    density = kde(x)
    peaks, _ = find_peaks(np.r_[0.0, density, 0.0], prominence=prominence * density.max())
    return x[peaks - 1]


def cosine_to_means(x: np.ndarray, groups: Sequence[str] | np.ndarray) -> pd.DataFrame:
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
        own[rows] = u[rows] @ unit_rows(u[rows].mean(axis=0)[None])[0]
    return pd.DataFrame({"benchmark": groups, "global": u @ unit_rows(global_mean[None])[0], "own benchmark": own})


def cosine_table(cosines: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd of each cosine column of `cosine_to_means` per benchmark, and over all questions."""
    stats = cosines.groupby("benchmark").agg(["mean", "std"])
    stats.loc["all questions"] = cosines.drop(columns="benchmark").agg(["mean", "std"]).T.stack()
    return stats


def kernel_pca_cosine(
    x: np.ndarray, n_components: int = 2, max_rows: int | None = 3000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Kernel PCA with the cosine kernel: (row positions used, coordinates (n_used, n_components)).

    The kernel matrix is n x n, so at most `max_rows` rows are used (a seeded sample)."""
    n = len(x)
    rows = np.arange(n)
    if max_rows is not None and n > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(n, size=max_rows, replace=False))
    kpca = KernelPCA(n_components=n_components, kernel="cosine", random_state=seed)
    return rows, kpca.fit_transform(np.asarray(x, dtype=np.float64)[rows])


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
        cos = u[start : start + block] @ u.T  # (block, n)
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


def exactly_one_right(
    a: np.ndarray, b: np.ndarray, p_a: np.ndarray | None = None, p_b: np.ndarray | None = None
) -> dict[str, float]:
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
    out = {
        "models": int(seen.sum()),
        "observed": float(np.mean(a * (1 - b) + (1 - a) * b)),
        "independence": float(p * (1 - q) + (1 - p) * q),
    }
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
        var_a = (a * a).sum(axis=0) / n - mean_a**2
        var_b = (b * b).sum(axis=0) / n - mean_b**2
        phi = cov / np.sqrt(var_a * var_b)
    return np.where((var_a > EPS) & (var_b > EPS), phi, np.nan)


def correlation_by_cosine(
    x: np.ndarray,
    labels: np.ndarray,
    n_pairs: int = 20000,
    bins: Sequence[float] = (-1.0, -0.5, 0.0, 0.5, 0.9, 1.0),
    seed: int = 0,
) -> pd.DataFrame:
    """Random question pairs grouped by the cosine of their directions: per cosine bin, the number of
    pairs and the mean and standard error of their answer correlation across models (App. G's claim,
    on many pairs instead of one: opposite directions, less alike answers)."""
    i, j = random_pairs(len(x), n_pairs, seed)
    u = unit_rows(x)
    cos = np.einsum("nd,nd->n", u[i], u[j])
    names = [f"{lo:g} to {hi:g}" for lo, hi in pairwise(bins)]
    frame = pd.DataFrame(
        {
            "cosine bin": pd.cut(cos, list(bins), labels=names, include_lowest=True),
            "phi": answer_correlation(labels, i, j),
        }
    ).dropna()
    out = frame.groupby("cosine bin", observed=False)["phi"].agg(["size", "mean", "sem"])
    return out.rename(columns={"size": "pairs", "mean": "mean phi", "sem": "standard error"})


def expressive_construction(
    n: int, subset: Sequence[int], scale: float = 1.0, norm: float | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Prop. 1's construction for `n` models in d = n dimensions: (model vectors (n, n), question
    direction (n,), question norm) such that exactly the models in `subset` have P > 1/2.

    Model m is scale * e_m; the direction is (sum over S of e_m - sum over the rest) / sqrt(n); so
    model m's logit is +-scale / sqrt(n) - norm, and any norm < scale / sqrt(n) (default: half of it)
    puts the models of S above 1/2 and the others below.
    """
    subset = sorted({int(m) for m in subset})
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


def bound_delta_p(
    model_vectors: np.ndarray, u1: np.ndarray, u2: np.ndarray, r1: np.ndarray, r2: np.ndarray
) -> np.ndarray:
    """Props. 2-3: the bound (|E_M| ||u1 - u2|| + |r1 - r2|) / 4 on |P1 - P2| for each question pair
    and model.

    model_vectors (n_models, d) or (d,); u1, u2 (n_pairs, d) or (d,) unit directions; r1, r2 norms
    (n_pairs,) or scalars. Returns (n_pairs, n_models), without the axes that were given 1-D/scalar.
    """
    m = np.asarray(model_vectors, dtype=np.float64)
    u1, u2 = np.asarray(u1, dtype=np.float64), np.asarray(u2, dtype=np.float64)
    if u1.shape != u2.shape or u1.shape[-1] != m.shape[-1]:
        raise ValueError(
            f"u1 {u1.shape}, u2 {u2.shape} and model_vectors {m.shape} must share the "
            "last (embedding) dimension, and u1, u2 the same shape."
        )
    gap = np.linalg.norm(np.atleast_2d(u1) - np.atleast_2d(u2), axis=1)  # (n_pairs,)
    dr = np.abs(np.broadcast_to(np.asarray(r1, dtype=np.float64) - np.asarray(r2, dtype=np.float64), gap.shape))
    bound = 0.25 * (np.outer(gap, np.linalg.norm(np.atleast_2d(m), axis=1)) + dr[:, None])
    if m.ndim == 1:
        bound = bound[:, 0]
    return bound[0] if u1.ndim == 1 else bound


def delta_p(model_vectors: np.ndarray, u1: np.ndarray, u2: np.ndarray, r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    """|P1 - P2| for the same pairs and models as `bound_delta_p`, with the same shape."""
    m = np.atleast_2d(model_vectors)
    gap = np.abs(
        probability(u1, np.broadcast_to(r1, np.atleast_2d(u1).shape[:1]), m)
        - probability(u2, np.broadcast_to(r2, np.atleast_2d(u2).shape[:1]), m)
    )
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


def nearest_direction_pairs(
    x: np.ndarray, n_pairs: int, seed: int = 0, block: int = 1024
) -> tuple[np.ndarray, np.ndarray]:
    """`n_pairs` pairs (i, j) where j is the row whose direction is closest to that of row i (i a
    seeded sample of rows): pairs of related questions, where Props. 2-3 say answers barely change."""
    n = len(x)
    if n < 2:
        raise ValueError(f"x has {n} rows; need at least 2 to form a pair.")
    u = unit_rows(x).astype(np.float32)
    i = np.sort(np.random.default_rng(seed).choice(n, size=min(n_pairs, n), replace=False))
    j = np.empty_like(i)
    for start in range(0, len(i), block):
        rows = i[start : start + block]
        cos = u[rows] @ u.T  # (block, n)
        cos[np.arange(len(rows)), rows] = -np.inf  # not itself
        j[start : start + block] = cos.argmax(axis=1)
    return i, j


def ability_shift(model_vectors: np.ndarray, u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prop. 3 for each question pair and model: (|Theta_1 - Theta_2|, its bound ||u1 - u2|| ||E_M||),
    each (n_pairs, n_models), Theta = <u, E_M> the ability of Eq. 2. u1, u2 (n_pairs, d) unit rows."""
    m = np.atleast_2d(np.asarray(model_vectors, dtype=np.float64))  # (n_models, d)
    u1, u2 = np.atleast_2d(u1).astype(np.float64), np.atleast_2d(u2).astype(np.float64)
    if u1.shape != u2.shape or u1.shape[1] != m.shape[1]:
        raise ValueError(
            f"u1 {u1.shape}, u2 {u2.shape} and model_vectors {m.shape} must share the "
            "last (embedding) dimension, and u1, u2 the same shape."
        )
    shift = np.abs((u1 - u2) @ m.T)  # (n_pairs, n_models)
    bound = np.outer(np.linalg.norm(u1 - u2, axis=1), np.linalg.norm(m, axis=1))
    return shift, bound


def bound_summary(checks: dict[str, tuple[np.ndarray, np.ndarray]], tol: float = 1e-9) -> pd.DataFrame:
    """One row per check (name -> (bound, value), arrays of one shape, e.g. from `bound_delta_p` and
    `delta_p`): the number of points, how many exceed the bound (by more than `tol`), and the median
    and largest value / bound."""
    rows = {}
    for name, (bound, value) in checks.items():
        bound, value = np.asarray(bound, dtype=np.float64), np.asarray(value, dtype=np.float64)
        if bound.shape != value.shape or bound.size == 0:
            raise ValueError(
                f"check {name!r}: bound {bound.shape} and value {value.shape} must be non-empty and of one shape."
            )
        ratio = value / np.maximum(bound, EPS)
        rows[name] = {
            "points": bound.size,
            "violations": int((value > bound + tol).sum()),
            "median ratio": float(np.median(ratio)),
            "max ratio": float(ratio.max()),
        }
    return pd.DataFrame(rows).T.astype({"points": int, "violations": int})


def reversed_pairs(abilities: np.ndarray) -> tuple[int, int]:
    """Prop. 1 on a fitted model: (model pairs that some two questions rank in opposite orders, all
    model pairs). `abilities` (n_items, n_models), e.g. Theta = u @ E_M.T."""
    theta = np.asarray(abilities, dtype=np.float64)
    if theta.ndim != 2 or theta.shape[1] < 2:
        raise ValueError(f"abilities has shape {theta.shape}; expected (n_items, n_models >= 2).")
    n = theta.shape[1]
    reverses = np.zeros((n, n), dtype=bool)  # (n_models, n_models)
    for k in range(n):  # one model against all others: (n_items, n_models) in memory at a time
        gap = theta - theta[:, [k]]
        reverses[k] = (gap.max(axis=0) > 0) & (gap.min(axis=0) < 0)
    m1, m2 = np.triu_indices(n, k=1)
    return int(reverses[m1, m2].sum()), len(m1)


def within_between_cosine(
    x: np.ndarray, groups: Sequence[str] | np.ndarray, leave_out: str | None = OTHER_FAMILY
) -> tuple[float, float]:
    """Mean cosine between two rows of `x` in the same group and in different groups, over distinct
    pairs of rows; rows of the group `leave_out` (e.g. "other") take no part."""
    groups = np.asarray(groups, dtype=object)
    if len(groups) != len(x):
        raise ValueError(f"groups has {len(groups)} entries; x has {len(x)} rows.")
    u = unit_rows(np.asarray(x, dtype=np.float64))
    cos = u @ u.T  # (n, n)
    same = groups[:, None] == groups[None, :]
    known = groups != leave_out
    pair = np.triu(np.ones_like(same), k=1) & known[:, None] & known[None, :]
    if not (pair & same).any() or not (pair & ~same).any():
        raise ValueError("need at least one pair within a group and one across groups.")
    return float(cos[pair & same].mean()), float(cos[pair & ~same].mean())


# What the data can resolve about the claims above: bootstrap spreads and untrained floors (issue 38)
def peak_counts(
    values: np.ndarray, n_boot: int = 200, seed: int = 0, prominence: float = 0.05, bandwidth: float = 1.0
) -> np.ndarray:
    """How many peaks `density_peaks` finds in `values` (first entry) and in each of `n_boot` seeded
    bootstrap resamples of them (n_boot + 1,), at `bandwidth` times Scott's: a peak count that a
    resample of the questions, or a narrower kernel, changes is not something the data shows."""
    values = np.asarray(values, dtype=np.float64)
    if n_boot < 1:
        raise ValueError(f"n_boot={n_boot}; expected at least one bootstrap resample.")
    rng = np.random.default_rng(seed)
    draws = [values] + [values[rng.integers(0, len(values), len(values))] for _ in range(n_boot)]
    return np.array([len(density_peaks(v, prominence, bandwidth=bandwidth)) for v in draws])


def own_minus_global(x: np.ndarray, groups: Sequence[str] | np.ndarray) -> float:
    """Table 6's gap: the mean over groups of their questions' mean cosine to the group's mean direction,
    minus the mean cosine of all questions to the global mean direction (`cosine_to_means`)."""
    cos = cosine_to_means(x, groups)
    return float(cos.groupby("benchmark")["own benchmark"].mean().mean() - cos["global"].mean())


def random_partition_gaps(
    x: np.ndarray, groups: Sequence[str] | np.ndarray, n_perm: int = 100, seed: int = 0
) -> np.ndarray:
    """`own_minus_global` for `n_perm` seeded random partitions of the rows into groups of the same
    sizes: the gap a partition that means nothing makes. A group's mean direction is closer to its own
    members than the global mean is, whatever the groups (each member pulls the mean its way), so the
    gap is positive by construction; only its excess over these says the groups are real."""
    groups = np.asarray(groups)
    rng = np.random.default_rng(seed)
    return np.array([own_minus_global(x, rng.permutation(groups)) for _ in range(n_perm)])


def benchmark_directions(x: np.ndarray, groups: Sequence[str] | np.ndarray) -> pd.DataFrame:
    """One row per benchmark of question rows `x` (n, d): questions; own cosine (mean and sd of each
    question's cosine to its benchmark's mean direction, Table 6); negative share (questions pointing
    away from their benchmark's mean, App. E.2's PIQA); alignment (cosine of its mean direction with
    that of all other questions, Table 4: low = isolated, Fig. 7)."""
    from jeirt.analysis.alignment import directional_alignment

    cosines = cosine_to_means(x, groups)
    own = cosines.groupby("benchmark")["own benchmark"]
    table = pd.DataFrame(
        {
            "questions": own.size(),
            "own cosine": own.mean(),
            "own sd": own.std(ddof=1),
            "negative share": own.apply(lambda c: float((c < 0).mean())),
        }
    )
    table["alignment"] = directional_alignment(x, groups)
    return table.rename_axis("benchmark")


def extreme_gap(
    x: np.ndarray,
    groups: Sequence[str] | np.ndarray,
    target: str,
    column: str = "own cosine",
    n_boot: int = 200,
    seed: int = 0,
    versus: str = "lowest",
) -> dict[str, float]:
    """Is benchmark `target` the lowest of all on `column` of `benchmark_directions` (own cosine: the
    most dispersed; alignment: the most isolated)? The gap is the lowest of the other benchmarks
    (`versus="median"`: their median, for "below the others" rather than "the lowest") minus
    `target`'s value (positive: `target` is lower), with its bootstrap standard error over questions
    resampled within each benchmark (`n_boot` seeded resamples); also `target`'s rank (1 = lowest) and
    how many benchmarks there are."""
    if versus not in ("lowest", "median"):
        raise ValueError(f"versus={versus!r}; expected 'lowest' or 'median'.")
    if column not in ("own cosine", "alignment"):
        raise ValueError(f"column={column!r}; expected 'own cosine' or 'alignment'.")
    groups = np.asarray(groups)
    names = list(np.unique(groups))
    if target not in names or len(names) < 2:
        raise ValueError(f"target={target!r}; expected one of at least two benchmarks {names}.")
    if n_boot < 2:
        raise ValueError(f"n_boot={n_boot}; a standard error needs at least 2 resamples.")
    u, at = unit_rows(x), names.index(target)

    def gap(members: list[np.ndarray]) -> tuple[float, int]:
        values = _benchmark_column(u, members, column)  # one per name
        others = np.delete(values, at)
        reference = others.min() if versus == "lowest" else np.median(others)
        return float(reference - values[at]), int((values < values[at]).sum()) + 1

    members = [np.flatnonzero(groups == g) for g in names]
    estimate, rank = gap(members)
    rng = np.random.default_rng(seed)
    draws = [gap([rng.choice(m, len(m)) for m in members])[0] for _ in range(n_boot)]
    return {"gap": estimate, "se": float(np.std(draws, ddof=1)), "rank": rank, "benchmarks": len(names)}


def _benchmark_column(u: np.ndarray, members: list[np.ndarray], column: str) -> np.ndarray:
    """`benchmark_directions(x, groups)[column]` ("own cosine" or "alignment") from the unit rows `u` of
    x, one benchmark per array of its rows in `members`: a bootstrap's inner loop, without pandas."""
    sums = np.array([u[rows].sum(axis=0) for rows in members])  # (benchmarks, d)
    counts = np.array([len(rows) for rows in members])[:, None]
    directions = unit_rows(sums / counts)
    if column == "own cosine":  # the mean over a benchmark's questions of their cosine to its mean direction
        return np.array([(u[rows] @ m).mean() for rows, m in zip(members, directions)])
    others = unit_rows((sums.sum(axis=0) - sums) / (counts.sum() - counts))  # every other question's
    return (directions * others).sum(axis=1)


def untrained_floor(n_models: int, d: int, draws: int = 20, seed: int = 0) -> dict[str, float]:
    """The spread of model vectors that were never trained: Eq. 7's covariance effective rank and the
    first principal component's share of variance of `draws` seeded N(0, 1) matrices (n_models, d),
    mean and sd of each. The paper's recipe starts E_M there, so a trained spread near it says
    nothing about training."""
    if n_models < 2 or d < 1 or draws < 2:
        raise ValueError(f"n_models={n_models}, d={d}, draws={draws}; expected n_models >= 2, d >= 1, draws >= 2.")
    rng = np.random.default_rng(seed)
    ranks, pc1 = [], []
    for _ in range(draws):
        m = rng.standard_normal((n_models, d))
        ranks.append(covariance_effective_rank(m))
        pc1.append(float(cumulative_variance(m, 1)[0]))
    return {
        "erank": float(np.mean(ranks)),
        "erank sd": float(np.std(ranks, ddof=1)),
        "pc1": float(np.mean(pc1)),
        "pc1 sd": float(np.std(pc1, ddof=1)),
    }


def rank_se(x: np.ndarray, n_boot: int = 200, seed: int = 0) -> float:
    """Bootstrap standard error of Eq. 7's rank (`covariance_effective_rank`) of rows `x` over the
    rows (models) resampled: how much the rank of a few dozen models moves with which models are in."""
    x = np.asarray(x, dtype=np.float64)
    if n_boot < 2:
        raise ValueError(f"n_boot={n_boot}; a standard error needs at least 2 resamples.")
    rng = np.random.default_rng(seed)
    draws = [covariance_effective_rank(x[rng.integers(0, len(x), len(x))]) for _ in range(n_boot)]
    return float(np.std(draws, ddof=1))


def _cosine_distances(x: np.ndarray) -> np.ndarray:
    u = unit_rows(np.asarray(x, dtype=np.float64))
    i, j = np.triu_indices(len(u), k=1)
    return 1.0 - np.einsum("nd,nd->n", u[i], u[j])


def map_agreement(a: np.ndarray, b: np.ndarray, n_perm: int = 200, seed: int = 0) -> dict[str, float]:
    """Do two fits place the same models alike (Fig. 5 across encoders or dimensions)? `a` (n, d_a) and
    `b` (n, d_b) are the same models' vectors, rows in one order. The agreement is the Spearman
    correlation of their pairwise cosine distances (a Mantel statistic; no 2-D map's distortions), with
    its null: the same after shuffling `b`'s models (`n_perm` seeded permutations), mean and sd."""
    from scipy.stats import spearmanr

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(a) != len(b) or len(a) < 4:
        raise ValueError(f"a has {len(a)} rows and b {len(b)}; expected the same models, at least 4.")
    if n_perm < 2:
        raise ValueError(f"n_perm={n_perm}; the null's spread needs at least 2 permutations.")
    da = _cosine_distances(a)
    rng = np.random.default_rng(seed)
    null = [spearmanr(da, _cosine_distances(b[rng.permutation(len(b))]))[0] for _ in range(n_perm)]
    return {
        "agreement": float(spearmanr(da, _cosine_distances(b))[0]),
        "null mean": float(np.mean(null)),
        "null sd": float(np.std(null, ddof=1)),
        "models": len(a),
    }


def rank_alignment(runs: pd.DataFrame, value: str = "rank") -> pd.DataFrame:
    """App. E.1's "effective ranks with different base encoders align": `runs` has one row per fit,
    with columns encoder (two of them), d, `value` (e.g. Eq. 7's rank of that fit's model vectors) and
    either se (its standard error, e.g. `rank_se`) or seed (several per encoder and d: the spread over
    seeds). One row per d: each encoder's mean, the relative gap (first encoder minus the second, over
    their average) and its standard error."""
    missing = {"encoder", "d", value} - set(runs.columns)
    if missing or not {"se", "seed"} & set(runs.columns):
        raise ValueError(f"runs has columns {list(runs.columns)}; expected encoder, d, {value!r} and se or seed.")
    encoders = list(dict.fromkeys(runs["encoder"]))
    if len(encoders) != 2:
        raise ValueError(f"runs holds encoders {encoders}; expected exactly two to compare.")
    grouped = runs.groupby(["d", "encoder"])
    if "se" in runs.columns:  # a standard error per fit: that of the mean of the fits
        stats = pd.DataFrame({"mean": grouped[value].mean(), "var": grouped["se"].apply(lambda s: (s**2).mean())})
        stats["count"] = grouped[value].size()
    else:
        stats = grouped[value].agg(["mean", "var", "count"])
    stats = stats.unstack("encoder")
    first, second = encoders
    average = (stats[("mean", first)] + stats[("mean", second)]) / 2
    out = pd.DataFrame({first: stats[("mean", first)], second: stats[("mean", second)]})
    out["relative gap"] = (out[first] - out[second]) / average
    var = stats[("var", first)] / stats[("count", first)] + stats[("var", second)] / stats[("count", second)]
    out["se"] = np.sqrt(var) / average
    return out
