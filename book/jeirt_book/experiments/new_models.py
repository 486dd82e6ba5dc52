"""Protocols for new models and new questions, measured against held-out truth.

The few-question estimate (`jeirt.tasks.evaluation`) and the per-question corrections
(`jeirt.questions`) are algorithms; this module holds the experiments that measure them, each run
by a page of the book and by a script of `benchmarks/`, so that both run the same protocol:

- **a new model, few questions**: which questions each selection rule asks at every budget k
  (`questions_asked`), the truth (`true_scores`), the scored rows (`score_rows`) and their summary
  (`summarize_few_item`), and what the answers' own noise allows (`expected_errors`);
- **a new model on known questions** (the other models answered every question): few-question
  scores with and without corrections beside the per-question Rasch model
  (`few_question_comparison`), and onboarding from a share of the answers beside the per-question
  Rasch and 2PL (`known_question_onboarding`);
- **a new question, few models**: a new benchmark's answers predicted from its texts plus n known
  models' answers (`question_onboarding_experiment`, with `jeirt.questions.refine_questions`);
- the held-out models of both efficient-evaluation pages (`metabench_held_out`) and the fit that
  learns the questions without onboarding the held-out models (`training_only`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tqdm import (
    tqdm,  # plain tqdm: tqdm.auto warns on stderr in kernels without ipywidgets
)

from jeirt.data import Dataset, load_dataset
from jeirt.estimator import JEIRT
from jeirt.fitcache import fit_cached, fit_many
from jeirt.metrics import score
from jeirt.model import sigmoid
from jeirt.parallel import side_by_side
from jeirt.questions import (
    QuestionCorrections,
    known_question_split,
    question_probabilities,
    refine_questions,
)
from jeirt.splits import Split, hold_out_models, split_by_question, subsample_items
from jeirt.tasks.evaluation import (
    OVERALL,
    PLAIN,
    SELECTION_RULES,
    Posterior,
    QuestionBank,
    adaptive_selection,
    estimate_scores,
    inclusion_probabilities,
    irt_estimates,
    plain_means,
    random_positions,
    select_questions,
)

SEEDED = ("random", "stratified", "kmeans")  # the rules that draw with a seed; the adaptive ones do not
# The rules whose order to the largest k serves every k: a random order's first k questions are a
# random sample of k, an adaptive order's are the adaptive run to k. Not so for the others.
NESTED = ("random", "adaptive", "adaptive-accuracy")


def training_only(split: Split) -> Split:
    """`split` without its onboarding part: the same training and validation labels (held-out models
    have none there), so `JEIRT.fit` learns the same questions and trained vectors, but does not then
    onboard the held-out models from `split.onboard` (on metabench, hundreds of them). The few-question
    protocols never read those vectors: each held-out model is fitted afresh from the k answers it is
    asked. The fitted model keeps the held-out names with untrained vectors: do not predict them with it.
    """
    return Split(split.train, split.val, split.test, split.name)


def metabench_held_out(n_held: int, n_train: int | None, seed: int) -> tuple[Dataset, list[str]]:
    """metabench with `n_held` of its models graded on every question drawn (with `seed`) to be held out,
    and `n_train` of the others (None: all of them) to train on; and the held-out names. Both
    efficient-evaluation pages draw the same ones."""
    meta = load_dataset("metabench")
    rng = np.random.default_rng(seed)
    complete = np.flatnonzero(meta.observed.all(axis=1))  # graded on every question
    if not 0 < n_held <= len(complete):
        raise ValueError(f"n_held={n_held}; metabench has {len(complete)} models graded on every question.")
    held_rows = rng.choice(complete, n_held, replace=False)
    rest = np.setdiff1d(np.arange(meta.n_models), held_rows)
    if n_train is not None:
        rest = rng.choice(rest, n_train, replace=False)
    held = [meta.models[i] for i in sorted(held_rows)]
    return meta.subset(models=np.sort(np.concatenate([rest, held_rows]))), held


# ---------------------------------------------------------------------------------------------------
# A new model, few questions


@dataclass(frozen=True)
class Asked:
    """The questions one rule asked every new model at one budget k."""

    asked: np.ndarray  # (n_new, n_items) bool
    sampled: np.ndarray | None  # (n_new, n_items) bool: the adaptive rules' random share; None otherwise
    posterior: Posterior | None  # the adaptive run's posterior at k, if one of its batches ended there
    inclusion: np.ndarray | None = None  # (n_new, n_items) `inclusion_probabilities` of the questions asked


def questions_asked(
    bank: QuestionBank, labels: np.ndarray, rule: str, ks: Sequence[int], seed: int = 0
) -> dict[int, Asked]:
    """k -> the questions `rule` asks each new model (rows of `labels`, NaN = not graded) at budget k.

    The rules in `NESTED` choose one order to the largest k and read every k as its prefix; the
    others choose afresh at each k. An adaptive run also hands over the posteriors it fitted where
    one of its batches ended, and its random share (`random_positions`): the sample its estimate
    checks itself on (`estimate_scores(sampled=...)`), and every k's inclusion probabilities
    (`inclusion_probabilities`, for `design_estimates`): the random and stratified rules' draws, the
    adaptive rules' random share (their other picks, and kmeans', count as picked by choice).
    """
    if rule not in SELECTION_RULES:
        raise ValueError(f"rule={rule!r}; expected one of {SELECTION_RULES}.")
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    ks = sorted(int(k) for k in ks)
    if not ks or ks[0] < 1:
        raise ValueError(f"ks={ks}; expected one or more positive budgets.")
    posteriors: dict[int, Posterior] = {}
    drawn = None
    if rule == "random":
        order = select_questions(bank, ks[-1], rule, labels=labels, seed=seed)
    elif rule in NESTED:
        order, posteriors = adaptive_selection(bank, ks[-1], labels, rule, seed=seed, keep=ks)
        drawn = random_positions(ks[-1])
    out = {}
    for k in ks:
        picks = order[:, :k] if rule in NESTED else select_questions(bank, k, rule, labels=labels, seed=seed)
        asked = _mask(picks, labels.shape)
        sampled = None if drawn is None else _mask(picks[:, drawn[:k]], labels.shape)
        random = asked if rule in ("random", "stratified") else np.zeros_like(asked) if sampled is None else sampled
        strata = bank.groups if rule == "stratified" else None
        inclusion = inclusion_probabilities(asked, random, ~np.isnan(labels), strata)
        out[k] = Asked(asked, sampled, posteriors.get(k), inclusion)
    return out


def _mask(picks: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """(n_new, n_items) bool, True at each row's positions `picks` (n_new, k)."""
    mask = np.zeros(shape, dtype=bool)
    np.put_along_axis(mask, picks, True, axis=1)
    return mask


