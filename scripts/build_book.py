"""Build the book the way `make book` does: vendor MathJax, build with Jupyter Book, check the HTML.

The default is the full reproduction on the data the repository ships (`BUILD_DEFAULTS`: the full
profile on `mmlu_pro`; pages that use `zeroeval` or `metabench` load them too): `JEIRT_PROFILE=smoke`
builds the smoke profile (minutes; what the tests run), `JEIRT_DATASET=embedllm` the paper's own
setting (the hub's EmbedLLM, its official split, the authors' recipe; see `jeirt_book`).

1. `scripts/vendor_mathjax.py`: a pinned local MathJax, so pages typeset maths offline.
2. Clear the execution cache when what the pages compute with has changed. Jupyter Book's `cache`
   mode re-runs a page only when its code cells change; it does not notice a change to the
   `jeirt` package, to the book's own package beside the pages (`book/jeirt_book/`), to the
   `JEIRT_*` settings or to the data. A fingerprint of those is kept in
   `_build/.jupyter_cache/jeirt-fingerprint.json`; a different one empties the cache and
   rebuilds every page (`--all`).
3. Execute the pages the cache lacks and store each in the cache exactly as myst-nb would (same
   notebook, same cache key, same execution settings from `_config.yml`). The pages are independent
   notebooks, so they run `--jobs` at a time (default: 2, or 1 on a 1-core machine; `JEIRT_BOOK_JOBS`
   overrides), slowest first, one core each: on 2 cores that nearly halves the build. A page whose
   work, by the last measured times (results/book_times_<profile>_<dataset>.json: its wall or, when
   it ran fits side by side, CPU seconds), is over `ALONE_SECONDS` on one core runs first, alone,
   with every core for its own worker processes (`JEIRT_WORKERS`; such pages run their independent
   fits and experiments side by side), as a reader who reruns that page alone runs it. A page without a
   measured time starts among the first of the others; without measured times no page goes alone. A
   failing page stops the build here with its traceback.
4. `jupyter-book build . --path-output . -W --keep-going`: it finds every page in the cache and only
   renders; any warning (broken reference, missing citation, failing cell) fails the build, after
   reporting all of them.
5. Write `_build/build_info.json` (settings, seconds, machine) and run `scripts/check_html.py`.

    python scripts/build_book.py            # what `make book` runs: the full profile on mmlu_pro
    JEIRT_PROFILE=smoke python scripts/build_book.py   # the smoke profile
    python scripts/build_book.py --jobs 1   # pages one after another (as jupyter-book alone does)
    python scripts/build_book.py --no-check # skip step 5's HTML check
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
CLAIMS = BUILD / "claims"  # each results page's verdict rows (jeirt_book.verdicts.show), for the scorecard
SCORECARD = ROOT / "book" / "reproducing.md"  # gathers every page's rows: runs after the others
CACHE = BUILD / ".jupyter_cache"
STAMP = CACHE / "jeirt-fingerprint.json"
sys.path.insert(0, str(ROOT / "scripts"))  # sibling scripts, not the package (that is installed)
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import check_html  # noqa: E402
import vendor_mathjax  # noqa: E402
from cell_timing import timed_execution  # noqa: E402

from jeirt.files import write_json  # noqa: E402


def fingerprint() -> dict:
    """What the pages' outputs depend on besides their own code."""
    from jeirt import settings as jsettings
    from jeirt_book import page_settings, repo_url

    cfg = page_settings()
    code = hashlib.sha256()
    for path in sorted([*(ROOT / "jeirt").rglob("*.py"), *(ROOT / "book" / "jeirt_book").rglob("*.py")]):
        code.update(path.relative_to(ROOT).as_posix().encode())
        code.update(path.read_bytes())
    data = hashlib.sha256()
    folder = jsettings.data_dir()
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if path.is_file() and "cache" not in path.relative_to(folder).parts:
            stat = path.stat()
            data.update(f"{path.relative_to(folder)}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    found = {
        "settings": cfg.as_dict(),
        "jeirt_code": code.hexdigest(),
        "data_dir": str(folder),
        "data_files": data.hexdigest(),
        "repo_url": repo_url(),
    }
    return json.loads(json.dumps(found))  # tuples as lists, as they come back from the stamp file


def refresh_cache(current: dict) -> bool:
    """Empty the execution cache if the fingerprint changed; True if every page must be re-run."""
    previous = json.loads(STAMP.read_text()) if STAMP.is_file() else None
    stale = previous != current
    if stale and CACHE.exists():
        changed = sorted(k for k in current if previous is None or previous.get(k) != current[k])
        print(f"build_book: {', '.join(changed)} changed; clearing {CACHE.relative_to(ROOT)}")
        shutil.rmtree(CACHE)
    CACHE.mkdir(parents=True, exist_ok=True)
    write_json(STAMP, current, indent=1)
    return stale


