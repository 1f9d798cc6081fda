"""The learned ALFWorld policy: belief from shown text only, candidates, decoding, weights."""

from __future__ import annotations

import copy
import shutil

import numpy as np
import pytest

from agentstudies.agents import Policy
from agentstudies.agents.alfworld import LearnedAlfworldPolicy
from agentstudies.agents.alfworld import (
    Belief,
    candidate_commands,
    hand_set_weights,
    load_weights,
    save_weights,
    shown_text,
)
from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import AlfworldEnv, InadmissibleCommand

INTRO = (
    "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see "
    "a cabinet 2, a cabinet 1, a countertop 1, a fridge 1, and a microwave 1.\n\nYour task is to: put a hot mug in cabinet."
)


def test_belief_parses_shown_text_by_hand():
    b = Belief()
    b.update(INTRO)
    assert b.goal == "put a hot mug in cabinet" and b.goal_tokens == ("hot", "mug", "cabinet")
    assert b.receptacles == ["cabinet 2", "cabinet 1", "countertop 1", "fridge 1", "microwave 1"]
    b.update("You arrive at fridge 1. The fridge 1 is closed.")
    assert b.at == "fridge 1" and "fridge 1" in b.closed
    b.update("You open the fridge 1. The fridge 1 is open. In it, you see a egg 1, and a mug 1.")
    assert b.contents["fridge 1"] == ["egg 1", "mug 1"] and "fridge 1" in b.opened
    cands = candidate_commands(b)
    assert "take mug 1 from fridge 1" in cands and "close fridge 1" in cands and "open fridge 1" not in cands
    b.update("You pick up the mug 1 from the fridge 1.")
    assert b.holding == "mug 1" and b.contents["fridge 1"] == ["egg 1"]
    b.update("You heat the mug 1 using the microwave 1.")
    assert b.treated["mug 1"] == {"hot"}
    b.update("You arrive at cabinet 1. On the cabinet 1, you see nothing.")
    cands = candidate_commands(b)
    # ALFWorld 0.4 grammar: `move X to Y`, never `put X in/on Y`
    assert "move mug 1 to cabinet 1" in cands and not any(c.startswith("put ") for c in cands)
    b.update("You move the mug 1 to the cabinet 1.")
    assert b.holding is None and b.placed == {"mug 1"} and b.contents["cabinet 1"] == ["mug 1"]
    assert b.last_moved == "mug 1"
    b.record_command("use mug 1")
    b.update("Nothing happens.")
    assert b.last_failed and b.failed == {"use mug 1"}


def test_shown_text_reads_goal_and_observation_only():
    obs = {"goal": "Your task is to: x.", "observation": "You arrive at desk 1.", "admissible_commands": ["a"],
           "expert": lambda: ["b"]}
    assert shown_text(obs) == "Your task is to: x.\nYou arrive at desk 1."
    assert shown_text("raw") == "raw" and shown_text(None) == ""
    with pytest.raises(TypeError, match="expected str or mapping"):
        shown_text(3)


@pytest.fixture(scope="module")
def env():
    e = AlfworldEnv(budget=20)
    e.load_game(small_game("pick_and_place_simple"))
    yield e
    e.close()


def _run(env, pol, seed, perturb=False, n=20):
    env.reset(seed)
    pol.reset(env.task_id, seed, role="reacher")
    out = []
    while not env.done and len(out) < n:
        obs = env.observe()
        if perturb:
            obs["admissible_commands"] = list(reversed(obs["admissible_commands"]))[:2] + ["put x in y"]
            obs["expert"] = lambda: ["look"]
            obs["history"] = ()
        a = pol.act(obs)
        out.append((a, tuple(pol.last_log["candidates"])))
        env.step(a)
    return out, env.valid


def test_policy_protocol_log_and_perturbation(env):
    pol = LearnedAlfworldPolicy.load("hand", temperature=0.7)
    assert isinstance(pol, Policy) and not pol.simulated
    with pytest.raises(RuntimeError, match="reset"):
        pol.act("x")
    a, valid_a = _run(env, pol, 3)
    b, valid_b = _run(env, pol, 3, perturb=True)
    assert a == b and valid_a == valid_b
    assert set(pol.last_log) >= {"shown", "candidates", "scores", "probs", "command"}
    assert pol.last_log["command"] == a[-1][0]
    assert len(valid_a) == len(a)


