"""The fork harness of the ALFWorld recovery study: one task, every fork (CIR paper protocol).

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

Rows :func:`run_task` returns (the tables of
:class:`agentstudies.studies.alfworld.recovery.run.RecoveryStudy`):

``tasks``      cohort, task_id, task_type, factual_success, factual_actions, t0, feasible,
               infeasible_reason, clean_matches_factual (bool/NA), replay_verified
``paired``     cohort, task_id, condition, delay, operation, y_without, y_with, active,
               factual_success, changed (the agent's own actions after the fork differ
               from the no-recovery branch's; the refresh query itself excluded),
               changed_next (its first own action after the operation differs) -- one
               row per fork (the input of :func:`agentstudies.recovery.analyze_paired`)
``decisions``  cohort, task_id, condition, delay (1/2/4), y_without, y_with (refresh),
               active, factual_success, feature columns -- the router's decision table

Each with-recovery branch's result against its no-recovery branch is a :class:`Fork`.
Pools, the study runner and the model-cost table are in
:mod:`agentstudies.studies.alfworld.recovery.run`; the router in
:mod:`agentstudies.studies.alfworld.recovery.pipeline`; tables, findings and sentences in
:mod:`agentstudies.studies.alfworld.recovery.report`.
"""

from __future__ import annotations

import copy
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.agents import llm_record
from agentstudies.parallel import keyed_seed
from agentstudies.recovery import decision_features

__all__ = ["ABLATED_TEXT", "CONDITIONS", "COHORT_DESIGNS", "DELAYS", "Fork", "LOOK_FORMATS", "MISSING_TEXT",
           "OPERATIONS", "PAPER_COHORT_SIZES", "POLICY_FEATURES", "REPLAN_TEXT", "ROUTER_DELAYS", "STALE_ADMISSIBLE",
           "format_reply", "run_task"]

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

@dataclass(frozen=True)
class Fork:
    """One with-recovery branch against the no-recovery branch of its (condition, delay).

    ``y_with``: the engine's ``won`` at the end of the with-recovery branch; ``active``:
    the no-recovery branch was still running at the delay (else nothing was applied and
    ``y_with`` is the carried no-recovery outcome); ``changed`` / ``changed_next``: the
    agent's own actions after the fork (the refresh query excluded) / its first one differ
    from the no-recovery branch's; ``record``: a model-calling policy's record of the
    with-recovery branch (empty for a simulated policy).
    """

    y_with: bool
    active: bool
    changed: bool = False
    changed_next: bool = False
    record: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def carried(cls, y_without: bool, record: Mapping[str, Any]) -> "Fork":
        """The fork of a branch that ended before the delay: outcome carried, not applied."""
        return cls(bool(y_without), False, False, False, record)


@dataclass(frozen=True)
class _Design:
    """What :func:`run_task` runs on one task (its keyword arguments, checked)."""

    conditions: tuple
    delays: tuple
    operations: tuple
    router_delays: tuple
    refresh_commands: tuple
    look_format: str
    stale_admissible: str
    trace: bool

    @property
    def points(self) -> list[int]:
        """Delays at which the no-recovery branch is cloned (recovery delays and router points)."""
        return sorted(set(int(d) for d in self.delays) | set(int(d) for d in self.router_delays))


@dataclass
class _Task:
    """One task's factual run and what its forks share."""

    task_id: str
    cohort: str
    goal: str
    intro: str
    env_seed: int
    turn_cap: int
    action_cap: int
    y_fact: bool
    actions: list
    records: list
    t0: int
    row: dict
    copies: list | None


