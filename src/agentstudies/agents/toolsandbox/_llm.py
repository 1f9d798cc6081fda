"""An LLM tool-calling agent for the ToolSandbox-style world, through ``inspect_ai``.

:class:`LLMToolSandboxPolicy` implements the same protocol as the scripted
:class:`agentstudies.agents.toolsandbox.ScriptedToolAgent`: ``reset(task_id, seed,
role)`` then ``act(observation) -> ToolCall | Say``, where the observation is
:meth:`agentstudies.envs.toolsandbox.ToolSandboxEnv.observation` plus ``last_outcome``
(``"executed"`` / ``"blocked"`` / ``"declined"`` / ``None``) from the workflow loop
(:func:`agentstudies.agents.toolsandbox.drive`). So the episode drivers and the study
only choose the policy.

What the model sees: the world's system message; the tools *as shown* by the case
(:attr:`ToolView.specs`: scrambled names, empty descriptions and ``unknown`` argument
types stay scrambled) as Inspect ``ToolInfo``; the simulated user's messages as user
turns; tool results and errors as tool messages answering its calls. A call a workflow
controller did not execute is answered "not executed" (and a Confirmation gate's question
and the user's answer are quoted in that answer). It never sees the scenario's gold,
milestones, minefields or hidden facts.

The scripted user of this world reads a *dialogue act* beside each agent message (the
scripted agent states its own). For a model's free text, :func:`dialogue_act` stands in
for the user's language understanding (ToolSandbox's user is itself an LLM): a message
with a question mark asks for the slot its cues name (``phone_number``, ``last_name``,
``content``, ``when``; tested on 32 natural phrasings; none matched: an unnamed slot, and
the user answers that it did not understand that question, quoting it);
otherwise the message closes the current request (``done``, or ``cannot`` when it says it
cannot help).

A provider failure ends the episode: :meth:`act` records it and raises
:class:`~agentstudies.agents.LLMError`, which the episode driver turns into the
termination ``agent_error`` with the world scored as it stands (the row is kept and
flagged by ``llm_errors``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from agentstudies.agents._llm import LLMError, LLMPolicyBase

__all__ = ["LLMToolSandboxPolicy", "dialogue_act", "toolsandbox_tool_infos"]

#: Appended to the world's system message (how to talk to the user through plain text).
TOOLSANDBOX_INSTRUCTIONS = (
    "Talk to the user in plain text. When you need information only the user has, ask one "
    "question ending with '?'. When a request is done, or cannot be done, tell the user in one "
    "message without a question."
)

_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}

#: Cues naming the slot a question asks for: (slot, regular expression, weight). A question's
#: slot is the one whose matched cues weigh most (ties: this order); no cue -> no slot.
_SLOT_CUES: tuple[tuple[str, str, int], ...] = (
    ("last_name", r"last name|surname|family name|full name", 3),
    ("last_name", r"do you mean|you mean|who exactly|which one|which contact|which of", 2),
    ("last_name", r"\b(two|several|multiple|more than one)\b[^.?!]*\b(contacts?|people|persons|\w+s named)", 2),
    ("phone_number", r"phone|number|digits|\breach\b", 2),
    ("phone_number", r"mobile|cell", 1),
    ("content", r"\bsay\b|\bwrite\b|wording|tell (him|her|them)\b", 2),
    ("content", r"message|\btext\b|\bread\b", 1),
    ("when", r"\bwhen\b|what time|\btime\b|\bhour\b|\bdate\b", 2),
    ("when", r"\bday\b|remind|o'clock|\balert\b", 1),
)
#: Two full names joined by "or" ("Ana Silva or Ana Tanaka"): a disambiguation question.
_NAME_OR_NAME = r"[A-Z][a-z]+ [A-Z][a-z]+,? or [A-Z][a-z]+ [A-Z][a-z]+"
_CANNOT = ("cannot", "can't", "can not", "unable", "not able", "don't have enough", "do not have enough",
           "couldn't", "could not", "unfortunately", "there is no", "no such", "i'm afraid", "not possible")


def dialogue_act(text: str) -> dict[str, Any]:
    """The dialogue act the scripted user reads from a model's message (module docstring).

    A message with a question mark asks; its slot is the one whose cues
    (:data:`_SLOT_CUES`, plus "<First Last> or <First Last>" for disambiguation) weigh most,
    or ``None`` when nothing names a slot (the user then says which question it did not
    understand). Otherwise ``cannot`` when it declines, else ``done``.

    Returns ``{"act": "ask", "slot": <slot or None>}``, ``{"act": "cannot"}`` or
    ``{"act": "done"}``.
    """
    import re

    raw = text or ""
    t = raw.lower()
    if "?" in t:
        score: dict[str, int] = {}
        for slot, pattern, weight in _SLOT_CUES:
            if re.search(pattern, t):
                score[slot] = score.get(slot, 0) + weight
        if re.search(_NAME_OR_NAME, raw):
            score["last_name"] = score.get("last_name", 0) + 3
        if not score:
            return {"act": "ask", "slot": None}
        order = [s for s, _, _ in _SLOT_CUES]
        best = max(score.values())
        return {"act": "ask", "slot": min((s for s in score if score[s] == best), key=order.index)}
    if any(w in t for w in _CANNOT):
        return {"act": "cannot"}
    return {"act": "done"}


def toolsandbox_tool_infos(specs: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Inspect ``ToolInfo`` objects for the shown tool specs (``{"name", "description",
    "args": [{"name", "type", "required", "description"}]}``); a scrambled ``unknown``
    argument type is sent without a JSON type."""
    from inspect_ai.tool import ToolInfo, ToolParam, ToolParams

    out = []
    for s in specs:
        props = {a["name"]: ToolParam(type=_JSON_TYPES.get(a["type"]), description=a["description"] or None)
                 for a in s["args"]}
        params = ToolParams(properties=props, required=[a["name"] for a in s["args"] if a["required"]])
        out.append(ToolInfo(name=s["name"], description=s["description"] or s["name"], parameters=params))
    return out


