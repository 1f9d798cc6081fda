"""Validation of the three input tables of a checkpoint-handoff study.

Every check raises :class:`KeyError` (missing column) or :class:`ValueError` (bad value,
duplicate row, broken pairing) with a message naming the column, the offending
``split / task_id / seed / reacher / solver`` keys and what was expected. Nothing is
dropped silently. Each validator returns a *copy* with normalised dtypes (nullable
``boolean`` for flags, ``Int64`` for step counts, ``str`` for identifiers) so that the
estimators never see ``object`` columns of mixed type.

Schemas (Section 3 and Appendix A of the paper; one row per ...)

``episodes``      task x seed x reacher x solver (the four assignments of Eq. 2)
    split, task_id, task_type, seed, reacher, solver, arrived, solved, endpoint,
    arrival_step; optional ``bridge`` (Table 3) and any boolean column named by
    ``prespecified`` (the prespecified state set mu_D of Sec. 3.2).
``trajectories``  task x seed x reacher (natural reacher rollouts)
    split, task_id, task_type, seed, reacher, arrived, arrival_step, n_actions;
    optional ``target`` (target object name, used by the failure audit).
``steps``         one reacher action
    split, task_id, seed, reacher, step, action, state_key, state_changed,
    repeated_action, revisited, on_frontier; optional ``admissible``.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import warnings

import numpy as np
import pandas as pd

__all__ = [
    "EPISODE_COLUMNS",
    "TRAJECTORY_COLUMNS",
    "STEP_COLUMNS",
    "validate_episodes",
    "validate_trajectories",
    "validate_steps",
    "check_strata",
]

EPISODE_COLUMNS = (
    "split", "task_id", "task_type", "seed", "reacher", "solver",
    "arrived", "solved", "endpoint", "arrival_step",
)
TRAJECTORY_COLUMNS = (
    "split", "task_id", "task_type", "seed", "reacher", "arrived", "arrival_step",
    "n_actions",
)
STEP_COLUMNS = (
    "split", "task_id", "seed", "reacher", "step", "action", "state_key",
    "state_changed", "repeated_action", "revisited", "on_frontier",
)

_MAX_LISTED = 5


# ----------------------------------------------------------------------- helpers
def _fmt_keys(df: pd.DataFrame, mask: np.ndarray | pd.Series, keys: Sequence[str]) -> str:
    """Up to five offending key tuples, as ``col=value`` lists, plus a count."""
    bad = df.loc[np.asarray(mask, dtype=bool), list(keys)].drop_duplicates()
    rows = [
        "(" + ", ".join(f"{k}={r[k]!r}" for k in keys) + ")"
        for _, r in bad.head(_MAX_LISTED).iterrows()
    ]
    more = f" and {len(bad) - _MAX_LISTED} more" if len(bad) > _MAX_LISTED else ""
    return "; ".join(rows) + more


def _require_columns(df: pd.DataFrame, required: Iterable[str], table: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{table} must be a pandas DataFrame; got {type(df).__name__}")
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise KeyError(
            f"{table} table lacks required column(s) {missing}; expected columns "
            f"{list(required)}"
        )
    if len(df) == 0:
        raise ValueError(f"{table} table is empty; expected at least one row")


def _as_flag(s: pd.Series, name: str, table: str, keys_df: pd.DataFrame, keys) -> pd.Series:
    """Coerce a 0/1/True/False/NA column to pandas' nullable ``boolean``."""
    if isinstance(s.dtype, pd.BooleanDtype) or s.dtype == bool:
        return s.astype("boolean")
    na = s.isna().to_numpy()
    if pd.api.types.is_numeric_dtype(s.dtype):
        num = pd.to_numeric(s).astype(float).to_numpy()
        ok = na | (num == 0.0) | (num == 1.0)
        vals = np.where(na, 0.0, num) == 1.0
    else:
        mapping = {True: True, False: False, "True": True, "true": True,  # 1 / 0 hash as True / False
                   "False": False, "false": False, "1": True, "0": False}
        obj = s.astype(object).to_numpy()
        mapped = [None if n else mapping.get(v, None) if isinstance(v, (bool, np.bool_, int, np.integer, float, str)) else None
                  for v, n in zip(obj, na)]
        ok = na | np.array([m is not None for m in mapped], dtype=bool)
        vals = np.array([bool(m) for m in mapped], dtype=bool)
    if not ok.all():
        shown = sorted({repr(v) for v in s.to_numpy()[~ok]})[:_MAX_LISTED]
        raise ValueError(
            f"{table}: column {name!r} must hold booleans (True/False or 0/1, NA where "
            f"allowed); bad values {shown} at {_fmt_keys(keys_df, ~ok, keys)}"
        )
    texts = sorted({v for v in s.to_numpy() if isinstance(v, str)})
    if texts:
        warnings.warn(
            f"{table}: column {name!r} holds text values {texts[:_MAX_LISTED]}; read "
            "'1'/'true'/'True' as True and '0'/'false'/'False' as False. Store booleans to "
            "silence this note.",
            UserWarning, stacklevel=4,
        )
    res = pd.array(vals, dtype="boolean")
    res[na] = pd.NA
    return pd.Series(res, index=s.index, name=s.name)


