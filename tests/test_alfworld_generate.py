"""Generated ALFWorld problems: determinism, pools, validation before loading, winnability."""

from __future__ import annotations

import re

import pytest

import alfworld.gen.constants as C
from agentstudies.envs.alfworld import generate as G
from agentstudies.envs.alfworld.env import AlfworldEnv
from agentstudies.envs.alfworld.expert import Expert
from agentstudies.envs.alfworld.pools import load_manifest, load_pool


def _games(seed, split="valid_unseen", k=0):
    return [G.generate_game(split, tt, k, seed, check=False) for tt in G.TASK_TYPES]


def test_same_seed_gives_byte_identical_problems():
    a, b = _games(7), _games(7)
    for x, y in zip(a, b):
        assert x["pddl_problem"] == y["pddl_problem"] and x["grammar"] == y["grammar"]
        assert x["traj_data"] == y["traj_data"]
    c = _games(8)
    assert any(x["pddl_problem"] != y["pddl_problem"] for x, y in zip(a, c))


def test_pools_use_disjoint_layouts_and_realistic_rooms():
    assert not set(G.SPLITS["valid_seen"]) & set(G.SPLITS["valid_unseen"])
    assert set(G.SPLITS["valid_unseen"]) == set(C.TEST_SCENE_NUMBERS)
    for split, layouts in G.SPLITS.items():
        for g in _games(3, split) + _games(3, split, k=1):
            assert g["layout"] in layouts and g["split"] == split
    sizes = {}
    for n in G.SPLITS["valid_seen"] + G.SPLITS["valid_unseen"]:
        lay = G.load_layout(n)
        sizes.setdefault(lay.room, []).append(len(lay.receptacles))
    assert all(6 <= s <= G.MAX_RECEPTACLES for v in sizes.values() for s in v)
    assert min(sizes["Kitchen"]) >= 16 and 20 <= sum(sizes["Kitchen"]) / len(sizes["Kitchen"]) <= 32


def test_problem_content_follows_the_alfworld_format():
    for g in _games(5):
        p, tt = g["pddl_problem"], g["traj_data"]["task_type"]
        assert "(:domain alfred)" in p
        for t, kind in G.UNDECLARED_TYPES.items():
            assert f"{t} - {kind}" in p
        params = g["traj_data"]["pddl_params"]
        assert set(params) == {"object_target", "parent_target", "toggle_target", "mrecep_target", "object_sliced"}
        assert "UNKNOWN GOAL" not in g["grammar"] and g["traj_data"]["task_desc"] in g["grammar"]
        assert f"{params['object_target']}Type" in p.split("(:goal", 1)[1]
        objects = re.findall(r"^\s+(\S+) - object$", p, flags=re.M)
        targets = [o for o in objects if o.startswith(params["object_target"] + "_bar_")]
        assert len(objects) >= 3 * len(targets) and len(targets) >= (2 if tt == "pick_two_obj_and_place" else 1)
        sinks = re.findall(r"(Sink_bar_\S+) - receptacle", p)
        assert all(s.endswith("_bar_SinkBasin") for s in sinks)
        G.validate_game(g)


def _drop(game, pattern):
    g = dict(game)
    g["pddl_problem"] = "\n".join(line for line in game["pddl_problem"].splitlines() if not re.search(pattern, line))
    return g


def test_validation_names_the_missing_predicate_task_and_object():
    heat = G.generate_game("valid_unseen", "pick_heat_then_place_in_recep", 0, 5, check=False)
    obj = heat["traj_data"]["pddl_params"]["object_target"]
    with pytest.raises(G.GameValidationError, match=rf"heatable.*{obj}Type") as info:
        G.validate_game(_drop(heat, r"\(heatable "))
    assert heat["task_id"] in str(info.value)
    with pytest.raises(G.GameValidationError, match="MicrowaveType - rtype"):
        G.validate_game(_drop(heat, r"MicrowaveType - rtype"))
    rec = heat["traj_data"]["pddl_params"]["parent_target"]
    with pytest.raises(G.GameValidationError, match=rf"canContain.*{rec}Type"):
        G.validate_game(_drop(heat, rf"\(canContain {rec}Type {obj}Type\)"))
    look = G.generate_game("valid_unseen", "look_at_obj_in_light", 0, 5, check=False)
    with pytest.raises(G.GameValidationError, match="toggleable"):
        G.validate_game(_drop(look, r"\(toggleable "))
    two = G.generate_game("valid_unseen", "pick_two_obj_and_place", 0, 5, check=False)
    o2 = two["traj_data"]["pddl_params"]["object_target"]
    first = re.search(rf"\(objectType (\S+) {o2}Type\)", two["pddl_problem"]).group(1)
    others = [m for m in re.findall(rf"\(objectType (\S+) {o2}Type\)", two["pddl_problem"]) if m != first]
    pat = "|".join(re.escape(f"(objectType {o} ") for o in others)
    with pytest.raises(G.GameValidationError, match="two objects"):
        G.validate_game(_drop(two, pat))
    # the env validates before the engine sees the problem (no KeyError: 'val1')
    env = AlfworldEnv(budget=5)
    with pytest.raises(G.GameValidationError, match="heatable"):
        env.load_game(_drop(heat, r"\(heatable "))
    env.close()


