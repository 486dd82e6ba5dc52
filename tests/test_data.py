"""The data container, loaders, splits and simulator: shapes, policies and every bad-input error."""

from __future__ import annotations

import gzip
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jeirt.data import Dataset, from_long, load_local, read_csv_table, read_results_csv
from jeirt.simulate import simulate
from jeirt.splits import (
    Split,
    hold_out_models,
    split_by_question,
    split_leave_benchmark_out,
    subsample_items,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # write_manifest


def long_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": ["a", "a", "b", "b", "c"],
            "item_id": [1, 2, 1, 3, 3],
            "label": [1, 0, 0.5, 1, 0],
            "benchmark": ["x", "x", "x", "y", "y"],
            "text": ["q1", "q2", "q1", "q3", "q3"],
        }
    )


def test_from_long_builds_matrix_with_nan_for_missing_pairs():
    ds = from_long(long_table())
    assert ds.models == ["a", "b", "c"]
    assert ds.items["item_id"].tolist() == ["1", "2", "3"]
    expected = np.array([[1, 0, np.nan], [0.5, np.nan, 1], [np.nan, np.nan, 0]], dtype=np.float32)
    np.testing.assert_array_equal(ds.labels, expected)
    assert ds.items["benchmark"].tolist() == ["x", "x", "y"]
    np.testing.assert_allclose(ds.accuracy().to_numpy(), [0.5, 0.75, 0.0])
    back = ds.to_long().sort_values(["model", "item_id"]).reset_index(drop=True)
    assert len(back) == 5 and back["label"].sum() == pytest.approx(2.5)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda df: df.drop(columns="label"), "lacks column"),
        (lambda df: df.assign(label=[1, 0, np.nan, 1, 0]), "missing, not numbers"),
        (lambda df: df.assign(label=[1, 0, 2, 1, 0]), "outside"),
        (lambda df: df.assign(label=["1", "0", "yes", "1", "0"]), "not numbers"),
        (lambda df: df.iloc[:0], "no rows"),
        (lambda df: pd.concat([df, df.iloc[:1]]), "repeat a"),
    ],
)
def test_from_long_rejects_bad_input(change, message):
    with pytest.raises(ValueError, match=message):
        from_long(change(long_table()))


def test_duplicate_policies():
    df = pd.concat([long_table(), long_table().iloc[:1].assign(label=0)])
    assert from_long(df, duplicates="mean").labels[0, 0] == pytest.approx(0.5)
    assert from_long(df, duplicates="first").labels[0, 0] == 1
    with pytest.raises(ValueError, match="duplicates="):
        from_long(df, duplicates="max")


def test_items_missing_from_item_table_are_named():
    items = pd.DataFrame({"item_id": ["1", "2"], "benchmark": "x", "text": ["q1", "q2"]})
    with pytest.raises(ValueError, match=r"missing from the item table.*'3'"):
        from_long(long_table()[["model", "item_id", "label"]], items)


def test_malformed_csv_gives_clear_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text('model,item_id,label\n"a,1,1\nb,2\n')
    with pytest.raises(ValueError):
        read_results_csv(path)
    path.write_text("model,question,label\na,1,1\n")
    with pytest.raises(ValueError, match="lacks column"):
        read_results_csv(path)


def test_dataset_checks_shapes_and_names():
    items = pd.DataFrame({"item_id": ["1", "2"], "benchmark": "x", "text": ["a", "b"]})
    with pytest.raises(ValueError, match="expected \\(n_models, n_items\\)"):
        Dataset("t", ["m"], items, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="unique"):
        Dataset("t", ["m", "m"], items, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="empty"):
        Dataset("t", [], items, np.zeros((0, 2)))
    ds = Dataset("t", ["m", "n"], items, np.zeros((2, 2)))
    with pytest.raises(KeyError, match="unknown model"):
        ds.model_index(["zzz"])
    assert ds.subset(models=["n"], items=np.array([True, False])).labels.shape == (1, 1)


