"""LLM agents in the ALFWorld handoff and recovery studies, against a scripted server on 127.0.0.1.

The scripted replies are computed independently of the studies: the planner expert's
optimal plan of a small generated game (``AlfworldEnv.expert_plan`` after the same
reset), or nonsense, or an HTTP error. Outcomes come from the engine: the plan wins,
nonsense never does, an HTTP error is flagged in the tables and the episode scored as
the engine leaves it.
"""

from __future__ import annotations

import re

import pytest

from agentstudies.agents.testing import ScriptedChatServer
from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import AlfworldEnv

AGENT = "llm:openai-api/local/scripted"
GAME = small_game("pick_and_place_simple")


def _plan(game, seed: int) -> list[str]:
    env = AlfworldEnv(budget=40)
    env.load_game(game)
    env.reset(seed, 40)
    return env.expert_plan()


def _n_actions_so_far(request) -> int:
    """Actions the agent has taken in this conversation: its own replies plus the
    actions of a history it was handed (``Action:`` lines in user messages)."""
    msgs = request["messages"]
    own = sum(1 for m in msgs if m["role"] == "assistant")
    content = lambda m: m["content"] if isinstance(m["content"], str) else " ".join(
        c.get("text", "") for c in m["content"])
    handed = sum(len(re.findall(r"^Action: ", content(m), flags=re.M)) for m in msgs if m["role"] == "user")
    return own + handed


def plan_script(plan):
    def reply(request):
        k = _n_actions_so_far(request)
        return {"content": f"Thought: step {k + 1} of the plan.\nAction: {plan[k] if k < len(plan) else 'look'}"}
    return reply


def nonsense(request):
    return {"content": "Thought: I will dance.\nAction: dance wildly around the room"}


def http_error(request):
    return {"status": 400, "content": "scripted bad request"}


# ------------------------------------------------------------------------ handoff
SEEDS_SEEN: list = []


def _handoff(reply, **kw):
    from agentstudies.studies.alfworld.handoff.run import run_handoff_study

    with ScriptedChatServer(reply) as server:
        study = run_handoff_study([GAME], tasks_per_type=None, seeds=[0], early_budget=6, D=2,
                                  continuation_budget=2, checkpoints="scripted", agent=AGENT,
                                  llm_settings={"base_url": server.base_url, "max_connections": 1}, **kw)
        n_requests = len(server.requests)
        SEEDS_SEEN[:] = [r.get("seed") for r in server.requests]
    return study, n_requests


def test_handoff_llm_following_the_plan_arrives_and_solves():
    plan = _plan(GAME, 0)
    assert len(plan) == 4  # arrival at F_2 after two actions, two more win
    study, n_requests = _handoff(plan_script(plan))
    t = study.trajectories.set_index("reacher")
    assert set(t.index) == {"SFT", "RL", "LLM"}
    assert bool(t.loc["LLM", "arrived"]) and int(t.loc["LLM", "arrival_step"]) == len(plan) - 2
    assert t.loc["LLM", "agent"] == AGENT and t.loc["SFT", "agent"] == "simulated"
    e = study.episodes.set_index(["reacher", "solver"])
    assert bool(e.loc[("LLM", "LLM"), "solved"])  # the engine's won flag after the plan's last two actions
    assert e.loc[("LLM", "LLM"), "solver_first_action"] == plan[2]
    # every request the server saw is counted once, in a reacher or a solver row
    llm_rows = study.episodes[study.episodes["agent"] == AGENT]
    assert int(t.loc["LLM", "llm_calls"]) + int(llm_rows["llm_calls"].sum()) == n_requests
    assert (study.trajectories.loc[study.trajectories["agent"] == AGENT, "input_tokens"] > 0).all()
    assert (study.episodes["llm_errors"] == "").all() and len(t.loc["LLM", "prompt_sha256"]) == 64
    # the generation seed: keyed on (task seed, task, role), call k sends seed + k over HTTP
    from agentstudies.parallel import keyed_seed

    reacher_seed = int(keyed_seed(0, "llm", GAME["task_id"], "reacher").generate_state(1)[0] % (2**31 - 1))
    assert int(t.loc["LLM", "llm_seed"]) == reacher_seed
    assert {reacher_seed, reacher_seed + 1} <= set(SEEDS_SEEN)
    solver_seed = int(keyed_seed(0, "llm", GAME["task_id"], "solver").generate_state(1)[0] % (2**31 - 1))
    assert (study.episodes.loc[study.episodes["llm_calls"] > 0, "llm_seed"] == solver_seed).all()
    # the LLM checkpoint's tables: J = A C on the LLM x LLM cell, cost from the record
    from agentstudies.studies.alfworld.handoff.run import llm_checkpoint_tables

    tabs = llm_checkpoint_tables(study.episodes, study.trajectories, n_draws=50)
    a = tabs["assignments"].set_index(["reacher", "solver"]).loc[("LLM", "LLM")]
    assert (a["n"], a["arrival"], a["conversion"], a["endpoint"]) == (1, 1.0, 1.0, 1.0)
    cost = tabs["cost"].set_index("role")
    assert int(cost.loc["reacher", "llm_calls"]) == len(plan) - 2 and int(cost["with_errors"].sum()) == 0
    assert int(cost["llm_calls"].sum()) == n_requests
    # one task: the 2 x 2 analysis is refused (a task type needs two tasks) and says so
    assert tabs["contrasts"]["note"].str.startswith("not estimable").all()
    # the LLM solver of an LLM-reached state was shown the clone's history (its first actions)
    acts = study.actions
    first = acts[(acts["reacher"] == "LLM") & (acts["solver"] == "LLM") & (acts["step"] == 1)]["shown"].iloc[0]
    assert f"Action: {plan[0]}" in first and f"Action: {plan[1]}" in first


