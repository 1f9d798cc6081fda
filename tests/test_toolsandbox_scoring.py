"""ToolSandbox-faithful scoring: adversarial trajectories.

Each test builds a trajectory that the old scorer rewarded (reply before the look-up, a
write before the clock was read, one keyword for a decline, an unrelated write) and checks
the score that ToolSandbox's definitions give, computed by hand or with the rouge-score
package directly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from agentstudies.envs.toolsandbox import (
    NAMESPACES,
    Constraint,
    Say,
    ToolCall,
    ToolSandboxEnv,
    best_mapping,
    generate_scenarios,
    gold_case,
    table_similarity,
)
from agentstudies.envs.toolsandbox._scoring import constrained_namespaces
from agentstudies.envs.toolsandbox.testing import brute_force_mapping

_ROUGE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def _rl(refs, text):
    return max(_ROUGE.score(r, text)["rougeL"].fmeasure for r in refs)


@pytest.fixture(scope="module")
def scenarios():
    return generate_scenarios(0)


def _play(scenario, steps, prefix=()):
    """Run ``prefix`` then ``steps`` (gold-format tuples) on the base case."""
    case = gold_case(scenario)
    env = ToolSandboxEnv(case, 0)
    for step in list(prefix) + list(steps):
        if env.done:
            break
        if step[0] == "call":
            env.step(ToolCall(step[1], dict(step[2])))
        else:
            env.step(Say(step[2], step[1]))
    return env


def _reply_refs(scenario):
    for ms in scenario.milestones:
        for c in ms.constraints:
            if c.kind == "snapshot" and c.namespace == "SANDBOX":
                return c.target["content"]
    raise AssertionError(f"{scenario.scenario_id} has no reply milestone")


def _contains_key(scenario):
    """The key value a reply milestone's 'contains' constraint looks for."""
    for ms in scenario.milestones:
        for c in ms.constraints:
            if c.kind == "snapshot" and c.measures.get("content") == "contains":
                return c.target["content"]
    raise AssertionError(f"{scenario.scenario_id} has no key-value check")


def test_reply_before_lookup_scores_below_one(scenarios):
    stock = next(s for s in scenarios if s.template == "stock")
    call = next(g for g in stock.gold if g[0] == "call")
    answer = stock.gold[-1][2]
    good = _play(stock, stock.gold).evaluate().similarity
    # answer first (phrased as a question so the user keeps talking), look up, then "Done."
    early = _play(stock, [("say", {"act": "ask", "slot": "anything"}, answer), call, ("say", {"act": "done"}, "Done.")])
    ev = early.evaluate()
    assert good == 1.0
    # the reply milestone maps at or after the look-up: "Done." lacks the price, so the
    # 'contains' constraint zeroes it (1 + 0); or the look-up milestone takes a message
    # without the call and the reply the early answer (0 + 1): either way 1 / 2
    assert _contains_key(stock) not in "Done." and _contains_key(stock) in answer
    assert ev.similarity == pytest.approx(0.5)


def test_write_before_reading_the_clock_scores_half(scenarios):
    sc = next(s for s in scenarios if s.template == "add_reminder")
    add = next(g for g in sc.gold if g[0] == "call" and g[1] == "add_reminder")
    rest = [g for g in sc.gold if g is not add]
    ev = _play(sc, [add] + rest).evaluate()
    # milestones: read the clock -> reminder added (against the clock milestone's snapshot,
    # which already holds the reminder, so no row is added): one of two milestones, mean 0.5
    assert len(sc.milestones) == 2
    assert ev.similarity == pytest.approx(0.5)
    assert _play(sc, sc.gold).evaluate().similarity == 1.0


def test_constant_decline_never_scores_one(scenarios):
    decline = ("say", {"act": "cannot"}, "Sorry, I cannot do that.")
    scores = [_play(sc, [decline] * 4).evaluate().similarity for sc in scenarios]
    assert max(scores) < 1.0
    # where the milestones need more than a decline (a look-up, a write) it loses whole milestones
    more = [s for sc, s in zip(scenarios, scores) if any(c.kind != "snapshot" or c.namespace != "SANDBOX"
                                                          for ms in sc.milestones for c in ms.constraints
                                                          if c.kind != "guardrail")]
    assert more and max(more) <= 0.5 + 1e-9


