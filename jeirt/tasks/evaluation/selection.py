"""Which questions to ask a new LLM: the selection rules (`select_questions`: random, stratified by
benchmark, k-means over question directions, or adaptive, whose batches open with `RANDOM_SHARE` drawn
at random: `random_positions`), the adaptive loop (`adaptive_selection`, `next_questions`) and
`suggest_questions`, the rule of `jeirt suggest`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from tqdm import (
    tqdm,  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets
)

from jeirt.model import sigmoid
from jeirt.params import SUGGEST_PARAMS, check_params
from jeirt.splits import sample_items
from jeirt.tasks import SELECTION_RULES  # the names, where the command line reads them without this module
from jeirt.tasks.evaluation.bank import Posterior, QuestionBank, check_labels
from jeirt.tasks.evaluation.design_based import inclusion_probabilities

RANDOM_SHARE = 0.5  # share of an adaptive rule's questions drawn at random: the sample its estimate checks itself on


def _candidates(
    bank: QuestionBank, candidates: np.ndarray | None, labels: np.ndarray | None, n_new: int, k: int
) -> np.ndarray:
    """(n_new, n_items) bool: the questions each new model may be asked, at least k of them."""
    if candidates is None:
        candidates = ~np.isnan(labels) if labels is not None else np.ones((n_new, bank.n_items), dtype=bool)
    candidates = np.asarray(candidates, dtype=bool)
    if candidates.ndim == 1:
        candidates = np.broadcast_to(candidates, (n_new, len(candidates)))
    if candidates.shape[1] != bank.n_items:
        raise ValueError(f"candidates has {candidates.shape[1]} columns; the bank has {bank.n_items} questions.")
    fewest = int(candidates.sum(axis=1).min())
    if not 1 <= k <= fewest:
        raise ValueError(f"k={k}; expected 1 <= k <= {fewest}, the fewest candidate questions of a model.")
    return candidates


def select_questions(
    bank: QuestionBank,
    k: int,
    rule: str = "adaptive",
    *,
    candidates: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    n_new: int = 1,
    seed: int = 0,
    step: int = 5,
    growth: float = 0.25,
    random_share: float = RANDOM_SHARE,
    progress: bool = False,
) -> np.ndarray:
    """Which k questions to ask each new model, in asking order: (n_new, k) question positions.

    Rules: "random"; "stratified" (each benchmark's share of the candidates); "kmeans" (k-means with
    k centres on the question directions, the candidate nearest each centre); "adaptive" (greedy in
    the current posterior, most expected information about the vector, `next_questions`); and
    "adaptive-accuracy" (greedy, largest expected drop in the variance of the estimated overall
    accuracy). The adaptive rules need the answers they reveal as they go: `labels` (n_new,
    n_items); they refit the posterior after batches of max(step, growth x asked) questions, and
    `random_share` of every prefix of their order is drawn at random (`random_positions` says where),
    which keeps their estimate honest (`estimate_scores`).
    `candidates` (n_new, n_items) or (n_items,) bool restricts the choice (default: the answered
    questions when labels are given, else all).
    """
    if rule not in SELECTION_RULES:
        raise ValueError(f"rule={rule!r}; expected one of {SELECTION_RULES}.")
    if labels is not None:
        labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
        n_new = len(labels)
    cand = _candidates(bank, candidates, labels, n_new, k)
    rng = np.random.default_rng(seed)
    if rule == "random":
        return np.stack([rng.choice(np.flatnonzero(row), size=k, replace=False) for row in cand])
    if rule == "stratified":
        return np.stack([rng.permutation(np.flatnonzero(row)[sample_items(bank.groups[row], k, rng)]) for row in cand])
    if rule == "kmeans":
        return _kmeans_questions(bank, k, cand, seed)
    if labels is None:
        raise ValueError(
            f"rule={rule!r} chooses each question from the answers so far: pass labels, the "
            "answers it may reveal (or call next_questions for one batch from a posterior)."
        )
    return adaptive_selection(
        bank,
        k,
        labels,
        rule,
        candidates=cand,
        step=step,
        growth=growth,
        random_share=random_share,
        seed=seed,
        progress=progress,
    )[0]


def adaptive_selection(
    bank: QuestionBank,
    k: int,
    labels: np.ndarray,
    rule: str = "adaptive",
    *,
    candidates: np.ndarray | None = None,
    step: int = 5,
    growth: float = 0.25,
    random_share: float = RANDOM_SHARE,
    seed: int = 0,
    keep: Sequence[int] = (),
    progress: bool = False,
) -> tuple[np.ndarray, dict[int, Posterior]]:
    """`select_questions` for the adaptive rules, with the posteriors the selection fits on its way.

    Each batch starts with its random picks (`random_positions`): for each model the next questions of
    a seeded random order of its candidates that are not yet asked, so that they are a random sample of
    the questions the adaptive picks left; the rest of the batch is `next_questions`'s.

    Returns the (n_new, k) asking order and, for each j of `keep` at which a batch ends, the posterior
    after the first j questions: the refit the selection makes there anyway, equal to `bank.posterior`
    of those answers, so that an estimate at j needs none of its own. The posterior after the last
    batch is fitted only when k is in `keep` (the selection itself no longer needs it).
    """
    if rule not in ("adaptive", "adaptive-accuracy"):
        raise ValueError(f"rule={rule!r}; expected 'adaptive' or 'adaptive-accuracy'.")
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    n_new = len(labels)
    cand = _candidates(bank, candidates, labels, n_new, k)
    target = "vector" if rule == "adaptive" else "accuracy"
    drawn = random_positions(k, random_share, step, growth)  # (k,) which picks are random
    rng = np.random.default_rng(seed)
    shuffled = [rng.permutation(np.flatnonzero(row)) for row in cand]  # each model's random order
    order = np.zeros((n_new, 0), dtype=np.int64)
    asked = np.zeros_like(cand)
    posterior, kept = bank.unanswered(n_new), {}
    bar = tqdm(total=k, desc=f"{rule} selection", disable=not progress)
    while order.shape[1] < k:
        batch = _batch(order.shape[1], k, step, growth)
        n_random = int(drawn[order.shape[1] : order.shape[1] + batch].sum())  # the batch's first n_random picks
        picked = np.zeros((n_new, batch), dtype=np.int64)  # (n_new, batch)
        for i, perm in enumerate(shuffled):
            picked[i, :n_random] = perm[~asked[i, perm]][:n_random]
            asked[i, picked[i, :n_random]] = True
        if batch > n_random:
            picked[:, n_random:] = next_questions(bank, posterior, batch - n_random, cand & ~asked, target=target)
        order = np.concatenate([order, picked], axis=1)
        np.put_along_axis(asked, picked, True, axis=1)
        bar.update(batch)
        if order.shape[1] < k or k in keep:
            posterior = bank.posterior(np.where(asked, labels, 0.0), asked)
            if order.shape[1] in keep:
                kept[order.shape[1]] = posterior
    bar.close()
    return order, kept


def suggest_questions(
    bank: QuestionBank,
    labels: np.ndarray,
    k: int,
    rule: str = "stratified",
    *,
    drawn: np.ndarray | None = None,
    seed: int = 0,
    random_share: float = RANDOM_SHARE,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The next k questions for each new model (rows of `labels`, NaN = not answered yet), none it has
    answered: (n_new, k) positions, whether each was a random draw, and its inclusion probability
    (`inclusion_probabilities` of this round: the draw's share of the questions it was drawn from, 1
    for a pick by choice), which `design_estimates` needs.

    random and stratified draw each model's k (one generator, `seed`); kmeans clusters once per model
    (seed + its position), all picks by choice; the adaptive rules first draw at random what brings the
    model's random draws to `random_share` of all its questions, then pick the rest from the posterior
    of its answers (`next_questions`). `drawn` (n_new, n_items) marks the earlier random draws among the
    answered questions (default: every answer); called round after round with the answers so far, each
    round keeps the share.
    """
    if rule not in SELECTION_RULES:
        raise ValueError(f"rule={rule!r}; expected one of {SELECTION_RULES}.")
    check_params("suggest_questions", SUGGEST_PARAMS, {"k": k, "seed": seed, "random_share": random_share})
    labels = check_labels(labels)
    n_new, asked = len(labels), ~np.isnan(labels)
    candidates = ~asked
    drawn = asked if drawn is None else np.atleast_2d(np.asarray(drawn, dtype=bool))
    if drawn.shape != asked.shape:
        raise ValueError(f"drawn has shape {drawn.shape}; expected {asked.shape} like labels.")
    if (drawn & ~asked).any():
        raise ValueError(
            "drawn marks questions without an answer (NaN label); it marks the earlier random draws among the "
            "answered questions only (a question never asked was not drawn)."
        )
    random = np.zeros((n_new, k), dtype=bool)
    if rule in ("adaptive", "adaptive-accuracy"):
        _candidates(bank, candidates, None, n_new, k)  # checks k against what is left
        share = np.round(random_share * (asked.sum(axis=1) + k)).astype(int) - drawn.sum(axis=1)
        share = np.clip(share, 0, k)
        picks = _adaptive_round(bank, labels, k, share, "vector" if rule == "adaptive" else "accuracy", seed, progress)
        random[:] = np.arange(k)[None, :] < share[:, None]
    elif rule == "kmeans":
        picks = np.concatenate(
            [
                select_questions(bank, k, "kmeans", candidates=candidates[i : i + 1], seed=(seed + i) % 2**32)
                for i in range(n_new)
            ]
        )
    else:
        picks = select_questions(bank, k, rule, candidates=candidates, n_new=n_new, seed=seed, progress=progress)
        random[:] = True
    mask = np.zeros_like(asked)
    np.put_along_axis(mask, picks, True, axis=1)
    sampled = np.zeros_like(asked)
    np.put_along_axis(sampled, picks, random, axis=1)
    inclusion = inclusion_probabilities(mask, sampled, candidates, bank.groups if rule == "stratified" else None)
    return picks, random, np.take_along_axis(inclusion, picks, axis=1)


