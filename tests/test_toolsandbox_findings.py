"""ToolSandbox findings, testability and planted controls on synthetic truths."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agentstudies.studies import toolsandbox as ts


def _episodes(gap: float, *, n: int = 60, seed: int = 0, inert: bool = False) -> pd.DataFrame:
    """Base and +3-distraction episodes of ``n`` scenarios; the arm's similarity is the base's
    plus ``gap`` on every fourth scenario (a mean gap of gap/4), trajectories changed there."""
    rng = np.random.default_rng(seed)
    ref = rng.uniform(0.3, 0.7, n)
    rows = []
    for i in range(n):
        moved = (i % 4 == 0) and not inert
        for aug, sim in (("base", ref[i]), ("3_distraction_tools", ref[i] + (gap if moved else 0.0))):
            rows.append({"base_scenario": f"s{i:03d}", "profile": "base", "seed": 0, "workflow": "ReAct",
                         "augmentation": aug, "similarity": sim,
                         "categories": "state_dependency|single_user_turn" if i % 2 else "single_user_turn",
                         "tool_calls": 3 + (aug != "base" and moved), "failed_calls": 0, "blocked_calls": 0,
                         "declined_calls": 0, "turn_count": 6, "messages": 8})
    return pd.DataFrame(rows)


def _verdict(ep, level=0.95):
    tb = ts.testability(ep)
    f = ts.toolsandbox_findings(ep, tb, profile="base", n_draws=2000, level=level)
    return f, f.verdict("3_distraction_tools lowers similarity against base")


def test_planted_gap_reappears_and_estimate_is_the_mean_gap():
    ep = _episodes(-0.2)
    f, v = _verdict(ep)
    assert v == "reappears"
    row = f.table().set_index("finding").loc["3_distraction_tools lowers similarity against base"]
    assert row["estimate"] == pytest.approx(-0.2 * 15 / 60)  # 15 of 60 scenarios moved by -0.2
    assert row["n"] == 60


def test_no_gap_is_inconclusive_reversed_is_contradicted_inert_is_not_testable():
    assert _verdict(_episodes(0.0))[1] == "not testable here"   # nothing changed: measured 0%
    ep = _episodes(0.0)
    ep.loc[(ep["augmentation"] != "base") & (ep["base_scenario"] == "s000"), "similarity"] += 0.01
    ep.loc[(ep["augmentation"] != "base") & (ep["base_scenario"] == "s004"), "similarity"] -= 0.01
    assert _verdict(ep)[1] == "inconclusive"
    assert _verdict(_episodes(+0.2))[1] == "contradicted"
    f, v = _verdict(_episodes(-0.2, inert=True))
    assert v == "not testable here" and "0%" in f.table().set_index("finding").loc[
        "3_distraction_tools lowers similarity against base", "why"]


def test_testability_shares_count_changed_pairs():
    tb = ts.testability(_episodes(-0.2)).set_index("arm").loc["3_distraction_tools"]
    assert tb["n_pairs"] == 60
    assert tb["share_action_changed"] == pytest.approx(15 / 60)
    assert tb["share_outcome_changed"] == pytest.approx(15 / 60)


def test_level_is_honoured():
    ep = _episodes(-0.03, seed=3)
    f90, _ = _verdict(ep, level=0.90)
    f99, _ = _verdict(ep, level=0.99)
    name = "3_distraction_tools lowers similarity against base"
    w90 = f90.table().set_index("finding").loc[name, ["ci_low", "ci_high"]].astype(float)
    w99 = f99.table().set_index("finding").loc[name, ["ci_low", "ci_high"]].astype(float)
    assert w99["ci_high"] - w99["ci_low"] > w90["ci_high"] - w90["ci_low"]
    assert "90%" in f90.table().set_index("finding").loc[name, "rule"]


def test_tag_gap_is_the_difference_of_scenario_means():
    ep = _episodes(0.0)
    est, lo, hi, n = ts.tag_gap(ep[ep["augmentation"] == "base"], "state_dependency", n_draws=500)
    per = ep[ep["augmentation"] == "base"].set_index("base_scenario")["similarity"]
    odd = [f"s{i:03d}" for i in range(60) if i % 2]
    even = [f"s{i:03d}" for i in range(60) if not i % 2]
    assert est == pytest.approx(per[odd].mean() - per[even].mean())
    assert lo < est < hi and n == 60


def test_controls_power_and_false_positive_rate():
    c = ts.controls(135, replicates=60, n_draws=500, seed=1).set_index("measures")
    assert c.loc["power", "rate"] >= 0.8 and c.loc["power", "planted"]
    assert c.loc["false-positive rate", "rate"] <= 0.15
    assert "planted" in c.loc["power", "subject"] and "null" in c.loc["false-positive rate", "subject"]
    with pytest.raises(ValueError, match="drop"):
        ts.controls(135, drop=0.6)


def test_category_claim_is_built_in_and_judged_on_the_neutral_profile():
    """state_dependency scenarios score lower in the simulated run because the base
    profile gives up on them with p_dependency_giveup > 0; the neutral profile (that
    probability 0, same draws otherwise) decides the verdict, the simulated gap beside it."""
    sim = _episodes(0.0)
    sim.loc[sim["categories"].str.contains("state_dependency"), "similarity"] -= 0.3
    neu = _episodes(0.0)
    f = ts.toolsandbox_findings(sim, ts.testability(sim), profile="base", neutral=neu, n_draws=500)
    r = next(x for x in f.rows if x.finding == "state_dependency scenarios score lower than the rest")
    assert (r.basis, r.built_in) == ("built in", ("ToolAgentProfile.p_dependency_giveup",))
    # the neutral run's tagged and untagged scenarios share one similarity distribution
    # here, so the gap is the sampling difference only; the simulated one is 0.3 lower
    assert r.simulated[0] - r.estimate == pytest.approx(-0.3)
    assert r.verdict != "reappears" and "`p_dependency_giveup` = 0" in r.neutral  # inline code in the sentence
    aug = next(x for x in f.rows if x.finding.startswith("3_distraction_tools"))
    assert aug.basis == "measured" and "rank_tools" in aug.why
    from agentstudies.studies.toolsandbox.run import neutral_profile
    p = neutral_profile("base")
    assert (p.name, p.p_dependency_giveup, p.p_insufficient, p.p_canonicalization) == ("base", 0.0, 0.0, 0.0)
