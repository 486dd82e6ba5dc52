"""How many question texts of a dataset are longer than a number of tokens, for a given tokenizer.

ModernBERT-large cuts each text at its tokenizer's default length (8,192 tokens, as the JE-IRT authors
did); a cut at 512 would change the vector of every text longer than that. This counts them:

    python scripts/token_lengths.py --dataset mmlu_pro --tokenizer answerdotai/ModernBERT-large  # needs the hub
    python scripts/token_lengths.py --dataset mmlu_pro --tokenizer minilm    # offline: MiniLM's WordPiece
    python scripts/token_lengths.py --tokenizer /path/to/ModernBERT-large --json counts.json

`--tokenizer` is a folder, a hub id, or a name of `jeirt.encoders.ENCODERS` whose weights are found the
way the encoders find them (`resolve_weights`). Counts include the special tokens the encoder adds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from jeirt.data import load_dataset
from jeirt.files import write_json


def token_counts(texts: list[str], tokenizer, batch: int = 512) -> np.ndarray:
    """(n_texts,) number of tokens of each text, special tokens included, without truncation."""
    counts = []
    for start in tqdm(range(0, len(texts), batch), desc="tokenizing", unit="batch", disable=len(texts) < 2 * batch):
        ids = tokenizer(texts[start : start + batch], add_special_tokens=True, truncation=False)["input_ids"]
        counts.extend(len(row) for row in ids)
    return np.asarray(counts, dtype=np.int64)


def load_tokenizer(name: str):
    """A transformers tokenizer from a folder, a jeirt encoder name, or a hub id."""
    from transformers import AutoTokenizer

    from jeirt.encoders import ENCODERS, resolve_weights

    if Path(name).expanduser().is_dir():
        return AutoTokenizer.from_pretrained(str(Path(name).expanduser()))
    lookup = {k.lower(): spec for k, spec in ENCODERS.items()}
    if name.lower() in lookup and lookup[name.lower()].hub_id:
        return AutoTokenizer.from_pretrained(str(resolve_weights(lookup[name.lower()])))
    return AutoTokenizer.from_pretrained(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="mmlu_pro", help="any name jeirt.data.load_dataset takes")
    parser.add_argument(
        "--tokenizer",
        default="answerdotai/ModernBERT-large",
        help="a folder, a hub id or a jeirt encoder name (e.g. minilm)",
    )
    parser.add_argument("--limits", default="512,8192", help="comma-separated token counts to test against")
    parser.add_argument("--json", type=Path, help="also write the counts here")
    args = parser.parse_args()

    ds = load_dataset(args.dataset)
    tokenizer = load_tokenizer(args.tokenizer)
    lengths = token_counts(ds.items["text"].tolist(), tokenizer)
    summary = {
        "command": "python scripts/token_lengths.py " + " ".join(sys.argv[1:]),
        "dataset": ds.name,
        "texts": len(lengths),
        "tokenizer": args.tokenizer,
        "tokenizer_class": type(tokenizer).__name__,
        "tokenizer_default_length": int(min(tokenizer.model_max_length, 10**9)),
        "max": int(lengths.max()),
        "median": float(np.median(lengths)),
        "p99": float(np.percentile(lengths, 99)),
        "longer_than": {int(n): int((lengths > int(n)).sum()) for n in args.limits.split(",")},
    }
    for limit, count in summary["longer_than"].items():
        print(
            f"{ds.name}: {count} of {len(lengths)} texts are longer than {limit} tokens "
            f"({args.tokenizer}, {summary['tokenizer_class']})"
        )
    print(f"longest {summary['max']} tokens, median {summary['median']:.0f}, 99th percentile {summary['p99']:.0f}")
    if args.json:
        write_json(args.json, summary, indent=1)


if __name__ == "__main__":
    main()
