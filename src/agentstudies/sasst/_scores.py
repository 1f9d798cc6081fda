"""Rule scores on a feature matrix and how alike two rules' weights are (SASST Eq. 1, App. C.2).

:func:`score_matrix` scores every rule of a registry on every task (the tilts ``s_g`` of
Eq. 1); :func:`top_weighted_sets`, :func:`top_set_jaccard` and :func:`weight_correlation`
are the functional agreements the engine's resample stability averages (C.2).
"""

from __future__ import annotations

import hashlib
from typing import MutableMapping, Sequence

import numpy as np

from agentstudies.sasst._reuse import _AXIS_OF
from agentstudies.sasst._rules import BumpRule, ProjectionTiltRule, QuadraticTiltRule, Rule
from agentstudies._tolerances import DEGENERATE_TOL

__all__ = ["rule_scores", "score_matrix", "top_set_jaccard", "top_weighted_sets", "weight_correlation"]


#: Built-in rules that score through ``score_standardized(standardizer(X))``.
_STANDARDIZED_RULES = (ProjectionTiltRule, BumpRule, QuadraticTiltRule)


def score_matrix(rules: Sequence[Rule], X: np.ndarray, feature_names: Sequence[str], *,
                 bump_cache: MutableMapping[tuple[bytes, bytes], np.ndarray] | None = None) -> np.ndarray:
    """Scores ``s_g(x_k)`` of every rule on every row, (G, n), for features X (n, d) whose
    columns are ``feature_names`` (the tilts ``s_g`` of SASST Eq. 1; no units).

    The column gather is done once per distinct column set, the standardization once per
    distinct (column set, standardizer) for the built-in standardized rules (a family's
    rules share one fitted standardizer), and the checks once for the whole matrix (a
    small registry is refitted and rescored on every stability resample). Each row equals
    ``rule.score`` of the rule's columns, bit for bit: the built-in tilts
    (:class:`ProjectionTiltRule`, :class:`QuadraticTiltRule`) share their projection
    where it is the same computation (one random-Fourier feature map per ``omega``, one
    quadratic statistic per pair and form; an axis direction, one coordinate ``+-1`` and
    zeros elsewhere, is that column of the finite standardized features times its sign,
    which is what the matrix product computes exactly) and run their elementwise tail
    ``exp(strength * clip((p - center) / spread, -clip, clip))`` once for all of them.

    ``bump_cache`` (optional, a dict the caller keeps across calls): squared distances of
    :class:`BumpRule` centres to the standardized rows, keyed by the SHA-1 of those rows
    and the centre's bytes. A registry of bumps centred on discovery items refitted on
    every stability resample re-centres on the same items, so each distance row is
    computed once per run instead of once per resample; a cached row is the same array
    :meth:`BumpRule.sqdist` returns (the same operations on the same bytes).

    Raises
    ------
    KeyError
        Naming the first rule that needs a feature the matrix lacks, and the feature.
    ValueError
        Naming the first rule whose scores are negative or not finite.

    Source: SASST (Xu et al., 2026) Eq. 1 and Appendix C.1-C.2.
    """
    X = np.asarray(X)
    n = X.shape[0]
    S = np.empty((len(rules), n))
    blocks = _Blocks(X, tuple(feature_names))
    tilts = _TiltBatch(n)
    last = (None, None, None)  # (standardizer, columns, block) of the previous rule: a family's rules share them
    for g, rule in enumerate(rules):
        kind = type(rule)
        if kind in _STANDARDIZED_RULES:  # exact built-in types: a subclass may override score
            if rule.standardizer is last[0] and rule.columns is last[1]:
                hit = last[2]
            else:
                hit = blocks.standardized(rule)
                last = (rule.standardizer, rule.columns, hit)
            if kind is ProjectionTiltRule:
                tilts.add(g, tilts.projection(rule, hit), rule.center, rule.spread, rule.strength, rule.clip)
            elif kind is QuadraticTiltRule:
                tilts.add(g, tilts.statistic(rule, hit), rule.center, rule.spread, rule.strength, rule.clip)
            elif bump_cache is not None:
                ck = (blocks.digest(hit), np.ascontiguousarray(rule.center, dtype=float).tobytes())
                d2 = bump_cache.get(ck)
                if d2 is None:
                    d2 = bump_cache[ck] = rule.sqdist(hit[1])
                S[g] = rule.score_from_sqdist(d2)
            else:
                S[g] = rule.score_standardized(hit[1])
        elif rule.is_uniform:
            S[g] = 1.0
        else:
            S[g] = rule.score(blocks.sub(rule))
    tilts.fill(S)
    bad = ~np.isfinite(S) | (S < 0)
    if bad.any():
        g = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(f"rule {rules[g].describe()!r} produced negative or non-finite scores")
    return S


