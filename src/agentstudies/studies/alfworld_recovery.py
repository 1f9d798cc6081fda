"""Causal recovery evaluation on the real ALFWorld engine (CIR paper protocol).

For every task (CIR paper, "Paired counterfactuals" and "Setup"):

1. **Factual trajectory.** The agent plays the task with no injected error and no
   recovery, capped at ``turn_cap`` model turns and ``action_cap`` environment actions
   (paper 49 / 64, scaled by ``cap_scale``). ``L`` = its number of environment actions.
2. **Intervention point** ``t0 = ceil(0.25 L)``: after ``t0`` actions the environment is
   left unchanged and only what the agent is shown is modified -- ``clean`` (the true
   observation), ``stale-1`` / ``stale-2`` (the observation shown after action ``t0 - 1``
   / ``t0 - 2``), ``missing`` (:data:`MISSING_TEXT`).
3. **Prefix feasibility** (paper: "reaches the chosen intervention point and has enough
   earlier history to construct the required stale observation; pre-branch histories
   must match"): the factual run is still going after ``t0`` actions (``t0 < L``); ``t0 >=
   k`` for the longest ``k``-step stale condition run (``o_{t0-k}`` exists; ``o_0`` is the
   task's opening observation); and a
   verified clone (reset + replay of the factual prefix, every record compared, and the
   policy re-fed the shown prefix reproducing every action) reaches the fork state.
4. **Forks.** Per condition the no-recovery branch continues from the fork state; at
   each delay ``d`` (environment actions after the modified observation) the state
   (engine snapshot, policy copy incl. its random stream, pending shown text, transcript)
   is cloned and the with-recovery branch applies operation ``m``: ``refresh`` (an extra
   ``look``; its returned observation appended to what the agent is shown), ``ablated``
   (the same ``look`` is issued, its content hidden: :data:`ABLATED_TEXT`), ``replan``
   (no query; :data:`REPLAN_TEXT` appended). Both branches share environment state,
   pre-branch history, policy and decoding stream. A branch that ended before ``d``
   carries its outcome (``y_with = y_without``, ``active = False``): every task stays in
   the denominator at every delay.
5. **Router decision points** ``d in (1, 2, 4)``: pre-decision features
   (:func:`agentstudies.recovery.decision_features`) from the transcript shown up to
   that point, plus the policy's own confidence at its last action.

The agent sees only ``{"goal", "observation"}`` (goal sentence + latest shown text): never
the expert plan, never the admissible list. Outcomes are the engine's native ``won``.
Seeds: env reset ``keyed_seed(seed, "env", task_id)``; policy stream via
``policy.reset(task_id, seed, role="eval")`` (the learned policy keys it on task, seed,
role and checkpoint), identical in every branch of a task.

Tables of :class:`RecoveryStudy`:

``tasks``      cohort, task_id, task_type, factual_success, factual_actions, t0, feasible,
               infeasible_reason, clean_matches_factual (bool/NA), replay_verified
``paired``     cohort, task_id, condition, delay, operation, y_without, y_with, active,
               factual_success -- one row per fork (the input of
               :func:`agentstudies.recovery.analyze_paired`)
``decisions``  cohort, task_id, condition, delay (1/2/4), y_without, y_with (refresh),
               active, factual_success, feature columns -- the router's decision table
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.parallel import keyed_seed, seeded_map
from agentstudies.recovery import FEATURE_NAMES, decision_features

__all__ = [
    "ABLATED_TEXT",
    "CONDITIONS",
    "COHORT_DESIGNS",
    "DELAYS",
    "MISSING_TEXT",
    "OPERATIONS",
    "PAPER_COHORT_SIZES",
    "POLICY_FEATURES",
    "REPLAN_TEXT",
    "RecoveryStudy",
    "cohort_pools",
    "run_recovery_study",
    "run_task",
    "paper_table",
]

CONDITIONS: tuple[str, ...] = ("clean", "stale-1", "stale-2", "missing")
DELAYS: tuple[int, ...] = (0, 1, 2, 4)
OPERATIONS: tuple[str, ...] = ("refresh", "ablated", "replan")
ROUTER_DELAYS: tuple[int, ...] = (1, 2, 4)
MISSING_TEXT = "Observation unavailable."
ABLATED_TEXT = "[The harness looked again; the returned observation is hidden.]"
REPLAN_TEXT = "[The harness asks you to stop and replan from what you already know.]"
#: Extra router features the harness adds from the policy's own log (pre-decision).
POLICY_FEATURES: tuple[str, ...] = ("policy_max_prob", "policy_entropy")

#: Per cohort: conditions, delays, operations run (the paper's analyses need these).
COHORT_DESIGNS: dict[str, dict[str, tuple]] = {
    "primary": dict(conditions=CONDITIONS, delays=DELAYS, operations=("refresh",)),
    "independent": dict(conditions=("clean", "stale-2"), delays=DELAYS, operations=("refresh",)),
    "mechanism": dict(conditions=("clean", "stale-2"), delays=(0, 4), operations=OPERATIONS),
    "evaluation": dict(conditions=CONDITIONS, delays=ROUTER_DELAYS, operations=("refresh",)),
}
#: The paper's cohort sizes (prefix-feasible tasks; CIR paper, "Setup").
PAPER_COHORT_SIZES = {"primary": 106, "primary_factual_success": 93, "independent": 100,
                      "independent_factual_success": 89, "mechanism": 74, "mechanism_checked": 67,
                      "evaluation": 76, "evaluation_feasible": 75}


# ------------------------------------------------------------------ pools
def cohort_pools(per_type: Mapping[str, int], *, seed: int = 2029) -> dict[str, list[dict[str, Any]]]:
    """Disjoint generated task pools per cohort (``{cohort: n tasks per task type}``).

    ``primary``, ``mechanism``, ``evaluation`` draw from the ``valid_seen`` floor plans,
    ``independent`` from ``valid_unseen`` (disjoint floor plans); within ``valid_seen`` the
    cohorts take disjoint generator indices (primary first, then mechanism, then
    evaluation), so no task appears in two cohorts. Games inside the embedded manifest
    (5 per type and split, seed 2029) load at once; the rest are generated with the full
    winnability checks (slow: the planner runs once per game). Task ids are prefixed with
    the cohort. Raises ``ValueError`` for an unknown cohort or a negative size.
    """
    from agentstudies.envs.alfworld.generate import SHORT_NAMES, TASK_TYPES, generate_game
    from agentstudies.envs.alfworld.pools import load_pool

    unknown = set(per_type) - set(COHORT_DESIGNS)
    if unknown:
        raise ValueError(f"unknown cohort(s) {sorted(unknown)}; expected some of {list(COHORT_DESIGNS)}")
    offsets = {"valid_seen": 0, "valid_unseen": 0}
    cache: dict[str, list] = {}
    out: dict[str, list[dict[str, Any]]] = {}
    env = None
    for cohort in ("primary", "mechanism", "evaluation", "independent"):
        n = int(per_type.get(cohort, 0))
        if n < 0:
            raise ValueError(f"{cohort}: negative pool size {n}")
        if n == 0:
            continue
        split = "valid_unseen" if cohort == "independent" else "valid_seen"
        start = offsets[split]
        offsets[split] += n
        games = []
        for tt in TASK_TYPES:
            for k in range(start, start + n):
                if k < 5:
                    if split not in cache:
                        cache[split] = load_pool(split, 5, seed)
                    g = next(x for x in cache[split] if x["task_id"] == f"{split}-{SHORT_NAMES[tt]}-{k:02d}")
                else:
                    if env is None:
                        from agentstudies.envs.alfworld.env import AlfworldEnv

                        env = AlfworldEnv(budget=48)
                    g = generate_game(split, tt, k, seed, env=env)
                g = dict(g)
                g["task_id"] = f"{cohort}/{g['task_id']}"
                g["cohort"] = cohort
                games.append(g)
        out[cohort] = games
    return out


# ------------------------------------------------------------------ one task
_WORKER: dict[str, Any] = {}


def _env(budget: int):
    from agentstudies.envs.alfworld.env import AlfworldEnv

    env = _WORKER.get("env")
    if env is None:
        env = _WORKER["env"] = AlfworldEnv(budget=budget)
    env.budget = budget
    return env


def _clone_policy(policy):
    """Deep copy of a policy's episode state (belief, random stream); large arrays shared."""
    memo = {id(v): v for v in vars(policy).values() if isinstance(v, np.ndarray) and v.size > 1000}
    return copy.deepcopy(policy, memo)


