"""Direct point tables of a handoff episode table: the four assignments (Reach, Solve,
endpoint), the interaction's terms and the Solve stages by solver action.

Source: "Reach or Solve? Attributing Agentic RL Gains with Checkpoint Handoffs",
Sections 2-3 (Eqs. 2-8), Appendix C (Solve by solver action). Fractions in [0, 1];
intervals are attached by :func:`agentstudies.handoff.analyze_handoff`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentstudies._tolerances import EXACT_TOL, IDENTITY_TOL
from agentstudies.handoff._validate import validate_episodes

__all__ = ["assignment_table", "interaction_terms", "solve_stages"]


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

