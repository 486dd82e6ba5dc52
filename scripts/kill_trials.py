"""Kill `jeirt fit --out` and `jeirt onboard --in-place` with SIGKILL while they write the model, and
check every time that the model file still loads (the old one, or the whole new one).

Each trial starts the real command over an existing model, watches the folder for the writer's
temporary file (`.tmp-<pid>-...`, see `jeirt.files.atomic_write`) and sends SIGKILL a random 0 to
`--max-delay-ms` after it appears: during the write, the fsync, the rename, or just after. A trial whose process ended before
the kill counts as "finished", not as a kill during the save. Writes a JSON summary.

    python scripts/kill_trials.py --trials 20 --max-delay-ms 20 --out results/kill_trials.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from jeirt.estimator import JEIRT
from jeirt.files import write_json

FIT = ["--dataset", "mmlu_pro", "--limit-items", "2000", "--max-epochs", "3", "--quiet"]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def trial(argv: list[str], model: Path, rng: random.Random, max_delay: float) -> dict:
    """One run of `jeirt argv`, killed just after its temporary model file appears."""
    before = digest(model)
    env = os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "jeirt.cli", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    prefix = f".tmp-{proc.pid}-"
    killed, seen_tmp = False, False
    while proc.poll() is None:
        if any(name.startswith(prefix) for name in os.listdir(model.parent)):
            seen_tmp = True
            time.sleep(rng.uniform(0, max_delay))
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
        time.sleep(0.0005)
    proc.wait()
    err = proc.stderr.read().decode()
    leftover = [n for n in os.listdir(model.parent) if n.startswith(prefix)]
    try:
        loaded = JEIRT.load(model)
        loads, models = True, len(loaded.models_)
    except Exception as exc:  # noqa: BLE001  (any failure to load is what a trial looks for)
        loads, models = False, repr(exc)
    after = digest(model)
    return {"killed": killed and proc.returncode == -signal.SIGKILL, "saw_temporary_file": seen_tmp,
            "temporary_file_left": bool(leftover), "returncode": proc.returncode,
            "model": "old" if after == before else "new", "loads": loads, "models": models,
            "stderr": err.strip()[-300:] if proc.returncode not in (0, -signal.SIGKILL) else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per command (default 20)")
    parser.add_argument("--max-delay-ms", type=float, default=20.0,
                        help="kill a random 0 to this many ms after the temporary file appears (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the summary here (JSON)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="jeirt-kill-"))
    try:
        model = work / "model.pt"
        subprocess.run([sys.executable, "-m", "jeirt.cli", "fit", *FIT, "--out", str(model)], check=True,
                       stdout=subprocess.DEVNULL)
        from jeirt.data import load_local

        ds = load_local("mmlu_pro")
        rows = ds.to_long()
        rows[rows["model"] == ds.models[0]].head(300).assign(model="newcomer").to_csv(work / "new.csv", index=False)
        runs = {"fit --out": [], "onboard --in-place": []}
        for i in tqdm(range(args.trials), desc="fit --out"):
            runs["fit --out"].append(trial(["fit", *FIT, "--seed", str(i + 1), "--out", str(model), "--force"],
                                           model, rng, args.max_delay_ms / 1000))
        fitted = work / "fitted.pt"
        shutil.copy(model, fitted)
        for _ in tqdm(range(args.trials), desc="onboard --in-place"):
            shutil.copy(fitted, model)  # each trial onboards the same newcomer onto the plain model
            runs["onboard --in-place"].append(trial(["onboard", "--model", str(model), "--results",
                                                     str(work / "new.csv"), "--dataset", "mmlu_pro", "--in-place"],
                                                    model, rng, args.max_delay_ms / 1000))
        summary = {command: {"trials": len(rs), "killed_after_temporary_file": sum(r["killed"] for r in rs),
                             "finished_before_kill": sum(not r["killed"] for r in rs),
                             "model_loads": sum(r["loads"] for r in rs),
                             "old_model (killed before the rename)": sum(r["model"] == "old" for r in rs),
                             "new_model (killed after the rename)": sum(r["model"] == "new" for r in rs),
                             "temporary_file_left": sum(r["temporary_file_left"] for r in rs)}
                   for command, rs in runs.items()}
        blob = {"command": " ".join(sys.argv), "max_delay_ms": args.max_delay_ms, "model_bytes": fitted.stat().st_size, "summary": summary,
                "trials": runs}
        print(json.dumps(summary, indent=1))
        if args.out:
            write_json(args.out, blob)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