def _as_int(s: pd.Series, name: str, table: str, keys_df, keys, *, allow_na: bool) -> pd.Series:
    if s.dtype == bool or isinstance(s.dtype, pd.BooleanDtype):
        raise ValueError(f"{table}: column {name!r} must be integer; got booleans")
    num = pd.to_numeric(s, errors="coerce")
    inf = np.isinf(num.to_numpy(dtype=float, na_value=np.nan))
    if inf.any():
        raise ValueError(
            f"{table}: column {name!r} has non-finite values (+/-inf) at "
            f"{_fmt_keys(keys_df, inf, keys)}; expected an integer"
        )
    badtype = num.isna() & s.notna()
    if badtype.any():
        raise ValueError(
            f"{table}: column {name!r} must be integer; non-numeric values at "
            f"{_fmt_keys(keys_df, badtype, keys)}"
        )
    frac = num.notna() & (num != np.floor(num.fillna(0)))
    if frac.any():
        raise ValueError(
            f"{table}: column {name!r} must be integer; fractional values at "
            f"{_fmt_keys(keys_df, frac, keys)}"
        )
    if not allow_na and num.isna().any():
        raise ValueError(
            f"{table}: column {name!r} has missing values at "
            f"{_fmt_keys(keys_df, num.isna(), keys)}; expected an integer in every row"
        )
    return num.astype("Int64")


def _as_seed(s: pd.Series, table: str, keys_df, keys) -> pd.Series:
    """Integer seeds become ``Int64``; any other seed labels are kept as strings."""
    if s.isna().any():
        raise ValueError(
            f"{table}: column 'seed' has missing values at {_fmt_keys(keys_df, s.isna(), keys)}; "
            "expected a seed (integer or label) in every row"
        )
    num = pd.to_numeric(s, errors="coerce")
    if num.notna().all() and (num == np.floor(num)).all():
        return num.astype("Int64")
    return s.astype(str)


def _as_id(s: pd.Series, name: str, table: str, keys_df, keys) -> pd.Series:
    if s.isna().any():
        raise ValueError(
            f"{table}: identifier column {name!r} has missing values in "
            f"{int(s.isna().sum())} row(s) (first rows: {list(s.index[s.isna()][:_MAX_LISTED])})"
        )
    return s.astype(str)


def _check_labels(df: pd.DataFrame, col: str, labels: tuple[str, str], table: str, keys) -> None:
    bad = ~df[col].isin(labels)
    if bad.any():
        raise ValueError(
            f"{table}: column {col!r} must be one of the two checkpoint labels "
            f"{list(labels)} (base, treated); found {sorted(df.loc[bad, col].unique())[:_MAX_LISTED]} at "
            f"{_fmt_keys(df, bad, keys)}. Pass base=/treated= if your labels differ."
        )


def _check_unique(df: pd.DataFrame, keys: list[str], table: str) -> None:
    dup = df.duplicated(keys, keep=False)
    if dup.any():
        raise ValueError(
            f"{table}: duplicate rows for {_fmt_keys(df, dup, keys)}; expected exactly one "
            f"row per ({', '.join(keys)})"
        )


def _check_constant(df: pd.DataFrame, group: list[str], col: str, table: str, what: str) -> None:
    n = df.groupby(group, sort=False)[col].nunique(dropna=False)
    bad = n[n > 1]
    if len(bad):
        listed = ", ".join(str(dict(zip(group, k if isinstance(k, tuple) else (k,)))) for k in bad.index[:_MAX_LISTED])
        raise ValueError(f"{table}: {what}; column {col!r} differs within {listed}")


