"""Classic item response theory: the 1PL and 2PL fits that Section 3.1 and Appendix J rest on, and
the algorithms the primer teaches.

The two-parameter logistic model (2PL, Lord 1980) gives each model i one number, its ability theta_i,
and each item j a discrimination a_j and a difficulty b_j:

    P(model i answers item j correctly) = sigmoid(a_j (theta_i - b_j))              (2PL)

The one-parameter model (1PL) shares a single discrimination a > 0 across items; it is fitted as
a Rasch model (slope 1, abilities in log-odds units with prior sd prior_sd_ability *
prior_sd_discrimination), then put on the 2PL's standardised ability scale, which turns the spread
of the abilities into the common a. The paper's point
(Section 3.1) is what the 2PL does on LLM data when a_j is left free: many items get a_j <= 0 or
a_j close to 0, whose curves are flat or falling in ability. So discriminations are NOT forced
positive here.

Fitting. Internally the model is in slope-intercept form, z_ij = a_j theta_i + d_j (stable when a_j
is near 0), and b_j = -d_j / a_j is reported only where |a_j| >= `min_discrimination` (NaN
elsewhere: a flat curve has no meaningful midpoint). We maximise the posterior (MAP) of the masked
Bernoulli likelihood under weak Gaussian priors

    theta_i ~ N(0, prior_sd_ability^2),  a_j ~ N(0, prior_sd_discrimination^2),  d_j ~ N(0, prior_sd_intercept^2)

(centred at 0, so the prior does not push a_j either way) with full-batch L-BFGS (torch, strong
Wolfe line search) over all parameters at once, starting from abilities given by accuracy and one
Newton step for each item's slope. Each evaluation is a few vectorised passes over the dense
(n_models, n_items) matrix, in float32 by default with losses summed in float64 (fitted
probabilities agree with a float64 fit to about 1e-3), on CPU or GPU. On one CPU core all of
metabench (6,349 x 1,075) takes about 15 s (about 180 iterations) and `mmlu_pro` (33 x 12,032)
under 2 s; a GPU brings the former to seconds.

Identification. sigmoid(a (theta - b)) is unchanged by theta -> s theta + t, a -> a / s,
b -> s b + t, for any s != 0. After the fit we (1) standardise the abilities to mean 0 and standard
deviation 1 over the models that have labels, rescaling a and d so every probability is unchanged,
and (2) fix the sign so that ability correlates positively with each model's accuracy (flipping
theta and every a_j together, which leaves every probability unchanged too). Abilities are then in
units of "standard deviations of the models in this fit", and a_j is the change in log-odds of a
correct answer per such standard deviation.

An IRT model has parameters only for the items and models it was fitted on: it cannot predict a new
question (JE-IRT can, from the question's text). A new model that answered some of the fitted items is
added by `onboard` (its ability by Newton steps with every item frozen, prior N(0, 1) on the
standardised scale); `PerQuestionIRT` wraps that as the per-question baseline for new models on known
questions (`fit(ds, split)`: items from the known models' answers, then the held-out models onboarded).

Classic IRT with known item parameters, the algorithms the primer (book/irt_primer.md) teaches:
`icc` (the 2PL curve, or the 3PL with a guessing floor), `item_information`, `ability_loglik` (with
its gradient and Hessian) and `estimate_ability` (ML, MAP or EAP, each with its standard error),
`item_standard_errors`, `fit_item_3pl` (one item, abilities known), the Rasch model by joint
(`rasch_jml`) and marginal (`rasch_mml_em`, EM) maximum likelihood, and a compensatory MIRT
(`fit_mirt`). `sample_labels` draws answers from probabilities. The checks of a fit (item fit, Q3)
and the analyses of Section 3.1 and Appendix J (discrimination shares against chance, saturation,
correct-set inclusion) are in `jeirt.baselines.irt_diagnostics`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import torch
from scipy import optimize, special
from sklearn.exceptions import NotFittedError
from tqdm import (
    tqdm,  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets
)

from jeirt import settings
from jeirt.baselines.base import Baseline
from jeirt.data.dataset import Dataset


def sum64(x: torch.Tensor) -> torch.Tensor:
    """The sum of `x`'s entries accumulated in float64, as a float64 scalar. On a CPU through numpy's
    pairwise sum: torch's `sum(dtype=float64)` of a float32 tensor took 27 ms for metabench's 6.8
    million labels against numpy's 5 ms, and was half of a 2PL fit's time."""
    if x.device.type == "cpu":
        return torch.tensor(np.sum(x.detach().numpy(), dtype=np.float64), dtype=torch.float64)
    return x.sum(dtype=torch.float64)


def _fit_mask(ds: Dataset, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The labels a fit uses (default: every observed one), checked, with the models and items it covers."""
    if mask is None:
        mask = ds.observed
    else:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != ds.labels.shape:
            raise ValueError(f"mask has shape {mask.shape}; expected the dataset's {ds.labels.shape}.")
        if (mask & ~ds.observed).any():
            raise ValueError("mask selects unobserved (NaN) labels; use mask & ds.observed.")
    has_model, has_item = np.any(mask, axis=1), np.any(mask, axis=0)  # (n_models,), (n_items,)
    if has_model.sum() < 2:
        raise ValueError(f"mask leaves {int(has_model.sum())} model(s) with labels; an IRT fit needs at least two.")
    return mask, has_model, has_item


