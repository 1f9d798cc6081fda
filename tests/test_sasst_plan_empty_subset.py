"""A subset with no rule weight: the plan's ratios there are NaN
(undefined) without numpy's "invalid value encountered in divide" RuntimeWarning, which
tau_workflow_stress printed into its chapter from ``sasst/_plan.py``; the defined values
elsewhere are unchanged and the support check sees a split share of 0."""

import warnings

import numpy as np
import pytest

from agentstudies.sasst import SELECTED, ComparisonPlan

SYSTEMS = ("base", "a", "b")


def _case():
    """A frozen rule that scores every cluster of scoring subset S_1 zero (the case that warned)."""
    rng = np.random.default_rng(3)
    n = 40
    ids = [f"t{i}" for i in range(n)]
    plan = ComparisonPlan(SYSTEMS, candidates=("a", "b"), selection="soft", temperature=0.05, n_splits=2)
    masks = plan.split_masks(ids)
    Z = rng.random((n, len(SYSTEMS)))
    s = rng.uniform(0.5, 2.0, n)
    s[masks[0]] = 0.0  # no weight on S_1 (its complement E_1 keeps all of it)
    return plan, masks, Z, s


def test_empty_scoring_subset_gives_nan_selected_value_and_no_warning():
    plan, masks, Z, s = _case()
    mu = plan.tensor(Z, s, masks).mean(axis=0)
    c = plan.contrast_vector({SELECTED: 1.0, "base": -1.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning fails the test
        theta = plan.values(mu)
        grad = plan.gradient(mu, c)
        share = plan.min_split_share(mu)
        w = plan.selection_weights(mu)
    # fixed systems: the weighted means, computed independently
    np.testing.assert_allclose(theta[:3], (Z * s[:, None]).sum(0) / s.sum())
    assert np.isnan(theta[3])  # the selected pseudo-system is undefined: S_1 has no weight
    assert np.isnan(grad).any()
    assert share == 0.0  # the support check rejects it (min_split_share 0 < any threshold)
    assert np.isnan(w).all()


def test_zero_total_mass_gives_nan_everywhere_and_share_zero():
    plan, masks, Z, s = _case()
    mu = plan.tensor(Z, np.zeros_like(s), masks).mean(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        theta = plan.values(mu)
        share = plan.min_split_share(mu)
        grad = plan.gradient(mu, plan.contrast_vector({"a": 1.0, "base": -1.0}))
    assert np.isnan(theta).all() and share == 0.0 and np.isnan(grad[:3]).all()


def test_batched_rows_with_and_without_weight_match_row_by_row():
    """A bootstrap batch (B, p) where one resample drew no S_1 cluster: the other rows keep
    the values the plan gives them alone (the NaN stays in its row)."""
    plan, masks, Z, s = _case()
    s_full = np.random.default_rng(4).uniform(0.5, 2.0, len(s))
    mus = np.stack([plan.tensor(Z, s_full, masks).mean(0), plan.tensor(Z, s, masks).mean(0)])
    c = plan.contrast_vector({SELECTED: 1.0, "base": -1.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        theta = plan.values(mus)
        grad = plan.gradient(mus, c)
    np.testing.assert_allclose(theta[0], plan.values(mus[0]))
    np.testing.assert_allclose(grad[0], plan.gradient(mus[0], c))
    assert np.isfinite(theta[0]).all() and np.isnan(theta[1, 3])


@pytest.mark.parametrize("n_splits", [0, 3])
def test_positive_weights_are_unchanged_by_the_guard(n_splits):
    """With weight everywhere the guarded ratios equal plain division."""
    rng = np.random.default_rng(5)
    n = 30
    ids = [f"t{i}" for i in range(n)]
    plan = ComparisonPlan(SYSTEMS, candidates=("a", "b"), selection="soft", temperature=0.1, n_splits=n_splits)
    masks = plan.split_masks(ids) if n_splits else None
    Z, s = rng.random((n, 3)), rng.uniform(0.2, 1.0, n)
    theta = plan.values(plan.tensor(Z, s, masks).mean(0))
    np.testing.assert_allclose(theta[:3], np.average(Z, axis=0, weights=s))
    assert np.isfinite(theta).all()
