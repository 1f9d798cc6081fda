"""LLM policies through inspect_ai: the mock model and a local OpenAI-compatible server.

Nothing here reaches the outside network: the mock model has usage set on every output
(so no tokenizer download), and the server is started by the tests on 127.0.0.1.
"""

from __future__ import annotations

import hashlib

import pytest

from agentstudies.agents import LLMAlfworldPolicy, LLMSpec, LLMTauPolicy, is_llm_agent
from agentstudies.agents.tau import run_episode, run_episodes
from agentstudies.agents.tau.policy import MessageAction, StopAction, ToolCallAction
from agentstudies.agents.testing import ScriptedChatServer


def _mock_outputs(script):
    """custom_outputs for mockllm: replay `script` (a list of (kind, payload)) with usage set."""
    from inspect_ai.model import ModelOutput, ModelUsage

    outs = []
    for kind, payload, tin, tout in script:
        out = (ModelOutput.for_tool_call("mockllm/model", payload[0], payload[1]) if kind == "tool"
               else ModelOutput.from_content("mockllm/model", payload))
        out.usage = ModelUsage(input_tokens=tin, output_tokens=tout, total_tokens=tin + tout)
        outs.append(out)
    return outs


def test_agent_string_parsing():
    assert not is_llm_agent("simulated")
    assert is_llm_agent("llm:openai-api/local/qwen")
    for bad in ("llm:", "llm:nomodel", "gpt-4", ""):
        with pytest.raises(ValueError, match="agent must be"):
            is_llm_agent(bad)
    spec = LLMSpec.from_agent("llm:mockllm/model", base_url=None, temperature=0.7, max_connections=3)
    assert (spec.model, spec.temperature, spec.max_connections, spec.base_url) == ("mockllm/model", 0.7, 3, None)
    assert spec.generate_config(5)["seed"] == 5
    with pytest.raises(ValueError, match="simulated agent"):
        LLMSpec.from_agent("simulated")


