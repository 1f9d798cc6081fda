"""Exact speed-ups of the ALFWorld engine wrapper, each against the unoptimised path:

* :class:`engine.CachedPddlState` memoises the facts a fresh state starts with (the
  ``get_state`` read of the library is quadratic in the state size) and the per-operator
  work of ``all_applicable_actions``;
* :func:`engine.applicable_operator_ids` (ids without decoded names) and the frontier
  check that uses it below the root;
* :func:`engine.copy_symbols`, the grammar's ``deepcopy`` of symbol trees;
* the intro text derived once per load (``env._PddlEnv.intro_cache``);
* ``CachedPddlState.facts`` (chained sets) and the memoised fact texts of
  ``AlfworldEnv.fluent_facts``.

Every test also runs a deliberately broken variant and checks that it is caught.
"""

from __future__ import annotations

import random

import pytest
from textworld.envs.pddl.logic import PddlState

from agentstudies.envs.alfworld import engine
from agentstudies.envs.alfworld import frontier as fr
from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import AlfworldEnv, _PddlEnv

TYPES = ("pick_and_place_simple", "pick_heat_then_place_in_recep", "look_at_obj_in_light")


@pytest.fixture(scope="module")
def env():
    e = AlfworldEnv(budget=40)
    yield e
    e.close()


class _NoMemo(dict):
    """Stand-in for :data:`engine._INITIAL` that never keeps anything (every state is
    built afresh, as before the memo)."""

    def __setitem__(self, key, value):
        pass


def _state_view(ps) -> tuple:
    """Everything a fresh state holds: tables with their keys in order, sets as sets
    (a set's iteration order already varies between processes)."""
    return (
        [(sig, set(props)) for sig, props in ps._facts.items()],
        list(ps._vars_by_name.items()),
        [(t, set(v)) for t, v in ps._vars_by_type.items()],
        list(ps._var_counts.items()),
        ps.name2type,
        type(ps._facts), type(ps._vars_by_type), type(ps._var_counts),
    )


def _actions_view(actions, ps) -> tuple:
    return ([(a.name, a.id, list(a.mapping.items()), a.command_template, a.feedback_rule, a.preconditions,
              a.postconditions, list(vars(a)), {k: v for k, v in vars(a).items() if k != "mapping"},
              type(a)) for a in actions], sorted(ps._operators))


def _walk_states(env, game, n_steps, seed):
    """Yield the env after each of ``n_steps`` random admissible steps (reset first)."""
    rng = random.Random(seed)
    env.load_game(game)
    env.reset(seed)
    yield env
    for _ in range(n_steps):
        if env.done:
            return
        env.step(rng.choice(env.admissible))
        yield env


@pytest.mark.parametrize("task_type", TYPES)
def test_initial_facts_memo_equals_fresh_state(monkeypatch, env, task_type):
    """A state built from the memo holds the same facts, variables and counts as one
    built afresh, in tables of its own (a step on one leaves the memo and the other
    untouched); leaving out the library's state facts is caught."""
    game = small_game(task_type)
    env.load_game(game)  # translation and memo warm
    ps = env._pddl._pddl_state
    memo_state = engine.CachedPddlState(ps.downward_lib, game["pddl_problem"], ps._logic)
    again = engine.CachedPddlState(ps.downward_lib, game["pddl_problem"], ps._logic)
    assert (game["pddl_domain"], game["pddl_problem"]) in engine._INITIAL
    memo_tables = engine._INITIAL[(game["pddl_domain"], game["pddl_problem"])].tables
    monkeypatch.setattr(engine, "_INITIAL", _NoMemo())
    fresh = engine.CachedPddlState(ps.downward_lib, game["pddl_problem"], ps._logic)
    assert _state_view(memo_state) == _state_view(fresh) == _state_view(again)
    assert memo_state._facts is not again._facts and memo_state._facts is not memo_tables[0]
    assert all(memo_state._facts[k] is not again._facts[k] for k in again._facts)
    assert all(memo_state._vars_by_type[k] is not again._vars_by_type[k] for k in again._vars_by_type)
    before = _state_view(again)
    memo_state.apply(memo_state.all_applicable_actions()[0])
    assert _state_view(again) == before and _state_view(memo_state) != before

    class _Broken(engine.CachedPddlState):  # forgets the facts read from the library
        def _initial_facts_of_library(self):
            return []

    broken = _Broken(ps.downward_lib, game["pddl_problem"], ps._logic)
    assert _state_view(broken) != _state_view(fresh)


