"""User-facing workflows built on the core: `compare` (every method on the same splits), `routing`
(pick a model per question, optionally by price) and `evaluation` (a new model's scores from a few
questions). The core never imports them; the command line (`jeirt.cli`) does."""