def _policy_stats(policy) -> tuple[float, float]:
    log = getattr(policy, "last_log", None) or {}
    p = np.asarray(log.get("probs", []), dtype=float)
    if p.size == 0:
        return 1.0, 0.0
    p = p[p > 0]
    return float(p.max()), float(-(p * np.log(p)).sum())


@dataclass
class _Branch:
    """Mutable state of one branch: engine snapshot, policy, shown text, transcript."""

    policy: Any
    shown: str
    turns: int
    transcript: list
    stats: tuple


def _play(env, br: _Branch, goal: str, turn_cap: int, until_actions: int | None = None) -> None:
    """Let the agent act until won / caps (or until the env has ``until_actions`` actions)."""
    while not env.won and env.remaining_budget > 0 and br.turns < turn_cap:
        if until_actions is not None and len(env.actions) >= until_actions:
            return
        a = br.policy.act({"goal": goal, "observation": br.shown})
        br.turns += 1
        env.step(a)
        br.shown = env.observation
        br.transcript.append({"action": a, "observation": br.shown})
        br.stats = _policy_stats(br.policy)


def _apply(env, br: _Branch, op: str) -> None:
    if op == "refresh" or op == "ablated":
        if env.remaining_budget > 0 and not env.won:
            env.step("look")
            extra = env.observation if op == "refresh" else ABLATED_TEXT
        else:  # no action left for the query: nothing can be appended
            extra = ""
    elif op == "replan":
        extra = REPLAN_TEXT
    else:
        raise ValueError(f"unknown operation {op!r}; expected one of {OPERATIONS}")
    if extra:
        br.shown = f"{br.shown}\n{extra}"
        if br.transcript:
            last = dict(br.transcript[-1])
            last["observation"] = br.shown
            br.transcript[-1] = last