@pytest.mark.parametrize("task_type", TYPES)
def test_applicable_actions_equal_textworlds(env, task_type):
    """Along a random walk, the memoised ``all_applicable_actions`` hands out what
    TextWorld's own does (names, ids, mappings, templates, operator map, every attribute
    in the same order, fresh mapping dicts); a memo keyed
    by the action name alone (not its arguments) is caught."""
    game = small_game(task_type)
    n = 0
    for e in _walk_states(env, game, 12, seed=3):
        ps = e._pddl._pddl_state
        got = _actions_view(engine.CachedPddlState.all_applicable_actions(ps), ps)
        want = _actions_view(PddlState.all_applicable_actions(ps), ps)
        assert got == want
        acts = engine.CachedPddlState.all_applicable_actions(ps)
        assert len({id(a.mapping) for a in acts}) == len(acts)  # no shared mapping
        n += len(got[0])
    assert n > 50

    env.reset(0)
    ps = env._pddl._pddl_state
    want = _actions_view(PddlState.all_applicable_actions(ps), ps)
    ps._op_memo = _NameOnlyMemo()
    broken = _actions_view(engine.CachedPddlState.all_applicable_actions(ps), ps)
    assert broken != want


class _NameOnlyMemo(dict):
    """Broken memo: keyed by the action name only, so every ``go to`` shares one mapping."""

    def get(self, key, default=None):
        return super().get(key.split()[0], default)

    def __setitem__(self, key, value):
        super().__setitem__(key.split()[0], value)


@pytest.mark.parametrize("task_type", TYPES)
def test_operator_ids_equal_applicable_operators(env, task_type):
    """``applicable_operator_ids`` = the ids of ``applicable_operators``, in order."""
    for e in _walk_states(env, small_game(task_type), 8, seed=5):
        ops = engine.applicable_operators(e.lib)
        assert engine.applicable_operator_ids(e.lib) == [op[0] for op in ops] and ops


def _frontier_check_before(env, D=2):
    """The frontier check as it was before (names decoded at every depth, every child
    state id read): the reference for the optimised one."""
    b = env.remaining_budget
    if env.won or b <= 0:
        return fr.FrontierCheck(D, False, 0 if env.won else None, True, b)
    if b < D:
        return fr.FrontierCheck(D, False, None, False, b)
    lib = env.lib
    root = lib.get_state_id()
    names = env.operator_commands()
    tested, winning, bridges = [], [], set()
    try:
        level = [(-1, root)]
        for depth in range(1, D + 1):
            nxt, n_tested, any_win = [], 0, False
            for first, sid in level:
                lib.set_state_id(sid)
                ops = engine.applicable_operators(lib)
                n_tested += len(ops)
                for op_id, _name, _ in ops:
                    lib.set_state_id(sid)
                    lib.apply_operator(op_id, None)
                    f = op_id if depth == 1 else first
                    if lib.check_goal():
                        any_win = True
                        if depth == 1:
                            winning.append(names.get(op_id, _name))
                        elif depth == 2:
                            bridges.add(names.get(f, str(f)))
                    else:
                        nxt.append((f, lib.get_state_id()))
            tested.append(n_tested)
            if any_win:
                return fr.FrontierCheck(D, depth == D, depth, False, b, tuple(tested), tuple(winning),
                                        tuple(sorted(bridges)))
            level = nxt
        return fr.FrontierCheck(D, False, None, False, b, tuple(tested), (), ())
    finally:
        lib.set_state_id(root)


def _expert_walk(env, game, seed):
    """States along the expert's plan (they pass through F_2, F_1 and the win)."""
    from agentstudies.envs.alfworld.expert import Expert

    env.load_game(game)
    env.reset(seed)
    plan = Expert(env).plan()
    yield env
    for a in plan:
        env.step(a)
        yield env


