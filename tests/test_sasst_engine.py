"""SASST engine: geometry, statuses, discovery, confirmation and input errors, checked
against direct computations (scipy, numpy, hand-worked tables)."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.stats import wasserstein_distance

from agentstudies.sasst import SASST, ClusterData, ComparisonPlan, Slot
from agentstudies.sasst.geometry import KMS, MMD, MaxSliced
from agentstudies.sasst.rules import (
    AxisTiltFamily,
    CompositeFamily,
    DirectionTiltFamily,
    FixedFamily,
    ThresholdFamily,
    ThresholdRule,
    rule_from_dict,
)
from agentstudies.sasst.statuses import slot_status
from agentstudies.sasst.geometry import weighted_w1_same_support
from agentstudies.sasst.rules import top_set_jaccard, weight_correlation

SYSTEMS = ("ReAct", "PV", "Gate")


# ------------------------------------------------------------------------ geometry
def test_w1_same_support_matches_scipy():
    rng = np.random.default_rng(0)
    n = 30
    proj = rng.normal(size=(4, n))
    u = np.full(n, 1 / n)
    w = rng.random((3, n))
    w /= w.sum(axis=1, keepdims=True)
    got = weighted_w1_same_support(proj, u, w)
    for g in range(3):
        for l in range(4):
            want = wasserstein_distance(proj[l], proj[l], u_weights=u, v_weights=w[g])
            assert got[g, l] == pytest.approx(want, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("geom_cls", [KMS, MaxSliced])
def test_sliced_distances_are_max_over_witnesses_of_scipy_w1(geom_cls):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 5))
    geom = geom_cls(n_witness=8, seed=3).fit(X)
    P = geom.projections(X)
    u = np.full(50, 1 / 50)
    w = rng.random((2, 50))
    w /= w.sum(axis=1, keepdims=True)
    got = geom.distance(X, u, w)
    for g in range(2):
        want = max(wasserstein_distance(p, p, u_weights=u, v_weights=w[g]) for p in P)
        assert got[g] == pytest.approx(want, rel=1e-10)
    if geom_cls is MaxSliced:
        # the coordinate axes are witnesses: the distance dominates each standardized axis
        Xs = (X - X.mean(0)) / X.std(0)
        for j in range(5):
            assert got[0] >= wasserstein_distance(Xs[:, j], Xs[:, j], u, w[0]) - 1e-12


def test_mmd_matches_direct_double_sum():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(25, 3))
    geom = MMD(bandwidth=1.3).fit(X)
    Xs = (X - X.mean(0)) / X.std(0)
    u = np.full(25, 1 / 25)
    w = rng.random(25)
    w /= w.sum()
    k = lambda a, b: np.exp(-np.sum((a - b) ** 2) / (2 * 1.3**2))  # noqa: E731
    d = u - w
    mmd2 = sum(d[i] * d[j] * k(Xs[i], Xs[j]) for i in range(25) for j in range(25))
    assert geom.distance(X, u, w[None])[0] == pytest.approx(np.sqrt(mmd2), rel=1e-9)
    assert geom.distance(X, u, u[None])[0] == pytest.approx(0.0, abs=1e-9)


def test_stability_metrics_hand_worked():
    a = np.array([1, 2, 3, 4, 5, 6, 7, 8.0])
    b = np.array([8, 7, 6, 5, 4, 3, 2, 1.0])
    assert weight_correlation(a, a) == pytest.approx(1.0)
    assert weight_correlation(a, b) == pytest.approx(-1.0)
    assert weight_correlation(np.ones(8), np.ones(8)) == 1.0
    assert weight_correlation(np.ones(8), a) == 0.0
    # top 25% of 8 -> 2 items: {6,7} vs {0,1}: disjoint; vs itself: 1
    assert top_set_jaccard(a, b, 0.25) == 0.0
    assert top_set_jaccard(a, a, 0.25) == 1.0
    c = np.array([1, 2, 3, 4, 5, 6, 8, 7.0])  # same top pair -> 1
    assert top_set_jaccard(a, c, 0.25) == 1.0


# ------------------------------------------------------------------------ statuses
@pytest.mark.parametrize(
    "disc,conf,stable,supp,expected",
    [
        (False, False, False, False, "failed discovery"),
        (False, True, True, True, "failed discovery"),
        (True, False, True, True, "failed feasibility"),
        (True, False, False, False, "failed feasibility"),
        (True, True, False, True, "abstained"),
        (True, True, False, False, "abstained"),
        (True, True, True, True, "confirmed"),
        (True, True, True, False, "not confirmed"),
    ],
)
def test_status_truth_table(disc, conf, stable, supp, expected):
    assert slot_status(disc, conf, stable, supp) == expected


# ------------------------------------------------------------------------ rules
def test_rules_roundtrip_through_json():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 4))
    cols = ["a", "b", "c", "d"]
    fam = CompositeFamily((AxisTiltFamily(), ThresholdFamily(), DirectionTiltFamily(n_directions=2, kernel=True)))
    Xnew = rng.normal(size=(10, 4))
    for rule in fam.fit(X, cols):
        back = rule_from_dict(json.loads(rule.to_json()))
        idx = [cols.index(c) for c in rule.columns]
        np.testing.assert_allclose(back.score(Xnew[:, idx]), rule.score(Xnew[:, idx]))
        assert np.all(rule.score(Xnew[:, idx]) > 0)


def test_tilt_rules_are_bounded():
    X = np.random.default_rng(4).normal(size=(100, 2))
    for rule in AxisTiltFamily(strengths=(1.0,), clip=2.0).fit(X, ["a", "b"]):
        s = rule.score(X * 100)  # far outside the discovery range
        assert s.max() / s.min() <= np.exp(4.0) + 1e-9


# ------------------------------------------------------------------------ synthetic data
def _episodes(n=80, seed=0, effect=0.0, n_seeds=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    ids = [f"t{i:03d}" for i in range(n)]
    rows = []
    for i in range(n):
        p = {"ReAct": 0.3, "PV": 0.35 + effect * (X[i, 0] > 0), "Gate": 0.3}
        for s in range(n_seeds):
            for w, pp in p.items():
                rows.append((ids[i], s, w, float(rng.random() < pp)))
    ep = pd.DataFrame(rows, columns=["task_id", "seed", "workflow", "score"])
    feats = pd.DataFrame(X, index=ids, columns=["x0", "x1", "x2"])
    return ep, feats


def _engine(slots=None, **kw):
    plan = ComparisonPlan(SYSTEMS)
    fam = {"thr": ThresholdFamily(quantiles=(0.5,), lifts=(3.0,))}
    slots = slots or [
        Slot("uniform PV", {"PV": 1, "ReAct": -1}, sign=1),
        Slot("stress PV", {"PV": 1, "ReAct": -1}, sign=-1, family="thr", radius=None, min_ess=10),
    ]
    return SASST(plan, slots, fam, **kw)


def test_confirmation_estimates_equal_direct_weighted_contrasts():
    ep, feats = _episodes()
    split = pd.Series(["discovery"] * 40 + ["confirmation"] * 40, index=feats.index)
    rep = _engine(n_stability=20, inference="bonferroni-t").run(ep, feats, split)
    conf_ids = feats.index[40:]
    Z = ep.groupby(["task_id", "workflow"])["score"].mean().unstack().loc[conf_ids]
    diff = (Z["PV"] - Z["ReAct"]).to_numpy()
    # uniform slot: plain mean and the ratio-contribution SE with N in the denominator
    row = rep.table.loc["uniform PV"]
    assert row["estimate"] == pytest.approx(diff.mean())
    assert row["se"] == pytest.approx(diff.std(ddof=0) / np.sqrt(40))
    crit = stats.t.ppf(1 - 0.05 / 2, 39)
    assert row["bound"] == pytest.approx(diff.mean() - crit * diff.std(ddof=0) / np.sqrt(40))
    # stressed slot: recompute the frozen threshold rule's weighted contrast by hand
    rule = rule_from_dict(rep.table.loc["stress PV", "rule_json"])
    x = feats.loc[conf_ids, list(rule.columns)].to_numpy()
    s = rule.score(x)
    est = np.sum(s * diff) / s.sum()
    phi = s * (diff - est) / s.mean()
    row = rep.table.loc["stress PV"]
    assert row["estimate"] == pytest.approx(est)
    assert row["se"] == pytest.approx(np.sqrt(np.mean(phi**2) / 40))
    assert row["bound"] == pytest.approx(est + crit * np.sqrt(np.mean(phi**2) / 40))
    w = s / s.sum()
    assert row["ess"] == pytest.approx(1 / np.sum(w**2))
    assert row["max_density"] == pytest.approx(40 * w.max())


def test_discovery_minimizes_eq2_which_is_exact_for_a_linear_plan():
    # For weighted means Eq. (2) equals the exact weighted contrast (the expansion is
    # linear in the weights), so the selected rule must minimize the weighted contrast on D.
    ep, feats = _episodes(n=60, seed=5, effect=0.3)
    split = pd.Series(["discovery"] * 30 + ["confirmation"] * 30, index=feats.index)
    eng = _engine(n_stability=0)
    rep = eng.run(ep, feats, split)
    fr = rep.discovery.rules["stress PV"]
    d_ids = feats.index[:30]
    Z = ep.groupby(["task_id", "workflow"])["score"].mean().unstack().loc[d_ids]
    diff = (Z["PV"] - Z["ReAct"]).to_numpy()
    cands = ThresholdFamily(quantiles=(0.5,), lifts=(3.0,)).fit(feats.loc[d_ids].to_numpy(), ["x0", "x1", "x2"])
    exact = []
    for r in cands:
        s = r.score(feats.loc[d_ids, list(r.columns)].to_numpy())
        exact.append(np.sum(s * diff) / s.sum())
    np.testing.assert_allclose(fr.candidates["predicted"], exact, atol=1e-12)
    assert fr.index == int(np.argmin(exact))


def test_same_seed_same_report_and_stability_range():
    ep, feats = _episodes(seed=7)
    a = _engine(n_stability=30, seed=3).run(ep, feats)
    b = _engine(n_stability=30, seed=3).run(ep, feats)
    pd.testing.assert_frame_equal(a.table.drop(columns="runtime_s"), b.table.drop(columns="runtime_s"))
    assert 0.0 <= a.table.loc["stress PV", "stability"] <= 1.0


def test_failed_discovery_feasibility_and_abstention():
    ep, feats = _episodes(seed=8)
    fam = {"thr": ThresholdFamily(quantiles=(0.5,), lifts=(3.0,)),
           "fixed": FixedFamily((ThresholdRule(columns=("x1",), threshold=1.5, above=True, lift=50.0),))}
    slots = [
        Slot("impossible cap", {"PV": 1, "ReAct": -1}, family="thr", density_cap=1.01, radius=None),
        Slot("concentrated", {"PV": 1, "ReAct": -1}, family="fixed", radius=None, density_cap=100, min_ess=1,
             discovery_target={"Gate": 1, "ReAct": -1}),
        Slot("unstable", {"PV": 1, "ReAct": -1}, family="thr", radius=None, min_ess=5, stability_threshold=1.0),
    ]
    split = pd.Series(["discovery"] * 40 + ["confirmation"] * 40, index=feats.index)
    eng = SASST(ComparisonPlan(SYSTEMS), slots, fam, n_stability=10)
    rep = eng.run(ep, feats, split)
    assert rep.table.loc["impossible cap", "status"] == "failed discovery"
    assert np.isnan(rep.table.loc["impossible cap", "estimate"])
    # x50 lift on the few tasks with x1 > 1.5: with min_ess=1 support passes, ESS is small
    conc = rep.table.loc["concentrated"]
    assert conc["confirmation_feasible"] and conc["ess"] < 20
    # Failed feasibility: the frozen rule passes discovery (every discovery task has x1 = 2,
    # so weights are uniform) but concentrates on the confirmation tasks.
    from agentstudies.sasst import cluster_data

    strict = Slot("concentrated", {"PV": 1, "ReAct": -1}, family="fixed", radius=None, density_cap=100,
                  min_ess=20, discovery_target={"Gate": 1, "ReAct": -1})
    eng2 = SASST(ComparisonPlan(SYSTEMS), [strict], fam, n_stability=0)
    data = cluster_data(ep, feats, SYSTEMS)
    d = np.arange(80) < 40
    X_d = np.tile([0.0, 2.0, 0.0], (40, 1))
    disc = eng2.discover(ClusterData(data.ids[d], data.Z[d], X_d, SYSTEMS, data.feature_names, data.n_seeds[d]))
    assert disc.rules["concentrated"].ess == pytest.approx(40.0)
    rep2 = eng2.confirm(disc, data.subset(~d))
    row = rep2.table.loc["concentrated"]
    assert row["status"] == "failed feasibility" and "ESS" in row["reason"]
    assert np.isnan(row["bound"])
    assert rep.table.loc["unstable", "status"] == "abstained"
    assert np.isfinite(rep.table.loc["unstable", "bound"])  # reported diagnostically


# ------------------------------------------------------------------------ bad input
def test_bad_inputs_name_the_problem():
    ep, feats = _episodes(n=20)
    eng = _engine(n_stability=0)
    with pytest.raises(KeyError, match="task_id"):
        eng.run(ep.drop(columns="task_id"), feats)
    bad = ep.copy()
    bad.loc[3, "task_id"] = None
    with pytest.raises(ValueError, match="missing cluster id"):
        eng.run(bad, feats)
    bad = ep.copy()
    bad.loc[5, "score"] = np.nan
    with pytest.raises(ValueError, match="NaN or non-numeric score.*t000/1/Gate"):
        eng.run(bad, feats)
    bad = pd.concat([ep, ep.iloc[[0]]])
    with pytest.raises(ValueError, match="duplicate .* t000/0/ReAct"):
        eng.run(bad, feats)
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['radiuss'\]"):
        Slot.from_dict({"name": "x", "contrast": {"PV": 1}, "radiuss": 0.1})
    with pytest.raises(ValueError, match="empty confirmation split"):
        eng.run(ep, feats, pd.Series("discovery", index=feats.index))
    with pytest.raises(ValueError, match="empty discovery split"):
        eng.run(ep, feats, pd.Series("confirmation", index=feats.index))
    with pytest.raises(ValueError, match="cluster\\(s\\) without features: t019"):
        eng.run(ep, feats.iloc[:-1])
    bad_f = feats.copy()
    bad_f.iloc[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN feature values in column\(s\) \['x1'\]"):
        eng.run(ep, bad_f)
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        SASST(ComparisonPlan(SYSTEMS), [Slot("s", {"PV": 1}, family="nope")], {})
    unpaired = ep[~((ep.task_id == "t004") & (ep.workflow == "Gate") & (ep.seed == 1))]
    with pytest.raises(ValueError, match="unpaired design.*t004/seed 1"):
        eng.run(unpaired, feats)


# ------------------------------------------------------------------------ coverage
@pytest.mark.slow
def test_fixed_rule_pointwise_coverage_is_nominal():
    """A fixed threshold rule: the one-sided 95% bound covers the known truth ~95%.

    Truth: PV - ReAct success probabilities differ by 0.2 where x0 > 0 and 0 elsewhere; the
    rule lifts x0 > 0 by 3, so the population weighted contrast is 0.2 * 3/(3+1) = 0.15.
    """
    rule = ThresholdRule(columns=("x0",), threshold=0.0, above=True, lift=3.0)
    eng = SASST(ComparisonPlan(SYSTEMS),
                [Slot("fixed", {"PV": 1, "ReAct": -1}, sign=1, family="fixed", radius=None, min_ess=1,
                      density_cap=10)],
                {"fixed": FixedFamily((rule,))}, inference="pointwise", n_stability=0)
    rng = np.random.default_rng(11)
    n = 200
    covered = 0
    trials = 400
    for _ in range(trials):
        X = rng.normal(size=(2 * n, 1))
        p_re = np.full(2 * n, 0.4)
        p_pv = 0.4 + 0.2 * (X[:, 0] > 0)
        Z = np.column_stack([rng.random(2 * n) < p_re, rng.random(2 * n) < p_pv, rng.random(2 * n) < 0.4]).astype(float)
        ids = np.array([f"c{i}" for i in range(2 * n)])
        data = ClusterData(ids, Z, X, SYSTEMS, ("x0",), np.ones(2 * n))
        disc = eng.discover(data.subset(np.arange(2 * n) < n))
        rep = eng.confirm(disc, data.subset(np.arange(2 * n) >= n))
        covered += rep.table.loc["fixed", "bound"] <= 0.15
    cov = covered / trials
    # binomial sd at 0.95 with 400 trials ~ 0.011; allow 3 sd
    assert abs(cov - 0.95) < 0.035, cov


def test_top_set_jaccard_of_rules_lifting_fewer_than_the_top_fraction():
    # Regression: two threshold rules lifting disjoint 10% groups. With ties at the
    # baseline level included, both top-25% sets were *every* task and the Jaccard was 1,
    # so a selection flipping between the two rules looked perfectly stable.
    n = 40
    a = np.ones(n)
    a[:4] = 3.0  # up-weights tasks 0-3
    b = np.ones(n)
    b[4:8] = 3.0  # up-weights tasks 4-7
    assert top_set_jaccard(a, b, 0.25) == 0.0
    assert top_set_jaccard(a, a, 0.25) == 1.0
    c = a.copy()
    c[4] = 3.0  # tasks 0-4: overlap 4 of 5
    assert top_set_jaccard(a, c, 0.25) == pytest.approx(4 / 5)
    # a constant rule keeps every task; a rule lifting more than the top fraction keeps
    # its tied top level (here the 15 lifted tasks)
    assert top_set_jaccard(np.ones(n), np.ones(n), 0.25) == 1.0
    d = np.ones(n)
    d[:15] = 2.0
    assert top_set_jaccard(d, np.ones(n), 0.25) == pytest.approx(15 / 40)


def test_more_bad_inputs_name_the_problem():
    ep, feats = _episodes(n=20)
    eng = _engine(n_stability=0)
    with pytest.raises(ValueError, match=r"feature column\(s\) \['domain'\] are not numeric"):
        eng.run(ep, feats.assign(domain="retail"))
    bad = ep.copy()
    bad["seed"] = bad["seed"].astype(float)
    bad.loc[2, "seed"] = np.nan
    with pytest.raises(ValueError, match="missing 'seed'.*t000"):
        eng.run(bad, feats)
    with pytest.raises(ValueError, match="not the string 'ReAct'"):
        ComparisonPlan("ReAct")
    with pytest.raises(KeyError, match=r"\['lenght'\]"):
        ThresholdFamily(use_columns=("lenght",)).fit(feats.to_numpy(), list(feats.columns))
    with pytest.raises(ValueError, match="split lacks cluster\\(s\\): t019"):
        eng.run(ep, feats, pd.Series("discovery", index=feats.index[:-1]))


@pytest.mark.parametrize("inference", ["gaussian", "bonferroni-t"])
def test_with_inference_of_own_method_reproduces_the_band(inference):
    ep, feats = _episodes()
    split = pd.Series(["discovery"] * 40 + ["confirmation"] * 40, index=feats.index)
    rep = _engine(n_stability=5, inference=inference, n_draws=300, seed=3).run(ep, feats, split)
    again = rep.with_inference(rep.method)
    pd.testing.assert_frame_equal(again.table, rep.table)
    assert again.critical == rep.critical or (np.isnan(again.critical) and np.isnan(rep.critical))
    # the tidy table: one weighted-contrast row per slot, bound side from the claim's sign
    tidy = rep.to_frame()
    assert list(tidy["slot"]) == list(rep.table.index)
    assert (tidy["side"][np.isfinite(tidy["bound"])] == rep.table["bound_side"][np.isfinite(rep.table["bound"])].to_numpy()).all()
    assert rep.get("weighted_contrast", slot="uniform PV")["estimate"] == rep.table.loc["uniform PV", "estimate"]
    assert rep.level == pytest.approx(0.95) and rep.provenance.seed == 3


def test_blocked_w1_equals_scipy():
    from agentstudies.sasst._geometry import _w1_sorted, sorted_support

    rng = np.random.default_rng(4)
    proj = rng.normal(size=(5, 20))
    w = rng.random((7, 20))
    w /= w.sum(axis=1, keepdims=True)
    got = _w1_sorted(*sorted_support(proj), np.full(20, 1 / 20), w, max_block=5 * 20 * 2)  # blocks of 2 rows
    for g in range(7):
        for l in range(5):
            want = wasserstein_distance(proj[l], proj[l], u_weights=np.full(20, 1 / 20), v_weights=w[g])
            assert got[g, l] == pytest.approx(want, rel=1e-10, abs=1e-12)


def test_slab_cumsum_is_numpys_cumsum_bit_for_bit_and_long_rows_w1_equals_scipy():
    from agentstudies.sasst._geometry import _cumsum_axis1, _w1_sorted, sorted_support

    rng = np.random.default_rng(5)
    for shape in ((3, 500, 700), (2, 40, 8), (64, 300, 40), (1, 1, 5), (1, 2000, 2048)):  # slab path and cumsum path
        D = rng.normal(size=shape)
        assert np.array_equal(_cumsum_axis1(D.copy()), np.cumsum(D, axis=1))
    proj = rng.normal(size=(32, 300))
    w = rng.random((70, 300))
    w /= w.sum(axis=1, keepdims=True)
    got = _w1_sorted(*sorted_support(proj), np.full(300, 1 / 300), w)  # (L, n, g) = (32, 300, 70): slab path
    for g in (0, 33, 69):
        for l in (0, 17, 31):
            want = wasserstein_distance(proj[l], proj[l], u_weights=np.full(300, 1 / 300), v_weights=w[g])
            assert got[g, l] == pytest.approx(want, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("first_chunk,chunk", [(1, 1), (2, 8), (3, 2)])
@pytest.mark.parametrize("tie_rule", ["registry_order", "max_ess", "min_distance"])
def test_radius_screen_selects_what_the_full_distance_vector_selects(tie_rule, first_chunk, chunk):
    # stability computes distances lazily in loc order; the selected index must be the one
    # _select returns with every candidate's distance and radius check computed
    from agentstudies.sasst._engine import _radius_screen, _select

    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 4))
    geom = KMS(n_witness=8, seed=1).fit(X)
    u = np.full(40, 1 / 40)
    for trial in range(60):
        G = 25
        W = rng.random((G, 40)) ** rng.uniform(0.5, 4)
        W /= W.sum(axis=1, keepdims=True)
        full = geom.distance(X, u, W)
        radius = float(np.quantile(full, rng.uniform(0.05, 0.9)))
        slot = Slot("s", {"PV": 1.0, "ReAct": -1.0}, sign=-1, family="f", radius=radius, tie_rule=tie_rule,
                    tolerance=0.05)
        loc = rng.integers(0, 4, G) + rng.uniform(0, 0.04, G)  # groups of about six tied within the tolerance
        ess = rng.uniform(5, 40, G)
        other = rng.random(G) < 0.7
        want = _select(loc, other & (full <= radius + 1e-15), ess, full, tie_rule, slot.tolerance)  # RADIUS_TOL
        dist, ok = _radius_screen(geom, X, u, W, loc, other, slot, chunk=chunk, first_chunk=first_chunk)
        assert _select(loc, ok, ess, dist, tie_rule, slot.tolerance) == want


def test_score_matrix_rows_are_rule_scores_and_errors_name_the_rule():
    from agentstudies.sasst.rules import AxisTiltFamily, UniformRule, rule_scores, score_matrix

    rng = np.random.default_rng(6)
    names = ("a", "b", "c")
    X = rng.normal(size=(30, 3))
    rules = (list(AxisTiltFamily(strengths=(0.5, 2.0), use_columns=("a", "c")).fit(X, names))
             + [ThresholdRule(columns=("b",), threshold=0.0, above=True, lift=3.0), UniformRule()])
    S = score_matrix(rules, X, names)
    assert S.shape == (len(rules), 30)
    for g, r in enumerate(rules):
        np.testing.assert_array_equal(S[g], rule_scores(r, X, names))
    with pytest.raises(KeyError, match="'z'"):
        score_matrix([ThresholdRule(columns=("z",), threshold=0.0, above=True, lift=2.0)], X, names)
    bad = ThresholdRule(columns=("b",), threshold=0.0, above=True, lift=-2.0)
    with pytest.raises(ValueError, match="negative or non-finite"):
        score_matrix(rules[:2] + [bad], X, names)


def test_score_matrix_shares_a_familys_standardization_and_equals_each_rules_own_score():
    # score_matrix standardizes once per (columns, standardizer); every row must still be
    # exactly the rule's own score, a subclass that overrides score must be honoured, and
    # the caller's features must stay writeable
    from dataclasses import dataclass

    from agentstudies.sasst.rules import (
        BumpFamily,
        DirectionTiltFamily,
        ProjectionTiltRule,
        QuadraticTiltFamily,
        score_matrix,
    )
    from agentstudies.sasst.geometry import Standardizer

    @dataclass(frozen=True, eq=False)
    class Doubled(ProjectionTiltRule):
        kind = "test_doubled_tilt"

        def score(self, X):
            return 2.0 * super().score(X)

    rng = np.random.default_rng(8)
    names = ("a", "b", "c", "d")
    X = rng.normal(size=(50, 4)) * [1.0, 3.0, 0.5, 2.0] + [0.0, 1.0, -2.0, 5.0]
    rules = (list(DirectionTiltFamily(n_directions=4, kernel=True, seed=1).fit(X, names))
             + list(DirectionTiltFamily(n_directions=3, seed=2).fit(X, names))
             + list(BumpFamily(n_centers=3, seed=3).fit(X, names))
             + list(QuadraticTiltFamily(strengths=(1.0,)).fit(X[:, :3], names[:3])))
    ident = Standardizer(mean=np.zeros(2), scale=np.ones(2))
    rules += [ProjectionTiltRule(columns=("b", "d"), standardizer=ident, direction=np.array([1.0, -1.0])),
              Doubled(columns=("b", "d"), standardizer=ident, direction=np.array([1.0, -1.0]))]
    S = score_matrix(rules, X, names)
    for g, r in enumerate(rules):  # the same column gather as score_matrix (memory order moves last bits)
        sub = X if tuple(r.columns) == names else X[:, [names.index(c) for c in r.columns]]
        assert np.array_equal(S[g], r.score(sub)), r.describe()
    assert np.array_equal(S[-1], 2.0 * S[-2])
    assert X.flags.writeable
