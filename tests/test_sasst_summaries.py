"""The SASST chapters' summary sentences (agentstudies.studies.sasst.sentences) on
synthetic tables whose answers are known: planted agreement with the paper, a rate
clearly above / below it, the level honoured, and bad input named."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstudies.studies.sasst.sentences import (
    feasibility_summary,
    pct_range,
    rate_beside_paper,
    small_cluster_summary,
)


def _cp(k, n, level):
    a = 1 - level
    return stats.beta.ppf(a / 2, k, n - k + 1) if k else 0.0, stats.beta.ppf(1 - a / 2, k + 1, n - k) if k < n else 1.0


@pytest.mark.parametrize("k, n, paper, side", [(50, 100, 0.5, "within"), (90, 100, 0.5, "above"),
                                                (10, 100, 0.5, "below"), (100, 100, 1.0, "within")])
def test_rate_beside_paper_sides(k, n, paper, side):
    got, text = rate_beside_paper(k, n, paper)
    assert got == side
    assert f"{100 * k / n:.1f}% of trials blocked" in text and f"paper {100 * paper:.1f}%" in text


def test_rate_beside_paper_honours_the_level():
    # 60 of 100 against 0.5: the 90% exact interval excludes 0.5, the 99% interval does not
    lo90, _ = _cp(60, 100, 0.90)
    lo99, _ = _cp(60, 100, 0.99)
    assert lo90 > 0.5 > lo99
    assert rate_beside_paper(60, 100, 0.5, level=0.90)[0] == "above"
    assert rate_beside_paper(60, 100, 0.5, level=0.99)[0] == "within"
    assert "exact 99% interval" in rate_beside_paper(60, 100, 0.5, level=0.99)[1]


@pytest.mark.parametrize("args", [(5, 0, 0.5), (11, 10, 0.5), (5, 10, 1.5), (5, 10, float("nan"))])
def test_rate_beside_paper_rejects_bad_input(args):
    with pytest.raises(ValueError):
        rate_beside_paper(*args)
    with pytest.raises(ValueError, match="level"):
        rate_beside_paper(5, 10, 0.5, level=1.0)


def test_pct_range():
    assert pct_range([0.5, 0.5]) == "50.0%"
    assert pct_range([0.9, 0.5, np.nan]) == "50.0% to 90.0%"
    assert pct_range([np.nan]) == "—"


def _t11(rates, n=100):
    return pd.DataFrame({"setting": list(rates), "trials": n, "abstention_or_failure": list(rates.values()),
                         "recorded_check": "density"})


def test_feasibility_summary_counts_settings_within_the_interval():
    paper = pd.DataFrame({"setting": ["severe_concentration", "density_only", "split_support_only",
                                      "near_tied_rules", "stable_positive_rule"],
                          "abstention_or_failure": [1.0, 1.0, 1.0, 0.958, 0.0]})
    t11 = _t11({"severe_concentration": 1.0, "density_only": 1.0, "split_support_only": 0.6,
                "near_tied_rules": 0.5, "stable_positive_rule": 0.0, "near_tied_four": 0.8})
    rec = pd.DataFrame({"setting": ["stable_positive_rule"] * 2, "stability": [0.8, 0.9]})
    out = feasibility_summary(t11, paper, rec)
    assert "In 2 of 3 the paper's rate lies inside our 95% interval." in out["support_sentence"]
    assert "our whole interval lies below the paper's" in out["tie_sentence"]
    assert "mean stability is 0.85" in out["stable_sentence"]
    assert "80.0% of trials against 50.0%" in out["four_sentence"]
    out = feasibility_summary(t11[t11.setting != "near_tied_four"], paper, rec)
    assert "was not run" in out["four_sentence"]
    with pytest.raises(KeyError, match="recorded_check"):
        feasibility_summary(t11.drop(columns="recorded_check"), paper, rec)


def test_small_cluster_summary_uses_the_nominal_level_and_the_paper_values():
    settings = ["flat", "floor"]
    rules = ["gaussian", "hc1", "t-scaled", "bonferroni-t"]
    cov = {"gaussian": [0.80, 0.85], "hc1": [0.88, 0.90], "t-scaled": [0.91, 0.93], "bonferroni-t": [0.97, 0.99]}
    t6 = pd.DataFrame([{"setting": s, "rule": r, "familywise_coverage": cov[r][i], "mc_high": cov[r][i] + 0.04}
                       for r in rules for i, s in enumerate(settings)])
    t6q = pd.DataFrame([{"setting": s, "rule": r, "familywise_coverage": c}
                        for s in settings for r, c in (("t-scaled", 0.92), ("t-quantile", 0.94))])
    paper6 = pd.DataFrame({"rule": rules, "familywise_low": [0.7, 0.8, 0.9, 0.96],
                           "familywise_high": [0.8, 0.9, 0.95, 0.99]})
    t7 = pd.DataFrame({"clusters": [40, 80, 200], "stressed_ess": [20, 20, 40], "excluded": [False, False, True],
                       "gaussian_power": [0.5, 0.6, np.nan], "bonferroni_t_power": [0.3, 0.4, np.nan]})
    paper7 = pd.DataFrame({"clusters": [40], "stressed_ess": [20], "gaussian_power": [0.55],
                           "bonferroni_t_power": [0.35]})
    t8 = pd.DataFrame({"gate": ["Null familywise error, N = 40", "Target rule discovery, N = 200"],
                       "value": [0.05, 0.7], "status_level": [0.02, np.nan], "result": ["pass", "pass"]})
    paper8 = pd.DataFrame({"gate": ["Null familywise error, N = 40"], "value": [0.04]})
    kw = dict(methods=rules, n_trials=300, t_quantile="t-quantile")
    out = small_cluster_summary(t6, t6q, t7, t8, paper6, paper7, paper8, **kw)
    # mc_high of the Gaussian band: 0.84, 0.89 -> both below 0.95; at a 0.85 nominal only one
    assert "lies entirely below 0.95 in 2 of 2 settings; Bonferroni-t covers at least 0.95 in 2 of 2" \
        in out["t6_sentence"]
    out85 = small_cluster_summary(t6, t6q, t7, t8, paper6, paper7, paper8, level=0.85, **kw)
    assert "below 0.85 in 1 of 2 settings" in out85["t6_sentence"]
    # MC standard error quoted at the nominal level: sqrt(0.95 * 0.05 / 300) = 1.26 points
    assert "about 1.3 points at 300 trials" in out["t6_gap_sentence"]
    assert "about 2.1 points" in out85["t6_gap_sentence"]
    assert out["t6_gap_sentence"].startswith("The t-scaled low end is at or above the paper's")  # 0.91 >= 0.90
    assert "*gaussian* 80.0% to 85.0% (paper 70.0% to 80.0%)" in out["t6_sentence"]
    assert "40/20: 50.0% / 30.0% (paper 55.0% / 35.0%)" in out["t7_sentence"]
    assert "80/20: 60.0% / 40.0% (no paper row)" in out["t7_sentence"] and "200/40" not in out["t7_sentence"]
    assert "50.0% to 60.0% (ESS 20)" in out["t7_ess_sentence"]
    assert "(pass; paper 4.0%)" in out["t8_sentence"] and "2 of 2 gates pass" in out["t8_sentence"]
    assert "2.0% (N = 40)" in out["t8_status"]
    with pytest.raises(ValueError, match="n_trials"):
        small_cluster_summary(t6, t6q, t7, t8, paper6, paper7, paper8, methods=rules, n_trials=0)


def _t9(values, best):
    methods = ["kms", "mmd", "max_sliced", "no_radius", "linear_only"]
    rows = [{"mechanism": m, **dict(zip(methods, v)), "best": b} for (m, v), b in zip(values.items(), best)]
    return pd.DataFrame(rows), methods


def test_geometry_b_summary_counts_agreement_ranks_and_the_ceiling_threshold():
    from agentstudies.studies.sasst.sentences import geometry_b_summary

    mech = ["linear", "xor", "circular", "policy_by_tool"]
    t9, methods = _t9({"linear": [0.9, 0.8, 0.7, 0.6, 0.95], "xor": [0.5, 0.6, 0.5, 0.5, 0.5],
                       "circular": [0.55, 0.5, 0.5, 0.5, 0.5], "policy_by_tool": [0.7, 0.8, 0.9, 0.6, 0.65]},
                      ["linear_only", "mmd", "kms", "max_sliced"])
    paper9 = t9.assign(best=["linear_only", "kms", "kms", "kms"])
    ceil = pd.DataFrame({"full registry": [0.99, 0.85, 0.92, 0.97]}, index=mech)
    diag = pd.DataFrame({"mean feasible candidates": [10, 20, 30, 40, 50]}, index=methods)
    out = geometry_b_summary(t9, paper9, ceil, diag, mechanisms=mech, methods=methods)
    assert "agrees with the paper on 2 of 4 mechanisms" in out["b_best"]  # linear and circular
    # linear_only is best of 5 on linear (rank 1); on policy_by_tool kms, mmd, max_sliced beat 0.65 -> rank 4
    assert "ranks 1 of 5 on linear, 4 of 5 on policy_by_tool" in out["b_linear"]
    assert "*xor* 0.85 (cannot test recovery)" in out["b_can_test"]
    assert "*circular* 0.92 (can test recovery)" in out["b_can_test"]
    strict = geometry_b_summary(t9, paper9, ceil, diag, mechanisms=mech, methods=methods, min_ceiling=0.95)
    assert "*circular* 0.92 (cannot test recovery)" in strict["b_can_test"] and "at least 0.95" in strict["b_can_test"]
    assert "ceiling of 0.85 to 0.92" in out["b_nonlinear"]
    assert out["b_radius"] == "Mean feasible candidates: kms 10, mmd 20, max_sliced 30, no_radius 40, linear_only 50."
    with pytest.raises(KeyError, match="best"):
        geometry_b_summary(t9.drop(columns="best"), paper9, ceil, diag, mechanisms=mech, methods=methods)


def test_geometry_audit_summary():
    from agentstudies.studies.sasst.sentences import geometry_audit_summary

    t10 = pd.DataFrame({"geometry": ["a", "b", "no_radius"], "auc": [0.6, 0.7, 0.8],
                        "correct_recovery": [0.2, 0.2, 0.5]})
    paper10 = t10.assign(auc=[0.5, 0.5, 0.9], correct_recovery=[0.0, 0.0, 0.9])
    budget = pd.DataFrame({"target_within": [1.0, 0.0]}, index=["a", "b"])
    s = geometry_audit_summary(t10, paper10, budget, geometries=["a", "b"])["a_sentence"]
    assert s.startswith("The target tilt lies within the budget in 1 of 2 geometries")
    assert "Held-out AUC with a budget is 0.60 to 0.70 against 0.80 without a radius (paper 0.50 against 0.90)" in s
    assert "correct recovery 0.20 with a budget and 0.50 without (paper 0.00 and 0.90)" in s


def test_geometry_budget_summary_counts_the_target_outside_and_says_when_the_design_decides():
    from agentstudies.studies.sasst.sentences import geometry_budget_summary

    t10 = pd.DataFrame({"geometry": ["a, db", "b, db"], "target_outside": [0.5, 0.0],
                        "correct_recovery": [0.1, 0.3], "auc": [0.55, 0.6]})
    rec = pd.DataFrame({"geometry": ["a, db", "a, db", "b, db", "b, db", "a"],
                        "target_outside": [True, False, False, False, True],
                        "target_percentile": [0.80, 0.30, 0.20, 0.40, 0.99]})
    kw = dict(budget_rows=["a, db", "b, db"], radius_quantile=0.75)
    s = geometry_budget_summary(t10, rec, **kw)["a_budget_sentence"]
    assert "the target tilt falls outside it in 1 of 4 discoveries (0.25;" in s  # the "a" row is not a budget row
    assert "percentile 42 of the registry's distances on average (20 to 80)" in s  # mean 42.5 of 80, 30, 20, 40
    assert "varies with the split" in s
    assert "correct recovery is 0.10 to 0.30 and held-out AUC 0.55 to 0.60" in s
    inside = geometry_budget_summary(t10, rec.assign(target_percentile=0.2, target_outside=False), **kw)
    assert "cannot arise" in inside["a_budget_sentence"] and "0 of 4" in inside["a_budget_sentence"]
    beyond = geometry_budget_summary(t10, rec.assign(target_percentile=0.9, target_outside=True), **kw)
    assert "fixed by the design" in beyond["a_budget_sentence"]