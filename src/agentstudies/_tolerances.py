"""Numerical tolerances shared by the engines, in one place.

Every comparison of a computed quantity with a user threshold allows a slack so that a
value equal to the threshold up to rounding counts as meeting it (a rule whose ESS is
exactly ``min_ess`` is feasible whatever the summation order).
"""

#: Slack of support constraints on O(1)-scaled quantities: density ratio vs its cap,
#: ESS vs its minimum, split-denominator share vs its minimum, stability vs its threshold.
SUPPORT_TOL = 1e-12

#: Slack of a radius constraint (distances between weightings are small, ~1e-3..1).
RADIUS_TOL = 1e-15

#: A standard deviation / norm at or below this is treated as zero (a constant function,
#: a degenerate contribution vector, a constant feature column).
DEGENERATE_TOL = 1e-12

#: Absolute tolerance of the exact accounting identities of the handoff estimands
#: (J = A C, the two paths of Eq. 3, Eq. 4 = Eq. 8; sums of at most a few hundred terms).
IDENTITY_TOL = 1e-9

#: Relative tolerance of an identity that holds exactly on the same rows (J = A C from one
#: assignment's rows; bridge rate x finishing rate = conversion).
EXACT_TOL = 1e-12

#: Relative slack when a resampled statistic is compared with the observed one in a
#: permutation / sign-flip tail (a flip that reproduces the observed value up to rounding
#: counts as at least as extreme): ``|s*| >= |s_obs| - TIE_TOL * max(1, |s_obs|)``.
TIE_TOL = 1e-9

#: Floor of a denominator that must stay positive (avoids 0/0 in vectorized ratios).
TINY = 1e-300