@dataclass(eq=False)
class _IRT(Baseline):
    """Shared fit and predict for the 1PL and 2PL; subclasses set `shared_discrimination`."""

    shared_discrimination: ClassVar[bool]
    chunk: ClassVar[int] = 25  # L-BFGS iterations between convergence checks (and progress-bar updates)

    prior_sd_ability: float = 1.0  # theta ~ N(0, sd^2); the scale is re-standardised after the fit anyway
    prior_sd_discrimination: float = 2.0  # a ~ N(0, sd^2): weak, centred at 0 (no sign preferred)
    prior_sd_intercept: float = 5.0  # d ~ N(0, sd^2): weak; d is the log-odds at average ability
    min_discrimination: float = 0.05  # b = -c/a is reported only where |a| >= this (NaN elsewhere)
    max_iter: int = 1000  # L-BFGS iterations at most
    tol: float = 1e-9  # stop when 25 iterations lower the objective per label by < tol * (1 + its value)
    device: str | None = None  # torch device; None: CUDA, then MPS, then CPU
    dtype: str = "float32"  # elementwise passes (losses are summed in float64); "float64" for exactness
    cpu_threads: int | None = 1  # torch threads while fitting on CPU (None: leave torch's setting).
    # One by default: the passes are small and memory-bound, and on a shared 2-core machine two
    # threads made fits 3-10x slower in wall time (and cost more CPU) than one.
    random_state: int = 0  # the fit starts from a deterministic point; kept for a uniform interface
    progress: bool = False  # tqdm bar over iterations

    def __post_init__(self) -> None:
        for name in ("prior_sd_ability", "prior_sd_discrimination", "prior_sd_intercept"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"{name}={value}; expected a positive standard deviation.")
        if self.max_iter < 1:
            raise ValueError(f"max_iter={self.max_iter}; expected a positive integer.")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype={self.dtype!r}; expected 'float32' or 'float64'.")
        if self.cpu_threads is not None and self.cpu_threads < 1:
            raise ValueError(f"cpu_threads={self.cpu_threads}; expected a positive integer or None.")

    # -- fitting ---------------------------------------------------------------------------------

    def fit(self, ds: Dataset, mask: np.ndarray | None = None) -> _IRT:
        """MAP abilities and item parameters from the labels of `ds` under `mask` (default: all).

        Models or items without a single label under the mask get NaN parameters, and
        `predict_proba` refuses them.
        """
        cfg = self
        mask, has_model, has_item = _fit_mask(ds, mask)
        dev = torch.device(cfg.device) if cfg.device else settings.default_device()
        dtype = getattr(torch, cfg.dtype)
        as_t = lambda x: torch.as_tensor(np.asarray(x), dtype=dtype, device=dev)  # noqa: E731
        y = as_t(np.where(mask, np.nan_to_num(ds.labels), 0.0))  # (n_models, n_items)
        w = as_t(mask)  # (n_models, n_items) 1 where the label is used
        threads = torch.get_num_threads()
        if dev.type == "cpu" and cfg.cpu_threads is not None:
            torch.set_num_threads(cfg.cpu_threads)
        try:
            theta, a, d, n_iter, converged, objective = self._fit_tensors(y, w)
        finally:
            torch.set_num_threads(threads)

        # Identification: standardise theta over the models with labels, then fix the sign so that
        # ability rises with accuracy. Each step maps (theta, a, d) to an equivalent triple.
        theta, a, d = (t.double().cpu().numpy() for t in (theta, a, d))
        a = np.broadcast_to(a, d.shape).copy()
        rows = np.flatnonzero(has_model)
        mean, sd = theta[rows].mean(), theta[rows].std()
        sd = sd if sd > 1e-12 else 1.0  # all abilities equal: nothing to scale
        d = d + a * mean
        a = a * sd
        theta = (theta - mean) / sd
        with np.errstate(invalid="ignore", divide="ignore"):
            accuracy = (np.nan_to_num(ds.labels) * mask).sum(axis=1) / mask.sum(axis=1)
            flip = np.corrcoef(theta[rows], accuracy[rows])[0, 1] < 0  # NaN (equal accuracies): keep
        if flip:
            theta, a = -theta, -a
        theta[~has_model] = np.nan
        a[~has_item], d[~has_item] = np.nan, np.nan

        self.models_ = list(ds.models)
        self.items_ = ds.items[["item_id", "benchmark"]].reset_index(drop=True).copy()
        self.ability_ = theta  # (n_models,)
        self.discrimination_ = a  # (n_items,)
        self.intercept_ = d  # (n_items,) log-odds of a correct answer at ability 0
        self.n_iter_, self.converged_ = n_iter, converged
        self.objective_ = objective  # negative log posterior per label used, at the optimum
        self.n_labels_ = int(mask.sum())
        return self

    def _start(self, y: torch.Tensor, w: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor, list[float]]:
        """The parameters L-BFGS starts from (theta, a, d; the Rasch model without a), the slopes a,
        and each parameter's prior precision. Abilities from each model's (smoothed) accuracy; items
        at their own log-odds with the slope of one Newton step from a = 0 (a per-item logistic
        regression on those abilities), so the data alone decide the sign of each slope."""
        count_m, count_i = w.sum(dim=1), w.sum(dim=0)
        theta = torch.logit(((y * w).sum(dim=1) + 0.5) / (count_m + 1.0))
        theta = (theta - theta.mean()) / theta.std().clamp_min(1e-6)
        d = torch.logit(((y * w).sum(dim=0) + 0.5) / (count_i + 1.0))
        prior_sd = [self.prior_sd_ability, self.prior_sd_discrimination, self.prior_sd_intercept]
        if self.shared_discrimination:
            # 1PL as a Rasch model: slope fixed at 1, abilities in log-odds units with the prior sd of
            # a * theta under the 2PL's priors. No product of free parameters, so the fit is convex;
            # `fit` turns the abilities' spread into the common discrimination.
            a = torch.ones(1, dtype=y.dtype, device=y.device)
            return (
                [theta * self.prior_sd_discrimination, d],
                a,
                [1 / (prior_sd[0] * prior_sd[1]) ** 2, 1 / prior_sd[2] ** 2],
            )
        p = torch.sigmoid(d).expand(*y.shape)
        v = w * p * (1 - p)  # (n_models, n_items) curvature at a = 0
        a = (theta @ (w * (y - p))) / ((theta**2) @ v + 1 / prior_sd[1] ** 2)
        return [theta, a, d], a, [1 / sd**2 for sd in prior_sd]

    def _fit_tensors(self, y: torch.Tensor, w: torch.Tensor):
        """Full-batch L-BFGS on the negative log posterior per label; returns theta, a, d and stats.

        L-BFGS moves all parameters at once, so it follows the strong coupling between abilities and
        slopes that makes alternating (models, then items) updates crawl.
        """
        cfg = self
        n_models, n_items = y.shape
        n_labels = float(w.sum())
        params, a, inv_var = self._start(y, w)
        # The Bernoulli loss softplus(z) - y z (soft labels y in [0, 1] allowed) has gradient
        # sigmoid(z) - y in z; y w is precomputed (0 where a label is not used).
        yw = y * w  # (n_models, n_items)

        def objective(grad: bool) -> torch.Tensor:
            """Negative log posterior per label; with grad=True also fills each parameter's .grad."""
            theta, d = params[0], params[-1]
            z = torch.addr(d.expand(n_models, n_items), theta, a.expand(n_items))  # theta a^T + d
            loss = sum64(torch.nn.functional.softplus(z).mul_(w)) - sum64(yw * z)
            loss = loss + sum(0.5 * s * (p.double() ** 2).sum() for s, p in zip(inv_var, params))
            if grad:
                r = torch.sigmoid(z).mul_(w).sub_(yw)  # d loss / d z, (n_models, n_items)
                grads = [r @ a.expand(n_items), theta @ r, r.sum(dim=0)]  # theta, a, d
                if self.shared_discrimination:
                    grads = [grads[0], grads[2]]  # the Rasch slope is fixed
                for p, g, s in zip(params, grads, inv_var):
                    p.grad = (g + s * p) / n_labels
            return loss / n_labels  # float64 even when the passes run in float32

        opt = _lbfgs(params, self.chunk)

        def closure() -> torch.Tensor:
            return objective(grad=True)

        previous = float(objective(grad=False))
        converged, n_chunks = False, -(-cfg.max_iter // self.chunk)
        bar = tqdm(range(n_chunks), desc=type(self).__name__, disable=not cfg.progress, leave=False)
        for _ in bar:
            opt.step(closure)
            current = float(objective(grad=False))
            bar.set_postfix(objective=f"{current:.6f}")
            if previous - current <= cfg.tol * (1.0 + abs(current)):
                converged = True
                break
            previous = current
        bar.close()
        n_iter = opt.state[opt._params[0]].get("n_iter", 0)
        if not converged:
            warnings.warn(
                f"{type(self).__name__} did not converge in max_iter={cfg.max_iter} L-BFGS "
                "iterations; raise max_iter or tol.",
                RuntimeWarning,
                stacklevel=3,
            )
        return params[0], a, params[-1], n_iter, converged, current

    # -- fitted parameters -------------------------------------------------------------------------

    @property
    def difficulty_(self) -> np.ndarray:
        """b_j = -d_j / a_j (n_items,), the ability at which P = 1/2; NaN where |a_j| < min_discrimination."""
        self._check_fitted()
        a, d = self.discrimination_, self.intercept_
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(np.abs(a) >= self.min_discrimination, -d / a, np.nan)

    def item_parameters(self) -> pd.DataFrame:
        """One row per fitted item: item_id, benchmark, discrimination a, intercept d, difficulty b."""
        self._check_fitted()
        return self.items_.assign(
            discrimination=self.discrimination_, intercept=self.intercept_, difficulty=self.difficulty_
        )

    # -- prediction ------------------------------------------------------------------------------

    def predict_proba(self, ds: Dataset) -> np.ndarray:
        """P(correct) with shape (n_models, n_items), aligned with `ds.labels`.

        Only models and items this model was fitted on (with at least one label) can be predicted: an
        IRT model has no parameters for a new question or a new model.
        """
        rows, cols = self._positions(ds)
        z = self.ability_[rows, None] * self.discrimination_[None, cols] + self.intercept_[None, cols]
        return 1.0 / (1.0 + np.exp(-z))

    def onboard(
        self, ds: Dataset, mask: np.ndarray | None = None, replace: bool = False, max_iter: int = 50, tol: float = 1e-8
    ) -> _IRT:
        """Abilities of `ds.models` from their labels under `mask` (default: all), items frozen.

        Each ability is the MAP under N(0, 1), the standardised scale of the fitted models' abilities
        (an empirical prior: the fitted abilities have mean 0 and sd 1), found by damped Newton steps
        on all models at once. New names are appended; a fitted name is refused unless `replace=True`.
        Every labelled item must have been in the fit.
        """
        self._check_fitted()
        mask = ds.observed if mask is None else np.asarray(mask, dtype=bool)
        if mask.shape != ds.labels.shape:
            raise ValueError(f"mask has shape {mask.shape}; expected the dataset's {ds.labels.shape}.")
        mask = mask & ds.observed
        known = [m for m in ds.models if m in self.models_]
        if known and not replace:
            raise ValueError(f"model(s) {known[:5]} are already fitted; pass replace=True to refit them.")
        item_pos = {q: j for j, q in enumerate(self.items_["item_id"])}
        cols = np.array([item_pos.get(q, -1) for q in ds.items["item_id"]], dtype=np.int64)
        a = np.where(cols >= 0, self.discrimination_[cols], np.nan)
        d = np.where(cols >= 0, self.intercept_[cols], np.nan)
        unknown = mask.any(axis=0) & np.isnan(d)
        if unknown.any():
            raise ValueError(
                f"{int(unknown.sum())} labelled item(s) have no parameters in this {type(self).__name__} "
                f"(e.g. {ds.items['item_id'][unknown].tolist()[:3]}); onboard from fitted items only."
            )
        a, d = np.nan_to_num(a), np.nan_to_num(d)
        y, w = np.nan_to_num(ds.labels).astype(np.float64), mask.astype(np.float64)
        theta = np.zeros(ds.n_models)
        for _ in range(max_iter):
            p = 1.0 / (1.0 + np.exp(-(theta[:, None] * a + d)))
            grad = (w * (p - y)) @ a + theta  # (n_models,) gradient of the negative log posterior
            hess = (w * p * (1 - p)) @ (a**2) + 1.0
            step = grad / hess  # the objective is convex in theta: a Newton step from a log-concave start
            theta -= np.clip(step, -2.0, 2.0)  # the clip damps the first steps of a far-off model
            if np.abs(step).max() < tol:
                break
        for name, value in zip(ds.models, theta):
            if name in self.models_:
                self.ability_[self.models_.index(name)] = value
            else:
                self.models_.append(name)
                self.ability_ = np.append(self.ability_, value)
        return self

    def _positions(self, ds: Dataset) -> tuple[np.ndarray, np.ndarray]:
        self._check_fitted()
        name = type(self).__name__
        model_pos = {m: i for i, m in enumerate(self.models_)}
        item_pos = {q: j for j, q in enumerate(self.items_["item_id"])}
        new_items = [q for q in ds.items["item_id"] if q not in item_pos]
        if new_items:
            raise ValueError(
                f"{len(new_items)} item(s) of dataset {ds.name!r} were not in the {name} fit (e.g. "
                f"{new_items[:3]}); {name} predicts only items it was fitted on, since it has no "
                "parameters for an unseen question. Fit it on these items too, or use JE-IRT, which "
                "places new questions from their text."
            )
        new_models = [m for m in ds.models if m not in model_pos]
        if new_models:
            raise ValueError(
                f"{len(new_models)} model(s) of dataset {ds.name!r} were not in the {name} "
                f"fit (e.g. {new_models[:3]}); {name} predicts only models it was fitted on."
            )
        rows = np.array([model_pos[m] for m in ds.models], dtype=np.int64)
        cols = np.array([item_pos[q] for q in ds.items["item_id"]], dtype=np.int64)
        unlabelled_items = cols[np.isnan(self.intercept_[cols])]
        if len(unlabelled_items):
            raise ValueError(
                f"{len(unlabelled_items)} item(s) had no label in the {name} fit (e.g. "
                f"{self.items_['item_id'].iloc[unlabelled_items[:3]].tolist()}); their "
                "parameters are unknown."
            )
        unlabelled_models = rows[np.isnan(self.ability_[rows])]
        if len(unlabelled_models):
            raise ValueError(
                f"{len(unlabelled_models)} model(s) had no label in the {name} fit (e.g. "
                f"{[self.models_[i] for i in unlabelled_models[:3]]}); their abilities are "
                "unknown."
            )
        return rows, cols

    def _check_fitted(self) -> None:
        if not hasattr(self, "ability_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(dataset) first.")


class TwoPL(_IRT):
    """2PL: P = sigmoid(a_j (theta_i - b_j)), one discrimination and one difficulty per item (a_j of
    either sign). Learned: `ability_`, `discrimination_`, `intercept_`, `difficulty_`."""

    shared_discrimination = False


@dataclass(eq=False)
class MarginalTwoPL(TwoPL):
    """The 2PL by marginal maximum likelihood, as mirt fits it: the abilities are integrated out
    under a population N(0, prior_sd_ability^2) by quadrature on `n_nodes` equally spaced nodes, and the
    item parameters found by EM (Bock and Aitkin 1981); each model's ability is then its posterior mean
    (EAP) with its posterior sd (`ability_se_`). `standard_errors` gives the items' standard errors from
    the observed information (Louis 1982).

    Why beside `TwoPL`: the joint MAP estimates one ability per model together with the items, and after
    its rescaling it inflates discriminations on a short test (DECISIONS.md); the marginal fit does not,
    so Section 3.1's item analyses use it. With a few dozen models and hundreds of items or more, the joint
    fit follows the true discriminations at least as closely and its scale is steadier (the IRT primer's
    simulation). `TwoPL` stays the per-question baseline, whose job is predicting answers.

    The scale is the population's: a_j is the change in log-odds per prior_sd_ability of ability, with no
    rescaling after the fit (EAP abilities spread a little less than the population). The item priors
    a_j ~ N(0, prior_sd_discrimination^2), d_j ~ N(0, prior_sd_intercept^2) are kept (Bayes modal
    estimation): weak, centred at 0, they keep an item everyone answers right, or one that separates
    the models perfectly, finite; the prior on a_j is wider than `TwoPL`'s (see the field). Missing answers
    are masked. The sign is fixed as in `TwoPL`: ability rises with accuracy. Runs in torch (CPU or GPU);
    `tol` is the largest change of any a_j or d_j in one EM cycle at which it stops (mirt's criterion).
    """

    prior_sd_discrimination: float = 10.0  # a ~ N(0, sd^2). Wider than TwoPL's 2: the common scale of all
    # a_j feels every item's prior at once, and sd 2 shrank the discriminations by 10% on a simulated
    # 1,000 x 300 test and by 40% on a 33 x 300 one (sd 10: within 3% and +11%, intervals covering 94%, 92%)
    n_nodes: int = 61  # equally spaced quadrature nodes for the ability distribution (mirt's default)
    newton_steps: int = 2  # Newton steps per item in each M-step (the M-step's objective is concave)
    max_iter: int = 2000  # EM cycles at most
    tol: float = 1e-4  # stop when no a_j or d_j moves by more than this in one EM cycle

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_nodes < 5 or self.newton_steps < 1:
            raise ValueError(
                f"n_nodes={self.n_nodes}, newton_steps={self.newton_steps}; expected at least 5 nodes and 1 step."
            )

    def fit(
        self, ds: Dataset, mask: np.ndarray | None = None, start: tuple[np.ndarray, np.ndarray] | None = None
    ) -> MarginalTwoPL:
        """Item parameters by marginal ML (EM) from the labels of `ds` under `mask` (default: all), then EAP
        abilities. Models or items without a label under the mask get NaN, as in `TwoPL.fit`. `start`:
        (discrimination, intercept) per item to start EM from (e.g. the fit that simulated `ds`), in place
        of each item's log-odds and its correlation with accuracy; the optimum is the same, reached sooner."""
        mask, has_model, has_item = _fit_mask(ds, mask)
        if start is not None:
            given = tuple(np.asarray(x, dtype=np.float64).reshape(-1) for x in start)
            if len(given) != 2 or any(len(x) != ds.n_items or not np.isfinite(x[has_item]).all() for x in given):
                raise ValueError(
                    f"start must be two arrays of {ds.n_items} item parameters (a, d), finite on fitted items."
                )
            start = (given[0][has_item], given[1][has_item])
        dev = torch.device(self.device) if self.device else settings.default_device()
        as_t = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float64, device=dev)  # noqa: E731
        y = np.where(mask, np.nan_to_num(ds.labels), 0.0)
        threads = torch.get_num_threads()
        if dev.type == "cpu" and self.cpu_threads is not None:
            torch.set_num_threads(self.cpu_threads)
        try:
            start_t = None if start is None else (as_t(start[0]), as_t(start[1]))
            a_t, d_t, n_iter, converged = self._em(as_t(y[:, has_item]), as_t(mask[:, has_item]), start_t)
            y_t, w_t = as_t(y[:, has_item]), as_t(mask[:, has_item])
            post, marginal = _node_posterior(y_t * w_t, (1 - y_t) * w_t, a_t, d_t, *self._quadrature(dev))
            nodes = self._quadrature(dev)[0]
            mean = post @ nodes
            sd = torch.sqrt(torch.clamp(post @ nodes**2 - mean**2, min=0.0))
            theta, theta_se, a, d = (t.cpu().numpy() for t in (mean, sd, a_t, d_t))
            log_prior = -0.5 * (
                np.sum(a**2) / self.prior_sd_discrimination**2 + np.sum(d**2) / self.prior_sd_intercept**2
            )
            objective = -(float(marginal.sum()) + log_prior) / mask.sum()
        finally:
            torch.set_num_threads(threads)
        with np.errstate(invalid="ignore", divide="ignore"):
            accuracy = (y * mask).sum(axis=1) / mask.sum(axis=1)
            rows = np.flatnonzero(has_model)
            flip = np.corrcoef(theta[rows], accuracy[rows])[0, 1] < 0  # NaN (equal accuracies): keep
        if flip:  # the N(0, sd^2) population is symmetric: (-theta, -a, d) fits equally well
            theta, a = -theta, -a
        theta[~has_model], theta_se[~has_model] = np.nan, np.nan
        self.models_ = list(ds.models)
        self.items_ = ds.items[["item_id", "benchmark"]].reset_index(drop=True).copy()
        self.ability_, self.ability_se_ = theta, theta_se
        self.discrimination_ = np.full(ds.n_items, np.nan)
        self.intercept_ = np.full(ds.n_items, np.nan)
        self.discrimination_[has_item], self.intercept_[has_item] = a, d
        self.n_iter_, self.converged_ = n_iter, converged
        self.objective_ = objective  # negative log marginal posterior per label used
        self.n_labels_ = int(mask.sum())
        return self

    def _quadrature(self, dev: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """Equally spaced nodes from -6 to 6 population sds and the log of their normalised N(0, 1)
        weights, (K,) each. Not Gauss-Hermite nodes: with hundreds of items a model's posterior is
        narrower than their spacing (0.5 near 0 with 41 nodes), which spread the EAP abilities and
        shrank the discriminations by a quarter on a simulated 1,000 x 300 test."""
        nodes = np.linspace(-6.0, 6.0, self.n_nodes)
        log_w = -0.5 * nodes**2
        as_t = lambda x: torch.as_tensor(x, dtype=torch.float64, device=dev)  # noqa: E731
        return as_t(self.prior_sd_ability * nodes), as_t(log_w - special.logsumexp(log_w))

    def _em(
        self, y: torch.Tensor, w: torch.Tensor, start: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, int, bool]:
        """Bock-Aitkin EM over the items of (y, w), each (n_models, n_items) with at least one label per
        item: E-step, each model's posterior over the nodes; M-step, Newton steps per item on the expected
        counts. Starts from each item's log-odds and its correlation with the models' accuracy."""
        nodes, log_w = self._quadrature(y.device)
        y1, y0 = y * w, (1 - y) * w  # each model's right and wrong answers, once for every E-step
        count_m, count_i = w.sum(dim=1), w.sum(dim=0)
        score = torch.logit((y1.sum(dim=1) + 0.5) / (count_m + 1.0))
        score = (score - score.mean()) / score.std().clamp_min(1e-6)
        d = torch.logit((y1.sum(dim=0) + 0.5) / (count_i + 1.0))
        centred = (y - (y1.sum(dim=0) / count_i.clamp_min(1))) * w
        cov = (centred * score[:, None]).sum(dim=0)
        r = cov / torch.sqrt((centred**2).sum(dim=0) * (w * score[:, None] ** 2).sum(dim=0)).clamp_min(1e-12)
        r = r.clamp(-0.9, 0.9)
        a = 1.7 * r / torch.sqrt(1 - r**2)  # the normal-ogive slope of a biserial-like correlation
        if start is not None:
            a, d = start
        inv_a, inv_d = 1 / self.prior_sd_discrimination**2, 1 / self.prior_sd_intercept**2
        t, t2 = nodes[:, None], nodes[:, None] ** 2
        converged = False
        bar = tqdm(range(1, self.max_iter + 1), desc="MarginalTwoPL", disable=not self.progress, leave=False)
        for it in bar:  # noqa: B007 (returned after the loop)
            post, _ = _node_posterior(y1, y0, a, d, nodes, log_w)
            n_k, r_k = post.T @ w, post.T @ y1  # (K, J) expected models, and correct answers, at each node
            a_old, d_old = a, d
            for _ in range(self.newton_steps):
                p = torch.sigmoid(t * a + d)  # (K, J)
                resid, v = r_k - n_k * p, n_k * p * (1 - p)
                g_a, g_d = (resid * t).sum(dim=0) - inv_a * a, resid.sum(dim=0) - inv_d * d
                h_aa, h_ad, h_dd = (v * t2).sum(dim=0) + inv_a, (v * t).sum(dim=0), v.sum(dim=0) + inv_d
                det = h_aa * h_dd - h_ad**2
                a = a + ((h_dd * g_a - h_ad * g_d) / det).clamp(-1.0, 1.0)
                d = d + ((h_aa * g_d - h_ad * g_a) / det).clamp(-1.0, 1.0)
            change = float(torch.maximum((a - a_old).abs().max(), (d - d_old).abs().max()))
            bar.set_postfix(change=f"{change:.1e}")
            if change < self.tol:
                converged = True
                break
        bar.close()
        if not converged:
            warnings.warn(
                f"MarginalTwoPL did not converge in max_iter={self.max_iter} EM cycles (last change "
                f"{change:.1e} > tol={self.tol}); raise max_iter or tol.",
                RuntimeWarning,
                stacklevel=3,
            )
        return a, d, it, converged

    def standard_errors(self, ds: Dataset, mask: np.ndarray | None = None) -> pd.DataFrame:
        """Standard errors of each item's a_j, d_j and b_j = -d_j / a_j (b's by the delta method), one row
        per item of the fit, from the observed information of the marginal posterior by Louis's formula:
        the expected complete-data information minus the posterior covariance of the complete-data
        scores, over all items at once (the abilities' uncertainty included). `ds` and `mask` must be
        the fit's. Its cost grows with the square of the items (a few hundred items take seconds)."""
        self._check_fitted()
        mask, _, _ = _fit_mask(ds, mask)
        if list(ds.models) != self.models_ or list(ds.items["item_id"]) != list(self.items_["item_id"]):
            raise ValueError("standard_errors needs the dataset this MarginalTwoPL was fitted on (same models, items).")
        keep = np.isfinite(self.discrimination_)
        y = np.where(mask, np.nan_to_num(ds.labels), 0.0)[:, keep]
        w = mask[:, keep].astype(np.float64)
        a, d, n_j = self.discrimination_[keep], self.intercept_[keep], int(keep.sum())
        nodes, log_w = (x.numpy() for x in self._quadrature(torch.device("cpu")))
        as_t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731
        post = _node_posterior(as_t(y * w), as_t((1 - y) * w), as_t(a), as_t(d), as_t(nodes), as_t(log_w))[0].numpy()
        p = 1.0 / (1.0 + np.exp(-(nodes[:, None] * a + d)))  # (K, J)
        second = np.zeros((2 * n_j, 2 * n_j))  # sum over models of E[S S^T | answers], S = (scores in a, in d)
        for k, t in enumerate(nodes):
            r = np.sqrt(post[:, k])[:, None] * (w * (y - p[k]))  # (n, J)
            g = r.T @ r
            second[:n_j, :n_j] += t**2 * g
            second[:n_j, n_j:] += t * g
            second[n_j:, n_j:] += g
        second[n_j:, :n_j] = second[:n_j, n_j:].T
        m_d = w * (y - post @ p)  # (n, J) posterior mean scores
        m_a = w * (y * (post @ nodes)[:, None] - (post * nodes) @ p)
        m = np.hstack([m_a, m_d])
        n_k = post.T @ w  # (K, J)
        v = n_k * p * (1 - p)
        info = -(second - m.T @ m)  # minus the posterior covariance of the scores ...
        idx = np.arange(n_j)
        info[idx, idx] += (v * nodes[:, None] ** 2).sum(axis=0) + 1 / self.prior_sd_discrimination**2
        info[idx, idx + n_j] += (v * nodes[:, None]).sum(axis=0)  # ... plus the expected information
        info[idx + n_j, idx] += (v * nodes[:, None]).sum(axis=0)
        info[idx + n_j, idx + n_j] += v.sum(axis=0) + 1 / self.prior_sd_intercept**2
        cov = np.linalg.inv(info)
        var_a, var_d, cov_ad = cov[idx, idx], cov[idx + n_j, idx + n_j], cov[idx, idx + n_j]
        with np.errstate(divide="ignore", invalid="ignore"):
            b = -d / a
            var_b = (b**2 * var_a + var_d + 2 * b * cov_ad) / a**2
        out = pd.DataFrame(np.nan, index=range(len(keep)), columns=["discrimination", "intercept", "difficulty"])
        out.loc[keep, "discrimination"], out.loc[keep, "intercept"] = np.sqrt(var_a), np.sqrt(var_d)
        out.loc[keep, "difficulty"] = np.sqrt(var_b)
        return out


def _node_posterior(
    right: torch.Tensor,
    wrong: torch.Tensor,
    a: torch.Tensor,
    d: torch.Tensor,
    nodes: torch.Tensor,
    log_weights: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each test taker's posterior over the quadrature nodes (n, K) and log marginal likelihood (n,) under
    the 2PL sigmoid(a theta + d): `right` = y w and `wrong` = (1 - y) w (n, J) for labels y with
    answered cells w, nodes with log prior weights (K,)."""
    z = nodes[:, None] * a + d  # (K, J)
    f = torch.nn.functional.logsigmoid
    joint = right @ f(z).T + wrong @ f(-z).T + log_weights  # (n, K)
    marginal = torch.logsumexp(joint, dim=1)
    return torch.exp(joint - marginal[:, None]), marginal


class PerQuestionIRT(Baseline):
    """The per-question IRT baseline for new models on known questions: a Rasch model (`kind="1pl"`) or
    a 2PL fitted on the labels of the split's trained models (`split.train` and `split.val`), then each held-out
    model's ability fitted from `split.onboard` with the items frozen (`onboard`). It predicts only
    questions the trained models answered. Learned: `irt_` (the fitted OnePL / TwoPL)."""

    def __init__(self, kind: str = "1pl", progress: bool = False):
        self.kind = kind
        self.progress = progress

    def fit(self, ds: Dataset, split) -> PerQuestionIRT:
        if self.kind not in ("1pl", "2pl"):
            raise ValueError(f"kind={self.kind!r}; expected '1pl' (Rasch) or '2pl'.")
        if split.train.shape != ds.labels.shape:
            raise ValueError(
                f"split masks have shape {split.train.shape}; the dataset's labels have "
                f"{ds.labels.shape}. Make the split from this dataset."
            )
        trained = np.flatnonzero(~np.isin(np.asarray(ds.models), list(split.held_out)))
        irt = (OnePL if self.kind == "1pl" else TwoPL)(progress=self.progress)
        known = (split.train | split.val)[trained] & ds.observed[trained]  # no checkpoint to pick: val is data
        self.irt_ = irt.fit(ds.subset(models=trained), known)
        if split.held_out:
            rows = ds.model_index(list(split.held_out))
            self.irt_.onboard(ds.subset(models=rows), split.onboard[rows])
        self.models_ = list(self.irt_.models_)
        return self

    def onboard(self, ds: Dataset, mask: np.ndarray | None = None, replace: bool = False) -> PerQuestionIRT:
        """Add (or, with `replace`, refit) the abilities of `ds.models`; see `_IRT.onboard`."""
        self._check_fitted()
        self.irt_.onboard(ds, mask, replace=replace)
        self.models_ = list(self.irt_.models_)
        return self

    def predict_proba(self, ds: Dataset) -> np.ndarray:
        self._check_fitted()
        return self.irt_.predict_proba(ds)


class OnePL(_IRT):
    """1PL: P = sigmoid(a (theta_i - b_j)) with one discrimination a > 0 shared by all items (fitted as a
    Rasch model), abilities on the same standardised scale as the 2PL's. Learned: as `TwoPL`, with
    `discrimination_` constant."""

    shared_discrimination = True


def icc(
    theta: np.ndarray | float,
    discrimination: float | np.ndarray,
    difficulty: float | np.ndarray,
    guessing: float | np.ndarray = 0.0,
) -> np.ndarray:
    """The item characteristic curve c + (1 - c) sigmoid(a (theta - b)), broadcast over its arguments:
    the 3PL with guessing floor c, the 2PL when c = 0 (the default)."""
    c = np.asarray(guessing, dtype=float)
    if np.any((c < 0) | (c >= 1)):
        raise ValueError(f"guessing={guessing}; a guessing floor must lie in [0, 1).")
    z = np.asarray(discrimination) * (np.asarray(theta, dtype=float) - np.asarray(difficulty))
    return c + (1 - c) * (1.0 / (1.0 + np.exp(-z)))


def sample_labels(probs: np.ndarray, mask: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
    """0/1 labels (n_models, n_items) drawn independently with the given probabilities; NaN outside `mask`."""
    probs = np.asarray(probs, dtype=float)
    labels = (np.random.default_rng(seed).random(probs.shape) < probs).astype(np.float32)
    if mask is not None:
        labels[~np.asarray(mask, dtype=bool)] = np.nan
    return labels


# ---------------------------------------------------------------------------------------------
# Classic IRT with known item parameters: information, abilities with standard errors, item
# standard errors, one 3PL item, the Rasch model by JML and by MML (EM), a small MIRT. These are the
# textbook algorithms (Lord 1980; Baker and Kim 2004; Bock and Aitkin 1981) the primer teaches; all
# are numpy, exact, and fast on the primer's matrices.


def item_information(
    theta: np.ndarray | float,
    discrimination: float | np.ndarray,
    difficulty: float | np.ndarray,
    guessing: float | np.ndarray = 0.0,
) -> np.ndarray:
    """Fisher information of a 3PL item, a^2 (P - c)^2 (1 - P) / ((1 - c)^2 P); with c = 0 the 2PL's
    a^2 P (1 - P). Broadcast like `icc`: theta (n, 1) and item arrays (m,) give (n, m)."""
    p = icc(theta, discrimination, difficulty, guessing)
    c = np.asarray(guessing, dtype=float)
    return np.asarray(discrimination, dtype=float) ** 2 * (p - c) ** 2 * (1 - p) / ((1 - c) ** 2 * p)


def _answers(labels: np.ndarray, discrimination: np.ndarray, intercept: np.ndarray):
    """Labels as (n, J) float64 with a 0/1 mask of answered cells, and the item arrays as (J,)."""
    y = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    a = np.asarray(discrimination, dtype=np.float64).reshape(-1)
    d = np.asarray(intercept, dtype=np.float64).reshape(-1)
    if not (y.shape[1] == len(a) == len(d)):
        raise ValueError(
            f"labels have {y.shape[1]} items per row but discrimination {len(a)} and "
            f"intercept {len(d)}; pass one parameter per item (column)."
        )
    if not (np.isfinite(a).all() and np.isfinite(d).all()):
        raise ValueError("discrimination and intercept must be finite; drop the items a fit left NaN.")
    answered = np.isfinite(y)
    if not np.isin(y[answered], (0.0, 1.0)).all():
        raise ValueError("labels must be 0, 1 or NaN (not answered).")
    return np.where(answered, y, 0.0), answered.astype(np.float64), a, d


def ability_loglik(
    theta: np.ndarray | float, labels: np.ndarray, discrimination: np.ndarray, intercept: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | tuple[float, float, float]:
    """Log-likelihood of each test taker's answers (rows of `labels`, NaN: not answered) at ability
    theta under the 2PL P = sigmoid(a theta + d), with its first and second derivatives in theta:
    l = sum y log P + (1 - y) log(1 - P),  l' = sum a (y - P),  l'' = -sum a^2 P (1 - P).
    One row in, floats out; n rows in, arrays (n,) out."""
    y, w, a, d = _answers(labels, discrimination, intercept)
    t = np.broadcast_to(np.asarray(theta, dtype=np.float64).reshape(-1), (len(y),))
    z = t[:, None] * a + d  # (n, J)
    p = 1.0 / (1.0 + np.exp(-z))
    ll = (w * (y * z - np.logaddexp(0.0, z))).sum(axis=1)  # y log P + (1 - y) log(1 - P), stably
    grad = (w * (y - p)) @ a
    hess = -(w * p * (1 - p)) @ a**2
    if np.ndim(labels) == 1:
        return float(ll[0]), float(grad[0]), float(hess[0])
    return ll, grad, hess


ABILITY_METHODS = ("ml", "map", "eap")


def _lbfgs(params: list[torch.Tensor], steps: int) -> torch.optim.LBFGS:
    """Full-batch L-BFGS over `params`, `steps` iterations a call, with a strong Wolfe line search; it
    stops on its iteration count alone (the caller judges convergence on the objective)."""
    return torch.optim.LBFGS(
        params,
        lr=1.0,
        max_iter=steps,
        history_size=50,
        line_search_fn="strong_wolfe",
        tolerance_grad=1e-12,
        tolerance_change=0.0,
    )


def estimate_ability(
    labels: np.ndarray,
    discrimination: np.ndarray,
    intercept: np.ndarray,
    method: str = "eap",
    prior_sd: float = 1.0,
    n_nodes: int = 61,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> pd.DataFrame:
    """Each test taker's ability from 2PL items with known parameters (P = sigmoid(a theta + d)), with
    its standard error; one row per row of `labels` (NaN: not answered).

    method="ml": the maximum of the likelihood by Newton steps; se = 1 / sqrt(test information at the
        estimate). A test taker whose likelihood keeps rising (all right or all wrong on rising items)
        has no finite estimate: an error names the rows.
    method="map": the maximum of the posterior under theta ~ N(0, prior_sd^2); se = 1 / sqrt(information
        + 1 / prior_sd^2), the posterior's curvature at its mode.
    method="eap": the posterior mean, and as se the posterior standard deviation, by Gauss-Hermite
        quadrature on `n_nodes` nodes. Finite for every pattern of answers.
    """
    if method not in ABILITY_METHODS:
        raise ValueError(f"method={method!r}; expected one of {ABILITY_METHODS}.")
    if not prior_sd > 0:
        raise ValueError(f"prior_sd={prior_sd}; expected a positive standard deviation.")
    y, w, a, d = _answers(labels, discrimination, intercept)
    if method == "eap":
        return _eap_ability(y, w, a, d, prior_sd, n_nodes)
    precision = 1.0 / prior_sd**2 if method == "map" else 0.0
    if method == "ml":
        # l' falls from l'(-inf) to l'(+inf); a finite maximum needs l'(-inf) > 0 > l'(+inf).
        rising, falling = np.clip(a, 0, None), np.clip(a, None, 0)
        top = (w * (y - 1)) @ rising + (w * y) @ falling  # l'(+inf)
        bottom = (w * y) @ rising + (w * (y - 1)) @ falling  # l'(-inf)
        bad = np.flatnonzero((top >= 0) | (bottom <= 0))
        if len(bad):
            raise ValueError(
                f"rows {bad[:10].tolist()} have no finite maximum-likelihood ability (their "
                "likelihood keeps rising, e.g. all answers right); use method='map' or 'eap'."
            )
    theta = np.zeros(len(y))
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] * a + d)))
        grad = (w * (y - p)) @ a - precision * theta
        hess = -(w * p * (1 - p)) @ a**2 - precision
        step = np.clip(grad / hess, -2.0, 2.0)  # concave: Newton, damped while far from the maximum
        theta -= step
        if np.abs(step).max() < tol:
            break
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] * a + d)))
    information = (w * p * (1 - p)) @ a**2 + precision
    return pd.DataFrame({"theta": theta, "se": 1.0 / np.sqrt(information)})


def _eap_ability(
    y: np.ndarray, w: np.ndarray, a: np.ndarray, d: np.ndarray, prior_sd: float, n_nodes: int
) -> pd.DataFrame:
    """`estimate_ability`'s "eap": each test taker's posterior mean and standard deviation under
    theta ~ N(0, prior_sd^2), by Gauss-Hermite quadrature on `n_nodes` nodes."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)  # weight exp(-x^2 / 2)
    nodes = prior_sd * nodes  # (K,) N(0, prior_sd^2) after normalising the weights
    z = nodes[:, None, None] * a + d  # (K, 1, J)
    log_like = (w * (y * z - np.logaddexp(0.0, z))).sum(axis=2)  # (K, n)
    log_post = log_like + np.log(weights / weights.sum())[:, None]
    post = np.exp(log_post - log_post.max(axis=0))
    post /= post.sum(axis=0)  # (K, n) posterior over the nodes
    mean = nodes @ post
    sd = np.sqrt(np.maximum((nodes**2) @ post - mean**2, 0.0))
    return pd.DataFrame({"theta": mean, "se": sd})


def item_standard_errors(
    labels: np.ndarray, ability: np.ndarray, discrimination: np.ndarray, intercept: np.ndarray
) -> pd.DataFrame:
    """Standard errors of each 2PL item's discrimination a_j, intercept d_j and difficulty b_j = -d_j / a_j,
    with the abilities taken as known (the joint-likelihood view): the inverse of the item's 2 x 2
    information sum_i P (1 - P) [[theta_i^2, theta_i], [theta_i, 1]] over the test takers who answered
    it, and b_j's by the delta method. They ignore the abilities' own error, so with few test takers
    they are too small. One row per item (column of `labels`)."""
    y, w, a, d = _answers(labels, discrimination, intercept)
    t = np.asarray(ability, dtype=np.float64).reshape(-1)
    if len(t) != len(y) or not np.isfinite(t).all():
        raise ValueError(f"ability has {len(t)} entries for {len(y)} rows of labels; pass one finite ability per row.")
    p = 1.0 / (1.0 + np.exp(-(t[:, None] * a + d)))
    v = w * p * (1 - p)  # (n, J)
    i_aa, i_ad, i_dd = (t**2) @ v, t @ v, v.sum(axis=0)  # the information matrix, entry by entry
    det = i_aa * i_dd - i_ad**2
    with np.errstate(divide="ignore", invalid="ignore"):
        var_a, var_d, cov_ad = i_dd / det, i_aa / det, -i_ad / det  # its inverse
        b = -d / a
        var_b = (b**2 * var_a + var_d + 2 * b * cov_ad) / a**2  # gradient (-b / a, -1 / a) of -d / a
    return pd.DataFrame({"discrimination": np.sqrt(var_a), "intercept": np.sqrt(var_d), "difficulty": np.sqrt(var_b)})


def fit_item_3pl(ability: np.ndarray, labels: np.ndarray, guessing: float | None = None) -> dict:
    """Maximum-likelihood 3PL parameters (a, b, c) of one item from answers `labels` (n,) of test takers
    with known abilities (n,); `guessing` fixes c (0: the 2PL), None fits it in [0, 0.95]. Returns
    a, b, c and the log-likelihood at the maximum (L-BFGS-B from three starts, the best kept)."""
    t = np.asarray(ability, dtype=np.float64).reshape(-1)
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    if len(t) != len(y) or not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"ability ({len(t)}) and labels ({len(y)}) must have one entry per test taker, labels 0 or 1.")
    if guessing is not None and not 0 <= guessing < 1:
        raise ValueError(f"guessing={guessing}; expected None (fit it) or a floor in [0, 1).")

    def nll(x: np.ndarray) -> float:
        c = x[2] if guessing is None else guessing
        p = np.clip(icc(t, x[0], x[1], c), 1e-12, 1 - 1e-12)
        return -float(np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)))

    bounds = [(-10.0, 10.0), (-10.0, 10.0)] + ([(0.0, 0.95)] if guessing is None else [])
    starts = [[1.0, 0.0, 0.1], [2.0, 0.5, 0.25], [0.5, -0.5, 0.0]]
    best = min(
        (optimize.minimize(nll, np.array(s[: len(bounds)]), method="L-BFGS-B", bounds=bounds) for s in starts),
        key=lambda r: r.fun,
    )
    c = float(best.x[2]) if guessing is None else float(guessing)
    return {"a": float(best.x[0]), "b": float(best.x[1]), "c": c, "loglik": -float(best.fun)}


