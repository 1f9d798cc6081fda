"""Test hooks of the handoff package: internals, slow references, a synthetic example.

Re-exported internals (for tests and benchmarks that check the vectorized bootstrap
against a slow reference): :class:`UnitStats`, :func:`episode_task_stats`,
:func:`draw_counts`, :func:`bootstrap_seed`, :func:`flat_statistic`, :func:`handoff_replicates`,
:func:`prediction_design`, :func:`prediction_replicates`, :func:`run_bootstrap`,
:func:`summarise`.

Nothing else here is used by the estimators. :func:`handoff_replicates_loop` recomputes the
handoff estimands resample by resample from the *rows* of the episodes table (pandas
means on a concatenated resample), the straightforward implementation the vectorized
bootstrap is verified and timed against. :func:`example_tables` writes a small
synthetic study in the three input schemas.

.. warning::
   :func:`example_tables` draws outcomes directly from fixed rates: it is a schema
   illustration and a test fixture, *not* an agent or an environment. Never present
   its numbers as results (the book's simulated chapters get outcomes from the real
   environment).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentstudies.handoff._boot import UnitStats, bootstrap_seed, draw_counts, run_bootstrap, summarise
from agentstudies.handoff._estimands import _flat_statistic as flat_statistic
from agentstudies.handoff._estimands import episode_task_stats, handoff_replicates
from agentstudies.handoff._prediction import prediction_design, prediction_replicates
from agentstudies.handoff._validate import validate_episodes

__all__ = [
    "ALFWORLD_TASK_TYPES",
    "example_tables",
    "handoff_replicates_loop",
    "resample_rows",
    "UnitStats",
    "bootstrap_seed",
    "draw_counts",
    "episode_task_stats",
    "flat_statistic",
    "handoff_replicates",
    "prediction_design",
    "prediction_replicates",
    "run_bootstrap",
    "summarise",
]

#: The six official ALFWorld task types (used by the example tables).
ALFWORLD_TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)


def resample_rows(episodes: pd.DataFrame, task_order: np.ndarray, counts_row: np.ndarray) -> pd.DataFrame:
    """Concatenate ``counts_row[i]`` copies of task ``task_order[i]``'s rows (one resample).

    Copies get distinct ``task_id`` values (``"<id>#<copy>"``) so that they count as
    separate tasks.
    """
    parts = []
    groups = dict(tuple(episodes.groupby("task_id", sort=False)))
    for tid, c in zip(task_order, counts_row):
        g = groups[tid]
        for j in range(int(c)):
            parts.append(g.assign(task_id=f"{tid}#{j}"))
    return pd.concat(parts, ignore_index=True)


def _loop_estimands(r: pd.DataFrame, base: str, treated: str, bridge: bool) -> dict[str, float]:
    def sel(w, s):
        return r[(r["reacher"] == w) & (r["solver"] == s)]

    lab = {"base": base, "treated": treated}
    A, C, J = {}, {}, {}
    for w in ("base", "treated"):
        A[w] = float(sel(lab[w], base)["arrived"].mean())
        for s in ("base", "treated"):
            g = sel(lab[w], lab[s])
            arr = g[g["arrived"]]
            C[w, s] = float(arr["solved"].astype(bool).mean()) if len(arr) else np.nan
            J[w, s] = float(g["endpoint"].mean())
    out = {"arrival_base": A["base"], "arrival_treated": A["treated"],
           "reach_gap": A["treated"] - A["base"]}
    for w in ("base", "treated"):
        for s in ("base", "treated"):
            out[f"conversion[{w},{s}]"] = C[w, s]
    for w in ("base", "treated"):
        for s in ("base", "treated"):
            out[f"endpoint[{w},{s}]"] = J[w, s]
    b, t = "base", "treated"
    out["total_gain"] = J[t, t] - J[b, b]
    out["reach_under_treated_solver"] = J[t, t] - J[b, t]
    out["solve_on_base_states"] = J[b, t] - J[b, b]
    out["reach_under_base_solver"] = J[t, b] - J[b, b]
    out["solve_on_treated_states"] = J[t, t] - J[t, b]
    out["interaction"] = (J[t, t] - J[t, b]) - (J[b, t] - J[b, b])
    d = {w: C[w, t] - C[w, b] for w in (b, t)}
    out["interaction_eq8"] = (A[t] * d[t] if A[t] > 0 else 0.0) - (A[b] * d[b] if A[b] > 0 else 0.0)
    out["delta_solve_base_states"] = d[b]
    out["delta_solve_treated_states"] = d[t]
    reached = r[r["arrived"]]
    for s in (b, t):
        g = reached[reached["solver"] == lab[s]]
        out[f"solve_all_states[{s}]"] = float(g["solved"].astype(bool).mean()) if len(g) else np.nan
    out["delta_solve_all_states"] = out["solve_all_states[treated]"] - out["solve_all_states[base]"]
    out["survivor_interaction"] = d[t] - d[b]
    out["survivor_minus_endpoint"] = out["survivor_interaction"] - out["interaction"]
    if bridge:
        for s in (b, t):
            g = reached[reached["solver"] == lab[s]]
            br = g["bridge"].astype(bool)
            out[f"bridge_rate[{s}]"] = float(br.mean()) if len(g) else np.nan
            out[f"finish_rate[{s}]"] = float(g.loc[br, "solved"].astype(bool).mean()) if br.any() else np.nan
        out["bridge_gap"] = out["bridge_rate[treated]"] - out["bridge_rate[base]"]
        out["finish_gap"] = out["finish_rate[treated]"] - out["finish_rate[base]"]
        out["bridge_contribution"] = out["bridge_gap"] * (out["finish_rate[treated]"] + out["finish_rate[base]"]) / 2
        out["finish_contribution"] = out["finish_gap"] * (out["bridge_rate[treated]"] + out["bridge_rate[base]"]) / 2
    return out


def handoff_replicates_loop(
    episodes: pd.DataFrame,
    task_order: np.ndarray,
    counts: np.ndarray,
    *,
    base: str = "SFT",
    treated: str = "RL",
) -> pd.DataFrame:
    """Handoff estimands for each resample, one pandas resample at a time (slow).

    Parameters
    ----------
    episodes : one split of an episodes table.
    task_order : (N,) task ids, the column order of ``counts``.
    counts : (B, N) multiplicity matrix (from :func:`agentstudies.stats.bootstrap_counts`).

    Returns a (B x estimands) DataFrame with the columns of
    :func:`handoff_replicates` (without prespecified states).
    """
    df = validate_episodes(episodes, base=base, treated=treated)
    if df["split"].nunique() != 1:
        raise ValueError("handoff_replicates_loop expects a single split")
    bridge = "bridge" in df.columns
    rows = [_loop_estimands(resample_rows(df, task_order, c), base, treated, bridge) for c in np.asarray(counts)]
    return pd.DataFrame(rows)


# --------------------------------------------------------------------- example data
_LOCS = [f"cabinet {i}" for i in range(1, 21)] + [f"drawer {i}" for i in range(1, 21)] + [
    "countertop 1", "shelf 1", "shelf 2", "fridge 1", "microwave 1", "sinkbasin 1", "desklamp 1", "desk 1",
]
_OBJECTS = ["pencil", "apple", "mug", "potato", "cd", "book", "egg", "tomato", "cup", "pen"]


def _trajectory_actions(rng, mode: str, n: int, target: str, task_type: str, arrive_at: int | None):
    """A synthetic action sequence and its state keys (location, holding)."""
    loc, hold = "middle", "nothing"
    actions, states = [], []
    locs = _LOCS
    for i in range(n):
        if arrive_at is not None:
            # a purposeful path: explore, take the target, approach the goal receptacle
            if i < arrive_at - 2:
                a = f"go to {locs[(i * 7 + 3) % len(locs)]}"
            elif i == arrive_at - 2:
                a = f"take {target} 1 from {loc if loc != 'middle' else 'countertop 1'}"
            else:
                a = "go to countertop 1" if "heat" not in task_type else "go to microwave 1"
        elif mode == "loop":
            a = ["look", "go to cabinet 1", "go to cabinet 2"][int(rng.integers(0, 3))] if i < 2 else actions[i - 2]
        elif mode == "wander":
            a = f"go to {locs[int(rng.integers(0, len(locs)))]}" if i % 4 else "inventory"
        elif mode == "never_picks":
            other = _OBJECTS[(i // 2) % len(_OBJECTS)]
            other = other if other != target else "key"
            a = (f"go to drawer {i % 20 + 1}", f"take {other} {i} from drawer {i % 20}",
                 f"put {other} {i - 1} in/on drawer {i % 20 - 1}")[i % 3]
        else:  # format collapse
            a = "I think I should find the object first."
        if a.startswith("go to "):
            loc = a[len("go to "):]
        elif a.startswith("take ") and hold == "nothing":
            hold = a.split(" from ")[0][len("take "):]
        elif a.startswith("take "):
            hold = hold + "+" + a.split(" from ")[0][len("take "):]
        elif a.startswith("put "):
            hold = "nothing"
        actions.append(a)
        states.append(f"{loc}|{hold}")
    return actions, states


def example_tables(
    *,
    seed: int = 0,
    n_per_type: int = 5,
    n_seeds: int = 4,
    budget: int = 48,
    split: str = "valid_unseen",
    base: str = "SFT",
    treated: str = "RL",
    arrival: tuple[float, float] = (0.15, 0.8),
    bridge: tuple[float, float] = (0.7, 0.97),
    finish: tuple[float, float] = (0.75, 0.98),
    task_types: tuple[str, ...] = ALFWORLD_TASK_TYPES,
) -> dict[str, pd.DataFrame]:
    """A synthetic handoff study in the three input schemas (test fixture, *not* data).

    ``arrival``, ``bridge``, ``finish`` are (base, treated) probabilities; per task the
    arrival probability is shifted by a task-level difficulty. Outcomes are drawn
    directly from these rates, so the tables are consistent with every validation rule
    but carry no information about any agent.

    Returns ``{"episodes", "trajectories", "steps"}``.

    Length: one seeded draw sequence; splitting it must keep the order of the draws (the
    tests' fixtures depend on it).
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    labels = {0: base, 1: treated}
    ep_rows, tr_rows, st_rows = [], [], []
    for k, ttype in enumerate(task_types):
        for j in range(n_per_type):
            tid = f"{split}-{k}{j:02d}"
            target = _OBJECTS[(k * n_per_type + j) % len(_OBJECTS)]
            shift = rng.normal(0, 0.08)
            for s in range(n_seeds):
                for wi in (0, 1):
                    w = labels[wi]
                    p = float(np.clip(arrival[wi] + shift, 0.0, 1.0))
                    arrived = bool(rng.random() < p)
                    step = int(rng.integers(3, budget + 1)) if arrived else None
                    n_actions = step if arrived else budget
                    if arrived:
                        mode = "path"
                    else:
                        u = rng.random()
                        mode = ("loop" if u < 0.9 else "never_picks") if wi == 0 else (
                            "loop" if u < 0.6 else "wander" if u < 0.85 else "never_picks")
                    tr_rows.append(dict(split=split, task_id=tid, task_type=ttype, seed=s, reacher=w,
                                        arrived=arrived, arrival_step=step, n_actions=n_actions, target=target))
                    acts, states = _trajectory_actions(rng, mode, n_actions, target, ttype, step)
                    seen = {"middle|nothing"}
                    prev_a, prev_s = None, "middle|nothing"
                    for i, (a, st) in enumerate(zip(acts, states), start=1):
                        st_rows.append(dict(split=split, task_id=tid, seed=s, reacher=w, step=i, action=a,
                                            state_key=st, state_changed=st != prev_s,
                                            repeated_action=a == prev_a, revisited=st in seen,
                                            on_frontier=bool(arrived and i == step)))
                        seen.add(st)
                        prev_a, prev_s = a, st
                    for ri in (0, 1):
                        if arrived:
                            br = bool(rng.random() < bridge[ri])
                            solved = bool(br and rng.random() < finish[ri])
                        else:
                            br = solved = None
                        ep_rows.append(dict(split=split, task_id=tid, task_type=ttype, seed=s, reacher=w,
                                            solver=labels[ri], arrived=arrived, solved=solved,
                                            endpoint=int(bool(solved)), bridge=br, arrival_step=step))
    episodes = pd.DataFrame(ep_rows)
    episodes["solved"] = episodes["solved"].astype("boolean")
    episodes["bridge"] = episodes["bridge"].astype("boolean")
    episodes["arrival_step"] = episodes["arrival_step"].astype("Int64")
    trajectories = pd.DataFrame(tr_rows)
    trajectories["arrival_step"] = trajectories["arrival_step"].astype("Int64")
    return {"episodes": episodes, "trajectories": trajectories, "steps": pd.DataFrame(st_rows)}
