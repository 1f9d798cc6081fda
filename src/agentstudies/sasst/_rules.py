"""Candidate stress rules and rule families.

A rule ``g`` maps pre-execution task features to a bounded nonnegative score
``s_g(W)`` (SASST Section 2, Eq. 1). It is a reusable object: it stores every fitted
threshold, basis, center, bandwidth and preprocessing statistic needed to score new
tasks, serializes to JSON (``to_dict`` / :func:`rule_from_dict`), and is never a vector
of discovery weights (Appendix C.1).

Rules
-----
UniformRule            s = 1 (the unweighted benchmark)
ThresholdRule          s = lift on one side of a feature threshold, 1 elsewhere
ProjectionTiltRule     s = exp(lambda * clip(standardized projection, -c, c)), on a
                       linear or random-Fourier feature map (bounded: density ratio
                       at most exp(2 lambda c))
BumpRule               s = 1 + (lift - 1) exp(-||x - center||^2 / (2 h^2))

Families (``fit(X_D, columns) -> list[Rule]``) build the registry ``G_m`` from discovery
features only (score-blind): :class:`AxisTiltFamily`, :class:`ThresholdFamily`,
:class:`DirectionTiltFamily` (random linear or kernel directions), :class:`BumpFamily`,
:class:`CompositeFamily`, and :class:`FixedFamily` (a given list of rules).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from agentstudies.sasst._geometry import Standardizer, median_bandwidth
from agentstudies.sasst._reuse import _axis_direction, _memo_fit

__all__ = [
    "Rule",
    "UniformRule",
    "ThresholdRule",
    "ProjectionTiltRule",
    "BumpRule",
    "rule_from_dict",
    "register_rule",
    "RULE_KINDS",
    "RuleFamily",
    "AxisTiltFamily",
    "ThresholdFamily",
    "DirectionTiltFamily",
    "BumpFamily",
    "ItemBumpFamily",
    "QuadraticTiltRule",
    "QuadraticTiltFamily",
    "CompositeFamily",
    "FixedFamily",
]


#: Rule kinds by name -> class; filled by :func:`register_rule` (built-in kinds below).
RULE_KINDS: dict[str, type] = {}


def register_rule(cls: type) -> type:
    """Class decorator: register a :class:`Rule` subclass under its ``kind`` so
    :func:`rule_from_dict` (and a saved pre-registration) can rebuild it.

    The class needs a unique string ``kind``, ``to_dict()`` returning a JSON-safe mapping
    with ``"kind"``, and either a ``from_dict(d)`` classmethod or keyword fields that
    accept the mapping's entries (``columns`` as a list; array-valued fields as lists).

    Raises
    ------
    TypeError
        If ``cls`` is not a Rule subclass. ``ValueError`` if another class already holds
        the kind.
    """
    if not (isinstance(cls, type) and issubclass(cls, Rule)):
        raise TypeError(f"register_rule expects a Rule subclass; got {cls!r}")
    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind or kind == "rule":
        raise ValueError(f"{cls.__name__} needs its own non-empty string `kind` to be registered")
    other = RULE_KINDS.get(kind)
    if other is not None and (other.__module__, other.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"rule kind {kind!r} is already registered by {other.__qualname__}")
    RULE_KINDS[kind] = cls
    return cls


class Rule:
    """Base class of a frozen, serializable stress rule over named feature columns.

    Custom rules subclass it, set a unique ``kind`` and are registered with
    :func:`register_rule` so they round-trip through JSON.
    """

    kind = "rule"
    columns: tuple[str, ...] = ()

    def score(self, X: np.ndarray) -> np.ndarray:
        """Scores ``s_g`` (n,) for a feature matrix (n, len(columns)) in column order."""
        raise NotImplementedError  # pragma: no cover

    def apply(self, features: pd.DataFrame) -> np.ndarray:
        """Scores for a feature table; raises ``KeyError`` naming missing columns."""
        missing = [c for c in self.columns if c not in features.columns]
        if missing:
            raise KeyError(f"rule {self.describe()!r} needs feature column(s) {missing}")
        return self.score(features.loc[:, list(self.columns)].to_numpy(dtype=float))

    def describe(self) -> str:
        return self.kind

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError  # pragma: no cover

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Rule":
        """Rebuild from :meth:`to_dict` output without ``kind`` (default: keyword fields,
        ``columns`` as a tuple, a ``standardizer`` mapping as a :class:`Standardizer`,
        list values of array-typed fields as float arrays)."""
        d = dict(d)
        d["columns"] = tuple(d.get("columns", ()))
        if isinstance(d.get("standardizer"), dict):
            d["standardizer"] = Standardizer.from_dict(d["standardizer"])
        for k, v in list(d.items()):
            if isinstance(v, list):
                d[k] = np.asarray(v, float)
        return cls(**d)

    @property
    def is_uniform(self) -> bool:
        return False


@register_rule
@dataclass(frozen=True, eq=False)
class UniformRule(Rule):
    """``s(W) = 1``: the unweighted benchmark distribution."""

    kind = "uniform"
    columns: tuple[str, ...] = ()

    def score(self, X: np.ndarray) -> np.ndarray:
        return np.ones(np.asarray(X).shape[0])

    def apply(self, features: pd.DataFrame) -> np.ndarray:
        return np.ones(len(features))

    def describe(self) -> str:
        return "uniform (no reweighting)"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "UniformRule":
        return cls()

    @property
    def is_uniform(self) -> bool:
        return True


@register_rule
@dataclass(frozen=True, eq=False)
class ThresholdRule(Rule):
    """``s = lift`` if ``x_col > threshold`` (``above``) or ``<= threshold`` (not above), else 1."""

    kind = "threshold"
    columns: tuple[str, ...] = ()
    threshold: float = 0.0
    above: bool = True
    lift: float = 3.0

    def score(self, X: np.ndarray) -> np.ndarray:
        x = np.asarray(X, dtype=float)[:, 0]
        hit = x > self.threshold if self.above else x <= self.threshold
        return np.where(hit, self.lift, 1.0)

    def describe(self) -> str:
        op = ">" if self.above else "<="
        return f"x{self.lift:g} weight where {self.columns[0]} {op} {self.threshold:.4g}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "columns": list(self.columns), "threshold": self.threshold,
                "above": self.above, "lift": self.lift}


@register_rule
@dataclass(frozen=True, eq=False)
class ProjectionTiltRule(Rule):
    """Exponential tilt along a frozen projection, clipped so scores stay bounded.

    ``u(x) = (beta^T phi(standardize(x)) - center) / spread``,
    ``s(x) = exp(strength * clip(u, -clip, clip))``; ``phi`` is the identity
    (``omega is None``) or random Fourier features ``sqrt(2/D) cos(x omega + phase)``.
    """

    kind = "projection_tilt"
    columns: tuple[str, ...] = ()
    standardizer: Standardizer = None  # type: ignore[assignment]
    direction: np.ndarray = None  # type: ignore[assignment]
    center: float = 0.0
    spread: float = 1.0
    strength: float = 1.0
    clip: float = 2.0
    omega: np.ndarray | None = None
    phase: np.ndarray | None = None
    label: str = ""

    def projection(self, X: np.ndarray) -> np.ndarray:
        return self._projection_standardized(self.standardizer(X))

    def _projection_standardized(self, Xs: np.ndarray) -> np.ndarray:
        if self.omega is not None:
            Xs = np.sqrt(2.0 / self.omega.shape[1]) * np.cos(Xs @ self.omega + self.phase)
        return (Xs @ self.direction - self.center) / self.spread

    def score(self, X: np.ndarray) -> np.ndarray:
        return self.score_standardized(self.standardizer(X))

    def score_standardized(self, Xs: np.ndarray) -> np.ndarray:
        """:meth:`score` of features already passed through :attr:`standardizer`."""
        return np.exp(self.strength * np.clip(self._projection_standardized(Xs), -self.clip, self.clip))

    def describe(self) -> str:
        base = self.label or ("kernel direction" if self.omega is not None else "linear direction")
        return f"tilt exp({self.strength:g} * clip(u, +-{self.clip:g})) along {base}"

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "columns": list(self.columns),
             "standardizer": self.standardizer.to_dict(), "direction": self.direction.tolist(),
             "center": self.center, "spread": self.spread, "strength": self.strength,
             "clip": self.clip, "label": self.label}
        if self.omega is not None:
            d["omega"] = self.omega.tolist()
            d["phase"] = self.phase.tolist()
        return d


@register_rule
@dataclass(frozen=True, eq=False)
class BumpRule(Rule):
    """``s = 1 + (lift - 1) exp(-||standardize(x) - center||^2 / (2 h^2))``."""

    kind = "bump"
    columns: tuple[str, ...] = ()
    standardizer: Standardizer = None  # type: ignore[assignment]
    center: np.ndarray = None  # type: ignore[assignment]
    bandwidth: float = 1.0
    lift: float = 3.0
    label: str = ""

    def score(self, X: np.ndarray) -> np.ndarray:
        return self.score_standardized(self.standardizer(X))

    def score_standardized(self, Xs: np.ndarray) -> np.ndarray:
        """:meth:`score` of features already passed through :attr:`standardizer`."""
        return self.score_from_sqdist(self.sqdist(Xs))

    def sqdist(self, Xs: np.ndarray) -> np.ndarray:
        """Squared distances (n,) of standardized rows Xs (n, d) to :attr:`center`."""
        return np.sum((Xs - self.center) ** 2, axis=1)

    def score_from_sqdist(self, d2: np.ndarray) -> np.ndarray:
        """Scores (n,) from squared distances :meth:`sqdist` (n,)."""
        return 1.0 + (self.lift - 1.0) * np.exp(-d2 / (2.0 * self.bandwidth**2))

    def describe(self) -> str:
        return self.label or f"x{self.lift:g} bump (h={self.bandwidth:.3g}) around a discovery center"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "columns": list(self.columns),
                "standardizer": self.standardizer.to_dict(), "center": self.center.tolist(),
                "bandwidth": self.bandwidth, "lift": self.lift, "label": self.label}


@register_rule
@dataclass(frozen=True, eq=False)
class QuadraticTiltRule(Rule):
    """Exponential tilt along a second-order statistic of two standardized features.

    ``q = z_i z_j`` (``form="product"``: separates quadrant pairs, e.g. XOR) or
    ``q = z_i^2 + z_j^2`` (``form="radius"``: discs and rings), with ``z`` the frozen
    standardization; ``u = (q - center) / spread``, ``s = exp(strength * clip(u, -clip,
    clip))`` (bounded: density ratio at most ``exp(2 strength clip)``). The sign of the
    tilt is the sign of ``strength``.
    """

    kind = "quadratic_tilt"
    columns: tuple[str, ...] = ()
    standardizer: Standardizer = None  # type: ignore[assignment]
    form: str = "product"
    center: float = 0.0
    spread: float = 1.0
    strength: float = 1.0
    clip: float = 2.0
    label: str = ""

    def statistic(self, X: np.ndarray) -> np.ndarray:
        return self._statistic_standardized(self.standardizer(X))

    def _statistic_standardized(self, z: np.ndarray) -> np.ndarray:
        return z[:, 0] * z[:, 1] if self.form == "product" else z[:, 0] ** 2 + z[:, 1] ** 2

    def score(self, X: np.ndarray) -> np.ndarray:
        return self.score_standardized(self.standardizer(X))

    def score_standardized(self, z: np.ndarray) -> np.ndarray:
        """:meth:`score` of features already passed through :attr:`standardizer`."""
        u = (self._statistic_standardized(z) - self.center) / self.spread
        return np.exp(self.strength * np.clip(u, -self.clip, self.clip))

    def describe(self) -> str:
        op = "*" if self.form == "product" else "^2 + "
        stat = f"{self.columns[0]}{op}{self.columns[1]}" + ("^2" if self.form == "radius" else "")
        return self.label or f"tilt exp({self.strength:g} * clip(u, +-{self.clip:g})) along {stat}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "columns": list(self.columns), "standardizer": self.standardizer.to_dict(),
                "form": self.form, "center": self.center, "spread": self.spread, "strength": self.strength,
                "clip": self.clip, "label": self.label}


def _projection_tilt(columns: tuple[str, ...], standardizer: Standardizer, direction: np.ndarray, *,
                     center: float = 0.0, spread: float = 1.0, strength: float = 1.0, clip: float = 2.0,
                     omega: np.ndarray | None = None, phase: np.ndarray | None = None,
                     label: str = "") -> ProjectionTiltRule:
    """``ProjectionTiltRule(...)`` with the same fields, built without the frozen dataclass's
    per-field ``object.__setattr__`` (a stability resample refits a family's rules a hundred
    times per trial; the object is the same: its ``__dict__`` holds the fields in order)."""
    r = object.__new__(ProjectionTiltRule)
    r.__dict__.update(columns=columns, standardizer=standardizer, direction=direction, center=center,
                      spread=spread, strength=strength, clip=clip, omega=omega, phase=phase, label=label)
    return r


def rule_from_dict(d: dict[str, Any] | str) -> Rule:
    """Rebuild a rule from :meth:`Rule.to_dict` output (or its JSON string), by its
    registered kind (:func:`register_rule`; custom kinds round-trip once registered).

    Raises
    ------
    ValueError
        On a missing or unknown ``kind`` (naming the registered kinds).
    """
    if isinstance(d, str):
        d = json.loads(d)
    d = dict(d)
    kind = d.pop("kind", None)
    if kind not in RULE_KINDS:
        raise ValueError(f"unknown rule kind {kind!r}; registered kinds: {sorted(RULE_KINDS)} "
                         "(register a custom rule class with @register_rule)")
    return RULE_KINDS[kind].from_dict(d)


# ---------------------------------------------------------------------- families
class RuleFamily:
    """A candidate family ``G_m``: ``fit(X_D, columns)`` returns the candidate rules.

    Fitting may use discovery *features* only, never outcomes.
    """

    name = "family"

    def fit(self, X: np.ndarray, columns: Sequence[str]) -> list[Rule]:
        raise NotImplementedError  # pragma: no cover

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.name}


def _check_columns(X: np.ndarray, columns: Sequence[str], use_columns: Sequence[str] | None = None
                   ) -> tuple[np.ndarray, tuple[str, ...]]:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != len(columns):
        raise ValueError(f"features have shape {X.shape} but {len(columns)} columns were named")
    cols = tuple(str(c) for c in columns)
    if use_columns is not None:
        unknown = [c for c in use_columns if c not in cols]
        if unknown:
            raise KeyError(f"use_columns names feature(s) {unknown} that the feature table lacks; "
                           f"it has {list(cols)}")
    return X, cols


@dataclass
class AxisTiltFamily(RuleFamily):
    """Tilts along each standardized feature axis, both directions, several strengths."""

    name = "axis_tilt"
    _pure_fit = True  # fit depends on to_dict(), the features and the columns only (_memo_fit)
    strengths: tuple[float, ...] = (0.5, 1.0)
    clip: float = 2.0
    use_columns: tuple[str, ...] | None = None

    def fit(self, X, columns):
        X, cols = _check_columns(X, columns, self.use_columns)
        keep = [i for i, c in enumerate(cols) if self.use_columns is None or c in self.use_columns]
        st = Standardizer.fit(X[:, keep])
        sub = tuple(cols[i] for i in keep)
        rules: list[Rule] = []
        for a, c in enumerate(sub):
            for sign in (1.0, -1.0):
                e = _axis_direction(len(sub), a, sign)
                label = f"{'high' if sign > 0 else 'low'} {c}"
                for lam in self.strengths:
                    rules.append(_projection_tilt(sub, st, e, strength=lam, clip=self.clip, label=label))
        return rules

    def to_dict(self):
        # use_columns is part of the registry (a pre-registration's fingerprint reads it)
        return {"family": self.name, "strengths": list(self.strengths), "clip": self.clip,
                "use_columns": None if self.use_columns is None else list(self.use_columns)}


@dataclass
class ThresholdFamily(RuleFamily):
    """Emphasize tasks above / below discovery quantiles of each feature."""

    name = "threshold"
    _pure_fit = True  # fit depends on to_dict(), the features and the columns only (_memo_fit)
    quantiles: tuple[float, ...] = (0.25, 0.5, 0.75)
    lifts: tuple[float, ...] = (3.0,)
    use_columns: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        """Refuse quantiles outside [0, 1] and non-positive lifts, naming the value.

        Raises
        ------
        ValueError
            A quantile outside [0, 1] (or NaN), or a lift <= 0 (or NaN).
        """
        bad_q = [q for q in self.quantiles if not 0.0 <= float(q) <= 1.0]
        if bad_q:
            raise ValueError(f"ThresholdFamily: quantiles={tuple(self.quantiles)!r} has {bad_q} outside [0, 1]; "
                             "quantiles are probabilities (0.5 = the discovery median), not percentages")
        bad_l = [v for v in self.lifts if not float(v) > 0.0]
        if bad_l:
            raise ValueError(f"ThresholdFamily: lifts={tuple(self.lifts)!r} has {bad_l}; a lift is a weight ratio "
                             "and must be > 0 (3.0 triples the weight of the tasks on the rule's side)")

    def fit(self, X, columns):
        X, cols = _check_columns(X, columns, self.use_columns)
        rules: list[Rule] = []
        for j, c in enumerate(cols):
            if self.use_columns is not None and c not in self.use_columns:
                continue
            x = X[:, j]
            for t in np.unique(np.quantile(x, self.quantiles)):
                if t >= x.max() or t < x.min():
                    continue
                for lift in self.lifts:
                    for above in (True, False):
                        rules.append(ThresholdRule(columns=(c,), threshold=float(t), above=above, lift=lift))
        return rules

    def to_dict(self):
        return {"family": self.name, "quantiles": list(self.quantiles), "lifts": list(self.lifts),
                "use_columns": None if self.use_columns is None else list(self.use_columns)}


@dataclass
class DirectionTiltFamily(RuleFamily):
    """Tilts along random unit directions of a linear or kernel (random Fourier) feature map.

    ``kernel=True`` uses ``n_features`` random Fourier features with RBF bandwidth by the
    median heuristic on standardized discovery features (or ``bandwidth``); the
    projection is centered and scaled by its discovery mean and standard deviation.
    """

    name = "direction_tilt"
    _pure_fit = True  # fit depends on to_dict(), the features and the columns only (_memo_fit)
    n_directions: int = 16
    strengths: tuple[float, ...] = (0.5, 1.0)
    clip: float = 2.0
    kernel: bool = False
    n_features: int = 64
    bandwidth: float | str = "median"
    seed: int = 0

    def fit(self, X, columns):
        X, cols = _check_columns(X, columns)
        rng = np.random.default_rng(self.seed)
        st = Standardizer.fit(X)
        Xs = st(X)
        omega = phase = None
        feats = Xs
        if self.kernel:
            h = median_bandwidth(Xs) if self.bandwidth == "median" else float(self.bandwidth)
            omega = rng.standard_normal((Xs.shape[1], self.n_features)) / h
            phase = rng.uniform(0, 2 * np.pi, self.n_features)
            feats = np.sqrt(2.0 / self.n_features) * np.cos(Xs @ omega + phase)
        B = rng.standard_normal((self.n_directions, feats.shape[1]))
        B /= np.linalg.norm(B, axis=1, keepdims=True)
        rules: list[Rule] = []
        for k, beta in enumerate(B):
            proj = feats @ beta
            sd = float(proj.std()) or 1.0
            for sign in (1.0, -1.0):
                for lam in self.strengths:
                    rules.append(ProjectionTiltRule(
                        columns=cols, standardizer=st, direction=sign * beta,
                        center=float(sign * proj.mean()), spread=sd, strength=lam, clip=self.clip,
                        omega=omega, phase=phase,
                        label=f"{'kernel' if self.kernel else 'linear'} direction {k}{'+' if sign > 0 else '-'}"))
        return rules

    def to_dict(self):
        return {"family": self.name, "n_directions": self.n_directions, "strengths": list(self.strengths),
                "clip": self.clip, "kernel": self.kernel, "n_features": self.n_features,
                "bandwidth": self.bandwidth, "seed": self.seed}


#: scikit-learn's Lloyd k-means splits the rows into chunks of this many and sums each
#: chunk's centre updates in its own OpenMP thread (sklearn.cluster._k_means_lloyd).
_KMEANS_CHUNK = 256
_OPENMP: list = []  # the process's threadpoolctl controller, made once sklearn's OpenMP runtime is loaded


def _one_openmp_thread(n_rows: int):
    """A context that runs k-means on ``n_rows`` rows with one OpenMP thread, always.

    scikit-learn's Lloyd iterations sum 256-row chunks (``_KMEANS_CHUNK``) on OpenMP
    threads, so above one chunk the centres' last bits follow the thread count: on 500
    MiniLM rows one and two threads gave different centres. joblib's workers run with one
    OpenMP thread, while a sequential run (``n_jobs=1``, the book's default since two
    chapters run side by side) would use every core, since threadpoolctl's BLAS limit in
    :func:`agentstudies.parallel.seeded_map` does not cover OpenMP. One thread everywhere
    makes a fit the same bits whatever ``n_jobs`` and the machine's core count, and it is
    cheaper: extra threads mostly spin (200 rows: ~69 CPU-ms with two threads, ~8 with
    one). ``n_rows`` is kept for callers; at most one chunk, any thread count gives the
    same bits anyway.
    """
    if not _OPENMP:
        from threadpoolctl import ThreadpoolController

        _OPENMP.append(ThreadpoolController())
    return _OPENMP[0].limit(limits=1, user_api="openmp")


@dataclass
class BumpFamily(RuleFamily):
    """RBF bumps centered on k-means centers of the standardized discovery features."""

    name = "bump"
    _pure_fit = True  # fit depends on to_dict(), the features and the columns only (_memo_fit)
    n_centers: int = 12
    lifts: tuple[float, ...] = (3.0,)
    bandwidth_scale: float = 0.5
    seed: int = 0

    def fit(self, X, columns):
        from sklearn.cluster import KMeans

        X, cols = _check_columns(X, columns)
        st = Standardizer.fit(X)
        Xs = st(X)
        k = min(self.n_centers, Xs.shape[0])
        with _one_openmp_thread(Xs.shape[0]):
            km = KMeans(n_clusters=k, n_init=4, random_state=self.seed).fit(Xs)
        h = self.bandwidth_scale * median_bandwidth(Xs)
        return [BumpRule(columns=cols, standardizer=st, center=c, bandwidth=h, lift=lift,
                         label=f"x{lift:g} bump around center {i}")
                for i, c in enumerate(km.cluster_centers_) for lift in self.lifts]

    def to_dict(self):
        return {"family": self.name, "n_centers": self.n_centers, "lifts": list(self.lifts),
                "bandwidth_scale": self.bandwidth_scale, "seed": self.seed}


@dataclass
class ItemBumpFamily(RuleFamily):
    """RBF bumps centred on discovery items, bandwidth from a score-blind neighbour diagnostic.

    One bump ``s = 1 + (lift - 1) exp(-||x - x_k||^2 / (2 h^2))`` per discovery item ``k``
    (every ``stride``-th item when ``max_centers`` caps the count, in row order), with
    ``h = bandwidth_scale * median_k d_(k_neighbors)(x_k)``, the median over discovery
    items of the distance to their ``k_neighbors``-th nearest discovery neighbour. Features
    are used as given (``standardize=False``, e.g. unit-norm embeddings) or standardized
    on discovery. Unlike :class:`BumpFamily` (k-means centres) it can express a small,
    tight subgroup of items: some bump is centred inside it.
    """

    name = "item_bump"
    _pure_fit = True  # fit depends on to_dict(), the features and the columns only (_memo_fit)
    lifts: tuple[float, ...] = (3.0,)
    k_neighbors: int = 20
    bandwidth_scale: float = 1.0
    standardize: bool = False
    max_centers: int | None = None

    def fit(self, X, columns):
        X, cols = _check_columns(X, columns)
        n, d = X.shape
        st = Standardizer.fit(X) if self.standardize else Standardizer(mean=np.zeros(d), scale=np.ones(d))
        Xs = st(X)
        sq = np.sum(Xs * Xs, axis=1)
        D2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * Xs @ Xs.T, 0.0)
        k = min(max(1, self.k_neighbors), n - 1)
        h = self.bandwidth_scale * float(np.median(np.sqrt(np.partition(D2, k, axis=1)[:, k])))
        h = h if h > 0 else 1.0
        idx = np.arange(n)
        if self.max_centers is not None and n > self.max_centers:
            idx = idx[:: int(np.ceil(n / self.max_centers))]
        return [BumpRule(columns=cols, standardizer=st, center=Xs[i].copy(), bandwidth=h, lift=lift,
                         label=f"x{lift:g} bump (h={h:.3g}) around discovery item {i}")
                for i in idx for lift in self.lifts]

    def to_dict(self):
        return {"family": self.name, "lifts": list(self.lifts), "k_neighbors": self.k_neighbors,
                "bandwidth_scale": self.bandwidth_scale, "standardize": self.standardize,
                "max_centers": self.max_centers}


@dataclass
class QuadraticTiltFamily(RuleFamily):
    """Tilts along pairwise products and pairwise squared radii of standardized features.

    For every pair of ``use_columns`` (default: all), both forms of
    :class:`QuadraticTiltRule`, both signs and every strength; the statistic is centred
    and scaled by its discovery mean and standard deviation (score-blind). It can express
    XOR-like (opposite-sign quadrants) and circular (disc) subgroups that no linear tilt
    and no single bump can.
    """

    name = "quadratic_tilt"
    _pure_fit = True  # fit depends on to_dict(), the features and the columns only (_memo_fit)
    strengths: tuple[float, ...] = (0.5, 1.0)
    clip: float = 2.0
    use_columns: tuple[str, ...] | None = None
    forms: tuple[str, ...] = ("product", "radius")

    def fit(self, X, columns):
        X, cols = _check_columns(X, columns, self.use_columns)
        keep = [i for i, c in enumerate(cols) if self.use_columns is None or c in self.use_columns]
        rules: list[Rule] = []
        for a in range(len(keep)):
            for b in range(a + 1, len(keep)):
                i, j = keep[a], keep[b]
                pair = (cols[i], cols[j])
                st = Standardizer.fit(X[:, [i, j]])
                for form in self.forms:
                    probe = QuadraticTiltRule(columns=pair, standardizer=st, form=form)
                    q = probe.statistic(X[:, [i, j]])
                    sd = float(q.std()) or 1.0
                    for sign in (1.0, -1.0):
                        for lam in self.strengths:
                            rules.append(QuadraticTiltRule(
                                columns=pair, standardizer=st, form=form, center=float(q.mean()), spread=sd,
                                strength=sign * lam, clip=self.clip,
                                label=f"{'high' if sign > 0 else 'low'} {pair[0]}{'*' if form == 'product' else '^2+'}"
                                      f"{pair[1]}{'^2' if form == 'radius' else ''} (x{lam:g})"))
        return rules

    def to_dict(self):
        return {"family": self.name, "strengths": list(self.strengths), "clip": self.clip,
                "use_columns": None if self.use_columns is None else list(self.use_columns),
                "forms": list(self.forms)}


@dataclass
class CompositeFamily(RuleFamily):
    """The union of several families, in the given (registry) order."""

    name = "composite"
    families: tuple[RuleFamily, ...] = ()

    def fit(self, X, columns):
        return [r for f in self.families for r in _memo_fit(f, X, columns)]

    def to_dict(self):
        return {"family": self.name, "members": [f.to_dict() for f in self.families]}


@dataclass
class FixedFamily(RuleFamily):
    """A fixed, predeclared list of rules (for example an oracle rule in a simulation)."""

    name = "fixed"
    rules: tuple[Rule, ...] = field(default_factory=tuple)

    def fit(self, X, columns):
        return list(self.rules)

    def to_dict(self):
        return {"family": self.name, "rules": [r.to_dict() for r in self.rules]}
