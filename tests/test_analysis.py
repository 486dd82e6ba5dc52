"""jeirt.analysis.taxonomy and jeirt.analysis.geometry: clustering scores, effective rank, families,
cosines, opposite pairs and the propositions, each on inputs small enough to work out by hand, plus
every bad-input error; and the Geometry, Taxonomy and Difficulty pages' figures in the house style."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from figure_checks import check_figure

from jeirt.analysis import geometry, taxonomy
from jeirt.data import from_long
from jeirt.model import probability, unit_rows
from jeirt_book import figures

# ---------------------------------------------------------------------------------------------
# Clustering agreement


# Six items, two human classes (a, b), three clusters:
#   cluster 0: a a b    majority a (2 of 3)
#   cluster 1: b b      majority b (2)
#   cluster 2: a        majority a (1)
# purity = (2 + 2 + 1) / 6 = 5/6.
# Class a (3 items) lies in clusters 0 (2) and 2 (1): best 2; class b (3) in 0 (1) and 1 (2): best 2.
# inverse purity = (2 + 2) / 6 = 2/3.
TOY_TRUE = ["a", "a", "b", "b", "b", "a"]
TOY_PRED = [0, 0, 0, 1, 1, 2]


def test_purity_and_inverse_purity_by_hand():
    assert taxonomy.purity(TOY_TRUE, TOY_PRED) == pytest.approx(5 / 6)
    assert taxonomy.inverse_purity(TOY_TRUE, TOY_PRED) == pytest.approx(2 / 3)


def test_purity_extremes():
    classes = ["x", "x", "y", "y", "z"]
    singletons = np.arange(5)
    assert taxonomy.purity(classes, singletons) == 1.0  # every cluster holds one item
    assert taxonomy.inverse_purity(classes, singletons) == pytest.approx(3 / 5)  # one item per class
    one = np.zeros(5)
    assert taxonomy.purity(classes, one) == pytest.approx(2 / 5)  # the majority class of everything
    assert taxonomy.inverse_purity(classes, one) == 1.0


def test_cluster_agreement_is_one_for_a_relabelled_copy_and_ignores_names():
    classes = np.array(list("aabbbcc"))
    scores = taxonomy.cluster_agreement(classes, np.array([7, 7, 3, 3, 3, 5, 5]))
    assert scores == pytest.approx({k: 1.0 for k in scores})
    assert set(scores) == {"purity", "inverse purity", "nmi", "homogeneity", "completeness"}


def test_cluster_agreement_rejects_mismatched_labels():
    with pytest.raises(ValueError, match="same length"):
        taxonomy.purity(["a", "b"], [0])
    with pytest.raises(ValueError, match="empty"):
        taxonomy.purity([], [])


def test_kmeans_directions_ignores_the_norm():
    # Two directions; each appears at a small and a large norm: clusters must follow direction.
    x = np.array([[1, 0], [10, 0.5], [0.1, 0], [0, 1], [0.5, 20], [0, 0.2]], dtype=float)
    ids = taxonomy.kmeans_directions(x, 2, seed=0)
    assert len(set(ids[:3])) == 1 and len(set(ids[3:])) == 1 and ids[0] != ids[3]
    with pytest.raises(ValueError, match="k=7"):
        taxonomy.kmeans_directions(x, 7)


def test_random_partition_keeps_sizes_and_is_seeded():
    ids = np.repeat([0, 1, 2], [5, 3, 2])
    shuffled = taxonomy.random_partition(ids, seed=1)
    assert sorted(shuffled) == sorted(ids)
    np.testing.assert_array_equal(shuffled, taxonomy.random_partition(ids, seed=1))


def test_taxonomy_table_rows_and_scores():
    rng = np.random.default_rng(0)
    centres = np.eye(3) * 5
    classes = np.repeat(["p", "q", "r"], 30)
    x = centres[np.repeat([0, 1, 2], 30)] + rng.normal(0, 0.1, (90, 3))
    table, clusters = taxonomy.taxonomy_table({"clean": x, "noise": rng.normal(size=(90, 3))}, classes, seed=0)
    assert list(table.index) == ["clean", "noise", "random partition"]
    assert table.loc["clean", "purity"] == 1.0 and table.loc["clean", "nmi"] == pytest.approx(1.0)
    assert table.loc["random partition", "nmi"] < table.loc["clean", "nmi"]
    assert sorted(np.bincount(clusters["random partition"])) == sorted(np.bincount(clusters["clean"]))
    with pytest.raises(ValueError, match="has 5 rows"):
        taxonomy.taxonomy_table({"short": x[:5]}, classes)


def test_taxonomy_labels_prefers_subjects_and_falls_back_to_benchmarks():
    long = pd.DataFrame(
        {
            "model": ["m"] * 4,
            "item_id": ["1", "2", "3", "4"],
            "label": [1, 0, 1, 0],
            "benchmark": ["b1", "b1", "b2", "b2"],
            "subject": ["s1", "s2", "", ""],
        }
    )
    rows, classes, level = taxonomy.taxonomy_labels(from_long(long))
    assert level == "subject" and list(rows) == [0, 1] and list(classes) == ["s1", "s2"]
    rows, classes, level = taxonomy.taxonomy_labels(from_long(long.assign(subject="")))
    assert level == "benchmark" and list(rows) == [0, 1, 2, 3]


def test_cluster_examples_and_purities():
    texts = [f"question {i} " + "word " * 50 for i in range(6)]
    table = taxonomy.cluster_examples(TOY_PRED, TOY_TRUE, texts, [0, 1], n_classes=2, max_chars=30)
    assert list(table.index) == [0, 1] and table.loc[0, "size"] == 3
    assert table.loc[0, "top classes"] == "a (67%); b (33%)"
    assert table["question 1"].str.len().max() <= 30
    per = taxonomy.cluster_purities(TOY_PRED, TOY_TRUE)
    assert per.loc[0, "purity"] == pytest.approx(2 / 3) and per.loc[2, "majority class"] == "a"
    with pytest.raises(ValueError, match="cluster 9 is empty"):
        taxonomy.cluster_examples(TOY_PRED, TOY_TRUE, texts, [9])


# ---------------------------------------------------------------------------------------------
# Spectrum


def test_effective_rank_by_hand():
    assert geometry.effective_rank(np.eye(4)) == pytest.approx(4.0)  # four equal singular values
    assert geometry.effective_rank(np.outer([1, 2, 3], [1, -1])) == pytest.approx(1.0)  # rank one
    # Singular values 3 and 1: p = (3/4, 1/4), H = -(3/4 ln 3/4 + 1/4 ln 1/4).
    h = -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))
    assert geometry.effective_rank(np.diag([3.0, 1.0])) == pytest.approx(np.exp(h))
    assert geometry.effective_rank(np.diag([3.0, 1.0])) == pytest.approx(1.7548, abs=1e-4)


def test_effective_rank_is_invariant_to_rotation_and_scale_and_centering_works():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 5))
    q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    assert geometry.effective_rank(3 * x @ q) == pytest.approx(geometry.effective_rank(x))
    shifted = np.ones((6, 3)) * 5 + np.eye(6, 3)  # a big shared offset
    assert geometry.effective_rank(shifted) < geometry.effective_rank(shifted, center=True)
    with pytest.raises(ValueError, match="all zeros"):
        geometry.effective_rank(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="2-D"):
        geometry.effective_rank(np.ones(3))


def test_cumulative_variance():
    x = np.array([[1.0, 0, 0], [-1, 0, 0], [0, 0.5, 0], [0, -0.5, 0]])
    # Variances 0.5 and 0.125 along axes 1, 2: shares 0.8 and 0.2.
    np.testing.assert_allclose(geometry.cumulative_variance(x, 2), [0.8, 1.0])
    assert len(geometry.cumulative_variance(np.random.default_rng(0).normal(size=(10, 100)))) == 10


# ---------------------------------------------------------------------------------------------
# Model families and maps


@pytest.mark.parametrize(
    "name, family",
    [
        ("Meta-Llama-3_1-70B-Instruct", "Llama"),
        ("Llama-2-7b-hf", "Llama"),
        ("meta-llama/Llama-2-13b-hf", "Llama"),
        ("Mixtral-8x7B-v0.1", "Mistral"),
        ("mathstral-7B", "Mistral"),
        ("Qwen1.5-72B-Chat", "Qwen"),
        ("Yi-6b-Chat", "Yi"),
        ("01-ai/Yi-34B", "Yi"),
        ("yi-large", "Yi"),
        ("gemma-7b", "Gemma/Gemini"),
        ("gemini-1.5-pro-002", "Gemma/Gemini"),
        ("gpt-4o(2024-05-13)", "GPT"),
        ("o1-mini-2024-09-12", "GPT"),
        ("DeepSeek-Coder-V2", "DeepSeek"),
        ("deepseek-chat(2024-05)", "DeepSeek"),
        ("Phi-3-mini-4k-instruct", "Phi"),
        ("claude-3-opus-20240229", "Claude"),
        ("jamba-1.5-large", "other"),
        ("c4ai-command-r-v01", "other"),
        ("Yield-7B", "other"),
        ("Dolphin-2", "other"),
    ],
)
def test_model_family_rule(name, family):
    assert geometry.model_family(name) == family


def test_tsne_map_shapes_and_errors():
    x = np.random.default_rng(0).normal(size=(12, 4))
    xy = geometry.tsne_map(x, seed=0)
    assert xy.shape == (12, 2) and np.isfinite(xy).all()
    np.testing.assert_allclose(xy, geometry.tsne_map(x, seed=0))
    with pytest.raises(ValueError, match="at least 4"):
        geometry.tsne_map(x[:3])
    with pytest.raises(ValueError, match="perplexity"):
        geometry.tsne_map(x, perplexity=20)


# ---------------------------------------------------------------------------------------------
# Question directions


def test_cosine_to_means_by_hand():
    # Group g: directions at +-45 degrees around the x axis (norms do not matter); group h: the y axis.
    x = np.array([[1, 1], [2, -2], [0, 3]], dtype=float)
    cos = geometry.cosine_to_means(x, ["g", "g", "h"])
    np.testing.assert_allclose(cos["own benchmark"], [np.sqrt(0.5), np.sqrt(0.5), 1.0])
    # Mean of the unit directions: (sqrt(2)/3, 1/3); its unit vector is (sqrt(2/3), sqrt(1/3)).
    mean = np.array([np.sqrt(2 / 3), np.sqrt(1 / 3)])
    np.testing.assert_allclose(cos["global"], unit_rows(x) @ mean)
    table = geometry.cosine_table(cos)
    assert table.loc["g", ("own benchmark", "mean")] == pytest.approx(np.sqrt(0.5))
    assert table.loc["all questions", ("global", "mean")] == pytest.approx(cos["global"].mean())
    with pytest.raises(ValueError, match="groups has 2"):
        geometry.cosine_to_means(x, ["g", "h"])


def test_kernel_pca_cosine_samples_and_ignores_norm():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3))
    rows, coords = geometry.kernel_pca_cosine(x, max_rows=20, seed=0)
    assert len(rows) == 20 and coords.shape == (20, 2) and np.all(np.diff(rows) > 0)
    scales = rng.uniform(0.1, 10, size=(50, 1))
    _, a = geometry.kernel_pca_cosine(x, max_rows=None)
    _, b = geometry.kernel_pca_cosine(x * scales, max_rows=None)
    np.testing.assert_allclose(np.abs(a), np.abs(b), atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Opposite abilities


def test_most_opposite_pairs_matches_brute_force_across_blocks():
    x = np.random.default_rng(1).normal(size=(37, 4))
    found = geometry.most_opposite_pairs(x, n_pairs=5, block=8)
    u = unit_rows(x)
    brute = sorted(((u[i] @ u[j], i, j) for i, j in itertools.combinations(range(37), 2)))[:5]
    assert [(i, j) for _, i, j in brute] == list(zip(found["i"], found["j"]))
    np.testing.assert_allclose(found["cosine"], [c for c, _, _ in brute], atol=1e-6)
    with pytest.raises(ValueError, match="at least 2"):
        geometry.most_opposite_pairs(x[:1])


def test_exactly_one_right_by_hand():
    a = np.array([1, 1, 0, 0, np.nan])
    b = np.array([0, 1, 1, 0, 1])
    out = geometry.exactly_one_right(a, b, p_a=np.full(5, 0.5), p_b=np.full(5, 0.5))
    # Four models graded on both; exactly one right: models 0 and 2 -> 1/2.
    # Independence with p = q = 1/2: 1/2 * 1/2 + 1/2 * 1/2 = 1/2; JE-IRT with all P = 1/2: 1/2.
    assert out == {"models": 4, "observed": 0.5, "independence": 0.5, "je-irt": 0.5}
    perfect = geometry.exactly_one_right(np.array([1, 1, 0, 0.0]), np.array([0, 0, 1, 1.0]))
    assert perfect["observed"] == 1.0 and perfect["independence"] == 0.5
    with pytest.raises(ValueError, match="both"):
        geometry.exactly_one_right(np.array([np.nan]), np.array([1.0]))


def test_answer_correlation_by_hand():
    labels = np.array([[1, 1, 0, 1], [1, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, np.nan]], dtype=float)
    phi = geometry.answer_correlation(labels, [0, 0, 0], [1, 2, 3])
    assert phi[0] == pytest.approx(1.0)  # identical columns
    assert phi[1] == pytest.approx(np.corrcoef([1, 1, 0, 0], [0, 1, 1, 0])[0, 1])
    assert np.isnan(phi[2])  # column 3 is all ones among models graded on both


def test_correlation_by_cosine_groups_pairs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    labels = (rng.random((30, 60)) < 0.5).astype(float)
    table = geometry.correlation_by_cosine(x, labels, n_pairs=500, seed=0)
    assert list(table.columns) == ["pairs", "mean phi", "standard error"]
    assert table["pairs"].sum() <= 500 and table.index[0] == "-1 to -0.5"


# ---------------------------------------------------------------------------------------------
# Propositions


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_proposition_1_every_subset_is_exactly_the_solvers(n):
    for subset in geometry.all_subsets(n):
        vectors, direction, norm = geometry.expressive_construction(n, subset)
        assert np.linalg.norm(direction) == pytest.approx(1.0)
        p = probability(direction, norm, vectors)[0]
        assert set(np.flatnonzero(p > 0.5)) == set(subset), (n, subset, p)
    assert len(geometry.all_subsets(n)) == 2**n


def test_proposition_1_rejects_a_norm_too_large_and_bad_subsets():
    with pytest.raises(ValueError, match="norm"):
        geometry.expressive_construction(4, [0], scale=1.0, norm=0.5)  # limit is 1/sqrt(4) = 0.5
    with pytest.raises(ValueError, match="subset"):
        geometry.expressive_construction(3, [3])


def test_2pl_realises_only_threshold_sets():
    sets = geometry.realisable_subsets_2pl(np.array([0.3, 2.0, -1.0, 1.0]))
    assert len(sets) == 5
    assert frozenset({1, 3}) in sets and frozenset({0, 2}) not in sets
    # Brute force over 2PL items: solvers of sigmoid(a (theta - b)) > 1/2, a > 0, are {theta > b}.
    theta = np.array([0.3, 2.0, -1.0, 1.0])
    found = {frozenset(np.flatnonzero(theta > b).tolist()) for b in np.linspace(-3, 3, 601)}
    assert found == sets


def test_bound_delta_p_never_violated_on_random_draws():
    rng = np.random.default_rng(0)
    for d in (1, 2, 8, 64):
        models = rng.normal(0, rng.uniform(0.1, 5), size=(20, d))
        u1, u2 = unit_rows(rng.normal(size=(500, d))), unit_rows(rng.normal(size=(500, d)))
        r1, r2 = rng.exponential(1.5, 500), rng.exponential(1.5, 500)
        bound = geometry.bound_delta_p(models, u1, u2, r1, r2)
        gap = geometry.delta_p(models, u1, u2, r1, r2)
        assert bound.shape == gap.shape == (500, 20)
        assert np.all(gap <= bound + 1e-12)
        # Special cases: same norm (direction only) and same direction (norm only).
        assert np.all(
            geometry.delta_p(models, u1, u2, r1, r1) <= geometry.bound_delta_p(models, u1, u2, r1, r1) + 1e-12
        )
        same = geometry.bound_delta_p(models, u1, u1, r1, r2)
        np.testing.assert_allclose(same, np.repeat(np.abs(r1 - r2)[:, None] / 4, 20, axis=1))


def test_bound_delta_p_by_hand_and_nearly_tight():
    m = np.array([2.0, 0.0])
    u1, u2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    # |E_M| = 2, ||u1 - u2|| = sqrt(2), |r1 - r2| = 0.5: bound = (2 sqrt(2) + 0.5) / 4.
    assert geometry.bound_delta_p(m, u1, u2, 1.0, 0.5) == pytest.approx((2 * np.sqrt(2) + 0.5) / 4)
    assert np.ndim(geometry.bound_delta_p(m, u1, u2, 1.0, 0.5)) == 0
    # A tiny norm change at P = 1/2 (logit 0): the sigmoid's slope is 1/4, the bound is tight.
    gap = geometry.delta_p(m, u1, u1, 2.0, 2.0 + 1e-4)
    assert gap == pytest.approx(geometry.bound_delta_p(m, u1, u1, 2.0, 2.0 + 1e-4), rel=1e-4)
    with pytest.raises(ValueError, match="embedding"):
        geometry.bound_delta_p(m, np.ones(3), np.ones(3), 0, 0)


def test_probability_matches_the_model_logits():
    import torch

    from jeirt.model import jeirt_logits

    rng = np.random.default_rng(0)
    emb, models = rng.normal(size=(7, 3)), rng.normal(size=(4, 3))
    norms = np.linalg.norm(emb, axis=1)
    expected = torch.sigmoid(jeirt_logits(torch.tensor(emb), torch.tensor(models))).numpy()
    np.testing.assert_allclose(probability(emb / norms[:, None], norms, models), expected, rtol=1e-6)


def test_pairs_helpers():
    i, j = geometry.random_pairs(5, 1000, seed=0)
    assert np.all(i != j) and i.max() < 5 and j.max() < 5
    x = np.array([[1, 0], [0.9, 0.1], [0, 1], [-1, 0]], dtype=float)
    i, j = geometry.nearest_direction_pairs(x, 4, seed=0, block=2)
    assert dict(zip(i, j)) == {0: 1, 1: 0, 2: 1, 3: 2}
    with pytest.raises(ValueError, match="n=1"):
        geometry.random_pairs(1, 3)


# ---------------------------------------------------------------------------------------------
# The figures of the pages these analyses serve, in the house style


def test_prop3_and_reversals_by_hand():
    m = np.array([[2.0, 0.0], [0.0, 1.0]])  # (n_models, d)
    u1, u2 = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
    shift, bound = geometry.ability_shift(m, u1, u2)
    np.testing.assert_allclose(shift, [[2.0, 1.0]])  # |<u1 - u2, E_M>|
    np.testing.assert_allclose(bound, [[2 * np.sqrt(2), np.sqrt(2)]])  # ||u1 - u2|| ||E_M||
    table = geometry.bound_summary({"toy": (bound, shift), "over": (np.ones(2), np.array([1.0, 2]))})
    assert table.loc["toy", "violations"] == 0 and table.loc["over", "violations"] == 1
    assert table.loc["toy", "max ratio"] == pytest.approx(1 / np.sqrt(2))
    theta = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, -2.0]])  # (n_items, n_models)
    assert geometry.reversed_pairs(theta) == (1, 3)  # only models 0 and 1 swap
    with pytest.raises(ValueError, match="same shape|one shape"):
        geometry.bound_summary({"bad": (np.ones(2), np.ones(3))})
    with pytest.raises(ValueError, match="n_models >= 2"):
        geometry.reversed_pairs(np.ones((3, 1)))


def test_within_between_cosine_by_hand():
    x = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0], [1.0, 1.0]])
    within, between = geometry.within_between_cosine(x, ["a", "a", "b", "b", "other"])
    assert within == pytest.approx(1.0) and between == pytest.approx(0.0)
    with pytest.raises(ValueError, match="at least one pair"):
        geometry.within_between_cosine(x[:2], ["a", "b"])


def test_page_figures_follow_the_house_style():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jeirt_book import difficulty as difficulty_page
    from jeirt_book import geometry as geometry_page
    from jeirt_book import taxonomy as taxonomy_page

    figures.use_style()
    rng = np.random.default_rng(0)
    fig, axes = plt.subplots(2, 3, figsize=(12, 6))
    table = pd.DataFrame({"purity": [0.2, 0.5], "nmi": [0.3, 0.6]}, index=["learned", "frozen"])
    taxonomy_page.agreement_bars(axes[0, 0], table)
    taxonomy_page.cluster_mix(axes[0, 1], pd.DataFrame(rng.random((3, 4)), columns=list("abcd")))
    families = ["Qwen"] * 4 + ["Llama"] * 3 + ["Yi"] * 2 + ["other"]
    geometry_page.family_map(axes[0, 2], rng.normal(size=(10, 2)), families, top=2)
    labels = [t.get_text() for t in axes[0, 2].get_legend().get_texts()]
    assert labels == ["other (3)", "Qwen (4)", "Llama (3)"]  # Yi folds into "other"
    x = rng.normal(size=(40, 3))
    geometry_page.cosine_histograms(axes[1, 0], geometry.cosine_to_means(x, np.repeat(["g", "h"], 20)))
    geometry_page.opposite_pair(
        axes[1, 1], ["m1", "m2", "m3"], np.array([[1, 0], [0, np.nan], [1, 1.0]]), rng.random((3, 2))
    )
    bound = rng.random(100)
    geometry_page.bound_scatter(axes[1, 2], bound, bound * rng.random(100), label="pairs")
    check_figure(fig)
    plt.close(fig)
    bound = rng.random((2, 50))
    checks = {name: (bound, bound * rng.random((2, 50))) for name in "abc"}
    fig = geometry_page.bound_panels(checks, {"a and b": ["a", "b"], "c": ["c"]})
    assert len(fig.axes) == 2 and fig.axes[0].get_xlim()[1] >= bound.max()
    check_figure(fig)
    plt.close(fig)
    fig = geometry_page.groups_one_by_one(rng.normal(size=(30, 2)), np.repeat(list("abc"), 10), ncols=2)
    assert sum(ax.axison for ax in fig.axes) == 3  # the fourth panel is empty
    check_figure(fig)
    plt.close(fig)
    a = np.array([1.0, -1.0, 0.5, 2.0])
    fig = difficulty_page.norm_vs_difficulty(rng.random(4), rng.random(4), rng.normal(size=4), a)
    check_figure(fig)
    plt.close(fig)
