"""Sphinx extension: a figure's image gets its caption as alt text.

Without it, the images that myst-nb writes for figure cells (`mystnb: figure:` metadata) and for
`{glue:figure}` carry no alt text, and the HTML writer falls back to the image's file path
("../_images/abc123.png"), which is what a screen reader then reads out. This sets each such image's
alt text to the plain text of its figure's caption (maths as its TeX source, cross-references as
their resolved text). Alt text an author wrote (`:alt:` on a `{figure}`) is kept.
"""

from __future__ import annotations

import re

from docutils import nodes


def caption_text(figure: nodes.figure) -> str:
    """The plain text of `figure`'s caption (one line, spaces collapsed), or "" without one."""
    for caption in figure.findall(nodes.caption):
        return re.sub(r"\s+", " ", caption.astext()).strip()
    return ""


def set_figure_alt(doctree: nodes.Node) -> int:
    """Give every image inside a captioned figure of `doctree` the caption as alt text, unless it has
    alt text of its own that is not its file path; returns how many images changed."""
    changed = 0
    for figure in doctree.findall(nodes.figure):
        text = caption_text(figure)
        if not text:
            continue
        for image in figure.findall(nodes.image):
            alt = image.get("alt", "")
            if alt and alt != image.get("uri", "") and not re.search(r"\.(png|jpe?g|svg|gif)$", alt):
                continue
            image["alt"] = text
            changed += 1
    return changed


def on_doctree_resolved(app, doctree, docname) -> None:
    set_figure_alt(doctree)


def setup(app):
    app.connect("doctree-resolved", on_doctree_resolved)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
