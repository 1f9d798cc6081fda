"""Delta-method contributions, the Gaussian multiplier bootstrap and one-sided bands.

Implements SASST (Xu et al., 2026) Lemma 2 (plug-in contributions
``Phi_hat_{k,m} = grad F_m(mu_hat)^T (H_{k,m} - mu_hat_m)``), the cluster Gaussian
multiplier bootstrap of the studentized signed maximum with one multiplier per cluster
shared across all slots (Theorem 1 and Appendix C.5), and the one-sided Bonferroni-t
safeguard (Appendix C.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np
from scipy import stats as _st

from agentstudies._tolerances import DEGENERATE_TOL

__all__ = [
    "plugin_contributions",
    "ratio_contributions",
    "contribution_se",
    "multiplier_draws",
    "multiplier_critical_value",
    "multiplier_maxima",
    "bonferroni_t_critical",
    "pointwise_critical",
    "one_sided_bounds",
    "JointBounds",
    "joint_bounds",
    "studentized_contributions",
    "INFERENCE_METHODS",
]

INFERENCE_METHODS = ("gaussian", "hc1", "t-scaled", "bonferroni-t", "pointwise")


def plugin_contributions(
    H: np.ndarray, gradient: Callable[[np.ndarray], np.ndarray] | np.ndarray
) -> np.ndarray:
    """Plug-in first-order contributions ``Phi_hat_k = grad F(mu_hat)^T (H_k - mu_hat)``.

    Parameters
    ----------
    H : array (N, p)
        Cluster tensor: every weighted numerator and denominator of cluster ``k``.
    gradient : callable ``mu -> (m, p)`` array, or an array (m, p) / (p,)
        Gradient of the reporting map(s) ``F_m`` at ``mu_hat`` (one row per slot).

    Returns
    -------
    array (N, m) (or (N,) if a single gradient vector was given). Columns sum to zero.

    Source: SASST Lemma 2, Eq. (5)-(6).
    """
    H = np.asarray(H, dtype=float)
    if H.ndim != 2 or H.shape[0] == 0:
        raise ValueError(f"H must be a non-empty (N, p) array; got shape {H.shape}")
    mu = H.mean(axis=0)
    grad = gradient(mu) if callable(gradient) else np.asarray(gradient, dtype=float)
    centered = H - mu
    if grad.ndim == 1:
        return centered @ grad
    return centered @ grad.T


def ratio_contributions(values: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Contributions of the weighted ratio ``theta = sum s Z / sum s`` (closed form).

    ``Phi_k = s_k (Z_k - theta) / mean(s)``: Lemma 1's influence
    ``omega_g (h - P^g h)`` evaluated at the plug-in estimates.

    Parameters
    ----------
    values : array (N,) or (N, J)
    scores : array (N,)

    Returns
    -------
    array shaped like ``values``.
    """
    z = np.asarray(values, dtype=float)
    s = np.asarray(scores, dtype=float)
    theta = np.tensordot(s, z, axes=(0, 0)) / s.sum()
    scale = s / s.mean()
    return (z - theta) * (scale if z.ndim == 1 else scale[:, None])


def contribution_se(phi: np.ndarray, *, hc1: bool = False) -> np.ndarray:
    """Standard error ``sigma_hat / sqrt(N)`` with ``sigma_hat^2 = N^{-1} sum_k (Phi_k - mean)^2``.

    ``hc1=True`` multiplies the variance by ``N/(N-1)`` (HC1 inflation).

    Parameters
    ----------
    phi : array (N,) or (N, m)

    Returns
    -------
    array (m,) or float.
    """
    phi = np.asarray(phi, dtype=float)
    n = phi.shape[0]
    if n < 2:
        raise ValueError(f"need at least 2 clusters for a standard error; got {n}")
    var = np.mean((phi - phi.mean(axis=0)) ** 2, axis=0)
    if hc1:
        var = var * n / (n - 1)
    return np.sqrt(var / n)


