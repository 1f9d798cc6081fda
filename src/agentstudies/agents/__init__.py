"""Agents: the policy protocol, the shared LLM client and the workflow controllers.

One subpackage per environment, mirroring :mod:`agentstudies.envs` (imported on demand,
none is loaded by ``import agentstudies.agents``):

alfworld      scripted checkpoints (``policy``), the learned SFT/RL policy (``learned``),
              the LLM ReAct policy (``llm``)
tau           scripted τ-bench policy, simulated user / verifier, episode runner, LLM policy
toolsandbox   scripted tool agent, episode and handoff drivers, LLM policy
impossible    simulated coding agents (``policy``), the LLM coding agent (``llm``)

Shared here: :class:`Policy` (the protocol every study calls), :class:`SimulatedPolicyMixin`,
the LLM settings and client (:class:`LLMSpec`, :class:`LLMClient`, :class:`LLMError`,
:func:`is_llm_agent`, :func:`llm_record`, :func:`llm_spec`; the agent settings
themselves are :class:`agentstudies.specs.AgentSpec`), and the workflow controllers of
:mod:`agentstudies.agents.controllers` (:data:`WORKFLOWS`, :func:`make_controller`), and
:func:`local_server` (a small real model served offline on 127.0.0.1 for the LLM path; the
``local-llm`` extra; a plumbing demonstration, not evidence) with :data:`LOCAL_MODEL`, the
name it serves (``agent="llm:openai-api/local/<LOCAL_MODEL>"``).
Test doubles (a scripted chat server, mock Inspect logs) are in
:mod:`agentstudies.agents.testing`.
"""

from agentstudies.agents._llm import (
    LLM_RECORD_COLUMNS,
    LLMClient,
    LLMError,
    LLMSpec,
    is_llm_agent,
    llm_record,
    llm_spec,
)
from agentstudies.agents._local import LOCAL_MODEL, local_server
from agentstudies.agents.base import Policy, SimulatedPolicyMixin
from agentstudies.agents.controllers import WORKFLOWS, ProposedCall, make_controller

#: 14 names (budget); everything environment-specific is in the subpackages.
__all__ = [
    "Policy",
    "SimulatedPolicyMixin",
    "LLMSpec",
    "LLMClient",
    "LLMError",
    "is_llm_agent",
    "llm_record",
    "llm_spec",
    "LLM_RECORD_COLUMNS",
    "WORKFLOWS",
    "ProposedCall",
    "make_controller",
    "local_server",
    "LOCAL_MODEL",
]
