"""What each recovery arm changed, and the chapter's sentences built from it: testability
counts with exact intervals, their pooled view, the refresh-reach headline, the router's
training rescues and the sentences -- each on a hand-built table with hand-worked values.

Exact (Clopper-Pearson) bounds are checked against their closed forms: 0 of n has the
two-sided 95 % interval [0, 1 - 0.025^(1/n)] and the one-sided 95 % upper bound
1 - 0.05^(1/n); n of n has the lower bound 0.025^(1/n); other counts against the beta
quantiles B(a/2; k, n-k+1) and B(1-a/2; k+1, n-k) from scipy.stats.beta.
"""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

from agentstudies.studies.alfworld import recovery as ar
from agentstudies.studies.alfworld.recovery.pipeline import RouterPipeline, training_outcomes
from agentstudies.studies.alfworld.recovery.report import MEASURED_WHY


def _cp(k, n, level=0.95):
    a = 1 - level
    lo = 0.0 if k == 0 else beta.ppf(a / 2, k, n - k + 1)
    hi = 1.0 if k == n else beta.ppf(1 - a / 2, k + 1, n - k)
    return lo, hi


def _fork(cohort, op, cond, delay, changed=False, nxt=False, y0=0, y1=0, active=True, task="t"):
    return dict(cohort=cohort, task_id=task, operation=op, condition=cond, delay=delay, y_without=y0, y_with=y1,
                active=active, changed=changed, changed_next=nxt)


def _paired():
    """Four refresh forks of (primary, clean, 1): one changed all, one only later actions,
    one ended (inactive), one unchanged; two ablated forks of (primary, stale-2, 0): both
    changed everything including the outcome."""
    return pd.DataFrame([
        _fork("primary", "refresh", "clean", 1, True, True, 1, 0, task="a"),
        _fork("primary", "refresh", "clean", 1, True, False, 1, 1, task="b"),
        _fork("primary", "refresh", "clean", 1, False, False, 1, 1, active=False, task="c"),
        _fork("primary", "refresh", "clean", 1, False, False, 0, 0, task="d"),
        _fork("primary", "ablated", "stale-2", 0, True, True, 0, 1, task="a"),
        _fork("primary", "ablated", "stale-2", 0, True, True, 0, 1, task="b"),
    ])


def test_testability_counts_and_exact_intervals():
    t = ar.testability(SimpleNamespace(paired=_paired())).set_index(["operation", "condition", "delay"])
    assert tuple(ar.testability(SimpleNamespace(paired=_paired())).columns) == ar.TESTABILITY_COLUMNS
    r = t.loc[("refresh", "clean", 1)]
    assert (r["forks"], r["active"]) == (4, 3)
    assert (r["action_changed_k"], r["next_action_changed_k"], r["outcome_changed_k"]) == (2, 1, 1)
    assert r["action_changed"] == 0.5 and r["next_action_changed"] == 0.25 and r["outcome_changed"] == 0.25
    assert np.allclose([r["next_action_changed_ci_low"], r["next_action_changed_ci_high"]], _cp(1, 4))
    a = t.loc[("ablated", "stale-2", 0)]
    # 2 of 2: [0.025^(1/2), 1] = [0.158, 1]
    assert np.isclose(a["outcome_changed_ci_low"], 0.025 ** 0.5) and a["outcome_changed_ci_high"] == 1.0
    # a wider level: 2 of 2 at 50 % has the lower bound 0.25^(1/2) = 0.5
    t50 = ar.testability(SimpleNamespace(paired=_paired()), level=0.5).set_index(["operation", "delay"])
    assert np.isclose(t50.loc[("ablated", 0), "action_changed_ci_low"], 0.5)


def _old_testab():
    """A testability.csv from before the counts: shares only (as the archived RL run)."""
    return pd.DataFrame(dict(
        cohort=["primary", "independent", "primary", "primary", "evaluation"],
        operation=["refresh"] * 4 + ["replan"],
        condition=["stale-1", "stale-2", "clean", "missing", "stale-2"],
        delay=[1, 1, 1, 1, 4],
        forks=[10, 30, 20, 5, 7],
        active=[10, 30, 20, 5, 7],
        action_changed=[0.5, 0.1, 0.0, 0.4, 0.0],
        next_action_changed=[0.2, 0.1, 0.0, 0.4, 0.0],
        outcome_changed=[0.1, 0.0, 0.0, 0.2, 0.0]))


