"""Episodes of the ToolSandbox-style world under the three workflow controllers.

One episode = one case x one workflow x one agent profile x one seed. Its randomness is
``keyed_seed(seed, "toolsandbox-episode", base_scenario, profile)``, spawned into four
streams (agent, user, verifier, spare), so an episode does not depend on which others run
or on ``n_jobs``, and the augmentations and workflows of one base scenario share their
random numbers (paired contrasts measure the arm, not fresh draws). The controllers are the shared ones of :mod:`agentstudies.agents`
(``ReAct``, ``Plan + verifier``, ``Confirmation gate``); state-changing tools are the
irreversible calls they review. The Plan + verifier's verifier is scripted (simulated): it
rejects a mutation whose values are not *grounded* in the visible conversation (said by
the user or returned by a tool) with probability 0.85, a grounded one with 0.05, and
answers unparseably with 0.02. The gate asks the scripted user, who declines mutations
that contradict its own request. Outcomes are scored from the world state and message
log (:func:`agentstudies.envs.toolsandbox.evaluate`); an exception scores 0 with the
maximum turn count, as in ToolSandbox.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.agents.controllers import WORKFLOWS, ProposedCall, extract_mutation, make_controller
from agentstudies.agents.toolsandbox._policy import ScriptedToolAgent, ToolAgentProfile, get_profile
from agentstudies.envs.toolsandbox import MUTATING_TOOLS, Case, Evaluation, Role, Say, ToolCall, ToolSandboxEnv
from agentstudies.parallel import keyed_seed, seeded_map
from agentstudies.specs import AgentSpec
from agentstudies._tolerances import EXACT_TOL

__all__ = ["EPISODE_COLUMNS", "AGENT_COLUMNS", "GroundingVerifier", "run_episode", "run_episodes", "drive", "run_handoff_unit",
           "run_handoff", "frontier_arrival"]

#: Columns of the per-episode table, in order.
EPISODE_COLUMNS: tuple[str, ...] = (
    "case_id", "base_scenario", "category", "categories", "augmentation", "workflow", "profile", "seed",
    "similarity", "milestone_similarity", "turn_count", "milestones_matched", "n_milestones", "minefield_hit",
    "termination", "tool_calls", "failed_calls", "blocked_calls", "declined_calls", "messages",
    "undone", "toolsandbox_similarity",
)

#: Columns added to the episode table of an LLM agent (:meth:`LLMPolicyBase.episode_record`;
#: ``llm_errors`` non-empty flags an errored episode, kept in the table).
AGENT_COLUMNS: tuple[str, ...] = (
    "agent", "simulated", "model", "generate_config", "llm_seed", "prompt_sha256", "llm_calls",
    "input_tokens", "output_tokens", "llm_errors", "llm_limit", "served_model", "system_prompt_sha256", "base_url",
)


def _digits(s: str) -> str:
    return "".join(ch for ch in s if ch.isdigit())


class GroundingVerifier:
    """Scripted (simulated) plan verifier: ``prompt -> "APPROVE" | "REJECT" | other text``.

    A mutation is grounded when each argument value appears in the visible conversation:
    ids and numbers among tool results or user messages, phone numbers by their digits,
    free text by at least 60% of its words. Draws two uniforms per call.
    """

    simulated = True

    def __init__(self, env: ToolSandboxEnv, rng: np.random.Generator, *, p_detect: float = 0.85,
                 p_false_reject: float = 0.05, p_malformed: float = 0.02):
        self.env, self.rng = env, rng
        self.p_detect, self.p_false_reject, self.p_malformed = p_detect, p_false_reject, p_malformed

    def grounded(self, arguments: Mapping[str, Any]) -> bool:
        text = " ".join(
            (m.content or "") + " " + (repr(m.result) if m.result is not None else "")
            for m in self.env.ctx.messages
            if Role.AGENT in m.visible_to and m.sender in (Role.USER, Role.EXECUTION_ENVIRONMENT)
        ).lower()
        digits = _digits(text)
        words = set(re.findall(r"[a-z0-9]+", text))
        for name, v in arguments.items():
            if isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                if f"{float(v)}" not in text and f"{v}" not in text:
                    return False
            elif isinstance(v, str):
                if "phone" in name:
                    if not _digits(v) or _digits(v)[-10:] not in digits:
                        return False
                else:
                    toks = re.findall(r"[a-z0-9]+", v.lower())
                    if toks and sum(t in words for t in toks) / len(toks) < 0.6:
                        return False
        return True

    def __call__(self, prompt: str) -> str:
        u_mal, u = self.rng.random(2)
        mutation = extract_mutation(prompt)
        if mutation is None or u_mal < self.p_malformed:
            return "It is hard to say; the call might be fine."
        p_reject = self.p_false_reject if self.grounded(mutation["arguments"]) else self.p_detect
        return "REJECT" if u < p_reject else "APPROVE"


def drive(env: ToolSandboxEnv, agent: ScriptedToolAgent, controller, *, max_steps: int = 40,
          counts: dict[str, int] | None = None) -> dict[str, int]:
    """Run ``agent`` on ``env`` through ``controller`` until the episode ends; return counts.

    ``counts`` (optional) is updated in place, so a caller keeps the counts of an episode
    that the agent ends by raising."""
    counts = counts if counts is not None else {}
    counts.update({"blocked_calls": 0, "declined_calls": 0, "steps": 0})
    last_outcome = None
    while not env.done and counts["steps"] < max_steps:
        obs = env.observation()
        obs["last_outcome"] = last_outcome
        action = agent.act(obs)
        counts["steps"] += 1
        if isinstance(action, ToolCall):
            canonical = env.view.canonical(action.name)
            call = ProposedCall(action.name, dict(action.arguments), canonical in MUTATING_TOOLS)
            decision = controller.review(call)
            if not decision.execute:
                counts["declined_calls" if decision.outcome == "declined" else "blocked_calls"] += 1
                last_outcome = "declined" if decision.outcome == "declined" else "blocked"
                if decision.end_episode:
                    env.done, env.termination = True, "verifier_rejection"
                continue
            last_outcome = "executed"
            env.step(action)
        elif isinstance(action, Say):
            last_outcome = None
            env.step(action)
        else:
            raise TypeError(f"agent returned {type(action).__name__}; expected ToolCall or Say")
    if not env.done:
        env.termination = "max_steps"
    return counts


def _controller(workflow: str, env: ToolSandboxEnv, rng: np.random.Generator):
    return make_controller(
        workflow,
        verifier=GroundingVerifier(env, rng),
        user=lambda prompt: env.consent(prompt, extract_mutation(prompt)),
        max_rejections=2,
    )


def _row(case: Case, workflow: str, profile: str, seed: int, env: ToolSandboxEnv, counts, ev) -> dict[str, Any]:
    sc = case.scenario
    calls = [m for m in env.ctx.messages if m.sender == Role.AGENT and m.tool_call is not None]
    replies = [m for m in env.ctx.messages if m.sender == Role.EXECUTION_ENVIRONMENT and m.recipient == Role.AGENT]
    return {
        "case_id": case.case_id, "base_scenario": sc.scenario_id, "category": sc.category,
        "categories": "|".join(sc.categories), "augmentation": case.augmentation, "workflow": workflow,
        "profile": profile, "seed": int(seed),
        "similarity": ev.similarity, "milestone_similarity": ev.milestone_similarity, "turn_count": ev.turn_count,
        "milestones_matched": ev.matched, "n_milestones": len(sc.milestones), "minefield_hit": ev.minefield_hit,
        "termination": env.termination, "tool_calls": len(calls), "failed_calls": sum(1 for m in replies if m.error),
        "blocked_calls": counts["blocked_calls"], "declined_calls": counts["declined_calls"], "messages": len(env.ctx.messages),
        # the world-write undone check and the score under ToolSandbox's formulas alone (envs.toolsandbox.DEPARTURES)
        "undone": ev.undone, "toolsandbox_similarity": ev.toolsandbox_similarity,
    }


def run_episode(case: Case, workflow: str, profile: str | ToolAgentProfile = "base", seed: int = 0, *,
                policy: Any = None, max_steps: int = 40) -> dict[str, Any]:
    """One episode; returns its row (keys :data:`EPISODE_COLUMNS`, plus :data:`AGENT_COLUMNS`
    when ``policy`` is given).

    ``policy``: another agent to run instead of the scripted profile (e.g.
    :class:`agentstudies.agents.toolsandbox.LLMToolSandboxPolicy`): anything with ``name``,
    ``reset(task_id, seed, role)`` and ``act(observation)``; its seed is an int drawn from
    the episode's agent stream, and the profile column holds ``"llm:<model>"``. An
    :class:`~agentstudies.agents.LLMError` raised by it ends the episode with termination
    ``agent_error``, the world scored as it stands. ``max_steps``: agent actions before the
    episode ends with termination ``max_steps`` (:func:`drive`).

    Raises
    ------
    ValueError
        Unknown workflow. (Unknown profile: KeyError.)
    """
    from agentstudies.agents._llm import LLMError

    if workflow not in WORKFLOWS:
        raise ValueError(f"unknown workflow {workflow!r}; expected one of {list(WORKFLOWS)}")
    name = get_profile(profile).name if policy is None else f"llm:{policy.name}"
    # common random numbers: the streams depend on the base scenario, not on the augmentation
    # or workflow, so a paired contrast differs by what the arm changes, not by fresh draws
    s_agent, s_user, s_verifier, _ = keyed_seed(seed, "toolsandbox-episode", case.scenario.scenario_id, name).spawn(4)
    env = ToolSandboxEnv(case, s_user)
    agent = ScriptedToolAgent(get_profile(profile)) if policy is None else policy
    agent.reset(case.case_id, s_agent if policy is None else int(s_agent.generate_state(1)[0]) % (2**31 - 1))
    controller = _controller(workflow, env, np.random.default_rng(s_verifier))
    controller.reset()
    counts = {"blocked_calls": 0, "declined_calls": 0}
    try:
        counts = drive(env, agent, controller, max_steps=max_steps, counts=counts)
        ev = env.evaluate()
    except LLMError:
        env.termination = "agent_error"
        ev = env.evaluate()
    except Exception:  # noqa: BLE001 - ToolSandbox: an exception scores 0 with the maximum turn count
        counts = {"blocked_calls": 0, "declined_calls": 0}
        env.termination = "exception"
        ev = Evaluation(0.0, 0.0, (), (), False, 0, env.ctx.max_messages, toolsandbox_similarity=0.0)
    row = _row(case, workflow, name, seed, env, counts, ev)
    if policy is not None:
        row.update({"agent": name, "simulated": False, **policy.episode_record()})
    return row


#: Episodes per parallel work item (fixed, so results never depend on ``n_jobs``).
CHUNK = 48


def _chunks(items: list, size: int = CHUNK) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _run_chunk(chunk, rng=None):
    return [run_episode(case, workflow, profile, seed) for case, workflow, profile, seed in chunk]


def _run_llm(spec, rng=None, llm=None):
    from agentstudies.agents.toolsandbox._llm import LLMToolSandboxPolicy

    case, workflow, seed = spec
    return run_episode(case, workflow, seed=seed, policy=LLMToolSandboxPolicy(llm[0], client=llm[1]))


def run_episodes(cases: Sequence[Case], *, workflows: Sequence[str] = WORKFLOWS, profiles: Sequence[str] = ("base",),
                 seeds: Sequence[int] = (0,), n_jobs: int = 1, backend: str = "loky", agent: str | AgentSpec = "simulated",
                 llm_settings: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Every case x workflow x profile x seed; the table is identical for any ``n_jobs``.

    ``n_jobs=1`` (the default) is also the fastest here: the whole grid is 7-9 CPU-s, and
    every fresh process worker first pays about 1 CPU-s of imports plus its own warm-up
    (rouge-score / nltk, the ROUGE-L memo), so ``n_jobs=2`` measured 0.61x-0.70x of
    ``n_jobs=1`` on a first call and 0.85x with warm workers (``benchmarks/bench_parallel.py``,
    ``bench_toolsandbox.py``, 2 shared cores). Pass ``n_jobs > 1`` only for grids
    many times larger, where the per-worker start is amortised.

    ``agent="llm:<provider/model>"`` runs :class:`agentstudies.agents.toolsandbox.LLMToolSandboxPolicy`
    (settings from ``llm_settings``, or an :class:`agentstudies.specs.AgentSpec` as ``agent``) instead of
    the scripted profiles: ``profiles`` is ignored, the profile column holds the agent
    string, the columns :data:`AGENT_COLUMNS` are added, and episodes run in threads
    sharing one client (``max_connections`` at a time; ``n_jobs`` and ``backend`` unused).

    Raises
    ------
    ValueError
        A malformed ``agent``, or ``llm_settings`` with the simulated agent.
    """
    from agentstudies.agents._llm import LLMClient, llm_spec

    spec = llm_spec(agent, llm_settings)  # validates the agent and its settings (AgentSpec)
    if spec is not None:
        items = [(c, w, int(s)) for s in seeds for c in cases for w in workflows]
        rows = seeded_map(_run_llm, items, seed=0, n_jobs=max(1, min(spec.max_connections, len(items))),
                          backend="threading", llm=(spec, LLMClient(spec)))
        return pd.DataFrame(rows, columns=list(EPISODE_COLUMNS + AGENT_COLUMNS))
    specs = [(c, w, p, int(s)) for p in profiles for s in seeds for c in cases for w in workflows]
    out = seeded_map(_run_chunk, _chunks(specs), seed=0, n_jobs=n_jobs, backend=backend)
    return pd.DataFrame([r for rows in out for r in rows], columns=list(EPISODE_COLUMNS))


