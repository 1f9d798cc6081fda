"""Checkpoint handoff on ALFWorld: natural rollouts, verified frontier, cloned solvers.

:func:`run_handoff_study` implements the ALFWorld protocol of the handoff paper (Section
4.1, Appendix A): for every task, paired seed and reacher ``W``, the reacher acts for at
most ``early_budget`` actions; after each action the FAST frontier check
(:func:`frontier.frontier_check`) asks whether the state lies in ``F_D``; the first hit is
the handoff ``tau_D``. Each arrival state is cloned -- by reset + verified replay of the
recorded prefix (``clone="replay"``, the paper's operational clone) or by in-process
snapshot (``clone="snapshot"``) -- once per solver, and every solver ``R`` continues for
``continuation_budget`` actions from identical inputs (observation, admissible list,
budget, visible history; paired seed). The outcome is the engine's native ``won`` flag.

Tables (pandas; simulated policies are labelled by their ``label``/name):

``trajectories`` -- one row per (task, seed, reacher):
    split, task_id, task_type, seed, reacher, arrived (bool), arrival_step (Int64, NA if
    none; 1-based count of reacher actions at arrival), n_actions (actions taken until
    arrival or budget end), first_actions_tested, second_actions_tested (Int64, from the
    frontier check at the arrival state; NA if none).
``steps`` -- one row per reacher action:
    split, task_id, seed, reacher, step (1-based), action, state_key (hash of the engine's
    task facts after the action), state_changed (bool), repeated_action (bool: equals the
    previous action), revisited (bool: state_key seen earlier in this trajectory, the
    start state included), on_frontier (bool).
``episodes`` -- the four-assignment matrix, one row per task x seed x reacher x solver:
    split, task_id, task_type, seed, reacher, solver, arrived (bool), solved (boolean, NA
    if not arrived), endpoint (int 0/1 = arrived and solved), bridge (boolean, NA if not
    arrived: the solver's first action is a bridge action, one from which one further
    action wins), arrival_step (Int64).
``clone_audit`` -- one row per split:
    split, clone, arrivals, replays, replays_passed, replays_failed, solver_pairs,
    solver_pairs_equal_inputs.

Parallel over tasks with ``joblib`` (each worker process owns its env); every random
draw derives from (task, seed, role), so the tables do not depend on ``n_jobs``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from agentstudies.envs.alfworld.env import AlfworldEnv, ReplayMismatch
from agentstudies.envs.alfworld.expert import Expert
from agentstudies.envs.alfworld.frontier import frontier_check
from agentstudies.envs.alfworld.generate import TASK_TYPES

__all__ = ["run_handoff_study", "HandoffStudy", "TRAJECTORY_COLUMNS", "STEP_COLUMNS", "EPISODE_COLUMNS", "AUDIT_COLUMNS"]

TRAJECTORY_COLUMNS = [
    "split", "task_id", "task_type", "seed", "reacher", "arrived", "arrival_step", "n_actions",
    "first_actions_tested", "second_actions_tested",
]
STEP_COLUMNS = [
    "split", "task_id", "seed", "reacher", "step", "action", "state_key", "state_changed",
    "repeated_action", "revisited", "on_frontier",
]
EPISODE_COLUMNS = [
    "split", "task_id", "task_type", "seed", "reacher", "solver", "arrived", "solved", "endpoint",
    "bridge", "arrival_step",
]
AUDIT_COLUMNS = [
    "split", "clone", "arrivals", "replays", "replays_passed", "replays_failed", "solver_pairs",
    "solver_pairs_equal_inputs",
]


@dataclass(frozen=True)
class HandoffStudy:
    """Tables of one handoff study plus parameters and timing (seconds)."""

    trajectories: pd.DataFrame
    steps: pd.DataFrame
    episodes: pd.DataFrame
    clone_audit: pd.DataFrame
    params: Mapping[str, Any] = field(default_factory=dict)
    timing: Mapping[str, float] = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The four tables by name."""
        return {
            "trajectories": self.trajectories,
            "steps": self.steps,
            "episodes": self.episodes,
            "clone_audit": self.clone_audit,
        }

    def summary(self) -> pd.DataFrame:
        """Arrival rate and mean actions per (split, reacher); conversion per (split,
        reacher, solver) -- a quick look, not an estimator (those live in ``handoff``)."""
        t = self.trajectories
        a = t.groupby(["split", "reacher"]).agg(arrival=("arrived", "mean"), mean_actions=("n_actions", "mean"))
        e = self.episodes[self.episodes["arrived"]]
        c = e.assign(solved=e["solved"].astype(float)).groupby(["split", "reacher", "solver"])["solved"].mean()
        c = c.unstack("solver").add_prefix("conversion_")
        return a.join(c)


