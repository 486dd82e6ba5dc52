"""Sphinx extension for the API reference page (book/api.md): docstrings read as MyST markdown, and the
command line documented by its own `--help` text.

jeirt's docstrings are written as markdown (`code` in backticks, `- ` lists, indented equations), not
reStructuredText, which sphinx.ext.autodoc assumes: read as rST, `|x|` is a substitution and an indented
line an error, and the build (`-W`) fails. `autodoc-process-docstring` wraps each docstring in the
`jeirt-markdown` directive, which parses it with MyST, as the book's pages are parsed. The estimators'
`set_*_request` methods (scikit-learn's metadata routing, documented by scikit-learn) are left out.
"""

from __future__ import annotations

import argparse
import os

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.utils import new_document
from myst_parser.parsers.sphinx_ import MystParser

HELP_COLUMNS = 88  # width argparse wraps the --help text to: what the text column shows without cutting


class MarkdownDocstring(Directive):
    """The directive's content, parsed as MyST markdown (one docstring, as written)."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        document = new_document(self.state.document["source"], self.state.document.settings)
        MystParser().parse("\n".join(self.content), document)
        return list(document.children)


def wrap_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    """Replace `lines` (one docstring) by a `jeirt-markdown` directive holding them."""
    if lines:
        lines[:] = [".. jeirt-markdown::", ""] + [f"   {line}" if line else "" for line in lines]


def skip_request_methods(app, what, name, obj, skip, options) -> bool | None:
    """Leave out scikit-learn's generated `set_fit_request`-style methods; autodoc decides the rest."""
    return True if name.startswith("set_") and name.endswith("_request") else None


class CliHelp(Directive):
    """`jeirt --help` and each command's `--help`, as a reader sees them in a terminal."""

    def run(self) -> list[nodes.Node]:
        from jeirt.cli import build_parser

        old = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = str(HELP_COLUMNS)  # argparse reads the width from here
        try:
            parser = build_parser()
            commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
            out = [nodes.literal_block(text=parser.format_help())]
            for name, sub in commands.items():
                section = nodes.rubric(text=f"jeirt {name}")
                out += [section, nodes.literal_block(text=sub.format_help())]
        finally:
            if old is None:
                os.environ.pop("COLUMNS")
            else:
                os.environ["COLUMNS"] = old
        return out


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.add_directive("jeirt-markdown", MarkdownDocstring)
    app.add_directive("jeirt-cli-help", CliHelp)
    app.connect("autodoc-process-docstring", wrap_docstring)
    app.connect("autodoc-skip-member", skip_request_methods)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