def true_scores(bank: QuestionBank, labels: np.ndarray, models: Sequence[str]) -> pd.DataFrame:
    """(model, group) -> mean of all the model's labels there (NaN where it has none)."""
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    if len(models) != len(labels):
        raise ValueError(f"{len(models)} model names for {len(labels)} rows of labels; give one per row.")
    rows = []
    with np.errstate(invalid="ignore"):
        for i, m in enumerate(models):
            rows.append({"model": m, "group": OVERALL, "true": np.nanmean(labels[i])})
            rows += [
                {
                    "model": m,
                    "group": g,
                    "true": np.nanmean(labels[i, bank.groups == g])
                    if (~np.isnan(labels[i, bank.groups == g])).any()
                    else np.nan,
                }
                for g in bank.benchmarks
            ]
    return pd.DataFrame(rows).set_index(["model", "group"])


def score_rows(est: pd.DataFrame, truth: pd.DataFrame, rule: str, k: int, seed: int) -> list[dict]:
    """One row per model of an estimate (`estimate_scores`, `plain_means`, `irt_estimates`) against
    `true_scores`: overall error, per-benchmark mean absolute error, interval coverage."""
    table = est.join(truth, on=["model", "group"])
    table["abs_error"] = (table["estimate"] - table["true"]).abs()
    is_overall = table["group"] == OVERALL
    overall = table[is_overall].set_index("model")
    benches = table[~is_overall].groupby("model", sort=False)
    out = pd.DataFrame(
        {
            "rule": rule,
            "k": k,
            "seed": seed,
            "model": overall.index,
            "true": overall["true"].to_numpy(),
            "estimate": overall["estimate"].to_numpy(),
        }
    )
    out["error"] = out["estimate"] - out["true"]
    out["abs_error"] = out["error"].abs()
    out["bench_mae"] = benches["abs_error"].mean().reindex(overall.index).to_numpy()
    if "sd" in table:
        inside = ((table["lower"] <= table["true"]) & (table["true"] <= table["upper"])).astype(float)
        inside[table["lower"].isna() | table["true"].isna()] = np.nan  # no interval (draws=0) or no truth
        out["sd"] = overall["sd"].to_numpy()
        out["covered"] = inside[is_overall].to_numpy()
        out["bench_covered"] = (
            inside[~is_overall]
            .groupby(table.loc[~is_overall, "model"], sort=False)
            .mean()
            .reindex(overall.index)
            .to_numpy()
        )
    return out.to_dict("records")


