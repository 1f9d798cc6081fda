"""τ-bench agents: scripted policy, simulated verifier/user, episode runner, LLM policy.

Every agent here but :class:`LLMTauPolicy` (:mod:`.llm`, a model through Inspect) is *simulated* (scripted): its tool calls go to the real τ²-bench tools
(:mod:`agentstudies.envs.tau`) and its reward is the environment's, but which mistakes
it makes is drawn from a feature-dependent model (:mod:`.policy`). The two profiles are
stand-ins for the two models of the SASST paper's agent studies (Section 4, App. D.8).
"""

from agentstudies.agents.tau._episodes import (
    AGENT_COLUMNS,
    EPISODE_COLUMNS,
    TERMINATIONS,
    episode_seed,
    run_episode,
    run_episodes,
)
from agentstudies.agents.tau._llm import LLMTauPolicy
from agentstudies.agents.tau._mistakes import ALTERABLE_TOOLS, alter_arguments, spurious_write
from agentstudies.agents.tau._policy import (
    PROFILES,
    MessageAction,
    ScriptedTauPolicy,
    StopAction,
    TauProfile,
    ToolCallAction,
    get_profile,
    mistake_probabilities,
    task_covariates,
)
from agentstudies.agents.tau._simulated import ScriptedChatUser, SimulatedUser, SimulatedVerifier, is_planned_write

__all__ = [
    "AGENT_COLUMNS",
    "ALTERABLE_TOOLS",
    "EPISODE_COLUMNS",
    "LLMTauPolicy",
    "PROFILES",
    "TERMINATIONS",
    "MessageAction",
    "ScriptedChatUser",
    "ScriptedTauPolicy",
    "SimulatedUser",
    "SimulatedVerifier",
    "StopAction",
    "TauProfile",
    "ToolCallAction",
    "alter_arguments",
    "episode_seed",
    "get_profile",
    "is_planned_write",
    "mistake_probabilities",
    "run_episode",
    "run_episodes",
    "spurious_write",
    "task_covariates",
]