def test_stream_keyed_on_checkpoint_and_depends_on_observations(env):
    w = hand_set_weights()
    p1 = LearnedAlfworldPolicy(w, "SFT", temperature=5.0)
    p2 = LearnedAlfworldPolicy(w, "RL", temperature=5.0)
    r1 = [_run(env, p1, s)[0] for s in range(3)]
    r2 = [_run(env, p2, s)[0] for s in range(3)]
    assert r1 != r2  # independent streams per checkpoint (same weights)
    g = LearnedAlfworldPolicy(w, "G", greedy=True)
    g.reset("t", 0)
    first = g.act(INTRO)
    g.reset("t", 0)
    g.act("Your task is to: put a hot mug in cabinet.\n")  # the room description was never shown
    assert g.last_log["candidates"] == ["look", "inventory"] and first.startswith("go to")


def test_strict_env_refuses_inadmissible(env):
    env.strict = True
    try:
        env.reset(0)
        with pytest.raises(InadmissibleCommand, match="not admissible"):
            env.step("put apple 1 in cabinet 1")
        assert env.remaining_budget == 20 and env.actions == []
    finally:
        env.strict = False
    env.reset(0)
    obs, _, _ = env.step("put apple 1 in cabinet 1")
    assert obs["observation"] == "Nothing happens." and env.valid == [False]
    env.step(env.admissible[0])
    assert env.valid == [False, True]


