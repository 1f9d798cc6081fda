"""Planning tools: stressed-ESS power and the small-cluster coverage
check for a user's own N, family and effect size, against closed forms and brute force."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstudies.sasst.planning import coverage_check, family_ess, required_ess, stressed_power
from agentstudies.sasst.rules import ThresholdFamily, ThresholdRule


def test_family_ess_matches_the_closed_form_of_a_two_level_rule():
    x = np.arange(100, dtype=float)
    f = pd.DataFrame({"x": x})
    t = family_ess(ThresholdFamily(quantiles=(0.5,), lifts=(3.0,)), f)
    # x3 on 50 tasks, 1 on 50: w = (3, 1) / 200; ESS = 1 / (50 (3/200)^2 + 50 (1/200)^2) = 80
    assert t["ess"].to_numpy() == pytest.approx([80.0, 80.0])
    assert t["max_density"].to_numpy() == pytest.approx([1.5, 1.5])
    assert t["ess_share"].to_numpy() == pytest.approx([0.8, 0.8])


def test_stressed_power_closed_form_and_monte_carlo():
    # Gaussian critical value: power = Phi(|delta| sqrt(ess) / sigma - z_{1 - alpha/m})
    got = stressed_power(-0.1, 0.5, 100, level=0.95, n_slots=2, method="gaussian")
    assert got == pytest.approx(stats.norm.cdf(0.1 * 10 / 0.5 - stats.norm.ppf(1 - 0.025)))
    # Bonferroni-t: Monte Carlo with normal cluster contrasts and uniform weights (ess = N)
    rng = np.random.default_rng(1)
    N, delta, sigma = 60, -0.12, 0.5
    d = rng.normal(delta, sigma, size=(20000, N))
    c = stats.t.ppf(1 - 0.05 / 3, N - 1)
    ub = d.mean(1) + c * d.std(1, ddof=0) / np.sqrt(N)
    mc = float((ub < 0).mean())
    pw = stressed_power(delta, sigma, N, n_slots=3)
    assert abs(pw - mc) < 4 * np.sqrt(mc * (1 - mc) / 20000) + 0.01
    # required ESS inverts the Gaussian power
    e = required_ess(-0.1, 0.5, power=0.8, n_slots=2)
    assert stressed_power(-0.1, 0.5, e, n_slots=2, method="gaussian") == pytest.approx(0.8, abs=1e-9)
    with pytest.raises(ValueError):
        stressed_power(0.1, 0.0, 10)


def test_coverage_check_brute_force_and_nominal_at_large_n():
    rng = np.random.default_rng(2)
    f = pd.DataFrame({"x": rng.normal(size=50)})
    p = np.column_stack([np.full(50, 0.3), np.where(f["x"] > 0, 0.2, 0.4)])  # system 1 fragile where x > 0
    rule = ThresholdRule(columns=("x",), threshold=0.0, above=True, lift=3.0)
    res = coverage_check(rule, f, p, n_clusters=30, contrast=(1, 0), n_trials=200, seed=4)
    # brute force: the same draws trial by trial
    s_pool = rule.score(f[["x"]].to_numpy())
    truth = np.sum(s_pool * (p[:, 1] - p[:, 0])) / s_pool.sum()
    assert res.truth == pytest.approx(truth)
    g = np.random.default_rng(np.random.SeedSequence(4))
    idx = g.integers(0, 50, size=(200, 30))
    ya, yb = g.binomial(1, p[idx, 1]), g.binomial(1, p[idx, 0])
    cov = 0
    c = stats.t.ppf(0.95, 29)
    for t in range(200):
        s, dd = s_pool[idx[t]], (ya[t] - yb[t]).astype(float)
        est = np.sum(s * dd) / s.sum()
        phi = s * (dd - est) / s.mean()
        cov += truth <= est + c * np.sqrt(np.mean(phi**2) / 30) + 1e-12
    assert res.coverage == pytest.approx(cov / 200)
    # a large N with many trials covers at about the nominal level
    big = coverage_check(rule, f, p, n_clusters=400, n_trials=4000, seed=5)
    assert big.ci_low <= 0.95 + 0.01 and big.ci_high >= 0.95 - 0.01
