"""`jeirt` end to end on a slice of mmlu_pro: fit, evaluate, predict, onboard, data, and its errors."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from jeirt.cli import main


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, mmlu_pro):
    return tmp_path_factory.mktemp("cli")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_end_to_end(workdir, capsys, mmlu_pro):
    model, summary = workdir / "m.pt", workdir / "fit.json"
    code, out, _ = run(capsys, "fit", "--dataset", "mmlu_pro", "--limit-items", "1500", "--d", "16",
                       "--max-epochs", "4", "--quiet", "--out", str(model), "--json", str(summary))
    assert code == 0 and "accuracy" in out and model.exists()
    result = json.loads(summary.read_text())
    assert result["models"] == 33 and result["items"] == 1500 and 0.5 < result["test"]["accuracy"] < 1

    code, out, _ = run(capsys, "evaluate", "--model", str(model), "--dataset", "mmlu_pro", "--part", "all")
    assert code == 0 and "auc" in out

    questions = workdir / "q.csv"
    pd.DataFrame({"item_id": ["a", "b"], "text": ["What is 17 * 23?", "Who wrote Hamlet?"]}).to_csv(questions, index=False)
    probs = workdir / "p.csv"
    code, out, _ = run(capsys, "predict", "--model", str(model), "--questions", str(questions), "--out", str(probs))
    table = pd.read_csv(probs, index_col="item_id")
    assert code == 0 and table.shape == (2, 33) and table.to_numpy().min() > 0

    # Onboard one model's results under a new name, questions referred to by item_id.
    rows = mmlu_pro.to_long()
    rows = rows[rows["model"] == "gpt-4o(2024-05-13)"].head(400).assign(model="gpt-4o-copy")
    results = workdir / "new.csv"
    rows.to_csv(results, index=False)
    code, out, _ = run(capsys, "onboard", "--model", str(model), "--results", str(results),
                       "--dataset", "mmlu_pro", "--out", str(workdir / "m2.pt"))
    assert code == 0 and "gpt-4o-copy" in out
    code, _, err = run(capsys, "onboard", "--model", str(workdir / "m2.pt"), "--results", str(results),
                       "--dataset", "mmlu_pro", "--in-place")
    assert code == 3 and "--replace" in err  # data error: the model knows that name already


def test_cli_data_and_errors(capsys, mmlu_pro, tmp_path):
    code, out, _ = run(capsys, "data")
    assert code == 0 and "mmlu_pro" in out
    code, out, _ = run(capsys, "data", "mmlu_pro")
    assert code == 0 and "math" in out
    code, _, err = run(capsys, "data", "no_such_dataset")
    assert code == 2 and "JEIRT_DATA" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("model,item_id,label\na,1,maybe\n")
    code, _, err = run(capsys, "data", str(bad))
    assert code == 3 and "not numbers" in err
