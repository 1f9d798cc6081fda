"""Checkpoint handoff: Reach x Solve attribution of an RL gain from plain tables.

Implements the estimators of "Reach or Solve? Attributing Agentic RL Gains with
Checkpoint Handoffs" (Sections 2-4, Appendices A-C) on user-supplied tables, so logs
from any agent run (not only this project's environments) can be analysed.

Inputs (validated, errors name the column / task / problem)
    :func:`validate_episodes`      task x seed x reacher x solver
    :func:`validate_trajectories`  task x seed x reacher
    :func:`validate_steps`         one row per reacher action
Estimands
    :func:`assignment_table`       Reach A_W, Solve C_{W,R}, endpoint J(W,R) (Eq. 7)
    :func:`interaction_terms`      I (Eqs. 4, 8) and the two paths of Eq. 3
    :func:`solve_stages`           bridge action x finishing (Table 3)
    :func:`analyze_handoff`        all of the above + same-state Solve gaps, the
                                   reached-only estimand, per-type Solve, with
                                   task-stratified paired bootstrap intervals
                                   -> :class:`HandoffResult`
    :func:`predict_interaction`    Eq. 9 from independent Reach and Solve gaps, residual,
                                   per type (Table 6) -> :class:`InteractionPrediction`
Diagnostics (Appendix C)
    :func:`budget_diagnostic`      arrival within early budgets, contrasts (Table 7)
    :func:`audit_non_arrivals`     seven failure-mode labels, loop statistics
    :func:`loop_statistics`        step-level repeat / revisit / unchanged shares
Recorded-history mode (TravelPlanner, App. A)
    :func:`cut_before_final_call`, :func:`verify_replay`, :func:`history_hash`
Figures: :mod:`agentstudies.handoff.plots`. Test hooks (per-unit statistics, resample
replicates, slow reference implementations, a synthetic example study):
:mod:`agentstudies.handoff.testing`.
"""

from agentstudies.handoff._diagnostics import (
    DEFAULT_SUBGOALS,
    FAILURE_MODES,
    BudgetDiagnostic,
    FailureAudit,
    audit_non_arrivals,
    budget_diagnostic,
    default_invalid_action,
    default_pickup_rule,
    loop_statistics,
)
from agentstudies.handoff._analysis import HandoffResult, analyze_handoff
from agentstudies.handoff._estimands import BY_TYPE_ESTIMANDS
from agentstudies.handoff._history import (
    RecordedHandoff,
    ReplayMismatch,
    canonical_record,
    cut_before_final_call,
    history_hash,
    replay_and_verify,
    verify_replay,
)
from agentstudies.handoff._prediction import InteractionPrediction, predict_interaction
from agentstudies.handoff._tables import assignment_table, interaction_terms, solve_stages
from agentstudies.handoff._validate import (
    EPISODE_COLUMNS,
    STEP_COLUMNS,
    TRAJECTORY_COLUMNS,
    validate_episodes,
    validate_steps,
    validate_trajectories,
)

__all__ = [
    # inputs
    "EPISODE_COLUMNS", "TRAJECTORY_COLUMNS", "STEP_COLUMNS",
    "validate_episodes", "validate_trajectories", "validate_steps",
    # estimands and prediction
    "BY_TYPE_ESTIMANDS", "HandoffResult", "analyze_handoff", "assignment_table",
    "interaction_terms", "solve_stages", "InteractionPrediction", "predict_interaction",
    # diagnostics
    "DEFAULT_SUBGOALS", "FAILURE_MODES", "BudgetDiagnostic", "FailureAudit",
    "audit_non_arrivals", "budget_diagnostic", "default_invalid_action",
    "default_pickup_rule", "loop_statistics",
    # recorded-history mode
    "RecordedHandoff", "ReplayMismatch", "canonical_record", "cut_before_final_call",
    "history_hash", "replay_and_verify", "verify_replay",
]