@pytest.mark.parametrize("paraphrase", [
    "I can't set a reminder without a time.",
    "I am unable to set a reminder without a time.",
    "Sorry, I'm not able to add that reminder without knowing when.",
])
def test_paraphrased_declines_score_by_rouge_l(scenarios, paraphrase):
    sc = next(s for s in scenarios if s.template == "insufficient" and s.intents[0].kind == "add_reminder")
    steps = [g if g[1].get("act") != "cannot" else ("say", {"act": "cannot"}, paraphrase) for g in sc.gold]
    ev = _play(sc, steps).evaluate()
    refs = _reply_refs(sc)
    # one milestone: the message row (sender, recipient, content: R^(1/3)) times the explicit
    # and automatic guardrails (1 each), which are not counted (ToolSandbox evaluation.py 906-914)
    assert ev.similarity == pytest.approx(_rl(refs, paraphrase) ** (1 / 3))
    assert ev.similarity > 0.75
    keyword_only = _play(sc, [g if g[1].get("act") != "cannot" else ("say", {"act": "cannot"}, "cannot") for g in sc.gold])
    assert ev.similarity > keyword_only.evaluate().similarity


@pytest.mark.parametrize("answer", ["Apple trades at 231.42 USD.", "Apple is at $231.42.", "It's $231.42 right now."])
def test_unit_formatted_answers_score_by_rouge_l(scenarios, answer):
    sc = next(s for s in scenarios if s.template == "stock" and s.intents[0].slots["company"] == "Apple")
    steps = [g if g[0] == "call" else ("say", g[1], answer) for g in sc.gold]
    ev = _play(sc, steps).evaluate()
    refs = _reply_refs(sc)
    # reply milestone: ROUGE-L row R^(1/3) and the 'contains' row (1), geometric mean of two
    reply = ((_rl(refs, answer) ** (1 / 3)) * 1.0) ** (1 / 2)
    assert ev.similarity == pytest.approx((1.0 + reply) / 2)
    assert ev.similarity > 0.9  # '$231.42' and '231.42 USD' both contain the price and share its tokens


def test_unrelated_write_is_caught_only_between_reference_and_match(scenarios):
    """ToolSandbox puts a milestone's guardrails against its reference and predecessor
    milestones only (evaluation.py 996-1041): a write to an unconstrained table between the
    look-up and the reply zeroes the reply milestone; the same write before the look-up (a
    root with no reference constraint has no guardrails) is not caught."""
    sc = next(s for s in scenarios if s.template == "stock" and len(s.milestones) == 2)
    write = ("call", "add_contact", {"name": "Bogus Person", "phone_number": "+19995550000"})
    from agentstudies.envs.toolsandbox import Case, ToolView

    case = gold_case(sc)
    case = Case(case.case_id, sc, "base", ToolView(case.view.tools + ("add_contact",)))

    def run(steps):
        env = ToolSandboxEnv(case, 0)
        for step in steps:
            env.step(ToolCall(step[1], dict(step[2])) if step[0] == "call" else Say(step[2], step[1]))
        return env.evaluate()

    gold = list(sc.gold)
    assert [g[0] for g in gold] == ["call", "say"]
    between = run([gold[0], write, gold[1]])
    assert between.similarity == pytest.approx(0.5)          # (1 + 0) / 2
    assert run([write] + gold).similarity == 1.0
    assert between.milestone_scores[1] == 0.0


def test_snapshot_needs_equal_row_counts_and_matches_rows_optimally():
    c = Constraint("snapshot", "CONTACT", ({"name": "Ana"}, {"name": "Bo"}), {"name": "rouge_l"})
    rows = [{"name": "Bo"}, {"name": "Ana"}]
    assert table_similarity(c, rows) == 1.0                       # the matching swaps the rows
    assert table_similarity(c, rows + [{"name": "Cy"}]) == 0.0    # three rows against two
    # greedy would pair 'Ana Bo' with 'Ana' (0.667) and leave 'Bo' with 'Cy' (0); the optimum
    # pairs Ana-'Ana Cy' and Bo-'Ana Bo': both F = 2*1*0.5/1.5 = 2/3
    assert table_similarity(c, [{"name": "Ana Bo"}, {"name": "Ana Cy"}]) == pytest.approx(2 / 3)
    # a target column missing from the rows: 0 (evaluation.py 310-313)
    assert table_similarity(Constraint("snapshot", "CONTACT", {"nickname": "A"}), [{"name": "A"}]) == 0.0


