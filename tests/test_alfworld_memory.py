"""The ALFWorld policy with transcript memory: hand-worked atoms of a tiny transcript, a
refresh that changes the next choice, a stale observation that persists, what it reads."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from agentstudies.agents.alfworld import MemoryAlfworldPolicy, memory_atoms

ROOM = "You are in the middle of a room. Looking quickly around you, you see a countertop 1, and a fridge 1."
ARRIVE = "You arrive at countertop 1. On the countertop 1, you see a apple 1."
PICK = "You pick up the apple 1 from the countertop 1."
TINY = [("obs", ROOM), ("act", "go to countertop 1"), ("obs", ARRIVE), ("act", "take apple 1 from countertop 1"),
        ("obs", PICK)]
GOAL = "Your task is to: put a cool apple in fridge."


def test_atoms_of_a_tiny_transcript_by_hand():
    # newest first: PICK (age 0), ARRIVE (1), ROOM (2); commands: take (1 back), go (2 back)
    got = memory_atoms(TINY, "go to fridge 1", ("apple", "fridge"))
    assert got == [
        "v=go|a1=take", "v=go|a2=go", "v=go|o0=you pick up", "v=go|o1=you arrive at",
        # "fridge 1" is named only in the room description, 2 observations back: bucket 2-3, one mention
        "v=go|pos=0|age=2-3", "v=go|pos=0|goal=1|age=2-3", "v=go|pos=0|mentions=1", "v=go|pos=0|goal=1|mentions=1",
    ]
    again = memory_atoms(TINY, "take apple 1 from countertop 1", ("apple",))
    assert "v=take|same_a1" in again  # the candidate repeats the last command
    # apple 1: in PICK (0) and ARRIVE (1) -> age 0, 2+ mentions; countertop 1: in all three -> age 0, 2+
    assert {"v=take|pos=0|goal=1|age=0", "v=take|pos=0|mentions=2+", "v=take|pos=1|goal=0|age=0",
            "v=take|pos=1|mentions=2+"} <= set(again)
    assert memory_atoms([], "look") == ["v=look|a1=none", "v=look|a2=none", "v=look|o0=none", "v=look|o1=none"]


def test_stale_text_persists_and_ages_out():
    stale = [("obs", ARRIVE)] + [x for i in range(3) for x in (("act", "look"), ("obs", "Nothing happens."))]
    got = memory_atoms(stale, "take apple 1 from countertop 1")
    assert "v=take|pos=0|age=2-3" in got  # ARRIVE is 3 observations back: still remembered
    longer = stale + [x for i in range(5) for x in (("act", "look"), ("obs", "Nothing happens."))]
    assert "v=take|pos=0|age=none" in memory_atoms(longer, "take apple 1 from countertop 1")  # 8 back: gone


def _slot(atom: str) -> int:
    return zlib.crc32(("m|" + atom).encode()) & ((1 << 16) - 1)


def test_a_refresh_changes_the_next_choice():
    w = np.zeros(1 << 16)
    w[_slot("v=examine|o0=you are facing")] = 10.0  # prefer examine right after a look reply
    pol = MemoryAlfworldPolicy(w, "mem-test", greedy=True, admissible=True)
    cands = ["go to fridge 1", "examine countertop 1"]
    pol.reset("t", 0, role="eval")
    assert pol.act({"goal": GOAL, "observation": ARRIVE, "admissible_commands": cands}) == "go to fridge 1"
    plain = pol.act({"goal": GOAL, "observation": "Nothing happens.", "admissible_commands": cands})
    pol.reset("t", 0, role="eval")
    pol.act({"goal": GOAL, "observation": ARRIVE, "admissible_commands": cands})
    refreshed = pol.act({"goal": GOAL, "observation": "Nothing happens.\nYou are facing the countertop 1.",
                         "admissible_commands": cands})
    assert (plain, refreshed) == ("go to fridge 1", "examine countertop 1")
    assert [k for k, _ in pol.transcript] == ["obs", "act", "obs", "act"]


def test_reads_only_what_it_is_shown_and_refuses_plain_checkpoints():
    rng = np.random.default_rng(0)
    w = rng.normal(size=1 << 16)
    cands = ["go to fridge 1", "examine countertop 1", "take apple 1 from countertop 1"]

    def run(extra):
        pol = MemoryAlfworldPolicy(w, "mem-test", temperature=0.4, admissible=True)
        pol.reset("t", 0, role="eval")
        return [pol.act({"goal": GOAL, "observation": o, "admissible_commands": cands, **extra})
                for o in (ROOM, ARRIVE, PICK)]

    def boom():
        raise AssertionError("the expert plan was read")

    assert run({}) == run({"expert": boom, "won": True, "gold": "take apple 1 from countertop 1"})
    with pytest.raises(ValueError, match="transcript features"):
        MemoryAlfworldPolicy.load("SFT")


def test_a_memory_checkpoint_loads_as_the_memory_policy(tmp_path):
    from agentstudies.agents.alfworld import LearnedAlfworldPolicy, save_weights

    w = np.arange(1 << 16, dtype=np.float64) / (1 << 16)
    save_weights(w, "mem", directory=tmp_path, meta={"memory": True, "admissible": True})
    save_weights(w, "plain", directory=tmp_path, meta={"admissible": True})
    pol = LearnedAlfworldPolicy.load("mem", directory=tmp_path, greedy=True)
    assert type(pol) is MemoryAlfworldPolicy and pol.admissible and np.array_equal(pol.w, w)
    assert type(LearnedAlfworldPolicy.load("plain", directory=tmp_path)) is LearnedAlfworldPolicy


def test_features_are_grouped_by_candidate():
    """Training reads a candidate's features as one contiguous run (Demonstrations.feat_ptr)."""
    pol = MemoryAlfworldPolicy(np.zeros(1 << 16), "mem-test", admissible=True)
    pol.reset("t", 0, role="eval")
    pol._fold({"goal": GOAL, "observation": ARRIVE, "admissible_commands": ["look", "take apple 1 from countertop 1"]})
    cands, idx, owner, _ = pol.decide()
    assert np.all(np.diff(owner) >= 0) and set(owner) == {0, 1}
    assert _slot("v=take|pos=0|goal=1|age=0") in set(idx[owner == 1]) - set(idx[owner == 0])


def test_the_shipped_memory_checkpoint_loads_by_name():
    from agentstudies.agents.alfworld import LearnedAlfworldPolicy

    pol = LearnedAlfworldPolicy.load("BC-memory", greedy=True)
    assert type(pol) is MemoryAlfworldPolicy and pol.admissible and pol.meta["n_problems"] == 6 * 20
