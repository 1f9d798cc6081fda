"""Validation of a paired recovery table (one row per fork).

Schema (CIR paper, "Paired counterfactuals"): one row per task ``i`` x observation
condition ``e`` x recovery delay ``d`` x operation ``m`` (x optional ``cohort``)::

    task_id    str    the task instance i (the bootstrap cluster)
    condition  str    observation condition e (e.g. clean / stale-1 / stale-2 / missing)
    delay      int    recovery delay d >= 0 (environment actions after the modification)
    operation  str    recovery operation m (e.g. refresh / ablated / replan)
    y_without  0/1    Y_i^0(e): success of the branch without recovery
    y_with     0/1    Y_i^m(e, d): success of the branch with recovery m at delay d
    cohort     str    optional cohort label (default ``"all"``)

Errors (nothing is dropped silently; each names the row index and its key)

* ``TypeError``  -- not a DataFrame;
* ``KeyError``   -- a required column is missing;
* ``ValueError`` -- empty table; a missing identifier; a non-integer or negative delay;
  an *unpaired row* (one branch of the fork is missing: exactly one of ``y_without`` /
  ``y_with`` is NaN); a *NaN outcome* (both are NaN); an outcome outside {0, 1}; a
  *duplicate fork* (two rows with the same cohort, task, condition, delay, operation);
  a task that lacks a condition (or any other cell) its cohort's design holds; with
  ``shared_without=True``, a no-recovery outcome that differs across the delays and
  operations of one (task, condition) -- under deterministic replay ``Y_i^0(e)`` does
  not depend on ``d`` or ``m`` (paper, same section).

Text outcomes (``"0"``/``"1"``) are read as numbers with a ``UserWarning`` naming the
column, as the handoff and SASST validators do.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

__all__ = ["PAIRED_COLUMNS", "KEY_COLUMNS", "validate_paired"]

#: Required columns of a paired table.
PAIRED_COLUMNS: tuple[str, ...] = ("task_id", "condition", "delay", "operation", "y_without", "y_with")
#: The key of one fork (a row).
KEY_COLUMNS: tuple[str, ...] = ("cohort", "task_id", "condition", "delay", "operation")


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def _row_name(df: pd.DataFrame, idx) -> str:
    r = df.loc[idx]
    keys = ", ".join(f"{k}={_py(r[k])!r}" for k in KEY_COLUMNS if k in df.columns)
    return f"row {_py(idx)!r} ({keys})"


def _outcome(df: pd.DataFrame, col: str) -> np.ndarray:
    s = df[col]
    if s.dtype == bool or isinstance(s.dtype, pd.BooleanDtype):
        vals = s.astype("float64")
    elif pd.api.types.is_numeric_dtype(s.dtype):
        vals = pd.to_numeric(s).astype("float64")
    else:
        vals = pd.to_numeric(s, errors="coerce").astype("float64")
        bad = vals.isna() & s.notna()
        if bad.any():
            idx = bad[bad].index[0]
            raise ValueError(
                f"paired table: {_row_name(df, idx)}: {col}={_py(s.loc[idx])!r} is not a number; "
                f"outcomes must be 0/1 (or True/False)"
            )
        texts = sorted({v for v in s.to_numpy() if isinstance(v, str)})
        if texts:  # as the handoff and SASST validators say it
            warnings.warn(
                f"paired table: column {col!r} holds text values {texts[:10]}; read '1' as 1 and '0' as 0. "
                "Store numbers (or booleans) to silence this note.",
                UserWarning, stacklevel=5,
            )
    arr = vals.to_numpy()
    finite = np.isfinite(arr) | np.isnan(arr)
    bad = ~finite | (~np.isnan(arr) & (arr != 0.0) & (arr != 1.0))
    if bad.any():
        idx = df.index[np.flatnonzero(bad)[0]]
        raise ValueError(
            f"paired table: {_row_name(df, idx)}: {col}={_py(s.loc[idx])!r} is not a binary "
            f"outcome; expected 0 or 1 ({int(bad.sum())} such row(s))"
        )
    return arr


def validate_paired(table: pd.DataFrame, *, shared_without: bool = False) -> pd.DataFrame:
    """Check a paired recovery table and return a normalised copy.

    Parameters
    ----------
    table : DataFrame, one row per fork, columns :data:`PAIRED_COLUMNS` (+ ``cohort``).
    shared_without : bool
        Also require ``y_without`` to be equal across all delays and operations of one
        (cohort, task, condition): the no-recovery continuation is shared under
        deterministic replay (paper: "Y_i^0 need not carry d").

    Returns
    -------
    DataFrame with columns ``cohort, task_id, condition, delay, operation, y_without,
    y_with`` (identifiers ``str``, ``delay`` ``int64``, outcomes ``int64`` 0/1) in the
    input's row order, plus any extra input columns after them.

    Raises
    ------
    TypeError, KeyError, ValueError
        See the module docstring; every message names the offending row and its key.
    """
    df = _normalise_keys(table)
    _check_outcomes(df)
    _check_unique_forks(df)
    for cohort, g in df.groupby("cohort", sort=False):
        _check_balanced(df, cohort, g)
    if shared_without:
        _check_shared_without(df)
    extra = [c for c in df.columns if c not in KEY_COLUMNS + ("y_without", "y_with")]
    return df[list(KEY_COLUMNS) + ["y_without", "y_with"] + extra]


def _normalise_keys(table: pd.DataFrame) -> pd.DataFrame:
    """Type, column and emptiness checks; a copy with ``cohort`` filled and the key columns
    typed (identifiers ``str``, ``delay`` ``int64``)."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"paired table must be a pandas DataFrame; got {type(table).__name__}")
    missing = [c for c in PAIRED_COLUMNS if c not in table.columns]
    if missing:
        raise KeyError(f"paired table lacks required column(s) {missing}; expected {list(PAIRED_COLUMNS)} "
                       f"(+ optional 'cohort')")
    if len(table) == 0:
        raise ValueError("paired table is empty; expected one row per fork")
    df = table.copy()
    if "cohort" not in df.columns:
        df["cohort"] = "all"
    if df.index.has_duplicates:
        df = df.reset_index(drop=True)
    for col in ("cohort", "task_id", "condition", "operation"):
        na = df[col].isna()
        if na.any():
            idx = na[na].index[0]
            raise ValueError(f"paired table: {_row_name(df, idx)}: {col} is missing; every fork needs one")
        df[col] = df[col].astype(str)
    d = pd.to_numeric(df["delay"], errors="coerce")
    bad = d.isna() | ~np.isfinite(d.fillna(0)) | (d != np.floor(d.fillna(0))) | (d < 0)
    if bad.any():
        idx = bad[bad].index[0]
        raise ValueError(f"paired table: {_row_name(df, idx)}: delay={_py(df.loc[idx, 'delay'])!r}; "
                         f"expected a non-negative integer number of environment actions")
    df["delay"] = d.astype("int64")
    return df


