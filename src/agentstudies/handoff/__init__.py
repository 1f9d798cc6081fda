"""Checkpoint handoff: Reach x Solve attribution of an RL gain from plain tables.

Implements the estimators of "Reach or Solve? Attributing Agentic RL Gains with
Checkpoint Handoffs" (Sections 2-4, Appendices A-C) on user-supplied tables:

* :func:`validate_episodes`, :func:`validate_trajectories`, :func:`validate_steps`
  - the input schemas, with errors naming the column / task / problem;
* :func:`assignment_table`, :func:`interaction_terms`, :func:`solve_stages`
  - point estimates of Reach, Solve, endpoint (Eq. 7), interaction (Eqs. 3, 4, 8);
* :func:`analyze_handoff` - all of these with task-stratified paired bootstrap intervals
  (vectorized), same-state Solve gaps, the reached-only (survivor) estimand and the
  empty-denominator rule -> :class:`HandoffResult`.
"""

from agentstudies.handoff._boot import UnitStats, draw_counts, split_seed_sequence
from agentstudies.handoff._validate import (
    EPISODE_COLUMNS,
    STEP_COLUMNS,
    TRAJECTORY_COLUMNS,
    validate_episodes,
    validate_steps,
    validate_trajectories,
)
from agentstudies.handoff.estimands import (
    BY_TYPE_ESTIMANDS,
    HandoffResult,
    analyze_handoff,
    assignment_table,
    episode_task_stats,
    handoff_replicates,
    interaction_terms,
    solve_stages,
)

__all__ = [
    "BY_TYPE_ESTIMANDS",
    "EPISODE_COLUMNS",
    "STEP_COLUMNS",
    "TRAJECTORY_COLUMNS",
    "HandoffResult",
    "UnitStats",
    "analyze_handoff",
    "assignment_table",
    "draw_counts",
    "episode_task_stats",
    "handoff_replicates",
    "interaction_terms",
    "solve_stages",
    "split_seed_sequence",
    "validate_episodes",
    "validate_steps",
    "validate_trajectories",
]