def multiplier_draws(
    n_clusters: int, n_draws: int, rng: np.random.Generator | int | None
) -> np.ndarray:
    """Gaussian multipliers ``zeta`` of shape (n_draws, n_clusters), one per cluster.

    The same matrix is shared across every slot of a family (Appendix C.5).
    """
    rng = np.random.default_rng(rng)
    return rng.standard_normal((n_draws, n_clusters))


def multiplier_critical_value(
    phi: np.ndarray,
    signs: np.ndarray | None = None,
    *,
    level: float = 0.95,
    n_draws: int = 2000,
    rng: np.random.Generator | int | None = None,
    zeta: np.ndarray | None = None,
    exact: bool = False,
) -> float:
    """Critical value of the studentized signed maximum by the Gaussian multiplier bootstrap.

    ``G*_m = N^{-1/2} sum_k zeta_k (Phi_hat_{k,m} - mean_m)``, ``zeta_k ~ N(0, 1)`` one per
    cluster, shared across slots; the critical value is the ``level = 1 - alpha`` quantile
    of ``max_m eta_m G*_m / sigma_hat_m`` over the non-degenerate slots.

    Parameters
    ----------
    phi : array (N, m)
        Plug-in contributions of the ``m`` slots (columns).
    signs : array (m,) of +1/-1, optional
        One-sided directions ``eta_m``; default all +1.
    level : float
        One-sided familywise confidence level ``1 - alpha``.
    n_draws : int
        Number of multiplier draws ``B``.
    rng : Generator, seed or None
    zeta : array (B, N), optional
        Pre-drawn multipliers (overrides ``n_draws``/``rng``), to share across calls.
    exact : bool
        Draw the multiplier vector from its exact conditional law instead of through
        ``N`` cluster multipliers. Given the data, ``G*`` is exactly
        ``N(0, Sigma_hat)`` (proof of Theorem 1), so drawing ``B x m`` normals times a
        square root of the ``m x m`` correlation of the studentized contributions gives the
        same distribution at ``O(B m^2)`` instead of ``O(B N m)`` cost. For simulations
        with many clusters; the default (False) is the literal cluster multiplier.

    Returns
    -------
    float critical value: the ``level`` quantile of :func:`multiplier_maxima`. With
    ``m = 1`` it approaches the normal quantile ``z_{level}``; with independent slots the
    Sidak quantile ``z_{level^{1/m}}``. The simulated maxima themselves (formerly
    ``return_max=True``, which changed the return type) come from :func:`multiplier_maxima`.

    Raises
    ------
    ValueError
        If every slot is degenerate (zero variance) or shapes disagree.

    Source: SASST Theorem 1 (bootstrap part), Appendix C.5.
    """
    _check_level(level)
    maxima = multiplier_maxima(phi, signs, n_draws=n_draws, rng=rng, zeta=zeta, exact=exact)
    return float(np.quantile(maxima, level))


