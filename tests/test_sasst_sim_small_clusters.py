"""Small-cluster audit, power designs and positive control (studies.sasst.small_clusters)
against independent computations on the τ²-bench feature table (pandas by hand, scipy)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstudies.envs.tau import task_features
from agentstudies.studies.sasst import small_clusters as S
from agentstudies.studies.sasst._common import latent_probit_scores
from agentstudies.studies.sasst.tables import SmallClusterResult
from agentstudies.parallel import seeded_map

RADII = (0.012, 0.018, 0.04)


@pytest.fixture(scope="module")
def pool():
    return S.load_pool()


@pytest.fixture(scope="module")
def feats():
    return task_features(None, text_encoder=None)


@pytest.fixture(scope="module")
def rules(pool):
    return S.registry(pool)


def test_pool_and_registry_follow_the_feature_table(pool, rules, feats):
    assert len(pool) == 164 and pool.X.shape == (164, 24)
    np.testing.assert_array_equal(pool.column("n_write_actions"), feats["n_write_actions"].to_numpy())
    np.testing.assert_array_equal(pool.column("airline"), (feats["domain"] == "airline").to_numpy(float))
    assert len(rules) == 32
    t = rules[S.target_index(rules)]
    assert (t.columns, t.threshold, t.above, t.lift) == (("n_write_actions",), 1.0, True, 5.0)


@pytest.mark.parametrize("name", S.NULL_SETTINGS)
def test_null_settings_have_zero_effect_under_every_rule(pool, rules, name):
    setting = S.null_setting(name, pool)
    truth = S.pool_truths(pool, rules, setting, S._F_CONTRASTS)
    for contrast, values in truth.items():
        np.testing.assert_allclose(values, 0.0, atol=1e-15, err_msg=f"{name}: {contrast}")
    # and the simulated workflows really have the same success rates (direct Monte Carlo)
    rng = np.random.default_rng(1)
    tasks = rng.integers(0, 164, 60_000)
    Z = latent_probit_scores(setting.p[tasks], setting.rho, 2, rng)
    se = np.sqrt(np.var(Z[:, 1] - Z[:, 0]) / len(Z))
    assert abs(np.mean(Z[:, 1] - Z[:, 0])) < 4 * se + 1e-12
    assert Z.mean() == pytest.approx(setting.p.mean(), abs=0.01)


def test_floor_setting_by_hand(pool, feats):
    p = S.null_setting("floor", pool).p[:, 0]
    want = np.where(feats["n_actions"].to_numpy() > 4, 0.0, 0.35)
    np.testing.assert_array_equal(p, want)


def test_pool_truth_equals_weighted_average_by_hand(pool, rules, feats):
    setting = S.positive_control_setting(pool)
    truth = S.pool_truths(pool, rules, setting, {"PV - ReAct": {"PV": 1, "ReAct": -1}})["PV - ReAct"]
    # the target rule, by hand on the feature table: weight 5 where n_write_actions > 1
    multi = feats["n_write_actions"].to_numpy() > 1
    s = np.where(multi, 5.0, 1.0)
    d = np.where(multi, 0.05, 0.55) - 0.30
    assert truth[S.target_index(rules)] == pytest.approx(np.sum(s * d) / np.sum(s))
    # a below-median rule on scenario_words with lift 2
    med = feats["scenario_words"].median()
    s2 = np.where(feats["scenario_words"].to_numpy() <= med, 2.0, 1.0)
    idx = [i for i, r in enumerate(rules) if r.columns == ("scenario_words",) and not r.above and r.lift == 2.0][0]
    assert truth[idx] == pytest.approx(np.sum(s2 * d) / np.sum(s2))


def test_planted_target_is_the_population_minimizer(pool, rules):
    setting = S.positive_control_setting(pool)
    pv = S.pool_truths(pool, rules, setting, {"pv": {"PV": 1, "ReAct": -1}})["pv"]
    assert int(np.argmin(pv)) == S.target_index(rules)
    # PV still wins on average (it is the workflow discovery should select)
    assert (setting.p[:, 1] - setting.p[:, 0]).mean() > 0.05
    null = S.positive_control_setting(pool, planted=False)
    assert np.all(null.p == 0.30)


@pytest.mark.parametrize("n,ess", [(40, 20), (80, 20), (200, 40), (200, 100)])
def test_power_design_truth_and_support(pool, n, ess):
    design = S.PowerDesign(n, ess)
    k = design.subgroup_size(len(pool))
    g = S._subgroup(pool, k)
    # the subgroup is the k longest scenarios, and the threshold rule reproduces it
    assert g.sum() == k and pool.scenario_chars[g].min() > pool.scenario_chars[~g].max()
    rules = S._planted_rules(pool, design)
    np.testing.assert_array_equal(rules["r3"].score(pool.scenario_chars[:, None]) > 0, g)
    # truth under the design mixture (share ess/n on G): r3 is the subgroup contrast -0.10
    f = design.share
    pi = np.where(g, f / k, (1 - f) / (len(pool) - k))
    p = np.full((len(pool), 3), 0.25)
    p[g, 1] = 0.15
    d = p[:, 1] - p[:, 0]
    for lvl, lam in (("r1", 1 / 3), ("r2", 2 / 3), ("r3", 1.0)):
        # s = (1 - lam) + lam 1{G} / f has mean 1, so Delta = -0.10 ((1 - lam) f + lam)
        s = rules[lvl].score(pool.scenario_chars[:, None])
        assert np.sum(pi * s * d) / np.sum(pi * s) == pytest.approx(-0.10 * ((1 - lam) * f + lam))
    rec = S.power_trial(0, np.random.default_rng(0), pool=pool, design=design, n_draws=200)[0]
    assert rec["ess"] == pytest.approx(ess) and rec["max_density"] == pytest.approx(n / ess)
    assert rec["feasible"]
    # Bonferroni-t (t_{1-0.05/10, N-1}) is wider than the Gaussian maximum here
    assert rec["bound_bonferroni-t"] > rec["bound_gaussian"]


def test_excluded_design_density(pool):
    d = S.PowerDesign(200, 20)
    assert d.density == 10.0 > S.KAPPA
    assert len(pool) / d.subgroup_size(len(pool)) == pytest.approx(164 / 16)


def test_radii_are_deterministic_and_increasing(pool, rules):
    a = S.calibrate_radii(pool, rules, n_pilot=15)
    b = S.calibrate_radii(pool, rules, n_pilot=15)
    assert a == b and a[0] < a[1] < a[2]


def test_audit_trial_bounds_follow_their_definitions(pool, rules):
    setting = S.null_setting("flat", pool)
    kw = dict(pool=pool, setting=setting, rules=rules, radii=RADII, n_clusters=40, n_draws=400)
    a = S.audit_trial(0, np.random.default_rng(3), **kw)
    b = S.audit_trial(0, np.random.default_rng(3), **kw)
    pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b))
    df = pd.DataFrame(a).set_index("slot")
    assert len(df) == 10 and (df["sign"] == [1, 1, -1, -1, -1, -1, -1, -1, 1, 1]).all()
    ok = df[df["feasible"]]
    half_g = (ok["estimate"] - ok["bound_gaussian"]) * ok["sign"]
    half_b = (ok["estimate"] - ok["bound_bonferroni-t"]) * ok["sign"]
    half_h = (ok["estimate"] - ok["bound_hc1"]) * ok["sign"]
    half_t = (ok["estimate"] - ok["bound_t-scaled"]) * ok["sign"]
    nz = half_g > 0
    # HC1 inflates the SE by sqrt(N/(N-1)); t scaling multiplies the critical value
    np.testing.assert_allclose(half_h[nz] / half_g[nz], np.sqrt(40 / 39), rtol=1e-9)
    np.testing.assert_allclose(half_t[nz] / half_g[nz], stats.t.ppf(0.95, 39) / stats.norm.ppf(0.95), rtol=1e-9)
    # Bonferroni-t over the ten planned slots: ratio of critical values is common to all slots
    ratio = half_b[nz] / half_g[nz]
    np.testing.assert_allclose(ratio, ratio.iloc[0], rtol=1e-9)
    # slots sharing a discovery specification share the rule
    assert df.loc["r2: PV - ReAct", "rule_index"] == df.loc["control r2: Gate - PV", "rule_index"]
    # the t-quantile reading of "common t scaling": recovered from the recorded bounds, it
    # is est - eta t_39^{-1}(Phi(c)) se with se and c recomputed here from the contributions'
    # definition (Bonferroni-t half-width / its t critical value; Gaussian half-width / se)
    tq = S.t_quantile_bounds(df.reset_index(), n_clusters=40, n_slots=10).to_numpy()[df["feasible"].to_numpy()]
    se = half_b / stats.t.ppf(1 - 0.05 / 10, 39)
    c = half_g / se
    want = ok["estimate"] - ok["sign"] * stats.t.ppf(stats.norm.cdf(c), 39) * se
    np.testing.assert_allclose(tq[nz.to_numpy()], want[nz], rtol=1e-9)
    assert (stats.t.ppf(stats.norm.cdf(c[nz]), 39) / c[nz] > stats.t.ppf(0.95, 39) / stats.norm.ppf(0.95)).all()
    assert np.isnan(S.t_quantile_bounds(df.reset_index()).to_numpy()[~df["feasible"].to_numpy()]).all()


def _audit(i, rng, **kw):
    return S.audit_trial(i, rng, **kw)


def test_audit_results_do_not_depend_on_n_jobs(pool, rules):
    kw = dict(pool=pool, setting=S.null_setting("floor", pool), rules=rules, radii=RADII, n_clusters=40, n_draws=200)
    a = seeded_map(_audit, 3, seed=4, **kw)
    b = seeded_map(_audit, 3, seed=4, n_jobs=2, **kw)
    assert pd.DataFrame(sum(a, [])).equals(pd.DataFrame(sum(b, [])))


def test_table6_summary_counts_families(pool, rules):
    recs = []
    for t in range(2):
        for k, s in enumerate(S.study_f_slots(RADII)):
            rec = {"setting": "flat", "trial": t, "slot": s.name, "sign": s.sign, "rule_index": 0, "feasible": True,
                   "estimate": 0.0}
            for m in S.METHODS:
                rec[f"bound_{m}"] = -s.sign * 0.1
            if t == 1 and k == 3:
                rec["bound_gaussian"] = -0.01  # an upper bound below the truth 0: miscovers
            recs.append(rec)
    tab = SmallClusterResult(pool, rules, table6_records=pd.DataFrame(recs)).table(6).set_index("rule")
    assert tab.loc["gaussian", "familywise_coverage"] == 0.5
    assert tab.loc["bonferroni-t", "familywise_coverage"] == 1.0


def test_positive_control_trial_runs_the_full_protocol(pool, rules):
    recs = S.positive_control_trial(0, np.random.default_rng(2), pool=pool, setting=S.positive_control_setting(pool),
                                    rules=rules, radii=RADII, n_clusters=200, n_stability=5)
    df = pd.DataFrame(recs).set_index("slot")
    assert set(df["status"]) <= {"confirmed", "not confirmed", "abstained", "failed feasibility", "failed discovery"}
    assert df["supported"].dtype == bool
    assert (df.loc[df["status"] == "confirmed", "supported"]).all()
    one = pd.DataFrame([dict(r, trial=0) for r in recs])
    tab = SmallClusterResult(pool, rules, S.target_index(rules), null40=one, null200=one, control=one).table(8)
    assert list(tab["gate"])[2] == "Target rule discovery, N = 200" and set(tab["result"]) <= {"pass", "fail"}
    # a confirmed status needs a supporting band: the status-level error cannot exceed the band level
    assert (tab["status_level"].dropna() <= tab["value"].iloc[:2] + 1e-12).all()