def _check_outcomes(df: pd.DataFrame) -> None:
    """Both branches present and binary; writes them back as ``int64`` (in place)."""
    y0 = _outcome(df, "y_without")
    y1 = _outcome(df, "y_with")
    n0, n1 = np.isnan(y0), np.isnan(y1)
    one = n0 ^ n1
    if one.any():
        idx = df.index[np.flatnonzero(one)[0]]
        which = "y_without" if n0[np.flatnonzero(one)[0]] else "y_with"
        raise ValueError(
            f"paired table: unpaired {_row_name(df, idx)}: {which} is missing, so the fork has only one "
            f"branch; each row must pair the no-recovery and the with-recovery outcome of one fork "
            f"({int(one.sum())} unpaired row(s))"
        )
    both = n0 & n1
    if both.any():
        idx = df.index[np.flatnonzero(both)[0]]
        raise ValueError(f"paired table: {_row_name(df, idx)}: NaN outcome (y_without and y_with are both "
                         f"missing); expected 0/1 outcomes ({int(both.sum())} such row(s))")
    df["y_without"] = y0.astype("int64")
    df["y_with"] = y1.astype("int64")


def _check_unique_forks(df: pd.DataFrame) -> None:
    key = list(KEY_COLUMNS)
    dup = df.duplicated(key, keep="first")
    if dup.any():
        idx = dup[dup].index[0]
        first = df.index[(df[key] == df.loc[idx, key]).all(axis=1)][0]
        raise ValueError(f"paired table: duplicate fork: {_row_name(df, idx)} repeats row {_py(first)!r}; "
                         f"expected one row per (cohort, task_id, condition, delay, operation)")


def _check_balanced(df: pd.DataFrame, cohort: str, g: pd.DataFrame) -> None:
    """Balanced design within a cohort: every task holds every cell of the cohort."""
    conds = sorted(g["condition"].unique())
    have = g.groupby("task_id", sort=False)["condition"].agg(lambda s: frozenset(s))
    for task, cs in have.items():
        lack = [c for c in conds if c not in cs]
        if lack:
            idx = g.index[g["task_id"] == task][0]
            raise ValueError(
                f"paired table: task {task!r} (cohort {cohort!r}, first at {_row_name(df, idx)}) has no row "
                f"for condition(s) {lack}; every task of a cohort must be observed under every condition "
                f"{conds} (the task-level bootstrap keeps a task's conditions together)"
            )
    cells = g[["condition", "delay", "operation"]].drop_duplicates()
    n_cells = len(cells)
    per_task = g.groupby("task_id", sort=False).size()
    short = per_task[per_task != n_cells]
    if len(short):
        task = short.index[0]
        own = set(map(tuple, g.loc[g["task_id"] == task, ["condition", "delay", "operation"]].itertuples(index=False)))
        lack = [tuple(c) for c in cells.itertuples(index=False) if tuple(c) not in own]
        idx = g.index[g["task_id"] == task][0]
        raise ValueError(
            f"paired table: task {task!r} (cohort {cohort!r}, first at {_row_name(df, idx)}) lacks "
            f"(condition, delay, operation) cell(s) {lack[:5]}; every task of a cohort must hold every "
            f"cell of the cohort's design ({n_cells} cells)"
        )


def _check_shared_without(df: pd.DataFrame) -> None:
    grp = df.groupby(["cohort", "task_id", "condition"], sort=False)["y_without"]
    spread = grp.transform("nunique")
    if (spread > 1).any():
        idx = spread[spread > 1].index[0]
        raise ValueError(
            f"paired table: unpaired {_row_name(df, idx)}: y_without differs across the delays/operations "
            f"of this task and condition; under deterministic replay the no-recovery branch Y_i^0(e) is "
            f"shared (pass shared_without=False for stochastic no-recovery branches)"
        )
