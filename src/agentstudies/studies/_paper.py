"""The papers' reported values, one CSV per paper table under ``data/paper/``.

Every number a chapter shows *beside* its own results, labelled "paper", is read from
``data/paper/<study>_<table>.csv`` (``data/paper/README.md`` names the paper, table and
section of every file). Nothing here is a result of ours and nothing is computed: the
values are transcribed from the papers in ``/work/shared/papers`` (SASST, Xu et al., 2026;
the checkpoint-handoff paper). Notebooks never type a paper value; they call::

    from agentstudies.studies import paper_values, paper_note
    paper_values("sasst_calibration", "table4")     # DataFrame as in the CSV
    paper_note("tau_workflow_stress", "bonferroni_t_critical")  # a scalar of <study>_notes.csv

This module imports nothing of ours (it only reads files), so any layer may use it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd

__all__ = ["paper_dir", "paper_tables", "paper_values", "paper_note"]


def paper_dir() -> Path:
    """``data/paper`` of the checkout this package lives in (else ``./data/paper``)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "data" / "paper").is_dir():
            return parent / "data" / "paper"
    return Path.cwd() / "data" / "paper"


def paper_tables(study: str) -> list[str]:
    """Names of the tables stored for ``study`` (``<study>_<table>.csv``), sorted."""
    prefix = f"{study}_"
    return sorted(p.stem[len(prefix):] for p in paper_dir().glob(f"{prefix}*.csv"))


@lru_cache(maxsize=None)
def _read(path: str, mtime: float) -> pd.DataFrame:
    import io

    from agentstudies._data import read_bytes  # checked against data/SHA256SUMS

    return pd.read_csv(io.BytesIO(read_bytes(path)), keep_default_na=True)


def paper_values(study: str, table: str) -> pd.DataFrame:
    """The paper's values of ``table`` for ``study`` as a fresh DataFrame (a copy).

    Columns and rows are as in ``data/paper/<study>_<table>.csv``; empty cells are NaN
    (not reported by the paper).

    Raises
    ------
    KeyError
        If no such file exists (the message lists the study's tables).
    """
    path = paper_dir() / f"{study}_{table}.csv"
    if not path.is_file():
        raise KeyError(
            f"no paper table {table!r} for study {study!r} ({path}); "
            f"stored: {paper_tables(study) or '(none)'}"
        )
    return _read(str(path), path.stat().st_mtime).copy()


def paper_note(study: str, quantity: str) -> float:
    """One scalar of ``data/paper/<study>_notes.csv`` (columns ``quantity, value, source``).

    Raises
    ------
    KeyError
        If the study has no notes file or no row ``quantity`` (the message lists them).
    """
    notes = paper_values(study, "notes")
    hit = notes.loc[notes["quantity"] == quantity, "value"]
    if hit.empty:
        raise KeyError(f"paper note {quantity!r} not stored for {study!r}; stored: {list(notes['quantity'])}")
    value = hit.iloc[0]
    return float(value)
