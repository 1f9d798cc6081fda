"""Scripted (simulated) agents, episode drivers and the LLM policy for the ToolSandbox-style world."""

from agentstudies.agents.toolsandbox._episodes import (
    AGENT_COLUMNS,
    EPISODE_COLUMNS,
    GroundingVerifier,
    drive,
    frontier_arrival,
    run_episode,
    run_episodes,
    run_handoff,
    run_handoff_unit,
)
from agentstudies.agents.toolsandbox._llm import LLMToolSandboxPolicy, dialogue_act, toolsandbox_tool_infos
from agentstudies.agents.toolsandbox._policy import PROFILES, ScriptedToolAgent, ToolAgentProfile, get_profile

__all__ = ["AGENT_COLUMNS", "EPISODE_COLUMNS", "GroundingVerifier", "LLMToolSandboxPolicy", "PROFILES", "ScriptedToolAgent", "ToolAgentProfile", "drive",
           "frontier_arrival", "get_profile", "run_episode", "run_episodes", "run_handoff", "run_handoff_unit",
           "dialogue_act", "toolsandbox_tool_infos"]
