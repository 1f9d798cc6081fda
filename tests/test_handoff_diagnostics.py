"""Appendix C diagnostics: budget levels, failure-mode labels, loop statistics."""

import numpy as np
import pandas as pd
import pytest

from agentstudies import handoff as ho
from agentstudies.handoff import testing as hot
from agentstudies.handoff.testing import example_tables
from agentstudies.stats import bootstrap_counts

# ------------------------------------------------------------------ budget
# arrival_step by (task, seed); None = never arrived within the 48-action run
STEPS = {
    "SFT": {("t1", 0): 10, ("t1", 1): None, ("t2", 0): None, ("t2", 1): None,
            ("t3", 0): None, ("t3", 1): None, ("t4", 0): None, ("t4", 1): None},
    "RL": {("t1", 0): 5, ("t1", 1): 12, ("t2", 0): 40, ("t2", 1): None,
           ("t3", 0): 8, ("t3", 1): 20, ("t4", 0): 3, ("t4", 1): None},
}
TYPE = {"t1": "A", "t2": "A", "t3": "B", "t4": "B"}


def budget_table():
    rows = []
    for w, d in STEPS.items():
        for (task, seed), step in d.items():
            rows.append(dict(split="valid_seen", task_id=task, task_type=TYPE[task], seed=seed, reacher=w,
                             arrived=step is not None, arrival_step=step,
                             n_actions=48 if step is None else step))
    df = pd.DataFrame(rows)
    df["arrival_step"] = df["arrival_step"].astype("Int64")
    return df


def test_budget_levels_by_hand():
    res = ho.budget_diagnostic(budget_table(), n_draws=0)
    lv = res.levels.set_index(["reacher", "budget"])["arrival"]
    # within 8: SFT none; RL steps 5, 8, 3.  within 16: SFT 10; RL adds 12.  within 48: RL adds 40, 20
    expected = {("SFT", 8): 0 / 8, ("RL", 8): 3 / 8, ("SFT", 16): 1 / 8, ("RL", 16): 4 / 8,
                ("SFT", 48): 1 / 8, ("RL", 48): 6 / 8}
    for k, v in expected.items():
        assert lv[k] == pytest.approx(v)
    con = res.contrasts.set_index("contrast")["estimate"]
    assert con["RL@8 - SFT@8"] == pytest.approx(3 / 8)
    assert con["RL@8 - SFT@48"] == pytest.approx(3 / 8 - 1 / 8)
    curve = res.curve.set_index(["reacher", "action"])["cumulative_arrival"]
    assert curve[("RL", 10)] == pytest.approx(3 / 8) and curve[("SFT", 10)] == pytest.approx(1 / 8)
    assert curve[("RL", 0)] == 0 and curve[("RL", 48)] == pytest.approx(6 / 8)
    reach = res.reach.set_index("reacher")["mean_actions"]
    assert reach["SFT"] == pytest.approx((10 + 7 * 48) / 8)
    assert reach["RL"] == pytest.approx((5 + 12 + 40 + 8 + 20 + 3 + 48 + 48) / 8)
    t7 = res.table(7)  # the paper-table convention (Table 7 layout)
    assert t7.attrs["paper"] == "handoff"
    assert t7.set_index(["reacher", "budget"])["arrival"][("RL", 16)] == pytest.approx(4 / 8)


def test_budget_intervals_match_a_loop():
    df = budget_table()
    B, seed = 400, 3
    res = ho.budget_diagnostic(df, n_draws=B, seed=seed)
    tasks = sorted(TYPE)
    labels = sorted(set(TYPE.values()))
    strata = np.array([labels.index(TYPE[t]) for t in tasks])
    counts = bootstrap_counts(len(tasks), B, np.random.default_rng(hot.bootstrap_seed(seed, "budget", "valid_seen")),
                              strata)
    per_task = {}
    for t in tasks:  # per-task counts read straight from the rows
        rl = df[(df.task_id == t) & (df.reacher == "RL")]
        sft = df[(df.task_id == t) & (df.reacher == "SFT")]
        per_task[t] = ((rl.arrival_step.fillna(999) <= 8).sum(), (sft.arrival_step.fillna(999) <= 48).sum(), len(rl))
    vals = []
    for c in counts:
        num = sum(ct * (per_task[t][0] - per_task[t][1]) for t, ct in zip(tasks, c))
        den = sum(ct * per_task[t][2] for t, ct in zip(tasks, c))
        vals.append(num / den)
    lo, hi = np.percentile(vals, [2.5, 97.5])
    row = res.contrasts.set_index("contrast").loc["RL@8 - SFT@48"]
    assert row["ci_low"] == pytest.approx(lo) and row["ci_high"] == pytest.approx(hi)


