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
output tokens (from the provider's usage), the number of calls, and errors and limits.

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

__all__ = [
    "AGENT_PREFIX",
    "LLMSpec",
    "LLMClient",
    "LLMError",
    "LLMPolicyBase",
    "LLMTauPolicy",
    "LLMAlfworldPolicy",
    "is_llm_agent",
    "LLM_RECORD_COLUMNS",
    "llm_record",
    "make_llm_policy",
]

#: Prefix of an LLM agent parameter: ``"llm:<inspect model name>"``.
AGENT_PREFIX = "llm:"


class LLMError(RuntimeError):
    """A model call failed (provider error, refused request, timeout)."""


def is_llm_agent(agent: str) -> bool:
    """True for ``"llm:<provider/model>"``, False for ``"simulated"``.

    Raises
    ------
    ValueError
        If ``agent`` is neither ``"simulated"`` nor ``"llm:<provider>/<model>"``.
    """
    if agent == "simulated":
        return False
    if isinstance(agent, str) and agent.startswith(AGENT_PREFIX) and "/" in agent[len(AGENT_PREFIX):]:
        return True
    raise ValueError(
        f"agent must be 'simulated' or 'llm:<provider>/<model>' (e.g. 'llm:openai-api/local/qwen3-8b', "
        f"'llm:mockllm/model'); got {agent!r}"
    )


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


def make_llm_policy(agent: str, llm_settings: Mapping[str, Any] | None = None, *,
                    show_admissible: bool = False) -> "LLMAlfworldPolicy":
    """An :class:`LLMAlfworldPolicy` for ``agent = "llm:<provider/model>"``.

    ``llm_settings``: keyword arguments of :class:`LLMSpec` (``base_url``,
    ``max_connections``, ``temperature``, ``max_tokens``, ...; ``None`` values dropped).

    Raises
    ------
    ValueError
        If ``agent`` is not ``"llm:<provider>/<model>"``.
    """
    return LLMAlfworldPolicy(LLMSpec.from_agent(agent, **dict(llm_settings or {})), show_admissible=show_admissible)


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

    Raises
    ------
    LLMError
        From :meth:`generate` when the provider fails or times out.
    ImportError
        If the provider's client package is missing (e.g. ``openai`` for
        ``openai-api/...``; install the ``llm`` extra).
    """

    def __init__(self, spec: LLMSpec):
        from inspect_ai.model import GenerateConfig, get_model

        self.spec = spec
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
            return _run(self.model.generate(list(messages), tools=list(tools), config=config), self.spec.timeout)
        except LLMError:
            raise
        except Exception as exc:  # noqa: BLE001 - any provider error becomes an LLMError
            raise LLMError(f"{self.spec.model}: {type(exc).__name__}: {exc}") from exc


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
            self._tokens_in += int(usage.input_tokens or 0)
            self._tokens_out += int(usage.output_tokens or 0)
        if getattr(out, "error", None):
            self.errors.append(str(out.error))
        if getattr(out, "stop_reason", None) in ("max_tokens", "model_length"):
            self.limit = str(out.stop_reason)
        return out

    def episode_record(self) -> dict[str, Any]:
        """What this episode cost and which prompts it sent (one dict, JSON-able).

        Keys: ``model``, ``generate_config`` (JSON string), ``llm_seed``,
        ``prompt_sha256``, ``llm_calls``, ``input_tokens``, ``output_tokens``,
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


# --------------------------------------------------------------------- τ-bench
TAU_SYSTEM = (
    "You are a customer service agent. Follow the policy below exactly. Use the tools to look "
    "up and change records; ask the user for any information you need; confirm with the user "
    "before any action that changes a record. When the user's request is resolved, tell the "
    "user the outcome, including every detail they asked for.\n\n<policy>\n{policy}\n</policy>"
)