class _Blocks:
    """The feature matrix's column blocks (one gather per column set) and their
    standardizations (one per column set and standardizer object) for :func:`score_matrix`."""

    def __init__(self, X: np.ndarray, names: tuple[str, ...]) -> None:
        self.X, self.names = X, names
        self.pos = {c: i for i, c in enumerate(names)}
        self.subs: dict[tuple[str, ...], np.ndarray] = {}
        self.std: dict[tuple, list] = {}

    def sub(self, rule: Rule) -> np.ndarray:
        cols = tuple(rule.columns)
        sub = self.subs.get(cols)
        if sub is None:
            missing = [c for c in cols if c not in self.pos]
            if missing:
                raise KeyError(f"rule {rule.describe()!r} needs feature(s) {missing}")
            sub = self.subs[cols] = self.X if cols == self.names else self.X[:, [self.pos[c] for c in cols]]
        return sub

    def standardized(self, rule: Rule) -> list:
        """``[standardizer, z, digest or None, [finite]]`` of the rule's block; the
        standardizer is held in the value, so its id stays unique while the call runs."""
        key = (tuple(rule.columns), id(rule.standardizer))
        hit = self.std.get(key)
        if hit is None:
            sub = self.sub(rule)
            z = rule.standardizer(sub)
            if z is sub:
                z = z.view()
            z.flags.writeable = False  # shared by the family's rules
            hit = self.std[key] = [rule.standardizer, z, None, []]
        return hit

    @staticmethod
    def digest(hit: list) -> bytes:
        """SHA-1 of the block's standardized rows and their shape (the bump cache's key), once."""
        if hit[2] is None:
            z = hit[1]
            hit[2] = hashlib.sha1(np.ascontiguousarray(z).view(np.uint8)).digest() + repr(z.shape).encode()
        return hit[2]


