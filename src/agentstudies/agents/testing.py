"""A scripted OpenAI-compatible chat server on 127.0.0.1, for offline tests of LLM agents.

It exercises the real provider path (``openai-api/<service>/<model>`` through
``inspect_ai`` and the ``openai`` client, HTTP included) without any outside network::

    from agentstudies.agents.testing import ScriptedChatServer
    with ScriptedChatServer() as server:          # server.base_url = "http://127.0.0.1:PORT/v1"
        run_episodes(..., agent="llm:openai-api/local/scripted",
                     llm_settings={"base_url": server.base_url})

The default script (:func:`tool_then_ask_then_close`) answers a conversation that
offers tools with one ``calculate`` tool call, then a question to the user, then a
closing message; a conversation without tools gets ``Action: look``. Pass
``reply=callable(request: dict) -> dict`` (keys ``content`` and optionally
``tool_calls``: a list of ``(name, arguments)``; ``model``: the model name the response
reports, default the requested one; or ``status``: an HTTP error code answered with
``content`` as the error message) for another script. Every response
carries token usage (prompt tokens = number of characters of the request's messages // 4,
completion tokens = characters of the reply // 4), so nothing ever needs a tokenizer.
:attr:`ScriptedChatServer.requests` keeps every request body received.
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, Sequence

__all__ = ["ScriptedChatServer", "tool_then_ask_then_close"]


def tool_then_ask_then_close(request: dict[str, Any]) -> dict[str, Any]:
    """Default script: tool call, question, closing message (see module docstring)."""
    messages = request.get("messages", [])
    if not request.get("tools"):
        return {"content": "Thought: I should look around first.\nAction: look"}
    assistant_turns = sum(1 for m in messages if m.get("role") == "assistant")
    if assistant_turns == 0:
        return {"content": "", "tool_calls": [("calculate", {"expression": "2 + 2"})]}
    if assistant_turns == 1:
        return {"content": "I have checked the details. Shall I go ahead with your request?"}
    return {"content": "Your request is complete. Thank you for contacting us."}


class ScriptedChatServer:
    """Context manager serving ``POST /v1/chat/completions`` on 127.0.0.1 (a free port)."""

    def __init__(self, reply: Callable[[dict[str, Any]], dict[str, Any]] = tool_then_ask_then_close):
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedChatServer":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                owner.requests.append(request)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                reply = owner.reply(request)
                if int(reply.get("status", 200)) != 200:  # a scripted HTTP error
                    self._send(int(reply["status"]), {"error": {"message": reply.get("content", "scripted error"),
                                                                "type": "invalid_request_error"}})
                    return
                self._send(200, _completion(request, reply, len(owner.requests)))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _completion(request: dict[str, Any], reply: dict[str, Any], n: int) -> dict[str, Any]:
    content = reply.get("content", "")
    calls = [
        {"id": f"call_{n}_{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(reply.get("tool_calls", []))
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    prompt_chars = len(json.dumps(request.get("messages", [])))
    completion_chars = len(content) + len(json.dumps(calls))
    usage = {"prompt_tokens": prompt_chars // 4, "completion_tokens": completion_chars // 4}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {
        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
        "model": reply.get("model", request.get("model", "scripted")),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": usage,
    }


# ------------------------------------------------------------- offline τ² Inspect logs
#: Scripted agents for :func:`mock_tau2_eval` (all *simulated*; none reads the task's answer).
MOCK_TAU2_WORKFLOWS: tuple[str, ...] = ("decline", "transfer")

_AGENT_MARK = "You are a customer service agent that helps the user"


def _mock_tau2_outputs(workflow: str) -> Callable[..., Any]:
    from inspect_ai.model import ModelOutput, ModelUsage

    def usage(out: Any, messages: list[Any]) -> Any:
        chars = sum(len(m.text) for m in messages)
        out.usage = ModelUsage(input_tokens=chars // 4, output_tokens=len(out.completion) // 4 + 8,
                               total_tokens=chars // 4 + len(out.completion) // 4 + 8)
        return out

    def outputs(input: list[Any], tools: Any, tool_choice: Any, config: Any) -> Any:
        system = input[0].text if input and input[0].role == "system" else ""
        said = [m for m in input if m.role == "assistant"]
        if _AGENT_MARK not in system:  # the user simulator's turn
            text = "Hi, I need help with my order." if not said else "###STOP###"
            return usage(ModelOutput.from_content("mockllm/model", text), input)
        if workflow == "transfer" and not any(m.role == "tool" for m in input):
            out = ModelOutput.for_tool_call("mockllm/model", "transfer_to_human_agents",
                                            {"summary": "The customer needs help with an order."})
            return usage(out, input)
        text = "I am sorry, I cannot help with that request."
        return usage(ModelOutput.from_content("mockllm/model", text), input)

    return outputs


def mock_tau2_eval(
    workflow: str,
    log_dir: str,
    *,
    domain: str = "retail",
    limit: int | None = 10,
    epochs: int = 2,
    token_limit: int | None = None,
    store_events: bool = False,
) -> str:
    """Run ``inspect_evals``' τ² task offline with Inspect's mock model; return the log path.

    The mock model plays both the user simulator (opens with a request, then stops) and
    a *simulated* agent with a fixed workflow: ``"decline"`` (answers that it cannot
    help) or ``"transfer"`` (calls ``transfer_to_human_agents`` first). Every output has
    token usage set (offline: no tokenizer download). ``token_limit`` makes Inspect stop
    samples that exceed it, so the log holds samples with a ``limit``. The workflow is
    recorded in the eval's metadata (``from_inspect_log(workflow="metadata:workflow")``).
    The log is renamed ``tau2-<domain>_<workflow>.eval`` in ``log_dir`` (replacing an
    earlier one).

    ``store_events=False`` (the default) runs the eval under Inspect's
    ``suspend_store_events()``: the per-span ``StoreEvent`` records (each a JSON diff of
    the sample's store, which holds the 1.3 MB retail database twice) are not written,
    while the store itself, the sample's final store, messages, model and tool events,
    scores, usage, errors and limits are run and logged as usual. Inspect spent about two
    thirds of each sample's CPU condensing and serialising those diffs (1.50 -> 0.51
    CPU-s per sample, log 1.6 -> 0.9 MB for 6 samples; the episode table read by
    :func:`agentstudies.episodes.from_inspect_log` is identical). ``True`` logs them as
    Inspect does by default.

    Raises
    ------
    ValueError
        Unknown workflow or domain.
    """
    from contextlib import nullcontext

    from inspect_ai import eval as inspect_eval
    from agentstudies.agents._inspect_internals import suspend_store_events
    from inspect_evals.tau2.tau2 import tau2_airline, tau2_retail

    if workflow not in MOCK_TAU2_WORKFLOWS:
        raise ValueError(f"workflow must be one of {MOCK_TAU2_WORKFLOWS}, got {workflow!r}")
    tasks = {"retail": tau2_retail, "airline": tau2_airline}
    if domain not in tasks:
        raise ValueError(f"domain must be one of {sorted(tasks)}, got {domain!r}")
    with _collect_in_larger_batches(), (nullcontext() if store_events else suspend_store_events()):
        logs = inspect_eval(
            tasks[domain](shuffle=False), model="mockllm/model",
            model_args={"custom_outputs": _mock_tau2_outputs(workflow)}, limit=limit, epochs=epochs,
            token_limit=token_limit, log_dir=str(log_dir), display="none", metadata={"workflow": workflow},
            log_realtime=False,
            fail_on_error=False,
        )
    return _stable_name(logs[0].location, f"tau2-{domain}_{workflow}.eval")


@contextmanager
def _collect_in_larger_batches() -> Iterator[None]:
    """Raise the cycle collector's first threshold for the duration (as
    :func:`agentstudies.parallel.tune_collector`), then restore the caller's thresholds.

    Inspect builds and condenses pydantic events holding the tau2 database for every
    sample; at CPython's default threshold the collector's passes over them cost about as
    much as the samples themselves (about 2.4 CPU-s per sample instead of 1.4, measured).
    Speed only: the log's content does not depend on when cycles are collected.
    """
    import gc

    from agentstudies.parallel import tune_collector

    before = gc.get_threshold()
    tune_collector()
    try:
        yield
    finally:
        gc.set_threshold(*before)


def mock_tau2_evals(workflows: Sequence[str], log_dir: str, *, n_jobs: int = 1, **kwargs: Any) -> dict[str, str]:
    """:func:`mock_tau2_eval` for each workflow; ``{workflow: log path}``.

    With ``n_jobs > 1`` the evals run side by side: the first workflow in this process,
    the others in up to ``n_jobs - 1`` worker processes (loky). Inspect runs, condenses and
    writes each tau2 sample in about 0.5 CPU-seconds without the store diffs (1.5 with
    them, ``store_events=True``), in one thread per eval, and every process pays about 8 CPU-seconds once
    to import and start Inspect: keeping one eval here saves one worker's start (and a
    later eval in this process starts warm). The mock model's replies are fixed, so the
    samples' scores and token counts, and the tables built from them, do not depend on
    ``n_jobs``.
    """
    workflows = list(workflows)
    if n_jobs == 1 or len(workflows) < 2:
        return {w: mock_tau2_eval(w, log_dir, **kwargs) for w in workflows}
    from joblib.externals.loky import get_reusable_executor

    executor = get_reusable_executor(max_workers=max(1, min(int(n_jobs), len(workflows)) - 1))
    futures = [executor.submit(mock_tau2_eval, w, log_dir, **kwargs) for w in workflows[1:]]
    paths = {workflows[0]: mock_tau2_eval(workflows[0], log_dir, **kwargs)}
    paths.update((w, f.result()) for w, f in zip(workflows[1:], futures))
    return {w: paths[w] for w in workflows}


def _stable_name(location: str, name: str) -> str:
    """Rename Inspect's timestamped log file to ``name`` (same folder), so tables that
    record the file name are identical across runs."""
    from pathlib import Path

    src = Path(location)
    dst = src.with_name(name)
    src.replace(dst)
    return str(dst)


def mock_error_eval(log_dir: str, *, n_samples: int = 8, epochs: int = 2, fail_every: int = 3,
                    wrong_every: int = 4) -> str:
    """A small real Inspect eval whose *simulated* model errors on some samples.

    Samples ask ``"What is i + i?"``; the mock model answers correctly except on every
    ``wrong_every``-th call (a wrong answer) and raises on every ``fail_every``-th call,
    which Inspect records as a sample error (``fail_on_error=False`` keeps the log).
    Returns the log path. Used to show how :func:`agentstudies.episodes.from_inspect_log`
    counts errored samples.
    """
    import itertools

    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    counter = itertools.count(1)

    def outputs(input: list[Any], tools: Any, tool_choice: Any, config: Any) -> Any:
        call = next(counter)
        if call % fail_every == 0:
            raise RuntimeError(f"simulated provider failure on call {call}")
        i = int(input[-1].text.split()[2])
        out = ModelOutput.from_content("mockllm/model", str(2 * i + (1 if call % wrong_every == 0 else 0)))
        out.usage = ModelUsage(input_tokens=12, output_tokens=2, total_tokens=14)
        return out

    task = Task(dataset=[Sample(id=i, input=f"What is {i} + {i}?", target=str(2 * i)) for i in range(n_samples)],
                solver=generate(), scorer=match(), name="mock_arithmetic")
    logs = inspect_eval(task, model="mockllm/model", model_args={"custom_outputs": outputs}, epochs=epochs,
                        log_dir=str(log_dir), display="none", fail_on_error=False, max_samples=1,
                        log_realtime=False)
    return _stable_name(logs[0].location, "mock-arithmetic_errors.eval")
