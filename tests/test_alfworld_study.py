"""The ALFWorld handoff study driver: schemas, invariants, independence of n_jobs/clone."""

from __future__ import annotations

import pandas as pd
import pytest

from agentstudies import handoff as ho
from agentstudies.agents.alfworld import make_checkpoints
from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import AlfworldEnv
from agentstudies.envs.alfworld.frontier import frontier_check_reference
from agentstudies.studies.alfworld.handoff.run import (
    AUDIT_COLUMNS,
    EPISODE_COLUMNS,
    STEP_COLUMNS,
    TRAJECTORY_COLUMNS,
    run_handoff_study,
)

GAMES = [small_game("pick_and_place_simple"), small_game("pick_clean_then_place_in_recep"),
         small_game("look_at_obj_in_light")]
KW = dict(tasks_per_type=None, seeds=[0, 1, 2], early_budget=16, D=2, continuation_budget=2, checkpoints="scripted")


@pytest.fixture(scope="module")
def study():
    return run_handoff_study(GAMES, n_jobs=1, **KW)


def test_schemas_are_exact(study):
    assert list(study.trajectories.columns) == TRAJECTORY_COLUMNS
    assert list(study.steps.columns) == STEP_COLUMNS
    assert list(study.episodes.columns) == EPISODE_COLUMNS
    assert list(study.clone_audit.columns) == AUDIT_COLUMNS
    t, e = study.trajectories, study.episodes
    assert str(t["arrival_step"].dtype) == "Int64" and t["arrived"].dtype == bool
    assert str(e["solved"].dtype) == "boolean" and str(e["bridge"].dtype) == "boolean"
    assert e["endpoint"].dtype.kind == "i"
    assert len(t) == len(GAMES) * 3 * 2 and len(e) == len(t) * 2


def test_tables_pass_the_handoff_validators(study):
    ho.validate_episodes(study.episodes)
    ho.validate_trajectories(study.trajectories)
    ho.validate_steps(study.steps)


def test_invariants(study):
    t, s, e = study.trajectories, study.steps, study.episodes
    assert t["arrived"].any() and (~t["arrived"]).any()
    n_steps = s.groupby(["task_id", "seed", "reacher"]).size()
    assert (n_steps.reindex(pd.MultiIndex.from_frame(t[["task_id", "seed", "reacher"]])).to_numpy()
            == t["n_actions"].to_numpy()).all()
    arr = t[t["arrived"]]
    assert (arr["arrival_step"] == arr["n_actions"]).all()
    assert t.loc[~t["arrived"], "arrival_step"].isna().all()
    assert (t.loc[~t["arrived"], "n_actions"] == KW["early_budget"]).all()
    # on_frontier only at the last step of arrived trajectories (first hitting time)
    last = s.groupby(["task_id", "seed", "reacher"])["step"].transform("max") == s["step"]
    merged = s.merge(t[["task_id", "seed", "reacher", "arrived"]], on=["task_id", "seed", "reacher"])
    assert (merged["on_frontier"] == (last.to_numpy() & merged["arrived"].to_numpy())).all()
    # first step never "repeats"; repeated_action matches the action column
    first = s["step"] == 1
    assert not s.loc[first, "repeated_action"].any()
    prev = s.groupby(["task_id", "seed", "reacher"])["action"].shift()
    assert (s["repeated_action"] == (s["action"] == prev)).all()
    # episodes: endpoint = arrived & solved; NA exactly for non-arrivals
    assert (e["endpoint"] == (e["arrived"] & e["solved"].fillna(False)).astype(int)).all()
    assert (e["solved"].isna() == ~e["arrived"]).all() and (e["bridge"].isna() == ~e["arrived"]).all()
    # a solver that wins from an l = 2 state in two actions took a bridge action first
    won = e[e["solved"].fillna(False)]
    assert won["bridge"].all()
    # validity: scripted policies only take admissible commands; every action is logged
    assert s["valid"].all() and (t["n_invalid"] == 0).all()
    a = study.actions
    assert (a["role"] == "reacher").sum() == len(s)
    assert (a["role"] == "solver").sum() >= 2 * int(t["arrived"].sum())
    arrived_eps = e[e["arrived"]]
    pair = arrived_eps.groupby(["task_id", "seed", "reacher"])["shown_hash"].nunique()
    assert (pair == 1).all()  # both solvers were shown the identical clone
    audit = study.clone_audit
    n_arr = int(t["arrived"].sum())
    assert audit["arrivals"].sum() == n_arr == audit["solver_pairs"].sum()
    assert audit["solver_pairs_equal_inputs"].sum() == n_arr
    assert audit["replays"].sum() == audit["replays_passed"].sum() == 2 * n_arr
    assert audit["replays_failed"].sum() == 0


