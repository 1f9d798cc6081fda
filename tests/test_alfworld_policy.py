"""Scripted (simulated) ALFWorld checkpoints and the adapter for real ones."""

from __future__ import annotations

import random

import pytest

from agentstudies.agents.alfworld import (
    RL_PROFILE,
    SFT_PROFILE,
    CallablePolicy,
    PolicyProfile,
    ScriptedAlfworldPolicy,
    make_checkpoints,
)
from agentstudies.agents.base import Policy
from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import AlfworldEnv
from agentstudies.envs.alfworld.expert import Expert


@pytest.fixture(scope="module")
def env():
    e = AlfworldEnv(budget=30)
    e.load_game(small_game("pick_clean_then_place_in_recep"))
    yield e
    e.close()


def _obs(env, ex):
    o = env.observe()
    o["expert"] = ex.plan
    return o


def _rollout(env, pol, seed, role="reacher", n=30):
    ex = Expert(env)
    env.reset(seed)
    pol.reset(env.task_id, seed, role=role)
    acts = []
    while not env.done and len(acts) < n:
        a = pol.act(_obs(env, ex))
        assert a in env.admissible
        acts.append(a)
        env.step(a)
    return acts


def test_profiles_validate_and_label():
    with pytest.raises(ValueError, match="loop_prob"):
        PolicyProfile(1.5, 0.5, 0.5, 0.1, 0.9, 0.9)
    with pytest.raises(TypeError, match="unknown policy parameter"):
        ScriptedAlfworldPolicy("SFT", SFT_PROFILE, loop_probability=0.1)
    p = ScriptedAlfworldPolicy("SFT", SFT_PROFILE, noise=0.05)
    assert p.profile.noise == 0.05 and p.profile.loop_prob == SFT_PROFILE.loop_prob
    assert p.simulated and p.label == "SFT (simulated)"
    assert isinstance(p, Policy)
    assert set(p.params) >= {"loop_prob", "loop_persistence", "noise", "bridge_quality", "finish_quality"}
    with pytest.raises(RuntimeError, match="reset"):
        ScriptedAlfworldPolicy("x").act({"admissible_commands": ["look"]})
    with pytest.raises(ValueError, match="role"):
        p.reset("t", 0, role="referee")


def test_seeded_per_task_seed_and_role(env):
    pol = ScriptedAlfworldPolicy("SFT", SFT_PROFILE)
    a = _rollout(env, pol, 1)
    b = _rollout(env, pol, 1)
    assert a == b
    runs = {tuple(_rollout(env, pol, s)) for s in range(6)}
    assert len(runs) > 1


def test_perfect_profile_follows_the_optimal_plan(env):
    perfect = ScriptedAlfworldPolicy("oracle", PolicyProfile(0, 0, 0, 0, 1, 1))
    env.reset(0)
    plan = Expert(env).plan()
    acts = _rollout(env, perfect, 0)
    assert acts == plan and env.won


def test_sft_loops_more_than_rl_on_the_engine(env):
    """Repeated previous actions and unchanged states (Appendix C audit quantities),
    counted from the engine's state keys over the same seeds."""
    ck = make_checkpoints()
    stats = {}
    for name, pol in ck.items():
        rep = same = n = 0
        for seed in range(4):
            ex = Expert(env)
            env.reset(seed)
            pol.reset(env.task_id, seed)
            prev, key = None, env.state_key()
            for _ in range(20):
                if env.done:
                    break
                a = pol.act(_obs(env, ex))
                env.step(a)
                k = env.state_key()
                rep += a == prev
                same += k == key
                n += 1
                prev, key = a, k
        stats[name] = (rep / n, same / n)
    assert stats["SFT"][0] > stats["RL"][0] and stats["SFT"][1] > stats["RL"][1]


def test_bridge_quality_zero_never_bridges(env):
    """At an F_2 state a solver with bridge_quality=0 takes a non-expert action; with 1 it
    takes the expert's (a bridge). Outcomes come from the engine."""
    env.reset(0)
    plan = Expert(env).plan()
    for a in plan[:-2]:
        env.step(a)
    prefix = env.actions
    wins = {}
    for q in (0.0, 1.0):
        pol = ScriptedAlfworldPolicy("s", RL_PROFILE, bridge_quality=q, finish_quality=1.0, idle_share=1.0)
        env.replay(0, prefix)
        env.set_remaining_budget(2)
        pol.reset(env.task_id, 0, role="solver")
        ex = Expert(env)
        first = pol.act(_obs(env, ex))
        if q == 0.0:
            assert first != plan[-2] and first.split()[0] in ("look", "inventory", "examine", "help")
        else:
            assert first == plan[-2]
        env.step(first)
        env.step(pol.act(_obs(env, ex)))
        wins[q] = env.won
    assert wins == {0.0: False, 1.0: True}


def test_callable_policy_adapter(env):
    seen = []

    def fn(history, admissible):
        seen.append((history, admissible))
        return admissible[-1]

    pol = CallablePolicy(fn, "llm")
    assert not pol.simulated and pol.label == "llm" and isinstance(pol, Policy)
    acts = _rollout(env, pol, 0, n=3)
    assert len(acts) == 3 and len(seen[0][0]) == 1 and len(seen[1][0]) == 3
    assert CallablePolicy(lambda h, a: "fly", require_admissible=False).act({"history": (), "admissible_commands": ["look"]}) == "fly"
    with pytest.raises(ValueError, match="not among"):
        CallablePolicy(lambda h, a: "fly", require_admissible=True).act({"history": (), "admissible_commands": ["look"]})
    with pytest.raises(TypeError, match="expected str"):
        CallablePolicy(lambda h, a: 3).act({"history": (), "admissible_commands": ["look"]})
    with pytest.raises(TypeError):
        CallablePolicy("not callable")
