"""Stress rules and rule families of SASST (public): what a slot's registry ``G_m`` holds.

A rule maps pre-execution task features to a bounded nonnegative score (SASST Section 2,
Eq. 1); a family fits a list of rules on discovery features only (score-blind). See
:mod:`agentstudies.sasst._rules` for the definitions.

Rules       :class:`Rule` (protocol / base), :class:`UniformRule`, :class:`ThresholdRule`,
            :class:`ProjectionTiltRule`, :class:`BumpRule`, :class:`QuadraticTiltRule`;
            :func:`rule_from_dict` / :func:`register_rule` / :data:`RULE_KINDS` (JSON round trip)
Families    :class:`RuleFamily`, :class:`AxisTiltFamily`, :class:`ThresholdFamily`,
            :class:`DirectionTiltFamily`, :class:`BumpFamily`, :class:`QuadraticTiltFamily`,
            :class:`ItemBumpFamily`, :class:`CompositeFamily`, :class:`FixedFamily`
Scores      :func:`rule_scores` (one rule, shape ``(n_tasks,)``), :func:`score_matrix`
            (rules x tasks), :class:`FrozenRule` (the rule a slot's discovery froze)
Stability   :func:`top_set_jaccard`, :func:`top_weighted_sets`, :func:`weight_correlation`
            (how alike two rules' weights are; the engine's resample stability)
"""

from agentstudies.sasst._results import FrozenRule
from agentstudies.sasst._scores import (
    rule_scores,
    score_matrix,
    top_set_jaccard,
    top_weighted_sets,
    weight_correlation,
)
from agentstudies.sasst._rules import (
    RULE_KINDS,
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
    UniformRule,
    register_rule,
    rule_from_dict,
)

__all__ = [
    "Rule", "UniformRule", "ThresholdRule", "ProjectionTiltRule", "BumpRule", "QuadraticTiltRule",
    "rule_from_dict", "register_rule", "RULE_KINDS",
    "RuleFamily", "AxisTiltFamily", "ThresholdFamily", "DirectionTiltFamily", "BumpFamily",
    "QuadraticTiltFamily", "ItemBumpFamily", "CompositeFamily", "FixedFamily",
    "rule_scores", "score_matrix", "FrozenRule",
    "top_set_jaccard", "top_weighted_sets", "weight_correlation",
]
