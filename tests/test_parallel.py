"""jeirt.parallel: side by side, results in the calls' order, and no stderr when loky replaces a worker."""

from __future__ import annotations

import os
import time
import warnings

from threadpoolctl import threadpool_info

from jeirt.parallel import side_by_side

HELD: list[bytes] = []  # what a worker keeps between its jobs, as a leaking worker would


def hold_megabytes(job: int, megabytes: int) -> int:
    """Keep `megabytes` of written memory in this worker, then wait past loky's memory check (1 s)."""
    HELD.append(b"\x01" * (megabytes << 20))
    time.sleep(1.2)
    return job


def test_results_come_back_in_the_calls_order_longest_first_or_not():
    calls = [(job, 0) for job in range(4)]
    assert side_by_side(hold_megabytes, calls, n_jobs=2, longest_first=[0, 3, 1, 2]) == [0, 1, 2, 3]


def test_a_worker_replaced_for_its_memory_loses_no_job_and_warns_nothing():
    """loky stops a worker 300 MB past its size after its first job and starts another for the jobs left:
    every job still comes back, and its UserWarning (a stderr block on a page) is not shown."""
    from joblib.externals.loky import get_reusable_executor

    calls = [(job, 0 if job < 2 else 320) for job in range(6)]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert side_by_side(hold_megabytes, calls, n_jobs=2) == list(range(6))
    finally:  # a worker still holding its 320 MB would keep them until its idle timeout
        get_reusable_executor().shutdown(wait=True)
    assert [str(w.message) for w in caught] == []


def worker_threads(_: int) -> tuple[str | None, list[int]]:
    """This worker's OMP_NUM_THREADS and the thread count of each BLAS / OpenMP pool it has loaded."""
    import numpy as np

    np.ones((64, 64)) @ np.ones((64, 64))  # BLAS loaded
    return os.environ.get("OMP_NUM_THREADS"), [pool["num_threads"] for pool in threadpool_info()]


def test_each_worker_runs_one_thread_whatever_the_callers_omp_num_threads(monkeypatch):
    """A page run alone has OMP_NUM_THREADS = its cores; its workers, side by side, must not each take them."""
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    for omp, pools in side_by_side(worker_threads, [(job,) for job in range(2)], n_jobs=2):
        assert omp == "1" and pools and set(pools) == {1}