# ---------------------------------------------------------------- handoff
def frontier_arrival(env: ToolSandboxEnv) -> int | None:
    """First message index at which every milestone but the last (in topological order)
    is reached with similarity 1, respecting the DAG (greedy earliest matching, which
    minimises the arrival index); ``None`` if never."""
    from agentstudies.envs.toolsandbox import similarity_matrix, topological_order

    sc = env.scenario
    order = topological_order(len(sc.milestones), sc.edges)
    frontier = order[-1]
    S = similarity_matrix(sc.milestones, env.ctx)
    at: dict[int, int] = {}
    for i in order[:-1]:
        lo = max((at[u] for u, v in sc.edges if v == i and u in at), default=0) + 1
        hits = [m for m in range(lo, S.shape[1]) if S[i, m] >= 1.0 - EXACT_TOL]
        if not hits:
            return None
        at[i] = hits[0]
    del frontier
    return max(at.values()) if at else None


def run_handoff_unit(case: Case, seed: int, reacher: str, solvers: Sequence[str] = ("base", "treated"),
                     workflow: str = "ReAct") -> list[dict[str, Any]]:
    """Reach with ``reacher``; from the restored snapshot at arrival, solve with each solver.

    Reach = arriving at the world state of milestone k - 1 (all milestones but the last);
    Solve = finishing the case (similarity 1, no minefield) from that snapshot. Returns one
    row per solver in the handoff episode schema (split, task_id, task_type, seed, reacher,
    solver, arrived, solved, endpoint, arrival_step) plus ``case_id``. The task is the base
    scenario and the seed label is ``"<augmentation>/<seed>"``, so a bootstrap over tasks
    resamples a base scenario with all its augmentations.
    """
    s_agent, s_user, s_ver, _ = keyed_seed(seed, "toolsandbox-reach", case.case_id, reacher, workflow).spawn(4)
    env = ToolSandboxEnv(case, s_user)
    agent = ScriptedToolAgent(reacher)
    agent.reset(case.case_id, s_agent, role="reacher")
    ctrl = _controller(workflow, env, np.random.default_rng(s_ver))
    drive(env, agent, ctrl)
    t = frontier_arrival(env)
    rows = []
    for solver in solvers:
        # the task (cluster) is the base scenario: its augmentations share world, request and facts
        row = {"split": "all", "task_id": case.scenario.scenario_id, "task_type": case.scenario.category,
               "seed": f"{case.augmentation}/{int(seed)}", "case_id": case.case_id,
               "reacher": reacher, "solver": solver, "arrived": t is not None, "solved": pd.NA,
               "endpoint": False, "arrival_step": pd.NA}
        if t is not None:
            snap = env.snapshot(after=t)
            a2, u2, v2, _ = keyed_seed(seed, "toolsandbox-solve", case.case_id, reacher, solver, workflow).spawn(4)
            env2 = ToolSandboxEnv(case, u2)
            env2.restore(snap)
            if snap.state_hash != env2.ctx.state_hash():  # pragma: no cover - exactness guard
                raise RuntimeError(f"{case.case_id}: restored snapshot differs from the reacher's state")
            solver_agent = ScriptedToolAgent(solver)
            solver_agent.reset(case.case_id, a2, role="solver")
            drive(env2, solver_agent, _controller(workflow, env2, np.random.default_rng(v2)))
            ev = env2.evaluate()
            solved = bool(ev.similarity >= 1.0 - EXACT_TOL)
            row.update(solved=solved, endpoint=solved,
                       arrival_step=sum(1 for m in env.ctx.messages[: t + 1] if m.sender == Role.AGENT))
        rows.append(row)
    return rows


