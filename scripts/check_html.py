"""Check the built book: every page in _toc.yml rendered cleanly and the site loads nothing remote.

For each page listed in `_toc.yml` (as `_build/html/<file>.html`):
- the page exists;
- no cell output is an error: no traceback, no stderr stream (warnings included), no matplotlib
  figure printed as text ("<Figure size ...>") instead of drawn;
- no cross-reference is left unresolved (a `{numref}`, `{eq}` or `{ref}` whose target is missing);
- every `<img>` points at an image file that exists, and every figure holds an image;
- a page with maths loads the local MathJax copy;
- no table a reader cannot read in the text column: more than `MAX_COLUMNS` columns (a DataFrame's
  index not counted), or a cell with more than `MAX_CELL_CHARS` characters of text (transpose, split
  or cut it to what the prose discusses; scripts/screenshots.py measures the widths in a browser);
- no link leads to the placeholder repository (`jeirt.settings.REPO_URL_PLACEHOLDER`): a repository
  or Colab button there would lead nowhere (book/_ext/colab_links.py leaves them out).
For every HTML page of the site and the CSS it links: no script, stylesheet, font or other
resource from a remote URL (CDNs such as cdn.jsdelivr.net, unpkg.com, cdnjs, googleapis). Plain
links (`<a href>`) to other sites are fine.

    python scripts/check_html.py [--build _build/html] [--toc _toc.yml] [--allow-stderr]

Exits 1 and names each page and problem found; prints one line per page when all is well.
"""

from __future__ import annotations

import argparse
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import yaml

from jeirt.settings import REPO_URL_PLACEHOLDER

ROOT = Path(__file__).resolve().parents[1]
REMOTE = re.compile(r"^(https?:)?//", re.I)
MAX_COLUMNS = 8  # more and a table is wider than the text column of a 1280-pixel window
MAX_CELL_CHARS = 160  # a paper-vs-book claim is at most ~145; a longer cell is a dump, not a table
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""", re.I)


def toc_files(toc_path: Path) -> list[str]:
    """Every `file:` of the toc (root first), without extension, in reading order."""
    toc = yaml.safe_load(toc_path.read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("parts"))
    walk(toc.get("chapters"))
    walk(toc.get("sections"))
    return [str(Path(f).with_suffix("")) if Path(f).suffix in {".md", ".ipynb"} else f for f in files]


class PageParser(HTMLParser):
    """Collects what the checks need from one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.resources: list[tuple[str, str]] = []  # (tag, url) loaded by the browser
        self.images: list[str] = []
        self.figures = 0
        self.figure_images = 0
        self._in_figure = 0
        self.errors: list[str] = []  # output classes that signal a failed cell
        self.unresolved: list[str] = []
        self.math = 0
        self.mathjax_src: list[str] = []
        self._text_plain = 0
        self.figure_reprs = 0
        self.links: list[str] = []  # <a href>
        self.tables: list[dict] = []  # per <table>: columns (data cells of its widest row), longest cell
        self._tables: list[dict] = []  # open tables, innermost last
        self._cell: list[str] | None = None  # text of the open cell

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        if tag == "script" and a.get("src"):
            self.resources.append((tag, a["src"]))
            if "mathjax" in a["src"].lower() or "tex-" in a["src"].lower():
                self.mathjax_src.append(a["src"])
        if tag == "link" and a.get("href"):
            rel = (a.get("rel") or "").lower()
            if any(r in rel for r in ("stylesheet", "preload", "icon", "modulepreload", "prefetch")):
                self.resources.append((f"link[{rel}]", a["href"]))
        if tag in ("img", "source", "iframe", "embed", "video", "audio") and (a.get("src") or a.get("srcset")):
            self.resources.append((tag, a.get("src") or a.get("srcset").split()[0]))
            if tag == "img":
                self.images.append(a["src"])
                if self._in_figure:
                    self.figure_images += 1
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "object" and a.get("data"):
            self.resources.append((tag, a["data"]))
        if tag == "table":
            self._tables.append(
                {"columns": 0, "header": 0, "row_td": 0, "row_th": 0, "cell": 0, "longest": "", "first": ""}
            )
        if self._tables and tag == "tr":
            self._end_row()
        if self._tables and tag in ("td", "th"):
            t = self._tables[-1]
            span = a.get("colspan") or "1"
            t["row_td" if tag == "td" else "row_th"] += int(span) if span.isdigit() else 1
            self._cell = []
        if tag == "figure":
            self.figures += 1
            self._in_figure += 1
        if tag == "svg" and self._in_figure:
            self.figure_images += 1
        if "output" in classes and ({"traceback", "stderr", "error"} & classes):
            self.errors.append(" ".join(sorted(classes)))
        if "xref" in classes and tag == "span":
            self.unresolved.append(" ".join(sorted(classes)))
        if "math" in classes:
            self.math += 1
        if "text_plain" in classes:
            self._text_plain += 1

    def _end_row(self):
        """Close the open row of the innermost table: count its cells."""
        t = self._tables[-1]
        t["columns"] = max(t["columns"], t["row_td"])
        t["header"] = max(t["header"], t["row_td"] + t["row_th"])
        t["row_td"] = t["row_th"] = 0

    def _end_cell(self):
        if self._cell is not None and self._tables:
            text = re.sub(r"\s+", " ", "".join(self._cell)).strip()
            t = self._tables[-1]
            t["first"] = t["first"] or text
            if len(text) > len(t["longest"]):
                t["longest"] = text
        self._cell = None

    def handle_endtag(self, tag):
        if tag == "figure" and self._in_figure:
            self._in_figure -= 1
        if self._tables and tag in ("td", "th"):
            self._end_cell()
        if self._tables and tag == "tr":
            self._end_cell()
            self._end_row()
        if self._tables and tag == "table":
            self._end_cell()
            self._end_row()
            t = self._tables.pop()
            self.tables.append({"columns": t["columns"] or t["header"], "longest": t["longest"], "first": t["first"]})

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if re.search(r"<Figure size \d+x\d+ with \d+ Axes>", data):
            self.figure_reprs += 1


