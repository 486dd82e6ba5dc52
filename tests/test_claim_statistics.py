"""The statistics behind issue 38's claim rows, each on planted data where the claim is true, where it
is false and where it is noise: density peaks under resampling, a benchmark's dispersion and isolation
against the others, the untrained N(0, 1) floor of the model vectors' spread, maps across fits, the
encoders' rank curves, per-question leave-out drops and the cross-fitted folds, Table 5's asymmetries
beside a random partition, Sec. 3.2's per-model gains without the top models, and onboarding's capped
validation answers and prior-mean floor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jeirt.analysis import geometry, taxonomy
from jeirt.estimator import JEIRT
from jeirt.simulate import simulate
from jeirt.splits import split_by_question
from jeirt_book.experiments import dimension, ood
from jeirt_book.experiments import onboarding as onb


def directions(centres: dict[str, tuple[np.ndarray, float]], n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`n` rows per benchmark around its centre with noise of the given scale (rows, benchmark names)."""
    rng = np.random.default_rng(seed)
    rows, names = [], []
    for name, (centre, scale) in centres.items():
        rows.append(centre + scale * rng.standard_normal((n, len(centre))))
        names += [name] * n
    return np.vstack(rows), np.array(names)


E = np.eye(8)


def test_peak_counts_see_two_modes_and_one():
    rng = np.random.default_rng(0)
    two = np.r_[rng.normal(0.2, 0.05, 500), rng.normal(0.8, 0.05, 500)]
    one = rng.normal(0.5, 0.1, 1000)
    assert (geometry.peak_counts(two, 30, seed=1) >= 2).all()
    assert (geometry.peak_counts(one, 30, seed=1) == 1).all()
    few = geometry.peak_counts(rng.normal(0.5, 0.1, 12), 30, seed=1)
    assert few.shape == (31,)
    with pytest.raises(ValueError, match="n_boot=0"):
        geometry.peak_counts(one, 0)


def test_benchmark_directions_by_construction():
    x, g = directions({"tight": (E[0] + E[1], 0.05), "wide": (E[1], 0.6), "apart": (-E[0], 0.05)}, 200)
    table = geometry.benchmark_directions(x, g)
    assert list(table.index) == ["apart", "tight", "wide"]
    assert table["questions"].tolist() == [200, 200, 200]
    assert table.loc["wide", "own cosine"] < table.loc["tight", "own cosine"]
    assert table.loc["wide", "negative share"] > 0 == table.loc["tight", "negative share"]
    assert table["alignment"].idxmin() == "apart" and table.loc["apart", "alignment"] < 0


@pytest.mark.parametrize(
    "centres, sign",
    [
        ({"target": (E[0], 0.8), "b": (E[1], 0.1), "c": (E[2], 0.1)}, +1),  # the target is most dispersed
        ({"target": (E[0], 0.1), "b": (E[1], 0.8), "c": (E[2], 0.1)}, -1),  # another one is
        ({"target": (E[0], 0.3), "b": (E[1], 0.3), "c": (E[2], 0.3)}, 0),  # all alike: noise
    ],
)
def test_extreme_gap_true_false_and_noise(centres, sign):
    x, g = directions(centres, 150, seed=3)
    out = geometry.extreme_gap(x, g, "target", n_boot=50, seed=0)
    z = out["gap"] / out["se"]
    if sign > 0:
        assert z > 2 and out["rank"] == 1
    elif sign < 0:
        assert z < -2 and out["rank"] > 1
    else:
        assert abs(out["gap"]) < 4 * out["se"] + 0.02  # no separation beyond its own spread
    assert out["benchmarks"] == 3
    median = geometry.extreme_gap(x, g, "target", n_boot=50, seed=0, versus="median")
    assert median["gap"] >= out["gap"]  # the median of the others is at least their lowest
    with pytest.raises(ValueError, match="versus="):
        geometry.extreme_gap(x, g, "target", versus="mean")
    with pytest.raises(ValueError, match="target='nope'"):
        geometry.extreme_gap(x, g, "nope")
    with pytest.raises(ValueError, match="column='own sd'"):
        geometry.extreme_gap(x, g, "target", "own sd")
    # the bootstrap's own columns, computed without pandas, are those of the benchmark table
    table = geometry.benchmark_directions(x, g)
    for column, versus in (("own cosine", "lowest"), ("alignment", "median")):
        values = table[column]
        others = values.drop("target")
        gap = (others.min() if versus == "lowest" else others.median()) - values["target"]
        assert geometry.extreme_gap(x, g, "target", column, n_boot=2, versus=versus)["gap"] == pytest.approx(gap)


def test_untrained_floor_is_near_full_rank_and_pc1_small():
    floor = geometry.untrained_floor(200, 16, draws=5, seed=0)
    assert 12 < floor["erank"] <= 16 and floor["erank sd"] > 0
    assert floor["pc1"] < 0.2
    with pytest.raises(ValueError, match="draws=1"):
        geometry.untrained_floor(10, 4, draws=1)