def test_arrivals_are_on_the_frontier_by_brute_force(study):
    """Independent check of the recorded arrivals: replay each reacher prefix from the
    steps table and certify F_2 with the reference (step-by-step) check; the state one
    action earlier is not in F_2; first_actions_tested = admissible count there."""
    t, s = study.trajectories, study.steps
    env = AlfworldEnv(budget=KW["early_budget"] + 2)
    games = {g["task_id"]: g for g in GAMES}
    try:
        for _, row in t[t["arrived"]].head(4).iterrows():
            env.load_game(games[row["task_id"]])
            acts = s[(s["task_id"] == row["task_id"]) & (s["seed"] == row["seed"]) & (s["reacher"] == row["reacher"])]
            acts = acts.sort_values("step")["action"].tolist()
            env.replay(int(row["seed"]), acts)
            ref = frontier_check_reference(env, 2)
            assert ref.on_frontier
            assert ref.first_actions_tested == row["first_actions_tested"] == len(env.admissible)
            assert ref.second_actions_tested == row["second_actions_tested"]
            env.replay(int(row["seed"]), acts[:-1])
            assert not frontier_check_reference(env, 2).on_frontier
    finally:
        env.close()


def test_results_do_not_depend_on_n_jobs_or_clone_mode(study):
    par = run_handoff_study(GAMES, n_jobs=2, **KW)
    snap = run_handoff_study(GAMES, n_jobs=1, clone="snapshot", **KW)
    for other in (par, snap):
        for name in ("trajectories", "steps", "episodes", "actions"):
            pd.testing.assert_frame_equal(getattr(study, name), getattr(other, name))
    assert (snap.clone_audit["clone"] == "snapshot").all()
    assert snap.clone_audit["replays_passed"].sum() == study.trajectories["arrived"].sum()


def test_bad_arguments():
    with pytest.raises(ValueError, match="continuation_budget"):
        run_handoff_study(GAMES[:1], tasks_per_type=None, seeds=[0], D=2, continuation_budget=1)
    with pytest.raises(ValueError, match="seeds"):
        run_handoff_study(GAMES[:1], tasks_per_type=None, seeds=[])
    with pytest.raises(ValueError, match="duplicates"):
        run_handoff_study(GAMES[:1], tasks_per_type=None, seeds=[1, 1])
    with pytest.raises(ValueError, match="clone"):
        run_handoff_study(GAMES[:1], tasks_per_type=None, seeds=[0], clone="pickle")
    with pytest.raises(ValueError, match="duplicate task"):
        run_handoff_study(GAMES[:1] * 2, tasks_per_type=None, seeds=[0])
    with pytest.raises(ValueError, match="empty pool"):
        run_handoff_study([], tasks_per_type=None, seeds=[0])


def test_custom_reachers_and_summary():
    ck = make_checkpoints(sft={"noise": 0.5})
    res = run_handoff_study(GAMES[:1], tasks_per_type=None, seeds=[3], reachers=ck, early_budget=10)
    assert res.params["policies"]["SFT"]["noise"] == 0.5
    summ = res.summary()
    assert set(summ.columns) >= {"arrival", "mean_actions"}
    assert res.timing["seconds_per_trajectory"] > 0