def test_testability_summary_pools_cohorts_and_stale_conditions():
    s = ar.testability_summary(_old_testab()).set_index(["operation", "conditions", "delay"])
    st = s.loc[("refresh", "stale", 1)]
    # stale-1 (primary) + stale-2 (independent): 2 + 3 = 5 next actions of 10 + 30 forks
    assert (st["forks"], st["next_action_changed_k"], st["outcome_changed_k"]) == (40, 5, 1)
    assert np.isclose(st["next_action_changed"], 5 / 40)
    assert np.allclose([st["next_action_changed_ci_low"], st["next_action_changed_ci_high"]], _cp(5, 40))
    cl = s.loc[("refresh", "clean", 1)]
    assert cl["next_action_changed_k"] == 0 and np.isclose(cl["next_action_changed_ci_high"], 1 - 0.025 ** (1 / 20))
    assert s.loc[("refresh", "missing", 1), "next_action_changed_k"] == 2
    assert len(s) == 4  # refresh: clean, missing, stale; replan: stale
    pooled = ar.testability_summary(_old_testab(), by_class=False).set_index(["operation", "delay"])
    assert pooled.loc[("refresh", 1), "forks"] == 65 and pooled.loc[("refresh", 1), "next_action_changed_k"] == 7
    # saved counts win over share x forks
    new = _old_testab().assign(next_action_changed_k=[1, 3, 0, 2, 0])
    assert ar.testability_summary(new).set_index(["operation", "conditions", "delay"]).loc[
        ("refresh", "stale", 1), "next_action_changed_k"] == 4
    with pytest.raises(KeyError, match="forks"):
        ar.testability_summary(_old_testab().drop(columns="forks"))


def _reach_paired():
    return pd.DataFrame([
        _fork("primary", "refresh", "clean", 0, True, True),       # delay 0: not counted
        _fork("primary", "refresh", "clean", 1),
        _fork("primary", "refresh", "clean", 2),
        _fork("independent", "refresh", "clean", 4, active=False),  # ended: counts, unchanged
        _fork("primary", "refresh", "stale-1", 1, True, True),
        _fork("evaluation", "refresh", "stale-2", 2, True, True),
        _fork("primary", "refresh", "stale-2", 4, True, False),
        _fork("primary", "refresh", "missing", 1, True, True),     # missing: not counted
        _fork("mechanism", "ablated", "stale-2", 4, True, True),   # another arm: not counted
    ])


def test_refresh_reach_counts_clean_and_stale_forks_after_delay_zero():
    r = ar.refresh_reach(_reach_paired()).set_index("forks")
    assert list(r.index) == ["clean + stale", "clean", "stale"]
    assert (r.loc["clean + stale", "k"], r.loc["clean + stale", "n"], r.loc["clean + stale", "active"]) == (2, 6, 5)
    assert (r.loc["clean", "k"], r.loc["clean", "n"]) == (0, 3) and (r.loc["stale", "k"], r.loc["stale", "n"]) == (2, 3)
    assert np.allclose(r.loc["clean + stale", ["ci_low", "ci_high"]].to_numpy(float), _cp(2, 6))
    assert np.isclose(r.loc["clean", "ci_high"], 1 - 0.025 ** (1 / 3))
    s = ar.reach_sentence(r.reset_index())
    assert "next action in 2 of 6 (33.3 %, exact 95 % interval" in s
    assert "clean 0 of 3 (0.0 %" in s and "stale 2 of 3 (66.7 %" in s
    none = ar.refresh_reach(_reach_paired().assign(changed_next=False))
    # 0 of 6: one-sided 95 % upper bound 1 - 0.05^(1/6) = 39.3 %
    assert "in none of 6 (exact one-sided 95 % upper bound of the share 39.3 %)" in ar.reach_sentence(none)
    with pytest.raises(KeyError, match="changed_next"):
        ar.refresh_reach(_reach_paired().drop(columns="changed_next"))


