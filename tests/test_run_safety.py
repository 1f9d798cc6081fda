"""Runs never damage the book: an interrupted run (SIGINT, as Ctrl-C in
a terminal sends it to the whole foreground process group) and a run that fails on
purpose leave the book's executed chapter notebook and its artifacts byte-identical.

A tiny chapter in a throwaway repository (book/_toc.yml, notebooks/, profiles.yaml) keeps
this fast; it uses the real ``Chapter`` class, so artifacts are written the way the
book's chapters write them. The command is the real ``agentstudies`` entry point run in a
subprocess.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat as nbf
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

CHAPTER = """\
import time
from pathlib import Path
import pandas as pd
from agentstudies.book.chapter import Chapter
ch = Chapter.from_parameters("tiny", globals(), simulated="nothing")
ch.save_table(pd.DataFrame({"n": [n_rows], "seed": [seed]}), "table")
"""
SLOW_OR_FAIL = """\
if n_rows == 0:
    raise ValueError("n_rows must be positive")
if wait > 0:
    (Path(ch.artifacts) / "STARTED").write_text("waiting")
    time.sleep(wait)
"""


@pytest.fixture
def book(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.delenv("AGENTSTUDIES_ARTIFACTS", raising=False)
    root = tmp_path / "repo"
    (root / "book").mkdir(parents=True)
    (root / "book" / "intro.md").write_text("# t\n")
    (root / "book" / "_toc.yml").write_text(
        yaml.safe_dump({"format": "jb-book", "root": "intro", "chapters": [{"file": "chapters/tiny"}]}))
    nb = nbf.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbf.v4.new_code_cell("seed = 0\nn_rows = 3\nwait = 0.0\n")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbf.v4.new_markdown_cell("# Tiny"), params, nbf.v4.new_code_cell(CHAPTER),
                nbf.v4.new_code_cell(SLOW_OR_FAIL), nbf.v4.new_code_cell("ch.finish()")]
    (root / "notebooks").mkdir()
    nbf.write(nb, root / "notebooks" / "tiny.ipynb")
    (root / "notebooks" / "profiles.yaml").write_text("chapters:\n  tiny:\n    smoke: {n_rows: 1}\n")
    return root


def _cmd(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "agentstudies.book.cli", *args, "--root", str(root)]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("AGENTSTUDIES_ARTIFACTS", None)
    return env


def _snapshot(root: Path) -> dict[str, str]:
    """SHA-256 of every file of the book's executed chapters and artifacts."""
    out = {}
    for folder in (root / "book" / "chapters", root / "artifacts"):
        for p in sorted(folder.rglob("*")):
            if p.is_file() and not p.name.endswith(".failed.ipynb"):
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.mark.slow
def test_interrupt_and_failure_leave_the_book_byte_identical(book):
    good = subprocess.run(_cmd(book, "run", "tiny"), env=_env(), capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stderr
    before = _snapshot(book)
    assert {"book/chapters/tiny.ipynb", "artifacts/tiny/table.csv", "artifacts/tiny/provenance.json"} <= set(before)

    # 1. Ctrl-C mid-way: SIGINT to the whole process group while the kernel sleeps in a cell
    proc = subprocess.Popen(_cmd(book, "run", "tiny", "-p", "n_rows", "7", "-p", "wait", "60"), env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 240
    started = False
    while time.time() < deadline and proc.poll() is None:
        started = any(p.name == "STARTED" for p in (book / "artifacts").rglob("STARTED"))
        if started:
            break
        time.sleep(0.2)
    assert started, "the interrupted run never reached its waiting cell"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == ["agentstudies run: interrupted; the interrupted notebook's last good executed copy and "
                     "artifacts are unchanged"], err
    assert "Traceback" not in err and "\x1b[" not in err
    assert _snapshot(book) == before
    assert not [p for p in (book / "artifacts").iterdir() if p.name.startswith(".staging")]

    # 2. a run that fails on purpose
    bad = subprocess.run(_cmd(book, "run", "tiny", "-p", "n_rows", "0"), env=_env(), capture_output=True,
                         text=True, timeout=300)
    assert bad.returncode == 1
    assert "notebook tiny failed in cell 3 with ValueError: n_rows must be positive" in bad.stderr
    assert _snapshot(book) == before
    assert (book / "book" / "chapters" / "tiny.failed.ipynb").is_file()

    # 3. the next good run replaces both, and marks its non-profile parameters
    again = subprocess.run(_cmd(book, "run", "tiny", "-p", "n_rows", "5"), env=_env(), capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert (book / "artifacts" / "tiny" / "table.csv").read_text().splitlines()[1] == "5,0"
    assert not (book / "book" / "chapters" / "tiny.failed.ipynb").exists()
    executed = nbf.read(book / "book" / "chapters" / "tiny.ipynb", as_version=4)
    assert "Non-profile run" in executed.cells[1].source and "`n_rows = 5`" in executed.cells[1].source
    import json

    prov = json.loads((book / "artifacts" / "tiny" / "provenance.json").read_text())
    assert prov["run"]["overrides"] == {"n_rows": 5} and prov["run"]["profile"] == "quick"


@pytest.mark.slow
def test_interrupting_chapters_run_side_by_side_leaves_both_byte_identical(book):
    """``agentstudies book --at-once 2``: Ctrl-C while two chapters run in their child
    processes gives one line on stderr and leaves both chapters and artifacts as before."""
    src = book / "notebooks" / "tiny.ipynb"
    nb = nbf.read(src, as_version=4)
    nb.cells[2].source = nb.cells[2].source.replace('"tiny"', '"tiny2"')
    nbf.write(nb, book / "notebooks" / "tiny2.ipynb")
    (book / "book" / "_toc.yml").write_text(yaml.safe_dump(
        {"format": "jb-book", "root": "intro", "chapters": [{"file": "chapters/tiny"}, {"file": "chapters/tiny2"}]}))
    (book / "notebooks" / "profiles.yaml").write_text(
        "chapters:\n  tiny:\n    paper: {wait: 60}\n  tiny2:\n    paper: {wait: 60}\n")
    good = subprocess.run(_cmd(book, "book", "--no-build", "--at-once", "2"), env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert good.returncode == 0, good.stderr
    assert sum(line.startswith("ok  ") for line in good.stdout.splitlines()) == 2, good.stdout
    before = _snapshot(book)
    assert {"book/chapters/tiny.ipynb", "book/chapters/tiny2.ipynb", "artifacts/tiny2/table.csv"} <= set(before)

    proc = subprocess.Popen(_cmd(book, "book", "--no-build", "--at-once", "2", "--profile", "paper"), env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if len(list((book / "artifacts").rglob("STARTED"))) == 2:
            break
        time.sleep(0.2)
    assert len(list((book / "artifacts").rglob("STARTED"))) == 2, "the two runs never reached their waiting cells"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == ["agentstudies book: interrupted; the interrupted notebook's last good executed copy and "
                     "artifacts are unchanged"], err
    assert _snapshot(book) == before
    assert not [p for p in (book / "artifacts").iterdir() if p.name.startswith(".staging")]