def summarize_few_item(results: pd.DataFrame) -> pd.DataFrame:
    """Mean absolute error and mean error (bias) of the overall estimates and mean absolute error of the
    per-benchmark ones (over models and seeds), mean predicted sd, and the coverage of the intervals
    overall and per benchmark, per rule and k (`results`: rows of `score_rows`)."""
    if results.empty:
        raise ValueError("no results to summarise.")
    grouped = results.groupby(["rule", "k"], sort=False)
    table = grouped.agg(
        mae=("abs_error", "mean"), bias=("error", "mean"), bench_mae=("bench_mae", "mean"), runs=("abs_error", "size")
    )
    if "sd" in results:
        table["mean_sd"] = grouped["sd"].mean()
        table["coverage"] = grouped["covered"].mean()
        table["bench_coverage"] = grouped["bench_covered"].mean()
    return table.reset_index()


def expected_errors(bank: QuestionBank, labels: np.ndarray, ks: Sequence[int]) -> pd.DataFrame:
    """What the answers' own noise allows, per k: the expected absolute error of the plain mean of k
    random answers, and of a model-based estimate whose knowledge of the vector comes from the k
    answers alone (no prior).

    The plain mean of k of a model's n answers has variance a(1 - a)/k (1 - k/n) (a its accuracy).
    A model-based estimate has about mean p(1 - p)/k (1 - k/n): the Bernoulli noise of each asked
    answer, what p leaves unexplained, passes into the fitted vector (exactly so for a model with
    one ability; a prior lowers it, most for small k). p is taken from the posterior given all of
    a model's answers, the sharpest the model gets. The absolute error of a normal with standard
    deviation s is sqrt(2/pi) s on average; rows are means over models.
    """
    labels = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    graded = ~np.isnan(labels)
    post = bank.posterior(np.nan_to_num(labels), graded)
    p = sigmoid(post.mean @ bank.features.T - bank.offsets)  # (n_new, n_items), whitened Eq. (3)
    n = graded.sum(axis=1)
    noise = np.where(graded, p * (1 - p), 0).sum(axis=1) / n  # mean p(1 - p) per model
    acc = np.nanmean(labels, axis=1)
    rows = []
    for k in ks:
        fpc = np.clip(1 - k / n, 0, 1)
        rows.append(
            {
                "k": int(k),
                "plain mean": float(np.mean(np.sqrt(2 / np.pi * acc * (1 - acc) / k * fpc))),
                "model, answers only": float(np.mean(np.sqrt(2 / np.pi * noise / k * fpc))),
                "mean p(1-p)": float(noise.mean()),
                "a(1-a)": float((acc * (1 - acc)).mean()),
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------
# A new question, a few models


def question_onboarding_experiment(
    model: JEIRT,
    ds: Dataset,
    benchmark: str,
    ns: Sequence[int] = (0, 1, 3, 5, 10),
    question_prior_sds: Sequence[float] = (1.0,),
    whats: Sequence[str] = ("embedding",),
    seeds: Sequence[int] = (0,),
    progress: bool = True,
) -> pd.DataFrame:
    """How well a new benchmark's answers are predicted from its texts plus n known models' answers.

    `model` is a JEIRT fitted without `benchmark` (e.g. on `split_leave_benchmark_out`) that knows
    every model of `ds`. For each seed, a random order of the models is drawn; the first n answer
    every question of the benchmark, and the models after the first max(ns) are scored (the same
    ones for every n). Each question's text embedding is refined (`refine_questions`, prior sd =
    question_prior_sd x the mean text-embedding norm / sqrt(d)) and the scored models' answers predicted.
    The row method "known mean" predicts every scored model's answer by the n known models' share
    of right answers to the question, (right + 1/2) / (n + 1) (no geometry, no text). Returns one
    row per (method, question_prior_sd, n, seed): accuracy, log_loss, auc over the scored (model,
    question) pairs, and acc_mae, the mean absolute error of the scored models' predicted accuracy
    on the benchmark.
    """
    if benchmark not in ds.benchmarks:
        raise ValueError(f"benchmark={benchmark!r} is not in {ds.name!r}; its benchmarks are {ds.benchmarks}.")
    ns = sorted(int(n) for n in ns)
    if ns[0] < 0 or ns[-1] >= ds.n_models:
        raise ValueError(f"ns={ns}; expected counts between 0 and {ds.n_models - 1} (models of {ds.name!r}).")
    cols = np.flatnonzero(ds.items["benchmark"].to_numpy() == benchmark)
    sub = ds.subset(items=cols)
    E0 = model.question_embeddings(sub).astype(np.float64)  # (n_q, d)
    V = model.model_vectors_[model.model_index(ds.models)].astype(np.float64)  # (n_models, d)
    typical = np.linalg.norm(E0, axis=1).mean() / np.sqrt(E0.shape[1])
    labels, observed = sub.labels, sub.observed
    runs = [(what, s) for what in whats for s in question_prior_sds]
    bar = tqdm(
        total=len(seeds) * len(ns) * (len(runs) + 1), desc=f"onboard {benchmark} questions", disable=not progress
    )
    rows = []
    for seed in seeds:
        order = np.random.default_rng(seed).permutation(ds.n_models)
        scored = np.zeros((ds.n_models, 1), dtype=bool)
        scored[order[ns[-1] :]] = True
        test = scored & observed  # (n_models, n_q)
        truth = np.array([labels[m, test[m]].mean() for m in range(ds.n_models) if test[m].any()])
        for n in ns:
            known = np.zeros_like(observed)
            known[order[:n]] = observed[order[:n]]
            preds = _new_question_predictions(E0, V, labels, known, n, runs, typical)
            for (what, s), probs in preds.items():
                run = {"method": what, "question_prior_sd": s, "n": n, "seed": seed}
                rows.append(run | _scored_pairs(probs, labels, test, truth))
                bar.update()
    bar.close()
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------
# New models on known questions: per-question corrections and the per-question IRT baseline

KNOWN_METHODS = ("plain mean", "je-irt", "je-irt + corrections", "rasch (per question)", "2pl (per question)")


def _new_question_predictions(
    E0: np.ndarray,
    V: np.ndarray,
    labels: np.ndarray,
    known: np.ndarray,
    n: int,
    runs: Sequence[tuple[str, float]],
    typical: float,
) -> dict[tuple[str, float], np.ndarray]:
    """`question_onboarding_experiment`'s predictions (n_models, n_q) from the answers of `n` known models
    (`known`): each run's (what, prior sd) refinement of the text embeddings `E0`, and with n > 0 the
    "known mean" (the known models' share right)."""
    preds = {}
    for what, s in runs:
        E = refine_questions(E0, V, labels, known, s * typical, what=what) if n else E0
        preds[(what, s)] = question_probabilities(E, V)
    if n:  # (right + 1/2) / (answers + 1): the share right, kept off 0 and 1 (Jeffreys)
        right = np.where(known, labels, 0.0).sum(axis=0)
        share = (right + 0.5) / (known.sum(axis=0) + 1.0)  # (n_q,)
        preds[("known mean", np.nan)] = np.broadcast_to(share, labels.shape)
    return preds


def _scored_pairs(probs: np.ndarray, labels: np.ndarray, test: np.ndarray, truth: np.ndarray) -> dict:
    """Accuracy, log loss and AUC of `probs` on the `test` pairs, and acc_mae: the mean absolute error of
    each scored model's predicted accuracy against its true one (`truth`)."""
    pred_acc = np.array([probs[m, test[m]].mean() for m in range(len(probs)) if test[m].any()])
    scores = score(probs[test], labels[test])
    return {
        "accuracy": scores["accuracy"],
        "log_loss": scores["log_loss"],
        "auc": scores["auc"],
        "acc_mae": float(np.abs(pred_acc - truth).mean()),
        "pairs": scores["n"],
    }


def known_question_onboarding(
    ds: Dataset,
    make_model: Callable[[int], JEIRT],
    held_out: int,
    fractions: Sequence[float] = (0.01, 0.1, 1.0),
    seeds: Sequence[int] = (0,),
    joint: bool = True,
    progress: bool = True,
) -> pd.DataFrame:
    """New LLMs onboarded onto questions the other LLMs answered, against the per-question IRT baseline.

    Per seed s: the question split (seed s), `held_out` LLMs drawn with seed s leave training and the
    others answer every question outside validation (`known_question_split`). `make_model(s)` (a
    JEIRT) is fitted once; each held-out LLM is onboarded from each `fraction` of its training
    answers (`subsample_items`, seed s) and scored on its test answers, by: the plain mean of its
    answers; JE-IRT as in the paper (questions from their text); the same network with per-question
    corrections from the trained LLMs' answers (`fit_corrections`); and a Rasch / 2PL fitted on the
    same known answers (`PerQuestionIRT`). With `joint`, JE-IRT is also trained with every LLM (the
    held-out ones on their training answers), with and without corrections ("All" rows).

    Returns one row per seed, method and setting (the share as "10%", or "All"): accuracy, auc,
    log_loss over the held-out LLMs' test answers, n_test, answers_per_model, seconds (onboarding all
    of them; for All, the fit's training time) and seconds_per_model.
    """
    from jeirt.baselines.irt import PerQuestionIRT

    helds, knowns, boths, fits = _known_question_fits(ds, make_model, held_out, seeds, joint)
    rows = []
    for seed in tqdm([int(seed) for seed in seeds], desc="known-question onboarding", disable=not progress):
        held, known = helds[seed], knowns[seed]
        new = _KnownQuestionModels(ds, held, known)
        model = fits[seed, known.name]
        start = time.perf_counter()
        corrections = model.fit_corrections(ds.subset(models=new.trained), known.train[new.trained]).corrections_
        assert corrections is not None
        correction_seconds = time.perf_counter() - start
        irts = {kind: PerQuestionIRT(kind).fit(ds, known) for kind in ("1pl", "2pl")}
        for fraction in fractions:
            mask = subsample_items(new.answers, fraction, seed)
            rows += new.onboarded_rows(seed, f"{fraction * 100:g}%", mask, model, corrections, irts)
        if joint:
            full = fits[seed, boths[seed].name]
            rows.append(new.row(seed, "je-irt", "All", full.predict_proba(new.data), full.history_.seconds))
            full.fit_corrections(ds, boths[seed].train)
            extra = {"offset_scale": corrections.offset_scale, "shift_scale": corrections.shift_scale}
            rows.append(
                new.row(
                    seed,
                    "je-irt + corrections",
                    "All",
                    full.predict_proba(new.data),
                    full.history_.seconds,
                    correction_seconds=correction_seconds,
                    **extra,
                )
            )
    return pd.DataFrame(rows)


def _known_question_fits(
    ds: Dataset, make_model: Callable[[int], JEIRT], held_out: int, seeds: Sequence[int], joint: bool
) -> tuple[dict, dict, dict, dict]:
    """`known_question_onboarding`'s splits and fits, per seed: the held-out split, the known-question
    split, the split that trains every LLM together, and the fitted JE-IRTs by (seed, split name)."""
    helds = {int(seed): hold_out_models(ds, split_by_question(ds, seed=seed), held_out, seed) for seed in seeds}
    knowns = {seed: known_question_split(held) for seed, held in helds.items()}
    boths = {  # every LLM trained together, the held-out ones on their training answers
        seed: Split(known.train | _onboarding_answers(helds[seed]), known.val, known.test, f"{known.name}-joint")
        for seed, known in knowns.items()
    }
    # Every JE-IRT fit (per seed; with `joint` also the one with every LLM) is independent: made side
    # by side on the cores and kept (`jeirt.fitcache.fit_many`); `seconds` of a fit is its training time.
    # The known-question fit is `training_only` (the held-out LLMs are onboarded at each share): the
    # same fit as `few_question_comparison`'s, which reads it from the cache.
    jobs = [(seed, training_only(knowns[seed])) for seed in helds] + (
        [(seed, boths[seed]) for seed in helds] if joint else []
    )
    fitted = fit_many([make_model(seed) for seed, _ in jobs], ds, [split for _, split in jobs])
    fits = {(seed, split.name): fit for (seed, split), fit in zip(jobs, fitted)}
    return helds, knowns, boths, fits


def _onboarding_answers(held: Split) -> np.ndarray:
    """The held-out LLMs' answers onboarding may use (n_models, n_items), which `hold_out_models` sets."""
    if held.onboard is None:
        raise ValueError(f"split {held.name!r} holds no LLM out; make it with jeirt.splits.hold_out_models.")
    return held.onboard


class _KnownQuestionModels:
    """One seed's held-out LLMs of `known_question_onboarding`: their data, test answers and the answers
    they are onboarded from, and the scored rows of each method."""

    def __init__(self, ds: Dataset, held: Split, known: Split):
        self.names = list(held.held_out)
        idx = ds.model_index(self.names)
        self.data = ds.subset(models=self.names)
        self.test_mask, self.labels = known.test[idx], np.nan_to_num(self.data.labels)
        self.answers = _onboarding_answers(held)[idx]  # (n_new, n_items) their training answers
        self.trained = np.flatnonzero(~np.isin(np.asarray(ds.models), self.names))  # the other LLMs' rows
        self.answers_per_model = float(self.answers.sum(axis=1).mean())

    def row(self, seed: int, method: str, setting: str, probs: np.ndarray, seconds: float, **extra) -> dict:
        """One method's scores on the held-out LLMs' test answers."""
        s = score(probs[self.test_mask], self.labels[self.test_mask])
        return {
            "seed": int(seed),
            "method": method,
            "setting": setting,
            "accuracy": s["accuracy"],
            "auc": s["auc"],
            "log_loss": s["log_loss"],
            "n_test": int(self.test_mask.sum()),
            "answers_per_model": self.answers_per_model,
            "seconds": seconds,
            "seconds_per_model": seconds / len(self.names),
            **extra,
        }

    def onboarded_rows(
        self, seed: int, setting: str, mask: np.ndarray, model: JEIRT, corrections: QuestionCorrections, irts: dict
    ) -> list[dict]:
        """Every method onboarded from the answers under `mask`: the plain mean, JE-IRT without and with
        `corrections`, and each per-question IRT of `irts`."""
        answers = float(mask.sum(axis=1).mean())
        start = time.perf_counter()
        mean = (self.labels * mask).sum(axis=1) / mask.sum(axis=1)
        plain = np.broadcast_to(mean[:, None], self.labels.shape)
        rows = [self.row(seed, "plain mean", setting, plain, time.perf_counter() - start)]
        for method, corr in (("je-irt", None), ("je-irt + corrections", corrections)):
            model.corrections_ = corr
            start = time.perf_counter()
            model.onboard(self.data, mask, replace=True)
            seconds = time.perf_counter() - start
            probs = model.predict_proba(self.data)
            rows.append(self.row(seed, method, setting, probs, seconds, prior_width=model.onboard_prior_width_))
        for kind, irt in irts.items():
            start = time.perf_counter()
            irt.onboard(self.data, mask, replace=True)
            seconds = time.perf_counter() - start
            method = f"{'rasch' if kind == '1pl' else '2pl'} (per question)"
            rows.append(self.row(seed, method, setting, irt.predict_proba(self.data), seconds))
        for r in rows:
            r["answers_per_model"] = answers
        return rows


def known_question_table(runs: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """`metric` (mean ± sd over seeds, x 100) per method (rows) and setting (columns) of
    `known_question_onboarding`'s rows, and the onboarding seconds per new LLM at the largest share."""
    if metric not in runs:
        raise ValueError(f"metric={metric!r}; expected a column of the runs: accuracy, auc or log_loss.")
    settings = list(pd.unique(runs["setting"]))
    grouped = runs.groupby(["method", "setting"], sort=False)[metric]
    mean, sd = grouped.mean().unstack("setting"), grouped.std(ddof=1).unstack("setting")
    methods = [m for m in KNOWN_METHODS if m in mean.index]

    def cell(m: float, s: float) -> str:
        return "–" if np.isnan(m) else f"{100 * m:.1f}" if np.isnan(s) else f"{100 * m:.1f} ± {100 * s:.1f}"

    table = pd.DataFrame({c: [cell(mean.at[m, c], sd.at[m, c]) for m in methods] for c in settings}, index=methods)
    last = [s for s in settings if s != "All"][-1]
    per_model = runs[runs["setting"] == last].groupby("method")["seconds_per_model"].mean()
    table[f"s / model ({last})"] = [f"{per_model.get(m, np.nan):.3f}" for m in methods]
    return table.rename_axis(metric)


# Few-question scores on known questions: corrections and the per-question IRT baseline
FEW_METHODS = ("plain mean", "je-irt", "je-irt + corrections", "rasch (per question)")


def few_question_comparison(
    ds: Dataset | Sequence[Dataset],
    make_model: Callable[[int], JEIRT],
    held_out: int | Sequence[int],
    ks: Sequence[int] = (50, 100, 300),
    seeds: Sequence[int] = (0,),
    n_models: int | None = None,
    draws: int = 200,
    progress: bool = True,
    n_jobs: int = 1,
) -> pd.DataFrame:
    """Few-question scores of new LLMs on questions the other LLMs answered, with the baselines.

    Per seed s: LLMs with at least 2 max(k) graded answers (a seeded sample of `n_models` of them, if
    given), the question split (seed s), `held_out` LLMs drawn with seed s leave training and the others
    answer every question but the validation ones (`known_question_split`). Each held-out LLM is asked
    k of its graded questions at random, its own draw (one order per LLM, read as prefixes for every
    k), and its accuracy on all of them, overall and per benchmark, is estimated by the plain mean of
    the k answers; `estimate_scores` with JE-IRT as in the paper; the same with per-question
    corrections (`fit_corrections` from the trained LLMs' answers); and `irt_estimates` with a Rasch
    model fitted on the same known answers. Returns one row per seed, method, k and LLM: true,
    estimate, error, abs_error, bench_mae, covered and bench_covered (90% intervals; NaN without one).
    Several datasets (a list, with a list of `held_out`, one each) run as one protocol, dataset by
    dataset. The (dataset, seed) runs are independent: n_jobs > 1 runs them in that many worker
    processes (`jeirt.parallel.side_by_side`), the largest dataset's first (the same rows, in the same
    order).
    """
    if n_jobs < 1:
        raise ValueError(f"n_jobs={n_jobs}; expected a positive number of worker processes.")
    datasets = [ds] if isinstance(ds, Dataset) else list(ds)
    helds = [held_out] * len(datasets) if isinstance(held_out, (int, np.integer)) else list(held_out)
    if len(helds) != len(datasets):
        raise ValueError(f"{len(helds)} held_out numbers for {len(datasets)} datasets; give one each.")
    runs = [(d, make_model, h, ks, n_models, draws, s) for d, h in zip(datasets, helds) for s in seeds]
    if n_jobs > 1:
        parts = side_by_side(_few_question_seed, runs, n_jobs, longest_first=[run[0].labels.size for run in runs])
    else:
        parts = [_few_question_seed(*run) for run in tqdm(runs, desc="few-question runs", disable=not progress)]
    return pd.concat([f for part in parts for f in part], ignore_index=True).rename(columns={"rule": "method"})


def _few_question_seed(
    ds: Dataset,
    make_model: Callable[[int], JEIRT],
    held_out: int,
    ks: Sequence[int],
    n_models: int | None,
    draws: int,
    seed: int,
) -> list[pd.DataFrame]:
    """The rows of `few_question_comparison` for one seed, one frame per (k, method)."""
    from jeirt.baselines.irt import OnePL

    frames = []
    eligible = np.flatnonzero(ds.observed.sum(axis=1) >= 2 * max(ks))
    sub = ds.subset(models=eligible)
    if n_models is not None and n_models < len(eligible):
        sub = sub.subset(models=np.sort(np.random.default_rng(seed).choice(len(eligible), n_models, replace=False)))
    split = known_question_split(hold_out_models(sub, split_by_question(sub, seed=seed), held_out, seed))
    names = list(split.held_out)
    trained = [m for m in sub.models if m not in names]
    rows = sub.model_index(trained)
    known = (split.train | split.val)[rows] & sub.observed[rows]
    new = sub.subset(models=names)
    labels = new.labels.astype(np.float64)
    graded = ~np.isnan(labels)
    # Held-out vectors unused: not onboarded. The same fit as `known_question_onboarding`'s: from the cache.
    model = fit_cached(make_model(int(seed)), sub, training_only(split))
    banks = {"je-irt": QuestionBank.from_model(model, sub, prior_models=trained)}
    model.fit_corrections(sub.subset(models=rows), known)
    banks["je-irt + corrections"] = QuestionBank.from_model(model, sub, prior_models=trained)
    irt = OnePL().fit(sub.subset(models=rows), known)
    truth = true_scores(banks["je-irt"], labels, names)
    for k, q in questions_asked(banks["je-irt"], labels, "random", ks, seed).items():  # a draw per LLM
        out = [(PLAIN, plain_means(banks["je-irt"], labels, q.asked, names))]
        out += [
            (m, estimate_scores(b, labels, q.asked, targets=graded, draws=draws, seed=seed, models=names))
            for m, b in banks.items()
        ]
        out.append(("rasch (per question)", irt_estimates(irt, new, q.asked)))
        for method, est in out:
            frames.append(pd.DataFrame(score_rows(est, truth, method, k, seed)).assign(dataset=ds.name))
    return frames


def few_question_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, method and k of `few_question_comparison`'s rows: MAE and mean error of the overall
    estimate, per-benchmark MAE, and the coverage of the 90% intervals overall and per benchmark
    (methods with an interval)."""
    grouped = runs.groupby(["dataset", "method", "k"], sort=False)
    table = grouped.agg(
        mae=("abs_error", "mean"),
        bias=("error", "mean"),
        bench_mae=("bench_mae", "mean"),
        estimates=("abs_error", "size"),
    )
    if "covered" in runs:
        table["coverage"] = grouped["covered"].mean()
        table["bench_coverage"] = grouped["bench_covered"].mean()
    return table.reset_index()
