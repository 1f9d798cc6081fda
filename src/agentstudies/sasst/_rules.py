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

__all__ = [
    "Rule",
    "UniformRule",
    "ThresholdRule",
    "ProjectionTiltRule",
    "BumpRule",
    "rule_from_dict",
    "RuleFamily",
    "AxisTiltFamily",
    "ThresholdFamily",
    "DirectionTiltFamily",
    "BumpFamily",
    "CompositeFamily",
    "FixedFamily",
]


class Rule:
    """Base class of a frozen, serializable stress rule over named feature columns."""

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

    @property
    def is_uniform(self) -> bool:
        return False


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

    @property
    def is_uniform(self) -> bool:
        return True


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
        Xs = self.standardizer(X)
        if self.omega is not None:
            Xs = np.sqrt(2.0 / self.omega.shape[1]) * np.cos(Xs @ self.omega + self.phase)
        return (Xs @ self.direction - self.center) / self.spread

    def score(self, X: np.ndarray) -> np.ndarray:
        return np.exp(self.strength * np.clip(self.projection(X), -self.clip, self.clip))

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
        Xs = self.standardizer(X)
        d2 = np.sum((Xs - self.center) ** 2, axis=1)
        return 1.0 + (self.lift - 1.0) * np.exp(-d2 / (2.0 * self.bandwidth**2))

    def describe(self) -> str:
        return self.label or f"x{self.lift:g} bump (h={self.bandwidth:.3g}) around a discovery center"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "columns": list(self.columns),
                "standardizer": self.standardizer.to_dict(), "center": self.center.tolist(),
                "bandwidth": self.bandwidth, "lift": self.lift, "label": self.label}


def rule_from_dict(d: dict[str, Any] | str) -> Rule:
    """Rebuild a rule from :meth:`Rule.to_dict` output (or its JSON string).

    Raises
    ------
    ValueError
        On an unknown ``kind``.
    """
    if isinstance(d, str):
        d = json.loads(d)
    d = dict(d)
    kind = d.pop("kind")
    cols = tuple(d.pop("columns", ()))
    if kind == "uniform":
        return UniformRule()
    if kind == "threshold":
        return ThresholdRule(columns=cols, **d)
    if kind == "projection_tilt":
        st = Standardizer.from_dict(d.pop("standardizer"))
        direction = np.asarray(d.pop("direction"), float)
        omega = d.pop("omega", None)
        phase = d.pop("phase", None)
        return ProjectionTiltRule(
            columns=cols, standardizer=st, direction=direction,
            omega=None if omega is None else np.asarray(omega, float),
            phase=None if phase is None else np.asarray(phase, float), **d)
    if kind == "bump":
        st = Standardizer.from_dict(d.pop("standardizer"))
        center = np.asarray(d.pop("center"), float)
        return BumpRule(columns=cols, standardizer=st, center=center, **d)
    raise ValueError(f"unknown rule kind {kind!r}")


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
                e = np.zeros(len(sub))
                e[a] = sign
                for lam in self.strengths:
                    rules.append(ProjectionTiltRule(
                        columns=sub, standardizer=st, direction=e, strength=lam, clip=self.clip,
                        label=f"{'high' if sign > 0 else 'low'} {c}"))
        return rules

    def to_dict(self):
        return {"family": self.name, "strengths": list(self.strengths), "clip": self.clip}


@dataclass
class ThresholdFamily(RuleFamily):
    """Emphasize tasks above / below discovery quantiles of each feature."""

    name = "threshold"
    quantiles: tuple[float, ...] = (0.25, 0.5, 0.75)
    lifts: tuple[float, ...] = (3.0,)
    use_columns: tuple[str, ...] | None = None

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
        return {"family": self.name, "quantiles": list(self.quantiles), "lifts": list(self.lifts)}


@dataclass
class DirectionTiltFamily(RuleFamily):
    """Tilts along random unit directions of a linear or kernel (random Fourier) feature map.

    ``kernel=True`` uses ``n_features`` random Fourier features with RBF bandwidth by the
    median heuristic on standardized discovery features (or ``bandwidth``); the
    projection is centered and scaled by its discovery mean and standard deviation.
    """

    name = "direction_tilt"
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


@dataclass
class BumpFamily(RuleFamily):
    """RBF bumps centered on k-means centers of the standardized discovery features."""

    name = "bump"
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
        km = KMeans(n_clusters=k, n_init=4, random_state=self.seed).fit(Xs)
        h = self.bandwidth_scale * median_bandwidth(Xs)
        return [BumpRule(columns=cols, standardizer=st, center=c, bandwidth=h, lift=lift,
                         label=f"x{lift:g} bump around center {i}")
                for i, c in enumerate(km.cluster_centers_) for lift in self.lifts]

    def to_dict(self):
        return {"family": self.name, "n_centers": self.n_centers, "lifts": list(self.lifts),
                "bandwidth_scale": self.bandwidth_scale, "seed": self.seed}


@dataclass
class CompositeFamily(RuleFamily):
    """The union of several families, in the given (registry) order."""

    name = "composite"
    families: tuple[RuleFamily, ...] = ()

    def fit(self, X, columns):
        return [r for f in self.families for r in f.fit(X, columns)]

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
