"""SharedWork: engine runs of one trial reuse scores and tensors, with the same bits.

Table 4 runs R = 5 and R = 20 engines on the same clusters (most splits first, so R = 5
takes the first columns of the R = 20 tensors); Table 5 confirms two procedures on the same
clusters. Every record must equal, byte for byte, what the runs give without sharing, and
the sharing must actually happen (the counters), or the test would pass vacuously.
"""
import pickle

import numpy as np
import pytest

from agentstudies.sasst import SASST, ComparisonPlan, Slot
from agentstudies.sasst import SharedWork
from agentstudies.studies.sasst import calibration as C
from agentstudies.studies.sasst._common import confirm_lean


def _runs(design, M, seed, Rs, shared):
    rng = np.random.default_rng(seed)
    data = design.simulate(M, rng)
    D, I = data.subset(np.arange(M) < M // 2), data.subset(np.arange(M) >= M // 2)
    reg = design.registry()
    fams = {"registry": C.FixedFamily(reg), "oracle": C.FixedFamily((reg[3],))}
    slots = [C._stress_slot("fixed", "oracle"), C._stress_slot("learned", "registry"),
             Slot("uniform", dict(C.CONTRAST), sign=1)]
    out = {}
    for R in Rs:
        eng = SASST(design.plan(R), slots, fams, inference="pointwise", n_stability=0, seed=7)
        disc = eng.discover(D, candidate_tables=False, shared=shared)
        rep = confirm_lean(eng, disc, I, shared)
        rows = {k: {f: v for f, v in r.items() if f != "runtime_s"} for k, r in rep.rows.items()}  # wall clock
        out[R] = pickle.dumps((rows, rep.phi, rep.phi_slots, {k: (r.index, r.predicted) for k, r in disc.rules.items()}))
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_shared_runs_equal_unshared_runs_byte_for_byte(seed):
    design = C.StudyADesign()
    want = _runs(design, 400, seed, (20, 5, 3), None)
    shared = SharedWork()
    got = _runs(design, 400, seed, (20, 5, 3), shared)
    assert got == want
    # reused: the registry and oracle score matrices, rule scores and tensors of R = 5 and 3
    assert shared.reused >= 8 and shared.computed >= 4


def test_table4_trial_is_unchanged_by_sharing(monkeypatch):
    design = C.StudyADesign()
    seeds = np.random.SeedSequence(5).spawn(3)
    got = [C.table4_trial(0, np.random.default_rng(s), M=300, design=design, oracle=3) for s in seeds]

    class NoSharing(SharedWork):  # every lookup computes afresh
        def _get(self, key, held, compute):
            return compute()

        def tensor(self, plan, Z, s, masks):
            H = plan.tensor(Z, s, masks)
            return H, H.mean(axis=0)

    monkeypatch.setattr(C, "SharedWork", NoSharing)
    want = [C.table4_trial(0, np.random.default_rng(s), M=300, design=design, oracle=3) for s in seeds]
    assert pickle.dumps(got) == pickle.dumps(want)


def test_tensor_prefix_is_reused_only_for_the_same_split_masks():
    rng = np.random.default_rng(0)
    Z, s = rng.random((30, 3)), rng.random(30)
    ids = [f"k{i}" for i in range(30)]
    big = ComparisonPlan(("a", "b", "c"), candidates=("b", "c"), selection="soft", n_splits=6)
    small = ComparisonPlan(("a", "b", "c"), candidates=("b", "c"), selection="soft", n_splits=2)
    shared = SharedWork()
    H6, _ = shared.tensor(big, Z, s, big.split_masks(ids))
    H2, mu2 = shared.tensor(small, Z, s, small.split_masks(ids))
    assert shared.reused == 1
    ref = small.tensor(Z, s, small.split_masks(ids))
    assert H2.tobytes() == ref.tobytes() and mu2.tobytes() == ref.mean(axis=0).tobytes()
    assert not H2.flags.writeable and not H6.flags.writeable
    other = ~small.split_masks(ids)  # different split membership: computed afresh, not sliced
    H2b, _ = shared.tensor(small, Z, s, other)
    assert shared.reused == 1
    assert H2b.tobytes() == small.tensor(Z, s, other).tobytes()
