"""Rule scores on a feature matrix and how alike two rules' weights are (SASST Eq. 1, App. C.2).

:func:`score_matrix` scores every rule of a registry on every task (the tilts ``s_g`` of
Eq. 1); :func:`top_weighted_sets`, :func:`top_set_jaccard` and :func:`weight_correlation`
are the functional agreements the engine's resample stability averages (C.2).
"""

from __future__ import annotations

import hashlib
from typing import Any, MutableMapping, Sequence

import numpy as np

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
    ``rule.score`` of the rule's columns.

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
    """
    X = np.asarray(X)
    names = tuple(feature_names)
    pos = {c: i for i, c in enumerate(names)}
    subs: dict[tuple[str, ...], np.ndarray] = {}
    standardized: dict[tuple, tuple[Any, np.ndarray, bytes]] = {}
    rows = []
    for rule in rules:
        if rule.is_uniform:
            rows.append(np.ones(X.shape[0]))
            continue
        cols = tuple(rule.columns)
        sub = subs.get(cols)
        if sub is None:
            missing = [c for c in cols if c not in pos]
            if missing:
                raise KeyError(f"rule {rule.describe()!r} needs feature(s) {missing}")
            sub = subs[cols] = X if cols == names else X[:, [pos[c] for c in cols]]
        if type(rule) in _STANDARDIZED_RULES:  # exact built-in types: a subclass may override score
            key = (cols, id(rule.standardizer))
            hit = standardized.get(key)
            if hit is None:  # the standardizer is held in the value, so its id stays unique here
                z = rule.standardizer(sub)
                if z is sub:
                    z = z.view()
                z.flags.writeable = False  # shared by the family's rules
                digest = (hashlib.sha1(np.ascontiguousarray(z).view(np.uint8)).digest() + repr(z.shape).encode()
                          if bump_cache is not None else b"")
                hit = standardized[key] = (rule.standardizer, z, digest)
            if bump_cache is not None and type(rule) is BumpRule:
                ck = (hit[2], np.ascontiguousarray(rule.center, dtype=float).tobytes())
                d2 = bump_cache.get(ck)
                if d2 is None:
                    d2 = bump_cache[ck] = rule.sqdist(hit[1])
                rows.append(rule.score_from_sqdist(d2))
            else:
                rows.append(rule.score_standardized(hit[1]))
        else:
            rows.append(rule.score(sub))
    S = np.vstack(rows) if rows else np.zeros((0, X.shape[0]))
    bad = ~np.isfinite(S) | (S < 0)
    if bad.any():
        g = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(f"rule {rules[g].describe()!r} produced negative or non-finite scores")
    return S


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

    A constant function correlates 1 with another constant and 0 with anything else.
    """
    a = np.asarray(a, float)
    b2 = np.atleast_2d(np.asarray(b, float))
    ac = a - a.mean()
    bc = b2 - b2.mean(axis=1, keepdims=True)
    na = np.sqrt(np.sum(ac * ac))
    nb = np.sqrt(np.sum(bc * bc, axis=1))
    const_a = na < DEGENERATE_TOL
    const_b = nb < DEGENERATE_TOL
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (bc @ ac) / (na * nb)
    r = np.where(const_a & const_b, 1.0, np.where(const_a | const_b, 0.0, r))
    return r if np.ndim(b) == 2 else float(r[0])
