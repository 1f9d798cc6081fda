"""The seeded scripted user simulator (simulated).

ToolSandbox role-plays the user with an LLM; offline, this scripted user is the default
(``shared/notes/toolsandbox.md``). It states its requests one at a time
(:class:`~agentstudies.envs.toolsandbox.Intent`), answers the agent's questions from the
scenario's *hidden facts* (``None`` -> "I don't know"), moves to its next request when the
agent says it is done or cannot help, and finally ends the conversation (its only tool,
``end_conversation``). Asked for consent by a Confirmation gate, it answers YES unless the
shown mutation contradicts what it said or knows of its own request -- judged from its
intent text and revealed facts, never from gold values (then NO, each with a small seeded
error rate). Its wording varies with the seed; its meaning does not.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from agentstudies.envs.toolsandbox._context import Message, Role
from agentstudies.envs.toolsandbox._scenarios import Intent

__all__ = ["ScriptedUser"]

_ANSWER = ("{v}.", "It's {v}.", "{v}, please.")
_UNKNOWN = ("I don't know, sorry.", "No idea, I don't have that.", "I'm afraid I don't know.")


def _tokens(text: str) -> list[str]:
    return "".join(ch if ch.isalnum() else " " for ch in str(text).lower()).split()


def _digits(x: Any) -> str:
    return "".join(ch for ch in str(x) if ch.isdigit())[-10:]


class ScriptedUser:
    """Scripted user of one scenario (simulated).

    Parameters
    ----------
    intents : the scenario's requests, in order
    rng : generator for wording and consent noise
    p_decline_consistent, p_accept_inconsistent : consent error rates
    """

    simulated = True

    def __init__(self, intents: Sequence[Intent], rng: np.random.Generator, *,
                 p_decline_consistent: float = 0.03, p_accept_inconsistent: float = 0.1):
        self.intents = tuple(intents)
        self.rng = rng
        self.p_decline_consistent = p_decline_consistent
        self.p_accept_inconsistent = p_accept_inconsistent

    def _n_stated(self, history: Sequence[Message]) -> int:
        return sum(1 for m in history if m.sender == Role.USER and m.act and m.act.get("act") == "intent")

    def opening(self, index: int = 0) -> Message:
        """The message stating request ``index``."""
        it = self.intents[index]
        return Message(Role.USER, Role.AGENT, it.text, (Role.USER, Role.AGENT),
                       act={"act": "intent", "index": index, "kind": it.kind, "slots": dict(it.slots)})

    def respond(self, history: Sequence[Message]) -> Message:
        """The user's reply to the agent's last message (a message, or ``end_conversation``)."""
        last = history[-1]
        act = dict(last.act or {})
        k = self._n_stated(history)
        current = self.intents[k - 1] if k else self.intents[0]
        if act.get("act") == "ask":
            slot = act.get("slot")
            if slot not in current.hidden and slot not in current.slots:
                text = (f"Sorry, I don't understand the question \"{last.content}\". "
                        "Please ask me about something I said or need.")
                return Message(Role.USER, Role.AGENT, text, (Role.USER, Role.AGENT), act={"act": "answer", "slot": slot, "value": None})
            known = dict(current.slots, **current.hidden)
            if known.get(slot) is not None:
                v = known[slot]
                text = _ANSWER[int(self.rng.integers(len(_ANSWER)))].format(v=v)
                return Message(Role.USER, Role.AGENT, text, (Role.USER, Role.AGENT), act={"act": "answer", "slot": slot, "value": v})
            text = _UNKNOWN[int(self.rng.integers(len(_UNKNOWN)))]
            return Message(Role.USER, Role.AGENT, text, (Role.USER, Role.AGENT), act={"act": "answer", "slot": slot, "value": None})
        if k < len(self.intents):
            return self.opening(k)
        return Message(Role.USER, Role.EXECUTION_ENVIRONMENT, "", (Role.USER, Role.EXECUTION_ENVIRONMENT),
                       tool_call={"name": "end_conversation", "arguments": {}})

    def consistent(self, mutation: Mapping[str, Any], history: Sequence[Message]) -> bool:
        """Whether ``{"tool", "arguments"}`` agrees with what the user *said or knows* of its
        current request: its intent text, the facts it revealed, and the facts it knows it
        lacks (a hidden value ``None``). Never the scenario's gold values.

        Phone numbers: the digits must appear in what the user said, when it said a number;
        a number for a slot the user does not know is refused. Free text (content, name,
        relationship) stated by the user: at least 80% of its words must be the user's.
        ``on``: must agree with "turn on" / "turn off" in the request. A time for a slot the
        user does not know is refused. Ids and timestamps the user cannot read are accepted.
        """
        args = dict(mutation.get("arguments", {}))
        k = max(self._n_stated(history), 1)
        it = self.intents[k - 1]
        said = " ".join([it.text] + [str(v) for v in it.hidden.values() if v is not None])
        words = set(_tokens(said))
        said_digits = "".join(ch for ch in said if ch.isdigit())
        text = it.text.lower()
        for name, value in args.items():
            if name == "phone_number":
                if "phone_number" in it.hidden and it.hidden["phone_number"] is None:
                    return False
                if len(said_digits) >= 10 and _digits(value) not in said_digits:
                    return False
            elif name in ("content", "name", "relationship"):
                if name in it.slots or name in it.hidden:
                    toks = _tokens(str(value))
                    if not toks or sum(t in words for t in toks) / len(toks) < 0.8:
                        return False
            elif name == "on":
                if ("turn off" in text and bool(value)) or ("turn on" in text and not bool(value)):
                    return False
            elif name == "reminder_timestamp":
                if "when" in it.hidden and it.hidden["when"] is None:
                    return False
        return True

    def consent(self, mutation: Mapping[str, Any] | None, history: Sequence[Message]) -> str:
        """``"YES"`` or ``"NO"`` to a Confirmation gate's question (one uniform per call)."""
        u = self.rng.random()
        if mutation is None:
            return "NO"
        if self.consistent(mutation, history):
            return "NO" if u < self.p_decline_consistent else "YES"
        return "YES" if u < self.p_accept_inconsistent else "NO"
