"""Run simulated τ-bench episodes under the three workflows (SASST Section 4 design).

One episode = one task × one workflow × one agent profile × one simulator seed. The
episode's randomness is ``keyed_seed(seed, "episode", profile, task, workflow)``
(:func:`agentstudies.parallel.keyed_seed`), split into three streams (policy, verifier,
user). An episode therefore does not depend on which
other episodes run, in which order, or on ``n_jobs``.

The loop: the policy proposes an action; a message goes to the user; a tool call goes
through the workflow controller and, if allowed, to the real tool; the outcome is fed
back to the policy. The episode ends when the policy stops, after a successful
``transfer_to_human_agents``, when the controller ends it (``verifier_rejection``) or at
``max_steps``. The reward is the environment's.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.agents.controllers import WORKFLOWS, ProposedCall, make_controller
from agentstudies.agents.tau._policy import (
    PROFILES,
    MessageAction,
    ScriptedTauPolicy,
    StopAction,
    TauProfile,
    ToolCallAction,
    get_profile,
)
from agentstudies.agents.tau._simulated import ScriptedChatUser, SimulatedUser, SimulatedVerifier
from agentstudies.envs.tau import get_task, is_write_tool
from agentstudies.envs.tau import reward_components
from agentstudies.envs.tau import TauEnv
from agentstudies.parallel import BACKENDS, keyed_seed, seeded_map
from agentstudies.specs import AgentSpec

__all__ = ["EPISODE_COLUMNS", "AGENT_COLUMNS", "TERMINATIONS", "episode_seed", "run_episode", "run_episodes"]

#: Columns of the episode table, in order.
EPISODE_COLUMNS: tuple[str, ...] = (
    "profile",
    "task_id",
    "domain",
    "seed",
    "workflow",
    "reward",
    "db_match",
    "info_match",
    "tool_calls",
    "failed_calls",
    "irreversible_calls",
    "blocked_calls",
    "declined_calls",
    "messages",
    "termination",
    "steps",
    "reward_basis",
    "communicate_match",
    "action_match",
)

#: Columns added for every episode: who acted, and what a model cost (NaN / "" for
#: simulated agents, which call no model). See :meth:`LLMPolicyBase.episode_record`.
#: ``user_end_reason`` / ``consented_writes_unrun``: why the
#: :class:`~agentstudies.agents.tau.ScriptedChatUser` of an LLM agent ended the
#: conversation ("" if it did not) and whether a write it consented to never ran (0/1;
#: always 0 for the scripted policy, whose consents are the controller's and execute at once).
AGENT_COLUMNS: tuple[str, ...] = (
    "agent", "simulated", "model", "generate_config", "llm_seed", "prompt_sha256", "llm_calls",
    "input_tokens", "output_tokens", "llm_errors", "llm_limit", "served_model", "system_prompt_sha256", "base_url",
    "user_end_reason", "consented_writes_unrun",
)

#: Termination reasons (``agent_error``: the model call failed; ``user_stop``: the
#: simulated user ended the conversation with an LLM agent).
TERMINATIONS: tuple[str, ...] = (
    "done", "agent_stop", "transfer_to_human", "verifier_rejection", "max_steps", "agent_error", "user_stop",
)


def episode_seed(profile: str, task_id: str, seed: int, workflow: str) -> np.random.SeedSequence:
    """The episode's seed sequence: ``keyed_seed(seed, "episode", profile, task_id, workflow)``.

    Raises
    ------
    ValueError
        If ``seed`` is not a non-negative integer.
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return keyed_seed(int(seed), "episode", str(profile), str(task_id), str(workflow))


def _int_seed(ss: np.random.SeedSequence) -> int:
    return int(ss.generate_state(1, dtype=np.uint64)[0])


