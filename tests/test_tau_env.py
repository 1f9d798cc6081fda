"""agentstudies.envs.tau: tasks, tools, episode DBs and the reward.

Expected counts come from ../shared/notes/tau_bench_data.md (measured with the unmodified
package scorers) or from the package's own scorer run here; none is copied from our output.
"""

from __future__ import annotations

import asyncio
import contextvars
import json

import numpy as np
import pytest

from agentstudies.envs import tau
from agentstudies.envs.tau import (
    TauEnv,
    db_hash,
    get_task,
    gold_db_hash,
    initial_db_hash,
    is_write_tool,
    load_tasks,
    replay_gold,
    task_ids,
    tool_specs,
)
from agentstudies.envs.tau import pristine_db

# Lists from the notes (confirmed there by hashing the DB around every gold call).
RETAIL_WRITES = {
    "cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
    "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
    "return_delivered_order_items",
}
AIRLINE_WRITES = {
    "book_reservation", "cancel_reservation", "send_certificate", "update_reservation_baggages",
    "update_reservation_flights", "update_reservation_passengers",
}


def test_write_tool_rule_matches_the_measured_lists():
    for domain, expected in (("retail", RETAIL_WRITES), ("airline", AIRLINE_WRITES)):
        names = {s.name for s in tool_specs(domain)}
        assert {n for n in names if is_write_tool(n)} == expected
        assert {s.name for s in tool_specs(domain) if s.irreversible} == expected
    assert not is_write_tool("get_user_details") and not is_write_tool("calculate")
    with pytest.raises(TypeError):
        is_write_tool(None)


def test_tool_specs_match_the_package_tool_lists():
    from inspect_evals.tau2.airline.tools import all_airline_tools
    from inspect_evals.tau2.retail.tools import all_retail_tools

    assert len(tool_specs("retail")) == len(all_retail_tools) == 15
    assert len(tool_specs("airline")) == len(all_airline_tools) == 14
    book = next(s for s in tool_specs("airline") if s.name == "book_reservation")
    assert set(book.parameters["required"]) >= {"user_id", "flights", "passengers", "payment_methods"}
    assert book.signature.startswith("book_reservation(user_id: string")


def test_tool_specs_are_built_once_and_handed_out_as_copies():
    # built once per process (the docstring parse cost about 8-16 ms per episode before);
    # an edit of one caller's parameters must not reach the next caller
    from inspect_ai.tool import ToolDef
    from inspect_evals.tau2.retail.tools import all_retail_tools

    first = tool_specs("retail")
    first[0].parameters["properties"].clear()
    again = tool_specs("retail")
    assert again[0].parameters["properties"] and again[0].parameters is not first[0].parameters
    fresh = sorted((ToolDef(f()) for f in all_retail_tools), key=lambda t: t.name)
    assert [s.parameters for s in again] == [t.parameters.model_dump(exclude_none=True) for t in fresh]
    for domain in ("retail", "airline"):
        env = TauEnv(f"{domain}/0")
        assert env.tool_names == tuple(s.name for s in env.tools) == tuple(s.name for s in tool_specs(domain))
    with pytest.raises(ValueError, match="unknown tau domain"):
        tool_specs("telecom")


def test_task_counts_splits_and_ids():
    assert len(load_tasks("retail")) == 114 and len(load_tasks("airline")) == 50
    assert len(load_tasks()) == 164
    assert len(task_ids("retail", "train")) == 74 and len(task_ids("retail", "test")) == 40
    assert len(task_ids("airline", "train")) == 30 and len(task_ids("airline", "test")) == 20
    assert task_ids()[0] == "retail/0" and task_ids("airline")[0] == "airline/0"
    # writes per task (notes): retail 0:9 1:60 2:24 3:15 4:5 5:1; airline 20 without write
    counts = np.bincount([len(t.write_actions) for t in load_tasks("retail")])
    assert counts.tolist() == [9, 60, 24, 15, 5, 1]
    assert sum(len(t.write_actions) == 0 for t in load_tasks("airline")) == 20


def test_task_fields_against_the_raw_json():
    from inspect_evals.tau2.utils import TAU2_DATA_DIR

    raw = json.loads((TAU2_DATA_DIR / "domains" / "retail" / "tasks.json").read_text())
    rec = next(r for r in raw if r["id"] == "0")
    t = get_task("retail/0")
    assert [a.name for a in t.actions] == [a["name"] for a in rec["evaluation_criteria"]["actions"]]
    assert t.reason_for_call == rec["user_scenario"]["instructions"]["reason_for_call"]
    assert t.actions[-1].args() == rec["evaluation_criteria"]["actions"][-1]["arguments"]
    assert rec["user_scenario"]["instructions"]["known_info"] in t.scenario


@pytest.mark.parametrize("bad", ["retail/999", "retail", "hotel/1", "retail/1/2", 12])
def test_unknown_task_ids_raise_keyerror(bad):
    with pytest.raises(KeyError):
        get_task(bad)


