"""The discovery / stability selector ignores candidates whose value is undefined (NaN)."""

import numpy as np

from agentstudies.sasst._engine import _select


def test_select_skips_nan_and_returns_minus_one_when_nothing_is_defined():
    loc = np.array([np.nan, 0.3, 0.1, np.nan])
    feas = np.array([True, True, True, True])
    ess = np.ones(4)
    dist = np.zeros(4)
    assert _select(loc, feas, ess, dist, "first", 1e-12) == 2  # brute force: argmin over the finite entries
    assert _select(np.full(3, np.nan), np.ones(3, bool), np.ones(3), np.zeros(3), "max_ess", 1e-12) == -1
    assert _select(loc, np.array([True, False, False, True]), ess, dist, "min_distance", 1e-12) == -1
