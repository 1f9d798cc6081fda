"""Our own ToolSandbox-style scenarios: the scenario, intent and case types, categories and augmentations.

A :class:`Scenario` holds a starting world, the user's goal as one or more
:class:`Intent` s (what the user says, plus *hidden facts* revealed only when asked), a
tool allow-list, milestones with their DAG edges, minefields, the gold trajectory (used
only to validate the scenario -- no agent ever reads it) and a *trigger* (a tool call that
sets off a minefield without disturbing any milestone; for the acceptance test).

Categories follow ToolSandbox (Lu et al., 2024, Table 1): single / multiple tool call,
single / multiple user turn, state dependency, canonicalization, disambiguation,
insufficient information. Every base scenario expands into the eight augmentations of
:data:`AUGMENTATIONS` (:func:`~agentstudies.envs.toolsandbox.make_cases`).

None of ToolSandbox's scenarios or code is used: templates, entities and fixtures are ours.
The scenarios are built in :mod:`~agentstudies.envs.toolsandbox._world` (entity pools,
starting world, milestone pieces), :mod:`~agentstudies.envs.toolsandbox._intents` (one
builder per request type), :mod:`~agentstudies.envs.toolsandbox._templates` (the template
registry, :func:`~agentstudies.envs.toolsandbox.generate_scenarios`) and expanded in
:mod:`~agentstudies.envs.toolsandbox._augmentations`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from agentstudies.envs.toolsandbox._scoring import Milestone
from agentstudies.envs.toolsandbox._tools import ToolView

__all__ = ["CATEGORIES", "AUGMENTATIONS", "Intent", "Scenario", "Case"]

CATEGORIES: tuple[str, ...] = (
    "single_tool_call", "multiple_tool_call", "single_user_turn", "multiple_user_turn",
    "state_dependency", "canonicalization", "disambiguation", "insufficient_information",
)
#: Primary category: the most specific tag, in this order.
_PRIMARY_ORDER = ("insufficient_information", "disambiguation", "state_dependency", "canonicalization",
                  "multiple_user_turn", "multiple_tool_call", "single_tool_call")

#: The eight ToolSandbox augmentations (scrambles are applied on top of 3 distraction tools).
AUGMENTATIONS: tuple[str, ...] = (
    "base", "3_distraction_tools", "10_distraction_tools", "all_tools",
    "tool_name_scrambled", "tool_description_scrambled", "arg_description_scrambled", "arg_type_scrambled",
)
_SCRAMBLE_OF = {"tool_name_scrambled": "tool_name", "tool_description_scrambled": "tool_description",
                "arg_description_scrambled": "arg_description", "arg_type_scrambled": "arg_type"}


@dataclass(frozen=True)
class Intent:
    """One user request.

    ``kind`` names the request type; ``slots`` are what the user states up front;
    ``hidden`` maps an askable slot to the value the user reveals when asked (``None``:
    the user does not know); ``expect`` maps tool-argument names to the values the user
    would recognise as theirs (used only when a Confirmation gate asks for consent);
    ``text`` is the natural-language message.
    """

    kind: str
    slots: Mapping[str, Any]
    text: str
    hidden: Mapping[str, Any] = field(default_factory=dict)
    expect: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    """A base scenario (see the module docstring)."""

    scenario_id: str
    template: str
    categories: tuple[str, ...]
    dependency_depth: int
    initial: Mapping[str, tuple[Mapping[str, Any], ...]]
    intents: tuple[Intent, ...]
    allow_list: tuple[str, ...]
    milestones: tuple[Milestone, ...]
    edges: tuple[tuple[int, int], ...]
    minefields: tuple[Milestone, ...]
    gold: tuple[tuple, ...]
    trigger: tuple[tuple, ...]

    @property
    def category(self) -> str:
        """The primary (most specific) category."""
        return next(c for c in _PRIMARY_ORDER if c in self.categories)


@dataclass(frozen=True)
class Case:
    """A scenario under one augmentation: ``view`` is what the agent is shown."""

    case_id: str
    scenario: Scenario
    augmentation: str
    view: ToolView

    @property
    def n_distractors(self) -> int:
        return len(self.view.tools) - len(self.scenario.allow_list)

