"""agentstudies: evaluating LLM agents beyond a single endpoint success rate.

Subpackages
-----------
stats     cluster-level weighted ratios, delta-method contributions, multiplier
          bootstrap, Bonferroni-t bands, effective sample size, paired bootstrap.
sasst     Selection-Aware Semantic Stress Testing (Xu et al., 2026).
handoff   checkpoint handoff: Reach x Solve at a verified frontier.
envs      environments: tau (tau2-bench retail/airline), alfworld.
agents    policy protocol, scripted (simulated) policies, workflow controllers.
chapter   provenance and artifact helpers used by every book chapter.
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("agentstudies")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
