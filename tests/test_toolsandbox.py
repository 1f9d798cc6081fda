"""ToolSandbox-style world, scoring, scripted agents."""

from __future__ import annotations

import dataclasses
import inspect
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstudies.envs.toolsandbox import (
    AUGMENTATIONS,
    CATEGORIES,
    NAMESPACES,
    TOOLS,
    Constraint,
    ExecutionContext,
    Message,
    MessageCapReached,
    Milestone,
    Role,
    Say,
    ToolCall,
    ToolSandboxEnv,
    best_mapping,
    column_similarity,
    evaluate,
    generate_scenarios,
    make_cases,
    replay_gold,
    rouge_l,
    turn_count,
    validate_scenario,
)
from agentstudies.envs.toolsandbox.testing import brute_force_mapping


@pytest.fixture(scope="module")
def scenarios():
    return generate_scenarios(0)


@pytest.fixture(scope="module")
def cases(scenarios):
    return make_cases(scenarios)


# ------------------------------------------------------------ scenarios
def test_counts_and_coverage(scenarios, cases):
    assert len(scenarios) >= 129  # ToolSandbox: 129 base scenarios
    assert len(cases) == 8 * len(scenarios) >= 1032
    assert len({c.case_id for c in cases}) == len(cases)
    tags = {t for s in scenarios for t in s.categories}
    assert tags == set(CATEGORIES)
    assert {c.augmentation for c in cases} == set(AUGMENTATIONS)
    assert len(TOOLS) >= 34
    for s in scenarios:
        assert s.milestones and s.allow_list
        # ToolSandbox keeps minefields for insufficient-information scenarios (evaluation.py 777-786)
        assert bool(s.minefields) == ("insufficient_information" in s.categories), s.scenario_id


def test_every_scenario_validates(scenarios):
    bad = {s.scenario_id: validate_scenario(s) for s in scenarios}
    assert not {k: v for k, v in bad.items() if v}


def test_gold_scores_one_on_every_case(cases):
    for c in cases:
        ev = replay_gold(c).evaluate()
        assert ev.similarity == 1.0, c.case_id
        assert ev.matched == len(c.scenario.milestones) and not ev.minefield_hit


def test_minefield_zeroes_an_otherwise_perfect_trajectory(cases):
    mined = [c for c in cases[::8] if c.scenario.minefields]
    assert len(mined) >= 10
    for c in mined:
        # the trigger calls the forbidden tool: any non-zero minefield similarity nullifies
        # the trajectory (ToolSandbox evaluation.py 978-982)
        assert not replay_gold(c).evaluate().minefield_hit, c.case_id
        ev = replay_gold(c, trigger=True).evaluate()
        assert ev.minefield_hit and ev.similarity == 0.0, c.case_id


def test_augmentations_distractors_and_scrambles(scenarios, cases):
    by = {(c.scenario.scenario_id, c.augmentation): c for c in cases}
    s = scenarios[0]
    base = set(by[(s.scenario_id, "base")].view.tools)
    assert base == set(s.allow_list)
    three = set(by[(s.scenario_id, "3_distraction_tools")].view.tools)
    ten = set(by[(s.scenario_id, "10_distraction_tools")].view.tools)
    assert len(three - base) == 3 and three <= ten and len(ten - base) == 10
    assert set(by[(s.scenario_id, "all_tools")].view.tools) == set(TOOLS)
    for aug in ("tool_name_scrambled", "tool_description_scrambled", "arg_description_scrambled", "arg_type_scrambled"):
        assert set(by[(s.scenario_id, aug)].view.tools) == three
    names = [sp["name"] for sp in by[(s.scenario_id, "tool_name_scrambled")].view.specs]
    assert not set(names) & set(TOOLS)
    assert all(sp["description"] == "" for sp in by[(s.scenario_id, "tool_description_scrambled")].view.specs)
    assert all(a["type"] == "unknown" for sp in by[(s.scenario_id, "arg_type_scrambled")].view.specs for a in sp["args"])


