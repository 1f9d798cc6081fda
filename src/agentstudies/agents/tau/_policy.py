"""A seeded, scripted (simulated) τ-bench tool-use policy and its two profiles.

The policy knows the task's gold action list as its *plan* (that is its scripted
competence) and executes it step by step through the real tools. Its mistakes are drawn
with probabilities that are smooth (logistic) functions of pre-execution task features,
with a per-profile intercept:

======================  =====================================================  ==========
mistake                 what happens                                           per
======================  =====================================================  ==========
wrong argument          one argument of a planned write is altered             write
                        (:func:`~agentstudies.agents.tau.alter_arguments`)
skipped write           a planned write is never proposed                      write
skipped read            a planned read is never proposed (harmless)            read
spurious write          a write of another task is inserted                    episode
stopping early          the agent stops before finishing (no final message)    step
not communicating       a required ``communicate_info`` item is left out       item
repair                  after an error, rejection or refusal of a wrong call,  event
                        the agent proposes the planned call instead
======================  =====================================================  ==========

Covariates: ``w`` = number of gold writes, ``z`` = standardised scenario length in words
(mean and s.d. over all 164 tasks), ``airline`` (0/1), ``no_write`` = (w = 0): tasks
whose correct behaviour is to refuse or only inform, where agents often act anyway.

Outcomes are never sampled: the reward always comes from the environment
(:meth:`agentstudies.envs.tau.TauEnv.reward`). The two profiles are *simulated*
stand-ins for the paper's two models (Study F, Qwen3-8B; Study G, Qwen2.5-7B-Instruct;
SASST Appendix D.8, Table 14: ReAct success 18.75% and 11.9%); their intercepts were
set by hand so that success on all 164 tasks × 20 seeds is about 20% / 22% / 22%
(``profile_a``: ReAct / Plan + verifier / Confirmation gate) and 13% / 14% / 14%
(``profile_b``), i.e. the paper's low range with workflows a few points apart. They say
nothing about those models.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from agentstudies.agents.base import SimulatedPolicyMixin
from agentstudies.agents.tau._mistakes import alter_arguments, spurious_write
from agentstudies.envs.tau import TauTask, get_task, load_tasks

__all__ = [
    "TauProfile",
    "PROFILES",
    "get_profile",
    "task_covariates",
    "mistake_probabilities",
    "ToolCallAction",
    "MessageAction",
    "StopAction",
    "ScriptedTauPolicy",
]


@dataclass(frozen=True)
class TauProfile:
    """Intercepts (logits) of a simulated agent profile; slopes are shared (module docs).

    ``verifier_*`` and ``user_*`` parametrise the simulated verifier and user that the
    same model plays in the paper (the same model acted as agent and user simulator).
    """

    name: str
    description: str
    wrong_arg: float
    skip_write: float
    skip_read: float
    stop: float
    spurious: float
    omit_info: float
    repair: float
    verifier_detect: float
    verifier_false_reject: float
    verifier_malformed: float
    user_decline_invalid: float
    user_decline_valid: float
    max_rejections: int = 2


#: The two simulated profiles (stand-ins for the paper's Study F and Study G models).
PROFILES: dict[str, TauProfile] = {
    "profile_a": TauProfile(
        name="profile_a",
        description="simulated stand-in for the paper's Study F model (Qwen3-8B-like success level)",
        wrong_arg=-0.4,
        skip_write=-1.1,
        skip_read=-2.5,
        stop=-2.4,
        spurious=-1.0,
        omit_info=0.6,
        repair=-1.0,
        verifier_detect=-1.5,
        verifier_false_reject=-2.5,
        verifier_malformed=-4.5,
        user_decline_invalid=-2.2,
        user_decline_valid=-3.8,
        max_rejections=2,
    ),
    "profile_b": TauProfile(
        name="profile_b",
        description="simulated stand-in for the paper's Study G model (Qwen2.5-7B-like success level)",
        wrong_arg=0.4,
        skip_write=-0.6,
        skip_read=-2.0,
        stop=-2.1,
        spurious=-0.6,
        omit_info=0.8,
        repair=-1.2,
        verifier_detect=-1.8,
        verifier_false_reject=-1.2,
        verifier_malformed=-3.5,
        user_decline_invalid=-1.6,
        user_decline_valid=-4.0,
        max_rejections=1,
    ),
}


def get_profile(profile: str | TauProfile) -> TauProfile:
    """The :class:`TauProfile` named ``profile`` (or ``profile`` itself).

    Raises
    ------
    ValueError
        Unknown profile name.
    """
    if isinstance(profile, TauProfile):
        return profile
    if profile not in PROFILES:
        raise ValueError(f"unknown tau profile {profile!r}; expected one of {sorted(PROFILES)}")
    return PROFILES[profile]


@functools.cache
def _word_stats() -> tuple[float, float]:
    words = np.array([len(t.scenario.split()) for t in load_tasks(None)], dtype=float)
    return float(words.mean()), float(words.std())


def task_covariates(task: TauTask | str) -> dict[str, float]:
    """Covariates of the mistake model: ``w``, ``z``, ``airline``, ``no_write``, ``n_info``.

    All are pre-execution features of the task (see
    :func:`agentstudies.envs.tau.task_features`).
    """
    task = get_task(task) if isinstance(task, str) else task
    mean, sd = _word_stats()
    w = len(task.write_actions)
    return {
        "w": float(w),
        "z": (len(task.scenario.split()) - mean) / sd,
        "airline": float(task.domain == "airline"),
        "no_write": float(w == 0),
        "n_info": float(len(task.communicate_info)),
    }


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def mistake_probabilities(task: TauTask | str, profile: str | TauProfile) -> dict[str, float]:
    """Mistake and reviewer probabilities of ``profile`` on ``task`` (all in (0, 1)).

    ``wrong_arg``, ``skip_write`` per planned write; ``skip_read`` per read; ``stop`` per
    step; ``spurious`` per episode; ``omit_info`` per required item; ``repair`` per failed,
    blocked or declined wrong call; ``verifier_detect`` = P(reject | invalid call),
    ``verifier_false_reject`` = P(reject | valid call), ``verifier_malformed`` =
    P(unparseable output); ``user_decline_invalid`` / ``user_decline_valid`` = P(the
    simulated user declines an invalid / valid mutation).

    Logits (intercepts from the profile; ``w1 = max(w - 1, 0)``)::

        wrong_arg             a + 0.30 w1 + 0.35 z + 0.40 airline
        skip_write            a + 0.25 w1 + 0.20 z
        skip_read             a
        stop                  a + 0.25 z
        spurious              a + 1.00 no_write + 0.30 z + 0.30 airline
        omit_info             a + 0.30 z
        repair                a
        verifier_detect       a - 0.35 z - 0.25 w1
        verifier_false_reject a + 0.25 w1 + 0.20 z
        verifier_malformed    a
        user_decline_invalid  a - 0.30 z
        user_decline_valid    a
    """
    p = get_profile(profile)
    c = task_covariates(task)
    w1, z, air, nw = max(c["w"] - 1.0, 0.0), c["z"], c["airline"], c["no_write"]
    logits = {
        "wrong_arg": p.wrong_arg + 0.30 * w1 + 0.35 * z + 0.40 * air,
        "skip_write": p.skip_write + 0.25 * w1 + 0.20 * z,
        "skip_read": p.skip_read,
        "stop": p.stop + 0.25 * z,
        "spurious": p.spurious + 1.00 * nw + 0.30 * z + 0.30 * air,
        "omit_info": p.omit_info + 0.30 * z,
        "repair": p.repair,
        "verifier_detect": p.verifier_detect - 0.35 * z - 0.25 * w1,
        "verifier_false_reject": p.verifier_false_reject + 0.25 * w1 + 0.20 * z,
        "verifier_malformed": p.verifier_malformed,
        "user_decline_invalid": p.user_decline_invalid - 0.30 * z,
        "user_decline_valid": p.user_decline_valid,
    }
    return {k: _sigmoid(v) for k, v in logits.items()}


# ---------------------------------------------------------------------- actions
@dataclass(frozen=True)
class ToolCallAction:
    """Propose the tool call ``name(**arguments)``."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class MessageAction:
    """Send ``text`` to the user."""

    text: str


