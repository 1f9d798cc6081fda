"""Radius geometries: distance between the uniform and a reweighted feature distribution.

SASST (Xu et al., 2026) Section 2 and Appendix C.2 bound how far a rule may move the task
distribution: ``d(P_D, P_D^g) <= rho``. Both distributions live on the same discovery
points, uniform weights ``u`` against rule weights ``w``. Three geometries:

* **KMS** (default): the finite-witness kernel max-sliced Wasserstein distance
  ``max_{beta in B_L} W1((beta^T z)# P_D, (beta^T z)# P_D^g)`` with a frozen nonlinear feature
  map ``z`` (random Fourier features of standardized features, RBF bandwidth by the
  median heuristic unless given) and ``L`` random unit witness directions (Wang,
  Boedihardjo and Xie, 2025).
* **max-sliced** (linear): the same with ``z`` = standardized features and witness set =
  the coordinate axes plus ``L`` random unit directions.
* **MMD**: ``sqrt((w - u)^T K (w - u))`` with an RBF kernel (Gretton et al., 2012).

Every fitted geometry is frozen on discovery features (standardization, bandwidth,
random features and witnesses are serializable) and can project new points, so the same
geometry is reported on confirmation tasks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial.distance import pdist

__all__ = [
    "Standardizer",
    "weighted_w1_same_support",
    "median_bandwidth",
    "rbf_similarity_median",
    "Geometry",
    "KMS",
    "MaxSliced",
    "MMD",
    "NoRadius",
    "make_geometry",
]


@dataclass(frozen=True)
class Standardizer:
    """Columnwise ``(x - mean) / scale`` frozen on discovery features (scale>0)."""

    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray) -> "Standardizer":
        X = np.asarray(X, dtype=float)
        sd = X.std(axis=0)
        return cls(mean=X.mean(axis=0), scale=np.where(sd > 1e-12, sd, 1.0))

    def __call__(self, X: np.ndarray) -> np.ndarray:
        if self.is_identity:  # (x - 0) / 1 == x exactly: skip the copy
            return np.asarray(X, dtype=float)
        return (np.asarray(X, dtype=float) - self.mean) / self.scale

    @property
    def is_identity(self) -> bool:
        return not np.any(self.mean) and bool(np.all(self.scale == 1.0))

    def to_dict(self) -> dict:
        return {"mean": self.mean.tolist(), "scale": self.scale.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> "Standardizer":
        return cls(mean=np.asarray(d["mean"], float), scale=np.asarray(d["scale"], float))


def weighted_w1_same_support(proj: np.ndarray, u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """1-Wasserstein distances between two weightings of the same projected points.

    ``W1 = integral |F_u(t) - F_w(t)| dt`` computed from the sorted projections.

    Parameters
    ----------
    proj : array (L, n)
        Projections of ``n`` points on ``L`` witness directions.
    u : array (n,) or (G, n)
        Reference weights (rows sum to one).
    w : array (G, n)
        Candidate weights (rows sum to one).

    Returns
    -------
    array (G, L) of distances (same units as the projections).
    """
    return _w1_sorted(*sorted_support(proj), u, w)


def sorted_support(proj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, gaps)`` of projections (L, n): the stable sort order of each row (L, n)
    and the gaps between consecutive sorted points (L, n - 1). They depend on the points
    only, so one geometry reuses them for every weighting of the same points."""
    proj = np.atleast_2d(np.asarray(proj, dtype=float))
    order = np.argsort(proj, axis=1, kind="stable")
    gaps = np.diff(np.take_along_axis(proj, order, axis=1), axis=1)
    return order, gaps


def _cumsum_axis1(D: np.ndarray) -> np.ndarray:
    """``np.cumsum(D, axis=1, out=D)`` for a C-contiguous (L, n, g) array, bit for bit.

    NumPy accumulates along a middle axis element by element with a stride of ``g``;
    adding each (L, g) slab to the next is the same sequence of additions (so the same
    values), and faster once a slab holds ``L * g >= 2048`` values (measured: 1.2x at
    (64, 500, 32), 2.2x at (64, 1000, 64); slower below, where the per-slab call costs
    more than it saves, e.g. a radius screen's few rows).
    """
    L, n, g = D.shape
    if L * g < 2048 or n < 100:
        return np.cumsum(D, axis=1, out=D)
    for i in range(1, n):
        np.add(D[:, i], D[:, i - 1], out=D[:, i])
    return D


