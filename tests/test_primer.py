"""The IRT primer's lectures as a class uses them: each notebook run top to bottom twice in one kernel, as a
student who reruns every cell would, with its answer key graded in that kernel afterwards.

This is the primer's chapter test (tests/test_book.py's nbval run leaves these pages to it): every cell
runs twice without an error, in the smoke profile, with the glued values logged as for any chapter. The
executed notebook is then made plain (scripts/plain_notebooks.py), as a class gets it: no MyST left.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from test_book import chapter_env

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import plain_notebooks  # noqa: E402

LECTURES = ["book/irt_primer", "book/irt_primer_abilities", "book/irt_primer_bridge"]

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

# Run in the lecture's kernel after its two runs: every recorded answer graded correct when given, a
# typical mistake named with its feedback, and what the reader's check cells printed on the second run.
GRADE = """
import json
report = {"names": sorted(key.answers)}
report["correct"] = all(
    key.message(name, a.value) == f"Exercise {name}: correct." for name, a in key.answers.items()
)
report["mistakes"] = all(
    why in key.message(name, wrong) for name, a in key.answers.items() for wrong, why in a.mistakes.items()
)
print(json.dumps(report))
"""


def outputs_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


@pytest.mark.slow
@pytest.mark.parametrize("doc", LECTURES)
def test_primer_lecture_runs_twice_in_one_kernel(doc):
    notebook = jupytext.read(ROOT / f"{doc}.md")
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "book")}}
    )
    checks = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code" and "key.check(" in c.source]
    assert checks, f"{doc}: no exercise checks"
    with client.setup_kernel(env=chapter_env()):
        for _ in range(2):  # the whole notebook, then again in the same kernel
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type == "code":
                    client.execute_cell(cell, index)  # raises CellExecutionError on any error
        grade = nbformat.v4.new_code_cell(GRADE)
        notebook.cells.append(grade)
        client.execute_cell(grade, len(notebook.cells) - 1)
    report = json.loads(outputs_text(grade).strip().splitlines()[-1])
    assert report["correct"] and report["mistakes"], report
    printed = "".join(outputs_text(notebook.cells[i]) for i in checks)  # the second run's
    assert printed.count("not answered yet") == len(report["names"]), printed
    assert "correct." not in printed and "not quite" not in printed, printed
    cites = plain_notebooks.read_bib(ROOT / "book" / "references.bib")
    plain = plain_notebooks.convert({Path(doc).name: notebook}, cites)[Path(doc).name]
    markdown = "\n".join(c["source"] for c in plain["cells"] if c["cell_type"] == "markdown")
    left = re.findall(r"\{[a-z:-]+\}`[^`]*`|^:::|```\{math\}", markdown, re.MULTILINE)
    assert not left, f"{doc}: MyST a plain Jupyter cannot render: {left[:5]}"
