"""Sphinx extension: record how long each code cell of an executed page took.

myst-nb runs the pages through jupyter-cache with nbclient's `record_timing` off. This turns it on,
so every executed cell keeps `metadata.execution` (start and end times) in the cached notebook, and
`scripts/page_times.py` can report seconds per cell next to seconds per page. Outputs, the cache's
matching of pages and the rendered site are unchanged.
"""
from __future__ import annotations

import functools

from myst_nb.core.execute import cache as _cache


def setup(app):
    execute = _cache.single_nb_execution
    if not getattr(execute, "records_timing", False):
        @functools.wraps(execute)
        def timed(*args, **kwargs):
            kwargs.setdefault("record_timing", True)
            return execute(*args, **kwargs)

        timed.records_timing = True
        _cache.single_nb_execution = timed
    return {"parallel_read_safe": True, "parallel_write_safe": True}