def book_pages() -> list[Path]:
    """The notebook pages of `_toc.yml`, in its order."""
    from myst_nb.core.read import is_myst_markdown_notebook

    def files(node) -> list[str]:
        if isinstance(node, dict):
            return (
                ([node["root"]] if "root" in node else [])
                + ([node["file"]] if "file" in node else [])
                + [f for key in ("parts", "chapters", "sections") for child in node.get(key, []) for f in files(child)]
            )
        return []

    pages = [ROOT / f"{name}.md" for name in files(yaml.safe_load((ROOT / "_toc.yml").read_text()))]
    return [page for page in pages if is_myst_markdown_notebook(page.read_text())]


def read_page(page: Path):
    """The page as myst-nb reads it, so that its cache key is the one jupyter-book will look up."""
    from myst_nb.core.read import read_myst_markdown_notebook

    return read_myst_markdown_notebook(page.read_text(), add_source_map=True, path=str(page))


def children_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process's finished children and what they waited for: a
    page's kernel and its worker processes, once the kernel has shut down. NaN where unknown (Windows)."""
    try:
        import resource
    except ImportError:
        return float("nan")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# The thread counts of BLAS (OpenBLAS reads OMP_NUM_THREADS too), MKL and torch (it reads OMP_NUM_THREADS at
# start). Unset, each page kernel took a thread per core: two pages side by side on 2 cores ran 16-19
# threads each, and two threads each made chapter kernels run 4x slower (the Makefile's test target).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def page_threads(at_once: int, cores: int, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The thread variables a page kernel gets when `at_once` pages share `cores`: its share of the
    cores, at least 1, for each of `THREAD_VARIABLES` that `environ` (default: os.environ) leaves unset,
    so that pages x threads <= cores. The kernel's own worker processes run one thread each
    (jeirt.parallel)."""
    environ = os.environ if environ is None else environ
    threads = str(max(1, cores // max(1, at_once)))
    return {name: threads for name in THREAD_VARIABLES if not environ.get(name)}


def enter_page_worker(workers: int | None, threads: dict[str, str] | None) -> None:
    """Set this (pool) process's environment for the page kernel it starts, which inherits it."""
    if workers is not None:
        os.environ["JEIRT_WORKERS"] = str(workers)
    os.environ.update(threads or {})


def execute_page(
    page: str, timeout: int, workers: int | None = None, threads: dict[str, str] | None = None
) -> tuple[str, str, float, float, str | None]:
    """Run one page in book/ as myst-nb's cache mode does (with per-cell times, book/_ext/cell_timing.py),
    its kernel allowed `workers` worker processes (`JEIRT_WORKERS`; None: as this process has it) and
    `threads` (`page_threads`); the executed notebook comes back as JSON for the parent to cache (one
    writer for the cache), with the page's wall seconds and CPU seconds (its kernel's and the kernel's
    worker processes')."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    enter_page_worker(workers, threads)
    cpu = children_cpu_seconds()
    for attempt in (1, 2):
        notebook = read_page(Path(page))
        try:
            result = timed_execution(single_nb_execution)(
                notebook, cwd=str(Path(page).parent), timeout=timeout, allow_errors=False, meta_override=True
            )
            break
        except RuntimeError as err:
            # A kernel that died while starting (kernels started side by side can race for their TCP
            # ports; seen once in a test run) gets one more try; anything else is the page's failure.
            if attempt == 2 or "Kernel died before replying" not in str(err):
                raise
    cpu = children_cpu_seconds() - cpu
    # No widget state: the site loads no widget code (nb_ipywidgets_js), and the state of the primer's
    # sliders would carry their first figure into the page's HTML.
    notebook.metadata.pop("widgets", None)
    return page, nbformat.writes(notebook), result.time, cpu, (result.exc_string if result.err else None)


# A page with more work than this on one core runs alone with every core: beside another page, on one
# core, it would pass the aim of 5 minutes a page; alone, its side-by-side fits take about half the
# time. The other pages share the cores, `jobs` at a time (alone, a page leaves a core idle in its
# serial parts: sending more pages alone makes the whole build longer).
ALONE_SECONDS = 300.0


def expected_seconds(pages: list[Path], settings: dict) -> tuple[dict[Path, float], bool]:
    """Each page's work on one core, from the last measured times for these settings
    (results/book_times_<profile>_<dataset>.json: the larger of its wall and CPU seconds, so the CPU
    seconds of a page that ran its fits side by side, the wall seconds of one that waited on one core;
    without CPU seconds, its seconds times the worker processes it had, an upper bound), and whether
    they were measured. A page the file lacks (a new one) counts as the longest measured, at most
    `ALONE_SECONDS`: it starts among the first of those side by side rather than last, alone. Without
    the file, each page's size stands in."""
    times_file = ROOT / "results" / f"book_times_{settings.get('profile')}_{settings.get('dataset')}.json"
    known = json.loads(times_file.read_text()) if times_file.is_file() else {}
    seconds, workers = known.get("pages_seconds", {}), known.get("pages_workers", {})
    cpu = {name: float(c) for name, c in known.get("pages_cpu_seconds", {}).items() if c == c}  # NaN: unknown
    measured = {
        name: max(float(s), cpu[name]) if name in cpu else float(s) * int(workers.get(name, 1))
        for name, s in seconds.items()
    }
    guess = min(max(measured.values()), ALONE_SECONDS) if measured else None
    expected = {}
    for page in pages:
        name = page.relative_to(ROOT).as_posix()
        expected[page] = measured.get(name, guess if guess is not None else page.stat().st_size / 1000)
    return expected, bool(measured)


