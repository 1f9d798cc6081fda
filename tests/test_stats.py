"""agentstudies.stats against independent computations."""

import numpy as np
import pytest
from scipy import stats

from agentstudies import stats as ast


# ----------------------------------------------------------------- ESS and density
def test_ess_and_density_hand_worked():
    # weights 1,1,2 -> w = (1/4, 1/4, 1/2); sum w^2 = 1/16+1/16+1/4 = 3/8 -> ESS = 8/3
    s = np.array([1.0, 1.0, 2.0])
    assert ast.effective_sample_size(s) == pytest.approx(8 / 3)
    # n * max w = 3 * 1/2
    assert ast.max_density_ratio(s) == pytest.approx(1.5)


def test_ess_density_limits_and_rows():
    n = 7
    uni = np.ones(n)
    point = np.zeros(n)
    point[3] = 5.0
    both = np.vstack([uni, point])
    np.testing.assert_allclose(ast.effective_sample_size(both), [n, 1.0])
    np.testing.assert_allclose(ast.max_density_ratio(both), [1.0, n])


@pytest.mark.parametrize("bad", [[1.0, np.nan], [1.0, -1.0], [0.0, 0.0], []])
def test_weights_reject_bad_scores(bad):
    with pytest.raises(ValueError):
        ast.normalized_weights(np.array(bad))


def test_weighted_ratio_matches_numpy_average():
    rng = np.random.default_rng(0)
    z = rng.random((30, 3))
    s = rng.random(30)
    np.testing.assert_allclose(ast.weighted_ratio(z, s), np.average(z, axis=0, weights=s))


# ------------------------------------------------------------- contributions (Lemma 2)
def _ratio_F(mu):
    # mu = (mean s*z1, mean s*z2, mean s); F = (mu0 - mu1) / mu2 (a paired contrast)
    return (mu[0] - mu[1]) / mu[2]


def _finite_difference_gradient(F, mu, eps=1e-6):
    g = np.zeros_like(mu)
    for j in range(mu.size):
        e = np.zeros_like(mu)
        e[j] = eps
        g[j] = (F(mu + e) - F(mu - e)) / (2 * eps)
    return g


def test_plugin_contributions_match_finite_differences():
    rng = np.random.default_rng(1)
    n = 50
    s = rng.uniform(0.5, 2.0, n)
    z = rng.integers(0, 2, (n, 2)).astype(float)
    H = np.column_stack([s * z[:, 0], s * z[:, 1], s])
    mu = H.mean(axis=0)
    grad_fd = _finite_difference_gradient(_ratio_F, mu)
    phi = ast.plugin_contributions(H, grad_fd)
    # the closed form of the weighted ratio contribution for the same contrast
    closed = ast.ratio_contributions(z[:, 0] - z[:, 1], s)
    np.testing.assert_allclose(phi, closed, atol=1e-7)
    assert abs(phi.sum()) < 1e-9


def test_ratio_contributions_linearize_the_estimator():
    # First-order expansion: F(mu + d) - F(mu) ~ grad . d for a small perturbation of
    # one cluster's weight; the contribution predicts the leave-in change.
    rng = np.random.default_rng(2)
    n = 200
    s = rng.uniform(0.5, 2.0, n)
    z = rng.random(n)
    theta = np.sum(s * z) / np.sum(s)
    phi = ast.ratio_contributions(z, s)
    eps = 1e-6
    k = 17
    s2 = s.copy()
    s2[k] *= 1 + eps  # tilt cluster k's weight
    theta2 = np.sum(s2 * z) / np.sum(s2)
    # d theta / d eps = s_k (z_k - theta) / sum s = phi_k / n
    assert (theta2 - theta) / eps == pytest.approx(phi[k] / n, rel=1e-4)


