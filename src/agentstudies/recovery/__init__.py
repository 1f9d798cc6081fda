"""Causal evaluation of harness recovery and the Causal Intervention Router (CIR).

Implements "When Harnesses Lose the Signal: Causal Evaluation of Recovery in LLM Agents"
(Xiao et al., arXiv:2610.00372) on plain tables, so paired logs from any harness can be
analysed -- this project's ALFWorld harness (:mod:`agentstudies.studies.alfworld_recovery`)
is one producer, not a requirement.

Paired evaluation
    :func:`validate_paired`   the paired table (task, condition, delay, operation,
                              y_without, y_with [, cohort]); errors name the row
    :func:`analyze_paired`    Delta in points, rescue / harm / both counts, condition -
                              clean contrasts, task-level cluster bootstrap
                              -> :class:`RecoveryResult`
    :func:`sign_flip_test`    task-level sign-flip test -> :class:`SignFlipResult`
Figures: :mod:`agentstudies.recovery.plots`.
"""

from agentstudies.recovery._paired import (
    CONDITION_ORDER,
    OPERATION_ORDER,
    RecoveryResult,
    analyze_paired,
)
from agentstudies.recovery._signflip import SignFlipResult, sign_flip_test
from agentstudies.recovery._validate import KEY_COLUMNS, PAIRED_COLUMNS, validate_paired

__all__ = [
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
