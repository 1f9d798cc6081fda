"""Arrival at ``F_D`` in the training study's rollouts: :func:`evaluate_checkpoint` with a
scripted policy that plays the planner expert's plan, where the expected arrival step
(``len(plan) - D``) and the budget cut-off are worked out by hand; and the game-major
evaluation of several checkpoints equals one evaluation per checkpoint."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import AlfworldEnv
from agentstudies.studies.alfworld import training as tr
from agentstudies.studies.alfworld.training import loop

GAMES = [small_game("pick_and_place_simple"), small_game("look_at_obj_in_light")]


def _plan(game, seed: int, budget: int = 40) -> list[str]:
    env = AlfworldEnv(budget=budget)
    env.load_game(game)
    env.reset(seed, budget)
    plan = env.expert_plan()
    env.close()
    return plan


class _PlanPolicy:
    """Stands in for LearnedAlfworldPolicy in the rollouts: plays the expert plan of
    (task, seed), computed beforehand on a separate env."""

    plans: dict = {}

    def __init__(self, w, name, temperature=0.4, admissible=False):
        self.k = 0

    def reset(self, task_id, seed, role):
        self.plan = self.plans[(task_id, seed)]
        self.k = 0

    def act(self, observation):
        a = self.plan[self.k] if self.k < len(self.plan) else "look"
        self.k += 1
        return a


def test_evaluate_checkpoint_arrives_where_the_plan_says(monkeypatch):
    _PlanPolicy.plans = {(g["task_id"], s): _plan(g, s) for g in GAMES for s in (0, 1)}
    monkeypatch.setattr(loop, "LearnedAlfworldPolicy", _PlanPolicy)
    w = np.zeros(4)
    short = min(len(p) for p in _PlanPolicy.plans.values()) - 1  # F_2 state has b = 1 < D

    def ev(budget):
        return tr.evaluate_checkpoint(w, "plan", GAMES, [0, 1], budget=budget, D=2, n_jobs=1)

    long_run, short_run = ev(40), ev(short)
    # by hand: the plan wins and arrives at F_2 after len(plan) - 2 actions with budget;
    # with `short` actions it neither wins nor arrives (b < D at that state)
    for r in long_run.itertuples():
        plan = _PlanPolicy.plans[(r.task_id, r.seed)]
        assert r.won and r.arrived and r.arrival_step == len(plan) - 2 and r.n_actions == len(plan)
    assert not short_run["arrived"].any() and not short_run["won"].any()


def test_evaluate_checkpoints_equals_one_evaluation_per_checkpoint():
    """Game-major evaluation of several checkpoints (one load per game) gives, frame for
    frame, what evaluate_checkpoint gives for each checkpoint alone (loads per checkpoint),
    with the shipped list and no-list weights decoded at temperature (so the streams
    matter) and two seeds per game."""
    sh, nl = tr.load_shipped(), tr.load_shipped(admissible=False)
    cks = [("SFT", sh["w_sft"], True), ("RL", nl["w_rl"], False), ("RL", sh["w_rl"], True)]
    kw = dict(temperature=0.4, budget=12, D=2, phase="final", step=3)
    together = tr.evaluate_checkpoints(cks, GAMES, [0, 1], **kw)
    alone = [tr.evaluate_checkpoint(w, name, GAMES, [0, 1], admissible=adm, **kw) for name, w, adm in cks]
    assert len(together) == len(cks)
    for t, a in zip(together, alone):
        pd.testing.assert_frame_equal(t, a)
    cols = ["won", "arrived", "n_actions", "n_invalid"]  # the checkpoints act differently: a mix-up would show
    assert all(not together[i][cols].equals(together[j][cols]) for i in range(3) for j in range(i + 1, 3))
    with pytest.raises(ValueError, match="checkpoints is empty"):
        tr.evaluate_checkpoints([], GAMES, [0])
