"""Score-blind radius calibration against scipy's 1-D Wasserstein distance."""

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from agentstudies.sasst.rules import ThresholdFamily
from agentstudies.sasst.geometry import calibrate_radii, candidate_distances


def test_one_dimensional_max_sliced_distances_are_scipy_w1():
    # In 1-D every unit direction is +-1, so max-sliced W1 is the W1 of the
    # standardized feature between uniform and rule weights.
    x = np.random.default_rng(0).normal(size=(60, 1))
    fam = ThresholdFamily(quantiles=(0.3, 0.6), lifts=(2.0, 4.0))
    d = candidate_distances(x, ["x"], fam, "max_sliced")
    xs = (x[:, 0] - x.mean()) / x.std()
    want = []
    for rule in fam.fit(x, ["x"]):
        w = rule.score(x)
        want.append(wasserstein_distance(xs, xs, np.full(60, 1 / 60), w / w.sum()))
    np.testing.assert_allclose(d, want, rtol=1e-10)
    r = calibrate_radii(x, ["x"], fam, "max_sliced", quantiles=(0.0, 0.5, 1.0))
    assert r == pytest.approx((min(want), float(np.median(want)), max(want)))
    with pytest.raises(ValueError, match="quantiles"):
        calibrate_radii(x, ["x"], fam, "max_sliced", quantiles=(1.5,))