@pytest.mark.parametrize("task_type", TYPES)
def test_frontier_check_equals_the_check_before(env, task_type):
    """The optimised frontier check returns exactly the earlier result (membership,
    distance, counts of tested actions, winning and bridge actions) at D = 1, 2, 3 on
    random and expert walks, and leaves the engine state where it was."""
    game = small_game(task_type)
    results = []
    for walk in (_walk_states(env, game, 6, seed=1), _expert_walk(env, game, seed=2)):
        for e in walk:
            for D in (1, 2, 3) if len(results) % 4 == 0 else (1, 2):
                sid = e.state_id()
                got = fr.frontier_check(e, D)
                assert e.state_id() == sid
                want = _frontier_check_before(e, D)
                assert got == want
                results.append(got)
    assert any(r.on_frontier for r in results) and any(r.bridge_actions for r in results)
    assert any(r.winning_actions for r in results)


def test_handoff_tables_equal_without_the_engine_memos(monkeypatch):
    """Two handoff tasks end to end (reacher steps, frontier checks, replay clones, solver
    text) give the same tables with TextWorld's own ``all_applicable_actions``, no
    initial-state memo, ``copy.deepcopy`` of symbols, an intro derived at every reset,
    TextWorld's ``facts``, ``str`` of every fluent fact and the frontier check as before."""
    from agentstudies.studies.alfworld.handoff import run as ah
    from agentstudies.studies.alfworld.handoff.run import make_study_checkpoints

    games = [small_game("pick_and_place_simple"), small_game("look_at_obj_in_light")]
    pols = make_study_checkpoints("trained", temperature=0.4)

    def run():
        ah._WORKER.pop("env", None)
        st = ah.run_handoff_study(games, tasks_per_type=None, seeds=[0, 1], reachers=pols, n_jobs=1,
                                  early_budget=20)
        ah._WORKER.pop("env").close()
        return st

    fast = run()
    import copy

    import textworld.envs.pddl.textgen as tg

    monkeypatch.setattr(engine, "_INITIAL", _NoMemo())
    monkeypatch.setattr(engine.CachedPddlState, "all_applicable_actions", PddlState.all_applicable_actions)
    monkeypatch.setattr(tg, "deepcopy", copy.deepcopy)
    monkeypatch.setattr(_PddlEnv, "intro_cache", False)
    from textworld.logic import State

    from agentstudies.envs.alfworld import env as env_mod

    monkeypatch.setattr(engine.CachedPddlState, "facts", State.facts)
    monkeypatch.setattr(env_mod, "_fact_text", str)
    monkeypatch.setattr(engine, "copy_symbols", lambda obj, memo=None: copy.deepcopy(obj, memo))
    monkeypatch.setattr(fr, "frontier_check", _frontier_check_before)
    monkeypatch.setattr(ah, "frontier_check", _frontier_check_before)
    plain = run()
    assert int(fast.trajectories["arrived"].sum()) > 0
    for name, table in fast.frames().items():
        assert table.equals(plain.frames()[name]), name


def _shape(obj, seen=None, originals=None):
    """Structure of a symbol tree for comparison: types, attribute names and strings,
    with every object replaced by the index of its first visit (so aliasing shows)."""
    seen = {} if seen is None else seen
    if isinstance(obj, str) or obj is None:
        return obj
    if id(obj) in seen:
        return ("ref", seen[id(obj)])
    seen[id(obj)] = len(seen)
    if originals is not None:
        assert id(obj) not in originals, "a copy shares a mutable object with the original"
    if isinstance(obj, list):
        return ("list", [_shape(x, seen, originals) for x in obj])
    if isinstance(obj, dict):
        return ("dict", sorted((k, _shape(v, seen, originals)) for k, v in obj.items()))
    return (type(obj).__name__, _shape(obj.__dict__, seen, originals))


def _ids(obj, out):
    if isinstance(obj, str) or obj is None or id(obj) in out:
        return out
    out.add(id(obj))
    items = obj if isinstance(obj, list) else (obj.values() if isinstance(obj, dict) else obj.__dict__.values())
    for x in items:
        _ids(x, out)
    return out


