"""Planning tools for a user's own SASST design (Xu et al., 2026, Sec. 5 and App. D.2-D.3).

The paper's advice for the next protected study is "a power plan based on stressed ESS"
and a check that the joint bound covers at the planned number of independent clusters.
These functions take the user's numbers -- confirmation clusters ``N``, the slot family's
rules on the user's own (score-blind) task features, an effect size -- instead of the
tau-bench task pool of the chapters.

* :func:`family_ess` -- stressed ESS ``n_eff = 1 / sum_i w_i^2`` and density ratio
  ``n max_i w_i`` of every rule of a family on the user's features (what ``N`` clusters
  drawn like those features give each rule).
* :func:`stressed_power` -- power of the one-sided stressed bound for effect ``delta``
  with per-cluster contrast SD ``sigma``: ``se = sigma / sqrt(n_eff)``, power
  ``Phi(|delta| / se - c)`` with ``c`` the Bonferroni-t (``t_{n_eff-1}``, ``1 - alpha / m``)
  or Gaussian (``z_{1 - alpha / m}``) critical value for ``m`` slots.
* :func:`required_ess` -- the stressed ESS that reaches a target power (normal theory).
* :func:`coverage_check` -- Monte-Carlo coverage of the one-sided frozen-rule bound at the
  user's ``N`` under a null (or any) success model on the user's task pool: clusters are
  drawn with replacement from the pool, binary outcomes per system, the weighted contrast
  and its plug-in SE (Lemma 2), the bound at the chosen critical value; returns coverage
  with its Clopper-Pearson interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from agentstudies.sasst._scores import rule_scores
from agentstudies.sasst._rules import Rule, RuleFamily

__all__ = ["family_ess", "stressed_power", "required_ess", "coverage_check", "CoverageCheck"]

_METHODS = ("bonferroni-t", "gaussian")


def _critical(method: str, level: float, n_slots: int, df: np.ndarray | float) -> np.ndarray:
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
    if not 0 < level < 1 or n_slots < 1:
        raise ValueError(f"level must lie in (0, 1) and n_slots be >= 1; got {level}, {n_slots}")
    q = 1.0 - (1.0 - level) / n_slots
    if method == "gaussian":
        return np.full(np.shape(df), stats.norm.ppf(q)) if np.ndim(df) else np.asarray(stats.norm.ppf(q))
    return stats.t.ppf(q, np.maximum(np.asarray(df, float), 1.0))


def family_ess(family: RuleFamily | Sequence[Rule], features: pd.DataFrame | np.ndarray,
               columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Stressed ESS and density ratio of every rule of a family on the user's features.

    ``family`` is fitted on ``features`` when it is a :class:`RuleFamily` (score-blind, as
    discovery does). Returns one row per rule: ``rule``, ``ess`` (``1 / sum w^2``),
    ``ess_share`` (``ess / n``) and ``max_density`` (``n max w``); a design with ``N``
    clusters drawn like these features gives each rule about ``ess_share * N``.

    Raises ``KeyError`` if a rule needs a column the features lack.
    """
    X = features.to_numpy(float) if isinstance(features, pd.DataFrame) else np.asarray(features, float)
    cols = list(features.columns) if isinstance(features, pd.DataFrame) else list(columns or [])
    rules = family.fit(X, cols) if isinstance(family, RuleFamily) else list(family)
    n = X.shape[0]
    rows = []
    for r in rules:
        s = rule_scores(r, X, cols)
        w = s / s.sum()
        ess = 1.0 / float(np.sum(w * w))
        rows.append({"rule": r.describe(), "ess": ess, "ess_share": ess / n, "max_density": n * float(w.max())})
    return pd.DataFrame(rows)


def stressed_power(effect: float, sigma: float, ess: float | np.ndarray, *, level: float = 0.95,
                   n_slots: int = 1, method: str = "bonferroni-t") -> np.ndarray | float:
    """Power of the one-sided stressed bound to confirm a claim of size ``effect``.

    Normal theory for the weighted contrast: ``se = sigma / sqrt(ess)`` (the plug-in
    variance of a normalized weighted mean is ``sigma^2 sum w^2``), and the claim is
    confirmed when the bound clears 0, so power ``= Phi(|effect| / se - c)`` with ``c``
    from ``method`` at familywise ``level`` over ``n_slots`` (Bonferroni-t: Student ``t``
    with ``ess - 1`` degrees of freedom).

    Parameters
    ----------
    effect : the true stressed contrast (its sign does not matter; the claim's sign does)
    sigma : SD of one cluster's paired contrast (e.g. ``sqrt(2 p (1 - p) (1 - r))`` for
        binary outcomes with success ``p`` and within-task correlation ``r``)
    ess : stressed ESS (scalar or array), e.g. ``family_ess(...)["ess_share"] * N``

    Raises ``ValueError`` for ``sigma <= 0``, ``ess <= 1`` or a bad level / method.
    """
    ess_a = np.asarray(ess, float)
    if sigma <= 0 or np.any(ess_a <= 1):
        raise ValueError(f"sigma must be > 0 and ess > 1; got {sigma}, {ess}")
    c = _critical(method, level, n_slots, ess_a - 1.0)
    out = stats.norm.cdf(abs(effect) * np.sqrt(ess_a) / sigma - c)
    return float(out) if np.ndim(out) == 0 else out


