"""Selection-Aware Semantic Stress Testing (SASST; Xu et al., 2026).

Choose a task-reweighting rule from pre-execution features on discovery clusters,
freeze it, and confirm the same paired workflow comparison on separate clusters with
support checks (density, ESS, radius), stability, joint one-sided bounds and five
statuses. Entry point: :class:`SASST` (``SASST(plan, slots, families).run(episodes,
features)``).
"""

from agentstudies.sasst.data import CONFIRMATION, DISCOVERY, ClusterData, cluster_data, split_clusters
from agentstudies.sasst.engine import SASST, Discovery, FrozenRule, SASSTReport, rule_scores
from agentstudies.sasst.geometry import KMS, MMD, MaxSliced, NoRadius, make_geometry, rbf_similarity_median
from agentstudies.sasst.plan import SELECTED, ComparisonPlan
from agentstudies.sasst.rules import (
    AxisTiltFamily,
    BumpFamily,
    BumpRule,
    CompositeFamily,
    DirectionTiltFamily,
    FixedFamily,
    ProjectionTiltRule,
    Rule,
    RuleFamily,
    ThresholdFamily,
    ThresholdRule,
    UniformRule,
    rule_from_dict,
)
from agentstudies.sasst.slots import STATUSES, Slot, slot_status

__all__ = [
    "CONFIRMATION", "DISCOVERY", "SELECTED", "STATUSES",
    "SASST", "SASSTReport", "Discovery", "FrozenRule", "Slot", "slot_status",
    "ComparisonPlan", "ClusterData", "cluster_data", "split_clusters", "rule_scores",
    "KMS", "MMD", "MaxSliced", "NoRadius", "make_geometry", "rbf_similarity_median",
    "Rule", "RuleFamily", "UniformRule", "ThresholdRule", "ProjectionTiltRule", "BumpRule",
    "rule_from_dict", "AxisTiltFamily", "ThresholdFamily", "DirectionTiltFamily", "BumpFamily",
    "CompositeFamily", "FixedFamily",
]