def test_copy_symbols_equals_deepcopy(env):
    """``copy_symbols`` copies every production of the grammar (and a parsed text) like
    ``copy.deepcopy``: same types, attributes, strings and sharing, no object shared
    with the original; a copy that shares the contexts is caught. Non-symbol objects go
    to ``deepcopy``."""
    import copy

    import textworld.envs.pddl.textgen as tg

    env.load_game(small_game("pick_heat_then_place_in_recep"))
    grammar = env._pddl._logic.grammar
    trees = [rule.rhs for rules in grammar._rules.values() for rule in rules]
    trees.append(tg._parse_and_convert("#intro#", rule_name="symbols"))
    assert len(trees) > 50 and engine.parse_cache_enabled() and tg.deepcopy is engine.copy_symbols
    for tree in trees:
        assert _shape(engine.copy_symbols(tree), originals=_ids(tree, set())) == _shape(copy.deepcopy(tree))
    odd = [{"a": [1, 2]}, (3, [4])]
    assert engine.copy_symbols(odd) == odd and engine.copy_symbols(odd)[0]["a"] is not odd[0]["a"]

    def broken(obj, memo=None):  # shares the (empty) contexts with the original
        new = engine.copy_symbols(obj, memo)
        for a, b in zip(obj, new):
            b.context = a.context
        return new

    tree = next(t for t in trees if t and isinstance(t[0], tg.Symbol))
    with pytest.raises(AssertionError):
        _shape(broken(tree), originals=_ids(tree, set()))


@pytest.mark.parametrize("task_type", TYPES)
def test_intro_text_once_per_load_equals_a_fresh_derivation(env, task_type):
    """Every reset hands out the intro derived afresh from its own initial state (after
    steps, other seeds, a reload of another game and back; the intro is kept per game
    across loads, ``pddl_env._RENDERED``); an intro kept across loads of different
    games is caught."""
    game, other = small_game(task_type), small_game("pick_two_obj_and_place")
    env.load_game(game)
    seen = []
    for seed in (0, 3, 0):
        obs = env.reset(seed)["observation"]
        pe = env._pddl
        ps = pe._pddl_state
        ctx = {"state": ps, "facts": list(ps.facts), "variables": {}, "mapping": {}, "entity_infos": pe._entity_infos}
        fresh = pe._logic.grammar.derive("#intro#", ctx)
        assert pe.state.feedback == fresh and pe._intro is not None
        seen.append(obs)
        for a in env.admissible[:2]:
            env.step(a)
    assert len(set(seen)) == 1
    env.load_game(other)
    obs_other = env.reset(0)["observation"]
    assert obs_other != seen[0]
    stale = env._pddl._intro
    env.load_game(game)
    assert env._pddl._intro == seen[0]  # this game's intro, kept from its first load
    assert env.reset(0)["observation"] == seen[0]
    env.load_game(game)
    env._pddl._intro = stale  # broken: the other game's intro survives the load
    assert env.reset(0)["observation"] != seen[0]


def test_facts_and_fluent_texts_equal_textworlds(env):
    """``CachedPddlState.facts`` yields TextWorld's ``State.facts`` (same facts, same
    order) and ``fluent_facts`` equals the texts built with ``str`` each time, along a
    walk; a text memo keyed by the predicate alone is caught."""
    from textworld.logic import State

    from agentstudies.envs.alfworld import env as env_mod

    n = 0
    for e in _walk_states(env, small_game("pick_clean_then_place_in_recep"), 10, seed=4):
        ps = e._pddl._pddl_state
        assert list(ps.facts) == list(State.facts.fget(ps))
        ref = sorted(str(p) for sig, props in ps._facts.items() if sig.name in env_mod.FLUENT_PREDICATES
                     for p in props)
        assert e.fluent_facts() == ref
        n += len(ref)
    assert n > 100
    ps = env._pddl._pddl_state
    want = env.fluent_facts()
    env_mod._FACT_TEXT.clear()
    for p in ps.facts:  # broken: one text per predicate name
        env_mod._FACT_TEXT.setdefault(p, next(str(q) for q in ps.facts if q.name == p.name))
    assert env.fluent_facts() != want
    env_mod._FACT_TEXT.clear()


