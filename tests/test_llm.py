"""LLM policies through inspect_ai: the mock model and a local OpenAI-compatible server.

Nothing here reaches the outside network: the mock model has usage set on every output
(so no tokenizer download), and the server is started by the tests on 127.0.0.1.
"""

from __future__ import annotations

import hashlib

import pytest

from agentstudies.agents import LLMSpec, is_llm_agent
from agentstudies.agents.alfworld import LLMAlfworldPolicy
from agentstudies.agents.tau import LLMTauPolicy
from agentstudies.agents.tau import run_episode, run_episodes
from agentstudies.agents.tau import MessageAction, StopAction, ToolCallAction
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
    from agentstudies.envs.tau import policy_text

    assert policy_text("retail") in policy.messages[0].text


def test_input_tokens_count_the_prompt_a_provider_served_from_its_cache():
    """Inspect's ``input_tokens`` leaves out prompt-cache reads and writes (its OpenAI provider
    subtracts ``prompt_tokens_details.cached_tokens``; llama.cpp's server reports a repeated
    prefix as cached); the record counts the whole prompt: 5 + 156 + 0 and 40 + 0 + 60."""
    from inspect_ai.model import ModelOutput, ModelUsage

    outs = []
    for tin, read, write in ((5, 156, None), (40, None, 60)):
        out = ModelOutput.from_content("mockllm/model", "Anything else?")
        out.usage = ModelUsage(input_tokens=tin, output_tokens=2, total_tokens=tin + 2,
                               input_tokens_cache_read=read, input_tokens_cache_write=write)
        outs.append(out)
    policy = LLMTauPolicy(LLMSpec("mockllm/model", model_args={"custom_outputs": outs}))
    policy.reset("retail/5", seed=0, role="agent")
    policy.act({"user_message": "Hi", "last": None})
    policy.act({"user_message": "Thanks", "last": None})
    assert (policy.episode_record()["input_tokens"], policy.episode_record()["output_tokens"]) == (261, 4)


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
    # the script: a tool call (calculate, no write), a consent question ("Shall I go ahead"), then
    # closing messages; the user consented, so it waits wait_turns = 2 closings for the write
    # and ends at the third: 2 + 3 = 5 calls per episode, and the consented write never ran
    assert len(df) == 4 and len(requests) == 4 * 5
    assert (df["llm_calls"] == 5).all() and (df["termination"] == "user_stop").all()
    assert (df["user_end_reason"] == "write_never_ran").all() and (df["consented_writes_unrun"] == 1).all()
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

    from _pytest_offline import OutsideNetworkError

    with pytest.raises(OutsideNetworkError):
        socket.create_connection(("93.184.216.34", 80), timeout=1)
    with pytest.raises(OutsideNetworkError):
        socket.getaddrinfo("example.com", 443)
    with ScriptedChatServer() as server:  # loopback stays allowed
        host, port = server.base_url.split("//")[1].split("/")[0].split(":")
        socket.create_connection((host, int(port)), timeout=5).close()


def _acknowledging_agent(act_after: int, served: str = "served-checkpoint-7b"):
    """A scripted model on retail/5: asks consent, says "Thank you for confirming,
    processing it now" (no tool call, no question), then after ``act_after`` such
    acknowledgements calls the task's gold write (read here, by the test, never by the
    agent) and closes. ``act_after=None``: it never calls the tool."""
    from agentstudies.envs.tau import get_task

    gold = get_task("retail/5").write_actions[0]

    def reply(request):
        k = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if k == 0:
            out = {"content": "I found the order. Shall I return the item to your PayPal account?"}
        elif act_after is None or k <= act_after:
            out = {"content": "Thank you for confirming, processing it now."}
        elif k == act_after + 1:
            out = {"content": "", "tool_calls": [(gold.name, gold.args())]}
        else:
            out = {"content": "Your return has been processed."}
        return {**out, "model": served}

    return reply


