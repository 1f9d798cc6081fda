"""Score-blind calibration of radius budgets.

SASST fixes each slot's radius ``rho_m`` before confirmation outcomes are read (Appendix
C.1) and recommends calibrating geometry on score-blind pilot data (Section 5, D.4).
:func:`candidate_distances` computes, from discovery *features only*, the distance of
every candidate rule's reweighting from the uniform discovery distribution;
:func:`calibrate_radii` turns chosen quantiles of those distances into radii. No outcome
enters either function.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from agentstudies.sasst._scores import score_matrix
from agentstudies.sasst._geometry import Geometry, make_geometry
from agentstudies.sasst._rules import RuleFamily

__all__ = ["candidate_distances", "calibrate_radii"]


def candidate_distances(
    X: np.ndarray,
    feature_names: Sequence[str],
    family: RuleFamily,
    geometry: Geometry | str = "kms",
) -> np.ndarray:
    """Distances (G,) between the uniform and each candidate's weighting of ``X``.

    Parameters
    ----------
    X : array (n, d), discovery features; feature_names : their d names
    family : the slot's candidate family (fitted here on ``X``)
    geometry : a geometry or its name (fitted here on ``X``)

    Raises
    ------
    ValueError
        If the family fits no rule on ``X``.
    """
    X = np.asarray(X, dtype=float)
    rules = family.fit(X, list(feature_names))
    if not rules:
        raise ValueError(f"family {family.to_dict()} produced no candidate rules on these features")
    S = score_matrix(rules, X, feature_names)  # row g is rule_scores(rules[g], X, feature_names)
    W = S / S.sum(axis=1, keepdims=True)
    geom = make_geometry(geometry).fit(X)
    return geom.distance(X, np.full(X.shape[0], 1.0 / X.shape[0]), W)


def calibrate_radii(
    X: np.ndarray,
    feature_names: Sequence[str],
    family: RuleFamily,
    geometry: Geometry | str = "kms",
    quantiles: Sequence[float] = (0.25, 0.5, 0.9),
) -> tuple[float, ...]:
    """Radii at the given quantiles of the candidates' discovery distances (score-blind).

    Returns a tuple of increasing radii, one per quantile.

    Raises
    ------
    ValueError
        If a quantile lies outside [0, 1].
    """
    q = np.asarray(quantiles, dtype=float)
    if np.any((q < 0) | (q > 1)):
        raise ValueError(f"quantiles must lie in [0, 1]; got {list(quantiles)}")
    d = candidate_distances(X, feature_names, family, geometry)
    return tuple(float(v) for v in np.quantile(d, q))
