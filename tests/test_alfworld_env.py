"""AlfworldEnv on the real ALFWorld engine: budget, history, replay clones, snapshots."""

from __future__ import annotations

import json
import random
import sys

import pytest

from agentstudies.envs.alfworld import engine
from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import (
    AlfworldEnv,
    ReplayMismatch,
    SnapshotError,
    official_game_files,
)
from agentstudies.envs.alfworld.expert import Expert
from agentstudies.agents.alfworld import make_checkpoints


@pytest.fixture(scope="module")
def env():
    e = AlfworldEnv(budget=12)
    e.load_game(small_game("pick_and_place_simple"))
    yield e
    e.close()


def _walk(env, n, rng):
    for _ in range(n):
        if env.done:
            break
        env.step(rng.choice(env.admissible))


def test_sys_argv_is_left_alone():
    before_obj = sys.argv
    before = list(sys.argv)
    e = AlfworldEnv(budget=5)
    e.load_game(small_game("pick_two_obj_and_place"))
    assert sys.argv == before and sys.argv is before_obj
    e.reset(3)
    assert sys.argv == before and sys.argv is before_obj
    e.expert_plan()  # fast-downward translation of the optimised task happens here
    assert sys.argv == before and sys.argv is before_obj
    e.close()


def test_step_budget_history_and_records(env):
    obs = env.reset(4)
    assert obs["remaining_budget"] == 12 and obs["step"] == 0
    assert obs["admissible_commands"] == sorted(obs["admissible_commands"])
    assert obs["observation"].startswith("-= Welcome to TextWorld, ALFRED! =-")
    a0 = env.admissible[0]
    obs, won, done = env.step(a0)
    assert env.actions == [a0] and env.remaining_budget == 11
    h = env.history
    assert len(h) == 3 and h[1] == a0 and h[2] == obs["observation"]
    recs = env.records
    assert len(recs) == 2 and set(recs[1]) == {"observation", "admissible", "score", "terminal", "won"}
    json.dumps(recs)  # JSON-safe
    while not env.done:
        env.step("look")
    assert env.remaining_budget == 0 and env.records[-1]["terminal"] is True
    with pytest.raises(RuntimeError, match="episode over"):
        env.step("look")


def test_won_flag_is_the_engines(env):
    env.reset(0)
    plan = Expert(env).plan()
    fd = env.expert_plan()
    assert len(plan) == len(fd) >= 1
    for i, a in enumerate(plan):
        assert not env.won
        env.step(a)
    assert env.won and env.done and env.records[-1]["score"] == 1.0


def test_non_admissible_command_costs_one_action(env):
    env.reset(0)
    key = env.state_key()
    obs, _, _ = env.step("dance wildly")
    assert obs["observation"] == "Nothing happens." and env.remaining_budget == 11
    assert env.state_key() == key


def test_replay_verifies_every_record_and_names_the_step(env):
    rng = random.Random(5)
    env.reset(7)
    _walk(env, 5, rng)
    actions, records = env.actions, env.records
    obs = env.replay(7, actions, records)
    assert env.records == records and obs["observation"] == records[-1]["observation"]
    bad = [dict(r) for r in records]
    bad[3]["admissible"] = list(reversed(bad[3]["admissible"]))
    with pytest.raises(ReplayMismatch, match="step 3") as info:
        env.replay(7, actions, bad)
    assert info.value.step == 3 and info.value.field == "admissible"
    bad = [dict(r) for r in records]
    bad[0]["observation"] = "something else"
    with pytest.raises(ReplayMismatch) as info:
        env.replay(7, actions, bad)
    assert info.value.step == 0
    with pytest.raises(ValueError, match="len\\(actions\\) \\+ 1"):
        env.replay(7, actions, records[:-1])


def test_snapshot_branches_equal_replay_branches(env):
    rng = random.Random(11)
    env.reset(2)
    _walk(env, 4, rng)
    prefix = env.actions
    snap = env.snapshot()
    for _ in range(6):
        env.restore(snap)
        branch = [rng.choice(env.admissible)]
        env.step(branch[0])
        if not env.done:
            branch.append(rng.choice(env.admissible))
            env.step(branch[-1])
        via_snapshot = (env.records, env.state_key(), env.won, env.remaining_budget, env.history)
        env.replay(2, prefix + branch)
        via_replay = (env.records, env.state_key(), env.won, env.remaining_budget, env.history)
        assert via_snapshot == via_replay
        # the replay's reset invalidated the snapshot: take a fresh one at the same prefix
        with pytest.raises(SnapshotError):
            env.restore(snap)
        env.replay(2, prefix)
        snap = env.snapshot()


