"""Remaining distance and F_D membership: fast path vs brute force, independent values."""

from __future__ import annotations

import random

import pytest

from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import AlfworldEnv
from agentstudies.envs.alfworld.expert import Expert
from agentstudies.envs.alfworld.frontier import (
    frontier_check,
    frontier_check_reference,
    remaining_distance,
)
from agentstudies.envs.alfworld.generate import TASK_TYPES


@pytest.fixture(scope="module")
def env():
    e = AlfworldEnv(budget=30)
    yield e
    e.close()


def _reached_states(env, game, seed, n_states, rng):
    """Reset, then walk: expert steps mixed with random ones; yield at sampled states.

    Walks toward the goal so that states on the frontier (l = 2), next to it (l = 1, 3)
    and far from it all occur."""
    env.load_game(game)
    ex = Expert(env)
    out = 0
    while out < n_states:
        env.reset(seed)
        p_expert = rng.choice([0.5, 0.8, 1.0])
        stop_at = rng.choice([1, 2, 2, 2, 3, 4])
        while not env.done:
            plan = ex.plan()
            if len(plan) <= stop_at:
                break
            env.step(plan[0] if rng.random() < p_expert else rng.choice(env.admissible))
        if not env.done:
            yield len(ex.plan())
            out += 1


def test_fast_check_equals_brute_force_on_reached_states(env):
    """>= 50 reached states of all six task types, on and off F_2: no disagreement in
    membership, distance, counts of first/second actions, winning and bridge actions."""
    rng = random.Random(2029)
    n = {tt: 9 for tt in TASK_TYPES}
    n["pick_heat_then_place_in_recep"] = n["pick_cool_then_place_in_recep"] = 7
    checked = on = 0
    for tt in TASK_TYPES:
        game = small_game(tt)
        for ell in _reached_states(env, game, seed=rng.randrange(100), n_states=n[tt], rng=rng):
            fast = frontier_check(env, D=2)
            ref = frontier_check_reference(env, D=2, method="snapshot")
            assert fast.summary() == ref.summary(), (tt, env.actions)
            # the analytic expert's optimal plan length is an independent value of l
            assert (fast.distance == ell) if ell <= 2 else fast.distance is None
            checked += 1
            on += fast.on_frontier
    assert checked >= 50
    assert 10 <= on <= checked - 10


def test_distance_equals_planner_plan_length(env):
    """l by exhaustive BFS on the engine = fast-downward's optimal plan length = the
    analytic expert's plan length: at the start state (all six types, planner vs
    expert) and, by BFS, at the state four planner actions before the end."""
    for tt in TASK_TYPES:
        env.load_game(small_game(tt))
        env.reset(0)
        fd = env.expert_plan()
        assert len(Expert(env).plan()) == len(fd)
        for a in fd[: max(0, len(fd) - 4)]:
            env.step(a)
        ell = min(4, len(fd))
        assert remaining_distance(env, max_depth=ell) == ell
        assert remaining_distance(env, max_depth=ell - 1) is None
        assert len(env.expert_plan()) == len(Expert(env).plan()) == ell


def test_one_and_two_actions_before_the_end(env):
    """Along the planner's own plan: the state one action before winning has l = 1 and is
    not in F_2 (its last action wins at once); the state two actions before is in F_2 and
    the plan's next action is a bridge action."""
    for tt in TASK_TYPES:
        env.load_game(small_game(tt, index=1))
        env.reset(0)
        plan = env.expert_plan()
        for a in plan[:-2]:
            env.step(a)
        two = frontier_check(env, D=2)
        assert two.on_frontier and two.distance == 2 and plan[-2] in two.bridge_actions
        assert two.first_actions_tested == len(env.admissible)
        assert two.second_actions_tested > two.first_actions_tested
        env.step(plan[-2])
        one = frontier_check(env, D=2)
        assert not one.on_frontier and one.distance == 1
        assert plan[-1] in one.winning_actions and one.second_actions_tested == 0
        assert frontier_check(env, D=1).on_frontier
        env.step(plan[-1])
        assert env.won and frontier_check(env, D=2).terminal