@st.composite
def _dag_and_tensor(draw):
    k = draw(st.integers(1, 3))
    t = draw(st.integers(1, 4))
    pairs = [(u, v) for u in range(k) for v in range(u + 1, k)]
    edges = [p for p in pairs if draw(st.booleans())]
    vals = draw(st.lists(st.sampled_from([0.0, 0.3, 0.7, 1.0]), min_size=k * t * t, max_size=k * t * t))
    return np.array(vals).reshape(k, t, t), edges


@settings(max_examples=300, deadline=None)
@given(_dag_and_tensor())
def test_reference_dependent_matcher_equals_brute_force(case):
    S, edges = case
    val, mapping = best_mapping(S, edges)
    assert val == pytest.approx(brute_force_mapping(S, edges))
    parents = {i: [u for u, v in edges if v == i] for i in range(S.shape[0])}
    got = 0.0
    for i, m in enumerate(mapping):
        r = max((mapping[p] for p in parents[i]), default=0)
        got += S[i, r, m]
    assert got / S.shape[0] == pytest.approx(val)
    assert all(mapping[u] <= mapping[v] for u, v in edges)


# ------------------------------------------------------------------ the world (item 2)
def test_wifi_off_lookups_fail_with_an_informative_error():
    from agentstudies.envs.toolsandbox import WEB_TOOLS, ExecutionContext, ToolError, execute_tool

    world = {"SETTING": [{"name": "cellular", "value": True}, {"name": "wifi", "value": False},
                         {"name": "location_service", "value": True}, {"name": "low_battery_mode", "value": True},
                         {"name": "current_timestamp", "value": 1.0e9}, {"name": "own_phone_number", "value": "+14085550100"}]}
    args = {"convert_currency": {"amount": 1.0, "from_currency": "USD", "to_currency": "EUR"},
            "get_exchange_rate": {"from_currency": "USD", "to_currency": "EUR"}, "search_places": {"query": "Paris"},
            "search_lat_lon": {"latitude": 48.85, "longitude": 2.35},
            "search_weather": {"latitude": 48.85, "longitude": 2.35}, "search_stock": {"query": "Apple"}}
    assert set(args) == set(WEB_TOOLS)
    ctx = ExecutionContext(world)
    for tool, a in args.items():
        with pytest.raises(ToolError, match=f"Wifi is off; {tool} needs an internet connection"):
            execute_tool(ctx, tool, a)
    # the low-battery chain: wifi cannot be turned on until low battery mode is off
    with pytest.raises(ToolError, match="low battery mode is on"):
        execute_tool(ctx, "set_wifi_status", {"on": True})
    execute_tool(ctx, "set_low_battery_mode_status", {"on": False})
    execute_tool(ctx, "set_wifi_status", {"on": True})
    assert execute_tool(ctx, "search_stock", {"query": "Apple"})["symbol"] == "AAPL"


def test_world_size_branching_dags_and_lookup_dependencies(scenarios):
    from agentstudies.envs.toolsandbox import TOOLS, WEB_TOOLS, is_branching

    assert len(scenarios) >= 129 and len(TOOLS) >= 34
    branching = [s for s in scenarios if is_branching(s)]
    assert len(branching) >= 10
    chains = [s for s in scenarios if s.template == "lookup_offline"
              and {r["name"]: r["value"] for r in s.initial["SETTING"]}["low_battery_mode"]]
    assert chains, "no low-battery look-up chain"
    for s in chains:
        calls = [g[1] for g in s.gold if g[0] == "call"]
        assert calls.index("set_low_battery_mode_status") < calls.index("set_wifi_status") < \
            min(calls.index(t) for t in calls if t in WEB_TOOLS)