def _adaptive_round(
    bank: QuestionBank, labels: np.ndarray, k: int, share: np.ndarray, target: str, seed: int, progress: bool
) -> np.ndarray:
    """One round of an adaptive rule: for model i, `share[i]` questions drawn at random from those it has
    not answered (a simple random sample of them), then k - share[i] picked by choice from the rest, from
    the posterior of its answers so far; (n_new, k) positions, the random draws first."""
    asked = ~np.isnan(labels)
    n_new = len(labels)
    picks = np.zeros((n_new, k), dtype=np.int64)
    rng = np.random.default_rng(seed)
    left = ~asked
    for i, n in enumerate(share):
        picks[i, :n] = rng.permutation(np.flatnonzero(left[i]))[:n]
        left[i, picks[i, :n]] = False
    posterior = bank.posterior(np.nan_to_num(labels), asked, progress=progress)
    rest = k - share  # the picks by choice, from the questions neither asked nor drawn
    for n in np.unique(rest[rest > 0]):
        rows = np.flatnonzero(rest == n)
        part = posterior if len(rows) == n_new else posterior.take(rows)
        picks[rows, k - n :] = next_questions(bank, part, int(n), left[rows], target=target, progress=progress)
    return picks


def _batch(done: int, k: int, step: int, growth: float) -> int:
    """The size of the adaptive rules' next batch after `done` of k questions."""
    return min(k - done, max(step, int(growth * done)))