# -------------------------------------------------------- world / context
def _world():
    return {"SETTING": [{"name": "cellular", "value": False}, {"name": "wifi", "value": True},
                        {"name": "location_service", "value": False}, {"name": "low_battery_mode", "value": True},
                        {"name": "current_timestamp", "value": 1.0e9}, {"name": "own_phone_number", "value": "+14085550100"}],
            "CONTACT": [{"person_id": "p1", "name": "Ana Silva", "phone_number": "+14155550134", "relationship": "friend"}],
            "MESSAGING": [], "REMINDER": [{"reminder_id": "r1", "content": "x", "reminder_timestamp": 2.0e9, "creation_timestamp": 1.0e9}]}


def test_snapshot_mutate_restore_every_namespace():
    ctx = ExecutionContext(_world())
    ctx.add_message(Message(Role.SYSTEM, Role.AGENT, "hi", (Role.SYSTEM, Role.AGENT)))
    ctx.add_message(Message(Role.USER, Role.AGENT, "do it", (Role.USER, Role.AGENT)))
    snap = ctx.snapshot()
    before = {ns: ctx.namespace_hash(ns) for ns in (*NAMESPACES, "SANDBOX")}
    ctx.add_message(Message(Role.AGENT, Role.USER, "ok", (Role.AGENT, Role.USER)))
    ctx.set_setting("wifi", False)
    ctx.write("CONTACT", [])
    ctx.write("MESSAGING", [{"message_id": "m1", "content": "hey"}])
    ctx.write("REMINDER", ctx.table("REMINDER") + [{"reminder_id": "r2", "content": "y"}])
    after = {ns: ctx.namespace_hash(ns) for ns in before}
    assert all(after[ns] != before[ns] for ns in before)
    ctx.restore(snap)
    assert ctx.state_hash() == snap.state_hash
    assert {ns: ctx.namespace_hash(ns) for ns in before} == before


def test_state_after_any_message_is_readable():
    ctx = ExecutionContext(_world())
    for k in range(4):
        ctx.add_message(Message(Role.AGENT, Role.USER, str(k), (Role.AGENT, Role.USER)))
        ctx.set_setting("wifi", k % 2 == 0)
    assert ctx.setting("wifi", after=0) is True  # index 0 holds the write after message 0
    assert [ctx.setting("wifi", after=m) for m in range(4)] == [True, False, True, False]
    rows = ctx.table("SETTING", after=2, stamped=True)
    assert {r["sandbox_message_index"] for r in rows} == {2}
    part = ExecutionContext.from_snapshot(ctx.snapshot(after=1))
    assert len(part.messages) == 2 and part.setting("wifi") is False


def test_message_cap():
    ctx = ExecutionContext(_world(), max_messages=3)
    for _ in range(3):
        ctx.add_message(Message(Role.USER, Role.AGENT, "", (Role.USER, Role.AGENT)))
    with pytest.raises(MessageCapReached):
        ctx.add_message(Message(Role.USER, Role.AGENT, "", (Role.USER, Role.AGENT)))
    with pytest.raises(ValueError, match="unknown role"):
        Message("robot", Role.AGENT)


def test_implicit_dependencies_return_informative_errors(scenarios):
    sc = next(s for s in scenarios if s.template == "send_contact" and s.dependency_depth == 2)
    env = ToolSandboxEnv(sc, 0)
    env.step(ToolCall("send_message_with_phone_number", {"phone_number": "+14155550134", "content": "hi"}))
    assert "Cellular service is off" in env.ctx.messages[-1].error
    assert env.ctx.messages[-1].sender == Role.EXECUTION_ENVIRONMENT and env.ctx.messages[-1].recipient == Role.AGENT
    env.step(ToolCall("set_cellular_service_status", {"on": True}))
    assert "low battery mode is on" in env.ctx.messages[-1].error
    env.step(ToolCall("set_cellular_service_status", {"on": "yes"}))
    assert "must be bool" in env.ctx.messages[-1].error
    ctx = ExecutionContext(_world())
    ctx.add_message(Message(Role.SYSTEM, Role.AGENT))
    from agentstudies.envs.toolsandbox import ToolError, execute_tool

    with pytest.raises(ToolError, match="Location service is off"):
        execute_tool(ctx, "get_current_location", {})
    with pytest.raises(ToolError, match="low battery"):
        execute_tool(ctx, "set_wifi_status", {"on": True})
    with pytest.raises(ToolError, match="unexpected argument"):
        execute_tool(ctx, "get_wifi_status", {"x": 1})


