"""Agents: the policy protocol, scripted (simulated) policies and workflow controllers."""

from agentstudies.agents.base import Policy, SimulatedPolicyMixin
from agentstudies.agents.controllers import WORKFLOWS, controller_audit, make_controller

__all__ = ["Policy", "SimulatedPolicyMixin", "WORKFLOWS", "controller_audit", "make_controller"]