def _logic_view(logic) -> tuple:
    """Everything a ``GameLogic`` holds after parsing: actions (every attribute, in
    order), grammar rules (every production with its symbols, in order), domain, types."""
    return (logic.domain, [(k, vars(a)) for k, a in logic.actions.items()],
            [(k, [repr(r) for r in rules]) for k, rules in logic.grammar._rules.items()],
            sorted(logic.types._types) if hasattr(logic.types, "_types") else None)


def test_shared_grammar_parse_equals_textworlds_parse(monkeypatch):
    """``pddl_env.game_logic`` (one TatSu parse per grammar skeleton, the task sentence put
    back) equals ``GameLogic(domain, grammar)`` on every game of both embedded pools
    (one per type) and on generated games of every type; the games share one skeleton.
    A converter that forgets to put the sentence back is caught, and a grammar without a
    plain task sentence takes the ordinary parse."""
    from textworld.envs.pddl.logic import GameLogic

    from agentstudies.envs.alfworld import pddl_env
    from agentstudies.envs.alfworld._testing import SMALL_LAYOUTS
    from agentstudies.envs.alfworld.pools import load_pool

    engine.enable_parse_cache()
    games = load_pool("valid_seen", 1) + load_pool("valid_unseen", 1) + [small_game(t) for t in SMALL_LAYOUTS]
    assert len({g["grammar"] for g in games}) == len(games)  # every game its own sentence
    monkeypatch.setattr(pddl_env, "_LOGIC_CACHE", {})
    monkeypatch.setattr(pddl_env, "_SKELETONS", {})
    for g in games:
        fast = pddl_env.game_logic(g["pddl_domain"], g["grammar"])
        ref = GameLogic(domain=g["pddl_domain"], grammar=g["grammar"])
        assert _logic_view(fast) == _logic_view(ref)
        assert g["grammar"].split("Your task is to: ")[1].split('"')[0] in repr(fast.grammar._rules["task"])
    assert len(pddl_env._SKELETONS) == 1
    # a grammar whose task sentence holds a quote is parsed the ordinary way
    odd = games[0]["grammar"].replace("Your task is to: ", 'Your task is to: \\"quoted\\" ', 1)
    assert pddl_env._skeleton_of(odd) is None
    assert _logic_view(pddl_env.game_logic(games[0]["pddl_domain"], odd)) == _logic_view(
        GameLogic(domain=games[0]["pddl_domain"], grammar=odd))
    # broken: the placeholder is left in the grammar block
    monkeypatch.setattr(pddl_env, "_LOGIC_CACHE", {})
    monkeypatch.setattr(pddl_env._SentenceConverter, "_unescape_block",
                        lambda self, s: pddl_env._pddl_logic._ModelConverter._unescape_block(self, s))
    g = games[1]
    assert _logic_view(pddl_env.game_logic(g["pddl_domain"], g["grammar"])) != _logic_view(
        GameLogic(domain=g["pddl_domain"], grammar=g["grammar"]))


def test_goal_relevance_filter_keeps_every_frontier_answer(monkeypatch):
    """At the last depth the frontier check applies only operators that can change the
    goal: on every state of trained-policy episodes in pooled rooms of all six task types
    (and along the expert's plans, through F_2 and F_1) the result equals the one that
    applies every operator. A filter that ignores the axioms (in these tasks the goal is
    one derived variable, computed from the others) is caught."""
    from agentstudies.agents.alfworld import LearnedAlfworldPolicy
    from agentstudies.envs.alfworld.pools import load_pool

    env = AlfworldEnv(budget=30)
    pol = LearnedAlfworldPolicy.load("SFT", temperature=1.0)
    pairs = []

    def both(e):
        monkeypatch.setattr(fr, "USE_GOAL_RELEVANCE", True)
        got = fr.frontier_check(e, 2)
        monkeypatch.setattr(fr, "USE_GOAL_RELEVANCE", False)
        pairs.append((got, fr.frontier_check(e, 2), e._pddl._pddl_state.sas))

    for game in load_pool("valid_seen", 1):
        env.load_game(game)
        env.reset(0)
        pol.reset(env.task_id, 0, "eval")
        while not env.done:
            env.step(pol.act(env.observe()))
            both(env)
        for e in _expert_walk(env, game, seed=0):
            both(e)
    env.close()
    assert all(got == want for got, want, _ in pairs)
    assert sum(w.on_frontier for _, w, _ in pairs) >= 6 and any(w.bridge_actions for _, w, _ in pairs)
    assert any(w.winning_actions for _, w, _ in pairs)
    relevant = fr.goal_relevant_operators(pairs[0][2])
    assert 0 < sum(relevant.values()) < len(relevant)  # it filters, and keeps some
    # broken: only operators that set a goal variable itself count (the axioms ignored)
    def no_axioms(sas):
        goal, _, ops = fr._sas_goal_parts(sas)
        return {name.encode(): not goal.isdisjoint(targets) for name, targets in ops}

    monkeypatch.setattr(fr, "goal_relevant_operators", no_axioms)
    env = AlfworldEnv(budget=30)
    found = False
    for game in load_pool("valid_seen", 1):
        for e in _expert_walk(env, game, seed=0):
            monkeypatch.setattr(fr, "USE_GOAL_RELEVANCE", True)
            got = fr.frontier_check(e, 2)
            monkeypatch.setattr(fr, "USE_GOAL_RELEVANCE", False)
            found = found or got != fr.frontier_check(e, 2)
    env.close()
    assert found


