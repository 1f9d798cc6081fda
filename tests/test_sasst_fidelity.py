"""SASST fidelity to the paper: split denominators in discovery
feasibility (App. C.2), confirmation distances in the frozen discovery geometry (C.3),
statuses in Table 3's order, the soft selection the rules are tuned against, and
stability that reruns the slot on each resample. Every expected value is computed here
independently (brute force over candidates and resamples, hand-built softmax)."""

import numpy as np
import pandas as pd
import pytest

from agentstudies.sasst import SASST, STATUSES, ClusterData, ComparisonPlan, Slot, cluster_data
from agentstudies.sasst.geometry import KMS
from agentstudies.sasst.rules import FixedFamily, ThresholdFamily, ThresholdRule

SYSTEMS = ("ReAct", "PV", "Gate")


def _data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.array([f"t{i:03d}" for i in range(n)])
    Z = rng.random((n, 3)).round(1)
    X = rng.normal(size=(n, 3))
    return ClusterData(ids, Z, X, SYSTEMS, ("x0", "x1", "x2"), np.ones(n, int))


def _with_split_feature(data, plan):
    """Append the plan's split-1 membership as a feature ``in_s`` (1 in S_1, 0 in E_1)."""
    m = plan.split_masks(data.ids)[0].astype(float)
    return ClusterData(data.ids, data.Z, np.column_stack([data.X, m]), SYSTEMS,
                       data.feature_names + ("in_s",), data.n_seeds)


def test_statuses_follow_table_3_order():
    # SASST Table 3 lists: Confirmed, Not confirmed, Failed discovery, Failed feasibility, Abstained
    assert STATUSES == ("confirmed", "not confirmed", "failed discovery", "failed feasibility", "abstained")


@pytest.mark.parametrize("mode", ["refit", "fixed"])
def test_a_rule_that_starves_a_split_is_never_frozen(mode):
    plan = ComparisonPlan(SYSTEMS, candidates=("PV", "Gate"), selection="soft", n_splits=1)
    data = _with_split_feature(_data(), plan)
    d = np.arange(80) < 40
    D = data.subset(d)
    starve = ThresholdRule(columns=("in_s",), threshold=0.5, above=True, lift=50.0)  # ~1/51 of mass in E_1
    mild = ThresholdRule(columns=("x0",), threshold=0.0, above=True, lift=2.0)
    # a huge tolerance ties every candidate: registry order would pick ``starve`` first
    slot = dict(contrast={"selected": 1, "ReAct": -1}, family="reg", radius=None, density_cap=100,
                min_ess=5, tolerance=1e9, min_split_share=0.2)
    eng = SASST(plan, [Slot("s", **slot)], {"reg": FixedFamily((starve, mild))}, n_stability=5,
                stability_mode=mode)
    fr = eng.discover(D).rules["s"]
    # brute-force split shares on D
    m = plan.split_masks(D.ids)[0]
    for k, r in enumerate((starve, mild)):
        s = r.score(D.X[:, [D.feature_names.index(c) for c in r.columns]])
        want = min(s[m].sum(), s[~m].sum()) / s.sum()
        assert fr.candidates["min_split_share"].iloc[k] == pytest.approx(want, rel=1e-12)
    assert fr.candidates["min_split_share"].iloc[0] < 0.2 <= fr.candidates["min_split_share"].iloc[1]
    assert fr.index == 1 and fr.rule is mild and fr.n_feasible == 1
    # only the starving rule: failed discovery, not a frozen infeasible rule
    eng2 = SASST(plan, [Slot("s", **slot)], {"reg": FixedFamily((starve,))}, n_stability=5)
    rep = eng2.confirm(eng2.discover(D), data.subset(~d))
    assert eng2.discover(D).rules["s"].rule is None
    assert rep.table.loc["s", "status"] == "failed discovery"


