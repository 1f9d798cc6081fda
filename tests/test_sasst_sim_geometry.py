"""Study B and the geometry audit (SASST D.4): the planted mechanisms, the AUC, the
feature geometries and the bandwidth diagnostic, checked by independent computation
(closed forms, Monte Carlo, scikit-learn, direct loops)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from agentstudies.sasst.geometry import KMS
from agentstudies.studies.sasst import geometry as gs
from agentstudies.studies.sasst import geometry_audit as ga
from agentstudies.studies.sasst.tables import GeometryResult


# ------------------------------------------------------------------------ AUC
def test_recovery_auc_matches_sklearn_with_ties():
    rng = np.random.default_rng(0)
    y = rng.random(300) < 0.3
    s = np.round(rng.normal(size=300) + y, 1)  # rounding creates ties
    assert gs.recovery_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert gs.recovery_auc(y, np.ones(300)) == 0.5
    assert gs.recovery_auc([0, 0, 1, 1], [1, 2, 3, 4]) == 1.0
    assert gs.recovery_auc([0, 0, 1, 1], [4, 3, 2, 1]) == 0.0
    with pytest.raises(ValueError, match="both classes"):
        gs.recovery_auc([1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="shape"):
        gs.recovery_auc([1, 0, 1], [0.1, 0.2])


# ------------------------------------------------------------------------ mechanisms
def test_xor_threshold_matches_monte_carlo_median_of_abs_product():
    rng = np.random.default_rng(1)
    z = rng.standard_normal((2, 2_000_000))
    # P(x1 x2 < -c) = 1/4  <=>  c is the median of |x1 x2|
    assert gs.xor_threshold(0.25) == pytest.approx(np.median(np.abs(z[0] * z[1])), abs=3e-3)


def test_planted_subgroups_hand_worked_points():
    X = pd.DataFrame({"x1": [1.0, 0.4, 0.5, 0.6, -1.5, 1.5, 0.1], "x2": [1.0, 0.4, 0.5, 0.5, 1.5, 1.5, -0.1],
                      "tool_1": [1, 1, 0, 0, 1, 0, 1], "strict_policy": [1, 0, 1, 0, 1, 1, 1]})
    # x1 + x2 > sqrt(2) * 0.6745 = 0.9539
    np.testing.assert_array_equal(gs.planted_subgroup("linear", X), [True, False, True, True, False, True, False])
    # x1^2 + x2^2 < -2 log(0.75) = 0.5754
    np.testing.assert_array_equal(gs.planted_subgroup("circular", X), [False, True, True, False, False, False, True])
    # x1 x2 < -c (c ~ 0.4549): only (-1.5, 1.5)
    np.testing.assert_array_equal(gs.planted_subgroup("xor", X), [False, False, False, False, True, False, False])
    np.testing.assert_array_equal(gs.planted_subgroup("policy_by_tool", X), [True, False, False, False, True, False, True])
    with pytest.raises(ValueError, match="unknown mechanism"):
        gs.planted_subgroup("spiral", X)
    with pytest.raises(KeyError, match="tool_1"):
        gs.planted_subgroup("policy_by_tool", X[["x1", "x2"]])


@pytest.mark.parametrize("mechanism", gs.MECHANISMS)
def test_every_mechanism_stresses_a_quarter(mechanism):
    X = gs.study_b_features(400_000, np.random.default_rng(2))
    share = gs.planted_subgroup(mechanism, X).mean()
    assert abs(share - 0.25) < 4 * np.sqrt(0.25 * 0.75 / 400_000)


def test_outcome_model_contrast_by_subgroup():
    g = np.r_[np.zeros(50_000, bool), np.ones(50_000, bool)]
    prob = gs.success_probabilities(g)
    Z = gs.simulate_scores(prob, 2, np.random.default_rng(3))
    assert set(np.unique(Z)) <= {0.0, 0.5, 1.0}
    diff = Z[:, 1] - Z[:, 0]
    se = diff[:50_000].std() / np.sqrt(50_000)
    assert abs(diff[~g].mean() - (0.6 - 0.5)) < 4 * se
    assert abs(diff[g].mean() - (0.3 - 0.5)) < 4 * se
    # the null: no stressed task means a constant advantage, no heterogeneity
    null = gs.success_probabilities(np.zeros(10, bool))
    assert np.all(null[:, 1] - null[:, 0] == pytest.approx(0.1))


# ------------------------------------------------------------------------ Study B runs
def test_study_b_is_independent_of_n_jobs_and_scores_heldout_auc():
    cfg = gs.StudyBConfig(n_tasks=120, n_directions=4, n_centers=4)
    a, radii = gs.run_study_b(cfg, 2, seed=5, n_jobs=1, mechanisms=("circular",))
    b, radii_b = gs.run_study_b(cfg, 2, seed=5, n_jobs=2, backend="threading", mechanisms=("circular",))
    pd.testing.assert_frame_equal(a, b)
    assert radii == radii_b
    assert set(a["method"]) == set(gs.METHODS) and len(a) == 2 * len(gs.METHODS)
    assert a["auc"].between(0, 1).all()
    # the no-radius slot sees every candidate of the full registry (density/ESS permitting)
    nr = a[a.method == "no_radius"]
    assert (nr["n_feasible"] <= nr["n_candidates"]).all()
    t = GeometryResult(study_b=a).table(9)
    assert t.loc[0, "kms"] == pytest.approx(a[a.method == "kms"]["auc"].mean())


def test_pilot_radius_admits_the_declared_share_of_the_pilot_registry():
    cfg = gs.StudyBConfig(n_tasks=120, n_directions=4, n_centers=4)
    radii = gs.pilot_radii(cfg, np.random.default_rng(7))
    Xp = gs.study_b_features(60, np.random.default_rng(7))
    d = gs.registry_distances(gs.full_registry(cfg), Xp.to_numpy(), gs.STUDY_B_COLUMNS, KMS())
    # numpy's linear-interpolated quantile: at least 75% within, at most one more candidate
    assert 0.75 <= np.mean(d <= radii["kms"] + 1e-15) <= 0.75 + 1.0 / d.size + 1e-12


# ------------------------------------------------------------------------ audit geometries
def _frame(n=60, seed=8):
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(n, len(ga.STRUCTURED_COLUMNS))) * np.arange(1, len(ga.STRUCTURED_COLUMNS) + 1)
    E = rng.normal(size=(n, 20))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    cols = list(ga.STRUCTURED_COLUMNS) + [f"emb_{j:02d}" for j in range(20)]
    return pd.DataFrame(np.column_stack([S, E]), columns=cols), [f"emb_{j:02d}" for j in range(20)]


def test_prescaled_kms_equals_kms_on_standardized_input():
    X = np.random.default_rng(9).normal(size=(40, 5)) * 3 + 1
    Xs = (X - X.mean(0)) / X.std(0)
    w = np.random.default_rng(10).random((3, 40))
    w /= w.sum(1, keepdims=True)
    u = np.full(40, 1 / 40)
    a = KMS(seed=4).fit(X).distance(X, u, w)
    b = ga.PreScaledKMS(seed=4).fit(Xs).distance(Xs, u, w)
    np.testing.assert_allclose(a, b, rtol=1e-9)


def test_feature_maps_of_the_audit():
    f, emb = _frame()
    X = f.to_numpy()
    names = list(f.columns)
    cfg = ga.AuditConfig(n_pca=3)
    S = f[list(ga.STRUCTURED_COLUMNS)].to_numpy()
    E = f[emb].to_numpy()
    u = np.full(len(f), 1 / len(f))
    w = np.random.default_rng(11).random((2, len(f)))
    w /= w.sum(1, keepdims=True)
    # structured only == KMS on the structured block
    g = ga._audit_geometry("structured", names, emb, 3, cfg).fit(X)
    np.testing.assert_allclose(g.distance(X, u, w), KMS(seed=3).fit(S).distance(S, u, w), rtol=1e-9)
    # standardized == KMS on [structured, embedding]
    g = ga._audit_geometry("standardized", names, emb, 3, cfg).fit(X)
    SE = np.column_stack([S, E])
    np.testing.assert_allclose(g.distance(X, u, w), KMS(seed=3).fit(SE).distance(SE, u, w), rtol=1e-9)
    # normalized + structured keeps the unit-norm embedding rows unchanged
    g = ga._audit_geometry("normalized_structured", names, emb, 3, cfg).fit(X)
    np.testing.assert_allclose(g.features(X)[:, len(ga.STRUCTURED_COLUMNS):], E)
    # PCA + structured: the components are the leading principal scores (up to sign)
    g = ga._audit_geometry("pca_structured", names, emb, 3, cfg).fit(X)
    P = g.features(X)[:, len(ga.STRUCTURED_COLUMNS):]
    Ec = E - E.mean(0)
    U, sv, _ = np.linalg.svd(Ec, full_matrices=False)
    for k in range(3):
        assert abs(np.corrcoef(P[:, k], U[:, k])[0, 1]) == pytest.approx(1.0, abs=1e-8)
    with pytest.raises(ValueError, match="unknown feature geometry"):
        ga.FeatureMapGeometry(mode="spherical")


def test_short_goal_subgroup_and_audit_records():
    f, emb = _frame(n=48)
    f["scenario_words"] = np.arange(48, dtype=float)
    g = ga.short_goal_subgroup(f)
    assert g.sum() == int(np.sum(np.arange(48) <= np.quantile(np.arange(48), 0.25)))
    cfg = ga.AuditConfig(n_kernel_seeds=2, n_pca=3)
    rec, radii = ga.run_geometry_audit(f, emb, cfg, 2, seed=1)
    assert len(radii) == 2 * len(ga.AUDIT_GEOMETRIES)
    budget = {ga.budget_name(m) for m in ga.AUDIT_GEOMETRIES}
    assert set(rec["geometry"]) == set(ga.AUDIT_GEOMETRIES) | budget | {"no_radius"}
    # the discovery budget is target-blind: the radius_quantile of every candidate's distance on
    # the trial's discovery half (recomputed here from the registry fitted there)
    from agentstudies.studies.sasst.geometry import registry_distances, simulate_scores, success_probabilities

    names, X = list(f.columns), f.to_numpy(float)
    one = pd.DataFrame(ga.audit_trial(0, np.random.default_rng(5), features=f, emb=emb, radii=radii, cfg=cfg))
    rng = np.random.default_rng(5)  # the same stream: outcomes first, then the split
    simulate_scores(success_probabilities(ga.short_goal_subgroup(f, cfg.short_quantile)), cfg.n_seeds, rng)
    d = np.zeros(len(f), bool)
    d[rng.permutation(len(f))[: len(f) // 2]] = True
    for r in one[one.geometry.isin(budget)].itertuples():
        m = r.geometry.removesuffix(ga.DISCOVERY_BUDGET)
        dist = registry_distances(ga._audit_registry(cfg), X[d], names, ga._audit_geometry(m, names, emb, 0, cfg))
        assert r.radius == pytest.approx(np.quantile(dist, cfg.radius_quantile), rel=1e-9)
        assert r.accepted_radius == int(np.sum(dist <= r.radius * (1 + 1e-9)))
        # the target's side of the budget is read off, not set: outside iff its distance exceeds it
        assert r.target_outside == (r.target_distance > r.radius)
        assert 0.0 <= r.target_percentile <= 1.0
    # the registry is the fixed axis registry: 12 columns x 2 signs x 2 strengths
    assert (rec["n_candidates"] == 48).all()
    nr = rec[rec.geometry == "no_radius"]
    assert (nr["accepted_radius"] == 48).all()
    t = GeometryResult(audit=rec).table(10)
    # mean over kernel seeds of per-seed means (one trial per seed here)
    want = rec[rec.geometry == "standardized"]["auc"].mean()
    assert t.set_index("geometry").loc["standardized", "auc"] == pytest.approx(want)


# ------------------------------------------------------------------------ bandwidth
def test_bandwidth_diagnostic_closed_forms():
    rng = np.random.default_rng(12)
    A = rng.normal(size=(6, 3))  # 15 pairs: the median is one pair's value
    diag = ga.bandwidth_diagnostic({"a": A}).iloc[0]
    d2 = [np.sum((A[i] - A[j]) ** 2) for i in range(6) for j in range(i + 1, 6)]
    assert diag["similarity_unit"] == pytest.approx(np.median(np.exp(-np.array(d2) / 2)))
    assert diag["similarity_median"] == pytest.approx(np.exp(-0.5))
    assert diag["log10_similarity_unit"] == pytest.approx(-np.median(d2) / (2 * np.log(10)))
    # standardized d-dim features: E||x_i - x_j||^2 = 2d, so unit-bandwidth similarity ~ exp(-d)
    B = rng.normal(size=(200, 400))
    B = (B - B.mean(0)) / B.std(0)
    diag = ga.bandwidth_diagnostic({"b": B}).iloc[0]
    assert diag["log10_similarity_unit"] == pytest.approx(-400 / np.log(10), rel=0.05)


def test_registry_ceiling_is_the_best_candidate_auc_by_sklearn():
    rng = np.random.default_rng(13)
    X = gs.study_b_features(160, rng)
    g = gs.planted_subgroup("circular", X)
    cfg = gs.StudyBConfig(n_directions=3, n_centers=4)
    fam = gs.linear_registry(cfg)
    Xa = X.to_numpy()
    got = gs.registry_ceiling(fam, Xa[:80], Xa[80:], g[80:], gs.STUDY_B_COLUMNS)
    rules = fam.fit(Xa[:80], list(gs.STUDY_B_COLUMNS))
    want = max(roc_auc_score(g[80:], r.score(Xa[80:])) for r in rules)
    assert got == pytest.approx(want, abs=1e-12)


def test_informative_columns_drop_numerically_dead_dimensions():
    rng = np.random.default_rng(14)
    E = rng.normal(scale=0.05, size=(300, 6))
    E[:, 1] = 1e-33 * rng.normal(size=300)
    E[:, 4] = -5e-8 + 8e-9 * rng.normal(size=300)
    np.testing.assert_array_equal(gs.informative_columns(E), [True, False, True, True, False, True])
    # a legitimately small but real scale (1% of the others) is kept
    E[:, 4] = 5e-4 * rng.normal(size=300)
    assert gs.informative_columns(E)[4]
