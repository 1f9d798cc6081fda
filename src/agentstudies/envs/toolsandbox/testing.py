"""Test hooks of the ToolSandbox-style world (brute-force reference of the matcher)."""

from agentstudies.envs.toolsandbox._matching import brute_force_mapping

__all__ = ["brute_force_mapping"]