def run_episode(
    task_id: str,
    workflow: str,
    profile: str | TauProfile = "profile_a",
    seed: int = 0,
    *,
    max_steps: int = 60,
    policy: Any = None,
) -> dict[str, Any]:
    """Run one simulated episode and return its row of the episode table.

    Parameters
    ----------
    task_id:
        Global τ-bench task id, e.g. ``"retail/12"``.
    workflow:
        ``"ReAct"``, ``"Plan + verifier"`` or ``"Confirmation gate"``.
    profile:
        Simulated agent profile: a name in :data:`~agentstudies.agents.tau.PROFILES`
        or a :class:`~agentstudies.agents.tau.TauProfile` (its ``name`` keys the seed).
    seed:
        Simulator seed (non-negative integer).
    max_steps:
        Maximum number of policy actions.
    policy:
        Another agent to run instead of the scripted policy (e.g.
        :class:`agentstudies.agents.tau.LLMTauPolicy`): anything with ``reset(task_id, seed,
        role)`` and ``act(observation)``. It talks to a :class:`ScriptedChatUser` (the
        observation carries ``"user_message"``); the verifier and the consenting user of
        the workflow controllers stay simulated with ``profile``'s rates.

    Returns
    -------
    dict with the keys of :data:`EPISODE_COLUMNS`: ``reward`` (0.0/1.0, from the
    environment), ``db_match`` / ``info_match`` (the reward's two checks), ``tool_calls``
    (calls that reached a tool), ``failed_calls`` (of those, errors), ``irreversible_calls``
    (executed state-changing calls), ``blocked_calls`` (rejected by the verifier),
    ``declined_calls`` (declined by the user), ``messages`` (to the user), ``termination``
    (one of :data:`TERMINATIONS`), ``steps`` (policy actions), ``reward_basis`` (the
    task's declared τ²-bench basis, ``"DB+COMMUNICATE"`` on every shipped task),
    ``communicate_match`` (same as ``info_match``, τ²-bench's name) and ``action_match``
    (τ²-bench's action check on the calls that reached a tool, see
    :func:`agentstudies.envs.tau.action_match`; not part of the reward, reported anyway).
    The scripted policy has no tokens, so none are recorded.

    Raises
    ------
    KeyError
        Unknown task id.
    ValueError
        Unknown workflow or profile, bad seed or ``max_steps < 1``.
    """
    if workflow not in WORKFLOWS:
        raise ValueError(f"unknown workflow {workflow!r}; expected one of {list(WORKFLOWS)}")
    prof = get_profile(profile)
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    task = get_task(task_id)
    env = TauEnv(task.task_id)
    policy, chat, controller = _episode_actors(task, prof, seed, workflow, policy)

    blocked = declined = steps = 0
    termination = "max_steps"
    last: dict[str, Any] | None = None
    tool_names = env.tool_names
    user_message = chat.first_message() if chat is not None else None
    while steps < max_steps:
        action = policy.act({"task_id": task.task_id, "domain": task.domain, "step": steps, "tools": tool_names,
                             "last": last, "user_message": user_message})
        user_message = None
        if isinstance(action, StopAction):
            termination = action.reason
            break
        steps += 1
        if isinstance(action, MessageAction):
            env.send_message(action.text)
            last = {"status": "sent", "kind": "message"}
            if chat is not None:
                user_message = chat.reply(action.text)
                if user_message is None:
                    termination = "user_stop"
                    break
                last = None
            continue
        if not isinstance(action, ToolCallAction):
            raise TypeError(f"policy returned {type(action).__name__}; expected a tool call, message or stop")
        call = ProposedCall(action.name, dict(action.arguments), is_write_tool(action.name))
        decision = controller.review(call)
        if not decision.execute:
            if decision.outcome == "declined":
                declined += 1
            else:
                blocked += 1
            last = {"status": decision.outcome if decision.outcome == "declined" else "blocked", "kind": "tool_call", "name": call.name}
            if decision.end_episode:
                termination = "verifier_rejection"
                break
            continue
        result = env.call(call.name, call.arguments)
        last = {"status": "ok" if result.ok else "error", "kind": "tool_call", "name": call.name, "output": result.output, "error": result.error}
        if chat is not None and result.ok and call.irreversible:
            chat.write_ran()
        if result.ok and call.name == "transfer_to_human_agents":
            termination = "transfer_to_human"
            break

    counts = {"blocked_calls": blocked, "declined_calls": declined, "termination": termination, "steps": steps}
    chat_fields = {"user_end_reason": chat.end_reason if chat is not None else "",
                   "consented_writes_unrun": chat.unrun_consents if chat is not None else 0}
    return _episode_row(env, prof.name, task, int(seed), workflow, counts) | _agent_fields(policy) | chat_fields


