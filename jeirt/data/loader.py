"""`load_dataset`: a dataset by name, from whichever source holds it (the hub, a local folder or a CSV)."""

from __future__ import annotations

from jeirt.data.csv_tables import CSV_SUFFIXES, read_results_csv
from jeirt.data.dataset import Dataset
from jeirt.data.embedllm import load_embedllm
from jeirt.data.local import load_local


def load_dataset(name: str) -> Dataset:
    """A dataset by name: 'embedllm' (hub), a folder under `$JEIRT_DATA`, or a path to a results CSV (a
    name ending in one of `CSV_SUFFIXES`: plain or compressed)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"dataset={name!r}; expected a dataset name (see `jeirt data`) or a results CSV.")
    if name.lower() == "embedllm":
        return load_embedllm()
    if name.lower().endswith(CSV_SUFFIXES):
        return read_results_csv(name)
    return load_local(name)