def _train_rows():
    """Two tasks x (clean, stale-2) x delays (1, 2, 4). Under stale-2 task a is rescued at
    d = 1 only, task b harmed at d = 2; under clean task a is harmed at d = 4 (inactive rows
    carry y_with = y_without)."""
    rows = []
    for task, cond, d, y0, y1, act in [
        ("a", "stale-2", 1, 0, 1, True), ("a", "stale-2", 2, 0, 0, True), ("a", "stale-2", 4, 0, 0, True),
        ("b", "stale-2", 1, 1, 1, True), ("b", "stale-2", 2, 1, 0, True), ("b", "stale-2", 4, 1, 1, False),
        ("a", "clean", 1, 1, 1, True), ("a", "clean", 2, 1, 1, True), ("a", "clean", 4, 1, 0, True),
        ("b", "clean", 1, 1, 1, True), ("b", "clean", 2, 1, 1, True), ("b", "clean", 4, 1, 1, True),
    ]:
        rows.append(dict(task_id=task, condition=cond, delay=d, y_without=y0, y_with=y1, active=act))
    return pd.DataFrame(rows)


def test_training_outcomes_count_rescues_and_harms_per_delay():
    o = training_outcomes(_train_rows()).set_index(["observation", "delay"])
    assert list(o.index.get_level_values(0)[:3]) == ["wrong"] * 3  # wrong-observation rows first
    assert (o.loc[("wrong", 1), "rescues"], o.loc[("wrong", 1), "harms"]) == (1, 0)
    assert (o.loc[("wrong", 2), "rescues"], o.loc[("wrong", 2), "harms"]) == (0, 1)
    assert o.loc[("wrong", 4), "active"] == 1 and o.loc[("clean", 4), "harms"] == 1
    # 0 of 2 one-sided: 1 - 0.05^(1/2); 1 of 2 one-sided: sqrt(0.95)
    assert np.isclose(o.loc[("wrong", 2), "rescue_upper"], 1 - 0.05 ** 0.5)
    assert np.isclose(o.loc[("wrong", 1), "rescue_upper"], 0.95 ** 0.5)
    with pytest.raises(KeyError, match="active"):
        training_outcomes(_train_rows().drop(columns="active"))


def _pipe(rows, thresholds, *, intervene=()):
    """A RouterPipeline of stand-ins: CIR frozen at ``thresholds``; on a 4-trajectory
    evaluation pool it refreshes the trajectories in ``intervene`` ((index, delay) pairs)."""
    ep = pd.DataFrame(dict(task_id=["e1", "e1", "e2", "e2"], condition=["clean", "stale-2"] * 2, policy="cir",
                           intervene=False, delay=np.nan, y_never=[1, 0, 1, 0], y_policy=[1, 0, 1, 0]))
    for i, d in intervene:
        ep.loc[i, ["intervene", "delay"]] = True, d
    pols = ["never", "cir", "always-d1", "always-d2", "always-d4", "random-0%"]
    table = pd.DataFrame(dict(policy=pols, condition="all", delta=[0.0, 0.0, -25.0, 0.0, 0.0, 0.0],
                              ci_low=[0.0, 0.0, -50.0, 0.0, 0.0, 0.0], ci_high=0.0, rescue=0, harm=[0, 0, 1, 0, 0, 0]))
    fit = SimpleNamespace(routers={"cir": SimpleNamespace(thresholds=thresholds)},
                          params=dict(epsilon=0.02, clean="clean"),
                          selection=pd.DataFrame(dict(router=["cir"], oof_rate=[0.25])))
    rs = pd.DataFrame(dict(policy=["cir"], rescued=[0], rescue_tasks=[0], same_rescued_set=[True]))
    leak = pd.DataFrame(dict(feature=["steps_frac"], horizon_feature=[True], separation=[np.nan]))
    return RouterPipeline(fit=fit, cate=None, cate_selection={}, evaluation=SimpleNamespace(episodes=ep, table=table),
                          vault=None, train_tasks=2, eval_tasks=2, train_used="factual-success", features=[],
                          dropped_features=["steps_frac"], cir_eval_rate=len(intervene) / 4, rescue_sets=rs,
                          leak=leak, train_rows=rows)