# ------------------------------------------------------------- scoring
def test_column_similarities_hand_worked():
    # LCS("the cat sat", "the cat") = 2 tokens: P = 1, R = 2/3, F = 0.8
    assert rouge_l("the cat sat", "the cat") == pytest.approx(0.8)
    assert column_similarity("exact", "+1415", "+1415") == 1.0
    assert column_similarity("exact", 3.0, 3) == 1.0
    # ToolSandbox close: 0/1 within the absolute tolerance (evaluation.py 76-114, utils.py 401-422)
    assert column_similarity("close:60", 100.0, 130.0) == 1.0
    assert column_similarity("close:60", 100.0, 160.0) == 1.0
    assert column_similarity("close:60", 100.0, 160.5) == 0.0
    # contains: polars str.contains_any, case-sensitive (evaluation.py 137-159)
    assert column_similarity("contains", "cannot", "Sorry, I cannot do that") == 1.0
    assert column_similarity("contains", "cannot", "Sorry, I CANNOT do that") == 0.0
    with pytest.raises(ValueError):
        column_similarity("fuzzy", 1, 1)


def test_geometric_mean_inside_a_milestone_and_turn_count():
    ctx = ExecutionContext(_world())
    ctx.add_message(Message(Role.SYSTEM, Role.AGENT, "sys", (Role.SYSTEM, Role.AGENT)))
    ctx.add_message(Message(Role.USER, Role.AGENT, "send it", (Role.USER, Role.AGENT)))
    ctx.add_message(Message(Role.AGENT, Role.EXECUTION_ENVIRONMENT, "", (Role.AGENT, Role.EXECUTION_ENVIRONMENT),
                            tool_call={"name": "shift_timestamp", "arguments": {"timestamp": 130.0}}))
    ctx.add_message(Message(Role.EXECUTION_ENVIRONMENT, Role.AGENT, "r", (Role.EXECUTION_ENVIRONMENT, Role.AGENT)))
    ctx.add_message(Message(Role.AGENT, Role.USER, "done", (Role.AGENT, Role.USER)))
    ctx.add_message(Message(Role.USER, Role.EXECUTION_ENVIRONMENT, "", (Role.USER, Role.EXECUTION_ENVIRONMENT),
                            tool_call={"name": "end_conversation", "arguments": {}}))
    reply = Constraint("snapshot", "SANDBOX", {"sender": "agent", "recipient": "user", "content": "all done now"},
                       {"content": "rouge_l"})
    ms = [Milestone("m", (reply, Constraint("guardrail", "CONTACT")))]
    ev = evaluate(ctx, ms, (), guardrails=False)
    # ROUGE-L('all done now', 'done'): P = 1, R = 1/3, F = 0.5; the row is the geometric mean
    # of (1, 1, 0.5); the guardrail (1) multiplies in but is not counted (evaluation.py 906-914)
    assert ev.similarity == pytest.approx(0.5 ** (1 / 3))
    # the automatic guardrails (unchanged tables, 1) are not counted either
    assert evaluate(ctx, ms, ()).similarity == pytest.approx(0.5 ** (1 / 3))
    assert ev.mapping == (4,)
    # 6 messages minus the system message and the user -> environment message
    assert turn_count(ctx) == 4 == ev.turn_count


def test_best_mapping_hand_example():
    S = np.array([[0.0, 0.2, 1.0, 0.0], [0.0, 0.9, 0.0, 0.5]])
    # edge 0 -> 1: m0 < m1. (2, 3): 1.0 + 0.5; (1, ...) impossible better; (None, 1): 0.9 -> best 1.5 / 2
    val, mp = best_mapping(S, [(0, 1)])
    assert val == pytest.approx(0.75) and mp == [2, 3]
    assert best_mapping(np.zeros((0, 3)), [])[0] == 1.0
    # ToolSandbox's DFS lets the next milestone take the same index (range(last, max + 1),
    # evaluation.py 1087-1107): both milestones at message 1 -> (1 + 1) / 2
    assert best_mapping(np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]), [(0, 1)]) == (1.0, [1, 1])
    # and starts at the first user message: nothing before index `first` is matched
    assert best_mapping(np.array([[1.0, 0.0, 0.4]]), [], first=1) == (pytest.approx(0.4), [2])


