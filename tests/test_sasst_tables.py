"""SASST Tables 6-11 through the one table convention (agentstudies.studies.sasst.tables).

Hand-made trial records with counts known in advance; Tables 6 and 9-10 on engine
records are tested in the study modules' tests.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstudies.studies.sasst import small_clusters as sc
from agentstudies.studies.sasst.tables import FeasibilityResult, GeometryResult, SmallClusterResult


def _cp(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    a = 1 - level
    lo = 0.0 if k == 0 else stats.beta.ppf(a / 2, k, n - k + 1)
    hi = 1.0 if k == n else stats.beta.ppf(1 - a / 2, k + 1, n - k)
    return lo, hi


def test_table11_counts_blocked_trials_and_the_most_frequent_check():
    rec = pd.DataFrame({
        "setting": ["density_only"] * 4 + ["stable_positive_rule"] * 2,
        "status": ["abstained", "failed discovery", "abstained", "confirmed", "confirmed", "not confirmed"],
        "checks": ["density", "density", "ESS", "", "", ""],
    })
    t = FeasibilityResult(rec).table(11).set_index("setting")
    assert t.attrs["paper"] == "sasst" and t.attrs["table"] == "11"
    assert t.loc["density_only", "abstention_or_failure"] == 0.75
    assert t.loc["density_only", "recorded_check"] == "density"
    assert t.loc["density_only", "share_of_blocked"] == pytest.approx(2 / 3)
    assert t.loc["stable_positive_rule", "recorded_check"] == "none"
    assert np.isnan(t.loc["stable_positive_rule", "share_of_blocked"])
    assert t.loc["stable_positive_rule", "not confirmed"] == 1
    assert list(t.index) == ["density_only", "stable_positive_rule"]  # the settings' declared order


def test_table7_power_counts_upper_bounds_below_zero_with_exact_intervals():
    pool = np.zeros(164)  # only len(pool) is read
    rec = pd.DataFrame({"n_clusters": [80] * 5, "ess_design": [20] * 5, "max_density": [4.0] * 5,
                        "bound_gaussian": [-0.1, -0.2, 0.1, -0.05, 0.3],
                        "bound_bonferroni-t": [-0.1, 0.2, 0.1, 0.05, 0.3]})
    excluded = [sc.PowerDesign(200, 20)]
    t = SmallClusterResult(pool, (), table7_records=rec, excluded=excluded, level=0.9).table(7)
    row = t.iloc[0]
    assert row["gaussian_power"] == 0.6 and row["bonferroni_t_power"] == 0.2
    assert (row["gaussian_power_low"], row["gaussian_power_high"]) == pytest.approx(_cp(3, 5, 0.9))
    assert bool(t.iloc[1]["excluded"]) and t.iloc[1]["n_trials"] == 0


def test_table8_gates_from_hand_counts():
    def null(supported):
        return pd.DataFrame({"trial": range(len(supported)), "slot": "x", "supported": supported,
                             "status": ["confirmed" if s else "not confirmed" for s in supported], "rule_index": 0})
    control = pd.DataFrame({"trial": range(4), "slot": sc.TARGET_SLOT, "supported": True,
                            "rule_index": [7, 7, 7, 3], "status": ["confirmed", "confirmed", "abstained", "confirmed"]})
    res = SmallClusterResult(None, (), target=7, null40=null([True, False, False, False]),
                             null200=null([False] * 4), control=control)
    t = res.table(8).set_index("gate")
    assert t.loc["Null familywise error, N = 40", "value"] == 0.25
    assert t.loc["Null familywise error, N = 40", "result"] == "fail"  # 0.25 > 0.075
    assert t.loc["Null familywise error, N = 200", "result"] == "pass"
    assert t.loc["Target rule discovery, N = 200", "value"] == 0.75
    assert t.loc["Conditional confirmation, N = 200", "value"] == pytest.approx(2 / 3)
    assert t.loc["End to end detection, N = 200", "value"] == 0.5
    lo, hi = _cp(3, 4)
    assert (t.loc["Target rule discovery, N = 200", "mc_low"], t.loc["Target rule discovery, N = 200", "mc_high"]) \
        == pytest.approx((lo, hi))


def test_missing_records_and_wrong_table_numbers_are_named():
    with pytest.raises(ValueError, match="study_b"):
        GeometryResult().table(9)
    with pytest.raises(ValueError, match="table7_records"):
        SmallClusterResult(None, ()).table(7)
    with pytest.raises(KeyError, match=r"\['9', '10'\]"):
        GeometryResult().table(6)
    assert SmallClusterResult.paper_tables() == ("6", "7", "8")