def test_map_agreement_same_rotated_and_unrelated():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((30, 6))
    rotation = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    same = geometry.map_agreement(a, a @ rotation, n_perm=50)
    assert same["agreement"] == pytest.approx(1.0)
    assert same["agreement"] > same["null mean"] + 5 * same["null sd"]
    other = geometry.map_agreement(a, rng.standard_normal((30, 9)), n_perm=50)
    assert abs(other["agreement"] - other["null mean"]) < 4 * other["null sd"]
    with pytest.raises(ValueError, match="same models"):
        geometry.map_agreement(a, a[:10])


def test_rank_alignment_gap_and_se():
    runs = pd.DataFrame(
        [
            {"encoder": e, "d": d, "seed": s, "rank": d / 2 * (1.0 if e == "a" else 0.5) + s}
            for e in ("a", "b")
            for d in (8, 16)
            for s in (0, 1)
        ]
    )
    out = geometry.rank_alignment(runs)
    # d = 8: a = 4.5, b = 2.5 -> gap 2 / 3.5
    assert out.loc[8, "relative gap"] == pytest.approx(2 / 3.5)
    assert out.loc[8, "se"] == pytest.approx(np.sqrt(0.5 / 2 + 0.5 / 2) / 3.5)
    with pytest.raises(ValueError, match="exactly two"):
        geometry.rank_alignment(runs.assign(encoder="a"))
    one = runs[runs["seed"] == 0].drop(columns="seed").assign(se=0.3)
    by_se = geometry.rank_alignment(one)  # d = 8: a = 4, b = 2
    assert by_se.loc[8, "relative gap"] == pytest.approx(2 / 3)
    assert by_se.loc[8, "se"] == pytest.approx(np.sqrt(0.09 + 0.09) / 3)
    with pytest.raises(ValueError, match="se or seed"):
        geometry.rank_alignment(one.drop(columns="se"))


def test_rank_se_shrinks_with_more_models():
    rng = np.random.default_rng(0)
    few, many = rng.standard_normal((20, 8)), rng.standard_normal((2000, 8))
    assert geometry.rank_se(many, 50) < geometry.rank_se(few, 50)


@pytest.fixture(scope="module")
def sim():
    ds, _ = simulate(n_models=12, n_items=240, feature_dim=8, d=4, n_benchmarks=3, seed=1)
    return ds, split_by_question(ds, seed=0)


def test_question_drops_by_hand():
    run = {
        "labels": np.array([1.0, 0.0, 1.0, 1.0]),
        "all": np.array([0.9, 0.1, 0.8, 0.7]),  # all right
        "leave-out": np.array([0.2, 0.1, 0.8, 0.3]),  # wrong on pairs 0 and 3
        "question": np.array([5, 5, 7, 7]),
    }
    table = ood.question_drops({"b": run})
    assert table.loc["b", "drop"] == pytest.approx(50.0)
    assert table.loc["b", "questions"] == 2
    assert table.loc["b", "se"] == pytest.approx(0.0)  # each question drops 50 points
    other = run | {"leave-out": np.array([0.9, 0.1, 0.2, 0.7]), "question": np.array([1, 1, 5, 5])}
    full = run | {"base": run["all"], "questions": 2, "best epoch": 1}
    t3 = ood.left_out_table({"b": full, "c": other | {"base": run["all"], "questions": 2, "best epoch": 1}})
    assert t3.loc["b", "diff"] == pytest.approx(-0.5) and t3.loc["b", "diff se"] == pytest.approx(0.0)
    # pooled: four questions (item 5 of b and item 5 of c are different questions), drops 0.5, 0.5, 0, 0.5
    assert t3.loc["overall", "diff se"] == pytest.approx(np.std([0.5, 0.5, 0.0, 0.5], ddof=1) / 2)


def test_fold_splits_test_every_question_of_the_benchmark_once(sim):
    ds, _ = sim
    bench = ds.benchmarks[0]
    in_bench = ds.items["benchmark"].to_numpy() == bench
    tested = np.zeros(ds.n_items, dtype=int)
    for k in range(4):
        s = ood.fold_split(ds, bench, k, folds=4, seed=0)
        cols = s.test.any(axis=0)
        tested += cols & in_bench
        assert not (s.train | s.val)[:, cols & in_bench].any()
        assert s.train[:, in_bench].any()  # it trains on the other folds
    assert (tested[in_bench] == 1).all()
    with pytest.raises(ValueError, match="fold=4"):
        ood.fold_split(ds, bench, 4, folds=4)
    # folds of every question: each question tested once, never trained on in its fold
    tested = np.zeros(ds.n_items, dtype=int)
    for k in range(3):
        s = ood.fold_split(ds, None, k, folds=3, seed=0)
        cols = s.test.any(axis=0)
        tested += cols
        assert not (s.train | s.val)[:, cols].any()
    assert (tested == 1).all()