@st.composite
def _dag_and_matrix(draw):
    k = draw(st.integers(1, 4))
    t = draw(st.integers(1, 5))
    pairs = [(u, v) for u in range(k) for v in range(u + 1, k)]
    chosen = [p for p in pairs if draw(st.booleans())]
    perm = draw(st.permutations(range(k)))
    edges = [(perm[u], perm[v]) for u, v in chosen]
    vals = draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.8, 1.0]), min_size=k * t, max_size=k * t))
    return np.array(vals).reshape(k, t), edges


@settings(max_examples=300, deadline=None)
@given(_dag_and_matrix())
def test_matcher_equals_brute_force(case):
    S, edges = case
    val, mapping = best_mapping(S, edges)
    assert val == pytest.approx(brute_force_mapping(S, edges))
    # the returned mapping assigns every milestone, is admissible and attains the value
    assert len(mapping) == S.shape[0] and all(m is not None for m in mapping)
    assert all(mapping[u] <= mapping[v] for u, v in edges)
    assert sum(S[i, m] for i, m in enumerate(mapping)) / S.shape[0] == pytest.approx(val)


def test_cycle_rejected():
    with pytest.raises(ValueError, match="cycle"):
        best_mapping(np.ones((2, 3)), [(0, 1), (1, 0)])


# -------------------------------------------------------------- agents
def test_agents_never_read_the_answer():
    from agentstudies.agents.toolsandbox import _policy

    src = inspect.getsource(_policy)
    for word in (".gold", ".milestones", ".minefields", ".hidden", ".expect", ".scenario", ".trigger"):
        assert word not in src, word


def test_episodes_deterministic_and_parallel_invariant(cases):
    from agentstudies.agents.toolsandbox import run_episodes

    sub = cases[::97]
    a = run_episodes(sub, profiles=("base",), seeds=(0, 1))
    b = run_episodes(sub, profiles=("base",), seeds=(0, 1), n_jobs=2)
    pd.testing.assert_frame_equal(a, b)
    assert a["similarity"].between(0, 1).all()
    assert (a.loc[a["minefield_hit"], "similarity"] == 0).all()
    gate = a[a["workflow"] == "Confirmation gate"]
    assert (gate["declined_calls"] >= 0).all()


def test_episode_exception_scores_zero_with_max_turns(cases, monkeypatch):
    from agentstudies.agents.toolsandbox import _episodes

    def boom(*a, **k):
        raise RuntimeError("agent crashed")

    monkeypatch.setattr(_episodes, "drive", boom)
    row = _episodes.run_episode(cases[0], "ReAct", "base", 0)
    assert row["similarity"] == 0.0 and row["turn_count"] == 30 and row["termination"] == "exception"


def test_handoff_table_feeds_analyze_handoff(cases):
    from agentstudies.agents.toolsandbox import run_handoff
    from agentstudies.handoff import analyze_handoff

    sub = [c for c in cases if c.augmentation == "base"][:40]
    df = run_handoff(sub, seeds=(0,))
    assert set(df["reacher"]) == set(df["solver"]) == {"base", "treated"}
    assert (df.loc[~df["arrived"], "endpoint"] == False).all()  # noqa: E712
    assert set(df["task_id"]) == {c.scenario.scenario_id for c in sub if len(c.scenario.milestones) >= 2}
    res = analyze_handoff(df, base="base", treated="treated", n_draws=50, seed=0)
    assert "interaction" in set(res.to_frame()["estimand"])


# --------------------------------------------------------------- study
@pytest.fixture(scope="module")
def small_grid():
    from agentstudies.studies import toolsandbox as ts

    scenarios, cases = ts.build_cases(0, ("base", "tool_name_scrambled"), max_scenarios=30)
    return scenarios, cases, ts.run_grid(cases, seeds=[0, 1], profiles=["base"])


def test_case_artifact_columns(small_grid):
    from agentstudies.studies import toolsandbox as ts

    _, cases, ep = small_grid
    art = ts.case_artifact(ep)
    for col in ("case_id", "base_scenario", "category", "augmentation", "workflow", "seed", "similarity",
                "turn_count", "milestones_matched", "minefield_hit"):
        assert col in art.columns
    assert len(art) == len(cases) * 3 * 2
    assert not art.duplicated(["case_id", "workflow", "profile", "seed"]).any()
    with pytest.raises(KeyError, match="similarity"):
        ts.case_artifact(ep.drop(columns="similarity"))


