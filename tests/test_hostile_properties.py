"""Property-based hostile input (Hypothesis): generated results CSVs, questions CSVs and option values.

The contract every command keeps: exit 0 with finite outputs labelled by the names exactly as the
input wrote them, or one of the documented exit codes (2 usage, 3 data, 5 output, 6 environment) with
one line that names the input; never a traceback; never a changed input file. Each generator also
says whether its input is valid, and the command must agree: a valid file is read, an invalid one
refused. Examples are derandomized (the same on every run) and few enough for one core.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from jeirt.cli import CLIError, build_parser, main, validate

CODES = {2, 3, 5, 6}
EXAMPLES = {"results": 200, "questions": 60, "options": 400}
PROPERTY = dict(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_counter = itertools.count()

# Names a user might write: plain, look like NA or numbers to pandas, padded, empty, quoted, non-ASCII.
HOSTILE_NAMES = [
    "NA",
    "None",
    "nan",
    "null",
    "1e3",
    "0001",
    "TRUE",
    "-",
    "a,b",
    'say "hi"',
    "Athene-70B",
    " Athene-70B",
    "Athene-70B ",
    "",
    " ",
    "模型",
    "x\ny",
]
names = st.one_of(
    st.sampled_from(HOSTILE_NAMES), st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=0, max_size=6)
)
valid_names = st.one_of(
    st.sampled_from([n for n in HOSTILE_NAMES if n and n == n.strip()]),
    st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zs")), min_size=1, max_size=6),
)
VALID_LABELS = ["0", "1", "0.5", "1e0", "0.25", "1.0"]
labels = st.sampled_from(VALID_LABELS + ["maybe", "", "2", "-1", "nan", "inf", "1,0"])


def _valid_name(name: str) -> bool:
    return name != "" and name == name.strip()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    data = buffer.getvalue().encode("utf-8")
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)
    return path


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def _check_refusal(code: int, out: str, err: str, names_input: str) -> None:
    """A refusal: a documented code, one line on stderr naming the input, no traceback."""
    assert code in CODES, f"exit {code}: {err}"
    assert "Traceback" not in err + out and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and names_input in lines[0], err


@st.composite
def results_csvs(draw):
    """(header, rows, valid): a long results table; half the time from valid parts only (names that
    pandas would misread among them), else with hostile names, labels and headers."""
    clean = draw(st.booleans())
    name = valid_names if clean else names
    n = draw(st.integers(0 if not clean else 1, 6))
    models = draw(st.lists(name, min_size=1, max_size=3))
    items = draw(st.lists(name, min_size=1, max_size=4))
    rows = [
        [
            draw(st.sampled_from(models)),
            draw(st.sampled_from(items)),
            draw(st.sampled_from(VALID_LABELS) if clean else labels),
        ]
        for _ in range(n)
    ]
    if clean:  # one label per (model, item) pair
        rows = list({(r[0], r[1]): r for r in reversed(rows)}.values())[::-1]
    header = ["model", "item_id", "label"]
    shape = draw(
        st.sampled_from(
            ["plain", "benchmark"] if clean else ["plain", "plain", "benchmark", "dup-label", "padded", "no-label"]
        )
    )
    if shape == "benchmark":  # one benchmark per item, unless a row contradicts it
        header.append("benchmark")
        bench = {item: draw(valid_names) for item in items}
        rows = [row + [bench[row[1]] if clean or draw(st.booleans()) else draw(names)] for row in rows]
    elif shape == "dup-label":
        header.append("label")
        rows = [row + ["1"] for row in rows]
    elif shape == "padded":
        header[1] = " item_id"
    elif shape == "no-label":
        header, rows = header[:2], [row[:2] for row in rows]
    valid = (
        len(rows) > 0
        and shape in ("plain", "benchmark")
        and all(_valid_name(r[0]) and _valid_name(r[1]) and r[2] in VALID_LABELS for r in rows)
        and len({(r[0], r[1]) for r in rows}) == len(rows)
        and len({(r[1], tuple(r[3:])) for r in rows}) == len({r[1] for r in rows})
    )  # one benchmark an item
    return header, rows, valid


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("properties")


@hsettings(max_examples=EXAMPLES["results"], **PROPERTY)
@given(table=results_csvs(), gz=st.booleans())
def test_results_csv_contract(folder, capsys, table, gz):
    header, rows, valid = table
    event("valid" if valid else "invalid")
    path = _write_csv(folder / f"results{next(_counter)}.csv{'.gz' if gz else ''}", header, rows)
    before = _digest(path)
    out_json = folder / f"summary{next(_counter)}.json"
    code, out, err = _run(capsys, ["data", str(path), "--json", str(out_json)])
    assert _digest(path) == before
    if code == 0:
        assert valid, f"read an invalid file: {header} {rows}"
        summary = json.loads(out_json.read_text())
        assert summary["models"] == list(dict.fromkeys(r[0] for r in rows))  # every name as written
        for row in summary["benchmarks"]:
            assert all(v is None or isinstance(v, str) or math.isfinite(v) for v in row.values())
    else:
        assert not valid, f"refused a valid file ({err.strip()}): {header} {rows}"
        _check_refusal(code, out, err, str(path))
        assert not out_json.exists()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    """A tiny model fitted once for this file."""
    path = tmp_path_factory.mktemp("properties_model") / "model.pt"
    assert (
        main(
            [
                "fit",
                "--dataset",
                "mmlu_pro",
                "--limit-questions",
                "200",
                "--d",
                "8",
                "--max-epochs",
                "2",
                "--quiet",
                "--out",
                str(path),
            ]
        )
        == 0
    )
    return path


TEXTS = ["What is 2+2?", "Who wrote Hamlet?", "Name a prime above 10.", "Define entropy.", "", " ", "NA"]


@st.composite
def questions_csvs(draw):
    """(header, rows, valid): texts (few distinct, so each is encoded once) with optional item_ids."""
    n = draw(st.integers(0, 4))
    texts = [draw(st.sampled_from(TEXTS)) for _ in range(n)]
    with_ids = draw(st.booleans())
    if not with_ids:
        return ["text"], [[t] for t in texts], n > 0 and all(t.strip() for t in texts)
    ids = [draw(names) for _ in range(n)]
    valid = n > 0 and all(t.strip() for t in texts) and all(_valid_name(i) for i in ids) and len(set(ids)) == n
    return ["item_id", "text"], [[i, t] for i, t in zip(ids, texts)], valid


@hsettings(max_examples=EXAMPLES["questions"], **PROPERTY)
@given(table=questions_csvs())
def test_questions_csv_contract(folder, tiny_model, capsys, table):
    header, rows, valid = table
    event("valid" if valid else "invalid")
    path = _write_csv(folder / f"questions{next(_counter)}.csv", header, rows)
    before, model_before = _digest(path), _digest(tiny_model)
    out_csv = folder / f"probs{next(_counter)}.csv"
    code, out, err = _run(
        capsys, ["predict", "--model", str(tiny_model), "--questions", str(path), "--out", str(out_csv), "--quiet"]
    )
    assert _digest(path) == before and _digest(tiny_model) == model_before
    if code == 0:
        assert valid, f"read an invalid file: {rows}"
        probs = pd.read_csv(out_csv, dtype={"item_id": str}, keep_default_na=False, index_col="item_id")
        values = probs.to_numpy(dtype=np.float64)
        assert values.shape[0] == len(rows) and np.isfinite(values).all() and ((0 < values) & (values < 1)).all()
        if header[0] == "item_id":
            assert probs.index.tolist() == [r[0] for r in rows]  # every id as written
    else:
        assert not valid, f"refused a valid file ({err.strip()}): {rows}"
        _check_refusal(code, out, err, "--questions")
        assert not out_csv.exists()


numbers = st.one_of(st.integers(-3, 70_000), st.sampled_from(["nan", "inf", "-inf", "1e9", "x", "-0", "2.5"]))
lists = st.lists(st.sampled_from(["0", "1", "2", "01", "", " ", "x", "-1"]), min_size=1, max_size=4).map(",".join)
method_lists = st.lists(st.sampled_from(["je-irt", "knn", "mirt", "", "svm", "rasch"]), min_size=1, max_size=3).map(
    ",".join
)
dataset_lists = st.lists(st.sampled_from(["mmlu_pro", "zeroeval", "..", "no_such", ""]), min_size=1, max_size=3)


@st.composite
def command_lines(draw):
    """(argv, option values that must hold if the line is accepted)."""
    command = draw(st.sampled_from(["fit", "estimate", "compare", "suggest"]))
    if command == "fit":
        argv = ["fit", "--dataset", draw(st.sampled_from(["mmlu_pro", "zeroeval", "../x"]))]
        for option in ("--d", "--max-epochs", "--limit-questions", "--seed", "--search-budget"):
            if draw(st.booleans()):
                argv += [option, str(draw(numbers))]
        if draw(st.booleans()):
            argv += ["--encoder", draw(st.sampled_from(["minilm", "mpnet", "bogus", "", "MINILM"]))]
        if draw(st.booleans()):
            argv += ["--out", draw(st.sampled_from(["m.pt", "m.csv", "", "m"]))]
    elif command == "estimate":
        argv = ["estimate", "--model", "{model}", "--dataset", "mmlu_pro", "--results", "{model}"]
        for option in ("--draws", "--level", "--seed"):
            if draw(st.booleans()):
                argv += [option, str(draw(st.one_of(numbers, st.floats(-2, 2).map(repr))))]
    elif command == "suggest":
        argv = ["suggest", "--model", "{model}", "--dataset", "mmlu_pro", "--k", str(draw(numbers))]
        if draw(st.booleans()):
            argv += ["--llms", draw(st.lists(names, min_size=1, max_size=3).map(",".join))]
    else:
        argv = ["compare"]
        for name in draw(dataset_lists):
            argv += ["--dataset", name]
        argv += ["--seeds", draw(lists), "--methods", draw(method_lists)]
        if draw(st.booleans()):
            argv += ["--split", draw(st.sampled_from(["question", "known:3", "known:x", "without:math", "random"]))]
    return argv


@hsettings(max_examples=EXAMPLES["options"], **PROPERTY)
@given(argv=command_lines())
def test_option_values_contract(folder, tiny_model, argv):
    argv = [a.replace("{model}", str(tiny_model)) for a in argv]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # argparse's own usage error (not a number, say)
        assert exit_.code == 2
        return
    try:
        validate(args)
    except CLIError as err:
        event(f"refused with exit {err.code}")
        assert err.code in CODES and len(str(err).splitlines()) == 1
        assert "--" in str(err) or "JEIRT_" in str(err), str(err)  # names the option
        return
    event("accepted")
    # Accepted: every value is in range and finite, every list without empty or repeated names.
    for dest in ("d", "max_epochs", "limit_questions", "k"):
        value = getattr(args, dest, None)
        assert value is None or value >= 1
    assert getattr(args, "seed", 0) >= 0
    for dest in ("search_budget", "level"):
        value = getattr(args, dest, None)
        assert value is None or math.isfinite(value)
    assert getattr(args, "draws", 2) >= 2
    if getattr(args, "out", None) is not None:
        assert args.out.strip() and args.out.endswith(".pt")
    for dest in ("seeds", "methods", "models"):
        raw = getattr(args, dest, None)
        if raw is not None:
            parts = [p.strip() for p in raw.split(",")]
            assert all(parts) and len(set(parts)) == len(parts)
            if dest == "seeds":
                assert len({int(p) for p in parts}) == len(parts)
    if args.command == "compare":
        assert len(set(args.dataset)) == len(args.dataset) and all(args.dataset)