def _complete_binary(labels: np.ndarray) -> np.ndarray:
    y = np.asarray(labels, dtype=np.float64)
    if y.ndim != 2 or not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(
            f"labels must be a complete 0/1 matrix (test takers, items); got shape {y.shape} "
            "with values outside {0, 1} or missing."
        )
    return y


def rasch_jml(labels: np.ndarray, tol: float = 1e-8, max_iter: int = 500) -> dict:
    """Joint maximum likelihood for the Rasch model P = sigmoid(theta_i - b_j): one Newton step for
    every ability, then for every difficulty, in turn, centring the difficulties (mean 0) to fix the
    scale. Returns theta, b and the iterations. Test takers with a perfect or zero score, and items
    everyone or no one answers, have no finite estimate: an error names them."""
    y = _complete_binary(labels)
    rows, cols = y.sum(axis=1), y.sum(axis=0)
    bad_rows = np.flatnonzero((rows == 0) | (rows == y.shape[1]))
    bad_cols = np.flatnonzero((cols == 0) | (cols == y.shape[0]))
    if len(bad_rows) or len(bad_cols):
        raise ValueError(
            f"test takers {bad_rows[:10].tolist()} and items {bad_cols[:10].tolist()} have "
            "extreme scores (all right or all wrong) and no finite JML estimate; drop them."
        )
    theta = np.log(rows / (y.shape[1] - rows))
    b = -np.log(cols / (y.shape[0] - cols))
    b -= b.mean()
    for it in range(1, max_iter + 1):  # noqa: B007 (returned after the loop)
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b)))
        theta_step = (rows - p.sum(axis=1)) / (p * (1 - p)).sum(axis=1)
        theta = theta + theta_step
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b)))
        b_step = (p.sum(axis=0) - cols) / (p * (1 - p)).sum(axis=0)
        b = b + b_step
        b -= b.mean()
        if max(np.abs(theta_step).max(), np.abs(b_step).max()) < tol:
            break
    return {"theta": theta, "b": b, "iterations": it}


