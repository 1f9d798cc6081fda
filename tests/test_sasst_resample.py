"""The batched stability resamples select what the resample-by-resample loop selected.

``resample_selections`` (blocks of resamples, one geometry call per radius-screen round)
is checked against a plain transcription of the loop it replaced (one resample at a time,
``_radius_screen`` per resample): same selected index on every resample, for every built-in
geometry, a user geometry (screened one resample at a time), a plan with splits, several
block sizes and a slot whose caps leave some resamples without a feasible candidate.
"""

from dataclasses import dataclass

import numpy as np
import pytest

from agentstudies.sasst import ComparisonPlan, Slot
from agentstudies.sasst import _resample
from agentstudies.sasst._resample import resample_selections
from agentstudies.sasst._support import _all_hold, _radius_screen, _select, support_constraints
from agentstudies.sasst.geometry import KMS, MMD, MaxSliced, make_geometry
from agentstudies.stats import bootstrap_counts
from agentstudies._tolerances import TINY

SYSTEMS = ("ReAct", "PV", "Gate")


def _loop_reference(plan, S, counts, delta, psi, slot, geom, X, masks):
    """The former per-resample loop of ``SASST._stability`` (fixed registry)."""
    B, n = counts.shape
    picks = []
    for b in range(B):
        m = counts[b]
        ms = S * m
        tot = ms.sum(axis=1)
        okm = tot > 0
        Wb = ms / np.where(okm, tot, 1.0)[:, None]
        ub = m / n
        loc = delta[b] + (Wb - ub) @ psi[:, b]
        ess = np.where(okm, tot**2 / np.maximum((S * S * m).sum(axis=1), TINY), 0.0)
        dens = n * (S[:, m > 0].max(axis=1)) / np.where(okm, tot, np.inf)
        share = plan.split_shares(S, masks, m)
        feas = okm & _all_hold(support_constraints(slot, ess, dens, split_share=share)) & np.isfinite(loc)
        dist = np.zeros(S.shape[0])
        if slot.radius is not None:
            dist, feas = _radius_screen(geom, X, ub, Wb, loc, feas, slot)
        picks.append(_select(loc, feas, ess, dist, slot.tie_rule, slot.tolerance))
    return np.array(picks)


@dataclass
class _UserGeometry:
    """A user geometry whose distance takes one reference row only (the fallback path)."""

    inner: object

    def fit(self, X):
        self.inner.fit(X)
        return self

    def distance(self, X, u, W):
        assert np.ndim(u) == 1, "a user geometry gets the 1-D reference weights"
        return self.inner.distance(X, u, W)


