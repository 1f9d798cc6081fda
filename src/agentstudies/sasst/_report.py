"""The SASST report: joint one-sided bounds, band checks, statuses and the report table (App. C.4-C.5).

:func:`_joint_band` forms the joint band of the support-feasible slots (Gaussian
multiplier maximum with one multiplier per confirmation cluster shared across slots, or
Bonferroni-t); :func:`_status_fields` checks each slot's band and assigns one of the five
statuses of Table 3; :class:`SASSTReport` holds the wide report (:data:`REPORT_COLUMNS`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.sasst._results import Discovery
from agentstudies.sasst._slots import STATUSES, recommendation, slot_status
from agentstudies._tolerances import DEGENERATE_TOL
from agentstudies.parallel import keyed_seed
from agentstudies.results import Result, ResultProvenance, tidy_rows
from agentstudies.stats import (INFERENCE_METHODS, bonferroni_t_critical, contribution_se, joint_bounds, multiplier_draws,
                                pointwise_critical)

__all__ = ["REPORT_COLUMNS", "SASSTReport"]

#: Inference methods whose critical value is a Gaussian multiplier maximum.
_MULTIPLIER_METHODS = ("gaussian", "hc1", "t-scaled")


@functools.lru_cache(maxsize=256)
def _fixed_critical(method: str, level: float, n_slots: int, n: int) -> float:
    """The data-free critical value of ``joint_bounds``: Bonferroni-t ``t_{1 - alpha/|J|, N-1}``
    or the pointwise normal quantile (both from :mod:`agentstudies.stats`), per (level, |J|, N)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    if method == "bonferroni-t":
        return bonferroni_t_critical(1.0 - level, n_slots, n)
    return pointwise_critical(1.0 - level)