def test_local_layout_loads_with_embeddings(tmp_path, mmlu_pro, monkeypatch):
    assert mmlu_pro.labels.shape == (33, 12032)
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "cache"))  # the toy's parsed labels stay out of the user's cache
    assert set(mmlu_pro.embeddings) >= {"all-MiniLM-L6-v2"}
    assert mmlu_pro.features("minilm").shape == (12032, 384)
    # A stale embedding file (texts changed since it was computed) is refused, not silently used.
    folder = tmp_path / "toy"
    (folder / "embeddings").mkdir(parents=True)
    items = mmlu_pro.items.iloc[:3][["item_id", "benchmark", "subject", "text"]]
    items.to_csv(folder / "items.csv.gz", index=False)
    mmlu_pro.subset(items=np.arange(3)).to_long().to_csv(folder / "responses.csv.gz", index=False)
    emb = mmlu_pro.embeddings["all-MiniLM-L6-v2"][:3]
    sha = np.array(["0" * 64] * 3)
    np.savez(
        folder / "embeddings" / "all-MiniLM-L6-v2.npz",
        item_id=items["item_id"].to_numpy(dtype=str),
        text_sha256=sha,
        emb=emb,
    )
    with pytest.raises(ValueError, match="other texts"):
        load_local("toy", tmp_path)
    with pytest.raises(FileNotFoundError, match="JEIRT_DATA"):
        load_local("nope", tmp_path)


def test_a_local_dataset_is_parsed_once_then_read_back_the_same(tmp_path, monkeypatch):
    from jeirt.data import local

    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "cache"))
    parsed = load_local("zeroeval")
    (entry,) = (tmp_path / "cache" / "datasets").glob("zeroeval-*.npz")

    def same(ds: Dataset) -> None:
        assert ds.models == parsed.models and ds.items.equals(parsed.items)
        np.testing.assert_array_equal(ds.labels, parsed.labels)  # NaN where NaN
        assert ds.embeddings.keys() == parsed.embeddings.keys()

    with monkeypatch.context() as m:  # read back: the results CSV is not parsed again
        m.setattr(local, "from_long", lambda *a, **k: pytest.fail("parsed again"))
        same(load_local("zeroeval"))
    stale = entry.with_name("zeroeval-" + "0" * 24 + ".npz")
    entry.rename(stale)  # another version's entry: parsed again, and the old entry goes
    neighbour = entry.with_name("zeroeval-v2-" + "0" * 24 + ".npz")  # another dataset's entry stays
    neighbour.write_bytes(b"")
    same(load_local("zeroeval"))
    assert entry.is_file() and not stale.exists() and neighbour.exists()
    for damage in (b"not a zip", entry.read_bytes()[:1000]):
        entry.write_bytes(damage)
        with pytest.warns(UserWarning, match=f"{entry.name} is unreadable.*parsing .*responses.csv.gz again"):
            same(load_local("zeroeval"))
    with np.load(entry) as npz:  # an entry of other questions (an edited item table) is not used
        arrays = {key: npz[key] for key in npz.files}
    np.savez(entry, **arrays | {"item_id": arrays["item_id"][::-1]})
    with pytest.warns(UserWarning, match="not the item table's"):
        same(load_local("zeroeval"))


def test_question_split_is_stratified_disjoint_and_seeded(small_sim):
    ds, _ = small_sim
    split = split_by_question(ds, seed=3)
    assert not (split.train & split.test).any()
    counts = {p: len(split.items_of(p)) for p in ("train", "val", "test")}
    assert counts == {"train": 480, "val": 60, "test": 60}
    for _, idx in ds.items.groupby("benchmark").indices.items():  # stratified: ~10% per benchmark
        assert abs(split.test[0, idx].mean() - 0.1) < 0.02
    np.testing.assert_array_equal(split.test, split_by_question(ds, seed=3).test)
    assert not np.array_equal(split.test, split_by_question(ds, seed=4).test)
    with pytest.raises(ValueError, match="fractions"):
        split_by_question(ds, fractions=(0.9, 0.2, 0.1))


def test_splits_ignore_row_order(small_sim):
    """The same items and models in another row order get the same test questions and held-out models."""
    ds, _ = small_sim
    rng = np.random.default_rng(7)
    shuffled = ds.subset(models=rng.permutation(ds.n_models), items=rng.permutation(ds.n_items))

    def test_ids(d, split):
        return set(d.items["item_id"].iloc[split.items_of("test")])

    for seed in (0, 1):
        assert test_ids(ds, split_by_question(ds, seed=seed)) == test_ids(
            shuffled, split_by_question(shuffled, seed=seed)
        )
        assert test_ids(ds, split_leave_benchmark_out(ds, "bench1", seed=seed)) == test_ids(
            shuffled, split_leave_benchmark_out(shuffled, "bench1", seed=seed)
        )
        val = split_leave_benchmark_out(ds, "bench1", seed=seed)
        val_s = split_leave_benchmark_out(shuffled, "bench1", seed=seed)
        assert set(ds.items["item_id"].iloc[val.items_of("val")]) == set(
            shuffled.items["item_id"].iloc[val_s.items_of("val")]
        )
        base, base_s = split_by_question(ds, seed=seed), split_by_question(shuffled, seed=seed)
        assert set(hold_out_models(ds, base, 5, seed=seed).held_out) == set(
            hold_out_models(shuffled, base_s, 5, seed=seed).held_out
        )


