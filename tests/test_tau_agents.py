"""Scripted τ-bench policy, simulated reviewers and the episode runner.

Independent references: the package-scorer counts in ../shared/notes/tau_bench_data.md
(no actions + info sent: 11 of 114 retail, 20 of 50 airline; gold + info: all tasks),
closed-form logistic probabilities, and the controllers' definitions.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from agentstudies.agents.base import Policy
from agentstudies.agents.controllers import WORKFLOWS
from agentstudies.agents.tau import (
    AGENT_COLUMNS,
    EPISODE_COLUMNS,
    PROFILES,
    TERMINATIONS,
    MessageAction,
    ScriptedTauPolicy,
    StopAction,
    ToolCallAction,
    alter_arguments,
    episode_seed,
    mistake_probabilities,
    run_episode,
    run_episodes,
    spurious_write,
    task_covariates,
)
from agentstudies.envs.tau import TauEnv, get_task, load_tasks, sample_task_ids, task_ids

NEVER, ALWAYS = -40.0, 40.0
PERFECT = dataclasses.replace(
    PROFILES["profile_a"], name="perfect", wrong_arg=NEVER, skip_write=NEVER, skip_read=NEVER, stop=NEVER,
    spurious=NEVER, omit_info=NEVER, repair=NEVER, verifier_detect=ALWAYS, verifier_false_reject=NEVER,
    verifier_malformed=NEVER, user_decline_invalid=ALWAYS, user_decline_valid=NEVER,
)


def _rows(profile, workflows=WORKFLOWS, ids=None, seed=0):
    ids = task_ids() if ids is None else ids
    return pd.DataFrame([run_episode(t, w, profile, seed) for t in ids for w in workflows])


def test_policy_follows_the_protocol_and_is_labelled_simulated():
    pol = ScriptedTauPolicy("profile_b")
    assert isinstance(pol, Policy) and pol.simulated
    assert pol.label.endswith("(simulated)")
    with pytest.raises(RuntimeError):
        pol.act({})
    with pytest.raises(ValueError, match="profile_a"):
        ScriptedTauPolicy("gpt-5")


def test_a_perfect_profile_scores_one_everywhere():
    """No mistakes + exact reviewers = the gold replay: reward 1 on all 164 tasks."""
    df = _rows(PERFECT)
    assert len(df) == 164 * 3
    assert (df["reward"] == 1.0).all(), df.loc[df["reward"] < 1, ["task_id", "workflow", "termination"]]
    assert (df["blocked_calls"] == 0).all() and (df["declined_calls"] == 0).all()
    assert set(df["termination"]) <= {"done", "transfer_to_human"}
    n_writes = {t.task_id: len(t.write_actions) for t in load_tasks()}
    assert (df["irreversible_calls"] == df["task_id"].map(n_writes)).all()


def test_skipping_every_write_reproduces_the_no_action_counts():
    # notes: no actions, required info sent -> 11 of 114 retail, 20 of 50 airline
    prof = dataclasses.replace(PERFECT, name="skipper", skip_write=ALWAYS)
    df = _rows(prof, workflows=("ReAct",))
    assert df.groupby("domain")["reward"].sum().to_dict() == {"airline": 20.0, "retail": 11.0}
    assert (df["irreversible_calls"] == 0).all()


def test_a_gate_whose_user_declines_everything_blocks_every_write():
    prof = dataclasses.replace(PERFECT, name="refuser", user_decline_valid=ALWAYS)
    df = _rows(prof, workflows=("Confirmation gate",))
    n_writes = df["task_id"].map({t.task_id: len(t.write_actions) for t in load_tasks()})
    assert (df["irreversible_calls"] == 0).all()
    assert (df["declined_calls"] == n_writes).all()  # repair never: each write asked once
    assert df.groupby("domain")["reward"].sum().to_dict() == {"airline": 20.0, "retail": 11.0}


def test_a_verifier_with_malformed_output_fails_closed_and_ends_episodes():
    prof = dataclasses.replace(PERFECT, name="garbled", verifier_malformed=ALWAYS, max_rejections=1)
    df = _rows(prof, workflows=("Plan + verifier",))
    has_write = df["task_id"].map({t.task_id: bool(t.write_actions) for t in load_tasks()})
    assert (df["irreversible_calls"] == 0).all()
    assert (df.loc[has_write, "termination"] == "verifier_rejection").all()
    assert (df.loc[has_write, "blocked_calls"] == 1).all()
    assert (df.loc[~has_write, "termination"] != "verifier_rejection").all()


def test_mistake_probabilities_closed_form():
    from inspect_evals.tau2.data_model.tasks import Task
    from inspect_evals.tau2.utils import TAU2_DATA_DIR

    words = []
    for d in ("retail", "airline"):
        for rec in json.loads((TAU2_DATA_DIR / "domains" / d / "tasks.json").read_text()):
            words.append(len(str(Task.model_validate(rec).user_scenario).split()))
    mean, sd = np.mean(words), np.std(words)
    task = get_task("airline/7")
    rec = next(r for r in json.loads((TAU2_DATA_DIR / "domains" / "airline" / "tasks.json").read_text()) if r["id"] == "7")
    w = sum(a["name"].startswith(("cancel_", "update_", "book_", "send_")) for a in rec["evaluation_criteria"]["actions"])
    z = (len(str(Task.model_validate(rec).user_scenario).split()) - mean) / sd
    a = PROFILES["profile_b"]
    p = mistake_probabilities(task, "profile_b")
    sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    assert p["wrong_arg"] == pytest.approx(sig(a.wrong_arg + 0.30 * (w - 1) + 0.35 * z + 0.40))
    assert p["spurious"] == pytest.approx(sig(a.spurious + 0.30 * z + 0.30))
    assert p["verifier_detect"] == pytest.approx(sig(a.verifier_detect - 0.35 * z - 0.25 * (w - 1)))
    assert task_covariates("airline/7")["w"] == w
    # profile_b makes more mistakes than profile_a on every task
    for t in load_tasks():
        pa, pb = mistake_probabilities(t, "profile_a"), mistake_probabilities(t, "profile_b")
        assert pb["wrong_arg"] > pa["wrong_arg"] and pb["stop"] > pa["stop"]
        assert all(0 < v < 1 for v in pa.values())


def test_policy_is_deterministic_given_the_seed():
    def trace(seed):
        pol = ScriptedTauPolicy("profile_b")
        pol.reset("retail/5", seed)
        out = []
        for _ in range(40):
            act = pol.act({"last": {"status": "ok"}})
            out.append(act)
            if isinstance(act, StopAction):
                break
        return out

    assert trace(3) == trace(3)
    assert any(trace(s) != trace(3) for s in range(4, 12))
    assert all(isinstance(a, (ToolCallAction, MessageAction, StopAction)) for a in trace(3))


def test_alterations_change_exactly_one_argument_and_are_mostly_accepted():
    rng = np.random.default_rng(0)
    accepted = total = 0
    for t in load_tasks():
        for i, a in enumerate(t.actions):
            if not a.irreversible:
                continue
            original = a.args()
            alt = alter_arguments(a.name, original, rng)
            assert original == a.args()  # input untouched
            if alt is None:
                continue
            assert alt.keys() == original.keys()
            assert sum(alt[k] != original[k] for k in original) == 1
            env = TauEnv(t.task_id)
            for b in t.actions[:i]:
                env.call(b.name, b.args())
            gold_ok = TauEnv(t.task_id)
            for b in t.actions[: i + 1]:
                last = gold_ok.call(b.name, b.args())
            if last.ok:  # count only calls the gold version passes
                total += 1
                accepted += env.call(a.name, alt).ok
    assert total > 200 and accepted / total >= 0.9
    with pytest.raises(KeyError):
        alter_arguments("get_user_details", {}, rng)


def test_spurious_write_comes_from_another_task():
    rng = np.random.default_rng(1)
    name, args = spurious_write("retail/0", "retail", rng)
    others = [(a.name, a.args()) for t in load_tasks("retail") if t.task_id != "retail/0" for a in t.write_actions]
    assert (name, args) in others


def test_episode_rows_and_invariants():
    ids = sample_task_ids(20, seed=2)
    df = run_episodes(ids, profiles=("profile_a", "profile_b"), seeds=(0, 1))
    assert list(df.columns) == list(EPISODE_COLUMNS + AGENT_COLUMNS) and len(df) == 20 * 3 * 2 * 2
    assert set(df["termination"]) <= set(TERMINATIONS)
    assert (df["reward"] == (df["db_match"] & df["info_match"]).astype(float)).all()
    assert (df["irreversible_calls"] <= df["tool_calls"]).all() and (df["failed_calls"] <= df["tool_calls"]).all()
    assert (df.loc[df["workflow"] != "Plan + verifier", "blocked_calls"] == 0).all()
    assert (df.loc[df["workflow"] != "Confirmation gate", "declined_calls"] == 0).all()
    assert (df.loc[df["termination"] == "verifier_rejection", "workflow"] == "Plan + verifier").all()
    assert not df.duplicated(["profile", "task_id", "seed", "workflow"]).any()
    assert df["messages"].max() <= 1


def test_episode_is_independent_of_the_batch_and_order():
    ids = ["retail/3", "airline/9", "retail/77"]
    full = run_episodes(ids, profiles=("profile_b",), seeds=(4, 5))
    alone = run_episodes(["retail/77"], workflows=("Confirmation gate",), profiles=("profile_b",), seeds=(5,))
    row = full[(full["task_id"] == "retail/77") & (full["seed"] == 5) & (full["workflow"] == "Confirmation gate")]
    pd.testing.assert_frame_equal(row.reset_index(drop=True), alone)
    rev = run_episodes(ids[::-1], profiles=("profile_b",), seeds=(5, 4))
    key = ["task_id", "seed", "workflow"]
    pd.testing.assert_frame_equal(
        full.sort_values(key).reset_index(drop=True), rev.sort_values(key).reset_index(drop=True)
    )
    a = episode_seed("profile_a", "retail/3", 0, "ReAct").generate_state(2)
    b = episode_seed("profile_a", "retail/3", 0, "Plan + verifier").generate_state(2)
    assert not np.array_equal(a, b)


@pytest.mark.slow
def test_same_table_for_any_n_jobs():
    ids = sample_task_ids(12, seed=9)
    one = run_episodes(ids, profiles=("profile_a", "profile_b"), seeds=(0, 1), n_jobs=1)
    two = run_episodes(ids, profiles=("profile_a", "profile_b"), seeds=(0, 1), n_jobs=2, backend="loky")
    pd.testing.assert_frame_equal(one, two)


@pytest.mark.slow
def test_dask_backend_gives_the_same_table():
    ids = sample_task_ids(6, seed=1)
    one = run_episodes(ids, seeds=(0,), n_jobs=1)
    dask = run_episodes(ids, seeds=(0,), n_jobs=2, backend="dask")
    pd.testing.assert_frame_equal(one, dask)


@pytest.mark.slow
def test_success_is_in_the_papers_low_range():
    """Calibration claim of the profiles (Table 14 low range, workflows a few points apart)."""
    ids = task_ids()
    df = run_episodes(ids, profiles=("profile_a", "profile_b"), seeds=(0, 1, 2, 3))
    rate = df.pivot_table(index="profile", columns="workflow", values="reward", aggfunc="mean")
    assert 0.14 <= rate.loc["profile_a", "ReAct"] <= 0.26
    assert 0.08 <= rate.loc["profile_b", "ReAct"] <= 0.18
    assert (rate.loc["profile_a"] > rate.loc["profile_b"]).all()
    assert (rate.max(axis=1) - rate.min(axis=1)).max() <= 0.06


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(task_ids=["retail/1"], workflows=["Reflexion"]), ValueError, "unknown workflow"),
        (dict(task_ids=["retail/1"], profiles=["gpt"]), ValueError, "unknown tau profile"),
        (dict(task_ids=["retail/1", "retail/1"]), ValueError, "duplicate task_ids"),
        (dict(task_ids=["retail/1"], seeds=[0, 0]), ValueError, "duplicate seeds"),
        (dict(task_ids=["retail/1"], seeds=[-1]), ValueError, "non-negative"),
        (dict(task_ids=[]), ValueError, "empty"),
        (dict(task_ids=["retail/999"]), KeyError, "retail/999"),
        (dict(task_ids=["retail/1"], backend="ray"), ValueError, "backend"),
    ],
)
def test_run_episodes_input_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        run_episodes(**kwargs)


def test_run_episode_errors():
    with pytest.raises(ValueError, match="max_steps"):
        run_episode("retail/1", "ReAct", max_steps=0)
    row = run_episode("retail/2", "ReAct", "profile_a", 0, max_steps=1)
    assert row["termination"] in ("max_steps", "agent_stop") and row["steps"] <= 1
