"""studies.inspect.findings.log_findings on synthetic tables whose truth is known."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstudies.findings import TABLE_COLUMNS
from agentstudies.studies.inspect.findings import log_findings, passk_drop_by_task

IDLE = "an idle agent passes some τ² retail tasks"
PASSK = "pass^2 falls below pass^1"
SMALL = "SASST certifies nothing from a log this small"
ERR = "excluding errored samples raises the pass rate"
ROWS = "every Inspect sample becomes one episode row"


def _episodes(idle_pass, other, n_tasks=10, epochs=2):
    """idle_pass(t, e) / other(t, e): 0/1 score of task t, epoch e."""
    rows = []
    for t in range(n_tasks):
        for e in range(epochs):
            rows.append(dict(workflow="decline", task_id=f"r/{t}", seed=e, score=float(idle_pass(t, e))))
            rows.append(dict(workflow="transfer", task_id=f"r/{t}", seed=e, score=float(other(t, e))))
    return pd.DataFrame(rows)


def _report(statuses=("not confirmed", "failed feasibility")):
    return SimpleNamespace(table=pd.DataFrame({"status": list(statuses)}, index=["uniform", "stress"]))


def _counted(n_err=3, zero=0.4, exclude=0.5):
    return pd.DataFrame({"flagged rows": [n_err, n_err, 0], "pass rate": [np.nan, zero, exclude]},
                        index=pd.Index(["keep", "zero", "exclude"], name="on_error"))


def test_planted_truths_reappear():
    ep = _episodes(lambda t, e: t < 6, lambda t, e: (t + e) % 2 == 0)  # idle passes 6/10; transfer flips everywhere
    f = log_findings(ep, len(ep), _report(), _counted(), 2, n_draws=500)
    assert list(f.table().columns) == list(TABLE_COLUMNS)
    t = f.table().set_index("finding")
    assert t.loc[ROWS, "verdict"] == "reappears" and t.loc[SMALL, "verdict"] == "reappears"
    assert t.loc[IDLE, "estimate"] == pytest.approx(0.6)
    ci = stats.binomtest(6, 10).proportion_ci(0.95, method="exact")  # by hand
    assert (t.loc[IDLE, "ci_low"], t.loc[IDLE, "ci_high"]) == pytest.approx((ci.low, ci.high))
    assert t.loc[IDLE, "verdict"] == "reappears"
    # transfer: c = 1 of 2 on every task -> pass^1 - pass^2 = 0.5 per task; decline: 0 -> mean 0.25
    assert t.loc[PASSK, "estimate"] == pytest.approx(0.25) and t.loc[PASSK, "verdict"] == "reappears"
    assert t.loc[ERR, "verdict"] == "reappears"


def test_none_is_inconclusive_or_not_testable_by_measurement():
    ep = _episodes(lambda t, e: False, lambda t, e: t < 3)  # idle passes nothing; replicates agree
    f = log_findings(ep, len(ep), _report(), _counted(n_err=0), 2, n_draws=200)
    assert f.verdict(IDLE) == "inconclusive"  # exact interval [0, 0.31] touches 0
    row = f.table().set_index("finding").loc[PASSK]
    assert row["verdict"] == "not testable here" and "0 of 20" in row["why"]
    assert f.verdict(ERR) == "not testable here"


def test_reversed_truths_are_contradicted():
    ep = _episodes(lambda t, e: True, lambda t, e: True)
    f = log_findings(ep.iloc[:-1], len(ep), _report(("confirmed", "abstained")), _counted(zero=0.5, exclude=0.5),
                     1, n_draws=200)
    assert f.verdict(ROWS) == "contradicted"  # a dropped sample
    assert f.verdict(SMALL) == "contradicted"
    assert f.verdict(ERR) == "contradicted"


def test_level_is_honoured():
    ep = _episodes(lambda t, e: t < 1, lambda t, e: False, n_tasks=30)
    lo90 = log_findings(ep, len(ep), _report(), _counted(), 2, level=0.9).table().set_index("finding").loc[IDLE]
    lo99 = log_findings(ep, len(ep), _report(), _counted(), 2, level=0.99).table().set_index("finding").loc[IDLE]
    assert lo99["ci_high"] > lo90["ci_high"] and lo90["rule"].startswith("90% CI")


def test_passk_by_task_and_refusals():
    ep = _episodes(lambda t, e: e == 0, lambda t, e: True, n_tasks=2, epochs=3)
    t = passk_drop_by_task(ep, 2).set_index(["workflow", "task_id"])
    assert t.loc[("decline", "r/0"), "passk"] == 0.0  # C(1, 2) / C(3, 2)
    assert t.loc[("transfer", "r/0"), "drop"] == 0.0
    with pytest.raises(ValueError, match="fewer than k=4"):
        passk_drop_by_task(ep, 4)
    with pytest.raises(ValueError, match="NaN"):
        passk_drop_by_task(ep.assign(score=np.nan), 2)
    with pytest.raises(KeyError, match="on_error"):
        log_findings(ep, len(ep), _report(), _counted().drop(index="exclude"), 2)


def test_k_one_is_not_testable_by_definition():
    ep = _episodes(lambda t, e: e == 0, lambda t, e: True)
    row = log_findings(ep, len(ep), _report(), _counted(), 1).table().set_index("finding").loc["pass^1 falls below pass^1"]
    assert row["verdict"] == "not testable here" and "k = 1" in row["why"]
