"""Agents: the policy protocol, scripted (simulated) policies and workflow controllers."""

from agentstudies.agents._alfworld_learned import (
    DIM_LOG2,
    Belief,
    LearnedAlfworldPolicy,
    candidate_commands,
    checkpoint_dir,
    featurize,
    hand_set_weights,
    load_weights,
    save_weights,
    shown_text,
    weights_digest,
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
    "DIM_LOG2",
    "Belief",
    "LearnedAlfworldPolicy",
    "candidate_commands",
    "checkpoint_dir",
    "featurize",
    "hand_set_weights",
    "load_weights",
    "save_weights",
    "shown_text",
    "weights_digest",
    "Policy",
    "SimulatedPolicyMixin",
    "WORKFLOWS",
    "ProposedCall",
    "ReActController",
    "PlanVerifierController",
    "ConfirmationGateController",
    "make_controller",
]
