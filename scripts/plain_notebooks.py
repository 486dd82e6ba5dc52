"""Executed pages as plain Jupyter notebooks: what a student opens in JupyterLab, Notebook, VS Code or Colab.

The pages are MyST notebooks. Jupyter Book renders their maths directives, cross-references, citations,
glued numbers and exercises; a plain Jupyter renders none of them, and jupyterlab-myst renders all but the
glued numbers (it has no `{glue}`). This script rewrites the markdown of executed notebooks (`make page`'s
`_build/pages/*.ipynb`, or the book build's `_build/html/_sources/book/*.ipynb`) into what every Jupyter
renders, keeping every code cell and output:

- glued numbers and tables ({glue:text}, {glue}, the glue directive) become their values from the run;
- `{math}` blocks become `$$ ... \\tag{n} $$`, numbered in order, and {eq} cites them as (n);
- {numref} becomes "Figure n" (each figure's caption follows its cell), {ref} the exercise or section,
  {doc} a link to the other notebook, {cite} "(Author year)" from book/references.bib;
- exercises become "**Exercise n: title.**", solutions and dropdowns collapsible <details>, other
  admonitions quoted paragraphs.

A reference to another notebook's equation or figure names that notebook. Cells keep their metadata, so
answer keys and solution code stay collapsed.

    python scripts/plain_notebooks.py _build/pages/irt_primer*.ipynb --out _build/notebooks
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GLUE_PREFIX = "application/papermill.record/"
ROLE = re.compile(r"\{(?P<role>[a-z:]+)\}`(?P<body>[^`]*)`")
MATH = re.compile(r"```\{math\}\n(?P<options>(?::\w+: [^\n]*\n)*)\n?(?P<body>.*?)\n```", re.S)
FENCE = re.compile(
    r"^(?P<colons>:{3,})\{(?P<name>[\w-]+)\}(?P<arg>[^\n]*)\n(?P<options>(?::[\w-]+:[^\n]*\n)*)(?P<body>.*?)^(?P=colons)\s*$",
    re.S | re.M,
)
ADMONITIONS = {"note", "tip", "important", "warning", "caution", "admonition", "seealso", "attention", "hint"}


def read_bib(path: Path) -> dict[str, str]:
    """{key: "Author year"} for each entry of a BibTeX file: the first author's surname, "and" a second or
    "et al." for more, and the year."""
    cites = {}
    for entry in re.split(r"\n@", "\n" + path.read_text())[1:]:
        key = entry.split("{", 1)[1].split(",", 1)[0].strip()
        authors = re.search(r"author\s*=\s*\{(.*?)\},?\s*\n", entry, re.S)
        year = re.search(r"year\s*=\s*\{?(\d{4})", entry)
        names = [n.strip() for n in re.sub(r"[{}]", "", authors.group(1)).split(" and ")] if authors else [key]
        surnames = [n.split(",")[0].strip() if "," in n else n.split()[-1] for n in names]
        who = (
            surnames[0]
            if len(surnames) == 1
            else " and ".join(surnames)
            if len(surnames) == 2
            else f"{surnames[0]} et al."
        )
        cites[key] = f"{who} {year.group(1) if year else ''}".strip()
    return cites


def glued(notebook) -> dict[str, dict]:
    """Each glued name's mime bundle, from the outputs myst-nb's `glue` left in the executed notebook."""
    values = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                values[name] = {k.removeprefix(GLUE_PREFIX): v for k, v in output.get("data", {}).items()}
    return values


def glue_text(bundle: dict, spec: str) -> str:
    """A glued value as {glue:text} shows it: text/plain, formatted with `spec` when it is a number."""
    text = "".join(bundle.get("text/plain", ""))
    if spec:
        try:
            return format(float(text), spec) if not text.lstrip("-").isdigit() else format(int(text), spec)
        except ValueError:
            pass
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" else text


def numbering(notebooks: dict[str, dict]) -> dict[str, tuple[str, str, str]]:
    """{label: (notebook, kind, number or title)} for every equation, figure, exercise and section target."""
    labels = {}
    for stem, notebook in notebooks.items():
        counts = {"eq": 0, "fig": 0, "ex": 0}
        for cell in notebook["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code":
                name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
                if name:
                    counts["fig"] += 1
                    labels[name] = (stem, "Figure", str(counts["fig"]))
                continue
            for m in MATH.finditer(source):
                label = re.search(r":label: (\S+)", m["options"])
                if label:
                    counts["eq"] += 1
                    labels[label.group(1)] = (stem, "eq", str(counts["eq"]))
            for m in FENCE.finditer(source):
                label = re.search(r":label: (\S+)", m["options"])
                if m["name"] == "exercise" and label:
                    counts["ex"] += 1
                    labels[label.group(1)] = (stem, "Exercise", str(counts["ex"]))
            for m in re.finditer(r"^\((?P<label>[\w-]+)\)=\n#+ (?P<title>.+)$", source, re.M):
                labels[m["label"]] = (stem, "section", m["title"])
    return labels


@dataclass
class Page:
    """One notebook's context for rewriting its markdown: its stem, glued values, and the book's labels and
    citations; `markdown` rewrites a cell, one method for each kind of MyST markup."""

    stem: str
    values: dict
    labels: dict
    cites: dict

    def markdown(self, text: str) -> str:
        """One markdown cell in plain Jupyter markdown."""
        text = MATH.sub(self.maths, text)
        text = re.sub(r"^:::\{solution-end\}\n:::[ \t]*$", "", text, flags=re.M)
        gated = re.search(r"^:::\{solution-start\} (?P<label>\S+)\n(?::[\w-]+:[^\n]*\n)*:::[ \t]*$", text, re.M)
        if gated:  # the rest of the cell is the solution's text; its code cells follow, collapsed
            rest = text[gated.end() :].strip("\n")
            text = text[: gated.start()] + self.folded(f"Solution to Exercise {self.number(gated['label'])}", rest)
        for _ in range(3):  # nested fences (an admonition holding a dropdown) close from the inside out
            text = FENCE.sub(self.fence, text)
        text = re.sub(r"^\([\w-]+\)=\n", "", text, flags=re.M)  # section targets
        return ROLE.sub(self.role, text)

    def number(self, label: str) -> str:
        return self.labels.get(label, ("", "", "?"))[2]

    @staticmethod
    def folded(summary: str, body: str) -> str:
        return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"

    def where(self, label: str, shown: str) -> str:
        """`shown`, naming the other notebook when `label` lives there."""
        place = self.labels.get(label)
        if place is None or place[0] == self.stem:
            return shown
        return f"{shown} of [{place[0]}]({place[0]}.ipynb)"

    def maths(self, m: re.Match) -> str:
        label = re.search(r":label: (\S+)", m["options"])
        tag = f"\n\\tag{{{self.number(label.group(1))}}}" if label and label.group(1) in self.labels else ""
        return f"$$\n{m['body'].strip()}{tag}\n$$"

    def fence(self, m: re.Match) -> str:
        name, arg, body = m["name"], m["arg"].strip(), m["body"].strip("\n")
        if name == "exercise":
            label = re.search(r":label: (\S+)", m["options"])
            title = f": {arg}" if arg else ""
            return f"**Exercise {self.number(label.group(1)) if label else '?'}{title}.** {body}"
        if name == "solution":
            return self.folded(f"Solution to Exercise {self.number(arg)}", body)
        if name == "dropdown":
            return self.folded(arg or "Details", body)
        if name == "glue":
            bundle = self.values.get(arg, {})
            return "".join(bundle.get("text/html", "")) or f"```\n{glue_text(bundle, '')}\n```"
        if name in ADMONITIONS:
            head = f"**{arg or name.capitalize()}.** "
            return "\n".join("> " + line if line else ">" for line in (head + body).splitlines())
        return body

    def role(self, m: re.Match) -> str:
        kind, body = m["role"], m["body"]
        place = self.labels.get(body)
        if kind in ("glue:text", "glue"):
            name, _, spec = body.partition(":")
            return glue_text(self.values[name], spec) if name in self.values else f"`{name}`"
        if kind == "eq":
            return self.where(body, f"({place[2]})") if place else f"({body})"
        if kind in ("numref", "ref") and place:
            return self.where(body, place[2] if place[1] == "section" else f"{place[1]} {place[2]}")
        if kind == "doc":
            return f"[{Path(body).name}]({Path(body).name}.ipynb)"
        if kind.startswith("cite"):
            return "(" + "; ".join(self.cites.get(k.strip(), k.strip()) for k in body.split(",")) + ")"
        return body


def convert(notebooks: dict[str, dict], cites: dict[str, str]) -> dict[str, dict]:
    """Each executed notebook (by its stem) with its markdown made plain and its figures captioned."""
    labels = numbering(notebooks)
    out = {}
    for stem, notebook in notebooks.items():
        page = Page(stem, glued(notebook), labels, cites)
        cells = []
        for cell in notebook["cells"]:
            if cell["cell_type"] == "markdown":
                source = page.markdown("".join(cell["source"])).strip("\n")
                if source.strip():
                    cells.append({**cell, "source": source})
                continue
            cells.append(cell)
            figure = cell.get("metadata", {}).get("mystnb", {}).get("figure")
            if cell["cell_type"] == "code" and figure and figure.get("name") in labels:
                caption = " ".join(str(figure.get("caption", "")).split())
                number = labels[figure["name"]][2]
                caption_cell = {"cell_type": "markdown", "metadata": {}, "source": f"*Figure {number}.* {caption}"}
                cells.append({"id": f"figure-{number}-caption", **caption_cell})
        out[stem] = {**notebook, "cells": cells}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("notebooks", nargs="+", help="executed notebooks (.ipynb) of the book's pages")
    parser.add_argument("--out", required=True, help="folder for the plain notebooks (same file names)")
    parser.add_argument("--bib", default=str(ROOT / "book" / "references.bib"), help="the book's BibTeX file")
    args = parser.parse_args(argv)
    import nbformat

    paths = [Path(p) for p in args.notebooks]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}; run `make page PAGE=<page>` first.")
    out = Path(args.out)
    if any(p.resolve().parent == out.resolve() for p in paths):
        parser.error(f"--out {out} holds the notebooks themselves; give another folder.")
    notebooks = {p.stem: nbformat.read(p, as_version=4) for p in paths}
    plain = convert(notebooks, read_bib(Path(args.bib)))
    out.mkdir(parents=True, exist_ok=True)
    for stem, notebook in plain.items():
        nbformat.write(nbformat.from_dict(notebook), out / f"{stem}.ipynb")
        print(f"wrote {out / f'{stem}.ipynb'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
