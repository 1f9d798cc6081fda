"""Findings of the τ chapters: workflow-stress findings, testability and planted
controls, and the controller-audit findings, on synthetic inputs whose truth is known."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from agentstudies.findings import CONTROL_COLUMNS, TABLE_COLUMNS, Findings
from agentstudies.studies.tau import workflow as ts

PV = "Uniform: Plan + verifier − ReAct"
SHRINK = "p: the discovery choice's gain over ReAct shrinks on confirmation"
NO_GAIN = "p: no average gain over ReAct is confirmed"
NO_STRESS = "p: no stress or control claim is confirmed"
STAB = "p: the most stable frozen rule stays below the stability threshold"


@pytest.fixture(scope="module")
def report():
    """One real ten-slot report on a small synthetic episode table (shape only; the tests
    below set the numbers they judge)."""
    ep, feat = ts._control_episodes("planted", 24, 1, np.random.default_rng(3))
    from agentstudies.sasst import split_clusters

    split = split_clusters(list(feat.index), discovery_fraction=0.5, seed=0)
    fam = ts.tau_family(list(feat.columns))
    radii = ts.tau_radii(feat, split.index[split == "discovery"], fam)
    return ts.run_tau_sasst(ep, feat, split, radii, n_draws=100, n_stability=4, level=0.95, seed=0, min_ess=2)


def _with(rep, *, est, se, disc_gain, statuses=None, stability=None, critical=None, level=None):
    """The report with the Plan + verifier uniform slot at ``est``/``se``, Plan + verifier
    chosen on discovery with gain ``disc_gain`` over ReAct, and optional statuses /
    stabilities of the stressed slots."""
    t = rep.table.copy()
    t.loc[PV, ["estimate", "se"]] = [est, se]
    t["status"] = "not confirmed"
    t["bound"] = 0.0
    if statuses is not None:
        for k, v in statuses.items():
            t.loc[k, "status"] = v
    if stability is not None:
        for k, v in stability.items():
            t.loc[k, "stability"] = v
    disc = dataclasses.replace(rep.discovery, selected_system="Plan + verifier",
                               theta={"ReAct": 0.3, "Plan + verifier": 0.3 + disc_gain, "Confirmation gate": 0.3})
    kw = dict(table=t, discovery=disc)
    if critical is not None:
        kw["critical"] = critical
    if level is not None:
        kw["level"] = level
    return dataclasses.replace(rep, **kw)


def _find(rep, **kw) -> Findings:
    return ts.stress_findings({"p": rep}, labels={"p": "p"}, **kw)


def test_planted_shrinkage_reappears_with_the_hand_computed_band(report):
    rep = _with(report, est=0.0, se=0.05, disc_gain=0.4, critical=2.0)
    f = _find(rep)
    row = f.table().set_index("finding").loc[SHRINK]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((-0.1, 0.1))  # 0 ± 2 · 0.05, by hand
    assert row["verdict"] == "reappears"
    assert "below 0.4" in row["rule"]
    assert list(f.table().columns) == list(TABLE_COLUMNS)


def test_no_shrinkage_is_inconclusive_and_a_larger_confirmation_gain_contradicts(report):
    assert _find(_with(report, est=0.1, se=0.05, disc_gain=0.1, critical=2.0)).verdict(SHRINK) == "inconclusive"
    assert _find(_with(report, est=0.5, se=0.05, disc_gain=0.1, critical=2.0)).verdict(SHRINK) == "contradicted"


def _uniform_se(rep, se):
    t = rep.table.copy()
    t.loc[[s for s in t.index if s.startswith("Uniform: ")], "se"] = se
    return dataclasses.replace(rep, table=t)


def test_confirmed_counts_are_the_papers_exact_criterion(report):
    rep = _uniform_se(_with(report, est=0.3, se=0.005, disc_gain=0.3, critical=2.0), 0.005)
    assert _find(rep).verdict(NO_GAIN) == "reappears"
    assert _find(rep).verdict(NO_STRESS) == "reappears"
    rep = _with(report, est=0.3, se=0.005, disc_gain=0.3, critical=2.0,
                statuses={PV: "confirmed", "Stress r2: Confirmation gate − ReAct": "confirmed"})
    assert _find(rep).verdict(NO_GAIN) == "contradicted"
    assert _find(rep).verdict(NO_STRESS) == "contradicted"


def test_stability_is_judged_by_the_abstain_rule_on_frozen_rules_only(report):
    stressed = [s for s in report.table.index if s.startswith("Stress ")]
    low = {s: 0.2 for s in stressed}
    f = _find(_with(report, est=0.0, se=0.05, disc_gain=0.1, stability=low))
    assert f.verdict(STAB) == "reappears"
    high = dict(low, **{stressed[0]: 0.8})
    assert _find(_with(report, est=0.0, se=0.05, disc_gain=0.1, stability=high)).verdict(STAB) == "contradicted"
    # a failed-discovery slot's stability does not count; none frozen -> measured not testable
    rep = _with(report, est=0.0, se=0.05, disc_gain=0.1, stability=high,
                statuses={s: "failed discovery" for s in stressed})
    row = _find(rep).table().set_index("finding").loc[STAB]
    assert row["verdict"] == "not testable here" and "0 of 6" in row["why"]


def test_an_inert_workflow_makes_its_claims_not_testable(report):
    rep = _with(report, est=0.0, se=0.05, disc_gain=0.4, critical=2.0)
    testab = pd.DataFrame([{"profile": "p", "contrast": c, "next_action_changed": 0.0} for c, _, _ in ts.CONTRASTS])
    f = _find(rep, testab=testab)
    assert f.verdict(SHRINK) == "not testable here"
    assert f.verdict(NO_GAIN) == "not testable here"
    one_acts = testab.assign(next_action_changed=[0.0, 0.2, 0.2])
    f = _find(rep, testab=one_acts)
    assert f.verdict(SHRINK) == "not testable here"  # the choice (Plan + verifier) is inert
    # the gate acted, so the uniform claims stand; at se 0.05 the rule cannot see +3.75 points
    assert f.verdict(NO_GAIN) == "not testable here"
    f = _find(_uniform_se(rep, 0.005), testab=one_acts)
    assert f.verdict(NO_GAIN) == "reappears"


def test_level_is_honoured(report):
    """The band and the rule follow the report's level and critical value: at 95% the
    upper end 0 + 2 · 0.1 = 0.2 lies above the discovery gain 0.15; at 80% 0 + 1 · 0.1 below."""
    rep95 = _with(report, est=0.0, se=0.1, disc_gain=0.15, critical=2.0, level=0.95)
    rep80 = _with(report, est=0.0, se=0.1, disc_gain=0.15, critical=1.0, level=0.8)
    assert _find(rep95).verdict(SHRINK) == "inconclusive"
    r80 = _find(rep80).table().set_index("finding").loc[SHRINK]
    assert r80["ci_high"] == pytest.approx(0.1) and r80["verdict"] == "reappears"
    assert r80["rule"].startswith("80% CI")


def test_seed_flips_row_uses_the_reacts_interval(report):
    flips = pd.DataFrame([{"profile": "p", "workflow": "ReAct", "tasks": 10, "flips": 3, "share": 0.3,
                           "ci_low": 0.1, "ci_high": 0.5, "level": 0.9, "seeds": 2},
                          {"profile": "p", "workflow": "Plan + verifier", "tasks": 10, "flips": 0, "share": 0.0,
                           "ci_low": 0.0, "ci_high": 0.0, "level": 0.9, "seeds": 2}])
    f = _find(_with(report, est=0.0, se=0.05, disc_gain=0.1), seed_flips=flips)
    row = f.table().set_index("finding").loc["p: identical reruns of ReAct flip the verdict on some tasks"]
    assert row["verdict"] == "reappears" and row["rule"].startswith("90% CI")
    flips.loc[0, ["ci_low", "share"]] = [0.0, 0.1]
    f = _find(_with(report, est=0.0, se=0.05, disc_gain=0.1), seed_flips=flips)
    assert f.verdict("p: identical reruns of ReAct flip the verdict on some tasks") == "inconclusive"


def test_findings_refuse_a_report_without_the_ten_slots(report):
    bad = dataclasses.replace(report, table=report.table.iloc[:3])
    with pytest.raises(ValueError, match="ten slots"):
        ts.stress_findings({"p": bad})
    with pytest.raises(ValueError, match="at least one report"):
        ts.stress_findings({})


def _episodes(rows):
    base = dict(profile="p", seed=0, tool_calls=3, irreversible_calls=1, steps=5, termination="done",
                blocked_calls=0, declined_calls=0)
    return pd.DataFrame([{**base, **r} for r in rows])


def test_testability_counts_interventions_and_outcome_changes_by_hand():
    rows = []
    for t in range(4):
        rows.append(dict(task_id=f"t{t}", workflow="ReAct", reward=1.0))
        rows.append(dict(task_id=f"t{t}", workflow="Plan + verifier", reward=1.0 if t < 3 else 0.0,
                         blocked_calls=1 if t == 0 else 0))
        rows.append(dict(task_id=f"t{t}", workflow="Confirmation gate", reward=1.0, steps=6 if t < 2 else 5))
    tb = ts.workflow_testability(_episodes(rows)).set_index("contrast")
    assert tb.loc["Plan + verifier − ReAct", "next_action_changed"] == pytest.approx(1 / 4)
    assert tb.loc["Plan + verifier − ReAct", "outcome_changed"] == pytest.approx(1 / 4)
    assert tb.loc["Confirmation gate − ReAct", "next_action_changed"] == 0.0
    assert tb.loc["Confirmation gate − ReAct", "trace_changed"] == pytest.approx(2 / 4)
    assert tb.loc["Plan + verifier − gate", "next_action_changed"] == pytest.approx(1 / 4)
    assert list(ts.workflow_testability(_episodes(rows)).columns) == ts.TESTABILITY_COLUMNS
    with pytest.raises(KeyError, match="blocked_calls"):
        ts.workflow_testability(_episodes(rows).drop(columns="blocked_calls"))
    with pytest.raises(ValueError, match="duplicate"):
        ts.workflow_testability(pd.concat([_episodes(rows), _episodes(rows[:1])]))


def test_planted_controls_find_the_gain_and_the_null_does_not():
    c = ts.stress_controls(replicates=6, n_tasks=40, n_draws=100, n_stability=2, seed=1, effect=0.35)
    assert list(c.columns) == list(CONTROL_COLUMNS)
    planted, null = c[c["planted"]].iloc[0], c[~c["planted"]].iloc[0]
    assert "planted" in planted["subject"] and "null" in null["subject"]
    assert planted["hits"] >= 4 and null["hits"] <= 1
    assert planted["measures"] == "power" and null["measures"] == "false-positive rate"
    with pytest.raises(ValueError, match="replicates"):
        ts.stress_controls(replicates=1)


def test_planted_control_uses_the_papers_effect_size():
    """The default planted gain is the paper's discovery gain (SASST Table 14, Study F:
    +3.75 points, read here from the paper CSV itself): Plan + verifier succeeds 0.3375
    against 0.30; over 4,000 synthetic tasks the planted share lies within 4 binomial
    standard errors of it."""
    notes = pd.read_csv("data/paper/tau_workflow_stress_notes.csv").set_index("quantity")
    gain = float(notes.loc["discovery_gain_study_f", "value"])
    assert gain == pytest.approx(0.0375)
    c = ts.stress_controls(replicates=2, n_tasks=8, n_draws=40, n_stability=2, seed=1)
    planted = c[c["planted"]].iloc[0]["subject"]
    assert "0.3375 vs 0.30" in planted and "+3.75 points" in planted
    ep, _ = ts._control_episodes("planted", 4000, 1, np.random.default_rng(5), gain)
    share = ep[ep["workflow"] == "Plan + verifier"]["reward"].mean()
    assert abs(share - 0.3375) < 4 * np.sqrt(0.3375 * 0.6625 / 4000)
    with pytest.raises(ValueError, match="effect"):
        ts.stress_controls(replicates=2, effect=0.9)


def test_neutral_profile_zeroes_every_reviewer_probability():
    """At the neutral setting the verifier never rejects or garbles and the user never
    declines, on a long airline task too (large z, w); the agent's own mistakes and the
    name (which keys the episode seed) are the simulated profile's."""
    from agentstudies.agents.tau import get_profile, mistake_probabilities

    neu = ts.neutral_profile("profile_b")
    assert neu.name == "profile_b"
    for task in ("retail/0", "airline/3"):
        p, q = mistake_probabilities(task, neu), mistake_probabilities(task, "profile_b")
        assert all(p[k] == 0.0 for k in ts.REVIEWER_PARAMS)
        assert all(p[k] == q[k] for k in p if k not in ts.REVIEWER_PARAMS)
    assert {f for f in ts.REVIEWER_PARAMS} == {f for f in vars(get_profile("profile_b"))
                                              if f.startswith(("verifier_", "user_decline_"))}


