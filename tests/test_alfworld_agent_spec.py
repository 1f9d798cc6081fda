"""The ALFWorld handoff and recovery studies take the agent as one
:class:`agentstudies.specs.AgentSpec` or as the chapters' flat ``agent`` + ``llm_settings``: both give the same model configuration and the same tables, against a
scripted chat server on 127.0.0.1 (the replies are the planner expert's plan, computed
independently of the studies, as in ``tests/test_llm_alfworld.py``)."""

from __future__ import annotations

import pandas as pd
import pytest

from agentstudies.agents import LLMSpec
from agentstudies.agents.testing import ScriptedChatServer
from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import AlfworldEnv
from agentstudies.specs import AgentSpec

AGENT = "llm:openai-api/local/scripted"
GAME = small_game("pick_and_place_simple")
HANDOFF_KW = dict(tasks_per_type=None, seeds=[0], early_budget=6, D=2, continuation_budget=2,
                  checkpoints="scripted")
RECOVERY_DESIGN = {"primary": dict(conditions=("clean", "stale-1"), delays=(0, 1), operations=("refresh",))}


def _plan_script(game):
    env = AlfworldEnv(budget=40)
    env.load_game(game)
    env.reset(0, 40)
    plan = env.expert_plan()

    def reply(request):
        k = sum(1 for m in request["messages"] if m["role"] == "assistant")
        return {"content": f"Thought: step {k + 1}.\nAction: {plan[k] if k < len(plan) else 'look'}"}
    return reply


def _llm_spec_of(study) -> dict:
    return study.params["policies"]["LLM"]


def test_handoff_agent_spec_and_flat_keywords_give_the_same_configuration_and_tables():
    from agentstudies.studies.alfworld.handoff.run import _with_llm, run_handoff_study

    with ScriptedChatServer(_plan_script(GAME)) as server:
        url = server.base_url
        flat = run_handoff_study([GAME], agent=AGENT, llm_settings={"base_url": url, "max_connections": 1,
                                                                     "max_tokens": 64}, **HANDOFF_KW)
        spec = AgentSpec(AGENT, base_url=url, max_connections=1, max_tokens=64)
        packed = run_handoff_study([GAME], agent=spec, **HANDOFF_KW)
        # the LLM checkpoint's model settings: the LLMSpec written out by hand
        pol = _with_llm({}, spec, None, "LLM", False)["LLM"]
    assert pol.spec == LLMSpec(model="openai-api/local/scripted", base_url=url, max_connections=1, max_tokens=64)
    assert flat.params["agent"] == packed.params["agent"] == AGENT  # the string, in both cases
    assert _llm_spec_of(flat) == _llm_spec_of(packed)
    assert set(flat.trajectories["reacher"]) == {"SFT", "RL", "LLM"}
    for name in ("trajectories", "episodes", "actions"):
        pd.testing.assert_frame_equal(getattr(flat, name), getattr(packed, name), obj=name)


def test_handoff_refuses_an_agent_spec_beside_llm_settings_and_names_both():
    from agentstudies.studies.alfworld.handoff.run import run_handoff_study

    with pytest.raises(ValueError, match=r"llm_settings.*AgentSpec"):
        run_handoff_study([GAME], agent=AgentSpec(AGENT), llm_settings={"max_tokens": 64}, **HANDOFF_KW)
    with pytest.raises(ValueError, match="unknown agent setting"):  # a misspelt flat setting is named
        run_handoff_study([GAME], agent=AGENT, llm_settings={"max_token": 64}, **HANDOFF_KW)
    with pytest.raises(ValueError, match="simulated"):  # model settings for the simulated agent
        run_handoff_study([GAME], agent="simulated", llm_settings={"max_tokens": 64}, **HANDOFF_KW)


def test_handoff_simulated_agent_spec_adds_no_model_checkpoint():
    from agentstudies.studies.alfworld.handoff.run import run_handoff_study

    st = run_handoff_study([GAME], agent=AgentSpec("simulated"), **HANDOFF_KW)
    assert set(st.trajectories["reacher"]) == {"SFT", "RL"} and st.params["agent"] == "simulated"


def test_recovery_agent_spec_flat_keywords_and_policy_give_the_same_tables():
    from agentstudies.agents.alfworld import make_llm_policy
    from agentstudies.studies.alfworld import recovery as ar

    kw = dict(seed=0, cap_scale=0.1, designs=RECOVERY_DESIGN)
    with ScriptedChatServer(_plan_script(GAME)) as server:
        url = server.base_url
        by_policy = ar.run_recovery_study({"primary": [GAME]}, make_llm_policy(AGENT, {"base_url": url,
                                                                                   "max_connections": 1}), **kw)
        by_spec = ar.run_recovery_study({"primary": [GAME]}, agent=AgentSpec(AGENT, base_url=url, max_connections=1),
                                        **kw)
        by_flat = ar.run_recovery_study({"primary": [GAME]}, agent=AGENT,
                                        llm_settings={"base_url": url, "max_connections": 1}, **kw)
    assert by_policy.params["policy"] == by_spec.params["policy"] == by_flat.params["policy"]
    for other in (by_spec, by_flat):
        for name in ("tasks", "paired", "decisions"):
            pd.testing.assert_frame_equal(getattr(by_policy, name).drop(columns=["seconds"], errors="ignore"),
                                          getattr(other, name).drop(columns=["seconds"], errors="ignore"), obj=name)


def test_recovery_refuses_a_missing_or_doubled_agent_naming_what_is_wrong():
    from agentstudies.agents.alfworld import LearnedAlfworldPolicy
    from agentstudies.studies.alfworld import recovery as ar

    pools = {"primary": [GAME]}
    with pytest.raises(ValueError, match="no agent"):
        ar.run_recovery_study(pools)
    with pytest.raises(ValueError, match=r"both policy and agent"):
        ar.run_recovery_study(pools, LearnedAlfworldPolicy.load("RL"), agent=AgentSpec(AGENT))
    with pytest.raises(ValueError, match=r"llm_settings.*AgentSpec"):
        ar.run_recovery_study(pools, agent=AgentSpec(AGENT), llm_settings={"base_url": "http://127.0.0.1:1/v1"})
    with pytest.raises(ValueError, match="simulated"):
        ar.run_recovery_study(pools, LearnedAlfworldPolicy.load("RL"), llm_settings={"max_tokens": 64})