def _check_labels_distinct(base: str, treated: str) -> tuple[str, str]:
    if not isinstance(base, str) or not isinstance(treated, str):
        raise ValueError(f"base and treated must be strings; got {base!r}, {treated!r}")
    if base == treated:
        raise ValueError(f"base and treated checkpoint labels must differ; both are {base!r}")
    return base, treated


def _check_arrival_step(df, table, keys) -> None:
    arr = df["arrived"].astype(bool)
    step = df["arrival_step"]
    miss = arr & step.isna()
    if miss.any():
        raise ValueError(
            f"{table}: arrival_step is missing for arrived rows at {_fmt_keys(df, miss, keys)}; "
            "expected the reacher action count at arrival (integer >= 0)"
        )
    extra = ~arr & step.notna()
    if extra.any():
        raise ValueError(
            f"{table}: arrival_step must be NA when the reacher did not arrive; found values at "
            f"{_fmt_keys(df, extra, keys)}"
        )
    neg = step.notna() & (step.fillna(0) < 0)
    if neg.any():
        raise ValueError(f"{table}: arrival_step must be >= 0; negative at {_fmt_keys(df, neg, keys)}")


def check_strata(df: pd.DataFrame, table: str, *, allow_singleton_strata: bool = False,
                 where: str = "") -> list[str]:
    """Check the bootstrap strata: ``task_type`` within each ``split``.

    The handoff intervals resample whole tasks *within* each task type (the strata of the
    task-stratified paired bootstrap, App. C). A type with a single task is resampled as
    that task every time: it adds no variance, and with one task per type every interval
    has zero width. Such strata are an error unless ``allow_singleton_strata=True``; then
    a ``UserWarning`` is issued and the returned notes name them.

    Returns
    -------
    list of notes (empty when every stratum has at least two tasks).

    Raises
    ------
    ValueError
        A ``(split, task_type)`` with fewer than two tasks, naming them (unless allowed).
    """
    n = df.groupby(["split", "task_type"], sort=True)["task_id"].nunique()
    small = n[n < 2]
    if small.empty:
        return []
    listed = ", ".join(f"(split={sp!r}, task_type={tt!r}): {k} task" for (sp, tt), k in small.head(_MAX_LISTED).items())
    more = f" and {len(small) - _MAX_LISTED} more" if len(small) > _MAX_LISTED else ""
    what = (f"{table}: task_type sets the strata of the task-stratified bootstrap (tasks are "
            f"resampled within their type); {len(small)} of {len(n)} strata have fewer than two "
            f"tasks: {listed}{more}. A one-task stratum contributes no resampling variance, so "
            "intervals are too narrow (zero width when every type has one task)")
    if not allow_singleton_strata:
        raise ValueError(
            what + ". Merge small task types (or give every task one common task_type), or pass "
            f"allow_singleton_strata=True{(' to ' + where) if where else ''} to accept it."
        )
    warnings.warn(what + " (allowed by allow_singleton_strata=True)", UserWarning, stacklevel=3)
    return [what + " (allowed by allow_singleton_strata=True)"]


