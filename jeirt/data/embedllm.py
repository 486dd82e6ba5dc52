"""EmbedLLM from the Hugging Face hub (`load_embedllm`, at a pinned commit), as one `Dataset` whose
items remember their split file (its official split is `jeirt.splits.official_split`).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

import numpy as np
import pandas as pd
from tqdm import tqdm

from jeirt import settings
from jeirt.data.dataset import ITEM_COLUMNS, Dataset
from jeirt.data.local import sha256_file
from jeirt.files import write_json

# The hub files, as the EmbedLLM authors publish them: train.csv, val.csv and test.csv hold one row per
# (model, prompt, category) with the columns of EMBEDLLM["columns"]; question_order.csv holds each prompt
# once (prompt_id, prompt); model_order.csv lists the models. `category` is a task variant
# (`mmlu_<subject>`, `gpqa_<subset>_<prompting>`, `gsm8k`, `social_iqa`, ...), not a benchmark.


class _HubDataset(TypedDict):
    """The registry entry of a dataset on the Hugging Face hub (`EMBEDLLM`)."""

    repo_id: str
    repo_type: str
    revision: str
    splits: tuple[str, ...]
    questions: str
    columns: tuple[str, ...]
    rows: dict[str, dict[str, int]]  # revision -> split -> rows of its file


EMBEDLLM: _HubDataset = {
    "repo_id": "RZ412/EmbedLLM",
    "repo_type": "dataset",
    # The hub commit loaded by default; `load_embedllm(revision=...)` or JEIRT_EMBEDLLM_REVISION
    # overrides it. The first download records each file's SHA-256 in <cache>/embedllm/lock.json and
    # later loads of the same commit insist on them.
    "revision": "266ae3e180ccb533c86afc9cfb2f5db99d171aea",
    "splits": ("train", "val", "test"),
    "questions": "question_order.csv",  # prompt_id, prompt: every prompt's text, once
    "columns": ("prompt_id", "model_id", "category_id", "label", "model_name", "category", "prompt"),
    # Rows of train/val/test.csv at a known commit (112 models x 34,056 / 3,424 / 3,469 rows), checked
    # on every load so that a truncated download is refused instead of read as a smaller dataset.
    "rows": {"266ae3e180ccb533c86afc9cfb2f5db99d171aea": {"train": 3_814_272, "val": 383_488, "test": 388_528}},
}
EMBEDLLM_FAMILIES = ("mmlu", "gpqa")  # categories `<family>_<rest>`: benchmark = family, subject = rest
EMBEDLLM_DUPLICATES = ("rows", "mean")
_LABEL_COLUMNS = [c for c in EMBEDLLM["columns"] if c != "prompt"]


def embedllm_benchmark(category: str) -> tuple[str, str]:
    """(benchmark, subject) of an EmbedLLM category: `mmlu_anatomy` -> ("mmlu", "anatomy"),
    `gpqa_main_zeroshot` -> ("gpqa", "main_zeroshot"); any other category is its own benchmark with no
    subject (`social_iqa` -> ("social_iqa", ""), `truthfulqa_mc1` -> ("truthfulqa_mc1", ""))."""
    family, _, rest = str(category).partition("_")
    if family in EMBEDLLM_FAMILIES and rest:
        return family, rest
    return str(category), ""


def _embedllm_rows(frames: Sequence[pd.DataFrame], with_texts: bool) -> pd.DataFrame:
    """EmbedLLM's train, val and test frames as one long table with their label columns (and `prompt`
    when `with_texts`) and `part` (0, 1, 2: the file), its labels checked to lie in [0, 1]."""
    need = _LABEL_COLUMNS + (["prompt"] if with_texts else [])
    parts = []
    for code, (part, frame) in enumerate(zip(EMBEDLLM["splits"], frames)):
        missing = [c for c in need if c not in frame.columns]
        if missing:
            raise ValueError(
                f"EmbedLLM {part}.csv lacks column(s) {missing}; expected {list(EMBEDLLM['columns'])}"
                + (" (or pass question_order.csv as questions)" if with_texts else "")
                + "."
            )
        if len(frame) == 0:
            raise ValueError(f"EmbedLLM {part}.csv has no rows.")
        parts.append(frame[[c for c in need]].assign(part=np.int8(code)))
    long = pd.concat(parts, ignore_index=True)
    labels = pd.to_numeric(long["label"], errors="coerce")
    bad = labels.isna() | (labels < 0) | (labels > 1)
    if bad.any():
        raise ValueError(
            f"EmbedLLM: {int(bad.sum())} label(s) are missing or outside [0, 1], e.g. row "
            f"{long.loc[bad].head(1).to_dict('records')}."
        )
    long["label"] = labels.astype(np.float32)
    long["prompt_id"] = long["prompt_id"].astype(np.int64)
    long["category"] = long["category"].astype(str)
    return long


def _embedllm_models(long: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The models (model_id, model_name), one name per id, ordered by model_id, and each row's model."""
    names = long.drop_duplicates(["model_id", "model_name"])[["model_id", "model_name"]]
    clash = names[names["model_id"].duplicated(keep=False) | names["model_name"].duplicated(keep=False)]
    if len(clash):
        raise ValueError(
            f"EmbedLLM: model_id and model_name do not match one to one, e.g. {clash.head(4).to_dict('records')}."
        )
    names = names.sort_values("model_id")
    return names, pd.Index(names["model_id"]).get_indexer(long["model_id"])


