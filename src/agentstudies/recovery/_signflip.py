"""The task-level sign-flip (randomisation) test of a paired difference.

Under the sharp null that recovery changes no task's outcome in distribution, each task's
paired difference ``D_i`` (for example the sum over a task's conditions of ``Y_i^pi -
Y_i^never``) is symmetric about zero, so flipping its sign leaves the distribution of
``S = sum_i D_i`` unchanged. The p-value compares the observed ``S`` with the ``2^n``
sign assignments (CIR paper, "Test: 70.33% -> 73.33%": the +3.00 pp gain "has a
task-level sign-flip test (p = 0.034)").

Three exact-or-not routes, chosen automatically (``method="auto"``):

* ``"exact-dp"``: integer-valued differences (sums of 0/1 outcomes): the exact null
  distribution of ``S`` by convolution of the two-point laws ``{-|D_i|, +|D_i|}`` (a
  polynomial product) -- exact for any number of tasks;
* ``"exact"``: at most ``exact_max`` non-zero differences: all ``2^k`` sign vectors are
  enumerated (zeros do not move ``S``);
* ``"monte-carlo"``: otherwise ``n_draws`` random sign vectors, ``p = (1 + #{|S*| >=
  |S|}) / (1 + n_draws)`` (never zero).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from agentstudies._tolerances import TIE_TOL
from agentstudies.parallel import keyed_seed
from agentstudies.results import Result, ResultProvenance, make_provenance, tidy_rows

__all__ = ["SignFlipResult", "sign_flip_test", "ALTERNATIVES"]

ALTERNATIVES = ("two-sided", "greater", "less")


@dataclass(frozen=True)
class SignFlipResult(Result):
    """Outcome of :func:`sign_flip_test`.

    Attributes: ``statistic`` (observed mean difference, in the input's unit), ``p_value``,
    ``n`` (clusters), ``n_nonzero``, ``method`` ("exact-dp" / "exact" / "monte-carlo"),
    ``alternative``. Tidy rows: ``mean_difference`` and ``sign_flip_p``.
    """

    statistic: float
    p_value: float
    n: int
    n_nonzero: int
    method: str
    alternative: str
    params: Mapping[str, Any] = field(default_factory=dict)
    provenance: ResultProvenance = field(default_factory=ResultProvenance)
    title: str = "task-level sign-flip test"

    def _tidy(self) -> pd.DataFrame:
        return tidy_rows([
            dict(estimand="mean_difference", estimate=self.statistic, n=self.n),
            dict(estimand="sign_flip_p", estimate=self.p_value, n=self.n),
        ])


def _tail(null_s: np.ndarray, weights: np.ndarray | None, s_obs: float, alternative: str) -> float:
    tol = TIE_TOL * max(1.0, abs(s_obs))
    if alternative == "two-sided":
        hit = np.abs(null_s) >= abs(s_obs) - tol
    elif alternative == "greater":
        hit = null_s >= s_obs - tol
    else:
        hit = null_s <= s_obs + tol
    if weights is None:
        return float(hit.mean())
    return float(weights[hit].sum())


def _exact_dp(d: np.ndarray, s_obs: float, alternative: str) -> float:
    a = np.abs(d).astype(np.int64)
    total = int(a.sum())
    # distribution of sum_i eps_i a_i over support -total..total (offset by total)
    dist = np.zeros(2 * total + 1)
    dist[total] = 1.0
    for v in a:
        if v == 0:
            continue
        new = np.zeros_like(dist)
        new[v:] += 0.5 * dist[: dist.size - v]
        new[: dist.size - v] += 0.5 * dist[v:]
        dist = new
    support = np.arange(-total, total + 1, dtype=float)
    return _tail(support, dist, s_obs, alternative)


def _exact_enum(d: np.ndarray, s_obs: float, alternative: str) -> float:
    k = d.size
    lo = min(k, 12)
    low_bits = ((np.arange(2 ** lo)[:, None] >> np.arange(lo)) & 1) * 2 - 1  # (2^lo, lo)
    low_sums = low_bits @ d[:lo]
    hits = 0.0
    n_high = k - lo
    for h in range(2 ** n_high):
        signs = (((h >> np.arange(n_high)) & 1) * 2 - 1) if n_high else np.zeros(0)
        s = low_sums + (signs @ d[lo:] if n_high else 0.0)
        hits += _tail(s, None, s_obs, alternative) * s.size
    return hits / 2 ** k


def sign_flip_test(
    differences,
    *,
    alternative: str = "two-sided",
    method: str = "auto",
    exact_max: int = 20,
    n_draws: int = 100_000,
    seed: int = 0,
) -> SignFlipResult:
    """Task-level sign-flip test of ``H0: D_i symmetric about 0`` (paired randomisation).

    Parameters
    ----------
    differences : array-like (n,)
        One paired difference per cluster (task), any unit; finite.
    alternative : {"two-sided", "greater", "less"}
        Two-sided: ``P(|S*| >= |S|)``; greater: ``P(S* >= S)``; less: ``P(S* <= S)``.
    method : {"auto", "exact-dp", "exact", "monte-carlo"}
        See the module docstring; ``"auto"`` picks exact-dp for integer differences, else
        exact enumeration when at most ``exact_max`` are non-zero, else Monte Carlo.
    exact_max : int
        Largest number of non-zero differences enumerated exactly.
    n_draws : int
        Random sign vectors of the Monte Carlo route.
    seed : int
        Root seed (the Monte Carlo signs use ``keyed_seed(seed, "sign-flip")``).

    Returns
    -------
    :class:`SignFlipResult` (``statistic`` is the mean of ``differences``).

    Raises
    ------
    ValueError
        Empty or 2-D input, a non-finite difference, an unknown alternative or method, or
        ``method="exact-dp"`` with non-integer differences.
    """
    d = np.asarray(differences, dtype=float)
    if d.ndim > 1:
        raise ValueError(f"sign_flip_test: differences must be 1-D, one paired difference per cluster; got an "
                         f"array of shape {d.shape} (flattening would treat its cells as independent clusters); "
                         "pass one column, e.g. differences[:, j], or the per-cluster means")
    d = d.reshape(-1)
    if d.size == 0:
        raise ValueError("sign_flip_test needs at least one paired difference")
    if not np.isfinite(d).all():
        i = int(np.flatnonzero(~np.isfinite(d))[0])
        raise ValueError(f"sign_flip_test: difference {i} is {d[i]!r}; expected finite values")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative={alternative!r}; expected one of {ALTERNATIVES}")
    if method not in ("auto", "exact-dp", "exact", "monte-carlo"):
        raise ValueError(f"method={method!r}; expected 'auto', 'exact-dp', 'exact' or 'monte-carlo'")
    if n_draws < 1:
        raise ValueError(f"n_draws={n_draws}: expected a positive integer")
    nz = d[d != 0.0]
    s_obs = float(d.sum())
    is_int = bool(np.all(d == np.round(d))) and np.abs(d).sum() < 5e6
    if method == "auto":
        method = "exact-dp" if is_int else ("exact" if nz.size <= exact_max else "monte-carlo")
    if method == "exact-dp" and not is_int:
        raise ValueError("method='exact-dp' needs integer-valued differences (e.g. sums of 0/1 outcomes)")
    if nz.size == 0:
        p = 1.0  # every sign vector gives S* = 0 = S
    elif method == "exact-dp":
        p = _exact_dp(nz, s_obs, alternative)
    elif method == "exact":
        if nz.size > 26:
            raise ValueError(f"exact enumeration of 2^{nz.size} sign vectors is too large; use 'monte-carlo'")
        p = _exact_enum(nz, s_obs, alternative)
    else:
        rng = np.random.default_rng(keyed_seed(seed, "sign-flip"))
        hits = 0
        done = 0
        while done < n_draws:
            b = min(20_000, n_draws - done)
            signs = rng.integers(0, 2, size=(b, nz.size)) * 2 - 1
            hits += int(round(_tail(signs @ nz, None, s_obs, alternative) * b))
            done += b
        p = (1 + hits) / (1 + n_draws)
    return SignFlipResult(
        statistic=float(d.mean()), p_value=float(min(1.0, p)), n=int(d.size), n_nonzero=int(nz.size),
        method=method, alternative=alternative,
        params=dict(alternative=alternative, method=method, exact_max=exact_max, n_draws=n_draws, seed=seed),
        provenance=make_provenance(seed=seed, differences=d),
    )
