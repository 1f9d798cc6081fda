"""Decision tables of the CIR router: their validation and the first-trigger policy simulation.

A decision table has one row per task x condition x candidate delay ``d`` (plain pandas)::

    task_id, condition, delay (in candidate_delays), y_without (Y^0), y_with (Y^1 after
    a refresh at d), active (bool, optional: False when the task had ended before d --
    such a point is never intervened on and y_with must equal y_without), and the
    feature columns (computed from the transcript up to the decision point only).

Source: CIR paper (Xiao et al., arXiv:2610.00372), section "CIR: estimate before deciding
whether to refresh": delays ``d in (1, 2, 4)`` checked in order, at most one refresh per
trajectory. Used by the router fit (:mod:`agentstudies.recovery._router`), the frozen
routers (:mod:`agentstudies.recovery._freeze`) and the evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

__all__ = ["CANDIDATE_DELAYS", "validate_decisions"]

CANDIDATE_DELAYS: tuple[int, ...] = (1, 2, 4)


# ---------------------------------------------------------------- validation
def validate_decisions(
    table: pd.DataFrame, features: Sequence[str], *, candidate_delays: Sequence[int] = CANDIDATE_DELAYS,
    outcomes: bool = True,
) -> pd.DataFrame:
    """Check a decision table (module docstring) and return it sorted by task, condition, delay.

    Raises ``KeyError`` for a missing column, ``ValueError`` for NaN/inf features, a delay
    outside ``candidate_delays``, a (task, condition) lacking a candidate delay, a
    duplicate (task, condition, delay), non-0/1 outcomes, a y_without that differs across
    the delays of one trajectory, or an inactive point whose y_with differs from y_without
    (each message names the row).
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"decision table must be a DataFrame; got {type(table).__name__}")
    need = ["task_id", "condition", "delay", *features] + (["y_without", "y_with"] if outcomes else [])
    miss = [c for c in need if c not in table.columns]
    if miss:
        raise KeyError(f"decision table lacks column(s) {miss}")
    if not len(features):
        raise ValueError("no feature columns given")
    df = table.copy()
    if "active" not in df.columns:
        df["active"] = True
    df["active"] = df["active"].astype(bool)
    df["task_id"] = df["task_id"].astype(str)
    df["condition"] = df["condition"].astype(str)
    X = df[list(features)].to_numpy(dtype=float)
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"decision table row {df.index[i]!r} (task_id={df['task_id'].iloc[i]!r}): feature "
                         f"{features[j]!r} is {X[i, j]!r}; features must be finite")
    off = ~df["delay"].isin(list(candidate_delays))
    if off.any():
        i = off[off].index[0]
        raise ValueError(f"decision table row {i!r}: delay={df.loc[i, 'delay']!r} not in candidate delays "
                         f"{tuple(candidate_delays)}")
    df["delay"] = df["delay"].astype(int)
    dup = df.duplicated(["task_id", "condition", "delay"])
    if dup.any():
        i = dup[dup].index[0]
        raise ValueError(f"decision table row {i!r}: duplicate decision point (task_id={df.loc[i, 'task_id']!r}, "
                         f"condition={df.loc[i, 'condition']!r}, delay={int(df.loc[i, 'delay'])})")
    n_d = df.groupby(["task_id", "condition"])["delay"].transform("size")
    if (n_d != len(candidate_delays)).any():
        i = n_d[n_d != len(candidate_delays)].index[0]
        raise ValueError(f"decision table: trajectory (task_id={df.loc[i, 'task_id']!r}, condition="
                         f"{df.loc[i, 'condition']!r}) lacks some of the candidate delays {tuple(candidate_delays)}")
    if outcomes:
        for col in ("y_without", "y_with"):
            v = pd.to_numeric(df[col], errors="coerce")
            b = ~v.isin([0, 1])
            if b.any():
                i = b[b].index[0]
                raise ValueError(f"decision table row {i!r} (task_id={df.loc[i, 'task_id']!r}): {col}="
                                 f"{df.loc[i, col]!r}; expected 0/1")
            df[col] = v.astype(int)
        sp = df.groupby(["task_id", "condition"])["y_without"].transform("nunique")
        if (sp > 1).any():
            i = sp[sp > 1].index[0]
            raise ValueError(f"decision table row {i!r}: y_without differs across the delays of trajectory "
                             f"(task_id={df.loc[i, 'task_id']!r}, condition={df.loc[i, 'condition']!r})")
        ia = (~df["active"]) & (df["y_with"] != df["y_without"])
        if ia.any():
            i = ia[ia].index[0]
            raise ValueError(f"decision table row {i!r}: inactive (ended) point with y_with != y_without; an ended "
                             f"task carries its outcome")
    return df.sort_values(["task_id", "condition", "delay"], kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------- policy simulation
@dataclass
class _Traj:
    keys: pd.DataFrame  # (J, ...) task_id, condition
    clean: np.ndarray   # (J,) bool
    active: np.ndarray  # (J, D)
    y0: np.ndarray      # (J,)
    y1: np.ndarray | None  # (J, D)


def _trajectories(df: pd.DataFrame, D: int, clean: str, outcomes: bool = True) -> _Traj:
    keys = df[["task_id", "condition"]].iloc[::D].reset_index(drop=True)
    J = len(keys)
    return _Traj(
        keys=keys,
        clean=(keys["condition"] == clean).to_numpy(),
        active=df["active"].to_numpy().reshape(J, D),
        y0=df["y_without"].to_numpy().reshape(J, D)[:, 0] if outcomes else None,
        y1=df["y_with"].to_numpy().reshape(J, D) if outcomes else None,
    )


def _first_trigger(ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(J, D[, G]) bool -> (any, first index) along axis 1."""
    return ok.any(axis=1), ok.argmax(axis=1)


def _policy_outcome(tr: _Traj, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Outcome of the first-trigger policy: (y_pol (J[,G]), intervened (J[,G]), delay index)."""
    ok = ok & (tr.active if ok.ndim == 2 else tr.active[:, :, None])
    anyt, first = _first_trigger(ok)
    if ok.ndim == 2:
        y1f = np.take_along_axis(tr.y1, first[:, None], axis=1)[:, 0]
        return np.where(anyt, y1f, tr.y0), anyt, first
    y1f = np.take_along_axis(tr.y1[:, :, None].repeat(ok.shape[2], 2), first[:, None, :], axis=1)[:, 0, :]
    return np.where(anyt, y1f, tr.y0[:, None]), anyt, first


def _objective(tr: _Traj, ypol: np.ndarray, inter: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gain on wrong-observation trajectories, clean-harm rate, intervention rate)."""
    y0 = tr.y0 if ypol.ndim == 1 else tr.y0[:, None]
    d = ypol - y0
    wrong = ~tr.clean
    gain = d[wrong].mean(axis=0) if wrong.any() else np.zeros(d.shape[1:])
    harm = ((y0 == 1) & (ypol == 0))[tr.clean].mean(axis=0) if tr.clean.any() else np.zeros(d.shape[1:])
    return gain, harm, inter.mean(axis=0)

