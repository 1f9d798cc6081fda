"""Study C (SASST D.5): the settings' support properties in closed form, the recorded
checks on hand-made report rows, and short engine runs of each setting."""

import numpy as np
import pandas as pd
import pytest

from agentstudies.sasst import Slot
from agentstudies.studies import sasst_feasibility as fz


def _ess_density(n, k, lift):
    """Closed forms for a threshold rule with ``lift`` on ``k`` of ``n`` tasks."""
    tot = k * lift + (n - k)
    return tot**2 / (k * lift**2 + (n - k)), n * lift / tot


def test_severe_concentration_fails_both_checks_for_every_plausible_count():
    # rare flag share 0.04 on 100 discovery tasks: k = 1..15 covers P > 0.999 of k >= 1
    for k in range(1, 16):
        ess, dens = _ess_density(100, k, 60.0)
        assert ess < 20 and dens > 5, k


def test_density_only_fails_density_while_ess_passes():
    for k in range(1, 11):  # minor flag share 0.03: k <= 10 has probability > 0.999
        ess, dens = _ess_density(100, k, 10.0)
        assert dens > 5 and ess >= 20, k


def test_split_support_rule_share_and_global_checks():
    # lift 8 on the half outside S_1: S_1 carries 50 / (50 + 8 * 50) = 1/9 of the mass
    ess, dens = _ess_density(100, 50, 8.0)
    assert 1 / 9 < 0.2 and ess >= 20 and dens <= 5


def test_stable_tilt_registry_stays_below_the_density_cap():
    # strength 0.75, clip 2: max ratio exp(1.5) / E[exp(0.75 clip(u, -2, 2))], u ~ N(0, 1)
    u = np.random.default_rng(0).standard_normal(1_000_000)
    assert np.exp(1.5) / np.mean(np.exp(0.75 * np.clip(u, -2, 2))) < 5


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
    assert (split["status"] == "failed feasibility").all() and (split["checks"] == "split support").all()
    # batch coincides with S_1 on the confirmation side: the share is exactly 50 / 450
    np.testing.assert_allclose(split["min_split_share"], 1 / 9)
    assert split["reason"].str.contains("split denominator share").all()
    t = fz.table11(a)
    assert t.set_index("setting").loc["split_support_only", "abstention_or_failure"] == 1.0


def test_same_seed_sequence_twice_gives_the_same_table():
    cfg = fz.FeasibilityConfig(n_stability=5, n_draws=100)
    ss = np.random.SeedSequence(9)
    a = fz.run_feasibility(cfg, 1, seed=ss, settings=("stable_positive_rule",))
    b = fz.run_feasibility(cfg, 1, seed=ss, settings=("stable_positive_rule",))
    pd.testing.assert_frame_equal(a, b)
