"""Routing (`jeirt.tasks.routing`, `jeirt route`): hand-worked toy cases, every bad input, the price table,
IRT-Net's difficulty output, and the CLI end to end on a tiny JE-IRT fitted on a slice of mmlu_pro."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import require_dataset
from scipy.stats import spearmanr
from sklearn.exceptions import NotFittedError

from jeirt.analysis import difficulty
from jeirt.baselines import IRTNet
from jeirt.cli import main
from jeirt.data import Dataset
from jeirt.splits import split_by_question
from jeirt.tasks import routing

pytestmark = pytest.mark.usefixtures("one_thread")
nan = np.nan

# ----------------------------------------------------------------------------------------------------
# The toy: three models, four test questions (X1, X2 in benchmark X; Y1, Y2 in Y), four training ones.
#
#   test labels  X1 X2 Y1 Y2      probs  X1   X2   Y1   Y2     training  X    Y   all   cost
#   a             1  0  0  0              .9   .85  .6   .5               1.0  0.0  0.5   1.0
#   b             0  1  0  -              .3   .8   .7   .9               0.5  1.0  0.75  0.5
#   c             0  0  0  1              .1   .1   .2   .6               0.0  0.5  0.25  0.1
#
# b was not graded on Y2: no policy may choose it there, and it cannot be the best single model.

MODELS = ["a", "b", "c"]
TEST = np.array([[1, 0, 0, 0], [0, 1, 0, nan], [0, 0, 0, 1]], dtype=float)
TRAIN = np.array([[1, 1, 0, 0], [1, 0, 1, 1], [0, 0, 1, 0]], dtype=float)  # columns X, X, Y, Y
PROBS = np.array([[0.9, 0.85, 0.6, 0.5], [0.3, 0.8, 0.7, 0.9], [0.1, 0.1, 0.2, 0.6]])
COSTS = pd.Series({"a": 1.0, "b": 0.5, "c": 0.1})


@pytest.fixture
def toy() -> tuple[Dataset, np.ndarray, routing.RoutingSet]:
    items = pd.DataFrame(
        {
            "item_id": ["X1", "X2", "Y1", "Y2", "tX1", "tX2", "tY1", "tY2"],
            "benchmark": list("XXYYXXYY"),
            "text": [""] * 8,
        }
    )
    ds = Dataset("toy", MODELS, items, np.concatenate([TEST, TRAIN], axis=1))
    train = np.zeros(ds.labels.shape, dtype=bool)
    train[:, 4:] = True
    test = routing.RoutingSet.from_dataset(ds, ~train)
    return ds, train, test


def test_router_picks_argmax_among_graded_models(toy):
    _, _, test = toy
    choice = routing.choose(PROBS, test.graded)
    assert choice.tolist() == [0, 0, 1, 2]  # Y2: b (0.9) is ungraded, so c (0.6) beats a (0.5)
    assert routing.outcome(choice, test) == {"accuracy": 0.5}  # labels 1, 0, 0, 1
    assert routing.route(PROBS, test) == {"accuracy": 0.5}
    with pytest.raises(ValueError, match="ungraded"):  # without the mask, b is chosen on Y2
        routing.outcome(routing.choose(PROBS), test)


def test_references_by_hand(toy):
    ds, train, test = toy
    # b has the best training accuracy but no label on Y2: the best single model is a (0.5 > 0.25).
    assert routing.best_single(ds, train, test) == "a"
    # X: a (1.0); Y: b would win (1.0) but is not graded on Y2, so c (0.5).
    assert routing.best_per_benchmark(ds, train, test).to_dict() == {"X": "a", "Y": "c"}
    table = routing.references(ds, train, test, COSTS)
    expected = {
        "best single model": (1 / 4, 1.0),  # a: 1 0 0 0, always cost 1.0
        "per-benchmark best": (2 / 4, 0.55),  # a a c c: 1 0 0 1; costs (1 + 1 + .1 + .1) / 4
        "random model": (7 / 24, (3 * 1.6 / 3 + 0.55) / 4),  # (1/3 + 1/3 + 0 + 1/2) / 4
        "oracle": (3 / 4, (1.0 + 0.5 + 0.1 + 0.1) / 4),
    }  # cheapest right model; Y1: cheapest graded
    for policy, (accuracy, cost) in expected.items():
        assert table.loc[policy, "accuracy"] == pytest.approx(accuracy)
        assert table.loc[policy, "cost"] == pytest.approx(cost)
    assert table.loc["best single model", "choice"] == "a"
    both = routing.compare({"toy router": PROBS}, ds, train, test, COSTS)
    assert both.loc["toy router", "accuracy"] == 0.5 and both.loc["toy router", "cost"] == pytest.approx(0.65)
    gap = routing.gap(
        routing.choose(PROBS, test.graded), routing.reference_choices(ds, train, test)["best single model"], test
    )
    assert gap == pytest.approx({"gap": 0.25, "se": 0.25})  # differences 0 0 0 1: sd 0.5 over sqrt(4)


def test_single_models_are_the_complete_ones(toy):
    _, _, test = toy
    table = routing.single_models(test, COSTS)
    assert list(table.index) == ["a", "c"] and table["accuracy"].tolist() == [0.25, 0.25]
    assert table.loc["c", "cost"] == 0.1


def test_cost_aware_routing_by_hand(toy):
    _, _, test = toy
    assert (
        routing.route(PROBS, test, COSTS, lam=0.0)
        == routing.route(PROBS, test, COSTS)
        == {"accuracy": 0.5, "cost": pytest.approx(0.65)}
    )
    # lam = 1: X1 c (0.0 > -0.1 > -0.2), X2 b (0.3), Y1 b (0.2 > 0.1), Y2 c (0.5): labels 0 1 0 1
    cost = routing.align_costs(COSTS, test.models)
    assert routing.choose(PROBS, test.graded, cost, lam=1.0).tolist() == [2, 1, 1, 2]
    assert routing.route(PROBS, test, COSTS, lam=1.0) == {"accuracy": 0.5, "cost": pytest.approx(0.3)}
    # a very large lambda sends every question to the cheapest graded model
    assert routing.choose(PROBS, test.graded, cost, lam=1e6).tolist() == [2, 2, 2, 2]


def test_cheapest_graded_model_when_the_cheapest_is_ungraded():
    labels = np.array([[1, 0], [nan, 1], [1, 1]], dtype=float)
    test = routing.RoutingSet(("x", "y", "z"), labels, np.array(["B", "B"]), np.array(["q1", "q2"]))
    probs = np.full((3, 2), 0.5)
    lambdas = routing.default_lambdas(np.array([0.3, 0.1, 0.2]))
    points = routing.frontier(probs, test, {"x": 0.3, "y": 0.1, "z": 0.2}, lambdas)
    # q1: y is cheapest but ungraded, so z; q2: y
    assert points.iloc[-1]["cost"] == pytest.approx(0.15) and points.iloc[-1]["accuracy"] == 1.0


def test_frontier_is_monotone_and_spans_accuracy_to_cheapest():
    rng = np.random.default_rng(0)
    n_models, n_questions = 6, 300
    labels = (rng.random((n_models, n_questions)) < np.linspace(0.3, 0.8, n_models)[:, None]).astype(float)
    labels[rng.random(labels.shape) < 0.3] = nan
    labels[0] = np.where(np.isnan(labels[0]), 0.0, labels[0])  # model 0 graded everywhere
    test = routing.RoutingSet(
        tuple("abcdef"), labels, np.array(["B"] * n_questions), np.arange(n_questions).astype(str)
    )
    probs = np.clip(np.nan_to_num(labels, nan=0.5) * 0.6 + rng.random(labels.shape) * 0.4, 0, 1)
    costs = pd.Series(rng.uniform(0.1, 10, n_models), index=list("abcdef"))
    points = routing.frontier(probs, test, costs)
    assert points["lam"].is_monotonic_increasing and (np.diff(points["cost"]) <= 1e-12).all()
    assert points.iloc[0]["accuracy"] == routing.route(probs, test)["accuracy"]  # lam = 0
    cheapest = np.where(test.graded, costs.to_numpy()[:, None], np.inf).min(axis=0).mean()
    assert points.iloc[-1]["cost"] == pytest.approx(cheapest)  # the large end: cheapest graded model
    assert points["cost"].iloc[0] > points["cost"].iloc[-1]


def test_cheapest_within():
    points = pd.DataFrame({"lam": [0, 1, 2, 3], "accuracy": [0.80, 0.795, 0.785, 0.70], "cost": [5.0, 2.0, 1.0, 0.1]})
    assert routing.cheapest_within(points, 0.80)["cost"] == 2.0  # 0.795 >= 0.79; 0.785 is not
    assert routing.cheapest_within(points, 0.80, tolerance=0.0)["cost"] == 5.0
    assert routing.cheapest_within(points, 0.80, tolerance=0.02)["cost"] == 1.0
    assert routing.cheapest_within(points, 0.85) is None
    with pytest.raises(ValueError, match="tolerance"):
        routing.cheapest_within(points, 0.8, tolerance=-0.01)
    with pytest.raises(ValueError, match="cost"):
        routing.cheapest_within(points.drop(columns="cost"), 0.8)


# ----------------------------------------------------------------------------------------------------
# Bad inputs: each raises, naming the problem


@pytest.mark.parametrize(
    "costs, message",
    [
        ({"a": 1.0, "b": 0.5, "c": 0.1, "zz": 1.0}, "unknown model"),
        ({"a": 1.0, "b": 0.5}, r"no cost for model\(s\) \['c'\]"),
        ({"a": 1.0, "b": nan, "c": 0.1}, r"NaN for \['b'\]"),
        ({"a": 1.0, "b": -0.5, "c": 0.1}, r"negative for \['b'\]"),
    ],
)
def test_bad_costs(toy, costs, message):
    _, _, test = toy
    with pytest.raises(ValueError, match=message):
        routing.route(PROBS, test, costs, lam=1.0)


def test_bad_probs_and_shapes(toy):
    _, _, test = toy
    with pytest.raises(ValueError, match=r"shape \(3, 3\); the test set has \(3, 4\)"):
        routing.route(PROBS[:, :3], test)
    with pytest.raises(ValueError, match="graded mask"):
        routing.choose(PROBS, test.graded[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        routing.choose(np.where(test.graded, nan, PROBS), test.graded)
    with pytest.raises(ValueError, match="logits"):
        routing.choose(PROBS * 3, test.graded)
    with pytest.raises(ValueError, match="empty"):
        routing.choose(np.zeros((3, 0)))
    with pytest.raises(ValueError, match="lam=-1"):
        routing.choose(PROBS, lam=-1)
    with pytest.raises(ValueError, match="no costs"):
        routing.choose(PROBS, lam=1.0)
    with pytest.raises(ValueError, match="one per model"):
        routing.choose(PROBS, costs=np.ones(2), lam=1.0)
    with pytest.raises(ValueError, match="one model per question"):
        routing.outcome(np.zeros(3, dtype=int), test)


def test_bad_question_sets(toy):
    ds, train, _ = toy
    with pytest.raises(ValueError, match="empty"):
        routing.RoutingSet.from_dataset(ds, np.zeros(ds.labels.shape, dtype=bool))
    with pytest.raises(ValueError, match="empty"):
        routing.RoutingSet(("a",), np.zeros((1, 0)), np.array([]), np.array([]))
    with pytest.raises(ValueError, match=r"no graded model, e.g. \['q2'\]"):
        routing.RoutingSet(("a", "b"), np.array([[1, nan], [0, nan]]), np.array(["B", "B"]), np.array(["q1", "q2"]))
    with pytest.raises(ValueError, match="one entry per question"):
        routing.RoutingSet(("a",), np.ones((1, 2)), np.array(["B"]), np.array(["q1", "q2"]))
    with pytest.raises(ValueError, match="2 models are named"):
        routing.RoutingSet(("a", "b"), np.ones((1, 2)), np.array(["B", "B"]), np.array(["q1", "q2"]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        routing.RoutingSet(("a",), np.array([[2.0]]), np.array(["B"]), np.array(["q1"]))
    with pytest.raises(ValueError, match="mask has shape"):
        routing.RoutingSet.from_dataset(ds, train[:, :3])
    with pytest.raises(ValueError, match="no graded label"):
        routing.best_single(ds, np.zeros(ds.labels.shape, dtype=bool), routing.RoutingSet.from_dataset(ds, ~train))


def test_no_single_model_covers_the_questions():
    items = pd.DataFrame({"item_id": ["q1", "q2", "t"], "benchmark": ["B"] * 3, "text": [""] * 3})
    ds = Dataset("gappy", ["a", "b"], items, np.array([[1, nan, 1], [nan, 1, 0]], dtype=float))
    train = np.zeros(ds.labels.shape, dtype=bool)
    train[:, 2] = True
    test = routing.RoutingSet.from_dataset(ds, ~train)
    with pytest.raises(ValueError, match="no model was graded on every test question"):
        routing.best_single(ds, train, test)


# ----------------------------------------------------------------------------------------------------
# The price table


def test_shipped_prices_cover_both_datasets(mmlu_pro):
    prices = routing.read_prices()
    assert list(prices.columns[:5]) == list(routing.PRICE_COLUMNS)
    assert (prices["source"] != "").all() and (prices["note"] != "").all()
    for ds in (mmlu_pro, require_dataset("zeroeval")):
        costs = routing.question_costs(prices, ds.models)
        assert costs.index.tolist() == ds.models and (costs > 0).all()
    # gpt-4o at $5 / $15 per million tokens, 400 in and 300 out: (2000 + 4500) / 1e6 per question
    assert routing.question_costs(prices, ["gpt-4o(2024-05-13)"]).iloc[0] == pytest.approx(6.5)
    rule = prices[prices["source"].str.startswith("open-weight")]
    tiers = set(routing.OPEN_WEIGHT_RULE.values())
    assert len(rule) > 20 and set(rule["usd_per_mtok_input"]) <= tiers


def _table(**change) -> pd.DataFrame:
    rows = {
        "model": ["a", "b", "c"],
        "usd_per_mtok_input": [1.0, 0.5, 0.1],
        "usd_per_mtok_output": [2.0, 1.0, 0.2],
        "source": ["s"] * 3,
        "note": ["n"] * 3,
    }
    return pd.DataFrame({**rows, **change})


@pytest.mark.parametrize(
    "table, message",
    [
        (_table(model=["a", "a", "c"]), r"\['a'\] more than once"),
        (_table(model=["a", None, "c"]), "without a model name"),
        (_table(usd_per_mtok_input=[1.0, nan, 0.1]), r"usd_per_mtok_input is missing, NaN or not a number for \['b'\]"),
        (_table(usd_per_mtok_output=[1.0, "cheap", 0.1]), r"usd_per_mtok_output is missing, NaN or not a number"),
        (_table(usd_per_mtok_output=[1.0, -1.0, 0.1]), r"usd_per_mtok_output is negative for \['b'\]"),
    ],
)
def test_bad_price_tables(tmp_path, table, message):
    path = tmp_path / "prices.csv"
    table.to_csv(path, index=False)
    with pytest.raises(ValueError, match=message):
        routing.read_prices(path)


def test_price_lookups(tmp_path):
    table = routing.check_prices(_table())
    assert routing.question_costs(table, ["c", "a"], input_tokens=1000, output_tokens=0).tolist() == pytest.approx(
        [0.1, 1.0]
    )
    with pytest.raises(ValueError, match=r"no price for model\(s\) \['d'\].*a typo"):
        routing.question_costs(table, ["a", "d"])
    with pytest.raises(ValueError, match=r"names model\(s\) \['b', 'c'\] that are not among"):
        routing.question_costs(table, ["a"], strict=True)
    with pytest.raises(ValueError, match="input_tokens=-1"):
        routing.question_costs(table, ["a"], input_tokens=-1)
    _table().drop(columns="usd_per_mtok_output").to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['usd_per_mtok_output'\]"):
        routing.read_prices(tmp_path / "p.csv")
    with pytest.raises(FileNotFoundError, match="no price table"):
        routing.read_prices(tmp_path / "missing.csv")


# ----------------------------------------------------------------------------------------------------
# IRT-Net's difficulty output, and a run on real data


def test_irt_net_difficulty_tracks_share_wrong(small_sim):
    ds, _ = small_sim
    split = split_by_question(ds, seed=0)
    model = IRTNet(encoder="simulated", training={"max_epochs": 8}, random_state=0).fit(ds, split)
    b = model.difficulty(ds)
    assert b.shape == (ds.n_items,) and np.isfinite(b).all()
    # logit = a . theta - b: raising b by 1 lowers every model's logit by 1
    assert spearmanr(b, difficulty.share_wrong(ds.labels)).statistic > 0.3
    with pytest.raises(NotFittedError, match="this IRTNet is not fitted yet"):
        IRTNet().difficulty(ds)


def test_fit_routers_on_a_slice(mmlu_pro):
    from jeirt.baselines import ModelAccuracy

    ds = mmlu_pro.subset(items=np.arange(0, mmlu_pro.n_items, 40))
    run = routing.fit_routers(ds, split_by_question(ds, seed=0), {"model accuracy": ModelAccuracy})
    table = run.compare(routing.question_costs(routing.read_prices(), ds.models))
    # ModelAccuracy predicts each model's training accuracy everywhere: it routes like the best single
    # model except where that model was not graded
    assert set(table.index) >= {"model accuracy", "best single model", "oracle"}
    assert table.loc["oracle", "accuracy"] >= table.loc["per-benchmark best", "accuracy"]
    assert table.loc["random model", "accuracy"] < table.loc["best single model", "accuracy"]
    assert run.scores["model accuracy"]["n"] == int(run.split.test.sum())


def test_fit_routers_side_by_side_is_the_same_run(mmlu_pro, tmp_path, monkeypatch):
    from jeirt.baselines import BenchmarkAccuracy, ModelAccuracy

    monkeypatch.setenv("JEIRT_FIT_CACHE", str(tmp_path))
    ds = mmlu_pro.subset(items=np.arange(0, mmlu_pro.n_items, 40))
    split = split_by_question(ds, seed=0)
    factories = {"model accuracy": ModelAccuracy, "benchmark accuracy": BenchmarkAccuracy}
    alone, side = routing.fit_routers(ds, split, factories), routing.fit_routers(ds, split, factories, n_jobs=2)
    assert list(side.probs) == list(factories) and len(list(tmp_path.glob("*.pt"))) == 2  # fitted, then cached
    for name in factories:
        np.testing.assert_array_equal(side.probs[name], alone.probs[name])


# ----------------------------------------------------------------------------------------------------
# `jeirt route` end to end


def test_cli_route(mmlu_pro, tmp_path, capsys):
    from jeirt.estimator import JEIRT

    ds = mmlu_pro.subset(items=np.arange(0, mmlu_pro.n_items, 20))  # 602 questions
    model = JEIRT(d=8, training={"max_epochs": 3}, random_state=0, progress=False).fit(ds)
    path = model.save(tmp_path / "m.pt")
    questions = ds.items.iloc[:5][["item_id", "benchmark", "text"]]
    questions.to_csv(tmp_path / "q.csv", index=False)
    out = tmp_path / "routes.csv"

    assert main(["route", "--model", str(path), "--questions", str(tmp_path / "q.csv"), "--out", str(out)]) == 0
    routes = pd.read_csv(out)
    probs = model.predict_proba(questions["text"].tolist())  # (n_models, 5)
    costs = routing.question_costs(routing.read_prices(), model.models_)
    assert routes.columns.tolist() == ["item_id", "benchmark", "model", "p_correct", "usd_per_1k_questions"]
    assert routes["p_correct"].to_numpy() == pytest.approx(probs.max(axis=0), abs=1e-5)
    assert routes["usd_per_1k_questions"].tolist() == pytest.approx(costs[routes["model"]].tolist())
    assert "mean_p_correct" in capsys.readouterr().out

    assert (
        main(
            [
                "route",
                "--model",
                str(path),
                "--questions",
                str(tmp_path / "q.csv"),
                "--out",
                str(out),
                "--lam",
                "1e6",
                "--prices",
                str(routing.default_prices()),
                "--force",
            ]
        )
        == 0
    )
    assert (pd.read_csv(out)["usd_per_1k_questions"] == costs.min()).all()

    routing.read_prices().iloc[1:].to_csv(tmp_path / "short.csv", index=False)  # one model unpriced
    capsys.readouterr()
    assert (
        main(
            [
                "route",
                "--model",
                str(path),
                "--questions",
                str(tmp_path / "q.csv"),
                "--prices",
                str(tmp_path / "short.csv"),
            ]
        )
        == 3
    )  # a data error (exit codes: `jeirt --help`)
    assert "no price for model(s)" in capsys.readouterr().err
    pd.DataFrame({"item_id": [], "text": []}).to_csv(tmp_path / "empty.csv", index=False)
    assert main(["route", "--model", str(path), "--questions", str(tmp_path / "empty.csv")]) == 3
    assert "no questions" in capsys.readouterr().err
