"""The handoff result object (:class:`HandoffResult`: estimates, paper Table 2, identity checks)
and its driver :func:`analyze_handoff`: point estimands, task-stratified paired bootstrap
intervals, per-split and per-task-type rows.

Source: "Reach or Solve? Attributing Agentic RL Gains with Checkpoint Handoffs",
Sections 2-3 (Eqs. 2-8), Section 4.1 (inference), Appendix C.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from agentstudies._tolerances import IDENTITY_TOL
from agentstudies.handoff._boot import (
    HandoffResultBase,
    UnitStats,
    bootstrap_seed,
    check_draws,
    check_level,
    fmt_ci,
    fmt_pct,
    fmt_pp,
    run_bootstrap,
    summarise,
    tidy_estimates,
    warn_flagged,
)
from agentstudies.results import PaperTables, make_provenance, tidy_rows
from agentstudies.handoff._validate import check_strata, validate_episodes
from agentstudies.handoff._estimands import (
    _flat_statistic,
    _symbols,
    episode_task_stats,
)
from agentstudies.handoff._tables import assignment_table, interaction_terms, solve_stages

__all__ = ["HandoffResult", "analyze_handoff"]


@dataclass(frozen=True, eq=False, kw_only=True)
class HandoffResult(PaperTables, HandoffResultBase):
    """Reach / Solve / interaction estimates of one or more splits, with intervals.

    ``to_frame()`` is the tidy table: strata ``split, task_type`` (``task_type`` is
    ``"all"`` for the pooled estimands, a task type for the per-type ones of
    :data:`BY_TYPE_ESTIMANDS`), then ``symbol, source, n_draws, n_excluded,
    excluded_share, flagged, n_tasks, n_states`` and the tidy columns (two-sided
    percentile intervals, ``n`` = tasks resampled). ``get(estimand, split=None,
    task_type="all")``; ``table(2)`` (:class:`~agentstudies.results.PaperTables`, ``PAPER = "handoff"``) is the
    assignments layout of Tables 1-2.

    Attributes
    ----------
    assignments : DataFrame
        ``split, reacher, solver, n, arrival, conversion, endpoint, n_arrived,
        n_solved`` and percentile bounds ``*_low`` / ``*_high`` (Tables 1, 2).
    estimates : DataFrame
        Long table ``split, estimand, symbol, source, estimate, ci_low, ci_high,
        n_boot, n_excluded, excluded_share, flagged`` (every pooled estimand; see
        :func:`analyze_handoff`; ``n_boot`` is the number of draws, the column name the
        chapter artifacts keep).
    by_type : DataFrame
        Same columns plus ``task_type``, ``n_tasks``, ``n_states`` for the per-type
        estimands (Figure 8 data; arrival, interaction per type).
    stages : DataFrame or None
        Table 3 layout (if the episodes have ``bridge``): ``split, solver, n_states,
        bridge_rate, finish_rate, product, conversion, only_this_solver_wins`` with
        ``*_low`` / ``*_high`` bounds.
    checks : DataFrame
        ``split, identity, lhs, rhs, abs_diff, holds`` for J = A C (Eq. 7), the two
        paths of Eq. 3, I as difference of solve / reach terms, Eq. 4 = Eq. 8.
    base, treated : checkpoint labels; n_draws, seed, level, empty_threshold, chunk :
        bootstrap settings; params : all of them; provenance : package version,
        SHA-256 of the validated episodes, seed.
    """

    PAPER = "handoff"

    assignments: pd.DataFrame
    estimates: pd.DataFrame
    by_type: pd.DataFrame
    stages: pd.DataFrame | None
    checks: pd.DataFrame
    empty_threshold: float
    chunk: int
    notes: tuple[str, ...] = ()

    title = "Checkpoint handoff"

    @property
    def splits(self) -> list[str]:
        return sorted(self.assignments["split"].unique())

    def _tidy(self) -> pd.DataFrame:
        tasks = self.by_type.drop_duplicates(["split", "task_type"]).groupby("split")["n_tasks"].sum()
        pooled = self.estimates.assign(task_type="all", n_tasks=self.estimates["split"].map(tasks), n_states=np.nan)
        rows = pd.concat([pooled, self.by_type], ignore_index=True)
        return tidy_rows(tidy_estimates(rows, level=self.level, n="n_tasks"), strata=("split", "task_type"))

    def get(self, estimand: str, split: str | None = None, **keys) -> pd.Series:
        """The tidy row of ``estimand`` (``split`` may be omitted with a single split;
        ``task_type`` defaults to ``"all"``, the pooled estimand)."""
        if split is None and len(self.splits) == 1:
            split = self.splits[0]
        if split is not None:
            keys["split"] = split
        keys.setdefault("task_type", "all")
        return super().get(estimand, **keys)

    def _table_2(self) -> pd.DataFrame:
        """The four reacher x solver assignments with intervals (Tables 1-2 layout)."""
        return self.assignments.copy()

    def summary(self) -> str:
        """Readable text: per split, the four assignments, the key contrasts, the checks."""
        pct = f"{self.level:.0%}"
        lines = [
            f"Checkpoint handoff: reacher x solver over {{{self.base}, {self.treated}}} "
            f"(base={self.base}, treated={self.treated})",
            f"task-stratified paired bootstrap (strata: task_type within split): {self.n_draws:,} "
            f"resamples, two-sided {pct} percentile intervals [lower, upper], seed {self.seed}; "
            "rates in %, contrasts in points",
        ]
        lines += [f"note: {n}" for n in self.notes]
        for split in self.splits:
            lines += self._split_summary(split)
        return "\n".join(lines)

    def _split_summary(self, split: str) -> list[str]:
        key = ["reach_gap", "delta_solve_base_states", "delta_solve_treated_states",
               "delta_solve_all_states", "interaction", "survivor_interaction",
               "survivor_minus_endpoint"]
        a = self.assignments[self.assignments["split"] == split]
        lines = ["", f"== split {split} ==",
                 f"{'reacher':>8} {'solver':>8} {'n':>5} {'Reach A':>8} {'Solve C':>8} {'J':>7}  J interval"]
        for r in a.itertuples():
            lines.append(
                f"{r.reacher:>8} {r.solver:>8} {r.n:>5d} {fmt_pct(r.arrival):>8} "
                f"{fmt_pct(r.conversion):>8} {fmt_pct(r.endpoint):>7}  {fmt_ci(r.endpoint_low, r.endpoint_high)}"
            )
        e = self.estimates[self.estimates["split"] == split].set_index("estimand")
        for k in key:
            if k not in e.index:
                continue
            r = e.loc[k]
            flag = f"  [excluded {r.excluded_share:.3%}{' FLAGGED' if r.flagged else ''}]" if r.n_excluded else ""
            lines.append(f"  {k:<28} {fmt_pp(r.estimate):>7} {fmt_ci(r.ci_low, r.ci_high):<16} {r.symbol}{flag}")
        if self.stages is not None:
            for r in self.stages[self.stages["split"] == split].itertuples():
                lines.append(
                    f"  {r.solver} solver on {r.n_states} reached states: bridge {fmt_pct(r.bridge_rate)}% x "
                    f"finish {fmt_pct(r.finish_rate)}% = Solve {fmt_pct(r.conversion)}%; wins alone on "
                    f"{r.only_this_solver_wins} states"
                )
        c = self.checks[self.checks["split"] == split]
        ok = bool(c["holds"].all())
        lines.append(f"  identities (J=A*C, Eq. 3 paths, Eq. 4 = Eq. 8): {'all hold' if ok else 'FAIL'}"
                     f" (max |diff| {c['abs_diff'].max():.1e})")
        return lines

    def __repr__(self) -> str:  # pragma: no cover - display only
        return f"HandoffResult(splits={self.splits}, n_draws={self.n_draws}, seed={self.seed})"


# ------------------------------------------------------------------- driver
def analyze_handoff(
    episodes: pd.DataFrame,
    *,
    base: str = "SFT",
    treated: str = "RL",
    n_draws: int = 100_000,
    seed: int = 0,
    level: float = 0.95,
    empty_threshold: float = 0.01,
    prespecified: str | None = None,
    chunk: int = 20_000,
    allow_singleton_strata: bool = False,
) -> HandoffResult:
    """Every handoff estimand of every split, with task-stratified paired intervals.

    Parameters
    ----------
    episodes : DataFrame
        One row per task x seed x reacher x solver (see :func:`validate_episodes`).
    base, treated : str
        Labels of the base (SFT) and treated (RL) checkpoints.
    n_draws : int
        Bootstrap resamples (paper profile: 100,000). ``0`` skips intervals.
    seed : int
        Root seed; split ``s`` resamples from ``keyed_seed(seed, "handoff", s)``.
    level : float
        Percentile-interval level (0.95).
    empty_threshold : float
        Stopping threshold of the empty-denominator rule (App. C, 1%): a draw in which a
        ratio's denominator is empty (e.g. a reacher with no arrivals) is excluded from
        that estimand's interval and counted; a share above the threshold flags the
        estimand (``flagged``) and emits a ``RuntimeWarning``.
    prespecified : str, optional
        Boolean column marking a prespecified state set mu_D; adds
        ``delta_solve_prespecified`` = Delta_solve(mu_D) (Sec. 3.2).
    chunk : int
        Resamples per vectorized block (memory ~ chunk x n_tasks).
    allow_singleton_strata : bool
        ``task_type`` sets the bootstrap strata (tasks are resampled within their type);
        a type with fewer than two tasks in a split is an error (its resample never
        varies, so intervals are too narrow) unless this is True; then it is noted in
        ``notes`` and warned.

    Estimands (``estimates.estimand``; fractions)
    ----------------------------------------------
    ``arrival_base/treated`` A_W; ``reach_gap``; ``conversion[W,R]`` C_{W,R};
    ``endpoint[W,R]`` J(W,R) (Eq. 7); ``total_gain``; Eq. 3 path 1
    ``reach_under_treated_solver`` + ``solve_on_base_states``; path 2
    ``reach_under_base_solver`` + ``solve_on_treated_states``; ``interaction`` I
    (Eq. 4); ``interaction_eq8`` (Eq. 8); ``delta_solve_base_states`` /
    ``delta_solve_treated_states`` (same-state gap delta on SFT- / RL-produced
    states); ``solve_all_states[R]`` and ``delta_solve_all_states`` (all reached
    states, Table 2b); ``survivor_interaction`` (reached-only estimand, Sec. 2.4) and
    ``survivor_minus_endpoint`` (paired difference from I, App. C); with ``bridge``:
    ``bridge_rate[R]``, ``finish_rate[R]``, ``bridge_gap``, ``finish_gap``,
    ``bridge_contribution`` + ``finish_contribution`` (= Solve gap exactly).

    Returns
    -------
    HandoffResult

    Raises
    ------
    KeyError, ValueError
        Invalid episodes (see :func:`validate_episodes`), bad parameters, a task type
        with fewer than two tasks (see ``allow_singleton_strata``), or a failed identity
        (J = A C, Eq. 3, Eq. 4 = Eq. 8).
    """
    check_level(level, empty_threshold)
    n_draws = check_draws(n_draws, level, "analyze_handoff")
    df = validate_episodes(episodes, base=base, treated=treated, prespecified=prespecified)
    notes = check_strata(df, "episodes", allow_singleton_strata=allow_singleton_strata,
                         where="analyze_handoff") if n_draws > 0 else []
    assign = assignment_table(df, base=base, treated=treated, validate=False)
    inter = interaction_terms(assign, base=base, treated=treated)
    stages = solve_stages(df, base=base, treated=treated, validate=False) if "bridge" in df.columns else None
    all_stats = episode_task_stats(df, base=base, treated=treated, prespecified=prespecified, validate=False)
    est_frames, type_frames, check_rows = [], [], []
    for split, stats in all_stats.items():
        est, by_type, point = _split_estimates(
            split, stats, sym=_symbols(base, treated), bridge=stages is not None, pre=prespecified is not None,
            n_draws=n_draws, seed=seed, level=level, empty_threshold=empty_threshold, chunk=chunk)
        est_frames.append(est)
        type_frames.append(by_type)
        check_rows += _identity_rows(split, assign, inter, point, base)
    estimates = pd.concat(est_frames, ignore_index=True)
    checks = _identity_checks(check_rows)
    assign, stages = _attach_intervals(assign, stages, estimates, base)
    if n_draws > 0:
        warn_flagged(estimates, "analyze_handoff", empty_threshold)
    params = dict(base=base, treated=treated, n_draws=n_draws, seed=seed, level=level,
                  empty_threshold=empty_threshold, prespecified=prespecified, chunk=chunk,
                  allow_singleton_strata=allow_singleton_strata)
    return HandoffResult(
        assignments=assign, estimates=estimates, by_type=pd.concat(type_frames, ignore_index=True),
        stages=stages, checks=checks, base=base, treated=treated, n_draws=n_draws, seed=seed, level=level,
        empty_threshold=empty_threshold, chunk=chunk, params=params,
        provenance=make_provenance(seed=seed, episodes=df), notes=tuple(notes),
    )


def _split_estimates(split: str, stats: UnitStats, *, sym: Mapping[str, tuple[str, str]], bridge: bool,
                     pre: bool, n_draws: int, seed: int, level: float, empty_threshold: float,
                     chunk: int) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """One split: pooled and per-type estimates with intervals, and the pooled point values."""
    statistic, names, by_type = _flat_statistic(stats, bridge=bridge, pre=pre)
    sums = stats.block_sums()
    with np.errstate(divide="ignore", invalid="ignore"):
        point = statistic(stats.point_counts() @ sums)[0]
    reps = None
    if n_draws > 0:
        reps = run_bootstrap(sums, stats.strata, statistic, n_draws=n_draws,
                             seed_seq=bootstrap_seed(seed, "handoff", split), chunk=chunk)
    q = len(names)
    tab = summarise(names, point[:q], None if reps is None else reps[:, :q],
                    level=level, empty_threshold=empty_threshold)
    tab.insert(0, "split", split)
    tab.insert(2, "symbol", [sym.get(n, (n, ""))[0] for n in names])
    tab.insert(3, "source", [sym.get(n, ("", ""))[1] for n in names])
    tt = summarise([f"{n}@{k}" for n, k in by_type], point[q:], None if reps is None else reps[:, q:],
                   level=level, empty_threshold=empty_threshold)
    tt.insert(0, "split", split)
    tt.insert(1, "task_type", [k for _, k in by_type])
    tt["estimand"] = [n for n, _ in by_type]
    tt.insert(3, "symbol", [sym.get(n, (n, ""))[0] for n, _ in by_type])
    named = stats.named(stats.totals(stats.point_counts())[0])
    n_tasks = {lab: int((stats.strata == k).sum()) for k, lab in enumerate(stats.stratum_labels)}
    n_states = {lab: int(named["arr_b"][k] + named["arr_t"][k]) for k, lab in enumerate(stats.stratum_labels)}
    tt["n_tasks"] = tt["task_type"].map(n_tasks)
    tt["n_states"] = tt["task_type"].map(n_states)
    return tab, tt, dict(zip(names, point[:q]))


def _identity_rows(split: str, assign: pd.DataFrame, inter: pd.DataFrame, pt: Mapping[str, float],
                   base: str) -> list[tuple[str, str, float, float]]:
    """The identities of one split, point estimates computed two ways (rows vs task totals)."""
    rows = []
    arow = inter[inter["split"] == split].iloc[0]
    for r in assign[assign["split"] == split].itertuples():
        w = "base" if r.reacher == base else "treated"
        s = "base" if r.solver == base else "treated"
        ac = r.arrival * r.conversion if r.n_arrived else 0.0
        rows.append((split, f"J({r.reacher},{r.solver}) = A_{r.reacher} C_{{{r.reacher},{r.solver}}} (Eq. 7)",
                     r.endpoint, ac))
        rows.append((split, f"J({r.reacher},{r.solver}) rows = task totals", r.endpoint, pt[f"endpoint[{w},{s}]"]))
    for name, lhs, rhs in (
        ("Eq. 3 path 1 = total gain", arow.reach_under_treated_solver + arow.solve_on_base_states, arow.total_gain),
        ("Eq. 3 path 2 = total gain", arow.reach_under_base_solver + arow.solve_on_treated_states, arow.total_gain),
        ("I = solve(treated states) - solve(base states)", arow.solve_terms_difference, arow.interaction),
        ("I = reach(treated solver) - reach(base solver)", arow.reach_terms_difference, arow.interaction),
        ("I (Eq. 4) = Eq. 8", arow.interaction_eq8, arow.interaction),
        ("I rows = task totals", arow.interaction, pt["interaction"]),
    ):
        rows.append((split, name, lhs, rhs))
    return rows


def _identity_checks(rows: list[tuple[str, str, float, float]]) -> pd.DataFrame:
    """The checks table; ``ValueError`` naming the first identity that fails."""
    checks = pd.DataFrame(rows, columns=["split", "identity", "lhs", "rhs"])
    checks["abs_diff"] = (checks["lhs"] - checks["rhs"]).abs()
    checks["holds"] = checks["abs_diff"] <= IDENTITY_TOL
    if not checks["holds"].all():
        bad = checks[~checks["holds"]].iloc[0]
        raise ValueError(f"handoff identity fails in split {bad.split!r}: {bad.identity}: {bad.lhs!r} != {bad.rhs!r}")
    return checks


def _attach_intervals(assign: pd.DataFrame, stages: pd.DataFrame | None, estimates: pd.DataFrame,
                      base: str) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Copy the estimands' percentile bounds onto the assignment and stage tables."""
    est_idx = estimates.set_index(["split", "estimand"])

    def bounds(table: pd.DataFrame, col: str, name) -> None:
        rows = [est_idx.loc[(r.split, name(r))] for r in table.itertuples()]
        table[f"{col}_low"] = [row["ci_low"] for row in rows]
        table[f"{col}_high"] = [row["ci_high"] for row in rows]

    def role(label: str) -> str:
        return "base" if label == base else "treated"

    assign = assign.copy()
    bounds(assign, "arrival", lambda r: f"arrival_{role(r.reacher)}")
    bounds(assign, "conversion", lambda r: f"conversion[{role(r.reacher)},{role(r.solver)}]")
    bounds(assign, "endpoint", lambda r: f"endpoint[{role(r.reacher)},{role(r.solver)}]")
    if stages is not None:
        stages = stages.copy()
        bounds(stages, "bridge_rate", lambda r: f"bridge_rate[{role(r.solver)}]")
        bounds(stages, "finish_rate", lambda r: f"finish_rate[{role(r.solver)}]")
        bounds(stages, "conversion", lambda r: f"solve_all_states[{role(r.solver)}]")
    return assign, stages