def _features(br: _Branch, goal: str, intro: str, turn_cap: int, action_cap: int) -> dict[str, float]:
    f = decision_features(br.transcript, len(br.transcript), goal=goal, initial_observation=intro,
                          turn_cap=turn_cap, action_cap=action_cap)
    f["policy_max_prob"], f["policy_entropy"] = br.stats
    return f


def run_task(
    game: Mapping[str, Any],
    policy: Any,
    *,
    seed: int = 0,
    conditions: Sequence[str] = CONDITIONS,
    delays: Sequence[int] = DELAYS,
    operations: Sequence[str] = ("refresh",),
    router_delays: Sequence[int] = ROUTER_DELAYS,
    cap_scale: float = 1.0,
    intervention_fraction: float = 0.25,
) -> dict[str, Any]:
    """Run the whole protocol on one task (module docstring). Returns ``{"task": row,
    "paired": [rows], "decisions": [rows], "seconds": float}``.

    Raises ``ValueError`` for an unknown condition / operation, a negative delay or a
    non-positive ``cap_scale``; :class:`agentstudies.envs.alfworld.env.ReplayMismatch`
    if the verified clone disagrees with the factual record (a harness bug, never
    silently dropped).
    """
    from agentstudies.envs.alfworld.env import ReplayMismatch

    t_start = time.perf_counter()
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad:
        raise ValueError(f"unknown condition(s) {bad}; expected some of {CONDITIONS}")
    bad = [m for m in operations if m not in OPERATIONS]
    if bad:
        raise ValueError(f"unknown operation(s) {bad}; expected some of {OPERATIONS}")
    if any(int(d) < 0 for d in delays):
        raise ValueError(f"delays {tuple(delays)}: expected non-negative integers")
    if not cap_scale > 0:
        raise ValueError(f"cap_scale={cap_scale}: expected a positive number")
    turn_cap = max(1, int(round(49 * cap_scale)))
    action_cap = max(1, int(round(64 * cap_scale)))
    env = _env(action_cap)
    env.load_game(game)
    cohort = str(game.get("cohort", ""))
    env_seed = int(keyed_seed(seed, "env", str(game["task_id"])).generate_state(1)[0] % (2 ** 31))
    task_id = str(game["task_id"])
    # ---- 1. factual trajectory
    env.reset(env_seed, action_cap)
    goal = env.goal
    intro = env.observation
    pol = copy.deepcopy(policy)
    pol.reset(task_id, seed, role="eval")
    fact = _Branch(pol, intro, 0, [], (1.0, 0.0))
    _play(env, fact, goal, turn_cap)
    y_fact = bool(env.won)
    L = len(env.actions)
    f_actions, f_records = env.actions, env.records
    t0 = int(math.ceil(intervention_fraction * L))
    task_row = dict(cohort=cohort, task_id=task_id, task_type=env.task_type, factual_success=y_fact,
                    factual_actions=L, t0=t0, feasible=False, infeasible_reason="", clean_matches_factual=pd.NA,
                    replay_verified=False)
    need_hist = max([int(c.split("-")[1]) for c in conditions if c.startswith("stale")] + [0])
    if not t0 < L:
        task_row["infeasible_reason"] = f"intervention point t0={t0} not reached before the end (L={L})"
    elif t0 < max(need_hist, 1):
        task_row["infeasible_reason"] = f"t0={t0}: not enough history for a {need_hist}-step stale observation"
    out = dict(task=task_row, paired=[], decisions=[], seconds=0.0)
    if task_row["infeasible_reason"]:
        out["seconds"] = time.perf_counter() - t_start
        return out
    # ---- 2. verified clone of the fork state (env by checked replay, policy by re-feeding)
    env.replay(env_seed, f_actions[:t0], f_records[: t0 + 1], action_cap)
    pol = copy.deepcopy(policy)
    pol.reset(task_id, seed, role="eval")
    shown = intro
    transcript = []
    for k in range(t0):
        a = pol.act({"goal": goal, "observation": shown})
        if a != f_actions[k]:
            raise ReplayMismatch(k + 1, "policy action", f_actions[k], a)
        shown = f_records[k + 1]["observation"]
        transcript.append({"action": a, "observation": shown})
    task_row["replay_verified"] = True
    task_row["feasible"] = True
    fork_snap = env.snapshot()
    fork_stats = _policy_stats(pol)
    obs_after = [r["observation"] for r in f_records]  # o_0 .. o_L (o_k after action k)
    matches = None
    for cond in conditions:
        if cond == "clean":
            text = obs_after[t0]
        elif cond == "missing":
            text = MISSING_TEXT
        else:
            text = obs_after[t0 - int(cond.split("-")[1])]
        env.restore(fork_snap)
        tr = [dict(x) for x in transcript]
        tr[-1] = {"action": tr[-1]["action"], "observation": text}
        br = _Branch(_clone_policy(pol), text, t0, tr, fork_stats)
        # no-recovery branch, cloned at every delay / decision point on the way
        points = sorted(set(int(d) for d in delays) | set(int(d) for d in router_delays))
        snaps: dict[int, tuple] = {}
        for d in points:
            _play(env, br, goal, turn_cap, until_actions=t0 + d)
            ended = env.won or env.remaining_budget <= 0 or br.turns >= turn_cap or len(env.actions) < t0 + d
            snaps[d] = (None if ended else env.snapshot(), _Branch(_clone_policy(br.policy), br.shown, br.turns,
                                                                      [dict(x) for x in br.transcript], br.stats),
                        ended)
        _play(env, br, goal, turn_cap)
        y0 = bool(env.won)
        if cond == "clean":
            matches = env.actions == f_actions
        y_with: dict[tuple[int, str], tuple[bool, bool]] = {}
        for d in points:
            snap, sb, ended = snaps[d]
            ops = list(operations) if d in delays else []
            if d in router_delays and "refresh" not in ops:
                ops.append("refresh")
            for op in ops:
                if ended:
                    y_with[(d, op)] = (y0, False)
                    continue
                env.restore(snap)
                b = _Branch(_clone_policy(sb.policy), sb.shown, sb.turns, [dict(x) for x in sb.transcript], sb.stats)
                _apply(env, b, op)
                _play(env, b, goal, turn_cap)
                y_with[(d, op)] = (bool(env.won), True)
        for d in delays:
            for op in operations:
                y1, active = y_with[(int(d), op)]
                out["paired"].append(dict(cohort=cohort, task_id=task_id, condition=cond, delay=int(d), operation=op,
                                          y_without=int(y0), y_with=int(y1), active=active,
                                          factual_success=y_fact))
        for d in router_delays:
            snap, sb, ended = snaps[int(d)]
            y1, active = y_with[(int(d), "refresh")]
            row = dict(cohort=cohort, task_id=task_id, condition=cond, delay=int(d), y_without=int(y0), y_with=int(y1),
                       active=active, factual_success=y_fact)
            row.update(_features(sb, goal, intro, turn_cap, action_cap))
            out["decisions"].append(row)
    env.release_snapshots()
    task_row["clean_matches_factual"] = pd.NA if matches is None else bool(matches)
    out["seconds"] = time.perf_counter() - t_start
    return out


