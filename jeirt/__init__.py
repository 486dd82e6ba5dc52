"""jeirt: Joint Embedding Item Response Theory (JE-IRT) for LLM evaluation data."""

__version__ = "0.1.0"
