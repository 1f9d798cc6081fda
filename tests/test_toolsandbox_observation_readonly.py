"""ToolSandboxEnv.observation() hands out shared views read-only.

The per-episode reuse of message views means an agent that changed an observation's
message would have changed every later observation; now changing one raises TypeError
and the later observations equal the view built from the log. Copies are plain and
changeable; reads, equality, repr and JSON are a plain dict's.
"""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from agentstudies.envs.toolsandbox import (
    Role, ToolSandboxEnv, generate_scenarios, make_cases, replay_gold,
)
from agentstudies.envs.toolsandbox._env import ReadOnlyDict, ReadOnlyList


def _plain(v):
    """``v`` rebuilt of plain dicts / lists (what the view was before it was read-only)."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    return v


@pytest.fixture(scope="module")
def env_after_calls():
    case = next(c for c in make_cases(generate_scenarios(0))
                if c.augmentation == "base" and sum(s[0] == "call" for s in c.scenario.gold) >= 2)
    return replay_gold(case, seed=0)  # the gold trajectory through env.step, as an agent's calls


def _mutations(obs):
    msg = obs["messages"][0]
    call = next(m for m in obs["messages"] if m["tool_call"] is not None)
    spec = obs["tools"][0]
    yield lambda: msg.__setitem__("content", "changed")
    yield lambda: msg.update(content="changed")
    yield lambda: msg.pop("content")
    yield lambda: msg.setdefault("new", 1)
    yield lambda: msg.clear()
    yield lambda: msg.popitem()
    yield lambda: msg.__delitem__("content")
    yield lambda: msg.__ior__({"content": "changed"})
    yield lambda: msg["visible_to"].append("user")
    yield lambda: msg["visible_to"].__setitem__(0, "user")
    yield lambda: msg["visible_to"].sort()
    yield lambda: msg["visible_to"].__iadd__(["x"])
    yield lambda: call["tool_call"]["arguments"].__setitem__("x", 1)
    yield lambda: spec["args"].clear()
    yield lambda: spec.__setitem__("name", "other")


def test_changing_an_observation_raises_and_later_observations_are_intact(env_after_calls):
    env = env_after_calls
    before = _plain(env.observation())
    n = 0
    for change in _mutations(env.observation()):
        with pytest.raises(TypeError, match="read-only"):
            change()
        n += 1
    assert n == 15
    after = env.observation()
    assert _plain(after) == before
    # independent of the reuse: the view built from the log
    want = []
    for i, m in enumerate(env.ctx.messages):
        if Role.AGENT in m.visible_to:
            d = {**m.to_dict(), "index": i}
            if m.tool_call is not None and "shown_name" in m.tool_call:
                d["tool_call"] = {"name": m.tool_call["shown_name"], "arguments": dict(m.tool_call["arguments"])}
            want.append(d)
    assert after["messages"] == want and _plain(after["messages"]) == want
    # same keys in the same order as the view built from to_dict (prompts serialise it)
    assert json.dumps(after["messages"]) == json.dumps(want)
    assert [list(m) for m in after["messages"]] == [list(m) for m in want]
    assert after["tools"] == env.view.specs


def test_read_only_views_read_compare_and_serialise_like_plain_ones(env_after_calls):
    obs = env_after_calls.observation()
    msgs = obs["messages"]
    plain = _plain(msgs)
    assert all(type(m) is ReadOnlyDict for m in msgs) and all(type(m["visible_to"]) is ReadOnlyList for m in msgs)
    assert json.dumps(msgs, sort_keys=True) == json.dumps(plain, sort_keys=True)
    assert repr(msgs) == repr(plain) and str(msgs[0]) == str(plain[0])
    assert msgs == plain and isinstance(msgs[0], dict) and isinstance(msgs[0]["visible_to"], list)
    # the caller's own containers stay changeable; copies are plain
    obs["last_outcome"] = "executed"
    obs["messages"].append({"extra": True})
    assert len(env_after_calls.observation()["messages"]) == len(plain)
    for c in (dict(msgs[0]), copy.copy(msgs[0]), copy.deepcopy(msgs[0]), pickle.loads(pickle.dumps(msgs[0]))):
        assert type(c) is dict and c == plain[0]
        c["content"] = "mine"
    deep = copy.deepcopy(msgs[0])
    assert type(deep["visible_to"]) is list
    deep["visible_to"].append("user")
    assert env_after_calls.observation()["messages"][0] == plain[0]


def test_a_tool_result_in_the_view_is_a_copy_not_the_logs_object(env_after_calls):
    env = env_after_calls
    replies = [(i, m) for i, m in enumerate(env.ctx.messages)
               if m.sender == Role.EXECUTION_ENVIRONMENT and isinstance(m.result, (dict, list))]
    assert replies, "the gold run returns structured results"
    views = {m["index"]: m for m in env.observation()["messages"]}
    for i, m in replies:
        assert views[i]["result"] == m.result and views[i]["result"] is not m.result
