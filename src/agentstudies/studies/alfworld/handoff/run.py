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

Every policy is called through one protocol (:class:`agentstudies.agents.Policy`):
``reset(task_id, seed, role)`` with ``role`` ``"reacher"`` or ``"solver"``, then
``act(observation) -> command``. A solver's first observation carries the clone's visible
history ``h_t``; what each solver is shown is hashed (``shown_hash``) and the hashes of a
pair must be equal. Solver randomness is keyed on (task, seed, role, checkpoint) by the
policies themselves, so paired solvers draw independent streams (handoff paper, Section
3.2). Every command is checked against the admissible list before it is taken
(``valid``); an inadmissible command never counts as progress or as an arrival, and the
start state of every task is checked not to lie on ``F_D`` already.

Tables (pandas):

``trajectories`` -- one row per (task, seed, reacher):
    split, task_id, task_type, seed, reacher, arrived (bool), arrival_step (Int64, NA if
    none; 1-based count of reacher actions at arrival), n_actions (actions taken until
    arrival or budget end), first_actions_tested, second_actions_tested (Int64, from the
    frontier check at the arrival state; NA if none), n_invalid (inadmissible reacher
    commands).
``steps`` -- one row per reacher action:
    split, task_id, seed, reacher, step (1-based), action, state_key (hash of the engine's
    task facts after the action), state_changed (bool), repeated_action (bool: equals the
    previous action), revisited (bool: state_key seen earlier in this trajectory, the
    start state included), on_frontier (bool), valid (bool: admissible when taken).