class _TiltBatch:
    """Projections of the built-in tilt rules and their shared elementwise tail."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.items: list[tuple[int, np.ndarray, float, float, float, float]] = []
        self.memo: dict[tuple, np.ndarray] = {}

    def add(self, g: int, p: np.ndarray, center: float, spread: float, strength: float, clip: float) -> None:
        self.items.append((g, p, center, spread, strength, clip))

    def projection(self, rule: ProjectionTiltRule, hit: tuple) -> np.ndarray:
        """``rule._projection_standardized`` before centring, ``phi(z) @ direction``, computed
        once per (feature map, direction object): rules that differ only in strength share it."""
        feats = hit[1]
        if rule.omega is not None:
            key = ("rff", id(feats), id(rule.omega), id(rule.phase))
            phi = self.memo.get(key)
            if phi is None:  # the same operations as ProjectionTiltRule._projection_standardized
                phi = self.memo[key] = np.sqrt(2.0 / rule.omega.shape[1]) * np.cos(feats @ rule.omega + rule.phase)
            feats = phi
        key = (id(feats), id(rule.direction))
        p = self.memo.get(key)
        if p is None:
            axis = _AXIS_OF.get(id(rule.direction)) if rule.omega is None else None  # a shared axis vector
            if axis is not None and rule.direction.shape == (feats.shape[1],) and _finite(hit):
                p = feats[:, axis[0]] * axis[1]
            else:
                p = feats @ rule.direction
            self.memo[key] = p
        return p

    def statistic(self, rule: QuadraticTiltRule, hit: tuple) -> np.ndarray:
        """``rule._statistic_standardized(z)``, once per (standardized block, form)."""
        key = ("quad", id(hit[1]), rule.form)
        q = self.memo.get(key)
        if q is None:
            q = self.memo[key] = rule._statistic_standardized(hit[1])
        return q

    def fill(self, S: np.ndarray) -> None:
        """``S[g] = exp(strength * clip((p - center) / spread, -clip, clip))`` for every added row."""
        if not self.items:
            return
        rows, proj, *params = zip(*self.items)
        P = np.vstack(proj) if len(proj) > 1 else proj[0][None, :].copy()
        c, s, lam, k = (np.array(v, dtype=float)[:, None] for v in params)
        P -= c
        P /= s
        S[list(rows)] = np.exp(lam * np.clip(P, -k, k))


def _finite(hit: tuple) -> bool:
    """Whether the block's standardized features are all finite (memoized in ``hit``): only
    then is ``z @ (+-e_a)`` exactly ``+-z[:, a]`` (0 * inf would be NaN)."""
    if not hit[3]:
        hit[3].append(bool(np.isfinite(hit[1]).all()))
    return hit[3][0]


def rule_scores(rule: Rule, X: np.ndarray, feature_names: Sequence[str]) -> np.ndarray:
    """Scores (n,) of ``rule`` on a feature matrix (n, d) whose columns are ``feature_names``.

    Raises ``KeyError`` naming a feature the rule needs but the matrix lacks, and
    ``ValueError`` if the rule returns negative or non-finite scores (one row of
    :func:`score_matrix`).
    """
    return score_matrix([rule], X, feature_names)[0]


def top_weighted_sets(s: np.ndarray, top_fraction: float) -> np.ndarray:
    """Rows' top-weighted sets ``{i: s_i >= q_{1-f}(s)}``, ties included, but never the
    rule's baseline level: when more than ``1 - f`` of the scores tie at the minimum (a rule
    that up-weights fewer than ``f`` of the tasks), the set is the up-weighted tasks, not
    every task. A constant row's set is every task.

    ``s``: scores, shape (G, n) (one row per rule); ``top_fraction``: ``f`` in (0, 1].
    Returns a boolean mask of shape (G, n); the engine's resample stability compares
    these sets (:func:`top_set_jaccard`).
    """
    q = np.quantile(s, 1 - top_fraction, axis=1, keepdims=True)
    lo = s.min(axis=1, keepdims=True)
    constant = s.max(axis=1, keepdims=True) <= lo
    return (s >= q) & ((s > lo) | constant)


def top_set_jaccard(a: np.ndarray, b: np.ndarray, top_fraction: float) -> np.ndarray:
    """Jaccard overlap of top-weighted sets ``{i: s_i >= q_{1-f}(s)}`` (ties included;
    the baseline level of a rule that up-weights fewer than ``f`` of the tasks is excluded,
    see :func:`top_weighted_sets`).

    ``a`` is (n,), ``b`` is (n,) or (G, n); returns a float or (G,).
    """
    a = np.asarray(a, float)
    b2 = np.atleast_2d(np.asarray(b, float))
    out = _jaccard(top_weighted_sets(a[None, :], top_fraction)[0], top_weighted_sets(b2, top_fraction))
    return out if np.ndim(b) == 2 else float(out[0])


def _jaccard(ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
    """Jaccard overlap (G,) of the set ``ta`` (n,) with each row of ``tb`` (G, n); 1 if both empty."""
    inter = (ta & tb).sum(axis=1)
    union = (ta | tb).sum(axis=1)
    return np.where(union > 0, inter / np.maximum(union, 1), 1.0)


def weight_correlation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of weight functions on a reference set (rows of ``b``).

    ``a`` is (n,), ``b`` is (n,) or (G, n); returns a float or (G,). A constant function
    correlates 1 with another constant and 0 with anything else.
    """
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    b2 = b if b.ndim == 2 else b.reshape(1, -1)
    ac = a - a.mean()
    bc = b2 - b2.mean(axis=1, keepdims=True)
    na = np.sqrt(np.sum(ac * ac))
    nb = np.sqrt(np.sum(bc * bc, axis=1))
    const_a = na < DEGENERATE_TOL
    const_b = nb < DEGENERATE_TOL
    den = na * nb
    # num / den where den != 0; where den == 0 a norm is 0, so a constant's rule below replaces the entry
    r = np.divide(bc @ ac, den, out=np.zeros(len(nb)), where=den != 0)
    r = np.where(const_a & const_b, 1.0, np.where(const_a | const_b, 0.0, r))
    return r if b.ndim == 2 else float(r[0])
