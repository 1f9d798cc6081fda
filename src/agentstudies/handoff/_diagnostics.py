"""Appendix C diagnostics: early-action budget, non-arrival failure modes, loop statistics.

Source: Appendix C ("Early-action budget diagnostic", Table 7, Figure 10; "Non-arrival
failure modes"), Figure 2 (cumulative arrival by reacher action), Table 2a (mean actions
to arrival or stopping).

Failure-mode audit
------------------
Every trajectory that never reaches the frontier gets exactly one label, assigned by the
first rule that fires in this precedence order (all shares are over the trajectory's
own steps):

1. ``format_collapse``     share of invalid actions >= ``invalid_share`` (0.5). An action is
                           invalid if the steps table's optional ``admissible`` column is
                           False, or else if ``invalid_action(action)`` is True (default:
                           empty / missing action text).
2. ``loop``                share of *stuck repeats* >= ``loop_share`` (0.5): steps whose action
                           text was already taken earlier in the trajectory and that did not
                           reach a new state (``state_changed`` False or ``revisited`` True) -
                           the agent repeats actions without changing the state.
3. ``wander``              share of navigation actions (``navigation`` regex, default
                           ``^go to``) >= ``wander_share`` (0.5): moves among places without
                           being stuck.
4. ``never_picks_target``  no action satisfies ``pickup_rule(action, target)`` (default: the
                           action starts with "take"/"pick up" and names the trajectory's
                           ``target`` object when the trajectories table has that column).
5. ``missed_subgoal``      the target was picked up but a subgoal required by the task type
                           was never attempted: for every entry ``(substring, patterns)`` of
                           ``subgoals`` whose substring occurs in ``task_type``, each regex in
                           ``patterns`` must match some action (default: heat/cool/clean/
                           use-a-lamp for the ALFWorld types).
6. ``budget_exhausted``    none of the above and the reacher used its whole budget
                           (``n_actions >= budget``).
7. ``other``               everything else (e.g. stopped early without arriving; zero steps).

The audit is descriptive (the paper makes no mechanism claim). Loop statistics are
step-level shares pooled over the audited trajectories' steps, plus the median number of
distinct action texts per trajectory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.handoff._boot import (
    HandoffResultBase,
    bootstrap_seed,
    build_unit_stats,
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
from agentstudies.handoff._validate import check_strata, validate_steps, validate_trajectories
from agentstudies.results import PaperTables, make_provenance, tidy_rows

__all__ = [
    "BudgetDiagnostic",
    "DEFAULT_SUBGOALS",
    "FAILURE_MODES",
    "FailureAudit",
    "audit_non_arrivals",
    "budget_diagnostic",
    "default_invalid_action",
    "default_pickup_rule",
    "loop_statistics",
]

#: The seven mutually exclusive non-arrival labels, in precedence order.
FAILURE_MODES = (
    "format_collapse", "loop", "wander", "never_picks_target", "missed_subgoal",
    "budget_exhausted", "other",
)

#: Required subgoal actions by task-type substring (ALFWorld type names).
DEFAULT_SUBGOALS: Mapping[str, tuple[str, ...]] = {
    "heat": (r"^\s*heat\b",),
    "cool": (r"^\s*cool\b",),
    "clean": (r"^\s*clean\b",),
    "light": (r"^\s*use\b",),
}


def default_pickup_rule(action: str | None, target: str | None) -> bool:
    """True if ``action`` picks something up ("take ..." / "pick up ..."), and names
    ``target`` (whole word, case-insensitive) when a target is known."""
    if not action:
        return False
    a = action.strip().lower()
    if not re.match(r"^(take|pick up)\b", a):
        return False
    if target is None or (isinstance(target, float) and np.isnan(target)) or str(target) == "":
        return True
    return re.search(r"\b" + re.escape(str(target).lower()) + r"\b", a) is not None


def default_invalid_action(action: str | None) -> bool:
    """True for a missing or empty action text (format collapse)."""
    return action is None or (isinstance(action, float) and np.isnan(action)) or str(action).strip() == ""


# ------------------------------------------------------------------- budget
@dataclass(frozen=True, eq=False, kw_only=True)
class BudgetDiagnostic(PaperTables, HandoffResultBase):
    """Arrival within early-action budgets (Table 7, Figure 10) and by action (Figure 2).

    ``to_frame()`` is the tidy table: stratum ``split``, estimands
    ``arrival[<reacher>@<budget>]`` and the contrasts (``<treated>@b - <base>@b`` and the
    cross-budget ones), two-sided percentile intervals, ``n`` = trajectories per
    reacher. ``table(7)`` is the per-budget arrival layout (``PAPER = "handoff"``).

    Attributes
    ----------
    levels : DataFrame
        ``split, reacher, budget, n, arrival, ci_low, ci_high`` - share of (task, seed)
        trajectories with ``arrival_step <= budget``.
    contrasts : DataFrame
        ``split, contrast, estimate, ci_low, ci_high, ...``: treated - base at each budget
        and the cross-budget contrasts (default treated at the smallest budget minus base
        at the largest).
    curve : DataFrame
        ``split, reacher, action, n, cumulative_arrival`` for action = 0..run budget.
    reach : DataFrame
        ``split, reacher, n, arrival, mean_actions`` (Table 2a: mean actions to arrival
        or stopping = arrival_step if arrived, else n_actions).
    """

    PAPER = "handoff"

    levels: pd.DataFrame
    contrasts: pd.DataFrame
    curve: pd.DataFrame
    reach: pd.DataFrame
    budgets: tuple[int, ...]

    title = "Frontier arrival by early-action budget"

    def _tidy(self) -> pd.DataFrame:
        lv = self.levels.assign(
            estimand=[f"arrival[{r}@{b}]" for r, b in zip(self.levels["reacher"], self.levels["budget"])],
            estimate=self.levels["arrival"], n_draws=self.n_draws,
        )[["split", "estimand", "estimate", "ci_low", "ci_high", "n", "n_draws"]]
        per_split = self.levels.groupby("split")["n"].first()
        ct = self.contrasts.rename(columns={"contrast": "estimand"})
        ct = tidy_estimates(ct, level=self.level, n=0).assign(n=ct["split"].map(per_split).to_numpy())
        lv["side"] = "two-sided" if self.n_draws > 0 else ""
        lv["level"] = self.level
        return tidy_rows(pd.concat([lv, ct], ignore_index=True), strata=("split",))

    def _table_7(self) -> pd.DataFrame:
        """Arrival within each budget per split and reacher (Table 7 layout)."""
        return self.levels.copy()

    def summary(self) -> str:
        lines = [f"Frontier arrival by early-action budget ({self.n_draws:,} task-stratified paired resamples, "
                 f"{self.level:.0%} intervals)"]
        for split in sorted(self.levels["split"].unique()):
            lines.append(f"== split {split} ==")
            lv = self.levels[self.levels["split"] == split]
            for r in lv.itertuples():
                lines.append(f"  {r.reacher:>6} within {r.budget:>3} actions: {fmt_pct(r.arrival):>5}% "
                             f"{fmt_ci(r.ci_low, r.ci_high)}")
            for r in self.contrasts[self.contrasts["split"] == split].itertuples():
                lines.append(f"  {r.contrast:<22} {fmt_pp(r.estimate):>6} {fmt_ci(r.ci_low, r.ci_high)}")
        return "\n".join(lines)


def budget_diagnostic(
    trajectories: pd.DataFrame,
    *,
    budgets: Sequence[int] = (8, 16, 48),
    cross: Sequence[tuple[str, int, str, int]] | None = None,
    run_budget: int | None = None,
    base: str = "SFT",
    treated: str = "RL",
    n_draws: int = 100_000,
    seed: int = 0,
    level: float = 0.95,
    chunk: int = 20_000,
    allow_singleton_strata: bool = False,
) -> BudgetDiagnostic:
    """Arrival within early-action budgets with task-stratified paired intervals (App. C).

    Parameters
    ----------
    trajectories : one row per task x seed x reacher (:func:`validate_trajectories`).
    budgets : reacher action budgets ``b``; arrival within ``b`` = arrived and
        ``arrival_step <= b``.
    cross : ``(reacher_1, b_1, reacher_2, b_2)`` contrasts ``A_1(b_1) - A_2(b_2)``;
        default ``[(treated, min(budgets), base, max(budgets))]`` (RL at 8 vs SFT at 48).
    run_budget : the budget the trajectories were run with (default: the largest
        ``n_actions`` in the split). Arrival beyond it was never observed.
    n_draws, seed, level, chunk : as in :func:`analyze_handoff`; split ``s`` resamples
        from ``keyed_seed(seed, "budget", s)``.

    Raises
    ------
    ValueError
        A budget that is not a positive integer or exceeds ``run_budget``; unknown reacher
        label or budget in ``cross``; invalid trajectories.
    """
    check_level(level, 0.0)
    n_draws = check_draws(n_draws, level, "budget_diagnostic")
    df = validate_trajectories(trajectories, base=base, treated=treated)
    if n_draws > 0:  # task_type sets the bootstrap strata (see analyze_handoff)
        check_strata(df, "trajectories", allow_singleton_strata=allow_singleton_strata,
                     where="budget_diagnostic")
    budgets, cross = _check_budgets(budgets, cross, base, treated)
    parts = [_budget_split(split, g, budgets=budgets, cross=cross, run_budget=run_budget, base=base,
                           treated=treated, n_draws=n_draws, seed=seed, level=level, chunk=chunk)
             for split, g in df.groupby("split", sort=True)]
    lv, con, curve, reach = (pd.concat([p[i] for p in parts], ignore_index=True) for i in range(4))
    return BudgetDiagnostic(
        levels=lv, contrasts=con, curve=curve, reach=reach, base=base, treated=treated,
        budgets=budgets, n_draws=n_draws, seed=seed, level=level,
        params=dict(budgets=list(budgets), cross=[list(c) for c in cross], run_budget=run_budget,
                    base=base, treated=treated, n_draws=n_draws, seed=seed, level=level, chunk=chunk),
        provenance=make_provenance(seed=seed, trajectories=df),
    )


def _check_budgets(budgets: Sequence[int], cross: Sequence[tuple[str, int, str, int]] | None, base: str,
                   treated: str) -> tuple[tuple[int, ...], list[tuple[str, int, str, int]]]:
    """Budgets as distinct positive ints and the cross contrasts (default: treated at the
    smallest budget vs base at the largest); ``ValueError`` naming a bad entry."""
    budgets = tuple(int(b) for b in budgets)
    if not budgets or any(b < 1 for b in budgets) or len(set(budgets)) != len(budgets):
        raise ValueError(f"budgets must be distinct positive integers; got {budgets}")
    cross = [(treated, min(budgets), base, max(budgets))] if cross is None else list(cross)
    for c in cross:
        if len(c) != 4 or c[0] not in (base, treated) or c[2] not in (base, treated) or c[1] not in budgets or c[3] not in budgets:
            raise ValueError(f"cross contrast {c!r} must be (reacher, budget, reacher, budget) with reachers in "
                             f"{[base, treated]} and budgets in {list(budgets)}")
    return budgets, cross


def _budget_split(split: str, g: pd.DataFrame, *, budgets: tuple[int, ...], cross: list, run_budget: int | None,
                  base: str, treated: str, n_draws: int, seed: int, level: float,
                  chunk: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One split: (levels, contrasts, curve, reach) rows of :class:`BudgetDiagnostic`."""
    code = {base: "b", treated: "t"}
    rb = int(g["n_actions"].max()) if run_budget is None else int(run_budget)
    if max(budgets) > rb:
        raise ValueError(f"budget {max(budgets)} exceeds the run budget {rb} of split {split!r}: arrival "
                         "beyond the recorded actions is unobserved")
    step = g["arrival_step"].astype("Float64").fillna(np.inf).to_numpy(float)
    arr = g["arrived"].to_numpy(bool)
    contrib = pd.DataFrame({"task_id": g["task_id"].to_numpy(), "task_type": g["task_type"].to_numpy()})
    isw = {w: (g["reacher"] == lab).to_numpy(int) for lab, w in code.items()}
    contrib["n"] = isw["b"]
    cols = ["n"]
    for b in budgets:
        for w in "bt":
            contrib[f"a_{w}_{b}"] = isw[w] * (arr & (step <= b))
            cols.append(f"a_{w}_{b}")
    stats = build_unit_stats(contrib, "task_id", "task_type", cols)
    names = [f"arrival[{lab}@{b}]" for b in budgets for lab in (base, treated)]
    con_names = [f"{treated}@{b} - {base}@{b}" for b in budgets] + [f"{a}@{x} - {c}@{y}" for a, x, c, y in cross]
    m = len(cols)

    def statistic(totals):
        T = stats.named(totals.reshape(totals.shape[0], stats.n_strata, m).sum(axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            lev = {(w, b): T[f"a_{w}_{b}"] / T["n"] for b in budgets for w in "bt"}
        out = [lev[(code[lab], b)] for b in budgets for lab in (base, treated)]
        out += [lev[("t", b)] - lev[("b", b)] for b in budgets]
        out += [lev[(code[a], x)] - lev[(code[c], y)] for a, x, c, y in cross]
        return np.column_stack(out)

    sums = stats.block_sums()
    point = statistic(stats.point_counts() @ sums)[0]
    reps = None
    if n_draws > 0:
        reps = run_bootstrap(sums, stats.strata, statistic, n_draws=n_draws,
                             seed_seq=bootstrap_seed(seed, "budget", split), chunk=chunk)
    tab = summarise(names + con_names, point, reps, level=level, empty_threshold=1.0)
    n_traj = int(stats.values[:, 0].sum())
    lv_rows = []
    for i, b in enumerate(budgets):
        for j, lab in enumerate((base, treated)):
            r = tab.iloc[2 * i + j]
            lv_rows.append(dict(split=split, reacher=lab, budget=b, n=n_traj, arrival=r.estimate,
                                ci_low=r.ci_low, ci_high=r.ci_high))
    ct = tab.iloc[len(names):].rename(columns={"estimand": "contrast"}).copy()
    ct.insert(0, "split", split)
    curve_rows, reach_rows = [], []
    for lab in (base, treated):
        gg = g[g["reacher"] == lab]
        st = gg["arrival_step"].astype("Float64").fillna(np.inf).to_numpy(float)
        a = gg["arrived"].to_numpy(bool)
        for t in range(rb + 1):
            curve_rows.append(dict(split=split, reacher=lab, action=t, n=len(gg),
                                   cumulative_arrival=float((a & (st <= t)).mean())))
        acts = np.where(a, gg["arrival_step"].astype("Float64").fillna(0).to_numpy(float),
                        gg["n_actions"].to_numpy(float))
        reach_rows.append(dict(split=split, reacher=lab, n=len(gg), arrival=float(a.mean()),
                               mean_actions=float(acts.mean())))
    return pd.DataFrame(lv_rows), ct.reset_index(drop=True), pd.DataFrame(curve_rows), pd.DataFrame(reach_rows)


# ------------------------------------------------------------ failure modes
def _trajectory_features(
    steps: pd.DataFrame,
    traj: pd.DataFrame,
    *,
    invalid_action: Callable[[str | None], bool],
    navigation: str,
    pickup_rule: Callable[[str | None, str | None], bool],
    subgoals: Mapping[str, Sequence[str]],
) -> pd.DataFrame:
    nav_re = re.compile(navigation, flags=re.IGNORECASE)
    sub_re = {k: [re.compile(p, flags=re.IGNORECASE) for p in v] for k, v in subgoals.items()}
    keys = ["split", "task_id", "seed", "reacher"]
    groups = dict(tuple(steps.groupby(keys, sort=False)))
    has_adm = "admissible" in steps.columns
    rows = []
    for t in traj.itertuples(index=False):
        k = (t.split, t.task_id, t.seed, t.reacher)
        g = groups.get(k)
        target = getattr(t, "target", None)
        if g is None or len(g) == 0:
            rows.append(dict(n_steps=0, invalid_frac=np.nan, loop_frac=np.nan, nav_frac=np.nan,
                             picked_target=False, missing_subgoals=""))
            continue
        acts = list(g["action"])
        if has_adm:
            invalid = ~g["admissible"].to_numpy(bool)
        else:
            invalid = np.array([bool(invalid_action(a)) for a in acts])
        seen: set = set()
        stuck = np.zeros(len(acts), dtype=bool)
        no_new = (~g["state_changed"].to_numpy(bool)) | g["revisited"].to_numpy(bool)
        for i, a in enumerate(acts):
            stuck[i] = (a in seen) and no_new[i]
            seen.add(a)
        nav = np.array([bool(a) and nav_re.search(str(a)) is not None for a in acts])
        picked = any(pickup_rule(a, target) for a in acts)
        missing = []
        for sub, pats in sub_re.items():
            if sub.lower() in str(t.task_type).lower():
                for p, raw in zip(pats, subgoals[sub]):
                    if not any(a and p.search(str(a)) for a in acts):
                        missing.append(raw)
        rows.append(dict(n_steps=len(acts), invalid_frac=invalid.mean(), loop_frac=stuck.mean(),
                         nav_frac=nav.mean(), picked_target=picked, missing_subgoals="; ".join(missing)))
    return pd.DataFrame(rows, index=traj.index)


def _label(f: pd.Series, n_actions: int, budget: int, invalid_share, loop_share, wander_share) -> str:
    if f["n_steps"] == 0:
        return "other"
    if f["invalid_frac"] >= invalid_share:
        return "format_collapse"
    if f["loop_frac"] >= loop_share:
        return "loop"
    if f["nav_frac"] >= wander_share:
        return "wander"
    if not f["picked_target"]:
        return "never_picks_target"
    if f["missing_subgoals"]:
        return "missed_subgoal"
    if n_actions >= budget:
        return "budget_exhausted"
    return "other"


def loop_statistics(
    trajectories: pd.DataFrame,
    steps: pd.DataFrame,
    *,
    population: str = "non_arrival",
    base: str = "SFT",
    treated: str = "RL",
) -> pd.DataFrame:
    """Step-level loop statistics per split and reacher (App. C).

    ``repeat_previous_share`` (mean of ``repeated_action``), ``revisit_share`` (mean of
    ``revisited``), ``unchanged_share`` (mean of not ``state_changed``), pooled over the
    steps of the trajectories in ``population`` (``"non_arrival"``, the paper's choice, or
    ``"all"``); ``median_distinct_actions`` = median over those trajectories of the
    number of distinct action texts.

    Raises
    ------
    ValueError
        Unknown ``population``; invalid tables.
    """
    if population not in ("non_arrival", "all"):
        raise ValueError(f"population must be 'non_arrival' or 'all'; got {population!r}")
    tr = validate_trajectories(trajectories, base=base, treated=treated)
    st = validate_steps(steps, tr, base=base, treated=treated)
    return _loop_stats(tr, st, population, base, treated)


def _loop_stats(tr, st, population, base, treated) -> pd.DataFrame:
    keys = ["split", "task_id", "seed", "reacher"]
    sel = tr if population == "all" else tr[~tr["arrived"]]
    s = st.merge(sel[keys], on=keys, how="inner")
    rows = []
    for split in sorted(tr["split"].unique()):
        for lab in (base, treated):
            ss = s[(s["split"] == split) & (s["reacher"] == lab)]
            ntr = int(((sel["split"] == split) & (sel["reacher"] == lab)).sum())
            distinct = ss.groupby(keys)["action"].nunique()
            # trajectories with no steps count 0 distinct actions
            distinct = list(distinct) + [0] * (ntr - len(distinct))
            rows.append(dict(
                split=split, reacher=lab, population=population, n_trajectories=ntr, n_steps=len(ss),
                repeat_previous_share=float(ss["repeated_action"].mean()) if len(ss) else np.nan,
                revisit_share=float(ss["revisited"].mean()) if len(ss) else np.nan,
                unchanged_share=float((~ss["state_changed"]).mean()) if len(ss) else np.nan,
                median_distinct_actions=float(np.median(distinct)) if ntr else np.nan,
            ))
    return pd.DataFrame(rows)


@dataclass(frozen=True, eq=False, kw_only=True)
class FailureAudit(HandoffResultBase):
    """Non-arrival failure-mode audit (App. C).

    ``to_frame()`` is the tidy table: stratum ``split``, estimands
    ``loop_share[<reacher>]`` and ``loop_share_diff`` (treated - base; two-sided
    intervals from a trajectory-level bootstrap) and ``<mode>_share[<reacher>]`` for the
    other six modes (point shares), ``n`` = non-arrivals audited. ``counts_table()`` is
    the counts layout.

    Attributes
    ----------
    labels : DataFrame
        One row per audited non-arrival trajectory: keys, ``task_type``, ``n_actions``,
        the features (``invalid_frac, loop_frac, nav_frac, picked_target,
        missing_subgoals``) and ``label`` (one of :data:`FAILURE_MODES`).
    counts : DataFrame
        ``split, reacher, label, n, share`` for all seven labels (zeros included).
    step_stats : DataFrame
        :func:`loop_statistics` of the audited trajectories.
    loop_share : DataFrame
        ``split, estimand, estimate, ci_low, ci_high, ...`` for the share of non-arrivals
        labelled ``loop`` per reacher and the treated - base difference, with a
        trajectory-level bootstrap (non-arrival trajectories resampled within reacher).
    """

    labels: pd.DataFrame
    counts: pd.DataFrame
    step_stats: pd.DataFrame
    loop_share: pd.DataFrame

    title = "Non-arrival failure modes"

    def _tidy(self) -> pd.DataFrame:
        per = self.counts.groupby(["split", "reacher"])["n"].sum()
        n_of = {f"loop_share[{lab}]": lab for lab in (self.base, self.treated)}
        loop = tidy_estimates(self.loop_share, level=self.level, n=0)
        loop["n"] = [int(per.get((s, n_of[e]), 0)) if e in n_of else int(per.get((s, self.base), 0) + per.get((s, self.treated), 0))
                     for s, e in zip(loop["split"], loop["estimand"])]
        c = self.counts[self.counts["label"] != "loop"]
        modes = pd.DataFrame({
            "split": c["split"], "estimand": [f"{m}_share[{r}]" for m, r in zip(c["label"], c["reacher"])],
            "estimate": c["share"], "n": [int(per[(s, r)]) for s, r in zip(c["split"], c["reacher"])],
            "level": self.level, "n_draws": 0,
        })
        return tidy_rows(pd.concat([loop, modes], ignore_index=True), strata=("split",))

    def counts_table(self) -> pd.DataFrame:
        """Counts and shares of the seven labels per split and reacher."""
        return self.counts.copy()

    def summary(self) -> str:
        lines = ["Non-arrival failure modes (precedence: " + " > ".join(FAILURE_MODES) + ")"]
        for split in sorted(self.counts["split"].unique()):
            lines.append(f"== split {split} ==")
            c = self.counts[self.counts["split"] == split]
            for lab in (self.base, self.treated):
                cc = c[(c["reacher"] == lab) & (c["n"] > 0)]
                tot = int(c.loc[c["reacher"] == lab, "n"].sum())
                lines.append(f"  {lab}: {tot} non-arrivals: " + ", ".join(f"{r.label} {r.n}" for r in cc.itertuples()))
            for r in self.step_stats[self.step_stats["split"] == split].itertuples():
                lines.append(
                    f"  {r.reacher}: repeats previous action {fmt_pct(r.repeat_previous_share)}%, revisits "
                    f"{fmt_pct(r.revisit_share)}%, unchanged state {fmt_pct(r.unchanged_share)}%, median distinct "
                    f"actions {r.median_distinct_actions:g}"
                )
            d = self.loop_share[(self.loop_share["split"] == split) & (self.loop_share["estimand"] == "loop_share_diff")]
            if len(d):
                r = d.iloc[0]
                lines.append(f"  loop share {self.treated} - {self.base}: {fmt_pp(r.estimate)} {fmt_ci(r.ci_low, r.ci_high)}")
        return "\n".join(lines)


def audit_non_arrivals(
    trajectories: pd.DataFrame,
    steps: pd.DataFrame,
    *,
    base: str = "SFT",
    treated: str = "RL",
    budget: int | None = None,
    invalid_share: float = 0.5,
    loop_share: float = 0.5,
    wander_share: float = 0.5,
    navigation: str = r"^\s*go to\b",
    pickup_rule: Callable[[str | None, str | None], bool] = default_pickup_rule,
    subgoals: Mapping[str, Sequence[str]] | None = None,
    invalid_action: Callable[[str | None], bool] = default_invalid_action,
    n_draws: int = 100_000,
    seed: int = 0,
    level: float = 0.95,
    empty_threshold: float = 0.01,
    chunk: int = 20_000,
) -> FailureAudit:
    """Label every non-arrival trajectory with one of seven failure modes (App. C).

    See the module docstring for the rules and their precedence. ``budget`` is the
    reacher's early-action budget (default: the largest ``n_actions`` of the split);
    ``subgoals`` defaults to :data:`DEFAULT_SUBGOALS`; ``pickup_rule(action, target)``
    receives the trajectories' ``target`` column when present (else ``None``).
    ``n_draws, seed, level, empty_threshold, chunk`` as in :func:`analyze_handoff`
    (split ``s`` resamples from ``keyed_seed(seed, "audit", s)``).

    Returns
    -------
    FailureAudit (labels, counts, step statistics, loop-share difference with a
    trajectory-level bootstrap interval: non-arrival trajectories are resampled with
    replacement within each reacher, ``n_draws`` draws).

    Raises
    ------
    ValueError
        Thresholds outside (0, 1], a bad regex, invalid tables (see
        :func:`validate_steps`), or a non-arrival trajectory whose steps are not all
        listed (each needs ``n_actions`` steps).
    """
    check_level(level, empty_threshold)
    n_draws = check_draws(n_draws, level, "audit_non_arrivals")
    subgoals = _check_audit_rules(invalid_share, loop_share, wander_share, navigation, subgoals)
    tr = validate_trajectories(trajectories, base=base, treated=treated)
    st = validate_steps(steps, tr, base=base, treated=treated)
    non = _non_arrivals(tr, st)
    labels = _label_non_arrivals(tr, st, non, budget=budget, invalid_share=invalid_share, loop_share=loop_share,
                                 wander_share=wander_share, navigation=navigation, pickup_rule=pickup_rule,
                                 subgoals=subgoals, invalid_action=invalid_action)
    splits = sorted(tr["split"].unique())
    loop_tab = pd.concat([_loop_share_split(split, labels, base=base, treated=treated, n_draws=n_draws, seed=seed,
                                            level=level, empty_threshold=empty_threshold, chunk=chunk)
                          for split in splits], ignore_index=True)
    if n_draws > 0:
        warn_flagged(loop_tab, "audit_non_arrivals", empty_threshold)
    return FailureAudit(
        labels=labels, counts=_mode_counts(labels, splits, base, treated),
        step_stats=_loop_stats(tr, st, "non_arrival", base, treated), loop_share=loop_tab, base=base,
        treated=treated, n_draws=n_draws, seed=seed, level=level,
        params=dict(budget=budget, invalid_share=invalid_share, loop_share=loop_share, wander_share=wander_share,
                    navigation=navigation, subgoals={k: list(v) for k, v in subgoals.items()},
                    pickup_rule=getattr(pickup_rule, "__name__", repr(pickup_rule)),
                    invalid_action=getattr(invalid_action, "__name__", repr(invalid_action)),
                    n_draws=n_draws, seed=seed, level=level, chunk=chunk),
        provenance=make_provenance(seed=seed, steps=st),
    )


def _check_audit_rules(invalid_share: float, loop_share: float, wander_share: float, navigation: str,
                       subgoals: Mapping[str, Sequence[str]] | None) -> dict[str, Sequence[str]]:
    """Thresholds in (0, 1] and compilable regexes; returns the subgoals (default filled in)."""
    for name, v in (("invalid_share", invalid_share), ("loop_share", loop_share), ("wander_share", wander_share)):
        if not (0 < v <= 1):
            raise ValueError(f"{name} must lie in (0, 1]; got {v!r}")
    try:
        re.compile(navigation)
    except re.error as exc:
        raise ValueError(f"navigation is not a valid regex: {navigation!r} ({exc})") from exc
    subgoals = dict(DEFAULT_SUBGOALS if subgoals is None else subgoals)
    for k, pats in subgoals.items():
        if isinstance(pats, str):
            raise ValueError(f"subgoals[{k!r}] must be a sequence of regexes, not a single string")
        for p in pats:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"subgoals[{k!r}] has an invalid regex {p!r} ({exc})") from exc
    return subgoals


def _non_arrivals(tr: pd.DataFrame, st: pd.DataFrame) -> pd.DataFrame:
    """The non-arrival trajectories; ``ValueError`` if one does not list all its steps."""
    keys = ["split", "task_id", "seed", "reacher"]
    non = tr[~tr["arrived"]].reset_index(drop=True)
    have = st.groupby(keys).size().rename("n_steps_listed").reset_index()
    chk = non.merge(have, on=keys, how="left")
    chk["n_steps_listed"] = chk["n_steps_listed"].fillna(0).astype(int)
    wrong = chk["n_steps_listed"] != chk["n_actions"]
    if wrong.any():
        r = chk[wrong].iloc[0]
        raise ValueError(
            f"steps: non-arrival trajectory (split={r.split!r}, task_id={r.task_id!r}, seed={r.seed}, "
            f"reacher={r.reacher!r}) lists {r.n_steps_listed} steps but n_actions={r.n_actions}; the audit "
            f"needs every action of every non-arrival ({int(wrong.sum())} trajectories affected)"
        )
    return non


def _label_non_arrivals(tr: pd.DataFrame, st: pd.DataFrame, non: pd.DataFrame, *, budget: int | None,
                        invalid_share: float, loop_share: float, wander_share: float, navigation: str,
                        pickup_rule: Callable, subgoals: Mapping[str, Sequence[str]],
                        invalid_action: Callable) -> pd.DataFrame:
    """Features and the first-firing label of every non-arrival (module docstring rules)."""
    keys = ["split", "task_id", "seed", "reacher"]
    feats = _trajectory_features(st, non, invalid_action=invalid_action, navigation=navigation,
                                 pickup_rule=pickup_rule, subgoals=subgoals)
    labels = pd.concat([non[keys + ["task_type", "n_actions"]], feats], axis=1)
    budgets = {s: int(g["n_actions"].max()) if budget is None else int(budget) for s, g in tr.groupby("split")}
    labels["label"] = [
        _label(f, int(n), budgets[s], invalid_share, loop_share, wander_share)
        for (_, f), n, s in zip(feats.iterrows(), labels["n_actions"], labels["split"])
    ]
    return labels


def _mode_counts(labels: pd.DataFrame, splits: Sequence[str], base: str, treated: str) -> pd.DataFrame:
    """``split, reacher, label, n, share`` for all seven labels (zeros included)."""
    rows = []
    for split in splits:
        for lab in (base, treated):
            sel = labels[(labels["split"] == split) & (labels["reacher"] == lab)]
            for mode in FAILURE_MODES:
                n = int((sel["label"] == mode).sum())
                rows.append(dict(split=split, reacher=lab, label=mode, n=n, share=n / len(sel) if len(sel) else np.nan))
    return pd.DataFrame(rows)


def _loop_share_split(split: str, labels: pd.DataFrame, *, base: str, treated: str, n_draws: int, seed: int,
                      level: float, empty_threshold: float, chunk: int) -> pd.DataFrame:
    """Loop share per reacher and its difference in one split, with a trajectory-level
    bootstrap (non-arrivals resampled within reacher)."""
    sel = labels[labels["split"] == split].copy()
    sel["unit"] = np.arange(len(sel))
    sel["is_loop"] = (sel["label"] == "loop").astype(int)
    sel["one"] = 1
    names = [f"loop_share[{base}]", f"loop_share[{treated}]", "loop_share_diff"]
    present = [lab for lab in (base, treated) if (sel["reacher"] == lab).any()]
    if len(present) < 2:
        est = np.full(3, np.nan)
        for lab in present:
            est[0 if lab == base else 1] = sel.loc[sel["reacher"] == lab, "is_loop"].mean()
        tab = summarise(names, est, None, level=level, empty_threshold=empty_threshold)
    else:
        stats = build_unit_stats(sel, "unit", "reacher", ["is_loop", "one"])
        ib = stats.stratum_labels.index(base)
        it = stats.stratum_labels.index(treated)

        def statistic(totals):
            t3 = totals.reshape(totals.shape[0], stats.n_strata, 2)
            sh_b = t3[:, ib, 0] / t3[:, ib, 1]
            sh_t = t3[:, it, 0] / t3[:, it, 1]
            return np.column_stack([sh_b, sh_t, sh_t - sh_b])

        sums = stats.block_sums()
        point = statistic(stats.point_counts() @ sums)[0]
        reps = None
        if n_draws > 0:
            reps = run_bootstrap(sums, stats.strata, statistic, n_draws=n_draws,
                                 seed_seq=bootstrap_seed(seed, "audit", split), chunk=chunk)
        tab = summarise(names, point, reps, level=level, empty_threshold=empty_threshold)
    tab.insert(0, "split", split)
    return tab