class LLMToolSandboxPolicy(LLMPolicyBase):
    """ToolSandbox-style tool-calling agent backed by an Inspect model (module docstring).

    Several tool calls in one model message are proposed one at a time, in order; each
    is answered by its own tool message before the model is called again.
    """

    def reset(self, task_id: str, seed: int, role: str = "agent") -> None:
        """Start an episode of ``task_id`` from its first message; generation seeds derive
        from ``seed``; ``role`` is recorded, not shown."""
        self.task_id, self.role = str(task_id), role
        self._new_record(int(seed))
        self.messages: list[Any] = []
        self.tools: list[Any] | None = None
        self._seen = -1            # highest observation index already turned into chat messages
        self._pending: list[Any] = []
        self._last_call: Any = None

    def act(self, observation: Mapping[str, Any]) -> Any:
        """Next :class:`ToolCall` or :class:`Say` for ``observation``.

        Raises
        ------
        LLMError
            When the model call fails (recorded in :meth:`episode_record` first).
        """
        from agentstudies.envs.toolsandbox import Say, ToolCall

        if self.tools is None:
            self.tools = toolsandbox_tool_infos(observation["tools"])
        self._absorb(observation)
        if not self._pending:
            message = self._ask_model()
            self._pending = list(message.tool_calls or [])
            if not self._pending:
                text = message.text.strip() or "Done."
                return Say(text, dialogue_act(text))
        call = self._pending.pop(0)
        self._last_call = call
        if call.parse_error:
            self.errors.append(f"unparseable tool call {call.function}: {call.parse_error}")
        return ToolCall(call.function, dict(call.arguments or {}))

    def _ask_model(self) -> Any:
        try:
            out = self._generate(self.messages, self.tools or [])
        except LLMError as exc:
            self.errors.append(str(exc))
            raise
        message = out.choices[0].message if out.choices else None
        if message is None:
            self.errors.append("the model returned no choice")
            raise LLMError("the model returned no choice")
        self.messages.append(message)
        return message

    def _absorb(self, observation: Mapping[str, Any]) -> None:
        """Turn the observation's new messages into chat messages (see class docstring)."""
        from inspect_ai.model import ChatMessageSystem, ChatMessageTool, ChatMessageUser

        new = [m for m in observation["messages"] if m.get("index", -1) > self._seen]
        if new:
            self._seen = max(m["index"] for m in new)
        notes, result, users = [], None, []
        for m in new:
            sender, act = m["sender"], (m.get("act") or {})
            if sender == "system" and not self.messages:
                self.messages.append(ChatMessageSystem(content=f"{m['content']}\n\n{TOOLSANDBOX_INSTRUCTIONS}"))
            elif sender == "agent" and act.get("act") == "confirm":
                notes.append(f"The workflow asked the user: {m['content']!r}.")
            elif sender == "user" and act.get("act") == "consent":
                notes.append(f"The user answered {m['content']!r}.")
            elif sender == "user":
                users.append(ChatMessageUser(content=str(m["content"])))
            elif sender == "execution_environment" and m.get("tool_call") is None:
                result = m["error"] if m.get("error") else m["content"]
        if self._last_call is not None:
            outcome = observation.get("last_outcome")
            if outcome in ("blocked", "declined"):
                body = f"The call was not executed: {outcome} by the workflow's controller."
            else:
                body = str(result) if result is not None else "(no result)"
            content = " ".join(notes + [body])
            self.messages.append(ChatMessageTool(content=content, tool_call_id=self._last_call.id,
                                                 function=self._last_call.function))
            self._last_call = None
        self.messages.extend(users)
