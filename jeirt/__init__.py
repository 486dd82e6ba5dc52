"""jeirt: Joint Embedding Item Response Theory (JE-IRT) for LLM evaluation data.

The public API, importable from here:

    from jeirt import JEIRT, read_results_csv, split_by_question
    ds = read_results_csv("my_results.csv")
    model = JEIRT(d=256).fit(ds, split_by_question(ds, seed=0))

The names load their modules on first use (PEP 562), so `import jeirt` stays as light as the standard
library: the console entry handles Ctrl-C before torch and pandas are imported (`jeirt/__main__.py`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jeirt._version import __version__

# name -> the module that defines it
_EXPORTS = {
    "JEIRT": "jeirt.estimator",
    "ModelFileError": "jeirt.modelfile",
    "Dataset": "jeirt.data.dataset",
    "Split": "jeirt.splits",
    "from_long": "jeirt.data.csv_tables",
    "load_dataset": "jeirt.data.loader",
    "read_results_csv": "jeirt.data.csv_tables",
    "read_items_csv": "jeirt.data.csv_tables",
    "split_by_question": "jeirt.splits",
    "default_split": "jeirt.splits",
    "hold_out_models": "jeirt.splits",
    "evaluate": "jeirt.metrics",
    "score": "jeirt.metrics",
}

__all__ = [
    "__version__",
    "JEIRT",
    "ModelFileError",
    "Dataset",
    "Split",
    "from_long",
    "load_dataset",
    "read_results_csv",
    "read_items_csv",
    "split_by_question",
    "default_split",
    "hold_out_models",
    "evaluate",
    "score",
]

if TYPE_CHECKING:  # what a type checker and an IDE see; at run time `__getattr__` imports them
    from jeirt.data.csv_tables import from_long, read_items_csv, read_results_csv
    from jeirt.data.dataset import Dataset
    from jeirt.data.loader import load_dataset
    from jeirt.estimator import JEIRT
    from jeirt.metrics import evaluate, score
    from jeirt.modelfile import ModelFileError
    from jeirt.splits import Split, default_split, hold_out_models, split_by_question


def __getattr__(name: str) -> Any:
    """`jeirt.JEIRT` and the other public names: imported from their module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'jeirt' has no attribute {name!r}; its public names are {__all__}.")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    """The module's names and the public ones not imported yet (for completion in a notebook)."""
    return sorted({*globals(), *__all__})