def test_budget_errors():
    with pytest.raises(ValueError, match="run budget"):
        ho.budget_diagnostic(budget_table(), budgets=(8, 64), n_draws=0)
    with pytest.raises(ValueError, match="cross contrast"):
        ho.budget_diagnostic(budget_table(), cross=[("RL", 8, "PPO", 48)], n_draws=0)
    one = budget_table()
    one = one[~((one.task_id == "t2") & (one.seed == 1) & (one.reacher == "RL"))]
    with pytest.raises(ValueError, match="task_id='t2', seed=1"):
        ho.budget_diagnostic(one, n_draws=0)


# ------------------------------------------------------------ failure modes
HEAT = "pick_heat_then_place_in_recep"
SIMPLE = "pick_and_place_simple"
CASES = {
    # name: (task type, actions, state keys) - state keys decide changed / revisited
    "format_collapse": (SIMPLE, ["go to a", "", "", "", "", "go to b"], ["a", "a", "a", "a", "a", "b"]),
    "loop": (SIMPLE, ["go to a", "look", "look", "look", "look", "look"], ["a"] * 6),
    "wander": (SIMPLE, ["go to a", "go to b", "go to c", "go to d", "open d", "go to e"],
               ["a", "b", "c", "d", "d+", "e"]),
    "never_picks_target": (SIMPLE, ["go to a", "take mug 1 from a", "go to b", "put mug 1 in/on b", "open b",
                                    "close b"], ["a", "a+m", "b+m", "b", "b+o", "b2"]),
    "missed_subgoal": (HEAT, ["go to a", "take apple 1 from a", "open b", "close b", "examine apple 1", "go to c"],
                       ["a", "a+x", "a+x+o", "a+x2", "a+x3", "c+x"]),
    "budget_exhausted": (SIMPLE, ["go to a", "take apple 1 from a", "open b", "close b", "examine apple 1",
                                  "go to c"], ["a", "a+x", "a+x+o", "a+x2", "a+x3", "c+x"]),
    "other": (SIMPLE, ["go to a", "take apple 1 from a", "open b", "close b"], ["a", "a+x", "a+x+o", "a+x2"]),
}


def audit_tables():
    traj, steps = [], []
    for i, (name, (ttype, acts, states)) in enumerate(CASES.items()):
        task = f"task-{name}"
        traj.append(dict(split="s", task_id=task, task_type=ttype, seed=0, reacher="SFT", arrived=False,
                         arrival_step=None, n_actions=len(acts), target="apple"))
        traj.append(dict(split="s", task_id=task, task_type=ttype, seed=0, reacher="RL", arrived=True,
                         arrival_step=2, n_actions=2, target="apple"))
        seen, prev_a, prev_s = {"start"}, None, "start"
        for j, (a, s) in enumerate(zip(acts, states), start=1):
            steps.append(dict(split="s", task_id=task, seed=0, reacher="SFT", step=j, action=a, state_key=s,
                              state_changed=s != prev_s, repeated_action=a == prev_a, revisited=s in seen,
                              on_frontier=False))
            seen.add(s)
            prev_a, prev_s = a, s
        for j, a in enumerate(["go to a", "take apple 1 from a"], start=1):
            steps.append(dict(split="s", task_id=task, seed=0, reacher="RL", step=j, action=a, state_key=f"r{j}",
                              state_changed=True, repeated_action=False, revisited=False, on_frontier=j == 2))
    df = pd.DataFrame(traj)
    df["arrival_step"] = df["arrival_step"].astype("Int64")
    return df, pd.DataFrame(steps)


def test_each_failure_mode_and_precedence():
    traj, steps = audit_tables()
    audit = ho.audit_non_arrivals(traj, steps, n_draws=0)
    got = dict(zip(audit.labels["task_id"], audit.labels["label"]))
    for name in CASES:
        assert got[f"task-{name}"] == name, name
    # precedence: the format-collapse trajectory also repeats without progress (it would be a loop),
    # and the loop trajectory never picks up the target either
    feats = audit.labels.set_index("task_id")
    assert feats.loc["task-format_collapse", "loop_frac"] >= 0.5
    assert not feats.loc["task-loop", "picked_target"]
    assert set(ho.FAILURE_MODES) == set(CASES)
    c = audit.counts[audit.counts.reacher == "SFT"].set_index("label")["n"]
    assert (c == 1).all() and len(c) == 7
    assert audit.counts[audit.counts.reacher == "RL"]["n"].sum() == 0


