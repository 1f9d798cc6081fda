"""ALFWorld agents: scripted checkpoints, the learned SFT/RL policy, the LLM ReAct policy.

policy    *simulated* scripted checkpoints (:class:`ScriptedAlfworldPolicy`,
          :func:`make_checkpoints`) and :class:`CallablePolicy`, the hook for real ones
learned   :class:`LearnedAlfworldPolicy`: a linear softmax over hashed features, with the
          shipped SFT / RL weights (:func:`load_weights`, :func:`checkpoint_dir`); its
          belief (``_belief``), features (``_features``) and weights on disk
          (``_weights``) are one module each
memory    :class:`MemoryAlfworldPolicy`: the learned policy plus features of its transcript
          (recent commands, observation kinds, where each entity was last mentioned)
llm       :class:`LLMAlfworldPolicy` through an Inspect model (:func:`make_llm_policy`)

The environment is :mod:`agentstudies.envs.alfworld`.
"""

from agentstudies.agents.alfworld._learned import (
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
from agentstudies.agents.alfworld._memory import MemoryAlfworldPolicy, memory_atoms
from agentstudies.agents.alfworld._llm import LLMAlfworldPolicy, make_llm_policy
from agentstudies.agents.alfworld._policy import (
    RL_PROFILE,
    SFT_PROFILE,
    CallablePolicy,
    PolicyProfile,
    ScriptedAlfworldPolicy,
    make_checkpoints,
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
    "LLMAlfworldPolicy",
    "MemoryAlfworldPolicy",
    "memory_atoms",
    "make_llm_policy",
    "RL_PROFILE",
    "SFT_PROFILE",
    "CallablePolicy",
    "PolicyProfile",
    "ScriptedAlfworldPolicy",
    "make_checkpoints",
]