def test_confirmation_distance_uses_the_frozen_discovery_geometry_and_leaves_user_objects_alone():
    rng = np.random.default_rng(3)
    ids = [f"t{i:03d}" for i in range(80)]
    X = rng.normal(size=(80, 3))
    X[40:] = 3.0 * X[40:] + 1.0  # confirmation features on another scale
    rows = [(t, 0, w, float(rng.random() < 0.4)) for t in ids for w in SYSTEMS]
    ep = pd.DataFrame(rows, columns=["task_id", "seed", "workflow", "score"])
    feats = pd.DataFrame(X, index=ids, columns=["x0", "x1", "x2"])
    split = pd.Series(["discovery"] * 40 + ["confirmation"] * 40, index=ids)
    user_geom = KMS(n_witness=8, n_features=32, seed=4)
    slot = Slot("s", {"PV": 1, "ReAct": -1}, family="thr", radius=10.0, geometry="mine", min_ess=5)
    eng = SASST(ComparisonPlan(SYSTEMS), [slot], {"thr": ThresholdFamily(quantiles=(0.5,))},
                geometries={"mine": user_geom}, n_stability=0)
    rep = eng.run(ep, feats, split)
    # the user's object is never fitted in place
    assert user_geom.standardizer is None and user_geom.omega is None and user_geom.witnesses is None
    # reference: a fresh KMS with the same settings fitted on the discovery features only
    ref = KMS(n_witness=8, n_features=32, seed=4).fit(X[:40])
    rule = rep.discovery.rules["s"].rule
    s = rule.score(X[40:, [["x0", "x1", "x2"].index(c) for c in rule.columns]])
    want = ref.distance(X[40:], np.full(40, 1 / 40), (s / s.sum())[None])[0]
    assert rep.table.loc["s", "confirmation_distance"] == pytest.approx(want, rel=1e-12)
    refit_on_i = KMS(n_witness=8, n_features=32, seed=4).fit(X[40:])
    assert abs(refit_on_i.distance(X[40:], np.full(40, 1 / 40), (s / s.sum())[None])[0] - want) > 1e-6


def test_soft_selection_is_the_cross_fitted_softmax_beside_the_hard_argmax():
    plan = ComparisonPlan(SYSTEMS, candidates=("PV", "Gate"), selection="soft", temperature=0.05, n_splits=2)
    data = _data(seed=1).subset(np.arange(80) < 40)
    eng = SASST(plan, [Slot("u", {"PV": 1, "ReAct": -1}, sign=1)], {}, n_stability=0)
    disc = eng.discover(data)
    masks = plan.split_masks(data.ids)
    want = np.zeros(2)
    for m in masks:
        sc = data.Z[m][:, [1, 2]].mean(axis=0) / 0.05
        want += np.exp(sc - sc.max()) / np.exp(sc - sc.max()).sum() / len(masks)
    assert [disc.soft_selection["PV"], disc.soft_selection["Gate"]] == pytest.approx(want, rel=1e-10)
    hard = "PV" if data.Z[:, 1].mean() >= data.Z[:, 2].mean() else "Gate"
    assert disc.selected_system == hard