def test_router_behaviour_says_why_it_never_refreshes():
    inf = dict(alpha=np.inf, beta=np.inf, gamma=np.inf)
    rows = _train_rows()
    d1 = (rows["condition"] == "stale-2") & (rows["delay"] == 1)
    no_rescue = rows.assign(y_with=np.where(d1, rows["y_without"], rows["y_with"]))  # d = 1 changes nothing
    b = ar.router_sentences(_pipe(no_rescue, inf))["behaviour"]
    assert b.startswith("CIR froze its thresholds at α = ∞, β = ∞, γ = ∞.")
    assert "refreshed 0 of 4 trajectories (0.0 %)" in b
    assert "always at delay 1: -25.0 pp [-50.0, +0.0]" in b and "random at CIR's rate: +0.0 pp" in b
    # no rescue at d = 1 now: 0 of 2 at every delay, one-sided bound 1 - 0.05^(1/2) = 77.6 %
    assert "a refresh at delay 1 rescued 0 and harmed 0 of 2 (rescue share at most 77.6 %)" in b
    assert "a refresh at delay 2 rescued 0 and harmed 1 of 2" in b
    assert "nothing a threshold rule can gain" in b
    with_rescue = ar.router_sentences(_pipe(rows, inf))["behaviour"]
    assert "a refresh at delay 1 rescued 1 and harmed 0 of 2 (rescue share at most 97.5 %)" in with_rescue
    assert "Rescues existed" in with_rescue and "1 at delay 4" in with_rescue
    finite = ar.router_sentences(_pipe(rows, dict(alpha=0.2, beta=0.5, gamma=0.0)))["behaviour"]
    assert "α = 0.2, β = 0.5, γ = 0" in finite and "finite, but no evaluation trajectory passed" in finite
    acts = ar.router_sentences(_pipe(rows, dict(alpha=0.2, beta=0.5, gamma=0.0), intervene=[(1, 2), (3, 4)]))
    assert "refreshed 2 of 4 trajectories (50.0 %) (1 at delay 2, 1 at delay 4)" in acts["behaviour"]
    assert "say why" not in acts["behaviour"]
    # when it refreshes, the training rows say which rescues its thresholds had to find (1 + 0 + 0)
    assert "What a refresh did to its training trajectories" in acts["behaviour"]
    assert "1 rescues in all" in acts["behaviour"]


def test_router_behaviour_sentence_from_saved_tables_equals_the_live_one():
    rows = _train_rows()
    th = dict(alpha=0.2, beta=0.5, gamma=0.0)
    pipe = _pipe(rows, th, intervene=[(1, 2)])
    live = ar.router_sentences(pipe)["behaviour"]
    saved = ar.archived_run_sentences(pd.DataFrame(dict(verdict=["inconclusive"])), _old_testab(),
                                      router=dict(thresholds=th, episodes=pipe.evaluation.episodes,
                                                  evaluation=pipe.evaluation.table,
                                                  training=training_outcomes(rows)))["router"]
    assert saved == live
    without = ar.sentences.router_behaviour_sentence(th, pipe.evaluation.episodes, pipe.evaluation.table)
    assert without.endswith("(never refreshing: 0 by definition).")


def test_clean_success_sentence_counts_factual_runs_with_exact_intervals():
    tasks = pd.DataFrame(dict(
        cohort=["independent"] * 4 + ["primary"] * 3 + ["evaluation"],
        feasible=[True, False, True, True, True, True, False, True],
        factual_success=[True, True, False, True, True, False, True, True]))
    s = ar.clean_success_sentence(tasks)
    # independent: every task counts (3 of 4); primary: prefix-feasible only (1 of 2); evaluation ignored
    lo, hi = _cp(3, 4)
    assert (f"on the independent cohort on the valid_unseen floor plans in 3 of 4 (75.0 %, exact 95 % interval "
            f"{100 * lo:.1f}–{100 * hi:.1f} %)") in s
    lo, hi = _cp(1, 2)  # 1 - sqrt(0.975), sqrt(0.975)
    assert np.isclose(lo, 1 - 0.975 ** 0.5) and np.isclose(hi, 0.975 ** 0.5)
    assert f"on the primary cohort's prefix-feasible tasks in 1 of 2 (50.0 %, exact 95 % interval {100 * lo:.1f}–" in s
    paper = pd.DataFrame(dict(cohort=["primary", "independent"], prefix_feasible=[106.0, 100.0],
                              feasible_factual_success=[93.0, 89.0]))
    assert s + " The paper's Qwen3-14B (paper): 93 of 106 prefix-feasible primary tasks (87.7 %)." == \
        ar.clean_success_sentence(tasks, paper)
    with pytest.raises(KeyError, match="factual_success"):
        ar.clean_success_sentence(tasks.drop(columns="factual_success"))


