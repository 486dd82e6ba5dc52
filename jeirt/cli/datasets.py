"""`jeirt data`: list the local datasets, describe one, or re-hash them against their checksums."""

from __future__ import annotations

import argparse

from jeirt import settings
from jeirt.cli import common
from jeirt.cli.checks import Verb


def run(args: argparse.Namespace) -> None:
    """`jeirt data`: list the datasets; `jeirt data NAME`: describe one; `jeirt data verify`: check them."""
    from jeirt.data.local import local_datasets, verify_files

    if args.dataset is None:
        names = local_datasets()
        common.emit({"data_dir": str(settings.data_dir()), "datasets": names + ["embedllm (hub)"]}, args.json)
        return
    if args.dataset == "verify":
        root = settings.data_dir()
        checked = verify_files(root, full=True)
        if not checked:
            raise ValueError(
                f"{root} has no checksum manifest (checksums.json) to verify against; the "
                "repository's data/ folder has one."
            )
        common.emit({"data_dir": str(root), "verified": f"{len(checked)} files match checksums.json"}, args.json)
        return
    ds = common.dataset(args.dataset)
    table = ds.describe()
    print(f"{ds.name}: {ds.n_models} models x {ds.n_items} items; embeddings: {sorted(ds.embeddings) or 'none'}")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if args.json:
        from jeirt.files import finite_json

        summary = {
            "name": ds.name,
            "models": ds.models,
            "embeddings": sorted(ds.embeddings),
            "benchmarks": table.to_dict("records"),
        }
        common.write_summary(args.json, finite_json(summary))


VERB = Verb("data", run)


def add_parsers(add: common.AddParser) -> None:
    """Add `data` to the `jeirt` command."""
    p = add(VERB, "list the local datasets, describe one, or verify their checksums")
    p.add_argument(
        "dataset",
        nargs="?",
        help="dataset name or results CSV; 'verify' re-hashes every file listed in $JEIRT_DATA/checksums.json",
    )
