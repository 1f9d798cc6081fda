"""Environments the agents act in.

Subpackages (imported on demand, none is loaded by ``import agentstudies.envs``):

tau          τ²-bench retail (114 tasks) and airline (50 tasks) from ``inspect_evals.tau2``:
             real tools on a private database per episode, the package's reward, gold
             replay, pre-execution task features and text embeddings.
alfworld     generated ALFWorld problems on the real engine.
toolsandbox  a ToolSandbox-style world: seeded scenarios, stateful tools, a simulated
             user, milestone scoring.
impossible   impossible coding tasks: HumanEval-derived tasks whose tests contradict the
             specification, a sandboxed runner and a cheating classifier.

One module convention: implementation modules are ``_x.py``, re-exported by the
subpackage ``__init__``; callers import the subpackage (``from agentstudies.envs.tau
import TauEnv``). Test hooks live in ``<subpackage>.testing``. (``alfworld`` still has
public module names; its owner converts it.)
"""