def rasch_mml_em(labels: np.ndarray, n_nodes: int = 31, tol: float = 1e-8, max_iter: int = 1000) -> dict:
    """Marginal maximum likelihood for the Rasch model with theta ~ N(0, 1), by EM (Bock and Aitkin
    1981): E-step, each test taker's posterior over Gauss-Hermite nodes x_k; M-step, one Newton step
    per item on the expected counts n_k (test takers at node k) and r_jk (of them right on item j).
    Returns the difficulties b, each test taker's posterior mean ability (eap), the marginal
    log-likelihood after each E-step (loglik) and the iterations."""
    y = _complete_binary(labels)
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)  # weight exp(-x^2 / 2)
    log_w = np.log(weights / weights.sum())  # (K,) N(0, 1) quadrature weights
    cols = y.sum(axis=0)
    b = -np.log(np.clip(cols, 0.5, None) / np.clip(y.shape[0] - cols, 0.5, None))
    path = []
    for it in range(1, max_iter + 1):  # noqa: B007 (returned after the loop)
        z = nodes[:, None] - b[None, :]  # (K, J)
        log_like = y @ (-np.logaddexp(0.0, -z)).T + (1 - y) @ (-np.logaddexp(0.0, z)).T  # (N, K)
        joint = log_like + log_w[None, :]
        marginal = special.logsumexp(joint, axis=1)  # (N,)
        path.append(float(marginal.sum()))
        post = np.exp(joint - marginal[:, None])  # (N, K) E-step
        n_k = post.sum(axis=0)  # (K,)
        r_jk = post.T @ y  # (K, J)
        p = 1.0 / (1.0 + np.exp(-z))
        step = (n_k[:, None] * p - r_jk).sum(axis=0) / (n_k[:, None] * p * (1 - p)).sum(axis=0)
        b = b + step  # M-step: one Newton step per item
        if np.abs(step).max() < tol:
            break
    return {"b": b, "eap": post @ nodes, "loglik": np.array(path), "iterations": it}


