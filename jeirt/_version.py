"""The package's version, declared once: `jeirt.__version__`, the model files' `version` and the wheel's
version (pyproject.toml reads it from here) all come from this line."""

__version__ = "0.1.0"
