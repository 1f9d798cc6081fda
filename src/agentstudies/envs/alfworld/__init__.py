"""ALFWorld on the real engine: generated problems, env wrapper, clones, frontier checks.

Modules (imported lazily; the engine stack takes a couple of seconds to import):

``generate``  seeded ALFWorld-format problems for the six task types; seen/unseen pools
              on disjoint AI2-THOR floor plans; validation before loading.
``pools``     the embedded, checked pools (``data/alfworld/pools.json``): ``load_pool``.
``env``       ``AlfworldEnv`` (budget, visible history, native ``won``), operational
              clone by verified replay, in-process snapshot/restore.
``pddl_env``  the engine ``AlfworldEnv`` drives: TextWorld's ``PddlEnv`` with per-game
              caches (grammar parse shared across games, command texts, intro).
``records``   step records, the budget check and the replay comparison.
``games``     official ALFWorld game files on disk.
``engine``    low-level engine helpers (SAS translation cache, parse cache, reads).
``frontier``  remaining distance and ``F_D`` membership (paper Eq. 5-6, Appendix A):
              fast path on fast-downward, reference by clones + rendered steps.
``expert``    optimal plans (analytic; or TextWorld's fast-downward planner).
``validation`` ``validate_game``: goal predicates present before the engine loads a game.

The handoff study that drives these with the scripted policies is
:mod:`agentstudies.studies.alfworld.handoff.run`.

Official ALFWorld data: set ``ALFWORLD_DATA`` and pass
``[env.load_game_file(p) for p in env.official_game_files("valid_unseen")]`` as the pool
(with ``expert="fast_downward"`` for the scripted policies).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "AlfworldEnv": "env",
    "ReplayMismatch": "env",
    "SnapshotError": "env",
    "InadmissibleCommand": "env",
    "load_game_file": "env",
    "official_game_files": "env",
    "generate_pool": "generate",
    "generate_game": "generate",
    "validate_game": "validation",
    "GameValidationError": "validation",
    "TASK_TYPES": "validation",
    "load_pool": "pools",
    "frontier_check": "frontier",
    "frontier_check_reference": "frontier",
    "remaining_distance": "frontier",
    "FrontierCheck": "frontier",
    "Expert": "expert",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)
