"""Each scoring mechanism against ToolSandbox's own definition.

Expected values are worked out by hand from apple/ToolSandbox ``tool_sandbox/common/
evaluation.py`` (line ranges cited per test; ROUGE-L from the ``rouge-score`` package
directly, as ToolSandbox calls it at lines 225-262), never read from our output. Where we
keep a deliberate difference (``DEPARTURES``), the test scores the same trajectory with
``departures=()`` (ToolSandbox's formulas alone) and with the departure on.
"""

from __future__ import annotations

import inspect

import pytest
from rouge_score import rouge_scorer

from agentstudies.envs.toolsandbox import (
    DEPARTURES,
    NAMESPACES,
    SCORING_OPTIONS,
    Case,
    Constraint,
    ExecutionContext,
    Message,
    Milestone,
    Role,
    Say,
    ToolCall,
    ToolSandboxEnv,
    ToolView,
    evaluate,
    generate_scenarios,
    gold_case,
    table_similarity,
    validate_scenario,
    with_guardrails,
)

_ROUGE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def _rl(ref, text):
    return _ROUGE.score(ref, text)["rougeL"].fmeasure


@pytest.fixture(scope="module")
def scenarios():
    return generate_scenarios(0)


def _env(scenario, extra_tools=()):
    case = gold_case(scenario)
    if extra_tools:
        case = Case(case.case_id, scenario, "base", ToolView(case.view.tools + tuple(extra_tools)))
    return ToolSandboxEnv(case, 0)


def _step(env, step):
    env.step(ToolCall(step[1], dict(step[2])) if step[0] == "call" else Say(step[2], step[1]))


def _reply_constraints(scenario):
    ms = scenario.milestones[-1]
    rouge = next(c for c in ms.constraints if c.measures.get("content") == "rouge_l")
    key = next(c for c in ms.constraints if c.measures.get("content") == "contains")
    return rouge.target["content"], key.target["content"]


def _stock(scenarios):
    return next(s for s in scenarios if s.template == "stock" and s.intents[0].slots["company"] == "Apple")


# ----------------------------------------------------- guardrails outside the mean
def test_french_answer_guardrails_not_counted(scenarios):
    """evaluation.py 906-914: constraint similarities multiply; the power is 1 / (number of
    non-guardrail constraints). Stock scenario: milestones [look-up trace, reply]; the reply
    milestone = (ROUGE-L row * 'contains' row) ^ (1/2), a row = (1 * 1 * F) ^ (1/3)
    (snapshot_similarity 314-343 over sender, recipient, content)."""
    sc = _stock(scenarios)
    refs, key = _reply_constraints(sc)
    french = f"L'action Apple vaut actuellement {key} dollars américains."
    env = _env(sc)
    _step(env, sc.gold[0])
    _step(env, ("say", {"act": "inform"}, french))
    assert len(sc.milestones) == 2 and key in french
    # ToolSandbox's own score: one reference sentence per constraint (the first)
    toolsandbox = (1.0 + (_rl(refs[0], french) ** (1 / 3)) ** (1 / 2)) / 2
    assert evaluate(env.ctx, sc.milestones, sc.edges, departures=()).similarity == pytest.approx(toolsandbox)
    ours = env.evaluate().similarity
    best = max(_rl(r, french) for r in refs)
    assert ours == pytest.approx((1.0 + (best ** (1 / 3)) ** (1 / 2)) / 2)
    assert abs(ours - toolsandbox) < 0.05          # acceptance: within 0.05 of ToolSandbox
    assert env.evaluate().toolsandbox_similarity == pytest.approx(toolsandbox)  # reported beside ours
    # counting the 4 automatic guardrails in the mean (the old scorer) would lift it well above
    counted = (1.0 + ((best ** (1 / 3)) * 1.0) ** (1 / 6)) / 2
    assert counted > ours


# -------------------------------------------------------- collateral writes
def test_collateral_update_then_right_update_scores_zero(scenarios):
    """update_similarity, evaluation.py 431-478: the rows changed since the reference must
    equal the target in count (2 changed rows against a 1-row target -> 0), and before the
    right update the one changed row has the wrong person_id (exact match 0)."""
    sc = next(s for s in scenarios if s.template == "modify_contact")
    target_id = next(g for g in sc.gold if g[0] == "call" and g[1] == "modify_contact")[2]["person_id"]
    other = next(r["person_id"] for r in sc.initial["CONTACT"] if r["person_id"] != target_id)
    env = _env(sc)
    _step(env, ("call", "modify_contact", {"person_id": other, "phone_number": "+12025550143"}))
    for g in sc.gold:
        _step(env, g)
    assert len(sc.milestones) == 1
    ev = env.evaluate()
    assert ev.similarity == 0.0 < 0.5                     # acceptance: below 0.5
    assert evaluate(env.ctx, sc.milestones, sc.edges, departures=()).similarity == 0.0