def _episode_actors(task: Any, prof: TauProfile, seed: int, workflow: str,
                    policy: Any) -> tuple[Any, ScriptedChatUser | None, Any]:
    """Seed and reset the episode's actors: the acting policy (the scripted one unless
    ``policy`` is given, which then talks to a :class:`ScriptedChatUser`), that chat user
    (``None`` for the scripted policy) and the workflow's reset controller, whose
    simulated verifier and user draw from their own child seeds."""
    s_policy, s_verifier, s_user = episode_seed(prof.name, task.task_id, seed, workflow).spawn(3)
    scripted = ScriptedTauPolicy(prof)
    scripted.reset(task.task_id, _int_seed(s_policy))
    chat = None
    if policy is None:
        policy = scripted
    else:
        policy.reset(task.task_id, _int_seed(s_policy) % (2**31 - 1), "agent")
        chat = ScriptedChatUser(task)
    verifier = SimulatedVerifier(task, scripted.probs, np.random.default_rng(s_verifier))
    user = SimulatedUser(task, scripted.probs, np.random.default_rng(s_user))
    controller = make_controller(workflow, verifier=verifier, user=user, max_rejections=prof.max_rejections)
    controller.reset()
    return policy, chat, controller


def _episode_row(env: TauEnv, profile: str, task: Any, seed: int, workflow: str,
                 counts: dict[str, Any]) -> dict[str, Any]:
    """The episode's row of :data:`EPISODE_COLUMNS`: reward and call counts from the
    environment's transcript, controller counts and termination from the loop."""
    calls = [e for e in env.transcript if e["kind"] == "tool_call"]
    comp = reward_components(env)
    db_ok, info_ok = comp["db_match"], comp["communicate_match"]
    return {
        "profile": profile,
        "task_id": task.task_id,
        "domain": task.domain,
        "seed": seed,
        "workflow": workflow,
        "reward": float(db_ok and info_ok),
        "db_match": db_ok,
        "info_match": info_ok,
        "tool_calls": len(calls),
        "failed_calls": sum(1 for e in calls if not e["ok"]),
        "irreversible_calls": sum(1 for e in calls if e["irreversible"]),
        "blocked_calls": counts["blocked_calls"],
        "declined_calls": counts["declined_calls"],
        "messages": len(env.messages),
        "termination": counts["termination"],
        "steps": counts["steps"],
        "reward_basis": comp["reward_basis"],
        "communicate_match": info_ok,
        "action_match": comp["action_match"],
    }


def _agent_fields(policy: Any) -> dict[str, Any]:
    if getattr(policy, "simulated", True):
        return {"agent": "simulated", "simulated": True, "model": "", "generate_config": "", "llm_seed": np.nan,
                "prompt_sha256": "", "llm_calls": 0, "input_tokens": np.nan, "output_tokens": np.nan,
                "llm_errors": "", "llm_limit": "", "served_model": "", "system_prompt_sha256": "", "base_url": ""}
    rec = policy.episode_record()
    return {"agent": f"llm:{rec['model']}", "simulated": False, **rec}


