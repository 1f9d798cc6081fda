"""alfworld_training.training_findings on synthetic held-out episodes whose truth
is known: planted RL gain -> reappears, none -> inconclusive, reversed -> contradicted, level."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstudies.findings import TABLE_COLUMNS
from agentstudies.studies.alfworld.training import training_findings

ARRIVE = "RL arrives at the frontier more often than SFT"
WON = "RL succeeds more often than SFT at the endpoint"
INFO = "both checkpoints are informative"


def _ev(p_sft, p_rl, *, n_per_type=20, types=3, seed=0):
    """Held-out episodes: one per (checkpoint, task); arrived and won drawn with the given
    rates (won only after arriving, both at the same rate for simplicity)."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(types):
        for i in range(n_per_type):
            for ck, p in (("SFT", p_sft), ("RL", p_rl)):
                a = bool(rng.random() < p)
                rows.append(dict(checkpoint=ck, split="valid_unseen", task_id=f"t{t}-{i}", task_type=f"type{t}",
                                 seed=0, arrived=a, won=a and bool(rng.random() < 0.8)))
    return pd.DataFrame(rows)


def test_planted_gain_reappears_and_interval_matches_the_rates():
    f = training_findings(_ev(0.2, 0.8), n_draws=400)
    t = f.table().set_index("finding")
    assert list(f.table().columns) == list(TABLE_COLUMNS)
    assert t.loc[ARRIVE, "verdict"] == "reappears" and t.loc[WON, "verdict"] == "reappears"
    ev = _ev(0.2, 0.8)
    by_hand = 100 * (ev[ev.checkpoint == "RL"]["arrived"].mean() - ev[ev.checkpoint == "SFT"]["arrived"].mean())
    assert t.loc[ARRIVE, "estimate"] == pytest.approx(by_hand)
    assert t.loc[ARRIVE, "ci_low"] < by_hand < t.loc[ARRIVE, "ci_high"]


def test_no_gain_is_inconclusive_and_a_reversed_gain_contradicted():
    assert training_findings(_ev(0.5, 0.5, seed=1), n_draws=400).verdict(ARRIVE) == "inconclusive"
    assert training_findings(_ev(0.8, 0.2), n_draws=400).verdict(ARRIVE) == "contradicted"


def test_informative_checkpoints_by_exact_intervals():
    assert training_findings(_ev(0.3, 0.7), n_draws=100).verdict(INFO) == "reappears"
    # SFT never wins: its exact interval [0, 0.05] (60 episodes) lies below 0.05 -> contradicted
    none = _ev(0.0, 0.7, n_per_type=40)
    row = training_findings(none, n_draws=100).table().set_index("finding").loc[INFO]
    hi = stats.beta.ppf(0.975, 1, 120)  # exact upper bound of 0 / 120 by hand
    assert hi < 0.05 and row["verdict"] == "contradicted"


def test_level_is_honoured():
    ev = _ev(0.4, 0.6, seed=3, n_per_type=15)
    wide = training_findings(ev, n_draws=2000, level=0.99).table().set_index("finding").loc[ARRIVE]
    narrow = training_findings(ev, n_draws=2000, level=0.5).table().set_index("finding").loc[ARRIVE]
    assert wide["ci_high"] - wide["ci_low"] > narrow["ci_high"] - narrow["ci_low"]
    assert wide["rule"].startswith("99% CI") and narrow["rule"].startswith("50% CI")


def test_missing_checkpoint_is_refused():
    ev = _ev(0.3, 0.7)
    with pytest.raises(ValueError, match="RL"):
        training_findings(ev[ev.checkpoint == "SFT"], n_draws=100)
