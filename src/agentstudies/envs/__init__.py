"""Environments the agents act in.

Subpackages (imported on demand, none is loaded by ``import agentstudies.envs``):

tau        τ²-bench retail (114 tasks) and airline (50 tasks) from ``inspect_evals.tau2``:
           real tools on a private database per episode, the package's reward, gold
           replay, pre-execution task features and text embeddings.
alfworld   generated ALFWorld problems on the real engine.
"""
