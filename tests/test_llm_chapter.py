"""The τ-bench workflow chapter end to end with an LLM agent served on 127.0.0.1.

The chapter runs at its smoke profile with ``agent="llm:openai-api/local/scripted"``:
inspect_ai's OpenAI-compatible provider and the ``openai`` client talk HTTP to a
scripted server this test starts (no outside network).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from agentstudies.book import runner
from agentstudies.agents.testing import ScriptedChatServer

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.notebook]


def test_tau_workflow_stress_with_an_llm_agent(tmp_path):
    with ScriptedChatServer() as server:
        result = runner.run_notebook(
            "tau_workflow_stress",
            {"agent": "llm:openai-api/local/scripted", "model_base_url": server.base_url, "max_connections": 2},
            tmp_path / "tau_llm.ipynb", "smoke", root=REPO,
        )
        n_requests = len(server.requests)
    episodes = pd.read_parquet(result.artifacts / "episodes.parquet")
    assert n_requests > 0 and (episodes["llm_calls"] > 0).all()
    assert not episodes["simulated"].any() and set(episodes["profile"]) == {"llm:openai-api/local/scripted"}
    assert episodes["llm_calls"].sum() == n_requests  # every request the server saw is in the table
    table17 = pd.read_csv(result.artifacts / "table17.csv")
    assert (pd.to_numeric(table17["tokens"]) > 0).all()  # Table 17's tokens come from the model's usage
