"""Recorded-history handoff: cut before the final model call, hash, verify a replay."""

import hashlib
import json

import pytest

from agentstudies import handoff as ho

LOG = [
    {"role": "system", "content": "You plan trips."},
    {"role": "user", "content": "3 days in Rome"},
    {"role": "assistant", "content": "search flights", "tool_calls": [{"name": "flights", "args": {"to": "ROM"}}]},
    {"role": "tool", "content": "2 flights found"},
    {"role": "assistant", "content": "search hotels"},
    {"role": "tool", "content": "5 hotels"},
    {"role": "assistant", "content": "FINAL PLAN ..."},
]


def independent_hash(records):
    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode())
        h.update(b"\n")
    return h.hexdigest()


def test_cut_before_final_model_call():
    h = ho.cut_before_final_call(LOG)
    assert h.cut_index == 6
    assert list(h.prefix) == LOG[:6]
    assert h.final_call == LOG[6]
    assert h.n_records == 7
    assert h.history_hash == independent_hash(LOG[:6])


def test_custom_model_call_rule_for_observation_action_logs():
    log = [{"kind": "obs", "text": "You are in a room"}, {"kind": "action", "text": "go to desk 1"},
           {"kind": "obs", "text": "On the desk you see a pencil"}, {"kind": "action", "text": "take pencil"},
           {"kind": "obs", "text": "You pick up the pencil"}]
    h = ho.cut_before_final_call(log, is_model_call=lambda r: r["kind"] == "action")
    assert h.cut_index == 3 and len(h.prefix) == 3


def test_verify_replay_accepts_identical_history_in_any_key_order():
    h = ho.cut_before_final_call(LOG)
    replay = [dict(reversed(list(r.items()))) for r in LOG[:6]]
    assert ho.verify_replay(replay, h) == h.history_hash
    assert ho.replay_and_verify(h, lambda prefix: [dict(r) for r in prefix]) == h.history_hash


def test_verify_replay_names_first_differing_step():
    h = ho.cut_before_final_call(LOG)
    replay = [dict(r) for r in LOG[:6]]
    replay[3] = {"role": "tool", "content": "3 flights found"}
    replay[5] = {"role": "tool", "content": "changed too"}
    with pytest.raises(ho.ReplayMismatch, match=r"step 3 \(keys \['content'\]\)") as info:
        ho.verify_replay(replay, h)
    assert info.value.step == 3
    assert isinstance(info.value, ValueError)
    with pytest.raises(ho.ReplayMismatch, match="shorter.*step 5") as info:
        ho.verify_replay(LOG[:5], h)
    assert info.value.step == 5
    with pytest.raises(ho.ReplayMismatch, match="extra records.*step 6"):
        ho.verify_replay(LOG, h)


def test_bad_logs():
    with pytest.raises(ValueError, match="empty"):
        ho.cut_before_final_call([])
    with pytest.raises(ValueError, match="no model call"):
        ho.cut_before_final_call([{"role": "user", "content": "hi"}])
    with pytest.raises(ValueError, match="first record"):
        ho.cut_before_final_call([{"role": "assistant", "content": "hi"}])
    with pytest.raises(TypeError, match="step 1"):
        ho.cut_before_final_call([{"role": "user"}, {"role": "assistant", "x": object()}])
    with pytest.raises(TypeError, match="step 0"):
        ho.cut_before_final_call(["not a dict", {"role": "assistant"}])
