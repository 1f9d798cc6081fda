"""LLM policies through ``inspect_ai``'s model API — an option, never a requirement.

Any provider Inspect supports works: a local OpenAI-compatible server (vLLM, Ollama,
llama.cpp: ``openai-api/<service>/<model>`` with ``model_base_url``), a hosted API
(``openai/gpt-...``, ``anthropic/claude-...`` with the provider's key in the
environment), or Inspect's offline ``mockllm/model``. A chapter selects one with the
parameter ``agent="llm:<provider/model>"``; the default ``agent="simulated"`` keeps the
scripted policies and needs no model.

What a real model changes (the chapters say this where the parameter is declared):

* **cost and time** — every step is a model call; a τ-bench episode is 5–30 calls;
* **nondeterminism** — the generation ``seed`` is passed to the provider, but most
  providers (and batched GPU inference) do not guarantee identical outputs, so the
  book's byte-identical-tables promise holds for simulated agents only;
* **labels** — rows produced by a model carry ``simulated = False`` and the model name;
  they are never labelled simulated.

Per episode the policy records (:meth:`LLMPolicyBase.episode_record`): the model, the
generation config, the seed, the SHA-256 of every prompt sent (in order), input and
output tokens (from the provider's usage; input tokens include those the provider served
from its prompt cache), the number of calls, and errors and limits.

Inspect's model API is asynchronous; :class:`LLMClient` runs it on one private event
loop in a background thread, so the synchronous policy protocol
(``reset(task_id, seed, role)`` / ``act(observation)``) works inside a Jupyter kernel
(which already runs an event loop) as well as in a script.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from agentstudies.agents.endpoint import (  # noqa: F401 - re-exported for the drivers
    ENDPOINT_CHECK_TIMEOUT_S, MAX_CONSECUTIVE_FAILURES, EndpointUnreachable, check_endpoint)
from agentstudies.specs import AGENT_PREFIX, AgentSpec, is_llm_agent

__all__ = [
    "AGENT_PREFIX",
    "LLMSpec",
    "LLMClient",
    "LLMError",
    "LLMPolicyBase",
    "is_llm_agent",
    "LLM_RECORD_COLUMNS",
    "llm_record",
    "llm_spec",
]


class LLMError(RuntimeError):
    """A model call failed (provider error, refused request, timeout)."""


def _is_connection_failure(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) is a failure to connect or a timeout."""
    seen = 0
    while exc is not None and seen < 10:
        name = type(exc).__name__
        if isinstance(exc, (ConnectionError, TimeoutError)) or "Connect" in name or "Timeout" in name:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


#: Per-episode columns of a policy that calls a model (:meth:`LLMPolicyBase.episode_record`
#: plus ``agent``); :func:`llm_record` gives them for any policy.
LLM_RECORD_COLUMNS: tuple[str, ...] = (
    "agent", "model", "generate_config", "llm_seed", "prompt_sha256", "llm_calls", "input_tokens",
    "output_tokens", "llm_errors", "llm_limit", "served_model", "system_prompt_sha256", "base_url",
)


def llm_record(policy: Any) -> dict[str, Any]:
    """The :data:`LLM_RECORD_COLUMNS` of ``policy``'s current episode.

    A policy that calls a model (has ``episode_record``) gives its record with
    ``agent = "llm:<model>"``; any other policy (scripted, trained) gives
    ``agent = "simulated"``, empty strings, ``llm_calls = 0`` and NaN tokens and seed.
    """
    if hasattr(policy, "episode_record"):
        rec = policy.episode_record()
        return {"agent": f"{AGENT_PREFIX}{rec['model']}", **{k: rec[k] for k in LLM_RECORD_COLUMNS[1:]}}
    nan = float("nan")
    return {"agent": "simulated", "model": "", "generate_config": "", "llm_seed": nan, "prompt_sha256": "",
            "llm_calls": 0, "input_tokens": nan, "output_tokens": nan, "llm_errors": "", "llm_limit": "",
            "served_model": "", "system_prompt_sha256": "", "base_url": ""}