def test_stability_refit_reruns_the_family_on_each_resample():
    # brute force: rerun discovery (family refit, Eq. 2 argmin) on each bootstrap resample
    from agentstudies.parallel import keyed_seed
    from agentstudies.sasst.rules import top_set_jaccard
    from agentstudies.stats import bootstrap_counts

    data = _data(n=40, seed=2)
    Z = data.Z.copy()
    Z[:, 1] += 0.5 * (data.X[:, 0] > 0)
    data = ClusterData(data.ids, Z, data.X, SYSTEMS, data.feature_names, data.n_seeds)
    fam = ThresholdFamily(quantiles=(0.25, 0.5, 0.75))
    slot = Slot("s", {"PV": 1, "ReAct": -1}, family="thr", radius=None, min_ess=5, density_cap=10,
                min_split_share=0.0)
    B = 12
    got = {}
    for mode in ("refit", "fixed"):
        eng = SASST(ComparisonPlan(SYSTEMS), [slot], {"thr": fam}, n_stability=B, stability_mode=mode, seed=9)
        got[mode] = eng.discover(data).rules["s"]
    fr = got["refit"]
    s0 = fr.rule.score(data.X[:, [data.feature_names.index(c) for c in fr.rule.columns]])
    counts = bootstrap_counts(40, B, np.random.default_rng(keyed_seed(9, "stability", 0)))
    diff = Z[:, 1] - Z[:, 0]
    jac, corr = [], []
    for m in counts:
        rows = np.repeat(np.arange(40), m)
        cands = fam.fit(data.X[rows], data.feature_names)
        best, best_s = np.inf, None
        for r in cands:  # linear plan: Eq. (2) is the exact weighted contrast on the resample
            s = r.score(data.X[:, [data.feature_names.index(c) for c in r.columns]])
            w = s * m / np.sum(s * m)
            ess, dens = 1 / np.sum(w**2), 40 * w.max()
            if ess >= 5 and dens <= 10 and np.sum(w * diff) < best - 1e-9:
                best, best_s = np.sum(w * diff), s
        jac.append(top_set_jaccard(s0, best_s, 0.25))
        corr.append(np.corrcoef(s0, best_s)[0, 1] if np.ptp(s0) and np.ptp(best_s) else float(not np.ptp(best_s)))
    assert fr.stability_jaccard == pytest.approx(np.mean(jac), abs=1e-12)
    assert fr.stability_correlation == pytest.approx(np.mean(corr), abs=1e-12)
    assert got["fixed"].rule.describe() == fr.rule.describe()


def test_quadratic_tilts_express_xor_and_the_disc_and_round_trip():
    from scipy.stats import rankdata

    from agentstudies.sasst.rules import QuadraticTiltFamily, rule_from_dict

    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3))
    rules = QuadraticTiltFamily(strengths=(1.0,)).fit(X, ["a", "b", "c"])
    assert len(rules) == 3 * 2 * 2  # 3 pairs x 2 forms x 2 signs

    def auc(y, s):  # Mann-Whitney from ranks
        r = rankdata(s)
        n1 = y.sum()
        return (r[y].sum() - n1 * (n1 + 1) / 2) / (n1 * (len(y) - n1))

    xor = X[:, 0] * X[:, 1] < -0.455
    disc = X[:, 0] ** 2 + X[:, 1] ** 2 < -2 * np.log(0.75)
    best_xor = max(auc(xor, r.score(X[:, [["a", "b", "c"].index(c) for c in r.columns]])) for r in rules)
    best_disc = max(auc(disc, r.score(X[:, [["a", "b", "c"].index(c) for c in r.columns]])) for r in rules)
    assert best_xor > 0.95 and best_disc > 0.95
    r = rules[5]
    back = rule_from_dict(r.to_json())
    np.testing.assert_array_equal(back.score(X[:, :2]), r.score(X[:, :2]))
    # bounded: density ratio at most exp(2 * strength * clip)
    s = r.score(X[:, :2])
    assert s.max() / s.min() <= np.exp(2 * 1.0 * 2.0) + 1e-9


