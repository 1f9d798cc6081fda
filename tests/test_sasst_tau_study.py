"""The Study F/G configuration: ten slots, shared frozen rules per radius, table shapes."""

import numpy as np
import pandas as pd
import pytest

from agentstudies.studies.tau import workflow as ts


def test_ten_slots_with_shared_rules_per_radius():
    slots = ts.tau_slots([0.01, 0.02, 0.04])
    assert len(slots) == 10
    assert sum(s.is_uniform for s in slots) == 2
    keys = {}
    for s in slots:
        if not s.is_uniform:
            keys.setdefault(s.radius, set()).add(s.discovery_key())
    # one discovery specification (hence one frozen rule) per radius
    assert {r: len(k) for r, k in keys.items()} == {0.01: 1, 0.02: 1, 0.04: 1}
    controls = [s for s in slots if s.name.startswith("Control")]
    assert [s.radius for s in controls] == [0.02, 0.02] and all(s.sign == 1 for s in controls)
    assert all(s.sign == -1 for s in slots if s.name.startswith("Stress"))
    with pytest.raises(ValueError, match="three radii"):
        ts.tau_slots([0.1, 0.2])


def _synthetic(n=60, seed=0):
    rng = np.random.default_rng(seed)
    ids = [f"retail/{i}" for i in range(n)]
    feats = pd.DataFrame({
        "domain": rng.choice(["retail", "airline"], n),
        **{c: rng.integers(0, 5, n).astype(float) for c in ts.STRUCTURED_FEATURES if c != "is_airline"},
        "emb_00": rng.normal(size=n), "constant": 1.0,
    }, index=ids)
    rows = [(t, s, w, float(rng.random() < 0.3)) for t in ids for s in (0, 1) for w in ts.WORKFLOWS]
    ep = pd.DataFrame(rows, columns=["task_id", "seed", "workflow", "reward"])
    return ep, feats


def test_run_shares_support_within_a_radius_and_shapes_tables():
    ep, raw = _synthetic()
    feats = ts.stress_features(raw)
    assert "is_airline" in feats and "constant" not in feats and "domain" not in feats
    split = pd.Series(["discovery", "confirmation"] * 30, index=feats.index)
    fam = ts.tau_family(list(feats.columns))
    radii = ts.tau_radii(feats, split.index[split == "discovery"], fam)
    assert radii[0] <= radii[1] <= radii[2]
    rep = ts.run_tau_sasst(ep, feats, split, radii, n_stability=5, n_draws=200, min_ess=5)
    t = rep.table
    r2 = t[t.index.str.contains("r2")]
    assert r2["ess"].nunique() == 1 and r2["stability"].nunique() == 1
    summary = ts.summary_table(ep.assign(profile="p"), {"p": rep})
    assert summary.loc["Not confirmed", "p"] + summary.loc["Confirmed", "p"] + summary.loc["Abstained", "p"] \
        + summary.loc["Failed feasibility", "p"] + summary.loc["Failed discovery", "p"] == 10
    # full-study rates are plain means of the episode table
    assert summary.loc["Full-study ReAct success", "p"] == pytest.approx(ep.loc[ep.workflow == "ReAct", "reward"].mean())
    with pytest.raises(KeyError, match="reward"):
        ts.run_tau_sasst(ep.drop(columns="reward"), feats, split, radii)
