"""alfworld_training.training_findings on synthetic held-out episodes whose truth is known:
planted RL gain -> reappears, none -> inconclusive, reversed -> contradicted, level; the
equal-data comparison beside each row; usability is no paper finding."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstudies.findings import TABLE_COLUMNS
from agentstudies.studies.alfworld.training import training_findings
from agentstudies.studies.alfworld.training.report import usability_sentence

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


def test_usability_is_the_books_criterion_not_a_paper_finding():
    f = training_findings(_ev(0.3, 0.7), n_draws=100)
    assert INFO not in {r.finding for r in f.rows} and len(f.rows) == 2
    assert "both lie inside" in usability_sentence(_ev(0.3, 0.7))
    # SFT never wins: its exact interval [0, 0.025] (120 episodes) lies below 0.05
    none = _ev(0.0, 0.7, n_per_type=40)
    hi = stats.beta.ppf(0.975, 1, 120)  # exact upper bound of 0 / 120 by hand
    assert hi < 0.05 and "one lies inside" in usability_sentence(none) and f"{hi:.3f}" in usability_sentence(none)


def test_each_row_shows_the_equal_data_comparison():
    """RL beats the shipped SFT (0.2 vs 0.8) but not an SFT on equal data (1.0): the row
    keeps its verdict and says, beside it, that the equal-data difference is contradicted."""
    ev = _ev(0.2, 0.8)
    eq = _ev(1.0, 0.8)
    eq = eq[eq["checkpoint"] == "SFT"].assign(checkpoint="SFT-equal")
    r = next(x for x in training_findings(ev, equal=eq, n_draws=400).rows if x.finding == ARRIVE)
    assert r.verdict == "reappears" and r.basis == "measured"
    by_hand = 100 * (ev[ev.checkpoint == "RL"]["arrived"].mean() - eq["arrived"].mean())
    assert f"RL − SFT-equal: {by_hand:+.1f} pp" in r.why and "(contradicted by the same rule" in r.why
    assert "not run" in next(x for x in training_findings(ev, n_draws=100).rows if x.finding == ARRIVE).why


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


def test_a_much_smaller_gain_is_same_direction_magnitude_differs():
    """RL ahead by about 15 points where the paper's gap is 69.2 (82.5 − 13.3): the interval
    lies above 0 but below half the paper's gap (34.6), so the size does not reappear."""
    ev = _ev(0.4, 0.55, n_per_type=300, seed=5)
    r = next(x for x in training_findings(ev, n_draws=400).rows if x.finding == ARRIVE)
    assert 0 < r.ci_low and r.ci_high < 100 * (0.825 - 0.133) / 2
    assert r.verdict == "same direction, magnitude differs" and "[+34.6, +138.4]" in r.rule


def test_rows_state_each_checkpoints_training_data():
    ev = _ev(0.2, 0.8)
    eq = _ev(1.0, 0.8)
    eq = eq[eq["checkpoint"] == "SFT"].assign(checkpoint="SFT-equal")
    training = {"SFT": "SFT: 18 problems", "RL": "RL: 120 problems", "SFT-equal": "SFT-equal: 120 problems"}
    rows = training_findings(ev, equal=eq, n_draws=400, training=training).rows
    assert all(r.why.endswith("training data -- SFT: 18 problems; RL: 120 problems; SFT-equal: 120 problems")
               for r in rows) and len(rows) == 2
    with pytest.raises(KeyError, match="SFT-equal"):
        training_findings(ev, equal=eq, n_draws=400, training={"SFT": "a", "RL": "b"})
