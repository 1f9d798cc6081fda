"""Reach, Solve, endpoint and interaction estimands with task-stratified paired intervals.

Source: "Reach or Solve? Attributing Agentic RL Gains with Checkpoint Handoffs",
Sections 2-3 (Eqs. 2-8), Section 4.1 (inference), Appendix C (retention diagnostic,
Solve by solver action). Notation: reacher ``W`` and solver ``R`` range over the base
(SFT) and treated (RL) checkpoints;

* Reach ``A_W = Pr(Z_W = 1)``: share of (task, seed) trajectories in which reacher W
  arrives at the frontier (Sec. 3.2);
* Solve ``C_{W,R}``: share of W's arrivals that solver R converts into success
  (defined when ``A_W > 0``);
* endpoint ``J(W,R) = A_W C_{W,R}`` (Eq. 7), with non-arrivals kept as failures;
* interaction ``I`` (Eq. 4) = ``A_RL E_{q_RL}[delta] - A_SFT E_{q_SFT}[delta]`` (Eq. 8),
  ``delta(sigma) = V_RL(sigma) - V_SFT(sigma)`` the same-state Solve gap;
* the two telescoping paths of Eq. 3;
* the reached-only ("survivor") estimand ``E_{q_RL}[delta] - E_{q_SFT}[delta]``
  (Sec. 2.4, App. C) and its paired difference from ``I``.

All rates are fractions in [0, 1]; differences are in fraction units (x100 = points).
Rates pool tasks and seeds (empirical means over prespecified tasks and paired seeds,
Sec. 4.1). Intervals: task-level paired bootstrap stratified by task type, keeping every
seed and all four assignments of a sampled task together, percentile intervals
(default 100,000 resamples, 95%).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from agentstudies._tolerances import EXACT_TOL, IDENTITY_TOL
from agentstudies.handoff._boot import (
    HandoffResultBase,
    UnitStats,
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
from agentstudies.results import PaperTables, make_provenance, renamed_keyword, tidy_rows
from agentstudies.handoff._validate import check_strata, validate_episodes

__all__ = [
    "HandoffResult",
    "analyze_handoff",
    "assignment_table",
    "episode_task_stats",
    "handoff_replicates",
    "interaction_terms",
    "solve_stages",
]

_ROLES = ("base", "treated")
_CODE = {"base": "b", "treated": "t"}
#: Estimands reported per task type (Figure 8 and the per-type rows of Table 6).
BY_TYPE_ESTIMANDS = (
    "arrival_base", "arrival_treated", "reach_gap",
    "solve_all_states[base]", "solve_all_states[treated]", "delta_solve_all_states",
    "interaction",
)


# ------------------------------------------------------------------ statistics
def _state_frame(df: pd.DataFrame, base: str, treated: str, prespecified: str | None) -> pd.DataFrame:
    """One row per reached-or-not state (split, task, seed, reacher) with 0/1 contributions."""
    d = df.assign(
        W=np.where(df["reacher"] == treated, "t", "b"),
        R=np.where(df["solver"] == treated, "t", "b"),
        solved01=df["solved"].fillna(False).astype(bool).astype(int),
    )
    has_bridge = "bridge" in d.columns
    if has_bridge:
        d["bridge01"] = d["bridge"].fillna(False).astype(bool).astype(int)
    idx = ["split", "task_id", "task_type", "seed", "W"]
    vals = ["solved01"] + (["bridge01"] if has_bridge else [])
    wide = d.pivot(index=idx, columns="R", values=vals)
    first = d[d["R"] == "b"].set_index(idx)
    st = pd.DataFrame(index=wide.index)
    st["arrived"] = first["arrived"].reindex(wide.index).astype(int)
    if prespecified is not None:
        st["pre"] = first[prespecified].reindex(wide.index).astype(int)
    for r in "bt":
        st[f"solved_{r}"] = wide[("solved01", r)]
        if has_bridge:
            st[f"bridge_{r}"] = wide[("bridge01", r)]
    st = st.reset_index()
    out = st[["split", "task_id", "task_type", "seed", "W"]].copy()
    isw = {w: (st["W"] == w).astype(int) for w in "bt"}
    out["n"] = isw["b"]
    for w in "bt":
        out[f"arr_{w}"] = isw[w] * st["arrived"]
        for r in "bt":
            o = "t" if r == "b" else "b"
            out[f"s_{w}{r}"] = isw[w] * st[f"solved_{r}"]
            out[f"o_{w}{r}"] = isw[w] * st[f"solved_{r}"] * (1 - st[f"solved_{o}"])
            if has_bridge:
                out[f"g_{w}{r}"] = isw[w] * st[f"bridge_{r}"]
                out[f"gs_{w}{r}"] = isw[w] * st[f"bridge_{r}"] * st[f"solved_{r}"]
            if prespecified is not None:
                out[f"ps_{w}{r}"] = isw[w] * st["pre"] * st[f"solved_{r}"]
        if prespecified is not None:
            out[f"p_{w}"] = isw[w] * st["pre"]
    return out


def episode_task_stats(
    episodes: pd.DataFrame,
    *,
    base: str = "SFT",
    treated: str = "RL",
    prespecified: str | None = None,
    validate: bool = True,
) -> dict[str, UnitStats]:
    """Per-task sufficient statistics of an ``episodes`` table, one entry per split.

    Returns ``{split: UnitStats}``; ``values`` is (n_tasks, m) with columns

    ``n``            (task, seed) trajectories of the task (per reacher)
    ``arr_W``        arrivals of reacher W (``W`` = ``b`` base / ``t`` treated)
    ``s_WR``         successes of solver R on W's trajectories (endpoint = 1)
    ``o_WR``         W-produced states won by solver R only
    ``g_WR, gs_WR``  bridge first actions, and bridge-then-success (if ``bridge``)
    ``p_W, ps_WR``   prespecified reached states and their successes (if given)

    and ``strata`` the task type code (the bootstrap strata). Tasks are sorted by id.
    Every estimand of :func:`analyze_handoff` is a ratio of sums of these columns.
    """
    df = validate_episodes(episodes, base=base, treated=treated, prespecified=prespecified) if validate else episodes
    states = _state_frame(df, base, treated, prespecified)
    cols = [c for c in states.columns if c not in ("split", "task_id", "task_type", "seed", "W")]
    out = {}
    for split, g in states.groupby("split", sort=True):
        out[str(split)] = build_unit_stats(g, "task_id", "task_type", cols)
    return out


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b, out=np.full(np.broadcast(a, b).shape, np.nan), where=np.asarray(b) > 0)


def _rates(T: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The named rates every estimand is built from, computed once from summed statistics.

    ``A_w`` Reach of reacher w (Sec. 3.2); ``C_wr`` Solve of solver r on w's arrivals;
    ``J_wr`` endpoint (Eq. 7); ``S_r`` solver r on all reached states (Table 2b); with
    ``w, r`` in ``b`` (base) / ``t`` (treated). Arrays of any common shape (NaN where a
    denominator is empty). Used by the overall, per-type and Eq. 9 statistics alike.
    """
    n = T["n"]
    states = T["arr_b"] + T["arr_t"]
    out = {f"A_{w}": _div(T[f"arr_{w}"], n) for w in "bt"}
    for w in "bt":
        for r in "bt":
            out[f"C_{w}{r}"] = _div(T[f"s_{w}{r}"], T[f"arr_{w}"])
            out[f"J_{w}{r}"] = _div(T[f"s_{w}{r}"], n)
    out["S_b"] = _div(T["s_bb"] + T["s_tb"], states)
    out["S_t"] = _div(T["s_bt"] + T["s_tt"], states)
    return out


