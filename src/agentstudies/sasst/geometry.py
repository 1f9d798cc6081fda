"""Geometries, radius calibration and support screens of SASST (public).

Where a reweighted task distribution may go: a geometry measures how far the weights
move the features from the discovery sample (SASST Section 2, the radius ``rho``), and the
support screens refuse weights the confirmation sample cannot carry (density, ESS,
radius) or confirmation features shifted from discovery. Definitions in
:mod:`agentstudies.sasst._geometry`, :mod:`._radius`, :mod:`._support` and :mod:`._prereg`.

Geometries  :class:`Geometry` (base), :class:`KMS`, :class:`MMD`, :class:`MaxSliced`,
            :class:`NoRadius`, :func:`make_geometry`; their pieces :class:`Standardizer`,
            :func:`median_bandwidth`, :func:`rbf_similarity_median`,
            :func:`weighted_w1_same_support`; a fitted geometry's JSON state
            :func:`geometry_state` / :func:`geometry_from_state`
Radii       :func:`candidate_distances`, :func:`calibrate_radii`
Screens     :func:`support_constraints` (density, ESS, radius per rule),
            :data:`SHIFT_TOLERANCE` and :func:`feature_schema` (the feature-shift screen of
            a pre-registration)
"""

from agentstudies.sasst._support import support_constraints
from agentstudies.sasst._geometry import (
    KMS,
    MMD,
    Geometry,
    MaxSliced,
    NoRadius,
    Standardizer,
    make_geometry,
    median_bandwidth,
    rbf_similarity_median,
    weighted_w1_same_support,
)
from agentstudies.sasst._prereg import SHIFT_TOLERANCE, feature_schema, geometry_from_state, geometry_state
from agentstudies.sasst._radius import calibrate_radii, candidate_distances

__all__ = [
    "Geometry", "KMS", "MMD", "MaxSliced", "NoRadius", "make_geometry",
    "Standardizer", "median_bandwidth", "rbf_similarity_median", "weighted_w1_same_support",
    "geometry_state", "geometry_from_state",
    "candidate_distances", "calibrate_radii",
    "support_constraints", "SHIFT_TOLERANCE", "feature_schema",
]