def _run_spec(spec: tuple[str, str, int, str], rng: Any = None, max_steps: int = 60, llm: Any = None) -> dict[str, Any]:
    profile, task_id, seed, workflow = spec
    if llm is not None:
        from agentstudies.agents.tau._llm import LLMTauPolicy

        spec_, client = llm
        return run_episode(task_id, workflow, "profile_a", seed, max_steps=max_steps,
                           policy=LLMTauPolicy(spec_, client=client)) | {"profile": profile}
    return run_episode(task_id, workflow, profile, seed, max_steps=max_steps)


def run_episodes(
    task_ids: Sequence[str],
    workflows: Sequence[str] = WORKFLOWS,
    profiles: Sequence[str | TauProfile] = ("profile_a",),
    seeds: Sequence[int] = (0,),
    n_jobs: int = 1,
    backend: str = "loky",
    *,
    max_steps: int = 60,
    agent: str | AgentSpec = "simulated",
    llm_settings: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Run every (profile, task, seed, workflow) episode; one row per episode.

    ``agent="llm:<provider/model>"`` runs an LLM agent
    (:class:`agentstudies.agents.tau.LLMTauPolicy`, settings from ``llm_settings``, or an
    :class:`agentstudies.specs.AgentSpec` as ``agent``) instead of the scripted profiles: ``profiles``
    is then ignored and the profile column holds the agent string. LLM episodes share
    one client and run on ``max_connections`` threads; their tables are reproducible
    only as far as the provider honours the seed.

    Rows are ordered by profile, task (as given), seed, workflow. The table is identical
    for any ``n_jobs`` and backend (each episode has its own seed sequence, see
    :func:`episode_seed`). Parallel work goes through joblib
    (:func:`agentstudies.parallel.seeded_map`; ``backend="dask"`` uses a dask.distributed
    client, created locally if none runs).

    Returns
    -------
    DataFrame with columns :data:`EPISODE_COLUMNS` (see :func:`run_episode`).

    Raises
    ------
    ValueError
        Empty or duplicated task ids, workflows, profiles or seeds; unknown workflow,
        profile or backend; bad seed.
    KeyError
        Unknown task id.
    """
    lists = {"task_ids": list(task_ids), "workflows": list(workflows), "profiles": list(profiles), "seeds": list(seeds)}
    for label, values in lists.items():
        if not values:
            raise ValueError(f"run_episodes: {label} is empty")
        dup = sorted({str(v) for v in values if values.count(v) > 1})
        if dup:
            raise ValueError(f"run_episodes: duplicate {label} {dup} would duplicate episodes")
    for w in lists["workflows"]:
        if w not in WORKFLOWS:
            raise ValueError(f"unknown workflow {w!r}; expected one of {list(WORKFLOWS)}")
    from agentstudies.agents._llm import LLMClient, llm_spec

    llm = None
    spec = llm_spec(agent, llm_settings)  # validates the agent and its settings (AgentSpec)
    if spec is not None:
        llm = (spec, LLMClient(spec))
        lists["profiles"] = [f"llm:{spec.model}"]
        n_jobs, backend = max(1, spec.max_connections), "threading"
    for p in lists["profiles"] if llm is None else ():
        if not isinstance(p, TauProfile) and p not in PROFILES:
            raise ValueError(f"unknown tau profile {p!r}; expected one of {sorted(PROFILES)} or a TauProfile")
    for t in lists["task_ids"]:
        get_task(t)
    for s in lists["seeds"]:
        episode_seed("p", "t", s, "w")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from {BACKENDS}")
    specs = [(p, t, int(s), w) for p in lists["profiles"] for t in lists["task_ids"] for s in lists["seeds"] for w in lists["workflows"]]
    rows = seeded_map(_run_spec, specs, seed=0, n_jobs=n_jobs, backend=backend, max_steps=max_steps, llm=llm)
    return pd.DataFrame(rows, columns=list(EPISODE_COLUMNS + AGENT_COLUMNS))