def multiplier_maxima(
    phi: np.ndarray,
    signs: np.ndarray | None = None,
    *,
    n_draws: int = 2000,
    rng: np.random.Generator | int | None = None,
    zeta: np.ndarray | None = None,
    exact: bool = False,
) -> np.ndarray:
    """The ``B`` simulated maxima ``max_m eta_m G*_m / sigma_hat_m`` of the Gaussian
    multiplier bootstrap, over the non-degenerate slots: the draws whose ``level``
    quantile :func:`multiplier_critical_value` returns (same arguments, same draws for
    the same ``rng`` or ``zeta``).

    Parameters
    ----------
    phi, signs, n_draws, rng, zeta, exact
        As in :func:`multiplier_critical_value`.

    Returns
    -------
    array (B,) of float: one maximum per multiplier draw (``B = n_draws``, or
    ``zeta.shape[0]`` when ``zeta`` is given).

    Raises
    ------
    ValueError
        If every slot is degenerate (zero variance) or shapes disagree.

    Source: SASST Theorem 1 (bootstrap part), Appendix C.5.
    """
    phi = np.asarray(phi, dtype=float)
    if phi.ndim == 1:
        phi = phi[:, None]
    n, m = phi.shape
    eta = np.ones(m) if signs is None else np.asarray(signs, dtype=float)
    if eta.shape != (m,) or not np.all(np.isin(eta, (-1.0, 1.0))):
        raise ValueError(f"signs must be {m} values in {{-1, +1}}; got {signs!r}")
    stud, keep = studentized_contributions(phi, eta)
    if not np.any(keep):
        raise ValueError("every slot has zero contribution variance: no band to calibrate")
    studentized = stud[:, keep]
    if exact and zeta is None:
        corr = studentized.T @ studentized  # (m', m') correlation matrix
        vals, vecs = np.linalg.eigh(corr)
        root = vecs * np.sqrt(np.clip(vals, 0.0, None))
        draws = np.random.default_rng(rng).standard_normal((n_draws, corr.shape[0]))
        maxima = np.max(draws @ root.T, axis=1)
    else:
        if zeta is None:
            zeta = multiplier_draws(n, n_draws, rng)
        elif zeta.shape[1] != n:
            raise ValueError(f"zeta has {zeta.shape[1]} clusters, phi has {n}")
        maxima = np.max(zeta @ studentized, axis=1)
    return maxima