def fit_mirt(
    labels: np.ndarray, mask: np.ndarray, dims: int, seed: int = 0, prior_sd: float = 2.0, max_iter: int = 2000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MAP fit of the compensatory multidimensional IRT P = sigmoid(<theta_i, a_j> + d_j) (Reckase 2009)
    with theta_i ~ N(0, I) and a_j, d_j ~ N(0, prior_sd^2), on the cells where `mask` is True
    (L-BFGS-B with the analytic gradient, from a small random start drawn with `seed`). Returns
    theta (n, dims), a (J, dims) and d (J,)."""
    y = np.asarray(labels, dtype=np.float64)
    m = np.asarray(mask, dtype=bool)
    if y.shape != m.shape or dims < 1:
        raise ValueError(f"labels {y.shape} and mask {m.shape} must match, and dims={dims} must be >= 1.")
    if not np.isin(y[m], (0.0, 1.0)).all():
        raise ValueError("labels under the mask must be 0 or 1.")
    n, j = y.shape
    y = np.where(m, y, 0.0)
    rng = np.random.default_rng(seed)
    x0 = np.concatenate([0.1 * rng.normal(size=(n + j) * dims), np.zeros(j)])

    def unpack(x: np.ndarray):
        return x[: n * dims].reshape(n, dims), x[n * dims : (n + j) * dims].reshape(j, dims), x[(n + j) * dims :]

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta, a, d = unpack(x)
        z = theta @ a.T + d  # (n, J)
        nll = np.sum(m * (np.logaddexp(0.0, z) - y * z))
        prior = 0.5 * (np.sum(theta**2) + (np.sum(a**2) + np.sum(d**2)) / prior_sd**2)
        g = m * (special.expit(z) - y)  # (n, J) d nll / d z
        grad = np.concatenate(
            [(g @ a + theta).ravel(), (g.T @ theta + a / prior_sd**2).ravel(), g.sum(axis=0) + d / prior_sd**2]
        )
        return nll + prior, grad

    result = optimize.minimize(objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    return unpack(result.x)
