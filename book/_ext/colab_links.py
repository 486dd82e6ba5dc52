"""Sphinx extension: point the Colab launch button at a notebook Colab can open.

Chapters are MyST markdown (`book/intro.md`); Colab opens only `.ipynb`. sphinx-book-theme links
Colab to the `.md` file on the default branch, which fails. The built site, however, carries
every executed chapter as `_sources/<page>.ipynb`, so once the site is published on the
`gh-pages` branch (e.g. `ghp-import -n -p -f _build/html`) Colab can open
`github/<org>/<repo>/blob/gh-pages/_sources/<page>.ipynb`. This extension rewrites the button to
that address. Settings (in `_config.yml`, `sphinx: config:`):

    jeirt_colab_branch   branch that holds the published site (default "gh-pages")
    jeirt_colab_prefix   folder of the notebooks inside it (default "_sources")
"""
from __future__ import annotations

import re


def _rewrite(app, pagename, templatename, context, doctree):
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("text") != "Colab":
                continue
            match = re.match(r"(?P<base>.+?/github/[^/]+/[^/]+)/blob/", button["url"])
            if match:
                prefix = app.config.jeirt_colab_prefix.strip("/")
                path = f"{prefix}/{pagename}.ipynb" if prefix else f"{pagename}.ipynb"
                button["url"] = f"{match['base']}/blob/{app.config.jeirt_colab_branch}/{path}"


def setup(app):
    app.add_config_value("jeirt_colab_branch", "gh-pages", "html")
    app.add_config_value("jeirt_colab_prefix", "_sources", "html")
    # After sphinx-book-theme adds its launch buttons (priority 501).
    app.connect("html-page-context", _rewrite, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