def test_restore_after_reset_or_load_raises(env):
    env.reset(0)
    env.step(env.admissible[0])
    snap = env.snapshot()
    env.restore(snap)  # fine within the episode
    env.reset(0)
    with pytest.raises(SnapshotError, match="stale snapshot"):
        env.restore(snap)
    snap = env.snapshot()
    env.load_game(small_game("pick_and_place_simple"))
    env.reset(0)
    with pytest.raises(SnapshotError):
        env.restore(snap)


def test_only_one_env_per_process_may_snapshot(env):
    env.reset(0)
    env.snapshot()
    other = AlfworldEnv(budget=5)
    other.load_game(small_game("pick_two_obj_and_place"))
    other.reset(0)
    with pytest.raises(SnapshotError, match="only one AlfworldEnv"):
        other.snapshot()
    # replay clones stay available to the second env
    other.step(other.admissible[0])
    other.replay(0, other.actions, other.records)
    env.release_snapshots()
    s = other.snapshot()
    other.restore(s)
    other.close()
    with pytest.raises(SnapshotError, match="another AlfworldEnv"):
        env.restore(s)


def test_two_solvers_from_one_clone_see_identical_inputs(env):
    rng = random.Random(3)
    env.budget = 12
    env.reset(9)
    _walk(env, 3, rng)
    prefix, records = env.actions, env.records
    snap = env.snapshot()
    ckpts = make_checkpoints()
    inputs = {}
    for name, pol in ckpts.items():
        for mode in ("snapshot", "replay"):
            if mode == "snapshot":
                env.restore(snap)
            else:
                env.budget = 12
                env.replay(9, prefix, records)
                snap = env.snapshot()
            env.set_remaining_budget(2)
            obs = env.observe()
            inputs[(name, mode)] = (obs["observation"], tuple(obs["admissible_commands"]),
                                    obs["remaining_budget"], env.history_hash())
    assert len(set(inputs.values())) == 1
    assert next(iter(inputs.values()))[2] == 2


def test_state_key_ignores_bookkeeping_actions(env):
    env.reset(0)
    k0 = env.state_key()
    env.step("look")
    assert env.state_key() == k0
    env.step("inventory")
    assert env.state_key() == k0
    go = next(a for a in env.admissible if a.startswith("go to"))
    env.step(go)
    assert env.state_key() != k0


@pytest.mark.parametrize("task_type", ["look_at_obj_in_light", "pick_clean_then_place_in_recep"])
def test_fast_rendering_is_identical_to_textworld(task_type):
    game = small_game(task_type)
    actions = []
    rng = random.Random(0)
    e = AlfworldEnv(budget=15)
    try:
        e.load_game(game)
        e.reset(1)
        while not e.done:
            actions.append(rng.choice(e.admissible))
            e.step(actions[-1])
        fast = e.records
        engine.disable_parse_cache()
        e._pddl.command_cache = False
        e.reset(1)
        for a in actions:
            e.step(a)
        slow = e.records
    finally:
        engine.enable_parse_cache()
        e._pddl.command_cache = True
        e.close()
    assert fast == slow


def test_official_game_file_path_branch(tmp_path, monkeypatch):
    game = small_game("pick_two_obj_and_place")
    trial = tmp_path / "json_2.1.1" / "valid_unseen" / "pick_two_obj_and_place-X-None-Y-304" / "trial_T1"
    trial.mkdir(parents=True)
    (trial / "game.tw-pddl").write_text(json.dumps(
        {k: game[k] for k in ("pddl_domain", "grammar", "pddl_problem")} | {"solvable": True}))
    (trial / "traj_data.json").write_text(json.dumps(game["traj_data"]))
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    files = official_game_files("valid_unseen")
    assert files == [trial / "game.tw-pddl"]
    e = AlfworldEnv(budget=5)
    e.load_game(files[0])
    assert e.task_id == "pick_two_obj_and_place-X-None-Y-304/trial_T1"
    assert e.task_type == "pick_two_obj_and_place"
    e.reset(0)
    ref = AlfworldEnv(budget=5)
    ref.load_game(game)
    ref.reset(0)
    assert e.records == ref.records
    e.close()
    ref.close()
    monkeypatch.delenv("ALFWORLD_DATA")
    with pytest.raises(KeyError, match="ALFWORLD_DATA"):
        official_game_files("valid_unseen")


def test_translations_are_shared_through_the_run_scratch_folder(tmp_path, monkeypatch):
    # a second process of the same run (simulated by clearing the in-memory memo) reads
    # the translation from the scratch folder instead of translating, and plays the same
    import fast_downward

    from agentstudies.book import runner

    assert runner.SCRATCH_ENV == engine.SCRATCH_ENV
    game = small_game("look_at_obj_in_light")
    monkeypatch.setenv(engine.SCRATCH_ENV, str(tmp_path))
    cache = tmp_path / "alfworld-sas"
    calls = []
    real = fast_downward.pddl2sas
    monkeypatch.setattr(fast_downward, "pddl2sas", lambda *a, **k: calls.append(1) or real(*a, **k))

    def play():
        engine._SAS.clear()
        e = AlfworldEnv(budget=6)
        e.load_game(game)
        e.reset(3, 6)
        seen = [(e.observation, tuple(e.admissible))]
        for _ in range(4):
            e.step(sorted(e.admissible)[0])
            seen.append((e.observation, tuple(e.admissible)))
        e.close()
        return seen

    first = play()
    n_first = len(calls)
    assert n_first >= 1 and len(list(cache.glob("*.pkl.z"))) == n_first
    assert play() == first and len(calls) == n_first  # read back, not translated again
    for f in cache.glob("*.pkl.z"):  # a torn file is ignored and rewritten
        f.write_bytes(b"not a pickle")
    assert play() == first and len(calls) == 2 * n_first