def _w1_sorted(order: np.ndarray, gaps: np.ndarray, u: np.ndarray, w: np.ndarray,
               max_block: int = 1 << 22) -> np.ndarray:
    """:func:`weighted_w1_same_support` from :func:`sorted_support`'s ``(order, gaps)``: (G, L).

    All witnesses at once: the weight differences gathered in each witness's order
    (L, n, G), their running sums (the CDF gaps ``F_w - F_u`` at the sorted points), and
    one batched product with the gaps; at most ``max_block`` values per block of rows.
    """
    w = np.atleast_2d(np.asarray(w, dtype=float))
    d = np.ascontiguousarray((w - np.asarray(u, dtype=float)).T)  # (n, G)
    L, n = order.shape
    G = d.shape[1]
    out = np.empty((G, L))
    flat = order.ravel()
    step = max(1, max_block // max(1, L * n))
    for a in range(0, G, step):
        # the same gather as d[:, a:a + step][order], by flat row index (``take``): several
        # times faster for the few rows a radius screen asks for, the same values
        D = (d if step >= G else d[:, a:a + step]).take(flat, axis=0).reshape(L, n, -1)  # (L, n, g)
        _cumsum_axis1(D)
        np.abs(D, out=D)
        out[a:a + step] = np.matmul(gaps[:, None, :], D[:, :-1])[:, 0, :].T
    return out


#: The last two :func:`median_bandwidth` answers: ((features as uint64, max_points), value).
_MEDIANS: tuple = ()


def median_bandwidth(Xs: np.ndarray, max_points: int = 2000) -> float:
    """Median pairwise Euclidean distance (the median heuristic), on at most ``max_points``.

    The answer for byte-identical features is reused (the last two are kept): a registry's
    kernel tilts, its bumps and the KMS geometry each take it on the same standardized
    discovery features, and each refit on a stability resample asks twice.
    """
    global _MEDIANS
    Xs = np.asarray(Xs, dtype=float)
    bits = np.array(Xs, order="C").view(np.uint64)
    for (old, mp), value in _MEDIANS:
        if mp == max_points and old.shape == bits.shape and np.array_equal(old, bits):
            return value
    value = _median_distance(Xs, max_points)
    _MEDIANS = (((bits, max_points), value),) + _MEDIANS[:1]
    return value


def _median_distance(Xs: np.ndarray, max_points: int) -> float:
    if Xs.shape[0] > max_points:
        Xs = Xs[np.linspace(0, Xs.shape[0] - 1, max_points).astype(int)]
    d = pdist(Xs)
    med = float(np.median(d)) if d.size else 1.0
    return med if med > 1e-12 else 1.0


def rbf_similarity_median(Xs: np.ndarray, bandwidth: float) -> float:
    """Median RBF similarity ``exp(-||x_i - x_j||^2 / (2 h^2))`` over pairs.

    The bandwidth diagnostic of SASST Appendix D.4: a unit bandwidth in a standardized
    high-dimensional space makes most task embeddings nearly orthogonal (paper: median
    similarity ~4e-177), so a kernel radius loses meaning.
    """
    d = pdist(np.asarray(Xs, dtype=float), "sqeuclidean")
    return float(np.median(np.exp(-d / (2.0 * bandwidth**2)))) if d.size else 1.0


class Geometry:
    """Base class. ``fit(X_D)`` freezes it; ``distance(X, u, W)`` returns (G,)."""

    name = "geometry"

    def fit(self, X: np.ndarray) -> "Geometry":  # pragma: no cover - interface
        raise NotImplementedError

    def distance(self, X: np.ndarray, u: np.ndarray, W: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - interface

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass
class _Sliced(Geometry):
    n_witness: int = 64
    seed: int = 0
    standardizer: Standardizer | None = field(default=None, repr=False)
    witnesses: np.ndarray | None = field(default=None, repr=False)
    _cache: tuple | None = field(default=None, repr=False)

    def _features(self, Xs: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def projections(self, X: np.ndarray) -> np.ndarray:
        """Projections (L, n) of raw features on the frozen witness directions."""
        if self.standardizer is None:
            raise RuntimeError(f"{self.name} geometry used before fit()")
        return self._projected(X)[0]

    def _projected(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Projections of ``X`` and their :func:`sorted_support`, cached for the last ``X``."""
        if self._cache is not None and self._cache[0] is X:  # the array itself is held, so `is` is safe
            return self._cache[1]
        P = self.witnesses @ self._features(self.standardizer(X)).T
        self._cache = (X, (P, *sorted_support(P)))
        return self._cache[1]

    def distance(self, X: np.ndarray, u: np.ndarray, W: np.ndarray) -> np.ndarray:
        """Max over witnesses of W1 between weights ``u`` and each row of ``W`` (G,)."""
        _, order, gaps = self._projected(X)
        return _w1_sorted(order, gaps, u, W).max(axis=1)


@dataclass
class KMS(_Sliced):
    """Finite-witness kernel max-sliced Wasserstein distance (random Fourier features).

    Parameters
    ----------
    n_features : int, random Fourier features ``D`` of the RBF kernel
    n_witness : int, ``L`` unit witness directions in feature space
    bandwidth : float or "median" (median heuristic on standardized discovery features)
    seed : int
    standardize : bool
        Standardize each column on discovery features first (default). ``False`` keeps a
        scaling the caller chose (for example L2-normalized embeddings beside
        standardized structured features): the frozen standardizer is then the identity.
    """

    name = "kms"
    n_features: int = 128
    bandwidth: float | str = "median"
    standardize: bool = True
    omega: np.ndarray | None = field(default=None, repr=False)
    phase: np.ndarray | None = field(default=None, repr=False)
    bandwidth_: float | None = None

    def fit(self, X: np.ndarray) -> "KMS":
        rng = np.random.default_rng(self.seed)
        X = np.asarray(X, dtype=float)
        if self.standardize:
            self.standardizer = Standardizer.fit(X)
        else:
            self.standardizer = Standardizer(mean=np.zeros(X.shape[1]), scale=np.ones(X.shape[1]))
        Xs = self.standardizer(X)
        h = median_bandwidth(Xs) if self.bandwidth == "median" else float(self.bandwidth)
        self.bandwidth_ = h
        d = Xs.shape[1]
        self.omega = rng.standard_normal((d, self.n_features)) / h
        self.phase = rng.uniform(0, 2 * np.pi, self.n_features)
        B = rng.standard_normal((self.n_witness, self.n_features))
        self.witnesses = B / np.linalg.norm(B, axis=1, keepdims=True)
        self._cache = None
        return self

    def _features(self, Xs: np.ndarray) -> np.ndarray:
        return np.sqrt(2.0 / self.n_features) * np.cos(Xs @ self.omega + self.phase)

    def to_dict(self) -> dict[str, Any]:
        return {"geometry": "kms", "n_features": self.n_features, "n_witness": self.n_witness,
                "bandwidth": self.bandwidth_, "seed": self.seed, "standardize": self.standardize}


@dataclass
class MaxSliced(_Sliced):
    """Linear max-sliced Wasserstein: coordinate axes plus ``n_witness`` random directions."""

    name = "max_sliced"

    def fit(self, X: np.ndarray) -> "MaxSliced":
        rng = np.random.default_rng(self.seed)
        self.standardizer = Standardizer.fit(X)
        d = np.asarray(X).shape[1]
        B = rng.standard_normal((self.n_witness, d))
        B /= np.linalg.norm(B, axis=1, keepdims=True)
        self.witnesses = np.vstack([np.eye(d), B])
        self._cache = None
        return self

    def _features(self, Xs: np.ndarray) -> np.ndarray:
        return Xs

    def to_dict(self) -> dict[str, Any]:
        return {"geometry": "max_sliced", "n_witness": self.n_witness, "seed": self.seed}


@dataclass
class MMD(Geometry):
    """Maximum mean discrepancy with an RBF kernel on standardized features."""

    name = "mmd"
    bandwidth: float | str = "median"
    standardizer: Standardizer | None = field(default=None, repr=False)
    bandwidth_: float | None = None
    _cache: tuple | None = field(default=None, repr=False)

    def fit(self, X: np.ndarray) -> "MMD":
        self.standardizer = Standardizer.fit(X)
        Xs = self.standardizer(X)
        self.bandwidth_ = median_bandwidth(Xs) if self.bandwidth == "median" else float(self.bandwidth)
        self._cache = None
        return self

    def kernel(self, X: np.ndarray) -> np.ndarray:
        if self.standardizer is None:
            raise RuntimeError("mmd geometry used before fit()")
        if self._cache is not None and self._cache[0] is X:
            return self._cache[1]
        Xs = self.standardizer(X)
        sq = np.sum(Xs * Xs, axis=1)
        d2 = np.maximum(sq[:, None] + sq[None, :] - 2 * Xs @ Xs.T, 0.0)
        K = np.exp(-d2 / (2.0 * self.bandwidth_**2))
        self._cache = (X, K)
        return K

    def distance(self, X: np.ndarray, u: np.ndarray, W: np.ndarray) -> np.ndarray:
        K = self.kernel(X)
        D = np.atleast_2d(W) - u
        return np.sqrt(np.maximum(np.sum((D @ K) * D, axis=1), 0.0))

    def to_dict(self) -> dict[str, Any]:
        return {"geometry": "mmd", "bandwidth": self.bandwidth_}


@dataclass
class NoRadius(Geometry):
    """No radius constraint: every distance is 0."""

    name = "none"

    def fit(self, X: np.ndarray) -> "NoRadius":
        return self

    def distance(self, X: np.ndarray, u: np.ndarray, W: np.ndarray) -> np.ndarray:
        return np.zeros(np.atleast_2d(W).shape[0])

    def to_dict(self) -> dict[str, Any]:
        return {"geometry": "none"}


_GEOMETRIES = {"kms": KMS, "max_sliced": MaxSliced, "mmd": MMD, "none": NoRadius}


def make_geometry(spec: str | Geometry | dict, **kwargs: Any) -> Geometry:
    """Build an (unfitted) geometry from a name (``kms``, ``max_sliced``, ``mmd``, ``none``)."""
    if isinstance(spec, Geometry):
        return spec
    if isinstance(spec, dict):
        spec = dict(spec)
        name = spec.pop("geometry")
        kwargs = {**spec, **kwargs}
    else:
        name = spec
    if name not in _GEOMETRIES:
        raise ValueError(f"unknown geometry {name!r}; choose from {sorted(_GEOMETRIES)}")
    return _GEOMETRIES[name](**kwargs)