def _case(seed, n=60, G=12, B=40, n_splits=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    S = np.exp(0.8 * np.clip(X @ rng.normal(size=(4, G)), -2, 2)).T  # (G, n) bounded tilts
    S[0] = 1.0  # the uniform rule
    S[1] = (X[:, 0] > 1.2).astype(float)  # a narrow indicator: starves some resamples
    counts = bootstrap_counts(n, B, rng).astype(float)
    plan = ComparisonPlan(SYSTEMS, candidates=("PV", "Gate"), selection="soft", n_splits=n_splits)
    ids = np.array([f"c{i:03d}" for i in range(n)])
    masks = plan.split_masks(ids)
    Z = rng.random((n, 3))
    H1 = plan.tensor(Z, np.ones(n), masks)
    mu = counts @ H1 / n
    c = plan.contrast_vector({"selected": 1.0, "ReAct": -1.0})
    delta = plan.values(mu) @ c
    grad = plan.gradient(mu, c)
    psi = H1 @ grad.T - np.sum(mu * grad, axis=1)
    return plan, S, counts, delta, psi, X, masks


@pytest.mark.parametrize("geometry", ["kms", "mmd", "max_sliced", "none", "user"])
@pytest.mark.parametrize("n_splits", [0, 3])
def test_batched_resamples_select_what_the_loop_selected(geometry, n_splits, monkeypatch):
    plan, S, counts, delta, psi, X, masks = _case(7 + n_splits, n_splits=n_splits)
    geom = (_UserGeometry(KMS(n_witness=8, n_features=32, seed=1)) if geometry == "user"
            else make_geometry(geometry)).fit(X)
    W = S / S.sum(axis=1, keepdims=True)
    radius = float(np.quantile(geom.distance(X, np.full(len(X), 1 / len(X)), W), 0.4)) if geometry != "none" else 0.0
    slot = Slot("s", {"selected": 1, "ReAct": -1}, sign=-1, family="f", radius=radius, geometry="kms",
                density_cap=4.0, min_ess=25.0, min_split_share=0.2 if n_splits else 0.0)
    want = _loop_reference(plan, S, counts, delta, psi, slot, geom, X, masks)
    assert (want >= 0).any() and len(set(want.tolist())) > 1  # the check selects several rules
    for block in (1, 7, 1 << 21):  # one resample per block, uneven blocks, all at once
        monkeypatch.setattr(_resample, "BLOCK_VALUES", block * S.size)
        got = resample_selections(plan, S, counts, delta, psi, slot, geom, X, masks)
        assert np.array_equal(got, want)


def test_no_radius_and_no_feasible_candidate():
    plan, S, counts, delta, psi, X, masks = _case(3)
    open_slot = Slot("s", {"selected": 1, "ReAct": -1}, family="f", radius=None, geometry="none", min_ess=5.0)
    want = _loop_reference(plan, S, counts, delta, psi, open_slot, None, X, masks)
    assert np.array_equal(resample_selections(plan, S, counts, delta, psi, open_slot, None, X, masks), want)
    strict = Slot("s", {"selected": 1, "ReAct": -1}, family="f", radius=None, geometry="none", min_ess=1e6)
    assert np.array_equal(resample_selections(plan, S, counts, delta, psi, strict, None, X, masks),
                          np.full(len(counts), -1))


def test_mmd_and_sliced_take_one_reference_row_per_weighting():
    """The batched screen passes U (rows, n): the same distances as a 1-D reference per row."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 3))
    W = rng.random((4, 30))
    W /= W.sum(axis=1, keepdims=True)
    U = rng.random((4, 30))
    U /= U.sum(axis=1, keepdims=True)
    for geom in (KMS(n_witness=6, n_features=16), MMD(), MaxSliced(n_witness=4)):
        geom.fit(X)
        rows = geom.distance(X, U, W)
        one = np.array([geom.distance(X, U[i], W[i:i + 1])[0] for i in range(4)])
        assert np.allclose(rows, one, rtol=1e-13, atol=0)


@pytest.mark.parametrize("tie_rule", ["registry_order", "max_ess", "min_distance"])
def test_select_rows_equals_select_row_by_row(tie_rule):
    """Ties (equal loc values), NaN and infinite loc, rows without a feasible candidate."""
    from agentstudies.sasst._resample import _select_rows

    rng = np.random.default_rng(11)
    loc = rng.integers(0, 4, size=(200, 9)).astype(float)  # many exact ties
    loc[rng.random(loc.shape) < 0.1] = np.nan
    loc[rng.random(loc.shape) < 0.05] = np.inf
    feas = rng.random(loc.shape) < 0.6
    feas[:10] = False
    ess = rng.integers(0, 3, size=loc.shape).astype(float)  # ties in the tie break too
    dist = rng.integers(0, 3, size=loc.shape).astype(float)
    dist[rng.random(loc.shape) < 0.05] = np.inf
    want = [_select(loc[i], feas[i], ess[i], dist[i], tie_rule, 0.5) for i in range(len(loc))]
    assert np.array_equal(_select_rows(loc, feas, ess, dist, tie_rule, 0.5), want)
    assert (np.array(want) == -1).sum() >= 10