def studentized_contributions(phi: np.ndarray, signs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed, studentized contributions ``eta_m (Phi_km - mean_m) / (sigma_m sqrt(N))``.

    Returns ``(stud, keep)``: ``stud`` (N, m) with zero columns for degenerate slots and
    ``keep`` (m,) marking the slots whose contribution SD exceeds
    ``DEGENERATE_TOL * max(1, max |Phi|)`` (SASST Appendix C.5).
    """
    phi = np.asarray(phi, dtype=float)
    n = phi.shape[0]
    centered = phi - phi.mean(axis=0)
    sigma = np.sqrt(np.mean(centered**2, axis=0))
    keep = sigma > DEGENERATE_TOL * max(1.0, float(np.max(np.abs(phi))) if phi.size else 1.0)
    stud = np.zeros_like(centered)
    stud[:, keep] = centered[:, keep] * (np.asarray(signs, dtype=float)[keep] / (sigma[keep] * np.sqrt(n)))
    return stud, keep


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")


def bonferroni_t_critical(alpha: float, n_slots: int, n_clusters: int) -> float:
    """One-sided Bonferroni-t critical value ``t_{1 - alpha/|J|, N-1}``.

    Parameters
    ----------
    alpha : float in (0, 1), the familywise error rate ``1 - level`` (this formula helper
        keeps the paper's symbol; everything else takes ``level``)
    n_slots : int, ``|J_0|`` the number of planned claims
    n_clusters : int, ``N`` confirmation clusters (degrees of freedom ``N - 1``)

    Source: SASST Appendix C.4.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1); got {alpha}")
    if n_slots < 1:
        raise ValueError(f"n_slots must be >= 1; got {n_slots}")
    if n_clusters < 2:
        raise ValueError(f"n_clusters must be >= 2 for N-1 degrees of freedom; got {n_clusters}")
    return float(_st.t.ppf(1 - alpha / n_slots, n_clusters - 1))


def pointwise_critical(alpha: float) -> float:
    """One-sided normal critical value ``z_{1-alpha}`` for a single (pointwise) bound
    (``alpha = 1 - level``, the paper's symbol, as in :func:`bonferroni_t_critical`)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1); got {alpha}")
    return float(_st.norm.ppf(1 - alpha))


def one_sided_bounds(
    estimate: np.ndarray, se: np.ndarray, signs: np.ndarray, critical: float
) -> np.ndarray:
    """Signed one-sided bounds: ``eta=+1`` lower ``est - c se``; ``eta=-1`` upper ``est + c se``.

    Equivalently the lower band ``B_m`` for ``eta_m Delta_m`` mapped back to ``Delta_m``.
    """
    est = np.asarray(estimate, dtype=float)
    return est - np.asarray(signs, dtype=float) * critical * np.asarray(se, dtype=float)


@dataclass(frozen=True)
class JointBounds:
    """Joint one-sided bounds for a family of slots.

    Attributes
    ----------
    estimate, se, bound : arrays (m,)
    signs : array (m,) of +1/-1
    critical : float, the critical value used
    method : str, one of :data:`INFERENCE_METHODS`
    """

    estimate: np.ndarray
    se: np.ndarray
    bound: np.ndarray
    signs: np.ndarray
    critical: float
    method: str

    def supports(self, thresholds: np.ndarray | float = 0.0) -> np.ndarray:
        """Whether each signed band supports its claim ``eta (Delta - delta) > 0``."""
        return self.signs * (self.bound - np.asarray(thresholds, dtype=float)) > 0


def joint_bounds(
    phi: np.ndarray,
    estimate: np.ndarray,
    signs: np.ndarray,
    *,
    level: float = 0.95,
    method: Literal["gaussian", "hc1", "t-scaled", "bonferroni-t", "pointwise"] = "gaussian",
    n_slots: int | None = None,
    n_draws: int = 2000,
    rng: np.random.Generator | int | None = None,
    zeta: np.ndarray | None = None,
    exact: bool = False,
) -> JointBounds:
    """Simultaneous one-sided bounds for ``m`` slots from their contributions.

    Methods
    -------
    ``gaussian``     multiplier maximum (C.5), SE from ``N^{-1} sum Phi^2``.
    ``hc1``          multiplier maximum with HC1-inflated SEs (``N/(N-1)``).
    ``t-scaled``     multiplier critical value times ``t_{level,N-1} / z_{level}``
                     ("common t scaling").
    ``bonferroni-t`` ``t_{1-alpha/|J|, N-1}`` with ``|J| = n_slots`` (C.4).
    ``pointwise``    ``z_{1-alpha}`` for each slot separately (not simultaneous).

    Parameters
    ----------
    phi : array (N, m); estimate : (m,); signs : (m,) in {-1, +1}
    level : float
        Familywise confidence level ``1 - alpha``.
    exact : bool
        Multiplier drawn from its exact conditional Gaussian law (see
        :func:`multiplier_critical_value`).
    n_slots : int, optional
        Family size ``|J_0|`` for Bonferroni (defaults to ``m``; pass the full planned
        family, including slots without a band, to stay conservative).

    Returns
    -------
    :class:`JointBounds`.
    """
    phi = np.asarray(phi, dtype=float)
    if phi.ndim == 1:
        phi = phi[:, None]
    n, m = phi.shape
    _check_level(level)
    est = np.asarray(estimate, dtype=float).reshape(m)
    eta = np.asarray(signs, dtype=float).reshape(m)
    if method not in INFERENCE_METHODS:
        raise ValueError(f"unknown inference method {method!r}; choose from {INFERENCE_METHODS}")
    se = contribution_se(phi, hc1=(method == "hc1"))
    if method in ("gaussian", "hc1", "t-scaled"):
        crit = multiplier_critical_value(
            phi, eta, level=level, n_draws=n_draws, rng=rng, zeta=zeta, exact=exact
        )
        if method == "t-scaled":
            crit *= _st.t.ppf(level, n - 1) / _st.norm.ppf(level)
    elif method == "bonferroni-t":
        crit = bonferroni_t_critical(1.0 - level, m if n_slots is None else n_slots, n)
    else:
        crit = pointwise_critical(1.0 - level)
    return JointBounds(
        estimate=est,
        se=se,
        bound=one_sided_bounds(est, se, eta, crit),
        signs=eta,
        critical=float(crit),
        method=method,
    )
