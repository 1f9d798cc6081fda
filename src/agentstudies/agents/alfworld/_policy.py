"""ALFWorld policies: scripted (*simulated*) SFT/RL checkpoints and an adapter for real ones.

Observation (from :meth:`agentstudies.envs.alfworld.env.AlfworldEnv.observe`): a mapping
with ``task_id``, ``task_type``, ``observation`` (latest text), ``admissible_commands``,
``history`` (``(o_0, a_0, ..., o_t)``), ``remaining_budget``, ``step``, ``won`` and
``expert`` (zero-argument callable -> an optimal plan from the current state). Action: one
command string.

:class:`ScriptedAlfworldPolicy` is *simulated*: a scripted checkpoint built on the
optimal expert (:class:`agentstudies.envs.alfworld.expert.Expert`, replanned at every
step) that acts only through admissible commands. Its failure modes are the ones the
handoff paper reports for released checkpoints (Appendix C):

* **loops** -- with probability ``loop_prob`` per step it falls into a loop, which lasts
  while a coin with ``loop_persistence`` comes up; a looping step repeats the previous
  action if it is still admissible (``repeat_prob``) and otherwise takes an action that
  leaves the task state unchanged (``look``, ``inventory``, ``examine ...``);
* **wandering** -- with probability ``noise`` a step takes a uniformly random admissible
  action instead of the expert's;
* **bridge choice** -- two actions from success (the expert's plan has two actions) it
  takes the expert's first action (a bridge action) with probability ``bridge_quality``,
  otherwise a non-expert action (an unchanged-state action with probability
  ``idle_share``, else a random admissible one); one action from success it takes the
  winning action with probability ``finish_quality``.

:data:`SFT_PROFILE` and :data:`RL_PROFILE` are the defaults tuned so that on 48-step
budgets with ``D = 2`` the SFT reacher arrives at ``F_2`` in roughly 10-25% of
trajectories and the RL reacher in 75-90%, and the SFT/RL solvers convert roughly
50-60% / 90-97% of frontier states (handoff paper Table 2 region). Outcomes always come
from the engine; the policy never samples success.

All randomness of an episode derives from ``keyed_seed(base_seed, "episode", task_id,
seed, role, name)``: paired by task, seed and role, and keyed on the checkpoint, so the
SFT and RL solvers handed one state draw independent streams (as in the paper, where each
checkpoint samples its own tokens). An earlier version left the checkpoint out of the key;
with nested thresholds that made "SFT-only wins" impossible by construction.

These profiles are **planted mechanisms for teaching**, calibrated to the paper's Table 2
region; they read the expert's plan. The trained checkpoints
(:class:`agentstudies.agents.alfworld.LearnedAlfworldPolicy`) are the default of the handoff study.

:class:`CallablePolicy` is the hook for real checkpoints:
``CallablePolicy(fn, name="checkpoint", *, require_admissible=False)`` wraps any callable
``fn(history, admissible) -> action`` (e.g. an LLM behind ``inspect_ai``) and is labelled
``simulated=False``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from agentstudies.agents.base import SimulatedPolicyMixin
from agentstudies.parallel import keyed_seed

__all__ = [
    "ScriptedAlfworldPolicy",
    "CallablePolicy",
    "PolicyProfile",
    "SFT_PROFILE",
    "RL_PROFILE",
    "make_checkpoints",
    "IDLE_PREFIXES",
]

#: Command prefixes that never change the task state (bookkeeping only).
IDLE_PREFIXES = ("look", "inventory", "examine", "help")
_ROLES = ("reacher", "solver")


@dataclass(frozen=True)
class PolicyProfile:
    """Parameters of a scripted checkpoint (see module docstring); probabilities in [0, 1]."""

    loop_prob: float
    loop_persistence: float
    repeat_prob: float
    noise: float
    bridge_quality: float
    finish_quality: float
    idle_share: float = 0.6

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if not (isinstance(v, (int, float)) and 0.0 <= float(v) <= 1.0):
                raise ValueError(f"{f.name}={v!r}: expected a probability in [0, 1]")

    def as_dict(self) -> dict[str, float]:
        """Parameters as a plain dict (chapter parameters)."""
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


#: SFT-like checkpoint: loops often, wanders, chooses bridge actions poorly.
SFT_PROFILE = PolicyProfile(
    loop_prob=0.45, loop_persistence=0.99, repeat_prob=0.8, noise=0.30,
    bridge_quality=0.66, finish_quality=0.76, idle_share=0.6,
)
#: RL-like checkpoint: loops rarely, wanders less, near-perfect bridge choice.
RL_PROFILE = PolicyProfile(
    loop_prob=0.09, loop_persistence=0.98, repeat_prob=0.6, noise=0.20,
    bridge_quality=0.965, finish_quality=0.975, idle_share=0.6,
)


def _is_idle(cmd: str) -> bool:
    return cmd.startswith(IDLE_PREFIXES)


class ScriptedAlfworldPolicy(SimulatedPolicyMixin):
    """Scripted (*simulated*) ALFWorld checkpoint on top of the optimal expert.

    Parameters
    ----------
    name:
        Checkpoint label ("SFT", "RL", ...); tables show ``"<name> (simulated)"``.
    profile:
        A :class:`PolicyProfile`; keyword arguments override its fields (``loop_prob``,
        ``loop_persistence``, ``repeat_prob``, ``noise``, ``bridge_quality``,
        ``finish_quality``, ``idle_share``).
    base_seed:
        Root seed of every episode's stream.

    Raises ``ValueError`` for a probability outside [0, 1] and ``TypeError`` for an
    unknown parameter.
    """

    simulated = True

    def __init__(self, name: str = "scripted", profile: PolicyProfile | None = None, *, base_seed: int = 2029, **overrides: Any):
        base = (profile or SFT_PROFILE).as_dict()
        unknown = set(overrides) - set(base)
        if unknown:
            raise TypeError(f"unknown policy parameter(s) {sorted(unknown)}; expected some of {sorted(base)}")
        base.update(overrides)
        self.profile = PolicyProfile(**base)
        self.name = str(name)
        self.base_seed = int(base_seed)
        self._rng: np.random.Generator | None = None
        self._looping = False
        self._prev: str | None = None

    def __repr__(self) -> str:
        return f"ScriptedAlfworldPolicy(name={self.name!r}, {self.profile}, base_seed={self.base_seed})"

    @property
    def params(self) -> dict[str, Any]:
        """All constructor parameters (for provenance)."""
        return {"name": self.name, "base_seed": self.base_seed, **self.profile.as_dict()}

    def reset(self, task_id: str, seed: int, role: str = "reacher") -> None:
        """Start an episode; randomness from ``keyed_seed(base_seed, "episode", task_id, seed,
        role, name)`` (paired by task/seed/role, independent across checkpoints)."""
        if role not in _ROLES:
            raise ValueError(f"role={role!r}: expected 'reacher' or 'solver'")
        self._rng = np.random.default_rng(keyed_seed(self.base_seed, "episode", str(task_id), int(seed), role, self.name))
        self._looping = False
        self._prev = None

    def _pick(self, options: Sequence[str]) -> str:
        return options[int(self._rng.integers(len(options)))]

    def _idle_action(self, admissible: Sequence[str]) -> str:
        idle = [a for a in admissible if _is_idle(a)]
        return self._pick(idle) if idle else self._pick(admissible)

    def _loop_action(self, adm: Sequence[str], u: float) -> str:
        if self._prev is not None and self._prev in adm and u < self.profile.repeat_prob:
            return self._prev
        return self._idle_action(adm)

    def act(self, observation: Mapping[str, Any]) -> str:
        """Next command (always one of ``observation['admissible_commands']``)."""
        if self._rng is None:
            raise RuntimeError("call reset(task_id, seed, role) before act()")
        p = self.profile
        adm = list(observation["admissible_commands"])
        if not adm:
            raise ValueError(f"task {observation.get('task_id')!r}: no admissible command")
        u = self._rng.random(4)  # fixed number of draws per step keeps paired solvers coupled
        if self._looping:
            self._looping = bool(u[0] < p.loop_persistence)
            if self._looping:
                action = self._loop_action(adm, u[1])
                self._prev = action
                return action
        plan = observation["expert"]()
        k = len(plan)
        expert = plan[0] if plan and plan[0] in adm else None
        if expert is None:
            action = self._pick(adm)
        elif k <= 2:
            # near the goal: bridge / finishing choice, no loop entry
            if u[1] < (p.finish_quality if k == 1 else p.bridge_quality):
                action = expert
            else:
                others = [a for a in adm if a != expert]
                idle = [a for a in others if _is_idle(a)]
                if idle and u[2] < p.idle_share:
                    action = self._pick(idle)
                else:
                    action = self._pick(others or adm)
        elif u[0] < p.loop_prob and not self._looping:
            self._looping = True
            action = self._loop_action(adm, u[1])
        elif u[3] < p.noise:
            action = self._pick(adm)
        else:
            action = expert
        self._prev = action
        return action


class CallablePolicy:
    """Adapter for a real checkpoint: ``CallablePolicy(fn, name="checkpoint", *,
    require_admissible=False)`` with ``fn(history, admissible) -> action``.

    Example::

        pol = CallablePolicy(lambda history, admissible: admissible[0], name="first")
        pol.reset("task", 0, role="reacher")

    ``history`` is the visible history ``(o_0, a_0, ..., o_t)`` (tuple of str) and
    ``admissible`` the ordered admissible commands; the callable returns one command
    string. This is the protocol hook an LLM policy (a later issue) plugs into; it is
    ``simulated=False``. With ``require_admissible=True`` a command outside the list
    raises ``ValueError``; otherwise it is passed to the engine, which answers
    "Nothing happens." and charges one action (as ALFWorld does).
    """

    simulated = False

    def __init__(self, fn: Callable[[tuple, list], str], name: str = "checkpoint", *, require_admissible: bool = False):
        if not callable(fn):
            raise TypeError("fn must be callable (history, admissible) -> action")
        self.fn = fn
        self.name = str(name)
        self.require_admissible = require_admissible
        self.task_id: str | None = None
        self.seed: int | None = None
        self.role: str | None = None

    @property
    def label(self) -> str:
        """Display name (no *simulated* tag: a real checkpoint)."""
        return self.name

    def reset(self, task_id: str, seed: int, role: str = "reacher") -> None:
        """Record the episode identity (a stateless callable needs nothing else)."""
        self.task_id, self.seed, self.role = str(task_id), int(seed), role

    def act(self, observation: Mapping[str, Any]) -> str:
        """Call ``fn(history, admissible)`` and check the result is a string."""
        adm = list(observation["admissible_commands"])
        action = self.fn(tuple(observation["history"]), adm)
        if not isinstance(action, str):
            raise TypeError(f"policy {self.name!r} returned {type(action).__name__}, expected str")
        if self.require_admissible and action not in adm:
            raise ValueError(f"policy {self.name!r} returned {action!r}, not among the {len(adm)} admissible commands")
        return action


def make_checkpoints(
    sft: Mapping[str, float] | None = None, rl: Mapping[str, float] | None = None, base_seed: int = 2029
) -> dict[str, ScriptedAlfworldPolicy]:
    """The two default scripted checkpoints ``{"SFT": ..., "RL": ...}`` with overrides."""
    return {
        "SFT": ScriptedAlfworldPolicy("SFT", SFT_PROFILE, base_seed=base_seed, **dict(sft or {})),
        "RL": ScriptedAlfworldPolicy("RL", RL_PROFILE, base_seed=base_seed, **dict(rl or {})),
    }