def test_built_in_claims_take_their_verdict_from_the_neutral_run(report):
    """As simulated, the uniform Plan + verifier slot is confirmed (1 of 2: 'no average
    gain' contradicted); in the neutral run nothing is confirmed at se 0.005, where the
    rule sees +3.75 points with power Phi(0.0375 / 0.005 - 2) = Phi(5.5) ~ 1, so the
    verdict is 'reappears', the simulated count 1 shown apart."""
    sim = _with(report, est=0.3, se=0.005, disc_gain=0.3, critical=2.0, statuses={PV: "confirmed"})
    neu = _uniform_se(_with(report, est=0.0, se=0.005, disc_gain=0.3, critical=2.0), 0.005)
    plain = _find(sim)
    assert plain.verdict(NO_GAIN) == "contradicted"
    f = _find(sim, neutral={"p": neu})
    row = f.table().set_index("finding").loc[NO_GAIN]
    assert row["verdict"] == "reappears" and row["basis"] == "built in"
    assert row["estimate"] == 0 and row["set_by_simulation"] == 1
    assert row["neutral"] == ts.NEUTRAL_SETTING and "TauProfile.verifier_detect" in row["built_in"]
    assert "as simulated: contradicted" in row["why"] and "power 1.00" in row["why"]
    # a claim resting on a method property keeps its own verdict
    assert f.verdict(SHRINK) == plain.verdict(SHRINK)
    assert f.table().set_index("finding").loc[SHRINK, "basis"] == "method"
    # an inert neutral run (no workflow changed an action) makes the claim not testable
    inert = pd.DataFrame([{"profile": "p", "contrast": c, "next_action_changed": 0.0} for c, _, _ in ts.CONTRASTS])
    g = _find(sim, neutral={"p": neu}, neutral_testab=inert)
    assert g.verdict(NO_GAIN) == "not testable here" and g.verdict(NO_STRESS) == "not testable here"
    assert f.verdict(NO_STRESS) == "reappears"  # without the measurement the neutral run's 0 of 8 stands
    with pytest.raises(ValueError, match="no report of profile"):
        ts.stress_findings({"p": sim}, neutral={"q": neu})


