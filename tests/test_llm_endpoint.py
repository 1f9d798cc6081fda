"""A dead model endpoint ends a run quickly with an error naming the URL.

The endpoint is checked with one short request before the first episode, and a run stops
after ``MAX_CONSECUTIVE_FAILURES`` model calls in a row fail to connect. A refused port
is made by binding a loopback socket and closing it (nothing listens there afterwards).
"""

from __future__ import annotations

import socket
import time

import pytest

from agentstudies.agents import LLMClient, LLMError, LLMSpec
from agentstudies.agents.endpoint import MAX_CONSECUTIVE_FAILURES, EndpointUnreachable
from agentstudies.agents.testing import ScriptedChatServer


def _refused_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"


def test_a_refused_port_is_refused_before_any_episode():
    from agentstudies.agents.tau import run_episodes

    url = _refused_url()
    t0 = time.perf_counter()
    with pytest.raises(EndpointUnreachable, match=f"model endpoint {url} is unreachable .*ConnectionRefusedError"):
        run_episodes(["retail/5", "airline/3"], workflows=["ReAct"], seeds=[0], agent="llm:openai-api/local/x",
                     llm_settings={"base_url": url})
    assert time.perf_counter() - t0 < 30


def test_a_listening_server_passes_the_check_whatever_it_answers(tmp_path):
    """Any HTTP answer means a server listens: a plain file server answers 404 to /v1/models."""
    import functools
    import http.server
    import threading

    from agentstudies.agents.endpoint import check_endpoint

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        check_endpoint(f"http://127.0.0.1:{server.server_address[1]}/v1")  # 404: no error
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(EndpointUnreachable, match="start the server or fix the base URL"):
        check_endpoint(_refused_url())


def test_consecutive_connection_failures_stop_the_run():
    """Calls that fail to connect raise LLMError (an episode records it) until the
    MAX_CONSECUTIVE_FAILURES-th in a row, which raises EndpointUnreachable; a success
    in between resets the count; another error does not count."""
    from inspect_ai.model import ChatMessageUser

    with ScriptedChatServer() as server:
        client = LLMClient(LLMSpec.from_agent("llm:openai-api/local/scripted", base_url=server.base_url))
        real = client.model.generate
        fail = {"kind": None}

        async def generate(*a, **k):
            if fail["kind"] == "connect":
                raise ConnectionRefusedError(111, "Connection refused")
            if fail["kind"] == "other":
                raise ValueError("bad request")
            return await real(*a, **k)

        client.model.generate = generate
        msg = [ChatMessageUser(content="hi")]
        fail["kind"] = "connect"
        for _ in range(MAX_CONSECUTIVE_FAILURES - 1):
            with pytest.raises(LLMError, match="ConnectionRefusedError"):
                client.generate(msg)
        fail["kind"] = None
        client.generate(msg)  # a success resets the count
        fail["kind"] = "other"
        for _ in range(MAX_CONSECUTIVE_FAILURES + 1):
            with pytest.raises(LLMError, match="bad request"):
                client.generate(msg)
        fail["kind"] = "connect"
        for _ in range(MAX_CONSECUTIVE_FAILURES - 1):
            with pytest.raises(LLMError):
                client.generate(msg)
        with pytest.raises(EndpointUnreachable, match=f"{MAX_CONSECUTIVE_FAILURES} model calls in a row to "
                                                      f"{server.base_url} failed to connect"):
            client.generate(msg)


def test_cli_run_with_a_dead_endpoint_ends_before_the_kernel_starts(tmp_path, capsys):
    """`agentstudies run CHAPTER -p agent llm:... -p model_base_url <refused>`: one line naming
    the URL, well under 30 s, nothing written."""
    from agentstudies.book import cli

    url = _refused_url()
    out = tmp_path / "out.ipynb"
    t0 = time.perf_counter()
    assert cli.main(["run", "tau_workflow_stress", "--profile", "smoke", "-p", "agent", "llm:openai-api/local/x",
                     "-p", "model_base_url", url, "-o", str(out)]) == 1
    assert time.perf_counter() - t0 < 30
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"-p model_base_url: model endpoint {url} is unreachable" in err
    assert not any(tmp_path.iterdir())
