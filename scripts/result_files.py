"""What the scripts and benchmarks that write `results/` share: their command-line options
(`results_parser`) and the record of the run that made a result file (`run_record`). Imported from
`scripts/` (put on sys.path by the benchmarks)."""

from __future__ import annotations

import argparse

from jeirt.files import comma_list


def results_parser(doc: str, out: str, seeds: str = "0,1,2", datasets: str | None = None):
    """The options the scripts that write `results/` share: --encoder, --seeds (comma-separated
    integers), --out, and --datasets (comma-separated names) when given a default; `doc`'s first line
    describes the script."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    if datasets is not None:
        parser.add_argument("--datasets", type=comma_list, default=datasets)
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    parser.add_argument("--seeds", type=lambda text: [int(s) for s in comma_list(text)], default=seeds)
    parser.add_argument("--out", default=out)
    return parser


def run_record(script: str, argv: list[str] | None = None) -> dict:
    """Where a result file came from: the command that made it (`script` with `argv`, or this process's
    arguments), the jeirt, torch and Python versions, and the start time (UTC)."""
    import platform
    import shlex
    import sys
    from datetime import datetime, timezone

    import torch

    from jeirt import __version__

    args = sys.argv[1:] if argv is None else argv
    return {
        "command": f"python {script} " + shlex.join(args),
        "jeirt_version": __version__,
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