# ---------------------------------------------------------------------- episodes
def validate_episodes(
    episodes: pd.DataFrame,
    *,
    base: str = "SFT",
    treated: str = "RL",
    require_bridge: bool = False,
    prespecified: str | None = None,
) -> pd.DataFrame:
    """Validate and normalise an ``episodes`` table (one row per task x seed x reacher x solver).

    Parameters
    ----------
    episodes : DataFrame
        Columns ``split, task_id, task_type, seed, reacher, solver, arrived, solved,
        endpoint, arrival_step``; optional ``bridge`` (solver's first action was a
        bridge action: one from which one further action wins; Table 3) and the
        column named by ``prespecified``.
    base, treated : str
        Checkpoint labels of the base (SFT) and treated (RL) checkpoints.
    require_bridge : bool
        Raise ``KeyError`` if ``bridge`` is absent.
    prespecified : str, optional
        Name of a boolean column marking the prespecified state set mu_D (Sec. 3.2);
        must be constant across the two solvers of a reached state and NA/False for
        non-arrivals.

    Returns
    -------
    DataFrame, a copy with ``arrived`` bool, ``solved``/``bridge`` nullable boolean,
    ``endpoint`` int 0/1, ``seed``/``arrival_step`` Int64, identifiers as ``str``.

    Raises
    ------
    KeyError
        Missing column.
    ValueError
        Unknown checkpoint label, non-boolean flag, ``solved`` not NA exactly for the
        non-arrivals, ``endpoint != arrived & solved``, duplicated
        ``(split, task_id, seed, reacher, solver)``, a ``(task, seed)`` lacking one of the
        four reacher x solver assignments, ``arrived`` (or ``arrival_step``) differing
        between the two solvers of one ``(task, seed, reacher)`` (the reacher alone
        decides arrival, Sec. 3.1), ``task_type`` not constant within a task.
    """
    base, treated = _check_labels_distinct(base, treated)
    table = "episodes"
    _require_columns(episodes, EPISODE_COLUMNS, table)
    if require_bridge and "bridge" not in episodes.columns:
        raise KeyError("episodes table lacks column 'bridge' needed for the bridge/finish split (Table 3)")
    if prespecified is not None and prespecified not in episodes.columns:
        raise KeyError(f"episodes table lacks the prespecified-state column {prespecified!r}")
    df = episodes.copy()
    df.index = pd.RangeIndex(len(df))
    keys = ["split", "task_id", "seed", "reacher", "solver"]
    for c in ("split", "task_id", "task_type", "reacher", "solver"):
        df[c] = _as_id(df[c], c, table, df, keys)
    df["seed"] = _as_seed(df["seed"], table, df, keys)
    _check_labels(df, "reacher", (base, treated), table, keys)
    _check_labels(df, "solver", (base, treated), table, keys)
    _check_unique(df, keys, table)

    _episode_outcomes(df, table, keys)
    _episode_optional_flags(df, table, keys, prespecified)
    _check_assignments(df, table, base, treated, prespecified)
    return df


def _episode_outcomes(df: pd.DataFrame, table: str, keys: list[str]) -> None:
    """Check and normalise, in place, the outcome columns of an episodes table:
    ``arrived`` (bool, no NA), ``solved`` (NA exactly for non-arrivals), ``endpoint``
    (= arrived & solved, Eq. 7, as int 0/1) and ``arrival_step`` (Int64)."""
    arrived = _as_flag(df["arrived"], "arrived", table, df, keys)
    if arrived.isna().any():
        raise ValueError(
            f"{table}: 'arrived' has missing values at {_fmt_keys(df, arrived.isna(), keys)}; "
            "expected True/False in every row"
        )
    df["arrived"] = arrived.astype(bool)
    df["solved"] = _as_flag(df["solved"], "solved", table, df, keys)
    bad = df["arrived"] & df["solved"].isna()
    if bad.any():
        raise ValueError(
            f"{table}: 'solved' is NA for arrived rows at {_fmt_keys(df, bad, keys)}; "
            "expected True/False whenever the reacher arrived"
        )
    bad = ~df["arrived"] & df["solved"].notna()
    if bad.any():
        raise ValueError(
            f"{table}: 'solved' must be NA when the reacher did not arrive (no continuation "
            f"state exists, V_R(bottom)=0 enters through 'endpoint'); found values at "
            f"{_fmt_keys(df, bad, keys)}"
        )
    ep = _as_flag(df["endpoint"], "endpoint", table, df, keys)
    if ep.isna().any():
        raise ValueError(f"{table}: 'endpoint' has missing values at {_fmt_keys(df, ep.isna(), keys)}; expected 0/1")
    expect = df["arrived"] & df["solved"].fillna(False).astype(bool)
    bad = ep.astype(bool) != expect
    if bad.any():
        raise ValueError(
            f"{table}: 'endpoint' must equal arrived & solved (Eq. 7, non-arrivals are "
            f"failures); violated at {_fmt_keys(df, bad, keys)}"
        )
    df["endpoint"] = ep.astype(bool).astype(np.int64)
    df["arrival_step"] = _as_int(df["arrival_step"], "arrival_step", table, df, keys, allow_na=True)
    _check_arrival_step(df, table, keys)


def _episode_optional_flags(df: pd.DataFrame, table: str, keys: list[str], prespecified: str | None) -> None:
    """Check and normalise, in place, the optional ``bridge`` flag (NA exactly for
    non-arrivals) and the ``prespecified`` state flag (False for non-arrivals)."""
    if "bridge" in df.columns:
        df["bridge"] = _as_flag(df["bridge"], "bridge", table, df, keys)
        bad = df["arrived"] & df["bridge"].isna()
        if bad.any():
            raise ValueError(f"{table}: 'bridge' is NA for arrived rows at {_fmt_keys(df, bad, keys)}")
        bad = ~df["arrived"] & df["bridge"].notna()
        if bad.any():
            raise ValueError(
                f"{table}: 'bridge' must be NA when the reacher did not arrive; found values at "
                f"{_fmt_keys(df, bad, keys)}"
            )
    if prespecified is not None:
        flag = _as_flag(df[prespecified], prespecified, table, df, keys)
        bad = ~df["arrived"] & flag.fillna(False).astype(bool)
        if bad.any():
            raise ValueError(
                f"{table}: prespecified state flag {prespecified!r} is True for non-arrivals at "
                f"{_fmt_keys(df, bad, keys)}; only reached states can be prespecified"
            )
        df[prespecified] = flag.fillna(False).astype(bool)