def _check(conditions, operations, delays, cap_scale, refresh_commands, look_format, stale_admissible) -> None:
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
    operation, environment actions, the engine state key at the fork, the text and the
    admissible list shown (``admissible_shown``: at the fork for a no-recovery branch,
    after the operation for a with-recovery branch).

    ``stale_admissible`` (:data:`STALE_ADMISSIBLE`): the admissible list shown with a
    stale observation -- ``"stale"`` the list recorded with it, ``"current"`` the true
    state's (ablation).

    Raises ``ValueError`` for an unknown condition / operation / ``look_format`` /
    ``stale_admissible``, a negative delay or a non-positive ``cap_scale``;
    :class:`agentstudies.envs.alfworld.env.ReplayMismatch` if the verified clone disagrees
    with the factual record (a harness bug, never silently dropped).
    """
    t_start = time.perf_counter()
    _check(conditions, operations, delays, cap_scale, refresh_commands, look_format, stale_admissible)
    design = _Design(tuple(conditions), tuple(int(d) for d in delays), tuple(operations),
                     tuple(int(d) for d in router_delays), tuple(refresh_commands), look_format, stale_admissible,
                     trace)
    turn_cap = max(1, int(round(49 * cap_scale)))
    action_cap = max(1, int(round(64 * cap_scale)))
    env = _env(action_cap)
    env.load_game(game)
    task = _factual(env, game, policy, seed, turn_cap, action_cap, intervention_fraction, conditions)
    out = dict(task=task.row, paired=[], decisions=[], seconds=0.0, branches=[])
    if task.row["infeasible_reason"]:
        out["seconds"] = time.perf_counter() - t_start
        return out
    pol, transcript = _fork_state(env, task, policy, seed)
    fork_snap, fork_stats = env.snapshot(), _policy_stats(pol)
    matches = None
    for cond in design.conditions:
        env.restore(fork_snap)
        m = _run_condition(env, task, design, cond, pol, transcript, fork_stats, out)
        if cond == "clean":
            matches = m
    env.release_snapshots()
    task.row["clean_matches_factual"] = pd.NA if matches is None else bool(matches)
    out["seconds"] = time.perf_counter() - t_start
    return out


def _factual(env, game, policy, seed, turn_cap, action_cap, intervention_fraction, conditions) -> _Task:
    """Step 1 and 3 of the protocol: the factual trajectory, ``t0`` and prefix feasibility."""
    task_id = str(game["task_id"])
    env_seed = int(keyed_seed(seed, "env", task_id).generate_state(1)[0] % (2 ** 31))
    env.reset(env_seed, action_cap)
    goal, intro = env.goal, env.observation
    pol = copy.deepcopy(policy)
    pol.reset(task_id, seed, role="eval")
    fact = _Branch(pol, intro, 0, [], (1.0, 0.0), tuple(env.admissible))
    calls_model = hasattr(policy, "episode_record")
    copies: list | None = [] if calls_model else None
    _play(env, fact, goal, turn_cap, keep=copies)
    y_fact, L = bool(env.won), len(env.actions)
    t0 = int(math.ceil(intervention_fraction * L))
    row = dict(cohort=str(game.get("cohort", "")), task_id=task_id, task_type=env.task_type, factual_success=y_fact,
               factual_actions=L, t0=t0, feasible=False, infeasible_reason="", clean_matches_factual=pd.NA,
               replay_verified=False)
    if calls_model:
        row.update(policy_clone="copied", **llm_record(fact.policy))
    need_hist = max([int(c.split("-")[1]) for c in conditions if c.startswith("stale")] + [0])
    if not t0 < L:
        row["infeasible_reason"] = f"intervention point t0={t0} not reached before the end (L={L})"
    elif t0 < max(need_hist, 1):
        row["infeasible_reason"] = f"t0={t0}: not enough history for a {need_hist}-step stale observation"
    return _Task(task_id, row["cohort"], goal, intro, env_seed, turn_cap, action_cap, y_fact, env.actions,
                 env.records, t0, row, copies)


def _fork_state(env, task: _Task, policy, seed) -> tuple[Any, list]:
    """Step 3's verified clone: the engine by checked replay of the factual prefix, the
    policy by re-feeding it (a model is not re-asked: its factual copy after ``t0``)."""
    t0 = task.t0
    env.replay(task.env_seed, task.actions[:t0], task.records[: t0 + 1], task.action_cap)
    if task.copies is not None:
        pol = task.copies[t0]
        transcript = [{"action": task.actions[k], "observation": task.records[k + 1]["observation"]}
                      for k in range(t0)]
    else:
        pol = copy.deepcopy(policy)
        pol.reset(task.task_id, seed, role="eval")
        pol, transcript = _refeed(pol, task.goal, task.intro, task.actions, task.records, t0)
    task.row["replay_verified"] = True
    task.row["feasible"] = True
    return pol, transcript


def _shown_at_fork(task: _Task, cond: str, stale_admissible: str) -> tuple[str, tuple]:
    """Text and admissible list shown after ``t0`` actions under ``cond`` (step 2):
    ``o_{t0-k}`` with its recorded list under ``stale-k`` (``stale_admissible="stale"``)."""
    rec = task.records  # o_0 .. o_L (o_k after action k), each with its list
    adm = tuple(rec[task.t0]["admissible"])
    if cond == "clean":
        return rec[task.t0]["observation"], adm
    if cond == "missing":
        return MISSING_TEXT, adm
    k = int(cond.split("-")[1])
    if stale_admissible == "stale":
        adm = tuple(rec[task.t0 - k]["admissible"])
    return rec[task.t0 - k]["observation"], adm


def _run_condition(env, task: _Task, design: _Design, cond: str, pol, transcript, fork_stats, out) -> bool:
    """Step 4 for one condition: the no-recovery branch (cloned at every delay and router
    point on the way), then every fork; appends the rows to ``out``. Returns whether the
    no-recovery branch replayed the factual actions."""
    text, adm = _shown_at_fork(task, cond, design.stale_admissible)
    tr = [dict(x) for x in transcript]
    tr[-1] = {"action": tr[-1]["action"], "observation": text}
    br = _Branch(_clone_policy(pol), text, task.t0, tr, fork_stats, adm)
    snaps: dict[int, tuple] = {}
    for d in design.points:
        _play(env, br, task.goal, task.turn_cap, until_actions=task.t0 + d)
        ended = (env.won or env.remaining_budget <= 0 or br.turns >= task.turn_cap
                 or len(env.actions) < task.t0 + d)
        snaps[d] = (None if ended else env.snapshot(), br.copy(), ended)
    _play(env, br, task.goal, task.turn_cap)
    y0, base = bool(env.won), env.actions
    rec0 = llm_record(br.policy) if task.copies is not None else {}
    if design.trace:
        out["branches"].append(dict(condition=cond, delay=None, operation=None, actions=base, fork_key=None,
                                    shown=None, admissible_shown=list(adm)))
    forks: dict[tuple[int, str], Fork] = {}
    for d in design.points:
        ops = list(design.operations) if d in design.delays else []
        if d in design.router_delays and "refresh" not in ops:
            ops.append("refresh")
        for op in ops:
            forks[(d, op)] = _fork(env, task, design, snaps[d], op, y0, base, rec0, cond, d, out)
    _rows(task, design, cond, y0, rec0, forks, snaps, out)
    return base == task.actions


def _fork(env, task: _Task, design: _Design, point: tuple, op: str, y0: bool, base: list, rec0, cond, d,
          out) -> Fork:
    """One with-recovery branch from the clone ``point`` = (snapshot, branch, ended)."""
    snap, sb, ended = point
    if ended:
        return Fork.carried(y0, rec0)
    env.restore(snap)
    fork_key = env.state_key() if design.trace else None
    b = sb.copy()
    n_before = len(env.actions)
    _apply(env, b, op, design.refresh_commands, design.look_format)
    n_query = len(env.actions) - n_before
    shown_after, adm_shown = b.shown, list(b.admissible)
    _play(env, b, task.goal, task.turn_cap)
    acts = env.actions
    agent_acts = acts[:n_before] + acts[n_before + n_query:]
    nxt = agent_acts[n_before:n_before + 1] != base[n_before:n_before + 1]
    if design.trace:
        out["branches"].append(dict(condition=cond, delay=d, operation=op, actions=acts, fork_key=fork_key,
                                    shown=shown_after, admissible_shown=adm_shown))
    return Fork(bool(env.won), True, agent_acts != base, nxt,
                llm_record(b.policy) if task.copies is not None else {})


def _rows(task: _Task, design: _Design, cond: str, y0: bool, rec0, forks: Mapping[tuple[int, str], Fork],
          snaps: Mapping[int, tuple], out) -> None:
    """The paired rows (one per delay x operation) and router decision rows of a condition."""
    key = dict(cohort=task.cohort, task_id=task.task_id, condition=cond)
    for d in design.delays:
        for op in design.operations:
            f = forks[(d, op)]
            out["paired"].append(dict(**key, delay=d, operation=op, y_without=int(y0), y_with=int(f.y_with),
                                      active=f.active, factual_success=task.y_fact, changed=f.changed,
                                      changed_next=f.changed_next, **_fork_record(rec0, f.record)))
    for d in design.router_delays:
        f = forks[(d, "refresh")]
        row = dict(**key, delay=d, y_without=int(y0), y_with=int(f.y_with), active=f.active,
                   factual_success=task.y_fact)
        row.update(_features(snaps[d][1], task.goal, task.intro, task.turn_cap, task.action_cap))
        out["decisions"].append(row)


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

