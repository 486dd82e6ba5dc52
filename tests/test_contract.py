"""One contract, declared once: every numeric option of the command line is checked against the
library's declaration of the parameter it feeds (`jeirt.params`), the command line declares no range
of its own, and the library's entry points refuse what the command line refuses, naming the argument."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import numpy as np
import pytest

from jeirt import params
from jeirt.cli import build_parser, main
from jeirt.cli.checks import OPTION_PARAMS

CLI = Path(__file__).resolve().parents[1] / "jeirt" / "cli"


def _numeric_options() -> dict[str, set[str]]:
    """dest -> the commands whose parser takes it as an int or a float."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    found: dict[str, set[str]] = {}
    for name, sub in commands.items():
        for action in sub._actions:
            if action.type in (int, float):
                found.setdefault(action.dest, set()).add(name)
    return found


def test_every_numeric_option_is_checked_against_a_library_declaration():
    declared = [c for constraints in params.DECLARED.values() for c in constraints.values()]
    numeric = _numeric_options()
    assert set(numeric) <= set(OPTION_PARAMS), f"options without a declaration: {set(numeric) - set(OPTION_PARAMS)}"
    for dest, constraint in OPTION_PARAMS.items():
        assert any(constraint is c for c in declared), f"--{dest}'s range is not one the library declares"


def test_the_command_line_declares_no_range_of_its_own():
    """No comparison of a value with a number literal in jeirt/cli/ (the ranges live in jeirt.params),
    but for counting (a name given more than once) and printing (clipping to [0, 1])."""
    allowed = {"parts.count(p) > 1", "table[columns] < 0", "table[columns] > 1"}
    found = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                literal = [s for s in sides if isinstance(s, ast.Constant) and type(s.value) in (int, float)]
                if literal and ast.unparse(node) not in allowed:
                    found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert not found, found


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["fit", "--dataset", "mmlu_pro", "--search-budget", "0"], "--search-budget 0.0: expected a number of seconds"),
        (["fit", "--dataset", "mmlu_pro", "--d", "0"], "--d 0: expected an embedding dimension"),
        (["fit", "--dataset", "mmlu_pro", "--max-epochs", "0"], "--max-epochs 0"),
        (["estimate", "--model", "m.pt", "--dataset", "x", "--results", "r.csv", "--level", "1"], "--level 1.0"),
        (["route", "--model", "m.pt", "--questions", "q.csv", "--lam", "-1"], "--lam -1.0"),
        (["compare", "--dataset", "mmlu_pro", "--threads", "0"], "--threads 0"),
    ],
)
def test_an_option_outside_its_declared_range_is_a_usage_error(capsys, argv, fragment):
    """`jeirt fit --search-budget 0` passed the command line, loaded the data, then failed in `fit` and
    exited 3; now the one declaration refuses it first: exit 2."""
    assert main(argv) == 2
    assert fragment in capsys.readouterr().err


def test_the_library_refuses_what_the_command_line_refuses(mmlu_pro):
    """The same declaration, the same refusal, naming the argument (some gave a numpy or Python error
    that named none)."""
    from jeirt.estimator import JEIRT
    from jeirt.splits import sample_items
    from jeirt.tasks import routing
    from jeirt.tasks.evaluation import QuestionBank, score_new_models, suggest_questions

    ds = mmlu_pro.subset(items=np.arange(0, 12032, 200))
    for kwargs, name in [
        ({"search_budget": 0}, "search_budget"),
        ({"d": 8.0}, "d"),
        ({"random_state": "a"}, "random_state"),
        ({"dropout": "x"}, "dropout"),
        ({"training": {"max_epochs": 0}}, "max_epochs"),
    ]:
        with pytest.raises(params.InvalidParameter, match=f"{name}="):
            JEIRT(**kwargs)._check_params()
    with pytest.raises(params.InvalidParameter, match="n=0"):
        sample_items(ds.items["benchmark"].to_numpy(), 0, np.random.default_rng(0))
    with pytest.raises(params.InvalidParameter, match="lam=-1"):
        routing.choose(np.ones((2, 3)), lam=-1)
    vectors = np.random.default_rng(0).standard_normal((10, 4))
    bank = QuestionBank.from_embeddings(np.random.default_rng(1).standard_normal((60, 4)), vectors)
    labels = np.full((1, 60), np.nan)
    labels[0, :10] = 1.0
    for kwargs, name in [({"draws": -1}, "draws"), ({"draws": 1}, "draws"), ({"level": 2}, "level")]:
        with pytest.raises(params.InvalidParameter, match=f"{name}="):
            score_new_models(bank, labels, **kwargs)
    for k, kwargs, name in [("5", {}, "k"), (2.5, {}, "k"), (3, {"seed": -1}, "seed")]:
        with pytest.raises(params.InvalidParameter, match=f"{name}="):
            suggest_questions(bank, labels, k, **kwargs)  # type: ignore[arg-type]
    from jeirt.data import read_results_csv
    from jeirt.splits import split_by_question

    for call, fragment in [
        (lambda: JEIRT.load(5), "path=5"),
        (lambda: read_results_csv(5), "path=5"),
        (lambda: split_by_question("mmlu_pro"), "split_by_question takes a jeirt.data.Dataset"),
    ]:
        with pytest.raises(TypeError, match=fragment):
            call()
    with pytest.raises(TypeError, match="from_long takes the results as a pandas DataFrame"):
        from jeirt.data import from_long

        from_long(ds)  # type: ignore[arg-type]


def test_a_declaration_reads_as_its_range():
    assert params.JEIRT_PARAMS["d"].describe() == "an embedding dimension (a whole number) between 1 and 65536"
    assert params.SCORE_PARAMS["level"].describe() == "an interval level in (0, 1)"
    assert not params.SEED.admits(True) and not params.SEED.admits(2.0) and params.SEED.admits(np.int64(3))
    assert not params.ROUTE_PARAMS["lam"].admits(float("inf")) and params.JEIRT_PARAMS["dropout"].admits(None)