def test_weights_checksum_verified(tmp_path):
    w = hand_set_weights()
    save_weights(w, "X", tmp_path, meta={"source": "test"})
    w2, meta = load_weights("X", tmp_path)
    assert np.array_equal(w, w2) and meta["source"] == "test"
    arr = np.load(tmp_path / "X.npy")
    arr[0] += 1.0
    np.save(tmp_path / "X.npy", arr)
    with pytest.raises(ValueError, match="sha256"):
        load_weights("X", tmp_path)
    shutil.rmtree(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_weights("X", tmp_path)


def test_feature_memo_equals_fresh_hashing():
    """candidate_features memoises per (atoms, goal tokens, width): every array equals
    the one hashed afresh with an empty memo, and memoised arrays are read-only."""
    from agentstudies.agents.alfworld import _learned as L

    env = AlfworldEnv(budget=20)
    env.load_game(small_game("pick_and_place_simple"))
    pol = LearnedAlfworldPolicy.load("hand")
    pol.reset("t", 0, role="eval")
    env.reset(0)
    seen = []
    while not env.done:
        env.step(pol.act({"goal": env.goal, "observation": env.observation}))
        b = copy.deepcopy(pol.belief)
        seen += [(b, c, L.candidate_features(b, c), L.candidate_features(b, c, 12)) for c in L.candidate_commands(b)]
    env.close()
    assert len(seen) > 20
    L._FEATURE_CACHE.clear()
    for b, c, f16, f12 in seen:
        assert np.array_equal(f16, L.candidate_features(b, c)) and np.array_equal(f12, L.candidate_features(b, c, 12))
    assert not seen[0][2].flags.writeable


def test_reads_memo_key_determines_the_atoms_on_real_episodes():
    """The memo keyed by what the atoms read (context + the candidate's own reads) never
    maps two different atom lists to one key: across sampled episodes of every task type
    each key meets exactly one atom string, and every memoised array equals the one built
    afresh from the atom strings with both memos empty."""
    from agentstudies.agents.alfworld import _learned as L
    from agentstudies.envs.alfworld.generate import TASK_TYPES

    env = AlfworldEnv(budget=30)
    pol = LearnedAlfworldPolicy.load("RL", temperature=1.0)
    seen, atoms_of_key = [], {}
    for k, task_type in enumerate(TASK_TYPES):
        env.load_game(small_game(task_type))
        for ep in range(2):
            pol.reset(task_type, ep, role="eval")
            env.reset(ep)
            while not env.done:
                env.step(pol.act(env.observe()))  # the shipped RL reads the admissible list
                b = copy.deepcopy(pol.belief)  # shown_list set: the listed / own atoms are keyed too
                extra = ["examine " + (b.holding or "x 1"), "inventory"]
                for c in dict.fromkeys(pol.last_log["candidates"] + L.candidate_commands(b) + extra):
                    key = (L._context(b, (1 << 16) - 1), L._reads(b, c))
                    atoms = repr(L._atoms(b, c)) + repr(b.goal_tokens)
                    assert atoms_of_key.setdefault(key, atoms) == atoms, (key, atoms, atoms_of_key[key])
                    seen.append((b, c, L.candidate_features(b, c)))
    env.close()
    verbs = {c.split(" ")[0] for _, c, _ in seen}
    assert {"go", "take", "move", "open", "examine", "look"} <= verbs, verbs
    assert any(b.holding is not None and b.treated.get(b.holding) for b, _, _ in seen)  # treatments were read
    assert len(atoms_of_key) < len(seen)  # the memo is hit
    L._READS_CACHE.clear()
    L._FEATURE_CACHE.clear()
    for b, c, f in seen[::7]:
        assert np.array_equal(f, L._hashed_features(b, c, (1 << 16) - 1))


def test_admissible_mode_candidates_are_the_shown_list(env):
    """``admissible=True`` (the paper's setting): the candidate set is the shown admissible
    list in its order (duplicates dropped), every action on a real game is admissible, the
    expert plan is still never read, and a list-trained policy refuses an observation
    without a list instead of silently falling back to its own candidates."""
    w = hand_set_weights()
    pol = LearnedAlfworldPolicy(w, "L", temperature=0.7, admissible=True)
    env.reset(0)
    pol.reset(env.task_id, 0)
    obs = env.observe()
    listed = list(obs["admissible_commands"])
    pol.act({**obs, "admissible_commands": listed + listed[:1]})
    assert pol.last_log["candidates"] == listed
    # a fake list is what the policy chooses from (it reads the list)
    pol.reset(env.task_id, 0)
    assert pol.act({**obs, "admissible_commands": ["inventory", "go to nowhere 7"]}) in ("inventory", "go to nowhere 7")
    # on the engine every command is admissible; the expert plan is not read
    for seed in (0, 1):
        env.reset(seed)
        pol.reset(env.task_id, seed)
        acts = []
        while not env.done and len(acts) < 12:
            o = env.observe()
            o["expert"] = lambda: ["look"]
            acts.append(pol.act(o))
            env.step(acts[-1])
        assert all(env.valid), (acts, env.valid)
    pol.reset(env.task_id, 0)
    with pytest.raises(ValueError, match="admissible_commands"):
        pol.act({"goal": obs["goal"], "observation": obs["observation"]})
    with pytest.raises(ValueError, match="empty"):
        pol.act({**obs, "admissible_commands": []})


def test_admissible_features_by_hand():
    """With a list shown, each candidate carries ``v=<verb>|listed=1`` and
    ``v=<verb>|own=0/1`` (whether the belief proposes it); without a list the atoms are
    exactly those of the no-list feature map (the *-nolist checkpoints' features)."""
    from agentstudies.agents.alfworld._learned import _atoms, candidate_features

    b = Belief()
    b.update(INTRO)
    plain0, conj0, goal0 = _atoms(b, "go to fridge 1")
    f0 = candidate_features(b, "go to fridge 1").copy()
    own = candidate_commands(b)
    b.shown_list = (frozenset(own[:3] + ["go to shelf 9"]), frozenset(own))
    _, conj1, _ = _atoms(b, "go to shelf 9")
    assert "v=go|listed=1" in conj1 and "v=go|own=0" in conj1
    _, conj2, _ = _atoms(b, "go to fridge 1")
    assert "v=go|own=1" in conj2 and "v=go|listed=0" in conj2
    assert set(conj2) - set(conj0) == {"v=go|own=1", "v=go|listed=0"}
    assert not np.array_equal(candidate_features(b, "go to fridge 1"), f0)
    b.shown_list = None
    assert _atoms(b, "go to fridge 1") == (plain0, conj0, goal0)
    assert np.array_equal(candidate_features(b, "go to fridge 1"), f0)


def test_belief_reads_the_raw_look_reply():
    """ALFWorld's own look reply tells the belief where the agent is
    (no visit counted): a stale belief at the fridge is corrected by the raw reply."""
    b = Belief()
    b.update(INTRO)
    b.update("You arrive at fridge 1. The fridge 1 is closed.")
    assert b.at == "fridge 1" and b.visits == {"fridge 1": 1}
    b.update("You are facing the countertop 1, and cabinet 2. Next to it, you see nothing.")
    assert b.at == "countertop 1" and b.prev_at == "fridge 1" and b.visits == {"fridge 1": 1}
    assert "go to fridge 1" in candidate_commands(b) and "go to countertop 1" not in candidate_commands(b)
    b.update("You are facing the shelf 3. Next to it, you see nothing.")
    assert b.at == "shelf 3" and "shelf 3" in b.receptacles
