"""Tests of the trained ALFWorld checkpoints and action validity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agentstudies.agents.alfworld import LearnedAlfworldPolicy
from agentstudies.agents.alfworld import checkpoint_dir, load_weights
from agentstudies.envs.alfworld._testing import small_game
from agentstudies.envs.alfworld.env import AlfworldEnv
from agentstudies.studies.alfworld import training as tr
from agentstudies.studies.alfworld.handoff.run import run_handoff_study

GAMES = [small_game("pick_and_place_simple"), small_game("pick_heat_then_place_in_recep"),
         small_game("look_at_obj_in_light")]


@pytest.fixture(scope="module")
def env():
    e = AlfworldEnv(budget=30)
    yield e
    e.close()


def _actions(env, pol, game, seed, perturb):
    env.load_game(game)
    env.reset(seed)
    pol.reset(env.task_id, seed, role="reacher")
    out = []
    rng = np.random.default_rng(seed)
    while not env.done:
        obs = env.observe()
        if perturb:
            adm = list(obs["admissible_commands"])
            rng.shuffle(adm)
            obs["admissible_commands"] = adm[: len(adm) // 2] + ["put pencil 1 in shelf 1"]
            obs["expert"] = lambda: ["inventory", "look"]
        out.append(pol.act(obs))
        env.step(out[-1])
    return out


@pytest.mark.parametrize("name", ["SFT-nolist", "RL-nolist"])
def test_nolist_checkpoints_read_neither_expert_plan_nor_admissible_list(env, name):
    pol = LearnedAlfworldPolicy.load(name, temperature=0.4)
    assert not pol.admissible
    for game in GAMES:
        for seed in (0, 1):
            assert _actions(env, pol, game, seed, False) == _actions(env, pol, game, seed, True)


@pytest.mark.parametrize("name", ["SFT", "RL"])
def test_list_checkpoints_read_the_list_never_the_expert_plan(env, name):
    """The shipped SFT / RL checkpoints are shown the admissible list (the paper's
    setting): a fake expert plan changes no action; every action is admissible."""
    pol = LearnedAlfworldPolicy.load(name, temperature=0.4)
    if not pol.admissible:
        pytest.skip(f"{name} was trained without the list")
    for game in GAMES:
        for seed in (0, 1):
            base = _actions(env, pol, game, seed, False)
            assert all(env.valid)
            env.load_game(game)
            env.reset(seed)
            pol.reset(env.task_id, seed, role="reacher")
            out = []
            while not env.done:
                obs = env.observe()
                obs["expert"] = lambda: ["inventory", "look"]
                out.append(pol.act(obs))
                env.step(out[-1])
            assert out == base


@pytest.mark.parametrize("suffix", ["", tr.NOLIST_SUFFIX])
def test_shipped_weights_verify_and_differ(suffix):
    w_sft, m_sft = load_weights("SFT" + suffix)
    w_rl, m_rl = load_weights("RL" + suffix)
    assert w_sft.shape == w_rl.shape == (2 ** 16,)
    assert not np.array_equal(w_sft, w_rl)
    assert m_sft["objective"] == "behaviour cloning" and "REINFORCE" in m_rl["objective"]
    sums = (checkpoint_dir() / f"SFT{suffix}.npy.sha256").read_text().split()[0]
    assert sums == m_sft["sha256"]


@pytest.mark.parametrize("admissible", [True, False])
def test_training_loss_falls_in_the_shipped_logs(admissible):
    """Training works: the behaviour-cloning loss falls (last step below the first by more
    than a tenth) and the shipped final weights are the logged last steps."""
    shipped = tr.load_shipped(admissible=admissible)
    loss = shipped["sft_curve"]["loss"].to_numpy()
    assert loss[-1] < 0.9 * loss[0], loss[[0, -1]]
    assert shipped["sft_curve"]["weights_sha256"].iloc[-1] == tr.weights_digest(shipped["w_sft"])
    assert shipped["rl_curve"]["weights_sha256"].iloc[-1] == tr.weights_digest(shipped["w_rl"])


def test_short_sft_run_lowers_the_loss():
    """Independent of the shipped logs: five Adam steps of behaviour cloning on two
    expert demonstrations lower the NLL below log(#candidates) averaged (w = 0)."""
    games = [small_game("pick_and_place_simple"), small_game("pick_heat_then_place_in_recep")]
    for adm in (True, False):
        d = tr.collect_demonstrations(games, [0], budget=30, admissible=adm)
        n_c = np.diff(d.cand_ptr)
        uniform = float(np.mean(np.log(n_c)))
        _, curve = tr.train_sft(d, 5, 0.05, 0.0)
        assert curve["loss"].iloc[0] == pytest.approx(uniform, rel=1e-12)  # step 1 is logged at w = 0
        assert curve["loss"].iloc[-1] < curve["loss"].iloc[0] - 0.1


@pytest.fixture(scope="module")
def trained_study():
    return run_handoff_study(GAMES, tasks_per_type=None, seeds=[0, 1], early_budget=20, D=2,
                             continuation_budget=2, checkpoints="trained")


def test_trained_study_logs_every_action_with_validity(trained_study):
    s, t, e, a = trained_study.steps, trained_study.trajectories, trained_study.episodes, trained_study.actions
    reacher = a[a["role"] == "reacher"].reset_index(drop=True)
    assert len(reacher) == len(s)
    assert (reacher["valid"].to_numpy() == s["valid"].to_numpy()).all()
    assert (reacher["command"].to_numpy() == s["action"].to_numpy()).all()
    # n_invalid per trajectory = count of invalid steps
    inv = s.groupby(["task_id", "seed", "reacher"])["valid"].apply(lambda v: int((~v).sum()))
    got = t.set_index(["task_id", "seed", "reacher"])["n_invalid"]
    assert (inv.reindex(got.index).to_numpy() == got.to_numpy()).all()
    ep_inv = e.groupby(["task_id", "seed", "reacher"])["reacher_invalid"].first()
    assert (ep_inv.reindex(got.index).to_numpy() == got.to_numpy()).all()
    # an invalid step is never an arrival
    assert not (s["on_frontier"] & ~s["valid"]).any()
    # candidates come from the policy's belief, never contain the old `put X in Y` grammar
    assert not a["candidates"].str.contains('"put ').any()
    # solver rows: both solvers shown the same clone
    arr = e[e["arrived"]]
    if len(arr):
        assert (arr.groupby(["task_id", "seed", "reacher"])["shown_hash"].nunique() == 1).all()
        sol = a[a["role"] == "solver"]
        assert len(sol) >= 2 * int(t["arrived"].sum())
        n_inv = sol.groupby(["task_id", "seed", "reacher", "solver"])["valid"].apply(lambda v: int((~v).sum()))
        ee = arr.set_index(["task_id", "seed", "reacher", "solver"])["solver_invalid"]
        assert (n_inv.reindex(ee.index).to_numpy() == ee.to_numpy()).all()


def test_trained_study_assignments_identities(trained_study):
    """J(W,R) = A_W C_{W,R} (Eq. 7) and both paths of Eq. 3, in exact integer arithmetic."""
    from fractions import Fraction

    e = trained_study.episodes
    n = e.groupby("reacher").size() // 2
    J = {(w, r): Fraction(int(g["endpoint"].sum()), int(n[w])) for (w, r), g in e.groupby(["reacher", "solver"])}
    for (w, r), j in J.items():
        g = e[(e["reacher"] == w) & (e["solver"] == r)]
        arrived = int(g["arrived"].sum())
        A = Fraction(arrived, len(g))
        C = Fraction(int(g["solved"].fillna(False).astype(bool).sum()), arrived) if arrived else Fraction(0)
        assert j == A * C
    total = J["RL", "RL"] - J["SFT", "SFT"]
    assert total == (J["RL", "RL"] - J["SFT", "RL"]) + (J["SFT", "RL"] - J["SFT", "SFT"])
    assert total == (J["RL", "SFT"] - J["SFT", "SFT"]) + (J["RL", "RL"] - J["RL", "SFT"])
    pol = trained_study.params["policies"]
    assert set(pol) == {"SFT", "RL"} and pol["SFT"]["weights_sha256"] != pol["RL"]["weights_sha256"]
    assert trained_study.params["checkpoints"] == "trained"


def _study_of(episodes, actions):
    from agentstudies.studies.alfworld.handoff.run import HandoffStudy

    empty = pd.DataFrame()
    return HandoffStudy(trajectories=empty, steps=empty, episodes=episodes, clone_audit=empty, actions=actions)


def test_table8_rule_by_hand():
    """The prespecified rule, checked on a hand-made episode table, through the paper-table
    convention (``HandoffStudy.table(8)``, state in ``attrs["state"]``)."""
    rows = []
    for tid, tt, sft_solved, rl_solved, bridge in [
        ("u-two-00", "pick_two_obj_and_place", False, True, False),
        ("u-pick-01", "pick_and_place_simple", False, True, True),   # SFT bridge -> excluded
        ("u-pick-02", "pick_and_place_simple", False, True, False),  # the one
        ("u-pick-03", "pick_and_place_simple", True, True, False),   # SFT solved -> excluded
    ]:
        for solver, solved, br in (("SFT", sft_solved, bridge), ("RL", rl_solved, True)):
            rows.append(dict(split="valid_unseen", task_id=tid, task_type=tt, seed=0, reacher="SFT", solver=solver,
                             arrived=True, solved=solved, endpoint=int(solved), bridge=br, arrival_step=5))
    ep = pd.DataFrame(rows)
    acts = pd.DataFrame([dict(split="valid_unseen", task_id=t, seed=0, reacher="SFT", solver=s, role="solver",
                              step=k, shown="Your task is to: x.\nYou pick up the pencil 1.", candidates='["look"]',
                              command="look", valid=True)
                         for t in ("u-pick-02", "u-two-00") for s in ("SFT", "RL") for k in (1, 2)])
    t8 = _study_of(ep, acts).table(8)
    assert t8.attrs["state"]["task_id"] == "u-pick-02" and t8.attrs["paper"] == "handoff"
    assert list(t8["solver"]) == ["SFT", "SFT", "RL", "RL"]
    assert t8["shown (last line)"].iloc[0] == "You pick up the pencil 1."
    ep2 = ep[ep["task_id"] != "u-pick-02"]
    assert _study_of(ep2, acts).table(8).attrs["state"]["task_id"] == "u-two-00"  # next simplest type
    none = _study_of(ep[ep["task_id"] == "u-pick-03"], acts).table(8)  # SFT solved: no state qualifies
    assert none.attrs["state"] is None and none.empty
    with pytest.raises(KeyError, match="handoff"):
        _study_of(ep, acts).table(6)  # Table 6 is InteractionPrediction's, not the study's


def test_start_state_on_frontier_is_refused():
    """A reacher cannot arrive without acting: with D equal to the start state's remaining
    distance (the optimal plan's length, 4 here), the start state lies on F_D and the study
    refuses the task instead of letting a first (possibly invalid) action "arrive"."""
    from agentstudies.envs.alfworld.expert import Expert
    from agentstudies.envs.alfworld.frontier import remaining_distance
    from agentstudies.studies.alfworld.handoff import run as ah

    game = small_game("pick_and_place_simple")
    env = AlfworldEnv(budget=30)
    env.load_game(game)
    env.reset(0)
    d = len(Expert(env).plan())
    assert remaining_distance(env, max_depth=d) == d <= 4
    env.close()
    with pytest.raises(ValueError, match="start state"):
        ah._run_task(game, [0], [], early_budget=4, D=d, cont=d, clone="replay")


def test_bootstrap_difference_by_brute_force():
    rows = []
    rng = np.random.default_rng(1)
    for k in range(4):
        for tt in ("a", "b"):
            for ck in ("SFT", "RL"):
                rows.append(dict(checkpoint=ck, split="s", task_id=f"{tt}{k}", task_type=tt, seed=0,
                                 arrived=bool(rng.random() < (0.7 if ck == "RL" else 0.3))))
    df = pd.DataFrame(rows)
    out = tr.bootstrap_difference(df, "arrived", n_draws=500, seed=0)
    per = df.pivot_table(index="task_id", columns="checkpoint", values="arrived", aggfunc="mean")
    assert out["estimate"] == pytest.approx(float((per["RL"] - per["SFT"]).mean()))
    assert out["ci_low"] <= out["estimate"] <= out["ci_high"] and out["n_tasks"] == 8


def test_dev_split_never_in_handoff_or_recovery_pools():
    """Three disjoint splits: the development problems the learning
    curves were evaluated on are neither evaluation problems (every pool of pools.json,
    which the handoff and recovery studies load) nor training problems, by digest; the
    shipped learning-curve log of the list checkpoints evaluated only development tasks."""
    from agentstudies.envs.alfworld.generate import pool_digest
    from agentstudies.envs.alfworld.pools import load_pool

    held = tr.evaluation_digests()
    for split in ("valid_seen", "valid_unseen"):  # what the studies load is what the digests cover
        assert set(pool_digest(load_pool(split, 2)).values()) <= set(held)
    dev = tr.dev_pool(1)
    train = tr.training_pool(1)
    d_dev, d_train = set(pool_digest(dev).values()), set(pool_digest(train).values())
    assert len(d_dev) == len(dev) == 6
    assert not d_dev & set(held) and not d_dev & d_train and not d_train & set(held)
    evals = tr.load_shipped()["training_evals"]
    if bool(tr.load_shipped()["meta_sft"].get("admissible", False)):
        assert set(evals["split"]) == {"dev"}, set(evals["split"])


@pytest.mark.slow
@pytest.mark.parametrize("admissible", [True, False])
def test_heldout_success_above_a_random_policy(admissible):
    """Training works on held-out problems: the RL checkpoint's success on a development
    pool beats a random policy (zero weights: uniform over the same candidates) with
    non-overlapping exact 95% intervals. No test compares SFT with RL."""
    from agentstudies.findings import binomial_interval

    shipped = tr.load_shipped(admissible=admissible)
    if bool(shipped["meta_rl"].get("admissible", False)) != admissible:
        pytest.skip("the list checkpoints are not shipped yet")
    dev = tr.dev_pool(3)
    seeds = [0, 1, 2]  # 54 episodes each: 24 left the two exact intervals overlapping at 25% vs 0%
    ev = tr.evaluate_checkpoint(shipped["w_rl"], "RL", dev, seeds, admissible=admissible)
    rnd = tr.evaluate_checkpoint(np.zeros_like(shipped["w_rl"]), "random", dev, seeds, admissible=admissible)
    _, lo, _ = binomial_interval(int(ev["won"].sum()), len(ev))
    _, _, hi = binomial_interval(int(rnd["won"].sum()), len(rnd))
    assert lo > hi, (ev["won"].mean(), rnd["won"].mean())


@pytest.mark.slow
def test_short_retrain_matches_shipped_log_bitwise():
    """Regenerating the SFT problems and demonstrations and re-running the first two
    behaviour-cloning steps reproduces the shipped log: step 1 bitwise on any CPU (from
    w = 0 every exp is exp(0) = 1 and Adam's first step is sign-like), later steps bitwise
    or -- where numpy's SIMD exp differs by CPU kind -- with the logged loss to 1e-9."""
    shipped = tr.load_shipped()
    check = tr.verify_retrain(shipped["meta_sft"]["config"], shipped["sft_curve"], steps=2)
    assert len(check) == 2 and bool(check["matches"].iloc[0]), check
    rel = (check["loss_retrained"] - check["loss_shipped"]).abs() / check["loss_shipped"].abs()
    assert (rel <= 1e-9).all() and check["agrees"].all(), check[["step", "matches", "loss_shipped", "loss_retrained"]]


def test_verify_retrain_flags_other_demonstrations(monkeypatch):
    """``agrees`` is no blanket pass: a retrain whose loss moved beyond rounding error
    (here: the logged losses shifted by 1e-6 relative, hashes wiped) disagrees."""
    shipped = tr.load_shipped()
    log = shipped["sft_curve"].copy()
    log["weights_sha256"] = "0" * 64
    log["loss"] = log["loss"] * (1 + 1e-6)
    check = tr.verify_retrain(shipped["meta_sft"]["config"], log, steps=1)
    assert not check["matches"].any() and not check["agrees"].any(), check
    # and the shipped final SFT weights are the logged last step
    assert shipped["sft_curve"]["weights_sha256"].iloc[-1] == tr.weights_digest(shipped["w_sft"])
    assert shipped["rl_curve"]["weights_sha256"].iloc[-1] == tr.weights_digest(shipped["w_rl"])


def test_setting_summary_by_hand():
    from scipy.stats import beta

    rows = []
    for st in ("with list", "without list"):
        for k in range(10):
            rows.append(dict(setting=st, checkpoint="RL", split="dev", task_id=f"t{k}", won=k < (7 if st == "with list" else 3),
                             arrived=k < 8, n_invalid=(0 if st == "with list" else k)))
    out = tr.setting_summary(pd.DataFrame(rows), n_draws=500).set_index("setting")
    assert out.loc["with list", "success"] == 0.7 and out.loc["without list", "success"] == 0.3
    assert out.loc["with list", "success_lo"] == pytest.approx(beta.ppf(0.025, 7, 4))
    assert out.loc["with list", "success_hi"] == pytest.approx(beta.ppf(0.975, 8, 3))
    assert out.loc["without list", "inadmissible"] == 4.5
    assert out.loc["with list", ["inadmissible_lo", "inadmissible_hi"]].tolist() == [0.0, 0.0]
    assert 0 < out.loc["without list", "inadmissible_lo"] < 4.5 < out.loc["without list", "inadmissible_hi"] < 9
    with pytest.raises(KeyError, match="setting"):
        tr.setting_summary(pd.DataFrame(rows).drop(columns="setting"))


def test_save_keeps_the_two_settings_apart(tmp_path):
    """A no-list run writes SFT-nolist / RL-nolist and *-nolist.csv logs and leaves the list
    checkpoints' files alone; meta records the setting and the computed reward."""
    from agentstudies.agents.alfworld import hand_set_weights

    w = hand_set_weights()
    curve = pd.DataFrame({"step": [1], "loss": [1.0], "accuracy": [0.5], "weights_sha256": ["x"]})
    for adm in (True, False):
        run = tr.TrainingRun(w * (2 if adm else 3), w, curve.assign(loss=1.0 if adm else 2.0), curve, curve, curve,
                             curve, {**tr.TrainingConfig(admissible=adm).as_dict()})
        run.save(tmp_path)
    assert pd.read_csv(tmp_path / "sft_curve.csv")["loss"].tolist() == [1.0]
    assert pd.read_csv(tmp_path / "sft_curve-nolist.csv")["loss"].tolist() == [2.0]
    w_list, m_list = load_weights("SFT", tmp_path)
    w_nolist, m_nolist = load_weights("SFT-nolist", tmp_path)
    assert np.array_equal(w_list, 2 * w) and np.array_equal(w_nolist, 3 * w)
    assert m_list["admissible"] is True and m_nolist["admissible"] is False
    assert "won x 0.95^T" in load_weights("RL", tmp_path)[1]["objective"]