def test_tau_policy_with_mock_model_records_usage_and_prompts():
    script = [("tool", ("find_user_id_by_email", {"email": "a@b.c"}), 100, 7),
              ("text", "Your user id is x. Anything else?", 150, 11)]
    spec = LLMSpec("mockllm/model", model_args={"custom_outputs": _mock_outputs(script)})
    policy = LLMTauPolicy(spec)
    policy.reset("retail/5", seed=3, role="agent")
    a1 = policy.act({"user_message": "Hi, I am a@b.c", "last": None})
    assert isinstance(a1, ToolCallAction) and a1.name == "find_user_id_by_email" and a1.arguments == {"email": "a@b.c"}
    a2 = policy.act({"last": {"status": "ok", "output": "user_x"}})
    assert isinstance(a2, MessageAction) and "user id" in a2.text
    rec = policy.episode_record()
    # the usage we set on the two outputs, summed by hand
    assert (rec["input_tokens"], rec["output_tokens"], rec["llm_calls"]) == (250, 18, 2)
    assert rec["model"] == "mockllm/model" and len(rec["prompt_sha256"]) == 64 and rec["llm_seed"] == 3
    # the tool result went back to the model as a tool message answering the call
    roles = [m.role for m in policy.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert policy.messages[3].tool_call_id == policy.messages[2].tool_calls[0].id
    # the system prompt is the domain policy shipped with tau2-bench
    from agentstudies.envs.tau.data import policy_text

    assert policy_text("retail") in policy.messages[0].text


def test_prompt_hash_depends_on_what_was_sent():
    def run(user_text):
        spec = LLMSpec("mockllm/model", model_args={"custom_outputs": _mock_outputs([("text", "ok?", 1, 1)])})
        p = LLMTauPolicy(spec)
        p.reset("retail/5", seed=0)
        p.act({"user_message": user_text})
        return p.episode_record()["prompt_sha256"]

    assert run("hello") == run("hello") != run("hello!")


def test_model_failure_ends_the_episode_as_agent_error():
    def boom(*args):
        raise RuntimeError("provider down")

    policy = LLMTauPolicy(LLMSpec("mockllm/model", model_args={"custom_outputs": boom}))
    policy.reset("retail/5", seed=0)
    action = policy.act({"user_message": "hi"})
    assert isinstance(action, StopAction) and action.reason == "agent_error"
    assert "provider down" in policy.episode_record()["llm_errors"]


def test_alfworld_react_policy_parses_action_lines():
    script = [("text", "Thought: the apple may be on the counter.\nAction: go to countertop 1", 10, 5),
              ("text", "take apple 1 from countertop 1.", 10, 5)]
    policy = LLMAlfworldPolicy(LLMSpec("mockllm/model", model_args={"custom_outputs": _mock_outputs(script)}),
                               show_admissible=True)
    policy.reset("t1", seed=1, role="reacher")
    assert policy.act({"goal": "put an apple in the fridge", "observation": "You are in a kitchen.",
                       "admissible": ["look", "go to countertop 1"]}) == "go to countertop 1"
    assert "Valid commands: look, go to countertop 1" in policy.last_log["shown"]
    assert policy.act("On the countertop 1, you see an apple 1.") == "take apple 1 from countertop 1"


def test_episodes_through_a_local_openai_compatible_server():
    """The real provider path: inspect_ai's openai-api provider and the openai client over HTTP."""
    with ScriptedChatServer() as server:
        df = run_episodes(["retail/5", "airline/3"], workflows=["ReAct", "Confirmation gate"], seeds=[0],
                          agent="llm:openai-api/local/scripted",
                          llm_settings={"base_url": server.base_url, "max_connections": 2})
        requests = list(server.requests)
    # 4 episodes x 3 model calls (tool call, question, closing message)
    assert len(df) == 4 and len(requests) == 12
    assert (df["llm_calls"] == 3).all() and (df["termination"] == "user_stop").all()
    assert not df["simulated"].any() and set(df["agent"]) == {"llm:openai-api/local/scripted"}
    # the server computed usage as len(json(messages)) // 4 for each request; the sum per
    # episode must be what the episode table records
    assert df["input_tokens"].sum() == sum(len(__import__("json").dumps(r["messages"])) // 4 for r in requests)
    # every request offered the domain's tools; the reward is the environment's
    assert all(r.get("tools") for r in requests)
    for row in df.itertuples():
        assert row.reward == float(row.db_match and row.info_match)


def test_same_episode_same_prompts_with_a_seeded_simulated_user():
    with ScriptedChatServer() as server:
        kw = dict(llm_settings={"base_url": server.base_url}, agent="llm:openai-api/local/scripted")
        a = run_episodes(["retail/7"], workflows=["ReAct"], seeds=[1], **kw)
        b = run_episodes(["retail/7"], workflows=["ReAct"], seeds=[1], **kw)
    assert a["prompt_sha256"].tolist() == b["prompt_sha256"].tolist()


def test_simulated_rows_carry_agent_columns_without_tokens():
    row = run_episode("retail/5", "ReAct", "profile_a", 0)
    assert row["agent"] == "simulated" and row["simulated"] is True and row["llm_calls"] == 0
    assert row["model"] == "" and row["input_tokens"] != row["input_tokens"]  # NaN: no model, no tokens


def test_llm_settings_without_llm_agent_is_an_error():
    with pytest.raises(ValueError, match="llm_settings"):
        run_episodes(["retail/5"], workflows=["ReAct"], llm_settings={"temperature": 0.5})


def test_the_suite_cannot_reach_the_outside_network():
    import socket

    from agentstudies._pytest_offline import OutsideNetworkError

    with pytest.raises(OutsideNetworkError):
        socket.create_connection(("93.184.216.34", 80), timeout=1)
    with pytest.raises(OutsideNetworkError):
        socket.getaddrinfo("example.com", 443)
    with ScriptedChatServer() as server:  # loopback stays allowed
        host, port = server.base_url.split("//")[1].split("/")[0].split(":")
        socket.create_connection((host, int(port)), timeout=5).close()
