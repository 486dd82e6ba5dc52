"""EmbedLLM as its authors publish it, on the hub-shaped fixture in data/fixtures/embedllm/: families and
subjects, both duplicate policies and how each is scored, a prompt in two split files, and the download
(pinned revision, row counts, checksums, labels read without the text). No network: the hub is faked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jeirt import data as jdata
from jeirt.data import (
    EMBEDLLM,
    embedllm_benchmark,
    embedllm_from_frames,
    load_embedllm,
)
from jeirt.metrics import evaluate
from jeirt.splits import official_split

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "embedllm"
PINNED = "266ae3e180ccb533c86afc9cfb2f5db99d171aea"


def frames():
    """train, val, test and question_order.csv of the fixture, read as a user would."""
    return [pd.read_csv(FIXTURE / f"{p}.csv") for p in ("train", "val", "test", "question_order")]


def test_fixture_is_shaped_like_the_hub_files():
    train, val, test, questions = frames()
    for frame in (train, val, test):
        assert list(frame.columns) == list(EMBEDLLM["columns"])
        assert frame["model_name"].str.contains("__").all()  # org__name, as on the hub
    assert list(questions.columns) == ["prompt_id", "prompt"]
    assert list(pd.read_csv(FIXTURE / "model_order.csv").columns) == ["model_id", "model_name"]
    # A prompt repeated under two categories with different labels for some models.
    pairs = test.groupby(["prompt_id", "model_id"])["label"].agg(["size", "nunique"])
    assert (pairs["size"] == 2).any() and (pairs["nunique"] == 2).any()


@pytest.mark.parametrize(
    "category, expected",
    [
        ("mmlu_high_school_biology", ("mmlu", "high_school_biology")),
        ("gpqa_diamond_zeroshot", ("gpqa", "diamond_zeroshot")),
        ("social_iqa", ("social_iqa", "")),  # an underscore, but not a family with subjects
        ("truthfulqa_mc1", ("truthfulqa_mc1", "")),
        ("gsm8k", ("gsm8k", "")),
    ],
)
def test_benchmark_is_the_family_and_subject_the_rest(category, expected):
    assert embedllm_benchmark(category) == expected


def test_families_subjects_categories_models_texts_and_official_split():
    ds = embedllm_from_frames(*frames())
    split = official_split(ds)
    assert ds.benchmarks == ["mmlu", "gsm8k", "social_iqa", "truthfulqa_mc1", "gpqa", "medmcqa", "logiqa"]
    subjects = ds.items.groupby("benchmark")["subject"].agg(set)
    assert subjects["mmlu"] == {"abstract_algebra", "high_school_biology", "world_religions"}
    assert subjects["gpqa"] == {"main_zeroshot", "diamond_zeroshot"}
    assert subjects["social_iqa"] == {""}
    assert all(c.startswith(b) for c, b in zip(ds.items["category"], ds.items["benchmark"]))  # category kept
    assert ds.models == [
        "meta-llama__Llama-2-7b-hf",
        "mistralai__Mistral-7B-v0.1",
        "Qwen__Qwen1.5-7B-Chat",
        "01-ai__Yi-6B",
    ]  # model_id order
    questions = frames()[3].set_index("prompt_id")["prompt"]
    assert ds.items["text"].tolist() == questions.loc[ds.items["prompt_id"]].tolist()  # multi-line texts intact
    assert {p: len(split.items_of(p)) for p in ("train", "val", "test")} == {"train": 9, "val": 3, "test": 5}
    for part in ("train", "val", "test"):
        assert getattr(split, part)[:, split.items_of(part)].all()  # every model in every part
    # The split is rebuilt from the item table, also on a subset.
    sub = ds.subset(items=ds.items["benchmark"].to_numpy() == "mmlu")
    assert official_split(sub).test.sum() == 4 and official_split(sub).train.sum() == 3 * 4


def test_duplicate_policies_are_scored_as_documented():
    """'rows': an item per (prompt, category), the test score counts rows of test.csv. 'mean': an item
    per prompt with a soft label, read as correct by accuracy when >= 0.5."""
    test_rows = frames()[2]
    rows = embedllm_from_frames(*frames(), duplicates="rows")
    rows_split = official_split(rows)
    mean = embedllm_from_frames(*frames(), duplicates="mean")
    mean_split = official_split(mean)
    assert (rows.n_items, mean.n_items) == (17, 15)
    assert rows_split.test.sum() == len(test_rows) == 20 and mean_split.test.sum() == 16
    repeated = mean.items.index[mean.items["item_id"] == "12"][0]
    np.testing.assert_array_equal(mean.labels[:, repeated], [1, 0.5, 0.5, 0])
    assert mean.items.loc[repeated, "category"] == "gpqa_main_zeroshot|gpqa_diamond_zeroshot"

    # One prediction per model, the same for every question: scored by rows it is the share of test.csv's
    # rows it gets right; under "mean" the 0.5 labels count as right for p >= 0.5, wrong below.
    probs = np.array([0.9, 0.4, 0.6, 0.1])  # (n_models,)
    by_rows = evaluate(np.repeat(probs[:, None], rows.n_items, 1), rows, rows_split.test)["overall"]
    right = (probs[test_rows["model_id"]] >= 0.5) == (test_rows["label"] == 1)
    assert by_rows["n"] == 20 and by_rows["accuracy"] == pytest.approx(right.mean())
    by_mean = evaluate(np.repeat(probs[:, None], mean.n_items, 1), mean, mean_split.test)["overall"]
    soft = mean.labels[:, mean_split.items_of("test")]  # (4, 4)
    assert by_mean["n"] == 16
    assert by_mean["accuracy"] == pytest.approx(((probs[:, None] >= 0.5) == (soft >= 0.5)).mean())
    assert by_rows["accuracy"] == pytest.approx(0.55) and by_mean["accuracy"] == pytest.approx(0.5)
    # The table in data/README.md: each model's training accuracy as its prediction for every test question.
    for ds, split, expected in ((rows, rows_split, (0.5, 0.5253, 0.2735)), (mean, mean_split, (0.5, 0.5, 0.2441))):
        train_acc = ds.accuracy(mask=split.train).to_numpy()  # (n_models,)
        got = evaluate(np.repeat(train_acc[:, None], ds.n_items, 1), ds, split.test)["overall"]
        assert (got["accuracy"], got["auc"], got["brier"]) == pytest.approx(expected, abs=5e-5)
    with pytest.raises(ValueError, match="duplicates='max'"):
        embedllm_from_frames(*frames(), duplicates="max")


@pytest.mark.parametrize("duplicates", ["rows", "mean"])
def test_a_prompt_in_two_split_files_belongs_to_the_first(duplicates):
    train, val, test, questions = frames()
    leaked = train[train["prompt_id"] == 0].assign(label=1)  # prompt 0 (train) again in test, other labels
    with pytest.warns(UserWarning, match=r"1 item\(s\) appear in more than one split file.*4 row\(s\)"):
        ds = embedllm_from_frames(train, val, pd.concat([test, leaked]), questions, duplicates=duplicates)
        split = official_split(ds)
    col = int(np.flatnonzero(ds.items["prompt_id"] == 0)[0])
    assert ds.items.loc[col, "part"] == "train" and split.train[:, col].all() and not split.test[:, col].any()
    np.testing.assert_array_equal(ds.labels[:, col], [0, 0, 1, 0])  # train.csv's labels, test's left out
    base = embedllm_from_frames(*frames(), duplicates=duplicates)
    base_split = official_split(base)
    np.testing.assert_array_equal(split.test, base_split.test)


def test_bad_frames_are_refused_with_a_clear_error():
    train, val, test, questions = frames()
    with pytest.raises(ValueError, match="lacks column"):
        embedllm_from_frames(train.drop(columns="category"), val, test, questions)
    with pytest.raises(ValueError, match="no text in question_order.csv"):
        embedllm_from_frames(train, val, test, questions[questions["prompt_id"] != 12])
    with pytest.raises(ValueError, match="outside"):
        embedllm_from_frames(train.assign(label=2), val, test, questions)
    renamed = train.assign(model_name=train["model_name"].where(train["prompt_id"] != 1, "someone__else"))
    with pytest.raises(ValueError, match="one to one"):
        embedllm_from_frames(renamed, val, test, questions)
    # Without question_order.csv the texts come from the split files' own prompt column.
    alone = embedllm_from_frames(train, val, test)
    assert alone.items["text"].tolist() == embedllm_from_frames(*frames()).items["text"].tolist()


# ----------------------------------------------------------------------------------------------- download


@pytest.fixture
def fake_hub(tmp_path, monkeypatch):
    """The hub replaced by the fixture files (copied, so a test may damage them); the fixture's row counts
    registered for the pinned commit. Returns the folder and the list of (file, revision) asked for."""
    import huggingface_hub

    files = tmp_path / "hub"
    files.mkdir()
    for path in FIXTURE.glob("*.csv"):
        (files / path.name).write_bytes(path.read_bytes())
    asked = []

    def fake_download(repo_id, filename, repo_type, revision, cache_dir, etag_timeout, local_files_only):
        assert (repo_id, repo_type) == ("RZ412/EmbedLLM", "dataset")
        asked.append((filename, revision))
        return str(files / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    monkeypatch.delenv("JEIRT_EMBEDLLM_REVISION", raising=False)
    monkeypatch.setitem(EMBEDLLM, "rows", {PINNED: {"train": 36, "val": 12, "test": 20}})
    return files, asked


def test_download_pins_the_revision_and_reads_labels_without_text(fake_hub, tmp_path, monkeypatch):
    _, asked = fake_hub
    assert EMBEDLLM["revision"] == PINNED
    read = []
    real_read_csv = pd.read_csv
    monkeypatch.setattr(
        pd,
        "read_csv",
        lambda path, **kw: read.append((Path(path).name, kw.get("usecols"))) or real_read_csv(path, **kw),
    )
    ds = load_embedllm(cache=tmp_path / "cache")
    split = official_split(ds)
    assert (ds.n_items, split.test.sum()) == (17, 20)
    assert {revision for _, revision in asked} == {PINNED}
    assert sorted(f for f, _ in asked) == ["question_order.csv", "test.csv", "train.csv", "val.csv"]
    usecols = dict(read)
    assert all("prompt" not in usecols[f"{p}.csv"] for p in ("train", "val", "test"))
    assert usecols["question_order.csv"] == ["prompt_id", "prompt"]  # texts once, from question_order.csv
    assert PINNED in (tmp_path / "cache" / "embedllm" / "lock.json").read_text()
    # Overridable: by argument, or by JEIRT_EMBEDLLM_REVISION; a commit without registered counts is not
    # count-checked (its checksums are still recorded).
    asked.clear()
    load_embedllm(cache=tmp_path / "other", revision="abc123", duplicates="mean")
    monkeypatch.setenv("JEIRT_EMBEDLLM_REVISION", "def456")
    load_embedllm(cache=tmp_path / "third")
    assert {r for _, r in asked} == {"abc123", "def456"}


def test_a_truncated_or_changed_download_is_refused(fake_hub, tmp_path):
    files, _ = fake_hub
    load_embedllm(cache=tmp_path / "cache")  # records the checksums
    whole = (files / "train.csv").read_bytes()
    pd.read_csv(FIXTURE / "train.csv").iloc[:-4].to_csv(files / "train.csv", index=False)  # cut between rows
    with pytest.raises(
        ValueError,
        match=r"train.csv has 32 rows where revision 266ae3e.* has 36: the "
        r"download is truncated",
    ):
        load_embedllm(cache=tmp_path / "fresh")
    (files / "train.csv").write_bytes(whole[: whole.index(b"Natalia") + 20])  # cut inside a quoted text
    with pytest.raises(ValueError, match="train.csv .* could not be read|truncated"):
        load_embedllm(cache=tmp_path / "fresh2")
    (files / "train.csv").write_bytes(whole.replace(b",1,meta-llama", b",0,meta-llama", 1))  # same size
    with pytest.raises(ValueError, match="differ from the checksums"):
        load_embedllm(cache=tmp_path / "cache")


def test_offline_fails_fast_naming_jeirt_data(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        ConnectionError, match=r"[^.]\. Without network access load a local dataset instead: 'mmlu_pro'.*JEIRT_DATA"
    ):
        load_embedllm(cache=tmp_path)
    with pytest.raises(ValueError, match="duplicates="):
        load_embedllm(cache=tmp_path, duplicates="first")


def test_default_split_is_official_where_the_dataset_ships_one():
    """The CLI scores EmbedLLM on its own files' split (as the paper does), local data on the seeded one."""
    from jeirt.splits import default_split, split_by_question

    ds = embedllm_from_frames(*frames())
    official = official_split(ds)
    chosen = default_split(ds, seed=3)
    assert chosen.name == official.name
    assert np.array_equal(chosen.test, official.test) and np.array_equal(chosen.train, official.train)
    local = jdata.load_dataset("mmlu_pro").subset(items=np.arange(300))  # no 'part' column
    assert np.array_equal(default_split(local, seed=3).test, split_by_question(local, seed=3).test)


def test_a_model_named_like_a_missing_value_keeps_its_name(fake_hub, tmp_path):
    """pandas reads 'NA', 'None' or 'null' as missing by default; a model of that name stays itself."""
    files, _ = fake_hub
    first = pd.read_csv(FIXTURE / "train.csv")["model_name"].iloc[0]
    for part in ("train", "val", "test"):
        path = files / f"{part}.csv"
        path.write_bytes(path.read_bytes().replace(f",{first},".encode(), b",NA,"))
    ds = load_embedllm(cache=tmp_path / "cache")
    assert "NA" in ds.models and first not in ds.models
