"""Scripted (simulated) verifier and user for the τ-bench workflow controllers.

Both receive exactly what a model would: the prompt with the serialized mutation
(:func:`agentstudies.agents.controllers.verifier_prompt` / ``consent_prompt``), and
answer with raw text that the controller parses. Their judgement is imperfect and
feature dependent (probabilities from
:func:`agentstudies.agents.tau.policy.mistake_probabilities`):

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

from typing import Any, Mapping

import numpy as np

from agentstudies.agents.controllers import extract_mutation
from agentstudies.envs.tau.data import TauTask

__all__ = ["is_planned_write", "SimulatedVerifier", "SimulatedUser"]


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
