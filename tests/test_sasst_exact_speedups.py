"""Speed work on SASST rule scoring and refits changes no number.

Each shortcut is checked against the computation it replaces, bit for bit (``tobytes``
equality, not a tolerance): the batched tilt scores of :func:`score_matrix` against every
rule's own ``score``; a family fit reused by ``CompositeFamily`` against a fresh fit; the
shared neighbourhood directions of a resample with repeated items against the direct
per-item loop; the feature-map geometry's reused map against a fresh geometry.
"""

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from agentstudies.sasst.geometry import KMS, median_bandwidth
from agentstudies.sasst.rules import (
    AxisTiltFamily,
    BumpFamily,
    CompositeFamily,
    DirectionTiltFamily,
    ProjectionTiltRule,
    QuadraticTiltFamily,
    ThresholdFamily,
    score_matrix,
    weight_correlation,
)
from agentstudies.studies.sasst import geometry_audit as ga
from agentstudies.studies.sasst import real_features as rf


def _bits(a):
    return np.ascontiguousarray(a, dtype=float).tobytes()


def _registry(seed):
    return CompositeFamily((AxisTiltFamily(strengths=(0.5, 0.75, 1.0)),
                            DirectionTiltFamily(n_directions=3, seed=seed),
                            DirectionTiltFamily(n_directions=2, kernel=True, n_features=8, seed=seed),
                            ThresholdFamily(), QuadraticTiltFamily(), BumpFamily(n_centers=3, seed=seed)))


class _Doubled(ProjectionTiltRule):
    """A subclass overriding score: score_matrix must call it, not the built-in shortcut."""

    def score(self, X):
        return 2.0 * super().score(X)


@pytest.mark.parametrize("n,d", [(7, 2), (50, 4), (203, 11)])
def test_score_matrix_rows_are_each_rules_own_scores_bit_for_bit(n, d):
    rng = np.random.default_rng(n + d)
    names = [f"c{j}" for j in range(d)]
    X = rng.normal(size=(n, d)) * 3.0
    X[:, 1] = np.resize([-1.0, 0.0, 1.0], n)  # mean 0: standardized values exactly 0
    X[n - n % 3:, 1] = 0.0
    rules = _registry(d).fit(X[rng.integers(0, n, n)], names)
    rules.append(_Doubled(columns=tuple(names), standardizer=rules[0].standardizer,
                          direction=np.eye(d)[0], strength=0.5))
    for Y in (X, rng.normal(size=(n, d))):
        # score_matrix hands a rule over every column the matrix itself (C order), a subset as a gather
        want = np.vstack([r.score(Y if list(r.columns) == names else Y[:, [names.index(c) for c in r.columns]])
                          for r in rules])
        got = score_matrix(rules, Y, names)
        assert got.tobytes() == want.tobytes()
    assert np.array_equal(got[-1], 2.0 * rules[-1].score_standardized(rules[-1].standardizer(Y)))


def test_axis_shortcut_equals_the_matrix_product_and_falls_back_on_non_finite_features():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    names = ["a", "b", "c"]
    rules = AxisTiltFamily(strengths=(1.0,)).fit(X, names)
    got = score_matrix(rules, X, names)
    z = rules[0].standardizer(X)
    for g, r in enumerate(rules):  # exp(lam * clip(z @ e, -c, c)): the product of the rule itself
        assert _bits(got[g]) == _bits(np.exp(r.strength * np.clip(z @ r.direction, -r.clip, r.clip)))
    X[4, 2] = np.inf  # 0 * inf is NaN in the product: every rule's score is NaN there, as before
    # the fallback matrix product meets 0 * inf on purpose: numpy's "invalid value" warning is expected
    with np.errstate(invalid="ignore"), pytest.raises(ValueError, match="high a"):
        score_matrix(rules, X, names)


def test_composite_reuses_a_fit_on_identical_features_only():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 4))
    names = ["w", "x", "y", "z"]
    first = _registry(1).fit(X, names)
    again = _registry(1).fit(X.copy(), names)  # an equal registry, equal bytes: the same rules
    assert len(first) == len(again) and all(a is b for a, b in zip(first, again))
    Y = X.copy()
    Y[-1, -1] = np.nextafter(Y[-1, -1], np.inf)  # one bit in the last row: a fresh fit
    other = _registry(1).fit(Y, names)
    assert not any(a is b for a, b in zip(first, other))
    fresh = [f.fit(Y, names) for f in _registry(1).families]  # members fitted directly, no memo
    fresh = [r for rules in fresh for r in rules]
    assert [r.to_json() for r in other] == [r.to_json() for r in fresh]
    # another registry: its equal member (the axis tilts) is reused, the reseeded directions are refitted
    shared = [a is b for a, b in zip(_registry(2).fit(X, names), first)]
    n_axis = len(AxisTiltFamily(strengths=(0.5, 0.75, 1.0)).fit(X, names))
    assert all(shared[:n_axis]) and not any(shared[n_axis:n_axis + 12])


