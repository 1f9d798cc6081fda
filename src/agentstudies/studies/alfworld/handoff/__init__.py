"""Checkpoint handoff on the real ALFWorld engine (chapter ``alfworld_handoff``).

* :mod:`~agentstudies.studies.alfworld.handoff.run` -- natural rollouts, the verified
  frontier and cloned solvers (:func:`run_handoff_study` -> :class:`HandoffStudy`);
* :mod:`~agentstudies.studies.alfworld.handoff.report` -- the paper's Table 8, solver
  testability, findings and planted controls (reads the study's tables, runs no engine);
* :mod:`~agentstudies.studies.alfworld.handoff.pairs` -- the named checkpoint pairings
  (RL x SFT, RL x SFT-equal) and the training data of each checkpoint.

Notebooks import the package (``from agentstudies.studies.alfworld import handoff as ah``).
"""

from __future__ import annotations

from agentstudies.studies.alfworld.handoff.pairs import CHECKPOINT_PAIRS, equal_beside, pair_episodes, training_data
from agentstudies.studies.alfworld.handoff.report import (HANDOFF_CONTROL_SUBJECTS, PAPER_FINDINGS,
                                                          SOLVER_TESTABILITY_COLUMNS, TABLE8_COLUMNS,
                                                          handoff_controls, handoff_findings, solver_testability)
from agentstudies.studies.alfworld.handoff.run import (ACTION_COLUMNS, AUDIT_COLUMNS, EPISODE_COLUMNS, STEP_COLUMNS,
                                                       TRAJECTORY_COLUMNS, HandoffStudy, llm_checkpoint_tables,
                                                       make_study_checkpoints, run_handoff_study)

__all__ = [
    "run_handoff_study", "make_study_checkpoints", "HandoffStudy", "TRAJECTORY_COLUMNS", "STEP_COLUMNS",
    "EPISODE_COLUMNS", "ACTION_COLUMNS", "AUDIT_COLUMNS", "TABLE8_COLUMNS", "handoff_findings",
    "PAPER_FINDINGS", "llm_checkpoint_tables", "solver_testability", "SOLVER_TESTABILITY_COLUMNS",
    "handoff_controls", "HANDOFF_CONTROL_SUBJECTS", "CHECKPOINT_PAIRS", "pair_episodes", "training_data", "equal_beside",
]