def test_branching_dag_scores_either_order(scenarios):
    sc = next(s for s in scenarios if s.template == "two_settings")
    a, b, done = sc.gold
    assert _play(sc, [a, b, done]).evaluate().similarity == 1.0
    assert _play(sc, [b, a, done]).evaluate().similarity == 1.0
    assert _play(sc, [a, done]).evaluate().similarity == pytest.approx(0.5)


def test_distractors_ranked_by_description_similarity(scenarios):
    from agentstudies.envs.toolsandbox import TOOLS, make_cases, ranked_distractors

    def cos(x, y):
        def bag(t):
            words = t.split("_") + "".join(ch if ch.isalnum() else " " for ch in TOOLS[t].description.lower()).split()
            return {w: words.count(w) for w in words}
        bx, by = bag(x), bag(y)
        return sum(bx[k] * by.get(k, 0) for k in bx) / (sum(v * v for v in bx.values()) * sum(v * v for v in by.values())) ** 0.5

    for sc in scenarios[::9]:
        ranked = ranked_distractors(sc)
        score = [max(cos(t, a) for a in sc.allow_list) for t in ranked]
        assert all(score[i] >= score[i + 1] - 1e-12 for i in range(len(score) - 1)), sc.scenario_id
        cases = {c.augmentation: c for c in make_cases([sc])}
        assert set(cases["3_distraction_tools"].view.tools) == set(sc.allow_list) | set(ranked[:3])
        assert set(cases["10_distraction_tools"].view.tools) == set(sc.allow_list) | set(ranked[:10])


# ------------------------------------------------------ agents that read (item 3)
def test_scramble_gap_comes_from_reading_and_vanishes_without_the_scramble(scenarios):
    """The reading agent (profile ``reader``: no mistake probabilities) picks tools by the
    shown text. Under the description scramble it calls wrong tools more often than on the
    same tools unscrambled; showing the very same case without the scramble removes the gap."""
    from agentstudies.agents.toolsandbox import run_episode
    from agentstudies.envs.toolsandbox import Case, ToolView, make_cases

    cases = make_cases(scenarios, ("3_distraction_tools", "tool_description_scrambled"))
    by = {}
    for c in cases:
        by.setdefault(c.scenario.scenario_id, {})[c.augmentation] = c
    gaps = 0
    for sid in sorted(by)[::3]:
        plain, scr = by[sid]["3_distraction_tools"], by[sid]["tool_description_scrambled"]
        a = run_episode(plain, "ReAct", "reader", 0)
        b = run_episode(scr, "ReAct", "reader", 0)
        unscrambled = Case(scr.case_id, scr.scenario, scr.augmentation, ToolView(scr.view.tools, None, scr.view.key))
        c = run_episode(unscrambled, "ReAct", "reader", 0)
        gaps += b["failed_calls"] > a["failed_calls"]
        assert (c["failed_calls"], c["similarity"], c["turn_count"]) == (a["failed_calls"], a["similarity"], a["turn_count"]), sid
    assert gaps >= 1


def test_reading_agent_never_reads_the_registry():
    import inspect as _inspect

    from agentstudies.agents.toolsandbox import _policy

    src = _inspect.getsource(_policy.rank_tools) + _inspect.getsource(_policy.ScriptedToolAgent._pick) + \
        _inspect.getsource(_policy.ScriptedToolAgent._read_map)
    assert "TOOLS" not in src and "description ==" not in src


def test_gate_user_judges_by_intent_text_not_gold(scenarios):
    import dataclasses

    from agentstudies.envs.toolsandbox import ScriptedUser, canonical_phone

    sc = next(s for s in scenarios if s.template == "add_contact")
    it = sc.intents[0]
    env = ToolSandboxEnv(sc, 0)
    right = {"tool": "add_contact", "arguments": {"name": it.slots["name"], "phone_number": canonical_phone(it.slots["phone_raw"]),
                                                   "relationship": it.slots["relationship"]}}
    wrong_number = {"tool": "add_contact", "arguments": dict(right["arguments"], phone_number="+12025550199")}
    wrong_name = {"tool": "add_contact", "arguments": dict(right["arguments"], name="Zed Quill")}
    user = env.user
    assert user.consistent(right, env.ctx.messages)
    assert not user.consistent(wrong_number, env.ctx.messages)
    assert not user.consistent(wrong_name, env.ctx.messages)
    # the gold values (Intent.expect) play no part: scrambling them changes nothing
    blind = ScriptedUser([dataclasses.replace(i, expect={"phone_number": "nonsense"}) for i in sc.intents], np.random.default_rng(0))
    for m in (right, wrong_number, wrong_name):
        assert blind.consistent(m, env.ctx.messages) == user.consistent(m, env.ctx.messages)


