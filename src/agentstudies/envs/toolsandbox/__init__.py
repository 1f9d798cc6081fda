"""A ToolSandbox-style stateful, conversational tool world (our own implementation).

Mechanics after ToolSandbox (Lu et al., 2024; ``shared/notes/toolsandbox.md``): versioned
world tables with per-message stamps and exact snapshots (:class:`ExecutionContext`), 28
typed tools with implicit state dependencies (:data:`TOOLS`), template-generated scenarios
with milestones, minefields and the eight augmentations (:func:`generate_scenarios`,
:func:`make_cases`), ToolSandbox scoring (:func:`evaluate`; remaining departures in :data:`DEPARTURES`) and a seeded scripted user
(:class:`ScriptedUser`, simulated). ToolSandbox's own code and scenarios are not used.

Modules: ``_context`` (tables, messages, snapshots), ``_tools``, ``_scenarios`` (scenario,
intent and case types), ``_world`` (entity pools, starting world, milestone pieces),
``_intents`` (one builder per request type), ``_templates`` (template registry,
:func:`generate_scenarios`), ``_augmentations`` (:func:`make_cases`; ``testing.perturb_phones``),
``_scoring``, ``_matching`` (the milestone matcher), ``_targets`` (targets read from the
world, ``WorldRef``), ``_user``, ``_env``.
"""

from agentstudies.envs.toolsandbox._context import (
    DEFAULT_MAX_MESSAGES,
    NAMESPACES,
    ROLES,
    ExecutionContext,
    Message,
    MessageCapReached,
    Role,
    Snapshot,
)
from agentstudies.envs.toolsandbox._env import SYSTEM_PROMPT, Say, ToolCall, ToolSandboxEnv, gold_case, replay_gold, validate_scenario
from agentstudies.envs.toolsandbox._augmentations import case_table, is_branching, make_cases, ranked_distractors
from agentstudies.envs.toolsandbox._scenarios import AUGMENTATIONS, CATEGORIES, Case, Intent, Scenario
from agentstudies.envs.toolsandbox._templates import generate_scenarios
from agentstudies.envs.toolsandbox._scoring import (
    CONSTRAINT_KINDS,
    DEPARTURES,
    SCORING_OPTIONS,
    SIMILARITIES,
    Constraint,
    Evaluation,
    Milestone,
    best_mapping,
    column_similarity,
    evaluate,
    rouge_l,
    similarity_matrix,
    table_similarity,
    topological_order,
    turn_count,
    with_guardrails,
)
from agentstudies.envs.toolsandbox._tools import (
    MUTATING_TOOLS,
    SCRAMBLES,
    TOOL_NAMES,
    TOOLS,
    WEB_TOOLS,
    ToolError,
    ToolView,
    canonical_phone,
    execute_tool,
    format_number,
)
from agentstudies.envs.toolsandbox._user import ScriptedUser

__all__ = [
    "AUGMENTATIONS", "CATEGORIES", "CONSTRAINT_KINDS", "DEPARTURES", "DEFAULT_MAX_MESSAGES", "MUTATING_TOOLS", "NAMESPACES",
    "ROLES", "SCORING_OPTIONS", "SCRAMBLES", "SIMILARITIES", "SYSTEM_PROMPT", "TOOLS", "TOOL_NAMES", "WEB_TOOLS",
    "Case", "Constraint", "Evaluation", "ExecutionContext", "Intent", "Message", "MessageCapReached", "Milestone",
    "Role", "Say", "Scenario", "ScriptedUser", "Snapshot", "ToolCall", "ToolError", "ToolSandboxEnv", "ToolView",
    "best_mapping", "canonical_phone", "case_table", "column_similarity", "evaluate", "execute_tool", "format_number",
    "generate_scenarios", "gold_case", "is_branching", "ranked_distractors", "make_cases", "replay_gold", "rouge_l", "similarity_matrix", "table_similarity", "topological_order", "turn_count",
    "validate_scenario", "with_guardrails",
]