@dataclass(frozen=True)
class LLMSpec:
    """Which model, where, and how to sample.

    Parameters
    ----------
    model : Inspect model name, e.g. ``"openai-api/local/qwen3-8b"`` or ``"mockllm/model"``.
    base_url : the provider's base URL (``http://127.0.0.1:8000/v1`` for a local server).
    api_key : key for the provider (default: the provider's environment variable;
        ``"EMPTY"`` is sent to a local server when none is set).
    max_connections : concurrent requests the provider client may open.
    temperature, max_tokens, top_p : generation settings (``None`` = provider default).
    timeout : seconds per request.
    model_args : extra keyword arguments for ``inspect_ai.model.get_model`` (e.g.
        ``custom_outputs`` of the mock model in tests).
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    max_connections: int = 4
    temperature: float | None = 0.0
    max_tokens: int | None = 1024
    top_p: float | None = None
    timeout: int = 120
    model_args: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_agent(cls, agent: str, **settings: Any) -> "LLMSpec":
        """``LLMSpec.from_agent("llm:openai-api/local/m", base_url=...)``.

        ``None`` settings are dropped (so a chapter can pass its parameters through).

        Raises
        ------
        ValueError
            If ``agent`` is not an LLM agent string (see :func:`is_llm_agent`).
        """
        if not is_llm_agent(agent):
            raise ValueError(f"{agent!r} is the simulated agent, not an LLM agent")
        return cls(model=agent[len(AGENT_PREFIX):], **{k: v for k, v in settings.items() if v is not None})

    def generate_config(self, seed: int | None = None) -> dict[str, Any]:
        """The generation config as a JSON-able dict (recorded per episode)."""
        cfg = {"temperature": self.temperature, "max_tokens": self.max_tokens, "top_p": self.top_p,
               "max_connections": self.max_connections, "timeout": self.timeout, "seed": seed}
        return {k: v for k, v in cfg.items() if v is not None}


#: LLMSpec settings that are not part of an :class:`~agentstudies.specs.AgentSpec`
#: (a key, provider arguments): passed through from ``llm_settings`` as given.
_PASS_THROUGH = ("api_key", "model_args")


def llm_spec(agent: str | AgentSpec, llm_settings: Mapping[str, Any] | None = None) -> LLMSpec | None:
    """The :class:`LLMSpec` of ``agent``, or None for the simulated agent.

    ``agent``: an :class:`~agentstudies.specs.AgentSpec`, or a chapter's flat
    ``agent`` string with its ``llm_settings`` mapping (built into an ``AgentSpec``, which
    checks every field; ``api_key`` and ``model_args`` pass through to the LLMSpec).

    Raises
    ------
    ValueError
        A malformed agent or setting (named), ``llm_settings`` with the simulated agent, or
        ``llm_settings`` beside an ``AgentSpec`` (give the settings in one place).
    """
    settings = dict(llm_settings or {})
    extra = {k: settings.pop(k) for k in _PASS_THROUGH if k in settings and settings[k] is not None}
    if isinstance(agent, AgentSpec):
        if settings or extra:
            raise ValueError("llm_settings given beside an AgentSpec; put the settings in the AgentSpec")
        spec = agent
    else:
        spec = AgentSpec.from_parameters(agent, settings)
        if extra and not spec.is_llm:
            raise ValueError(f"llm_settings {sorted(extra)} given but agent='simulated'; "
                             "set agent='llm:<provider>/<model>'")
    return LLMSpec(model=spec.model, **spec.llm_settings(), **extra) if spec.is_llm else None


# ------------------------------------------------------------------ event loop
_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


def _loop() -> asyncio.AbstractEventLoop:
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="agentstudies-llm", daemon=True).start()
            _LOOP = loop
        return _LOOP


class LLMClient:
    """Synchronous facade over one ``inspect_ai.model.Model``.

    ``generate(messages, tools, seed)`` returns Inspect's ``ModelOutput``; usage is
    added to :attr:`usage` (``input_tokens``, ``output_tokens``, ``calls``).

    With a ``base_url``, the endpoint is checked first (:func:`check_endpoint`: one short
    request), and :meth:`generate` counts calls in a row that fail to connect.

    Raises
    ------
    LLMError
        From :meth:`generate` when the provider fails or times out.
    EndpointUnreachable (a ``ConnectionError``)
        On construction when ``base_url`` does not answer; from :meth:`generate` after
        :data:`MAX_CONSECUTIVE_FAILURES` calls in a row failed to connect (the run stops
        instead of waiting ``timeout`` seconds per call, episode after episode).
    ImportError
        If the provider's client package is missing (e.g. ``openai`` for
        ``openai-api/...``; install the ``llm`` extra).
    """

    def __init__(self, spec: LLMSpec):
        from inspect_ai.model import GenerateConfig, get_model

        self.spec = spec
        self._failures = 0
        self._failures_lock = threading.Lock()
        if spec.base_url is not None:
            check_endpoint(spec.base_url)
        kwargs = dict(spec.model_args)
        if spec.base_url is not None:
            kwargs["base_url"] = spec.base_url
        api_key = spec.api_key
        if api_key is None and spec.base_url is not None:
            api_key = "EMPTY"  # local OpenAI-compatible servers accept any key
        if api_key is not None:
            kwargs["api_key"] = api_key
        config = GenerateConfig(**{k: v for k, v in spec.generate_config().items()})
        self.model = _run(_get_model_async(get_model, spec.model, config, kwargs), spec.timeout)

    def generate(self, messages: Sequence[Any], tools: Sequence[Any] = (), seed: int | None = None) -> Any:
        """One model call; returns ``inspect_ai.model.ModelOutput``."""
        from inspect_ai.model import GenerateConfig

        config = GenerateConfig(seed=seed) if seed is not None else GenerateConfig()
        try:
            out = _run(self.model.generate(list(messages), tools=list(tools), config=config), self.spec.timeout)
        except Exception as exc:  # noqa: BLE001 - any provider error becomes an LLMError
            self._count_failure(exc)
            if isinstance(exc, LLMError):
                raise
            raise LLMError(f"{self.spec.model}: {type(exc).__name__}: {exc}") from exc
        with self._failures_lock:
            self._failures = 0
        return out

    def _count_failure(self, exc: BaseException) -> None:
        """Count a failure to connect; stop the run after :data:`MAX_CONSECUTIVE_FAILURES`."""
        if not _is_connection_failure(exc):
            return
        with self._failures_lock:
            self._failures += 1
            n = self._failures
        if n >= MAX_CONSECUTIVE_FAILURES:
            where = self.spec.base_url or f"the {self.spec.model.split('/')[0]} provider's default endpoint"
            raise EndpointUnreachable(
                f"{n} model calls in a row to {where} failed to connect or timed out (last: {type(exc).__name__}: "
                f"{exc}); the run stops here instead of waiting {self.spec.timeout} s per call. Check that the server "
                "is up and the base URL (-p model_base_url) is right") from exc


async def _get_model_async(get_model: Any, name: str, config: Any, kwargs: dict[str, Any]) -> Any:
    # constructed on the private loop, so the provider's async client binds to it
    return get_model(name, config=config, **kwargs)


def _run(coro: Any, timeout: float) -> Any:
    future = asyncio.run_coroutine_threadsafe(coro, _loop())
    try:
        return future.result(timeout=timeout)
    except TimeoutError as exc:
        future.cancel()
        raise LLMError(f"model call timed out after {timeout} s") from exc


def _prompt_hash(messages: Sequence[Any]) -> str:
    """SHA-256 of what a prompt says: role, text, tool calls and tool results (no ids)."""
    canon = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "text": m.text}
        calls = getattr(m, "tool_calls", None)
        if calls:
            item["tool_calls"] = [[c.function, c.arguments] for c in calls]
        if m.role == "tool":
            item["function"] = getattr(m, "function", None)
        canon.append(item)
    return hashlib.sha256(json.dumps(canon, sort_keys=True, default=str).encode()).hexdigest()


def _system_prompt_hash(messages: Sequence[Any]) -> str:
    """SHA-256 of the system messages' text (joined by newlines; of ``""`` when none)."""
    text = "\n".join(m.text for m in messages if m.role == "system")
    return hashlib.sha256(text.encode()).hexdigest()


