"""The book's own package, beside its pages (book/jeirt_book): what the pages import. Not part of the
library's wheel: `jeirt` never imports `jeirt_book`.

This module holds the pages' settings, read from the environment in one place; `jeirt_book.figures` holds
the figure style and shared plots, `jeirt_book.verdicts` the verdicts every results page computes, and
one module per page (`jeirt_book.onboarding` for book/onboarding.md, ...) that page's analysis and figures.

Every chapter of the book (`book/*.md`) opens its code, shown, with its imports and

    from jeirt_book import page_settings
    cfg = page_settings()
    print(cfg.describe())   # profile=smoke dataset=mmlu_pro encoder=all-MiniLM-L6-v2 device=cpu seed=0

so a reader sees on every page what the numbers below it were computed with. The environment decides:

    JEIRT_PROFILE   smoke (default here; tests, quick iteration): small slices, the whole book in minutes
                    full (`make book`'s default): the whole dataset, d = 256 and repeated seeds; the
                    paper's split and recipe too on EmbedLLM only (`PAPER_SETTING`). On `mmlu_pro`
                    about 20 minutes on 2 CPU cores; EmbedLLM wants a GPU
    JEIRT_DATASET   default embedllm (full) or mmlu_pro (smoke; `make book`'s default in both); any name
                    `jeirt.data.load_dataset` takes
    JEIRT_ENCODER   frozen question encoder, default all-MiniLM-L6-v2
    JEIRT_SEED      integer seed for sampling and training, default 0
    JEIRT_DEVICE    torch device, default: what `jeirt.settings.default_device()` finds

The profile-dependent knobs (how many items and models, epoch cap, dimension grid, seeds) are fields
of `PageSettings`, so no chapter hard-codes a size.

The paper's own setting is the full profile on EmbedLLM (`PAPER_SETTING`): there every page trains on
EmbedLLM's official `train` file, picks the checkpoint on `val` and reports on `test`
(`cfg.split_for(ds)`), with the JE-IRT authors' training recipe (`cfg.recipe == "paper"`, passed to
`JEIRT(recipe=...)`). Everywhere else the split is the seeded 80/10/10 split by question and the recipe
jeirt's fast default.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jeirt import settings as _settings

PROFILES = ("smoke", "full")
DEFAULT_ENCODER = "all-MiniLM-L6-v2"


# The one place that knows about Colab. The pages carry no set-up cell: they run as they are in a checkout,
# a build and the tests. The notebooks the publishing workflow pushes for the site's Colab buttons
# (scripts/colab_notebooks.py) get `setup_cell(url)` first (`colab_notebook`): a shallow clone brings the
# datasets (data/, not part of the package), and the install (jeirt, then the book's package beside the
# pages, book/) is not editable, so no kernel restart is needed. It cannot import jeirt: on Colab jeirt is
# what it installs.
def setup_cell(url: str) -> str:
    """The first cell of a notebook published for Colab from the repository `url`: clone and install on
    Colab; elsewhere it does nothing."""
    return f"""\
# On Colab: clone jeirt with its datasets, then install it.
# Elsewhere this cell does nothing.
import os, sys
if "google.colab" in sys.modules:
    !git clone --quiet --depth 1 {url} /content/jeirt
    %pip install --quiet "/content/jeirt[book]" /content/jeirt/book
    os.environ["JEIRT_DATA"] = "/content/jeirt/data"
"""


def colab_notebook(notebook: dict, url: str) -> dict:
    """A page's executed notebook (nbformat's JSON) as it is published for Colab: `setup_cell(url)` put
    first, tagged remove-cell, the page's own cells after it as they ran (`notebook` is left as it is)."""
    cell: dict[str, object] = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"tags": ["remove-cell"]},
        "outputs": [],
        "source": setup_cell(url),
    }
    if (notebook.get("nbformat"), notebook.get("nbformat_minor", 0)) >= (4, 5):
        cell["id"] = "colab-setup"  # cells carry ids from nbformat 4.5 on
    return notebook | {"cells": [cell, *notebook["cells"]]}


