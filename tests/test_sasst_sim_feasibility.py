"""Study C (SASST D.5): the settings' support properties in closed form, the recorded
checks on hand-made report rows, and short engine runs of each setting."""

import numpy as np
import pandas as pd
import pytest

from scipy import stats

from agentstudies.sasst import Slot
from agentstudies.sasst.geometry import support_constraints
from agentstudies.sasst.planning import family_ess
from agentstudies.sasst.rules import rule_scores
from agentstudies.studies.sasst import feasibility as fz
from agentstudies.studies.sasst.tables import FeasibilityResult


def _ess_density(n, k, lift):
    """Closed forms for a threshold rule with ``lift`` on ``k`` of ``n`` tasks."""
    tot = k * lift + (n - k)
    return tot**2 / (k * lift**2 + (n - k)), n * lift / tot


CFG = fz.FeasibilityConfig()
SLOT = Slot("stress", {"candidate": 1, "baseline": -1}, family="registry", radius=None,
            density_cap=CFG.density_cap, min_ess=CFG.min_ess, min_split_share=CFG.min_split_share)


def _with_flags(column, k, n=100, seed=0):
    X = fz.feasibility_features(n, np.random.default_rng(seed))
    X[column] = (np.arange(n) < k).astype(float)
    return X


def _row(table, needle):
    hits = table[table["rule"].str.contains(needle, regex=False)]
    assert len(hits) == 1, (needle, list(table["rule"]))
    return hits.iloc[0]


def test_severe_concentration_registry_fails_both_checks_for_every_plausible_count():
    # the setting's own registry scored by the engine's rule code on 100 discovery tasks
    # with k of them flagged; rare flag share 0.04: k = 1..15 covers P > 0.999 of k >= 1
    for k in range(1, 16):
        tab = family_ess(fz.setting_registry("severe_concentration"), _with_flags("rare_a", k))
        r = _row(tab, "rare_a")
        ess, dens = _ess_density(100, k, 60.0)
        assert r["ess"] == pytest.approx(ess, rel=1e-12) and r["max_density"] == pytest.approx(dens, rel=1e-12)
        held = support_constraints(SLOT, r["ess"], r["max_density"])
        assert not held["ess"] and not held["max_density"], k


def test_density_only_registry_fails_density_while_ess_passes():
    for k in range(1, 11):  # minor flag share 0.03: k <= 10 has probability > 0.999
        r = _row(family_ess(fz.setting_registry("density_only"), _with_flags("minor_a", k)), "minor_a")
        ess, dens = _ess_density(100, k, 10.0)
        assert r["ess"] == pytest.approx(ess, rel=1e-12) and r["max_density"] == pytest.approx(dens, rel=1e-12)
        held = support_constraints(SLOT, r["ess"], r["max_density"])
        assert not held["max_density"] and held["ess"], k


def test_split_support_registry_fails_only_the_split_share():
    # batch = S_1 of the plan's first split; the rule lifting batch = 0 by 8 leaves S_1 with
    # n1 / (n1 + 8 n0) of the mass (1/9 for balanced halves), below the 0.2 minimum, while
    # its ESS and density pass
    plan = fz.setting_plan("split_support_only")
    n = 100
    ids = np.array([f"c0000_{i:04d}" for i in range(n)])
    X = fz.feasibility_features(n, np.random.default_rng(3))
    X["batch"] = fz.batch_flags(ids, plan)
    n1 = int(X["batch"].sum())
    assert 0 < n1 < n
    rules = fz.setting_registry("split_support_only").fit(X.to_numpy(float), list(X.columns))
    low = [r for r in rules if not r.above][0]  # lift on batch = 0
    s = rule_scores(low, X.to_numpy(float), list(X.columns))
    mu = plan.tensor(np.random.default_rng(4).random((n, 3)), s, plan.split_masks(ids)).mean(axis=0)
    share = n1 / (n1 + 8.0 * (n - n1))
    assert plan.min_split_share(mu) == pytest.approx(share, rel=1e-12)
    ess, dens = _ess_density(n, n - n1, 8.0)
    held = support_constraints(SLOT, ess, dens, split_share=plan.min_split_share(mu))
    assert held["ess"] and held["max_density"] and not held["min_split_share"]


def test_stable_tilt_registry_stays_below_the_density_cap():
    # strength lam, clip 2, N(0, 1) features: max ratio -> exp(2 lam) / E[exp(lam clip(u, -2, 2))],
    # E = exp(lam^2 / 2) (Phi(2 - lam) - Phi(-2 - lam)) + (exp(2 lam) + exp(-2 lam)) Phi(-2)
    n = 20_000
    X = fz.feasibility_features(n, np.random.default_rng(0))
    tab = family_ess(fz.setting_registry("stable_positive_rule"), X)
    for lam in fz.TILT_STRENGTHS:
        Phi = stats.norm.cdf
        E = (np.exp(lam**2 / 2) * (Phi(2 - lam) - Phi(-2 - lam))
             + (np.exp(2 * lam) + np.exp(-2 * lam)) * Phi(-2))
        limit = np.exp(2 * lam) / E
        # Monte-Carlo error of the sample mean in the denominator (relative SE
        # sd(exp(lam clip u)) / (E sqrt(n)), about 0.5 %): 4 SE, plus 1 % for the feature
        # standardization estimated on the same sample
        c = np.clip(X[["x1", "x2", "x3", "x4"]].to_numpy(), -2, 2)
        rel = np.exp(lam * c).std() / (E * np.sqrt(n))
        got = tab.loc[tab["rule"].str.startswith(f"tilt exp({lam:g} "), "max_density"].to_numpy()
        assert len(got) == 8
        np.testing.assert_allclose(got, limit, rtol=4 * rel + 0.01)
        assert support_constraints(SLOT, np.full(8, np.inf), got)["max_density"].all()