def _joint_band(
    phi: np.ndarray, estimate: np.ndarray, sign: np.ndarray, *, method: str, level: float,
    n_slots: int, n_draws: int, exact: bool, seed: Any,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Joint one-sided bounds of the support-feasible slots (C.4): ``(se, bound, critical)``.

    The multipliers come from ``keyed_seed(seed, "multiplier")`` (one per confirmation
    cluster, shared across slots), so the engine and :meth:`SASSTReport.with_inference`
    draw the same band. Contributions that are all constant give ``se = 0``, the bound at
    the estimate and no critical value (multiplier methods).
    """
    if np.all(phi.std(axis=0) <= DEGENERATE_TOL) and method in _MULTIPLIER_METHODS:
        return np.zeros(len(estimate)), np.asarray(estimate, float).copy(), np.nan
    if method in ("bonferroni-t", "pointwise"):  # joint_bounds' numbers, its t / normal quantile cached
        phi = np.asarray(phi, dtype=float)
        m = phi.shape[1]
        se = contribution_se(phi)
        crit = _fixed_critical(method, float(level), int(n_slots), phi.shape[0])
        est, eta = np.asarray(estimate, dtype=float).reshape(m), np.asarray(sign, dtype=float).reshape(m)
        return se, est - eta * crit * se, float(crit)
    stream = keyed_seed(seed, "multiplier")
    zeta = None
    if method in _MULTIPLIER_METHODS and not exact:
        zeta = multiplier_draws(phi.shape[0], n_draws, np.random.default_rng(stream))
    jb = joint_bounds(phi, estimate, sign, level=level, method=method, n_slots=n_slots,
                      n_draws=n_draws, zeta=zeta, exact=exact, rng=np.random.default_rng(stream))
    return jb.se, jb.bound, float(jb.critical)


#: Column order of :meth:`SASSTReport.report_table` (every field of SASST Appendix C.5).
REPORT_COLUMNS = (
    "claim", "family", "geometry", "radius", "rule", "ordinary", "predicted", "estimate", "se",
    "bound", "bound_side", "critical", "band", "method", "ess", "max_density", "min_split_share",
    "discovery_distance", "confirmation_distance", "stability", "stability_correlation",
    "stability_jaccard", "n_candidates", "n_feasible", "status", "reason", "recommendation",
    "sign", "threshold", "discovery_feasible", "confirmation_feasible", "stable", "runtime_s",
    "rule_json",
)


@dataclass(frozen=True)
class SASSTReport(Result):
    """One report row per slot (every field of SASST Appendix C.5) plus the joint band.

    Attributes
    ----------
    table : DataFrame indexed by slot (the wide report, :meth:`report_table`)
    phi : array (N_I, m) plug-in contributions of the support-feasible slots
    phi_slots : names of those slots (columns of ``phi``)
    critical : critical value of the joint band
    method : inference method (see :data:`agentstudies.stats.INFERENCE_METHODS`)
    level : familywise confidence level of the joint one-sided band (``1 - alpha``)
    discovery : the frozen :class:`Discovery`
    params : the engine's parameters (:meth:`SASST.params`)
    n_confirmation : |I|
    provenance : package version, SHA-256 of the inputs, seed
    departures : what this confirmation changed from what the discovery (or its
        pre-registration) recorded, one ``"<field>: <what>"`` text each (SASST App. C.1,
        C.4: the rule, thresholds and inference rule are frozen before confirmation
        outcomes are read); any departure labels the report *not pre-registered*
    anchor : the pre-registration digest this confirmation was checked against, held
        outside the file (:meth:`Preregistration.confirm` with ``anchor=``); empty when
        none was checked

    ``to_frame()`` is the tidy table: one row per slot (stratum ``slot``), estimand
    ``weighted_contrast`` (the frozen rule's contrast on ``I``) with ``estimate, se,
    bound, side`` (``lower`` for a positive claim, ``upper`` for a negative one),
    ``level`` and ``n`` = |I|, every other report field as a column, and
    ``registration`` (:attr:`registration`) on every row.
    """

    table: pd.DataFrame
    phi: np.ndarray = field(repr=False)
    phi_slots: tuple[str, ...]
    critical: float
    method: str
    level: float
    discovery: Discovery = field(repr=False)
    params: dict[str, Any] = field(default_factory=dict, repr=False)
    n_confirmation: int = 0
    provenance: ResultProvenance = field(default_factory=ResultProvenance, repr=False)
    notes: tuple[str, ...] = ()
    departures: tuple[str, ...] = ()
    anchor: str = ""

    title = "SASST report"

    @property
    def preregistered(self) -> bool:
        """True only when the confirmation was checked against a pre-registration anchor
        held outside the file and departs from nothing recorded."""
        return bool(self.anchor) and not self.departures

    @property
    def registration(self) -> str:
        """``"pre-registered"`` or ``"not pre-registered"`` (:attr:`departures` say why;
        with none, no anchor was checked: the settings are those the discovery froze in
        memory)."""
        return "pre-registered" if self.preregistered else "not pre-registered"

    def _tidy(self) -> pd.DataFrame:
        t = self.table.reset_index()
        t = t.rename(columns={"index": "slot"}) if "slot" not in t.columns else t
        t.insert(1, "estimand", "weighted_contrast")
        t["side"] = np.where(np.isfinite(t["bound"].to_numpy(float)), t["bound_side"], "")
        t["level"] = self.level
        t["n"] = self.n_confirmation
        t["registration"] = self.registration
        return tidy_rows(t, strata=("slot",))

    def report_table(self) -> pd.DataFrame:
        """The wide report (one row per slot, indexed by slot; :data:`REPORT_COLUMNS`, then
        ``registration``: :attr:`registration` on every row)."""
        return self.table.assign(registration=self.registration)

    def status_counts(self) -> pd.Series:
        """Counts of the five statuses, in the order of Table 3."""
        return self.table["status"].value_counts().reindex(list(STATUSES), fill_value=0)

    def with_inference(self, method: str, *, n_draws: int | None = None, seed: Any = None) -> "SASSTReport":
        """The same frozen report with bounds and statuses recomputed by another method.

        ``n_draws`` and ``seed`` default to the report's own, so
        ``report.with_inference(report.method)`` reproduces the report's band exactly.
        Another method, ``n_draws`` or ``seed`` than the report's is a departure from the
        frozen inference rule (SASST App. C.4): it is added to :attr:`departures`, which
        label the result *not pre-registered* (a sensitivity analysis, as the paper's
        Bonferroni-t rerun of Study F).
        """
        if method not in INFERENCE_METHODS:
            raise ValueError(f"unknown inference method {method!r}; choose from {INFERENCE_METHODS}")
        gone = list(self.departures)
        own = {"inference": self.method, "n_draws": self.params.get("n_draws"), "seed": self.params.get("seed")}
        for k, v in (("inference", method), ("n_draws", n_draws), ("seed", seed)):
            if v is not None and v != own[k]:
                gone.append(f"engine.{k}: {v!r} where the confirmation ran {own[k]!r} (with_inference)")
        table = self.table.copy()
        crit = np.nan
        if self.phi_slots:
            names = list(self.phi_slots)
            sub = table.loc[names]
            se, bound, crit = _joint_band(
                self.phi, sub["estimate"].to_numpy(float), sub["sign"].to_numpy(float), method=method,
                level=self.level, n_slots=len(table),
                n_draws=int(self.params.get("n_draws", 2000) if n_draws is None else n_draws),
                exact=bool(self.params.get("exact_multiplier", False)),
                seed=self.params.get("seed", 0) if seed is None else seed,
            )
            table.loc[names, "se"] = se
            table.loc[names, "bound"] = bound
        table["critical"] = np.where(table.index.isin(self.phi_slots), crit, np.nan)
        table["method"] = method
        _assign_statuses(table)
        return replace(self, table=table, critical=float(crit), method=method, departures=tuple(gone))

    def summary(self) -> str:
        """A readable multi-line summary."""
        d = self.discovery
        lines = [
            f"SASST report: {len(self.table)} slots, |D| = {d.n_clusters}, |I| = {self.n_confirmation}, "
            f"inference = {self.method} (critical value {self.critical:.4f}, level = {self.level:g})",
        ]
        if self.departures:
            lines.append(f"NOT PRE-REGISTERED: this confirmation departs from what the discovery froze in "
                         f"{len(self.departures)} way(s); its statuses are not confirmatory:")
            lines += [f"  departure: {x}" for x in self.departures]
        elif not self.anchor:
            lines.append("not pre-registered: the settings are those the discovery froze in memory, not checked "
                         "against a pre-registration anchor held outside the file")
        else:
            lines.append(f"pre-registered: checked against anchor {self.anchor[:16]}..., no departure")
        if d.selected_system is not None:
            lines.append(f"discovery selected system: {d.selected_system}")
        counts = self.status_counts()
        lines.append(f"statuses ({self.registration}): " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        cols = ["estimate", "se", "bound_side", "bound", "band", "ess", "max_density", "stability", "status"]
        cols = [c for c in cols if c in self.table.columns]
        lines.append("bound_side: 'lower' = one-sided lower bound (claims of a benefit), "
                     "'upper' = one-sided upper bound (claims of fragility)")
        lines.append(self.table[cols].to_string(float_format=lambda x: f"{x:.4f}"))
        lines.append("frozen rules and claims:")
        for name, row in self.table.iterrows():
            lines.append(f"  {name}: claim {row['claim']}; rule: {row['rule']}"
                         + (f"; {row['reason']}" if row["reason"] else ""))
        for note in self.notes:
            lines.append(f"note: {note}")
        return "\n".join(lines)


def _band(row: Mapping[str, Any]) -> str:
    """Whether a slot's band is defined, and why not (see :func:`_assign_statuses`)."""
    se, crit, bound = float(row["se"]), float(row["critical"]), float(row["bound"])
    if not (row["discovery_feasible"] and row["confirmation_feasible"]):
        return "none (slot not feasible)"
    if np.isfinite(se) and se <= DEGENERATE_TOL:
        return "undefined: zero variance of the contrast across confirmation clusters"
    if not np.isfinite(crit):
        return "undefined: critical value is NaN"
    if not (np.isfinite(se) and np.isfinite(bound)):
        return "undefined: standard error or bound is not finite"
    return "defined"


def _status_fields(rows: Sequence[dict[str, Any]]) -> None:
    """Set ``band``, ``status`` and ``recommendation`` of report rows in place (Table 3).

    A feasible slot whose band is undefined gets a NaN bound and the reason appended; it
    can never be *confirmed*.
    """
    for row in rows:
        row["band"] = band = _band(row)
        feasible = bool(row["discovery_feasible"] and row["confirmation_feasible"])
        undefined = feasible and band != "defined"
        if undefined:
            row["bound"] = np.nan
            row["reason"] = "; ".join(r for r in (str(row["reason"]), f"band {band}: the claim cannot be confirmed") if r)
        supported = (not undefined) and bool(row["sign"] * (float(row["bound"]) - float(row["threshold"])) > 0)
        row["status"] = slot_status(bool(row["discovery_feasible"]), bool(row["confirmation_feasible"]),
                                    bool(row["stable"]), supported)
        row["recommendation"] = recommendation(row["status"])


def _assign_statuses(table: pd.DataFrame) -> None:
    """Statuses of Table 3, after checking that each feasible slot has a defined band.

    A band is *undefined* when the joint critical value is NaN, the slot's standard error
    is zero (every confirmation cluster gives the same contrast: zero variance) or not
    finite, or the bound is not finite. Such a slot can never be *confirmed*: it is
    reported as *not confirmed* with the reason, its bound is NaN and ``band`` says why.
    """
    rows = [dict(zip(table.columns, vals)) for vals in table.itertuples(index=False, name=None)]
    _status_fields(rows)
    for col in ("band", "bound", "reason", "status", "recommendation"):
        table[col] = [r[col] for r in rows]


def _report_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The wide report table from row dicts: one construction, :data:`REPORT_COLUMNS` order."""
    index = pd.Index([r["slot"] for r in rows], name="slot")
    return pd.DataFrame({c: [r[c] for r in rows] for c in REPORT_COLUMNS}, index=index)
