"""Sphinx extension: launch buttons that work or are absent, and a Colab button Colab can open.

The repository URL is set in one place, at build time: `JEIRT_REPO_URL` (`jeirt_book.repo_url`). While
it is the placeholder the site shows no repository or launch buttons, and every page's first cell says
how to run the page locally (`jeirt_book.SETUP_CELL`). With a real URL this extension turns the
repository and Colab buttons on and puts the Colab setup cell (`jeirt_book.setup_cell(url)`) first on
every page (`jeirt_book.build_source`, as the source is read, so the executed notebook has it too).

Chapters are MyST markdown (`book/intro.md`); Colab opens only `.ipynb`, and only from GitHub.
sphinx-book-theme links Colab to the `.md` file on the default branch, which fails. The built site
carries every executed chapter as `_sources/<page>.ipynb`; the publishing workflow
(.github/workflows/publish.yml) pushes those notebooks to a branch of the repository, and this
extension points the button at `github/<org>/<repo>/blob/<branch>/<prefix>/<page>.ipynb`. Settings (in
`_config.yml`, `sphinx: config:`):

    jeirt_colab_branch   branch that holds the executed notebooks (default "notebooks")
    jeirt_colab_prefix   folder of the notebooks inside it (default "", the branch's root)
    jeirt_colab_url      Colab's address (default "https://colab.research.google.com")
"""

from __future__ import annotations

import re

from jeirt_book import build_source, repo_url


def _buttons(app, config) -> None:
    """Repository and Colab buttons only for a real repository URL."""
    theme = config.html_theme_options
    url = repo_url()
    theme["use_repository_button"] = url is not None
    theme["launch_buttons"] = {"colab_url": config.jeirt_colab_url} if url else {}
    if url:
        theme["repository_url"] = url
    else:
        theme.pop("repository_url", None)


def _setup_cell(app, docname, source) -> None:
    source[0] = build_source(source[0])


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
    app.add_config_value("jeirt_colab_branch", "notebooks", "html")
    app.add_config_value("jeirt_colab_prefix", "", "html")
    app.add_config_value("jeirt_colab_url", "https://colab.research.google.com", "html")
    app.connect("config-inited", _buttons)
    app.connect("source-read", _setup_cell)
    # After sphinx-book-theme adds its launch buttons (priority 501).
    app.connect("html-page-context", _rewrite, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
