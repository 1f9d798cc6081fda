"""Speed work on the SASST real-feature and geometry studies changes no number.

Each shortcut is checked bit for bit (``tobytes`` equality, not a tolerance) against the
literal computation it replaces, written out here: the neighbourhood means of
:class:`~agentstudies.studies.sasst.real_features.NeighbourhoodDirectionFamily` (one running
sum read at every size) against ``X[order[i, :m]].mean(axis=0)`` per item and size, and the
family's rules (directions, centres, spreads, labels) against the per-item loop with
``np.linalg.norm`` and each projection's own ``mean`` / ``std``.
"""

import numpy as np
import pytest

from agentstudies.studies.sasst import real_features as rf


def _bits(a):
    return np.ascontiguousarray(a, dtype=float).tobytes()


def _direct_rules(fam, X):
    """The family's rules computed item by item, as the fit read before the shortcut."""
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
            norm = float(np.linalg.norm(beta))
            if norm == 0.0:
                continue
            beta = beta / norm
            proj = X @ beta
            for lam in fam.strengths:
                out.append((_bits(beta), float(proj.mean()), float(proj.std()) or 1.0, lam,
                            f"linear tilt toward the {m} discovery neighbours of item {i}"))
    return out


@pytest.mark.parametrize("n, d, neighbours", [(90, 24, (5, 20, 40)), (60, 7, (1, 8, 200)), (50, 2, (3, 9))])
def test_neighbourhood_rules_equal_the_per_item_loop(n, d, neighbours):
    rng = np.random.default_rng(n + d)
    base = rng.normal(size=(n, d))
    X = base[np.sort(rng.integers(0, n, n))]  # a bootstrap resample: repeated rows, tied distances
    fam = rf.NeighbourhoodDirectionFamily(neighbours=neighbours, strengths=(0.5, 1.0))
    rules = fam.fit(X, [f"e{j}" for j in range(d)])
    got = [(_bits(r.direction), r.center, r.spread, r.strength, r.label) for r in rules]
    assert got == _direct_rules(fam, X)


@pytest.mark.parametrize("d", [1, 3, 40])
def test_neighbourhood_means_equal_each_blocks_mean(d):
    rng = np.random.default_rng(d)
    X = rng.normal(size=(70, d)) * 10.0 ** rng.integers(-3, 4, size=(70, 1))  # rows of very different scales
    order = np.argsort(rng.random((70, 70)), axis=1)
    idx = np.arange(0, 70, 3)
    got = rf._neighbourhood_means(X, order, idx, [1, 2, 9, 33, 70])
    for m, rows in got.items():
        assert rows.shape == (len(idx), d)
        for r, i in enumerate(idx):
            assert _bits(rows[r]) == _bits(X[order[i, :m]].mean(axis=0)), (m, i)


def test_neighbourhood_family_still_rejects_bad_settings():
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match="neighbours"):
        rf.NeighbourhoodDirectionFamily(neighbours=(0, 3)).fit(X, ["a", "b", "c"])
    with pytest.raises(ValueError, match="columns were named"):
        rf.NeighbourhoodDirectionFamily().fit(X, ["a", "b"])


def test_normal_density_and_tail_equal_scipy_stats_bit_for_bit():
    from scipy import stats

    from agentstudies.studies.sasst import geometry as gs

    xs = np.r_[np.random.default_rng(1).standard_exponential(500) * 4, 7.077441848341808, 0.0, 1e-300, 40.0, np.inf]
    with np.errstate(all="ignore"):
        for x in map(float, np.r_[xs, -xs]):
            assert _bits(gs._norm_pdf(x)) == _bits(stats.norm.pdf(x)), x
            assert _bits(gs._norm_sf(x)) == _bits(stats.norm.sf(x)), x


def test_xor_threshold_equals_the_scipy_stats_integral():
    from scipy import integrate, optimize, stats

    from agentstudies.studies.sasst import geometry as gs

    def tail(c):
        return 2.0 * integrate.quad(lambda x: stats.norm.sf(c / x) * stats.norm.pdf(x), 0, np.inf, limit=200)[0]

    ref = float(optimize.brentq(lambda c: tail(c) - 0.25, 1e-9, 10.0, xtol=1e-12))
    assert gs.xor_threshold(0.25) == ref
    # and it is the quantity it claims: P(x1 x2 < -c) = 1/4 for independent standard normals
    z = np.random.default_rng(2).standard_normal((2, 400_000))
    assert abs(np.mean(z[0] * z[1] < -ref) - 0.25) < 0.003


def test_bump_family_kmeans_runs_on_one_openmp_thread_whatever_the_caller():
    from threadpoolctl import ThreadpoolController, threadpool_info

    from agentstudies.sasst import _rules
    from agentstudies.sasst.rules import BumpFamily

    X = np.random.default_rng(3).normal(size=(600, 5))  # three of k-means' 256-row chunks
    cols = [f"c{j}" for j in range(5)]
    BumpFamily(n_centers=12, seed=3).fit(X[:10], cols)  # loads sklearn's OpenMP runtime

    def omp_threads():  # scikit-learn's own OpenMP runtime (torch, if loaded, brings another)
        return [i["num_threads"] for i in threadpool_info()
                if i["user_api"] == "openmp" and "scikit_learn" in i["filepath"]]

    outside = omp_threads()
    for n_rows in (256, 257, 100_000):
        with _rules._one_openmp_thread(n_rows):
            assert omp_threads() and all(t == 1 for t in omp_threads())
        assert omp_threads() == outside  # restored
    # the centres (hence the bumps) equal a plain fit on one OpenMP thread, bit for bit,
    # whatever thread count the caller runs with
    from sklearn.cluster import KMeans

    from agentstudies.sasst.geometry import Standardizer

    Xs = Standardizer.fit(X)(X)
    with ThreadpoolController().limit(limits=1, user_api="openmp"):
        ref = KMeans(n_clusters=12, n_init=4, random_state=3).fit(Xs).cluster_centers_
    for threads in (1, 2, 4):
        with ThreadpoolController().limit(limits=threads, user_api="openmp"):
            fitted = BumpFamily(n_centers=12, seed=3).fit(X, cols)
        assert [_bits(r.center) for r in fitted] == [_bits(c) for c in ref]