def test_reminder_deleted_then_right_one_added(scenarios):
    """addition_similarity, evaluation.py 346-393: the snapshot must still contain every row
    of the reference (here the clock-reading milestone's snapshot); a reminder deleted after
    it zeroes 'reminder added' -> (1 + 0) / 2. Deleted before the clock is read, the
    reference already lacks it and ToolSandbox scores 1."""
    sc = next(s for s in scenarios if s.template == "add_reminder")
    victim = sc.initial["REMINDER"][0]["reminder_id"]
    delete = ("call", "remove_reminder", {"reminder_id": victim})
    env = _env(sc, ["remove_reminder"])
    gold = list(sc.gold)
    for g in gold[:1] + [delete] + gold[1:]:
        _step(env, g)
    assert [ms.name for ms in sc.milestones] == ["read the current time", "reminder added"]
    assert env.evaluate().similarity == pytest.approx(0.5)
    before = _env(sc, ["remove_reminder"])
    for g in [delete] + gold:
        _step(before, g)
    assert before.evaluate().similarity == 1.0


# ---------------------------------------------------------- write then undo
def test_write_then_undo_scores_zero_where_the_final_state_lacks_it(scenarios):
    """ToolSandbox matches 'contact added' (addition_similarity against the first user
    message, 346-393) at the message of the add, so add -> remove scores 1 there; the
    ``final_state`` departure scores 0 because the final world lacks the contact."""
    sc = next(s for s in scenarios if s.template == "add_contact")
    env = _env(sc, ["remove_contact"])
    add, say = sc.gold
    _step(env, add)
    new_id = env.ctx.table("CONTACT")[-1]["person_id"]
    _step(env, ("call", "remove_contact", {"person_id": new_id}))
    _step(env, say)
    assert evaluate(env.ctx, sc.milestones, sc.edges, departures=()).similarity == 1.0
    ev = env.evaluate()
    assert ev.undone and ev.similarity == 0.0 and ev.toolsandbox_similarity == 1.0
    # set -> unset: 'wifi on' is a SETTING snapshot matched after the first call
    st = next(s for s in scenarios if s.template == "setting" and s.intents[0].slots == {"setting": "wifi", "on": True}
              and len(s.milestones) == 1)
    env = _env(st)
    on, done = st.gold
    for g in (on, ("call", "set_wifi_status", {"on": False}), done):
        _step(env, g)
    assert evaluate(env.ctx, st.milestones, st.edges, departures=()).similarity == 1.0
    assert env.evaluate().similarity == 0.0


# ------------------------------------------------------------ key values
def test_reference_reply_with_a_wrong_key_value(scenarios):
    """column_contains_similarity (137-159) as a second constraint of the reply milestone
    (e.g. multiple_tool_call_scenarios.py 115-128): a wrong number zeroes that constraint,
    so the reply milestone is 0 and the trajectory (1 + 0) / 2."""
    sc = _stock(scenarios)
    refs, key = _reply_constraints(sc)
    wrong = refs[0].replace(key, "999.99")
    assert wrong != refs[0] and _rl(refs[0], wrong) > 0.6     # only the number differs
    env = _env(sc)
    _step(env, sc.gold[0])
    _step(env, ("say", {"act": "inform"}, wrong))
    assert env.evaluate().similarity == pytest.approx(0.5)
    assert evaluate(env.ctx, sc.milestones, sc.edges, departures=()).similarity == pytest.approx(0.5)


# ----------------------------------------------------------------- close
@pytest.mark.parametrize("shift, expected", [(30.0, 1.0), (60.0, 1.0), (61.0, 0.5)])
def test_close_is_zero_one_within_tolerance(scenarios, shift, expected):
    """column_close_similarity (76-114) via utils.is_close (utils.py 401-422): 1 when
    |a - b| <= atol, else 0. 'reminder added' has a 60 s tolerance on the time."""
    sc = next(s for s in scenarios if s.template == "add_reminder")
    env = _env(sc)
    for g in sc.gold:
        if g[0] == "call" and g[1] == "add_reminder":
            g = ("call", "add_reminder", dict(g[2], reminder_timestamp=g[2]["reminder_timestamp"] + shift))
        _step(env, g)
    assert env.evaluate().similarity == pytest.approx(expected)


