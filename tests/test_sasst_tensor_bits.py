"""The plan tensor H is built by gathering each cluster's two possible split blocks
(:meth:`ComparisonPlan.tensor`); its bytes must equal the literal definition
``H[k, block(r, side, c)] = Z[k, c] * (s[k] * 1{k on that side of split r})`` element by
element, signed zeros, NaN and infinities included (the paper tables depend on every bit).
"""
import numpy as np
import pytest

from agentstudies.sasst import ComparisonPlan


def _literal_tensor(plan: ComparisonPlan, Z: np.ndarray, s: np.ndarray, masks: np.ndarray) -> np.ndarray:
    n, J = Z.shape
    C, R = len(plan.candidates), plan.n_splits
    cand = [plan.systems.index(c) for c in plan.candidates]
    H = np.zeros((n, J + 1 + 2 * R * (C + 1)))
    for k in range(n):
        for j in range(J):
            H[k, j] = Z[k, j] * s[k]
        H[k, J] = s[k]
        for r in range(R):
            for side, inside in enumerate((masks[r, k], not masks[r, k])):
                w = s[k] * float(inside)
                o = J + 1 + r * (2 * C + 2) + side * (C + 1)
                for a, j in enumerate(cand):
                    H[k, o + a] = Z[k, j] * w
                H[k, o + C] = w
    return H


@pytest.mark.parametrize("seed", range(6))
def test_tensor_bytes_equal_the_literal_definition(seed):
    rng = np.random.default_rng(seed)
    n, J, R = int(rng.integers(3, 40)), int(rng.integers(2, 6)), int(rng.integers(1, 7))
    systems = tuple(f"w{j}" for j in range(J))
    cands = tuple(rng.permutation(systems)[: int(rng.integers(1, J + 1))])
    plan = ComparisonPlan(systems, candidates=cands, selection="soft", n_splits=R, split_seed=seed)
    Z = rng.standard_normal((n, J))
    s = rng.standard_normal(n)  # negative scores give signed zeros off the split side
    s[rng.random(n) < 0.2] = 0.0
    if seed % 2:
        s[0], Z[1, 0] = np.inf, np.nan  # inf * 0 and NaN propagate as in the definition
    masks = plan.split_masks([f"k{i}" for i in range(n)])
    with np.errstate(invalid="ignore"):
        H, want = plan.tensor(Z, s, masks), _literal_tensor(plan, Z, s, masks)
    assert H.shape == want.shape
    assert H.tobytes() == want.tobytes()
    # a signed zero really occurs off-side for a negative score (the check is not vacuous)
    assert np.signbit(H[H == 0]).any()
