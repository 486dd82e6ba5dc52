"""The model file's format (`JEIRT.save` writes it, `JEIRT.load` reads it): its version, its parts and
their types, the weights' checksum, and the checks a file passes before a model is built from it, one
check a step, each naming the file and the part at fault (`ModelFileError`).
"""

from __future__ import annotations

import hashlib
import json
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path

import torch

from jeirt._version import __version__
from jeirt.files import InputRefused, check_input

# The layout of a model file (`JEIRT.save`). 2: the weights carry a SHA-256 checksum (`weights_checksum`).
# 1: files written before, without one (they load with a warning). A newer number is refused.
FORMAT_VERSION = 2


class ModelFileError(ValueError):
    """A model file that cannot be used: unreadable, damaged, edited, or of an unknown format version."""


def read_model_file(path: str | Path, param_names: Sequence[str]) -> tuple[dict, dict]:
    """What a model file holds and its settings (`param_names`: the estimator's parameters), each part
    checked: readable, of a format this jeirt reads, every part there and of its type, settings it knows,
    weights that match their checksum and are finite. ModelFileError names the file and the part."""
    blob = _read_blob(path)
    version = _check_format(path, blob)
    _check_parts(path, blob)
    config = _check_config(path, blob, param_names)
    _check_weights(path, blob, version)
    return blob, config


def _read_blob(path: str | Path) -> dict:
    """The dict a model file holds, read with `weights_only` (no code runs); ModelFileError for a path
    that is no regular file (a FIFO or device would be read forever: refused before it is opened), an
    empty, cut-short, damaged or non-torch file."""
    try:
        check_input(path)
    except InputRefused as err:
        raise ModelFileError(f"could not read a jeirt model: {err}") from None
    if Path(path).is_file() and Path(path).stat().st_size == 0:
        raise ModelFileError(
            f"could not read a jeirt model from {path}: the file is empty (0 bytes); restore it or refit the model."
        )
    if Path(path).is_file() and not zipfile.is_zipfile(path):  # torch.save writes a zip archive
        raise ModelFileError(
            f"could not read a jeirt model from {path}: not a torch file, or one cut short (a "
            "copy or save interrupted); restore it or refit the model."
        )
    try:
        blob = torch.load(Path(path), map_location="cpu", weights_only=True)
    except Exception as err:
        # torch's own message suggests weights_only=False, i.e. running the file's code: not here.
        reason = (
            "it holds Python objects other than tensors and plain values, which jeirt refuses to unpickle"
            if "weights_only" in str(err)
            else f"the file is damaged ({type(err).__name__})"
        )
        raise ModelFileError(
            f"could not read a jeirt model from {path}: {reason}. Restore the file or refit the model."
        ) from None
    if not isinstance(blob, dict) or blob.get("format") != "jeirt-model":
        raise ModelFileError(f"{path} is not a model saved by jeirt (JEIRT.save).")
    return blob


def _check_format(path: str | Path, blob: dict) -> int:
    """The file's format version (1 when it names none, as the files before checksums); one this jeirt
    does not read is refused, saying whether it is older or newer and what to do."""
    version = blob.get("format_version", 1)
    writer = f" (written by jeirt {blob['version']})" if isinstance(blob.get("version"), str) else ""
    if not isinstance(version, int) or isinstance(version, bool):
        raise ModelFileError(
            f"{path}: its format_version is {version!r}, not a number; the file is damaged or edited. "
            "Restore it or refit the model."
        )
    if version < 1:
        raise ModelFileError(
            f"{path} is a jeirt model file of format {version}{writer}, older than any this jeirt "
            f"({__version__}) reads (formats 1 to {FORMAT_VERSION}); refit the model with this jeirt, "
            "or load it with the jeirt that wrote it."
        )
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"{path} is a jeirt model file of format {version}{writer}, newer than this jeirt "
            f"({__version__}) reads (formats 1 to {FORMAT_VERSION}). Upgrade jeirt, or refit the "
            "model with this version."
        )
    return version


# The parts of a model file and their types: required first, then those later formats added.
_PARTS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "config": (dict, "the settings"),
    "models": (list, "the model names"),
    "feature_dim": (int, "the question features' width"),
    "split": ((str, type(None)), "the split's name"),
    "history": (dict, "the training history"),
    "state_dict": (dict, "the weights"),
}
_OPTIONAL_PARTS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "temperature": ((int, float), "the calibration temperature"),
    "calibration": (dict, "the calibration record"),
    "search_results": (list, "the search record"),
    "corrections": (dict, "the question corrections"),
    "benchmarks": (dict, "the benchmark one-hot's names"),
    "checksum": (str, "the weights' checksum"),
}


