"""Tests for jeirt.tasks.compare: the runs table, its summary and margins, the files it writes, and `jeirt compare`."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from jeirt import cli
from jeirt.cli.checks import names
from jeirt.simulate import simulate
from jeirt.splits import split_by_question
from jeirt.tasks import compare as cmp

FAST = ["knn", "benchmark-accuracy", "model-accuracy"]


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def sim():
    ds, _ = simulate(n_models=20, n_items=300, feature_dim=16, d=4, seed=0)
    return ds


@pytest.fixture(scope="module")
def runs(sim, tmp_path_factory):
    """Every method on two seeds of the simulated dataset, written under a temporary folder. JE-IRT
    (d = 256, its default recipe) searches under a budget spent at once: the recipe alone, a sixth of
    the whole grid's time (the search itself is tested in test_estimator.py)."""
    out = tmp_path_factory.mktemp("compare") / "runs.csv"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cmp, "JEIRT_SEARCH_BUDGET", 1e-3)
        return cmp.compare([sim], ["simulated"], seeds=(0, 1), out=out, progress=False), out


def test_compare_returns_one_row_per_run_with_the_right_columns(runs, sim):
    table, _ = runs
    assert list(table.columns) == list(cmp.RUN_COLUMNS)
    assert len(table) == 2 * len(cmp.METHODS)
    assert set(table["method"]) == set(cmp.METHODS) and set(table["seed"]) == {0, 1}
    assert (table["dataset"] == sim.name).all() and (table["encoder"] == "simulated").all()
    assert table[["accuracy", "auc", "brier", "ece", "log_loss", "fit_seconds"]].notna().all().all()
    for seed in (0, 1):
        n_test = int(split_by_question(sim, seed=seed).test.sum())
        assert (table.loc[table["seed"] == seed, "n_test"] == n_test).all()  # every test label scored
    je = table[table["method"] == "je-irt"]
    params = json.loads(je["params"].iloc[0])
    assert params["random_state"] == 0 and params["d"] == 256  # JE-IRT runs with its defaults + seed
    assert params["search"] is True and params["search_budget"] == 1e-3  # it searched, under the budget given
    assert [json.loads(f)["search_tried"] for f in je["fitted"]] == [1, 1]  # no candidate after the budget
    assert table.attrs["config"]["seeds"] == [0, 1]


def test_files_carry_the_config_and_round_trip(runs):
    table, out = runs
    csv = pd.read_csv(out)
    assert list(csv.columns) == list(cmp.RUN_COLUMNS) and len(csv) == len(table)
    blob = json.loads(out.with_suffix(".json").read_text())
    assert blob["format"] == "jeirt-compare"
    assert blob["config"]["methods"] == list(cmp.METHODS) and blob["config"]["split"] == "question"
    assert len(blob["summary"]) == len(cmp.METHODS) and len(blob["margins"]) == 2
    back = cmp.load(out)
    pd.testing.assert_frame_equal(back.drop(columns="params"), table.drop(columns="params"), check_dtype=False)
    assert back.attrs["config"]["seeds"] == [0, 1]


def test_summary_is_mean_and_sd_over_seeds(runs):
    table, _ = runs
    summary = cmp.summarize(table)
    row = summary[summary["method"] == "knn"].iloc[0]
    knn = table[table["method"] == "knn"]["auc"]
    assert row["auc_mean"] == pytest.approx(knn.mean()) and row["auc_sd"] == pytest.approx(knn.std(ddof=1))
    assert row["seeds"] == 2
    text = cmp.format_table(summary)
    assert "±" in text and "je-irt" in text


def test_markdown_table_and_merging_parts(runs, sim):
    table, _ = runs
    markdown = cmp.format_table(cmp.summarize(table), markdown=True).splitlines()
    assert markdown[0].startswith("| dataset | encoder | method | accuracy")
    assert len(markdown) == 2 + len(cmp.METHODS)
    more = cmp.compare([sim], ["simulated"], seeds=[2], methods=FAST, progress=False)
    both = cmp.merge(table, more)
    assert len(both) == len(table) + len(more) and both.attrs["config"]["seeds"] == [0, 1, 2]
    assert both.attrs["config"]["split"] == "question" and len(both.attrs["config"]["parts"]) == 2
    with pytest.raises(ValueError, match="more than one part"):
        cmp.merge(table, table)


def test_margins_compare_je_irt_with_the_best_other_method():
    summary = pd.DataFrame(
        {
            "dataset": ["d"] * 3,
            "encoder": ["e"] * 3,
            "method": ["je-irt", "a", "b"],
            "accuracy_mean": [0.70, 0.72, 0.60],
            "auc_mean": [0.80, 0.75, 0.79],
        }
    )
    lead = cmp.margins(summary).set_index("metric")
    assert lead.loc["accuracy", "best_other"] == "a"
    assert lead.loc["accuracy", "margin"] == pytest.approx(-0.02)
    assert lead.loc["auc", "best_other"] == "b" and lead.loc["auc", "margin"] == pytest.approx(0.01)


def test_leave_one_benchmark_out_split_and_argument_errors(sim):
    table = cmp.compare([sim], ["simulated"], seeds=[0], methods=FAST, split="without:bench1", progress=False)
    assert (table["split"] == "without-bench1").all()
    with pytest.raises(ValueError, match="split"):
        cmp.compare([sim], ["simulated"], seeds=[0], methods=FAST, split="random", progress=False)
    with pytest.raises(ValueError, match="methods"):
        cmp.compare([sim], ["simulated"], seeds=[0], methods=["knn", "svm"], progress=False)
    with pytest.raises(ValueError, match="seeds"):
        cmp.compare([sim], ["simulated"], seeds=[], methods=FAST, progress=False)
    with pytest.raises(ValueError, match=".csv"):
        cmp.save(table, "runs.txt")


def test_an_encoder_without_embeddings_is_skipped_and_recorded(sim):
    with pytest.warns(UserWarning, match="skipping"):
        table = cmp.compare([sim], ["simulated", "all-mpnet-base-v2"], seeds=[0], methods=FAST, progress=False)
    assert set(table["encoder"]) == {"simulated"}
    assert table.attrs["config"]["skipped"] == [f"{sim.name} has no precomputed all-mpnet-base-v2 embeddings"]


def test_the_command_line(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cmp, "load_dataset", lambda name: sim)
    parser = cli.build_parser()
    out, summary_json = tmp_path / "c.csv", tmp_path / "s.json"
    args = parser.parse_args(
        [
            "compare",
            "--dataset",
            "sim",
            "--encoder",
            "simulated",
            "--seeds",
            "0, 1",
            "--methods",
            ",".join(FAST),
            "--out",
            str(out),
            "--json",
            str(summary_json),
            "--quiet",
            "--threads",
            "1",
        ]
    )
    assert args.verb.run(args) == 0
    printed = capsys.readouterr().out
    assert "knn" in printed and "±" in printed and str(out) in printed
    assert len(pd.read_csv(out)) == 2 * len(FAST)
    assert len(json.loads(summary_json.read_text())["summary"]) == len(FAST)
    assert names(["a,b", " c "]) == ["a", "b", "c"]
    bad = parser.parse_args(["compare", "--dataset", "sim", "--seeds", "0,x"])
    with pytest.raises(cli.UsageError, match="--seeds"):  # checked before any data is loaded
        cli.validate(bad)
