"""What each recovery arm changed: the testability table of a run and its pooled views.

:func:`testability` counts, per cohort x operation x condition x delay, the forks in which
an arm changed the agent's later actions, its next action and the outcome, each with an
exact (Clopper-Pearson) interval; :func:`testability_summary` pools it over cohorts (per
operation x delay, optionally per condition class); :func:`refresh_reach` measures whether
a refresh reaches the agent's later choices (next action changed at delays >= 1 under
clean and stale observations). The findings read :func:`testability` to mark an inert
arm's claims ``not testable here`` (:mod:`.report`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from agentstudies.studies.alfworld.recovery.run import RecoveryStudy

__all__ = ["TESTABILITY_COLUMNS", "refresh_reach", "testability", "testability_summary"]


#: The three measures of :func:`testability`: its share column and the paired column it counts.
_MEASURES: tuple[tuple[str, str], ...] = (("action_changed", "changed"), ("next_action_changed", "changed_next"),
                                          ("outcome_changed", "outcome"))

#: Columns of :func:`testability` (``testability.csv``): the shares, then per measure its
#: count ``<measure>_k`` and exact (Clopper-Pearson) interval ``<measure>_ci_low`` / ``_ci_high``.
TESTABILITY_COLUMNS: tuple[str, ...] = ("cohort", "operation", "condition", "delay", "forks", "active",
                                        "action_changed", "next_action_changed", "outcome_changed") + tuple(
    f"{m}{x}" for m, _ in _MEASURES for x in ("_k", "_ci_low", "_ci_high"))


def _exact_bounds(k: Sequence[int], n: Sequence[int], level: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) two-sided ``level`` bounds of ``k / n`` per row (NaN where n = 0)."""
    from agentstudies.findings import binomial_interval

    b = [binomial_interval(int(a), int(m), level=level)[1:] if int(m) > 0 else (np.nan, np.nan) for a, m in zip(k, n)]
    return np.array([x[0] for x in b], float), np.array([x[1] for x in b], float)


def testability(study: RecoveryStudy, *, level: float = 0.95) -> pd.DataFrame:
    """Did each intervention change anything?

    One row per cohort x operation x condition x delay of ``study.paired``: forks, active
    forks (branch still running at the delay), and the share of *all* forks (an ended
    branch changes nothing) in which the operation changed the agent's own later actions
    (``action_changed``), its next action (``next_action_changed``) and the outcome
    (``outcome_changed``, ``y_with != y_without``) -- fractions in [0, 1]; per measure also
    its count of forks (``<measure>_k``) and the exact (Clopper-Pearson) two-sided
    ``level`` interval of the share (``<measure>_ci_low`` / ``_ci_high``). Columns
    :data:`TESTABILITY_COLUMNS`.

    Raises ``KeyError`` if the paired table lacks ``changed`` / ``changed_next``.
    """
    p = study.paired
    for col in ("changed", "changed_next"):
        if col not in p:
            raise KeyError(f"paired table lacks {col!r}: rerun the study with this version")
    p = p.assign(outcome=(p["y_with"] != p["y_without"]).astype(float), changed=p["changed"].astype(float),
                 changed_next=p["changed_next"].astype(float), active=p["active"].astype(int))
    g = p.groupby(["cohort", "operation", "condition", "delay"], sort=False)
    out = g.agg(forks=("task_id", "size"), active=("active", "sum"), action_changed=("changed", "mean"),
                next_action_changed=("changed_next", "mean"), outcome_changed=("outcome", "mean"),
                action_changed_k=("changed", "sum"), next_action_changed_k=("changed_next", "sum"),
                outcome_changed_k=("outcome", "sum")).reset_index()
    for m, _ in _MEASURES:
        out[f"{m}_k"] = out[f"{m}_k"].astype(int)
        out[f"{m}_ci_low"], out[f"{m}_ci_high"] = _exact_bounds(out[f"{m}_k"], out["forks"], level)
    return out[list(TESTABILITY_COLUMNS)]