# ------------------------------------------------------------ guardrails
def test_guardrails_per_milestone_against_reference_and_parents():
    """_add_guardrail_constraints (996-1041): guardrails only against reference and
    predecessor milestones, on tables that neither the milestone nor those constrain."""
    reply = Milestone("reply", (Constraint("snapshot", "SANDBOX", {"sender": "agent", "content": "x"}),))
    added = Milestone("added", (Constraint("added", "CONTACT", {"name": "A"}),))
    wifi = Milestone("wifi", (Constraint("snapshot", "SETTING", {"wifi": True}),))
    got = with_guardrails([reply, added, wifi], [(1, 2)])
    tables = [sorted(c.namespace for c in ms.constraints if c.kind == "guardrail") for ms in got]
    assert tables[0] == []                                        # a root without a reference
    assert tables[1] == sorted(set(NAMESPACES) - {"CONTACT"})      # a root with one: all but its own
    assert tables[2] == sorted(set(NAMESPACES) - {"CONTACT", "SETTING"})  # its own and its parent's


# ------------------------------------------------------------- minefields
def test_any_nonzero_minefield_similarity_nullifies():
    """EvaluationResult.__attrs_post_init__ (978-982): similarity = [minefield similarity == 0]
    * milestone similarity; a partial (ROUGE-L) minefield match already nullifies."""
    world = {"SETTING": [{"name": "wifi", "value": True}], "CONTACT": [], "MESSAGING": [], "REMINDER": []}
    ctx = ExecutionContext(world)
    ctx.add_message(Message(Role.SYSTEM, Role.AGENT, "sys", (Role.SYSTEM, Role.AGENT)))
    ctx.add_message(Message(Role.USER, Role.AGENT, "hi", (Role.USER, Role.AGENT)))
    ctx.add_message(Message(Role.AGENT, Role.USER, "it costs ten dollars", (Role.AGENT, Role.USER)))
    ok = [Milestone("said", (Constraint("snapshot", "SANDBOX", {"sender": "agent"}),))]
    mine = Milestone("price", (Constraint("snapshot", "SANDBOX", {"content": "the price is 12 dollars"}, {"content": "rouge_l"}),))
    assert 0 < _rl("the price is 12 dollars", "it costs ten dollars") < 1
    ev = evaluate(ctx, ok, (), [mine])
    assert ev.milestone_similarity == 1.0 and ev.minefield_hit and ev.similarity == 0.0
    far = Milestone("far", (Constraint("snapshot", "SANDBOX", {"content": "zebra"}, {"content": "rouge_l"}),))
    assert evaluate(ctx, ok, (), [far]).similarity == 1.0


# ----------------------------------------------------------- row assignment
def test_rows_assigned_on_minus_log_similarity():
    """snapshot_similarity (314-343): linear_sum_assignment on -log row similarity, i.e. the
    assignment with the largest geometric mean, not the largest sum. Targets 'd b', 'g b f';
    rows 'b h e f c', 'g b'. F('d b', 'b h e f c') = 2 * (1/5 * 1/2) / (7/10) = 2/7,
    F('g b f', 'g b') = 0.8, F('d b', 'g b') = 0.5, F('g b f', 'b h e f c') = 0.5: the sum
    prefers (2/7, 0.8) (sum 1.086, geometric mean 0.478), -log prefers (0.5, 0.5) -> 0.5."""
    c = Constraint("snapshot", "CONTACT", ({"name": "d b"}, {"name": "g b f"}), {"name": "rouge_l"})
    rows = [{"name": "b h e f c"}, {"name": "g b"}]
    assert _rl("d b", "b h e f c") == pytest.approx(2 / 7) and _rl("g b f", "g b") == pytest.approx(0.8)
    assert table_similarity(c, rows) == pytest.approx(0.5)


# ------------------------------------------------------ targets from the world
def test_perturbed_world_moves_the_target(scenarios):
    """A contact's number redrawn: the simulated agent looks it up and sends to the new
    number; the milestone target follows the world (a WorldRef), so the score is the
    unperturbed one, while the target as it was hard-coded would miss the message."""
    from agentstudies.agents.controllers import make_controller
    from agentstudies.agents.toolsandbox import ScriptedToolAgent, drive
    from agentstudies.envs.toolsandbox.testing import perturb_phones, resolve_targets

    def run(sc):
        env = ToolSandboxEnv(gold_case(sc), 0)
        agent = ScriptedToolAgent("base")
        agent.reset(env.case.case_id, 0)
        drive(env, agent, make_controller("ReAct"))
        return env

    sends = [s for s in scenarios if s.template == "send_contact"]
    checked = 0
    for sc in sends:
        before = run(sc)
        if before.evaluate().similarity != 1.0:
            continue
        moved = perturb_phones(sc, seed=1)
        assert validate_scenario(moved) == []                      # gold follows the world too
        after = run(moved)
        sent = [r["recipient_phone_number"] for r in after.ctx.table("MESSAGING")][1:]
        new_numbers = {r["phone_number"] for r in moved.initial["CONTACT"]}
        assert sent and set(sent) <= new_numbers and not set(sent) & {r["phone_number"] for r in sc.initial["CONTACT"]}
        assert after.evaluate().similarity == 1.0
        stale = evaluate(after.ctx, resolve_targets(sc.milestones, sc.initial), sc.edges)
        assert stale.similarity < 1.0
        checked += 1
    assert checked >= 3