def test_generator_regenerates_deterministically_or_raises():
    with pytest.raises(RuntimeError, match="no winnable game in 2 attempt"):
        G.generate_game("valid_unseen", "pick_and_place_simple", 0, 1, min_plan_length=40,
                        max_attempts=2, layouts=[202])
    g1 = G.generate_game("valid_unseen", "look_at_obj_in_light", 0, 3, layouts=[202])
    g2 = G.generate_game("valid_unseen", "look_at_obj_in_light", 0, 3, layouts=[202])
    assert g1["attempt"] == g2["attempt"] and g1["pddl_problem"] == g2["pddl_problem"]
    assert len(g1["expert_plan"]) >= 4
    with pytest.raises(ValueError, match="not floor plans"):
        G.sample_spec("valid_seen", "pick_and_place_simple", 0, 1, layouts=[202])
    with pytest.raises(KeyError, match="split"):
        G.sample_spec("no_such_split", "pick_and_place_simple", 0, 1)
    # the training split (learned checkpoints) draws its own problems in the training rooms
    tr_spec = G.sample_spec("train", "pick_and_place_simple", 0, 1)
    seen_spec = G.sample_spec("valid_seen", "pick_and_place_simple", 0, 1)
    assert tr_spec.layout in G.SPLITS["valid_seen"] and tr_spec.layout not in G.SPLITS["valid_unseen"]
    assert G.render_problem(tr_spec) != G.render_problem(seen_spec)


MANIFEST = load_manifest()
needs_manifest = pytest.mark.skipif(not MANIFEST, reason="data/alfworld/pools.json not built")


@needs_manifest
def test_embedded_pools_rebuild_byte_identically():
    for split in ("valid_seen", "valid_unseen"):
        pool = load_pool(split, 5)  # raises ValueError on any digest mismatch
        assert len(pool) == 30 and len({g["task_id"] for g in pool}) == 30
        types = [g["traj_data"]["task_type"] for g in pool]
        assert all(types.count(t) == 5 for t in G.TASK_TYPES)
        assert {g["layout"] for g in pool} <= set(G.SPLITS[split])
    small = load_pool("valid_unseen", 2)
    assert [g["task_id"] for g in small] == [g["task_id"] for g in load_pool("valid_unseen", 5)
                                             if int(g["task_id"][-2:]) < 2]
    tampered = {k: dict(v, tasks=[dict(t, sha256="0" * 64) for t in v["tasks"]]) for k, v in MANIFEST.items()}
    with pytest.raises(ValueError, match="differs from the manifest"):
        load_pool("valid_unseen", 1, manifest=tampered)


@needs_manifest
@pytest.mark.slow
def test_every_pooled_game_is_won_by_the_planner_within_budget():
    """The stored planner-expert plan (fast-downward at the start state) wins every game
    of both pools within 48 actions; the analytic expert finds a plan of the same length."""
    env = AlfworldEnv(budget=48)
    try:
        for split in ("valid_seen", "valid_unseen"):
            for g in load_pool(split, 5):
                env.load_game(g)
                env.reset(0)
                plan = g["expert_plan"]
                assert 4 <= len(plan) <= 48
                assert len(Expert(env).plan()) == len(plan), g["task_id"]
                for a in plan:
                    assert not env.won and a in env.admissible, (g["task_id"], a)
                    env.step(a)
                assert env.won, g["task_id"]
    finally:
        env.close()
