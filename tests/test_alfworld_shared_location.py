"""The official-data path on a game where two receptacles share one location.

In the official ALFWorld data several receptacles can share a location (alfworld issues
97 / 121 / 131): once the agent is there, ``go to`` the other one is refused, yet
``take X from`` it is admissible although its contents were never shown. Our generated
rooms give every receptacle its own location, so this never happens in the chapters; here
a small game in the official on-disk format (``json_2.1.1/<split>/<task>/<trial>/
game.tw-pddl`` + ``traj_data.json``) is built with a side table moved to the armchair's
location, found through :func:`env.official_game_files` and loaded by path, and the engine,
the frontier check and the analytic expert are checked against what the official engine
does (the planner expert, fast-downward, is the reference)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agentstudies.envs.alfworld.env import AlfworldEnv, official_game_files
from agentstudies.envs.alfworld.expert import Expert
from agentstudies.envs.alfworld.frontier import frontier_check, frontier_check_reference
from agentstudies.envs.alfworld.generate import make_game, sample_spec


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    spec = sample_spec("valid_unseen", "pick_and_place_simple", 0, 11, 0, layouts=[202])
    rec = list(spec.receptacles)
    cls = [c for _, c, _ in rec]
    arm, side = cls.index("ArmChair"), cls.index("SideTable")
    target = [r for o, c, r in spec.objects if c == spec.pddl_params["object_target"]]
    assert target == [rec[side][0]]  # the object to move lies on the side table
    rec[side] = (rec[side][0], "SideTable", rec[arm][2])  # the side table moves to the armchair's location
    game = make_game(dataclasses.replace(spec, receptacles=tuple(rec)))
    root = tmp_path_factory.mktemp("alfworld_data")
    trial = root / "json_2.1.1" / "valid_unseen" / "pick_and_place_simple-RemoteControl-None-CoffeeTable-202" / "trial_0"
    trial.mkdir(parents=True)
    (trial / "game.tw-pddl").write_text(json.dumps({k: game[k] for k in ("pddl_domain", "grammar", "pddl_problem")}))
    (trial / "traj_data.json").write_text(json.dumps(game["traj_data"]))
    files = official_game_files("valid_unseen", root)
    assert files == [trial / "game.tw-pddl"]
    env = AlfworldEnv(budget=30)
    env.load_game(files[0])
    yield env
    env.close()


def test_go_to_and_take_at_a_shared_location(shared):
    env = shared
    env.reset(0)
    assert {"go to armchair 1", "go to sidetable 1"} <= set(env.admissible)
    env.step("go to armchair 1")
    assert env.observation == "You arrive at armchair 1. On the armchair 1, you see a book 2."
    adm = set(env.admissible)
    assert "go to sidetable 1" not in adm  # refused: the agent already stands at its location
    assert "take remotecontrol 1 from sidetable 1" in adm  # ... although its contents were never shown
    assert "examine sidetable 1" in adm
    env.step("go to sidetable 1")
    assert env.valid[-1] is False and env.observation == "Nothing happens."
    env.step("take remotecontrol 1 from sidetable 1")
    assert env.valid[-1] is True and "You pick up the remotecontrol 1 from the sidetable 1." in env.observation


def test_expert_and_frontier_agree_with_the_planner(shared):
    env = shared
    env.reset(0)
    env.step("go to armchair 1")
    plan = Expert(env).plan()
    assert plan == env.expert_plan()  # analytic expert = fast-downward's optimal plan
    assert plan[0] == "take remotecontrol 1 from sidetable 1" and len(plan) == 3
    for D, expect in ((2, False), (3, True)):
        fc, ref = frontier_check(env, D), frontier_check_reference(env, D)
        assert fc.on_frontier == ref.on_frontier == expect, (D, fc.summary())
    env.step(plan[0])
    assert frontier_check(env, 2).on_frontier and frontier_check_reference(env, 2).on_frontier
    for a in Expert(env).plan():
        env.step(a)
    assert env.won