def _handoff_chunk(chunk, rng=None, solvers=None, workflow="ReAct"):
    return [run_handoff_unit(case, seed, reacher, solvers, workflow) for case, seed, reacher in chunk]


def run_handoff(cases: Sequence[Case], *, seeds: Sequence[int] = (0,), profiles: Sequence[str] = ("base", "treated"),
                workflow: str = "ReAct", n_jobs: int = 1, backend: str = "loky") -> pd.DataFrame:
    """The handoff episode table (task x seed x reacher x solver) over ``cases`` with >= 2 milestones.

    Raises
    ------
    ValueError
        If no case has at least two milestones.
    """
    idx = [i for i, c in enumerate(cases) if len(c.scenario.milestones) >= 2]
    if not idx:
        raise ValueError("handoff needs cases with at least two milestones (a frontier k >= 2)")
    specs = [(cases[i], int(s), r) for i in idx for s in seeds for r in profiles]
    out = seeded_map(_handoff_chunk, _chunks(specs, 16), seed=0, n_jobs=n_jobs, backend=backend,
                     solvers=tuple(profiles), workflow=workflow)
    df = pd.DataFrame([r for chunk in out for rows in chunk for r in rows])
    df["solved"] = df["solved"].astype("boolean")
    df["arrival_step"] = df["arrival_step"].astype("Int64")
    return df