def required_ess(effect: float, sigma: float, *, power: float = 0.8, level: float = 0.95,
                 n_slots: int = 1) -> float:
    """Stressed ESS for ``power`` at ``effect`` (normal theory, Gaussian critical value):
    ``((z_{1 - alpha/m} + z_power) sigma / |effect|)^2``."""
    if effect == 0 or sigma <= 0 or not 0 < power < 1:
        raise ValueError("effect must be nonzero, sigma > 0 and power in (0, 1)")
    z = stats.norm.ppf(1.0 - (1.0 - level) / n_slots) + stats.norm.ppf(power)
    return float((z * sigma / abs(effect)) ** 2)


@dataclass(frozen=True)
class CoverageCheck:
    """Result of :func:`coverage_check`: ``coverage`` with Clopper-Pearson ``ci_low``,
    ``ci_high`` over ``n_trials``; ``truth`` (the rule's population contrast on the pool),
    ``mean_ess`` and ``mean_bound``."""

    coverage: float
    ci_low: float
    ci_high: float
    n_trials: int
    truth: float
    mean_ess: float
    mean_bound: float


def coverage_check(rule: Rule | None, features: pd.DataFrame, success: np.ndarray, *, n_clusters: int,
                   contrast: tuple[int, int] = (1, 0), sign: int = -1, n_seeds: int = 1, level: float = 0.95,
                   n_slots: int = 1, method: str = "bonferroni-t", n_trials: int = 2000,
                   seed: int | np.random.SeedSequence = 0) -> CoverageCheck:
    """Monte-Carlo coverage of the frozen rule's one-sided bound at the user's ``N``.

    Each trial draws ``n_clusters`` tasks with replacement from the user's pool
    (``features``: one row per task), ``n_seeds`` independent binary outcomes per system
    with ``success`` (tasks x systems) probabilities, the cluster contrast ``d_k`` of
    systems ``contrast = (a, b)`` (``a - b``), the weighted estimate ``sum s d / sum s``,
    its plug-in SE ``sqrt(mean(phi^2) / N)`` with ``phi = s (d - est) / mean(s)`` (Lemma 2)
    and the bound ``est - sign * c * se`` (upper for ``sign = -1``). The bound covers when
    it lies on the correct side of the pool truth ``sum_i s_i (p_ia - p_ib) / sum_i s_i``.

    ``rule=None`` is the uniform slot. Raises ``ValueError`` on mismatched shapes.
    """
    p = np.asarray(success, float)
    n_pool = len(features)
    if p.ndim != 2 or p.shape[0] != n_pool:
        raise ValueError(f"success must have shape ({n_pool}, n_systems); got {p.shape}")
    if n_clusters < 2 or sign not in (1, -1):
        raise ValueError("n_clusters must be >= 2 and sign +1 or -1")
    a, b = contrast
    s_pool = np.ones(n_pool) if rule is None else rule_scores(rule, features.to_numpy(float), list(features.columns))
    truth = float(np.sum(s_pool * (p[:, a] - p[:, b])) / s_pool.sum())
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    rng = np.random.default_rng(ss)
    idx = rng.integers(0, n_pool, size=(n_trials, n_clusters))
    ya = rng.binomial(n_seeds, p[idx, a]) / n_seeds
    yb = rng.binomial(n_seeds, p[idx, b]) / n_seeds
    d = ya - yb
    s = s_pool[idx]
    est = np.sum(s * d, axis=1) / s.sum(axis=1)
    phi = s * (d - est[:, None]) / s.mean(axis=1, keepdims=True)
    se = np.sqrt(np.mean(phi * phi, axis=1) / n_clusters)
    w = s / s.sum(axis=1, keepdims=True)
    ess = 1.0 / np.sum(w * w, axis=1)
    c = _critical(method, level, n_slots, np.full(n_trials, n_clusters - 1.0))
    bound = est - sign * c * se
    covered = sign * (truth - bound) >= -1e-12
    k = int(covered.sum())
    lo = float(stats.beta.ppf(0.025, k, n_trials - k + 1)) if k > 0 else 0.0
    hi = float(stats.beta.ppf(0.975, k + 1, n_trials - k)) if k < n_trials else 1.0
    return CoverageCheck(coverage=k / n_trials, ci_low=lo, ci_high=hi, n_trials=n_trials, truth=truth,
                         mean_ess=float(ess.mean()), mean_bound=float(bound.mean()))
