"""Shared fixtures: the real datasets the repository ships (data/, or $JEIRT_DATA) and simulated data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import jupytext
import pytest
import torch

from jeirt import settings
from jeirt.data import load_local, local_datasets
from jeirt.simulate import simulate


def nbval_command(page: Path, folder: Path) -> list[str]:
    """The command that runs book page `page` as a notebook under nbval in `folder` (jupytext writes the
    notebook there, with a pytest.ini that keeps the project's pytest options out): a cell fails only
    if it raises."""
    notebook = folder / f"{page.stem}.ipynb"
    jupytext.write(jupytext.read(page), notebook)
    (folder / "pytest.ini").write_text("[pytest]\n")
    return [sys.executable, "-m", "pytest", "--nbval-lax", "--current-env", "--nbval-cell-timeout=600",
            "-p", "no:cacheprovider", "-q", "-c", str(folder / "pytest.ini"), "--rootdir", str(folder),
            str(notebook)]  # fmt: skip


def require_dataset(name: str):
    """Load `name` from the data folder. The repository ships every dataset, so a missing one fails."""
    root = settings.data_dir()
    assert name in local_datasets(root), f"dataset {name!r} is missing from {root}; the repository ships it."
    return load_local(name, root)


@pytest.fixture(scope="session", autouse=True)
def fresh_fit_cache(tmp_path_factory):
    """Fitted models (jeirt.fitcache) go to a folder of this test session, so every session fits afresh
    and nothing is left in the user's cache. The folder is shared by the session's workers (pytest-xdist
    gives each its own temporary folder, below a shared one): the chapters fit many of the same models
    (a page reads the main fit that another page made), and each is fitted once per session."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder = root / "fits"
    folder.mkdir(exist_ok=True)
    mp = pytest.MonkeyPatch()
    mp.setenv("JEIRT_FIT_CACHE", str(folder))
    yield
    mp.undo()


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