def test_acknowledging_agent_scores_1_where_the_write_ran():
    """tau2-bench#182 / PR #297: the user must not end the conversation between its
    consent and the agent's write."""
    agent = "llm:openai-api/local/scripted"
    with ScriptedChatServer(_acknowledging_agent(act_after=1)) as server:
        df = run_episodes(["retail/5"], workflows=["ReAct"], seeds=[0], agent=agent,
                          llm_settings={"base_url": server.base_url})
        requests = list(server.requests)
    row = df.iloc[0]
    # consent question, one acknowledgement, the write, the closing message: 4 calls
    assert row["llm_calls"] == 4 and len(requests) == 4
    assert row["reward"] == 1.0 and row["db_match"] and row["irreversible_calls"] == 1
    assert row["termination"] == "user_stop" and row["user_end_reason"] == "agent_asked_nothing"
    assert row["consented_writes_unrun"] == 0
    # the row says which model answered, which system prompt and which server
    assert row["model"] == "openai-api/local/scripted" and row["served_model"] == "served-checkpoint-7b"
    system = requests[0]["messages"][0]
    assert system["role"] == "system"
    assert row["system_prompt_sha256"] == hashlib.sha256(system["content"].encode()).hexdigest()
    assert row["base_url"] == server.base_url


def test_agent_that_only_acknowledges_is_waited_for_then_recorded():
    with ScriptedChatServer(_acknowledging_agent(act_after=None)) as server:
        df = run_episodes(["retail/5"], workflows=["ReAct"], seeds=[0], agent="llm:openai-api/local/scripted",
                          llm_settings={"base_url": server.base_url})
    row = df.iloc[0]
    # consent question, then acknowledgements: the user waits wait_turns = 2 of them and ends at the 3rd
    assert row["llm_calls"] == 1 + 2 + 1 and row["reward"] == 0.0 and row["irreversible_calls"] == 0
    assert row["user_end_reason"] == "write_never_ran" and row["consented_writes_unrun"] == 1


def test_scripted_chat_user_rules():
    from agentstudies.agents.tau import ScriptedChatUser
    from agentstudies.envs.tau import get_task

    task = get_task("retail/5")
    # a question that asks no consent is answered, and a later statement ends the chat
    u = ScriptedChatUser(task)
    assert u.reply("What is your zip code?").startswith("Yes")
    assert u.reply("Hello! How can I help you today?") and u.reply("May I have your email?")
    assert not u.pending and u.reply("Your order is on its way.") is None
    assert u.end_reason == "agent_asked_nothing" and u.unrun_consents == 0
    # consent, then a write: settled, the next statement ends the chat
    u = ScriptedChatUser(task)
    u.reply("Do you confirm the return?")
    assert u.pending and u.reply("Processing.") is not None
    u.write_ran()
    assert u.reply("Done.") is None and u.unrun_consents == 0 and u.consents == 1
    # wait_turns = 0 is the old behaviour (tau2-bench#182): ends right after consenting
    u = ScriptedChatUser(task, wait_turns=0)
    u.reply("Shall I proceed?")
    assert u.reply("Thank you for confirming, processing it now.") is None
    assert u.end_reason == "write_never_ran" and u.unrun_consents == 1
    # max_turns counts every reply
    u = ScriptedChatUser(task, max_turns=1)
    assert u.reply("Anything else?") is not None and u.reply("Anything else?") is None
    assert u.end_reason == "max_turns"
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="wait_turns"):
            ScriptedChatUser(task, wait_turns=bad)


def test_mock_rows_carry_served_model_and_system_prompt_hash():
    script = [("text", "ok?", 1, 1)]
    spec = LLMSpec("mockllm/model", model_args={"custom_outputs": _mock_outputs(script)})
    p = LLMTauPolicy(spec)
    p.reset("retail/5", seed=0)
    p.act({"user_message": "hi"})
    rec = p.episode_record()
    assert rec["served_model"] == "mockllm/model" and rec["base_url"] == ""
    assert rec["system_prompt_sha256"] == hashlib.sha256(p.messages[0].text.encode()).hexdigest()
    # before any call: nothing served, no prompt
    p.reset("retail/5", seed=0)
    assert p.episode_record()["served_model"] == "" and p.episode_record()["system_prompt_sha256"] == ""