def _task_item(item, rng, **kw):  # seeded_map signature; the task's seeds are keyed, rng unused
    game, design = item
    return run_task(game, kw["policy"], seed=kw["root_seed"], cap_scale=kw["cap_scale"], **design)


# ------------------------------------------------------------------ study
@dataclass(frozen=True)
class RecoveryStudy:
    """Tables of one run (module docstring), parameters and timing (seconds)."""

    tasks: pd.DataFrame
    paired: pd.DataFrame
    decisions: pd.DataFrame
    params: Mapping[str, Any] = field(default_factory=dict)
    timing: Mapping[str, float] = field(default_factory=dict)

    @property
    def feature_names(self) -> list[str]:
        """Router feature columns of :attr:`decisions`."""
        return list(FEATURE_NAMES) + list(POLICY_FEATURES)

    def analysis_table(self) -> pd.DataFrame:
        """The paired table with analysis cohorts for :func:`agentstudies.recovery.analyze_paired`:
        each run cohort as ``<cohort>-complete`` (all prefix-feasible tasks) and, for
        primary / independent, ``<cohort>-factual-success`` (the factual-success subset)."""
        p = self.paired
        parts = []
        for c in p["cohort"].unique():
            g = p[p["cohort"] == c]
            parts.append(g.assign(cohort=f"{c}-complete"))
            if c in ("primary", "independent"):
                parts.append(g[g["factual_success"]].assign(cohort=f"{c}-factual-success"))
        cols = ["cohort", "task_id", "condition", "delay", "operation", "y_without", "y_with"]
        return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)

    def cohort_sizes(self) -> pd.DataFrame:
        """Per cohort: tasks run, prefix-feasible, factual successes among them."""
        t = self.tasks
        g = t.groupby("cohort", sort=False)
        return pd.DataFrame({
            "tasks": g.size(),
            "prefix_feasible": g["feasible"].sum(),
            "feasible_factual_success": g.apply(lambda x: int((x["feasible"] & x["factual_success"]).sum()),
                                                include_groups=False),
            "factual_success_rate": g["factual_success"].mean() * 100,
        }).reset_index()


