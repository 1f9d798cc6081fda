"""Same parameters and seed -> byte-identical tables, whatever ``--jobs`` is (issue 7).

Every chapter that declares ``n_jobs`` is run at its smoke profile twice: the shared
smoke run with ``--jobs 2`` (tests/conftest.py) and a second run here with ``--jobs 1``.
Every CSV and Parquet file the two runs write must be byte-identical (provenance.json
records wall time and is not compared, nor are the wall-clock tables named in
:data:`WALL_CLOCK`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentstudies import runner

from conftest import REPO, SMOKE_JOBS  # tests/ is on sys.path (pytest rootdir conftest)

PARALLEL = [name for name in runner.toc_chapters(REPO)
            if (REPO / "notebooks" / f"{name}.ipynb").is_file()
            and "n_jobs" in runner.declared_parameters(REPO / "notebooks" / f"{name}.ipynb")]


#: Tables that measure seconds (benchmark-style timings of a chapter's own steps): they
#: differ between any two runs, whatever ``--jobs`` is.
WALL_CLOCK = {"timing.csv"}


def _tables(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.suffix in (".csv", ".parquet") and p.name not in WALL_CLOCK}


def test_some_chapters_are_parallel():
    assert PARALLEL, "no chapter declares n_jobs: the jobs-identity check would test nothing"


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("name", PARALLEL)
def test_tables_identical_for_jobs_1_and_2(name, smoke_runs, tmp_path, monkeypatch):
    two = smoke_runs.get(name)
    assert two.parameters.get("n_jobs") == SMOKE_JOBS
    one = runner.run_notebook(name, {}, tmp_path / f"{name}.ipynb", profile="smoke", jobs=1, root=REPO)
    assert one.parameters.get("n_jobs") == 1
    a, b = _tables(two.artifacts), _tables(one.artifacts)
    assert a, f"{name}: the smoke run wrote no CSV or Parquet table"
    assert sorted(a) == sorted(b), f"{name}: different tables for --jobs 2 and 1"
    differ = [t for t in a if a[t] != b[t]]
    assert not differ, f"{name}: tables differ between --jobs 2 and --jobs 1: {differ}"
