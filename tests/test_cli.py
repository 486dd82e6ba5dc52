"""`jeirt` end to end on a slice of mmlu_pro: fit (with corrections), evaluate, predict, onboard, data, suggest,
estimate, and its errors; its help answering without torch."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jeirt.cli import build_parser, main


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, mmlu_pro):
    return tmp_path_factory.mktemp("cli")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_end_to_end(workdir, capsys, mmlu_pro):
    model, summary = workdir / "m.pt", workdir / "fit.json"
    code, out, _ = run(
        capsys,
        "fit",
        "--dataset",
        "mmlu_pro",
        "--limit-questions",
        "1500",
        "--d",
        "16",
        "--max-epochs",
        "4",
        "--quiet",
        "--out",
        str(model),
        "--json",
        str(summary),
    )
    assert code == 0 and "accuracy" in out and model.exists()
    result = json.loads(summary.read_text())
    assert result["models"] == 33 and result["items"] == 1500 and 0.5 < result["test"]["accuracy"] < 1

    code, out, _ = run(capsys, "evaluate", "--model", str(model), "--dataset", "mmlu_pro", "--part", "all")
    assert code == 0 and "auc" in out

    questions = workdir / "q.csv"
    pd.DataFrame({"item_id": ["a", "b"], "text": ["What is 17 * 23?", "Who wrote Hamlet?"]}).to_csv(
        questions, index=False
    )
    probs = workdir / "p.csv"
    code, out, _ = run(capsys, "predict", "--model", str(model), "--questions", str(questions), "--out", str(probs))
    table = pd.read_csv(probs, index_col="item_id")
    assert code == 0 and table.shape == (2, 33) and table.to_numpy().min() > 0

    # Onboard one model's results under a new name, questions referred to by item_id.
    rows = mmlu_pro.to_long()
    rows = rows[rows["model"] == "gpt-4o(2024-05-13)"].head(400).assign(model="gpt-4o-copy")
    results = workdir / "new.csv"
    rows.to_csv(results, index=False)
    code, out, _ = run(
        capsys,
        "onboard",
        "--model",
        str(model),
        "--results",
        str(results),
        "--dataset",
        "mmlu_pro",
        "--out",
        str(workdir / "m2.pt"),
    )
    assert code == 0 and "gpt-4o-copy" in out
    code, _, err = run(
        capsys,
        "onboard",
        "--model",
        str(workdir / "m2.pt"),
        "--results",
        str(results),
        "--dataset",
        "mmlu_pro",
        "--in-place",
    )
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


# ---------------------------------------------------------------------------------------------
# A small model with per-question corrections: what fit --corrections saves, what each command shows


@pytest.fixture(scope="module")
def corrected(workdir) -> Path:
    path = workdir / "corrected.pt"
    assert (
        main(
            [
                "fit",
                "--dataset",
                "mmlu_pro",
                "--limit-questions",
                "300",
                "--d",
                "8",
                "--max-epochs",
                "2",
                "--corrections",
                "--quiet",
                "--out",
                str(path),
                "--json",
                str(workdir / "corrected.json"),
            ]
        )
        == 0
    )
    return path


def test_fit_corrections_are_saved_and_shown_by_evaluate(corrected, workdir, capsys):
    from jeirt.estimator import JEIRT

    n = len(JEIRT.load(corrected).corrections_)
    assert n > 0 and json.loads((workdir / "corrected.json").read_text())["corrections"].startswith(f"{n} questions")
    code, out, _ = run(capsys, "evaluate", "--model", str(corrected), "--dataset", "mmlu_pro", "--quiet")
    assert code == 0 and f"corrections    {n} questions" in out


def test_predict_is_predict_proba_of_the_loaded_model(corrected, workdir, capsys):
    from jeirt.estimator import JEIRT

    texts = ["What is 17 * 23?", "Who wrote Hamlet?", "Which gas do plants take in for photosynthesis?"]
    questions, out = workdir / "three.csv", workdir / "three_probs.csv"
    pd.DataFrame({"item_id": ["a", "b", "c"], "text": texts}).to_csv(questions, index=False)
    code, _, _ = run(
        capsys,
        "predict",
        "--model",
        str(corrected),
        "--questions",
        str(questions),
        "--out",
        str(out),
        "--quiet",
        "--force",
    )
    model = JEIRT.load(corrected)
    table = pd.read_csv(out, index_col="item_id")
    assert code == 0 and list(table.columns) == model.models_ and list(table.index) == ["a", "b", "c"]
    np.testing.assert_array_equal(table.to_numpy().astype(np.float32), model.predict_proba(texts).T)


def test_every_command_takes_quiet():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert {"data", "fit", "evaluate", "predict", "onboard", "route", "compare", "estimate", "suggest"} <= set(commands)
    lacking = [name for name, p in commands.items() if not any("--quiet" in a.option_strings for a in p._actions)]
    assert not lacking, f"commands without --quiet: {lacking}"


def _suggested(capsys, workdir, rule: str, *extra: str) -> pd.Series:
    out = workdir / f"suggest_{rule}.csv"
    code, _, err = run(
        capsys,
        "suggest",
        "--model",
        str(workdir / "corrected.pt"),
        "--dataset",
        "mmlu_pro",
        "--k",
        "6",
        "--rule",
        rule,
        "--quiet",
        "--force",
        "--out",
        str(out),
        *extra,
    )
    assert code == 0, err
    return pd.read_csv(out, dtype=str).groupby("model", sort=False)["item_id"].apply(frozenset)


def test_suggest_gives_each_model_what_the_help_promises(corrected, workdir, capsys, mmlu_pro):
    """random, stratified and kmeans: each LLM its own questions; the adaptive rules are withdrawn from the
    command line, refused with the reason (the Python API keeps them)."""
    for rule in ("random", "stratified", "kmeans"):
        picks = _suggested(capsys, workdir, rule, "--llms", "a,b,c")
        assert list(picks.index) == ["a", "b", "c"] and len(set(picks)) == 3, rule
    for rule in ("adaptive", "adaptive-accuracy"):
        code, _, err = run(
            capsys, "suggest", "--model", str(corrected), "--dataset", "mmlu_pro", "--k", "3", "--rule", rule
        )
        assert code == 2 and "withdrawn" in err and "results/new_models_design.json" in err, err


def test_suggest_marks_its_random_draws_and_estimate_learns_the_misfit_from_them(
    corrected, workdir, capsys, mmlu_pro, monkeypatch
):
    """suggest's `random` and `inclusion_probability` columns: all of a random rule's draws, none of kmeans'
    picks by choice; estimate reads the probabilities and passes only the random draws as the random
    sample; without them every answer is a random draw, and picks by choice without them are refused; a
    bad cell is a data error."""
    from jeirt.tasks.evaluation import scoring

    out = workdir / "suggest_marked.csv"
    for rule, drawn in (("random", 10), ("kmeans", 0)):
        code, _, err = run(
            capsys,
            "suggest",
            "--model",
            str(corrected),
            "--dataset",
            "mmlu_pro",
            "--k",
            "10",
            "--rule",
            rule,
            "--quiet",
            "--force",
            "--out",
            str(out),
        )
        table = pd.read_csv(out, dtype={"item_id": str})
        assert code == 0 and table["random"].sum() == drawn, (rule, err)
    code, _, _ = run(
        capsys,
        "suggest",
        "--model",
        str(corrected),
        "--dataset",
        "mmlu_pro",
        "--k",
        "10",
        "--rule",
        "random",
        "--quiet",
        "--force",
        "--out",
        str(out),
    )
    asked = pd.read_csv(out, dtype={"item_id": str})
    # half of them picks by choice, as kmeans (or an adaptive rule of the API) marks them
    asked.loc[5:, ["random", "inclusion_probability"]] = [0, 1.0]
    truth = mmlu_pro.to_long().query("model == 'gpt-4o(2024-05-13)'").set_index("item_id")["label"]
    columns = ["model", "item_id", "label", "random", "inclusion_probability"]
    answers = asked.assign(label=truth.loc[asked["item_id"]].to_numpy())[columns]
    answers.to_csv(workdir / "marked.csv", index=False)
    assert (answers.loc[answers["random"] == 0, "inclusion_probability"] == 1).all()
    seen = []
    original = scoring.estimate_scores  # as `score_new_models` calls it
    monkeypatch.setattr(scoring, "estimate_scores", lambda *a, **k: seen.append(k["sampled"]) or original(*a, **k))
    for path in (workdir / "marked.csv", workdir / "unmarked.csv"):
        answers.drop(columns=["random", "inclusion_probability"]).to_csv(workdir / "unmarked.csv", index=False)
        code, _, err = run(
            capsys,
            "estimate",
            "--model",
            str(corrected),
            "--dataset",
            "mmlu_pro",
            "--results",
            str(path),
            "--draws",
            "20",
            "--quiet",
        )
        assert code == 0, err
    assert seen[0].sum() == 5 and seen[1].sum() == 10  # no column: every answer counts as a random draw
    answers.drop(columns="inclusion_probability").to_csv(workdir / "old.csv", index=False)
    code, _, err = run(
        capsys, "estimate", "--model", str(corrected), "--dataset", "mmlu_pro", "--results",
        str(workdir / "old.csv"), "--quiet",
    )  # fmt: skip
    assert code == 3 and "inclusion_probability" in err  # picks by choice, and what their draws stand for unknown
    answers.assign(random="yes").to_csv(workdir / "badmark.csv", index=False)
    code, _, err = run(
        capsys,
        "estimate",
        "--model",
        str(corrected),
        "--dataset",
        "mmlu_pro",
        "--results",
        str(workdir / "badmark.csv"),
        "--quiet",
    )
    assert code == 3 and "'random'" in err and "data row 1" in err


def test_onboard_and_estimate_fit_one_posterior(corrected, workdir, capsys, mmlu_pro):
    """`jeirt onboard` and `jeirt estimate` (its bank's posterior) give the same vector for the same
    answers: one prior, one width rule (`jeirt.onboard.fit_new_vectors`)."""
    from jeirt.estimator import JEIRT
    from jeirt.tasks.evaluation import QuestionBank

    rows = mmlu_pro.to_long().query("model == 'gpt-4o(2024-05-13)'").head(60).assign(model="newcomer")
    rows.to_csv(workdir / "newcomer.csv", index=False)
    code, _, err = run(
        capsys,
        "onboard",
        "--model",
        str(corrected),
        "--results",
        str(workdir / "newcomer.csv"),
        "--dataset",
        "mmlu_pro",
        "--out",
        str(workdir / "newcomer.pt"),
        "--quiet",
    )
    assert code == 0, err
    onboarded = JEIRT.load(workdir / "newcomer.pt")
    model = JEIRT.load(corrected)
    bank = QuestionBank.from_model(model, mmlu_pro)
    labels = np.full((1, bank.n_items), np.nan)
    labels[0, pd.Index(bank.item_ids).get_indexer(rows["item_id"].astype(str))] = rows["label"].to_numpy()
    vector, _ = bank.vectors(bank.posterior(np.nan_to_num(labels), ~np.isnan(labels)))
    got = onboarded.model_vectors_[onboarded.model_index(["newcomer"])]
    assert np.linalg.norm(got - vector) < 1e-4 * np.linalg.norm(vector)
    assert np.linalg.norm(got - model.model_vectors_.mean(axis=0)) > 1e-3  # the answers moved it


def test_onboard_validation_answers_choose_the_width_and_are_not_fitted(corrected, workdir, capsys, mmlu_pro):
    """`jeirt onboard --validation`: the width is the one of `VALIDATION_PRIOR_WIDTH_GRID` that predicts the held-out
    answers best (`JEIRT.onboard(val_mask=...)`), the vector is fitted on --results alone; an answer in both
    files, or a validation model without results, is refused naming the file."""
    from jeirt.data import from_long
    from jeirt.estimator import JEIRT
    from jeirt.onboard import VALIDATION_PRIOR_WIDTH_GRID

    rows = mmlu_pro.to_long().query("model == 'gpt-4o(2024-05-13)'").assign(model="newcomer")
    fit, held = rows.iloc[:400], rows.iloc[400:800]
    fit.to_csv(workdir / "fit.csv", index=False)
    held.to_csv(workdir / "held.csv", index=False)
    common = ["onboard", "--model", str(corrected), "--results", str(workdir / "fit.csv"), "--dataset", "mmlu_pro"]
    out = str(workdir / "validated.pt")
    summary_file = workdir / "validated.json"
    code, _, err = run(
        capsys, *common, "--validation", str(workdir / "held.csv"), "--out", out, "--json", str(summary_file)
    )
    assert code == 0, err
    summary = json.loads(summary_file.read_text())
    assert summary["prior_width"] in VALIDATION_PRIOR_WIDTH_GRID and summary["validation_labels"] == len(held)
    assert summary["labels"] == len(fit)
    onboarded = JEIRT.load(out)
    # The same as the API with the same split of the answers.
    model = JEIRT.load(corrected)
    ds = from_long(pd.concat([fit, held]), mmlu_pro.items, name="check")
    ds.embeddings = mmlu_pro.embeddings
    val_mask = np.zeros(ds.labels.shape, dtype=bool)
    val_mask[0, ds._item_index(held["item_id"])] = True
    model.onboard(ds, mask=ds.observed & ~val_mask, val_mask=val_mask)
    assert model.onboard_prior_width_ in VALIDATION_PRIOR_WIDTH_GRID
    got = onboarded.model_vectors_[onboarded.model_index(["newcomer"])]
    want = model.model_vectors_[model.model_index(["newcomer"])]
    assert np.linalg.norm(got - want) < 1e-5 * np.linalg.norm(want)
    # Refused: an answer in both files; a model only in --validation.
    pd.concat([held, fit.head(2)]).to_csv(workdir / "overlap.csv", index=False)
    code, _, err = run(
        capsys, *common, "--validation", str(workdir / "overlap.csv"), "--out", str(workdir / "refused.pt")
    )
    assert code == 3 and "overlap.csv" in err and "2 answer(s) are also in the results" in err, err
    held.assign(model="stranger").to_csv(workdir / "stranger.csv", index=False)
    code, _, err = run(
        capsys, *common, "--validation", str(workdir / "stranger.csv"), "--out", str(workdir / "refused.pt")
    )
    assert code == 3 and "'stranger'" in err, err


def test_estimate_warns_about_a_known_model_name(corrected, workdir, capsys, mmlu_pro):
    known = mmlu_pro.models[0]
    rows = mmlu_pro.to_long()
    rows = rows[rows["model"] == known].head(30)
    answers = workdir / "known_name.csv"
    pd.concat([rows, rows.assign(model="newcomer")]).to_csv(answers, index=False)
    code, out, err = run(
        capsys,
        "estimate",
        "--model",
        str(corrected),
        "--dataset",
        "mmlu_pro",
        "--results",
        str(answers),
        "--draws",
        "20",
        "--quiet",
    )
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert code == 0 and len(warnings) == 1 and known in warnings[0] and "newcomer" not in warnings[0]
    assert known in out and "newcomer" in out


def test_help_and_usage_errors_import_no_torch():
    """`jeirt --help` and a usage error answer without loading torch, pandas or scikit-learn (what made
    every command spend seconds before it did anything)."""
    script = textwrap.dedent("""
        import contextlib, io, sys
        from jeirt.cli import main
        for argv in (["--help"], ["estimate", "--bad-option"], ["suggest", "--help"], ["compare", "--help"]):
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                main(argv)
        print(sorted({m.split(".")[0] for m in sys.modules} & {"torch", "pandas", "sklearn", "scipy"}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    done = subprocess.run([sys.executable, "-m", "jeirt", "estimate", "--bad-option"], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "usage:" not in done.stderr
    assert done.stderr.startswith("error: ") and "`jeirt estimate --help`" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_renamed_option_is_refused_with_its_new_name(capsys):
    """`--prior` became `--prior-covariance`: the old spelling is a usage error naming the new one, not
    an abbreviation argparse would quietly accept."""
    for verb in ("estimate", "suggest"):
        code = main([verb, "--model", "m.pt", "--dataset", "mmlu_pro", "--prior", "isotropic"])
        err = capsys.readouterr().err
        assert code == 2 and "--prior was renamed --prior-covariance" in err, err
    args = build_parser().parse_args(["estimate", "--model", "m.pt", "--dataset", "d", "--results", "r.csv"])
    assert args.prior_covariance == "full" and not any(key.startswith("_renamed") for key in vars(args))


ONBOARD = ["onboard", "--model", "m.pt", "--results", "r.csv"]


@pytest.mark.parametrize(
    "argv, old, new",
    [
        (["fit", "--dataset", "mmlu_pro", "--limit-items", "100"], "--limit-items", "--limit-questions"),
        ([*ONBOARD, "--items", "q.csv"], "--items", "--questions"),
        (["suggest", "--model", "m.pt", "--dataset", "mmlu_pro", "--k", "2", "--models", "a,b"], "--models", "--llms"),
    ],
)
def test_one_word_for_a_question_and_for_an_llm(capsys, argv, old, new):
    """A question is a question at the boundary (not an item), an LLM an LLM (not a model, which is the
    fitted file): the old spellings are refused with the new ones."""
    assert main(argv) == 2
    assert f"{old} was renamed {new}" in capsys.readouterr().err


def test_every_option_has_help_text():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    bare = [
        f"jeirt {name} {'/'.join(a.option_strings) or a.dest}"
        for name, p in commands.items()
        for a in p._actions
        if not (a.help and a.help.strip())
    ]
    assert not bare, f"options without help text: {bare}"


def test_onboard_validation_errors_name_that_file_and_its_rows(corrected, workdir, capsys, mmlu_pro):
    """A bad label in --validation is reported as --validation's, with the row of that file (not of
    --results and --validation put together)."""
    rows = mmlu_pro.to_long().query("model == 'gpt-4o(2024-05-13)'").assign(model="newcomer")
    rows.iloc[:50].to_csv(workdir / "fit50.csv", index=False)
    held = rows.iloc[50:60].astype({"label": object})
    held.iloc[2, held.columns.get_loc("label")] = "maybe"
    held.to_csv(workdir / "held_bad.csv", index=False)
    code, _, err = run(
        capsys,
        *["onboard", "--model", str(corrected), "--results", str(workdir / "fit50.csv"), "--dataset", "mmlu_pro"],
        *["--validation", str(workdir / "held_bad.csv"), "--out", str(workdir / "never.pt")],
    )
    assert code == 3 and err.startswith(f"error: --validation {workdir / 'held_bad.csv'}: "), err
    assert "data rows [3]" in err and "'maybe'" in err, err
    assert not (workdir / "never.pt").exists()


def test_suggest_refuses_more_questions_than_a_model_has_left(corrected, capsys, mmlu_pro):
    code, _, err = run(
        capsys, "suggest", "--model", str(corrected), "--dataset", "mmlu_pro", "--k", "100000", "--rule", "kmeans"
    )
    assert code == 2 and "--k 100000" in err and f"at most {mmlu_pro.n_items}" in err, err
    assert "broadcast" not in err


def test_route_price_errors_name_the_option_and_the_file(corrected, workdir, capsys):
    from jeirt.estimator import JEIRT

    models = JEIRT.load(corrected).models_
    pd.DataFrame({"item_id": ["a"], "text": ["What is 2 + 2?"]}).to_csv(workdir / "q1.csv", index=False)
    prices = pd.DataFrame({"model": models[1:], "usd_per_mtok_input": 1.0, "usd_per_mtok_output": 2.0})
    prices.to_csv(workdir / "short_prices.csv", index=False)  # the first model unpriced, no other names
    code, _, err = run(
        capsys, "route", "--model", str(corrected), "--questions", str(workdir / "q1.csv"),
        "--prices", str(workdir / "short_prices.csv"),
    )  # fmt: skip
    assert code == 3 and err.startswith(f"error: --prices {workdir / 'short_prices.csv'}: no price"), err
    assert "e.g. []" not in err and "question_costs" not in err and "strict" not in err, err
    prices.assign(usd_per_mtok_input=-1.0).to_csv(workdir / "negative.csv", index=False)
    code, _, err = run(
        capsys, "route", "--model", str(corrected), "--questions", str(workdir / "q1.csv"),
        "--prices", str(workdir / "negative.csv"),
    )  # fmt: skip
    assert code == 3 and err.count(str(workdir / "negative.csv")) == 1 and "--prices" in err, err


def test_ctrl_c_after_an_output_was_written_names_it(workdir, capsys, monkeypatch, mmlu_pro):
    """An interrupt once --out is written says so, not that the files were left as they were."""
    from jeirt.cli import common
    from jeirt.interrupts import MESSAGE

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(common, "emit", interrupted)  # the step after the model is saved
    out = workdir / "interrupted.pt"
    code, _, err = run(capsys, "fit", "--dataset", "mmlu_pro", "--limit-questions", "100", "--d", "4",
                       "--max-epochs", "1", "--quiet", "--out", str(out))  # fmt: skip
    assert code == 130 and out.is_file()
    assert str(out) in err and "written in full" in err and MESSAGE not in err, err
    monkeypatch.undo()
    code, _, err = run(capsys, "data", "mmlu_pro", "--json", str(workdir / "no.json"))
    assert code == 0  # the next command starts with nothing written


def test_progress_in_a_log_comes_as_lines():
    """A bar's redraws (after a carriage return) become lines, at most one per `every` seconds, and the
    bar's last state is written when it closes."""
    import io

    from jeirt.cli import _LogLines

    log = io.StringIO()
    lines = _LogLines(log, every=3600.0)
    for i in range(5):
        lines.write(f"\rencoding: {i}/4  ")
    lines.write("\n")  # the bar closes
    lines.write("done\n")
    assert log.getvalue() == "encoding: 0/4\nencoding: 4/4\ndone\n"


def test_estimate_prints_accuracies_within_0_1_and_marks_the_rows_it_clipped():
    """The README's quickstart gave law -0.060 [-0.271, 0.151] from 4 random draws: the printed table
    keeps an accuracy and its interval in [0, 1] and says which rows it clipped."""
    from jeirt.cli.evaluation import printable

    rows = {
        "group": ["overall", "law", "economics"],
        "estimate": [0.471, -0.060, 0.608],
        "lower": [0.375, -0.271, np.nan],
        "upper": [0.567, 0.151, np.nan],
        "source": ["design", "design", "model: 1 random draw: no interval"],
        "model_estimate": [0.454, 0.223, 0.608],
        "model_lower": [0.339, 0.109, 0.400],
        "model_upper": [0.574, 0.413, 0.829],
    }
    table = pd.DataFrame(rows)
    shown, clipped = printable(table)
    assert clipped and shown["source"].tolist() == ["design", "design *", "model: 1 random draw: no interval"]
    assert shown.loc[1, ["estimate", "lower", "upper"]].tolist() == [0.0, 0.0, 0.151]
    assert shown.drop(columns="source").loc[[0, 2]].equals(table.drop(columns="source").loc[[0, 2]])
    assert not printable(table.loc[[0, 2]])[1]
