"""The policy protocol shared by every environment.

A policy is anything with ``name``, ``simulated``, ``reset(task_id, seed, role)`` and
``act(observation) -> action`` -- the calls the study drivers really make
(``studies/alfworld/handoff/run.py``: ``reset(task_id, seed, role="reacher" | "solver")``
then ``act(observation)`` once per action). Observations and actions are environment specific
(``agentstudies.envs.tau``: messages and tool calls; ``agentstudies.envs.alfworld``: text
observation and admissible commands) and are documented there. Scripted policies set
``simulated = True``; every table and figure built from their episodes is labelled
*simulated*. A policy backed by a real model (for example through ``inspect_ai``) sets
``simulated = False`` and is an option, never a requirement.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

__all__ = ["Policy", "SimulatedPolicyMixin"]


@runtime_checkable
class Policy(Protocol):
    """Protocol every agent policy implements."""

    name: str
    simulated: bool

    def reset(self, task_id: str, seed: int, role: str = "reacher") -> None:
        """Start a new episode of ``task_id`` in ``role`` (``"reacher"`` or ``"solver"`` in
        the handoff protocol); all randomness derives from ``seed`` (and, for paired
        solvers, the role and the checkpoint's own name)."""

    def act(self, observation: Mapping[str, Any]) -> Any:
        """Return the next action for ``observation`` (environment-specific types)."""


class SimulatedPolicyMixin:
    """Marks a scripted policy as simulated and gives it a labelled display name."""

    simulated: bool = True
    name: str = "scripted"

    @property
    def label(self) -> str:
        """Display name with the mandatory *simulated* tag, e.g. ``"RL (simulated)"``."""
        return f"{self.name} (simulated)"