# ----------------------------------------------------------------------------- controller audit
from agentstudies.studies.tau import controller_audit as ca  # noqa: E402

_PAPER13 = pd.DataFrame({"workflow": ["ReAct", "Plan + verifier", "Confirmation gate"],
                         "invalid_block_recall": [0, 1, 0.5], "valid_approval": [1, 1, 0.5],
                         "confirmed_executed": [1, 0.5, 1], "declined_blocked": [0, 0.5, 1]})


def _replay(pv_exec, gate_exec):
    """A balanced 16-card replay (4 per valid/consent cell) with the decisions given as
    functions of (valid, consent)."""
    rows = []
    for w, f in (("ReAct", lambda v, c: True), ("Plan + verifier", pv_exec), ("Confirmation gate", gate_exec)):
        for k in range(16):
            valid, consent = k % 2 == 0, ("confirmed" if k % 4 < 2 else "declined")
            rows.append({"workflow": w, "valid": valid, "consent": consent, "executed": f(valid, consent)})
    return pd.DataFrame(rows)


def _boundary(n_fail=0):
    return pd.DataFrame({"check": [f"c{i}" for i in range(5)], "passed": [i >= n_fail for i in range(5)]})


def test_audit_planted_routing_reappears_and_a_routing_bug_contradicts():
    good = ca.audit_metrics(_replay(lambda v, c: v, lambda v, c: c == "confirmed"))
    # by hand: verifier executes the valid calls -> (1, 1, 0.5, 0.5); gate the confirmed -> (0.5, 0.5, 1, 1)
    assert good.loc["Plan + verifier", list(ca.TABLE13_METRICS)].tolist() == [1, 1, 0.5, 0.5]
    f = ca.audit_findings(good, _boundary(), paper=_PAPER13)
    assert f.counts()["reappears"] == 4 and list(f.table().columns) == list(TABLE_COLUMNS)
    leaky = ca.audit_metrics(_replay(lambda v, c: True, lambda v, c: c == "confirmed"))  # verifier passes all
    f = ca.audit_findings(leaky, _boundary(n_fail=1), paper=_PAPER13)
    assert f.verdict("Plan + verifier routes the audit deck as Table 13 states") == "contradicted"
    assert f.verdict("Confirmation gate routes the audit deck as Table 13 states") == "reappears"
    assert f.verdict("every controller boundary check passes") == "contradicted"