def random_positions(k: int, random_share: float = RANDOM_SHARE, step: int = 5, growth: float = 0.25) -> np.ndarray:
    """(k,) bool: which positions of an adaptive rule's asking order are random draws, the same for
    every model: at each batch end j, round(random_share x j) of the first j, first in each batch."""
    if not 0 <= random_share <= 1:
        raise ValueError(f"random_share={random_share}; expected a share between 0 and 1.")
    drawn, done = np.zeros(k, dtype=bool), 0
    while done < k:
        batch = _batch(done, k, step, growth)
        n_random = int(round(random_share * (done + batch))) - int(drawn[:done].sum())
        drawn[done : done + max(0, min(batch, n_random))] = True
        done += batch
    return drawn


def next_questions(
    bank: QuestionBank,
    posterior: Posterior,
    k: int,
    candidates: np.ndarray,
    target: str = "vector",
    progress: bool = False,
) -> np.ndarray:
    """The next k questions for each model (n_new, k), chosen greedily from its current posterior.

    Asking q adds Fisher information w_q f_q f_q^T, w_q = p_q (1 - p_q), to the posterior precision.
    target="vector" picks the largest w_q f_q^T Sigma f_q (the largest gain in log det of the
    precision, D-optimal); target="accuracy" the largest drop w_q (f_q^T Sigma g)^2 / (1 + w_q
    f_q^T Sigma f_q) in the variance g^T Sigma g of the estimated overall accuracy, g its gradient.
    After each pick Sigma is updated by the rank-one formula, so a batch does not repeat itself: the
    updates are kept as their vectors Sigma_i f_{q_i} and weights, never written into a dense Sigma, so
    the j-th pick costs O(d^2 + j d) per model rather than a pass over every (d, d) covariance.
    """
    if target not in ("vector", "accuracy"):
        raise ValueError(f"target={target!r}; expected 'vector' or 'accuracy'.")
    candidates = np.atleast_2d(np.asarray(candidates, dtype=bool))
    if candidates.shape != (len(posterior), bank.n_items):
        raise ValueError(f"candidates has shape {candidates.shape}; expected ({len(posterior)}, {bank.n_items}).")
    if (candidates.sum(axis=1) < k).any():
        raise ValueError(f"k={k}, but a model has only {candidates.sum(axis=1).min()} candidate questions left.")
    picks = np.zeros((len(posterior), k), dtype=np.int64)
    block = 32  # models picked for together: each pick is one (models, d) x (d, n_items) product
    starts = range(0, len(posterior), block)
    for start in tqdm(starts, desc="next questions", unit="block", disable=not progress or len(starts) == 1):
        at = slice(start, min(start + block, len(posterior)))  # a slice: every pick reads these covariances
        picks[at] = _greedy_block(bank, posterior, at, k, ~candidates[at], target)
    return picks


