"""Sphinx extension: record how long each code cell of an executed page took.

myst-nb runs the pages through jupyter-cache with nbclient's `record_timing` off. This turns it on,
so every executed code cell's start and end times are kept, and `scripts/page_times.py` can report
seconds per cell next to seconds per page. The times go into the notebook's metadata
(`jeirt_cell_timing`, one entry per code cell), not the cells': jupyter-cache keys a page by its code
cells and all their metadata, so times left on the cells would give the cached copy a key no fresh
read of the page has, and every build would run every page again. Outputs, the cache's matching of
pages and the rendered site are unchanged.
"""

from __future__ import annotations

import functools

from myst_nb.core.execute import cache as _cache

KEY = "jeirt_cell_timing"


def stash_timings(nb) -> None:
    """Move each code cell's `metadata.execution` (nbclient's times) into `nb.metadata[KEY]`."""
    nb.metadata[KEY] = [cell.metadata.pop("execution", {}) for cell in nb.cells if cell.cell_type == "code"]


def cell_timings(nb) -> list[dict]:
    """Per code cell, nbclient's times: from `nb.metadata[KEY]`, or from the cells (older caches, or a
    notebook executed without `stash_timings`)."""
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    stashed = nb.get("metadata", {}).get(KEY)
    if stashed is not None and len(stashed) == len(code):
        return [dict(t) for t in stashed]
    return [dict(cell.get("metadata", {}).get("execution", {})) for cell in code]


def timed_execution(execute):
    """`execute` (jupyter-cache's single_nb_execution) with per-cell times recorded and stashed."""
    if getattr(execute, "records_timing", False):
        return execute

    @functools.wraps(execute)
    def timed(nb, *args, **kwargs):
        kwargs.setdefault("record_timing", True)
        result = execute(nb, *args, **kwargs)
        stash_timings(nb)
        return result

    timed.records_timing = True
    return timed


def setup(app):
    _cache.single_nb_execution = timed_execution(_cache.single_nb_execution)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