class LLMTauPolicy(LLMPolicyBase):
    """τ²-bench tool-calling agent backed by an Inspect model.

    Observations are the dicts built by :func:`agentstudies.agents.tau.run_episode`:
    ``"user_message"`` (the user's latest text, when the user spoke) and ``"last"``
    (feedback on the previous proposal: tool output or error, ``"blocked"`` /
    ``"declined"`` by a workflow controller). Actions are the τ action types
    (``ToolCallAction``, ``MessageAction``, ``StopAction``). The system prompt holds the
    domain's policy text (``policy.txt`` shipped with τ²-bench); the tools are the
    domain's agent tools with their JSON schemas. If the model returns several tool
    calls in one message they are proposed one at a time, in order.
    """

    def reset(self, task_id: str, seed: int, role: str | None = None) -> None:
        """Start an episode of ``task_id``; generation seeds derive from ``seed``."""
        from inspect_ai.model import ChatMessageSystem
        from inspect_ai.tool import ToolInfo, ToolParams

        from agentstudies.envs.tau.data import get_task, policy_text, tool_specs

        task = get_task(task_id)
        self.task_id = task.task_id
        self._new_record(int(seed))
        self.messages: list[Any] = [ChatMessageSystem(content=TAU_SYSTEM.format(policy=policy_text(task.domain)))]
        self.tools = [ToolInfo(name=s.name, description=s.description, parameters=ToolParams.model_validate(s.parameters))
                      for s in tool_specs(task.domain)]
        self._pending: list[Any] = []  # tool calls of the last assistant message not yet proposed
        self._last_call: Any = None

    def act(self, observation: Mapping[str, Any]) -> Any:
        """Next τ action for ``observation`` (see class docstring)."""
        from inspect_ai.model import ChatMessageTool, ChatMessageUser

        from agentstudies.agents.tau.policy import MessageAction, StopAction, ToolCallAction

        last = observation.get("last") or {}
        if self._last_call is not None:
            status = last.get("status")
            if status == "ok":
                content = str(last.get("output", ""))
            elif status == "error":
                content = f"Error: {last.get('error', '')}"
            else:
                content = f"The call was not executed: {status} by the workflow's controller."
            self.messages.append(ChatMessageTool(content=content, tool_call_id=self._last_call.id,
                                                 function=self._last_call.function))
            self._last_call = None
        if observation.get("user_message"):
            self.messages.append(ChatMessageUser(content=str(observation["user_message"])))
        if not self._pending:
            try:
                out = self._generate(self.messages, self.tools)
            except LLMError as exc:
                self.errors.append(str(exc))
                return StopAction("agent_error")
            message = out.choices[0].message if out.choices else None
            if message is None:
                self.errors.append("the model returned no choice")
                return StopAction("agent_error")
            self.messages.append(message)
            self._pending = list(message.tool_calls or [])
            if not self._pending:
                text = message.text.strip()
                return MessageAction(text) if text else StopAction("done")
        call = self._pending.pop(0)
        self._last_call = call
        if call.parse_error:
            self.errors.append(f"unparseable tool call {call.function}: {call.parse_error}")
        return ToolCallAction(call.function, dict(call.arguments or {}))


# ---------------------------------------------------------------------- ALFWorld
ALFWORLD_SYSTEM = (
    "You are an agent in a text household. Reach the goal with text commands such as "
    "'go to countertop 1', 'open fridge 1', 'take apple 1 from countertop 1', "
    "'move apple 1 to countertop 1', 'heat apple 1 with microwave 1', 'look', 'inventory'. "
    "Think briefly, then answer with one line 'Action: <command>'."
)