def execute_missing(
    pages: list[Path],
    cache_dir: Path,
    jobs: int,
    timeout: int,
    expected: dict[Path, float] | None = None,
    cores: int | None = None,
    alone_over: float | None = None,
) -> tuple[int, float]:
    """Execute every page that the execution cache in `cache_dir` has no match for, slowest first (by
    `expected` seconds on one core), and store each as myst-nb does, with the worker processes it had.
    Pages expected over `alone_over` seconds (None: none) run first, one at a time, each with `cores`
    workers (default: the machine's cores; set `JEIRT_WORKERS` to fix the number for every page); then
    the others `jobs` at a time with cores // jobs each. Returns (pages failed, wall seconds)."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from jeirt import settings as jsettings

    cache = get_cache(str(cache_dir))
    missing = []
    for page in pages:
        try:
            cache.match_cache_notebook(read_page(page))
        except KeyError:
            missing.append(page)
    if not missing:
        return 0, 0.0
    expected = expected or {}
    missing.sort(key=lambda page: -expected.get(page, 0.0))
    cores = cores or os.cpu_count() or 1
    fixed = os.environ.get("JEIRT_WORKERS")  # the caller's number, for every page
    alone = [p for p in missing if alone_over is not None and jobs > 1 and expected.get(p, 0.0) > alone_over]
    rest = [p for p in missing if p not in alone]
    waves = [([page], 1) for page in alone] + ([(rest, jobs)] if rest else [])
    print(
        f"build_book: executing {len(missing)} pages: "
        + (f"{len(alone)} alone with {fixed or cores} workers each, then " if alone else "")
        + f"{len(rest)} {jobs} at a time",
        flush=True,
    )
    failed, start = 0, time.perf_counter()
    for wave, at_once in waves:
        workers = None if fixed else max(1, cores // at_once)
        threads = page_threads(at_once, cores)
        with concurrent.futures.ProcessPoolExecutor(max_workers=at_once) as pool:
            futures = [pool.submit(execute_page, str(page), timeout, workers, threads) for page in wave]
            for future in concurrent.futures.as_completed(futures):
                page, text, seconds, cpu, error = future.result()
                name = Path(page).relative_to(ROOT).as_posix() if Path(page).is_relative_to(ROOT) else page
                if error is not None:
                    failed += 1
                    print(f"build_book: {name} failed after {seconds:.0f} s\n{error}", flush=True)
                    continue
                cache.add_nb_to_project(page, read_data={"type": "plugin", "name": "myst_nb_md"})
                had = workers or jsettings.workers()
                cache.cache_notebook_bundle(
                    CacheBundleIn(
                        nbformat.reads(text, as_version=4),
                        page,
                        data={"execution_seconds": seconds, "workers": had, "cpu_seconds": cpu},
                    ),
                    check_validity=False,
                    overwrite=True,
                )
                print(f"build_book: {name} executed in {seconds:.0f} s ({had} worker(s), {cpu:.0f} CPU-s)", flush=True)
        if failed:
            break
    return failed, time.perf_counter() - start


# The packages whose versions move the pages' numbers (a snapshot made under other versions differs in every
# value a trained JE-IRT model gives: DECISIONS.md, "Glued values across machines"); build_info.json records them.
PACKAGES = ("torch", "numpy", "scipy", "scikit-learn", "pandas", "matplotlib", "jupyter-book")


def package_versions() -> dict[str, str | None]:
    """The installed version of each of `PACKAGES` (None: not installed), and torch's CPU kernels."""
    from importlib import metadata

    import torch

    found = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    found["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    return found


# What `make book` builds unless the environment says otherwise.
BUILD_DEFAULTS = {"JEIRT_PROFILE": "full", "JEIRT_DATASET": "mmlu_pro"}


def run_scorecard_last(pages: list[Path], timeout: int, ran_others: bool) -> tuple[int, float]:
    """Execute `SCORECARD` after every other page, again whenever another page ran (its rows changed)."""
    from jupyter_cache import get_cache

    if SCORECARD not in pages:
        return 0, 0.0
    if ran_others:
        try:
            get_cache(str(CACHE)).remove_cache(get_cache(str(CACHE)).match_cache_notebook(read_page(SCORECARD)).pk)
        except KeyError:
            pass
    return execute_missing([SCORECARD], CACHE, 1, timeout)


def default_jobs() -> int:
    return int(os.environ.get("JEIRT_BOOK_JOBS") or min(2, os.cpu_count() or 1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-check", action="store_true", help="skip scripts/check_html.py")
    parser.add_argument(
        "--jobs",
        type=int,
        default=default_jobs(),
        help="pages executed at a time (default: JEIRT_BOOK_JOBS, else 2, or 1 on one core)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")

    for name, value in BUILD_DEFAULTS.items():  # the pages' kernels inherit them
        os.environ[name] = os.environ.get(name) or value
    print(f"build_book: profile={os.environ['JEIRT_PROFILE']} dataset={os.environ['JEIRT_DATASET']}", flush=True)
    if os.environ.get("JEIRT_DATA"):  # notebooks run in book/: a relative path would break
        os.environ["JEIRT_DATA"] = str(Path(os.environ["JEIRT_DATA"]).resolve())
    vendor_mathjax.vendor()
    current = fingerprint()
    stale = refresh_cache(current)
    if stale:
        shutil.rmtree(CLAIMS, ignore_errors=True)
    os.environ["JEIRT_CLAIMS_DIR"] = str(CLAIMS)  # the pages' kernels inherit it
    pages = book_pages()
    timeout = int(yaml.safe_load((ROOT / "_config.yml").read_text()).get("execute", {}).get("timeout", 3600))
    # Pages go alone only when the times were measured (a page's size is only a guess).
    expected, measured = expected_seconds(pages, current["settings"])
    failed, execute_seconds = execute_missing(
        [p for p in pages if p != SCORECARD],
        CACHE,
        args.jobs,
        timeout,
        expected,
        alone_over=ALONE_SECONDS if measured else None,
    )
    if not failed:
        failed, seconds = run_scorecard_last(pages, timeout, ran_others=execute_seconds > 0)
        execute_seconds += seconds
    if failed:
        STAMP.unlink(missing_ok=True)
        print(f"build_book: {failed} page(s) failed; see the tracebacks above")
        return 1
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [
        str(jb) if jb.exists() else "jupyter-book",
        "build",
        str(ROOT),
        "--path-output",
        str(ROOT),
        "-W",
        "--keep-going",
    ]
    if stale:  # Sphinx would otherwise keep pages whose source did not change, old outputs and all
        cmd.append("--all")
    print("build_book:", " ".join(cmd), flush=True)
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=ROOT)
    seconds = time.perf_counter() - start
    info = {
        "seconds": round(execute_seconds + seconds, 1),
        "execute_seconds": round(execute_seconds, 1),
        "render_seconds": round(seconds, 1),
        "jobs": args.jobs,
        "returncode": result.returncode,
        "settings": current["settings"],
        "cpu_cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": package_versions(),
        "threads": {name: os.environ.get(name) for name in THREAD_VARIABLES}
        | page_threads(args.jobs, os.cpu_count() or 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_json(BUILD / "build_info.json", info, indent=1)
    print(
        f"build_book: pages executed in {execute_seconds:.0f} s ({args.jobs} at a time), jupyter-book "
        f"finished in {seconds:.0f} s with code {result.returncode}"
    )
    if result.returncode != 0:
        # A failed page leaves partial state; force it to re-run next time.
        STAMP.unlink(missing_ok=True)
        return result.returncode
    return 0 if args.no_check else check_html.main(["--build", str(BUILD / "html")])


if __name__ == "__main__":
    sys.exit(main())