def test_contribution_se_equals_sd_over_root_n():
    rng = np.random.default_rng(3)
    phi = rng.normal(size=(40, 2))
    phi -= phi.mean(axis=0)
    np.testing.assert_allclose(ast.contribution_se(phi), phi.std(axis=0, ddof=0) / np.sqrt(40))
    np.testing.assert_allclose(
        ast.contribution_se(phi, hc1=True), phi.std(axis=0, ddof=1) / np.sqrt(40)
    )


# ------------------------------------------------------------ critical values
def test_bonferroni_t_matches_scipy():
    assert ast.bonferroni_t_critical(0.05, 10, 40) == pytest.approx(stats.t.ppf(1 - 0.005, 39))
    assert ast.bonferroni_t_critical(0.1, 1, 5) == pytest.approx(stats.t.ppf(0.9, 4))
    with pytest.raises(ValueError):
        ast.bonferroni_t_critical(0.05, 0, 40)
    with pytest.raises(ValueError):
        ast.bonferroni_t_critical(0.05, 3, 1)


def test_multiplier_single_slot_is_normal_quantile():
    rng = np.random.default_rng(4)
    phi = rng.normal(size=(400, 1))
    crit = ast.multiplier_critical_value(phi, level=0.95, n_draws=200_000, rng=5)
    # Monte-Carlo sd of a 0.95 quantile with B=2e5: sqrt(.95*.05/B)/pdf(1.645) ~ 0.0047
    assert crit == pytest.approx(stats.norm.ppf(0.95), abs=0.02)


def test_multiplier_independent_slots_is_sidak_quantile():
    rng = np.random.default_rng(6)
    m = 5
    # exactly orthogonal columns -> the multiplier vector has identity covariance
    q, _ = np.linalg.qr(rng.normal(size=(300, m)))
    phi = q - q.mean(axis=0)
    q2, _ = np.linalg.qr(phi)
    crit = ast.multiplier_critical_value(q2 * np.sqrt(300), level=0.95, n_draws=200_000, rng=7)
    sidak = stats.norm.ppf(0.95 ** (1 / m))
    assert crit == pytest.approx(sidak, abs=0.02)


def test_multiplier_signs_and_perfect_correlation():
    # Two identical columns with opposite signs: max(x, -x) = |x| -> two-sided quantile.
    rng = np.random.default_rng(8)
    col = rng.normal(size=(500, 1))
    phi = np.hstack([col, col])
    crit = ast.multiplier_critical_value(phi, signs=np.array([1, -1]), level=0.95,
                                         n_draws=200_000, rng=9)
    assert crit == pytest.approx(stats.norm.ppf(0.975), abs=0.02)
    same = ast.multiplier_critical_value(phi, signs=np.array([1, 1]), level=0.95,
                                         n_draws=200_000, rng=9)
    assert same == pytest.approx(stats.norm.ppf(0.95), abs=0.02)


def test_multiplier_maxima_are_the_draws_behind_the_critical_value():
    """multiplier_maxima (which replaced return_max=True) returns, per draw, the maximum of
    the signed studentized multiplier sums, computed here by hand with a degenerate slot
    dropped; its level quantile is multiplier_critical_value on the same multipliers."""
    rng = np.random.default_rng(31)
    n, b = 40, 500
    phi = np.column_stack([rng.normal(size=n), np.full(n, 2.0), rng.exponential(size=n)])
    signs = np.array([1.0, 1.0, -1.0])
    zeta = rng.standard_normal((b, n))
    maxima = ast.multiplier_maxima(phi, signs, zeta=zeta)
    by_hand = np.empty(b)
    cols = [0, 2]  # column 1 is constant: no variance, left out
    for d in range(b):
        sums = [signs[c] * np.sum(zeta[d] * (phi[:, c] - phi[:, c].mean()))
                / (np.sqrt(n) * phi[:, c].std()) for c in cols]
        by_hand[d] = max(sums)
    assert maxima.shape == (b,)
    np.testing.assert_allclose(maxima, by_hand, rtol=1e-12)
    crit = ast.multiplier_critical_value(phi, signs, level=0.9, zeta=zeta)
    assert isinstance(crit, float) and crit == pytest.approx(np.quantile(by_hand, 0.9), rel=1e-12)
    with pytest.raises(TypeError):
        ast.multiplier_critical_value(phi, signs, zeta=zeta, return_max=True)  # the flag is gone
    with pytest.raises(ValueError, match="zero contribution variance"):
        ast.multiplier_maxima(np.ones((10, 2)), zeta=zeta[:, :10])


