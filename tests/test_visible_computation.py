"""Every chapter shows its core computation: at least one code cell the built book shows
(no ``hide-input`` / ``remove-input`` / ``remove-cell`` / ``hide-cell`` tag, not the
``parameters`` cell) of at most :data:`MAX_LINES` code lines that calls a function of
``agentstudies`` outside the book layer, on a line that is not bookkeeping (``glue``,
``save``, ``display``, ``table``, ``figure``).

Names count as ``agentstudies`` functions when a code cell of the same notebook binds them
by an import from ``agentstudies`` (``from agentstudies.studies import impossible as st``
binds ``st``; ``from agentstudies.sasst import SASST`` binds ``SASST``); imports from
``agentstudies.book`` (the chapter, tables, paper comparisons) and the paper-value readers
do not count: they present a run, they do not compute it. Lines are counted as in
``benchmarks/code_visibility.py`` (not blank, not a comment, not a magic). The test reads
the notebooks only.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from agentstudies.book.model import toc_chapters

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = toc_chapters(ROOT)
HIDDEN = {"hide-input", "remove-input", "remove-cell", "hide-cell"}
MAX_LINES = 10
#: Imported names that present a run rather than compute it.
NOT_COMPUTATION = {"paper_values", "paper_note", "paper_tables"}
BOOKKEEPING = re.compile(r"^\s*(?:\w+\s*=\s*)?(?:ch\.)?(glue|glue_md|save\w*|figure|table|display)\(")


def code_lines(source: str) -> list[str]:
    """The code lines of a cell: not blank, not a comment, not an IPython magic."""
    return [ln for ln in source.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", "%", "!"))]


def library_names(sources: list[str]) -> set[str]:
    """Names bound by imports from ``agentstudies`` (outside ``agentstudies.book``) in ``sources``."""
    names: set[str] = set()
    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mod = node.module
                if mod.split(".")[0] != "agentstudies" or mod.startswith("agentstudies.book"):
                    continue
                names |= {a.asname or a.name for a in node.names if a.name not in NOT_COMPUTATION}
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == "agentstudies" and not a.name.startswith("agentstudies.book"):
                        names.add(a.asname or a.name.split(".")[0])
    return names


def _root(func: ast.expr) -> str | None:
    while isinstance(func, (ast.Attribute, ast.Call, ast.Subscript)):
        func = func.func if isinstance(func, ast.Call) else func.value
    return func.id if isinstance(func, ast.Name) else None


def computes(source: str, names: set[str]) -> bool:
    """Whether ``source`` calls one of ``names`` on a line that is not bookkeeping."""
    lines = source.splitlines()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _root(node.func) in names:
            if not BOOKKEEPING.match(lines[node.lineno - 1]):
                return True
    return False


def core_cells(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of the shown code cells of at most MAX_LINES code lines that compute with the library."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    names = library_names([c.source for c in code])
    out = []
    for i, cell in enumerate(nb.cells):
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type != "code" or tags & HIDDEN or "parameters" in tags:
            continue
        if 0 < len(code_lines(cell.source)) <= MAX_LINES and computes(cell.source, names):
            out.append(i)
    return out


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_shows_its_core_computation(name):
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    assert core_cells(nb), (
        f"{name}: no shown code cell of <= {MAX_LINES} lines calls the library; move the study's or the "
        "method's core call out of its hidden cell into a short visible cell (see notebooks/method_sasst.ipynb)")


def _nb(*cells) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    setup = nbformat.v4.new_code_cell(
        "from agentstudies.studies import impossible as st\nfrom agentstudies.book.chapter import Chapter\n"
        "from agentstudies.studies import paper_values\nch = Chapter.from_parameters('x', globals())",
        metadata={"tags": ["hide-input"]})
    nb.cells = [setup] + [nbformat.v4.new_code_cell(src, metadata={"tags": tags}) for src, tags in cells]
    return nb


CORE = "# the runs\nrun = st.simulate_episodes(tasks, wfs, seed=seed)"


@pytest.mark.parametrize("cells, found", [
    ([(CORE, [])], [1]),
    ([(CORE, ["hide-input"])], []),  # hidden
    ([(CORE, ["remove-cell"])], []),
    ([(CORE + "\n" + "\n".join(f"x{k} = {k}" for k in range(MAX_LINES)), [])], []),  # too long
    ([("ch.glue('n', len(run))\ndisplay(st.labelled(t, 'x'))", [])], []),  # bookkeeping only
    ([("p = paper_values('impossible_cheating', 'table1')", [])], []),  # reads the paper, computes nothing
    ([("ch.finish()", [])], []),  # the chapter object is no library computation
    ([("# a comment\n\n" + CORE + "\n" * 3, []), (CORE, ["parameters"])], [1]),  # comments/blanks not counted
])
def test_core_cells_detects_what_it_should(cells, found):
    assert core_cells(_nb(*cells)) == found


def test_library_names_reads_imports():
    src = ("from agentstudies.sasst import SASST, Slot as S\nimport agentstudies.handoff as ho\n"
           "from agentstudies.book.paper.compare import stack_paper\nimport numpy as np\n"
           "from agentstudies.studies import paper_values, toolsandbox")
    assert library_names([src]) == {"SASST", "S", "ho", "toolsandbox"}