def test_untestable_sentence_groups_findings_by_reason():
    f = pd.DataFrame(dict(
        finding=["A", "B", "C", "D"], verdict=["not testable here", "not testable here", "inconclusive",
                                              "not testable here"],
        why=[f"{MEASURED_WHY}; arm x changed nothing in 0 of 90 forks", f"{MEASURED_WHY}; arm x changed nothing in 0 "
             "of 90 forks", f"{MEASURED_WHY}", "arm y changed no outcome"]))
    s = ar.untestable_sentence(f)
    assert s == ("3 findings are not testable here: “A”, “B”, because arm x changed nothing in 0 of 90 forks; "
                 "“D”, because arm y changed no outcome.")
    assert ar.untestable_sentence(f.iloc[[2]]).startswith("No finding is marked not testable here")
    with pytest.raises(KeyError, match="why"):
        ar.untestable_sentence(f.drop(columns="why"))


def test_agent_view_sentence_follows_the_policy():
    mem = SimpleNamespace(admissible=True, params=dict(name="M", memory=True, memory_window=8),
                          meta=dict(objective="cloning"))
    s = ar.agent_view_sentence(mem)
    assert s.startswith("the checkpoint `M`, a small linear policy trained in this project (cloning), which reads "
                        "the goal, the latest text it is shown and the engine's admissible commands")
    assert "its own transcript" in s and "last 8 shown observations" in s and "never the expert plan" in s
    plain = ar.agent_view_sentence(SimpleNamespace(admissible=False, params=dict(name="H"),
                                                   meta=dict(source="hand-set")))
    assert "hand-set (untrained) weights, which reads the goal and the latest text it is shown," in plain
    assert "transcript" not in plain and "admissible" not in plain
    llm = ar.agent_view_sentence(SimpleNamespace(messages=[]))
    assert llm.startswith("a language model in one ReAct conversation") and "no admissible list" in llm


def test_agent_view_sentence_of_the_shipped_checkpoints():
    from agentstudies.agents.alfworld import LearnedAlfworldPolicy

    mem = ar.agent_view_sentence(LearnedAlfworldPolicy.load("BC-memory"))
    # the memory policy's window: the 8 latest shown observations (its module docstring)
    assert "`BC-memory`" in mem and "last 8 shown observations" in mem and "admissible" in mem
    rl = ar.agent_view_sentence(LearnedAlfworldPolicy.load("RL"))
    assert "`RL`" in rl and "transcript" not in rl and "admissible" in rl


def test_archived_run_sentences_read_old_and_new_testability():
    findings = pd.DataFrame(dict(verdict=["not testable here", "inconclusive"], finding=["A", "B"],
                                 why=[f"{MEASURED_WHY}; arm x changed nothing", ""]))
    old = _old_testab()
    new = ar.testability_summary(old, by_class=False).assign(condition="pooled")  # carries *_k columns
    s_old = ar.archived_run_sentences(findings, old, _reach_paired())
    s_new = ar.archived_run_sentences(findings, new)
    # refresh: next 2 + 3 + 0 + 2 = 7 of 65 forks, outcomes 1 + 0 + 0 + 1 = 2
    want = "A refresh changed the agent's next action in 7 of 65 refresh forks (10.8 %) and the outcome in 2 (3.1 %)."
    assert s_old["testability"] == want and s_new["testability"] == want
    assert "2 of 6" in s_old["reach"] and "reach" not in s_new
    assert s_old["untestable"] == "1 finding is not testable here: “A”, because arm x changed nothing."


def test_every_checkpoint_the_chapter_accepts_loads():
    from agentstudies.agents.alfworld import LearnedAlfworldPolicy, checkpoint_dir
    from agentstudies.studies.alfworld.recovery.run import CHECKPOINTS

    for name in CHECKPOINTS:
        assert LearnedAlfworldPolicy.load(name).name == name
    # every shipped checkpoint with the admissible list is offered (the "-nolist" ablation ones are not)
    shipped = {p.stem for p in checkpoint_dir().glob("*.npy") if not p.stem.endswith("-nolist")}
    assert shipped | {"hand"} == set(CHECKPOINTS)