# ---------------------------------------------------------------- speed-ups keep the numbers
def _naive_tensor(milestones, ctx):
    """S[i, r, m] from the definition: every cell scored alone (fresh reader, no grouping of
    references by table version), constraints in the scorer's order (fixed, then reference)."""
    from agentstudies.envs.toolsandbox._scoring import _constraint_at, _Reader, resolve_targets

    milestones = resolve_targets(milestones, {ns: ctx.table(ns, 0) for ns in NAMESPACES})
    n = len(ctx.messages)
    S = np.zeros((len(milestones), n, n))
    for i, ms in enumerate(milestones):
        order = [c for c in ms.constraints if not c.uses_reference] + [c for c in ms.constraints if c.uses_reference]
        counted = sum(c.kind != "guardrail" for c in ms.constraints)
        for m in range(n):
            for r in range(m + 1):
                vals = [_constraint_at(c, _Reader(ctx), m, r) for c in order]
                # product to the power 1 / (non-guardrail constraints), evaluation.py 906-914
                S[i, r, m] = 0.0 if min(vals) <= 0.0 else float(np.exp(np.sum(np.log(vals)) / counted))
    return S


def _agent_envs(scenarios, k=24):
    from agentstudies.agents.controllers import make_controller
    from agentstudies.agents.toolsandbox import ScriptedToolAgent, drive
    from agentstudies.envs.toolsandbox import make_cases

    envs = []
    for j, sc in enumerate(scenarios[::max(1, len(scenarios) // k)][:k]):
        case = make_cases([sc], [("base", "10_distraction_tools", "tool_name_scrambled")[j % 3]], seed=j)[0]
        env = ToolSandboxEnv(case, j)
        agent = ScriptedToolAgent("base")
        agent.reset(case.case_id, j)
        drive(env, agent, make_controller("ReAct"))
        envs.append(env)
    return envs


def test_similarity_tensor_equals_the_cell_by_cell_definition(scenarios):
    from agentstudies.envs.toolsandbox.testing import similarity_tensor
    from agentstudies.envs.toolsandbox._scoring import with_guardrails

    envs = _agent_envs(scenarios)
    assert len({e.termination for e in envs}) >= 1 and sum(e.evaluate().similarity < 1.0 for e in envs) >= 1
    for env in envs:
        ms = with_guardrails(env.scenario.milestones, env.scenario.edges)
        fast, slow = similarity_tensor(ms, env.ctx), _naive_tensor(ms, env.ctx)
        assert np.array_equal(fast, slow), env.case.case_id   # bit for bit, not approx
        for ns in NAMESPACES:
            n = len(env.ctx.messages)
            assert env.ctx._version_indices(ns, n) == [env.ctx._version_index(ns, a) for a in range(n)]


def test_memoised_rouge_tokens_and_reading_words_equal_the_originals():
    from rouge_score import tokenizers

    from agentstudies.agents.toolsandbox._policy import _text_words, _words
    from agentstudies.envs.toolsandbox._scoring import _MemoTokenizer

    texts = ["Sending the message to Ana's phone now.", "It's 18.5°C — café déjà vu², 3_000 steps", "", "  x  "]
    memo, ref = _MemoTokenizer(), tokenizers.DefaultTokenizer(True)
    for t in texts * 2:
        assert memo.tokenize(t) == ref.tokenize(t)
        old: dict[str, int] = {}   # the reading agent's original tokeniser: runs of isalnum characters
        for wd in "".join(ch if ch.isalnum() else " " for ch in t.lower()).split():
            old[wd] = old.get(wd, 0) + 1
        assert _words(t) == old and _text_words(t) == (old, sum(v * v for v in old.values()))