def test_controller_audit_table13_follows_the_paper_table_convention():
    good = ca.audit_metrics(_replay(lambda v, c: v, lambda v, c: c == "confirmed"))
    r = ca.ControllerAudit(good, _PAPER13)
    t = r.table(13)
    assert r.paper_tables() == ("13",) and t.attrs["paper"] == "tau" and t.attrs["table"] == "13"
    assert list(t.columns) == ["workflow", "metric", "this run", "paper", "equal"] and len(t) == 12
    # the gate's row by hand: it executes the 8 confirmed calls of 16, half of them valid
    gate = t[t["workflow"] == "Confirmation gate"].set_index("metric")["this run"]
    assert gate.tolist() == [0.5, 0.5, 1.0, 1.0] and t["equal"].all()
    assert r.matches().tolist() == [True, True, True]
    leaky = ca.audit_metrics(_replay(lambda v, c: True, lambda v, c: c == "confirmed"))
    assert ca.ControllerAudit(leaky, _PAPER13).matches().to_dict() == {
        "ReAct": True, "Plan + verifier": False, "Confirmation gate": True}
    # a difference below the rounding counts as equal, above it not
    near = good.copy()
    near.loc["ReAct", "valid_approval"] = 1 - 1e-4
    assert ca.ControllerAudit(near, _PAPER13).matches()["ReAct"]
    assert not ca.ControllerAudit(near, _PAPER13, decimals=5).matches()["ReAct"]
    with pytest.raises(KeyError, match="regenerates tau's tables"):
        r.table(14)
    with pytest.raises(KeyError, match="Confirmation gate"):
        ca.ControllerAudit(good.drop(index="Confirmation gate"), _PAPER13)
    with pytest.raises(KeyError, match="declined_blocked"):
        ca.ControllerAudit(good.drop(columns="declined_blocked"), _PAPER13)


