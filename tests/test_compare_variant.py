"""Tests for the variant beyond the paper, JE-IRT with the question's benchmark as a feature: the
estimator option (`JEIRT(benchmark_feature=True)`) and its `jeirt compare` row ("je-irt+benchmark"), which
runs only when named and is never the best other method JE-IRT is measured against."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jeirt.estimator import JEIRT
from jeirt.simulate import simulate
from jeirt.splits import split_by_question
from jeirt.tasks import compare as cmp

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def sim():
    ds, _ = simulate(n_models=20, n_items=300, feature_dim=16, d=4, seed=0)
    return ds


def test_benchmark_feature_appends_a_one_hot_and_survives_save_and_load(sim, tmp_path):
    split = split_by_question(sim, seed=0)
    est = JEIRT(d=4, encoder="simulated", benchmark_feature=True, training={"max_epochs": 3}, progress=False)
    est.fit(sim, split)
    benchmarks = sorted(sim.items["benchmark"].unique())
    assert est.benchmarks_ == benchmarks and est.feature_dim_ == 16 + len(benchmarks)
    feats = est.question_features(sim)
    onehot = feats[:, 16:] > 0
    assert (onehot.sum(axis=1) == 1).all()
    assert (np.array(benchmarks)[onehot.argmax(axis=1)] == sim.items["benchmark"].to_numpy()).all()
    back = JEIRT.load(est.save(tmp_path / "variant.pt"))
    assert back.benchmarks_ == benchmarks and back.benchmark_scale_ == pytest.approx(est.benchmark_scale_)
    np.testing.assert_allclose(back.predict_proba(sim), est.predict_proba(sim), atol=1e-6)
    with pytest.raises(ValueError, match="benchmark as a feature"):
        est.predict_proba(["a question without a benchmark"])
    plain = JEIRT(d=4, encoder="simulated", training={"max_epochs": 3}, progress=False).fit(sim, split)
    assert plain.benchmarks_ is None and plain.feature_dim_ == 16  # off by default: the paper's model


def test_variant_runs_only_when_named_and_is_never_the_best_other(sim, monkeypatch):
    monkeypatch.setattr(cmp, "JEIRT_SEARCH_BUDGET", 1e-3)  # the recipe alone: the search is JE-IRT's, tested there
    assert "je-irt+benchmark" not in cmp.METHODS and "je-irt+benchmark" in cmp.VARIANTS
    runs = cmp.compare(
        [sim], ["simulated"], seeds=(0, 1), methods=["je-irt+benchmark", "model-accuracy"], progress=False
    )
    variant = runs[runs["method"] == "je-irt+benchmark"]
    assert len(variant) == 2 and json.loads(variant["params"].iloc[0])["benchmark_feature"] is True
    assert "temperature" in json.loads(variant["fitted"].iloc[0])  # searched and calibrated as JE-IRT is
    # a JE-IRT row below both: the best other method must still be a method of the paper's comparison
    runs = runs.copy()
    runs.loc[runs["method"] == "je-irt+benchmark", "accuracy"] = 1.0
    plain = runs[runs["method"] == "model-accuracy"].assign(method="je-irt", accuracy=0.0)
    both = cmp._frame(runs.to_dict("records") + plain.to_dict("records"), {})
    lead = cmp.margins(cmp.summarize(both))
    assert set(lead["best_other"]) == {"model-accuracy"}
    paired = cmp.paired_margins(both)
    assert set(paired["best_other"]) == {"model-accuracy"}
    as_reference = cmp.margins(cmp.summarize(both), reference="je-irt+benchmark")
    assert (as_reference.loc[as_reference["metric"] == "accuracy", "margin"] > 0).all()
    with pytest.raises(ValueError, match="variants beyond the paper"):
        cmp.compare([sim], ["simulated"], seeds=(0,), methods=["je-irt+nothing"], progress=False)
