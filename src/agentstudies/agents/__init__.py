"""Agents: the policy protocol, scripted (simulated) policies and workflow controllers."""

from agentstudies.agents.base import Policy, SimulatedPolicyMixin

__all__ = ["Policy", "SimulatedPolicyMixin"]