def test_bad_domain_and_split():
    with pytest.raises(ValueError, match="unknown tau domain"):
        load_tasks("telecom")
    with pytest.raises(ValueError, match="split"):
        task_ids(split="dev")


def test_sample_task_ids_is_stratified_and_seeded():
    a = tau.sample_task_ids(80, seed=3)
    assert a == tau.sample_task_ids(80, seed=3) and len(set(a)) == 80
    n_retail = sum(t.startswith("retail/") for t in a)
    assert n_retail == round(80 * 114 / 164)  # 56 retail, 24 airline
    assert a != tau.sample_task_ids(80, seed=4)
    with pytest.raises(ValueError):
        tau.sample_task_ids(0, seed=0)
    with pytest.raises(ValueError):
        tau.sample_task_ids(165, seed=0)


def test_gold_replay_scores_one_on_every_task():
    df = replay_gold()
    assert len(df) == 164 and df["task_id"].is_unique
    assert (df["reward"] == 1.0).all(), df[df["reward"] < 1]
    assert df.groupby("domain")["reward"].sum().to_dict() == {"airline": 50.0, "retail": 114.0}


def test_gold_without_required_info_matches_package_counts():
    # notes: gold actions, required info not sent -> 76 of 114 retail, 44 of 50 airline
    df = replay_gold(communicate=False)
    assert df.groupby("domain")["reward"].sum().to_dict() == {"airline": 44.0, "retail": 76.0}


def _episode(task, drop=None, skip_all=False, info=True):
    env = TauEnv(task.task_id)
    if not skip_all:
        for i, a in enumerate(task.actions):
            if i != drop:
                env.call(a.name, a.args())
    if info:
        env.send_message("; ".join(task.communicate_info))
    return env


def test_no_actions_with_info_matches_package_counts():
    # notes: no actions, required info sent -> 11 of 114 retail, 20 of 50 airline
    got = {d: sum(_episode(t, skip_all=True).reward() for t in load_tasks(d)) for d in ("retail", "airline")}
    assert got == {"retail": 11.0, "airline": 20.0}


def test_dropping_the_last_write_matches_package_counts():
    # notes: last write dropped -> 2 of 105 retail, 0 of 30 airline still score 1
    for domain, (wins, n) in {"retail": (2, 105), "airline": (0, 30)}.items():
        rewards = []
        for t in load_tasks(domain):
            writes = [i for i, a in enumerate(t.actions) if a.irreversible]
            if writes:
                rewards.append(_episode(t, drop=writes[-1]).reward())
        assert (sum(rewards), len(rewards)) == (wins, n)


def test_dropped_last_write_gets_zero_when_gold_db_differs_from_initial():
    # first retail task whose gold DB differs from the initial DB (full hashes, package rule)
    task = next(t for t in load_tasks("retail") if t.write_actions and gold_db_hash(t.task_id) != initial_db_hash("retail"))
    last = max(i for i, a in enumerate(task.actions) if a.irreversible)
    env = _episode(task, drop=last)
    assert env.final_db_hash() != gold_db_hash(task.task_id)
    assert env.reward() == 0.0
    assert _episode(task).reward() == 1.0


def test_fast_db_check_equals_full_hash_comparison():
    """db_matches_gold must agree with hashing the whole DB as the package does."""
    from agentstudies.agents.tau import alter_arguments, spurious_write

    rng = np.random.default_rng(11)
    picked = ["retail/0", "retail/5", "retail/16", "retail/40", "airline/7", "airline/8", "airline/12", "airline/0"]
    verdicts = []
    for tid in picked:
        task = get_task(tid)
        variants = [dict(), dict(skip_all=True)]
        writes = [i for i, a in enumerate(task.actions) if a.irreversible]
        if writes:
            variants.append(dict(drop=writes[-1]))
        for v in variants:
            env = _episode(task, **v)
            verdicts.append(env.db_matches_gold() == (env.final_db_hash() == gold_db_hash(tid)))
        if writes:  # gold with the last write altered
            env = TauEnv(tid)
            for i, a in enumerate(task.actions):
                args = alter_arguments(a.name, a.args(), rng) if i == writes[-1] else None
                env.call(a.name, args if args is not None else a.args())
            verdicts.append(env.db_matches_gold() == (env.final_db_hash() == gold_db_hash(tid)))
        extra = spurious_write(tid, task.domain, rng)  # gold plus a write of another task
        env = _episode(task)
        env.call(*extra)
        verdicts.append(env.db_matches_gold() == (env.final_db_hash() == gold_db_hash(tid)))
    assert len(verdicts) >= 30 and all(verdicts)


