"""Paired recovery effects: Delta, rescue / harm, stale - clean, task-level bootstrap.

For a cell (cohort, condition e, delay d, operation m) with ``n`` tasks (CIR paper,
"Paired counterfactuals" and "Recovery value depends on state and timing")::

    rescue R = #{Y^0 = 0, Y^m = 1}     harm H = #{Y^0 = 1, Y^m = 0}
    both succeed = #{1, 1}             both fail = #{0, 0}
    Delta(e, d, m) = 100 * (mean Y^m - mean Y^0) = 100 * (R - H) / n   [points]

so ``R - H = Delta * n / 100`` exactly (the counts are integers and Delta is computed
from them). The contrast of a condition against the reference condition (``clean``) at
the same (d, m) is ``Delta(e, d, m) - Delta(clean, d, m)`` ("stale - clean").

Intervals: task-level cluster bootstrap (percentile), one cohort at a time: a resample
draws the cohort's tasks with replacement and every condition, delay and operation of a
drawn task travels with it (paper: "conditions from the same task stay together in
each resample"), via :func:`agentstudies.stats.paired_cluster_bootstrap`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.parallel import keyed_seed
from agentstudies.recovery._validate import validate_paired
from agentstudies.results import Result, ResultProvenance, make_provenance, tidy_rows
from agentstudies.specs import check_n_draws
from agentstudies.stats import paired_cluster_bootstrap, percentile_interval

__all__ = ["RecoveryResult", "analyze_paired", "CONDITION_ORDER", "OPERATION_ORDER", "cell_order"]

#: Display order of the paper's conditions and operations (others follow alphabetically).
CONDITION_ORDER: tuple[str, ...] = ("clean", "stale-1", "stale-2", "missing")
OPERATION_ORDER: tuple[str, ...] = ("refresh", "ablated", "replan")
STRATA: tuple[str, ...] = ("cohort", "condition", "delay", "operation")


def _rank(values: Sequence[str], order: Sequence[str]) -> dict[str, tuple]:
    return {v: ((order.index(v), "") if v in order else (len(order), v)) for v in values}


def cell_order(cells: pd.DataFrame) -> pd.DataFrame:
    """Sort rows by condition (paper order), delay, operation (paper order)."""
    cr = _rank(list(cells["condition"].unique()), CONDITION_ORDER)
    orank = _rank(list(cells["operation"].unique()), OPERATION_ORDER)
    key = cells.apply(lambda r: (cr[r["condition"]], int(r["delay"]), orank[r["operation"]]), axis=1)
    return cells.iloc[_argsort_keys(list(key))]


def _argsort_keys(keys: list) -> np.ndarray:
    return np.array(sorted(range(len(keys)), key=lambda i: keys[i]), dtype=int)


@dataclass(frozen=True)
class RecoveryResult(Result):
    """Paired recovery effects per (cohort, condition, delay, operation).

    Attributes
    ----------
    cells : DataFrame, one row per cell
        cohort, condition, delay, operation, n, rescue, harm, both_succeed, both_fail,
        success_without, success_with (percent), delta (points), delta_se, delta_ci_low,
        delta_ci_high, rescue_rate, rescue_ci_low, rescue_ci_high, harm_rate,
        harm_ci_low, harm_ci_high (percent of the cell's tasks).
    contrasts : DataFrame, one row per non-reference cell that has a reference cell
        cohort, condition, reference, delay, operation, n, estimate (points = Delta(e) -
        Delta(reference)), se, ci_low, ci_high.
    table : the validated paired table (for task-level follow-ups such as
        :meth:`shared_rescues`).
    notes : tuple of str
        What was allowed but limits the intervals (a cohort with one task, see
        ``allow_singleton_strata`` of :func:`analyze_paired`).
    """

    cells: pd.DataFrame
    contrasts: pd.DataFrame
    table: pd.DataFrame
    params: Mapping[str, Any] = field(default_factory=dict)
    provenance: ResultProvenance = field(default_factory=ResultProvenance)
    title: str = "paired recovery effects (CIR protocol)"
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        """The tidy summary, then one ``note:`` line per note (e.g. allowed one-task cohorts)."""
        return "\n".join([super().summary(), *(f"note: {n}" for n in self.notes)])

    def _tidy(self) -> pd.DataFrame:
        level = self.params.get("level", np.nan)
        rows = []
        for r in self.cells.itertuples(index=False):
            base = dict(cohort=r.cohort, condition=r.condition, delay=r.delay, operation=r.operation, n=r.n)
            rows += [
                dict(base, estimand="success_without", estimate=r.success_without),
                dict(base, estimand="success_with", estimate=r.success_with),
                dict(base, estimand="delta", estimate=r.delta, se=r.delta_se, ci_low=r.delta_ci_low,
                     ci_high=r.delta_ci_high, side="two-sided", level=level),
                dict(base, estimand="rescue", estimate=r.rescue),
                dict(base, estimand="harm", estimate=r.harm),
                dict(base, estimand="both_succeed", estimate=r.both_succeed),
                dict(base, estimand="both_fail", estimate=r.both_fail),
                dict(base, estimand="rescue_rate", estimate=r.rescue_rate, ci_low=r.rescue_ci_low,
                     ci_high=r.rescue_ci_high, side="two-sided", level=level),
                dict(base, estimand="harm_rate", estimate=r.harm_rate, ci_low=r.harm_ci_low,
                     ci_high=r.harm_ci_high, side="two-sided", level=level),
            ]
        for r in self.contrasts.itertuples(index=False):
            rows.append(dict(cohort=r.cohort, condition=r.condition, delay=r.delay, operation=r.operation,
                             n=r.n, estimand=f"delta_minus_{r.reference}", estimate=r.estimate, se=r.se,
                             ci_low=r.ci_low, ci_high=r.ci_high, side="two-sided", level=level))
        return tidy_rows(rows, strata=STRATA)

    # ------------------------------------------------------------ layouts
    def delta_table(self, cohort: str | None = None, operation: str | None = None) -> pd.DataFrame:
        """Delta (points) with interval by condition x delay (the paper's first table and
        its delay sweep); rows filtered by ``cohort`` / ``operation`` when given."""
        c = self.cells
        if cohort is not None:
            c = c[c["cohort"] == cohort]
        if operation is not None:
            c = c[c["operation"] == operation]
        return c[["cohort", "condition", "delay", "operation", "n", "delta", "delta_ci_low", "delta_ci_high"]].reset_index(drop=True)

    def paired_counts(self, cohort: str | None = None) -> pd.DataFrame:
        """Rescue / harm / both-succeed / both-fail per cell, with Delta and the check
        column ``net = rescue - harm`` (equals ``delta * n / 100``)."""
        c = self.cells if cohort is None else self.cells[self.cells["cohort"] == cohort]
        out = c[["cohort", "condition", "delay", "operation", "n", "rescue", "harm", "both_succeed", "both_fail",
                 "success_without", "success_with", "delta"]].copy()
        out.insert(out.columns.get_loc("both_succeed"), "net", out["rescue"] - out["harm"])
        return out.reset_index(drop=True)

    def contrast_table(self, cohort: str | None = None) -> pd.DataFrame:
        """Condition - reference differences (points) with intervals."""
        c = self.contrasts if cohort is None else self.contrasts[self.contrasts["cohort"] == cohort]
        return c.reset_index(drop=True)

    def shared_rescues(self, operation_a: str, operation_b: str) -> pd.DataFrame:
        """Tasks rescued by both operations in the same (cohort, condition, delay): columns
        cohort, condition, delay, rescued_a, rescued_b, shared (paper, mechanism controls:
        "content-ablated shares eight of them")."""
        t = self.table
        key = ["cohort", "condition", "delay", "task_id"]
        a = t[t["operation"] == operation_a].set_index(key)
        b = t[t["operation"] == operation_b].set_index(key)
        if a.empty or b.empty:
            raise KeyError(f"operations {operation_a!r} / {operation_b!r}: one has no rows; have "
                           f"{sorted(t['operation'].unique())}")
        j = a[["y_without", "y_with"]].join(b[["y_without", "y_with"]], how="inner", lsuffix="_a", rsuffix="_b")
        ra = (j["y_without_a"] == 0) & (j["y_with_a"] == 1)
        rb = (j["y_without_b"] == 0) & (j["y_with_b"] == 1)
        out = pd.DataFrame({"rescued_a": ra, "rescued_b": rb, "shared": ra & rb}).groupby(
            level=["cohort", "condition", "delay"], sort=False).sum().reset_index()
        out.insert(3, "operation_a", operation_a)
        out.insert(4, "operation_b", operation_b)
        return out


def _cohort_arrays(g: pd.DataFrame) -> tuple[list[str], pd.DataFrame, np.ndarray, np.ndarray]:
    tasks = sorted(g["task_id"].unique())
    cells = cell_order(g[["condition", "delay", "operation"]].drop_duplicates()).reset_index(drop=True)
    ti = {t: i for i, t in enumerate(tasks)}
    ci = {tuple(c): j for j, c in enumerate(cells.itertuples(index=False))}
    y0 = np.zeros((len(tasks), len(cells)), dtype=np.int64)
    y1 = np.zeros_like(y0)
    r = g["task_id"].map(ti).to_numpy()
    c = np.array([ci[k] for k in zip(g["condition"], g["delay"], g["operation"])], dtype=int)
    y0[r, c] = g["y_without"].to_numpy()
    y1[r, c] = g["y_with"].to_numpy()
    return tasks, cells, y0, y1


def analyze_paired(
    table: pd.DataFrame,
    *,
    level: float = 0.95,
    n_draws: int = 2000,
    seed: int = 0,
    reference: str = "clean",
    shared_without: bool = False,
    allow_singleton_strata: bool = False,
) -> RecoveryResult:
    """Paired success differences, rescue / harm counts and stale - clean contrasts.

    Parameters
    ----------
    table : DataFrame, one row per fork
        Columns ``task_id, condition, delay, operation, y_without, y_with`` (0/1) and
        optional ``cohort`` -- see :func:`validate_paired`. Any harness's logs work.
    level : float in (0, 1)
        Confidence level of the percentile intervals.
    n_draws : int
        Task-level cluster-bootstrap resamples per cohort.
    seed : int
        Root seed; cohort ``c`` resamples with ``keyed_seed(seed, "recovery-bootstrap", c)``.
    reference : str
        Condition the contrasts subtract (paper: clean). Another name must be one of the
        table's conditions; the default ``clean`` may be absent (no contrasts, said in
        ``notes``).
    shared_without : bool
        Passed to :func:`validate_paired`.
    allow_singleton_strata : bool
        Each cohort is resampled on its own (the cohort is the bootstrap stratum). A cohort
        with a single task is resampled as that task every time: its intervals have zero
        width and ``se`` 0 (stale - clean = 200 points with interval [200, 200]). Such a
        cohort is an error unless this is True; then it is warned and noted in ``notes``
        (the same rule and name as :func:`agentstudies.handoff.analyze_handoff`).

    Returns
    -------
    :class:`RecoveryResult`. Units: success and rates in percent, Delta and contrasts in
    percentage points; counts are task counts.

    Raises
    ------
    TypeError, KeyError, ValueError
        Bad input (see :func:`validate_paired`), ``level`` outside (0, 1), ``n_draws`` not an
        integer (``True`` is refused, TypeError), below :func:`agentstudies.specs.min_draws`
        (40 at level 0.95) or too large for the stated memory / time
        bound (:func:`agentstudies.stats.check_resample_budget`, estimate in the message),
        a cohort with fewer than two tasks (see ``allow_singleton_strata``), a ``reference``
        other than ``clean`` that is not a condition of the table.

    Source: CIR paper (arXiv:2610.00372), Sections "Paired counterfactuals" and
    "Recovery value depends on state and timing".
    """
    if not 0 < level < 1:
        raise ValueError(f"level={level}: expected a confidence level in (0, 1)")
    check_n_draws(n_draws, level, where="analyze_paired")
    df = validate_paired(table, shared_without=shared_without)
    notes = _check_reference(df, reference) + _check_cohort_sizes(df, allow_singleton_strata)
    cell_rows, contrast_rows = [], []
    for cohort in sorted(df["cohort"].unique()):
        g = df[df["cohort"] == cohort]
        tasks, cells, y0, y1 = _cohort_arrays(g)
        n, k = y0.shape
        diff = y1 - y0
        resc = (1 - y0) * y1
        harm = y0 * (1 - y1)
        rng = np.random.default_rng(keyed_seed(seed, "recovery-bootstrap", str(cohort)))
        sums = np.concatenate([diff, resc, harm], axis=1).astype(float)
        reps = paired_cluster_bootstrap(sums, lambda tot: 100.0 * tot / n, n_draws=int(n_draws), rng=rng)
        rd, rr, rh = reps[:, :k], reps[:, k:2 * k], reps[:, 2 * k:]
        ci_d = percentile_interval(rd, level)
        ci_r = percentile_interval(rr, level)
        ci_h = percentile_interval(rh, level)
        se_d = rd.std(axis=0, ddof=1) if rd.shape[0] > 1 else np.full(k, np.nan)
        for j, c in enumerate(cells.itertuples(index=False)):
            R, H = int(resc[:, j].sum()), int(harm[:, j].sum())
            cell_rows.append(dict(
                cohort=cohort, condition=c.condition, delay=int(c.delay), operation=c.operation, n=n,
                rescue=R, harm=H, both_succeed=int((y0[:, j] * y1[:, j]).sum()),
                both_fail=int(((1 - y0[:, j]) * (1 - y1[:, j])).sum()),
                success_without=100.0 * y0[:, j].sum() / n, success_with=100.0 * y1[:, j].sum() / n,
                delta=100.0 * (R - H) / n, delta_se=float(se_d[j]), delta_ci_low=float(ci_d[0, j]),
                delta_ci_high=float(ci_d[1, j]), rescue_rate=100.0 * R / n, rescue_ci_low=float(ci_r[0, j]),
                rescue_ci_high=float(ci_r[1, j]), harm_rate=100.0 * H / n, harm_ci_low=float(ci_h[0, j]),
                harm_ci_high=float(ci_h[1, j]),
            ))
        ref_idx = {(int(c.delay), c.operation): j for j, c in enumerate(cells.itertuples(index=False))
                   if c.condition == reference}
        for j, c in enumerate(cells.itertuples(index=False)):
            if c.condition == reference or (int(c.delay), c.operation) not in ref_idx:
                continue
            jr = ref_idx[(int(c.delay), c.operation)]
            est = 100.0 * (diff[:, j].sum() - diff[:, jr].sum()) / n
            rc = rd[:, j] - rd[:, jr]
            ci = percentile_interval(rc, level)
            contrast_rows.append(dict(
                cohort=cohort, condition=c.condition, reference=reference, delay=int(c.delay), operation=c.operation,
                n=n, estimate=est, se=float(rc.std(ddof=1)) if rc.size > 1 else np.nan,
                ci_low=float(ci[0]), ci_high=float(ci[1]),
            ))
    cells_df = pd.DataFrame(cell_rows)
    contrasts_df = pd.DataFrame(contrast_rows, columns=["cohort", "condition", "reference", "delay", "operation", "n",
                                                        "estimate", "se", "ci_low", "ci_high"])
    return RecoveryResult(
        cells=cells_df, contrasts=contrasts_df, table=df,
        params=dict(level=level, n_draws=int(n_draws), seed=seed, reference=reference, shared_without=shared_without,
                    allow_singleton_strata=allow_singleton_strata),
        provenance=make_provenance(seed=seed, paired=df), notes=tuple(notes),
    )


def _check_reference(df: pd.DataFrame, reference: str) -> list[str]:
    """Refuse a ``reference`` that is no condition of the table (the default ``clean``
    may be absent: no contrasts, returned as a note)."""
    conditions = sorted(map(str, df["condition"].unique()))
    if reference in conditions:
        return []
    if reference != "clean":
        raise ValueError(f"analyze_paired: reference={reference!r} is not a condition of the table; allowed values: "
                         f"{', '.join(repr(c) for c in conditions)} (the paper's reference is 'clean')")
    return [f"no contrasts: the table has no {reference!r} condition (conditions: {', '.join(conditions)}); "
            "pass reference=<one of them> for contrasts"]


def _check_cohort_sizes(df: pd.DataFrame, allow: bool) -> list[str]:
    """Cohorts with fewer than two tasks: ``ValueError`` unless ``allow``; then warned and
    returned as notes (see ``allow_singleton_strata`` of :func:`analyze_paired`)."""
    n = df.groupby("cohort", sort=True)["task_id"].nunique()
    small = n[n < 2]
    if small.empty:
        return []
    listed = ", ".join(f"{c!r}: {k} task" for c, k in small.items())
    what = (f"paired table: each cohort is resampled on its own (tasks are drawn with replacement within "
            f"their cohort); {len(small)} of {len(n)} cohort(s) have fewer than two tasks: {listed}. A one-task "
            "cohort is resampled as that task every time, so its intervals have zero width and se 0")
    if not allow:
        raise ValueError(what + ". Analyse more tasks per cohort, merge cohorts, or pass "
                         "allow_singleton_strata=True to analyze_paired to accept it.")
    import warnings

    warnings.warn(what + " (allowed by allow_singleton_strata=True)", UserWarning, stacklevel=3)
    return [what + " (allowed by allow_singleton_strata=True)"]