def test_audit_episode_routing_exact_and_inert_controllers_not_testable():
    good = ca.audit_metrics(_replay(lambda v, c: v, lambda v, c: c == "confirmed"))
    ep = pd.DataFrame({"workflow": ["ReAct", "Plan + verifier", "Confirmation gate"],
                       "blocked_calls": [0, 2, 0], "declined_calls": [0, 0, 1]})
    name = "in agent episodes, only the verifier blocks and only the gate declines"
    assert ca.audit_findings(good, _boundary(), ep, paper=_PAPER13).verdict(name) == "reappears"
    wrong = ep.assign(blocked_calls=[1, 2, 0])
    assert ca.audit_findings(good, _boundary(), wrong, paper=_PAPER13).verdict(name) == "contradicted"
    inert = pd.DataFrame({"contrast": ["Plan + verifier − ReAct", "Confirmation gate − ReAct"],
                          "next_action_changed": [0.0, 0.0]})
    quiet = ep.assign(blocked_calls=0, declined_calls=0)
    row = ca.audit_findings(good, _boundary(), quiet, inert, paper=_PAPER13).table().set_index("finding").loc[name]
    assert row["verdict"] == "not testable here" and "neither controller" in row["why"]
    with pytest.raises(KeyError, match="declined_calls"):
        ca.audit_findings(good, _boundary(), ep.drop(columns="declined_calls"), paper=_PAPER13)


