"""Shared machinery of the handoff intervals: per-unit sufficient statistics laid out by
stratum, seeding, and the percentile summary with the empty-denominator rule.

The bootstrap itself is :func:`agentstudies.stats.paired_cluster_bootstrap`: it draws a
stratified multiplicity matrix ``M`` (B x N, rows summing to the stratum sizes) and
evaluates a statistic of ``M @ sums`` for all resamples at once, in chunks. Here ``sums``
is *block-diagonal by stratum*: unit ``i`` of stratum ``k`` writes its ``m`` statistics
into columns ``k*m .. (k+1)*m``, so one matrix product yields the per-stratum totals
(B x K x m) from which both the overall and the per-task-type estimands follow.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.parallel import keyed_seed
from agentstudies.results import Result, ResultProvenance
from agentstudies.specs import check_n_draws
from agentstudies.stats import bootstrap_counts, paired_cluster_bootstrap, percentile_interval

__all__ = ["UnitStats", "bootstrap_seed", "summarise", "run_bootstrap"]


def bootstrap_seed(seed: int | np.random.SeedSequence, *key: Hashable) -> np.random.SeedSequence:
    """The bootstrap stream of one analysis ``key``: ``keyed_seed(seed, *key)``.

    A split's intervals therefore do not depend on which other splits are in the table
    (or on ``n_jobs``). Keys used: ``("handoff", split)``, ``("budget", split)``,
    ``("audit", split)``, ``("prediction", target_split, external_split)``.

    Raises
    ------
    ValueError
        If ``seed`` is not a non-negative int or a SeedSequence.
    """
    try:
        return keyed_seed(seed, *key)
    except TypeError as exc:
        raise ValueError(f"seed must be a non-negative int (or SeedSequence) for reproducible intervals; "
                         f"got {seed!r}") from exc


def check_draws(n_draws: Any, level: float = 0.95, where: str = "") -> int:
    """``n_draws`` as an int: 0 (no intervals) or at least
    :func:`agentstudies.specs.min_draws` (``level``) resamples (40 at 0.95), the one rule
    of the package (:func:`agentstudies.specs.check_n_draws`).

    Raises
    ------
    TypeError
        Not an integer.
    ValueError
        Negative, or 1 <= n_draws < the minimum (an interval of one resample is that
        resample: it excludes its own estimate).
    """
    return check_n_draws(n_draws, level, allow_zero=True, where=where)


def tidy_estimates(table: pd.DataFrame, *, level: float, n: Any) -> pd.DataFrame:
    """A :func:`summarise` table in tidy form: ``n_boot`` -> ``n_draws``, ``side`` and
    ``level`` added (two-sided percentile intervals when resampled), ``n`` the number of
    resampling units (a scalar or a column of ``table``)."""
    t = table.rename(columns={"n_boot": "n_draws"}).copy()
    t["side"] = np.where(t["n_draws"] > 0, "two-sided", "")
    t["level"] = level
    t["n"] = t[n] if isinstance(n, str) else n
    return t


@dataclass(frozen=True, eq=False, kw_only=True)
class HandoffResultBase(Result):
    """Fields every handoff result shares: checkpoint labels, bootstrap settings,
    parameters and provenance (construct subclasses by keyword)."""

    base: str
    treated: str
    n_draws: int
    seed: int
    level: float
    params: Mapping[str, object] = field(default_factory=dict)
    provenance: ResultProvenance = field(default_factory=ResultProvenance)


@dataclass(frozen=True, eq=False)
class UnitStats:
    """Per-unit sufficient statistics of one sample, with the strata of the bootstrap.

    Attributes
    ----------
    units : ndarray (N,)      unit ids (task ids, or trajectory keys)
    strata : ndarray (N,)     stratum code per unit, ``0..K-1``
    stratum_labels : tuple    label of each stratum code (task type, reacher, ...)
    columns : tuple           names of the ``m`` statistics
    values : ndarray (N, m)   counts per unit (float)
    """

    units: np.ndarray
    strata: np.ndarray
    stratum_labels: tuple
    columns: tuple
    values: np.ndarray

    @property
    def n_units(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_strata(self) -> int:
        return len(self.stratum_labels)

    def block_sums(self) -> np.ndarray:
        """(N, K*m) array: unit ``i`` of stratum ``k`` in columns ``k*m:(k+1)*m``."""
        n, m = self.values.shape
        out = np.zeros((n, self.n_strata * m))
        for k in range(self.n_strata):
            rows = self.strata == k
            out[rows, k * m:(k + 1) * m] = self.values[rows]
        return out

    def totals(self, counts: np.ndarray) -> np.ndarray:
        """Per-stratum totals (B, K, m) for a multiplicity matrix ``counts`` (B, N)."""
        counts = np.asarray(counts)
        if counts.ndim != 2 or counts.shape[1] != self.n_units:
            raise ValueError(f"counts must have shape (B, {self.n_units}); got {counts.shape}")
        t = counts @ self.block_sums()
        return t.reshape(counts.shape[0], self.n_strata, len(self.columns))

    def named(self, totals: np.ndarray) -> dict[str, np.ndarray]:
        """Split a (..., m) totals array into ``{column: (...)}``."""
        return {c: totals[..., j] for j, c in enumerate(self.columns)}

    def point_counts(self) -> np.ndarray:
        """The (1, N) all-ones multiplicity matrix of the original sample."""
        return np.ones((1, self.n_units))


def build_unit_stats(frame: pd.DataFrame, unit: str | list[str], stratum: str, columns: Sequence[str]) -> UnitStats:
    """Aggregate row-level 0/1 contributions ``columns`` of ``frame`` by ``unit``."""
    ucols = [unit] if isinstance(unit, str) else list(unit)
    g = frame.groupby(ucols, sort=True)
    vals = g[list(columns)].sum().astype(float)
    strat = g[stratum].first()
    labels = tuple(sorted(strat.unique()))
    code = {lab: i for i, lab in enumerate(labels)}
    units = vals.index.to_numpy() if len(ucols) == 1 else np.array([str(k) for k in vals.index])
    return UnitStats(
        units=units,
        strata=strat.map(code).to_numpy(dtype=np.int64),
        stratum_labels=labels,
        columns=tuple(columns),
        values=vals.to_numpy(),
    )


def run_bootstrap(
    sums: np.ndarray,
    strata: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_draws: int,
    seed_seq: np.random.SeedSequence,
    chunk: int,
) -> np.ndarray:
    """(B, q) replicates from :func:`agentstudies.stats.paired_cluster_bootstrap`."""
    if not isinstance(n_draws, (int, np.integer)) or n_draws < 1:
        raise ValueError(f"n_draws must be a positive integer; got {n_draws!r}")
    if not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer; got {chunk!r}")
    rng = np.random.default_rng(seed_seq)
    with np.errstate(divide="ignore", invalid="ignore"):
        return paired_cluster_bootstrap(sums, statistic, n_draws=int(n_draws), rng=rng, strata=strata, chunk=int(chunk))


def draw_counts(stats: UnitStats, n_draws: int, seed_seq: np.random.SeedSequence) -> np.ndarray:
    """The multiplicity matrix a single-chunk bootstrap of ``stats`` draws (for checks)."""
    return bootstrap_counts(stats.n_units, n_draws, np.random.default_rng(seed_seq), stats.strata)


def summarise(
    names: Sequence[str],
    point: np.ndarray,
    reps: np.ndarray | None,
    *,
    level: float,
    empty_threshold: float,
) -> pd.DataFrame:
    """Point estimate, percentile interval and the empty-denominator bookkeeping.

    A replicate that is NaN (a ratio whose denominator is empty in that draw, e.g. a
    reacher without arrivals) is *excluded and counted*: ``n_excluded`` and
    ``excluded_share = n_excluded / n_boot``; ``flagged`` is True when the share exceeds
    ``empty_threshold`` (the pre-set stopping threshold, 1% in the paper, App. C).
    """
    point = np.asarray(point, dtype=float).reshape(-1)
    rows = {"estimand": list(names), "estimate": point}
    if reps is None or reps.shape[0] == 0:
        nan = np.full(len(names), np.nan)
        rows.update(ci_low=nan, ci_high=nan, n_boot=0, n_excluded=0, excluded_share=nan,
                    flagged=False)
        return pd.DataFrame(rows)
    reps = np.asarray(reps, dtype=float)
    excluded = np.isnan(reps).sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = percentile_interval(reps, level=level, axis=0)
    share = excluded / reps.shape[0]
    rows.update(
        ci_low=lo, ci_high=hi, n_boot=reps.shape[0], n_excluded=excluded.astype(int),
        excluded_share=share, flagged=share > empty_threshold,
    )
    return pd.DataFrame(rows)


def check_level(level: float, empty_threshold: float) -> None:
    if not (isinstance(level, (float, int)) and 0 < level < 1):
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    if not (isinstance(empty_threshold, (float, int)) and 0 <= empty_threshold <= 1):
        raise ValueError(f"empty_threshold must lie in [0, 1]; got {empty_threshold!r}")


def warn_flagged(table: pd.DataFrame, where: str, empty_threshold: float) -> None:
    flagged = table[table["flagged"].astype(bool)]
    if len(flagged):
        names = ", ".join(f"{r.estimand} ({r.excluded_share:.2%})" for r in flagged.itertuples())
        warnings.warn(
            f"{where}: share of bootstrap draws excluded by the empty-denominator rule exceeds "
            f"the stopping threshold {empty_threshold:.2%} for {names}; these intervals are flagged",
            RuntimeWarning,
            stacklevel=3,
        )


def fmt_pp(x: float, digits: int = 1) -> str:
    return "—" if not np.isfinite(x) else f"{100 * x:+.{digits}f}"


def fmt_pct(x: float, digits: int = 1) -> str:
    return "—" if not np.isfinite(x) else f"{100 * x:.{digits}f}"


def fmt_ci(lo: float, hi: float, digits: int = 1) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "[—]"
    return f"[{100 * lo:.{digits}f}, {100 * hi:.{digits}f}]"


def param_dict(**kw) -> Mapping[str, object]:
    return dict(kw)