def test_grammar_debug_flags_read_once_give_the_same_texts(env, monkeypatch):
    """With the grammar's debug flags read once (``engine._read_flag``), every observation
    and admissible list along a walk equals the one derived with TextWorld's own
    ``check_flag``; the flags keep the environment's values at the time the cache was
    enabled, and other flags are still read from the environment."""
    import textworld.envs.pddl.textgen as textgen

    game = small_game("pick_heat_then_place_in_recep")
    engine.enable_parse_cache()
    assert textgen.check_flag is engine._read_flag
    fast = [(e.observation, e.admissible) for e in _walk_states(env, game, 8, seed=5)]
    monkeypatch.setattr(textgen, "check_flag", engine._ORIG_CHECK_FLAG)
    slow = [(e.observation, e.admissible) for e in _walk_states(env, game, 8, seed=5)]
    assert fast == slow and len(fast) == 9
    monkeypatch.setenv("TW_OTHER_FLAG", "1")
    assert engine._read_flag("TW_OTHER_FLAG") and not engine._read_flag("TW_CSG_DEBUG")


def _history_fresh(env) -> tuple:
    """The visible history built from scratch (the formula before the memo)."""
    out = [env._records[0]["observation"]]
    for a, r in zip(env._actions, env._records[1:]):
        out += [a, r["observation"]]
    return tuple(out)


def test_history_memo_equals_a_fresh_history_through_steps_restores_and_resets(env):
    """``AlfworldEnv.history`` (extended as steps append, rebuilt after reset/restore)
    equals the history built from scratch after every step, after restoring snapshots
    of shorter and longer branches, after a replay and a reset; a memo that is not
    dropped on restore is caught."""
    rng = random.Random(7)
    env.load_game(small_game("pick_clean_then_place_in_recep"))
    env.reset(1)
    snaps, n = [], 0
    for i in range(40):
        if env.done or (i % 7 == 6 and snaps):
            env.restore(rng.choice(snaps))
        else:
            env.step(rng.choice(env.admissible))
            if i % 3 == 0:
                snaps.append(env.snapshot())
        assert env.history == _history_fresh(env) and env.observe()["history"] == env.history
        n += 1
    prefix = env.actions
    env.replay(1, prefix[:3])
    assert env.history == _history_fresh(env) and len(env.history) == 7
    env.reset(2)
    assert env.history == _history_fresh(env) == (env.observation,)
    # broken: a restore that keeps the memo of the longer branch it leaves
    env.reset(1)
    for a in env.admissible[:1]:
        env.step(a)
    short = env.snapshot()
    env.step(env.admissible[0])
    env.step(env.admissible[-1])
    longer = env.history
    memo, memo_n = env._history_memo, env._history_n
    env.restore(short)
    env.step(env.admissible[1])
    env.step(env.admissible[0])
    env._history_memo, env._history_n = memo, memo_n  # as if restore had not dropped it
    assert env.history == longer and env.history != _history_fresh(env)