#: Inspect ``ModelUsage`` fields whose sum is a prompt's length in tokens.
_PROMPT_USAGE = ("input_tokens", "input_tokens_cache_read", "input_tokens_cache_write")


class LLMPolicyBase:
    """Common bookkeeping of LLM policies: client, usage, prompt hashes, errors.

    Subclasses implement ``reset`` and ``act`` of :class:`agentstudies.agents.Policy`.
    """

    simulated = False

    def __init__(self, spec: LLMSpec | str, *, client: LLMClient | None = None, **settings: Any):
        self.spec = LLMSpec.from_agent(spec, **settings) if isinstance(spec, str) else spec
        self.client = client or LLMClient(self.spec)
        self.name = self.spec.model
        self._new_record(None)

    @property
    def label(self) -> str:
        """Display name: the model (never labelled simulated)."""
        return f"{self.spec.model} (LLM)"

    @property
    def params(self) -> dict[str, Any]:
        """Model and generation settings (provenance; no key, no seed)."""
        return {"agent": f"{AGENT_PREFIX}{self.spec.model}", "base_url": self.spec.base_url,
                **self.spec.generate_config()}

    def __deepcopy__(self, memo: dict[int, Any]) -> "LLMPolicyBase":
        """A copy of the episode state (transcript, usage, prompt hash so far) that
        shares the model client: forks of one episode (the recovery harness's branches)
        continue from the same conversation without a new connection."""
        import copy

        new = object.__new__(type(self))
        memo[id(self)] = new
        for key, value in vars(self).items():
            if key in ("client", "spec"):
                setattr(new, key, value)
            elif key == "_prompt_hasher":
                setattr(new, key, value.copy())
            else:
                setattr(new, key, copy.deepcopy(value, memo))
        return new

    def _new_record(self, seed: int | None) -> None:
        self.seed = seed
        self._calls = 0
        self._tokens_in = 0
        self._tokens_out = 0
        self._prompt_hasher = hashlib.sha256()
        self.errors: list[str] = []
        self.limit: str = ""
        self._served: list[str] = []  # the responses' model names, first seen first
        self._system_hashes: list[str] = []  # SHA-256 of each distinct system prompt sent

    def _generate(self, messages: Sequence[Any], tools: Sequence[Any] = ()) -> Any:
        # the per-call seed is derived from the episode seed and the call index
        call_seed = None if self.seed is None else (int(self.seed) + self._calls) % (2**31 - 1)
        self._prompt_hasher.update(_prompt_hash(messages).encode())
        system = _system_prompt_hash(messages)
        if system not in self._system_hashes:
            self._system_hashes.append(system)
        self._calls += 1
        out = self.client.generate(messages, tools, seed=call_seed)
        served = str(getattr(out, "model", "") or "")
        if served and served not in self._served:
            self._served.append(served)
        usage = getattr(out, "usage", None)
        if usage is not None:
            # the whole prompt: Inspect's input_tokens leaves out tokens a provider read from
            # or wrote to its prompt cache (llama.cpp and vLLM reuse a shared prefix)
            self._tokens_in += sum(int(getattr(usage, k, 0) or 0) for k in _PROMPT_USAGE)
            self._tokens_out += int(usage.output_tokens or 0)
        if getattr(out, "error", None):
            self.errors.append(str(out.error))
        if getattr(out, "stop_reason", None) in ("max_tokens", "model_length"):
            self.limit = str(out.stop_reason)
        return out

    def episode_record(self) -> dict[str, Any]:
        """What this episode cost and which prompts it sent (one dict, JSON-able).

        Keys: ``model``, ``generate_config`` (JSON string), ``llm_seed``,
        ``prompt_sha256``, ``llm_calls``, ``input_tokens`` (the prompts' tokens, those the
        provider served from its prompt cache included), ``output_tokens``,
        ``llm_errors`` (``"; "``-joined), ``llm_limit``, ``served_model`` (the model
        name each response reported, e.g. the checkpoint a local server actually loaded;
        several are ``"; "``-joined in order of first appearance; ``""`` before any
        call), ``system_prompt_sha256`` (SHA-256 of the system prompt's text alone, so two
        prompt templates of one model can be told apart; ``"; "``-joined if it changed
        within the episode), ``base_url`` (``""`` for the provider's default).
        """
        return {
            "model": self.spec.model,
            "generate_config": json.dumps(self.spec.generate_config(self.seed), sort_keys=True),
            "llm_seed": self.seed,
            "prompt_sha256": self._prompt_hasher.hexdigest() if self._calls else "",
            "llm_calls": self._calls,
            "input_tokens": self._tokens_in,
            "output_tokens": self._tokens_out,
            "llm_errors": "; ".join(self.errors),
            "llm_limit": self.limit,
            "served_model": "; ".join(self._served),
            "system_prompt_sha256": "; ".join(self._system_hashes),
            "base_url": self.spec.base_url or "",
        }
