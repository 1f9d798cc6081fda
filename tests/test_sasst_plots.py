"""sasst.plots: every figure fits the text column, says simulated, and names missing columns."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from agentstudies.sasst import plots  # noqa: E402


def _titles(fig) -> str:
    parts = [fig._suptitle.get_text() if fig._suptitle else ""] + [ax.get_title() for ax in fig.axes]
    return " ".join(parts).lower()


def _check(fig):
    w, _ = fig.get_size_inches()
    assert w <= plots.WIDTH + 1e-9, f"figure {w} in wide exceeds the text column"
    assert "simulated" in _titles(fig)
    plt.close(fig)


def test_coverage_and_familywise_and_power():
    t4 = pd.DataFrame([(M, R, rule, 0.94, 0.92, 0.96) for M in (500, 1000) for R in (5, 20)
                       for rule in ("fixed", "learned")], columns=["M", "R", "rule", "coverage", "mc_low", "mc_high"])
    _check(plots.plot_coverage(t4, t4[["M", "R", "rule", "coverage"]]))
    t6 = pd.DataFrame([(s, m, 0.93, 0.91, 0.95) for s in ("flat", "floor") for m in ("gaussian", "hc1")],
                      columns=["setting", "rule", "familywise_coverage", "mc_low", "mc_high"])
    _check(plots.plot_familywise_coverage(t6, ["gaussian", "hc1"]))
    t7 = pd.DataFrame({"clusters": [40, 200], "stressed_ess": [20, 20], "excluded": [False, True],
                       "gaussian_power": [0.1, np.nan], "gaussian_power_low": [0.05, np.nan],
                       "gaussian_power_high": [0.15, np.nan], "bonferroni_t_power": [0.05, np.nan],
                       "bonferroni_t_power_low": [0.02, np.nan], "bonferroni_t_power_high": [0.09, np.nan]})
    fig = plots.plot_power(t7, t7)
    assert len(fig.axes[0].get_xticklabels()) == 1  # the excluded design is not drawn
    _check(fig)


def test_auc_feasibility_scores_and_slots():
    mech, meth = ["linear", "xor"], ["kms", "mmd"]
    t9 = pd.DataFrame({"mechanism": mech, "kms": [0.6, 0.5], "mmd": [0.7, 0.55]})
    se = pd.DataFrame({"kms": [0.01, 0.01], "mmd": [0.02, 0.02]}, index=mech)
    _check(plots.plot_auc(t9, se, meth, mech, t9))
    rec = pd.DataFrame({"setting": ["near_tied_rules", "density_only"], "stability": [0.7, np.nan],
                        "max_density": [np.nan, 7.0], "ess": [np.nan, 30.0]})
    _check(plots.plot_feasibility_checks(rec, stability_threshold=0.6, density_cap=5, min_ess=20))
    rng = np.random.default_rng(0)
    _check(plots.plot_rule_scores([("minilm", rng.normal(size=50), np.arange(50) < 10, 0.6)]))
    slots = pd.DataFrame({"estimate": [0.1, -0.05], "bound": [0.02, np.nan], "status": ["confirmed", "abstained"]},
                         index=["Uniform: Plan + verifier − ReAct", "Stress r1: Confirmation gate − ReAct"])
    fig = plots.plot_slot_report({"profile_a (simulated)": slots})
    assert sorted(t.get_text() for t in fig.axes[0].get_yticklabels()) == ["Stress r1: Gate − ReAct", "Uniform: PV − ReAct"]
    _check(fig)


def test_missing_columns_are_named():
    with pytest.raises(KeyError, match="mc_low"):
        plots.plot_coverage(pd.DataFrame({"M": [1], "R": [1], "rule": ["fixed"], "coverage": [0.9]}))
    with pytest.raises(KeyError, match="status"):
        plots.plot_slot_report({"x": pd.DataFrame({"estimate": [0.1], "bound": [0.0]})})