def test_shared_scratch_lives_for_the_run_and_keeps_an_outer_folder(monkeypatch):
    from agentstudies.book.runner import SCRATCH_ENV, shared_scratch

    monkeypatch.delenv(SCRATCH_ENV, raising=False)
    import os

    with shared_scratch():
        outer = os.environ[SCRATCH_ENV]
        assert os.path.isdir(outer)
        with shared_scratch():
            assert os.environ[SCRATCH_ENV] == outer
        assert os.environ[SCRATCH_ENV] == outer
    assert SCRATCH_ENV not in os.environ and not os.path.exists(outer)


class _PathBlindCache(AlfworldEnv):
    """A deliberately broken step cache keyed on the new command only (not the path)."""

    def _step_key(self, action):
        return (action,)


def _fork_protocol(env, use_snapshots: bool):
    """Forks from one prefix along branches that revisit each other's paths; per branch
    everything the engine hands out (records, facts, admissible list, won)."""
    rng = random.Random(5)
    env.reset(4)
    _walk(env, 3, rng)
    prefix = env.actions
    snap = env.snapshot() if use_snapshots else None
    seen, out = [], []
    for i in range(14):
        if use_snapshots:
            env.restore(snap)
        else:
            env.replay(4, prefix)
        # every other branch first re-walks (part of) an earlier branch, then goes its own way
        branch = list(rng.choice(seen)[: rng.randint(1, 3)]) if seen and i % 2 else []
        for a in branch:
            env.step(a)
        while len(branch) < 5 and not env.done:
            branch.append(rng.choice(env.admissible))
            env.step(branch[-1])
        seen.append(branch)
        ps = env._pddl._pddl_state
        facts = sorted(str(p) for v in ps._facts.values() for p in v)
        out.append((env.records, facts, env.admissible, env.won, env.state_key(), env.history))
    return out


def test_step_cache_gives_the_engines_results(env):
    """The step cache (restore the state after a path stepped before) hands out exactly
    what the engine does; a cache keyed without the path would not (the test can fail)."""
    env.release_snapshots()  # the module's env gives up the snapshot guard
    game = small_game("pick_and_place_simple")
    ref = AlfworldEnv(budget=30)
    ref.load_game(game)
    expected = _fork_protocol(ref, use_snapshots=False)  # reset + replay, no cache
    ref.close()
    cached = AlfworldEnv(budget=30, step_cache=True)
    cached.load_game(game)
    got = _fork_protocol(cached, use_snapshots=True)
    hits = sum(len(r[0]) - 1 for r in got) - len(cached._step_memo)
    cached.close()
    assert hits > 10  # the protocol did revisit paths
    assert got == expected
    broken = _PathBlindCache(budget=30, step_cache=True)
    broken.load_game(game)
    assert _fork_protocol(broken, use_snapshots=True) != expected
    broken.close()


def test_command_cache_by_operator_name_equals_rendering_every_command():
    """The command cache found again by the operator's full name gives, in every task
    type and over two episodes of one load (the cache outlives a reset), the same
    records and the same derived command templates on every valid action as rendering
    every command (``command_cache=False``, TextWorld's own path)."""
    from agentstudies.envs.alfworld.generate import TASK_TYPES

    def walk(cache: bool, game, seeds_actions):
        e = AlfworldEnv(budget=12)
        e._pddl.command_cache = cache
        out = []
        try:
            e.load_game(game)
            for seed, actions in seeds_actions:
                e.reset(seed)
                for a in actions:
                    e.step(a)
                    out.append([x.command_template for x in e._pddl.state["_valid_actions"]])
                out.append(e.records)
        finally:
            e.close()
        return out

    for tt in TASK_TYPES:
        game = small_game(tt)
        rng = random.Random(len(tt))
        e = AlfworldEnv(budget=12)
        plan = []
        e.load_game(game)
        for seed in (0, 1):
            e.reset(seed)
            acts = []
            while not e.done:
                acts.append(rng.choice(e.admissible))
                e.step(acts[-1])
            plan.append((seed, acts))
        e.close()
        fast = walk(True, game, plan)
        slow = walk(False, game, plan)
        assert fast == slow, tt
