"""Test hooks of the ToolSandbox-style world: the brute-force reference of the matcher, a
world perturbation (contact numbers redrawn) to check that targets follow the world, and
the world-read target type."""

from agentstudies.envs.toolsandbox._augmentations import perturb_phones
from agentstudies.envs.toolsandbox._matching import brute_force_mapping
from agentstudies.envs.toolsandbox._scoring import similarity_tensor
from agentstudies.envs.toolsandbox._targets import WorldRef, resolve_targets

__all__ = ["brute_force_mapping", "perturb_phones", "WorldRef", "resolve_targets", "similarity_tensor"]
