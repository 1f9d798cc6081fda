"""agentstudies: evaluating LLM agents beyond a single endpoint success rate.

Layers (imports run one way, from studies down to base; ``tests/test_architecture.py``
holds the exact rule):

base      ``results`` (the one result convention: summary / tidy to_frame / get / params /
          provenance), ``parallel`` (keyed_seed, seeded_map), ``_tolerances``.
envs      environments: ``tau`` (tau2-bench retail/airline from inspect-evals), ``alfworld``
          (generated problems on the real engine); impossible-task and tool-sandbox
          environment families join here.
stats     cluster-level weighted ratios, delta-method contributions, multiplier
          bootstrap, Bonferroni-t bands, effective sample size, paired bootstrap.
methods   ``sasst`` (Selection-Aware Semantic Stress Testing, Xu et al., 2026) and
          ``handoff`` (checkpoint handoff: Reach x Solve at a verified frontier); they take
          plain tables. A recovery method family joins here.
agents    policy protocol, scripted (simulated) policies, workflow controllers.
studies   one module per study: drives an environment and agents, or a simulation's
          data-generating process, into a validated table; owns the paper's reference values.
book      ``chapter`` (provenance and artifacts of a chapter), ``runner``, ``cli``.
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("agentstudies")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