def _embedllm_items(
    long: pd.DataFrame, item_code: np.ndarray, questions: pd.DataFrame | None, duplicates: str
) -> pd.DataFrame:
    """The item table, one row per item code in order: prompt_id, category (under "mean" all of a
    prompt's, `a|b`), part, benchmark and subject (from the first category), item_id and text."""
    firsts = long.assign(code=item_code).drop_duplicates("code").sort_values("code")
    items = pd.DataFrame(
        {
            "prompt_id": firsts["prompt_id"].to_numpy(),
            "category": firsts["category"].to_numpy(),
            "part": np.asarray(EMBEDLLM["splits"])[firsts["part"].to_numpy()],
        }
    )
    family = [embedllm_benchmark(c) for c in items["category"]]
    items["benchmark"], items["subject"] = [f for f, _ in family], [s for _, s in family]
    if duplicates == "rows":
        items["item_id"] = items["prompt_id"].astype(str) + ":" + items["category"]
    else:
        items["item_id"] = items["prompt_id"].astype(str)
        every = long.assign(code=item_code).drop_duplicates(["code", "category"]).groupby("code", sort=True)
        items["category"] = every["category"].agg("|".join).to_numpy()
    items["text"] = _embedllm_texts(long if questions is None else questions, items["prompt_id"])
    return items


def embedllm_from_frames(
    train: pd.DataFrame,
    val: pd.DataFrame,
    test: pd.DataFrame,
    questions: pd.DataFrame | None = None,
    *,
    duplicates: str = "rows",
) -> Dataset:
    """EmbedLLM's split files (and `questions`, question_order.csv) as one Dataset.

    The split frames need the label columns (`prompt_id, model_id, category_id, label, model_name,
    category`); the texts come from `questions` (columns prompt_id, prompt), or from the frames' own
    `prompt` column when `questions` is None. The item table gains `prompt_id`, `category` and `part`
    (train / val / test: the file the item came from); `jeirt.splits.official_split(ds)` makes the
    official split from `part`, also after `Dataset.subset`.

    About 13% of EmbedLLM's rows repeat a (model, prompt) pair under another category (the same GPQA
    question in `gpqa_main_*` and `gpqa_diamond_*`, say), sometimes with different labels.
    `duplicates` says what an item is:

    - "rows" (default; the JE-IRT authors' choice): an item is a (prompt, category) pair, so every row
      is its own sample, with its own label, and the test score counts rows, as theirs does. Two items
      of one prompt share its text and so its features.
    - "mean": an item is a prompt; its rows are averaged into a soft label (the share correct). Its
      benchmark and subject are those of its first category, `category` lists all of them
      (`a|b`). Accuracy reads a soft label as correct when it is >= 0.5, so a prompt answered once
      right and once wrong counts as one label, scored right whenever the prediction is >= 0.5,
      where "rows" scores it as two labels, one of them wrong whatever the prediction.

    An item found in more than one split file belongs to the first of train, val, test that holds it:
    its rows in the later files are left out, with a warning that counts them, so that no test item
    was trained on. (Under "rows" an item is a (prompt, category) pair, so a prompt may still be in
    train under one category and in test under another, as in the authors' files and scores.)
    """
    if duplicates not in EMBEDLLM_DUPLICATES:
        raise ValueError(
            f"duplicates={duplicates!r}; expected one of {EMBEDLLM_DUPLICATES}: 'rows' (every row "
            "a sample, the JE-IRT authors' choice) or 'mean' (one soft label per prompt)."
        )
    long = _embedllm_rows((train, val, test), with_texts=questions is None)  # (n_rows, ...)

    names, model_row = _embedllm_models(long)  # (n_models,), (n_rows,)

    long, item_code, model_row = _embedllm_first_split(long, model_row, duplicates)
    matrix = _embedllm_labels(long, item_code, model_row, len(names), duplicates)  # (n_models, n_items)
    items = _embedllm_items(long, item_code, questions, duplicates)
    ds = Dataset(
        name="embedllm",
        models=names["model_name"].astype(str).tolist(),
        items=items[ITEM_COLUMNS + ["prompt_id", "category", "part"]],
        labels=matrix,
    )
    return ds