_WORKER: dict[str, Any] = {}


def _worker_env(budget: int) -> AlfworldEnv:
    env = _WORKER.get("env")
    if env is None:
        env = AlfworldEnv(budget=budget)
        _WORKER["env"] = env
    env.budget = budget
    return env


def _run_task(
    game: Mapping[str, Any],
    seeds: Sequence[int],
    reachers: Sequence[tuple[str, Any]],
    early_budget: int,
    D: int,
    cont: int,
    clone: str,
    expert_method: str = "analytic",
) -> dict[str, Any]:
    t0 = time.perf_counter()
    budget = early_budget + cont
    env = _worker_env(budget)
    env.load_game(game)
    expert = Expert(env, method=expert_method)
    split = str(game.get("split", ""))
    task_id = env.task_id
    task_type = env.task_type
    traj_rows, step_rows, ep_rows = [], [], []
    audit = dict(arrivals=0, replays=0, replays_passed=0, replays_failed=0, solver_pairs=0, solver_pairs_equal_inputs=0)

    def observe() -> dict[str, Any]:
        obs = env.observe()
        obs["expert"] = expert.plan
        return obs

    for seed in seeds:
        for rname, reacher in reachers:
            env.reset(seed, budget)
            memo: dict[int, Any] = {}  # frontier answers by engine state id (this episode)
            reacher.reset(task_id, seed, role="reacher")
            obs = observe()
            key = env.state_key()
            seen = {key}
            prev_action = None
            arrival = None
            fc_arrival = None
            t = 0
            for t in range(1, early_budget + 1):
                action = reacher.act(obs)
                env.step(action)
                new_key = env.state_key()
                sid = env.state_id()
                fc = memo.get(sid)
                if fc is None:  # the answer depends on the engine state only (b >= D here)
                    fc = memo[sid] = frontier_check(env, D)
                step_rows.append((split, task_id, seed, rname, t, action, new_key, new_key != key,
                                  action == prev_action, new_key in seen, fc.on_frontier))
                seen.add(new_key)
                key, prev_action = new_key, action
                if fc.on_frontier:
                    arrival, fc_arrival = t, fc
                    break
                if env.done:  # pragma: no cover - a win passes through F_D first
                    break
                obs = observe()
            arrived = arrival is not None
            traj_rows.append((split, task_id, task_type, seed, rname, arrived, arrival, t,
                              fc_arrival.first_actions_tested if arrived else None,
                              fc_arrival.second_actions_tested if arrived else None))
            if not arrived:
                for sname, _ in reachers:
                    ep_rows.append((split, task_id, task_type, seed, rname, sname, False, None, 0, None, None))
                continue
            # ---- handoff: clone the arrival state once per solver
            audit["arrivals"] += 1
            prefix, records = env.actions, env.records
            snap = env.snapshot() if clone == "snapshot" else None
            inputs = []
            results = []
            for sname, solver in reachers:
                if clone == "replay":
                    audit["replays"] += 1
                    try:
                        env.replay(seed, prefix, records, budget)
                    except ReplayMismatch:
                        audit["replays_failed"] += 1
                        raise
                    audit["replays_passed"] += 1
                else:
                    env.restore(snap)
                env.set_remaining_budget(cont)
                inputs.append((env.observation, tuple(env.admissible), env.remaining_budget, env.history_hash()))
                solver.reset(task_id, seed, role="solver")
                first = None
                for _ in range(cont):
                    a = solver.act(observe())
                    first = a if first is None else first
                    env.step(a)
                    if env.done:
                        break
                solved = bool(env.won)
                results.append((sname, solved, first in fc_arrival.bridge_actions))
            if clone == "snapshot":
                env.release_snapshots()
                # audit: one verified operational clone of the arrival state
                audit["replays"] += 1
                env.replay(seed, prefix, records, budget)
                audit["replays_passed"] += 1
            audit["solver_pairs"] += 1
            audit["solver_pairs_equal_inputs"] += int(all(x == inputs[0] for x in inputs))
            for sname, solved, bridge in results:
                ep_rows.append((split, task_id, task_type, seed, rname, sname, True, solved, int(solved), bridge, arrival))
    return dict(
        split=split, trajectories=traj_rows, steps=step_rows, episodes=ep_rows, audit=audit,
        seconds=time.perf_counter() - t0,
    )


