"""The published GPT-4o τ-bench runs (pass^k, flips, replay, real audit) and the gold-read
audit of ``task_audit``; values checked against independent computations."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from agentstudies.envs.tau import flagged_task_ids, get_task, task_audit
from agentstudies.envs.tau import pristine_db


def test_task_audit_flags_retail_2_to_4_failing_gold_reads():
    """retail 2-4 read product 6086499569, which is not in the retail database
    (tau2-bench#89): the audit must flag that read; retail 0, 1 and 5 are clean."""
    ids = [f"retail/{i}" for i in range(6)]
    audit = task_audit(task_ids=ids).set_index("task_id")
    products = pristine_db("retail").products
    for tid in ids:
        task = get_task(tid)
        # independent: which gold get_product_details read names a product id absent from the DB
        bad = [f"{i}:{a.name}" for i, a in enumerate(task.actions)
               if a.name == "get_product_details" and a.args()["product_id"] not in products]
        assert audit.loc[tid, "failed_gold_reads"] == ";".join(bad)
        assert audit.loc[tid, "n_failed_gold_reads"] == len(bad)
    assert [t for t in ids if audit.loc[t, "n_failed_gold_reads"] > 0] == ["retail/2", "retail/3", "retail/4"]
    flagged = flagged_task_ids(audit.reset_index()).set_index("reason")
    assert flagged.loc["a gold read fails in the gold replay", "task_ids"] == "retail/2, retail/3, retail/4"
    assert flagged.loc["a gold read fails in the gold replay", "n_tasks"] == 3


def test_flagged_task_ids_by_hand():
    audit = pd.DataFrame({
        "task_id": ["a", "b", "c"], "idle_reward": [1.0, 0.0, 0.0], "idle_info_reward": [1.0, 1.0, 0.0],
        "no_transfer_reward": [np.nan, np.nan, 1.0], "n_failed_gold_writes": [0, 2, 0], "n_failed_gold_reads": [0, 0, 1],
    })
    got = flagged_task_ids(audit).set_index("reason")["task_ids"].to_dict()
    assert got == {"idle agent passes": "a", "idle agent sending the required info passes": "a, b",
                   "gold without the transfer to a human passes": "c",
                   "a gold write fails in the gold replay": "b", "a gold read fails in the gold replay": "c"}
    with pytest.raises(KeyError, match="n_failed_gold_reads"):
        flagged_task_ids(audit.drop(columns="n_failed_gold_reads"))


# ----------------------------------------------------------------------------- published runs
from agentstudies.studies.tau import published as tp  # noqa: E402


def _brute_pass_k(rewards_by_task: dict, k: int) -> float:
    """pass^k by enumeration: for each task, the share of k-subsets of its trials that all
    succeed; the mean over tasks (τ-bench Eq. 1 read as 'all k i.i.d. trials succeed')."""
    per = []
    for rewards in rewards_by_task.values():
        subsets = list(itertools.combinations(range(len(rewards)), k))
        per.append(sum(all(rewards[i] == 1 for i in s) for s in subsets) / len(subsets))
    return float(np.mean(per))


def test_pass_hat_k_against_brute_force_on_random_and_real_runs():
    rng = np.random.default_rng(3)
    rows = [{"task_id": t, "trial": j, "reward": float(rng.random() < p)}
            for t, p in enumerate(rng.random(17)) for j in range(5)]
    runs = pd.DataFrame(rows)
    table = tp.passk_table(runs, ks=(1, 2, 3, 4, 5), n_draws=200, seed=1).set_index("k")
    by_task = runs.groupby("task_id")["reward"].apply(list).to_dict()
    for k in range(1, 6):
        assert table.loc[k, "estimate"] == pytest.approx(_brute_pass_k(by_task, k), abs=1e-12)
        assert table.loc[k, "ci_low"] <= table.loc[k, "estimate"] <= table.loc[k, "ci_high"]
    real = tp.runs_table(tp.load_runs())
    real_table = tp.passk_table(real, n_draws=200).set_index("k")
    real_by_task = real.groupby("task_id")["reward"].apply(list).to_dict()
    assert len(real_by_task) == 50 and all(len(v) == 4 for v in real_by_task.values())
    for k in (1, 2, 3, 4):
        assert real_table.loc[k, "estimate"] == pytest.approx(_brute_pass_k(real_by_task, k), abs=1e-12)
    # same seed, same interval; pass^k cannot increase in k
    again = tp.passk_table(real, n_draws=200).set_index("k")
    pd.testing.assert_frame_equal(real_table, again)
    assert np.all(np.diff(real_table["estimate"].to_numpy()) <= 0)


def test_pass_hat_k_refuses_bad_input():
    with pytest.raises(ValueError, match="k must lie"):
        tp.pass_hat_k(np.array([1, 2]), 4, 5)
    with pytest.raises(ValueError, match="success counts"):
        tp.pass_hat_k(np.array([5]), 4, 2)
    uneven = pd.DataFrame({"task_id": [0, 0, 1], "trial": [0, 1, 0], "reward": [1.0, 0.0, 1.0]})
    with pytest.raises(ValueError, match="same number of trials"):
        tp.passk_table(uneven)
    with pytest.raises(KeyError, match="reward"):
        tp.passk_table(uneven.drop(columns="reward"))


def test_flip_table_by_hand():
    runs = pd.DataFrame({"task_id": [7] * 4 + [8] * 4 + [9] * 4, "trial": [0, 1, 2, 3] * 3,
                         "reward": [1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1]}).astype({"reward": float})
    ft = tp.flip_table(runs).set_index("task_id")
    assert ft["successes"].tolist() == [3, 0, 4]
    assert ft["flips"].tolist() == [True, False, False]
    assert ft["changes"].tolist() == [2, 0, 0]
    est, lo, hi = tp.share_interval(ft["flips"].to_numpy(), n_draws=300)
    assert est == pytest.approx(1 / 3) and 0.0 <= lo <= est <= hi <= 1.0


def test_replay_of_a_hand_checked_run():
    """v1 airline task 0, trial 0 (Mia Li books JFK -> SEA): eight calls, one ``think``
    (skipped), the first booking refused ('payment amount does not add up'), the second
    booked with a payment split that differs from the gold one -> the DB check fails,
    as τ-bench recorded (r_actions 0)."""
    recs = tp.load_runs()
    run = next(r for r in recs if r["task_id"] == 0 and r["trial"] == 0)
    calls = tp.tool_calls(run)
    assert [c["name"] for c in calls].count("think") == 1 and len(calls) == 8
    books = [c for c in calls if c["name"] == "book_reservation"]
    assert books[0]["recorded"].startswith("Error: payment amount does not add up")
    gold = run["info"]["task"]["actions"][0]["kwargs"]
    assert books[1]["arguments"]["payment_methods"] != gold["payment_methods"]
    match = tp.match_tau2(recs).set_index("task_id")
    assert match.loc[0, "tau2_task"] == "airline/20" and "user id is mia_li_3668" in get_task("airline/20").scenario
    got = tp.replay_run(run, "airline/20")
    assert got == {"db_match": False, "n_replayed": 7, "n_skipped": 1, "n_failed": 1, "n_failed_recorded": 1,
                   "n_status_differs": 0, "writes_ran": 1}
    assert run["info"]["reward_info"]["info"]["r_actions"] == 0.0


def test_replay_of_the_gold_calls_passes_and_of_no_call_fails():
    """A record whose only call is the gold cancellation of v1 task 1 (τ² airline/19) must
    pass the DB check; the same record without the call must fail it."""
    recs = tp.load_runs()
    base = next(r for r in recs if r["task_id"] == 1)
    gold = base["info"]["task"]["actions"]
    assert [a["name"] for a in gold] == ["cancel_reservation"]
    msg = {"role": "assistant", "content": None,
           "tool_calls": [{"id": "x", "function": {"name": "cancel_reservation", "arguments": json.dumps(gold[0]["kwargs"])}}]}
    rec = {**base, "traj": [{"role": "user", "content": "hi"}, msg, {"role": "tool", "content": "{}"}]}
    assert tp.replay_run(rec, "airline/19")["db_match"] is True
    idle = {**base, "traj": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]}
    assert tp.replay_run(idle, "airline/19")["db_match"] is False
    bad = {**base, "traj": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "y", "function": {"name": "cancel_reservation", "arguments": "{not json"}}]}]}
    with pytest.raises(ValueError, match="task 1 trial .* not JSON"):
        tp.tool_calls(bad)


