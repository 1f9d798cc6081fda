"""Shared pieces of the SASST calibration and small-cluster simulations.

* :class:`StepRule`: a frozen indicator-type rule ``s = inside`` on ``lo < x <= hi`` and
  ``outside`` elsewhere (tercile and subgroup rules; ``outside = 0`` is an indicator).
* :func:`latent_probit_scores`: paired binary outcomes of several systems on the same
  clusters, correlated through one latent task effect, with *exact* marginal success
  probabilities (so population truths need no outcome simulation).
* :func:`coordinatewise_critical`: pointwise one-sided critical values of the Gaussian
  multiplier bootstrap for every slot at once, from one shared multiplier matrix.
* :func:`simultaneous_critical`: the studentized signed-maximum critical value
  (Appendix C.5) from the same matrix, tolerant of degenerate slots.
* :func:`run_trials`: trials through :func:`agentstudies.parallel.seeded_map` (one
  ``SeedSequence`` child per trial) flattened into a table.
* :func:`proportion_interval`: Monte-Carlo (Clopper-Pearson) intervals for rates.

Source: Xu et al. (2026), *Selection-Aware Stress Testing for Interactive Agents*,
Theorem 1 (multiplier bootstrap), Appendix C.3-C.5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np
import pandas as pd
from scipy import special as _special
from statsmodels.stats.proportion import proportion_confint

from agentstudies.parallel import seeded_map
from agentstudies.sasst import SASST, ClusterData, Discovery
from agentstudies.sasst import SharedWork
from agentstudies.sasst.rules import Rule
from agentstudies.stats import multiplier_critical_value, studentized_contributions

__all__ = [
    "Confirmed", "confirm_lean",
    "StepRule",
    "latent_probit_scores",
    "coordinatewise_critical",
    "simultaneous_critical",
    "run_trials",
    "proportion_interval",
]


@dataclass(frozen=True, eq=False)
class StepRule(Rule):
    """``s(W) = inside`` if ``lo < x_col <= hi`` else ``outside`` (bounded, nonnegative).

    With ``outside = 0`` the rule is the indicator of a feature interval (a tercile or a
    planted subgroup); the reweighted distribution ``P^g`` is then ``P`` conditioned on
    the interval (SASST Eq. 1). Thresholds are frozen numbers, never fitted on outcomes.
    """

    kind = "step"
    columns: tuple[str, ...] = ()
    lo: float = -np.inf
    hi: float = np.inf
    inside: float = 1.0
    outside: float = 0.0
    label: str = ""

    def __post_init__(self) -> None:
        if len(self.columns) != 1:
            raise ValueError(f"StepRule needs exactly one column; got {self.columns}")
        if not (self.inside >= 0 and self.outside >= 0) or self.inside == self.outside == 0:
            raise ValueError(f"StepRule weights must be >= 0 and not both 0; got {self.inside}, {self.outside}")
        if not self.lo < self.hi:
            raise ValueError(f"StepRule needs lo < hi; got {self.lo}, {self.hi}")

    def score(self, X: np.ndarray) -> np.ndarray:
        x = np.asarray(X, dtype=float)[:, 0]
        inside = x > self.lo
        inside &= x <= self.hi  # in place: one array fewer per rule (a registry scores 24 per discovery)
        return np.where(inside, self.inside, self.outside)

    def describe(self) -> str:
        if self.label:
            return self.label
        return f"weight {self.inside:g} where {self.lo:.4g} < {self.columns[0]} <= {self.hi:.4g}, else {self.outside:g}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "columns": list(self.columns), "lo": float(self.lo), "hi": float(self.hi),
                "inside": self.inside, "outside": self.outside, "label": self.label}


class Confirmed(NamedTuple):
    """A confirmation through :meth:`SASST.confirm_records`, report rows keyed by slot."""

    rows: dict[str, dict[str, Any]]
    phi: np.ndarray
    phi_slots: tuple[str, ...]
    critical: float


def confirm_lean(eng: SASST, disc: Discovery, I: ClusterData, shared: SharedWork | None = None) -> Confirmed:
    """``eng.confirm(disc, I)`` without the report tables: the simulation trials' path.

    The same numbers as the report (``SASST.confirm`` is built on ``confirm_records``);
    ``shared`` is the trial's :class:`~agentstudies.sasst._shared.SharedWork` (or None).
    """
    rows, phi, names, crit = eng.confirm_records(disc, I, shared=shared)
    return Confirmed({r["slot"]: r for r in rows}, phi, names, crit)


def latent_probit_scores(p: np.ndarray, rho: float, n_seeds: int, rng: np.random.Generator) -> np.ndarray:
    """Seed-averaged paired binary scores with exact marginal success probabilities.

    Cluster ``k``, system ``j``, seed ``r``:
    ``Y_kjr = 1{Phi^{-1}(p_kj) + rho u_k + sqrt(1 - rho^2) e_kjr > 0}`` with a task effect
    ``u_k ~ N(0, 1)`` shared by every system and seed (paired, positively correlated
    outcomes) and independent ``e_kjr ~ N(0, 1)``. Because ``rho u + sqrt(1-rho^2) e`` is
    standard normal, ``P(Y_kjr = 1 | W_k) = p_kj`` exactly.

    Parameters
    ----------
    p : array (N, J) of success probabilities in [0, 1]
    rho : float in [0, 1)
    n_seeds : int >= 1
    rng : Generator

    Returns
    -------
    array (N, J): ``Z_kj = mean_r Y_kjr``.

    Raises
    ------
    ValueError
        If ``p`` leaves [0, 1], ``rho`` leaves [0, 1) or ``n_seeds < 1``.
    """
    p = _check_latent(p, rho, n_seeds)
    with np.errstate(divide="ignore"):
        # -inf at p = 0, +inf at p = 1: always 0 / always 1 (scipy.special.ndtri: what
        # norm.ppf evaluates at loc 0, scale 1, the same bits, without its argument machinery)
        idx = _special.ndtri(p)
    return _latent_scores_from_index(idx, rho, n_seeds, rng)


def _check_latent(p: np.ndarray, rho: float, n_seeds: int) -> np.ndarray:
    """The input checks of :func:`latent_probit_scores`; returns ``p`` as a float array."""
    p = np.asarray(p, dtype=float)
    if p.ndim != 2 or not np.all((p >= 0) & (p <= 1)):
        raise ValueError("p must be an (N, J) array of probabilities in [0, 1]")
    if not 0 <= rho < 1:
        raise ValueError(f"rho must lie in [0, 1); got {rho}")
    if n_seeds < 1:
        raise ValueError(f"n_seeds must be >= 1; got {n_seeds}")
    return p


def _latent_scores_from_index(idx: np.ndarray, rho: float, n_seeds: int, rng: np.random.Generator) -> np.ndarray:
    """:func:`latent_probit_scores` from the probit indices ``Phi^{-1}(p)`` (N, J), already checked."""
    n, J = idx.shape
    u = rng.standard_normal(n)
    e = rng.standard_normal((n, J, n_seeds))
    y = (idx[:, :, None] + rho * u[:, None, None] + np.sqrt(1 - rho**2) * e) > 0
    return y.mean(axis=2)


def coordinatewise_critical(phi: np.ndarray, signs: np.ndarray, zeta: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Pointwise one-sided multiplier critical values of every slot from shared draws.

    For slot ``m`` the critical value is the ``level`` quantile over draws ``b`` of
    ``eta_m G*_bm / sigma_m`` with ``G*_bm = N^{-1/2} sum_k zeta_bk (Phi_km - mean_m)`` (the
    coordinatewise bootstrap quantile of Theorem 1's proof). Identical to calling
    :func:`agentstudies.stats.multiplier_critical_value` on each column with the same
    ``zeta``, but with one matrix product for all slots.

    Parameters
    ----------
    phi : array (N, m), plug-in contributions
    signs : array (m,) in {-1, +1}
    zeta : array (B, N), one Gaussian multiplier per cluster and draw, shared by slots
    level : one-sided confidence level (``1 - alpha``)

    Returns
    -------
    array (m,); NaN for a degenerate slot (zero contribution variance).
    """
    phi = np.asarray(phi, dtype=float)
    if phi.ndim == 1:
        phi = phi[:, None]
    if zeta.shape[1] != phi.shape[0]:
        raise ValueError(f"zeta has {zeta.shape[1]} clusters, phi has {phi.shape[0]}")
    stud, keep = studentized_contributions(phi, np.asarray(signs, dtype=float))
    draws = zeta @ stud  # (B, m)
    crit = np.quantile(draws, level, axis=0)
    return np.where(keep, crit, np.nan)


