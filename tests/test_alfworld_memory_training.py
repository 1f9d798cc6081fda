"""Training the memory checkpoint (DAgger) on a tiny pool: every label is the expert's next
command from the replayed state, the expert drives round 0 along its optimal plan, looks
happen exactly when asked and their replies are what the engine returns, and a rerun is
byte-identical."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from agentstudies.studies.alfworld import training as tr

pytestmark = pytest.mark.slow

KW = dict(rounds=1, sft_steps=3, budget=24)


@lru_cache(maxsize=None)
def _games():
    return tuple(tr.training_pool(1, 4093))  # one problem per task type: 6 problems


@lru_cache(maxsize=None)
def _run(look_rate: float):
    return tr.train_memory_checkpoint(list(_games()), look_rate=look_rate, **KW)


_ENVS: dict = {}


def _replay(game, commands):
    """A fresh episode of ``game`` (one engine per problem, loaded once) after ``commands``."""
    from agentstudies.envs.alfworld.env import AlfworldEnv

    env = _ENVS.get(game["task_id"])
    if env is None:
        env = _ENVS[game["task_id"]] = AlfworldEnv(budget=KW["budget"])
        env.load_game(game)
    env.reset(0)
    for c in commands:
        env.step(c)
    return env


def _prefix(row) -> list[str]:
    return row.prefix.split("|") if row.prefix else []


@pytest.mark.parametrize("look_rate", [0.0, 1.0])
def test_every_label_is_the_experts_next_command_from_the_replayed_state(look_rate):
    from agentstudies.envs.alfworld.expert import Expert

    games = {g["task_id"]: g for g in _games()}
    d = _run(look_rate).decisions
    assert set(d["round"]) == {0, 1} and set(d["task_id"]) == set(games)
    for row in d.itertuples(index=False):
        env = _replay(games[row.task_id], _prefix(row))
        assert not env.done
        assert Expert(env).plan()[0] == row.label, row


def test_round_zero_follows_the_experts_optimal_plan():
    for look_rate in (0.0, 1.0):
        d = _run(look_rate).decisions
        r0 = d[d["round"] == 0]
        assert (r0["action"] == r0["label"]).all() and not r0["looked"].any()
        for g in _games():
            mine = r0[r0["task_id"] == g["task_id"]]
            assert list(mine["action"]) == list(g["expert_plan"])  # the plan stored when the pool was generated
        rounds = _run(look_rate).rounds
        assert rounds.loc[0, "driver"] == "expert" and rounds.loc[0, "rollout_wins"] == len(_games())


def _policy_episodes(d):
    for _, ep in d[d["round"] == 1].groupby("task_id", sort=False):
        yield ep.sort_values("step")


def test_without_looks_the_engine_sees_only_the_policys_commands():
    run = _run(0.0)
    assert not run.decisions["looked"].any() and int(run.rounds["looks"].sum()) == 0
    for ep in _policy_episodes(run.decisions):
        rows = list(ep.itertuples(index=False))
        assert _prefix(rows[0]) == []
        for a, b in zip(rows, rows[1:]):
            assert _prefix(b) == _prefix(a) + [a.action]  # nothing issued between two decisions


def test_look_rate_one_shows_a_look_reply_before_every_policy_decision():
    games = {g["task_id"]: g for g in _games()}
    run = _run(1.0)
    pol = run.decisions[run.decisions["round"] == 1]
    assert pol["looked"].all() and int(run.rounds.loc[1, "looks"]) >= len(pol)
    for ep in _policy_episodes(run.decisions):
        rows = list(ep.itertuples(index=False))
        assert _prefix(rows[0]) == ["look"]
        for a, b in zip(rows, rows[1:]):
            assert _prefix(b) == _prefix(a) + [a.action, "look"]
        for row in rows:
            before = _replay(games[row.task_id], _prefix(row)[:-1]).observation
            reply = _replay(games[row.task_id], _prefix(row)).observation
            assert row.shown == f"{before}\n{reply}", row  # the text before the look, then the engine's reply


def test_a_rerun_is_byte_identical_and_the_meta_has_the_shipped_keys():
    a = _run(1.0)
    b = tr.train_memory_checkpoint(list(_games()), look_rate=1.0, **KW)
    assert a.w.tobytes() == b.w.tobytes()
    assert a.decisions.equals(b.decisions) and a.curve.equals(b.curve)
    assert a.rounds.drop(columns="seconds").equals(b.rounds.drop(columns="seconds"))
    shipped = json.loads((Path(__file__).resolve().parents[1] / "data/alfworld/checkpoints/BC-memory.json").read_text())
    base = _run(0.0).meta
    assert set(base) == set(shipped) and set(base["config"]) == set(shipped["config"])
    assert a.meta["config"]["look_rate"] == 1.0 and "look_rate" not in base["config"]
    assert base["n_problems"] == 6 and base["config"]["train_tasks_per_type"] == 1
    assert base["n_decisions"] == int(_run(0.0).decisions["covered"].sum()) == int(_run(0.0).rounds["decisions"].iloc[-1])
    assert not np.array_equal(a.w, _run(0.0).w)  # looks change what the policy was trained on


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="empty"):
        tr.train_memory_checkpoint([])
    with pytest.raises(ValueError, match="look_rate"):
        tr.train_memory_checkpoint(list(_games()), look_rate=1.5)
