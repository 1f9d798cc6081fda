"""The ToolSandbox-style study with an LLM agent served on 127.0.0.1 (scripted replies).

The "model" is a ScriptedChatServer whose replies this test writes: either the case's
gold trajectory (read by the test, never by the agent) or a wrong one. The outcome must
come from the environment's scoring, through the real provider path (inspect_ai's
openai-api provider and the openai client over HTTP).
"""

from __future__ import annotations

import json

import pytest

from agentstudies.agents.toolsandbox import LLMToolSandboxPolicy, dialogue_act, toolsandbox_tool_infos
from agentstudies.agents.testing import ScriptedChatServer
from agentstudies.agents.toolsandbox import AGENT_COLUMNS, EPISODE_COLUMNS
from agentstudies.envs.toolsandbox import replay_gold
from agentstudies.studies import toolsandbox as ts

AGENT = "llm:openai-api/local/scripted"


@pytest.fixture(scope="module")
def two_cases():
    _, cases = ts.build_cases(0, ("base",))
    keep = [c for c in cases if c.scenario.scenario_id in ("send_contact-021", "send_contact-031")]
    assert len(keep) == 2
    return keep


def gold_replies(cases):
    """A scripted model replaying each case's gold: the k-th assistant turn is gold step k."""
    by_user = {c.scenario.intents[0].text: c for c in cases}

    def reply(request):
        msgs = request["messages"]
        case = by_user[next(m["content"] for m in msgs if m["role"] == "user")]
        k = sum(1 for m in msgs if m["role"] == "assistant")
        step = case.scenario.gold[k]
        if step[0] == "call":
            return {"content": "", "tool_calls": [(case.view.shown_name(step[1]), dict(step[2]))]}
        return {"content": step[2]}

    return reply


def test_dialogue_acts_of_free_text():
    assert dialogue_act("What should the message say?") == {"act": "ask", "slot": "content"}
    assert dialogue_act("I found two Quinns. Which one do you mean?") == {"act": "ask", "slot": "last_name"}
    assert dialogue_act("What is their phone number?") == {"act": "ask", "slot": "phone_number"}
    assert dialogue_act("Shall I go ahead?") == {"act": "ask", "slot": None}
    assert dialogue_act("Sorry, I cannot do that.") == {"act": "cannot"}
    assert dialogue_act("Your message has been sent.") == {"act": "done"}


def test_tool_infos_keep_the_shown_view():
    _, cases = ts.build_cases(0, ("tool_name_scrambled", "arg_type_scrambled"), max_scenarios=3)
    for case in cases:
        infos = toolsandbox_tool_infos(case.view.specs)
        assert [i.name for i in infos] == [s["name"] for s in case.view.specs]
        types = {p.type for i in infos for p in i.parameters.properties.values()}
        if case.augmentation == "arg_type_scrambled":
            assert types == {None}
        else:
            assert None not in types and all(i.name.startswith("tool_") for i in infos)


def test_gold_script_passes_and_wrong_script_fails(two_cases):
    assert all(replay_gold(c).evaluate().similarity == 1.0 for c in two_cases)
    with ScriptedChatServer(gold_replies(two_cases)) as server:
        good = ts.run_grid(two_cases, seeds=[0], workflows=["ReAct"], agent=AGENT,
                           llm_settings={"base_url": server.base_url, "max_connections": 2})
        n_good = len(server.requests)
    with ScriptedChatServer(lambda r: {"content": "All done, have a nice day."}) as server:
        bad = ts.run_grid(two_cases, seeds=[0], workflows=["ReAct"], agent=AGENT,
                          llm_settings={"base_url": server.base_url})
    assert list(good.columns) == list(EPISODE_COLUMNS + AGENT_COLUMNS)
    # the gold replayed by the "model" scores 1 in the environment; a model that only says done scores 0
    assert (good["similarity"] == 1.0).all() and (good["termination"] == "user_ended").all()
    assert (bad["similarity"] < 1.0).all() and (bad["tool_calls"] == 0).all()
    # one request per gold step; every request is in the table, with the server's usage
    assert good["llm_calls"].tolist() == [len(c.scenario.gold) for c in two_cases] and good["llm_calls"].sum() == n_good
    assert (good["input_tokens"] > 0).all() and not good["simulated"].any() and (good["llm_errors"] == "").all()
    assert set(good["profile"]) == {AGENT} and good["prompt_sha256"].str.len().eq(64).all()
    art = ts.case_artifact(good)
    assert not art["simulated"].any() and "llm_errors" in art.columns
    means = ts.group_means(good, n_draws=0)
    assert "LLM (openai-api/local/scripted)" in means.title and "simulated" not in means.title
    assert set(means.wide().index.get_level_values("profile")) == {"LLM (openai-api/local/scripted)"}


def test_gate_quotes_consent_and_tool_results_answer_calls(two_cases):
    with ScriptedChatServer(gold_replies(two_cases[:1])) as server:
        df = ts.run_grid(two_cases[:1], seeds=[0], workflows=["Confirmation gate"], agent=AGENT,
                         llm_settings={"base_url": server.base_url})
        last = server.requests[-1]["messages"]
    tool_msgs = [m for m in last if m["role"] == "tool"]
    calls = [c for m in last if m["role"] == "assistant" for c in (m.get("tool_calls") or [])]
    assert [m["tool_call_id"] for m in tool_msgs] == [c["id"] for c in calls]
    # the send is a reviewed mutation: the gate's question and the user's answer are quoted to the model
    assert any("The workflow asked the user" in m["content"] for m in tool_msgs)
    assert df.loc[0, "termination"] in ("user_ended", "max_messages")


def test_http_error_is_flagged_not_dropped(two_cases):
    with ScriptedChatServer(lambda r: {"status": 400, "content": "bad request (scripted)"}) as server:
        df = ts.run_grid(two_cases, seeds=[0], workflows=["ReAct", "Plan + verifier"], agent=AGENT,
                         llm_settings={"base_url": server.base_url})
    assert len(df) == 4 and (df["termination"] == "agent_error").all()
    assert df["llm_errors"].str.contains("400|bad request", case=False).all()
    # the world is scored as it stands: nothing was done, so no milestone beyond the first is reached
    assert (df["similarity"] < 1.0).all() and (df["tool_calls"] == 0).all()


def test_policy_protocol_and_seeded_prompts(two_cases):
    case = two_cases[0]
    with ScriptedChatServer(gold_replies([case])) as server:
        a = ts.run_grid([case], seeds=[3], workflows=["ReAct"], agent=AGENT, llm_settings={"base_url": server.base_url})
        b = ts.run_grid([case], seeds=[3], workflows=["ReAct"], agent=AGENT, llm_settings={"base_url": server.base_url})
        first = json.dumps(server.requests[0]["messages"])
    assert a["prompt_sha256"].tolist() == b["prompt_sha256"].tolist() and a["llm_seed"].tolist() == b["llm_seed"].tolist()
    assert "never invent facts" in first and "ask one question" in first
    assert LLMToolSandboxPolicy.simulated is False
    with pytest.raises(ValueError, match="llm_settings"):
        ts.run_grid([case], seeds=[0], llm_settings={"temperature": 0.2})