def test_group_means_point_and_cluster_interval(small_grid):
    from agentstudies.studies import toolsandbox as ts

    _, _, ep = small_grid
    res = ts.group_means(ep, "augmentation", n_draws=4000, seed=1)
    f = res.to_frame()
    for (aug, wf), d in ep.groupby(["augmentation", "workflow"]):
        row = res.get("similarity", group=aug, workflow=wf, profile="base")
        assert row["estimate"] == pytest.approx(d["similarity"].mean())
        # independent check of the width: linearised cluster SE of a ratio of sums
        g = d.groupby("base_scenario").agg(y=("similarity", "sum"), k=("similarity", "size"))
        r = g["y"].sum() / g["k"].sum()
        se = np.sqrt(((g["y"] - r * g["k"]) ** 2).sum()) / g["k"].sum()
        if se > 0:
            assert (row["ci_high"] - row["ci_low"]) == pytest.approx(2 * 1.96 * se, rel=0.25)
    assert set(f["estimand"]) == {"similarity", "turn_count"}
    multi = ts.group_means(ep, multilabel=True, n_draws=0)
    tagged = ep.assign(tag=ep["categories"].str.split("|")).explode("tag")
    sd = tagged[tagged["tag"] == "state_dependency"]
    got = multi.get("similarity", group="state_dependency", workflow="ReAct", profile="base")["estimate"]
    assert got == pytest.approx(sd[sd["workflow"] == "ReAct"]["similarity"].mean())
    with pytest.raises(KeyError):
        ts.group_means(ep.drop(columns="base_scenario"))


def test_sasst_design_and_run(small_grid):
    from agentstudies.studies import toolsandbox as ts

    scenarios, cases, _ = small_grid
    design = ts.sasst_design(cases, seed=3)
    assert len(design) == len(scenarios) == len({c.scenario.scenario_id for c in design})
    X = ts.sasst_features(design)
    assert X.notna().all().all() and "dependency_depth" in X and "n_milestones" in X
    ep = ts.run_grid(design, seeds=[0, 1], profiles=["base"])
    rep = ts.run_sasst(ep, X, n_stability=5, n_draws=200, min_ess=2)
    assert len(rep.table) == 4


def test_frontier_snapshot_restore_then_gold_finishes(cases):
    from agentstudies.agents.toolsandbox import frontier_arrival

    multi = [c for c in cases if c.augmentation == "tool_name_scrambled" and len(c.scenario.milestones) >= 2]
    assert multi
    for c in multi[::3]:
        env = replay_gold(c)
        ev = env.evaluate()
        t = frontier_arrival(env)
        from agentstudies.envs.toolsandbox import topological_order

        order = topological_order(len(c.scenario.milestones), c.scenario.edges)
        assert t == max(ev.mapping[i] for i in order[:-1]), c.case_id
        # restore the state after message t in a fresh env, then play the rest of the gold
        snap = env.snapshot(after=t)
        env2 = ToolSandboxEnv(c, 0)
        env2.restore(snap)
        assert env2.ctx.state_hash() == snap.state_hash
        done = sum(1 for m in env2.ctx.messages if m.sender == Role.AGENT)
        for step in c.scenario.gold[done:]:
            if step[0] == "call":
                env2.step(ToolCall(c.view.shown_name(step[1]), dict(step[2])))
            else:
                env2.step(Say(step[2], step[1]))
        assert env2.evaluate().similarity == 1.0, c.case_id


def test_agent_implements_policy_protocol():
    from agentstudies.agents import Policy
    from agentstudies.agents.toolsandbox import ScriptedToolAgent

    agent = ScriptedToolAgent("treated")
    assert isinstance(agent, Policy) and agent.simulated and agent.label == "treated (simulated)"
    with pytest.raises(KeyError, match="known"):
        ScriptedToolAgent("oracle")