def _interaction(r: Mapping[str, np.ndarray]) -> np.ndarray:
    """I = [J(t,t) - J(t,b)] - [J(b,t) - J(b,b)] (Eq. 4) from :func:`_rates`."""
    return (r["J_tt"] - r["J_tb"]) - (r["J_bt"] - r["J_bb"])


def _core_estimands(r: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The :data:`BY_TYPE_ESTIMANDS` from :func:`_rates` (overall and per task type)."""
    return {
        "arrival_base": r["A_b"], "arrival_treated": r["A_t"], "reach_gap": r["A_t"] - r["A_b"],
        "solve_all_states[base]": r["S_b"], "solve_all_states[treated]": r["S_t"],
        "delta_solve_all_states": r["S_t"] - r["S_b"], "interaction": _interaction(r),
    }


def _estimands(T: Mapping[str, np.ndarray], *, bridge: bool, pre: bool) -> dict[str, np.ndarray]:
    """Every estimand from summed statistics (arrays of any common shape)."""
    r = _rates(T)
    core = _core_estimands(r)
    J = {k[2:]: v for k, v in r.items() if k.startswith("J_")}
    out: dict[str, np.ndarray] = {k: core[k] for k in ("arrival_base", "arrival_treated", "reach_gap")}
    for w in _ROLES:
        for s in _ROLES:
            out[f"conversion[{w},{s}]"] = r[f"C_{_CODE[w]}{_CODE[s]}"]
    for w in _ROLES:
        for s in _ROLES:
            out[f"endpoint[{w},{s}]"] = J[_CODE[w] + _CODE[s]]
    out["total_gain"] = J["tt"] - J["bb"]
    out["reach_under_treated_solver"] = J["tt"] - J["bt"]
    out["solve_on_base_states"] = J["bt"] - J["bb"]
    out["reach_under_base_solver"] = J["tb"] - J["bb"]
    out["solve_on_treated_states"] = J["tt"] - J["tb"]
    out["interaction"] = core["interaction"]
    d_b = r["C_bt"] - r["C_bb"]
    d_t = r["C_tt"] - r["C_tb"]
    with np.errstate(invalid="ignore"):
        term_t = np.where(T["arr_t"] > 0, r["A_t"] * np.nan_to_num(d_t), 0.0)
        term_b = np.where(T["arr_b"] > 0, r["A_b"] * np.nan_to_num(d_b), 0.0)
    out["interaction_eq8"] = term_t - term_b
    out["delta_solve_base_states"] = d_b
    out["delta_solve_treated_states"] = d_t
    for k in ("solve_all_states[base]", "solve_all_states[treated]", "delta_solve_all_states"):
        out[k] = core[k]
    if pre:
        p = T["p_b"] + T["p_t"]
        out["delta_solve_prespecified"] = _div(T["ps_bt"] + T["ps_tt"] - T["ps_bb"] - T["ps_tb"], p)
    out["survivor_interaction"] = d_t - d_b
    out["survivor_minus_endpoint"] = out["survivor_interaction"] - out["interaction"]
    if bridge:
        out.update(_bridge_estimands(T))
    return out


def _bridge_estimands(T: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Bridge / finishing rates per solver and the symmetric split of the Solve gap (Table 3)."""
    states = T["arr_b"] + T["arr_t"]
    out: dict[str, np.ndarray] = {}
    for role in _ROLES:
        r = _CODE[role]
        g = T[f"g_b{r}"] + T[f"g_t{r}"]
        gs = T[f"gs_b{r}"] + T[f"gs_t{r}"]
        out[f"bridge_rate[{role}]"] = _div(g, states)
        out[f"finish_rate[{role}]"] = _div(gs, g)
    bt_, bb_ = out["bridge_rate[treated]"], out["bridge_rate[base]"]
    ft_, fb_ = out["finish_rate[treated]"], out["finish_rate[base]"]
    out["bridge_gap"] = bt_ - bb_
    out["finish_gap"] = ft_ - fb_
    # symmetric (Shapley) split of b_t f_t - b_b f_b: exact sum of the two stages
    out["bridge_contribution"] = (bt_ - bb_) * (ft_ + fb_) / 2
    out["finish_contribution"] = (ft_ - fb_) * (bt_ + bb_) / 2
    return out


def _by_type_estimands(T: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The :data:`BY_TYPE_ESTIMANDS` subset of :func:`_estimands` (the same formulas)."""
    return _core_estimands(_rates(T))


def _symbols(base: str, treated: str) -> dict[str, tuple[str, str]]:
    b, t = base, treated
    lab = {"base": b, "treated": t}
    s: dict[str, tuple[str, str]] = {
        "arrival_base": (f"A_{b}", "Sec. 3.2"),
        "arrival_treated": (f"A_{t}", "Sec. 3.2"),
        "reach_gap": (f"A_{t} - A_{b}", "Sec. 3.2"),
        "total_gain": (f"J({t},{t}) - J({b},{b})", "Eq. 3"),
        "reach_under_treated_solver": (f"J({t},{t}) - J({b},{t})", "Eq. 3, path 1 reach"),
        "solve_on_base_states": (f"J({b},{t}) - J({b},{b})", "Eq. 3, path 1 solve"),
        "reach_under_base_solver": (f"J({t},{b}) - J({b},{b})", "Eq. 3, path 2 reach"),
        "solve_on_treated_states": (f"J({t},{t}) - J({t},{b})", "Eq. 3, path 2 solve"),
        "interaction": (f"I = [J({t},{t})-J({t},{b})] - [J({b},{t})-J({b},{b})]", "Eq. 4"),
        "interaction_eq8": (f"A_{t} E_q{t}[delta] - A_{b} E_q{b}[delta]", "Eq. 8"),
        "delta_solve_base_states": (f"C_{{{b},{t}}} - C_{{{b},{b}}} ({b}-produced states)", "Sec. 3.2"),
        "delta_solve_treated_states": (f"C_{{{t},{t}}} - C_{{{t},{b}}} ({t}-produced states)", "Sec. 3.2"),
        "solve_all_states[base]": (f"{b} solver on all reached states", "Table 2b"),
        "solve_all_states[treated]": (f"{t} solver on all reached states", "Table 2b"),
        "delta_solve_all_states": ("Delta_solve on all reached states", "Sec. 3.2"),
        "delta_solve_prespecified": ("Delta_solve(mu_D) on prespecified states", "Sec. 3.2"),
        "survivor_interaction": (f"E_q{t}[delta] - E_q{b}[delta] (reached-only)", "Sec. 2.4, App. C"),
        "survivor_minus_endpoint": ("reached-only - endpoint interaction", "App. C"),
        "bridge_gap": ("bridge-rate gap", "Table 3"),
        "finish_gap": ("finishing-rate gap", "Table 3"),
        "bridge_contribution": ("bridge stage share of the Solve gap (symmetric split)", "Table 3"),
        "finish_contribution": ("finishing stage share of the Solve gap (symmetric split)", "Table 3"),
    }
    for w in _ROLES:
        for r in _ROLES:
            s[f"conversion[{w},{r}]"] = (f"C_{{{lab[w]},{lab[r]}}}", "Sec. 3.2")
            s[f"endpoint[{w},{r}]"] = (f"J({lab[w]},{lab[r]})", "Eqs. 2, 7")
    for role in _ROLES:
        s[f"bridge_rate[{role}]"] = (f"{lab[role]} solver bridge rate", "Table 3")
        s[f"finish_rate[{role}]"] = (f"{lab[role]} solver finishing rate | bridge", "Table 3")
    return s


def _flat_statistic(stats: UnitStats, *, bridge: bool, pre: bool):
    """statistic(totals (B, K*m)) -> (B, q): overall estimands then per-type subset."""
    m = len(stats.columns)
    K = stats.n_strata

    def statistic(totals: np.ndarray) -> np.ndarray:
        t3 = totals.reshape(totals.shape[0], K, m)
        overall = _estimands(stats.named(t3.sum(axis=1)), bridge=bridge, pre=pre)
        per = _by_type_estimands(stats.named(t3))
        cols = list(overall.values()) + [per[name][:, k] for name in BY_TYPE_ESTIMANDS for k in range(K)]
        return np.column_stack(cols)

    names = list(_estimands(stats.named(np.ones((1, m))), bridge=bridge, pre=pre))
    by_type = [(name, stats.stratum_labels[k]) for name in BY_TYPE_ESTIMANDS for k in range(K)]
    return statistic, names, by_type


def handoff_replicates(stats: UnitStats, counts: np.ndarray) -> pd.DataFrame:
    """All overall estimands for each row of a multiplicity matrix (vectorized).

    Parameters
    ----------
    stats : UnitStats
        One split of :func:`episode_task_stats`.
    counts : (B, n_tasks) integer array
        ``counts[b, i]`` = times task ``i`` (in ``stats.units`` order) enters resample b.

    Returns
    -------
    DataFrame (B rows) with one column per estimand of :func:`analyze_handoff`
    (NaN where a denominator is empty in that resample).
    """
    bridge = "g_bb" in stats.columns
    pre = "p_b" in stats.columns
    statistic, names, _ = _flat_statistic(stats, bridge=bridge, pre=pre)
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[1] != stats.n_units:
        raise ValueError(f"counts must have shape (B, {stats.n_units}); got {counts.shape}")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = statistic(counts @ stats.block_sums())
    return pd.DataFrame(out[:, : len(names)], columns=names)


# ---------------------------------------------------------- direct point tables
def assignment_table(
    episodes: pd.DataFrame, *, base: str = "SFT", treated: str = "RL", validate: bool = True
) -> pd.DataFrame:
    """Reach, Solve and endpoint of the four reacher x solver assignments (Eqs. 2, 7).

    Computed directly from the rows: ``arrival`` = mean of ``arrived`` over the
    reacher's (task, seed) trajectories (``A_W``), ``conversion`` = mean of ``solved``
    among its arrivals (``C_{W,R}``, NaN without arrivals), ``endpoint`` = mean of
    ``endpoint`` over all trajectories, non-arrivals counting as failures (``J(W,R)``).

    Returns
    -------
    DataFrame with columns ``split, reacher, solver, n, arrival, conversion, endpoint,
    n_arrived, n_solved``: one row per split and assignment (base reacher first).

    Raises
    ------
    ValueError
        If ``J != A * C`` beyond floating-point tolerance (Eq. 7): the table is
        inconsistent (cannot happen after validation unless rows were altered).
    """
    df = validate_episodes(episodes, base=base, treated=treated) if validate else episodes
    rows = []
    for split, gs in df.groupby("split", sort=True):
        for w in (base, treated):
            for r in (base, treated):
                g = gs[(gs["reacher"] == w) & (gs["solver"] == r)]
                n = len(g)
                arr = g["arrived"].to_numpy(bool)
                a = arr.mean()
                conv = g.loc[arr, "solved"].astype(bool).mean() if arr.any() else np.nan
                j = g["endpoint"].mean()
                ac = a * conv if arr.any() else 0.0
                if abs(j - ac) > EXACT_TOL * max(1.0, abs(j)):
                    raise ValueError(
                        f"episodes: J = A*C (Eq. 7) violated in split {split!r} for reacher {w!r}, "
                        f"solver {r!r}: mean endpoint {j!r} != arrival {a!r} x conversion {conv!r}; "
                        "the endpoint column is inconsistent with arrived/solved"
                    )
                rows.append(dict(split=split, reacher=w, solver=r, n=n, arrival=a, conversion=conv,
                                 endpoint=j, n_arrived=int(arr.sum()),
                                 n_solved=int(g["endpoint"].sum())))
    return pd.DataFrame(rows)


def interaction_terms(assignments: pd.DataFrame, *, base: str = "SFT", treated: str = "RL") -> pd.DataFrame:
    """Interaction (Eq. 4 and Eq. 8) and both telescoping paths (Eq. 3), per split.

    Parameters
    ----------
    assignments : output of :func:`assignment_table`.

    Returns
    -------
    DataFrame, one row per split: ``total_gain``, ``reach_under_treated_solver``,
    ``solve_on_base_states`` (path 1), ``reach_under_base_solver``,
    ``solve_on_treated_states`` (path 2), ``interaction`` (Eq. 4),
    ``interaction_eq8`` (Eq. 8), ``solve_terms_difference`` and
    ``reach_terms_difference`` (both equal ``I``), ``paths_agree`` (the two paths of
    Eq. 3 sum to the same total).

    Raises
    ------
    ValueError
        If an identity (path sums, I = difference of solve terms = difference of reach
        terms = Eq. 8) fails beyond tolerance, or an assignment is missing.
    """
    rows = []
    for split, g in assignments.groupby("split", sort=True):
        key = {(r.reacher, r.solver): r for r in g.itertuples()}
        need = [(w, r) for w in (base, treated) for r in (base, treated)]
        missing = [k for k in need if k not in key]
        if missing:
            raise ValueError(f"interaction_terms: split {split!r} lacks assignment(s) {missing}")
        J = {(w, r): key[(w, r)].endpoint for w, r in need}
        A = {w: key[(w, base)].arrival for w in (base, treated)}
        C = {(w, r): key[(w, r)].conversion for w, r in need}
        b, t = base, treated
        path1 = (J[t, t] - J[b, t], J[b, t] - J[b, b])
        path2 = (J[t, b] - J[b, b], J[t, t] - J[t, b])
        inter = (J[t, t] - J[t, b]) - (J[b, t] - J[b, b])
        eq8 = (A[t] * (C[t, t] - C[t, b]) if A[t] > 0 else 0.0) - (A[b] * (C[b, t] - C[b, b]) if A[b] > 0 else 0.0)
        row = dict(
            split=split, total_gain=J[t, t] - J[b, b],
            reach_under_treated_solver=path1[0], solve_on_base_states=path1[1],
            reach_under_base_solver=path2[0], solve_on_treated_states=path2[1],
            interaction=inter, interaction_eq8=eq8,
            solve_terms_difference=path2[1] - path1[1],
            reach_terms_difference=path1[0] - path2[0],
        )
        checks = {
            "path 1 sums to the total gain (Eq. 3)": (sum(path1), row["total_gain"]),
            "path 2 sums to the total gain (Eq. 3)": (sum(path2), row["total_gain"]),
            "I = difference of the solve terms": (row["solve_terms_difference"], inter),
            "I = difference of the reach terms": (row["reach_terms_difference"], inter),
            "I (Eq. 4) = Eq. 8": (eq8, inter),
        }
        for name, (lhs, rhs) in checks.items():
            if abs(lhs - rhs) > IDENTITY_TOL:
                raise ValueError(f"interaction_terms: identity '{name}' fails in split {split!r}: {lhs!r} != {rhs!r}")
        row["paths_agree"] = True
        rows.append(row)
    return pd.DataFrame(rows)


def solve_stages(
    episodes: pd.DataFrame, *, base: str = "SFT", treated: str = "RL", validate: bool = True
) -> pd.DataFrame:
    """Solve split into choosing a bridge action and finishing from it (Table 3, App. C).

    Over all reached states (both reachers pooled), per solver R: ``bridge_rate`` =
    share of states where R's first action was a bridge action, ``finish_rate`` =
    share of those R went on to win, ``product`` = bridge_rate x finish_rate,
    ``conversion`` = share of states R won, ``only_this_solver_wins`` = states won by R
    and not by the other solver.

    Raises
    ------
    KeyError
        Without a ``bridge`` column.
    ValueError
        If a state was won without a bridge first action (then ``product`` cannot
        reproduce ``conversion``: with a distance-two frontier and two continuation
        actions every win starts with a bridge action); names the states.
    """
    df = validate_episodes(episodes, base=base, treated=treated, require_bridge=True) if validate else episodes
    if "bridge" not in df.columns:
        raise KeyError("episodes table lacks column 'bridge' needed for the bridge/finish split (Table 3)")
    bad = df["arrived"] & df["solved"].fillna(False).astype(bool) & ~df["bridge"].fillna(False).astype(bool)
    if bad.any():
        keys = ["split", "task_id", "seed", "reacher", "solver"]
        listed = "; ".join(str(dict(r)) for r in df.loc[bad, keys].head(5).to_dict("records"))
        raise ValueError(
            "episodes: solved without a bridge first action at " + listed + "; the bridge "
            "column must mark first actions from which one further action wins (distance-two "
            "frontier), so bridge_rate x finish_rate could not reproduce conversion"
        )
    rows = []
    for split, gs in df.groupby("split", sort=True):
        reached = gs[gs["arrived"]]
        wide = reached.pivot(index=["task_id", "seed", "reacher"], columns="solver", values="solved").astype(bool)
        for r in (base, treated):
            other = treated if r == base else base
            g = reached[reached["solver"] == r]
            n = len(g)
            br = g["bridge"].astype(bool)
            sv = g["solved"].astype(bool)
            bridge_rate = br.mean() if n else np.nan
            finish = sv[br].mean() if br.any() else np.nan
            conv = sv.mean() if n else np.nan
            product = bridge_rate * finish if br.any() else (0.0 if n else np.nan)
            if n and abs(product - conv) > EXACT_TOL:
                raise ValueError(f"solve_stages: bridge x finish {product!r} != conversion {conv!r} in split {split!r}")
            only = int((wide[r] & ~wide[other]).sum()) if n else 0
            rows.append(dict(split=split, solver=r, n_states=n, bridge_rate=bridge_rate, finish_rate=finish,
                             product=product, conversion=conv, only_this_solver_wins=only))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ result object
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
    n_boot: int | None = None,
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
        ``n_boot`` is a deprecated alias.
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
    n_draws = check_draws(renamed_keyword("analyze_handoff", "n_boot", n_boot, "n_draws", n_draws))
    check_level(level, empty_threshold)
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