def repo_url() -> str | None:
    """The project's public GitHub repository (`jeirt.settings.REPO_URL`, from `JEIRT_REPO_URL`), or None
    while it is the placeholder: then the site has no launch or repository buttons."""
    url = _settings.REPO_URL
    if url == _settings.REPO_URL_PLACEHOLDER:
        return None
    if not re.fullmatch(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", url):
        raise ValueError(
            f"JEIRT_REPO_URL={url!r}; expected https://github.com/<owner>/<repository> "
            "(Colab opens notebooks from GitHub only), or unset it for a site without launch buttons."
        )
    return url


@dataclass(frozen=True)
class PageSettings:
    """What a chapter runs with. Build one with `page_settings()`; fields are read-only."""

    profile: str = "smoke"  # "smoke" or "full"; picks the defaults of the fields below
    dataset: str = "mmlu_pro"  # name passed to jeirt.data.load_dataset
    encoder: str = DEFAULT_ENCODER  # key into Dataset.embeddings: the frozen question encoder
    device: str = "cpu"  # torch device string
    seed: int = 0  # seed for item sampling, splits and training
    max_models: int | None = 200  # keep at most this many models, best covered first (None: all)
    max_items: int | None = 3000  # keep at most this many questions, same share per benchmark (None: all)
    max_epochs: int | None = 30  # cap on training epochs (None: the trainer's own schedule)
    d: int = 16  # embedding dimension of a single JE-IRT fit (full: 256, JEIRTNet's default)
    d_grid: tuple[int, ...] = (2, 8, 32)  # dimensions swept where a chapter compares d
    seeds: tuple[int, ...] = (0,)  # repeated fits, for spread across seeds
    split: str = "seeded"  # "seeded": split_by_question(ds, seed); "official": the dataset's own (EmbedLLM)
    recipe: str = "fast"  # JEIRT(recipe=...): "fast" (jeirt's default) or "paper" (the JE-IRT authors')

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(
                f"profile={self.profile!r}; expected one of {PROFILES} (set JEIRT_PROFILE to smoke or full)."
            )
        if self.split not in SPLITS:
            raise ValueError(f"split={self.split!r}; expected one of {SPLITS}.")
        if self.recipe not in RECIPE_NAMES:
            raise ValueError(f"recipe={self.recipe!r}; expected one of {RECIPE_NAMES}.")
        for name in ("max_models", "max_items", "max_epochs"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name}={value}; expected a positive integer or None.")

    @property
    def smoke(self) -> bool:
        return self.profile == "smoke"

    def describe(self) -> str:
        """One line naming what this page ran with; every chapter prints it (split and recipe when not
        the defaults, i.e. in the paper's setting)."""
        paper = "" if (self.split, self.recipe) == ("seeded", "fast") else f" split={self.split} recipe={self.recipe}"
        return (
            f"profile={self.profile} dataset={self.dataset} encoder={self.encoder} "
            f"device={self.device} seed={self.seed}" + paper
        )

    def split_for(self, ds, seed: int | None = None):
        """The split every page trains, selects and reports on. With `split == "official"`, a dataset's
        own train / val / test (EmbedLLM's files: `jeirt.splits.official_split`, the same for every seed);
        otherwise, or for a dataset without one (a second, local dataset a page also uses), the seeded
        80/10/10 question split `split_by_question(ds, seed)` (seed default `self.seed`)."""
        from jeirt.splits import default_split

        seed = self.seed if seed is None else seed
        return default_split(ds, seed=seed) if self.split == "official" else seeded_split(ds, seed)

    def as_dict(self) -> dict:
        """All fields, for saving next to results (a results file carries the config that made it)."""
        return asdict(self)

    def load_dataset(self):
        """`self.dataset`, cut to `max_models` and `max_items` (a seeded, per-benchmark sample)."""
        from jeirt.data import load_dataset
        from jeirt.splits import sample_items

        ds = load_dataset(self.dataset)
        rng = np.random.default_rng(self.seed)
        models = None
        if self.max_models is not None and ds.n_models > self.max_models:
            # Best-covered models first, so a sparse dataset keeps the models with most labels.
            coverage = ds.observed.sum(axis=1)
            models = np.sort(np.argsort(-coverage, kind="stable")[: self.max_models])
        items = None
        if self.max_items is not None and ds.n_items > self.max_items:
            items = sample_items(ds.items["benchmark"].to_numpy(), self.max_items, rng)
        return ds if models is None and items is None else ds.subset(models=models, items=items)


# Profile defaults. "full" follows the paper: the whole dataset, d = 256 for single fits, and one grid of d
# for every page that compares dimensions (Fig. 2's 16 to 1024, and d = 8 below it). d = 2 and 4 are
# left out: on mmlu_pro they train longest (about 100 and 40 s a fit on one core against 20-25 s for
# d = 8 to 1024), and Fig. 2 starts at 16.
PROFILE_DEFAULTS: dict[str, dict[str, Any]] = {
    "smoke": dict(
        dataset="mmlu_pro", max_models=200, max_items=1500, max_epochs=20, d=16, d_grid=(2, 8, 32), seeds=(0,)
    ),
    "full": dict(
        dataset="embedllm",
        max_models=None,
        max_items=None,
        max_epochs=None,
        d=256,
        d_grid=(8, 16, 32, 64, 128, 256, 512, 1024),
        seeds=(0, 1, 2),
    ),
}


def seeded_split(ds, seed: int):
    """The seeded 80/10/10 split by question (`jeirt.splits.split_by_question(ds, seed=seed)`): the
    default split of every page and of the chapter modules' per-seed protocols (`split_for=`)."""
    from jeirt.splits import split_by_question

    return split_by_question(ds, seed=seed)


SPLITS = ("seeded", "official")
RECIPE_NAMES = ("fast", "paper")  # the names of jeirt.estimator.RECIPES (tests/test_book.py checks they agree)
# The paper's own setting, used by the full profile on EmbedLLM: the official split, the authors' recipe
# (jeirt.estimator.RECIPES['paper']: their code's d = 256 settings) and their cap of 100 epochs.
PAPER_SETTING = {"split": "official", "recipe": "paper", "max_epochs": 100}


def page_settings(profile: str | None = None, **overrides) -> PageSettings:
    """The settings for this run: `profile` (else `$JEIRT_PROFILE`, else smoke), then the environment,
    then keyword `overrides` (e.g. `page_settings(max_items=500)`). The full profile on EmbedLLM takes
    `PAPER_SETTING`."""
    from jeirt.settings import default_device

    profile = (profile or os.environ.get("JEIRT_PROFILE") or "smoke").strip().lower()
    if profile not in PROFILES:
        raise ValueError(f"JEIRT_PROFILE={profile!r}; expected one of {PROFILES}.")
    values: dict[str, Any] = {**PROFILE_DEFAULTS[profile], "profile": profile}
    if os.environ.get("JEIRT_DATASET"):
        values["dataset"] = os.environ["JEIRT_DATASET"]
    values["encoder"] = os.environ.get("JEIRT_ENCODER") or DEFAULT_ENCODER
    seed = os.environ.get("JEIRT_SEED", "0")
    try:
        values["seed"] = int(seed)
    except ValueError:
        raise ValueError(f"JEIRT_SEED={seed!r}; expected an integer.") from None
    values["device"] = str(default_device())
    if profile == "full" and str(overrides.get("dataset", values["dataset"])).strip().lower() == "embedllm":
        values.update(PAPER_SETTING)  # before the overrides, which may still change any of it
    unknown = set(overrides) - set(PageSettings.__dataclass_fields__)
    if unknown:
        raise TypeError(
            f"page_settings() got unknown field(s) {sorted(unknown)}; fields are "
            f"{list(PageSettings.__dataclass_fields__)}."
        )
    return replace(PageSettings(**values), **overrides)


def glue(name: str, value, display: bool = False) -> None:
    """`myst_nb.glue` for numbers in prose: numpy scalars become Python ones, so that `{glue:text}`
    format specs such as `:.1f` apply (myst-nb cannot format the text form 'np.float64(...)').
    With `$JEIRT_GLUE_LOG` set (`make test` sets it), the glued text, and a table's HTML, also go to
    `$JEIRT_GLUE_LOG/<name>.json`, so the test run's values can be compared with a committed snapshot
    (scripts/glued_values.py --check) without building the book."""
    try:
        from myst_nb import glue as myst_glue
    except ImportError:  # the light install (`lab` extra) has no Jupyter Book: the same output, made here
        myst_glue = _glue_without_myst_nb

    value = value.item() if isinstance(value, np.generic) else value
    folder = os.environ.get("JEIRT_GLUE_LOG")
    with pd.option_context("display.max_colwidth", None):  # a glued table's cells whole, not cut at 50
        myst_glue(name, value, display=display)
        if folder:
            from IPython.core.formatters import format_display_data

            bundle, _ = format_display_data(value)  # what myst_nb.glue stores in the notebook
    if folder:
        from jeirt.files import write_json

        record = {"name": name, "text": bundle.get("text/plain", "")}
        if "text/html" in bundle:
            record["html"] = bundle["text/html"]
        where = Path(folder).expanduser()
        where.mkdir(parents=True, exist_ok=True)
        write_json(where / f"{name}.json", record, indent=1)


def _glue_without_myst_nb(name: str, value, display: bool = False) -> None:
    """What `myst_nb.glue` writes into a notebook (its display data under myst-nb's glue prefix, named in
    the output's metadata), for an environment without myst-nb: the page runs, and a later build reads it."""
    from IPython.core.formatters import format_display_data
    from IPython.display import display as show

    bundle, metadata = format_display_data(value)
    prefix = "" if display else "application/papermill.record/"
    show(
        {prefix + k: v for k, v in bundle.items()},
        raw=True,
        metadata={**metadata, "scrapbook": {"name": name, "mime_prefix": prefix}},
    )


def for_people(table: pd.DataFrame | pd.Series, digits: int = 3) -> pd.DataFrame | pd.Series:
    """A table as a page shows it: numbers rounded to `digits` decimals, a missing value as "–" (no
    `NaN`), the rest unchanged."""
    rounded = table.round(digits)
    return rounded.astype(object).where(rounded.notna(), "–")


def glue_numbers(prefix: str, numbers: dict) -> None:
    """Glue each entry of `numbers` as `<prefix>_<key>` for the prose ({glue:text}), in one call: a
    page glues a table's or a dict's numbers together, and writes the words itself."""
    for key, value in numbers.items():
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise TypeError(f"{key}={value!r}; glue numbers only (the prose holds the words).")
        glue(f"{prefix}_{key}", value)