def test_scripted_user_answers_from_hidden_facts_and_ends(scenarios):
    sc = next(s for s in scenarios if s.template == "send_contact" and "disambiguation" in s.categories)
    env = ToolSandboxEnv(sc, 0)
    env.step(Say("Which one?", {"act": "ask", "slot": "last_name"}))
    reply = env.ctx.messages[-1]
    assert reply.sender == Role.USER and reply.act["value"] == sc.intents[0].hidden["last_name"]
    env.step(Say("What is their passport number?", {"act": "ask", "slot": "passport"}))
    assert env.ctx.messages[-1].act["value"] is None
    env.step(Say("Done.", {"act": "done"}))
    assert env.done and env.termination == "user_ended"
    last_two = env.ctx.messages[-2:]
    assert last_two[0].tool_call["name"] == "end_conversation" and last_two[0].recipient == Role.EXECUTION_ENVIRONMENT


def test_verifier_rejects_ungrounded_and_gate_declines_contradicting_mutations(scenarios):
    from agentstudies.agents import make_controller
    from agentstudies.agents.controllers import ProposedCall, extract_mutation
    from agentstudies.agents.toolsandbox import GroundingVerifier

    sc = next(s for s in scenarios if s.template == "insufficient" and s.intents[0].kind == "send_message")
    env = ToolSandboxEnv(sc, 0)
    ver = GroundingVerifier(env, np.random.default_rng(0), p_detect=1.0, p_false_reject=0.0, p_malformed=0.0)
    pv = make_controller("Plan + verifier", verifier=ver, max_rejections=None)
    invented = ProposedCall("send_message_with_phone_number", {"phone_number": "+15550001111", "content": "hi"}, True)
    assert not pv.review(invented).execute
    said = sc.intents[0].slots["content"]
    phone = env.ctx.table("CONTACT")[0]["phone_number"]
    env.step(ToolCall("search_contacts", {"name": env.ctx.table("CONTACT")[0]["name"]}))
    grounded = ProposedCall("send_message_with_phone_number", {"phone_number": phone, "content": said}, True)
    assert pv.review(grounded).execute
    env.user.p_accept_inconsistent = 0.0
    gate = make_controller("Confirmation gate", user=lambda p: env.consent(p, extract_mutation(p)))
    n = len(env.ctx.messages)
    assert not gate.review(invented).execute  # the user knows no number for this contact
    assert len(env.ctx.messages) == n + 2  # the question and the answer are messages (turns)


def _view_from_scratch(env):
    """The agent's view of ``env``'s log, built from the definition (every visible message,
    its index, the shown tool name in place of the canonical one), independently of
    ToolSandboxEnv.observation's per-episode reuse."""
    out = []
    for i, m in enumerate(env.ctx.messages):
        if Role.AGENT not in m.visible_to:
            continue
        d = {**m.to_dict(), "index": i}
        tc = m.tool_call
        if tc is not None and "shown_name" in tc:
            d["tool_call"] = {"name": tc["shown_name"], "arguments": dict(tc["arguments"])}
        out.append(d)
    return out


def test_observation_reuse_matches_a_fresh_view_through_steps_and_restore(cases):
    """observation() reuses each message's view and the specs within an episode: after
    every step of a gold run (tool replies replace their placeholder message), after a
    restore to an earlier state and on the continued run, it equals the view built from
    scratch, with the specs of the case's ToolView."""
    case = next(c for c in cases if c.augmentation == "tool_name_scrambled" and len(c.scenario.gold) >= 3)
    env = ToolSandboxEnv(case, 0)
    assert env.observation()["messages"] == _view_from_scratch(env)
    for step in case.scenario.gold:
        if step[0] == "call":
            obs = env.step(ToolCall(case.view.shown_name(step[1]), dict(step[2])))
        else:
            obs = env.step(Say(step[2], step[1]))
        assert obs["messages"] == _view_from_scratch(env)
        assert obs["tools"] == case.view.specs
        if env.done:
            break
    called = [m for m in obs["messages"] if m["tool_call"] is not None]
    assert called and all(m["tool_call"]["name"].startswith("tool_") for m in called)  # shown, not canonical
    snap = env.snapshot(after=2)
    env.restore(snap)                       # same env: its earlier views must not leak back
    assert len(env.ctx.messages) == 3
    assert env.observation()["messages"] == _view_from_scratch(env)
    env.step(Say("Anything else?", {"act": "ask", "slot": "request"}))
    assert env.observation()["messages"] == _view_from_scratch(env)