def test_confirmed_unrun_write_rule_by_hand():
    base = {"task_id": 3, "trial": 0, "reward": 0.0,
            "info": {"task": {"actions": [{"name": "send_certificate", "kwargs": {}}]}}}
    ask = {"role": "assistant", "content": "I can issue a $50 certificate. Shall I proceed?"}
    yes = {"role": "user", "content": "Yes, please go ahead. ###STOP###"}
    hit = tp.confirmed_unrun_writes([{**base, "traj": [ask, yes]}])
    assert hit[["task_id", "trial"]].values.tolist() == [[3, 0]]
    transfer = {"role": "assistant", "content": "Shall I transfer you to a human agent to cancel it?"}
    no_stop = {"role": "user", "content": "Yes, please go ahead."}
    told = {"role": "assistant", "content": "Your booking is done. Anything else?"}
    for traj in ([transfer, yes], [ask, no_stop], [told, {"role": "user", "content": "No, thanks ###STOP###"}]):
        assert tp.confirmed_unrun_writes([{**base, "traj": traj}]).empty


def test_seed_flip_rates_by_hand():
    from agentstudies.studies.tau.workflow import seed_flip_rates

    # profile p: tasks a, b, c; workflow X flips on a and c, workflow Y on none
    rows = []
    rewards = {("X", "a"): (1, 0), ("X", "b"): (1, 1), ("X", "c"): (0, 1),
               ("Y", "a"): (0, 0), ("Y", "b"): (1, 1), ("Y", "c"): (0, 0)}
    for (w, t), rs in rewards.items():
        for s, r in zip((0, 1), rs):
            rows.append({"profile": "p", "workflow": w, "task_id": t, "seed": s, "reward": float(r)})
    ep = pd.DataFrame(rows)
    got = seed_flip_rates(ep, n_draws=300, seed=4).set_index("workflow")
    assert got.loc["X", "flips"] == 2 and got.loc["Y", "flips"] == 0 and (got["tasks"] == 3).all()
    assert got.loc["X", "share"] == pytest.approx(2 / 3) and got.loc["Y", "share"] == 0.0
    assert got.loc["Y", "ci_low"] == 0.0 and got.loc["Y", "ci_high"] == 0.0
    assert 0.0 <= got.loc["X", "ci_low"] <= 2 / 3 <= got.loc["X", "ci_high"] <= 1.0
    with pytest.raises(ValueError, match="at least two simulator seeds"):
        seed_flip_rates(ep[ep["seed"] == 0])
    with pytest.raises(ValueError, match="lack a"):
        seed_flip_rates(ep.iloc[1:])
    with pytest.raises(ValueError, match="duplicate"):
        seed_flip_rates(pd.concat([ep, ep.iloc[:1]]))


