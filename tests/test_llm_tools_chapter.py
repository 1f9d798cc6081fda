"""The ToolSandbox-style chapter end to end with an LLM agent served on 127.0.0.1.

The chapter runs at its smoke profile with ``agent="llm:openai-api/local/scripted"``
against the default scripted server (a ``calculate`` tool call, a question, a closing
message): inspect_ai's OpenAI-compatible provider talks HTTP to a server this test
starts (no outside network). Smoke profile with 12 base scenarios: about 30 s.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from agentstudies.book import runner
from agentstudies.agents.testing import ScriptedChatServer

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.notebook]


def test_toolsandbox_workflows_with_an_llm_agent(tmp_path):
    agent = "llm:openai-api/local/scripted"
    with ScriptedChatServer() as server:
        result = runner.run_notebook(
            "toolsandbox_workflows", {"agent": agent, "model_base_url": server.base_url, "max_connections": 4, "max_scenarios": 12},
            tmp_path / "toolsandbox_llm.ipynb", "smoke", root=REPO,
        )
        n_requests = len(server.requests)
    episodes = pd.read_parquet(result.artifacts / "episodes.parquet")
    cases = pd.read_csv(result.artifacts / "cases.csv")
    assert set(episodes["profile"]) == {agent} and not episodes["simulated"].any()
    # every grid episode called the model at least three times (the script's three replies, one more
    # closing message per further user request); the SASST design's episodes made the other requests
    assert (episodes["llm_calls"] >= 3).all() and 0 < episodes["llm_calls"].sum() < n_requests
    # 'calculate' is no tool of this world: the environment answered every call with an error
    assert (episodes["failed_calls"] == episodes["tool_calls"]).all() and (episodes["tool_calls"] > 0).all()
    assert not cases["simulated"].any() and (cases["input_tokens"] > 0).all() and "llm_errors" in cases.columns
    # the handoff section keeps the simulated profiles
    handoff = pd.read_csv(result.artifacts / "handoff_episodes.csv")
    assert set(handoff["reacher"]) == {"base", "treated"}