def test_unobserved_labels_never_enter_a_split():
    ds, _ = simulate(n_models=5, n_items=200, density=0.5, seed=1)
    split = split_by_question(ds)
    for part in (split.train, split.val, split.test):
        assert not np.isnan(ds.labels[part]).any()


def test_leave_benchmark_out_and_empty_split(small_sim):
    ds, _ = small_sim
    split = split_leave_benchmark_out(ds, "bench1", seed=0)
    test_benches = set(ds.items["benchmark"].iloc[split.items_of("test")])
    assert test_benches == {"bench1"}
    assert "bench1" not in set(ds.items["benchmark"].iloc[split.items_of("train")])
    with pytest.raises(ValueError, match="expected one or more of dataset"):
        split_leave_benchmark_out(ds, "nope")
    accented = ds.subset(items=np.arange(ds.n_items))  # a benchmark named Café (NFC), typed as NFD
    accented.items["benchmark"] = accented.items["benchmark"].replace("bench1", "Caf\u00e9")
    typed = split_leave_benchmark_out(accented, "Cafe\u0301", seed=0)
    assert set(accented.items["benchmark"].iloc[typed.items_of("test")]) == {"Caf\u00e9"}
    assert typed.name == "without-Caf\u00e9"
    empty = np.zeros_like(split.train)
    with pytest.raises(ValueError, match="val part is empty"):
        Split(split.train, empty, split.test, "broken")


def test_hold_out_models_and_subsample(small_sim):
    ds, _ = small_sim
    base = split_by_question(ds, seed=0)
    split = hold_out_models(ds, base, 5, seed=0)
    rows = ds.model_index(split.held_out)
    assert len(rows) == 5 and not split.train[rows].any() and not split.val[rows].any()
    np.testing.assert_array_equal(split.onboard[rows], base.train[rows])
    assert split.test[rows].any()
    sub = subsample_items(split.onboard, 0.1, seed=0)
    assert (sub <= split.onboard).all()
    assert sub[rows].sum(axis=1).tolist() == [48] * 5
    more = subsample_items(split.onboard, 0.3, seed=0)
    assert (sub <= more).all() and (more <= split.onboard).all()  # nested: more answers add, never swap
    assert not (subsample_items(split.onboard, 0.1, seed=1) == sub).all()
    with pytest.raises(ValueError, match="fraction"):
        subsample_items(split.onboard, 0)


def test_simulation_is_seeded_and_matches_its_truth():
    a, truth = simulate(n_models=10, n_items=300, seed=5)
    b, _ = simulate(n_models=10, n_items=300, seed=5)
    np.testing.assert_array_equal(a.labels, b.labels)
    q, v = truth.question_embeddings, truth.model_vectors
    r = np.linalg.norm(q, axis=1)
    logits = v @ (q / r[:, None]).T - r
    np.testing.assert_allclose(truth.probabilities, 1 / (1 + np.exp(-logits)), rtol=1e-5)
    assert 0.3 < np.nanmean(a.labels) < 0.8


def test_checksums_catch_a_changed_file_by_size_and_by_hash(tmp_path, monkeypatch):
    from write_manifest import write_manifest

    from jeirt.data import verify_files

    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "responses.csv.gz").write_bytes(b"0123456789")
    (folder / "items.csv.gz").write_bytes(b"abc")
    write_manifest(tmp_path)
    assert verify_files(tmp_path) == ["toy/items.csv.gz", "toy/responses.csv.gz"]
    (folder / "items.csv.gz").write_bytes(b"abcd")  # a different size: caught without hashing
    with pytest.raises(ValueError, match=r"items.csv.gz has 4 bytes where checksums.json records 3.*git checkout"):
        verify_files(tmp_path)
    (folder / "items.csv.gz").write_bytes(b"abd")  # same size, other bytes, newer mtime: re-hashed
    with pytest.raises(ValueError, match="does not match its SHA-256"):
        verify_files(tmp_path)
    (folder / "items.csv.gz").unlink()
    with pytest.raises(ValueError, match="is missing"):
        verify_files(tmp_path)
    assert verify_files(tmp_path / "nowhere") == []  # a folder without a manifest is not checked