# ------------------------------------------------------------ departures
def test_every_scoring_option_is_named_used_and_nothing_else_departs(scenarios):
    """Each switchable departure is in DEPARTURES, read by evaluate, and changes a score on a
    case where it applies; an unknown one is refused; the remaining names are structural."""
    assert set(SCORING_OPTIONS) <= set(DEPARTURES)
    src = inspect.getsource(inspect.getmodule(evaluate))  # the scoring module
    for name in SCORING_OPTIONS:
        assert f'"{name}" in departures' in src or f'"{name}" not in departures' in src, name
    structural = {"reference_milestone", "initial_world_exempts_nothing", "tool_trace_message", "guardrail_row_order",
                  "world_targets", "setting_table", "web_fixtures", "scripted_user"}
    assert set(DEPARTURES) == set(SCORING_OPTIONS) | structural
    assert all(len(DEPARTURES[k]) > 40 for k in DEPARTURES)       # each says what differs and why
    # tool_trace_message is harmless only while every tool a milestone traces reads (a
    # minefield has no children: one message earlier or later it nullifies all the same)
    from agentstudies.envs.toolsandbox import MUTATING_TOOLS

    traced = {c.tool for s in scenarios for ms in s.milestones for c in ms.constraints if c.kind == "tool_trace"}
    assert traced and not traced & MUTATING_TOOLS
    with pytest.raises(ValueError, match="unknown scoring departure"):
        evaluate(ExecutionContext({ns: [] for ns in NAMESPACES}), [], (), departures=("guardrails_off",))
    # final_state: add then remove the new contact
    sc = next(s for s in scenarios if s.template == "add_contact")
    env = _env(sc, ["remove_contact"])
    _step(env, sc.gold[0])
    _step(env, ("call", "remove_contact", {"person_id": env.ctx.table("CONTACT")[-1]["person_id"]}))
    _step(env, sc.gold[1])
    on = evaluate(env.ctx, sc.milestones, sc.edges, departures=("final_state",)).similarity
    assert on != evaluate(env.ctx, sc.milestones, sc.edges, departures=()).similarity
    # reference_sentences: a reply matching the second phrasing better than the first
    st = _stock(scenarios)
    refs, key = _reply_constraints(st)
    env = _env(st)
    _step(env, st.gold[0])
    _step(env, ("say", {"act": "inform"}, refs[1]))
    assert _rl(refs[0], refs[1]) < 1.0
    assert evaluate(env.ctx, st.milestones, st.edges, departures=("reference_sentences",)).similarity == 1.0
    assert evaluate(env.ctx, st.milestones, st.edges, departures=()).similarity < 1.0
    # with no departure on, gold still scores 1 everywhere (spot check across templates)
    from agentstudies.envs.toolsandbox import replay_gold

    for s in scenarios[::9]:
        e = replay_gold(s)
        assert evaluate(e.ctx, s.milestones, s.edges, s.minefields, departures=()).similarity == 1.0, s.scenario_id


def test_departure_effects_hand_worked():
    """The chapter's table of what the departures change: means, difference, share of
    episodes whose two scores differ, undone episodes, worked out by hand."""
    import pandas as pd

    from agentstudies.studies.toolsandbox.departures import departure_effects, departures_table

    ep = pd.DataFrame({"profile": ["a", "a", "a", "b"], "workflow": ["ReAct"] * 4,
                       "similarity": [1.0, 0.0, 0.5, 0.8], "toolsandbox_similarity": [1.0, 1.0, 0.25, 0.8],
                       "undone": [False, True, False, False]})
    out = departure_effects(ep).set_index("profile")
    assert out.loc["a", "episodes"] == 3 and out.loc["b", "episodes"] == 1
    assert out.loc["a", "similarity"] == pytest.approx(0.5) and out.loc["a", "toolsandbox_similarity"] == pytest.approx(0.75)
    assert out.loc["a", "difference"] == pytest.approx(-0.25) and out.loc["a", "share_differs"] == pytest.approx(2 / 3)
    assert out.loc["a", "undone"] == 1 and out.loc["b", "undone"] == 0 and out.loc["b", "share_differs"] == 0.0
    with pytest.raises(KeyError, match="toolsandbox_similarity"):
        departure_effects(ep.drop(columns="toolsandbox_similarity"))
    with pytest.raises(ValueError, match="NaN"):
        departure_effects(ep.assign(toolsandbox_similarity=float("nan")))
    table = departures_table()
    assert list(table["departure"]) == list(DEPARTURES) and table["switchable"].sum() == len(SCORING_OPTIONS)
