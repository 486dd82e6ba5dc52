"""Shared fixtures: real datasets from $JEIRT_DATA (skipped with a reason when absent) and simulated data."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from jeirt.data import load_local, local_datasets, simulate


def _data_dir() -> Path | None:
    path = os.environ.get("JEIRT_DATA")
    return Path(path) if path else None


def require_dataset(name: str):
    """Load `name` from $JEIRT_DATA or skip the test, saying why."""
    root = _data_dir()
    if root is None or name not in local_datasets(root):
        pytest.skip(f"dataset {name!r} not found: set JEIRT_DATA to a folder holding it (CI: ../shared/data)")
    return load_local(name, root)


@pytest.fixture(scope="session")
def mmlu_pro():
    return require_dataset("mmlu_pro")


@pytest.fixture(scope="session")
def small_sim():
    """A quick simulated dataset (40 models x 600 items) and its truth."""
    return simulate(n_models=40, n_items=600, feature_dim=32, d=8, seed=0)


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread: on a few shared cores, more threads mostly wait on each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