def local_target(page: Path, url: str, build: Path) -> Path | None:
    """The file a relative URL on `page` points at, or None for data: URIs and anchors."""
    if url.startswith(("data:", "#", "mailto:", "javascript:")):
        return None
    path = unquote(urlparse(url).path)
    if not path:
        return None
    return (build / path.lstrip("/")) if path.startswith("/") else (page.parent / path)


def check_css(css: Path, seen: set[Path]) -> list[str]:
    """Remote `url(...)` / `@import` in a stylesheet (and the local ones it imports)."""
    if css in seen or not css.is_file():
        return []
    seen.add(css)
    problems = []
    for match in CSS_URL.finditer(css.read_text(errors="replace")):
        url = match.group(1) or match.group(2)
        if REMOTE.match(url):
            problems.append(f"{css.name} loads remote {url}")
        elif match.group(2) and url.endswith(".css"):
            problems += check_css((css.parent / url).resolve(), seen)
    return problems


def table_problems(
    tables: list[dict], max_columns: int = MAX_COLUMNS, max_cell_chars: int = MAX_CELL_CHARS
) -> list[str]:
    """One line per table (as PageParser collects them) that is too wide or holds a too long cell."""
    problems = []
    for i, t in enumerate(tables, 1):
        if t["columns"] > max_columns:
            problems.append(
                f"table {i} has {t['columns']} columns (more than {max_columns}): "
                f"transpose, split or cut it ({t['first'][:40]!r} ...)"
            )
        if len(t["longest"]) > max_cell_chars:
            problems.append(
                f"table {i} has a cell of {len(t['longest'])} characters (more than "
                f"{max_cell_chars}): {t['longest'][:60]!r}..."
            )
    return problems


def check_page(page: Path, build: Path, in_toc: bool, allow_stderr: bool, css_seen: set[Path]) -> list[str]:
    parser = PageParser()
    parser.feed(page.read_text(errors="replace"))
    problems = []
    for tag, url in parser.resources:
        if REMOTE.match(url):
            problems.append(f"<{tag}> loads remote {url}")
            continue
        target = local_target(page, url, build)
        if target is not None and not target.is_file():
            problems.append(f"<{tag}> points at missing file {url}")
        elif target is not None and target.suffix == ".css":
            problems += check_css(target.resolve(), css_seen)
    placeholder = urlparse(REPO_URL_PLACEHOLDER).path.strip("/")  # owner/name
    dead = [url for url in parser.links if re.search(rf"github(\.com)?/{re.escape(placeholder)}(/|$)", url)]
    if dead:
        problems.append(
            f"{len(dead)} link(s) to the placeholder repository {REPO_URL_PLACEHOLDER} "
            f"({dead[0]}): set JEIRT_REPO_URL to the real one, or leave the buttons out"
        )
    if not in_toc:
        return problems
    errors = [e for e in parser.errors if not (allow_stderr and "stderr" in e)]
    if errors:
        problems.append(
            f"{len(errors)} error output(s) ({', '.join(sorted(set(errors)))}): "
            "a cell raised, or wrote to stderr (warnings, progress bars)"
        )
    if parser.figure_reprs:
        problems.append(f"{parser.figure_reprs} figure(s) printed as text '<Figure size ...>' instead of drawn")
    if parser.unresolved:
        problems.append(
            f"{len(parser.unresolved)} unresolved cross-reference(s) ({', '.join(sorted(set(parser.unresolved)))})"
        )
    if parser.figures > parser.figure_images:
        problems.append(f"{parser.figures - parser.figure_images} of {parser.figures} figure(s) hold no image")
    problems += table_problems(parser.tables)
    if parser.math and not parser.mathjax_src:
        problems.append(f"{parser.math} maths element(s) but no MathJax script")
    for src in parser.mathjax_src:
        if REMOTE.match(src):
            problems.append(f"MathJax from a remote URL {src}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--toc", type=Path, default=ROOT / "_toc.yml")
    parser.add_argument("--allow-stderr", action="store_true", help="do not count stderr output (warnings) as an error")
    args = parser.parse_args(argv)
    build = args.build.resolve()
    if not build.is_dir():
        print(f"check_html: no built site at {build}; run `make book` first.", file=sys.stderr)
        return 1
    failures = {}
    toc_pages = []
    for doc in toc_files(args.toc):
        page = build / f"{doc}.html"
        toc_pages.append(page)
        if not page.is_file():
            failures[doc] = ["page missing from the build (is it listed in _toc.yml and built?)"]
    css_seen: set[Path] = set()
    others = [
        p
        for p in sorted(build.rglob("*.html"))
        if p not in toc_pages and "_static" not in p.parts and "_sources" not in p.parts
    ]
    for page in [p for p in toc_pages if p.is_file()] + others:
        problems = check_page(page, build, page in toc_pages, args.allow_stderr, css_seen)
        name = str(page.relative_to(build))
        if problems:
            failures[name] = problems
        elif page in toc_pages:
            print(f"check_html: ok  {name}")
    if failures:
        for name, problems in failures.items():
            for problem in problems:
                print(f"check_html: FAIL {name}: {problem}", file=sys.stderr)
        print(f"check_html: {len(failures)} page(s) failed in {build}", file=sys.stderr)
        return 1
    print(f"check_html: {len(toc_pages)} book pages and {len(others)} other pages clean in {build}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
