"""SASST speed work changes no number: the bump-distance cache of the stability resamples,
the batched top-set quantiles and the memoized engine fingerprint, each checked against
the uncached computation (exact equality, not a tolerance)."""

import dataclasses
import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from agentstudies.sasst import SASST, ComparisonPlan, Slot, cluster_data
from agentstudies.sasst._plan import _ratio
from agentstudies.sasst._results import FINGERPRINT_FIELDS, _spec_json
from agentstudies.sasst.rules import AxisTiltFamily, BumpRule, ItemBumpFamily, score_matrix, top_set_jaccard

SYSTEMS = ("a", "b")


def test_bump_cache_gives_the_uncached_scores_bit_for_bit():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 7))
    names = [f"e{j}" for j in range(7)]
    cache: dict = {}
    for b in range(3):  # refits on resamples re-centre on the same items: later calls hit the cache
        rows = rng.integers(0, 60, 60)
        rules = ItemBumpFamily().fit(X[rows], names)
        want = np.vstack([r.score(X) for r in rules])  # each rule on its own, no cache
        got = score_matrix(rules, X, names, bump_cache=cache)
        assert np.array_equal(got, want)
        assert np.array_equal(got, score_matrix(rules, X, names))
    assert 0 < len(cache) <= 60  # one distance row per distinct centre, not per resample
    # the cache is keyed by the standardized rows' content: other features miss it
    Y = X + 1.0
    r = rules[0]
    assert np.array_equal(score_matrix([r], Y, names, bump_cache=cache)[0], r.score(Y))


def test_bump_rule_pieces_compose_to_its_score():
    rng = np.random.default_rng(1)
    Xs = rng.normal(size=(20, 3))
    r = BumpRule(columns=("a", "b", "c"), standardizer=None, center=np.array([0.1, -0.2, 0.3]),
                 bandwidth=0.7, lift=4.0)
    d2 = ((Xs - r.center) ** 2).sum(axis=1)
    assert np.allclose(r.sqdist(Xs), d2, rtol=0, atol=1e-14)
    assert np.array_equal(r.score_from_sqdist(r.sqdist(Xs)), r.score_standardized(Xs))
    assert np.allclose(r.score_standardized(Xs), 1 + 3.0 * np.exp(-d2 / (2 * 0.49)), rtol=1e-14)


def _data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    ids = [f"t{i:03d}" for i in range(n)]
    X = rng.normal(size=(n, 3))
    p = np.clip(0.5 + 0.2 * (X[:, 0] > 0), 0, 1)
    ep = pd.DataFrame({"task_id": np.repeat(ids, 2), "workflow": list(SYSTEMS) * n, "seed": 0,
                       "score": (rng.random(2 * n) < np.repeat(p, 2)).astype(float)})
    feats = pd.DataFrame(X, index=ids, columns=["x0", "x1", "x2"])
    return ep, feats


def _engine(**kw):
    slots = [Slot("stress", {"b": 1, "a": -1}, sign=-1, family="tilt", radius=None, geometry="none", min_ess=10)]
    return SASST(ComparisonPlan(SYSTEMS), slots, {"tilt": AxisTiltFamily()}, n_stability=6, seed=3, **kw)


def _fresh_fingerprint(eng):
    """The fingerprint computed from scratch, as before the memo."""
    p = eng.params()
    p["geometries"] = eng.geometries
    return {k: hashlib.sha256(json.dumps(_spec_json(p[k]), default=str).encode()).hexdigest()
            for k in FINGERPRINT_FIELDS}


def test_fingerprint_memo_follows_every_change_of_the_engine():
    eng = _engine()
    first = eng.fingerprint()
    assert first == _fresh_fingerprint(eng)
    assert eng.fingerprint() == first  # memo hit: the same digests
    eng.families["tilt"].strengths = (0.25,)  # a family changed in place
    assert eng.fingerprint()["families"] != first["families"]
    assert eng.fingerprint() == _fresh_fingerprint(eng)
    eng.slots[0] = dataclasses.replace(eng.slots[0], min_ess=11)  # a slot replaced
    assert eng.fingerprint()["slots"] != _fresh_fingerprint(_engine())["slots"]
    assert eng.fingerprint() == _fresh_fingerprint(eng)
    eng.n_stability = 7
    assert eng.fingerprint() == _fresh_fingerprint(eng)
    assert eng.fingerprint()["n_stability"] != first["n_stability"]


def test_memoized_fingerprint_still_refuses_a_changed_engine():
    ep, feats = _data()
    data = cluster_data(ep, feats, SYSTEMS)
    is_d = np.arange(len(data)) % 2 == 0
    eng = _engine()
    disc = eng.discover(data.subset(is_d))
    eng.confirm(disc, data.subset(~is_d))  # the same engine confirms
    eng.families["tilt"].clip = 1.5
    with pytest.raises(ValueError, match="not the one that ran the discovery: its families"):
        eng.confirm(disc, data.subset(~is_d))


def test_top_sets_of_many_rows_equal_each_row_on_its_own():
    """The refit stability now takes the top sets of all resamples' chosen rules at once:
    each row's quantile (ties, baseline level) must equal that row's own."""
    from agentstudies.sasst.rules import top_weighted_sets

    rng = np.random.default_rng(4)
    S = np.vstack([rng.random(50), np.ones(50), np.r_[np.ones(45), 3 * np.ones(5)], rng.integers(0, 3, 50)])
    s0 = rng.random(50)
    batched = top_set_jaccard(s0, S, 0.3)
    assert np.array_equal(batched, [top_set_jaccard(s0, row, 0.3) for row in S])
    assert np.array_equal(top_weighted_sets(S, 0.3), np.vstack([top_weighted_sets(r[None], 0.3)[0] for r in S]))
    assert top_weighted_sets(S, 0.3)[2].sum() == 5  # the 5 up-weighted tasks, not the 45 at the baseline


def test_ratio_broadcasts_and_marks_zero_denominators():
    num = np.array([[1.0, 2.0], [3.0, 0.0]])
    got = _ratio(num, np.array([0.0, 2.0]))
    assert np.array_equal(np.isnan(got), np.array([[True, False], [True, False]]))
    assert got[0, 1] == 1.0 and got[1, 1] == 0.0
    col = _ratio(num, np.array([[2.0], [0.0]]))
    assert np.array_equal(col[0], [0.5, 1.0]) and np.isnan(col[1]).all()
    assert np.isnan(_ratio(1.0, 0.0)) and _ratio(1.0, 4.0) == 0.25