``episodes`` -- the four-assignment matrix, one row per task x seed x reacher x solver:
    split, task_id, task_type, seed, reacher, solver, arrived (bool), solved (boolean, NA
    if not arrived), endpoint (int 0/1 = arrived and solved), bridge (boolean, NA if not
    arrived: the solver's first action is a bridge action, one from which one further
    action wins), arrival_step (Int64), solver_invalid (Int64: inadmissible solver
    commands), shown_hash (what the solver was shown at the handoff), solver_first_action,
    reacher_invalid (inadmissible commands of the reacher's trajectory).
``actions`` -- every reacher and solver action:
    split, task_id, seed, reacher, solver (NA for reacher rows), role, step, shown (the
    text the policy was shown), candidates (JSON list: the commands it considered; the
    admissible list for a scripted policy), command, valid.
``clone_audit`` -- one row per split:
    split, clone, arrivals, replays, replays_passed, replays_failed, solver_pairs,
    solver_pairs_equal_inputs.

Parallel over tasks with :func:`agentstudies.parallel.seeded_map` (each worker process
owns its env); every random draw derives from (task, seed, role, checkpoint), so the
tables do not depend on ``n_jobs``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.agents import LLM_RECORD_COLUMNS, llm_record
from agentstudies.envs.alfworld.env import AlfworldEnv, ReplayMismatch
from agentstudies.envs.alfworld.expert import Expert
from agentstudies.envs.alfworld.frontier import frontier_check
from agentstudies.parallel import seeded_map
from agentstudies.results import PaperTables
from agentstudies.specs import AgentSpec
from agentstudies.studies.alfworld.handoff.report import TABLE8_COLUMNS, _table8, _table8_state

__all__ = [
    "run_handoff_study", "make_study_checkpoints", "HandoffStudy", "TRAJECTORY_COLUMNS", "STEP_COLUMNS",
    "EPISODE_COLUMNS", "ACTION_COLUMNS", "AUDIT_COLUMNS", "llm_checkpoint_tables",
]

TRAJECTORY_COLUMNS = [
    "split", "task_id", "task_type", "seed", "reacher", "arrived", "arrival_step", "n_actions",
    "first_actions_tested", "second_actions_tested", "n_invalid",
]
STEP_COLUMNS = [
    "split", "task_id", "seed", "reacher", "step", "action", "state_key", "state_changed",
    "repeated_action", "revisited", "on_frontier", "valid",
]
EPISODE_COLUMNS = [
    "split", "task_id", "task_type", "seed", "reacher", "solver", "arrived", "solved", "endpoint",
    "bridge", "arrival_step", "solver_invalid", "shown_hash", "solver_first_action", "reacher_invalid",
]
ACTION_COLUMNS = [
    "split", "task_id", "seed", "reacher", "solver", "role", "step", "shown", "candidates", "command", "valid",
]
AUDIT_COLUMNS = [
    "split", "clone", "arrivals", "replays", "replays_passed", "replays_failed", "solver_pairs",
    "solver_pairs_equal_inputs",
]


@dataclass(frozen=True)
class HandoffStudy(PaperTables):
    """Tables of one handoff study plus parameters and timing (seconds).

    ``frames()`` are its five raw tables; ``table(8)`` (:class:`~agentstudies.results.PaperTables`,
    ``PAPER = "handoff"``) is the paper's Table 8 from the ``actions`` log, on the state the
    prespecified rule picks (:func:`_table8_state`; ``attrs["state"]`` holds that state's
    base-solver episode row, ``None`` and an empty frame when no state qualifies).
    """

    PAPER = "handoff"

    trajectories: pd.DataFrame
    steps: pd.DataFrame
    episodes: pd.DataFrame
    clone_audit: pd.DataFrame
    params: Mapping[str, Any] = field(default_factory=dict)
    timing: Mapping[str, float] = field(default_factory=dict)
    actions: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ACTION_COLUMNS))

    def frames(self) -> dict[str, pd.DataFrame]:
        """The five raw tables by name (the paper's tables: :meth:`table`)."""
        return {
            "trajectories": self.trajectories,
            "steps": self.steps,
            "episodes": self.episodes,
            "clone_audit": self.clone_audit,
            "actions": self.actions,
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

    def _table_8(self, *, base: str = "SFT", treated: str = "RL",
                 splits: Sequence[str] = ("valid_unseen", "valid_seen")) -> pd.DataFrame:
        """Table 8: the ``base`` and ``treated`` solvers' actions on the state chosen by
        :func:`_table8_state` (columns of :func:`_table8`); ``attrs["state"]`` is the
        state's episode row, or ``None`` (and the frame empty) if no state qualifies."""
        state = _table8_state(self.episodes, base=base, treated=treated, splits=splits)
        out = (_table8(self.actions, state, solvers=(base, treated)) if state is not None else
               pd.DataFrame(columns=TABLE8_COLUMNS))
        out.attrs["state"] = state
        return out


_WORKER: dict[str, Any] = {}


def _worker_env(budget: int, strict: bool = False) -> AlfworldEnv:
    env = _WORKER.get("env")
    if env is None:
        env = AlfworldEnv(budget=budget)
        _WORKER["env"] = env
    env.budget = budget
    env.strict = bool(strict)
    return env


def _shown_hash(obs: Mapping[str, Any]) -> str:
    """SHA-256 of what a policy is shown at a handoff: goal, visible history, latest
    observation and remaining budget (the admissible list is hashed separately)."""
    key = [obs.get("goal", ""), list(obs.get("history", ())), obs.get("observation", ""),
           int(obs.get("remaining_budget", 0))]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()


def _log_of(policy: Any, obs: Mapping[str, Any], command: str) -> tuple[str, str]:
    """(text shown, candidates as JSON) of the last decision: the policy's own
    ``last_log`` when it keeps one, else the observation text and the admissible list
    (what a scripted policy chooses from)."""
    log = getattr(policy, "last_log", None)
    if isinstance(log, Mapping) and log.get("command") == command:
        return str(log.get("shown", "")), json.dumps(list(log.get("candidates", [])))
    return str(obs.get("observation", "")), json.dumps(list(obs.get("admissible_commands", [])))


def _run_task(
    game: Mapping[str, Any],
    seeds: Sequence[int],
    reachers: Sequence[tuple[str, Any]],
    early_budget: int,
    D: int,
    cont: int,
    clone: str,
    expert_method: str = "analytic",
    strict: bool = False,
) -> dict[str, Any]:
    """One task's rows: for each seed and reacher, the reacher's phase (:func:`_reach`)
    and, on arrival, the handoff to every solver (:func:`_hand_off`). Returns the task's
    trajectory, step, episode and action rows, its audit counts and worker seconds."""
    t0 = time.perf_counter()
    budget = early_budget + cont
    env = _worker_env(budget, strict)
    env.load_game(game)
    expert = Expert(env, method=expert_method)
    split = str(game.get("split", ""))
    task_id = env.task_id
    task_type = env.task_type
    traj_rows, step_rows, ep_rows, act_rows = [], [], [], []
    audit = dict(arrivals=0, replays=0, replays_passed=0, replays_failed=0, solver_pairs=0, solver_pairs_equal_inputs=0)

    def observe() -> dict[str, Any]:
        obs = env.observe()
        obs["expert"] = expert.plan
        return obs

    for seed in seeds:
        env.reset(seed, budget)
        start = frontier_check(env, D)
        if start.on_frontier or start.terminal:
            raise ValueError(
                f"task {task_id!r} seed {seed}: the start state already lies on F_{D} (or is terminal); a reacher "
                "could arrive without acting -- use problems whose optimal plan is longer than D"
            )
        for rname, reacher in reachers:
            arrival, fc_arrival, t = _reach(env, reacher, observe, seed, budget, early_budget, D,
                                            (split, task_id, rname), step_rows, act_rows)
            arrived = arrival is not None
            n_invalid = int(sum(not v for v in env.valid))
            r_rec = llm_record(reacher)
            traj_rows.append((split, task_id, task_type, seed, rname, arrived, arrival, t,
                              fc_arrival.first_actions_tested if arrived else None,
                              fc_arrival.second_actions_tested if arrived else None, n_invalid,
                              *r_rec.values()))
            r_flags = (r_rec["llm_errors"], r_rec["llm_limit"])
            if not arrived:
                for sname, solver in reachers:
                    ep_rows.append((split, task_id, task_type, seed, rname, sname, False, None, 0, None, None,
                                    None, None, None, n_invalid, *_no_run_record(solver).values(), *r_flags))
                continue
            results = _hand_off(env, reachers, observe, seed, budget, cont, clone, fc_arrival,
                                (split, task_id, rname), audit, act_rows)
            for sname, solved, bridge, s_invalid, shown_hash, first, s_rec in results:
                ep_rows.append((split, task_id, task_type, seed, rname, sname, True, solved, int(solved), bridge, arrival,
                                s_invalid, shown_hash, first, n_invalid, *s_rec.values(), *r_flags))
    return dict(
        split=split, trajectories=traj_rows, steps=step_rows, episodes=ep_rows, actions=act_rows, audit=audit,
        seconds=time.perf_counter() - t0,
    )


def _reach(env: Any, reacher: Any, observe: Callable[[], dict[str, Any]], seed: int, budget: int,
           early_budget: int, D: int, ids: tuple[str, str, str], step_rows: list, act_rows: list
           ) -> tuple[int | None, Any, int]:
    """The reacher's phase of one (task, seed, reacher): act until the state lies on
    ``F_D`` (arrival) or ``early_budget`` actions are spent, logging step and action
    rows. Returns the arrival step (``None``: no arrival), the frontier check at
    arrival and the number of actions taken."""
    split, task_id, rname = ids
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
        shown, cands = _log_of(reacher, obs, action)
        env.step(action)
        valid = env.valid[-1]
        new_key = env.state_key()
        if valid:
            sid = env.state_id()
            fc = memo.get(sid)
            if fc is None:  # the answer depends on the engine state only (b >= D here)
                fc = memo[sid] = frontier_check(env, D)
            on = fc.on_frontier
        else:  # an inadmissible command changes nothing: never progress, never an arrival
            fc, on = None, False
        step_rows.append((split, task_id, seed, rname, t, action, new_key, new_key != key,
                          action == prev_action, new_key in seen, on, valid))
        act_rows.append((split, task_id, seed, rname, pd.NA, "reacher", t, shown, cands, action, valid))
        seen.add(new_key)
        key, prev_action = new_key, action
        if on:
            arrival, fc_arrival = t, fc
            break
        if env.done:  # pragma: no cover - a win passes through F_D first
            break
        obs = observe()
    return arrival, fc_arrival, t


def _hand_off(env: Any, reachers: Sequence[tuple[str, Any]], observe: Callable[[], dict[str, Any]],
              seed: int, budget: int, cont: int, clone: str, fc_arrival: Any, ids: tuple[str, str, str],
              audit: dict[str, int], act_rows: list) -> list[tuple]:
    """The handoff: clone the arrival state once per solver (verified replay, or snapshot
    restore plus one audit replay) and let each solver continue for ``cont`` actions,
    logging action rows and counting the audit. Returns per solver ``(name, solved,
    first action is a bridge action, solver's invalid actions, shown-input hash, first
    action)``. Raises :class:`ReplayMismatch` if a replay disagrees with its record."""
    split, task_id, rname = ids
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
        obs = observe()
        shown_hash = _shown_hash(obs)
        inputs.append((shown_hash, tuple(env.admissible), env.history_hash()))
        solver.reset(task_id, seed, role="solver")
        first = None
        n_before = len(env.actions)
        for k in range(1, cont + 1):
            a = solver.act(obs)
            shown, cands = _log_of(solver, obs, a)
            first = a if first is None else first
            env.step(a)
            act_rows.append((split, task_id, seed, rname, sname, "solver", k, shown, cands, a, env.valid[-1]))
            if env.done:
                break
            obs = observe()
        solved = bool(env.won)
        s_invalid = int(sum(not v for v in env.valid[n_before:]))
        results.append((sname, solved, first in fc_arrival.bridge_actions, s_invalid, shown_hash, first,
                        llm_record(solver)))
    if clone == "snapshot":
        env.release_snapshots()
        # audit: one verified operational clone of the arrival state
        audit["replays"] += 1
        env.replay(seed, prefix, records, budget)
        audit["replays_passed"] += 1
    audit["solver_pairs"] += 1
    audit["solver_pairs_equal_inputs"] += int(all(x == inputs[0] for x in inputs))
    return results


def _no_run_record(policy: Any) -> dict[str, Any]:
    """The record of a solver that never ran (no arrival): its agent, no calls."""
    rec = llm_record(None)
    spec = getattr(policy, "spec", None)
    if hasattr(policy, "episode_record") and spec is not None:
        rec.update(agent=f"llm:{spec.model}", model=spec.model)
    return rec


def _run_task_item(game: Mapping[str, Any], rng: np.random.Generator, **kwargs: Any) -> dict[str, Any]:
    """:func:`seeded_map` adapter; a task's randomness comes from its (task, seed, role, checkpoint)
    keys inside the policies, not from ``rng``."""
    return _run_task(game, **kwargs)


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


def _check_study_args(early_budget: int, D: int, continuation_budget: int, clone: str, expert: str,
                      seeds: Sequence[int]) -> list[int]:
    """Refuse bad budgets, clone modes, expert sources and seed lists (see
    :func:`run_handoff_study`); returns the seeds as a list of ints."""
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
    return seeds


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
    checkpoints: str = "trained",
    temperature: float = 0.4,
    strict: bool = False,
    agent: str | AgentSpec = "simulated",
    llm_settings: Mapping[str, Any] | None = None,
    llm_name: str = "LLM",
    show_admissible: bool = False,
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
        ``{name: policy}``; every policy is both a reacher and a solver, called through
        the policy protocol ``reset(task_id, seed, role)`` / ``act(observation)``
        (default: :func:`make_study_checkpoints` ``(checkpoints, temperature)``).
    checkpoints, temperature:
        Used when ``reachers`` is ``None``: ``"trained"`` (default) loads the shipped
        SFT / RL weights of :class:`agentstudies.agents.alfworld.LearnedAlfworldPolicy` (checksums
        verified) decoded at ``temperature``; ``"scripted"`` gives the *simulated*
        scripted profiles (planted mechanisms calibrated to the paper's Table 2).
    strict:
        Refuse inadmissible commands (:class:`env.InadmissibleCommand`) instead of
        passing them to the engine ("Nothing happens.", one action charged).
    early_budget:
        ``B_early``: reacher actions allowed.
    D:
        Frontier distance (``F_D``, Eq. 6).
    continuation_budget:
        ``B_cont``: solver actions after the handoff (``>= D``).
    n_jobs, backend:
        :func:`agentstudies.parallel.seeded_map` over tasks (results do not depend on
        them; ``backend=None`` is joblib's default, ``"loky"``).
    clone:
        ``"replay"`` (reset + verified replay per solver; the paper's protocol) or
        ``"snapshot"`` (in-process restore per solver, plus one verified replay per
        arrival for the audit).
    expert:
        Optimal-plan source handed to scripted policies (``observation["expert"]``):
        ``"analytic"`` (fast, exact on generated games) or ``"fast_downward"`` (TextWorld's
        planner; use it for official ALFWorld games).
    agent, llm_settings, llm_name, show_admissible:
        ``agent="llm:<provider/model>"`` with its settings in ``llm_settings`` (the
        chapters' flat parameters), or one :class:`agentstudies.specs.AgentSpec` as
        ``agent`` (then no ``llm_settings``; both are refused, naming both), adds an LLM
        checkpoint named ``llm_name`` (:class:`agentstudies.agents.alfworld.LLMAlfworldPolicy`,
        its model settings built by :func:`agentstudies.agents.llm_spec`, which checks every
        field; ``temperature`` above is the trained checkpoints' decoding temperature, the
        model's is the spec's); the admissible list shown only with
        ``show_admissible``) to the checkpoints, so it is crossed with them as reacher
        and as solver. Runs with a policy that calls a model go sequentially (one env,
        one conversation at a time); their tables gain the columns
        :data:`agentstudies.agents.LLM_RECORD_COLUMNS` (``trajectories``: the reacher's
        record; ``episodes``: the solver's, plus ``reacher_llm_errors`` /
        ``reacher_llm_limit``). Errors and limits are flagged there, never dropped; the
        outcome stays the engine's.

    Returns a :class:`HandoffStudy` with the tables described in the module docstring.

    Raises ``ValueError`` for a non-positive budget, ``continuation_budget < D``, an empty
    pool or seed list, an unknown clone mode, duplicate task ids, or a task whose start
    state already lies on ``F_D`` (a reacher could "arrive" without acting);
    :class:`env.ReplayMismatch` if a replay disagrees with its record.
    """
    seeds = _check_study_args(early_budget, D, continuation_budget, clone, expert, seeds)
    checkpoints_default = reachers is None
    if reachers is None:
        reachers = make_study_checkpoints(checkpoints, temperature=temperature)
    if not reachers:
        raise ValueError("reachers is empty: expected {name: policy}")
    reachers_given = None if checkpoints_default else reachers
    reachers = _with_llm(reachers, agent, llm_settings, llm_name, show_admissible)
    games = _resolve_pool(pool, tasks_per_type, pool_seed)
    if not games:
        raise ValueError("empty pool: no games to run")
    ids = [(g.get("split"), g["task_id"]) for g in games]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate task ids in the pool")
    items = [(str(k), v) for k, v in reachers.items()]
    llm = any(hasattr(v, "episode_record") for _, v in items)
    if llm:  # model clients do not cross process boundaries; one env, one conversation at a time
        n_jobs, backend = 1, "sequential"
    t0 = time.perf_counter()
    out = seeded_map(_run_task_item, games, seed=0, n_jobs=n_jobs, backend=backend or "loky", seeds=seeds,
                     reachers=items, early_budget=early_budget, D=D, cont=continuation_budget, clone=clone,
                     expert_method=expert, strict=strict)
    wall = time.perf_counter() - t0
    traj, steps, eps, audit, acts = _study_tables(out, clone, llm)
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
        pool_seed=pool_seed, expert=expert, checkpoints=checkpoints if reachers_given is None else "custom",
        temperature=temperature, strict=strict, agent=agent.agent if isinstance(agent, AgentSpec) else agent,
        policies={k: getattr(v, "params", repr(v)) for k, v in items},
    )
    return HandoffStudy(traj, steps, eps, audit, params, timing, acts)


def _with_llm(reachers: Mapping[str, Any], agent: str | AgentSpec, llm_settings: Mapping[str, Any] | None,
              llm_name: str, show_admissible: bool) -> dict[str, Any]:
    """The checkpoints plus, for an LLM agent (``"llm:..."`` with ``llm_settings``, or an
    :class:`AgentSpec`), the LLM checkpoint ``llm_name``. Raises ``ValueError`` (from
    :func:`agentstudies.agents.llm_spec`) for a malformed agent or setting, model settings
    with the simulated agent, or ``llm_settings`` beside an ``AgentSpec``."""
    from agentstudies.agents import llm_spec
    from agentstudies.agents.alfworld import LLMAlfworldPolicy

    spec = llm_spec(agent, llm_settings)
    if spec is None:
        return dict(reachers)
    if llm_name in reachers:
        raise ValueError(f"llm_name={llm_name!r} is already a checkpoint name; choose another")
    return {**reachers, llm_name: LLMAlfworldPolicy(spec, show_admissible=show_admissible)}


def _study_tables(out: Sequence[Mapping[str, Any]], clone: str, llm: bool = False
                  ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Concatenate the per-task rows of :func:`_run_task` into the study's typed
    trajectory, step, episode, audit (summed per split) and action tables; the model-call
    record columns are kept only when ``llm`` (a policy called a model)."""
    rec = list(LLM_RECORD_COLUMNS)
    traj = pd.DataFrame([r for o in out for r in o["trajectories"]], columns=TRAJECTORY_COLUMNS + rec)
    steps = pd.DataFrame([r for o in out for r in o["steps"]], columns=STEP_COLUMNS)
    eps = pd.DataFrame([r for o in out for r in o["episodes"]],
                       columns=EPISODE_COLUMNS + rec + ["reacher_llm_errors", "reacher_llm_limit"])
    if not llm:
        traj, eps = traj[TRAJECTORY_COLUMNS], eps[EPISODE_COLUMNS]
    acts = pd.DataFrame([r for o in out for r in o["actions"]], columns=ACTION_COLUMNS)
    acts["solver"] = acts["solver"].astype("string")
    acts["valid"] = acts["valid"].astype(bool)
    acts["step"] = acts["step"].astype(int)
    traj["n_invalid"] = traj["n_invalid"].astype(int)
    eps["solver_invalid"] = eps["solver_invalid"].astype("Int64")
    eps["reacher_invalid"] = eps["reacher_invalid"].astype(int)
    for col in ("arrival_step", "first_actions_tested", "second_actions_tested"):
        traj[col] = traj[col].astype("Int64")
    traj["arrived"] = traj["arrived"].astype(bool)
    traj["seed"] = traj["seed"].astype(int)
    traj["n_actions"] = traj["n_actions"].astype(int)
    for col in ("state_changed", "repeated_action", "revisited", "on_frontier", "valid"):
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
    return traj, steps, eps, audit, acts


def make_study_checkpoints(checkpoints: str = "trained", *, temperature: float = 0.4,
                           bases: Sequence[str] = ("SFT",)) -> dict[str, Any]:
    """The checkpoints of the handoff study: ``{"SFT": ..., "RL": ...}``, plus every other
    base of ``bases`` (names of :data:`~agentstudies.studies.alfworld.handoff.pairs.CHECKPOINT_PAIRS`,
    e.g. ``("SFT", "SFT-equal")``: each base is crossed with RL), bases first, RL last.

    ``"trained"``: the shipped :class:`agentstudies.agents.alfworld.LearnedAlfworldPolicy`
    weights (``data/alfworld/checkpoints``, checksums verified), decoded at
    ``temperature`` (paper: 0.4). ``"scripted"``: the *simulated* scripted profiles of
    :func:`agentstudies.agents.alfworld.make_checkpoints` -- planted mechanisms on
    the analytic optimal expert, calibrated to the paper's Table 2 (one pairing only:
    ``bases`` must be ``("SFT",)``). Raises ``ValueError`` for another value.
    """
    from agentstudies.studies.alfworld.handoff.pairs import check_pairs

    bases = check_pairs(bases)
    if checkpoints == "trained":
        from agentstudies.agents.alfworld import LearnedAlfworldPolicy

        return {n: LearnedAlfworldPolicy.load(n, temperature=temperature) for n in (*bases, "RL")}
    if checkpoints == "scripted" and bases != ["SFT"]:
        raise ValueError(f"bases={bases!r} with checkpoints='scripted': the scripted profiles have one pairing; "
                         "use bases=('SFT',) or checkpoints='trained'")
    if checkpoints == "scripted":
        from agentstudies.agents.alfworld import make_checkpoints

        return make_checkpoints()
    raise ValueError(f"checkpoints={checkpoints!r}: expected 'trained' or 'scripted'")


def llm_checkpoint_tables(episodes: pd.DataFrame, trajectories: pd.DataFrame, *, llm: str = "LLM",
                          others: Sequence[str] = ("SFT", "RL"), n_draws: int = 2000, seed: int = 0
                          ) -> dict[str, pd.DataFrame]:
    """Tables of an LLM checkpoint crossed with the others (``run_handoff_study(agent=...)``).

    ``assignments``: per (split, reacher, solver) over every checkpoint, ``n``
    (trajectories), ``arrival`` (A_W), ``conversion`` (C_{W,R}, among arrived states) and
    ``endpoint`` (J(W,R) = A_W C_{W,R}, Eq. 7), plain means. ``contrasts``: for each
    checkpoint ``b`` in ``others``, the handoff analysis of the 2 x 2 crossing of ``b``
    (base) with the LLM (treated) by :func:`agentstudies.handoff.analyze_handoff`:
    ``reach_gap``, ``delta_solve_all_states`` and ``interaction`` (Eq. 4) with bootstrap
    intervals (``flagged``: the empty-denominator rule excluded too many draws); an analysis that cannot run (e.g. no arrival at all) gives one row with
    the reason in ``note``. ``cost``: per (split, role) the model calls, input / output
    tokens, and the episodes with a model error or a generation limit (kept in every
    table above, flagged here). Raises ``KeyError`` if ``llm`` is not a checkpoint of
    ``episodes`` or the tables lack the model-call columns.
    """
    if llm not in set(episodes["reacher"]) or "llm_calls" not in episodes:
        raise KeyError(f"checkpoint {llm!r} with model-call columns not in the episode table; "
                       "run run_handoff_study(agent='llm:<provider/model>')")
    e = episodes.assign(solved01=episodes["solved"].astype("Float64"))
    g = e.groupby(["split", "reacher", "solver"], sort=False)
    assignments = pd.DataFrame({"n": g.size(), "arrival": g["arrived"].mean(), "conversion": g["solved01"].mean(),
                                "endpoint": g["endpoint"].mean()}).reset_index()
    return {"assignments": assignments, "contrasts": _llm_contrasts(episodes, llm, others, n_draws, seed),
            "cost": _llm_cost(episodes, trajectories)}


def _llm_contrasts(episodes: pd.DataFrame, llm: str, others: Sequence[str], n_draws: int,
                   seed: int) -> pd.DataFrame:
    import warnings

    from agentstudies.handoff import analyze_handoff

    keep = ("reach_gap", "delta_solve_all_states", "interaction")
    rows = []
    for b in others:
        pair = episodes[episodes["reacher"].isin([b, llm]) & episodes["solver"].isin([b, llm])]
        try:
            with warnings.catch_warnings():  # flagged intervals are marked in the table's `flagged` column
                warnings.simplefilter("ignore", RuntimeWarning)
                est = analyze_handoff(pair[EPISODE_COLUMNS], base=b, treated=llm, n_draws=n_draws, seed=seed).estimates
        except ValueError as exc:
            rows.append({"base": b, "treated": llm, "note": f"not estimable: {exc}"})
            continue
        est = est[est["estimand"].isin(keep)]
        for r in est.itertuples():
            rows.append({"base": b, "treated": llm, "split": r.split, "estimand": r.estimand,
                         "estimate": r.estimate, "ci_low": r.ci_low, "ci_high": r.ci_high,
                         "flagged": bool(getattr(r, "flagged", False)), "note": ""})
    return pd.DataFrame(rows, columns=["base", "treated", "split", "estimand", "estimate", "ci_low", "ci_high",
                                       "flagged", "note"])


def _llm_cost(episodes: pd.DataFrame, trajectories: pd.DataFrame) -> pd.DataFrame:
    reach = trajectories[trajectories["agent"].str.startswith("llm:")].assign(role="reacher")
    solve = episodes[episodes["agent"].str.startswith("llm:") & episodes["arrived"]].assign(role="solver")
    both = pd.concat([reach, solve], ignore_index=True)
    both = both.assign(error=both["llm_errors"].fillna("") != "", limit=both["llm_limit"].fillna("") != "")
    g = both.groupby(["split", "role"], sort=False)
    return g.agg(episodes=("agent", "size"), llm_calls=("llm_calls", "sum"), input_tokens=("input_tokens", "sum"),
                 output_tokens=("output_tokens", "sum"), with_errors=("error", "sum"),
                 with_limits=("limit", "sum")).reset_index()
