"""Same parameters and seed -> byte-identical tables, whatever ``--jobs`` is.

Every chapter that declares ``n_jobs`` is run at its smoke profile twice: the shared
smoke run with ``--jobs 2`` and a second run with ``--jobs 1`` (both from tests/conftest.py's
``smoke_runs``, the second queued behind the smoke book when the session builds it).
Every CSV and Parquet file the two runs write must be byte-identical (provenance.json
records wall time and is not compared, nor are the wall-clock tables named in
:data:`WALL_CLOCK`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import JOBS_TWINS, SMOKE_JOBS  # tests/ is on sys.path (pytest rootdir conftest)

PARALLEL = sorted(JOBS_TWINS)


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
def test_tables_identical_for_jobs_1_and_2(name, smoke_runs):
    two = smoke_runs.get(name)
    assert two.parameters.get("n_jobs") == SMOKE_JOBS
    one = smoke_runs.get(name, jobs=1)  # its own folders; side by side with the book when it is built
    assert one.parameters.get("n_jobs") == 1
    a, b = _tables(two.artifacts), _tables(one.artifacts)
    assert a, f"{name}: the smoke run wrote no CSV or Parquet table"
    assert sorted(a) == sorted(b), f"{name}: different tables for --jobs 2 and 1"
    differ = [t for t in a if a[t] != b[t]]
    assert not differ, f"{name}: tables differ between --jobs 2 and --jobs 1: {differ}"