def _counts_of(testab: pd.DataFrame, measure: str) -> pd.Series:
    """The count of forks behind ``measure``: ``<measure>_k`` where saved, else share x forks
    rounded (a ``testability.csv`` written before the counts were added)."""
    if f"{measure}_k" in testab:
        return testab[f"{measure}_k"].astype(int)
    return (testab[measure].astype(float) * testab["forks"]).round().astype(int)


def _condition_class(condition: str) -> str:
    """``clean``, ``stale`` (``stale-1`` / ``stale-2``) or ``missing``."""
    return "stale" if str(condition).startswith("stale") else str(condition)


def testability_summary(testab: pd.DataFrame, *, level: float = 0.95, by_class: bool = True) -> pd.DataFrame:
    """Testability pooled over cohorts: one row per operation x delay (x condition class
    ``clean`` / ``stale`` / ``missing`` when ``by_class``) with ``forks`` and, per measure of
    :func:`testability` (``action_changed``, ``next_action_changed``, ``outcome_changed``),
    the count ``<measure>_k``, the share (fraction) and its exact (Clopper-Pearson)
    two-sided ``level`` interval ``<measure>_ci_low`` / ``_ci_high``.

    ``testab``: a :func:`testability` table, or one saved before the counts were added
    (counts then rebuilt as share x forks). Raises ``KeyError`` naming a missing column.
    """
    need = ["operation", "condition", "delay", "forks", *(m for m, _ in _MEASURES)]
    missing = [c for c in need if c not in testab]
    if missing:
        raise KeyError(f"testability table lacks column(s) {missing}")
    t = testab.assign(**{f"{m}_k": _counts_of(testab, m) for m, _ in _MEASURES},
                      conditions=testab["condition"].map(_condition_class))
    keys = ["operation", "conditions", "delay"] if by_class else ["operation", "delay"]
    g = t.groupby(keys, sort=True)[["forks", *(f"{m}_k" for m, _ in _MEASURES)]].sum().reset_index()
    for m, _ in _MEASURES:
        g[m] = g[f"{m}_k"] / g["forks"].where(g["forks"] > 0)
        g[f"{m}_ci_low"], g[f"{m}_ci_high"] = _exact_bounds(g[f"{m}_k"], g["forks"], level)
    return g[keys + ["forks"] + [f"{m}{x}" for m, _ in _MEASURES for x in ("_k", "", "_ci_low", "_ci_high")]]


def refresh_reach(paired: pd.DataFrame, *, level: float = 0.95, min_delay: int = 1,
                  operation: str = "refresh") -> pd.DataFrame:
    """Does a refresh reach the agent's later choices? Among the ``operation`` forks at
    delays ``>= min_delay`` under clean and stale observations (``clean``, ``stale-1``,
    ``stale-2``; every cohort), the share whose *next* action changed.

    ``paired``: one row per fork with ``operation``, ``condition``, ``delay``,
    ``changed_next`` and ``active`` (``RecoveryStudy.paired`` or an archived
    ``paired.csv``); an ended branch (``active`` False) counts as unchanged, as in
    :func:`testability`. Returns three rows, ``forks`` = ``clean + stale``, ``clean``,
    ``stale``, with ``n`` (forks), ``active``, ``k`` (next action changed), ``share``
    (fraction; NaN when n = 0) and its exact (Clopper-Pearson) two-sided ``level``
    interval ``ci_low`` / ``ci_high``. Raises ``KeyError`` naming a missing column.
    """
    need = ["operation", "condition", "delay", "changed_next", "active"]
    missing = [c for c in need if c not in paired]
    if missing:
        raise KeyError(f"paired table lacks column(s) {missing}")
    p = paired[(paired["operation"] == operation) & (paired["delay"].astype(int) >= min_delay)]
    cls = p["condition"].map(_condition_class)
    rows = []
    for name, part in (("clean + stale", p[cls.isin(["clean", "stale"])]), ("clean", p[cls == "clean"]),
                       ("stale", p[cls == "stale"])):
        n, k = int(len(part)), int(part["changed_next"].astype(bool).sum())
        rows.append(dict(forks=name, n=n, active=int(part["active"].astype(bool).sum()), k=k,
                         share=k / n if n else np.nan))
    out = pd.DataFrame(rows)
    out["ci_low"], out["ci_high"] = _exact_bounds(out["k"], out["n"], level)
    return out
