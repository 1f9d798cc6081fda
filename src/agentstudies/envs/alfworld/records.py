"""Step records of an ALFWorld episode: the budget check, the JSON-safe record of one step,
and the comparison that verifies an operational clone (replay) step by step.

A record (:func:`record_of`) holds what an agent and a verifier see after a reset or a
step: observation, ordered admissible list, score, terminal flag, won flag. The
operational clone (:meth:`~.env.AlfworldEnv.replay`) compares each replayed record with
the recorded one (:func:`compare_record`) and raises :class:`ReplayMismatch` naming the
step at the first difference.
"""

from __future__ import annotations

import numbers
from typing import Any, Mapping

__all__ = ["ReplayMismatch", "check_budget", "record_of", "compare_record", "RECORD_FIELDS"]

#: The fields of a step record, in the order :func:`compare_record` checks them.
RECORD_FIELDS = ("observation", "admissible", "score", "terminal", "won")


class ReplayMismatch(RuntimeError):
    """A replayed step differs from its recorded counterpart (``step`` is the index)."""

    def __init__(self, step: int, field: str, expected: Any, got: Any):
        self.step = step
        self.field = field
        super().__init__(
            f"replay mismatch at step {step} (0 = after reset) in field {field!r}: "
            f"expected {expected!r}, got {got!r}"
        )


def check_budget(budget: Any) -> int:
    """An action budget as an ``int``: a non-negative integer (``numpy`` integers too).

    Raises
    ------
    TypeError
        ``budget`` is not an integer: text (``'20'``), a float (``2.5`` used to be cut to 2,
        ``20.0`` too), NaN, or a boolean.
    ValueError
        ``budget`` is negative.
    """
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral):
        raise TypeError(f"budget={budget!r}: expected a non-negative integer number of actions, got "
                        f"{type(budget).__name__}")
    if budget < 0:
        raise ValueError(f"budget={budget!r}: expected a non-negative integer number of actions")
    return int(budget)


def record_of(state: Mapping[str, Any], remaining_budget: int) -> dict[str, Any]:
    """JSON-safe record of one step: observation, ordered admissible list, score, terminal, won."""
    won = bool(state.get("won", False))
    return {
        "observation": str(state["feedback"]),
        "admissible": list(state["admissible_commands"]),
        "score": float(1.0 if won else 0.0),
        "terminal": bool(won or remaining_budget <= 0),
        "won": won,
    }


def compare_record(step: int, got: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    """Check a replayed record ``got`` against the recorded ``expected`` (step ``step``,
    0 = after the reset). Raises ``KeyError`` if ``expected`` lacks a field of
    :data:`RECORD_FIELDS`, :class:`ReplayMismatch` (naming step and field) at the first
    field that differs."""
    for key in RECORD_FIELDS:
        if key not in expected:
            raise KeyError(f"record of step {step} lacks field {key!r}")
        if got[key] != expected[key]:
            raise ReplayMismatch(step, key, expected[key], got[key])