def test_tool_errors_unknown_tools_and_bad_arguments_are_failed_calls():
    env = TauEnv("retail/0")
    r = env.call("get_order_details", {"order_id": "#W0000000"})
    assert not r.ok and r.error == "Order not found"
    r = env.call("no_such_tool", {})
    assert not r.ok and "Unknown tool" in r.error
    r = env.call("get_order_details", {"order": "#W2378156"})
    assert not r.ok and r.error.startswith("Invalid arguments")
    r = env.call("cancel_pending_order", {})
    assert not r.ok and r.irreversible
    r = env.call("get_order_details", {"order_id": object()})
    assert not r.ok and "not JSON" in r.error
    r = env.call("calculate", {"expression": "2 * (3 + 4)"})
    assert r.ok and r.output == "14.0"
    r = env.call("calculate", {"expression": "import os"})
    assert not r.ok
    r = env.call("transfer_to_human_agents", {"summary": "help"})
    assert r.ok and r.output == "Transfer successful"
    assert [e["ok"] for e in env.transcript] == [False, False, False, False, False, True, False, True]
    with pytest.raises(TypeError):
        env.send_message(3)


def test_write_changes_only_the_episode_copy():
    before = db_hash(pristine_db("retail"))
    env = TauEnv("retail/16")
    args = get_task("retail/16").write_actions[0].args()
    assert env.call("cancel_pending_order", args).ok
    assert json.loads(env.call("get_order_details", {"order_id": args["order_id"]}).output)["status"] == "cancelled"
    assert pristine_db("retail").orders[args["order_id"]].status == "pending"
    assert TauEnv("retail/16").call("cancel_pending_order", args).ok  # a fresh episode can cancel again
    assert db_hash(pristine_db("retail")) == before


def test_pristine_databases_survive_many_episodes():
    from agentstudies.agents.tau import run_episodes

    before = {d: db_hash(pristine_db(d)) for d in ("retail", "airline")}
    ids = tau.sample_task_ids(30, seed=5)
    run_episodes(ids, profiles=("profile_a", "profile_b"), seeds=(0, 1))
    after = {d: db_hash(pristine_db(d)) for d in ("retail", "airline")}
    assert before == after
    # and they equal a fresh parse of the package's db.json.gz
    import gzip

    from inspect_evals.tau2.airline.data_model import FlightDB
    from inspect_evals.tau2.retail.data_model import RetailDB
    from inspect_evals.tau2.utils import TAU2_DATA_DIR

    for d, cls in (("retail", RetailDB), ("airline", FlightDB)):
        with gzip.open(TAU2_DATA_DIR / "domains" / d / "db.json.gz", "rt") as fh:
            assert db_hash(cls.model_validate(json.load(fh))) == after[d]


def test_communicate_check_rule():
    assert tau.communicated(["Total: 1,000 dollars"], ("1000",)) == []
    assert tau.communicated(["total 1000"], ("1,000",)) == ["1,000"]  # info keeps its commas
    assert tau.communicated(["The Polyester one"], ("polyester",)) == []
    assert tau.communicated([], ()) == []


# --------------------------------------------------------- agreement with the package
def _package_reward(env: TauEnv) -> float:
    """Reward by the package's own db_match + score_communicated_info scorers."""
    from inspect_ai.model import ChatMessageUser, ModelName
    from inspect_ai.scorer import CORRECT, Target
    from inspect_ai.solver import TaskState
    from inspect_ai.util import Store
    from inspect_ai.util._store import init_subtask_store
    from inspect_evals.tau2.common.metadata import Tau2MetaData
    from inspect_evals.tau2.common.scorer import db_match, score_communicated_info

    def run() -> float:
        init_subtask_store(Store())  # fresh store: the scorer parks its expected DB there
        state = TaskState(
            model=ModelName("mockllm/model"),
            sample_id=env.task_id,
            epoch=1,
            input="",
            messages=[ChatMessageUser(content=m) for m in env.messages],
            metadata=Tau2MetaData(instance="agentstudies-test", task=env.task.raw).model_dump(),
        )
        s_db = asyncio.run(db_match(domain=env.domain, testing_mock_predicted_db=env._tools)(state, Target("")))
        s_info = asyncio.run(score_communicated_info()(state, Target("")))
        return float(s_db.value == CORRECT and s_info.value == CORRECT)

    return contextvars.copy_context().run(run)


@pytest.mark.slow
def test_reward_agrees_with_the_package_scorer(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # DB.load leaks a temp copy per call
    sample = ["retail/0", "retail/16", "retail/2", "retail/40", "airline/7", "airline/12", "airline/0"]
    pairs = []
    for tid in sample:
        task = get_task(tid)
        writes = [i for i, a in enumerate(task.actions) if a.irreversible]
        envs = [_episode(task), _episode(task, skip_all=True, info=False)]
        if writes:
            envs.append(_episode(task, drop=writes[-1]))
        for env in envs:
            pairs.append((env.reward(), _package_reward(env)))
    assert len(pairs) >= 18
    assert [a for a, _ in pairs] == [b for _, b in pairs]
    assert {a for a, _ in pairs} == {0.0, 1.0}  # both outcomes exercised
