"""Testability and planted controls of the feasibility chapter:
``feasibility_testability`` on hand-made records, ``feasibility_controls`` on a few real
Study C replicates (the planted subject is blocked by construction, the null is not)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agentstudies.findings import CONTROL_COLUMNS
from agentstudies.studies.sasst import feasibility as fz
from agentstudies.studies.sasst.findings import (
    TESTABILITY_COLUMNS,
    feasibility_controls,
    feasibility_testability,
)


def test_testability_by_hand():
    rec = pd.DataFrame({
        "setting": ["a"] * 4 + ["b"] * 2,
        "stage": ["discovery", "confirmation", "confirmation", "stability", "discovery", "discovery"],
        "status": ["failed discovery", "confirmed", "not confirmed", "abstained", "failed discovery",
                   "failed discovery"],
        "estimate": [np.nan, -0.2, -0.1, -0.1, np.nan, np.nan],
        "uniform_estimate": [0.0, -0.1, -0.1, 0.0, 0.0, 0.0],
    })
    t = feasibility_testability(rec).set_index("setting")
    assert list(t.reset_index().columns) == list(TESTABILITY_COLUMNS)
    assert t.loc["a", "rule_frozen"] == 0.75
    assert t.loc["a", "admitted_by_every_check"] == 0.5
    # trial 2 moved the estimate (-0.2 vs -0.1), trial 4 too (-0.1 vs 0); trial 3 did not
    assert t.loc["a", "estimand_changed"] == 0.5
    assert t.loc["a", "changed_of_frozen"] == pytest.approx(2 / 3)
    assert t.loc["b", "rule_frozen"] == 0.0 and np.isnan(t.loc["b", "changed_of_frozen"])
    with pytest.raises(KeyError, match="uniform_estimate"):
        feasibility_testability(rec.drop(columns="uniform_estimate"))


def test_trial_records_carry_the_uniform_estimate():
    rec = fz.run_feasibility(fz.FeasibilityConfig(n_stability=3, n_draws=50), 1, seed=3,
                             settings=("stable_positive_rule",))
    assert np.isfinite(rec["uniform_estimate"]).all()


def test_controls_planted_found_null_not_and_labels():
    c = feasibility_controls(replicates=3, trials=2, seed=1, n_stability=2)
    assert list(c.columns) == list(CONTROL_COLUMNS)
    planted, null = c[c["planted"]].iloc[0], c[~c["planted"]].iloc[0]
    assert "planted" in planted["subject"] and "null" in null["subject"]
    assert planted["hits"] == 3 and planted["measures"] == "power"  # density cap blocks by construction
    assert null["hits"] == 0 and null["measures"] == "false-positive rate"
    with pytest.raises(ValueError, match="replicates"):
        feasibility_controls(replicates=1)
    with pytest.raises(ValueError, match="trials"):
        feasibility_controls(trials=0)
