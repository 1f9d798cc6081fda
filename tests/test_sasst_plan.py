"""The comparison plan: exact values and gradients (Lemma 2) against independent computations."""

import numpy as np
import pytest

from agentstudies.sasst import SELECTED, ComparisonPlan

SYSTEMS = ("base", "a", "b", "c")


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.random((n, len(SYSTEMS)))
    s = rng.uniform(0.3, 3.0, n)
    ids = [f"task{i}" for i in range(n)]
    return Z, s, ids


def _fd_grad(f, mu, eps=1e-6):
    g = np.zeros_like(mu)
    for j in range(mu.size):
        e = np.zeros_like(mu)
        e[j] = eps * max(1.0, abs(mu[j]))
        g[j] = (f(mu + e) - f(mu - e)) / (2 * e[j])
    return g


@pytest.mark.parametrize(
    "plan",
    [
        ComparisonPlan(SYSTEMS),
        ComparisonPlan(SYSTEMS, candidates=("a", "b", "c"), selection="soft", temperature=0.1),
        ComparisonPlan(SYSTEMS, candidates=("a", "b", "c"), selection="soft", temperature=0.05, n_splits=3),
        ComparisonPlan(SYSTEMS, candidates=("a", "b"), selection="hard", n_splits=2),
    ],
    ids=["no-selection", "soft-in-sample", "soft-3-splits", "hard-2-splits"],
)
def test_gradient_matches_finite_differences(plan):
    Z, s, ids = _data()
    H = plan.tensor(Z, s, plan.split_masks(ids))
    mu = H.mean(axis=0)
    contrast = {"a": 1.0, "base": -1.0}
    if plan.has_selection:
        contrast = {SELECTED: 1.0, "base": -1.0}
    c = plan.contrast_vector(contrast)
    grad = plan.gradient(mu, c)
    fd = _fd_grad(lambda m: c @ plan.values(m), mu)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


def test_values_are_the_exact_weighted_ratios():
    Z, s, ids = _data(seed=1)
    plan = ComparisonPlan(SYSTEMS, candidates=("a", "b"), selection="soft", temperature=0.05, n_splits=2)
    masks = plan.split_masks(ids)
    theta = plan.values(plan.tensor(Z, s, masks).mean(axis=0))
    np.testing.assert_allclose(theta[:4], np.average(Z, axis=0, weights=s))
    # selected system by hand: per split, softmax on the scoring half, evaluate on the other
    sel = 0.0
    for r in range(2):
        S = np.average(Z[masks[r]][:, 1:3], axis=0, weights=s[masks[r]])
        T = np.average(Z[~masks[r]][:, 1:3], axis=0, weights=s[~masks[r]])
        q = np.exp(S / 0.05) / np.exp(S / 0.05).sum()
        sel += q @ T / 2
    assert theta[4] == pytest.approx(sel)


def test_split_masks_are_balanced_deterministic_and_score_blind():
    plan = ComparisonPlan(SYSTEMS, candidates=("a",), selection="hard", n_splits=4, split_seed=3)
    ids = [f"t{i}" for i in range(41)]
    m1 = plan.split_masks(ids)
    m2 = plan.split_masks(list(reversed(ids)))[:, ::-1]
    np.testing.assert_array_equal(m1, m2)  # membership is a function of the id only
    assert (m1.sum(axis=1) == 20).all()
    assert len({tuple(r) for r in m1}) > 1  # splits differ


def test_unknown_contrast_system_is_named():
    plan = ComparisonPlan(SYSTEMS)
    with pytest.raises(ValueError, match="'zzz'"):
        plan.contrast_vector({"zzz": 1.0})
    with pytest.raises(ValueError, match="not among systems"):
        ComparisonPlan(SYSTEMS, candidates=("nope",), selection="soft")


def test_tensor_columns_follow_the_documented_layout():
    # H = [Z s, s, then per split r: cand * s 1{S_r}, s 1{S_r}, cand * s 1{E_r}, s 1{E_r}]
    Z, s, ids = _data(n=9, seed=2)
    plan = ComparisonPlan(SYSTEMS, candidates=("c", "a"), selection="soft", temperature=0.1, n_splits=3)
    masks = plan.split_masks(ids)
    H = plan.tensor(Z, s, masks)
    want = [Z[:, j] * s for j in range(4)] + [s]
    for r in range(3):
        for member in (masks[r], ~masks[r]):
            want += [Z[:, 3] * s * member, Z[:, 1] * s * member, s * member]
    np.testing.assert_array_equal(H, np.column_stack(want))


def test_batched_gradient_equals_the_gradient_of_each_row():
    Z, s, ids = _data(seed=3)
    plan = ComparisonPlan(SYSTEMS, candidates=("a", "b", "c"), selection="soft", temperature=0.05, n_splits=4)
    H = plan.tensor(Z, s, plan.split_masks(ids))
    rng = np.random.default_rng(0)
    mu = np.stack([rng.multinomial(len(H), np.full(len(H), 1 / len(H))) @ H / len(H) for _ in range(5)])
    c = plan.contrast_vector({SELECTED: 1.0, "base": -1.0})
    G = plan.gradient(mu, c)
    for b in range(5):
        np.testing.assert_allclose(G[b], _fd_grad(lambda m: c @ plan.values(m), mu[b]), rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(G[b], plan.gradient(mu[b], c))


def test_split_masks_do_not_depend_on_how_the_ids_are_held():
    plan = ComparisonPlan(SYSTEMS, candidates=("a",), selection="hard", n_splits=3, split_seed=5)
    ids = [f"k{i}" for i in range(30)]
    a = plan.split_masks(ids)
    b = plan.split_masks(np.array(ids))
    c = plan.split_masks(np.array(ids, dtype="<U12"))  # another width: another cache entry, same masks
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
