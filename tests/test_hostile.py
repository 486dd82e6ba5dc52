"""Hostile input to every `jeirt` command: each bad input gets its exit code and a message naming the
argument or file, never a traceback or a silent NaN; a kill during a save leaves a model that loads.

The catalogue runs the CLI in-process (`jeirt.cli.main`); the kill tests start real processes.
Exit codes: 2 usage, 3 data, 4 model file, 5 output, 6 environment (see `jeirt --help`).
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from jeirt import files, settings
from jeirt.cli import build_parser, main
from jeirt.estimator import JEIRT

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # write_manifest

TINY_FIT = ["--limit-questions", "200", "--d", "8", "--max-epochs", "2", "--quiet"]


@pytest.fixture(scope="module")
def work(tmp_path_factory, mmlu_pro) -> Path:
    """A folder with a tiny fitted model and the input files the catalogue refers to."""
    root = tmp_path_factory.mktemp("hostile")
    assert main(["fit", "--dataset", "mmlu_pro", *TINY_FIT, "--out", str(root / "model.pt")]) == 0
    (root / "folder.csv").mkdir()
    (root / "empty.pt").write_bytes(b"")
    (root / "header_only.csv").write_text("item_id,text\n")
    (root / "results_header_only.csv").write_text("model,item_id,label\n")
    pd.DataFrame({"item_id": ["a", "a"], "text": ["What is 2+2?", "Who wrote Hamlet?"]}).to_csv(
        root / "dup_ids.csv", index=False
    )
    pd.DataFrame({"item_id": ["a", "b"], "text": ["What is 2+2?", "Who wrote Hamlet?"]}).to_csv(
        root / "questions.csv", index=False
    )
    rows = mmlu_pro.to_long()
    rows = rows[rows["model"] == mmlu_pro.models[0]].head(60).assign(model="newcomer")
    rows.to_csv(root / "answers.csv", index=False)
    rows[["item_id", "label"]].to_csv(root / "no_model_column.csv", index=False)
    rows.assign(label=np.where(np.arange(len(rows)) % 2, "maybe", "1")).to_csv(root / "bad_labels.csv", index=False)
    # a results CSV without a text column: questions that cannot be encoded
    ds_rows = mmlu_pro.to_long()
    ds_rows[ds_rows["item_id"].isin(mmlu_pro.items["item_id"][:80])].to_csv(root / "no_text.csv", index=False)
    prices = pd.read_csv(Path(__import__("jeirt.tasks.routing", fromlist=["x"]).__file__).parent / "prices.csv")
    priced = pd.DataFrame({"model": mmlu_pro.models, "usd_per_mtok_input": 1.0, "usd_per_mtok_output": 2.0})
    priced.loc[0, "usd_per_mtok_input"] = np.inf
    priced.to_csv(root / "inf_prices.csv", index=False)
    assert len(prices)  # the shipped table exists and reads
    blob = torch.load(root / "model.pt", weights_only=True)
    _save_edited(blob, root / "extra_key.pt", lambda b: b["config"].update(colour="blue"))
    _save_edited(blob, root / "dup_names.pt", lambda b: b.update(models=[b["models"][0]] * len(b["models"])))
    _save_edited(blob, root / "wrong_features.pt", lambda b: b.update(feature_dim=b["feature_dim"] + 1))
    _save_edited(blob, root / "no_state.pt", lambda b: b.pop("state_dict"))
    torch.save({"format": "jeirt-model", "payload": Evil()}, root / "pickle.pt")
    (root / "truncated.pt").write_bytes((root / "model.pt").read_bytes()[:1000])
    (root / "cache_file").write_text("not a folder")
    (root / "existing.json").write_text("{}")
    (root / "existing.csv").write_text("x\n1\n")
    (root / "beside.json").write_text("{}")
    (root / "latin1.csv").write_bytes(b"item_id,text\na,caf\xe9 au lait?\n")
    (root / "ragged.csv").write_text('item_id,text\na,"What is 2+2?\nb,unclosed\n')
    return root


class Evil:
    """A pickle that would run code if unpickled without weights_only."""

    def __reduce__(self):
        return (os.system, ("echo pwned",))


def _save_edited(blob: dict, path: Path, edit) -> None:
    import copy

    blob = copy.deepcopy(blob)
    edit(blob)
    torch.save(blob, path)


# A message says what to do: an instruction, or what was expected (issue 54 counted 59 refusals that
# said only what was wrong).
ADVICE = re.compile(
    r"\b(give|use|pass|add|check|choose|restore|refit|point|set|unset|install|remove|keep|write|delete|create|"
    r"free|wait|rerun|run|leave|connect|end|onboard|load|cut|put|rename|upgrade|save|encode|clone|make|expected|"
    r"expects|must|refuses|lists what it takes)\b",
    re.IGNORECASE,
)


def says_what_to_do(message: str) -> bool:
    """Whether an error message names a fix (an instruction or the accepted values)."""
    return bool(ADVICE.search(message.split(":", 1)[-1]))


M = "{w}/model.pt"
# (case id, argv with {w} for the work folder, exit code, fragments the message must hold)
CASES = [
    # -- usage (2): options out of range, paths naming nothing, a folder given as a CSV
    ("d-zero", ["fit", "--dataset", "mmlu_pro", "--d", "0"], 2, ["--d 0", "between 1 and 65536"]),
    ("d-huge", ["fit", "--dataset", "mmlu_pro", "--d", "1000000000"], 2, ["--d 1000000000"]),
    ("epochs-zero", ["fit", "--dataset", "mmlu_pro", "--max-epochs", "0"], 2, ["--max-epochs 0"]),
    ("epochs-negative", ["fit", "--dataset", "mmlu_pro", "--max-epochs", "-1"], 2, ["--max-epochs -1"]),
    ("limit-zero", ["fit", "--dataset", "mmlu_pro", "--limit-questions", "0"], 2, ["--limit-questions 0"]),
    ("limit-negative", ["fit", "--dataset", "mmlu_pro", "--limit-questions", "-5"], 2, ["--limit-questions -5"]),
    ("seed-negative", ["fit", "--dataset", "mmlu_pro", "--seed", "-1"], 2, ["--seed -1"]),
    ("device-unknown", ["fit", "--dataset", "mmlu_pro", "--device", "tpu9"], 2, ["--device", "tpu9"]),
    ("not-an-int", ["fit", "--dataset", "mmlu_pro", "--d", "many"], 2, []),
    ("dataset-outside-data", ["fit", "--dataset", "../../etc"], 2, ["--dataset", "JEIRT_DATA"]),
    ("dataset-dotdot", ["data", ".."], 2, ["--dataset", "JEIRT_DATA"]),
    ("dataset-unknown", ["fit", "--dataset", "no_such_dataset"], 2, ["no_such_dataset", "JEIRT_DATA"]),
    ("dataset-folder-csv", ["fit", "--dataset", "{w}/folder.csv"], 2, ["folder.csv is a folder"]),
    ("model-missing", ["evaluate", "--model", "{w}/nope.pt", "--dataset", "mmlu_pro"], 2, ["--model", "no such file"]),
    ("model-folder", ["evaluate", "--model", "{w}/folder.csv", "--dataset", "mmlu_pro"], 2, ["--model", "folder"]),
    ("predict-folder", ["predict", "--model", M, "--questions", "{w}/folder.csv"], 2, ["--questions", "folder"]),
    ("route-folder", ["route", "--model", M, "--questions", "{w}/folder.csv"], 2, ["--questions", "folder"]),
    (
        "route-prices-folder",
        ["route", "--model", M, "--questions", "{w}/questions.csv", "--prices", "{w}/folder.csv"],
        2,
        ["--prices", "folder"],
    ),
    (
        "onboard-results-folder",
        ["onboard", "--model", M, "--results", "{w}/folder.csv", "--out", "{w}/o.pt"],
        2,
        ["--results", "folder"],
    ),
    (
        "onboard-items-folder",
        ["onboard", "--model", M, "--results", "{w}/answers.csv", "--questions", "{w}/folder.csv", "--out", "{w}/o.pt"],
        2,
        ["--questions", "folder"],
    ),
    (
        "estimate-results-folder",
        ["estimate", "--model", M, "--dataset", "mmlu_pro", "--results", "{w}/folder.csv"],
        2,
        ["--results", "folder"],
    ),
    (
        "draws-zero",
        ["estimate", "--model", M, "--dataset", "mmlu_pro", "--results", "{w}/answers.csv", "--draws", "0"],
        2,
        ["--draws 0"],
    ),
    (
        "draws-negative",
        ["estimate", "--model", M, "--dataset", "mmlu_pro", "--results", "{w}/answers.csv", "--draws", "-3"],
        2,
        ["--draws -3"],
    ),
    (
        "level-one",
        ["estimate", "--model", M, "--dataset", "mmlu_pro", "--results", "{w}/answers.csv", "--level", "1"],
        2,
        ["--level 1"],
    ),
    ("k-zero", ["suggest", "--model", M, "--dataset", "mmlu_pro", "--k", "0"], 2, ["--k 0"]),
    ("lam-inf", ["route", "--model", M, "--questions", "{w}/questions.csv", "--lam", "inf"], 2, ["--lam inf"]),
    ("lam-negative", ["route", "--model", M, "--questions", "{w}/questions.csv", "--lam", "-1"], 2, ["--lam -1"]),
    ("threads-zero", ["compare", "--dataset", "mmlu_pro", "--threads", "0"], 2, ["--threads 0"]),
    ("seeds-not-numbers", ["compare", "--dataset", "mmlu_pro", "--seeds", "0,x"], 2, ["--seeds", "0,x"]),
    ("seeds-negative", ["compare", "--dataset", "mmlu_pro", "--seeds", "-1"], 2, ["--seeds"]),
    (
        "onboard-no-target",
        ["onboard", "--model", M, "--results", "{w}/answers.csv", "--dataset", "mmlu_pro"],
        2,
        ["--out", "--in-place"],
    ),
    (
        "onboard-out-and-in-place",
        [
            "onboard",
            "--model",
            M,
            "--results",
            "{w}/answers.csv",
            "--dataset",
            "mmlu_pro",
            "--out",
            "{w}/o.pt",
            "--in-place",
        ],
        2,
        ["not both"],
    ),
    # -- data (3): malformed or unfitting contents
    ("predict-header-only", ["predict", "--model", M, "--questions", "{w}/header_only.csv"], 3, ["no questions"]),
    ("predict-dup-ids", ["predict", "--model", M, "--questions", "{w}/dup_ids.csv"], 3, ["repeats item_id", "'a'"]),
    ("predict-latin1", ["predict", "--model", M, "--questions", "{w}/latin1.csv"], 3, ["--questions", "UTF-8"]),
    ("predict-ragged", ["predict", "--model", M, "--questions", "{w}/ragged.csv"], 3, ["--questions", "CSV"]),
    ("route-header-only", ["route", "--model", M, "--questions", "{w}/header_only.csv"], 3, ["no questions"]),
    (
        "route-inf-price",
        ["route", "--model", M, "--questions", "{w}/questions.csv", "--prices", "{w}/inf_prices.csv", "--lam", "0.1"],
        3,
        ["infinite", "usd_per_mtok_input"],
    ),
    ("fit-header-only", ["fit", "--dataset", "{w}/results_header_only.csv"], 3, ["--dataset"]),
    ("data-bad-labels", ["data", "{w}/bad_labels.csv"], 3, ["--dataset", "not numbers"]),
    (
        "onboard-no-model-column",
        ["onboard", "--model", M, "--results", "{w}/no_model_column.csv", "--dataset", "mmlu_pro", "--out", "{w}/o.pt"],
        3,
        ["--results", "model"],
    ),
    (
        "onboard-known-model",
        ["onboard", "--model", M, "--results", "{w}/no_text.csv", "--dataset", "mmlu_pro", "--out", "{w}/o.pt"],
        3,
        ["already fitted", "--replace"],
    ),
    ("evaluate-no-text", ["evaluate", "--model", M, "--dataset", "{w}/no_text.csv"], 3, ["no text", "text"]),
    (
        "estimate-no-text",
        ["estimate", "--model", M, "--dataset", "{w}/no_text.csv", "--results", "{w}/answers.csv"],
        3,
        ["no text"],
    ),
    (
        "suggest-header-only",
        ["suggest", "--model", M, "--dataset", "mmlu_pro", "--k", "5", "--results", "{w}/results_header_only.csv"],
        3,
        ["--results", "no results"],
    ),
    # -- model file (4)
    ("model-empty", ["evaluate", "--model", "{w}/empty.pt", "--dataset", "mmlu_pro"], 4, ["empty.pt", "0 bytes"]),
    (
        "model-truncated",
        ["evaluate", "--model", "{w}/truncated.pt", "--dataset", "mmlu_pro"],
        4,
        ["truncated.pt", "cut short"],
    ),
    ("model-pickle", ["evaluate", "--model", "{w}/pickle.pt", "--dataset", "mmlu_pro"], 4, ["pickle.pt", "refuses"]),
    (
        "model-not-jeirt",
        ["predict", "--model", "{w}/questions.csv", "--questions", "{w}/questions.csv", "--out", "{w}/p.csv"],
        4,
        ["--model", "not a torch file"],
    ),
    ("model-extra-key", ["evaluate", "--model", "{w}/extra_key.pt", "--dataset", "mmlu_pro"], 4, ["colour"]),
    ("model-dup-names", ["evaluate", "--model", "{w}/dup_names.pt", "--dataset", "mmlu_pro"], 4, ["more than once"]),
    (
        "model-wrong-features",
        ["evaluate", "--model", "{w}/wrong_features.pt", "--dataset", "mmlu_pro"],
        4,
        ["wrong_features.pt", "do not fit", "size mismatch"],
    ),
    ("model-no-state", ["evaluate", "--model", "{w}/no_state.pt", "--dataset", "mmlu_pro"], 4, ["state_dict"]),
    # -- output (5): checked before any work
    (
        "out-is-input",
        ["predict", "--model", M, "--questions", "{w}/questions.csv", "--out", "{w}/questions.csv"],
        5,
        ["never overwrites an input"],
    ),
    (
        "out-is-input-forced",
        ["predict", "--model", M, "--questions", "{w}/questions.csv", "--out", "{w}/questions.csv", "--force"],
        5,
        ["never overwrites an input"],
    ),
    ("json-is-model", ["evaluate", "--model", M, "--dataset", "mmlu_pro", "--json", M], 5, ["--json", "input"]),
    (
        "onboard-out-is-model",
        ["onboard", "--model", M, "--results", "{w}/answers.csv", "--dataset", "mmlu_pro", "--out", M],
        5,
        ["--in-place"],
    ),
    (
        "out-is-dataset-file",
        ["data", "mmlu_pro", "--json", "{data}/mmlu_pro/items.csv.gz"],
        5,  # no --force: safe
        ["never overwrites an input"],
    ),
    ("out-exists", ["fit", "--dataset", "mmlu_pro", "--out", M], 5, ["exists", "--force"]),
    ("json-exists", ["data", "--json", "{w}/existing.json"], 5, ["exists", "--force"]),
    ("out-folder", ["fit", "--dataset", "mmlu_pro", "--out", "{w}/folder.csv"], 5, ["is a folder"]),
    ("out-missing-folder", ["fit", "--dataset", "mmlu_pro", "--out", "{w}/no/such/m.pt"], 5, ["does not exist"]),
    ("out-unwritable", ["data", "--json", "/proc/jeirt.json"], 5, ["cannot be written"]),
    ("out-equals-json", ["fit", "--dataset", "mmlu_pro", "--out", "{w}/a.pt", "--json", "{w}/a.pt"], 5, ["same file"]),
    (
        "suggest-out-exists",
        ["suggest", "--model", M, "--dataset", "mmlu_pro", "--k", "3", "--out", "{w}/existing.csv"],
        5,
        ["exists"],
    ),
    (
        "compare-json-beside-exists",
        ["compare", "--dataset", "mmlu_pro", "--out", "{w}/beside.csv"],
        5,
        ["beside.json exists"],
    ),
]


@pytest.mark.parametrize("case, argv, code, fragments", CASES, ids=[c[0] for c in CASES])
def test_hostile_input(work, capsys, monkeypatch, case, argv, code, fragments):
    monkeypatch.chdir(work)
    started = time.perf_counter()
    got = main([a.replace("{w}", str(work)).replace("{data}", str(settings.data_dir())) for a in argv])
    out = capsys.readouterr()
    assert got == code, f"{case}: exit {got}, expected {code}; stderr: {out.err}"
    assert "Traceback" not in out.err and "Traceback" not in out.out
    message = out.err.strip()
    assert message, f"{case}: no message"
    for fragment in fragments:
        assert fragment in message, f"{case}: {fragment!r} not in {message!r}"
    assert "weights_only=False" not in message and "nan" not in out.out.lower()
    assert says_what_to_do(message), f"{case}: the message does not say what to do: {message!r}"
    if code in (2, 5):  # refused before any work: no training, no encoding
        assert time.perf_counter() - started < 10, f"{case}: refused only after work"


def test_cache_pointing_at_a_file(work, capsys, monkeypatch):
    monkeypatch.setenv("JEIRT_CACHE", str(work / "cache_file"))
    code = main(["predict", "--model", str(work / "model.pt"), "--questions", str(work / "questions.csv")])
    err = capsys.readouterr().err
    assert code == 6 and "JEIRT_CACHE" in err and "cache_file" in err and "Traceback" not in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_gpu(capsys):
    assert main(["fit", "--dataset", "mmlu_pro", "--device", "cuda"]) == 6
    assert "no CUDA GPU" in capsys.readouterr().err


def test_device_from_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("JEIRT_DEVICE", "tpu9")
    assert main(["fit", "--dataset", "mmlu_pro"]) == 2
    assert "JEIRT_DEVICE 'tpu9'" in capsys.readouterr().err


def test_debug_shows_the_traceback(work, capsys):
    code = main(["--debug", "evaluate", "--model", str(work / "empty.pt"), "--dataset", "mmlu_pro"])
    assert code == 4 and "Traceback" in capsys.readouterr().err


def test_force_replaces_and_writes_atomically(work, capsys):
    target = work / "existing.json"
    assert main(["data", "--json", str(target), "--force"]) == 0
    assert '"datasets"' in target.read_text()
    assert not list(work.glob(".tmp-*"))  # no temporary file left beside it


def test_onboard_in_place_and_to_a_new_file(work, tmp_path, capsys):
    model = tmp_path / "m.pt"
    model.write_bytes((work / "model.pt").read_bytes())
    answers = str(work / "answers.csv")
    assert (
        main(
            [
                "onboard",
                "--model",
                str(model),
                "--results",
                answers,
                "--dataset",
                "mmlu_pro",
                "--out",
                str(tmp_path / "m2.pt"),
            ]
        )
        == 0
    )
    assert "newcomer" in JEIRT.load(tmp_path / "m2.pt").models_ and "newcomer" not in JEIRT.load(model).models_
    assert main(["onboard", "--model", str(model), "--results", answers, "--dataset", "mmlu_pro", "--in-place"]) == 0
    assert "newcomer" in JEIRT.load(model).models_


def test_predict_and_route_outputs(work, tmp_path, capsys):
    probs, routes = tmp_path / "p.csv", tmp_path / "r.csv"
    model, questions = str(work / "model.pt"), str(work / "questions.csv")
    assert main(["predict", "--model", model, "--questions", questions, "--out", str(probs)]) == 0
    table = pd.read_csv(probs, index_col="item_id")
    assert table.shape == (2, 33) and np.isfinite(table.to_numpy()).all()
    assert main(["route", "--model", model, "--questions", questions, "--lam", "0.1", "--out", str(routes)]) == 0
    assert main(["route", "--model", model, "--questions", questions, "--out", str(routes)]) == 5
    assert main(["route", "--model", model, "--questions", questions, "--out", str(routes), "--force"]) == 0


def test_stale_temporaries_are_removed(tmp_path, monkeypatch):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    orphan = tmp_path / f".tmp-{int(dead.stdout)}-{'0' * 32}-model.pt"
    mine = tmp_path / f".tmp-{os.getpid()}-{'1' * 32}-other.pt"
    orphan.write_bytes(b"half")
    mine.write_bytes(b"in progress")
    monkeypatch.setattr(files, "STALE_SECONDS", -1.0)
    files.write_text(tmp_path / "x.txt", "x")
    assert not orphan.exists() and mine.exists() and (tmp_path / "x.txt").read_text() == "x"


# ----------------------------------------------------------------------------------------------------
# Round two, by class: one reader for user CSVs; one policy for output paths; option checks before any
# data; damaged files and failed writes under their exit codes; compare's two files as one unit.


@pytest.fixture(scope="module")
def hostile_files(work, mmlu_pro) -> Path:
    """More bad inputs beside the catalogue's, in the same folder."""
    rows = pd.read_csv(work / "answers.csv", dtype=str, keep_default_na=False)
    rows.assign(model=" newcomer").to_csv(work / "padded_model.csv", index=False)
    rows.assign(model="newcomer ").to_csv(work / "trailing_model.csv", index=False)
    rows.assign(model=np.where(np.arange(len(rows)) == 3, "", "newcomer")).to_csv(work / "empty_model.csv", index=False)
    rows.assign(item_id=np.where(np.arange(len(rows)) == 2, " " + rows["item_id"], rows["item_id"])).to_csv(
        work / "padded_item.csv", index=False
    )
    rows.assign(model="x", label="1").to_csv(work / "one_class.csv", index=False)
    (work / "dup_header.csv").write_text(f"model,item_id,label,label\nm,{rows['item_id'].iloc[0]},1,0\n")
    (work / "padded_header.csv").write_text(f"model, item_id,label,Item_ID\nm,{rows['item_id'].iloc[0]},1,x\n")
    (work / "ragged_results.csv").write_text(f"model,item_id,label\nm,{rows['item_id'].iloc[0]},1,extra\n")
    (work / "q_dup_header.csv").write_text("item_id,text,text\na,What is 2+2?,again\n")
    (work / "q_empty_id.csv").write_text("item_id,text\na,What is 2+2?\n,Who wrote Hamlet?\n")
    (work / "q_padded_id.csv").write_text("item_id,text\na ,What is 2+2?\n")
    (work / "q_no_text.csv").write_text("item_id,question\na,What is 2+2?\n")
    (work / "q_NA.csv").write_text("item_id,text\nNA,What is 2+2?\nNone,Who wrote Hamlet?\n")
    (work / "bad_label_row.csv").write_text(
        f"model,item_id,label\nm,{rows['item_id'].iloc[0]},1\nm,{rows['item_id'].iloc[1]},maybe\n"
    )
    (work / "items_dup.csv").write_text("item_id,text\nq1,What is 2+2?\nq1,Who wrote Hamlet?\n")
    (work / "custom_results.csv").write_text("model,item_id,label\nm,q1,1\nm,q2,0\n")
    raw = (work / "answers.csv").read_bytes()
    (work / "truncated.csv.gz").write_bytes(gzip.compress(raw)[: len(gzip.compress(raw)) // 2])
    (work / "not_gzip.csv.gz").write_bytes(raw)
    os.mkfifo(work / "fifo.csv")
    os.symlink(work / "questions.csv", work / "link_to_questions.csv")
    os.symlink(settings.data_dir() / "mmlu_pro", work / "link_to_dataset")
    (work / "two_texts.csv").write_text("model,item_id,label,text\na,q1,1,What is 2+2?\nb,q1,0,What is 3+3?\n")
    (work / "nul_model.csv").write_bytes(b"model,item_id,label\na\x00b,q1,1\nc,q1,0\n")
    (work / "q_nul_text.csv").write_bytes(b"item_id,text\nq1,What is\x00 2+2?\nq2,Name a colour.\n")
    return work


LONG = "p" * 260
ROUND_TWO = {  # class -> (case id, argv, exit code, fragments of the message)
    "input": [
        ("padded-model", ["data", "{w}/padded_model.csv"], 3, ["' newcomer'", "data row 1", "spaces"]),
        (
            "trailing-model",
            [
                "onboard",
                "--model",
                M,
                "--results",
                "{w}/trailing_model.csv",
                "--dataset",
                "mmlu_pro",
                "--out",
                "{w}/o.pt",
            ],
            3,
            ["--results", "'newcomer '"],
        ),
        ("empty-model", ["data", "{w}/empty_model.csv"], 3, ["data row 4", "empty"]),
        ("padded-item-id", ["data", "{w}/padded_item.csv"], 3, ["item_id", "data row 3"]),
        ("duplicate-header", ["data", "{w}/dup_header.csv"], 3, ["--dataset", "['label'] more than once"]),
        (
            "padded-header",
            ["data", "{w}/padded_header.csv"],
            3,
            ["['item_id'] more than once", "' item_id'", "'Item_ID'"],
        ),
        ("ragged-results", ["data", "{w}/ragged_results.csv"], 3, ["more cells than the header"]),
        ("nul-in-model", ["data", "{w}/nul_model.csv"], 3, ["'model'", "NUL bytes", "data rows [1]"]),
        (
            "nul-in-question-text",
            ["predict", "--model", M, "--questions", "{w}/q_nul_text.csv"],
            3,
            ["--questions", "'text'", "NUL bytes"],
        ),
        (
            "questions-dup-header",
            ["predict", "--model", M, "--questions", "{w}/q_dup_header.csv"],
            3,
            ["--questions", "more than once"],
        ),
        (
            "questions-empty-id",
            ["predict", "--model", M, "--questions", "{w}/q_empty_id.csv"],
            3,
            ["--questions", "data row 2", "empty"],
        ),
        ("questions-padded-id", ["route", "--model", M, "--questions", "{w}/q_padded_id.csv"], 3, ["'a '"]),
        (
            "questions-no-text",
            ["predict", "--model", M, "--questions", "{w}/q_no_text.csv"],
            3,
            ["--questions", "lacks column(s) ['text']"],
        ),
        (
            "fit-no-text",
            ["fit", "--dataset", "{w}/no_text.csv", "--d", "4", "--max-epochs", "1", "--quiet"],
            3,
            ["no text", "'text' column"],
        ),
        (
            "onboard-no-text",
            ["onboard", "--model", M, "--results", "{w}/custom_results.csv", "--out", "{w}/o.pt"],
            3,
            ["--results", "no text"],
        ),
        (
            "estimate-bad-label-row",
            ["estimate", "--model", M, "--dataset", "mmlu_pro", "--results", "{w}/bad_label_row.csv"],
            3,
            ["--results", "data rows [2]", "'maybe'"],
        ),
        (
            "suggest-padded-results",
            ["suggest", "--model", M, "--dataset", "mmlu_pro", "--k", "2", "--results", "{w}/padded_model.csv"],
            3,
            ["--results", "spaces"],
        ),
        ("one-item-two-texts", ["data", "{w}/two_texts.csv"], 3, ["'q1'", "different text", "data rows [1, 2]"]),
        (
            "items-repeated",
            [
                "onboard",
                "--model",
                M,
                "--results",
                "{w}/custom_results.csv",
                "--questions",
                "{w}/items_dup.csv",
                "--out",
                "{w}/o.pt",
            ],
            3,
            ["--questions", "items_dup.csv", "'q1'"],
        ),
    ],
    "output": [
        (
            "json-manifest-forced",
            ["data", "verify", "--json", "{data}/checksums.json", "--force"],
            5,
            ["checksum manifest", "with or without --force"],
        ),
        (
            "json-dataset-file-forced",
            ["data", "mmlu_pro", "--json", "{data}/zeroeval/items.csv.gz", "--force"],
            5,
            ["dataset folder"],
        ),
        ("json-new-file-in-dataset", ["data", "--json", "{data}/mmlu_pro/summary.json"], 5, ["dataset folder"]),
        (
            "out-package-file-forced",
            [
                "route",
                "--model",
                M,
                "--questions",
                "{w}/questions.csv",
                "--out",
                "{package}/tasks/prices.csv",
                "--force",
            ],
            5,
            ["installed jeirt package"],
        ),
        ("json-package-file", ["data", "--json", "{package}/new.json"], 5, ["installed jeirt package"]),
        (
            "out-empty",
            ["predict", "--model", M, "--questions", "{w}/questions.csv", "--out", ""],
            2,
            ["--out is empty"],
        ),
        ("json-empty", ["data", "--json", ""], 2, ["--json is empty"]),
        ("json-blank", ["data", "--json", "  "], 2, ["--json is empty"]),
        (
            "out-link-to-input",
            [
                "predict",
                "--model",
                M,
                "--questions",
                "{w}/questions.csv",
                "--out",
                "{w}/link_to_questions.csv",
                "--force",
            ],
            5,
            ["never overwrites an input"],
        ),
        (
            "out-name-too-long",
            ["predict", "--model", M, "--questions", "{w}/questions.csv", "--out", "{w}/" + LONG + ".csv"],
            5,
            ["bytes long", "at most 255"],
        ),
        ("json-through-link-into-dataset", ["data", "--json", "{w}/link_to_dataset/new.json"], 5, ["dataset folder"]),
        (
            "compare-json-twice",
            ["compare", "--dataset", "zeroeval", "--out", "{w}/r.csv", "--json", "{w}/r.json"],
            5,
            ["same file"],
        ),
        (
            "compare-json-is-input",
            ["compare", "--dataset", "{w}/answers.csv", "--out", "{w}/answers.csv"],
            5,
            ["never overwrites an input"],
        ),
    ],
    "options": [
        ("encoder-unknown", ["fit", "--dataset", "mmlu_pro", "--encoder", "bogus"], 2, ["--encoder 'bogus'"]),
        (
            "compare-encoder-unknown",
            ["compare", "--dataset", "mmlu_pro", "--encoder", "minilm,bogus"],
            2,
            ["--encoder 'bogus'"],
        ),
        (
            "search-budget-negative",
            ["fit", "--dataset", "mmlu_pro", "--search", "--search-budget", "-1"],
            2,
            ["--search-budget -1"],
        ),
        ("search-budget-nan", ["fit", "--dataset", "mmlu_pro", "--search-budget", "nan"], 2, ["--search-budget nan"]),
        ("fit-out-suffix", ["fit", "--dataset", "mmlu_pro", "--out", "{w}/model.csv"], 2, ["writes a .pt file"]),
        ("compare-out-suffix", ["compare", "--dataset", "mmlu_pro", "--out", "{w}/runs.txt"], 2, ["writes a .csv"]),
        (
            "predict-out-suffix",
            ["predict", "--model", M, "--questions", "{w}/questions.csv", "--out", "{w}/p.pt"],
            2,
            ["writes a .csv"],
        ),
        (
            "draws-one",
            ["estimate", "--model", M, "--dataset", "mmlu_pro", "--results", "{w}/answers.csv", "--draws", "1"],
            2,
            ["--draws 1", "two"],
        ),
        ("seeds-repeated", ["compare", "--dataset", "mmlu_pro", "--seeds", "0,0"], 2, ["--seeds '0,0'", "repeats"]),
        ("seeds-repeated-spelling", ["compare", "--dataset", "mmlu_pro", "--seeds", "1,01"], 2, ["repeats"]),
        ("dataset-repeated", ["compare", "--dataset", "zeroeval", "--dataset", "zeroeval"], 2, ["more than once"]),
        ("dataset-repeated-comma", ["compare", "--dataset", "zeroeval,mmlu_pro,zeroeval"], 2, ["more than once"]),
        (
            "methods-repeated",
            ["compare", "--dataset", "zeroeval", "--methods", "knn,knn"],
            2,
            ["['knn'] more than once"],
        ),
        ("methods-empty", ["compare", "--dataset", "zeroeval", "--methods", ""], 2, ["--methods", "empty name"]),
        ("methods-empty-item", ["compare", "--dataset", "zeroeval", "--methods", "knn,"], 2, ["empty name"]),
        ("methods-unknown", ["compare", "--dataset", "zeroeval", "--methods", "knn,svm"], 2, ["['svm']"]),
        ("split-unknown", ["compare", "--dataset", "zeroeval", "--split", "random"], 2, ["--split 'random'"]),
        (
            "suggest-models-repeated",
            ["suggest", "--model", M, "--dataset", "mmlu_pro", "--k", "2", "--llms", "a,a"],
            2,
            ["--llms", "more than once"],
        ),
        (
            "items-beside-dataset",
            [
                "onboard",
                "--model",
                M,
                "--results",
                "{w}/answers.csv",
                "--dataset",
                "mmlu_pro",
                "--questions",
                "{w}/questions.csv",
                "--out",
                "{w}/o.pt",
            ],
            2,
            ["--questions", "not both"],
        ),
    ],
    "errors": [
        ("truncated-gzip", ["data", "{w}/truncated.csv.gz"], 3, ["truncated.csv.gz", "damaged or cut short"]),
        ("not-gzip", ["fit", "--dataset", "{w}/not_gzip.csv.gz"], 3, ["not_gzip.csv.gz"]),
        ("fifo-questions", ["predict", "--model", M, "--questions", "{w}/fifo.csv"], 2, ["not a regular file"]),
        (
            "fifo-results",
            ["onboard", "--model", M, "--results", "{w}/fifo.csv", "--dataset", "mmlu_pro", "--out", "{w}/o.pt"],
            2,
            ["--results", "not a regular file"],
        ),
        ("fifo-dataset", ["data", "{w}/fifo.csv"], 2, ["--dataset", "not a regular file"]),
        ("input-name-too-long", ["predict", "--model", M, "--questions", "{w}/" + LONG + ".csv"], 2, ["no such file"]),
    ],
}
ROUND_TWO_CASES = [(cls, *case) for cls, cases in ROUND_TWO.items() for case in cases]


def _run_case(work: Path, capsys, argv: list[str]) -> tuple[int, str, str]:
    places = {"{w}": work, "{package}": Path(files.__file__).resolve().parent}
    if any("{data}" in a for a in argv):
        places["{data}"] = settings.data_dir()
    for key, value in places.items():
        argv = [a.replace(key, str(value)) for a in argv]
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    "cls, case, argv, code, fragments", ROUND_TWO_CASES, ids=[f"{c[0]}-{c[1]}" for c in ROUND_TWO_CASES]
)
def test_hostile_round_two(hostile_files, capsys, monkeypatch, cls, case, argv, code, fragments):
    monkeypatch.chdir(hostile_files)
    protected = [
        settings.data_dir() / "checksums.json",
        settings.data_dir() / "zeroeval" / "items.csv.gz",
        Path(files.__file__).resolve().parent / "tasks" / "prices.csv",
        hostile_files / "questions.csv",
    ]
    before = [_digest(p) for p in protected]
    started = time.perf_counter()
    got, out, err = _run_case(hostile_files, capsys, argv)
    assert got == code, f"{case}: exit {got}, expected {code}; stderr: {err}"
    assert "Traceback" not in err and "Traceback" not in out
    message = err.strip()
    assert message.startswith("error: ") and len(message.splitlines()) == 1, message
    for fragment in fragments:
        assert fragment in message, f"{case}: {fragment!r} not in {message!r}"
    assert says_what_to_do(message), f"{case}: the message does not say what to do: {message!r}"
    assert [_digest(p) for p in protected] == before, f"{case} changed a file it must not write"
    if code in (2, 5):  # refused before any data is loaded
        assert time.perf_counter() - started < 10, f"{case}: refused only after work"


@pytest.mark.parametrize(
    "argv, option",
    [
        (["fit", "--dataset", "mmlu_pro", "--dataset", "zeroeval"], "--dataset"),
        (["fit", "--dataset", "mmlu_pro", "--d", "8", "--d", "16"], "--d"),
        (["estimate", "--model", "a.pt", "--model", "b.pt", "--results", "r.csv"], "--model"),
        (["predict", "--model", "a.pt", "--questions", "q.csv", "--out", "a.csv", "--out", "b.csv"], "--out"),
    ],
)
def test_a_single_value_option_given_twice_is_refused(capsys, argv, option):
    """argparse keeps the last of a repeated option; jeirt refuses it, naming the option."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    assert f"{option} given twice" in capsys.readouterr().err
    assert main(argv) == 2


def test_round_two_covers_every_class():
    counts = {cls: len(cases) for cls, cases in ROUND_TWO.items()}
    assert all(n >= 5 for n in counts.values()), counts


@pytest.mark.parametrize("name", ["NA", "None", "1e3", "nan", "null", "0001", "TRUE"])
def test_names_stay_as_written(hostile_files, capsys, tmp_path, name):
    results = tmp_path / "answers.csv"
    pd.read_csv(hostile_files / "answers.csv", dtype=str, keep_default_na=False).assign(model=name).to_csv(
        results, index=False
    )
    code, out, err = _run_case(hostile_files, capsys, ["data", str(results), "--json", str(tmp_path / "d.json")])
    assert code == 0, err
    assert json.loads((tmp_path / "d.json").read_text())["models"] == [name]


def test_estimate_and_onboard_keep_a_model_named_na(hostile_files, capsys, tmp_path):
    results = tmp_path / "na.csv"
    pd.read_csv(hostile_files / "answers.csv", dtype=str, keep_default_na=False).assign(model="NA").to_csv(
        results, index=False
    )
    code, out, err = _run_case(
        hostile_files,
        capsys,
        [
            "estimate",
            "--model",
            M,
            "--dataset",
            "mmlu_pro",
            "--results",
            str(results),
            "--draws",
            "20",
            "--json",
            str(tmp_path / "e.json"),
            "--quiet",
        ],
    )
    assert code == 0, err
    assert list(json.loads((tmp_path / "e.json").read_text())["models"]) == ["NA"]
    code, out, err = _run_case(
        hostile_files,
        capsys,
        ["onboard", "--model", M, "--results", str(results), "--dataset", "mmlu_pro", "--out", str(tmp_path / "na.pt")],
    )
    assert code == 0, err
    assert "NA" in JEIRT.load(tmp_path / "na.pt").models_


def test_predict_proba_refuses_one_string_and_empty_texts(work):
    model = JEIRT.load(work / "model.pt")
    with pytest.raises(TypeError, match="one string"):
        model.predict_proba("What is 2+2?")
    with pytest.raises(ValueError, match=r"questions\[0\] is an empty text"):
        model.predict_proba([""])
    with pytest.raises(ValueError, match=r"questions\[1\]"):
        model.predict_proba(["What is 2+2?", "   "])


def test_in_place_onboard_through_a_link_writes_its_target(work, tmp_path, capsys):
    target = tmp_path / "real.pt"
    target.write_bytes((work / "model.pt").read_bytes())
    link = tmp_path / "link.pt"
    link.symlink_to(target)
    code, _, err = _run_case(
        work,
        capsys,
        [
            "onboard",
            "--model",
            str(link),
            "--results",
            str(work / "answers.csv"),
            "--dataset",
            "mmlu_pro",
            "--in-place",
        ],
    )
    assert code == 0, err
    assert link.is_symlink() and "newcomer" in JEIRT.load(target).models_


def test_a_long_out_name_is_written(work, tmp_path, capsys):
    out = tmp_path / ("p" * 230 + ".csv")  # its temporary name would pass 255 bytes uncut
    code, _, err = _run_case(
        work,
        capsys,
        ["predict", "--model", str(work / "model.pt"), "--questions", str(work / "questions.csv"), "--out", str(out)],
    )
    assert code == 0 and out.is_file(), err
    assert not list(tmp_path.glob(".tmp-*"))


def test_one_class_onboard_writes_null_auc(hostile_files, tmp_path, capsys):
    code, out, err = _run_case(
        hostile_files,
        capsys,
        [
            "onboard",
            "--model",
            M,
            "--results",
            "{w}/one_class.csv",
            "--dataset",
            "mmlu_pro",
            "--out",
            str(tmp_path / "m.pt"),
            "--json",
            str(tmp_path / "m.json"),
        ],
    )
    assert code == 0, err
    summary = json.loads((tmp_path / "m.json").read_text())
    assert summary["fit_on_own_labels"]["auc"] is None and "one class" in summary["note"]
    assert "undefined" in out and "nan" not in out.lower()


@pytest.mark.parametrize(
    "argv",
    [
        ["data", "--json", "{t}/d.json"],
        ["predict", "--model", M, "--questions", "{w}/questions.csv", "--out", "{t}/p.csv"],
    ],
)
def test_a_full_disk_is_an_output_error(work, tmp_path, capsys, monkeypatch, argv):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    code, _, err = _run_case(work, capsys, [a.replace("{t}", str(tmp_path)) for a in argv])
    assert code == 5 and "could not write" in err and str(tmp_path) in err and "Traceback" not in err, err
    assert not list(tmp_path.iterdir())  # no output, no temporary file left


def test_a_full_disk_during_fit_out_names_the_path(work, tmp_path, capsys, monkeypatch):
    real = files.os.fsync

    def full(fd):
        if os.fstat(fd).st_size > 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(files.os, "fsync", full)
    code, _, err = _run_case(work, capsys, ["fit", "--dataset", "mmlu_pro", *TINY_FIT, "--out", str(tmp_path / "m.pt")])
    assert code == 5 and "m.pt" in err and "could not write" in err, err


@pytest.mark.parametrize(
    "variable, value, fragment",
    [
        ("JEIRT_CACHE", "", "JEIRT_CACHE is set but empty"),
        ("JEIRT_CACHE", "   ", "JEIRT_CACHE"),
        ("JEIRT_DEVICE", "", "JEIRT_DEVICE is set but empty"),
        ("JEIRT_DATA", "", "JEIRT_DATA"),
        ("JEIRT_WORKERS", "two", "JEIRT_WORKERS"),
    ],
)
def test_environment_variables_set_to_nothing_usable(work, capsys, monkeypatch, tmp_path, variable, value, fragment):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, value)
    code, _, err = _run_case(
        work, capsys, ["predict", "--model", str(work / "model.pt"), "--questions", str(work / "questions.csv")]
    )
    assert code == 6 and fragment in err and "Traceback" not in err, err
    assert not list(tmp_path.iterdir())  # no cache made in the current folder
    with pytest.raises(ValueError, match=variable):
        settings.check_environment()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_from_the_environment_names_the_variable(work, capsys, monkeypatch):
    monkeypatch.setenv("JEIRT_DEVICE", "cuda")
    code, _, err = _run_case(
        work, capsys, ["predict", "--model", str(work / "model.pt"), "--questions", str(work / "questions.csv")]
    )
    assert code == 6 and "JEIRT_DEVICE" in err and "--device" not in err, err


def test_cache_folder_that_cannot_be_made_names_jeirt_cache(monkeypatch, tmp_path):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "file" / "sub"))
    with pytest.raises(OSError, match="JEIRT_CACHE"):
        settings.cache_dir()


def test_a_cache_that_cannot_be_written_is_an_environment_error(work, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path))
    real = files.os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    code, _, err = _run_case(work, capsys, ["data", "verify"])  # records what it checked in the cache
    assert code == 6 and "JEIRT_CACHE" in err and "Traceback" not in err, err
    monkeypatch.setattr(files.os, "fsync", real)


def _toy_data(root: Path, mmlu_pro, monkeypatch) -> Path:
    """A data folder of one small dataset (30 items), with its embeddings and a checksum manifest, made
    the data folder (JEIRT_DATA) with a cache of its own beside it: the toy stays out of the user's cache."""
    from write_manifest import write_manifest

    toy = mmlu_pro.subset(items=np.arange(30))
    (root / "toy" / "embeddings").mkdir(parents=True)
    toy.items[["item_id", "benchmark", "subject", "text"]].to_csv(root / "toy" / "items.csv.gz", index=False)
    toy.to_long().to_csv(root / "toy" / "responses.csv.gz", index=False)
    src = settings.data_dir() / "mmlu_pro" / "embeddings" / "all-MiniLM-L6-v2.npz"
    with np.load(src) as npz:
        np.savez(
            root / "toy" / "embeddings" / "all-MiniLM-L6-v2.npz",
            item_id=npz["item_id"][:30],
            text_sha256=npz["text_sha256"][:30],
            emb=npz["emb"][:30],
        )
    write_manifest(root)
    monkeypatch.setenv("JEIRT_DATA", str(root))
    monkeypatch.setenv("JEIRT_CACHE", str(root.parent / "cache"))
    return root


def test_damaged_dataset_files_are_data_errors(mmlu_pro, tmp_path, capsys, monkeypatch):
    root = _toy_data(tmp_path / "data", mmlu_pro, monkeypatch)
    assert main(["data", "toy"]) == 0
    capsys.readouterr()
    npz = root / "toy" / "embeddings" / "all-MiniLM-L6-v2.npz"
    npz.write_bytes(npz.read_bytes()[:300])
    (root / "checksums.json").unlink()  # a folder without a manifest: the archive itself is read
    assert main(["data", "toy"]) == 3
    err = capsys.readouterr().err
    assert "all-MiniLM-L6-v2.npz" in err and "damaged or cut short" in err and "Traceback" not in err
    responses = root / "toy" / "responses.csv.gz"
    responses.write_bytes(responses.read_bytes()[:200])
    npz.unlink()
    assert main(["data", "toy"]) == 3
    err = capsys.readouterr().err
    assert "responses.csv.gz" in err and "damaged or cut short" in err


@pytest.mark.parametrize(
    "files_value",
    [
        "[]",
        '["toy/items.csv.gz"]',
        '{"toy/items.csv.gz": 3}',
        '"x"',
        '{"toy/items.csv.gz": {"size": "1", "sha256": "ab"}}',
    ],
)
def test_a_malformed_manifest_is_a_data_error(mmlu_pro, tmp_path, capsys, monkeypatch, files_value):
    root = _toy_data(tmp_path / "data", mmlu_pro, monkeypatch)
    (root / "checksums.json").write_text(f'{{"files": {files_value}}}')
    assert main(["data", "verify"]) == 3
    err = capsys.readouterr().err
    assert "checksums.json" in err and "Traceback" not in err and "internal error" not in err


def test_temporaries_of_dead_writers_go_at_the_next_write(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    orphan = tmp_path / f".tmp-{int(dead.stdout)}-{'0' * 32}-model.pt"
    orphan.write_bytes(b"half")  # just written: no waiting for it to age
    files.write_text(tmp_path / "x.txt", "x")
    assert not orphan.exists()


def _runs(value: float):
    from jeirt.tasks.compare import _frame

    rows = [
        {
            "dataset": "toy",
            "encoder": "all-MiniLM-L6-v2",
            "split": "q",
            "method": m,
            "seed": s,
            **{k: value for k in ("accuracy", "auc", "brier", "ece", "log_loss")},
            "n_test": 10,
            "fit_seconds": 1.0,
            "params": "{}",
            "fitted": "{}",
        }
        for m in ("je-irt", "knn")
        for s in (0, 1)
    ]
    return _frame(rows, {"run": value, "datasets": ["toy"]})


def test_compare_files_written_as_one_unit(tmp_path, monkeypatch):
    from jeirt.tasks.compare import load, save

    out = tmp_path / "runs.csv"
    save(_runs(0.5), out)
    assert load(out).attrs["config"]["run"] == 0.5
    real, calls = files.os.replace, []

    def killed_between(src, dst):  # the second move of the unit never happens
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(files.os, "replace", killed_between)
    with pytest.raises(KeyboardInterrupt):
        save(_runs(0.7), out)
    monkeypatch.setattr(files.os, "replace", real)
    with pytest.raises(ValueError, match="different writes"):
        load(out)
    assert not list(tmp_path.glob(".tmp-*"))
    save(_runs(0.7), out)
    assert load(out).attrs["config"]["run"] == 0.7
    out.write_text(out.read_text().replace("0.7", "0.8"))  # an edited table
    with pytest.raises(ValueError, match="different writes"):
        load(out.with_suffix(".json"))


# ----------------------------------------------------------------------------------------------------
# Kill tests: SIGKILL while the model is being written leaves the old file or the new one, whole.

SLOW_SAVE = textwrap.dedent("""
    import io, sys, time, torch
    real_save = torch.save
    def slow_save(obj, f, *args, **kwargs):  # write half, say so, wait to be killed
        buffer = io.BytesIO()
        real_save(obj, buffer, *args, **kwargs)
        data = buffer.getvalue()
        f.write(data[: len(data) // 2]); f.flush()
        print("HALF-WRITTEN", flush=True)
        time.sleep(float(sys.argv[1]))
        f.write(data[len(data) // 2:])
    torch.save = slow_save
    from jeirt.cli import main
    sys.exit(main(sys.argv[2:]))
""")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _killed_during_save(argv: list[str], wait: float = 60.0) -> None:
    """Run the CLI with a save that pauses half-way; SIGKILL it there."""
    env = os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_SAVE, str(wait), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        for line in proc.stdout:
            if "HALF-WRITTEN" in line:
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()


def test_kill_during_fit_out_keeps_the_old_model(work, tmp_path):
    model = tmp_path / "model.pt"
    model.write_bytes((work / "model.pt").read_bytes())
    before = _digest(model)
    _killed_during_save(["fit", "--dataset", "mmlu_pro", *TINY_FIT, "--seed", "1", "--out", str(model), "--force"])
    assert _digest(model) == before and JEIRT.load(model).models_
    leftovers = list(tmp_path.glob(".tmp-*"))
    assert len(leftovers) == 1  # the killed writer's half file, never at the model's path
    files.STALE_SECONDS, saved = -1.0, files.STALE_SECONDS
    try:
        files.remove_stale_temporaries(tmp_path)
    finally:
        files.STALE_SECONDS = saved
    assert not list(tmp_path.glob(".tmp-*"))


def test_kill_during_in_place_onboard_keeps_the_old_model(work, tmp_path):
    model = tmp_path / "model.pt"
    model.write_bytes((work / "model.pt").read_bytes())
    before = _digest(model)
    _killed_during_save(
        [
            "onboard",
            "--model",
            str(model),
            "--results",
            str(work / "answers.csv"),
            "--dataset",
            "mmlu_pro",
            "--in-place",
        ]
    )
    assert _digest(model) == before and "newcomer" not in JEIRT.load(model).models_


# --- model files and interrupts
# A model file carries a format version and a checksum of its weights: damage, NaN and a newer format
# are refused (exit 4, the file named), a format-1 file loads with one warning line. Ctrl-C exits 130
# with one line and no traceback while jeirt imports, works, writes and shuts down.

from jeirt.interrupts import MESSAGE  # noqa: E402  (this section's own imports)
from jeirt.modelfile import FORMAT_VERSION, ModelFileError, weights_checksum  # noqa: E402


def _edited_model(work: Path, path: Path, edit, checksum: bool = True) -> Path:
    """The work model with `edit(blob)` applied, its checksum recomputed (or left as saved)."""
    blob = torch.load(work / "model.pt", weights_only=True)
    edit(blob)
    if checksum and "checksum" in blob:
        blob["checksum"] = weights_checksum(blob)
    torch.save(blob, path)
    return path


def _invert(data: bytes, start: int, size: int = 4096) -> bytes:
    return data[:start] + bytes(b ^ 0xFF for b in data[start : start + size]) + data[start + size :]


def _predict(work: Path, capsys, model: Path) -> tuple[int, str]:
    code = main(["predict", "--model", str(model), "--questions", str(work / "questions.csv")])
    return code, capsys.readouterr().err


def test_inverted_weight_bytes_are_refused(work, tmp_path, capsys):
    import zipfile

    with zipfile.ZipFile(work / "model.pt") as z:  # the largest tensor's bytes, inside the archive
        largest = max(z.infolist(), key=lambda i: i.file_size)
    damaged = tmp_path / "damaged.pt"
    damaged.write_bytes(_invert((work / "model.pt").read_bytes(), largest.header_offset + 128))
    code, err = _predict(work, capsys, damaged)
    assert code == 4 and "damaged.pt" in err and "checksum" in err and len(err.strip().splitlines()) == 1


def test_no_4k_of_inverted_bytes_loads(work, tmp_path):
    data = (work / "model.pt").read_bytes()
    rng = np.random.default_rng(0)
    for start in rng.integers(0, len(data) - 4096, size=12):
        path = tmp_path / f"at_{start}.pt"
        path.write_bytes(_invert(data, int(start)))
        with pytest.raises(ModelFileError, match=path.name):
            JEIRT.load(path)


def test_nan_inf_and_newer_formats_are_refused(work, tmp_path, capsys):
    nan = _edited_model(work, tmp_path / "nan.pt", lambda b: b["state_dict"]["model_vectors"][0].fill_(float("nan")))
    code, err = _predict(work, capsys, nan)
    assert code == 4 and "nan.pt" in err and "model_vectors holds" in err and "NaN" in err
    inf = _edited_model(work, tmp_path / "inf.pt", lambda b: b["state_dict"]["model_vectors"][1, 0].fill_(float("inf")))
    assert _predict(work, capsys, inf)[0] == 4
    newer = _edited_model(work, tmp_path / "newer.pt", lambda b: b.update(format_version=FORMAT_VERSION + 1))
    code, err = _predict(work, capsys, newer)
    assert code == 4 and "newer.pt" in err and f"format {FORMAT_VERSION + 1}" in err and "Upgrade jeirt" in err


def test_a_saved_model_with_nan_is_refused(work, tmp_path):
    model = JEIRT.load(work / "model.pt")
    with torch.no_grad():
        model.net_.model_vectors[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        model.save(tmp_path / "diverged.pt")
    assert not (tmp_path / "diverged.pt").exists()


def test_a_format_1_file_loads_with_one_warning(work, tmp_path, capsys):
    old = _edited_model(work, tmp_path / "old.pt", lambda b: [b.pop("format_version"), b.pop("checksum")], False)
    code, err = _predict(work, capsys, old)
    assert code == 0 and err.count("warning:") == 1 and "without a checksum" in err and "old.pt" in err
    with pytest.warns(UserWarning, match="without a checksum"):
        assert np.array_equal(JEIRT.load(old).model_vectors_, JEIRT.load(work / "model.pt").model_vectors_)


def test_a_model_fitted_on_cuda_loads_and_onboards_here(work, tmp_path, capsys):
    cuda = _edited_model(work, tmp_path / "cuda.pt", lambda b: b["config"].update(device="cuda:0"))
    model = JEIRT.load(cuda)
    assert model.device == ("cuda:0" if torch.cuda.is_available() else None)
    code = main(
        [
            "onboard",
            "--model",
            str(cuda),
            "--results",
            str(work / "answers.csv"),
            "--dataset",
            "mmlu_pro",
            "--out",
            str(tmp_path / "onboarded.pt"),
            "--quiet",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert "newcomer" in JEIRT.load(tmp_path / "onboarded.pt").models_


# A script that runs the `jeirt` console entry with a slow save or a slow exit handler, so that an
# interrupt can be sent at a known moment.
CONSOLE = textwrap.dedent("""
    import atexit, sys, time
    import torch
    where, sys.argv = sys.argv[1], ["jeirt", *sys.argv[2:]]
    if where == "save":
        save = torch.save
        def slow_save(obj, f):
            save(obj, f)
            print("WRITING", flush=True)
            time.sleep(60)
        torch.save = slow_save
    if where == "shutdown":
        atexit.register(lambda: (print("SHUTDOWN", flush=True), time.sleep(60)))
    if where.startswith("loaded:"):  # after loading the model, wait until the file named after the colon exists
        import os
        from jeirt.estimator import JEIRT
        load = JEIRT.load.__func__
        def gated_load(cls, path):
            model = load(cls, path)
            print("LOADED", flush=True)
            for _ in range(1200):
                if os.path.exists(where[len("loaded:"):]):
                    break
                time.sleep(0.05)
            return model
        JEIRT.load = classmethod(gated_load)
    from jeirt.__main__ import main
    main()
""")


def _interrupted(argv: list[str], ready, env: dict | None = None, sig: int = signal.SIGINT) -> tuple[int, str]:
    """Start `argv`; once `ready(line)` holds for a line it writes (stdout and stderr together), send
    `sig` (Ctrl-C's SIGINT unless told); return its exit status and its output."""
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"} | (env or {})
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if ready(line):
                proc.send_signal(sig)
                break
        lines += proc.stdout.readlines()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, "".join(lines)


def _after(*names: str):
    """ready() for `python -X importtime`: true once every module of `names` was imported (in order),
    and one more import line came after the last (the handler is in place by then)."""
    seen = []

    def ready(line: str) -> bool:
        if len(seen) == len(names):
            return line.startswith("import time:")
        if line.startswith("import time:") and line.split("|")[-1].strip() == names[len(seen)]:
            seen.append(line)
        return False

    return ready


@pytest.mark.parametrize(
    "phase, modules", [("imports", ["jeirt.interrupts"]), ("work", ["jeirt.interrupts", "jeirt.data"])]
)
def test_ctrl_c_while_importing_and_working(phase, modules, mmlu_pro):
    code, output = _interrupted(
        [sys.executable, "-X", "importtime", "-m", "jeirt", "data", "mmlu_pro"], _after(*modules)
    )
    assert code == 130 and "Traceback" not in output and output.splitlines()[-1] == MESSAGE, output[-2000:]


def test_ctrl_c_while_writing_leaves_the_old_model(work, tmp_path):
    model = tmp_path / "model.pt"
    model.write_bytes((work / "model.pt").read_bytes())
    before = _digest(model)
    code, output = _interrupted(
        [
            sys.executable,
            "-c",
            CONSOLE,
            "save",
            "onboard",
            "--model",
            str(model),
            "--results",
            str(work / "answers.csv"),
            "--dataset",
            "mmlu_pro",
            "--in-place",
            "--quiet",
        ],
        lambda line: "WRITING" in line,
    )
    assert code == 130 and "Traceback" not in output and output.splitlines()[-1] == MESSAGE, output[-2000:]
    assert _digest(model) == before and not list(tmp_path.glob(".tmp-*"))  # the temporary file went too


def test_ctrl_c_at_shutdown(mmlu_pro):
    code, output = _interrupted(
        [sys.executable, "-c", CONSOLE, "shutdown", "data", "mmlu_pro"], lambda line: "SHUTDOWN" in line
    )
    assert code == 130 and "Traceback" not in output and output.splitlines()[-1] == MESSAGE, output[-2000:]
    assert "mmlu_pro: 33 models" in output  # the command's output came whole before the interrupt


# --- round three: the last destructive and silent cases (issue 41), each fixed in the library
# Outputs that are not regular files are written through (character devices, FIFOs) or refused (sockets,
# block devices), never renamed over; an in-place update of a model file never loses another process's;
# headers and names have one spelling; the API says which type it takes; SIGTERM is handled as Ctrl-C.


def _predict_to(work: Path, json_path: Path) -> list[str]:
    return [
        "predict",
        "--model",
        str(work / "model.pt"),
        "--questions",
        str(work / "questions.csv"),
        "--json",
        str(json_path),
        "--force",
    ]


def test_force_writes_through_a_fifo_and_never_replaces_it(work, tmp_path, capsys):
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code = main(_predict_to(work, fifo))
    reader.join(timeout=30)
    assert code == 0, capsys.readouterr().err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a file"
    assert "n_items" in json.loads(got[0].decode()) or json.loads(got[0].decode())
    assert not list(tmp_path.glob(".tmp-*"))


def test_force_onto_a_character_device_writes_through_it(work, tmp_path, capsys):
    """A twin of /dev/full made inside tmp_path (root only): the write fails as the device says (no space),
    exit 5 naming it, and the node stays a device."""
    import stat

    full = tmp_path / "full"
    try:
        os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("making a device node needs root")
    code = main(_predict_to(work, full))
    err = capsys.readouterr().err
    assert code == 5 and str(full) in err and "Traceback" not in err, err
    assert stat.S_ISCHR(os.stat(full).st_mode), "the device was replaced by a file"


def test_a_socket_or_block_device_output_is_refused_untouched(work, tmp_path, capsys):
    import socket
    import stat

    targets = []
    sock_path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    targets.append((sock_path, stat.S_ISSOCK, "socket"))
    try:
        os.mknod(tmp_path / "disk", stat.S_IFBLK | 0o600, os.makedev(7, 200))  # a twin of a loop device
        targets.append((tmp_path / "disk", stat.S_ISBLK, "block device"))
    except PermissionError:
        pass
    try:
        for path, still, kind in targets:
            code = main(_predict_to(work, path))
            err = capsys.readouterr().err
            assert code == 5 and str(path) in err and kind in err, err
            assert still(os.stat(path).st_mode), f"the {kind} was replaced"
            with pytest.raises(files.OutputRefused, match=kind):
                files.write_text(path, "x")
    finally:
        server.close()


def test_save_refuses_the_data_folder_as_the_cli_does(work, tmp_path, mmlu_pro, monkeypatch):
    root = _toy_data(tmp_path / "data", mmlu_pro, monkeypatch)
    model = JEIRT.load(work / "model.pt")
    items = root / "toy" / "items.csv.gz"
    before = _digest(items)
    for target in (items, root / "toy" / "model.pt", root / "checksums.json"):
        with pytest.raises(files.OutputRefused, match="never writes"):
            model.save(target)
    assert _digest(items) == before and not (root / "toy" / "model.pt").exists()


def _newcomers(work: Path, mmlu_pro, name: str):
    from jeirt.data import from_long

    rows = pd.read_csv(work / "answers.csv", dtype={"model": str, "item_id": str}).assign(model=name)
    new = from_long(rows, mmlu_pro.items, name=name)
    new.embeddings = mmlu_pro.embeddings
    return new


def test_two_updates_of_one_model_file_never_lose_one(work, tmp_path, mmlu_pro):
    """Two loads of one file, each onboarding its own model and saving in place: the second save finds
    the file changed since its load and refuses, naming it, instead of dropping the first's model."""
    path = tmp_path / "model.pt"
    path.write_bytes((work / "model.pt").read_bytes())
    first, second = JEIRT.load(path), JEIRT.load(path)
    first.onboard(_newcomers(work, mmlu_pro, "first")).save(path)
    second.onboard(_newcomers(work, mmlu_pro, "second"))
    with pytest.raises(ModelFileError, match="another process wrote it"):
        second.save(path)
    assert "first" in JEIRT.load(path).models_
    again = JEIRT.load(path)  # loaded after the first's save: it saves, keeping both
    again.onboard(_newcomers(work, mmlu_pro, "second")).save(path)
    again.save(path)  # its own save is no other process's
    assert {"first", "second"} <= set(JEIRT.load(path).models_)


HOLD_LOCK = textwrap.dedent("""
    import sys, time
    from jeirt.files import locked
    with locked(sys.argv[1]):
        print("HELD", flush=True)
        time.sleep(60)
""")


def test_an_in_place_update_waits_for_the_lock_another_process_holds(tmp_path, capsys):
    path = tmp_path / "model.pt"
    path.write_bytes(b"x")
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "HELD"
        saved, files.LOCK_NOTICE_SECONDS = files.LOCK_NOTICE_SECONDS, 0.1
        try:
            with pytest.raises(files.Locked, match=str(path)):
                with files.locked(path, timeout=0.5):
                    pass
        finally:
            files.LOCK_NOTICE_SECONDS = saved
        assert "waiting for another process updating" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with files.locked(path, timeout=5), files.locked(path, timeout=0):  # free now; re-entrant in one process
        pass


def test_two_in_place_onboardings_at_once_both_land(work, tmp_path):
    """Two `jeirt onboard --in-place` processes on one model file: the second, started while the first
    holds the model between load and save, waits for the lock (saying so) and loads the first's result,
    so both exit 0 and the file has both new models (without the lock the first's save is refused)."""
    model, gate = tmp_path / "model.pt", tmp_path / "gate"
    model.write_bytes((work / "model.pt").read_bytes())
    answers = pd.read_csv(work / "answers.csv", dtype=str)
    argv = {}
    for name in ("first", "second"):
        answers.assign(model=name).to_csv(tmp_path / f"{name}.csv", index=False)
        argv[name] = ["onboard", "--model", str(model), "--results", str(tmp_path / f"{name}.csv")]
        argv[name] += ["--dataset", "mmlu_pro", "--in-place", "--quiet"]
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    run = lambda where, name: subprocess.Popen(  # noqa: E731
        [sys.executable, "-c", CONSOLE, where, *argv[name]],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    first = run(f"loaded:{gate}", "first")
    second = None
    try:
        seen = [first.stdout.readline()]
        assert seen[0].strip() == "LOADED", seen[0] + first.stdout.read()
        second = run("plain", "second")
        for line in second.stdout:  # the lock's notice; without the lock it loads, saves and exits instead
            seen.append(line)
            if "waiting for another process updating" in line:
                break
        gate.touch()  # the first may save now
        out = [proc.communicate(timeout=120)[0] for proc in (first, second)]
        codes = first.returncode, second.returncode
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.kill()
                proc.wait(timeout=30)
    assert codes == (0, 0), ("".join(seen), out)
    assert any("waiting for another process updating" in line for line in seen), seen
    assert {"first", "second"} <= set(JEIRT.load(model).models_)


def test_one_validation_answer_chooses_no_width(work, mmlu_pro):
    from jeirt.onboard import PRIOR_WIDTH_GRID

    new = _newcomers(work, mmlu_pro, "newcomer")
    held = np.zeros(new.labels.shape, dtype=bool)
    held[0, np.flatnonzero(new.observed[0])[0]] = True
    model = JEIRT.load(work / "model.pt")
    with pytest.warns(UserWarning, match="too few to choose the prior's width"):
        model.onboard(new, new.observed & ~held, val_mask=held)
    assert model.onboard_prior_width_ in PRIOR_WIDTH_GRID and set(model.onboard_evidence_) == set(PRIOR_WIDTH_GRID)


@pytest.mark.parametrize("header", ["random", "Random", " random", "RANDOM "])
def test_estimate_reads_the_random_column_however_it_is_written(work, tmp_path, capsys, header):
    """`Random` was ignored while ` random` was refused: every spelling is the `random` column, so a bad
    cell in it is refused naming the row, whatever the header's case or spaces."""
    rows = pd.read_csv(work / "answers.csv", dtype=str).head(20)
    rows[header] = ["1"] * 19 + ["maybe"]
    rows.to_csv(tmp_path / "answers.csv", index=False)
    code = main(
        [
            "estimate",
            "--model",
            str(work / "model.pt"),
            "--dataset",
            "mmlu_pro",
            "--results",
            str(tmp_path / "answers.csv"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 3 and "'random' cell on data row 20" in err, err


def test_api_entry_points_name_the_type_they_take(work, mmlu_pro):
    model = JEIRT.load(work / "model.pt")
    table = pd.DataFrame({"text": ["What is 2+2?", "Who wrote Hamlet?"]})
    with pytest.raises(TypeError, match="predict_proba takes a Dataset.*table\\['text'\\]"):
        model.predict_proba(table)
    with pytest.raises(TypeError, match=r"questions\[1\] is a int"):
        model.predict_proba(["What is 2+2?", 7])
    with pytest.raises(TypeError, match="fit takes a jeirt.data.Dataset, not a builtins.str"):
        JEIRT(d=4).fit("mmlu_pro")
    with pytest.raises(TypeError, match="fit takes a jeirt.splits.Split"):
        JEIRT(d=4).fit(mmlu_pro, split={"train": None})
    with pytest.raises(TypeError, match="onboard takes a jeirt.data.Dataset, not a pandas"):
        model.onboard(mmlu_pro.to_long().head(10))
    with pytest.raises(TypeError, match="models is one string"):
        model.predict_proba(mmlu_pro, models=mmlu_pro.models[0])


def test_nan_features_are_refused_with_where(work, mmlu_pro):
    model = JEIRT.load(work / "model.pt")
    features = mmlu_pro.embeddings["all-MiniLM-L6-v2"][:5].copy()
    features[3, :2] = np.nan
    with pytest.raises(ValueError, match=r"2 NaN or infinite value\(s\) in 1 question\(s\), the first row 3"):
        model.predict_proba(features)
    ds = mmlu_pro.subset(items=np.arange(40))
    ds.embeddings = {k: v.copy() for k, v in ds.embeddings.items()}
    ds.embeddings["all-MiniLM-L6-v2"][7, 0] = np.inf
    item = ds.items["item_id"].iloc[7]
    with pytest.raises(ValueError, match=f"item_id '{item}'"):
        JEIRT(d=4, progress=False).fit(ds)
    with pytest.raises(ValueError, match=f"item_id '{item}'"):
        model.predict_proba(ds)


@pytest.mark.parametrize(
    "part, edit, fragment",
    [
        ("history", lambda b: b.update(history=5), "'history' (the training history) is a int"),
        ("calibration", lambda b: b.update(calibration=5), "'calibration' (the calibration record) is a int"),
        ("search", lambda b: b.update(search_results=5), "'search_results' (the search record) is a int"),
        ("temperature", lambda b: b.update(temperature="hot"), "'temperature'"),
        ("split", lambda b: b.update(split=3), "'split' (the split's name) is a int"),
        ("config", lambda b: b.update(config=[1]), "'config' (the settings) is a list"),
        (
            "benchmarks",
            lambda b: (b["config"].update(benchmark_feature=True), b.update(benchmarks={"scale": 1.0})),
            "lacks its benchmark names",
        ),
        ("no-history", lambda b: b.pop("history"), "lacks part(s) of a jeirt model (['history'])"),
        ("older", lambda b: b.update(format_version=0), "format 0 (written by jeirt"),
    ],
)
def test_a_damaged_model_file_names_the_file_and_the_part(work, tmp_path, part, edit, fragment):
    path = _edited_model(work, tmp_path / f"{part}.pt", edit)
    with pytest.raises(ModelFileError) as caught:
        JEIRT.load(path)
    message = str(caught.value)
    assert str(path) in message and fragment in message, message
    if part == "older":
        assert "older than any" in message and "upgrade" not in message.lower(), message


def test_sigterm_while_writing_is_handled_as_ctrl_c(work, tmp_path):
    """SIGTERM (a supervisor's stop) during the save: exit 143 with one line, the old model whole, and the
    temporary file removed, as Ctrl-C leaves them."""
    model = tmp_path / "model.pt"
    model.write_bytes((work / "model.pt").read_bytes())
    before = _digest(model)
    argv = ["--model", str(model), "--results", str(work / "answers.csv"), "--dataset", "mmlu_pro"]
    code, output = _interrupted(
        [sys.executable, "-c", CONSOLE, "save", "onboard", *argv, "--in-place", "--quiet"],
        lambda line: "WRITING" in line,
        sig=signal.SIGTERM,
    )
    assert code == 143 and "Traceback" not in output, output[-2000:]
    assert output.splitlines()[-1].startswith(("interrupted", "terminated")), output[-2000:]
    said = [line for line in output.splitlines() if line.startswith(("interrupted", "terminated"))]
    assert len(said) == 1, output[-2000:]  # once (it was printed twice: by the command, then by the entry)
    assert _digest(model) == before and not list(tmp_path.glob(".tmp-*"))


def test_ctrl_c_after_the_output_was_written_says_so(work, tmp_path):
    out = tmp_path / "onboarded.pt"
    argv = ["--model", str(work / "model.pt"), "--results", str(work / "answers.csv"), "--dataset", "mmlu_pro"]
    code, output = _interrupted(
        [sys.executable, "-c", CONSOLE, "shutdown", "onboard", *argv, "--out", str(out), "--quiet"],
        lambda line: "SHUTDOWN" in line,
    )
    last = output.splitlines()[-1]
    assert code == 130 and "Traceback" not in output, output[-2000:]
    assert f"{out} had been written in full" in last and "left as they were" not in last, last
    assert "newcomer" in JEIRT.load(out).models_
