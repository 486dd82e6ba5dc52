"""The executed notebooks of a built site as they are published for Colab: each page's notebook with the
clone-and-install cell first (`jeirt_book.colab_notebook`), the one place a notebook learns about Colab.
The publishing workflow (.github/workflows/publish.yml) runs it after `make book` and pushes DEST to the
branch the site's Colab buttons open.

    JEIRT_REPO_URL=https://github.com/<owner>/<repository> \\
        python scripts/colab_notebooks.py _build/html/_sources/book DEST
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from jeirt.files import write_json
from jeirt_book import colab_notebook, repo_url


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the built site's executed notebooks (_build/html/_sources/book)")
    parser.add_argument("dest", type=Path, help="the folder to write the Colab notebooks into")
    args = parser.parse_args(argv)
    url = repo_url()
    if url is None:
        parser.error("set JEIRT_REPO_URL to the repository's GitHub address: Colab clones it.")
    pages = sorted(args.source.glob("*.ipynb"))
    if not pages:
        parser.error(f"no executed notebooks in {args.source}; build the site first (make book).")
    args.dest.mkdir(parents=True, exist_ok=True)
    for page in pages:
        write_json(args.dest / page.name, colab_notebook(json.loads(page.read_text(encoding="utf-8")), url), indent=1)
    print(f"colab_notebooks: {len(pages)} notebooks with the set-up cell of {url} in {args.dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
