"""Support constraints of a slot and the feasible minimizer of Eq. (2) (SASST Sec. 3, App. C.2-C.3).

:func:`support_constraints` is the one density / ESS / radius / split-share check of
discovery, stability and confirmation; :func:`_radius_screen` computes candidates'
distances lazily in ``loc`` order; :func:`_select` returns the feasible minimizer under a
slot's tie rule.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from agentstudies.sasst._geometry import Geometry
from agentstudies.sasst._slots import Slot
from agentstudies._tolerances import RADIUS_TOL, SUPPORT_TOL

__all__ = ["support_constraints"]


def _radius_screen(geom: Geometry, X: np.ndarray, u: np.ndarray, W: np.ndarray, loc: np.ndarray,
                   feasible: np.ndarray, slot: Slot, chunk: int = 8,
                   first_chunk: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Distances and radius feasibility of the candidates :func:`_select` can reach.

    ``feasible`` holds every other constraint. Distances are computed in increasing
    ``loc`` order (``first_chunk`` candidates, then ``chunk`` at a time: in stability
    resamples the minimizer and its ties are usually among the first two) until the
    radius-feasible minimizer and every candidate within the slot's tie tolerance of it
    are known; the rest keep distance ``inf`` (unselectable). :func:`_select` then returns the same index as with
    every distance computed: a geometry's distance of one weighting does not depend on
    the other rows of ``W`` (up to last-bit rounding of a batched product, which the
    radius slack ``RADIUS_TOL`` absorbs). Returns ``(distance, feasible)``, both (G,).
    """
    dist = np.full(len(loc), np.inf)
    ok = np.zeros(len(loc), dtype=bool)
    idx = np.flatnonzero(feasible)
    order = idx[np.argsort(loc[idx], kind="stable")]
    best = np.inf
    starts = [0, *range(max(1, first_chunk), len(order), chunk)] if len(order) else []
    for start, stop in zip(starts, [*starts[1:], len(order)]):
        if loc[order[start]] > best + slot.tolerance:
            break
        rows = order[start:stop]
        dist[rows] = geom.distance(X, u, W[rows])
        ok[rows] = support_constraints(slot, 0.0, 0.0, distance=dist[rows])["radius"]
        if ok[rows].any():
            best = min(best, float(loc[rows][ok[rows]].min()))
    return dist, ok


def _select(loc: np.ndarray, feasible: np.ndarray, ess: np.ndarray, dist: np.ndarray,
            tie_rule: str, tol: float) -> int:
    """Index of the feasible minimizer of ``loc`` under the tie rule, or -1 if none.

    A candidate whose ``loc`` is not finite (the plan's value is undefined on this sample,
    e.g. a stability resample that leaves one cross-fitting half empty) cannot be selected.
    """
    idx = np.flatnonzero(np.asarray(feasible, bool) & np.isfinite(loc))
    if idx.size == 0:
        return -1
    best = loc[idx].min()
    tied = idx[loc[idx] <= best + tol]
    if tie_rule == "max_ess":
        return int(tied[np.argmax(ess[tied])])
    if tie_rule == "min_distance":
        return int(tied[np.argmin(dist[tied])])
    return int(tied[0])



def support_constraints(
    slot: Slot,
    ess: np.ndarray | float,
    max_density: np.ndarray | float,
    *,
    distance: np.ndarray | float | None = None,
    split_share: float | None = None,
) -> dict[str, np.ndarray]:
    """Whether each support constraint of ``slot`` holds (SASST Sec. 3, App. C.2-C.3).

    The one support check used by discovery, stability and confirmation: ``max_density
    <= density_cap``, ``ess >= min_ess``, and when given ``distance <= radius`` (only if
    the slot has a radius) and ``split_share >= min_split_share``, each with the slack of
    :mod:`agentstudies._tolerances`. Inputs are scalars or arrays of one shape; NaN
    fails every constraint.

    Returns
    -------
    dict constraint name (``"max_density"``, ``"ess"``, ``"radius"``,
    ``"min_split_share"``) -> boolean array (True where the constraint holds), in that
    order. ``np.logical_and.reduce(list(d.values()))`` is overall feasibility.
    """
    ok = {
        "max_density": np.asarray(max_density) <= slot.density_cap + SUPPORT_TOL,
        "ess": np.asarray(ess) >= slot.min_ess - SUPPORT_TOL,
    }
    if distance is not None and slot.radius is not None:
        ok["radius"] = np.asarray(distance) <= slot.radius + RADIUS_TOL
    if split_share is not None:
        ok["min_split_share"] = np.asarray(split_share) >= slot.min_split_share - SUPPORT_TOL
    return ok


def _all_hold(constraints: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.logical_and.reduce(list(constraints.values()))
