"""Statistics toolkit shared by every method.

Weighted cluster ratios, ESS and density ratios (:mod:`._weighting`); delta-method
contributions, Gaussian multiplier bootstrap and one-sided bands (:mod:`._inference`);
vectorized paired cluster bootstrap (:mod:`._bootstrap`).
"""

from agentstudies.stats._bootstrap import (
    CLUSTER_DRAWS_PER_SECOND,
    MAX_CLUSTER_DRAWS,
    MAX_REPLICATE_BYTES,
    bootstrap_counts,
    check_resample_budget,
    paired_cluster_bootstrap,
    percentile_interval,
)
from agentstudies.stats._inference import (
    INFERENCE_METHODS,
    JointBounds,
    bonferroni_t_critical,
    contribution_se,
    joint_bounds,
    multiplier_critical_value,
    multiplier_maxima,
    multiplier_draws,
    one_sided_bounds,
    plugin_contributions,
    pointwise_critical,
    ratio_contributions,
    studentized_contributions,
)
from agentstudies.stats._weighting import (
    effective_sample_size,
    max_density_ratio,
    normalized_weights,
    weighted_ratio,
)

__all__ = [
    "CLUSTER_DRAWS_PER_SECOND",
    "MAX_CLUSTER_DRAWS",
    "MAX_REPLICATE_BYTES",
    "check_resample_budget",
    "INFERENCE_METHODS",
    "JointBounds",
    "bonferroni_t_critical",
    "bootstrap_counts",
    "contribution_se",
    "effective_sample_size",
    "joint_bounds",
    "max_density_ratio",
    "multiplier_critical_value",
    "multiplier_maxima",
    "multiplier_draws",
    "normalized_weights",
    "one_sided_bounds",
    "paired_cluster_bootstrap",
    "percentile_interval",
    "plugin_contributions",
    "pointwise_critical",
    "ratio_contributions",
    "studentized_contributions",
    "weighted_ratio",
]
