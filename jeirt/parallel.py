"""The one way jeirt runs independent jobs side by side: worker processes (joblib), one torch thread each.

Fits, seeds and draws of an experiment are independent; on a few cores, one process per job with one
thread each finishes sooner than one process with many threads (the threads mostly wait on each other).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

from jeirt import settings

# loky stops a worker whose memory has grown 300 MB past its size after its first job (freed arrays that
# the allocator keeps count too), or that sat idle past its timeout, and starts another for the jobs
# still waiting. No job is lost (a worker that dies mid-job raises instead), so its warning about the
# replacement would only put a stderr block on a page (the book's HTML check refuses one).
WORKER_REPLACED = "A worker stopped while some jobs were given to the executor"


def _one_thread(function: Callable, args: tuple):
    """`function(*args)` in a worker with one torch thread (the workers already share the cores; its
    BLAS and OpenMP threads are set to one when it starts)."""
    import torch

    torch.set_num_threads(1)
    return function(*args)


def side_by_side(
    function: Callable, calls: Sequence[tuple], n_jobs: int | None = None, longest_first: Sequence[float] | None = None
) -> list:
    """`[function(*call) for call in calls]`, in `n_jobs` worker processes (default
    `jeirt.settings.workers()`), results in the calls' order.

    `longest_first` (one cost per call) starts the costliest calls first, so the workers finish
    together. With one job or one call everything runs here, in order. `function` and the calls must
    pickle (a module-level function, not a lambda). Arrays travel pickled (`max_nbytes=None`), so each
    worker's are its own and writable, not joblib's read-only memory maps.
    """
    calls = [tuple(call) for call in calls]
    jobs = settings.workers() if n_jobs is None else int(n_jobs)
    if jobs < 1:
        raise ValueError(f"n_jobs={n_jobs}; expected a positive number of worker processes (or None).")
    if longest_first is not None and len(longest_first) != len(calls):
        raise ValueError(f"{len(longest_first)} costs for {len(calls)} calls; give one per call (or None).")
    if jobs == 1 or len(calls) <= 1:
        return [function(*call) for call in calls]
    from joblib import Parallel, delayed, parallel_config

    order = list(range(len(calls)))
    if longest_first is not None:
        order.sort(key=lambda i: -float(longest_first[i]))
    # one thread in each worker for BLAS and OpenMP too (k-means, numpy), whatever the caller's
    # OMP_NUM_THREADS: a page run alone has one per core, which joblib would otherwise pass on
    with warnings.catch_warnings(), parallel_config(backend="loky", inner_max_num_threads=1):
        warnings.filterwarnings("ignore", message=WORKER_REPLACED, category=UserWarning)
        done = Parallel(n_jobs=min(jobs, len(calls)), max_nbytes=None)(
            delayed(_one_thread)(function, calls[i]) for i in order
        )
    by_call = dict(zip(order, done))
    return [by_call[i] for i in range(len(calls))]
