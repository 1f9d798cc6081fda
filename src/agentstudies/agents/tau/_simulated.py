"""Scripted (simulated) verifier and user for the τ-bench workflow controllers.

Both receive exactly what a model would: the prompt with the serialized mutation
(:func:`agentstudies.agents.controllers.verifier_prompt` / ``consent_prompt``), and
answer with raw text that the controller parses. Their judgement is imperfect and
feature dependent (probabilities from
:func:`agentstudies.agents.tau.mistake_probabilities`):

- the verifier checks the mutation against the plan (the task's gold writes): an
  invalid call is rejected with probability ``verifier_detect``, a valid one with
  probability ``verifier_false_reject``; with probability ``verifier_malformed`` it
  answers something unparseable (which the controller treats as a rejection);
- the user declines an invalid mutation with probability ``user_decline_invalid`` and a
  valid one with probability ``user_decline_valid``.

A call is *valid* when it equals one of the task's gold writes (same tool, arguments
equal up to list order, the package's ``deep_equal_unordered``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np

from agentstudies.agents.controllers import extract_mutation
from agentstudies.envs.tau import TauTask

__all__ = ["is_planned_write", "SimulatedVerifier", "SimulatedUser", "ScriptedChatUser", "CONSENT_WORDS",
           "USER_END_REASONS"]


def is_planned_write(task: TauTask, name: str, arguments: Mapping[str, Any]) -> bool:
    """True if ``name(**arguments)`` equals one of the task's gold write actions."""
    from inspect_evals.tau2.utils import deep_equal_unordered

    args = dict(arguments)
    return any(a.name == name and deep_equal_unordered(args, a.args()) for a in task.write_actions)


class _SimulatedReviewer:
    """A simulated reviewer of one task: the profile's probabilities and its own stream."""

    simulated = True

    def __init__(self, task: TauTask, probs: Mapping[str, float], rng: np.random.Generator):
        self.task = task
        self.probs = probs
        self.rng = rng
        self.calls = 0


class SimulatedVerifier(_SimulatedReviewer):
    """Simulated plan verifier: ``prompt -> "APPROVE" | "REJECT" | unparseable text``.

    Draws exactly two uniforms per call from ``rng`` (malformed?, verdict), so its stream
    depends only on how many calls it has seen.
    """

    simulated = True

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        u_malformed, u_verdict = self.rng.random(2)
        mutation = extract_mutation(prompt)
        if mutation is None or u_malformed < self.probs["verifier_malformed"]:
            return "The call seems mostly fine but I am not sure about the details."
        valid = is_planned_write(self.task, mutation["tool"], mutation["arguments"])
        p_reject = self.probs["verifier_false_reject"] if valid else self.probs["verifier_detect"]
        return "REJECT" if u_verdict < p_reject else "APPROVE"


class SimulatedUser(_SimulatedReviewer):
    """Simulated user asked for consent: ``prompt -> "YES" | "NO"``.

    Draws one uniform per call from ``rng``.
    """

    simulated = True

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        u = self.rng.random()
        mutation = extract_mutation(prompt)
        if mutation is None:
            return "NO"
        valid = is_planned_write(self.task, mutation["tool"], mutation["arguments"])
        p_decline = self.probs["user_decline_valid"] if valid else self.probs["user_decline_invalid"]
        return "NO" if u < p_decline else "YES"


#: Words that make an agent's question a request for consent to act (case-insensitive,
#: whole words): after answering one, :class:`ScriptedChatUser` waits for a write. A
#: heuristic: "How can I help?" or "May I have your email?" are not consent requests and
#: are left out; "Can you confirm your zip code?" is one by this rule (the user then
#: waits, and records ``write_never_ran`` if no write follows).
CONSENT_WORDS: tuple[str, ...] = (
    "confirm", "proceed", "go ahead", "shall i", "should i", "want me to", "would you like me to",
    "okay to", "ok to",
)
_CONSENT_RE = re.compile(r"\b(" + "|".join(re.escape(w) for w in CONSENT_WORDS) + r")\b", re.IGNORECASE)

#: Why a :class:`ScriptedChatUser` ended the conversation (``""`` while it has not).
USER_END_REASONS: tuple[str, ...] = ("agent_asked_nothing", "write_never_ran", "max_turns")


class ScriptedChatUser:
    """Simulated customer who talks to an LLM agent (scripted, never a model).

    The scripted τ policy needs no conversation; an LLM agent does. This user opens with
    the task's reason for calling and the facts the scenario says the user knows
    (``known_info``), and answers a question (a message with ``?``) by agreeing and
    repeating those facts. A question that asks for consent (one of
    :data:`CONSENT_WORDS`) opens a *pending consent*: the user then waits for the
    promised write. The episode loop reports every state-changing call that ran
    (:meth:`write_ran`), which settles the pending consent.

    An agent message that asks nothing ends the conversation (``None``) unless a consent
    is pending: then the user answers "please go ahead" for up to ``wait_turns`` such
    messages and ends after the next one with ``end_reason = "write_never_ran"``. This
    is the fix of the τ²-bench user-simulator bug (sierra-research/tau2-bench#182,
    PR #297) where the user ended the conversation right after confirming, before the
    agent's write ran ("Thank you for confirming, processing it now" then scored 0).
    After ``max_turns`` replies the user ends with ``end_reason = "max_turns"``.

    :attr:`unrun_consents` counts consents whose write never ran: a run of consents is
    settled by the first write that runs after it, and counts once if the conversation
    ends first (read it when the episode is over). It reads the scenario's user side
    only: never the gold actions.
    """

    simulated = True

    def __init__(self, task: TauTask, max_turns: int = 10, wait_turns: int = 2):
        for name, value in (("max_turns", max_turns), ("wait_turns", wait_turns)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"ScriptedChatUser: {name} must be a non-negative integer, got {value!r}")
        instr = task.raw.user_scenario.instructions
        known = "" if isinstance(instr, str) else (getattr(instr, "known_info", None) or "")
        self.opening = f"{task.reason_for_call.strip()} {known.strip()}".strip()
        self.known = known.strip()
        self.max_turns = int(max_turns)
        self.wait_turns = int(wait_turns)
        self.turns = 0
        self.pending = False  # a consent was given and no write has run since
        self.waited = 0  # agent messages without a question while the consent is pending
        self.consents = 0
        self.end_reason = ""

    @property
    def unrun_consents(self) -> int:
        """Consents (merged runs) whose promised write never ran: 0 or 1 per episode."""
        return int(self.pending)

    def first_message(self) -> str:
        """The user's opening message."""
        return self.opening

    def write_ran(self) -> None:
        """The episode executed a state-changing call: a pending consent is settled."""
        self.pending = False
        self.waited = 0

    def reply(self, agent_message: str) -> str | None:
        """The user's answer to ``agent_message``; ``None`` ends the conversation
        (:attr:`end_reason` says why)."""
        self.turns += 1
        if self.turns > self.max_turns:
            self.end_reason = "max_turns"
            return None
        if "?" in agent_message:
            if _CONSENT_RE.search(agent_message):
                self.consents += 1
                self.pending, self.waited = True, 0
            return ("Yes, please go ahead. " + self.known).strip()
        if self.pending:
            if self.waited >= self.wait_turns:
                self.end_reason = "write_never_ran"
                return None
            self.waited += 1
            return "Yes, I confirm. Please go ahead and do it now; I will wait."
        self.end_reason = "agent_asked_nothing"
        return None