@dataclass(frozen=True)
class StopAction:
    """End the episode; ``reason`` is ``"done"`` or ``"agent_stop"``."""

    reason: str


@dataclass
class _Step:
    kind: str  # planned | wrong_arg | read | spurious | message
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    correct: dict[str, Any] | None = None
    retries: int = 0
    text: str = ""


class ScriptedTauPolicy(SimulatedPolicyMixin):
    """Scripted τ-bench policy (simulated) following the gold plan with mistakes.

    Implements :class:`agentstudies.agents.base.Policy`. ``act`` takes the observation
    dict built by :func:`agentstudies.agents.tau.run_episode`, whose ``"last"`` entry
    reports what happened to the previous proposal: ``{"status": "ok" | "error" |
    "blocked" | "declined" | "sent", ...}``; it returns a :class:`ToolCallAction`,
    :class:`MessageAction` or :class:`StopAction`. All randomness comes from the
    ``seed`` given to :meth:`reset`.

    Parameters
    ----------
    profile:
        Name in :data:`PROFILES` (or a :class:`TauProfile`).

    Raises
    ------
    ValueError
        Unknown profile.
    """

    def __init__(self, profile: str | TauProfile = "profile_a"):
        self.profile = get_profile(profile)
        self.name = f"scripted-{self.profile.name}"
        self.task: TauTask | None = None
        self.probs: dict[str, float] = {}
        self.mistakes: dict[str, int] = {}

    # ------------------------------------------------------------------ episode
    def reset(self, task_id: str, seed: int) -> None:
        """Plan the episode of ``task_id``: draw which steps go wrong, from ``seed``."""
        task = get_task(task_id)
        self.task = task
        self.rng = np.random.default_rng(seed)
        self.probs = mistake_probabilities(task, self.profile)
        p, rng = self.probs, self.rng
        self.mistakes = {k: 0 for k in ("wrong_arg", "skip_write", "skip_read", "spurious", "omit_info", "repair")}
        steps: list[_Step] = []
        for a in task.actions:
            if a.irreversible:
                if rng.random() < p["skip_write"]:
                    self.mistakes["skip_write"] += 1
                    continue
                if rng.random() < p["wrong_arg"]:
                    alt = alter_arguments(a.name, a.args(), rng)
                    if alt is not None:
                        self.mistakes["wrong_arg"] += 1
                        steps.append(_Step("wrong_arg", a.name, alt, correct=a.args()))
                        continue
                steps.append(_Step("planned", a.name, a.args()))
            elif a.name == "transfer_to_human_agents" or a.name == "calculate":
                steps.append(_Step("planned", a.name, a.args()))
            else:
                if rng.random() < p["skip_read"]:
                    self.mistakes["skip_read"] += 1
                    continue
                steps.append(_Step("read", a.name, a.args()))
        # the final message goes before a closing transfer to a human agent
        end = len(steps) - 1 if steps and steps[-1].name == "transfer_to_human_agents" else len(steps)
        if rng.random() < p["spurious"]:
            extra = spurious_write(task.task_id, task.domain, rng)
            if extra is not None:
                self.mistakes["spurious"] += 1
                pos = int(rng.integers(end + 1))
                steps.insert(pos, _Step("spurious", extra[0], extra[1]))
                end += 1
        items = []
        for info in task.communicate_info:
            if rng.random() < p["omit_info"]:
                self.mistakes["omit_info"] += 1
            else:
                items.append(info)
        text = "I have taken care of your request."
        if items:
            text += " Here are the details you asked about: " + "; ".join(items) + "."
        steps.insert(end, _Step("message", text=text))
        self._queue: deque[_Step] = deque(steps)
        self._pending: _Step | None = None

    def act(self, observation: Mapping[str, Any]) -> Any:
        """Next action given the feedback on the previous one (see class docstring).

        Raises
        ------
        RuntimeError
            If called before :meth:`reset`.
        """
        if self.task is None:
            raise RuntimeError("ScriptedTauPolicy.act called before reset()")
        last = observation.get("last") if isinstance(observation, Mapping) else None
        if self._pending is not None:
            self._react(self._pending, (last or {}).get("status"))
            self._pending = None
        if not self._queue:
            return StopAction("done")
        if self.rng.random() < self.probs["stop"]:
            return StopAction("agent_stop")
        step = self._queue.popleft()
        self._pending = step
        if step.kind == "message":
            return MessageAction(step.text)
        return ToolCallAction(step.name, step.arguments)

    def _react(self, step: _Step, status: str | None) -> None:
        if status not in ("error", "blocked", "declined"):
            return
        repair = self.probs["repair"]
        if step.kind == "wrong_arg" and step.correct is not None:
            # the error or refusal reveals the mistake; the agent may fix it
            if self.rng.random() < repair:
                self.mistakes["repair"] += 1
                self._queue.appendleft(_Step("planned", step.name, step.correct))
        elif step.kind == "planned" and status in ("blocked", "declined") and step.retries < 1:
            # a correct call was refused: the agent may explain and propose it again
            if self.rng.random() < repair:
                self._queue.appendleft(_Step("planned", step.name, step.arguments, retries=step.retries + 1))
        # spurious writes are dropped once refused; errors on planned calls are expected
        # by the gold plan (some gold actions raise on purpose) and the agent moves on