class LLMAlfworldPolicy(LLMPolicyBase):
    """ALFWorld as a ReAct text loop (Yao et al., 2023) through an Inspect model.

    ``act(observation)`` takes what the agent is shown — a string, or a mapping with
    ``"goal"`` / ``"observation"`` (the recovery harness shows exactly these two; a stale
    or missing observation is passed through verbatim) and, from
    :meth:`agentstudies.envs.alfworld.env.AlfworldEnv.observe`, ``"history"`` and
    ``"admissible_commands"`` — and returns one command string, parsed from the reply's
    last ``Action:`` line (the whole reply's last line when there is none).

    * The first message of an episode carries the goal; when the mapping holds a
      visible history ``(o_0, a_0, ..., o_t)`` longer than one item (a handoff solver
      starting on a cloned state), the whole history is shown in that first message, so
      the model continues the episode it was handed.
    * The admissible commands are shown only with ``show_admissible=True`` (ReAct's
      prompt offered them as an option); keys ``"admissible_commands"`` or ``"admissible"``.
    * The generation seed of an episode is ``keyed_seed(seed, "llm", task_id, role)``
      (call ``k`` of the episode uses that seed ``+ k``); copies made with
      :func:`copy.deepcopy` (forks) keep the stream position.
    * A failed model call (HTTP error, timeout) is recorded in ``errors``; the episode
      goes on with ``"look"`` and no further model call (every later step is ``look``),
      so the environment, not the harness, scores the episode, and the table flags it.

    The transcript it keeps is only what it was shown and what it said.
    """

    def __init__(self, spec: LLMSpec | str, *, show_admissible: bool = False, client: LLMClient | None = None,
                 **settings: Any):
        super().__init__(spec, client=client, **settings)
        self.show_admissible = show_admissible

    def reset(self, task_id: str, seed: int, role: str | None = None) -> None:
        """Start an episode; ``role`` (reacher / solver / eval) keys the seed, not shown."""
        from inspect_ai.model import ChatMessageSystem

        from agentstudies.parallel import keyed_seed

        self.task_id, self.role = str(task_id), role
        llm_seed = int(keyed_seed(int(seed), "llm", str(task_id), str(role)).generate_state(1)[0] % (2**31 - 1))
        self._new_record(llm_seed)
        self.messages: list[Any] = [ChatMessageSystem(content=ALFWORLD_SYSTEM)]
        self.last_log: dict[str, Any] = {}

    def _shown_text(self, observation: Any) -> str:
        if not isinstance(observation, Mapping):
            return f"Observation: {observation}"
        first = len(self.messages) == 1
        parts = [f"Goal: {observation['goal']}"] if observation.get("goal") and first else []
        history = observation.get("history")
        if first and history is not None and len(history) > 1:
            parts.append("What happened so far:")
            parts.extend((f"Action: {item}" if i % 2 else f"Observation: {item}") for i, item in enumerate(history))
        else:
            parts.append(f"Observation: {observation.get('observation', '')}")
        admissible = observation.get("admissible_commands", observation.get("admissible"))
        if self.show_admissible and admissible:
            parts.append("Valid commands: " + ", ".join(admissible))
        return "\n".join(parts)

    def act(self, observation: Any) -> str:
        """One command for what the agent is shown (see the class docstring)."""
        from inspect_ai.model import ChatMessageUser

        text = self._shown_text(observation)
        self.messages.append(ChatMessageUser(content=text))
        if self.errors:  # the model failed earlier in this episode: no further calls
            command = "look"
        else:
            try:
                out = self._generate(self.messages)
            except LLMError as exc:
                self.errors.append(str(exc))
                command = "look"
            else:
                reply = out.choices[0].message if out.choices else None
                if reply is not None:
                    self.messages.append(reply)
                else:
                    self.errors.append("the model returned no choice")
                command = _parse_action(reply.text if reply is not None else "")
        self.last_log = {"shown": text, "command": command}
        return command


def _parse_action(reply: str) -> str:
    lines = [ln.strip() for ln in reply.strip().splitlines() if ln.strip()]
    for line in reversed(lines):
        if line.lower().startswith("action:"):
            return line.split(":", 1)[1].strip().strip(".").lower() or "look"
    return (lines[-1].strip(".").lower() if lines else "look")