def _embedllm_first_split(
    long: pd.DataFrame, model_row: np.ndarray, duplicates: str
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """EmbedLLM's rows with each item's code (n_rows,): a (prompt, category) pair ("rows") or a prompt
    ("mean"), in order of appearance. An item's rows in a later split file than its first are left
    out, with a warning that counts them."""
    key = ["prompt_id", "category"] if duplicates == "rows" else ["prompt_id"]
    item_code = long.groupby(key, sort=False).ngroup().to_numpy()  # (n_rows,) in order of appearance
    first_part = pd.Series(long["part"].to_numpy()).groupby(item_code).transform("min").to_numpy()
    late = long["part"].to_numpy() != first_part
    if late.any():
        moved = pd.Series(long["part"].to_numpy()[late]).map(dict(enumerate(EMBEDLLM["splits"])))
        warnings.warn(
            f"EmbedLLM: {int(pd.unique(item_code[late]).size)} item(s) appear in more than one split "
            f"file; each belongs to the first of train, val, test, and its "
            f"{int(late.sum())} row(s) in later files ({moved.value_counts().to_dict()}) are left out.",
            UserWarning,
            stacklevel=3,
        )
        long, item_code, model_row = long[~late], item_code[~late], model_row[~late]
    return long, item_code, model_row


def _embedllm_labels(
    long: pd.DataFrame, item_code: np.ndarray, model_row: np.ndarray, n_models: int, duplicates: str
) -> np.ndarray:
    """The label matrix (n_models, n_items): each (model, item)'s rows averaged (a soft label where
    they differ), NaN where none; under "rows" a repeated (model, prompt, category) gets a warning."""
    n_items = int(item_code.max()) + 1
    cell = model_row.astype(np.int64) * n_items + item_code  # (n_rows,) one number per (model, item)
    repeats = pd.Series(cell).duplicated(keep=False).to_numpy()
    if duplicates == "rows" and repeats.any():
        warnings.warn(
            f"EmbedLLM: {int(repeats.sum())} rows repeat a (model, prompt, category) triple; "
            "they are averaged into one soft label each.",
            UserWarning,
            stacklevel=3,
        )
    sums = np.bincount(cell, weights=long["label"].to_numpy(np.float64), minlength=n_models * n_items)
    counts = np.bincount(cell, minlength=n_models * n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / counts, np.nan).reshape(n_models, n_items)


def _embedllm_texts(source: pd.DataFrame, prompt_ids: pd.Series) -> np.ndarray:
    """The text of each prompt id, from a frame with prompt_id and prompt; an id without one is an error."""
    missing = [c for c in ("prompt_id", "prompt") if c not in source.columns]
    if missing:
        raise ValueError(f"EmbedLLM question_order.csv lacks column(s) {missing}; expected prompt_id, prompt.")
    table = pd.Series(source["prompt"].to_numpy(), index=source["prompt_id"].astype(np.int64).to_numpy())
    found = table[~table.index.duplicated()].reindex(prompt_ids.to_numpy())
    if found.isna().any():
        absent = prompt_ids[found.isna().to_numpy()].head(5).tolist()
        raise ValueError(
            f"EmbedLLM: {int(found.isna().sum())} prompt id(s) have no text in question_order.csv, "
            f"e.g. {absent}; the files come from different revisions: delete the cache folder "
            "and download them again."
        )
    return found.astype(str).to_numpy()


def load_embedllm(cache: Path | None = None, *, revision: str | None = None, duplicates: str = "rows") -> Dataset:
    """Download (once) and load EmbedLLM (its official split: `jeirt.splits.official_split`); offline it
    fails at once.

    `revision`: a hub commit, default `$JEIRT_EMBEDLLM_REVISION`, else the pinned `EMBEDLLM["revision"]`.
    Each split file's row count is checked against the counts registered for that commit, so a
    truncated download is refused. Labels are read without the prompt text (`usecols`), and each text
    once, from question_order.csv. `duplicates`: see `embedllm_from_frames`.
    """
    if duplicates not in EMBEDLLM_DUPLICATES:  # before any download
        raise ValueError(f"duplicates={duplicates!r}; expected one of {EMBEDLLM_DUPLICATES}.")
    try:
        hf_hub_download = settings.import_quietly("huggingface_hub", "hf_hub_download")
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("EmbedLLM needs huggingface_hub: pip install 'jeirt[encoders]'.") from err
    revision = revision or os.environ.get("JEIRT_EMBEDLLM_REVISION") or EMBEDLLM["revision"]
    folder = (Path(cache) if cache else settings.cache_dir()) / "embedllm"
    lock_path = folder / "lock.json"
    lock = json.loads(lock_path.read_text()) if lock_path.is_file() else {}
    files = [f"{part}.csv" for part in EMBEDLLM["splits"]] + [EMBEDLLM["questions"]]
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")  # read now, not at import
    try:
        paths = {
            f: Path(
                hf_hub_download(
                    EMBEDLLM["repo_id"],
                    f,
                    repo_type=EMBEDLLM["repo_type"],
                    revision=revision,
                    cache_dir=folder / "hub",
                    etag_timeout=10,
                    local_files_only=offline,
                )
            )
            for f in tqdm(files, desc="EmbedLLM files", unit="file", disable=len(files) < 2)
        }
    except Exception as err:
        raise ConnectionError(
            f"could not fetch EmbedLLM ({EMBEDLLM['repo_id']} at {revision}) from the Hugging Face hub: "
            f"{str(err).rstrip('.')}. Without network access load a local dataset instead: 'mmlu_pro', "
            "'zeroeval' or 'metabench' (in the repository's data/, or in the folder JEIRT_DATA names)."
        ) from err
    digests = {f: sha256_file(p) for f, p in paths.items()}
    if lock.get("revision") == revision and any(lock.get("sha256", {}).get(f, d) != d for f, d in digests.items()):
        raise ValueError(
            f"EmbedLLM files at revision {revision} differ from the checksums recorded in "
            f"{lock_path}; delete {folder} to download them again."
        )
    frames = {}
    for part in EMBEDLLM["splits"]:
        frames[part] = _read_embedllm_labels(paths[f"{part}.csv"], part, revision, folder)
    questions = pd.read_csv(
        paths[EMBEDLLM["questions"]], usecols=["prompt_id", "prompt"], dtype={"prompt": str}, keep_default_na=False
    )
    folder.mkdir(parents=True, exist_ok=True)
    write_json(lock_path, {"revision": revision, "sha256": digests}, indent=1)
    return embedllm_from_frames(frames["train"], frames["val"], frames["test"], questions, duplicates=duplicates)


def _read_embedllm_labels(path: Path, part: str, revision: str, folder: Path) -> pd.DataFrame:
    """One split file without its prompt text, its row count checked against the registered one."""
    try:
        # Names as written (a model called "NA" or "None" stays one); only an empty number cell is missing.
        frame = pd.read_csv(
            path,
            usecols=_LABEL_COLUMNS,
            dtype={"model_name": str, "category": str},
            keep_default_na=False,
            na_values={c: [""] for c in ("prompt_id", "model_id", "category_id", "label")},
        )
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(
            f"EmbedLLM {part}.csv ({path}) could not be read ({err}): the download is damaged or "
            f"not EmbedLLM's; delete {folder} to download it again."
        ) from err
    expected = EMBEDLLM["rows"].get(revision, {}).get(part)
    if expected is not None and len(frame) != expected:
        raise ValueError(
            f"EmbedLLM {part}.csv has {len(frame):,} rows where revision {revision} has "
            f"{expected:,}: the download is truncated or damaged; delete {folder} to download it again."
        )
    return frame
