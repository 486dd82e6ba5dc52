"""Shared fixtures: the real datasets the repository ships (data/, or $JEIRT_DATA) and simulated data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from jeirt import settings
from jeirt.data import load_local, local_datasets
from jeirt.simulate import simulate


def nbval_command(page: Path, folder: Path) -> list[str]:
    """The command that runs book page `page` as a notebook under nbval in `folder` (jupytext writes the
    notebook there, with a pytest.ini that keeps the project's pytest options out): a cell fails only
    if it raises. The suite's other plugins stay out: loading them cost 0.7 s a page."""
    import jupytext  # here, not at the top: only the chapter tests need it

    notebook = folder / f"{page.stem}.ipynb"
    jupytext.write(jupytext.read(page), notebook)
    (folder / "pytest.ini").write_text("[pytest]\n")
    unused = ["-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:hypothesispytest", "-p", "no:anyio"]
    return [sys.executable, "-m", "pytest", "--nbval-lax", "--current-env", "--nbval-cell-timeout=600",
            *unused, "-q", "-c", str(folder / "pytest.ini"), "--rootdir", str(folder), str(notebook)]  # fmt: skip


# The tests that cost the most, in seconds on one of 2 cores (`make test PYTEST_ADDOPTS=--durations=30`,
# issue 41; the chapters are half of the suite). Only their order depends on these: a test not
# listed counts as cheap.
CHAPTER_COSTS = {
    "beyond": 31,
    "text_pays": 25,
    "one_number": 23,
    "geometry": 21,
    "ood": 20,
    "routing": 19,
    "known_answers": 18,
    "onboarding": 18,
    "efficient": 16,
    "difficulty": 12,
    "reproducing": 11,
    "dimension": 10,
    "your_results": 9,
    "taxonomy": 8,
    "data": 8,
    "intro": 6,
}
# The primer's lectures, each run twice in one kernel (tests/test_primer.py).
PRIMER_COSTS = {"irt_primer": 70, "irt_primer_bridge": 30, "irt_primer_abilities": 28}
COSTS = (
    {f"test_chapter_runs[book/{page}]": cost for page, cost in CHAPTER_COSTS.items()}
    | {f"test_primer_lecture_runs_twice_in_one_kernel[book/{page}]": cost for page, cost in PRIMER_COSTS.items()}
    | {
        "test_a_fresh_clone_has_its_data_and_runs_the_data_page": 18,
        "test_onboarding_with_all_data_matches_joint_training": 13,
        "test_the_package_passes_mypy": 13,  # on a fresh clone; seconds with its cache
        "test_few_question_comparison_runs_datasets_and_seeds_side_by_side_as_one_by_one": 10,
        "test_two_in_place_onboardings_at_once_both_land": 8,
        "test_a_page_s_cpu_seconds_count_its_worker_processes": 7,
        "test_launch_buttons_only_for_a_real_repository": 6,
    }
)


def _cost(item: pytest.Item) -> float:
    """`COSTS` of a test, by its name; 0 for one not listed."""
    return COSTS.get(item.name, 0)


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected: the blocks are of the tests that run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist's worksteal, each worker first gets one contiguous block of the tests (block i
    of n: a 1/(n - i) share of what is left) and an idle worker later steals from the end of another's:
    so the costly tests are dealt out over the blocks (each to the block with the least so far, dearest
    first) and open their block, and the last test to start is a cheap one, not a chapter."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    costly = sorted((item for item in items if _cost(item) > 0), key=_cost, reverse=True)
    if workers < 2 or not costly:
        return
    cheap = [item for item in items if _cost(item) == 0]
    sizes, left = [], len(items)
    for i in range(workers):
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    heads: list[list[pytest.Item]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for item in costly:
        open_blocks = [i for i in range(workers) if len(heads[i]) < sizes[i]]
        block = min(open_blocks, key=lambda i: loads[i])
        heads[block].append(item)
        loads[block] += _cost(item)
    ordered = []
    for head, size in zip(heads, sizes):
        ordered += head + cheap[: size - len(head)]
        del cheap[: size - len(head)]
    items[:] = ordered + cheap


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
    (a page reads the main fit that another page made), and each is fitted once per session. Under
    pytest-xdist, fits run in the test's own process (JEIRT_WORKERS=1)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder = root / "fits"
    folder.mkdir(exist_ok=True)
    mp = pytest.MonkeyPatch()
    mp.setenv("JEIRT_FIT_CACHE", str(folder))
    if os.environ.get("PYTEST_XDIST_WORKER") and "JEIRT_WORKERS" not in os.environ:
        # The tests already run one per core: fits side by side (fit_many's default) would only start
        # worker processes that crowd them, each importing torch and jeirt first (seconds of CPU a test).
        mp.setenv("JEIRT_WORKERS", "1")
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
