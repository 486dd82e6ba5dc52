"""Question corrections: what the known models' answers say about a question beyond its text.

JE-IRT places a question from its text alone (Eq. 2): each question is a unit direction u_q and a
norm r_q, and P(m answers q) = sigmoid(u_q . v_m - r_q) (Eq. 3). When models the estimator knows
have answered q, their answers say more about q than its text does. This module is the mirror image
of onboarding (`jeirt.onboard`): with every model vector v_m frozen, it fits for each answered
question a correction (w_q, delta_q) of its side of Eq. (3),

    P(m answers q) = sigmoid((u_q + w_q) . v_m - (r_q + delta_q)),

by maximum a posteriori under the prior w_q ~ N(0, t_w^2 I), delta_q ~ N(0, t_delta^2): a shift of
the question's direction and an offset of its difficulty, both zero for a question no known model
answered (so a new question still goes through its text alone). Only the part of w_q in the span of
the known vectors changes a known model's probability, and under an isotropic prior the MAP w_q lies
in that span exactly. w_q is kept to the `rank` leading directions of the known vectors (all of them
for a few dozen models; with thousands of models the cost is then independent of their number), so
each question is a logistic regression with rank + 1 parameters, solved by batched Newton steps over
all questions at once. The widths are picked by the Laplace evidence of the known answers (empirical
Bayes, as `JEIRT.onboard` picks its prior): t_delta from `OFFSET_SCALES` with no shift, then t_w
from `SHIFT_SCALES` at that t_delta.

The corrected terms are passed to `jeirt.onboard.fit_model_vectors` unchanged (directions u_q + w_q,
norms r_q + delta_q): onboarding a new model against corrected questions is the same solve.

A new question no model was trained on has only its text embedding E_Q; when a few models' answers
to it are known, `refine_questions` moves E_Q to the maximum a posteriori under N(text embedding,
tau^2 I) with every model vector frozen (Eq. 3 through `jeirt.model`), or only its norm |E_Q|.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from jeirt.model import jeirt_logits, probability, unit_rows
from jeirt.splits import Split


def known_question_split(split: Split) -> Split:
    """New models on known questions: from a split with held-out models (`hold_out_models`), one in
    which the trained models answer every question outside the validation part (their test answers
    move to train) and the test part is the held-out models' test answers alone.

    The setting of a new LLM evaluated on an existing benchmark: the other models' answers to every
    question are known; the new model's answers to the test questions are what is predicted.
    """
    if not split.held_out or split.onboard is None:
        raise ValueError(f"split {split.name!r} holds out no model; make it with jeirt.splits.hold_out_models.")
    new = split.onboard.any(axis=1) | ~(split.train | split.val).any(axis=1)  # held-out rows
    train = split.train | (split.test & ~new[:, None])
    return Split(train, split.val, split.test & new[:, None], f"{split.name}-known", split.held_out, split.onboard)


OFFSET_SCALES = (0.25, 0.5, 1.0, 2.0, 4.0)  # prior sd t_delta of the difficulty offset (logits) "auto" tries
SHIFT_SCALES = (0.0, 0.1, 0.3, 1.0)  # prior sd t_w of the direction shift, x 1 / rms |v_m|, "auto" tries


@dataclass
class QuestionCorrections:
    """Per-question corrections fitted from known models' answers, keyed by item id."""

    item_ids: np.ndarray  # (n_items,) str, the questions that have a correction
    shifts: np.ndarray  # (n_items, d) w_q, added to the unit direction u_q
    offsets: np.ndarray  # (n_items,) delta_q, added to the norm r_q
    offset_scale: float  # t_delta chosen
    shift_scale: float  # t_w chosen (absolute, in the units of 1 / |v|)
    log_evidence: dict = field(default_factory=dict)  # "t_delta,t_w" -> summed Laplace log evidence

    def __post_init__(self) -> None:
        n = len(self.item_ids)
        if self.shifts.ndim != 2 or len(self.shifts) != n or self.offsets.shape != (n,):
            raise ValueError(
                f"{n} item ids, shifts {self.shifts.shape} and offsets {self.offsets.shape} "
                "must describe the same questions."
            )
        if len(set(self.item_ids.tolist())) != n:
            raise ValueError("item_ids repeat a question; each question may have one correction.")

    def __len__(self) -> int:
        return len(self.item_ids)

    def apply(
        self, item_ids: Sequence[str], directions: np.ndarray, norms: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Corrected (directions (n, d), norms (n,)) of the questions `item_ids`; a question without a
        correction keeps its text-based terms."""
        directions = np.array(directions, dtype=np.float64)
        norms = np.array(norms, dtype=np.float64)
        if directions.shape[1] != self.shifts.shape[1]:
            raise ValueError(f"directions are {directions.shape[1]}-d; the corrections are {self.shifts.shape[1]}-d.")
        lookup = {q: i for i, q in enumerate(self.item_ids.tolist())}
        pos = np.array([lookup.get(str(q), -1) for q in item_ids], dtype=np.int64)
        hit = pos >= 0
        directions[hit] += self.shifts[pos[hit]]
        norms[hit] += self.offsets[pos[hit]]
        return directions, norms

    def to_dict(self) -> dict:
        """Plain containers, for `torch.save(weights_only=True)` and JSON."""
        return {
            "item_ids": self.item_ids.tolist(),
            "shifts": torch.from_numpy(self.shifts.astype(np.float32)),
            "offsets": torch.from_numpy(self.offsets.astype(np.float32)),
            "offset_scale": self.offset_scale,
            "shift_scale": self.shift_scale,
            "log_evidence": dict(self.log_evidence),
        }

    @classmethod
    def from_dict(cls, blob: dict) -> QuestionCorrections:
        return cls(
            np.asarray(blob["item_ids"], dtype=str),
            np.asarray(blob["shifts"], dtype=np.float64),
            np.asarray(blob["offsets"], dtype=np.float64),
            float(blob["offset_scale"]),
            float(blob["shift_scale"]),
            dict(blob.get("log_evidence", {})),
        )


def _solve(
    base: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    w: torch.Tensor,
    max_iter: int,
    tol: float,
    chunk: int,
    init: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """MAP theta (n_items, k) of logit = base + X theta_q under theta_q ~ N(0, I), one logistic
    regression per question (row of base, answers y and 0/1 weights w (n_items, n_models), y = 0 where
    w = 0; question-major so that a chunk of questions is contiguous), and the Laplace log evidence.
    Newton starts from `init` (n_items, k), default 0; the problem is convex, so only the steps change.

    The (c, m) work runs in place on two buffers per chunk: with thousands of models a fresh array per
    operation costs about as much as the operation itself."""
    n_items = base.shape[0]
    k = X.shape[1]
    one = torch.ones((), dtype=base.dtype)
    hessian = _hessians(X)
    thetas, evidence = [], []
    for start in range(0, n_items, chunk):
        b, yy, ww = base[start : start + chunk], y[start : start + chunk], w[start : start + chunk]  # (c, m)
        z, p = torch.empty_like(b), torch.empty_like(b)  # the logits at the last objective; scratch
        theta = torch.zeros(len(b), k, dtype=base.dtype) if init is None else init[start : start + chunk].clone()

        def objective(t: torch.Tensor, b=b, yy=yy, ww=ww, z=z, p=p) -> torch.Tensor:
            """Negative log posterior (c,) at t, sum_m w (softplus(z) - y z) + |t|^2 / 2; leaves the
            logits z = b + t X^T in `z` (the terms are each >= 0: the line search compares the sums)."""
            torch.matmul(t, X.T, out=z).add_(b)
            # F.softplus (beta 1, threshold 20) into the scratch buffer: the functional form has no out=.
            nll = torch.ops.aten.softplus.out(z, 1, 20, out=p).addcmul_(yy, z, value=-1).mul_(ww).sum(dim=1)
            return nll + 0.5 * (t**2).sum(dim=1)

        def curvature(z=z, p=p, ww=ww) -> torch.Tensor:
            """w p (1 - p) (c, m) at the logits in `z`, written over them; leaves w p, p = sigmoid(z), in `p`."""
            torch.sigmoid(z, out=p).mul_(ww)
            return torch.sub(one, p, out=z).mul_(p)  # (1 - w p) w p, the same for w in {0, 1}

        # Each accepted step's objective and logits are the next step's `before` and Newton input: one
        # evaluation of the (c, m) logits per step, not three.
        before = objective(theta)
        for _ in range(max_iter):
            hess = hessian(curvature())  # (c, k, k)
            grad = p.sub_(yy) @ X + theta  # (c, k): w (p - y) X + theta, as y = 0 where w = 0
            step = torch.linalg.solve(hess, grad.unsqueeze(-1)).squeeze(-1)
            scale, after = _halvings(objective, theta, step, before, base.dtype)
            theta, before = theta - scale * step, after
            if float((scale * step).abs().max()) < tol:
                break
        thetas.append(theta)
        evidence.append(-before - 0.5 * torch.linalg.slogdet(hessian(curvature())).logabsdet)
    return torch.cat(thetas), torch.cat(evidence)


def _halvings(objective, theta: torch.Tensor, step: torch.Tensor, before: torch.Tensor, dtype: torch.dtype):
    """The Newton step's scale (c, 1) for each question, halved (at most 20 times) while its posterior
    got worse, and the objective (c,) at theta - scale * step, the last one `objective` was asked for (so
    its logits are where theta moves)."""
    scale = torch.ones(len(theta), 1, dtype=dtype)
    for _ in range(20):  # halve the step of any question whose posterior got worse
        after = objective(theta - scale * step)
        worse = after > before + 1e-12
        if not worse.any():
            break
        scale[worse] *= 0.5
    else:  # the halvings ran out: the objective and logits where theta now is
        after = objective(theta - scale * step)
    return scale, after


def _hessians(X: torch.Tensor):
    """The function that gives sum_m weights[:, m] x_m x_m^T + I for each row of weights (c, m): (c, k, k),
    with X (m, k) the models' vectors. Each Hessian's upper triangle is one matmul with the products of
    X's columns, then spread over the matrix."""
    k = X.shape[1]
    upper = torch.triu_indices(k, k)
    pairs = X[:, upper[0]] * X[:, upper[1]]  # (m, k(k+1)/2): each Hessian's upper triangle is one matmul
    position = torch.empty(k, k, dtype=torch.long)  # entry (i, j) of a Hessian is entry position[i, j] of its triangle
    position[upper[0], upper[1]] = torch.arange(upper.shape[1])
    position[upper[1], upper[0]] = torch.arange(upper.shape[1])

    def hessian(weights: torch.Tensor) -> torch.Tensor:
        """sum_m weights[:, m] x_m x_m^T + I for each row of weights (c, m): (c, k, k)."""
        hess = (weights @ pairs)[:, position.flatten()].view(len(weights), k, k)
        hess.diagonal(dim1=1, dim2=2).add_(1)  # the prior's curvature
        return hess

    return hessian


def _check_correction_inputs(
    item_ids: Sequence[str],
    directions: np.ndarray,
    norms: np.ndarray,
    model_vectors: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray,
    offset_scale: float | str,
    shift_scale: float | str,
    rank: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`fit_corrections`'s inputs checked and as float64 arrays: directions, norms, model vectors,
    labels, mask, and the questions with at least one answer under `mask`."""
    directions = np.asarray(directions, dtype=np.float64)
    norms = np.asarray(norms, dtype=np.float64)
    V = np.asarray(model_vectors, dtype=np.float64)
    labels, mask = np.atleast_2d(labels), np.atleast_2d(np.asarray(mask, dtype=bool))
    n_items, d = directions.shape
    if norms.shape != (n_items,) or len(item_ids) != n_items or V.ndim != 2 or V.shape[1] != d:
        raise ValueError(
            f"{len(item_ids)} item ids, directions {directions.shape}, norms {norms.shape} and model "
            f"vectors {V.shape} must agree: (n_items,), (n_items, d), (n_items,), (n_models, d)."
        )
    if labels.shape != (len(V), n_items) or mask.shape != labels.shape:
        raise ValueError(
            f"labels {labels.shape} and mask {mask.shape} must both be (n_models, n_items) = {(len(V), n_items)}."
        )
    if np.isnan(labels[mask]).any():
        raise ValueError("the mask selects unobserved (NaN) labels; remove them from the mask.")
    if not isinstance(rank, (int, np.integer)) or rank < 1:
        raise ValueError(f"rank={rank!r}; expected a positive integer.")
    if len(V) < 2:
        raise ValueError(f"{len(V)} known model(s); question corrections need the answers of at least two.")
    for name, value in (("offset_scale", offset_scale), ("shift_scale", shift_scale)):
        if isinstance(value, str) and value != "auto":
            raise ValueError(f"{name}={value!r}; expected a non-negative number or 'auto'.")
        if not isinstance(value, str) and not value >= 0:
            raise ValueError(f"{name}={value!r}; expected a non-negative number or 'auto'.")
    seen = np.flatnonzero(mask.any(axis=0))
    if not len(seen):
        raise ValueError("the mask selects no answer; corrections need some known models' answers.")
    return directions, norms, V, labels, mask, seen


def fit_corrections(
    item_ids: Sequence[str],
    directions: np.ndarray,
    norms: np.ndarray,
    model_vectors: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray,
    offset_scale: float | str = "auto",
    shift_scale: float | str = "auto",
    rank: int = 24,
    max_iter: int = 30,
    tol: float = 1e-6,
    chunk: int = 2048,
    progress: bool = False,
) -> QuestionCorrections:
    """Corrections of every question with at least one answer under `mask`, from the known models.

    item_ids (n_items,); directions (n_items, d) unit u_q and norms (n_items,) r_q from the text;
    model_vectors (n_models, d) frozen v_m; labels, mask (n_models, n_items) their answers (soft labels
    in [0, 1] allowed). offset_scale, shift_scale: prior sds t_delta and t_w (t_w in units of
    1 / rms |v_m|), or "auto" for the one with the largest Laplace evidence (t_delta first, with no
    shift). shift_scale=0 fits difficulty offsets only. rank: how many leading directions of the known
    vectors the shift may use.
    """
    directions, norms, V, labels, mask, seen = _check_correction_inputs(
        item_ids, directions, norms, model_vectors, labels, mask, offset_scale, shift_scale, rank
    )
    d = directions.shape[1]
    # The span of the known vectors: w_q = B a_q with B (d, r) orthonormal, so w_q . v_m = a_q . (B^T v_m).
    _, sing, vt = np.linalg.svd(V, full_matrices=False)
    basis = vt[sing > sing[0] * 1e-8][:rank].T  # (d, r)
    rms = float(np.sqrt((V**2).sum(axis=1).mean())) or 1.0
    offsets = OFFSET_SCALES if offset_scale == "auto" else (float(offset_scale),)
    shifts = SHIFT_SCALES if shift_scale == "auto" else (float(shift_scale),)
    bar = tqdm(total=len(offsets) + len(shifts), desc="question corrections", disable=not progress)
    solver = _CorrectionFits(directions[seen], norms[seen], V, V @ basis, rms, labels[:, seen], mask[:, seen])
    for t_delta in offsets:  # the offset's width first, with the narrowest shift (none by default)
        solver.solve(t_delta, min(shifts), max_iter, tol, chunk)
        bar.update()
    fits = solver.fits
    t_delta = max(offsets, key=lambda o: fits[(o, min(shifts))][1])
    for t_w in shifts:
        solver.solve(t_delta, t_w, max_iter, tol, chunk)
        bar.update()
    bar.close()
    best = max(fits, key=lambda key: fits[key][1])
    theta, _ = fits[best]
    t_delta, t_w = best
    shift_vectors = np.zeros((len(seen), d))
    if t_w > 0:
        shift_vectors = (theta[:, :-1] * (t_w / rms)) @ basis.T
    return QuestionCorrections(
        np.asarray(item_ids, dtype=str)[seen],
        shift_vectors,
        theta[:, -1] * t_delta,
        t_delta,
        t_w / rms,
        {f"{a:g},{b:g}": ev for (a, b), (_, ev) in fits.items()},
    )


def _tensor(a: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float64)


class _CorrectionFits:
    """`fit_corrections`' fits, one per pair of prior sds (t_delta, t_w): the seen questions' text-only
    logits, answers and mask, question-major (n_seen, n_models) as `_solve` takes them, and each fit's
    theta and summed log evidence in `fits`, in the order solved."""

    def __init__(
        self,
        directions: np.ndarray,
        norms: np.ndarray,
        V: np.ndarray,
        coords: np.ndarray,
        rms: float,
        labels: np.ndarray,
        mask: np.ndarray,
    ):
        self.base = _tensor(directions @ V.T - norms[:, None])  # (n_seen, n_models)
        self.y, self.w = _tensor(np.where(mask, labels, 0.0).T), _tensor(mask.T)
        self.coords, self.rms = coords, rms  # (n_models, r) the known vectors in the shift's basis
        self.fits: dict[tuple[float, float], tuple[np.ndarray, float]] = {}

    def solve(self, t_delta: float, t_w: float, max_iter: int, tol: float, chunk: int) -> None:
        """The fit under prior sds (t_delta, t_w), unless done: rescaled so that the prior is N(0, I),
        theta = (a / t_w, delta / t_delta)."""
        if (t_delta, t_w) in self.fits:
            return
        n_models = len(self.coords)
        cols = ([self.coords * (t_w / self.rms)] if t_w > 0 else []) + [np.full((n_models, 1), -t_delta)]
        start = self.warm_start(t_delta, t_w)
        theta, ev = _solve(self.base, _tensor(np.hstack(cols)), self.y, self.w, max_iter, tol, chunk, start)
        self.fits[(t_delta, t_w)] = (theta.numpy(), float(ev.sum()))

    def warm_start(self, t_delta: float, t_w: float) -> torch.Tensor | None:
        """The last fit's optimum in this prior's coordinates (the same logits: a parameter is theta
        times its prior sd), so that each width after the first needs a few Newton steps."""
        if not self.fits:
            return None
        (last_delta, last_w), (last_theta, _) = next(reversed(self.fits.items()))
        start = np.zeros((len(self.base), (self.coords.shape[1] if t_w > 0 else 0) + 1))
        if t_delta > 0:
            start[:, -1] = last_theta[:, -1] * last_delta / t_delta
        if t_w > 0 and last_w > 0:
            start[:, :-1] = last_theta[:, :-1] * last_w / t_w
        return _tensor(start)


# ---------------------------------------------------------------------------------------------------
# A new question, a few models: its text embedding refined by the known models' answers


def question_probabilities(embeddings: np.ndarray, model_vectors: np.ndarray) -> np.ndarray:
    """Eq. (3) for question embeddings E_Q (n_q, d) and model vectors (n_models, d): P (n_models, n_q)."""
    embeddings = np.atleast_2d(np.asarray(embeddings, dtype=np.float64))
    return probability(unit_rows(embeddings), np.linalg.norm(embeddings, axis=1), model_vectors).T


def refine_questions(
    text_embeddings: np.ndarray,
    model_vectors: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray,
    prior_sd: float,
    what: str = "embedding",
    max_iter: int = 200,
    tol: float = 1e-7,
) -> np.ndarray:
    """MAP question embeddings (n_q, d) given the answers of known models, all model vectors frozen.

    text_embeddings: (n_q, d) E_Q from the adapter, the prior mean; model_vectors: (n_m, d);
    labels, mask: (n_m, n_q) answers and which are known. Objective per question: the masked BCE of
    Eq. (3) plus |E_Q - E_Q^text|^2 / (2 prior_sd^2). what="embedding" moves the whole vector (exact
    Newton on an equivalent problem of (known models + 1) dimensions per question, `_refine_embeddings`,
    all questions at once); what="norm" keeps the direction and moves only the norm r = |E_Q| (exact
    Newton on a 1-d problem per question, same prior on r, r >= 1e-3). max_iter and tol: Newton steps,
    and the largest change of a coordinate at which they stop.
    """
    if what not in ("embedding", "norm"):
        raise ValueError(f"what={what!r}; expected 'embedding' or 'norm'.")
    if prior_sd <= 0:
        raise ValueError(f"prior_sd={prior_sd}; expected a positive number.")
    E0 = np.atleast_2d(np.asarray(text_embeddings, dtype=np.float64))  # (n_q, d)
    V = np.atleast_2d(np.asarray(model_vectors, dtype=np.float64))  # (n_m, d)
    labels, mask = np.asarray(labels), np.asarray(mask, dtype=bool)
    if labels.shape != (len(V), len(E0)) or mask.shape != labels.shape:
        raise ValueError(
            f"labels {labels.shape} and mask {mask.shape} must both be (n_models, n_questions) = ({len(V)}, {len(E0)})."
        )
    if np.isnan(labels[mask]).any():
        raise ValueError("mask selects unobserved (NaN) labels; remove them from the mask.")
    y, w = np.nan_to_num(labels).T, mask.T.astype(np.float64)  # (n_q, n_m)
    precision = 1.0 / prior_sd**2
    if what == "norm":
        r0 = np.linalg.norm(E0, axis=1)
        u = unit_rows(E0)  # fixed
        r = r0.copy()
        for _ in range(max_iter):  # d/dr of the logit u . v - r is -1: a logistic problem in -r
            p = probability(u, r, V)  # (n_q, n_m)
            grad = -((p - y) * w).sum(1) + precision * (r - r0)
            hess = (w * p * (1 - p)).sum(1) + precision
            r, before = np.maximum(r - grad / hess, 1e-3), r
            if np.abs(r - before).max() < tol:  # a norm held at the floor 1e-3 moves no more: converged too
                break
        return E0 * (r / r0)[:, None]
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)
    return _refine_embeddings(t(E0), t(V), t(y), t(w), precision, max_iter, tol).numpy()


def _refine_embeddings(
    E0: torch.Tensor, V: torch.Tensor, y: torch.Tensor, w: torch.Tensor, precision: float, max_iter: int, tol: float
) -> torch.Tensor:
    """The MAP of `refine_questions(what="embedding")`, each question's exact optimum in r + 1 dimensions.

    The answers see E only through the projections x_m . a (a = B^T E, B (d, r) an orthonormal basis of
    the known models' vectors, x_m = B^T v_m) and the norm |E|^2 = |a|^2 + rho^2, rho the norm of E's
    part c orthogonal to B. For a given rho the prior term |c - c0|^2 is least with c along c0 (E0's
    part off B), so the d-dimensional MAP is E = B a + rho c0 / |c0| for the MAP (a, rho) of an
    (r + 1)-dimensional problem with prior N((a0, |c0|), prior_sd^2 I): Eq. (3) again, with t = (a, rho)
    as the question's embedding and x_m (0 for rho) as the models' (`jeirt.model.jeirt_logits`). With
    r <= the number of known models, every question is solved by batched damped Newton steps (analytic
    gradient and Hessian, step halving per question), all questions at once: the optimum that L-BFGS on
    all n_q x d coordinates approaches, reached to `tol` in a few dozen steps.
    """
    known = w.sum(dim=0) > 0  # (n_m,) models with at least one known answer
    if not bool(known.any()):
        return E0.clone()
    V, y, w = V[known], y[:, known], w[:, known]
    _, sing, vt = torch.linalg.svd(V, full_matrices=False)
    B = vt[sing > sing[0] * 1e-10].T  # (d, r)
    r = B.shape[1]
    a0 = E0 @ B  # (n_q, r)
    off = r < E0.shape[1]  # a part of E off the known vectors' span (none when they span all d)
    c0 = E0 - a0 @ B.T
    rho0 = c0.norm(dim=1)
    t0 = torch.cat([a0, rho0[:, None]], dim=1) if off else a0  # (n_q, p), p = r + 1 (or r)
    X = torch.cat([V @ B, torch.zeros(len(V), int(off), dtype=V.dtype)], dim=1)  # (n_m, p): x_m, 0 for rho

    def objective(t: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:  # negative log posterior of `rows`
        z = jeirt_logits(t, X)  # (n, n_m): Eq. (3) in the reduced coordinates
        nll = (torch.nn.functional.softplus(z) - y[rows] * z) * w[rows]
        return nll.sum(dim=1) + 0.5 * precision * ((t - t0[rows]) ** 2).sum(dim=1)

    t = t0.clone()
    active = torch.arange(len(t))  # questions whose last step was not below tol
    for _ in range(max_iter):
        ta = t[active]
        grad, hess = _posterior_derivatives(ta, X, y[active], w[active], t0[active], precision)
        step = _descent_step(grad, hess, precision)
        before, scale = objective(ta, active), torch.ones(len(ta), 1, dtype=t.dtype)
        pending = torch.arange(len(ta))
        for _ in range(30):  # halve the step of any question whose posterior got worse
            rows = active[pending]
            after = objective(ta[pending] - scale[pending] * step[pending], rows)
            worse = ~(after <= before[pending] + 1e-12 * before[pending].abs())  # NaN is worse too
            pending = pending[worse]
            if not len(pending):
                break
            scale[pending] *= 0.5
        moved = scale * step
        t[active] = ta - moved
        active = active[moved.abs().amax(dim=1) >= tol]
        if not len(active):
            break
    return t[:, :r] @ B.T + (t[:, r] / rho0)[:, None] * c0 if off else t @ B.T


def _posterior_derivatives(
    ta: torch.Tensor, X: torch.Tensor, ya: torch.Tensor, wa: torch.Tensor, t0a: torch.Tensor, precision: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradient (n, p) and Hessian (n, p, p) of `_refine_embeddings`' negative log posterior at the
    questions' coordinates `ta`, analytic: Eq. (3) with t as the question's embedding, x_m as the models'."""
    eye = torch.eye(ta.shape[1], dtype=ta.dtype)
    s = ta.norm(dim=1, keepdim=True)  # (n, 1)
    u = ta / s
    z = jeirt_logits(ta, X)  # (n, n_m): z_m = x_m . u - s
    xu = z + s  # x_m . u
    p = torch.sigmoid(z)
    q = (X[None, :, :] - xu[:, :, None] * u[:, None, :]) / s[:, :, None]  # (n, n_m, p): P_u x_m / s
    dz = q - u[:, None, :]  # gradient of the logit z_m in t
    alpha = wa * (p - ya)  # (n, n_m): weight of each z_m's own Hessian
    grad = (alpha[:, :, None] * dz).sum(dim=1) + precision * (ta - t0a)
    # Hessian of z_m: -(u q^T + q u^T) / s - (x_m . u) P_u / s^2 - P_u / s, with q = P_u x_m / s
    Q = (alpha[:, :, None] * q).sum(dim=1)  # (n, p)
    beta = (alpha * xu).sum(dim=1)[:, None, None] / s[:, :, None] ** 2
    gamma = alpha.sum(dim=1)[:, None, None] / s[:, :, None]
    proj = eye - u[:, :, None] * u[:, None, :]
    hess = (
        (dz * (wa * p * (1 - p))[:, :, None]).transpose(1, 2) @ dz
        + precision * eye
        - (u[:, :, None] * Q[:, None, :] + Q[:, :, None] * u[:, None, :]) / s[:, :, None]
        - (beta + gamma) * proj
    )
    return grad, hess


def _descent_step(grad: torch.Tensor, hess: torch.Tensor, precision: float) -> torch.Tensor:
    """Newton steps (n, p); where the Hessian is not positive definite (not convex there), the step on
    its absolute eigenvalues, a descent direction."""
    factor, info = torch.linalg.cholesky_ex(hess)
    step = torch.cholesky_solve(grad[:, :, None], factor)[:, :, 0]
    bent = torch.nonzero(info).flatten()
    if len(bent):
        evals, evecs = torch.linalg.eigh(hess[bent])
        evals = evals.abs().clamp(min=1e-3 * precision)
        step[bent] = (evecs @ ((evecs.transpose(1, 2) @ grad[bent, :, None]) / evals[:, :, None]))[:, :, 0]
    return step