def _greedy_block(
    bank: QuestionBank, posterior: Posterior, at: slice, k: int, taken: np.ndarray, target: str
) -> np.ndarray:
    """`next_questions` for the models `at` (a block of them), none of the questions `taken`: (m, k)."""
    F = bank.features32  # (n_items, d)
    rows = np.arange(at.stop - at.start)
    picks = np.zeros((len(rows), k), dtype=np.int64)
    p = sigmoid(posterior.mean[at].astype(np.float32) @ F.T - bank.offsets)
    w = p * (1 - p)  # (m, n_items) Fisher weight of each question
    s = posterior.variances(at, F)  # f_q^T Sigma f_q
    hf = None  # "accuracy": (m, n_items) f_r^T Sigma g, g the accuracy's gradient, updated with Sigma below
    if target == "accuracy":
        hf = posterior.apply(at, (w @ F).astype(np.float64)) @ F.T.astype(np.float64) / bank.n_items
    gain = np.empty(w.shape, dtype=np.result_type(w, s))  # work space of every pick
    # Sigma after j picks = cov - sum_{i < j} scales_i vecs_i vecs_i^T (the rank-one updates so far)
    vecs = np.zeros((len(rows), k, F.shape[1]), dtype=np.float32)
    scales = np.zeros((len(rows), k))
    for j in range(k):
        np.multiply(w, s, out=gain)  # "vector": w f^T Sigma f
        if hf is not None:  # "accuracy": w (f^T Sigma g)^2 / (1 + w f^T Sigma f)
            gain += 1.0
            np.divide(w * hf**2, gain, out=gain)
        np.copyto(gain, -np.inf, where=taken)
        q = np.argmax(gain, axis=1)  # (m,)
        picks[:, j], taken[rows, q] = q, True
        fq = F[q]  # (m, d)
        sq = posterior.apply(at, fq).astype(np.float32)  # (m, d) Sigma f_q
        if j:
            along = np.matmul(vecs[:, :j], fq[:, :, None])[:, :, 0]  # (m, j)
            sq -= np.matmul((scales[:, :j] * along)[:, None, :], vecs[:, :j])[:, 0]
        scale = w[rows, q] / (1 + w[rows, q] * s[rows, q])
        vecs[:, j], scales[:, j] = sq, scale
        proj = sq @ F.T  # f_r^T Sigma f_q for every r
        if hf is not None:  # every f_r^T Sigma g after the rank-one update, from proj
            hf -= (scale * hf[rows, q])[:, None] * proj
        np.square(proj, out=proj)
        proj *= scale[:, None]
        s -= proj
        np.maximum(s, 0.0, out=s)  # a variance; the clip absorbs float32 drift
    return picks


def _kmeans_questions(bank: QuestionBank, k: int, candidates: np.ndarray, seed: int) -> np.ndarray:
    """k-means with k centres on the candidates' directions (first 32 principal components, for
    speed); for each model, the candidate question nearest each centre, no question twice."""
    pool = np.flatnonzero(candidates.any(axis=0))
    x = bank.directions[pool]
    if x.shape[1] > 32:
        x = PCA(32, random_state=seed).fit_transform(x)
    centres = KMeans(n_clusters=k, n_init=1, random_state=seed).fit(x).cluster_centers_  # (k, p)
    dist = (x**2).sum(1)[:, None] - 2 * x @ centres.T + (centres**2).sum(1)[None]  # (n_pool, k)
    dist = np.ascontiguousarray(dist.T)  # (k, n_pool): a centre's distances lie together
    picks = np.zeros((len(candidates), k), dtype=np.int64)
    done: dict[bytes, int] = {}  # models with the same candidates get the same questions
    for i, row in enumerate(candidates):
        key = np.packbits(row).tobytes()
        if key in done:
            picks[i] = picks[done[key]]
            continue
        done[key] = i
        d = np.where(row[pool][None, :], dist, np.inf)
        for c in np.argsort(d.min(axis=1)):  # best-served centres choose first
            j = int(np.argmin(d[c]))
            picks[i, c] = pool[j]
            d[:, j] = np.inf
    return picks