def test_handoff_llm_nonsense_never_arrives():
    study, _ = _handoff(nonsense)
    t = study.trajectories.set_index("reacher")
    assert not bool(t.loc["LLM", "arrived"]) and int(t.loc["LLM", "n_invalid"]) == 6
    solved_by_llm = study.episodes[(study.episodes["solver"] == "LLM") & study.episodes["arrived"]]["solved"]
    assert not solved_by_llm.astype(bool).any()


def test_handoff_llm_http_error_is_flagged_not_dropped():
    study, n_requests = _handoff(http_error)
    t = study.trajectories.set_index("reacher")
    assert "scripted bad request" in t.loc["LLM", "llm_errors"] or "400" in t.loc["LLM", "llm_errors"]
    assert not bool(t.loc["LLM", "arrived"]) and len(study.trajectories) == 3
    e = study.episodes
    assert (e.loc[e["reacher"] == "LLM", "reacher_llm_errors"] != "").all()
    assert n_requests >= 1 and int(t.loc["LLM", "llm_calls"]) == 1  # no call after the first failure


# ----------------------------------------------------------------------- recovery
RECOVERY_DESIGN = {"primary": dict(conditions=("clean", "stale-1"), delays=(0, 1), operations=("refresh",))}


def _recovery(reply):
    from agentstudies.agents.alfworld import make_llm_policy
    from agentstudies.studies.alfworld import recovery as ar

    with ScriptedChatServer(reply) as server:
        policy = make_llm_policy(AGENT, {"base_url": server.base_url, "max_connections": 1})
        study = ar.run_recovery_study({"primary": [GAME]}, policy, seed=0, cap_scale=0.1, designs=RECOVERY_DESIGN)
        requests = list(server.requests)
    return study, requests


def _env_seed(seed: int, task_id: str) -> int:
    from agentstudies.parallel import keyed_seed

    return int(keyed_seed(seed, "env", task_id).generate_state(1)[0] % (2 ** 31))


def _last_user_text(request) -> str:
    m = [m for m in request["messages"] if m["role"] == "user"][-1]
    return m["content"] if isinstance(m["content"], str) else " ".join(c.get("text", "") for c in m["content"])


def test_recovery_llm_sees_the_stale_and_refreshed_text_and_the_engine_scores_it():
    seed = _env_seed(0, GAME["task_id"])
    plan = _plan_at(GAME, seed)
    study, requests = _recovery(plan_script(plan))
    task = study.tasks.iloc[0]
    assert bool(task["factual_success"]) and int(task["factual_actions"]) == len(plan)
    assert task["policy_clone"] == "copied" and bool(task["feasible"]) and int(task["llm_calls"]) == len(plan)
    p = study.paired
    assert len(p) == 4 and (p["y_without"] == 1).all() and (p["y_with"] == 1).all()
    assert (p["agent"] == AGENT).all() and (p["llm_errors"] == "").all() and (p["llm_calls"] > 0).all()
    # what the model was shown, computed on a fresh engine: o_0 (stale-1 at t0 = 1) and o_0 + the look reply
    env = AlfworldEnv(budget=40)
    env.load_game(GAME)
    env.reset(seed, 40)
    o0 = env.observation
    env.step(plan[0])
    o1 = env.observation
    env.step("look")
    look = env.observation
    shown = {_last_user_text(r) for r in requests}
    assert f"Observation: {o0}" in shown and f"Observation: {o1}" in shown
    assert f"Observation: {o0}\n{look}" in shown and f"Observation: {o1}\n{look}" in shown


