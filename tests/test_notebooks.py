"""Checks of the real chapters listed in book/_toc.yml.

* fast structure checks of every chapter notebook (CONTRIBUTING.md, "Chapters");
* smoke runs: each chapter executed with its `smoke` profile into a tmp folder
  (marked `notebook` and `slow`; deselect with ``-m "not notebook"``).

A chapter listed in the TOC whose notebook does not exist yet is skipped with a reason
(chapters are written in parallel); `agentstudies book` still fails on it, so the book
cannot be built with a missing chapter. A TOC without any chapter entry fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from agentstudies.book import runner

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = runner.toc_chapters(REPO)


def test_toc_lists_chapters():
    assert CHAPTERS, "book/_toc.yml lists no `chapters/<name>` entry: the book would be empty"


def notebook_path(name: str) -> Path:
    path = REPO / "notebooks" / f"{name}.ipynb"
    if not path.is_file():
        pytest.skip(f"chapter {name} is in book/_toc.yml but notebooks/{name}.ipynb is not written yet")
    return path


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_structure(name):
    path = notebook_path(name)
    nb = nbformat.read(path, as_version=4)
    declared = runner.declared_parameters(path)  # raises without a tagged parameters cell
    assert "seed" in declared, f"{name}: the parameters cell must declare `seed`"

    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.lstrip().startswith("# "), (
        f"{name}: the first cell must be a markdown title"
    )
    stored = [i for i, c in enumerate(nb.cells)
              if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert not stored, f"{name}: cells {stored} have stored outputs; strip them before committing"
    last = nb.cells[-1]
    assert last.cell_type == "code" and "ch.finish()" in last.source, (
        f"{name}: the last cell must call ch.finish()"
    )

    profiles = runner.load_profiles(REPO).get(name)
    assert profiles is not None, f"{name}: no entry in notebooks/profiles.yaml"
    assert "smoke" in profiles, f"{name}: notebooks/profiles.yaml has no `smoke` profile"
    for profile in profiles:  # every key of every profile is a declared parameter
        runner.resolve_parameters(path, profile, root=REPO)


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_smoke_run(name, smoke_runs):
    path = notebook_path(name)
    # executed once per session (tests/conftest.py), shared with the browser check
    result = smoke_runs.get(name)
    assert result.output_path.is_file()

    prov_path = smoke_runs.artifacts / name / "provenance.json"
    assert prov_path.is_file(), (
        f"{name}: no provenance.json under artifacts/{name}/ (Chapter must be named "
        f"{name!r} and the last cell must call ch.finish())"
    )
    prov = json.loads(prov_path.read_text())
    declared = runner.declared_parameters(path)
    assert sorted(prov["parameters"]) == sorted(declared), (
        f"{name}: Chapter(params=...) must hold exactly the declared parameters"
    )
    for key, value in result.parameters.items():  # the smoke values reached the chapter
        assert prov["parameters"][key] == value, f"{name}: parameter {key} not passed to Chapter"