def test_planted_probabilities_and_null_setting():
    X = fz.feasibility_features(10, np.random.default_rng(1))
    X.loc[:, "x1"] = [2, -2, 2, -2, 0, 0, 0, 0, 0, 0]
    X.loc[:, "x2"] = [2, 2, -2, -2, 0, 0, 0, 0, 0, 0]
    X.loc[:, "rare_a"] = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    p = fz.planted_probabilities("near_tied_rules", X)
    np.testing.assert_allclose(p[:4, 1], [0.0, 0.3, 0.3, 0.6])
    p = fz.planted_probabilities("stable_positive_rule", X)
    np.testing.assert_allclose(p[:4, 1], [0.1, 0.6, 0.1, 0.6])
    p = fz.planted_probabilities("severe_concentration", X)
    np.testing.assert_allclose(p[:2, 1], [0.1, 0.6])
    # split_support_only is null: both workflows have the same constant advantage
    p = fz.planted_probabilities("split_support_only", X)
    assert np.ptp(p[:, 1] - p[:, 0]) == 0 and np.ptp(p[:, 2] - p[:, 0]) == 0
    with pytest.raises(ValueError, match="unknown setting"):
        fz.planted_probabilities("nope", X)


def test_recorded_checks_hand_worked():
    slot = Slot("stress", {"candidate": 1, "baseline": -1}, family="r", radius=None)
    cands = pd.DataFrame({"predicted": [0.1, -0.2, 0.0], "ess": [50.0, 8.0, 30.0],
                          "max_density": [2.0, 9.0, 6.0], "distance": [0.0, 0.0, 0.0]})
    row = pd.Series({"status": "failed discovery"})
    assert fz.recorded_checks(row, cands, slot) == ("discovery", "ESS + density")
    row = pd.Series({"status": "failed feasibility", "ess": 30.0, "max_density": 3.0, "min_split_share": 0.11})
    assert fz.recorded_checks(row, None, slot) == ("confirmation", "split support")
    row = pd.Series({"status": "failed feasibility", "ess": 30.0, "max_density": 6.0, "min_split_share": 0.5})
    assert fz.recorded_checks(row, None, slot) == ("confirmation", "density")
    assert fz.recorded_checks(pd.Series({"status": "abstained"}), None, slot) == ("stability", "stability")
    assert fz.recorded_checks(pd.Series({"status": "confirmed"}), None, slot) == ("passed", "none")


def test_short_runs_record_the_intended_checks_and_ignore_n_jobs():
    cfg = fz.FeasibilityConfig(n_stability=10, n_draws=200)
    settings = ("severe_concentration", "density_only", "split_support_only")
    a = fz.run_feasibility(cfg, 3, seed=4, settings=settings)
    b = fz.run_feasibility(cfg, 3, seed=4, settings=settings, n_jobs=2, backend="threading")
    pd.testing.assert_frame_equal(a, b)
    sev = a[a.setting == "severe_concentration"]
    assert sev["status"].isin(["failed discovery", "failed feasibility"]).all()
    assert (sev["checks"] == "ESS + density").all()
    assert (a[a.setting == "density_only"]["checks"] == "density").all()
    split = a[a.setting == "split_support_only"]
    # split denominators are a discovery constraint (App. C.2): no rule is frozen
    assert (split["status"] == "failed discovery").all() and (split["checks"] == "split support").all()
    # batch coincides with S_1 on the discovery side: a x8 lift keeps (n/2) / (9 n/2) = 1/9 in E_1
    np.testing.assert_allclose(split["min_split_share"], 1 / 9)
    assert split["reason"].str.contains("no candidate met the discovery constraints").all()
    t = FeasibilityResult(a).table(11)
    assert t.set_index("setting").loc["split_support_only", "abstention_or_failure"] == 1.0


def test_same_seed_sequence_twice_gives_the_same_table():
    cfg = fz.FeasibilityConfig(n_stability=5, n_draws=100)
    ss = np.random.SeedSequence(9)
    a = fz.run_feasibility(cfg, 1, seed=ss, settings=("stable_positive_rule",))
    b = fz.run_feasibility(cfg, 1, seed=ss, settings=("stable_positive_rule",))
    pd.testing.assert_frame_equal(a, b)
