"""The rule a slot selects on each discovery resample of the stability check (SASST App. C.2).

:func:`resample_selections` reruns Eq. (2) and every score-blind constraint of a slot
(density cap, minimum ESS, split denominators, radius) on bootstrap resamples of the
discovery clusters, for many resamples at once: the per-resample weights, ESS and density
ratios of a block of resamples are one array operation each, and the radius screen of
the whole block asks the geometry for the distances of every resample's next candidates in
one call (:func:`_radius_screens`). Each resample's selection is the one
:meth:`agentstudies.sasst.SASST._stability` made resample by resample: every number is
the same elementwise operation on the same operands, the Eq. (2) prediction is the same
matrix-vector product per resample, and a distance is computed for the same candidates in
the same ``loc`` order as :func:`agentstudies.sasst._support._radius_screen` (a batched
distance may differ from a one-row one in the last bit, which the radius slack
``RADIUS_TOL`` absorbs, as in that screen).
"""

from __future__ import annotations

import numpy as np

from agentstudies.sasst._geometry import KMS, MMD, Geometry, MaxSliced, NoRadius
from agentstudies.sasst._plan import ComparisonPlan
from agentstudies.sasst._slots import Slot
from agentstudies.sasst._support import _all_hold, _radius_screen, _select, support_constraints
from agentstudies._tolerances import TINY

__all__: list[str] = []

#: Values of one (resamples, candidates, clusters) block: bounds the temporaries (16 MiB).
BLOCK_VALUES = 1 << 21

#: Geometries whose ``distance(X, U, W)`` takes one reference row per weighting row
#: (``U`` of the shape of ``W``): their radius screens are batched across resamples.
_ROWWISE_REFERENCE = (KMS, MaxSliced, MMD, NoRadius)