def test_subclassed_family_is_refitted_every_time():
    class Counting(AxisTiltFamily):
        calls = 0

        def fit(self, X, columns):
            Counting.calls += 1
            return super().fit(X, columns)

    X = np.random.default_rng(6).normal(size=(30, 2))
    fam = CompositeFamily((Counting(),))
    fam.fit(X, ["a", "b"])
    fam.fit(X, ["a", "b"])
    assert Counting.calls == 2


def _neighbourhood_rules_direct(fam, X):
    """The per-item loop of NeighbourhoodDirectionFamily.fit, every item computed on its own."""
    n, d = X.shape
    mean = X.mean(axis=0)
    cov = np.atleast_2d(np.cov(X, rowvar=False))
    inv = np.linalg.pinv(cov + fam.shrinkage * float(np.trace(cov)) / d * np.eye(d), hermitian=True)
    sq = np.sum(X * X, axis=1)
    order = np.argsort(np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0), axis=1, kind="stable")
    out = []
    for i in range(n):
        for m in fam.neighbours:
            beta = inv @ (X[order[i, : min(m, n)]].mean(axis=0) - mean)
            beta = beta / float(np.linalg.norm(beta))
            proj = X @ beta
            out.append((_bits(beta), float(proj.mean()), float(proj.std()) or 1.0,
                        f"linear tilt toward the {m} discovery neighbours of item {i}"))
    return out


def test_neighbourhood_directions_of_repeated_items_equal_the_direct_loop():
    rng = np.random.default_rng(8)
    base = rng.normal(size=(40, 6))
    X = base[np.sort(rng.integers(0, 40, 40))]  # a bootstrap resample: repeated rows
    fam = rf.NeighbourhoodDirectionFamily(neighbours=(3, 9))
    rules = fam.fit(X, [f"e{j}" for j in range(6)])
    got = [(_bits(r.direction), r.center, r.spread, r.label) for r in rules]
    assert got == _neighbourhood_rules_direct(fam, X)
    assert len({id(r.direction) for r in rules}) < len(rules)  # repeated items share one direction


def test_feature_map_geometry_reuses_its_map_with_the_same_distances():
    rng = np.random.default_rng(9)
    X = np.column_stack([rng.normal(size=(50, 3)), rng.normal(size=(50, 5))])
    kw = dict(mode="pca_structured", embedding_idx=tuple(range(3, 8)), structured_idx=(0, 1, 2), n_pca=2)
    W = rng.dirichlet(np.ones(50), size=6)
    u = np.full(50, 1 / 50)
    geom = ga.FeatureMapGeometry(**kw).fit(X)
    first = geom.distance(X, u, W[:2])
    second = geom.distance(X, u, W[2:])
    fresh = ga.FeatureMapGeometry(**kw).fit(X)
    assert _bits(np.r_[first, second]) == _bits(np.r_[fresh.distance(X, u, W[:2]), fresh.distance(X.copy(), u, W[2:])])
    inner = KMS(standardize=False, n_features=128, n_witness=64, seed=0).fit(geom.features(X))
    assert _bits(second) == _bits(inner.distance(geom.features(X), u, W[2:]))


def test_weight_correlation_is_the_pearson_formula_bit_for_bit():
    rng = np.random.default_rng(11)
    a = rng.random(30)
    B = rng.random((4, 30))
    B[1] = 2.0  # a constant function: correlation 0 with a non-constant one
    ac, bc = a - a.mean(), B - B.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = (bc @ ac) / (np.sqrt(np.sum(ac * ac)) * np.sqrt(np.sum(bc * bc, axis=1)))
    want[1] = 0.0
    assert _bits(weight_correlation(a, B)) == _bits(want)
    b2 = B[2:3] - B[2:3].mean(axis=1, keepdims=True)  # one row: its own (1, n) product, as the engine asks
    assert weight_correlation(a, B[2]) == float(((b2 @ ac) / (np.sqrt(np.sum(ac * ac)) * np.sqrt(np.sum(b2 * b2, axis=1))))[0])
    assert weight_correlation(np.ones(5), np.full((1, 5), 3.0))[0] == 1.0
    assert np.isclose(weight_correlation(a, B[3]), np.corrcoef(a, B[3])[0, 1], rtol=1e-12)


def test_median_bandwidth_reuses_an_answer_only_for_identical_features():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(40, 3))
    direct = float(np.median(pdist(X)))
    assert median_bandwidth(X) == direct and median_bandwidth(X.copy()) == direct
    Y = X.copy()
    Y[0, 0] = np.nextafter(Y[0, 0], np.inf)
    assert median_bandwidth(Y) == float(np.median(pdist(Y)))
    assert median_bandwidth(X[:, :2]) == float(np.median(pdist(X[:, :2])))
    assert median_bandwidth(X, max_points=10) == float(np.median(pdist(X[np.linspace(0, 39, 10).astype(int)])))
