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

This module holds the estimand arithmetic on per-task unit statistics (points and
bootstrap replicates); the direct point tables are :mod:`agentstudies.handoff._tables`,
the result object and the driver :func:`analyze_handoff` :mod:`agentstudies.handoff._analysis`.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from agentstudies.handoff._boot import UnitStats, build_unit_stats
from agentstudies.handoff._validate import validate_episodes

__all__ = [
    "BY_TYPE_ESTIMANDS",
    "episode_task_stats",
    "handoff_replicates",
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

