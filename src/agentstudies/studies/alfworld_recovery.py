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

The agent sees ``{"goal", "observation"}`` (goal sentence + latest shown text) and, for a
checkpoint trained with it (``policy.admissible``, the shipped SFT / RL), the admissible
list that came with the shown observation (:func:`_shown`); never the expert plan.
Outcomes are the engine's native ``won``.

**A stale observation comes with its own list** (``stale_admissible="stale"``, default).
The CIR paper ("Paired counterfactuals: same state, with vs without refresh") defines
the observation condition as what the harness *shows*: "stale: replace it with an
earlier state's observation", with the environment unchanged. For an agent whose
observation includes the admissible commands, the earlier state's observation is its
text *and* the list the engine returned with it (recorded per step, ``records[k]
["admissible"]``); showing the true state's list beside a stale text would leak the
fresh state the condition is meant to withhold (measured: with the shipped list
checkpoints, which choose among the listed commands, refresh then changed the next
action in 0 of 406 quick-profile forks). So under ``stale-k`` the agent sees ``o_{t0-k}``
and its list until its next action returns a real observation (with the current list);
a refresh appends the current observation and shows the current list; ``ablated`` and
``replan`` return no observation, so the shown list stays as it was. ``clean`` and
``missing`` (only the text content is replaced) show the current list. A command chosen
from a stale list may be inadmissible in the true state: the engine answers it
("Nothing happens.", one environment action), as ALFWorld does -- the agent learns from
the reply; it is not an error. ``stale_admissible="current"`` is the earlier behaviour
(the true state's list beside the stale text), kept as the ablation.
Seeds: env reset ``keyed_seed(seed, "env", task_id)``; policy stream via
``policy.reset(task_id, seed, role="eval")`` (the learned policy keys it on task, seed,
role and checkpoint), identical in every branch of a task.

Tables of :class:`RecoveryStudy`:

``tasks``      cohort, task_id, task_type, factual_success, factual_actions, t0, feasible,
               infeasible_reason, clean_matches_factual (bool/NA), replay_verified
``paired``     cohort, task_id, condition, delay, operation, y_without, y_with, active,
               factual_success, changed (the agent's own actions after the fork differ
               from the no-recovery branch's; the refresh query itself excluded),
               changed_next (its first own action after the operation differs) -- one
               row per fork (the input of :func:`agentstudies.recovery.analyze_paired`)
``decisions``  cohort, task_id, condition, delay (1/2/4), y_without, y_with (refresh),
               active, factual_success, feature columns -- the router's decision table
"""

from __future__ import annotations

from agentstudies.findings import controls_sentence
import copy
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.agents import LLM_RECORD_COLUMNS, llm_record
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
    "LOOK_FORMATS",
    "STALE_ADMISSIBLE",
    "format_reply",
    "REPLAN_TEXT",
    "RecoveryStudy",
    "cohort_pools",
    "run_recovery_study",
    "run_task",
    "paper_table",
    "router_pipeline",
    "table_delta",
    "table_counts",
    "table_mechanism",
    "table_router",
    "llm_cost",
    "CONTROL_SUBJECTS",
    "HORIZON_FEATURES",
    "TESTABILITY_COLUMNS",
    "horizon_leak",
    "recovery_controls",
    "recovery_findings",
    "testability",
    "controls_sentence",
    "reappearance_table",
    "router_sentences",
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
def _gen_item(item, rng):  # seeded_map signature; generation is keyed by (split, type, index, seed)
    from agentstudies.envs.alfworld.generate import generate_game

    split, tt, k, seed = item
    return generate_game(split, tt, k, seed, env=_env(48))


def _manifest_sizes(seed: int) -> dict[str, int]:
    """Tasks per type the embedded manifest holds for each split at ``seed`` (largest pool)."""
    from agentstudies.envs.alfworld.pools import load_manifest

    out: dict[str, int] = {}
    for val in load_manifest().values():
        if int(val.get("seed", -1)) == int(seed):
            out[val["split"]] = max(out.get(val["split"], 0), int(val.get("tasks_per_type", 0)))
    return out


def cohort_pools(per_type: Mapping[str, int], *, seed: int = 2029,
                 task_types: Sequence[str] | None = None, n_jobs: int = 1) -> dict[str, list[dict[str, Any]]]:
    """Disjoint generated task pools per cohort (``{cohort: n tasks per task type}``).

    ``primary``, ``mechanism``, ``evaluation`` draw from the ``valid_seen`` floor plans,
    ``independent`` from ``valid_unseen`` (disjoint floor plans); within ``valid_seen`` the
    cohorts take disjoint generator indices (primary first, then mechanism, then
    evaluation), so no task appears in two cohorts. Games inside the embedded manifest
    (``data/alfworld/pools.json``, seed 2029: 44 per type of ``valid_seen`` and 17 of
    ``valid_unseen``, enough for the paper profile) are rebuilt from their recorded
    generator attempt and checked against their SHA-256 (milliseconds each); the rest are
    generated with the full winnability checks (slow: the planner runs once per game).
    Task ids are prefixed with the cohort. ``task_types`` restricts the task types (default all six); ``n_jobs``
    generates games beyond the manifest in parallel (same games for any value). Raises
    ``ValueError`` for an unknown cohort or task type, or a negative size.
    """
    from agentstudies.envs.alfworld.generate import SHORT_NAMES, TASK_TYPES
    from agentstudies.envs.alfworld.pools import load_pool

    unknown = set(per_type) - set(COHORT_DESIGNS)
    if unknown:
        raise ValueError(f"unknown cohort(s) {sorted(unknown)}; expected some of {list(COHORT_DESIGNS)}")
    types = tuple(TASK_TYPES if task_types is None else task_types)
    bad = [t for t in types if t not in TASK_TYPES]
    if bad:
        raise ValueError(f"unknown task type(s) {bad}; expected some of {TASK_TYPES}")
    offsets = {"valid_seen": 0, "valid_unseen": 0}
    cache: dict[str, dict[str, Any]] = {}
    out: dict[str, list[dict[str, Any]]] = {}
    plan: list[tuple[str, str, str, int]] = []
    for cohort in ("primary", "mechanism", "evaluation", "independent"):
        n = int(per_type.get(cohort, 0))
        if n < 0:
            raise ValueError(f"{cohort}: negative pool size {n}")
        if n == 0:
            continue
        split = "valid_unseen" if cohort == "independent" else "valid_seen"
        start = offsets[split]
        offsets[split] += n
        for tt in types:
            for k in range(start, start + n):
                plan.append((cohort, split, tt, k))
    held = _manifest_sizes(seed)
    todo = [(split, tt, k, seed) for _, split, tt, k in plan if k >= held.get(split, 0)]
    made = dict(zip(todo, seeded_map(_gen_item, todo, seed=seed, n_jobs=n_jobs))) if todo else {}
    for cohort, split, tt, k in plan:
        if k < held.get(split, 0):
            if split not in cache:
                need = 1 + max(kk for _, sp, _, kk in plan if sp == split and kk < held[split])
                cache[split] = {x["task_id"]: x for x in load_pool(split, need, seed, task_types=types)}
            g = cache[split][f"{split}-{SHORT_NAMES[tt]}-{k:02d}"]
        else:
            g = made[(split, tt, k, seed)]
        g = dict(g)
        g["task_id"] = f"{cohort}/{g['task_id']}"
        g["cohort"] = cohort
        out.setdefault(cohort, []).append(g)
    return out


# ------------------------------------------------------------------ one task
_WORKER: dict[str, Any] = {}


def _env(budget: int):
    """The worker's env (one per process). Its step cache is on: the forks of a task
    restore snapshots and re-walk the same action paths (no-recovery branches of
    conditions the agent treats alike, refresh and ablated arms that act alike), and a
    path stepped before in the episode is restored instead of re-run
    -- the same observations and outcomes as stepping the engine (see
    :class:`agentstudies.envs.alfworld.env.AlfworldEnv`, ``step_cache``)."""
    from agentstudies.envs.alfworld.env import AlfworldEnv

    env = _WORKER.get("env")
    if env is None:
        env = _WORKER["env"] = AlfworldEnv(budget=budget, step_cache=True)
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
    """Mutable state of one branch: policy, shown text, transcript, and ``admissible``:
    the admissible list shown with ``shown`` (the list recorded when the shown observation
    was produced -- under a stale condition the earlier state's list, see
    :data:`STALE_ADMISSIBLE`)."""

    policy: Any
    shown: str
    turns: int
    transcript: list
    stats: tuple
    admissible: tuple = ()

    def copy(self) -> "_Branch":
        return _Branch(_clone_policy(self.policy), self.shown, self.turns, [dict(x) for x in self.transcript],
                       self.stats, self.admissible)


#: What admissible list a stale observation comes with (``run_task(stale_admissible=...)``):
#: ``"stale"`` (default) the list recorded with that earlier observation -- the observation
#: *and* its list describe the earlier state; ``"current"`` the engine's list at the true
#: state (the earlier behaviour, kept as an ablation: the list leaks the fresh state).
STALE_ADMISSIBLE: tuple[str, ...] = ("stale", "current")


def _shown(admissible: Sequence[str], policy, goal: str, text: str) -> dict[str, Any]:
    """What the agent is shown: goal + latest shown text, plus -- for a policy that reads
    it (``policy.admissible``, the handoff paper's setting) -- the admissible list that
    came with the shown observation (:attr:`_Branch.admissible`: the current state's list,
    or under a stale condition the earlier state's, see :data:`STALE_ADMISSIBLE`)."""
    obs: dict[str, Any] = {"goal": goal, "observation": text}
    if getattr(policy, "admissible", False) is True:
        obs["admissible_commands"] = list(admissible)
    return obs


def _play(env, br: _Branch, goal: str, turn_cap: int, until_actions: int | None = None,
          keep: list | None = None) -> None:
    """Let the agent act until won / caps (or until the env has ``until_actions`` actions).
    ``keep``: a list that receives a copy of the policy before each turn (``keep[k]``:
    the policy after ``k`` actions)."""
    while not env.won and env.remaining_budget > 0 and br.turns < turn_cap:
        if until_actions is not None and len(env.actions) >= until_actions:
            return
        if keep is not None:
            keep.append(_clone_policy(br.policy))
        a = br.policy.act(_shown(br.admissible, br.policy, goal, br.shown))
        br.turns += 1
        env.step(a)  # a command inadmissible here is answered by the engine ("Nothing happens."), not an error
        br.shown = env.observation
        br.admissible = tuple(env.admissible)
        br.transcript.append({"action": a, "observation": br.shown})
        br.stats = _policy_stats(br.policy)


_FACING = re.compile(r"You are facing the ([a-z]+ \d+)(?:, and [^.]*)?\.(?: Next to it, you see nothing\.)?")
#: How a refresh reply is shown: ``"raw"`` verbatim (the paper), ``"arrival"`` with ALFWorld's
#: look reply "You are facing the X. ..." rewritten to the arrival form "You arrive at X."
LOOK_FORMATS = ("raw", "arrival")


def format_reply(text: str, look_format: str = "raw") -> str:
    """A refresh reply as shown to the agent (see :data:`LOOK_FORMATS`)."""
    if look_format == "raw":
        return text
    if look_format == "arrival":
        return _FACING.sub(lambda m: f"You arrive at {m.group(1)}.", text)
    raise ValueError(f"look_format={look_format!r}; expected one of {LOOK_FORMATS}")


def _apply(env, br: _Branch, op: str, refresh_commands: Sequence[str] = ("look",), look_format: str = "raw") -> None:
    if op == "refresh" or op == "ablated":
        replies = []
        for cmd in refresh_commands:
            if env.remaining_budget > 0 and not env.won:
                env.step(cmd)
                replies.append(format_reply(env.observation, look_format))
        # no action left for the query: nothing can be appended
        extra = ("\n".join(replies) if op == "refresh" else ABLATED_TEXT) if replies else ""
        if op == "refresh" and replies:  # the returned observation comes with the current list
            br.admissible = tuple(env.admissible)  # (ablated hides it: the agent keeps what it had)
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
    refresh_commands: Sequence[str] = ("look",),
    look_format: str = "raw",
    stale_admissible: str = "stale",
    trace: bool = False,
) -> dict[str, Any]:
    """Run the whole protocol on one task (module docstring). Returns ``{"task": row,
    "paired": [rows], "decisions": [rows], "seconds": float}`` and, with ``trace=True``,
    ``"branches"``: per branch its condition, delay (None for the no-recovery branch),
    operation, environment actions and the engine state key at the fork.

    Raises ``ValueError`` for an unknown condition / operation, a negative delay or a
    non-positive ``cap_scale``; :class:`agentstudies.envs.alfworld.env.ReplayMismatch`
    if the verified clone disagrees with the factual record (a harness bug, never
    silently dropped).
    """
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
    if not refresh_commands or not all(isinstance(c, str) and c for c in refresh_commands):
        raise ValueError(f"refresh_commands={refresh_commands!r}: expected a non-empty list of commands")
    if look_format not in LOOK_FORMATS:
        raise ValueError(f"look_format={look_format!r}; expected one of {LOOK_FORMATS}")
    if stale_admissible not in STALE_ADMISSIBLE:
        raise ValueError(f"stale_admissible={stale_admissible!r}; expected one of {STALE_ADMISSIBLE}")
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
    fact = _Branch(pol, intro, 0, [], (1.0, 0.0), tuple(env.admissible))
    calls_model = hasattr(policy, "episode_record")
    fact_copies: list | None = [] if calls_model else None
    _play(env, fact, goal, turn_cap, keep=fact_copies)
    y_fact = bool(env.won)
    L = len(env.actions)
    f_actions, f_records = env.actions, env.records
    t0 = int(math.ceil(intervention_fraction * L))
    task_row = dict(cohort=cohort, task_id=task_id, task_type=env.task_type, factual_success=y_fact,
                    factual_actions=L, t0=t0, feasible=False, infeasible_reason="", clean_matches_factual=pd.NA,
                    replay_verified=False)
    if calls_model:
        task_row.update(policy_clone="copied", **llm_record(fact.policy))
    need_hist = max([int(c.split("-")[1]) for c in conditions if c.startswith("stale")] + [0])
    if not t0 < L:
        task_row["infeasible_reason"] = f"intervention point t0={t0} not reached before the end (L={L})"
    elif t0 < max(need_hist, 1):
        task_row["infeasible_reason"] = f"t0={t0}: not enough history for a {need_hist}-step stale observation"
    out = dict(task=task_row, paired=[], decisions=[], seconds=0.0, branches=[])
    if task_row["infeasible_reason"]:
        out["seconds"] = time.perf_counter() - t_start
        return out
    # ---- 2. verified clone of the fork state (env by checked replay, policy by re-feeding)
    env.replay(env_seed, f_actions[:t0], f_records[: t0 + 1], action_cap)
    if calls_model:  # a model is not re-asked (cost, nondeterminism): its factual state after t0 actions
        pol = fact_copies[t0]
        transcript = [{"action": f_actions[k], "observation": f_records[k + 1]["observation"]} for k in range(t0)]
    else:
        pol = copy.deepcopy(policy)
        pol.reset(task_id, seed, role="eval")
        pol, transcript = _refeed(pol, goal, intro, f_actions, f_records, t0)
    task_row["replay_verified"] = True
    task_row["feasible"] = True
    fork_snap = env.snapshot()
    fork_stats = _policy_stats(pol)
    obs_after = [r["observation"] for r in f_records]  # o_0 .. o_L (o_k after action k)
    adm_after = [tuple(r["admissible"]) for r in f_records]  # the list recorded with o_k
    matches = None
    for cond in conditions:
        adm = adm_after[t0]
        if cond == "clean":
            text = obs_after[t0]
        elif cond == "missing":
            text = MISSING_TEXT
        else:
            k = int(cond.split("-")[1])
            text = obs_after[t0 - k]
            if stale_admissible == "stale":
                adm = adm_after[t0 - k]
        env.restore(fork_snap)
        tr = [dict(x) for x in transcript]
        tr[-1] = {"action": tr[-1]["action"], "observation": text}
        br = _Branch(_clone_policy(pol), text, t0, tr, fork_stats, adm)
        # no-recovery branch, cloned at every delay / decision point on the way
        points = sorted(set(int(d) for d in delays) | set(int(d) for d in router_delays))
        snaps: dict[int, tuple] = {}
        for d in points:
            _play(env, br, goal, turn_cap, until_actions=t0 + d)
            ended = env.won or env.remaining_budget <= 0 or br.turns >= turn_cap or len(env.actions) < t0 + d
            snaps[d] = (None if ended else env.snapshot(), br.copy(), ended)
        _play(env, br, goal, turn_cap)
        y0 = bool(env.won)
        base_actions = env.actions
        rec0 = llm_record(br.policy) if calls_model else {}
        if trace:
            out["branches"].append(dict(condition=cond, delay=None, operation=None, actions=env.actions,
                                        fork_key=None, shown=None, admissible_shown=list(adm)))
        if cond == "clean":
            matches = env.actions == f_actions
        y_with: dict[tuple[int, str], tuple[bool, bool, bool]] = {}
        for d in points:
            snap, sb, ended = snaps[d]
            ops = list(operations) if d in delays else []
            if d in router_delays and "refresh" not in ops:
                ops.append("refresh")
            for op in ops:
                if ended:
                    y_with[(d, op)] = (y0, False, False, False, rec0)
                    continue
                env.restore(snap)
                fork_key = env.state_key() if trace else None
                b = sb.copy()
                n_before = len(env.actions)
                _apply(env, b, op, refresh_commands, look_format)
                n_query = len(env.actions) - n_before
                shown_after, adm_shown = b.shown, list(b.admissible)
                _play(env, b, goal, turn_cap)
                acts = env.actions
                agent_acts = acts[:n_before] + acts[n_before + n_query:]
                nxt = agent_acts[n_before:n_before + 1] != base_actions[n_before:n_before + 1]
                y_with[(d, op)] = (bool(env.won), True, agent_acts != base_actions, nxt,
                                   llm_record(b.policy) if calls_model else {})
                if trace:
                    out["branches"].append(dict(condition=cond, delay=d, operation=op, actions=env.actions,
                                                fork_key=fork_key, shown=shown_after, admissible_shown=adm_shown))
        for d in delays:
            for op in operations:
                y1, active, changed, nxt, rec1 = y_with[(int(d), op)]
                out["paired"].append(dict(cohort=cohort, task_id=task_id, condition=cond, delay=int(d), operation=op,
                                          y_without=int(y0), y_with=int(y1), active=active,
                                          factual_success=y_fact, changed=changed, changed_next=nxt,
                                          **_fork_record(rec0, rec1)))
        for d in router_delays:
            snap, sb, ended = snaps[int(d)]
            y1, active, _, _, _ = y_with[(int(d), "refresh")]
            row = dict(cohort=cohort, task_id=task_id, condition=cond, delay=int(d), y_without=int(y0), y_with=int(y1),
                       active=active, factual_success=y_fact)
            row.update(_features(sb, goal, intro, turn_cap, action_cap))
            out["decisions"].append(row)
    env.release_snapshots()
    task_row["clean_matches_factual"] = pd.NA if matches is None else bool(matches)
    out["seconds"] = time.perf_counter() - t_start
    return out


def _refeed(pol, goal: str, intro: str, f_actions, f_records, t0: int) -> tuple[Any, list]:
    """Re-feed a freshly reset policy the shown prefix of the factual run; every action
    must repeat (:class:`ReplayMismatch` otherwise). Returns the policy and transcript."""
    from agentstudies.envs.alfworld.env import ReplayMismatch

    shown = intro
    transcript = []
    for k in range(t0):
        a = pol.act(_shown(f_records[k]["admissible"], pol, goal, shown))
        if a != f_actions[k]:
            raise ReplayMismatch(k + 1, "policy action", f_actions[k], a)
        shown = f_records[k + 1]["observation"]
        transcript.append({"action": a, "observation": shown})
    return pol, transcript


def _fork_record(rec0: Mapping[str, Any], rec1: Mapping[str, Any]) -> dict[str, Any]:
    """A fork's model-call columns: the with-recovery branch's record (cumulative from the
    episode's start, shared prefix included) and the no-recovery branch's errors/limit."""
    if not rec1:
        return {}
    return {**rec1, "llm_errors_without": rec0.get("llm_errors", ""), "llm_limit_without": rec0.get("llm_limit", "")}


def _task_item(item, rng, **kw):  # seeded_map signature; the task's seeds are keyed, rng unused
    game, design = item
    return run_task(game, kw["policy"], seed=kw["root_seed"], cap_scale=kw["cap_scale"],
                    refresh_commands=kw["refresh_commands"], look_format=kw["look_format"],
                    stale_admissible=kw["stale_admissible"], **design)


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
    refresh_commands: Sequence[str] = ("look",),
    look_format: str = "raw",
    stale_admissible: str = "stale",
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
    refresh_commands : the environment query of a refresh (paper: one ``look``); each
        command costs one environment action; ``refresh`` appends the replies,
        ``ablated`` issues the same commands and hides the replies.
    look_format : how a refresh reply is shown (:data:`LOOK_FORMATS`): ``"raw"`` (the
        paper: verbatim) or ``"arrival"`` (the harness rewrites ALFWorld's look reply
        "You are facing the X" as "You arrive at X." -- for agents that only parse the
        arrival form; a harness-side formatting choice, reported with the results).
    stale_admissible : the admissible list shown with a stale observation
        (:data:`STALE_ADMISSIBLE`): ``"stale"`` (default) the list recorded with that
        earlier observation; ``"current"`` the true state's list (ablation; module docstring).
    n_jobs : parallel tasks (:func:`agentstudies.parallel.seeded_map`); tables do not
        depend on it. A policy that calls a model (an
        :class:`agentstudies.agents.alfworld.LLMAlfworldPolicy`, e.g. from
        :func:`agentstudies.agents.alfworld.make_llm_policy`) runs tasks one at a time.

    With a policy that calls a model the model is never re-asked for the shared prefix:
    the fork state's policy is the factual run's own copy after ``t0`` actions (``tasks``
    column ``policy_clone = "copied"``; the engine state is still a verified replay), and
    the tables gain :data:`agentstudies.agents.LLM_RECORD_COLUMNS` (``tasks``: the
    factual run's record; ``paired``: the with-recovery branch's, plus
    ``llm_errors_without`` / ``llm_limit_without`` of the no-recovery branch). A failed
    call is flagged there and the branch scored by the engine; nothing is dropped.

    Raises ``ValueError`` for an empty pool set, an unknown cohort without a design,
    duplicate task ids or an unknown ``stale_admissible``.
    """
    if stale_admissible not in STALE_ADMISSIBLE:
        raise ValueError(f"stale_admissible={stale_admissible!r}; expected one of {STALE_ADMISSIBLE}")
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
    calls_model = hasattr(policy, "episode_record")
    if calls_model:  # a model client does not cross process boundaries: tasks run one at a time
        n_jobs = 1
    t0 = time.perf_counter()
    res = seeded_map(_task_item, items, seed=seed, n_jobs=n_jobs, policy=policy, cap_scale=cap_scale, root_seed=seed,
                     refresh_commands=tuple(refresh_commands), look_format=look_format,
                     stale_admissible=stale_admissible)
    wall = time.perf_counter() - t0
    tasks = pd.DataFrame([r["task"] for r in res])
    paired = pd.DataFrame([x for r in res for x in r["paired"]],
                          columns=["cohort", "task_id", "condition", "delay", "operation", "y_without", "y_with",
                                   "active", "factual_success", "changed", "changed_next"]
                          + (list(LLM_RECORD_COLUMNS) + ["llm_errors_without", "llm_limit_without"]
                             if calls_model else []))
    dec = pd.DataFrame([x for r in res for x in r["decisions"]])
    timing = dict(wall_seconds=wall, worker_seconds=float(sum(r["seconds"] for r in res)), tasks=len(items))
    params = dict(seed=seed, cap_scale=cap_scale, n_jobs=n_jobs, refresh_commands=list(refresh_commands),
                  look_format=look_format, stale_admissible=stale_admissible, designs={k: {kk: list(vv) for kk, vv in v.items()}
                                                                         for k, v in designs.items() if k in pools},
                  policy=getattr(policy, "params", repr(policy)), pool_sizes={k: len(v) for k, v in pools.items()})
    return RecoveryStudy(tasks, paired, dec, params, timing)


def llm_cost(study: RecoveryStudy) -> pd.DataFrame:
    """Per cohort, what a model-calling agent cost and where it failed: tasks, the
    factual runs' model calls and input / output tokens, tasks whose factual run had a
    model error or a generation limit, forks, and forks with a model error in either
    branch. Forks' own calls are not summed (each branch's record starts at the
    episode's start, so the shared prefix would be counted once per fork). Raises
    ``KeyError`` when the study ran without a model (no model-call columns)."""
    t, p = study.tasks, study.paired
    if "llm_calls" not in t or "llm_errors" not in p:
        raise KeyError("the study has no model-call columns: run it with an LLM policy")
    t = t.assign(error=t["llm_errors"].fillna("") != "", limit=t["llm_limit"].fillna("") != "")
    p = p.assign(error=(p["llm_errors"].fillna("") != "") | (p["llm_errors_without"].fillna("") != ""))
    out = t.groupby("cohort", sort=False).agg(tasks=("task_id", "size"), factual_calls=("llm_calls", "sum"),
                                              factual_input_tokens=("input_tokens", "sum"),
                                              factual_output_tokens=("output_tokens", "sum"),
                                              factual_errors=("error", "sum"), factual_limits=("limit", "sum"))
    forks = p.groupby("cohort", sort=False).agg(forks=("task_id", "size"), forks_with_errors=("error", "sum"))
    return out.join(forks).fillna(0).reset_index()


# ------------------------------------------------------------------ router
def router_pipeline(
    study: RecoveryStudy,
    *,
    seed: int = 0,
    level: float = 0.95,
    n_draws: int = 2000,
    train: str = "factual-success",
    cate_learner: str = "dr",
    freeze_path: str | None = None,
    min_train_tasks: int = 4,
    horizon_features: str = "drop",
) -> dict[str, Any]:
    """Fit CIR and its baselines on the primary cohort, freeze, then evaluate.

    Order (CIR paper, "CIR: estimate before deciding"): the evaluation cohort's decision
    rows go into an :class:`agentstudies.recovery.OutcomeVault` *first* (sealed); CIR, the
    two anomaly baselines and the econml CATE router are fitted on the training rows
    (``train="factual-success"``: the primary cohort's factual-success tasks, as the
    paper; ``"complete"``: every prefix-feasible primary task), thresholds chosen on
    five-fold OOF predictions, refitted and frozen (SHA-256; written to
    ``freeze_path`` as JSON when given); only then are evaluation outcomes unsealed.

    When ``train="factual-success"`` yields fewer than ``min_train_tasks`` tasks (a weak
    agent or a tiny cohort), the complete primary cohort is used instead and the returned
    ``train_used`` says so (shown in the chapter) -- never silently.

    Returns ``{"fit", "cate", "cate_selection", "evaluation", "vault", "train_tasks",
    "eval_tasks", "train_used", "features", "dropped_features", "cir_eval_rate",
    "rescue_sets", "leak"}``: the evaluation also holds the blanket baselines
    ``always-d<d>`` and ``random-<rate>%`` (CIR's evaluation intervention rate;
    :func:`agentstudies.recovery.blanket_routers`), ``rescue_sets`` says which policy's
    rescued set equals CIR's, ``leak`` is :func:`horizon_leak` of the primary cohort.
    ``horizon_features="drop"`` (default) removes :data:`HORIZON_FEATURES` (they encode the
    factual run's length, i.e. the post-decision horizon); ``"keep"`` keeps them (the
    earlier behaviour). Raises ``ValueError`` with fewer than two training tasks, an
    empty evaluation cohort or an unknown ``horizon_features``.
    """
    import json
    from pathlib import Path

    from agentstudies.recovery import (OutcomeVault, blanket_routers, evaluate_policies, fit_cate_router, fit_router,
                                       rescue_sets)

    if horizon_features not in ("drop", "keep"):
        raise ValueError(f"horizon_features={horizon_features!r}: expected 'drop' or 'keep'")
    feats = [f for f in study.feature_names if horizon_features == "keep" or f not in HORIZON_FEATURES]
    dec = study.decisions
    if dec.empty or "cohort" not in dec:
        raise ValueError("the study has no router decision rows")
    ev = dec[dec["cohort"] == "evaluation"].reset_index(drop=True)
    if ev.empty:
        raise ValueError("no prefix-feasible task in the evaluation cohort")
    vault = OutcomeVault(ev, feats)  # sealed before anything is fitted
    tr = dec[dec["cohort"] == "primary"]
    train_used = train
    if train == "factual-success":
        fs = tr[tr["factual_success"].astype(bool)]
        k = int(fs["task_id"].nunique())
        if k >= min_train_tasks:
            tr = fs
        else:
            train_used = f"complete (only {k} factual-success primary task(s) < {min_train_tasks})"
    elif train != "complete":
        raise ValueError(f"train={train!r}: expected 'factual-success' or 'complete'")
    tr = tr.reset_index(drop=True)
    n_train = int(tr["task_id"].nunique())
    if n_train < 2:
        raise ValueError(f"{n_train} training task(s) ({train}); the OOF threshold selection needs at least 2 -- "
                         f"enlarge the primary cohort or use train='complete'")
    fit = fit_router(tr, feats, seed=seed)
    cate, cate_sel = fit_cate_router(tr, feats, learner=cate_learner, seed=seed, base=fit.routers["cir"])
    routers = {**fit.routers, "cate": cate}
    if freeze_path is not None:
        p = Path(freeze_path)
        p.parent.mkdir(parents=True, exist_ok=True)
        finite = lambda th: {k: (v if np.isfinite(v) else str(v)) for k, v in th.items()}  # noqa: E731 - strict JSON
        p.write_text(json.dumps({k: dict(kind=r.kind, sha256=r.sha256, thresholds=finite(r.thresholds))
                                 for k, r in routers.items()}, indent=1, sort_keys=True) + "\n")
    # degeneracy-revealing baselines (issue 25 item 4): blanket "always at d" rules and a random
    # refresh matched to CIR's rate on the *evaluation* pool (decisions need no outcomes)
    eval_rate = float(routers["cir"].decide(vault.features)["intervene"].mean())
    blankets = blanket_routers(feats, rate=eval_rate, seed=seed, candidate_delays=routers["cir"].candidate_delays,
                               clean=routers["cir"].clean)
    evaluation = evaluate_policies({**routers, **blankets}, vault, level=level, n_draws=n_draws, seed=seed)
    return dict(fit=fit, cate=cate, cate_selection=cate_sel, evaluation=evaluation, vault=vault,
                train_tasks=n_train, eval_tasks=int(ev["task_id"].nunique()), train_used=train_used,
                features=feats, dropped_features=[f for f in study.feature_names if f not in feats],
                cir_eval_rate=eval_rate, rescue_sets=rescue_sets(evaluation, "cir"),
                leak=horizon_leak(study, cohort="primary"))


# ------------------------------------------------------------------ paper values
def paper_table(name: str) -> pd.DataFrame:
    """The paper's values of table ``name`` from ``data/paper/alfworld_recovery_<name>.csv``
    (labelled ``source = "paper"``). Raises ``KeyError`` naming the stored tables."""
    from agentstudies.studies._paper import paper_values

    return paper_values("alfworld_recovery", name).assign(source="paper")


# ------------------------------------------------------------------ paper-shaped tables
def _fmt(est, lo=np.nan, hi=np.nan, digits: int = 1) -> str:
    if est is None or (isinstance(est, float) and np.isnan(est)):
        return ""
    s = f"{est:+.{digits}f}"
    if lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi):
        s += f" [{lo:+.{digits}f}, {hi:+.{digits}f}]"
    return s


def _paper_lookup(p: pd.DataFrame, **keys):
    sel = p
    for k, v in keys.items():
        sel = sel[sel[k].astype(str) == str(v)]
    return sel.iloc[0] if len(sel) else None


def table_delta(result, *, cohort: str = "primary-factual-success", operation: str = "refresh",
                stale: str = "stale-2") -> pd.DataFrame:
    """Delta (points, [interval]) of clean and stale and stale - clean per delay for one
    cohort -- this run's rows, then the paper's (``source``; CIR paper, first table and
    "Stale-minus-clean differences stay positive at later delays")."""
    c = result.cells[(result.cells["cohort"] == cohort) & (result.cells["operation"] == operation)]
    k = result.contrasts[(result.contrasts["cohort"] == cohort) & (result.contrasts["operation"] == operation)
                         & (result.contrasts["condition"] == stale)]
    rows = []
    for d in sorted(c["delay"].unique()):
        cl = c[(c["condition"] == "clean") & (c["delay"] == d)]
        st = c[(c["condition"] == stale) & (c["delay"] == d)]
        kk = k[k["delay"] == d]
        rows.append({"source": "this run", "delay": int(d), "n": int(c["n"].iloc[0]),
                     "clean": _fmt(*cl[["delta", "delta_ci_low", "delta_ci_high"]].iloc[0]) if len(cl) else "",
                     stale: _fmt(*st[["delta", "delta_ci_low", "delta_ci_high"]].iloc[0]) if len(st) else "",
                     f"{stale} − clean": _fmt(*kk[["estimate", "ci_low", "ci_high"]].iloc[0]) if len(kk) else ""})
    p = paper_table("delta")
    p = p[p["cohort"] == cohort]
    for d in sorted(p["delay"].unique()):
        g = p[p["delay"] == d]
        def val(cond, est):
            r = _paper_lookup(g, condition=cond, estimand=est)
            return "" if r is None else _fmt(r["value"], r["ci_low"], r["ci_high"], 2)
        rows.append({"source": "paper", "delay": int(d), "n": int(g["n"].iloc[0]), "clean": val("clean", "delta"),
                     stale: val(stale, "delta"), f"{stale} − clean": val(stale, "delta_minus_clean")})
    return pd.DataFrame(rows)


def table_counts(result, *, cohorts: Sequence[str] = ("primary-complete", "independent-complete"),
                 delay: int = 0, operation: str = "refresh", conditions: Sequence[str] = ("clean", "stale-2"),
                 paper: str = "complete") -> pd.DataFrame:
    """Paired counts (rescue / harm / both succeed / both fail) and Delta per cohort and
    condition at one delay, this run then paper (CIR paper, complete cohorts)."""
    c = result.cells
    rows = []
    for coh in cohorts:
        for cond in conditions:
            r = c[(c["cohort"] == coh) & (c["condition"] == cond) & (c["delay"] == delay) & (c["operation"] == operation)]
            if r.empty:
                continue
            r = r.iloc[0]
            rows.append({"source": "this run", "cohort": coh, "condition": cond, "n": int(r["n"]), "rescue": int(r["rescue"]),
                         "harm": int(r["harm"]), "both succeed": int(r["both_succeed"]), "both fail": int(r["both_fail"]),
                         "Δ (pp)": _fmt(r["delta"], r["delta_ci_low"], r["delta_ci_high"])})
    p = paper_table(paper)
    for coh in cohorts:
        for cond in conditions:
            g = p[(p["cohort"] == coh) & (p["condition"] == cond) & (p["delay"] == delay)]
            if g.empty:
                continue
            d = _paper_lookup(g, estimand="delta")
            rs = _paper_lookup(g, estimand="rescue")
            hm = _paper_lookup(g, estimand="harm")
            rows.append({"source": "paper", "cohort": coh, "condition": cond, "n": int(g["n"].iloc[0]),
                         "rescue": pd.NA if rs is None else int(rs["value"]), "harm": pd.NA if hm is None else int(hm["value"]),
                         "both succeed": pd.NA, "both fail": pd.NA,
                         "Δ (pp)": "" if d is None else _fmt(d["value"], d["ci_low"], d["ci_high"], 2)})
    out = pd.DataFrame(rows)
    for col in ("rescue", "harm", "both succeed", "both fail"):
        if col in out:
            out[col] = out[col].astype("Int64")
    return out


def table_mechanism(result, *, cohort: str = "mechanism-complete",
                    cells: Sequence[tuple[str, int]] = (("stale-2", 4), ("clean", 0))) -> pd.DataFrame:
    """Full refresh / content-ablated / replan-only: Delta, rescue / harm and the rescues
    shared with full refresh, per (condition, delay); this run then paper (CIR paper,
    mechanism controls)."""
    c = result.cells[result.cells["cohort"] == cohort]
    rows = []
    shared = {}
    for op in ("ablated", "replan"):
        try:
            sh = result.shared_rescues("refresh", op)
            for r in sh[sh["cohort"] == cohort].itertuples(index=False):
                shared[(r.condition, int(r.delay), op)] = int(r.shared)
        except KeyError:
            pass
    for cond, d in cells:
        for op in OPERATIONS:
            r = c[(c["condition"] == cond) & (c["delay"] == d) & (c["operation"] == op)]
            if r.empty:
                continue
            r = r.iloc[0]
            rows.append({"source": "this run", "condition": cond, "delay": d, "operation": op, "n": int(r["n"]),
                         "rescue": int(r["rescue"]), "harm": int(r["harm"]),
                         "Δ (pp)": _fmt(r["delta"], r["delta_ci_low"], r["delta_ci_high"]),
                         "rescues shared with full": int(r["rescue"]) if op == "refresh" else shared.get((cond, d, op), pd.NA)})
    p = paper_table("mechanism")
    for cond, d in cells:
        for op in OPERATIONS:
            g = p[(p["condition"] == cond) & (p["delay"] == d) & (p["operation"] == op)]
            if g.empty:
                continue
            dl = _paper_lookup(g, estimand="delta")
            rs = _paper_lookup(g, estimand="rescue")
            shr = _paper_lookup(g, estimand="shared_rescues_with_refresh")
            rows.append({"source": "paper", "condition": cond, "delay": d, "operation": op, "n": int(g["n"].iloc[0]),
                         "rescue": pd.NA if rs is None else int(rs["value"]), "harm": pd.NA,
                         "Δ (pp)": "" if dl is None else _fmt(dl["value"], dl["ci_low"], dl["ci_high"], 2),
                         "rescues shared with full": (int(rs["value"]) if (rs is not None and op == "refresh") else
                                                      (pd.NA if shr is None else int(shr["value"])))})
    out = pd.DataFrame(rows)
    for col in ("rescue", "harm", "rescues shared with full"):
        if col in out:
            out[col] = out[col].astype("Int64")
    return out


def table_router(evaluation) -> pd.DataFrame:
    """The CIR evaluation table: success never -> policy, Delta [interval], rescue / harm,
    intervention rate, sign-flip p; per policy (condition ``all``) and CIR per condition;
    this run then paper (CIR paper, "Test: 70.33% -> 73.33%")."""
    t = evaluation.table
    rows = []
    order = ["never", "cir", "anomaly", "rate-matched", "cate"] + [p for p in dict.fromkeys(t["policy"])
                                                                   if p.startswith(("always-", "random-"))]
    for pol in [p for p in order if p in set(t["policy"])]:
        conds = ["all"] + ([c for c in ("clean", "stale-1", "stale-2", "missing") if c in set(t["condition"])]
                           if pol == "cir" else [])
        for cond in conds:
            r = t[(t["policy"] == pol) & (t["condition"] == cond)]
            if r.empty:
                continue
            r = r.iloc[0]
            rows.append({"source": "this run", "policy": pol, "condition": cond, "n": int(r["n"]),
                         "success": f"{r['success_never']:.1f} → {r['success_policy']:.1f}",
                         "Δ vs never (pp)": _fmt(r["delta"], r["ci_low"], r["ci_high"]),
                         "rescue / harm": f"{int(r['rescue'])} / {int(r['harm'])}",
                         "refreshed (%)": round(float(r["intervention_rate"]), 1),
                         "sign-flip p": "" if not np.isfinite(r["sign_flip_p"]) else f"{r['sign_flip_p']:.3f}"})
    p = paper_table("evaluation")
    for r in p.itertuples(index=False):
        rows.append({"source": "paper", "policy": r.policy, "condition": r.condition, "n": int(r.n),
                     "success": f"{r.success_never:.2f} → {r.success_policy:.2f}",
                     "Δ vs never (pp)": _fmt(r.delta, r.ci_low, r.ci_high, 2),
                     "rescue / harm": f"{int(r.rescue)} / {int(r.harm)}",
                     "refreshed (%)": r.intervention_rate if np.isfinite(r.intervention_rate) else np.nan,
                     "sign-flip p": "" if not np.isfinite(r.sign_flip_p) else f"{r.sign_flip_p:.3f}"})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ findings that can fail (issue 25)
#: Router features computed from the decision point's step count: the intervention point is
#: ``t0 = ceil(0.25 L)`` with ``L`` the *factual* run's length, so at a decision point they
#: encode the post-decision horizon (how long the factual run went on, i.e. mostly whether
#: it failed at the cap). :func:`router_pipeline` drops them unless told to keep them;
#: :func:`horizon_leak` measures how well they separate factual success from failure.
HORIZON_FEATURES: tuple[str, ...] = ("steps_frac", "turns_left_frac")

#: Columns of :func:`testability` (``testability.csv``).
TESTABILITY_COLUMNS: tuple[str, ...] = ("cohort", "operation", "condition", "delay", "forks", "active",
                                        "action_changed", "next_action_changed", "outcome_changed")


def testability(study: RecoveryStudy) -> pd.DataFrame:
    """Did each intervention change anything? (issue 25 item 2).

    One row per cohort x operation x condition x delay of ``study.paired``: forks, active
    forks (branch still running at the delay), and the share of *all* forks (an ended
    branch changes nothing) in which the operation changed the agent's own later actions
    (``action_changed``), its next action (``next_action_changed``) and the outcome
    (``outcome_changed``, ``y_with != y_without``) -- fractions in [0, 1].

    Raises ``KeyError`` if the paired table lacks ``changed`` / ``changed_next``.
    """
    p = study.paired
    for col in ("changed", "changed_next"):
        if col not in p:
            raise KeyError(f"paired table lacks {col!r}: rerun the study with this version")
    p = p.assign(outcome=(p["y_with"] != p["y_without"]).astype(float), changed=p["changed"].astype(float),
                 changed_next=p["changed_next"].astype(float), active=p["active"].astype(int))
    g = p.groupby(["cohort", "operation", "condition", "delay"], sort=False)
    out = g.agg(forks=("task_id", "size"), active=("active", "sum"), action_changed=("changed", "mean"),
                next_action_changed=("changed_next", "mean"), outcome_changed=("outcome", "mean")).reset_index()
    return out[list(TESTABILITY_COLUMNS)]


def horizon_leak(study: RecoveryStudy, features: Sequence[str] | None = None, *, cohort: str = "primary",
                 condition: str = "clean") -> pd.DataFrame:
    """How well each router feature separates factual success from failure (a leak of
    the post-decision horizon when it is near perfect).

    Per router delay and feature, on ``cohort``'s ``condition`` decision rows (one per
    task): ``auc`` = P(feature of a factual success > that of a failure) + 0.5 P(tie)
    (the Mann-Whitney statistic / n1 n0), ``separation = max(auc, 1 - auc)`` (1 = a
    threshold splits successes from failures perfectly), n_success, n_failure. ``auc`` is
    NaN when either group is empty (e.g. factual-success training rows).
    """
    from scipy.stats import mannwhitneyu

    feats = list(features if features is not None else study.feature_names)
    d = study.decisions
    d = d[(d["cohort"] == cohort) & (d["condition"] == condition)]
    rows = []
    for delay, g in d.groupby("delay"):
        y = g["factual_success"].astype(bool).to_numpy()
        for f in feats:
            x = g[f].to_numpy(float)
            n1, n0 = int(y.sum()), int((~y).sum())
            auc = float(mannwhitneyu(x[y], x[~y]).statistic / (n1 * n0)) if n1 and n0 else np.nan
            rows.append(dict(feature=f, delay=int(delay), auc=auc, separation=max(auc, 1 - auc) if n1 and n0 else np.nan,
                             n_success=n1, n_failure=n0, horizon_feature=f in HORIZON_FEATURES))
    return pd.DataFrame(rows, columns=["feature", "delay", "auc", "separation", "n_success", "n_failure",
                                       "horizon_feature"])


def _paper_text(table: str, unit: str = " pp", **keys) -> str:
    """The paper's value (and interval when given) from ``data/paper`` as text."""
    p = paper_table(table)
    r = _paper_lookup(p, **keys)
    if r is None:
        return "n/a"
    val = r["value"] if "value" in r else r["delta"]
    s = f"{val:+.2f}{unit}" if unit else f"{val:g}"  # no unit: a count
    if np.isfinite(r.get("ci_low", np.nan)) and np.isfinite(r.get("ci_high", np.nan)):
        s += f" [{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]"
    return s


def _bootstrap_diff(diff: pd.Series, *, level: float, n_draws: int, seed: int, key: str) -> tuple[float, float, float, int]:
    """Mean of a per-task difference (points) with its task-level percentile bootstrap
    interval: ``(estimate, ci_low, ci_high, n_tasks)`` (NaNs when empty)."""
    from agentstudies.stats import paired_cluster_bootstrap, percentile_interval

    v = diff.to_numpy(float)
    if v.size == 0:
        return np.nan, np.nan, np.nan, 0
    sums = np.column_stack([v, np.ones_like(v)])
    rng = np.random.default_rng(keyed_seed(seed, "findings", key))
    reps = paired_cluster_bootstrap(sums, lambda t: t[:, 0] / t[:, 1], n_draws=n_draws, rng=rng)  # t: (draws, 2) totals
    lo, hi = percentile_interval(reps, level)
    return float(v.mean()), float(lo), float(hi), int(v.size)


def _arm_share(testab: pd.DataFrame | None, cohort: str, cells: Sequence[tuple[str, str, int]],
               col: str = "action_changed") -> tuple[float, int]:
    """Largest share ``col`` over the arm cells (operation, condition, delay) of a run
    cohort, and their forks; (NaN, 0) without a testability table or cells."""
    if testab is None:
        return np.nan, 0
    t = testab[testab["cohort"] == cohort]
    sel = pd.concat([t[(t["operation"] == op) & (t["condition"] == c) & (t["delay"] == d)] for op, c, d in cells])
    if sel.empty:
        return np.nan, 0
    return float(sel[col].max()), int(sel["forks"].sum())


def _interval_or_untestable(name, paper, est, lo, hi, n, *, side, level, quantity, testab, run_cohort, cells,
                            col="action_changed", what="changed the agent's actions"):
    """An interval finding, unless the arms it rests on changed nothing (measured)."""
    from agentstudies.findings import interval_finding, untestable_finding

    share, forks = _arm_share(testab, run_cohort, cells, col)
    if np.isfinite(share) and share == 0.0 and forks > 0:
        arms = ", ".join(f"{op} ({c}, d = {d})" for op, c, d in cells)
        return untestable_finding(name, paper, measured=share,
                                  why=f"{arms} {what} in 0 of {forks} forks of the {run_cohort} cohort")
    return interval_finding(name, paper, est, lo, hi, n, paper_side=side, level=level, quantity=quantity, fmt="+.1f")


def recovery_findings(result, evaluation=None, testab: pd.DataFrame | None = None, *, n_draws: int = 2000,
                      seed: int = 0):
    """The CIR paper's findings judged on this run (issue 25): a :class:`agentstudies.findings.Findings`.

    Parameters
    ----------
    result : :class:`agentstudies.recovery.RecoveryResult` of ``study.analysis_table()``;
        its ``level`` is the level of every interval here.
    evaluation : :class:`agentstudies.recovery.RouterEvaluation` (router findings; omitted if None).
    testab : :func:`testability` of the study; an arm that changed the agent's actions in
        0 forks makes the findings resting on it ``not testable here`` (the CIR
        "harms no clean trajectory" finding: an arm that changed no clean *outcome*).
    n_draws, seed : task-level bootstrap of the contrasts computed here (full - replan;
        CIR vs baselines; CIR's stale-2 gain vs the other conditions).

    Each row's rule names its interval (Delta and contrasts in points, CIR paper tables;
    thresholds 0, the paper's sign-flip criterion p < 0.05). Never a point-estimate sign.

    Length: one block per paper finding (twelve to sixteen), in the paper's order.
    """
    from agentstudies.findings import Findings, exact_finding, untestable_finding

    level = float(result.params.get("level", 0.95))
    c = result.cells.set_index(["cohort", "condition", "delay", "operation"])
    k = result.contrasts.set_index(["cohort", "condition", "delay", "operation"])
    nan4 = (np.nan, np.nan, np.nan, 0)

    def cell(coh, cond, d, op="refresh"):
        try:
            r = c.loc[(coh, cond, d, op)]
            return float(r["delta"]), float(r["delta_ci_low"]), float(r["delta_ci_high"]), int(r["n"])
        except KeyError:
            return nan4

    def con(coh, d, cond="stale-2", op="refresh"):
        try:
            r = k.loc[(coh, cond, d, op)]
            return float(r["estimate"]), float(r["ci_low"]), float(r["ci_high"]), int(r["n"])
        except KeyError:
            return nan4

    kw = dict(level=level, testab=testab)
    fs, rows = "primary-factual-success", []
    rows.append(_interval_or_untestable(
        "Immediate refresh harms clean factual-success trajectories", _paper_text("delta", cohort=fs, condition="clean",
                                                                                   delay=0, estimand="delta"),
        *cell(fs, "clean", 0), side="below", quantity="Δ (clean, d = 0, pp)", run_cohort="primary",
        cells=[("refresh", "clean", 0)], **kw))
    for d in DELAYS:
        rows.append(_interval_or_untestable(
            f"Stale − clean > 0 at d = {d} (factual-success cohort)",
            _paper_text("delta", cohort=fs, condition="stale-2", delay=d, estimand="delta_minus_clean"),
            *con(fs, d), side="above", quantity=f"Δ(stale-2) − Δ(clean) at d = {d} (pp)", run_cohort="primary",
            cells=[("refresh", "clean", d), ("refresh", "stale-2", d)], **kw))
    ind = "independent-factual-success"
    rows.append(_interval_or_untestable(
        "Independent cohort keeps stale > clean (d = 2)",
        f"stale {_paper_text('delta', cohort=ind, condition='stale-2', delay=2, estimand='delta')} vs clean "
        f"{_paper_text('delta', cohort=ind, condition='clean', delay=2, estimand='delta')}",
        *con(ind, 2), side="above", quantity="Δ(stale-2) − Δ(clean) at d = 2, independent (pp)",
        run_cohort="independent", cells=[("refresh", "clean", 2), ("refresh", "stale-2", 2)], **kw))
    pc = "primary-complete"
    rows.append(_interval_or_untestable(
        "Complete primary cohort: stale Δ > clean Δ at d = 0",
        _paper_text("complete", cohort=pc, condition="stale-2", delay=0, estimand="delta_minus_clean"),
        *con(pc, 0), side="above", quantity="Δ(stale-2) − Δ(clean) at d = 0, complete (pp)", run_cohort="primary",
        cells=[("refresh", "clean", 0), ("refresh", "stale-2", 0)], **kw))
    rows.append(_two_way(result, testab))
    rows += _mechanism_findings(result, cell, testab, level=level, n_draws=n_draws, seed=seed)
    if evaluation is not None:
        rows += _router_findings(evaluation, testab, level=level, n_draws=n_draws, seed=seed)
    return Findings.build(rows, seed=seed, title="CIR paper findings on this run (simulated agent unless an LLM)",
                          level=level, n_draws=n_draws)


def _two_way(result, testab):
    """'Refresh both rescues and harms under stale' (complete primary, d = 0): the
    paper's exact criterion rescue > 0 and harm > 0."""
    from agentstudies.findings import exact_finding, untestable_finding

    paper = (f"{_paper_text('complete', '', cohort='primary-complete', condition='stale-2', delay=0, estimand='rescue')}"
             f" rescues / {_paper_text('complete', '', cohort='primary-complete', condition='stale-2', delay=0, estimand='harm')}"
             " harms")
    name = "Refresh both rescues and harms under two-step stale (complete, d = 0)"
    share, forks = _arm_share(testab, "primary", [("refresh", "stale-2", 0)])
    if np.isfinite(share) and share == 0.0 and forks > 0:
        return untestable_finding(name, paper, measured=share,
                                  why=f"refresh (stale-2, d = 0) changed the agent's actions in 0 of {forks} forks")
    r = result.cells[(result.cells["cohort"] == "primary-complete") & (result.cells["condition"] == "stale-2")
                     & (result.cells["delay"] == 0) & (result.cells["operation"] == "refresh")]
    if r.empty:
        return untestable_finding(name, paper, measured=0.0, why="this run has no complete primary stale-2 cell")
    r = r.iloc[0]
    return exact_finding(name, paper, float(r["rescue"] + r["harm"]), int(r["n"]),
                         holds=bool(r["rescue"] > 0 and r["harm"] > 0),
                         rule=f"rescue > 0 and harm > 0 (this run: {int(r['rescue'])} rescues, {int(r['harm'])} harms)",
                         fmt=".0f", otherwise="inconclusive")


def _mechanism_findings(result, cell, testab, *, level, n_draws, seed):
    """Mechanism controls (stale-2, d = 4, mechanism cohort): full refresh helps; the
    content-ablated refresh keeps a positive effect; full refresh beats replan-only."""
    mc = "mechanism-complete"
    paper = lambda op: _paper_text("mechanism", cohort=mc, condition="stale-2", delay=4, operation=op,  # noqa: E731
                                   estimand="delta")
    rows = [
        _interval_or_untestable("Full refresh helps under two-step stale at d = 4 (mechanism cohort)", paper("refresh"),
                                *cell(mc, "stale-2", 4, "refresh"), side="above", level=level, testab=testab,
                                quantity="Δ full refresh (stale-2, d = 4, pp)", run_cohort="mechanism",
                                cells=[("refresh", "stale-2", 4)]),
        _interval_or_untestable("Content-ablated refresh keeps a positive effect (stale-2, d = 4)", paper("ablated"),
                                *cell(mc, "stale-2", 4, "ablated"), side="above", level=level, testab=testab,
                                quantity="Δ content-ablated (stale-2, d = 4, pp)", run_cohort="mechanism",
                                cells=[("ablated", "stale-2", 4)]),
    ]
    t = result.table
    t = t[(t["cohort"] == mc) & (t["condition"] == "stale-2") & (t["delay"] == 4)]
    w = t.pivot_table(index="task_id", columns="operation", values="y_with", aggfunc="first")
    diff = (100 * (w["refresh"] - w["replan"])) if {"refresh", "replan"} <= set(w.columns) else pd.Series(dtype=float)
    est = _bootstrap_diff(diff, level=level, n_draws=n_draws, seed=seed, key="full-minus-replan")
    rows.append(_interval_or_untestable(
        "Full refresh beats replan-only (stale-2, d = 4)", f"{paper('refresh')} vs {paper('replan')}", *est,
        side="above", level=level, testab=testab, quantity="Δ full − Δ replan-only (stale-2, d = 4, pp)",
        run_cohort="mechanism", cells=[("replan", "stale-2", 4)]))
    return rows


def _policy_diff(ep: pd.DataFrame, a: str, b: str | None = None, cond_a: str | None = None,
                 cond_b: str | None = None) -> pd.Series:
    """Per-task difference (points per trajectory) between two policies' outcomes, or
    (``b`` None) between policy ``a``'s gains Delta = Y^pi - Y^never on two conditions."""
    e = ep.assign(gain=100.0 * (ep["y_policy"] - ep["y_never"]), y=100.0 * ep["y_policy"])
    if b is not None:
        w = e.pivot_table(index=["task_id", "condition"], columns="policy", values="y", aggfunc="first")
        if a not in w or b not in w:
            return pd.Series(dtype=float)
        return (w[a] - w[b]).groupby(level="task_id").mean()
    g = e[e["policy"] == a].pivot_table(index="task_id", columns="condition", values="gain", aggfunc="first")
    if cond_a not in g or cond_b not in g:
        return pd.Series(dtype=float)
    return g[cond_a] - g[cond_b]


def _router_findings(evaluation, testab, *, level, n_draws, seed):
    """CIR findings on the evaluation pool: gain over never-refresh, no clean harm,
    largest gain on two-step stale, CIR > both anomaly baselines, sign-flip p < 0.05.

    Length: five findings, each with its paper value, interval and testability check.
    """
    from agentstudies.findings import exact_finding, interval_finding, untestable_finding

    t = evaluation.table.set_index(["policy", "condition"])
    ep = evaluation.episodes
    pe = paper_table("evaluation").set_index(["policy", "condition"])
    pv = lambda pol, cond, col="delta": float(pe.loc[(pol, cond), col]) if (pol, cond) in pe.index else np.nan  # noqa: E731
    rows = []
    arms = [("refresh", c, d) for c in CONDITIONS for d in ROUTER_DELAYS]
    share, forks = _arm_share(testab, "evaluation", arms)
    inert = np.isfinite(share) and share == 0.0 and forks > 0
    what = "changed the agent's actions"
    oall, _ = _arm_share(testab, "evaluation", arms, col="outcome_changed")
    if not inert and np.isfinite(oall) and oall == 0.0 and forks > 0:  # actions changed, no outcome ever did
        inert, share, what = True, oall, "changed the outcome"
    name = "CIR raises success over never-refresh"
    paper = f"{pv('cir', 'all'):+.2f} pp [{pv('cir', 'all', 'ci_low'):+.2f}, {pv('cir', 'all', 'ci_high'):+.2f}]"
    if inert:
        why = f"refresh {what} in 0 of {forks} evaluation forks"
        rows.append(untestable_finding(name, paper, why=why, measured=share))
    else:
        r = t.loc[("cir", "all")]
        rows.append(interval_finding(name, paper, r["delta"], r["ci_low"], r["ci_high"], r["n"], paper_side="above",
                                     level=level, quantity="CIR Δ vs never (pp, evaluation pool)", fmt="+.1f"))
    # no clean harm: testable only if refresh can change a clean outcome at some router delay
    name = "CIR harms no clean trajectory"
    paper = f"{pv('cir', 'clean', 'harm'):.0f} clean harms"
    oshare, oforks = _arm_share(testab, "evaluation", [("refresh", "clean", d) for d in ROUTER_DELAYS],
                                col="outcome_changed")
    if np.isfinite(oshare) and oshare == 0.0 and oforks > 0:
        rows.append(untestable_finding(name, paper, measured=oshare,
                                       why=f"refresh on clean observations changed no outcome in {oforks} evaluation "
                                           "forks at any delay, so no router can harm a clean trajectory here"))
    else:
        h = evaluation.clean_harm.set_index("policy").loc["cir"]
        rows.append(exact_finding(name, paper, h["harms"], h["n"], holds=bool(h["harms"] == 0),
                                  rule="0 clean harms (the paper reports 0)", fmt=".0f"))
    # largest gain on two-step stale: stale-2's gain exceeds each other condition's
    others = [x for x in ("clean", "stale-1", "missing") if (("cir", x) in t.index)]
    ests = [_bootstrap_diff(_policy_diff(ep, "cir", None, "stale-2", o), level=level, n_draws=n_draws, seed=seed,
                            key=f"cir-stale2-vs-{o}") for o in others]
    name = "CIR's largest gain is on two-step stale"
    paper = f"{pv('cir', 'stale-2'):+.2f} pp on stale-2"
    if inert:
        rows.append(untestable_finding(name, paper, why=f"refresh {what} in 0 of {forks} evaluation forks", measured=share))
    elif ests:
        lo, hi = min(e[1] for e in ests), min(e[2] for e in ests)
        est = min(e[0] for e in ests)
        rows.append(interval_finding(name, paper, est, lo, hi, ests[0][3], paper_side="above",
                                     level=level, fmt="+.1f",
                                     quantity="every Δ(stale-2) − Δ(other condition) of CIR (pp; the bounds are "
                                              "the smallest lower and smallest upper bound of the three intervals)"))
    for base in ("anomaly", "rate-matched"):
        name = f"CIR beats the {base} baseline"
        paper = f"{pv('cir', 'all'):+.2f} vs {pv(base, 'all'):+.2f} pp"
        if inert:
            rows.append(untestable_finding(name, paper, why=f"refresh {what} in 0 of {forks} evaluation forks", measured=share))
            continue
        e = _bootstrap_diff(_policy_diff(ep, "cir", base), level=level, n_draws=n_draws, seed=seed, key=f"cir-{base}")
        rows.append(interval_finding(name, paper, *e, paper_side="above", level=level, fmt="+.1f",
                                     quantity=f"success(CIR) − success({base}) per trajectory (pp)"))
    p, alpha = float(t.loc[("cir", "all"), "sign_flip_p"]), 1 - level
    if inert:
        rows.append(untestable_finding("CIR's gain is significant (sign-flip test)",
                                       f"p = {pv('cir', 'all', 'sign_flip_p'):.3f}", measured=share,
                                       why=f"refresh {what} in 0 of {forks} evaluation forks"))
        return rows
    rows.append(exact_finding("CIR's gain is significant (sign-flip test)", f"p = {pv('cir', 'all', 'sign_flip_p'):.3f}",
                              p, t.loc[("cir", "all"), "n"], holds=bool(p < alpha),
                              rule=f"task-level sign-flip p < {alpha:g} = 1 − level (this run: p = {p:.3f})", fmt=".3f",
                              otherwise="inconclusive"))
    return rows


#: The planted and null subjects of :func:`recovery_controls` (labels appear on every row).
CONTROL_SUBJECTS = {
    "planted": "planted (synthetic paired table): refresh rescues 40% of failing stale-2 and harms 15% of "
               "succeeding clean trajectories",
    "null": "null (synthetic paired table): refresh flips 10% of outcomes either way in both conditions; "
            "success 50%, so no effect",
}


def _control_table(kind: str, n_tasks: int, rng: np.random.Generator) -> pd.DataFrame:
    """One synthetic paired table (conditions clean / stale-2, delay 0, refresh) of a
    :data:`CONTROL_SUBJECTS` subject; ``cohort = "primary-complete"``."""
    rows = []
    for t in range(n_tasks):
        for cond in ("clean", "stale-2"):
            if kind == "planted":
                y0 = int(rng.random() < (0.8 if cond == "clean" else 0.5))
                u = rng.random()
                y1 = (1 if (y0 == 0 and u < 0.4) else y0) if cond == "stale-2" else (0 if (y0 == 1 and u < 0.15) else y0)
            else:
                y0 = int(rng.random() < 0.5)
                y1 = 1 - y0 if rng.random() < 0.1 else y0
            rows.append(dict(cohort="primary-complete", task_id=f"s{t:03d}", condition=cond, delay=0,
                             operation="refresh", y_without=y0, y_with=int(y1)))
    return pd.DataFrame(rows)


def _control_replicate(item, rng, **kw):  # seeded_map signature
    from agentstudies.findings import judge
    from agentstudies.recovery import analyze_paired

    kind, r = item
    tab = _control_table(kind, kw["n_tasks"], np.random.default_rng(keyed_seed(kw["root"], "control", kind, r)))
    res = analyze_paired(tab, level=kw["level"], n_draws=kw["n_draws"], seed=int(keyed_seed(kw["root"], "boot", kind, r)
                                                                                  .generate_state(1)[0]))
    c = res.cells.set_index(["condition"]).loc["clean"]
    k = res.contrasts.iloc[0]
    return (judge(c["delta_ci_low"], c["delta_ci_high"], paper_side="below"),
            judge(k["ci_low"], k["ci_high"], paper_side="above"))


def recovery_controls(*, replicates: int = 40, n_tasks: int = 60, level: float = 0.95, n_draws: int = 400,
                      seed: int = 0, n_jobs: int = 1) -> pd.DataFrame:
    """Planted controls of the recovery verdict rules (issue 25 item 3): ``controls.csv``.

    Runs the chapter's own rules -- :func:`agentstudies.recovery.analyze_paired` task-level
    bootstrap intervals judged by :func:`agentstudies.findings.judge` -- on ``replicates``
    synthetic paired tables of ``n_tasks`` tasks from a *planted* subject (the paper's
    clean harm and stale rescue exist by construction) and a *null* subject (no effect;
    :data:`CONTROL_SUBJECTS`). Families: "immediate refresh harms clean trajectories"
    (Delta_clean CI below 0) and "stale − clean > 0" (contrast CI above 0). Returns
    :data:`agentstudies.findings.CONTROL_COLUMNS` rows: power (planted) and
    false-positive rate (null) with exact Clopper-Pearson ``level`` intervals.

    A synthetic paired table, not the ALFWorld engine: this checks the *method*, whose
    inputs are paired tables of any harness. Raises ``ValueError`` for fewer than 2
    replicates or tasks.
    """
    from agentstudies.findings import control_row

    if replicates < 2 or n_tasks < 2:
        raise ValueError(f"replicates={replicates}, n_tasks={n_tasks}: need at least 2 of each")
    items = [(kind, r) for kind in ("planted", "null") for r in range(replicates)]
    out = seeded_map(_control_replicate, items, seed=seed, n_jobs=n_jobs, n_tasks=n_tasks, level=level, root=seed,
                     n_draws=n_draws)
    fams = [("Immediate refresh harms clean trajectories", f"{100 * level:g}% CI of Δ(clean) below 0"),
            ("Stale − clean > 0", f"{100 * level:g}% CI of Δ(stale-2) − Δ(clean) above 0")]
    rows = []
    for j, (fam, rule) in enumerate(fams):
        for kind in ("planted", "null"):
            v = [o[j] for (kd, _), o in zip(items, out) if kd == kind]
            rows.append(control_row(fam, CONTROL_SUBJECTS[kind], v, planted=kind == "planted",
                                    rule=f"{rule}; {n_tasks} tasks per replicate", level=level))
    return pd.DataFrame(rows)


def reappearance_table(findings) -> pd.DataFrame:
    """The earlier ``reappearance.csv`` layout as a superset of ``findings.csv``: the
    findings table plus ``this_run`` (the estimate and interval as text) and
    ``reappears`` (True / False from the verdict; NA when inconclusive or not testable)."""
    t = findings.table()
    this_run = [("" if not np.isfinite(e) else (f"{e:+.1f} [{lo:+.1f}, {hi:+.1f}]" if np.isfinite(lo) else f"{e:g}"))
                for e, lo, hi in zip(t["estimate"], t["ci_low"], t["ci_high"])]
    reap = pd.array([True if v == "reappears" else (False if v == "contradicted" else pd.NA) for v in t["verdict"]],
                    dtype="boolean")
    return t.assign(this_run=this_run, reappears=reap)


def router_sentences(pipe: Mapping[str, Any]) -> dict[str, str]:
    """Sentences for the chapter from :func:`router_pipeline`'s output: ``"blanket"`` (CIR's
    evaluation intervention rate and whether a blanket rule rescues exactly its set) and
    ``"leak"`` (the horizon features, dropped or kept, and their measured separation)."""
    rs = pipe["rescue_sets"].set_index("policy")
    cir = rs.loc["cir"]
    same = [p for p in rs.index if p.startswith(("always-", "random-")) and bool(rs.loc[p, "same_rescued_set"])]
    rate = 100 * float(pipe["cir_eval_rate"])
    if int(cir["rescued"]) == 0:
        blanket = (f"CIR refreshed {rate:.1f}% of the evaluation trajectories and rescued none, so no rescued set "
                   "can distinguish it from a blanket rule here.")
    elif same:
        blanket = (f"CIR refreshed {rate:.1f}% of the evaluation trajectories; its {int(cir['rescued'])} rescued "
                   f"trajectories (from {int(cir['rescue_tasks'])} tasks) are exactly those of the blanket rule(s) "
                   f"{', '.join(same)}: on this pool its selectivity adds nothing a fixed rule does not.")
    else:
        blanket = (f"CIR refreshed {rate:.1f}% of the evaluation trajectories; no blanket rule (always at one delay, "
                   f"or random at CIR's rate) rescues exactly its {int(cir['rescued'])} trajectories.")
    leak = pipe["leak"]
    hz = leak[leak["horizon_feature"]]
    sep = float(hz["separation"].max()) if hz["separation"].notna().any() else np.nan
    meas = ("(not measurable here: the primary cohort has only successes or only failures)" if not np.isfinite(sep)
            else f"(on the primary cohort they separate factual success from failure with AUC up to {sep:.2f})")
    if pipe["dropped_features"]:
        leak_s = (f"The router features {', '.join(pipe['dropped_features'])} encode how long the factual run "
                  f"lasted, which a router cannot know at its decision, and were removed {meas}.")
    else:
        leak_s = (f"The router kept {', '.join(HORIZON_FEATURES)}, which encode how long the factual run lasted, "
                  f"information a router cannot have at its decision {meas}.")
    return dict(blanket=blanket, leak=leak_s)


