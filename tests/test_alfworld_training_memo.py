"""The training study's cross-episode frontier memo (``agentstudies.studies.alfworld.training.loop._on_frontier``)
gives exactly the answers of :func:`agentstudies.envs.alfworld.frontier.frontier_check`:
checked state by state along the planner expert's plan, and through
:func:`evaluate_checkpoint` with a scripted policy that plays that plan, where the
expected arrival step (``len(plan) - D``) and the budget cut-off are worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import AlfworldEnv
from agentstudies.envs.alfworld.frontier import frontier_check
from agentstudies.studies.alfworld import training as tr
from agentstudies.studies.alfworld.training import loop
from agentstudies.studies.alfworld.training import pools

GAMES = [small_game("pick_and_place_simple"), small_game("look_at_obj_in_light")]


def _plan(game, seed: int, budget: int = 40) -> list[str]:
    env = AlfworldEnv(budget=budget)
    env.load_game(game)
    env.reset(seed, budget)
    plan = env.expert_plan()
    env.close()
    return plan


@pytest.fixture()
def fresh_memo():
    pools._WORKER.pop("frontier_memo", None)
    yield pools._WORKER
    pools._WORKER.pop("frontier_memo", None)


def test_memo_answers_equal_frontier_check_along_the_plan(fresh_memo):
    game = GAMES[0]
    plan = _plan(game, 0)
    env = AlfworldEnv(budget=40)
    env.load_game(game)
    for budget in (40, 40, len(plan) - 1):  # second pass from the memo; then a budget too short at F_2
        key = (game["task_id"], loop._game_digest(game), 0, budget, 2)
        env.reset(0, budget)
        answers = []
        for a in [None, *plan[:-1]]:
            if a is not None:
                env.step(a)
            direct = frontier_check(env, 2).on_frontier
            assert loop._on_frontier(env, 2, key) == direct, (budget, env.actions)
            answers.append(direct)
        if budget == 40:  # on F_2 exactly after len(plan) - 2 actions
            assert answers == [i == len(plan) - 2 for i in range(len(plan))]
        else:  # one action left at that state: b < D, never on F_2
            assert not any(answers)
    env.close()
    assert len(fresh_memo["frontier_memo"]) == 2 * len(plan)  # one entry per (budget, prefix)


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


def test_evaluate_checkpoint_with_the_memo_equals_fresh_checks(fresh_memo, monkeypatch):
    _PlanPolicy.plans = {(g["task_id"], s): _plan(g, s) for g in GAMES for s in (0, 1)}
    monkeypatch.setattr(loop, "LearnedAlfworldPolicy", _PlanPolicy)
    w = np.zeros(4)
    short = min(len(p) for p in _PlanPolicy.plans.values()) - 1  # F_2 state has b = 1 < D

    def ev(budget):
        return tr.evaluate_checkpoint(w, "plan", GAMES, [0, 1], budget=budget, D=2, n_jobs=1)

    long_first = ev(40)
    short_from_memo = ev(short)  # the memo holds every prefix at budget 40 now
    fresh_memo.pop("frontier_memo")
    short_fresh = ev(short)
    long_from_memo = ev(40)
    # by hand: the plan wins and arrives at F_2 after len(plan) - 2 actions with budget;
    # with `short` actions it neither wins nor arrives (b < D at that state)
    for r in long_first.itertuples():
        plan = _PlanPolicy.plans[(r.task_id, r.seed)]
        assert r.won and r.arrived and r.arrival_step == len(plan) - 2 and r.n_actions == len(plan)
    assert not short_fresh["arrived"].any() and not short_fresh["won"].any()
    assert short_from_memo.equals(short_fresh) and long_from_memo.equals(long_first)


def test_evaluate_checkpoints_equals_one_evaluation_per_checkpoint(fresh_memo):
    """Game-major evaluation of several checkpoints (one load per game) gives, frame for
    frame, what evaluate_checkpoint gives for each checkpoint alone (loads per checkpoint),
    with the shipped list and no-list weights decoded at temperature (so the streams
    matter) and two seeds per game."""
    sh, nl = tr.load_shipped(), tr.load_shipped(admissible=False)
    cks = [("SFT", sh["w_sft"], True), ("RL", nl["w_rl"], False), ("RL", sh["w_rl"], True)]
    kw = dict(temperature=0.4, budget=12, D=2, phase="final", step=3)
    together = tr.evaluate_checkpoints(cks, GAMES, [0, 1], **kw)
    fresh_memo.pop("frontier_memo", None)
    alone = [tr.evaluate_checkpoint(w, name, GAMES, [0, 1], admissible=adm, **kw) for name, w, adm in cks]
    assert len(together) == len(cks)
    for t, a in zip(together, alone):
        pd.testing.assert_frame_equal(t, a)
    cols = ["won", "arrived", "n_actions", "n_invalid"]  # the checkpoints act differently: a mix-up would show
    assert all(not together[i][cols].equals(together[j][cols]) for i in range(3) for j in range(i + 1, 3))
    with pytest.raises(ValueError, match="checkpoints is empty"):
        tr.evaluate_checkpoints([], GAMES, [0])
