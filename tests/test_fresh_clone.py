"""A fresh machine, acted out: a clone of the committed HEAD in an empty folder (no ../shared beside
it, JEIRT_DATA unset, an empty cache) finds its datasets, verifies them, runs the Data page, and names
a damaged file with the command that restores it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import nbval_command

ROOT = Path(__file__).resolve().parents[1]


def run(cmd: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_a_fresh_clone_has_its_data_and_runs_the_data_page(tmp_path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout to clone from")
    clone = tmp_path / "machine" / "jeirt"  # nothing else in machine/: no ../shared
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEIRT_")}
    env |= {
        "PYTHONPATH": str(clone),
        "JEIRT_CACHE": str(tmp_path / "cache"),
        "JEIRT_PROFILE": "smoke",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    }
    jeirt = [sys.executable, "-m", "jeirt.cli"]

    listed = run(jeirt + ["data"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert str(clone / "data") in listed.stdout  # the clone's own data/, found without JEIRT_DATA
    for name in ("mmlu_pro", "zeroeval", "metabench"):
        assert name in listed.stdout
    verified = run(jeirt + ["data", "verify"], env, tmp_path)
    assert verified.returncode == 0 and "12 files match" in verified.stdout, verified.stdout + verified.stderr

    page = run(
        nbval_command(clone / "book" / "data.md", tmp_path),
        env,
        tmp_path,
    )
    assert page.returncode == 0, f"the Data page failed in a fresh clone:\n{page.stdout[-4000:]}"

    damaged = clone / "data" / "mmlu_pro" / "responses.csv.gz"
    raw = bytearray(damaged.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one byte changed, the size kept
    damaged.write_bytes(bytes(raw))
    refused = run(jeirt + ["data", "verify"], env, tmp_path)
    assert refused.returncode != 0
    assert str(damaged) in refused.stderr and "git checkout --" in refused.stderr, refused.stderr
    loading = run(jeirt + ["data", "mmlu_pro"], env, tmp_path)  # loading checks too, before any work
    assert loading.returncode != 0 and "does not match its SHA-256" in loading.stderr, loading.stderr