def test_budget_component_of_the_frontier(env):
    env.load_game(small_game("pick_and_place_simple", index=2))
    env.reset(0)
    plan = env.expert_plan()
    for a in plan[:-2]:
        env.step(a)
    assert frontier_check(env, 2).on_frontier
    env.set_remaining_budget(1)
    fast, ref = frontier_check(env, 2), frontier_check_reference(env, 2)
    assert not fast.on_frontier and fast.summary() == ref.summary()
    env.set_remaining_budget(2)
    assert frontier_check(env, 2).on_frontier


def test_distance_three_and_replay_reference(env):
    env.load_game(small_game("pick_two_obj_and_place", index=1))
    env.reset(5)
    plan = env.expert_plan()
    for a in plan[:-3]:
        env.step(a)
    three = frontier_check(env, D=3)
    assert three.on_frontier and three.distance == 3
    assert not frontier_check(env, D=2).on_frontier
    assert frontier_check_reference(env, D=3).summary() == three.summary()
    # the paper's operational clone (reset + verified replay per branch) agrees too
    env.step(plan[-3])
    assert frontier_check_reference(env, D=2, method="replay").summary() == frontier_check(env, D=2).summary()
    with pytest.raises(ValueError):
        frontier_check(env, D=0)
    with pytest.raises(ValueError):
        frontier_check_reference(env, D=2, method="pickle")


def test_fast_check_leaves_the_env_untouched(env):
    env.load_game(small_game("look_at_obj_in_light"))
    env.reset(1)
    env.step(env.admissible[0])
    before = (env.state_id(), env.records, env.state_key())
    frontier_check(env, 2)
    remaining_distance(env, 3)
    assert (env.state_id(), env.records, env.state_key()) == before
    # and the engine continues from the right state
    a = env.admissible[-1]
    env.step(a)
    after = env.records[-1]
    env.replay(1, env.actions[:-1] + [a])
    assert env.records[-1] == after


def test_last_level_table_equals_decoding_every_name(env):
    """The last depth's operator table (ids -> name codes, learnt lazily per task) gives
    what decoding every applicable operator's name gives: the number of distinct names
    and the first-listed id of each name the relevance map keeps, in the library's order
    -- on every state one operator away from states of a random walk in all six task
    types, with the real relevance map and with one that drops every other name (so the
    filter matters). The relevance map is found by the text's identity on later calls,
    and a text equal but not identical still gets an equal map."""
    import agentstudies.envs.alfworld.frontier as fr
    from agentstudies.envs.alfworld.engine import _operator_array

    def by_names(lib, relevant):
        _, arr = _operator_array(lib)
        first: dict[bytes, int] = {}
        for op_id, name in zip(arr["id"].tolist(), arr["name"].tolist()):
            first.setdefault(name, op_id)
        return len(first), [i for name, i in first.items() if relevant.get(name, True)]

    rng = random.Random(7)
    n_states = 0
    for tt in TASK_TYPES:
        env.load_game(small_game(tt))
        env.reset(3)
        sas = env._pddl._pddl_state.sas
        relevant = fr.goal_relevant_operators(sas)
        assert fr.goal_relevant_operators(sas) is relevant
        assert fr.goal_relevant_operators("".join(list(sas))) == relevant
        halved = {name: k % 2 == 0 for k, name in enumerate(sorted(relevant))}
        lib = env.lib
        for _ in range(6):
            if env.done:
                break
            root = lib.get_state_id()
            for op_id, _, _ in fr.applicable_operators(lib):
                lib.set_state_id(root)
                lib.apply_operator(op_id, None)
                for rel in (relevant, halved):
                    assert fr._last_level_ops(lib, rel) == by_names(lib, rel)
                n_states += 1
            lib.set_state_id(root)
            env.step(rng.choice(env.admissible))
    assert n_states >= 100
