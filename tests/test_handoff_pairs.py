"""Checkpoint pairings of the handoff study: training-data lines, pair filtering, the
equal-data estimate beside each RL-vs-SFT finding (hand-worked values)."""

from __future__ import annotations

import json
import types
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentstudies.handoff import analyze_handoff, audit_non_arrivals
from agentstudies.handoff.testing import example_tables
from agentstudies.studies.alfworld import handoff as ah
from agentstudies.studies.alfworld.handoff import pairs

CKPT = Path(__file__).resolve().parents[1] / "data" / "alfworld" / "checkpoints"


def _meta(name, objective, sft=3, train=20, **extra):
    return {"name": name, "objective": objective, "n_decisions": 108,
            "config": {"sft_tasks_per_type": sft, "train_tasks_per_type": train}, **extra}


def test_training_data_lines_by_hand():
    assert pairs.training_data(_meta("SFT", "behaviour cloning")) == \
        "SFT: behaviour cloning on 18 problems (3 per task type; 108 expert decisions)"
    assert pairs.training_data(_meta("SFT-equal", "behaviour cloning on every RL training problem", sft=20,
                                     n_problems=120, n_decisions=721)) == \
        "SFT-equal: behaviour cloning on 120 problems (20 per task type; 721 expert decisions)"
    assert pairs.training_data(_meta("RL", "SFT + REINFORCE (reward = won x 0.95^T)")) == \
        "RL: the SFT start + REINFORCE on 120 problems (20 per task type)"
    with pytest.raises(KeyError, match="config"):
        pairs.training_data({"name": "SFT", "objective": "behaviour cloning"})


def test_shipped_equal_sft_saw_rls_problems():
    """The equal-data SFT's problem count equals RL's training pool (6 types x per-type count);
    the shipped SFT's is the smaller 6 x 3."""
    meta = {n: json.loads((CKPT / f"{n}.json").read_text()) for n in ("SFT", "SFT-equal", "RL")}
    assert meta["SFT-equal"]["n_problems"] == 6 * meta["RL"]["config"]["train_tasks_per_type"] == 120
    assert "on 120 problems" in pairs.training_data(meta["SFT-equal"])
    assert "on 18 problems" in pairs.training_data(meta["SFT"])


def test_pair_episodes_keeps_one_crossing_and_reacher_rows():
    rows = [(w, r) for w in ("SFT", "SFT-equal", "RL") for r in ("SFT", "SFT-equal", "RL", None)]
    f = pd.DataFrame(rows, columns=["reacher", "solver"])
    got = pairs.pair_episodes(f, "SFT-equal")
    want = {("SFT-equal", "SFT-equal"), ("SFT-equal", "RL"), ("RL", "SFT-equal"), ("RL", "RL"),
            ("SFT-equal", None), ("RL", None)}
    assert set(map(tuple, got.astype(object).where(got.notna(), None).values)) == want and len(got) == 6
    with pytest.raises(KeyError, match="SFT-equal"):
        pairs.pair_episodes(f[f["reacher"] != "SFT-equal"], "SFT-equal")
    with pytest.raises(ValueError, match="checkpoint_pairs"):
        pairs.check_pairs(["SFT-equal"])  # the main pairing is required


def test_equal_beside_by_hand():
    est = pd.DataFrame({"split": "valid_unseen",
                        "estimand": ["reach_gap", "interaction", "survivor_minus_endpoint", "delta_solve_all_states"],
                        "estimate": [-0.067, 0.10, -0.05, -0.117], "ci_low": [-0.233, 0.02, -0.30, -0.267],
                        "ci_high": [0.083, 0.20, 0.10, 0.033], "flagged": [False, False, True, False]})
    got = pairs.equal_beside(types.SimpleNamespace(estimates=est), split="valid_unseen")
    assert got["Reach: RL arrives more often than SFT"] == \
        "-6.7 pp [-23.3, +8.3] (inconclusive by the same directional rule)"
    assert got["Interaction I (Eq. 4) is positive"].endswith("(reappears by the same directional rule)")
    assert "inconclusive (flagged)" in got["Reached-only estimate lies below the endpoint interaction"]
    with pytest.raises(KeyError, match="valid_seen"):
        pairs.equal_beside(types.SimpleNamespace(estimates=est), split="valid_seen")


def test_findings_state_training_data_and_the_equal_pairing():
    t = example_tables(seed=3, n_per_type=5, n_seeds=2)
    te = example_tables(seed=4, n_per_type=5, n_seeds=2, base="SFT-equal", arrival=(0.8, 0.15))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = analyze_handoff(t["episodes"], n_draws=300, seed=1)
        re_ = analyze_handoff(te["episodes"], base="SFT-equal", n_draws=300, seed=1)
        fa = audit_non_arrivals(t["trajectories"], t["steps"], n_draws=50, seed=1)
        fae = audit_non_arrivals(te["trajectories"], te["steps"], base="SFT-equal", n_draws=50, seed=1)
    training = {"SFT": "SFT: 18 problems", "RL": "RL: 120 problems", "SFT-equal": "SFT-equal: 120 problems"}
    f = ah.handoff_findings(r, None, fa, t["episodes"], training=training, equal=re_)
    tab = f.table().set_index("finding")
    assert tab["why"].str.contains("training data -- SFT: 18 problems; RL: 120 problems", regex=False).all()
    reach = re_.estimates.set_index(["split", "estimand"]).loc[("valid_unseen", "reach_gap")]
    want = f"equal data, RL x SFT-equal: {100 * reach['estimate']:+.1f} pp"
    assert want in tab.loc["Reach: RL arrives more often than SFT", "why"]
    # the equal pairing planted with SFT-equal arriving more often: its Reach row is contradicted
    fe = ah.handoff_findings(re_, None, fae, te["episodes"], base="SFT-equal", training=training)
    assert fe.verdict("Reach: RL arrives more often than SFT-equal") == "contradicted"
    with pytest.raises(KeyError, match="'RL'"):
        ah.handoff_findings(r, None, fa, t["episodes"], training={"SFT": "x"})
    assert np.isfinite(tab.loc["Reach: RL arrives more often than SFT", "estimate"])


def test_study_checkpoints_of_both_pairings():
    pols = ah.make_study_checkpoints("trained", bases=["SFT", "SFT-equal"])
    assert list(pols) == ["SFT", "SFT-equal", "RL"]
    assert pols["SFT-equal"].meta["n_problems"] == 120
    with pytest.raises(ValueError, match="scripted"):
        ah.make_study_checkpoints("scripted", bases=["SFT", "SFT-equal"])
