"""τ²-bench tool-calling agent backed by an Inspect model (an option, never a requirement).

The shared client, settings and bookkeeping are in :mod:`agentstudies.agents._llm`; this
module holds only what is τ-specific: the system prompt and the policy's
``reset`` / ``act`` over the τ observation dicts of :mod:`agentstudies.agents.tau._episodes`.
"""

from __future__ import annotations

from typing import Any, Mapping

from agentstudies.agents._llm import LLMError, LLMPolicyBase

__all__ = ["LLMTauPolicy", "TAU_SYSTEM"]

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

        from agentstudies.envs.tau import get_task, policy_text, tool_specs

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

        from agentstudies.agents.tau._policy import MessageAction, StopAction, ToolCallAction

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
