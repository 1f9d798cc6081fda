"""Building the HTML book with Jupyter Book 1 from the executed chapters: nothing is
executed here (``execute_notebooks: off``); :func:`build_book` checks every chapter has an
executed copy before and a page after the build.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import yaml

from agentstudies.book.model import _root, BookBuildError, toc_chapters

__all__ = [
    "check_root_page", "build_book",
]


def _jupyter_book_command() -> list[str]:
    exe = Path(sys.executable).parent / ("jupyter-book.exe" if os.name == "nt" else "jupyter-book")
    if not exe.is_file():
        raise BookBuildError(
            f"jupyter-book is not installed next to {sys.executable}; "
            "install the book extra: pip install -e '.[book]'"
        )
    return [str(exe)]

def check_root_page(root: Path | str | None = None) -> None:
    """Check that the TOC's ``root`` page (e.g. ``book/intro.md``) exists.

    Raises
    ------
    BookBuildError
        If the TOC names no root page or its file is missing.
    """
    book = _root(root) / "book"
    start = (yaml.safe_load((book / "_toc.yml").read_text()) or {}).get("root")
    if not start:
        raise BookBuildError(f"{book / '_toc.yml'} names no root page (root: intro)")
    if not any((book / f"{start}{ext}").is_file() for ext in ("", ".md", ".ipynb", ".rst")):
        raise BookBuildError(f"the TOC's root page book/{start}.md does not exist")

def build_book(root: Path | str | None = None, *, echo: Callable[[str], None] | None = None) -> Path:
    """Render the executed chapters to ``book/_build/html`` with Jupyter Book 1.

    Nothing is executed (``execute_notebooks: off``). Before building, every TOC chapter
    must have an executed copy in ``book/chapters/`` that did not fail; a copy older than
    its source notebook is reported as stale (warning only).

    Sphinx warnings are printed but do not fail the build (no ``-W``): third-party
    extensions and notebook outputs emit harmless warnings that would otherwise block the
    book. Real errors still fail: Jupyter Book's non-zero exit is raised, and since it
    only *warns* about a TOC entry without a file ("toctree contains reference to
    nonexisting document", exit 0), the pages are checked before (executed copies exist)
    and after the build (every chapter's HTML page exists).

    Returns the path of ``index.html``.

    Raises
    ------
    BookBuildError
        If a chapter is not executed (or its last run failed), the TOC root page is
        missing, jupyter-book is not installed or fails, or a chapter's page is missing.
    """
    root, echo = _root(root), echo or _say
    book = root / "book"
    chapters = toc_chapters(root)
    check_root_page(root)
    problems = []
    for chapter in chapters:
        executed = book / "chapters" / f"{chapter}.ipynb"
        source = root / "notebooks" / f"{chapter}.ipynb"
        if not executed.is_file():
            failed = executed.with_name(f"{chapter}.failed.ipynb")
            why = f"its last run failed, see {failed}" if failed.is_file() else "not executed yet"
            problems.append(f"{chapter}: {why}")
        elif source.is_file() and source.stat().st_mtime > executed.stat().st_mtime:
            echo(f"warning: {executed} is older than {source} (stale; rerun with --only {chapter})")
    if problems:
        raise BookBuildError(
            "cannot build the book; chapter(s) without an executed copy in book/chapters/:\n  "
            + "\n  ".join(problems)
            + "\nrun: agentstudies book --profile quick  (or --only NAME ...)"
        )
    cmd = _jupyter_book_command() + ["build", str(book), "--builder", "html"]
    echo(f"building the book: {' '.join(cmd)}")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    log = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)  # drop ANSI colours
    warnings = [line for line in log.splitlines() if "WARNING" in line]
    for line in warnings:
        echo(f"  {line}")
    if proc.returncode != 0:
        tail = "\n".join(log.splitlines()[-40:])
        raise BookBuildError(f"jupyter-book build failed (exit {proc.returncode}):\n{tail}")
    html = book / "_build" / "html"
    absent = [c for c in chapters if not (html / "chapters" / f"{c}.html").is_file()]
    if absent:
        raise BookBuildError(f"jupyter-book did not produce the page of chapter(s) {', '.join(absent)}")
    echo(f"built the book in {seconds:.1f} s ({len(warnings)} warning(s)): {html / 'index.html'}")
    return html / "index.html"

def _say(message: str) -> None:
    print(message, flush=True)
