"""Agents: the policy protocol, scripted (simulated) policies and workflow controllers."""

from agentstudies.agents._alfworld_learned import LearnedAlfworldPolicy
from agentstudies.agents._coding import (
    CODING_POLICIES,
    SHORTCUTS,
    AgentParams,
    CodingTask,
    MemoRunner,
    SimulatedCodingAgent,
    coding_tasks_from_table,
    conflict_seen,
    shortcut_code,
)
from agentstudies.agents.base import Policy, SimulatedPolicyMixin
from agentstudies.agents.controllers import (
    WORKFLOWS,
    ConfirmationGateController,
    PlanVerifierController,
    ProposedCall,
    ReActController,
    make_controller,
)

__all__ = [
    "LearnedAlfworldPolicy",
    "Policy",
    "SimulatedPolicyMixin",
    "WORKFLOWS",
    "ProposedCall",
    "ReActController",
    "PlanVerifierController",
    "ConfirmationGateController",
    "make_controller",
    "CODING_POLICIES",
    "SHORTCUTS",
    "AgentParams",
    "CodingTask",
    "MemoRunner",
    "SimulatedCodingAgent",
    "coding_tasks_from_table",
    "conflict_seen",
    "shortcut_code",
]
