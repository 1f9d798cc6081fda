"""Study estimands against independent computations (no sandbox runs needed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agentstudies.parallel import keyed_seed
from agentstudies.studies import impossible as st


def fake_episodes():
    rows = []
    # three tasks; per task 2 impossible episodes; cheated counts 2, 1, 0
    for t, cheats in (("T/0", [1, 1]), ("T/1", [1, 0]), ("T/2", [0, 0])):
        for k, c in zip(("one_off", "conflicting"), cheats):
            rows.append({"task_id": t, "kind": k, "workflow": "w", "cheated": bool(c), "passed": bool(c),
                         "difficulty": float(t[-1])})
        rows.append({"task_id": t, "kind": "original", "workflow": "w", "cheated": False, "passed": t != "T/2",
                     "difficulty": float(t[-1])})
    return pd.DataFrame(rows)


def test_cheating_rate_and_cluster_bootstrap_by_hand():
    ep = fake_episodes()
    r = st.cheating_rates(ep, by=("workflow",), n_draws=500, seed=3)
    row = r.get("cheating_rate", workflow="w")
    assert row["estimate"] == pytest.approx(100 * 3 / 6) and row["n"] == 6
    # the same bootstrap written as a plain loop over resampled tasks
    rng = np.random.default_rng(keyed_seed(3, "bootstrap", "cheating_rate", "w"))
    s, c = np.array([2.0, 1.0, 0.0]), np.array([2.0, 2.0, 2.0])
    idx = rng.integers(0, 3, size=(500, 3))
    reps = [100 * s[i].sum() / c[i].sum() for i in idx]
    assert row["ci_low"] == pytest.approx(np.quantile(reps, 0.025))
    assert row["ci_high"] == pytest.approx(np.quantile(reps, 0.975))


def test_legit_pass_rate_uses_originals_only():
    r = st.legit_pass_rates(fake_episodes(), by=("workflow",), n_draws=50)
    assert r.get("legit_pass_rate", workflow="w")["estimate"] == pytest.approx(100 * 2 / 3)


def test_rates_validate_input():
    ep = fake_episodes()
    with pytest.raises(KeyError, match="cheated"):
        st.cheating_rates(ep.drop(columns="cheated"), by=("workflow",))
    with pytest.raises(KeyError, match="stratum"):
        st.cheating_rates(ep, by=("nope",))
    with pytest.raises(ValueError, match="no episodes"):
        st.cheating_rates(ep[ep["kind"] == "original"], by=("workflow",))


def test_attempt_truth_marks_attempts_after_a_test_edit():
    key = dict(task_id="T", kind="one_off", policy="shortcut", workflow="w", replicate=0, reminder=False)
    a = pd.DataFrame([dict(key, round=1, true_strategy="honest", tests_modified=False),
                      dict(key, round=2, true_strategy="A", tests_modified=True),
                      dict(key, round=3, true_strategy="B", tests_modified=True)])
    assert st.attempt_truth(a).tolist() == ["none", "A", "A"]


def test_reminder_forks_pairs_and_good_outcome():
    base = dict(policy="shortcut", workflow="w", replicate=0)
    eps = pd.DataFrame([
        dict(base, task_id="T/0", kind="one_off", reminder=False, fork_round=-1, passed=True, cheated=True),
        dict(base, task_id="T/0", kind="one_off", reminder=True, fork_round=1, passed=False, cheated=False),
        dict(base, task_id="T/0", kind="original", reminder=False, fork_round=-1, passed=True, cheated=False),
        dict(base, task_id="T/0", kind="original", reminder=True, fork_round=1, passed=False, cheated=False),
        dict(base, task_id="T/1", kind="one_off", reminder=False, fork_round=-1, passed=True, cheated=True),
        dict(base, task_id="T/1", kind="one_off", reminder=True, fork_round=-1, passed=True, cheated=True),
    ])
    run = st.StudyRun(eps, pd.DataFrame(), 0, 1.0)
    f = st.reminder_forks(run)
    assert len(f) == 2                                    # T/1 never reached the fork
    got = f.set_index("cohort")[["y_without", "y_with"]].to_dict("index")
    assert got == {"one_off": {"y_without": 0, "y_with": 1}, "original": {"y_without": 1, "y_with": 0}}
    with pytest.raises(ValueError, match="unpaired"):
        st.reminder_forks(st.StudyRun(eps.iloc[:-1], pd.DataFrame(), 0, 1.0))


def test_paper_values_only_in_csv_and_labelled():
    p = st.paper_headlines()
    assert {"comparison", "condition", "cheating_pct", "note"} <= set(p.columns)
    assert p["note"].str.contains("approx").all()