def test_separated_table5_design_drops_every_artifact_on_the_high_x4_tercile():
    from scipy.stats import norm

    from agentstudies.studies.sasst import calibration as cal

    X = np.zeros((2, 8))
    X[1, 3] = 1.0  # x4 = 1 > Phi^{-1}(2/3) = 0.4307
    base = cal.StudyADesign().probit_index(X)
    sep = cal.StudyADesign(separated_stress=0.8).probit_index(X)
    np.testing.assert_allclose(sep[0], base[0])
    np.testing.assert_allclose(sep[1, 1:], base[1, 1:] - 0.8)
    assert sep[1, 0] == base[1, 0] == 0.0  # the baseline is untouched
    # population truth of the high-x4 tercile: the softmax over artifacts each dropped by d;
    # x1..x3 are independent of x4, so every artifact's tilted rate is E Phi(a_j(W) - d)
    des = cal.StudyADesign(separated_stress=0.8)
    terc = cal.population_contrasts(des, cal.population_means(des, "tercile", 2**16))
    labels = des.rule_labels("tercile")
    worst = int(np.argmin(terc))
    assert labels[worst] == "high tercile of x4"
    z = np.random.default_rng(0).standard_normal((400_000, 3))
    m = np.array([norm.cdf(0.40 - 0.35 * z[:, 0] - 0.8).mean(), norm.cdf(0.35 - 0.25 * (z[:, 1] ** 2 - 1) - 0.8).mean(),
                  norm.cdf(0.30 + 0.25 * z[:, 2] - 0.8).mean(), norm.cdf(0.25 - 0.8), norm.cdf(-0.8)])
    q = np.exp((m - m.max()) / 0.05)
    want = float(np.sum(q / q.sum() * m) - 0.5)
    assert terc[worst] == pytest.approx(want, abs=3e-3)
    assert np.sort(terc)[1] - terc[worst] > 0.15


def test_exact_multiplier_draws_have_the_cluster_multiplier_law():
    # Given phi, zeta @ stud is N(0, stud^T stud): check covariance, marginal quantiles
    # (z_{0.95}) and the two-sided reuse against cluster multipliers, by Monte Carlo.
    from scipy.stats import norm

    from agentstudies.studies.sasst._common import (
        coordinatewise_critical,
        exact_coordinatewise_critical,
        exact_multiplier_draws,
        studentized_contributions,
    )

    rng = np.random.default_rng(0)
    base = rng.normal(size=(300, 1))
    phi = np.column_stack([base[:, 0], base[:, 0] + 0.5 * rng.normal(size=300), rng.exponential(size=300)])
    stud, _ = studentized_contributions(phi, np.ones(3))
    G, keep = exact_multiplier_draws(phi, 200_000, np.random.default_rng(1))
    assert keep.all()
    np.testing.assert_allclose(np.cov(G.T, bias=True), stud.T @ stud, atol=0.01)
    np.testing.assert_allclose(np.quantile(G, 0.95, axis=0), norm.ppf(0.95), atol=0.02)
    signs = np.array([-1.0, 1.0, -1.0])
    up, lo = exact_coordinatewise_critical(phi, signs, 100_000, np.random.default_rng(2))
    zeta = np.random.default_rng(3).standard_normal((20_000, 300))
    np.testing.assert_allclose(up, coordinatewise_critical(phi, signs, zeta), atol=0.04)
    np.testing.assert_allclose(lo, coordinatewise_critical(phi, -signs, zeta), atol=0.04)


def test_exact_simultaneous_critical_matches_cluster_multipliers():
    from agentstudies.studies.sasst._common import exact_simultaneous_critical, simultaneous_critical

    rng = np.random.default_rng(4)
    phi = np.column_stack([rng.normal(size=400), rng.normal(size=400), rng.normal(size=400)])
    phi[:, 1] += phi[:, 0]
    signs = np.array([1.0, -1.0, 1.0])
    exact = exact_simultaneous_critical(phi, signs, 200_000, np.random.default_rng(5))
    cluster = simultaneous_critical(phi, signs, np.random.default_rng(6).standard_normal((20_000, 400)))
    assert exact == pytest.approx(cluster, abs=0.04)
    # independent slots: the Sidak quantile z_{0.95^{1/m}} (columns 0 and 2 are independent)
    ind = exact_simultaneous_critical(phi[:, [0, 2]], signs[[0, 2]], 400_000, np.random.default_rng(7))
    from scipy.stats import norm

    assert ind == pytest.approx(norm.ppf(0.95 ** 0.5), abs=0.03)