def test_recovery_llm_nonsense_fails_and_http_error_is_flagged():
    study, _ = _recovery(nonsense)
    assert not study.tasks["factual_success"].any()
    assert (study.paired[["y_without", "y_with"]].to_numpy() == 0).all()
    study, requests = _recovery(http_error)
    task = study.tasks.iloc[0]
    assert not bool(task["factual_success"]) and task["llm_errors"] != "" and int(task["llm_calls"]) == 1
    p = study.paired
    assert len(p) == 4 and (p["llm_errors"] != "").all() and (p["llm_errors_without"] != "").all()
    assert (p["y_with"] == 0).all()
    from agentstudies.studies.alfworld.recovery import llm_cost

    cost = llm_cost(study).set_index("cohort").loc["primary"]
    assert (cost["tasks"], cost["factual_calls"], cost["factual_errors"], cost["forks_with_errors"]) == (1, 1, 1, 4)


def _plan_at(game, env_seed: int) -> list[str]:
    env = AlfworldEnv(budget=40)
    env.load_game(game)
    env.reset(env_seed, 40)
    return env.expert_plan()


# ------------------------------------------------------------ τ controller audit episodes
TAU_TASK = "retail/5"


def gold_script(task_id):
    """Tool calls of the task's gold actions, one per turn, then a closing message."""
    import json

    from agentstudies.envs.tau import get_task

    gold = [(a.name, json.loads(a.arguments_json)) for a in get_task(task_id).actions]

    def reply(request):
        k = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if k < len(gold):
            return {"content": "", "tool_calls": [gold[k]]}
        return {"content": "Everything is done. Goodbye."}
    return reply


def chatter(request):
    return {"content": "Hello there. Goodbye."}


def _audit(reply):
    from agentstudies.studies.tau import controller_audit as tca

    with ScriptedChatServer(reply) as server:
        episodes = tca.audit_episodes([TAU_TASK], seed=0, agent=AGENT,
                                      llm_settings={"base_url": server.base_url, "max_connections": 1})
    return episodes, tca.episode_counts(episodes)


def test_tau_audit_episodes_gold_calls_succeed_chatter_fails_errors_flagged():
    from agentstudies.envs.tau import get_task

    assert get_task(TAU_TASK).write_actions  # doing nothing cannot pass this task
    n_gold = len(get_task(TAU_TASK).actions)
    ep, counts = _audit(gold_script(TAU_TASK))
    assert list(ep["workflow"]) == ["ReAct", "Plan + verifier", "Confirmation gate"]
    react = ep.set_index("workflow").loc["ReAct"]
    assert react["reward"] == 1.0 and react["tool_calls"] == n_gold and react["llm_calls"] == n_gold + 1
    assert set(counts.index.get_level_values("profile")) == {"LLM (openai-api/local/scripted)"}
    ep, counts = _audit(chatter)
    assert (ep["reward"] == 0.0).all() and (ep["tool_calls"] == 0).all()
    ep, counts = _audit(http_error)
    assert (ep["termination"] == "agent_error").all() and (ep["llm_errors"] != "").all()
    assert (counts["agent_errors"] == 1).all() and (ep["reward"] == 0.0).all()


def test_tau_audit_label_of_simulated_profiles():
    from agentstudies.studies.tau.controller_audit import agent_label

    assert agent_label("profile_a") == "profile_a (simulated)"
    assert agent_label("llm:openai-api/x/y") == "LLM (openai-api/x/y)"


# --------------------------------------------------------------------- chapters
@pytest.mark.parametrize("chapter", ["alfworld_handoff", "alfworld_recovery", "tau_controller_audit"])
def test_chapter_declares_the_llm_parameters_of_the_tau_chapter(chapter):
    """Same names and defaults as tau_workflow_stress (temperature may be the chapter's own
    decoding parameter, which then also sets the model's)."""
    import ast
    import json
    from pathlib import Path

    def params(name):
        nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / f"{name}.ipynb").read_text())
        cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
        tree = ast.parse("".join(cell["source"]))
        return {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) for t in n.targets}

    tau, ours = params("tau_workflow_stress"), params(chapter)
    for name in ("agent", "model_base_url", "max_connections", "max_tokens"):
        assert ours.get(name) == tau[name], name
    assert "temperature" in ours