def test_multiplier_rejects_all_degenerate():
    with pytest.raises(ValueError, match="zero contribution variance"):
        ast.multiplier_critical_value(np.zeros((10, 2)))


def test_joint_bounds_signed_and_supports():
    rng = np.random.default_rng(10)
    phi = rng.normal(size=(40, 2))
    phi -= phi.mean(axis=0)
    est = np.array([0.3, -0.3])
    jb = ast.joint_bounds(phi, est, np.array([1, -1]), method="bonferroni-t", n_slots=10)
    se = phi.std(axis=0) / np.sqrt(40)
    c = stats.t.ppf(1 - 0.05 / 10, 39)
    np.testing.assert_allclose(jb.bound, [0.3 - c * se[0], -0.3 + c * se[1]])
    np.testing.assert_array_equal(jb.supports(0.0), [0.3 - c * se[0] > 0, -0.3 + c * se[1] < 0])


def test_t_scaled_is_gaussian_times_ratio():
    rng = np.random.default_rng(11)
    phi = rng.normal(size=(40, 3))
    zeta = ast.multiplier_draws(40, 5000, 12)
    g = ast.joint_bounds(phi, np.zeros(3), np.ones(3), method="gaussian", zeta=zeta)
    t = ast.joint_bounds(phi, np.zeros(3), np.ones(3), method="t-scaled", zeta=zeta)
    assert t.critical == pytest.approx(g.critical * stats.t.ppf(0.95, 39) / stats.norm.ppf(0.95))


# --------------------------------------------------------------------- bootstrap
def test_bootstrap_counts_rows_and_strata():
    strata = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    counts = ast.bootstrap_counts(9, 500, rng=0, strata=strata)
    assert counts.shape == (500, 9)
    for lab in np.unique(strata):
        np.testing.assert_array_equal(counts[:, strata == lab].sum(axis=1), (strata == lab).sum())


def test_paired_bootstrap_equals_loop_with_same_indices():
    rng = np.random.default_rng(13)
    n = 25
    sums = np.column_stack([rng.integers(0, 4, n), np.full(n, 4)]).astype(float)
    reps = ast.paired_cluster_bootstrap(sums, lambda t: t[:, 0] / t[:, 1], n_draws=300, rng=14)
    counts = ast.bootstrap_counts(n, 300, rng=np.random.default_rng(14))
    loop = []
    for row in counts:
        idx = np.repeat(np.arange(n), row)  # the resampled clusters, explicitly
        loop.append(sums[idx, 0].sum() / sums[idx, 1].sum())
    np.testing.assert_allclose(reps, loop)
    lo, hi = ast.percentile_interval(reps)
    assert lo == pytest.approx(np.quantile(loop, 0.025)) and hi == pytest.approx(np.quantile(loop, 0.975))


def test_exact_multiplier_law_matches_cluster_multipliers():
    # Conditional on the data both draw N(0, Sigma_hat): their quantiles agree within MC error.
    rng = np.random.default_rng(20)
    base = rng.normal(size=(300, 1))
    phi = np.hstack([base + 0.5 * rng.normal(size=(300, 1)) for _ in range(4)])
    signs = np.array([1, -1, 1, 1])
    lit = ast.multiplier_critical_value(phi, signs, n_draws=100_000, rng=21)
    ex = ast.multiplier_critical_value(phi, signs, n_draws=100_000, rng=22, exact=True)
    assert ex == pytest.approx(lit, abs=0.03)
