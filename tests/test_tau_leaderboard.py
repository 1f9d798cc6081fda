"""pass^k across published models: the τ²-bench leaderboard submissions (submitters' aggregates).

Checked against the submission files read directly with :mod:`json`, hand-worked tables,
and Kendall's tau counted pair by pair (no ties: (concordant - discordant) / pairs).
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentstudies.studies.tau import leaderboard as lbm

DATA = Path(__file__).resolve().parents[1] / "data"
LB = lbm.load_leaderboard()


def test_every_submission_file_is_read_and_checked():
    files = sorted((DATA / lbm.LEADERBOARD_DIR).glob("*.json"))
    assert len(files) == 65 and set(LB["submission"]) == {f.stem for f in files}
    raw = json.loads((DATA / lbm.LEADERBOARD_DIR / "gpt-5_sierra_2025-08-09.json").read_text())
    row = LB[(LB["submission"] == "gpt-5_sierra_2025-08-09") & (LB["domain"] == "airline")].iloc[0]
    assert row["pass_4"] == pytest.approx(raw["results"]["airline"]["pass_4"] / 100)
    assert row["cost"] == pytest.approx(raw["results"]["airline"]["cost"])
    n_domains = sum(v is not None for f in files for v in json.loads(f.read_text())["results"].values())
    assert len(LB) == n_domains  # a null domain is no row; nothing else is dropped


def _write(folder: Path, results: dict) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "m_org_2026.json").write_text(json.dumps(dict(
        model_name="m", model_organization="o", submitting_organization="o", results=results)))


def test_bad_submissions_are_refused_with_the_file_and_field(tmp_path):
    _write(tmp_path, {"airline": {"pass_1": 50, "pass_2": 60}})
    with pytest.raises(ValueError, match=r"m_org_2026.json: results.airline pass\^k rises with k"):
        lbm.load_leaderboard(tmp_path)
    _write(tmp_path, {"airline": {"pass_1": 150}})
    with pytest.raises(ValueError, match=r"results.airline.pass_1 = 150.0 is outside \[0, 100\]"):
        lbm.load_leaderboard(tmp_path)
    _write(tmp_path, {"moon": {"pass_1": 10}})
    with pytest.raises(ValueError, match="unknown domain 'moon'"):
        lbm.load_leaderboard(tmp_path)
    with pytest.raises(FileNotFoundError, match="no submission files"):
        lbm.load_leaderboard(tmp_path / "empty")


def test_drop_by_domain_by_hand():
    lb = pd.DataFrame(dict(submission=["a", "b", "c"], domain="retail", pass_1=[0.8, 0.6, 0.5],
                           pass_2=[0.7, 0.5, 0.4], pass_3=[0.65, 0.45, 0.3], pass_4=[0.6, 0.3, 0.3], cost=np.nan))
    d = lbm.passk_drop_by_domain(lb).iloc[0]
    assert d["n"] == 3 and d["drop_median"] == pytest.approx(0.2)  # drops 0.2, 0.3, 0.2
    assert d["ratio_median"] == pytest.approx(0.6)  # ratios 0.75, 0.5, 0.6


def test_rank_change_kendall_tau_counted_pair_by_pair():
    rc = lbm.rank_change(LB).set_index("domain")
    for dom, row in rc.iterrows():
        g = LB[(LB["domain"] == dom) & LB["pass_1"].notna() & LB["pass_4"].notna()]
        a, b = g["pass_1"].to_numpy(), g["pass_4"].to_numpy()
        conc = disc = 0
        for i, j in combinations(range(len(a)), 2):
            s = np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
            conc += s > 0
            disc += s < 0
        assert row["discordant_pairs"] == disc and row["n"] == len(a)
        if conc + disc == row["pairs"]:  # no ties: tau-b is (C - D) / pairs
            assert row["kendall_tau"] == pytest.approx((conc - disc) / row["pairs"])


def test_cost_correlation_needs_three_submissions():
    out = lbm.cost_vs_passk(LB)
    cov = lbm.coverage(LB).set_index("domain")
    for r in out.itertuples():
        assert r.n <= cov.loc[r.domain, "cost"]
        assert np.isnan(r.kendall_tau) == (r.n < 3)


def test_sentences_follow_the_tables():
    ranks = pd.DataFrame(dict(domain=["airline", "retail"], kendall_tau=[0.5, 1.0], discordant_pairs=[1, 0],
                              pairs=[3, 3], leader_k1=["a", "b"], leader_k4=["c", "b"]))
    s = lbm.rank_sentence(ranks)
    assert s == ("airline: tau = 0.50, 1 of 3 pairs flip, the leader changes; "
                 "retail: tau = 1.00, 0 of 3 pairs flip, the leader stays.")
    cost = pd.DataFrame(dict(domain=["airline", "retail", "telecom"], k=4, n=[6, 9, 2],
                             kendall_tau=[0.9, -0.1, np.nan], p_value=[0.02, 0.6, np.nan]))
    assert lbm.cost_sentence(cost, level=0.95).endswith("distinguishable from zero at the 5 % level in airline.")
    assert "none is distinguishable from zero at the 1 % level" in lbm.cost_sentence(cost, level=0.99)
    with pytest.raises(ValueError, match="level must lie in"):
        lbm.cost_sentence(cost, level=1.5)
