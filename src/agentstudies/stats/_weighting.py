"""Cluster-level weighted ratios, effective sample size and density ratios.

Notation follows SASST (Xu et al., 2026), Section 2 and Appendix C.2: a candidate rule
assigns each cluster ``i`` a nonnegative score ``s_g(W_i)``; the normalized weights are
``w_i(g) = s_g(W_i) / sum_l s_g(W_l)``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "normalized_weights",
    "weighted_ratio",
    "effective_sample_size",
    "max_density_ratio",
]


def _as_scores(scores: np.ndarray, name: str = "scores") -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D (n,) or 2-D (G, n); got shape {s.shape}")
    if s.shape[-1] == 0:
        raise ValueError(f"{name} is empty: no clusters")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if np.any(s < 0):
        raise ValueError(f"{name} must be nonnegative (rule scores s_g(W) >= 0)")
    total = s.sum(axis=-1)
    if np.any(total <= 0):
        raise ValueError(f"{name} sum to zero: the weighted denominator is not positive")
    return s


def normalized_weights(scores: np.ndarray) -> np.ndarray:
    """Normalized cluster weights ``w_i = s_i / sum_l s_l``.

    Parameters
    ----------
    scores : array (n,) or (G, n)
        Nonnegative rule scores for ``n`` clusters (one row per candidate rule).

    Returns
    -------
    array of the same shape, rows summing to one.

    Raises
    ------
    ValueError
        If scores are negative, non-finite, empty, or sum to zero.

    Source: SASST Appendix C.2, ``w_i(g; D)``.
    """
    s = _as_scores(scores)
    return s / s.sum(axis=-1, keepdims=True)


def weighted_ratio(values: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Cluster-level weighted ratio ``sum_i s_i Z_i / sum_i s_i``.

    Parameters
    ----------
    values : array (n,) or (n, J)
        Cluster-level outcomes (for example the seed-averaged score of each workflow).
    scores : array (n,)
        Nonnegative cluster weights ``s_g(W_i)``.

    Returns
    -------
    float or array (J,)

    Source: SASST Eq. (1) and Lemma 1 (``P_n^g h``).
    """
    s = _as_scores(scores)
    z = np.asarray(values, dtype=float)
    if z.shape[0] != s.shape[-1]:
        raise ValueError(f"values have {z.shape[0]} clusters but scores have {s.shape[-1]}")
    if not np.all(np.isfinite(z)):
        raise ValueError("values contain NaN or infinite entries")
    return np.tensordot(s, z, axes=(0, 0)) / s.sum()


def effective_sample_size(scores: np.ndarray) -> np.ndarray | float:
    """Kish effective sample size ``(sum_i w_i^2)^{-1}`` of normalized weights.

    Equals ``n`` for uniform weights and 1 when a single cluster carries all weight.

    Parameters
    ----------
    scores : array (n,) or (G, n)

    Returns
    -------
    float, or array (G,) for a 2-D input.

    Source: SASST Appendix C.2, ``ESS_g``.
    """
    w = normalized_weights(scores)
    ess = 1.0 / np.sum(w * w, axis=-1)
    return float(ess) if np.ndim(ess) == 0 else ess


def max_density_ratio(scores: np.ndarray) -> np.ndarray | float:
    """Maximum density ratio ``kappa_g = n * max_i w_i`` against the uniform weighting.

    Equals 1 for uniform weights; ``n`` when one cluster carries all weight.

    Parameters
    ----------
    scores : array (n,) or (G, n)

    Returns
    -------
    float, or array (G,) for a 2-D input.

    Source: SASST Appendix C.2, ``kappa_hat_g = |D| max_i w_i(g; D)``.
    """
    w = normalized_weights(scores)
    k = w.shape[-1] * np.max(w, axis=-1)
    return float(k) if np.ndim(k) == 0 else k