def test_audit_controls_power_and_false_positive_rate():
    c = ca.audit_controls(replicates=4, seed=0, level=0.9)
    assert list(c.columns) == list(CONTROL_COLUMNS)
    assert (c.loc[c["planted"], "hits"] == 4).all()  # the oracle routing always matches Table 13
    assert (c.loc[~c["planted"], "hits"] == 0).all()  # random answers match all four fractions with prob. < 2^-8
    assert (c["level"] == 0.9).all()
    # exact 90% Clopper-Pearson bound for 4 of 4: (0.05)^(1/4), by hand
    assert c.loc[c["planted"], "ci_low"].iloc[0] == pytest.approx(0.05 ** 0.25)
    with pytest.raises(ValueError, match="replicates"):
        ca.audit_controls(replicates=1)


def test_paper_column_reads_the_papers_own_choice(report):
    """Study G chose the gate: its paper text gives the gate's confirmation value, read from
    data/paper (Table 14), whatever this run chose."""
    from agentstudies.studies import paper_values

    t14 = paper_values("tau_workflow_stress", "table14").set_index("quantity")
    g = "Study G, Qwen2.5-7B (paper)"
    gate = float(t14.loc["Confirmation gate − ReAct on confirmation", g])
    f = ts.stress_findings({"p": _with(report, est=0.0, se=0.05, disc_gain=0.1)}, labels={"p": "p"},
                           study_of={"p": g})
    paper = f.table().set_index("finding").loc[SHRINK, "paper"]
    assert "choice Confirmation gate" in paper and paper.endswith(f"confirmation {gate:g}")


def test_no_gain_carries_its_power_at_the_papers_effect(report):
    """Power of "confirmed" at the paper's +3.75 points: Phi(0.0375 / se - c), by hand
    with scipy; under 0.8 the "no gain" verdict is not testable here, with the power shown."""
    from scipy import stats

    rep = _uniform_se(_with(report, est=0.0, se=0.02, disc_gain=0.1, critical=2.7424), 0.02)
    row = next(r for r in _find(rep).rows if r.finding == NO_GAIN)
    power = stats.norm.cdf(0.0375 / 0.02 - 2.7424)
    assert power < 0.8 and row.verdict == "not testable here" and row.measured == pytest.approx(power)
    assert f"{power:.2f}" in row.why and "+3.75 points" in row.why
    assert row.basis == "built in" and row.built_in
    shrink = next(r for r in _find(rep).rows if r.finding == SHRINK)
    assert shrink.basis == "method"