def _resolve_pool(pool, tasks_per_type, pool_seed) -> list[dict[str, Any]]:
    from agentstudies.envs.alfworld.pools import load_pool

    if isinstance(pool, str):
        return load_pool(pool, tasks_per_type or 5, pool_seed)
    pool = list(pool)
    if pool and isinstance(pool[0], str):
        out = []
        for split in pool:
            out.extend(load_pool(split, tasks_per_type or 5, pool_seed))
        return out
    if tasks_per_type is None:
        return pool
    counts: dict[tuple, int] = {}
    out = []
    for g in pool:
        k = (g.get("split"), g["traj_data"]["task_type"])
        if counts.get(k, 0) < tasks_per_type:
            counts[k] = counts.get(k, 0) + 1
            out.append(g)
    return out


def run_handoff_study(
    pool: str | Sequence[str] | Sequence[Mapping[str, Any]],
    tasks_per_type: int | None = 5,
    seeds: Sequence[int] = (0, 1, 2, 3),
    reachers: Mapping[str, Any] | None = None,
    early_budget: int = 48,
    D: int = 2,
    continuation_budget: int = 2,
    n_jobs: int = 1,
    *,
    clone: str = "replay",
    backend: str | None = None,
    pool_seed: int = 2029,
    expert: str = "analytic",
) -> HandoffStudy:
    """Run the ALFWorld checkpoint-handoff protocol (paper Section 4.1, Appendix A).

    Parameters
    ----------
    pool:
        A split name (``"valid_seen"``/``"valid_unseen"``, loaded with
        :func:`pools.load_pool`), a list of split names, or a list of game dicts.
    tasks_per_type:
        Tasks per task type taken from the pool (``None``: all games given).
    seeds:
        Paired task seeds (each seeds the env reset and, with task and role, every policy).
    reachers:
        ``{name: policy}``; every policy is both a reacher and a solver (default: the
        scripted *simulated* SFT/RL checkpoints of
        :func:`agentstudies.agents.alfworld_policy.make_checkpoints`).
    early_budget:
        ``B_early``: reacher actions allowed.
    D:
        Frontier distance (``F_D``, Eq. 6).
    continuation_budget:
        ``B_cont``: solver actions after the handoff (``>= D``).
    n_jobs, backend:
        ``joblib.Parallel`` over tasks (results do not depend on them).
    clone:
        ``"replay"`` (reset + verified replay per solver; the paper's protocol) or
        ``"snapshot"`` (in-process restore per solver, plus one verified replay per
        arrival for the audit).
    expert:
        Optimal-plan source handed to scripted policies (``observation["expert"]``):
        ``"analytic"`` (fast, exact on generated games) or ``"fast_downward"`` (TextWorld's
        planner; use it for official ALFWorld games).

    Returns a :class:`HandoffStudy` with the tables described in the module docstring.

    Raises ``ValueError`` for a non-positive budget, ``continuation_budget < D``, an empty
    pool or seed list, an unknown clone mode, or duplicate task ids;
    :class:`env.ReplayMismatch` if a replay disagrees with its record.
    """
    if early_budget < 1:
        raise ValueError(f"early_budget={early_budget}: expected a positive integer")
    if D < 1:
        raise ValueError(f"D={D}: expected a positive integer")
    if continuation_budget < D:
        raise ValueError(f"continuation_budget={continuation_budget} < D={D}: a solver could never finish")
    if clone not in ("replay", "snapshot"):
        raise ValueError(f"clone={clone!r}: expected 'replay' or 'snapshot'")
    if expert not in ("analytic", "fast_downward"):
        raise ValueError(f"expert={expert!r}: expected 'analytic' or 'fast_downward'")
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds is empty: expected at least one paired seed")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds {seeds} contain duplicates")
    if reachers is None:
        from agentstudies.agents.alfworld_policy import make_checkpoints

        reachers = make_checkpoints()
    if not reachers:
        raise ValueError("reachers is empty: expected {name: policy}")
    games = _resolve_pool(pool, tasks_per_type, pool_seed)
    if not games:
        raise ValueError("empty pool: no games to run")
    ids = [(g.get("split"), g["task_id"]) for g in games]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate task ids in the pool")
    items = [(str(k), v) for k, v in reachers.items()]
    t0 = time.perf_counter()
    out = Parallel(n_jobs=n_jobs, backend=backend)(
        delayed(_run_task)(g, seeds, items, early_budget, D, continuation_budget, clone, expert) for g in games
    )
    wall = time.perf_counter() - t0
    traj = pd.DataFrame([r for o in out for r in o["trajectories"]], columns=TRAJECTORY_COLUMNS)
    steps = pd.DataFrame([r for o in out for r in o["steps"]], columns=STEP_COLUMNS)
    eps = pd.DataFrame([r for o in out for r in o["episodes"]], columns=EPISODE_COLUMNS)
    for col in ("arrival_step", "first_actions_tested", "second_actions_tested"):
        traj[col] = traj[col].astype("Int64")
    traj["arrived"] = traj["arrived"].astype(bool)
    traj["seed"] = traj["seed"].astype(int)
    traj["n_actions"] = traj["n_actions"].astype(int)
    for col in ("state_changed", "repeated_action", "revisited", "on_frontier"):
        steps[col] = steps[col].astype(bool)
    steps["step"] = steps["step"].astype(int)
    eps["arrived"] = eps["arrived"].astype(bool)
    eps["solved"] = eps["solved"].astype("boolean")
    eps["bridge"] = eps["bridge"].astype("boolean")
    eps["endpoint"] = eps["endpoint"].astype(int)
    eps["arrival_step"] = eps["arrival_step"].astype("Int64")
    audit_rows = {}
    for o in out:
        a = audit_rows.setdefault(o["split"], dict.fromkeys(AUDIT_COLUMNS[2:], 0))
        for k, v in o["audit"].items():
            a[k] += v
    audit = pd.DataFrame(
        [(s, clone, *[v[c] for c in AUDIT_COLUMNS[2:]]) for s, v in audit_rows.items()], columns=AUDIT_COLUMNS
    )
    worker_seconds = float(sum(o["seconds"] for o in out))
    n_traj = len(traj)
    timing = {
        "wall_seconds": wall,
        "worker_seconds": worker_seconds,
        "seconds_per_trajectory": worker_seconds / max(n_traj, 1),
        "reacher_steps": float(len(steps)),
    }
    params = dict(
        tasks=len(games), tasks_per_type=tasks_per_type, seeds=seeds, reachers=[k for k, _ in items],
        early_budget=early_budget, D=D, continuation_budget=continuation_budget, n_jobs=n_jobs, clone=clone,
        pool_seed=pool_seed, expert=expert,
        policies={k: getattr(v, "params", repr(v)) for k, v in items},
    )
    return HandoffStudy(traj, steps, eps, audit, params, timing)
