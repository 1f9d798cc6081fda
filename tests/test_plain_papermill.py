"""Plain papermill follows the CLI's rules.

``papermill notebooks/X.ipynb out.ipynb -p ...`` (as the README documents it) runs a chapter
without the ``agentstudies`` runner: no parameter check before the run, no staging. The
chapter itself now (a) refuses in the kernel an injected name its ``parameters`` cell does
not declare and a value the CLI would refuse, before anything is written, and (b) stages
its artifacts and swaps them in only at ``ch.finish()``. Each test runs the real papermill
command in a subprocess and compares the artifacts folder byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import nbformat as nbf
import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _papermill(notebook: Path, out: Path, artifacts: Path, *params: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = dict(os.environ, AGENTSTUDIES_ARTIFACTS=str(artifacts), PWD=str(cwd))
    env.pop("AGENTSTUDIES_RUN", None)  # not started by the agentstudies runner
    env.pop("AGENTSTUDIES_NOTEBOOK", None)
    args = [sys.executable, "-m", "papermill", str(notebook), str(out), "--cwd", str(notebook.parent),
            "-k", "python3", "--no-progress-bar"]
    for i in range(0, len(params), 2):
        args += ["-p", params[i], params[i + 1]]
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def book_artifacts(tmp_path: Path) -> Path:
    """A stand-in for the book's ``artifacts/`` with a last good method_recovery folder."""
    root = tmp_path / "artifacts"
    good = root / "method_recovery"
    good.mkdir(parents=True)
    (good / "paired_counts.csv").write_text("condition,rescue\nclean,3\n")
    (good / "provenance.json").write_text('{"chapter": "method_recovery"}\n')
    return root


@pytest.mark.parametrize("params, message", [
    (("n_boots", "5"), "unknown parameter(s) ['n_boots'] injected into chapter 'method_recovery'"),
    (("seed", "-1"), "parameter 'seed' of notebook method_recovery must be a non-negative integer seed"),
], ids=["misspelled", "negative-seed"])
def test_plain_papermill_refuses_in_the_kernel_and_keeps_the_artifacts(book_artifacts, tmp_path, params, message):
    before = _digests(book_artifacts)
    out = tmp_path / "out.ipynb"
    proc = _papermill(REPO / "notebooks" / "method_recovery.ipynb", out, book_artifacts, *params)
    assert proc.returncode != 0
    assert "ParameterError" in proc.stderr and message in proc.stderr, proc.stderr[-2000:]
    assert _digests(book_artifacts) == before  # byte-identical, no staging folder left
    assert sorted(p.name for p in book_artifacts.iterdir()) == ["method_recovery"]


FAILING = """\
import pandas as pd
from agentstudies.book.chapter import Chapter
ch = Chapter.from_parameters("tiny", globals(), simulated="nothing", notebook=NOTEBOOK)
ch.save_table(pd.DataFrame({"n": [n_rows]}), "table")
if n_rows > 5:
    raise ValueError("too many rows for this tiny chapter")
ch.finish()
"""


def _tiny(tmp_path: Path) -> Path:
    nb = nbf.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "nb" / "tiny.ipynb"
    params = nbf.v4.new_code_cell("seed = 0\nn_rows = 3\n")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbf.v4.new_code_cell(f"NOTEBOOK = {str(path)!r}\n" + FAILING)]
    path.parent.mkdir(parents=True)
    nbf.write(nb, path)
    return path


def test_plain_papermill_failing_after_writing_leaves_the_artifacts_then_success_swaps_in(tmp_path):
    """A cell that fails after tables were written (in range, so no check can refuse it)
    leaves the last good folder byte-identical; a good run then replaces it whole."""
    nb = _tiny(tmp_path)
    root = tmp_path / "artifacts"
    good = root / "tiny"
    good.mkdir(parents=True)
    (good / "table.csv").write_text("n\n3\n")
    (good / "provenance.json").write_text("{}\n")
    before = _digests(root)
    failed = _papermill(nb, tmp_path / "out.ipynb", root, "n_rows", "9")
    assert failed.returncode != 0 and "too many rows" in failed.stderr
    assert _digests(root) == before
    assert [p.name for p in root.iterdir()] == ["tiny"]  # the kernel removed its staging at exit
    ok = _papermill(nb, tmp_path / "out.ipynb", root, "n_rows", "4")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert (good / "table.csv").read_text() == "n\n4\n"
    assert sorted(p.name for p in root.iterdir()) == ["tiny"]
    assert sorted(p.name for p in good.iterdir()) == ["provenance.json", "table.csv"]
