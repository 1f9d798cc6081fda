"""ComparisonPlan.values and selection_weights over all R splits at once equal the per-split
transcription of C.3 bit for bit (the R split terms are added in split order)."""

import numpy as np
import pytest

from agentstudies.sasst import ComparisonPlan
from agentstudies.sasst._plan import _hard, _ratio, _softmax


def _values_by_split(plan, mu):
    J, C, R = len(plan.systems), len(plan.candidates), plan.n_splits
    theta = _ratio(mu[..., :J], mu[..., J, None])
    select = _hard if plan.selection == "hard" else (lambda x: _softmax(x, plan.temperature))
    sel = 0.0
    for r in range(R):
        o = J + 1 + r * (2 * C + 2)
        S = _ratio(mu[..., o:o + C], mu[..., o + C, None])
        T = _ratio(mu[..., o + C + 1:o + 2 * C + 1], mu[..., o + 2 * C + 1, None])
        sel = sel + np.sum(select(S) * T, axis=-1) / R
    return np.concatenate([theta, np.asarray(sel)[..., None]], axis=-1)


def _weights_by_split(plan, mu):
    J, C, R = len(plan.systems), len(plan.candidates), plan.n_splits
    select = _hard if plan.selection == "hard" else (lambda x: _softmax(x, plan.temperature))
    out = np.zeros(C)
    for r in range(R):
        o = J + 1 + r * (2 * C + 2)
        out += select(_ratio(mu[o:o + C], mu[o + C])) / R
    return out


@pytest.mark.parametrize("R", [1, 2, 5, 9, 20])
@pytest.mark.parametrize("selection", ["soft", "hard"])
@pytest.mark.parametrize("shape", [(), (7,), (3, 4)])
def test_split_terms_at_once_equal_split_by_split(R, selection, shape):
    plan = ComparisonPlan(("b", "a1", "a2", "a3"), candidates=("a1", "a2", "a3"), selection=selection, n_splits=R)
    rng = np.random.default_rng(R)
    mu = rng.random(shape + (plan.n_columns,))
    mu[..., 4 + 3] = 0.0  # an empty scoring subset: NaN ratios go through unchanged
    got, want = plan.values(mu), _values_by_split(plan, mu)
    assert got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    if shape == ():
        mu1 = rng.random(plan.n_columns)
        assert np.array_equal(plan.selection_weights(mu1), _weights_by_split(plan, mu1))