def test_dataset_names_stay_inside_the_data_folder(tmp_path):
    with pytest.raises(ValueError, match="not a folder name"):
        load_local("../outside", tmp_path)


# ----------------------------------------------------------------------------------------------------
# The one reader of user CSVs (read_csv_table)


def test_reader_keeps_names_as_written(tmp_path):
    from jeirt.data import read_csv_table

    path = tmp_path / "r.csv"
    path.write_bytes(b"\xef\xbb\xbfmodel,item_id,label\nNA,None,1\n1e3,0001,0\nnan,,1\n")  # a BOM, as Excel writes
    table = read_csv_table(path, names=(), numbers=("label",))
    assert table.columns.tolist() == ["model", "item_id", "label"]
    assert table["model"].tolist() == ["NA", "1e3", "nan"] and table["item_id"].tolist() == ["None", "0001", ""]
    assert table["label"].tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(ValueError, match=r"item_id '' on data row 3 is empty"):
        read_csv_table(path)
    ds = read_results_csv(_write(tmp_path / "ok.csv", "model,item_id,label,text\nNA,1e3,1,q\nNone,1e3,0,q\n"))
    assert ds.models == ["NA", "None"] and ds.items["item_id"].tolist() == ["1e3"]


def _write(path, text: str):
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        ("model,item_id,label,label\na,1,1,0\n", r"\['label'\] more than once"),
        ("model,item_id,label,Label \na,1,1,0\n", r"\['label'\] more than once \(as \['label', 'Label '\]"),
        ("model,item_id,label\na,1,1,5\n", "more cells than the header"),
        ("model,item_id,label\n a,1,1\n", r"' a' on data row 1 has spaces"),
        ("model,item_id,label\na,1,1\n\na,2,1\n", r"data row 2 is empty"),  # a blank line is a row, not skipped
        ("model,item_id\na,1\n", r"lacks column\(s\) \['label'\]"),
        ("", "is empty"),
        ('model,item_id,label\na,"1,1\n', "could not be read as CSV"),
    ],
)
def test_reader_refuses_with_the_row(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        read_results_csv(_write(tmp_path / "r.csv", text))


def test_headers_are_read_without_case_or_surrounding_spaces(tmp_path):
    """`Model`, ` item_id` and `LABEL ` name the columns model, item_id and label (`column_name`), as
    `jeirt estimate` reads a `Random` column as its `random` one."""
    plain = read_results_csv(_write(tmp_path / "plain.csv", "model,item_id,label\na,1,1\nb,1,0\n"))
    odd = read_results_csv(_write(tmp_path / "odd.csv", "Model, item_id,LABEL \na,1,1\nb,1,0\n"))
    assert odd.models == plain.models and np.array_equal(odd.labels, plain.labels)


def test_one_spelling_of_a_name(tmp_path):
    """A model name typed in NFC and in NFD (e + combining accent) is one model, in reading and in lookup."""
    import unicodedata

    nfc, nfd = "Caf\u00e9-7B", unicodedata.normalize("NFD", "Caf\u00e9-7B")
    assert nfc != nfd
    ds = read_results_csv(_write(tmp_path / "r.csv", f"model,item_id,label\n{nfc},1,1\n{nfd},2,0\n"))
    assert ds.models == [nfc] and ds.observed.sum() == 2
    assert ds.model_index([nfd]).tolist() == [0]


def test_reader_refuses_damaged_and_special_files(tmp_path):
    import gzip
    import os

    from jeirt.data import read_csv_table

    whole = gzip.compress(b"model,item_id,label\n" + b"a,1,1\n" * 5000)
    (tmp_path / "cut.csv.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match="damaged or cut short"):
        read_csv_table(tmp_path / "cut.csv.gz")
    (tmp_path / "latin1.csv").write_bytes(b"item_id,text\na,caf\xe9\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        read_csv_table(tmp_path / "latin1.csv")
    os.mkfifo(tmp_path / "fifo.csv")
    with pytest.raises(ValueError, match="not a regular file"):
        read_csv_table(tmp_path / "fifo.csv")
    with pytest.raises(ValueError, match="is a folder"):
        read_csv_table(tmp_path)
    _write(tmp_path / "q.csv", "item_id,text\na,x\nb,y\na,z\n")
    with pytest.raises(ValueError, match=r"repeats item_id 'a' \(data rows \[1, 3\]\)"):
        read_csv_table(tmp_path / "q.csv", unique=("item_id",))


def test_questions_without_text_are_not_encoded():
    ds = from_long(long_table().drop(columns="text"))
    with pytest.raises(ValueError, match="3 of 3 questions have no text"):
        ds.features("all-MiniLM-L6-v2")


def test_from_long_refuses_missing_and_padded_names():
    with pytest.raises(ValueError, match="model on data row 2 is missing"):
        from_long(long_table().assign(model=["a", None, "b", "b", "c"]))
    with pytest.raises(ValueError, match=r"'b ' on data row 3"):
        from_long(long_table().assign(model=["a", "a", "b ", "b", "c"]))
    with pytest.raises(ValueError, match=r"data rows \[2\], counted from 1"):
        from_long(long_table().assign(label=[1, 2, 0, 1, 0]))


@pytest.mark.parametrize(
    "text, found",
    [
        (
            b"model,item_id,label\nc,q1,0\na\x00b,q1,1\nc,q2,1\nd,q3\x00,0\n",
            r"column 'model' holds NUL bytes \(data rows \[2, 4\]\)",
        ),
        (b"model,item\x00_id,label\nc,q1,0\n", r"its header holds NUL bytes;"),
    ],
)
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".csv.zip"])
def test_nul_bytes_are_found_in_the_file_on_a_pandas_that_cuts_cells_at_them(
    tmp_path, monkeypatch, text, found, suffix
):
    """pandas' C parser before 3.1 cut a cell at its first NUL (`a<NUL>b` was read as `a`: another model,
    silently). The reader looks for NULs in the file's text itself, so they are refused on any pandas,
    with the first one's column and their data rows."""
    path = tmp_path / f"results{suffix}"
    if suffix.endswith(".zip"):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("results.csv", text)
    else:
        path.write_bytes(gzip.compress(text) if suffix.endswith(".gz") else text)
    real = pd.read_csv

    def cut_at_nul(*args, **kwargs) -> pd.DataFrame:  # what pandas < 3.1 read
        table = real(*args, **kwargs)
        table.columns = [str(c).split("\x00")[0] for c in table.columns]
        return table.apply(lambda column: column.map(lambda v: v.split("\x00")[0] if isinstance(v, str) else v))

    monkeypatch.setattr(pd, "read_csv", cut_at_nul)
    with pytest.raises(ValueError, match=found):
        read_csv_table(path, required=["model", "item_id", "label"])


def test_nul_bytes_are_found_across_chunks_with_one_look_a_line(tmp_path, monkeypatch):
    """The NUL scan reads the file in chunks: a line that spans two chunks keeps its number and its
    column (commas before the chunk's start count), and a line of NULs is looked at once, not once a
    NUL (a file of NULs, what a crash can leave, took 30 s for 400 kB when each NUL was looked at)."""
    from jeirt.data import csv_tables

    text = b"model,item_id,label\nc,q1,0\nab,q1,1\x00\x00\nc,q2,1\nd,q3,0" + b"\x00" * 5000 + b"\n" + b"e,q\x00,1\n" * 9
    path = tmp_path / "results.csv"
    path.write_bytes(text)
    looks = []

    class Counted(bytes):  # counts the scan's searches for a NUL
        def find(self, sub, *args):
            looks.append(sub == b"\x00")
            return super().find(sub, *args)

    for size in (len(text), 7, 1):  # one chunk; chunks that cut lines and cells
        monkeypatch.setattr(csv_tables, "_read_chunk", lambda stream, size=size: Counted(stream.read(size)))
        looks.clear()
        with pytest.raises(ValueError, match=r"column 'label' holds NUL bytes \(data rows \[2, 4, 5, 6, 7, 8\]\)"):
            read_csv_table(path, required=["model", "item_id", "label"])
        assert sum(looks) < 50 + 3 * len(text) // size, (size, sum(looks))  # searches: a few a line or chunk
