"""studies.sasst.findings.calibration_findings on synthetic Monte-Carlo summaries whose
truth is known."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from agentstudies.findings import TABLE_COLUMNS
from agentstudies.studies.sasst.findings import calibration_findings, paired_gap_interval

GAP = "same-data selection covers less than the split"
COV = "the fixed rule's one-sided bound covers near the nominal level (R = 5)"
FW = "familywise coverage is near nominal (M = 1000)"


def _tables(cov_fixed=0.95, split_only=30, same_only=5, n5=1000, ff=0.005, fw=0.95, n=2000):
    t4 = pd.DataFrame({"M": [500, 1000], "R": [5, 5], "rule": ["fixed", "fixed"], "coverage": [cov_fixed] * 2,
                       "n_trials": [n // 2, n // 2]})
    t5 = pd.DataFrame({"M": [1000], "split_only": [split_only], "same_only": [same_only], "n_trials": [n5]})
    a4 = pd.DataFrame({"M": [1000], "familywise_coverage": [fw], "false_fragility": [ff], "n_trials": [n]})
    return t4, t5, a4


def test_planted_truths_reappear():
    f = calibration_findings(*_tables(cov_fixed=0.95, fw=0.95, ff=0.005))
    t = f.table().set_index("finding")
    assert list(f.table().columns) == list(TABLE_COLUMNS)
    assert t.loc[GAP, "verdict"] == "reappears"
    assert t.loc["false fragility stays below alpha (M = 1000)", "verdict"] == "reappears"
    # near nominal: 1900 of 2000, exact interval [0.9395, 0.9591] inside 0.95 +- 0.025
    assert t.loc[FW, "verdict"] == "reappears" and t.loc[COV, "verdict"] == "reappears"
    assert set(t["basis"]) == {"method"}
    # exact interval of 10 of 2000 by hand
    ci = stats.binomtest(10, 2000).proportion_ci(0.95, method="exact")
    row = t.loc["false fragility stays below alpha (M = 1000)"]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high))


def test_near_nominal_edge_and_no_gap_are_inconclusive():
    # 1860 of 2000: exact interval [0.918, 0.941] straddles the band's edge 0.925
    f = calibration_findings(*_tables(cov_fixed=0.93, split_only=10, same_only=10, fw=0.93, ff=0.05))
    assert f.verdict(GAP) == "inconclusive"
    assert f.verdict(COV) == "inconclusive" and f.verdict(FW) == "inconclusive"
    assert f.verdict("false fragility stays below alpha (M = 1000)") == "inconclusive"


def test_r_cells_are_separate_rows_and_shared_trials_are_not_pooled():
    t4, t5, a4 = _tables()
    t4 = pd.concat([t4, t4.assign(R=20)], ignore_index=True)
    f = calibration_findings(t4, t5, a4)
    assert {"the fixed rule's one-sided bound covers near the nominal level (R = 5)",
            "the fixed rule's one-sided bound covers near the nominal level (R = 20)"} <= {r.finding for r in f.rows}
    with pytest.raises(ValueError, match="share trials"):
        calibration_findings(pd.concat([t4, t4], ignore_index=True), t5, a4)


def test_reversed_truths_are_contradicted():
    f = calibration_findings(*_tables(cov_fixed=0.90, split_only=5, same_only=40, fw=0.90, ff=0.10))
    assert f.verdict(GAP) == "contradicted"
    assert f.verdict("false fragility stays below alpha (M = 1000)") == "contradicted"
    assert f.verdict(FW) == "contradicted"
    assert f.verdict(COV) == "contradicted"


def test_paired_gap_interval_by_hand_and_level():
    d, lo, hi = paired_gap_interval(30, 10, 400, level=0.9)
    se = math.sqrt(40 - 20 ** 2 / 400) / 400
    z = stats.norm.ppf(0.95)
    assert (d, lo, hi) == pytest.approx((0.05, 0.05 - z * se, 0.05 + z * se))
    wide = calibration_findings(*_tables(split_only=16, same_only=5, n5=400), level=0.99).table().set_index("finding")
    narrow = calibration_findings(*_tables(split_only=16, same_only=5, n5=400), level=0.8).table().set_index("finding")
    assert narrow.loc[GAP, "verdict"] == "reappears" and wide.loc[GAP, "verdict"] == "inconclusive"
    assert wide.loc[GAP, "rule"].startswith("99% CI")
    with pytest.raises(ValueError, match="split_only"):
        paired_gap_interval(10, 5, 12)


def test_missing_columns_are_named():
    t4, t5, a4 = _tables()
    with pytest.raises(KeyError, match="same_only"):
        calibration_findings(t4, t5.drop(columns="same_only"), a4)


def _t11(rates, n=40):
    return pd.DataFrame({"setting": list(rates), "trials": n, "abstention_or_failure": list(rates.values())})


def test_feasibility_planted_none_and_reversed():
    from agentstudies.studies.sasst.findings import feasibility_findings

    planted = {"severe_concentration": 1.0, "density_only": 1.0, "split_support_only": 1.0,
               "near_tied_rules": 0.95, "stable_positive_rule": 0.0}
    f = feasibility_findings(_t11(planted))
    assert f.counts()["reappears"] == 5 and list(f.table().columns) == list(TABLE_COLUMNS)
    none = feasibility_findings(_t11({"near_tied_rules": 0.55}))  # 22 of 40: exact interval straddles 1/2
    assert none.verdict("near tied rules: most trials abstain or fail") == "inconclusive"
    rev = feasibility_findings(_t11({"severe_concentration": 0.9, "near_tied_rules": 0.1,
                                     "stable_positive_rule": 0.5}))
    assert rev.verdict("severe concentration: every trial abstains or fails a check") == "contradicted"
    assert rev.verdict("near tied rules: most trials abstain or fail") == "contradicted"
    assert rev.verdict("stable positive rule: no trial is blocked") == "contradicted"


def test_feasibility_level_is_honoured():
    from agentstudies.findings import binomial_interval
    from agentstudies.studies.sasst.findings import feasibility_findings

    name = "near tied rules: most trials abstain or fail"
    for level in (0.8, 0.99):
        row = feasibility_findings(_t11({"near_tied_rules": 0.65}), level=level).table().set_index("finding").loc[name]
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(binomial_interval(26, 40, level=level)[1:])
    assert feasibility_findings(_t11({"near_tied_rules": 0.65}), level=0.8).verdict(name) == "reappears"
    assert feasibility_findings(_t11({"near_tied_rules": 0.65}), level=0.99).verdict(name) == "inconclusive"


def _t6(cov, n=400, settings=("a", "b")):
    return pd.DataFrame([{"setting": s, "rule": r, "familywise_coverage": c, "n_trials": n}
                         for r, c in cov.items() for s in settings])


def test_small_clusters_planted_none_reversed_and_level():
    from agentstudies.studies.sasst.findings import small_cluster_findings

    g, b, t = "the gaussian band under-covers", "the bonferroni-t band is conservative", \
        "the t-scaled band under-covers in some setting"
    planted = small_cluster_findings(_t6({"gaussian": 0.90, "hc1": 0.91, "t-scaled": 0.92, "bonferroni-t": 0.98}))
    assert planted.counts()["reappears"] == 4
    none = small_cluster_findings(_t6({"gaussian": 0.95, "bonferroni-t": 0.95, "t-scaled": 0.95}))
    assert {none.verdict(x) for x in (g, b, t)} == {"inconclusive"}
    rev = small_cluster_findings(_t6({"gaussian": 0.99, "bonferroni-t": 0.90}))
    assert rev.verdict(g) == "contradicted" and rev.verdict(b) == "contradicted"
    cov = _t6({"gaussian": 0.935}, n=200)  # 374 of 400 pooled
    for level in (0.5, 0.99):
        row = small_cluster_findings(cov, level=level).table().set_index("finding").loc[g]
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(binomial_interval_(374, 400, level))
    assert small_cluster_findings(cov, level=0.5).verdict(g) == "reappears"
    assert small_cluster_findings(cov, level=0.99).verdict(g) == "inconclusive"


def binomial_interval_(k, n, level):
    ci = stats.binomtest(k, n).proportion_ci(level, method="exact")  # by hand, scipy directly
    return ci.low, ci.high


def _q(**kw):
    q = dict(weighted=-0.05, se=0.01, status="abstained", recovery_auc=0.98, registry_ceiling=0.99,
             ceiling_target=0.974, n_confirmation=400)
    return {**q, **kw}


def test_real_features_planted_none_reversed_inert_and_level():
    from agentstudies.studies.sasst.findings import real_features_findings

    neg = "the frozen rule's weighted confirmation contrast is negative"
    rec = "the frozen rule recovers the degraded subgroup as well as the paper's"
    f = real_features_findings(_q())
    assert f.counts()["reappears"] == 3
    row = f.table().set_index("finding").loc[neg]
    z = stats.norm.ppf(0.975)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((-0.05 - z * 0.01, -0.05 + z * 0.01))
    assert real_features_findings(_q(weighted=-0.01)).verdict(neg) == "inconclusive"
    rev = real_features_findings(_q(weighted=0.05, status="confirmed"))
    assert rev.verdict(neg) == "contradicted" and rev.verdict("the formal status is the paper's") == "contradicted"
    inert = real_features_findings(_q(registry_ceiling=0.9)).table().set_index("finding").loc[rec]
    assert inert["verdict"] == "not testable here" and "0.900" in inert["why"]
    assert real_features_findings(_q(weighted=-0.025), level=0.9).verdict(neg) == "reappears"   # -0.025 + 1.645 se < 0
    assert real_features_findings(_q(weighted=-0.025), level=0.99).verdict(neg) == "inconclusive"  # + 2.576 se > 0
    with pytest.raises(KeyError, match="status"):
        real_features_findings({k: v for k, v in _q().items() if k != "status"})


def test_geometry_planted_none_reversed_and_level():
    import numpy as np

    from agentstudies.studies.sasst.findings import geometry_findings

    def rec(mean, n=30, sd=0.05, mech="linear"):
        a = mean + sd * np.linspace(-1.7, 1.7, n)
        return pd.DataFrame({"mechanism": mech, "method": "kms", "auc": a})

    name = "linear: the kms rule recovers the subgroup above chance"
    f = geometry_findings(rec(0.6))
    row = f.table().set_index("finding").loc[name]
    a = rec(0.6)["auc"].to_numpy()
    half = stats.t.ppf(0.975, 29) * a.std(ddof=1) / math.sqrt(30)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.6 - half, 0.6 + half))
    assert row["verdict"] == "reappears" and "0.602" in row["paper"]
    assert geometry_findings(rec(0.5)).verdict(name) == "inconclusive"
    assert geometry_findings(rec(0.4)).verdict(name) == "contradicted"
    assert geometry_findings(rec(0.515, n=10), level=0.5).verdict(name) == "reappears"
    assert geometry_findings(rec(0.515, n=10), level=0.99).verdict(name) == "inconclusive"
    with pytest.raises(KeyError, match="mmd"):
        geometry_findings(rec(0.6), method="mmd")
