"""EmbedLLM, the paper's data: 112 LLMs x 35,673 questions on the Hugging Face hub, with its official split.

`load_embedllm` downloads the three split files once and returns a `Dataset` plus the official
`Split` (by question, every model in every part); `embedllm_from_frames` does the same from frames
already read, which is what the tests use (a small fixture shaped like the real files).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from jeirt import settings
from jeirt.data import LONG_COLUMNS, Dataset, from_long, sha256_file
from jeirt.splits import Split

EMBEDLLM = {
    "repo_id": "RZ412/EmbedLLM",
    "repo_type": "dataset",
    # The hub commit to load. The first download with network records the commit it got, and the
    # SHA-256 of each file, in <cache>/embedllm/lock.json; later loads insist on both. Set
    # JEIRT_EMBEDLLM_REVISION (or this field) to a commit hash to pin a release explicitly.
    "revision": os.environ.get("JEIRT_EMBEDLLM_REVISION"),
    "files": ("train.csv", "val.csv", "test.csv"),
    "columns": ("prompt_id", "prompt", "model_id", "model_name", "label", "category_id", "category"),
}


def embedllm_from_frames(train: pd.DataFrame, val: pd.DataFrame, test: pd.DataFrame) -> tuple[Dataset, "Split"]:
    """EmbedLLM's three CSVs as one Dataset plus its official split (by question, all models in each).

    Duplicate policy: the same (model, prompt_id) pair appears more than once where a question is
    listed under several task variants; those rows are averaged into a soft label (the share correct),
    so no answer is dropped and a disagreement stays visible as a value strictly between 0 and 1.
    """
    frames = {"train": train, "val": val, "test": test}
    for part, frame in frames.items():
        missing = [c for c in EMBEDLLM["columns"] if c not in frame.columns]
        if missing:
            raise ValueError(f"EmbedLLM {part}.csv lacks column(s) {missing}; expected "
                             f"{list(EMBEDLLM['columns'])}.")
    parts = []
    for part, frame in frames.items():
        parts.append(pd.DataFrame({"model": frame["model_name"].astype(str),
                                   "item_id": frame["prompt_id"].astype(str),
                                   "label": frame["label"], "benchmark": frame["category"].astype(str),
                                   "text": frame["prompt"].astype(str), "part": part}))
    long = pd.concat(parts, ignore_index=True)
    leaked = long.groupby("item_id")["part"].nunique()
    if (leaked > 1).any():
        raise ValueError(f"{int((leaked > 1).sum())} EmbedLLM prompts appear in more than one split, "
                         f"e.g. {leaked[leaked > 1].index[:3].tolist()}; the official split is by question.")
    items = long.drop_duplicates("item_id")[["item_id", "benchmark", "text", "part"]]
    items = items.assign(subject="")
    ds = from_long(long[LONG_COLUMNS], items, name="embedllm", duplicates="mean")
    part = ds.items.pop("part").to_numpy()
    rows = np.ones((ds.n_models, 1), dtype=bool)
    split = Split(train=rows & (part == "train"), val=rows & (part == "val"),
                  test=rows & (part == "test"), name="embedllm-official")
    return ds, split.restrict_to(ds.observed)


def load_embedllm(cache: Path | None = None) -> tuple[Dataset, "Split"]:
    """Download (once) and load EmbedLLM with its official split; offline it fails at once."""
    try:
        HfApi = settings.import_quietly("huggingface_hub", "HfApi")
        hf_hub_download = settings.import_quietly("huggingface_hub", "hf_hub_download")
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("EmbedLLM needs huggingface_hub: pip install 'jeirt[encoders]'.") from err
    folder = (Path(cache) if cache else settings.cache_dir()) / "embedllm"
    lock_path = folder / "lock.json"
    lock = json.loads(lock_path.read_text()) if lock_path.is_file() else {}
    revision = EMBEDLLM["revision"] or lock.get("revision")
    try:
        if revision is None:  # first download: resolve the hub's current commit and record it
            revision = HfApi().dataset_info(EMBEDLLM["repo_id"], timeout=10).sha
        paths = {f: Path(hf_hub_download(EMBEDLLM["repo_id"], f, repo_type="dataset", revision=revision,
                                         cache_dir=folder / "hub", etag_timeout=10))
                 for f in EMBEDLLM["files"]}
    except Exception as err:
        raise ConnectionError(
            f"could not fetch EmbedLLM ({EMBEDLLM['repo_id']}) from the Hugging Face hub: {err}. Without "
            "network access use a local dataset instead: set JEIRT_DATA to a folder of datasets "
            "(e.g. JEIRT_DATA=../shared/data) and load 'mmlu_pro', 'zeroeval' or 'metabench'.") from err
    digests = {f: sha256_file(p) for f, p in paths.items()}
    if lock.get("revision") == revision and lock.get("sha256", digests) != digests:
        raise ValueError(f"EmbedLLM files at revision {revision} differ from the checksums recorded in "
                         f"{lock_path}; delete {folder} to download them again.")
    folder.mkdir(parents=True, exist_ok=True)
    lock_path.write_text(json.dumps({"revision": revision, "sha256": digests}, indent=1))
    frames = [pd.read_csv(paths[f]) for f in EMBEDLLM["files"]]
    return embedllm_from_frames(*frames)
