"""Small generated games for tests and benchmarks (the smallest floor plans per task type)."""

from __future__ import annotations

from typing import Any

from agentstudies.envs.alfworld.generate import generate_game

__all__ = ["SMALL_LAYOUTS", "small_game"]

#: (split, floor plan) of a small room for each task type.
SMALL_LAYOUTS: dict[str, tuple[str, int]] = {
    "pick_and_place_simple": ("valid_unseen", 202),
    "look_at_obj_in_light": ("valid_seen", 316),
    "pick_clean_then_place_in_recep": ("valid_unseen", 404),
    "pick_heat_then_place_in_recep": ("valid_seen", 14),
    "pick_cool_then_place_in_recep": ("valid_seen", 14),
    "pick_two_obj_and_place": ("valid_unseen", 304),
}


def small_game(task_type: str, index: int = 0, seed: int = 11) -> dict[str, Any]:
    """A validated game of ``task_type`` in a small room (first attempt, no engine check).

    Raises
    ------
    KeyError
        ``task_type`` is not one of :data:`SMALL_LAYOUTS` (the message lists them).
    """
    if task_type not in SMALL_LAYOUTS:
        raise KeyError(f"task_type={task_type!r}: no small game of that type; known task types: "
                       f"{', '.join(SMALL_LAYOUTS)}")
    split, layout = SMALL_LAYOUTS[task_type]
    return generate_game(split, task_type, index, seed, check=False, layouts=[layout])