def resample_selections(plan: ComparisonPlan, S: np.ndarray, counts: np.ndarray, delta: np.ndarray,
                        psi: np.ndarray, slot: Slot, geom: Geometry, X: np.ndarray,
                        masks: np.ndarray | None) -> np.ndarray:
    """Index of the candidate the slot selects on each resample, -1 where none is feasible.

    Parameters
    ----------
    plan : the comparison plan (its split denominators enter the constraints)
    S : array (G, n), the candidates' scores on the discovery clusters
    counts : array (B, n), resample multiplicities ``m_bk`` (float)
    delta : array (B,), the plan's contrast on each resample; psi : array (n, B), its
        first-order contributions (Eq. 2's ``psi`` per resample)
    slot, geom, X, masks : the slot, its fitted geometry, the discovery features (n, d)
        and the plan's split masks

    Returns
    -------
    int array (B,).
    """
    B, n = counts.shape
    G = S.shape[0]
    picks = np.full(B, -1)
    SS = S * S
    step = max(1, BLOCK_VALUES // max(1, G * n))
    for a in range(0, B, step):
        m = counts[a:a + step]  # (b, n)
        ms = S[None] * m[:, None, :]  # (b, G, n): S * m of each resample
        tot = ms.sum(axis=2)
        okm = tot > 0
        Wb = ms / np.where(okm, tot, 1.0)[:, :, None]
        ub = m / n
        loc = np.vstack([delta[a + i] + (Wb[i] - ub[i]) @ psi[:, a + i] for i in range(len(m))])
        ess = np.where(okm, tot**2 / np.maximum((SS[None] * m[:, None, :]).sum(axis=2), TINY), 0.0)
        dens = n * np.where(m[:, None, :] > 0, S[None], -np.inf).max(axis=2) / np.where(okm, tot, np.inf)
        share = (np.vstack([plan.split_shares(S, masks, m[i]) for i in range(len(m))])
                 if plan.has_selection and plan.n_splits else np.ones(loc.shape))  # no splits: every share 1
        feas = okm & _all_hold(support_constraints(slot, ess, dens, split_share=share)) & np.isfinite(loc)
        dist = np.zeros(loc.shape)
        if slot.radius is not None:
            dist, feas = _radius_screens(geom, X, ub, Wb, loc, feas, slot)
        picks[a:a + len(m)] = _select_rows(loc, feas, ess, dist, slot.tie_rule, slot.tolerance)
    return picks


def _select_rows(loc: np.ndarray, feasible: np.ndarray, ess: np.ndarray, dist: np.ndarray,
                 tie_rule: str, tol: float) -> np.ndarray:
    """:func:`~agentstudies.sasst._support._select` of every row of (b, G) arrays: (b,) indices, -1 if none.

    The feasible minimizer of each row's ``loc``, ties within ``tol`` broken by the tie rule
    (registry order, largest ESS, smallest distance; the first such index). A row whose tie
    break the masked arrays cannot settle (a tied candidate's ESS or distance infinite) is
    passed to ``_select`` itself.
    """
    f = feasible & np.isfinite(loc)
    best = np.where(f, loc, np.inf).min(axis=1)
    tied = f & (loc <= best[:, None] + tol)
    if tie_rule == "max_ess":
        pick = np.argmax(np.where(tied, ess, -np.inf), axis=1)
    elif tie_rule == "min_distance":
        pick = np.argmin(np.where(tied, dist, np.inf), axis=1)
    else:
        pick = np.argmax(tied, axis=1)
    pick = np.where(f.any(axis=1), pick, -1)
    for i in np.flatnonzero((pick >= 0) & ~tied[np.arange(len(pick)), np.maximum(pick, 0)]):
        pick[i] = _select(loc[i], feasible[i], ess[i], dist[i], tie_rule, tol)
    return pick


def _radius_screens(geom: Geometry, X: np.ndarray, U: np.ndarray, W: np.ndarray, loc: np.ndarray,
                    feasible: np.ndarray, slot: Slot, chunk: int = 8,
                    first_chunk: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~agentstudies.sasst._support._radius_screen` of every resample: ``(dist, ok)``, (b, G).

    ``U`` (b, n) are the resamples' reference weights, ``W`` (b, G, n) their candidate
    weights, ``loc`` and ``feasible`` (b, G). Round ``k`` computes, for every resample whose
    screen is still open, the distances of the ``k``-th group of its feasible candidates in
    increasing ``loc`` order (``first_chunk``, then ``chunk`` at a time), all in one
    ``geom.distance`` call; a screen closes as that function's loop ends (no candidates left,
    or the next one's ``loc`` exceeds the best radius-feasible one by more than the slot's
    tolerance). A geometry outside :data:`_ROWWISE_REFERENCE` is screened resample by resample.
    Candidates never reached keep distance ``inf`` and ``ok`` False.
    """
    b, G = loc.shape
    if type(geom) not in _ROWWISE_REFERENCE:
        pairs = [_radius_screen(geom, X, U[i], W[i], loc[i], feasible[i], slot, chunk, first_chunk)
                 for i in range(b)]
        return np.vstack([d for d, _ in pairs]), np.vstack([o for _, o in pairs])
    dist = np.full((b, G), np.inf)
    ok = np.zeros((b, G), dtype=bool)
    # each row's feasible candidates first, in increasing loc (ties in index order), as the screen orders them
    order = np.argsort(np.where(feasible, loc, np.inf), axis=1, kind="stable")
    count = feasible.sum(axis=1)
    best = np.full(b, np.inf)
    live = count > 0
    rows_b = np.arange(b)
    starts = [0, *range(max(1, first_chunk), G, chunk)]
    for start, stop in zip(starts, [*starts[1:], G]):
        live &= count > start
        live &= ~(loc[rows_b, order[:, start]] > best + slot.tolerance)  # the screen's stopping rule
        if not live.any():
            break
        cols = np.arange(start, stop)
        ri, cj = np.nonzero(live[:, None] & (cols[None, :] < count[:, None]))
        g = order[ri, start + cj]
        d = geom.distance(X, U[ri], W[ri, g])
        dist[ri, g] = d
        okd = support_constraints(slot, 0.0, 0.0, distance=d)["radius"]
        ok[ri, g] = okd
        np.minimum.at(best, ri[okd], loc[ri[okd], g[okd]])
    return dist, ok