def _check_assignments(df: pd.DataFrame, table: str, base: str, treated: str, prespecified: str | None) -> None:
    """Every (split, task, seed) has the four reacher x solver assignments; arrival,
    arrival step and the prespecified flag agree across the two solvers of a reached
    state (Sec. 3.1); a task has one task type."""
    # the four assignments of every (split, task, seed)
    tkeys = ["split", "task_id", "seed"]
    n = df.groupby(tkeys, sort=False)["reacher"].size()
    bad = n[n != 4]
    if len(bad):
        listed = ", ".join(f"(split={k[0]!r}, task_id={k[1]!r}, seed={k[2]})" for k in bad.index[:_MAX_LISTED])
        more = f" and {len(bad) - _MAX_LISTED} more" if len(bad) > _MAX_LISTED else ""
        have = df.set_index(tkeys).loc[[bad.index[0]], ["reacher", "solver"]]
        got = sorted(f"{r}->{s}" for r, s in have.itertuples(index=False))
        raise ValueError(
            f"{table}: every (task, seed) needs all four reacher x solver assignments "
            f"({base}->{base}, {base}->{treated}, {treated}->{base}, {treated}->{treated}); "
            f"incomplete for {listed}{more} (first has {got})"
        )
    rkeys = ["split", "task_id", "seed", "reacher"]
    _check_constant(df, rkeys, "arrived", table,
                    "arrival is decided by the reacher alone, so 'arrived' must agree across the two solvers")
    _check_constant(df, rkeys, "arrival_step", table,
                    "'arrival_step' must agree across the two solvers of one reached state")
    if prespecified is not None:
        _check_constant(df, rkeys, prespecified, table,
                        f"the prespecified flag {prespecified!r} is a property of the state and must agree across solvers")
    _check_constant(df, ["split", "task_id"], "task_type", table, "a task has one task type")


# ------------------------------------------------------------------ trajectories
def validate_trajectories(
    trajectories: pd.DataFrame, *, base: str = "SFT", treated: str = "RL"
) -> pd.DataFrame:
    """Validate a ``trajectories`` table (one row per task x seed x reacher).

    Columns ``split, task_id, task_type, seed, reacher, arrived, arrival_step,
    n_actions`` (optional ``target``). ``arrival_step`` is the number of reacher actions
    taken when the state first lay on the frontier (NA iff not arrived);
    ``n_actions`` the actions the reacher took in total (to arrival or stopping).

    Raises
    ------
    KeyError
        Missing column.
    ValueError
        Unknown reacher label, duplicate ``(split, task_id, seed, reacher)``, a
        ``(task, seed)`` without both reachers (the design is paired), bad flags or
        counts, ``arrival_step > n_actions``, non-constant ``task_type``.
    """
    base, treated = _check_labels_distinct(base, treated)
    table = "trajectories"
    _require_columns(trajectories, TRAJECTORY_COLUMNS, table)
    df = trajectories.copy()
    df.index = pd.RangeIndex(len(df))
    keys = ["split", "task_id", "seed", "reacher"]
    for c in ("split", "task_id", "task_type", "reacher"):
        df[c] = _as_id(df[c], c, table, df, keys)
    df["seed"] = _as_seed(df["seed"], table, df, keys)
    _check_labels(df, "reacher", (base, treated), table, keys)
    _check_unique(df, keys, table)
    arrived = _as_flag(df["arrived"], "arrived", table, df, keys)
    if arrived.isna().any():
        raise ValueError(f"{table}: 'arrived' has missing values at {_fmt_keys(df, arrived.isna(), keys)}")
    df["arrived"] = arrived.astype(bool)
    df["arrival_step"] = _as_int(df["arrival_step"], "arrival_step", table, df, keys, allow_na=True)
    _check_arrival_step(df, table, keys)
    df["n_actions"] = _as_int(df["n_actions"], "n_actions", table, df, keys, allow_na=False)
    neg = df["n_actions"] < 0
    if neg.any():
        raise ValueError(f"{table}: 'n_actions' must be >= 0; negative at {_fmt_keys(df, neg, keys)}")
    late = df["arrived"] & (df["arrival_step"].fillna(0) > df["n_actions"])
    if late.any():
        raise ValueError(
            f"{table}: arrival_step exceeds n_actions at {_fmt_keys(df, late, keys)}; the "
            "reacher cannot arrive after its last action"
        )
    n = df.groupby(["split", "task_id", "seed"], sort=False)["reacher"].nunique()
    bad = n[n != 2]
    if len(bad):
        listed = ", ".join(f"(split={k[0]!r}, task_id={k[1]!r}, seed={k[2]})" for k in bad.index[:_MAX_LISTED])
        raise ValueError(
            f"{table}: every (task, seed) needs a trajectory from both reachers "
            f"({base}, {treated}); only one for {listed}"
        )
    _check_constant(df, ["split", "task_id"], "task_type", table, "a task has one task type")
    return df


