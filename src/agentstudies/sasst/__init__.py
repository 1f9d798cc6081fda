"""Selection-Aware Semantic Stress Testing (SASST; Xu et al., 2026).

Choose a task-reweighting rule from pre-execution features on discovery clusters,
freeze it, and confirm the same paired workflow comparison on separate clusters with
support checks (density, ESS, radius), stability, joint one-sided bounds and five
statuses. Entry point: :class:`SASST` (``SASST(plan, slots, families).run(episodes,
features)``).
"""

from agentstudies.sasst._data import CONFIRMATION, DISCOVERY, ClusterData, cluster_data, split_clusters
from agentstudies.sasst._engine import (
    SASST,
    Discovery,
    FrozenRule,
    SASSTReport,
    rule_scores,
    score_matrix,
    support_constraints,
    top_set_jaccard,
    weight_correlation,
)
from agentstudies.sasst._engine import _top_sets as top_weighted_sets
from agentstudies.sasst._geometry import (
    KMS,
    MMD,
    Geometry,
    MaxSliced,
    NoRadius,
    Standardizer,
    make_geometry,
    median_bandwidth,
    rbf_similarity_median,
    weighted_w1_same_support,
)
from agentstudies.sasst._plan import SELECTED, ComparisonPlan
from agentstudies.sasst._planning import CoverageCheck, coverage_check, family_ess, required_ess, stressed_power
from agentstudies.sasst._prereg import (
    SHIFT_TOLERANCE,
    Preregistration,
    PreregistrationError,
    feature_schema,
    geometry_from_state,
    geometry_state,
    preregister,
)
from agentstudies.sasst._radius import calibrate_radii, candidate_distances
from agentstudies.sasst._rules import (
    AxisTiltFamily,
    BumpFamily,
    BumpRule,
    CompositeFamily,
    DirectionTiltFamily,
    FixedFamily,
    ItemBumpFamily,
    ProjectionTiltRule,
    QuadraticTiltFamily,
    QuadraticTiltRule,
    Rule,
    RuleFamily,
    ThresholdFamily,
    ThresholdRule,
    RULE_KINDS,
    UniformRule,
    register_rule,
    rule_from_dict,
)
from agentstudies.sasst._slots import (
    ABSTAINED,
    CONFIRMED,
    FAILED_DISCOVERY,
    FAILED_FEASIBILITY,
    NOT_CONFIRMED,
    STATUSES,
    TIE_RULES,
    Slot,
    recommendation,
    slot_status,
)

__all__ = [
    # splits, plan, slots and statuses
    "CONFIRMATION", "DISCOVERY", "SELECTED", "STATUSES", "TIE_RULES",
    "CONFIRMED", "NOT_CONFIRMED", "FAILED_DISCOVERY", "FAILED_FEASIBILITY", "ABSTAINED",
    "ComparisonPlan", "Slot", "slot_status", "recommendation",
    # data and engine
    "ClusterData", "cluster_data", "split_clusters",
    "SASST", "SASSTReport", "Discovery", "FrozenRule", "rule_scores", "score_matrix", "support_constraints",
    "top_set_jaccard", "top_weighted_sets", "weight_correlation",
    # geometry and radius calibration
    "Geometry", "KMS", "MMD", "MaxSliced", "NoRadius", "Standardizer", "make_geometry",
    "median_bandwidth", "rbf_similarity_median", "weighted_w1_same_support",
    "calibrate_radii", "candidate_distances",
    # planning a user's own design
    "family_ess", "stressed_power", "required_ess", "coverage_check", "CoverageCheck",
    # pre-registration
    "Preregistration", "PreregistrationError", "preregister", "feature_schema", "SHIFT_TOLERANCE",
    "geometry_state", "geometry_from_state",
    # rules and families
    "Rule", "RuleFamily", "UniformRule", "ThresholdRule", "ProjectionTiltRule", "BumpRule",
    "rule_from_dict", "register_rule", "RULE_KINDS", "AxisTiltFamily", "ThresholdFamily", "DirectionTiltFamily", "BumpFamily",
    "CompositeFamily", "FixedFamily", "ItemBumpFamily", "QuadraticTiltRule", "QuadraticTiltFamily",
]
