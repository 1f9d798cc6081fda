"""Agents: the policy protocol, scripted (simulated) policies and workflow controllers."""

from agentstudies.agents._alfworld_learned import LearnedAlfworldPolicy
from agentstudies.agents.base import Policy, SimulatedPolicyMixin
from agentstudies.agents._coding import (
    CODING_POLICIES, SHORTCUTS, AgentParams, CodingTask, MemoRunner, SimulatedCodingAgent, coding_tasks_from_table,
    conflict_seen, shortcut_code,
)
from agentstudies.agents.controllers import WORKFLOWS, controller_audit, make_controller

__all__ = [
    "CODING_POLICIES", "SHORTCUTS", "AgentParams", "CodingTask", "MemoRunner", "SimulatedCodingAgent",
    "coding_tasks_from_table", "conflict_seen", "shortcut_code",
    "LearnedAlfworldPolicy", "Policy", "SimulatedPolicyMixin", "WORKFLOWS", "controller_audit", "make_controller",
]