# ------------------------------------------------------------------------- steps
def validate_steps(
    steps: pd.DataFrame,
    trajectories: pd.DataFrame | None = None,
    *,
    base: str = "SFT",
    treated: str = "RL",
) -> pd.DataFrame:
    """Validate a ``steps`` table (one row per reacher action).

    Columns ``split, task_id, seed, reacher, step, action, state_key, state_changed,
    repeated_action, revisited, on_frontier`` (optional ``admissible``). ``step`` numbers
    the actions of one trajectory (any increasing integers); ``state_changed`` says the
    action changed the environment state, ``repeated_action`` that it equals the
    immediately preceding action, ``revisited`` that the resulting state was seen
    earlier in the trajectory.

    If ``trajectories`` (validated) is given, every step must belong to a listed
    trajectory and each trajectory's number of steps must equal its ``n_actions``.

    Returns the table sorted by ``split, task_id, seed, reacher, step``.

    Raises
    ------
    KeyError
        Missing column.
    ValueError
        Duplicate ``(split, task_id, seed, reacher, step)``, bad flags, steps of an
        unknown trajectory, step count differing from ``n_actions``.
    """
    base, treated = _check_labels_distinct(base, treated)
    table = "steps"
    _require_columns(steps, STEP_COLUMNS, table)
    df = steps.copy()
    df.index = pd.RangeIndex(len(df))
    keys = ["split", "task_id", "seed", "reacher", "step"]
    for c in ("split", "task_id", "reacher"):
        df[c] = _as_id(df[c], c, table, df, keys)
    df["seed"] = _as_seed(df["seed"], table, df, keys)
    df["step"] = _as_int(df["step"], "step", table, df, keys, allow_na=False)
    _check_labels(df, "reacher", (base, treated), table, keys)
    _check_unique(df, keys, table)
    flags = ["state_changed", "repeated_action", "revisited", "on_frontier"]
    if "admissible" in df.columns:
        flags.append("admissible")
    for c in flags:
        f = _as_flag(df[c], c, table, df, keys)
        if f.isna().any():
            raise ValueError(f"{table}: {c!r} has missing values at {_fmt_keys(df, f.isna(), keys)}")
        df[c] = f.astype(bool)
    df["action"] = df["action"].astype(object).where(df["action"].notna(), None)
    df = df.sort_values(keys, kind="stable").reset_index(drop=True)
    if trajectories is not None:
        tkeys = ["split", "task_id", "seed", "reacher"]
        counts = df.groupby(tkeys, sort=False).size().rename("n_steps").reset_index()
        tr = trajectories[tkeys + ["n_actions"]]
        m = counts.merge(tr, on=tkeys, how="left", indicator=True)
        orphan = m["_merge"] == "left_only"
        if orphan.any():
            raise ValueError(
                f"{table}: steps belong to trajectories absent from the trajectories table: "
                f"{_fmt_keys(m, orphan, tkeys)}"
            )
        wrong = m["n_steps"] != m["n_actions"]
        if wrong.any():
            r = m[wrong].iloc[0]
            raise ValueError(
                f"{table}: number of steps differs from n_actions for "
                f"{_fmt_keys(m, wrong, tkeys)} (first: {int(r['n_steps'])} steps, "
                f"n_actions={int(r['n_actions'])})"
            )
    return df