def test_audit_parameters_change_labels():
    traj, steps = audit_tables()
    # with the admissible column, invalid actions are read from it instead of the text rule
    steps2 = steps.assign(admissible=steps["action"] != "look")
    audit = ho.audit_non_arrivals(traj, steps2, n_draws=0)
    got = dict(zip(audit.labels["task_id"], audit.labels["label"]))
    assert got["task-loop"] == "format_collapse"
    assert got["task-format_collapse"] == "loop"   # empty actions are admissible here, still stuck
    # a pickup rule that ignores the target turns never-picks into budget exhaustion
    audit = ho.audit_non_arrivals(traj, steps, pickup_rule=lambda a, t: bool(a) and a.startswith("take"), n_draws=0)
    assert dict(zip(audit.labels["task_id"], audit.labels["label"]))["task-never_picks_target"] == "budget_exhausted"
    # no subgoals -> the heat task is merely budget-exhausted
    audit = ho.audit_non_arrivals(traj, steps, subgoals={}, n_draws=0)
    assert dict(zip(audit.labels["task_id"], audit.labels["label"]))["task-missed_subgoal"] == "budget_exhausted"
    with pytest.raises(ValueError, match="loop_share"):
        ho.audit_non_arrivals(traj, steps, loop_share=0, n_draws=0)
    with pytest.raises(ValueError, match="regex"):
        ho.audit_non_arrivals(traj, steps, navigation="(", n_draws=0)


def test_audit_needs_all_steps_of_non_arrivals():
    traj, steps = audit_tables()
    short = steps[~((steps.task_id == "task-loop") & (steps.reacher == "SFT") & (steps.step == 6))]
    with pytest.raises(ValueError, match="task-loop"):
        ho.audit_non_arrivals(traj, short, n_draws=0)


def test_loop_statistics_by_hand():
    traj = pd.DataFrame([
        dict(split="s", task_id="x", task_type="A", seed=0, reacher=r, arrived=False, arrival_step=None,
             n_actions=n)
        for r, n in (("SFT", 4), ("RL", 3))
    ] + [
        dict(split="s", task_id="y", task_type="A", seed=0, reacher=r, arrived=False, arrival_step=None,
             n_actions=n)
        for r, n in (("SFT", 3), ("RL", 1))
    ])
    rows = []
    # SFT on x: actions a a b a ; repeated F T F F ; revisited F T F T ; changed T F T T
    for j, (a, rep, rev, ch) in enumerate(zip("aaba", [0, 1, 0, 0], [0, 1, 0, 1], [1, 0, 1, 1]), start=1):
        rows.append(dict(split="s", task_id="x", seed=0, reacher="SFT", step=j, action=a, state_key=str(j),
                         state_changed=ch, repeated_action=rep, revisited=rev, on_frontier=0))
    for j, a in enumerate("xyz", start=1):  # SFT on y: three distinct, all progress
        rows.append(dict(split="s", task_id="y", seed=0, reacher="SFT", step=j, action=a, state_key=a,
                         state_changed=1, repeated_action=0, revisited=0, on_frontier=0))
    for j, a in enumerate("ppp", start=1):
        rows.append(dict(split="s", task_id="x", seed=0, reacher="RL", step=j, action=a, state_key="k",
                         state_changed=0, repeated_action=int(j > 1), revisited=1, on_frontier=0))
    rows.append(dict(split="s", task_id="y", seed=0, reacher="RL", step=1, action="q", state_key="q",
                     state_changed=1, repeated_action=0, revisited=0, on_frontier=0))
    st = ho.loop_statistics(traj, pd.DataFrame(rows)).set_index("reacher")
    assert st.loc["SFT", "n_steps"] == 7
    assert st.loc["SFT", "repeat_previous_share"] == pytest.approx(1 / 7)
    assert st.loc["SFT", "revisit_share"] == pytest.approx(2 / 7)
    assert st.loc["SFT", "unchanged_share"] == pytest.approx(1 / 7)
    assert st.loc["SFT", "median_distinct_actions"] == pytest.approx(2.5)   # median of {2, 3}
    assert st.loc["RL", "repeat_previous_share"] == pytest.approx(2 / 4)
    assert st.loc["RL", "median_distinct_actions"] == pytest.approx(1.0)    # {1, 1}


def test_loop_share_difference_interval_matches_a_loop():
    t = example_tables(seed=3, n_per_type=3, n_seeds=2)
    B, seed = 500, 4
    audit = ho.audit_non_arrivals(t["trajectories"], t["steps"], n_draws=B, seed=seed)
    lab = audit.labels
    is_loop = (lab["label"] == "loop").to_numpy()
    reacher = lab["reacher"].to_numpy()
    codes = np.array([sorted({"SFT", "RL"}).index(r) for r in reacher])
    counts = bootstrap_counts(len(lab), B, np.random.default_rng(hot.bootstrap_seed(seed, "audit", "valid_unseen")),
                              codes)
    diffs = []
    for c in counts:
        share = {r: (c * is_loop)[reacher == r].sum() / c[reacher == r].sum() for r in ("SFT", "RL")}
        diffs.append(share["RL"] - share["SFT"])
    row = audit.loop_share.set_index("estimand").loc["loop_share_diff"]
    point = is_loop[reacher == "RL"].mean() - is_loop[reacher == "SFT"].mean()
    assert row["estimate"] == pytest.approx(point)
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert row["ci_low"] == pytest.approx(lo) and row["ci_high"] == pytest.approx(hi)
    assert "loop" in audit.summary()
