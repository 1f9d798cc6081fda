"""Coding agents for the impossible-tasks environment (:mod:`agentstudies.envs.impossible`).

policy   *simulated* coding agents (:class:`SimulatedCodingAgent`: honest, shortcut and
         strategies A-E), the tasks they work (:class:`CodingTask`) and :class:`MemoRunner`
llm      :class:`LLMCodingAgent` through an Inspect model, and its reply parser
         :func:`extract_code`
"""

from agentstudies.agents.impossible._llm import LLMCodingAgent, extract_code
from agentstudies.agents.impossible._policy import (
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

__all__ = [
    "CODING_POLICIES",
    "SHORTCUTS",
    "AgentParams",
    "CodingTask",
    "MemoRunner",
    "SimulatedCodingAgent",
    "coding_tasks_from_table",
    "conflict_seen",
    "shortcut_code",
    "LLMCodingAgent",
    "extract_code",
]