def test_published_findings_on_the_real_runs():
    from agentstudies.studies import paper_values

    recs = tp.load_runs()
    runs = tp.runs_table(recs)
    passk = tp.passk_table(runs, n_draws=300)
    flips = tp.flip_table(runs)
    replay = tp.replay_runs(recs, tp.match_tau2(recs))
    f = tp.published_findings(runs, passk, flips, replay, paper_values("tau_published_runs", "passk"), n_draws=300)
    t = f.table().set_index("finding")
    by_task = runs.groupby("task_id")["reward"].apply(list).to_dict()
    drop = _brute_pass_k(by_task, 1) - _brute_pass_k(by_task, 4)
    assert t.loc["pass^k falls from k = 1 to k = 4", "estimate"] == pytest.approx(drop, abs=1e-12)
    n_flip = sum(0 < sum(v) < len(v) for v in by_task.values())
    assert t.loc["identical trials of a task disagree on some tasks", "estimate"] == pytest.approx(n_flip / 50)
    assert t.loc["a workflow changes reliability", "verdict"] == "not testable here"
    recorded = [r for r in recs if r["info"].get("reward_info") is not None]
    assert t.loc["our replayed DB verdict agrees with every recorded reward", "n"] == len(
        [r for r in recorded if r["task_id"] in set(replay["task_id"])])
    assert set(t["verdict"]) <= {"reappears", "contradicted", "inconclusive", "not testable here"}


def test_passk_figure_draws_the_hand_computed_curve():
    """Two tasks of three trials: rewards (1,1,0) and (1,1,1). pass^1 = (2/3 + 1)/2 = 5/6,
    pass^2 = (C(2,2)/C(3,2) + 1)/2 = (1/3 + 1)/2 = 2/3, pass^3 = (0 + 1)/2 = 1/2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentstudies.studies.tau import plots as tau_plots

    runs = pd.DataFrame({"task_id": [0, 0, 0, 1, 1, 1], "trial": [0, 1, 2] * 2, "reward": [1, 1, 0, 1, 1, 1]})
    table = tp.passk_table(runs, ks=(1, 2, 3), n_draws=200, seed=0)
    paper = pd.DataFrame({"k": [1, 2, 3], "pass_k": [0.8, 0.6, 0.4]})
    fig = tau_plots.plot_passk_interval(table, paper, title="pass^k (real runs)")
    ax = fig.axes[0]
    ours, theirs = ax.lines[0], [ln for ln in ax.lines if ln.get_label() == "paper"][0]
    assert list(ours.get_ydata()) == pytest.approx([5 / 6, 2 / 3, 1 / 2])
    assert list(theirs.get_ydata()) == [0.8, 0.6, 0.4]
    assert ax.get_xlabel().startswith("k") and ax.get_ylabel().startswith("pass^k")
    plt.close(fig)
    with pytest.raises(KeyError, match="ci_low"):
        tau_plots.plot_passk_interval(table.drop(columns="ci_low"), title="x")