def _check_parts(path: str | Path, blob: dict) -> None:
    """Every part a model needs is there and of its type; the model names a list of distinct names;
    feature_dim a positive integer; the weights tensors by name."""
    lacking = [key for key in _PARTS if key not in blob]
    if lacking:
        raise ModelFileError(
            f"{path} lacks part(s) of a jeirt model ({lacking}); the file is damaged or edited. "
            "Restore it or refit the model."
        )
    for parts, required in ((_PARTS, True), (_OPTIONAL_PARTS, False)):
        for key, (kind, what) in parts.items():
            if (required or key in blob) and (not isinstance(blob[key], kind) or isinstance(blob[key], bool)):
                raise ModelFileError(
                    f"{path}: its {key!r} ({what}) is a {type(blob[key]).__name__}, not a "
                    f"{_kind_name(kind)}; the file is damaged or edited. Restore it or refit the model."
                )
    models = blob["models"]
    if not models or not all(isinstance(m, str) for m in models):
        raise ModelFileError(
            f"{path}: its model names are not a list of names; the file is damaged or edited: restore it or "
            "refit the model."
        )
    if len(set(models)) < len(models):
        repeated = sorted({m for m in models if models.count(m) > 1})
        raise ModelFileError(
            f"{path} names model(s) {repeated[:5]} more than once; the file is damaged or edited. Refit the model."
        )
    if blob["feature_dim"] < 1:
        raise ModelFileError(
            f"{path}: feature_dim={blob['feature_dim']!r} is not a positive integer; the file is damaged or "
            "edited: restore it or refit the model."
        )
    odd = [k for k, v in blob["state_dict"].items() if not (isinstance(k, str) and isinstance(v, torch.Tensor))]
    if odd:
        raise ModelFileError(
            f"{path}: its weights hold entries that are not named tensors ({odd[:3]}); the file is damaged "
            "or edited. Restore it or refit the model."
        )


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join("None" if k is type(None) else k.__name__ for k in kinds)


def _check_config(path: str | Path, blob: dict, param_names: Sequence[str]) -> dict:
    """The settings, with a `device` this machine lacks made None; settings this jeirt does not know,
    or a training recipe that is not a dict, are refused."""
    config = dict(blob["config"])
    if not isinstance(config.get("training"), dict):
        raise ModelFileError(
            f"{path} lacks part(s) of a jeirt model (['config']: its training recipe); the file is "
            "damaged or edited. Restore it or refit the model."
        )
    config["device"] = device_here(config.get("device"))  # fitted on CUDA, used on a CPU machine
    unknown = set(config) - set(param_names)
    if unknown:
        raise ModelFileError(
            f"{path} holds settings this version of jeirt does not know: {sorted(unknown)}; "
            "it was written by another version. Refit the model or use that version."
        )
    return config


def _check_weights(path: str | Path, blob: dict, version: int) -> None:
    """The weights match their checksum (format 2; format 1 has none: a warning) and are finite."""
    if version >= 2 and blob.get("checksum") != weights_checksum(blob):
        raise ModelFileError(
            f"{path}: its weights do not match the checksum saved with them; the file was "
            "damaged (on disk or in a copy) or edited. Restore it or refit the model."
        )
    if version == 1:
        warnings.warn(
            f"{path} was saved without a checksum of its weights (model file format 1, before "
            f"jeirt's format {FORMAT_VERSION}), so damage to them cannot be detected; refit the "
            "model, or save it again once you trust it (`jeirt onboard --in-place` does).",
            UserWarning,
            stacklevel=4,  # JEIRT.load's caller
        )
    bad = not_finite(blob)
    if bad:
        raise ModelFileError(
            f"{path}: the model's {bad}; the file is damaged or its fit diverged. Restore it or refit the model."
        )


def _weight_tensors(blob: dict) -> list[tuple[str, torch.Tensor]]:
    """The tensors that predict, by name: the network's, then the per-question corrections'."""
    state = blob.get("state_dict")
    tensors = [(f"state_dict.{k}", v) for k, v in sorted(state.items())] if isinstance(state, dict) else []
    corrections = blob.get("corrections")
    if isinstance(corrections, dict):
        tensors += [(f"corrections.{k}", corrections[k]) for k in ("shifts", "offsets") if k in corrections]
    return tensors


def weights_checksum(blob: dict) -> str:
    """SHA-256 of a model file's weights: every tensor (name, dtype, shape, bytes), the model names and
    the corrected questions' ids, so that damage to any of them, or an edit, is found at load."""
    digest = hashlib.sha256()
    for name, tensor in _weight_tensors(blob):
        if not isinstance(tensor, torch.Tensor):  # edited: hashed as written, so it cannot match
            digest.update(f"{name}:{tensor!r};".encode())
            continue
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{name}:{flat.dtype}:{tuple(tensor.shape)};".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    names = [blob.get("models"), (blob.get("corrections") or {}).get("item_ids")]
    digest.update(json.dumps(names, default=str).encode())
    return digest.hexdigest()


def not_finite(blob: dict) -> str | None:
    """Which weights hold NaN or inf (as a phrase naming the first such tensor), else None."""
    for name, tensor in _weight_tensors(blob):
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and not torch.isfinite(tensor).all():
            count = int((~torch.isfinite(tensor)).sum())
            return f"{name} holds {count} NaN or infinite value(s) of {tensor.numel()}"
    return None


def device_here(device: str | None) -> str | None:
    """`device` if this machine has it, else None (the default device): a model file records where it
    was fitted, not where it will be used."""
    if device is None:
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        return None
    if dev.type == "cuda":
        return device if torch.cuda.is_available() and (dev.index or 0) < torch.cuda.device_count() else None
    if dev.type == "mps":
        return device if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available() else None
    return device
