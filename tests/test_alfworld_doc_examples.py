"""Every code example in the ALFWorld chapters' markdown and in the README's ALFWorld
snippets runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"```python\n(.*?)```", re.S)


def _examples() -> list[tuple[str, str]]:
    out = []
    for nb_path in sorted((REPO / "notebooks").glob("alfworld_*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                for k, code in enumerate(FENCE.findall(cell.source)):
                    out.append((f"{nb_path.stem}[cell {i}, example {k}]", code))
    readme = (REPO / "README.md").read_text()
    for k, code in enumerate(FENCE.findall(readme)):
        if "alfworld" in code.lower():
            out.append((f"README[example {k}]", code))
    return out


EXAMPLES = _examples()


def test_there_are_examples():
    names = [n for n, _ in EXAMPLES]
    assert any(n.startswith("alfworld_handoff") for n in names)
    assert any(n.startswith("README") for n in names)


@pytest.mark.parametrize("name,code", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_example_runs(name, code):
    exec(compile(code, name, "exec"), {"__name__": "__doc_example__"})
