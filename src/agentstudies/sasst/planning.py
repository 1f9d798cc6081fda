"""Planning a SASST design before running it (public): is the design able to confirm?

On the user's own numbers (SASST Sec. 5, App. D.2-D.3): the stressed ESS and density
ratio of every rule of a family (:func:`family_ess`), the power of the one-sided stressed
bound (:func:`stressed_power`), the stressed ESS a target power needs
(:func:`required_ess`), and the Monte-Carlo coverage of the frozen-rule bound at the
planned number of clusters (:func:`coverage_check` -> :class:`CoverageCheck`).
Definitions in :mod:`agentstudies.sasst._planning`.
"""

from agentstudies.sasst._planning import CoverageCheck, coverage_check, family_ess, required_ess, stressed_power

__all__ = ["family_ess", "stressed_power", "required_ess", "coverage_check", "CoverageCheck"]