def test_cross_fitted_runs_score_every_question(sim, one_thread):
    ds, _ = sim
    benches = ds.benchmarks[:2]
    make = lambda: JEIRT(d=4, training={"max_epochs": 2}, random_state=0, progress=False)  # noqa: E731
    runs = ood.cross_fitted_runs(ds, make, benches, folds=3, seed=0)
    table = ood.question_drops(runs)
    for bench in benches:
        assert runs[bench]["questions"] == (ds.items["benchmark"] == bench).sum()
        assert table.loc[bench, "questions"] == runs[bench]["questions"] and np.isfinite(table.loc[bench, "se"])
    with pytest.raises(ValueError, match="benchmarks="):
        ood.cross_fitted_runs(ds, make, ["nope"], folds=3)


def test_taxonomy_labels_keep_mmlu_only_where_it_has_subjects(sim):
    ds, _ = sim
    items = ds.items.copy()
    items["benchmark"] = np.where(np.arange(ds.n_items) < 100, "mmlu", "gpqa")
    items["subject"] = np.where(np.arange(ds.n_items) % 2 == 0, "algebra", "main_zeroshot")
    from dataclasses import replace

    keep, labels, column = taxonomy.taxonomy_labels(replace(ds, items=items))
    assert column == "subject" and (keep < 100).all() and len(keep) == 100


@pytest.mark.parametrize(
    "gaps, verdict",
    [
        (np.r_[np.full(28, 1.0), np.full(5, 1.2)] + np.linspace(-0.3, 0.3, 33), "broad"),
        (np.r_[np.full(28, 0.0), np.full(5, 4.0)] + np.linspace(-0.1, 0.1, 33), "outliers"),
    ],
)
def test_gain_spread_broad_gain_and_outlier_gain(gaps, verdict):
    out = dimension.gain_spread(pd.Series(gaps), drop=0.15)
    assert out["mean"] > 2 * out["se"]
    kept = out["mean without the top"] / out["se without the top"]
    assert (kept > 2) if verdict == "broad" else (abs(kept) < 2)
    assert out["dropped"] == 5
    with pytest.raises(ValueError, match="drop="):
        dimension.gain_spread(pd.Series(gaps), drop=0.6)


def test_capped_validation_counts():
    validation = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0]], dtype=bool)
    mask = np.array([[0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 0, 0]], dtype=bool)
    out = onb.capped_validation(validation, mask, seed=0)
    assert out.sum(axis=1).tolist() == [2, 1] and not (out & ~validation).any()
    with pytest.raises(ValueError, match="validation has shape"):
        onb.capped_validation(validation[:1], mask)


def test_prior_mean_floor_is_one_vector_for_all(sim, one_thread):
    ds, split = sim
    new = onb.new_models(ds, split, 3, seed=0)
    model = JEIRT(d=4, training={"max_epochs": 2}, random_state=0, progress=False).fit(ds, new.split)
    floor = onb.prior_mean_scores(model, new, setting="0 answers")
    rows = [list(model.models_).index(m) for m in new.names]
    vectors = model.model_vectors_[rows]
    np.testing.assert_allclose(vectors, np.broadcast_to(vectors.mean(axis=0), vectors.shape), atol=1e-3)
    assert (floor["items"] == 0).all() and len(floor) == 3


def test_paired_table_by_hand():
    from jeirt_book import onboarding

    curve = pd.DataFrame(
        {
            "seed": [0] * 6,
            "model": ["a", "b", "c"] * 2,
            "setting": ["1%"] * 3 + ["0 answers"] * 3,
            "accuracy": [0.6, 0.7, 0.8, 0.5, 0.6, 0.8],
        }
    )
    table = onboarding.paired_table(curve, ["1%"], ["0 answers", "1%"])
    assert table.loc["1%", "- 0 answers"] == pytest.approx(100 * 0.2 / 3)
    assert table.loc["1%", "- 0 answers se"] == pytest.approx(100 * np.std([0.1, 0.1, 0.0], ddof=1) / np.sqrt(3))
    assert "- 1%" not in table.columns
    # two seeds whose held-out models share each seed's fits: the SE is the per-seed means' spread
    two = pd.concat([curve, curve.assign(seed=1, accuracy=curve["accuracy"] + [0.05, 0.05, 0.05, 0, 0, 0])])
    table = onboarding.paired_table(two, ["1%"], ["0 answers"])
    per_seed = np.array([0.2 / 3, 0.2 / 3 + 0.05])
    assert table.loc["1%", "- 0 answers se"] >= 100 * per_seed.std(ddof=1) / np.sqrt(2) - 1e-9