def run_recovery_study(
    pools: Mapping[str, Sequence[Mapping[str, Any]]],
    policy: Any,
    *,
    seed: int = 0,
    cap_scale: float = 1.0,
    designs: Mapping[str, Mapping[str, Sequence]] | None = None,
    n_jobs: int = 1,
) -> RecoveryStudy:
    """Run the protocol on every cohort's pool (module docstring).

    Parameters
    ----------
    pools : ``{cohort: [game, ...]}`` (e.g. :func:`cohort_pools`).
    policy : an agent with ``reset(task_id, seed, role)`` and ``act(observation) -> str``
        that reads only ``observation["goal"]`` / ``observation["observation"]``; it is
        deep-copied per task and per branch.
    seed : root seed (env resets and the policy's streams derive from it by key).
    cap_scale : multiplies the paper's caps (49 turns, 64 environment actions).
    designs : per cohort ``conditions`` / ``delays`` / ``operations`` (default
        :data:`COHORT_DESIGNS`).
    n_jobs : parallel tasks (:func:`agentstudies.parallel.seeded_map`); tables do not
        depend on it.

    Raises ``ValueError`` for an empty pool set, an unknown cohort without a design, or
    duplicate task ids.
    """
    designs = {**COHORT_DESIGNS, **(designs or {})}
    items = []
    for cohort, games in pools.items():
        if cohort not in designs:
            raise ValueError(f"cohort {cohort!r} has no design; give designs[{cohort!r}]")
        for g in games:
            g = dict(g)
            g["cohort"] = cohort
            items.append((g, dict(designs[cohort])))
    if not items:
        raise ValueError("no tasks: every pool is empty")
    ids = [g["task_id"] for g, _ in items]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate task ids across the cohorts' pools; cohorts must be disjoint")
    t0 = time.perf_counter()
    res = seeded_map(_task_item, items, seed=seed, n_jobs=n_jobs, policy=policy, cap_scale=cap_scale, root_seed=seed)
    wall = time.perf_counter() - t0
    tasks = pd.DataFrame([r["task"] for r in res])
    paired = pd.DataFrame([x for r in res for x in r["paired"]],
                          columns=["cohort", "task_id", "condition", "delay", "operation", "y_without", "y_with",
                                   "active", "factual_success"])
    dec = pd.DataFrame([x for r in res for x in r["decisions"]])
    timing = dict(wall_seconds=wall, worker_seconds=float(sum(r["seconds"] for r in res)), tasks=len(items))
    params = dict(seed=seed, cap_scale=cap_scale, n_jobs=n_jobs, designs={k: {kk: list(vv) for kk, vv in v.items()}
                                                                         for k, v in designs.items() if k in pools},
                  policy=getattr(policy, "params", repr(policy)), pool_sizes={k: len(v) for k, v in pools.items()})
    return RecoveryStudy(tasks, paired, dec, params, timing)


# ------------------------------------------------------------------ paper values
def paper_table(name: str) -> pd.DataFrame:
    """The paper's values of table ``name`` from ``data/paper/cir_<name>.csv`` (labelled
    ``source = "paper"``). Raises ``FileNotFoundError`` naming the file."""
    from pathlib import Path

    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file():
            p = parent / "data" / "paper" / f"cir_{name}.csv"
            break
    else:  # pragma: no cover
        p = Path("data") / "paper" / f"cir_{name}.csv"
    if not p.is_file():
        raise FileNotFoundError(f"paper table {name!r}: {p} does not exist")
    return pd.read_csv(p).assign(source="paper")
