"""Stop `jeirt fit --out` and `jeirt onboard --in-place` with SIGKILL while they write the model, and
with SIGINT (Ctrl-C) at start-up, mid-write and at shutdown; check every time that the model file
still loads (the old one, or the whole new one) and how the command ended.

Each trial starts the real `jeirt` console entry (`python -m jeirt`) over an existing model and sends
its signal when the moment comes:
- kill (SIGKILL) and mid-write (SIGINT): a random 0 to `--max-delay-ms` after the writer's temporary
  file (`.tmp-<pid>-...`, see `jeirt.files.atomic_write`) appears: during the write, the fsync, the
  rename, or just after;
- start-up (SIGINT): a random 0 to `--startup-ms` after the process starts: in Python's own start-up
  (its `site` module, before any jeirt code runs) or while jeirt imports;
- shutdown (SIGINT): a random 0 to `--max-delay-ms` after the command printed its last line.
A trial whose process ended before the signal counts as "finished". A Ctrl-C trial is clean when the
process exits 130 with one line on stderr and no traceback. Writes a JSON summary.

    python scripts/kill_trials.py --trials 8 --startup-trials 40 --out results/kill_trials.json
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

FIT = ["--dataset", "mmlu_pro", "--limit-questions", "2000", "--max-epochs", "3", "--quiet"]
JEIRT_COMMAND = [sys.executable, "-m", "jeirt"]  # what the `jeirt` console script runs


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def trial(argv: list[str], model: Path, rng: random.Random, when: str, sig: int, max_delay: float) -> dict:
    """One run of `jeirt argv`, sent `sig` a random 0 to `max_delay` s after `when`: "start" (the
    process started), "temporary" (its temporary model file appeared) or "output" (it printed its
    last line, the model's path)."""
    before = digest(model)
    env = os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([*JEIRT_COMMAND, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    os.set_blocking(proc.stdout.fileno(), False)
    prefix = f".tmp-{proc.pid}-"
    sent, seen, out = False, False, b""
    started = time.perf_counter()
    while proc.poll() is None:
        out += proc.stdout.read() or b""
        if when == "start":
            seen = True
        elif when == "temporary":
            seen = any(name.startswith(prefix) for name in os.listdir(model.parent))
        else:  # the summary's last line names the saved model
            seen = str(model).encode() in out.splitlines()[-1] if out.endswith(b"\n") else False
        if seen:
            time.sleep(rng.uniform(0, max_delay))
            proc.send_signal(sig)
            sent = True
            break
        time.sleep(0.0005)
    delay = time.perf_counter() - started
    os.set_blocking(proc.stdout.fileno(), True)
    err = proc.communicate()[1].decode()
    leftover = [n for n in os.listdir(model.parent) if n.startswith(prefix)]
    try:
        loaded = JEIRT.load(model)
        loads, models = True, len(loaded.models_)
    except Exception as exc:  # noqa: BLE001  (any failure to load is what a trial looks for)
        loads, models = False, repr(exc)
    after = digest(model)
    lines = [line for line in err.strip().splitlines() if line.strip()]
    return {
        "signal": signal.Signals(sig).name,
        "sent": sent,
        "seconds_to_signal": round(delay, 4),
        "returncode": proc.returncode,
        "clean_interrupt": proc.returncode == 130 and len(lines) == 1 and "Traceback" not in err,
        "traceback": "Traceback" in err,
        "in_python_startup": "init_import_site" in err,
        "temporary_file_left": bool(leftover),
        "model": "old" if after == before else "new",
        "loads": loads,
        "models": models,
        "stderr": err.strip()[-300:] if proc.returncode not in (0, -signal.SIGKILL) else "",
    }


def summarize(runs: list[dict]) -> dict:
    """Counts of a set of trials."""
    ended = {code: sum(r["returncode"] == code for r in runs) for code in sorted({r["returncode"] for r in runs})}
    summary = {
        "trials": len(runs),
        "exit_codes": {str(k): v for k, v in ended.items()},
        "finished_before_the_signal": sum(r["returncode"] == 0 for r in runs),
        "model_loads": sum(r["loads"] for r in runs),
        "old_model": sum(r["model"] == "old" for r in runs),
        "new_model": sum(r["model"] == "new" for r in runs),
        "temporary_file_left": sum(r["temporary_file_left"] for r in runs),
    }
    if runs and runs[0]["signal"] == "SIGINT":
        summary |= {
            "clean_interrupt (130, one line)": sum(r["clean_interrupt"] for r in runs),
            "traceback": sum(r["traceback"] for r in runs),
            "traceback in Python's own start-up (site)": sum(r["in_python_startup"] for r in runs),
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per kind (default 20)")
    parser.add_argument(
        "--startup-trials", type=int, default=40, help="Ctrl-C trials at start-up, each about a second (default 40)"
    )
    parser.add_argument(
        "--max-delay-ms",
        type=float,
        default=20.0,
        help="signal a random 0 to this many ms after the moment (default 20)",
    )
    parser.add_argument(
        "--startup-ms",
        type=float,
        default=1500.0,
        help="Ctrl-C at start-up: a random 0 to this many ms after the start (default 1500)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the summary here (JSON)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    delay = args.max_delay_ms / 1000
    work = Path(tempfile.mkdtemp(prefix="jeirt-kill-"))
    try:
        model = work / "model.pt"
        subprocess.run([*JEIRT_COMMAND, "fit", *FIT, "--out", str(model)], check=True, stdout=subprocess.DEVNULL)
        from jeirt.data import load_local

        ds = load_local("mmlu_pro")
        rows = ds.to_long()
        rows[rows["model"] == ds.models[0]].head(300).assign(model="newcomer").to_csv(work / "new.csv", index=False)
        fitted = work / "fitted.pt"
        shutil.copy(model, fitted)
        onboard = [
            "onboard",
            "--model",
            str(model),
            "--results",
            str(work / "new.csv"),
            "--dataset",
            "mmlu_pro",
            "--in-place",
            "--quiet",
        ]
        kinds = {  # name: (argv for trial i, when, signal, largest delay in s)
            "kill: fit --out": (
                lambda i: ["fit", *FIT, "--seed", str(i + 1), "--out", str(model), "--force"],
                "temporary",
                signal.SIGKILL,
                delay,
            ),
            "kill: onboard --in-place": (lambda i: onboard, "temporary", signal.SIGKILL, delay),
            "ctrl-c at start-up: onboard --in-place": (
                lambda i: onboard,
                "start",
                signal.SIGINT,
                args.startup_ms / 1000,
            ),
            "ctrl-c mid-write: onboard --in-place": (lambda i: onboard, "temporary", signal.SIGINT, delay),
            "ctrl-c at shutdown: onboard --in-place": (lambda i: onboard, "output", signal.SIGINT, delay),
        }
        runs = {}
        for name, (argv, when, sig, largest) in kinds.items():
            runs[name] = []
            for i in tqdm(range(args.startup_trials if "start-up" in name else args.trials), desc=name):
                if "onboard" in name:
                    shutil.copy(fitted, model)  # each trial onboards the same newcomer onto the plain model
                runs[name].append(trial(argv(i), model, rng, when, sig, largest))
        summary = {name: summarize(rs) for name, rs in runs.items()}
        blob = {
            "command": " ".join(sys.argv),
            "max_delay_ms": args.max_delay_ms,
            "startup_ms": args.startup_ms,
            "model_bytes": fitted.stat().st_size,
            "summary": summary,
            "trials": runs,
        }
        print(json.dumps(summary, indent=1))
        if args.out:
            write_json(args.out, blob)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
