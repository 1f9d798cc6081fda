"""Eq. 9 interaction prediction against a direct loop over task types."""

import numpy as np
import pandas as pd
import pytest

from agentstudies import handoff as ho
from agentstudies.handoff import testing as hot
from agentstudies.handoff.testing import example_tables, resample_rows
from agentstudies.stats import bootstrap_counts


@pytest.fixture(scope="module")
def samples():
    target = example_tables(seed=21, n_per_type=3, n_seeds=3, split="valid_unseen")["episodes"]
    external = example_tables(seed=22, n_per_type=3, n_seeds=2, split="valid_seen",
                              arrival=(0.5, 0.9))["episodes"]
    return target, external


def direct_eq9(target, external, weights="prevalence", external_reacher=None):
    """Eq. 9 written out: loop over types, plain group means of rows."""
    types = sorted(target["task_type"].unique())
    traj = target[target["solver"] == "SFT"]
    n_traj = traj[traj["reacher"] == "SFT"].groupby("task_type").size()
    arrival = traj.groupby(["task_type", "reacher"])["arrived"].mean()
    endpoint = target.groupby(["task_type", "reacher", "solver"])["endpoint"].mean()
    e = external[external["arrived"]]
    if external_reacher is not None:
        e = e[e["reacher"] == external_reacher]
    conv = e.assign(solved=e["solved"].astype(bool)).groupby(["task_type", "solver"])["solved"].mean()
    pred = obs = 0.0
    per = {}
    for k in types:
        A = {w: arrival[(k, w)] for w in ("SFT", "RL")}
        J = {(w, r): endpoint[(k, w, r)] for w in ("SFT", "RL") for r in ("SFT", "RL")}
        Cx = {r: conv.get((k, r), np.nan) for r in ("SFT", "RL")}
        p = n_traj[k] / n_traj.sum() if weights == "prevalence" else 1 / len(types)
        pred_k = (A["RL"] - A["SFT"]) * (Cx["RL"] - Cx["SFT"])
        obs_k = (J["RL", "RL"] - J["RL", "SFT"]) - (J["SFT", "RL"] - J["SFT", "SFT"])
        per[k] = (pred_k, obs_k, A["RL"] - A["SFT"], Cx["RL"] - Cx["SFT"])
        pred += p * pred_k
        obs += p * obs_k
    return pred, obs, per


@pytest.mark.parametrize("weights", ["prevalence", "equal"])
def test_eq9_matches_direct_loop(samples, weights):
    target, external = samples
    res = ho.predict_interaction(target, external, weights=weights, n_draws=0)
    pred, obs, per = direct_eq9(target, external, weights)
    assert res.get("predicted")["estimate"] == pytest.approx(pred, abs=1e-12)
    assert res.get("observed")["estimate"] == pytest.approx(obs, abs=1e-12)
    assert res.get("residual")["estimate"] == pytest.approx(obs - pred, abs=1e-12)
    bt = res.by_type.set_index("task_type")
    for k, (pk, ok, dA, dC) in per.items():
        assert bt.loc[k, "predicted"] == pytest.approx(pk, abs=1e-12)
        assert bt.loc[k, "observed"] == pytest.approx(ok, abs=1e-12)
        assert bt.loc[k, "arrival_gap"] == pytest.approx(dA, abs=1e-12)
        assert bt.loc[k, "ext_conversion_gap"] == pytest.approx(dC, abs=1e-12)
    table6 = res.table(6)
    assert table6["task_type"].iloc[-1] == "overall" and np.isnan(table6["arrival_gap"].iloc[-1])


def test_external_reacher_restriction(samples):
    target, external = samples
    res = ho.predict_interaction(target, external, external_reacher="RL", n_draws=0)
    pred, _, _ = direct_eq9(target, external, external_reacher="RL")
    assert res.get("predicted")["estimate"] == pytest.approx(pred, abs=1e-12)


def test_observed_overall_equals_pooled_interaction(samples):
    target, external = samples
    res = ho.predict_interaction(target, external, n_draws=0)
    pooled = ho.analyze_handoff(target, n_draws=0).get("interaction")["estimate"]
    assert res.get("observed")["estimate"] == pytest.approx(pooled, abs=1e-12)


def test_two_sample_bootstrap_matches_loop(samples):
    target, external = samples
    B, seed = 40, 7  # a seed whose draws lose some type's external arrivals
    design = hot.prediction_design(target, external)
    strata = design.strata()
    counts = bootstrap_counts(len(strata), B, np.random.default_rng(hot.bootstrap_seed(
        seed, "prediction", "valid_unseen", "valid_seen")), strata)
    nt = design.target.n_units
    # each sample is resampled within type, independently: type counts are fixed in both parts
    for k in range(design.K):
        np.testing.assert_array_equal(counts[:, :nt][:, design.target.strata == k].sum(1),
                                      (design.target.strata == k).sum())
        np.testing.assert_array_equal(counts[:, nt:][:, design.external.strata == k].sum(1),
                                      (design.external.strata == k).sum())
    fast = hot.prediction_replicates(design, counts)
    loop = []
    for c in counts:
        t = resample_rows(target, design.target.units, c[:nt])
        e = resample_rows(external, design.external.units, c[nt:])
        pred, obs, _ = direct_eq9(t, e)
        loop.append((obs, pred, obs - pred))
    loop = np.array(loop)
    np.testing.assert_allclose(fast[["observed", "predicted", "residual"]].to_numpy(), loop, atol=1e-12)
    with pytest.warns(RuntimeWarning):  # some draws lose a type's external arrivals
        res = ho.predict_interaction(target, external, n_draws=B, seed=seed)
    resid = loop[:, 2][~np.isnan(loop[:, 2])]
    assert res.get("residual")["n_excluded"] == B - resid.size > 0
    lo, hi = np.percentile(resid, [2.5, 97.5])
    assert res.get("residual")["ci_low"] == pytest.approx(lo, abs=1e-12)
    assert res.get("residual")["ci_high"] == pytest.approx(hi, abs=1e-12)


def test_prediction_input_errors(samples):
    target, external = samples
    drop = external[external["task_type"] != "look_at_obj_in_light"]
    with pytest.raises(ValueError, match="look_at_obj_in_light"):
        ho.predict_interaction(target, drop, n_draws=0)
    extra = target[target["task_type"] != "pick_two_obj_and_place"]
    with pytest.raises(ValueError, match="pick_two_obj_and_place"):
        ho.predict_interaction(extra, external, n_draws=0)
    with pytest.raises(ValueError, match="weights"):
        ho.predict_interaction(target, external, weights="median", n_draws=0)
    with pytest.raises(ValueError, match="several splits"):
        ho.predict_interaction(pd.concat([target, external]), external, n_draws=0)
    # a type in which the external sample never arrives leaves C^ext undefined
    ext = external.copy()
    m = ext["task_type"] == "pick_and_place_simple"
    ext.loc[m, ["arrived", "endpoint"]] = [False, 0]
    ext.loc[m, ["solved", "bridge", "arrival_step"]] = pd.NA
    with pytest.raises(ValueError, match="no reached state"):
        ho.predict_interaction(target, ext, n_draws=0)