def exact_multiplier_draws(phi: np.ndarray, n_draws: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draws (B, m) with exactly the law of ``zeta @ stud`` given the data, without the
    ``B x N`` cluster multipliers.

    ``stud`` are the unsigned studentized contributions
    (:func:`studentized_contributions` with signs +1). Given the data, ``zeta @ stud`` is
    Gaussian with mean 0 and covariance ``stud^T stud`` (the slots' contribution
    correlation; proof of SASST Theorem 1), so ``B x m`` standard normals times a square
    root of that ``m x m`` matrix have the same distribution at ``O(B m^2)`` instead of
    ``O(B N m)``. Signed statistics for either side reuse the same draws (``eta * G``).

    Returns ``(G, keep)``; degenerate slots have zero columns and ``keep`` False.
    """
    phi = np.asarray(phi, dtype=float)
    if phi.ndim == 1:
        phi = phi[:, None]
    stud, keep = studentized_contributions(phi, np.ones(phi.shape[1]))
    cov = stud.T @ stud
    vals, vecs = np.linalg.eigh(cov)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    G = rng.standard_normal((n_draws, phi.shape[1])) @ root.T
    return G, keep


def exact_coordinatewise_critical(phi: np.ndarray, signs: np.ndarray, n_draws: int, rng: np.random.Generator,
                                  level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise one-sided critical values for ``signs`` and for ``-signs`` from ONE set of
    exact conditional draws (:func:`exact_multiplier_draws`): ``(crit_signs, crit_opposite)``,
    each (m,), NaN for degenerate slots. Same distribution as
    :func:`coordinatewise_critical` with cluster multipliers."""
    G, keep = exact_multiplier_draws(phi, n_draws, rng)
    eta = np.asarray(signs, dtype=float)
    # one partition for both sides: the level quantile of -X is minus the 1 - level quantile of X
    q = np.quantile(G * eta, [level, 1.0 - level], axis=0)
    return np.where(keep, q[0], np.nan), np.where(keep, -q[1], np.nan)


def exact_simultaneous_critical(phi: np.ndarray, signs: np.ndarray, n_draws: int, rng: np.random.Generator,
                                level: float = 0.95) -> float:
    """Signed studentized-maximum critical value (Appendix C.5) from exact conditional draws
    (:func:`exact_multiplier_draws`): same distribution as :func:`simultaneous_critical`
    with cluster multipliers; NaN when every slot is degenerate."""
    G, keep = exact_multiplier_draws(phi, n_draws, rng)
    if not keep.any():
        return float("nan")
    return float(np.quantile(np.max((G * np.asarray(signs, float))[:, keep], axis=1), level))


def simultaneous_critical(phi: np.ndarray, signs: np.ndarray, zeta: np.ndarray, level: float = 0.95) -> float:
    """Signed studentized-maximum critical value (Appendix C.5) from shared multipliers.

    :func:`agentstudies.stats.multiplier_critical_value` with ``zeta``; NaN instead of an
    error when every slot is degenerate (then every bound equals its estimate).
    """
    phi = np.asarray(phi, dtype=float)
    if phi.ndim == 1:
        phi = phi[:, None]
    try:
        return float(multiplier_critical_value(phi, np.asarray(signs, float), level=level, zeta=zeta))
    except ValueError as exc:
        if "zero contribution variance" in str(exc):
            return float("nan")
        raise


def run_trials(
    func: Callable[..., list[dict[str, Any]]],
    n_trials: int,
    *,
    seed: int | np.random.SeedSequence,
    n_jobs: int = 1,
    backend: str = "loky",
    **kwargs: Any,
) -> pd.DataFrame:
    """Run ``func(trial, rng, **kwargs) -> list of records`` for every trial; one table.

    Trial ``i`` always receives the ``i``-th child of ``SeedSequence(seed)``
    (:func:`agentstudies.parallel.seeded_map`), so the table does not depend on
    ``n_jobs`` or ``backend`` (``loky``, ``threading``, ``sequential`` or ``dask``).
    A ``trial`` column is added.

    Raises
    ------
    ValueError
        If ``n_trials < 1`` or the backend is unknown.
    """
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1; got {n_trials}")
    out = seeded_map(func, int(n_trials), seed=seed, n_jobs=n_jobs, backend=backend, **kwargs)
    rows = [dict(r, trial=i) for i, recs in enumerate(out) for r in recs]
    return pd.DataFrame(rows)


def proportion_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval for a Monte-Carlo rate (``statsmodels``); (nan, nan) if n = 0."""
    if n <= 0:
        return float("nan"), float("nan")
    lo, hi = proportion_confint(int(successes), int(n), alpha=1 - level, method="beta")
    return float(lo), float(hi)
