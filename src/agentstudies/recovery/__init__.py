"""Causal evaluation of harness recovery and the Causal Intervention Router (CIR).

Implements "When Harnesses Lose the Signal: Causal Evaluation of Recovery in LLM Agents"
(Xiao et al., arXiv:2610.00372) on plain tables, so paired logs from any harness can be
analysed -- this project's ALFWorld harness (:mod:`agentstudies.studies.alfworld.recovery`)
is one producer, not a requirement.

Paired evaluation
    :func:`validate_paired`   the paired table (task, condition, delay, operation,
                              y_without, y_with [, cohort]); errors name the row
    :func:`analyze_paired`    Delta in points, rescue / harm / both counts, condition -
                              clean contrasts, task-level cluster bootstrap
                              -> :class:`RecoveryResult`
    :func:`sign_flip_test`    task-level sign-flip test -> :class:`SignFlipResult`
The Causal Intervention Router (CIR)
    :func:`decision_features` pre-decision features from a transcript prefix
    :func:`fit_router`        p_err / p0 / p1 logistic T-learner, OOF thresholds under the
                              clean-harm limit, baselines; all frozen (:class:`FrozenRouter`,
                              SHA-256) -> :class:`RouterFit`
    :func:`fit_cate_router`   econml CATE score of the refresh effect as an alternative
    :class:`OutcomeVault`     evaluation outcomes sealed until frozen routers are shown
    :func:`evaluate_policies` success vs never-refresh, rescue / harm, intervention
                              rates, clean-harm rate, sign-flip p -> :class:`RouterEvaluation`
Figures: :mod:`agentstudies.recovery.plots`.

Example (your own harness's logs; one row per fork)::

    import pandas as pd
    from agentstudies import recovery as rc

    paired = pd.DataFrame({
        "task_id": ["a", "a", "b", "b"], "condition": ["clean", "stale-2"] * 2,
        "delay": 0, "operation": "refresh",
        "y_without": [1, 0, 1, 1], "y_with": [1, 1, 0, 1],
    })
    res = rc.analyze_paired(paired, n_draws=2000, seed=0)
    res.paired_counts()        # rescue / harm / both per cell; rescue - harm = Delta * n / 100
    res.contrast_table()       # stale-2 - clean, with task-level bootstrap intervals
    rc.sign_flip_test([1, 0, 2, -1, 1]).p_value
"""

from agentstudies.recovery._paired import (
    CONDITION_ORDER,
    OPERATION_ORDER,
    RecoveryResult,
    analyze_paired,
)
from agentstudies.recovery._features import FEATURE_NAMES, NOOP_TEXT, decision_features
from agentstudies.recovery._cate import fit_cate_router
from agentstudies.recovery._decisions import CANDIDATE_DELAYS, validate_decisions
from agentstudies.recovery._evaluation import RouterEvaluation, evaluate_policies, rescue_sets
from agentstudies.recovery._freeze import BLANKET_KINDS, FrozenRouter, OutcomesSealedError, OutcomeVault, blanket_routers
from agentstudies.recovery._router import RouterFit, fit_router
from agentstudies.recovery._signflip import SignFlipResult, sign_flip_test
from agentstudies.recovery._validate import KEY_COLUMNS, PAIRED_COLUMNS, validate_paired

__all__ = [
    "BLANKET_KINDS",
    "blanket_routers",
    "rescue_sets",
    "CANDIDATE_DELAYS",
    "FEATURE_NAMES",
    "FrozenRouter",
    "NOOP_TEXT",
    "OutcomeVault",
    "OutcomesSealedError",
    "RouterEvaluation",
    "RouterFit",
    "decision_features",
    "evaluate_policies",
    "fit_cate_router",
    "fit_router",
    "validate_decisions",
    "CONDITION_ORDER",
    "KEY_COLUMNS",
    "OPERATION_ORDER",
    "PAIRED_COLUMNS",
    "RecoveryResult",
    "SignFlipResult",
    "analyze_paired",
    "sign_flip_test",
    "validate_paired",
]
