"""The published GPT-4o τ-bench runs (pass^k, flips, replay, real audit) and the gold-read
audit of ``task_audit``; values checked against independent computations."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from agentstudies.envs.tau import flagged_task_ids, get_task, task_audit
from agentstudies.envs.tau.data import pristine_db


def test_task_audit_flags_retail_2_to_4_failing_gold_reads():
    """retail 2-4 read product 6086499569, which is not in the retail database
    (tau2-bench issue 89): the audit must flag that read; retail 0, 1 and 5 are clean."""
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
