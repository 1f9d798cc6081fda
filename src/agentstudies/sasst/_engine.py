"""The SASST protocol: discovery, stability, frozen-rule confirmation, joint bounds, statuses.

Implements Algorithm 1 and Appendix C of Xu et al. (2026), *Selection-Aware Stress
Testing for Interactive Agents*:

1. split whole clusters into discovery ``D`` and confirmation ``I``;
2. on ``D``, for every slot, rank the feasible candidates of its family by Eq. (2),
   ``Delta_loc(g) = Delta_D + sum_i (w_i(g; D) - 1/|D|) psi_i``, with ``psi_i`` the
   first-order contributions of the fixed plan (including its selection step), subject
   to the density cap, minimum ESS and radius; record *failed discovery* if none is
   feasible; break ties by the slot's deterministic rule;
3. freeze the rule; estimate its stability by resampling discovery clusters (weight
   correlation and top-weighted-set overlap on the frozen discovery feature set);
4. on ``I``, apply the frozen rule, recheck support (density, ESS, split denominators),
   compute the exact weighted contrast and its plug-in contributions (Lemma 2);
5. form joint one-sided bounds over all support-feasible slots (Gaussian multiplier
   maximum with one multiplier per cluster shared across slots, or Bonferroni-t), and
   assign one of the five statuses of Table 3.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.sasst._data import CONFIRMATION, DISCOVERY, ClusterData, cluster_data, split_clusters
from agentstudies.sasst._geometry import Geometry, make_geometry
from agentstudies.sasst._plan import ComparisonPlan
from agentstudies.sasst._rules import (BumpRule, FixedFamily, ProjectionTiltRule, QuadraticTiltRule, Rule, RuleFamily,
                                      UniformRule)
from agentstudies.sasst._slots import STATUSES, Slot, recommendation, slot_status
from agentstudies._tolerances import DEGENERATE_TOL, RADIUS_TOL, SUPPORT_TOL, TINY
from agentstudies.parallel import keyed_seed
from agentstudies.results import Result, ResultProvenance, make_provenance, tidy_rows
from agentstudies.stats import INFERENCE_METHODS, bootstrap_counts, joint_bounds, multiplier_draws

__all__ = [
    "SASST", "STABILITY_MODES", "Discovery", "FrozenRule", "SASSTReport", "rule_scores", "score_matrix",
    "support_constraints",
    "top_set_jaccard", "top_weighted_sets", "weight_correlation",
]

#: Stability variants: refit the slot's family on each resample, or keep the fitted registry.
STABILITY_MODES = ("refit", "fixed")

#: Inference methods whose critical value is a Gaussian multiplier maximum.
_MULTIPLIER_METHODS = ("gaussian", "hc1", "t-scaled")


# ----------------------------------------------------------------------------- helpers
#: Built-in rules that score through ``score_standardized(standardizer(X))``.
_STANDARDIZED_RULES = (ProjectionTiltRule, BumpRule, QuadraticTiltRule)


def score_matrix(rules: Sequence[Rule], X: np.ndarray, feature_names: Sequence[str]) -> np.ndarray:
    """Scores ``s_g(x_k)`` of every rule on every row, (G, n), for features X (n, d) whose
    columns are ``feature_names`` (the tilts ``s_g`` of SASST Eq. 1; no units).

    The column gather is done once per distinct column set, the standardization once per
    distinct (column set, standardizer) for the built-in standardized rules (a family's
    rules share one fitted standardizer), and the checks once for the whole matrix (a
    small registry is refitted and rescored on every stability resample). Each row equals
    ``rule.score`` of the rule's columns.

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
    standardized: dict[tuple, tuple[Any, np.ndarray]] = {}
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
                hit = standardized[key] = (rule.standardizer, z)
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


def _radius_screen(geom: Geometry, X: np.ndarray, u: np.ndarray, W: np.ndarray, loc: np.ndarray,
                   feasible: np.ndarray, slot: Slot, chunk: int = 8,
                   first_chunk: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Distances and radius feasibility of the candidates :func:`_select` can reach.

    ``feasible`` holds every other constraint. Distances are computed in increasing
    ``loc`` order (``first_chunk`` candidates, then ``chunk`` at a time: in stability
    resamples the minimizer and its ties are usually among the first two) until the
    radius-feasible minimizer and every candidate within the slot's tie tolerance of it
    are known; the rest keep distance ``inf`` (unselectable). :func:`_select` then returns the same index as with
    every distance computed: a geometry's distance of one weighting does not depend on
    the other rows of ``W`` (up to last-bit rounding of a batched product, which the
    radius slack ``RADIUS_TOL`` absorbs). Returns ``(distance, feasible)``, both (G,).
    """
    dist = np.full(len(loc), np.inf)
    ok = np.zeros(len(loc), dtype=bool)
    idx = np.flatnonzero(feasible)
    order = idx[np.argsort(loc[idx], kind="stable")]
    best = np.inf
    starts = [0, *range(max(1, first_chunk), len(order), chunk)] if len(order) else []
    for start, stop in zip(starts, [*starts[1:], len(order)]):
        if loc[order[start]] > best + slot.tolerance:
            break
        rows = order[start:stop]
        dist[rows] = geom.distance(X, u, W[rows])
        ok[rows] = support_constraints(slot, 0.0, 0.0, distance=dist[rows])["radius"]
        if ok[rows].any():
            best = min(best, float(loc[rows][ok[rows]].min()))
    return dist, ok


def _select(loc: np.ndarray, feasible: np.ndarray, ess: np.ndarray, dist: np.ndarray,
            tie_rule: str, tol: float) -> int:
    """Index of the feasible minimizer of ``loc`` under the tie rule, or -1 if none.

    A candidate whose ``loc`` is not finite (the plan's value is undefined on this sample,
    e.g. a stability resample that leaves one cross-fitting half empty) cannot be selected.
    """
    idx = np.flatnonzero(np.asarray(feasible, bool) & np.isfinite(loc))
    if idx.size == 0:
        return -1
    best = loc[idx].min()
    tied = idx[loc[idx] <= best + tol]
    if tie_rule == "max_ess":
        return int(tied[np.argmax(ess[tied])])
    if tie_rule == "min_distance":
        return int(tied[np.argmin(dist[tied])])
    return int(tied[0])



def support_constraints(
    slot: Slot,
    ess: np.ndarray | float,
    max_density: np.ndarray | float,
    *,
    distance: np.ndarray | float | None = None,
    split_share: float | None = None,
) -> dict[str, np.ndarray]:
    """Whether each support constraint of ``slot`` holds (SASST Sec. 3, App. C.2-C.3).

    The one support check used by discovery, stability and confirmation: ``max_density
    <= density_cap``, ``ess >= min_ess``, and when given ``distance <= radius`` (only if
    the slot has a radius) and ``split_share >= min_split_share``, each with the slack of
    :mod:`agentstudies._tolerances`. Inputs are scalars or arrays of one shape; NaN
    fails every constraint.

    Returns
    -------
    dict constraint name (``"max_density"``, ``"ess"``, ``"radius"``,
    ``"min_split_share"``) -> boolean array (True where the constraint holds), in that
    order. ``np.logical_and.reduce(list(d.values()))`` is overall feasibility.
    """
    ok = {
        "max_density": np.asarray(max_density) <= slot.density_cap + SUPPORT_TOL,
        "ess": np.asarray(ess) >= slot.min_ess - SUPPORT_TOL,
    }
    if distance is not None and slot.radius is not None:
        ok["radius"] = np.asarray(distance) <= slot.radius + RADIUS_TOL
    if split_share is not None:
        ok["min_split_share"] = np.asarray(split_share) >= slot.min_split_share - SUPPORT_TOL
    return ok


def _all_hold(constraints: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.logical_and.reduce(list(constraints.values()))


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
    stream = keyed_seed(seed, "multiplier")
    zeta = None
    if method in _MULTIPLIER_METHODS and not exact:
        zeta = multiplier_draws(phi.shape[0], n_draws, np.random.default_rng(stream))
    jb = joint_bounds(phi, estimate, sign, level=level, method=method, n_slots=n_slots,
                      n_draws=n_draws, zeta=zeta, exact=exact, rng=np.random.default_rng(stream))
    return jb.se, jb.bound, float(jb.critical)


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class FrozenRule:
    """The rule a discovery specification froze, with its discovery diagnostics.

    ``rule`` is ``None`` when discovery failed (no feasible candidate; build that case
    with :meth:`failed`). Construct with keywords.
    """

    rule: Rule | None
    index: int
    n_candidates: int
    n_feasible: int
    predicted: float
    ess: float
    max_density: float
    distance: float
    stability: float
    stability_correlation: float
    stability_jaccard: float
    candidates: pd.DataFrame = field(repr=False, compare=False)
    runtime_s: float = 0.0

    @classmethod
    def failed(cls, *, n_candidates: int, n_feasible: int, candidates: pd.DataFrame,
               runtime_s: float = 0.0) -> "FrozenRule":
        """The record of a failed discovery: no rule, NaN diagnostics, zero stability."""
        return cls(rule=None, index=-1, n_candidates=n_candidates, n_feasible=n_feasible,
                   predicted=np.nan, ess=np.nan, max_density=np.nan, distance=np.nan, stability=0.0,
                   stability_correlation=0.0, stability_jaccard=0.0, candidates=candidates,
                   runtime_s=runtime_s)


@dataclass(frozen=True)
class Discovery:
    """Everything discovery froze: rules per specification and the unweighted comparison.

    Attributes
    ----------
    rules : dict slot name -> :class:`FrozenRule`
    theta : dict plan output -> unweighted discovery estimate
    selected_system : the candidate with the highest discovery estimate (the hard argmax,
        or None without candidates)
    n_clusters : |D|
    cluster_ids : the discovery cluster ids
    geometries : dict geometry name -> the geometry fitted (frozen) on the discovery
        features; confirmation distances are measured in it (C.3)
    soft_selection : dict candidate -> weight of the plan's cross-fitted selection step on
        ``D`` (the selection the rules are tuned against through Eq. 2); empty without a
        selection step
    """

    rules: dict[str, FrozenRule]
    theta: dict[str, float]
    selected_system: str | None
    n_clusters: int
    cluster_ids: tuple[str, ...] = field(repr=False, default=())
    geometries: dict[str, Geometry] = field(repr=False, default_factory=dict)
    soft_selection: dict[str, float] = field(default_factory=dict)
    engine_fingerprint: dict[str, str] = field(repr=False, default_factory=dict)


#: Engine settings a discovery is bound to (:meth:`SASST.fingerprint`): the plan, the
#: slots (with every threshold and cap), the candidate-family registry, the radius
#: geometries and the stability settings. The confirmation-only inference settings
#: (``level``, ``inference``, ``n_draws``, ``exact_multiplier``) are not among them.
FINGERPRINT_FIELDS = ("plan", "slots", "families", "geometries", "n_stability", "stability_metric",
                      "stability_mode", "top_fraction", "seed")


def _spec_json(v: Any) -> Any:
    """JSON-safe text of an engine setting (a Geometry object by class and fields)."""
    if isinstance(v, Geometry) and dataclasses.is_dataclass(v):
        return {"geometry": type(v).__name__, **{f.name: _spec_json(getattr(v, f.name))
                                                 for f in dataclasses.fields(v) if f.name != "_cache"}}
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {str(k): _spec_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_spec_json(x) for x in v]
    return v


def fingerprint_diff(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Names of the :data:`FINGERPRINT_FIELDS` whose digests differ (or are missing)."""
    return [k for k in dict.fromkeys([*recorded, *current]) if recorded.get(k) != current.get(k)]


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

    ``to_frame()`` is the tidy table: one row per slot (stratum ``slot``), estimand
    ``weighted_contrast`` (the frozen rule's contrast on ``I``) with ``estimate, se,
    bound, side`` (``lower`` for a positive claim, ``upper`` for a negative one),
    ``level`` and ``n`` = |I|, and every other report field as a column.
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

    title = "SASST report"

    def _tidy(self) -> pd.DataFrame:
        t = self.table.reset_index()
        t = t.rename(columns={"index": "slot"}) if "slot" not in t.columns else t
        t.insert(1, "estimand", "weighted_contrast")
        t["side"] = np.where(np.isfinite(t["bound"].to_numpy(float)), t["bound_side"], "")
        t["level"] = self.level
        t["n"] = self.n_confirmation
        return tidy_rows(t, strata=("slot",))

    def report_table(self) -> pd.DataFrame:
        """The wide report (one row per slot, indexed by slot; :data:`REPORT_COLUMNS`)."""
        return self.table.copy()

    def status_counts(self) -> pd.Series:
        """Counts of the five statuses, in the order of Table 3."""
        return self.table["status"].value_counts().reindex(list(STATUSES), fill_value=0)

    def with_inference(self, method: str, *, n_draws: int | None = None, seed: Any = None) -> "SASSTReport":
        """The same frozen report with bounds and statuses recomputed by another method.

        ``n_draws`` and ``seed`` default to the report's own, so
        ``report.with_inference(report.method)`` reproduces the report's band exactly.
        """
        if method not in INFERENCE_METHODS:
            raise ValueError(f"unknown inference method {method!r}; choose from {INFERENCE_METHODS}")
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
        return replace(self, table=table, critical=float(crit), method=method)

    def summary(self) -> str:
        """A readable multi-line summary."""
        d = self.discovery
        lines = [
            f"SASST report: {len(self.table)} slots, |D| = {d.n_clusters}, |I| = {self.n_confirmation}, "
            f"inference = {self.method} (critical value {self.critical:.4f}, level = {self.level:g})",
        ]
        if d.selected_system is not None:
            lines.append(f"discovery selected system: {d.selected_system}")
        counts = self.status_counts()
        lines.append("statuses: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
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
    if np.isfinite(se) and se <= 1e-12:
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


@dataclass
class _DiscoveryCache:
    """Fitted candidate families (rules, score matrix) and geometries of one discovery."""

    families: dict[str, tuple[list[Rule], np.ndarray]] = field(default_factory=dict)
    geometries: dict[str, Geometry] = field(default_factory=dict)
    masks: np.ndarray | None = None


# ----------------------------------------------------------------------------- engine
class SASST:
    """Selection-Aware Semantic Stress Testing (Algorithm 1, Appendix C).

    Parameters
    ----------
    plan : :class:`~agentstudies.sasst.ComparisonPlan`
        The fixed comparison plan ``A``.
    slots : sequence of :class:`Slot` or dicts
        The planned family ``J_0`` (dicts are checked by :meth:`Slot.from_dict`).
    families : mapping name -> :class:`RuleFamily`
        Candidate families referenced by the slots.
    geometries : mapping name -> Geometry or spec, optional
        Radius geometries; ``kms``, ``mmd``, ``max_sliced`` and ``none`` are available by
        name with default settings.
    level : float
        Familywise confidence level of the joint one-sided band (``1 - alpha``; 0.95).
    inference : str
        ``gaussian`` (default), ``bonferroni-t``, ``hc1``, ``t-scaled`` or ``pointwise``.
    n_draws : int
        Gaussian multiplier draws.
    n_stability : int
        Discovery resamples for stability (0 skips stability; every slot is then stable).
    stability_metric : {"jaccard", "correlation", "min"}
        Which functional agreement the stability threshold applies to.
    stability_mode : {"refit", "fixed"}
        ``refit`` (default) reruns the whole slot on each discovery resample: the family
        is refitted on the resampled discovery features (quantile thresholds, k-means bump
        centres, standardization and tilt centring move with the resample), then Eq. (2)
        and every constraint select a rule, whose scores on the frozen discovery feature
        set are compared with the frozen rule's (C.2). ``fixed`` keeps the registry fitted
        on ``D`` and reselects among its candidates only (cheaper, likely optimistic).
    top_fraction : float
        Share of the reference set forming the top-weighted set.
    discovery_fraction : float
        Share of clusters sent to discovery by :meth:`run` when no split is given.
    exact_multiplier : bool
        Draw the multiplier maximum from its exact conditional Gaussian law (same
        distribution as one multiplier per cluster, cheaper for large N; see
        :func:`agentstudies.stats.multiplier_critical_value`).
    seed : int
        Root seed: the split, the stability resamples (one stream per discovery
        specification) and the multipliers use ``keyed_seed(seed, "split")``,
        ``keyed_seed(seed, "stability", k)`` and ``keyed_seed(seed, "multiplier")``.

    Raises
    ------
    ValueError
        Duplicate slot names, a slot referring to an unknown family or geometry or
        system, an unknown inference method, or an unknown slot field.
    """

    def __init__(
        self,
        plan: ComparisonPlan,
        slots: Sequence[Slot | Mapping[str, Any]],
        families: Mapping[str, RuleFamily] | None = None,
        *,
        geometries: Mapping[str, Geometry | str | dict] | None = None,
        level: float = 0.95,
        inference: str = "gaussian",
        n_draws: int = 2000,
        n_stability: int = 100,
        stability_metric: str = "jaccard",
        stability_mode: str = "refit",
        top_fraction: float = 0.25,
        discovery_fraction: float = 0.5,
        exact_multiplier: bool = False,
        seed: int = 0,
    ) -> None:
        self.plan = plan
        self.slots = [s if isinstance(s, Slot) else Slot.from_dict(s) for s in slots]
        if not self.slots:
            raise ValueError("SASST needs at least one slot")
        names = [s.name for s in self.slots]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate slot name(s): {dup}")
        self.families = dict(families or {})
        geoms: dict[str, Any] = {"kms": "kms", "mmd": "mmd", "max_sliced": "max_sliced", "none": "none"}
        geoms.update(geometries or {})
        self.geometries = geoms
        self._check_slots()
        if inference not in INFERENCE_METHODS:
            raise ValueError(f"unknown inference method {inference!r}; choose from {INFERENCE_METHODS}")
        if stability_metric not in ("jaccard", "correlation", "min"):
            raise ValueError(f"stability_metric must be 'jaccard', 'correlation' or 'min'; got {stability_metric!r}")
        if not 0 < level < 1:
            raise ValueError(f"level must lie in (0, 1); got {level}")
        self.level = float(level)
        self.inference = inference
        self.n_draws = int(n_draws)
        self.n_stability = int(n_stability)
        self.stability_metric = stability_metric
        if stability_mode not in STABILITY_MODES:
            raise ValueError(f"stability_mode must be one of {STABILITY_MODES}; got {stability_mode!r}")
        self.stability_mode = stability_mode
        self.top_fraction = top_fraction
        self.discovery_fraction = discovery_fraction
        self.exact_multiplier = bool(exact_multiplier)
        self.seed = seed

    def _check_slots(self) -> None:
        for s in self.slots:
            self.plan.contrast_vector(s.contrast)
            if s.discovery_target is not None:
                self.plan.contrast_vector(s.discovery_target)
            if s.family is not None and s.family not in self.families:
                raise ValueError(f"slot {s.name!r} refers to unknown family {s.family!r}; known: {sorted(self.families)}")
            if s.family is not None and s.geometry not in self.geometries:
                raise ValueError(f"slot {s.name!r} refers to unknown geometry {s.geometry!r}; known: {sorted(self.geometries)}")

    # ------------------------------------------------------------------ params
    def params(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(),
            "slots": [s.to_dict() for s in self.slots],
            "families": {k: f.to_dict() for k, f in self.families.items()},
            "level": self.level,
            "inference": self.inference,
            "n_draws": self.n_draws,
            "n_stability": self.n_stability,
            "stability_metric": self.stability_metric,
            "stability_mode": self.stability_mode,
            "top_fraction": self.top_fraction,
            "exact_multiplier": self.exact_multiplier,
            "seed": self.seed,
        }

    def fingerprint(self) -> dict[str, str]:
        """SHA-256 of each discovery-binding setting (:data:`FINGERPRINT_FIELDS`).

        :meth:`discover` stamps it on the :class:`Discovery`; :meth:`confirm` refuses a
        discovery stamped by an engine whose slots, registry (families), geometries,
        plan or stability settings differ, naming the fields (SASST Algorithm 1: the
        rule, its family and every threshold are frozen before confirmation).
        """
        p = self.params()
        p["geometries"] = self.geometries
        return {k: hashlib.sha256(json.dumps(_spec_json(p[k]), default=str).encode()).hexdigest()
                for k in FINGERPRINT_FIELDS}

    # ------------------------------------------------------------------ run
    def run(
        self,
        episodes: pd.DataFrame,
        features: pd.DataFrame,
        split: Mapping[str, str] | pd.Series | None = None,
        *,
        strata: Mapping[str, str] | pd.Series | None = None,
        cluster: str = "task_id",
        seed_col: str = "seed",
        system: str = "workflow",
        score: str = "score",
        feature_columns: Sequence[str] | None = None,
    ) -> SASSTReport:
        """Validate the tables, split whole clusters, discover, confirm and report.

        ``split`` maps cluster id -> ``"discovery"``/``"confirmation"``; if omitted,
        clusters are split at random (seeded, optionally within ``strata``).

        Raises
        ------
        KeyError, ValueError
            On invalid tables (see :func:`~agentstudies.sasst.cluster_data`), a split
            missing clusters or with unknown labels, or an empty discovery or
            confirmation split.
        """
        data = cluster_data(episodes, features, self.plan.systems, cluster=cluster, seed=seed_col,
                            system=system, score=score, feature_columns=feature_columns)
        is_d = self._discovery_mask(data, split, strata)
        report = self.confirm(self.discover(data.subset(is_d)), data.subset(~is_d))
        return replace(report, provenance=make_provenance(seed=self.seed, episodes=episodes, features=features),
                       notes=tuple(data.notes))

    def _discovery_mask(self, data: ClusterData, split: Mapping[str, str] | pd.Series | None,
                        strata: Mapping[str, str] | pd.Series | None) -> np.ndarray:
        """Boolean mask of the discovery clusters: ``split`` checked, or a seeded split."""
        if split is None:
            split = split_clusters(data.ids, discovery_fraction=self.discovery_fraction,
                                   seed=int(keyed_seed(self.seed, "split").generate_state(1)[0]), strata=strata)
        sp = pd.Series(split)
        sp.index = sp.index.astype(str)
        missing = [str(c) for c in data.ids if c not in sp.index]
        if missing:
            raise ValueError(f"split lacks cluster(s): {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
        labels = sp.loc[data.ids].to_numpy()
        bad = sorted(set(labels) - {DISCOVERY, CONFIRMATION})
        if bad:
            raise ValueError(f"split labels must be {DISCOVERY!r} or {CONFIRMATION!r}; got {bad}")
        is_d = labels == DISCOVERY
        if not is_d.any():
            raise ValueError("empty discovery split: no cluster is labelled 'discovery'")
        if is_d.all():
            raise ValueError("empty confirmation split: no cluster is labelled 'confirmation'")
        return is_d

    # ------------------------------------------------------------------ discovery
    def _geometry(self, name: str, X: np.ndarray) -> Geometry:
        """The slot geometry fitted on ``X``; a user's Geometry object is copied, never fitted in place."""
        return copy.deepcopy(make_geometry(self.geometries[name])).fit(X)

    def discover(self, data: ClusterData, *, candidate_tables: bool = True) -> Discovery:
        """Discovery on ``D``: select, freeze and stability-check a rule per slot (C.2).

        ``candidate_tables=False`` leaves each :attr:`FrozenRule.candidates` empty (the
        per-candidate predicted contrast, ESS, density, distance and feasibility);
        simulation trials that never read it skip building thousands of small tables.
        The frozen rules and every number of the report are the same.
        """
        n = len(data)
        if n < 2:
            raise ValueError(f"discovery split has {n} cluster(s); need at least 2")
        plan = self.plan
        H1 = plan.tensor(data.Z, np.ones(n), plan.split_masks(data.ids))
        mu1 = H1.mean(axis=0)
        theta = plan.values(mu1)
        theta_d = dict(zip(plan.outputs, map(float, theta)))
        selected = None
        soft: dict[str, float] = {}
        if plan.candidates:
            selected = max(plan.candidates, key=lambda c: (theta_d[c], -plan.candidates.index(c)))
            soft = dict(zip(plan.candidates, map(float, plan.selection_weights(mu1))))
        cache = _DiscoveryCache()
        cache.masks = plan.split_masks(data.ids)
        by_key: dict[tuple, FrozenRule] = {}
        rules: dict[str, FrozenRule] = {}
        for slot in self.slots:
            if slot.is_uniform:
                continue
            key = slot.discovery_key()
            if key not in by_key:
                # one independent stability stream per discovery specification, in slot order
                by_key[key] = self._discover_slot(slot, data, H1, mu1, theta, cache, stream=len(by_key),
                                                  candidate_table=candidate_tables)
            rules[slot.name] = by_key[key]
        return Discovery(rules, theta_d, selected, n, tuple(data.ids), geometries=dict(cache.geometries),
                         soft_selection=soft, engine_fingerprint=self.fingerprint())

    def _candidates(self, slot: Slot, data: ClusterData, cache: _DiscoveryCache) -> tuple[list[Rule], np.ndarray]:
        """The slot family's candidate rules fitted on ``D`` and their score matrix (G, n)."""
        if slot.family not in cache.families:
            cands = self.families[slot.family].fit(data.X, data.feature_names)
            if not cands:
                raise ValueError(f"family {slot.family!r} produced no candidate rules")
            S = score_matrix(cands, data.X, data.feature_names)
            cache.families[slot.family] = (cands, S)
        return cache.families[slot.family]

    def _discover_slot(self, slot: Slot, data: ClusterData, H1: np.ndarray, mu1: np.ndarray,
                       theta: np.ndarray, cache: _DiscoveryCache, *, stream: int,
                       candidate_table: bool = True) -> FrozenRule:
        """Rank the feasible candidates by Eq. (2), freeze the selected one, check stability."""
        t0 = time.perf_counter()
        n = len(data)
        cands, S = self._candidates(slot, data, cache)
        if slot.geometry not in cache.geometries:
            cache.geometries[slot.geometry] = self._geometry(slot.geometry, data.X)
        geom = cache.geometries[slot.geometry]
        target = slot.discovery_target if slot.discovery_target is not None else slot.contrast
        c = self.plan.contrast_vector(target)
        with np.errstate(invalid="ignore", divide="ignore"):
            W = S / S.sum(axis=1, keepdims=True)
        ok_mass = np.isfinite(W).all(axis=1)
        W = np.where(ok_mass[:, None], W, 1.0 / n)
        u = np.full(n, 1.0 / n)
        ess = 1.0 / np.sum(W * W, axis=1)
        dens = n * W.max(axis=1)
        dist = geom.distance(data.X, u, W) if slot.radius is not None else np.zeros(len(cands))
        psi = (H1 - mu1) @ self.plan.gradient(mu1, c)
        loc = float(c @ theta) + (W - u) @ psi
        share = self.plan.split_shares(S, cache.masks)
        # every predeclared score-blind constraint of C.2, split denominators included
        feasible = ok_mass & _all_hold(support_constraints(slot, ess, dens, distance=dist, split_share=share))
        g = _select(loc, feasible, ess, dist, slot.tie_rule, slot.tolerance)
        cand_table = pd.DataFrame({
            "rule": [r.describe() for r in cands], "predicted": loc, "ess": ess,
            "max_density": dens, "distance": dist, "min_split_share": share, "feasible": feasible,
            "selected": np.arange(len(cands)) == g,
        }) if candidate_table else pd.DataFrame()
        if g < 0:
            return FrozenRule.failed(n_candidates=len(cands), n_feasible=int(feasible.sum()),
                                     candidates=cand_table, runtime_s=time.perf_counter() - t0)
        corr = jac = 1.0
        if self.n_stability > 0:
            rng = np.random.default_rng(keyed_seed(self.seed, "stability", stream))
            corr, jac = self._stability(data, H1, S, c, geom, slot, g, rng, cache.masks)
        stab = {"jaccard": jac, "correlation": corr, "min": min(jac, corr)}[self.stability_metric]
        return FrozenRule(
            rule=cands[g], index=g, n_candidates=len(cands), n_feasible=int(feasible.sum()),
            predicted=float(loc[g]), ess=float(ess[g]), max_density=float(dens[g]), distance=float(dist[g]),
            stability=float(stab), stability_correlation=float(corr), stability_jaccard=float(jac),
            candidates=cand_table, runtime_s=time.perf_counter() - t0,
        )

    def _stability(self, data: ClusterData, H1: np.ndarray, S: np.ndarray, c: np.ndarray,
                   geom: Geometry, slot: Slot, g0: int, rng: np.random.Generator,
                   masks: np.ndarray) -> tuple[float, float]:
        """Mean weight correlation and top-set Jaccard of resampled selections (C.2)."""
        n = len(data)
        B = self.n_stability
        counts = bootstrap_counts(n, B, rng).astype(float)  # (B, n)
        mu = counts @ H1 / n  # (B, p)
        theta = self.plan.values(mu)  # (B, K)
        delta = theta @ c  # (B,)
        grad = self.plan.gradient(mu, c)  # (B, p)
        psi = H1 @ grad.T - np.sum(mu * grad, axis=1)  # (n, B)
        refit = self.stability_mode == "refit" and not isinstance(self.families[slot.family], FixedFamily)
        s0 = S[g0]
        if not refit:  # one registry for every resample: its agreement with s0 once
            corr_all = weight_correlation(s0, S)  # (G,)
            jac_all = top_set_jaccard(s0, S, self.top_fraction)  # (G,)
        top0 = top_weighted_sets(s0[None, :], self.top_fraction)[0]
        corr = np.zeros(B)
        jac = np.zeros(B)
        for b in range(B):
            m = counts[b]
            if refit:  # rerun the slot: the family refitted on the resampled discovery features
                rows = np.repeat(np.arange(n), m.astype(int))
                cands = self.families[slot.family].fit(data.X[rows], data.feature_names)
                S = score_matrix(cands, data.X, data.feature_names)
            ms = S * m
            tot = ms.sum(axis=1)
            okm = tot > 0
            Wb = ms / np.where(okm, tot, 1.0)[:, None]
            ub = m / n
            loc = delta[b] + (Wb - ub) @ psi[:, b]
            ess = np.where(okm, tot**2 / np.maximum((S * S * m).sum(axis=1), TINY), 0.0)
            dens = n * (S[:, m > 0].max(axis=1)) / np.where(okm, tot, np.inf)
            share = self.plan.split_shares(S, masks, m)
            feas = okm & _all_hold(support_constraints(slot, ess, dens, split_share=share)) & np.isfinite(loc)
            dist = np.zeros(S.shape[0])
            if slot.radius is not None:
                dist, feas = _radius_screen(geom, data.X, ub, Wb, loc, feas, slot)
            gb = _select(loc, feas, ess, dist, slot.tie_rule, slot.tolerance)
            if gb >= 0 and refit:  # agreement of the refitted registry's choice only (row-wise: same values)
                corr[b] = weight_correlation(s0, S[gb:gb + 1])[0]
                jac[b] = _jaccard(top0, top_weighted_sets(S[gb:gb + 1], self.top_fraction))[0]  # = top_set_jaccard
            elif gb >= 0:
                corr[b] = corr_all[gb]
                jac[b] = jac_all[gb]
        return float(corr.mean()), float(jac.mean())

    # ------------------------------------------------------------------ confirmation
    def confirm(self, discovery: Discovery, data: ClusterData) -> SASSTReport:
        """Frozen-rule confirmation on ``I`` with joint bounds and statuses (C.3-C.5)."""
        rows, phi, names, crit = self.confirm_records(discovery, data)
        return SASSTReport(
            table=_report_frame(rows), phi=phi, phi_slots=names, critical=crit,
            method=self.inference, level=self.level, discovery=discovery, params=self.params(),
            n_confirmation=len(data),
            provenance=make_provenance(seed=self.seed, confirmation_scores=data.Z, confirmation_features=data.X),
        )

    def confirm_records(self, discovery: Discovery, data: ClusterData
                        ) -> tuple[list[dict[str, Any]], np.ndarray, tuple[str, ...], float]:
        """:meth:`confirm` without the report objects: ``(rows, phi, phi_slots, critical)``.

        ``rows`` holds one dict per slot (in slot order) with every field of
        :data:`REPORT_COLUMNS` plus ``slot``; ``phi`` (N_I, m) are the contributions of the
        ``m`` support-feasible slots ``phi_slots``; ``critical`` the joint critical value.
        The same numbers as the report (``confirm`` is built on it; SASST Appendix
        C.3-C.5); simulation trials that run the protocol thousands of times use it to skip
        building tables. Raises as :meth:`confirm` (empty or one-cluster confirmation
        split, clusters reused from discovery).
        """
        n = len(data)
        if n == 0:
            raise ValueError("empty confirmation split: no confirmation clusters")
        if n < 2:
            raise ValueError(f"confirmation split has {n} cluster; need at least 2 for a standard error")
        overlap = set(discovery.cluster_ids) & set(data.ids)
        if overlap:
            raise ValueError(f"confirmation reuses discovery cluster(s): {sorted(overlap)[:5]}")
        if discovery.engine_fingerprint:  # a hand-built Discovery carries none
            changed = fingerprint_diff(discovery.engine_fingerprint, self.fingerprint())
            if changed:
                raise ValueError(f"this engine is not the one that ran the discovery: its {', '.join(changed)} "
                                 "differ from the discovery's (a frozen rule is confirmed only by the engine, "
                                 "registry and thresholds it was frozen with)")
        masks = self.plan.split_masks(data.ids)
        theta0 = self.plan.values(self.plan.tensor(data.Z, np.ones(n), masks).mean(axis=0))
        rows, phis, geoms = [], {}, dict(discovery.geometries)
        for slot in self.slots:
            t0 = time.perf_counter()
            fr = discovery.rules.get(slot.name)
            row, rule = self._discovery_fields(slot, fr, theta0)
            conf, phi = self._confirm_slot(slot, rule, data, masks, geoms)
            row.update(conf)
            if not row["reason"] and not row["stable"]:
                row["reason"] = f"stability {row['stability']:.2f} < threshold {slot.stability_threshold:g}"
            row["runtime_s"] = time.perf_counter() - t0 + (fr.runtime_s if fr is not None else 0.0)
            rows.append(row)
            if phi is not None:
                phis[slot.name] = phi
        names = tuple(phis)
        phi = np.column_stack([phis[k] for k in names]) if names else np.zeros((n, 0))
        crit = np.nan
        by_name = {r["slot"]: r for r in rows}
        if names:
            se, bound, crit = _joint_band(
                phi, np.array([by_name[k]["estimate"] for k in names], float),
                np.array([by_name[k]["sign"] for k in names], float), method=self.inference,
                level=self.level, n_slots=len(self.slots), n_draws=self.n_draws,
                exact=self.exact_multiplier, seed=self.seed,
            )
            for k, e, bd in zip(names, se, bound):
                by_name[k]["se"], by_name[k]["bound"] = float(e), float(bd)
        for r in rows:
            r["critical"] = float(crit) if r["slot"] in phis else np.nan
            r["method"] = self.inference
        _status_fields(rows)
        return rows, phi, names, float(crit)

    def _discovery_fields(self, slot: Slot, fr: FrozenRule | None, theta0: np.ndarray) -> tuple[dict[str, Any], Rule | None]:
        """The slot's report fields fixed before confirmation, and its frozen rule."""
        c = self.plan.contrast_vector(slot.contrast)
        row: dict[str, Any] = {
            "slot": slot.name, "claim": slot.claim, "sign": slot.sign, "threshold": slot.threshold,
            "family": slot.family or "uniform", "geometry": slot.geometry if slot.family else "none",
            "radius": slot.radius if slot.family else np.nan,
            "ordinary": float(c @ theta0),
        }
        if slot.is_uniform:
            rule: Rule | None = UniformRule()
            row.update(discovery_feasible=True, n_candidates=1, n_feasible=1, predicted=np.nan,
                       discovery_distance=0.0, stability=1.0, stability_correlation=1.0,
                       stability_jaccard=1.0)
        else:
            rule = fr.rule
            row.update(discovery_feasible=rule is not None, n_candidates=fr.n_candidates,
                       n_feasible=fr.n_feasible, predicted=fr.predicted, discovery_distance=fr.distance,
                       stability=fr.stability, stability_correlation=fr.stability_correlation,
                       stability_jaccard=fr.stability_jaccard)
        row["stable"] = bool(row["stability"] >= slot.stability_threshold - SUPPORT_TOL)
        row["rule"] = rule.describe() if rule is not None else "—"
        row["rule_json"] = rule.to_json() if rule is not None else ""
        return row, rule

    def _confirm_slot(self, slot: Slot, rule: Rule | None, data: ClusterData, masks: Any,
                      geoms: dict[str, Geometry]) -> tuple[dict[str, Any], np.ndarray | None]:
        """The frozen rule on ``I``: weighted contrast, support recheck, contributions (C.3).

        Returns the confirmation fields of the report row and the plug-in contributions
        (N_I,) when the slot is support-feasible (else ``None``).
        """
        n = len(data)
        out: dict[str, Any] = dict(confirmation_feasible=False, estimate=np.nan, se=np.nan, bound=np.nan,
                                   bound_side="lower" if slot.sign > 0 else "upper", ess=np.nan,
                                   max_density=np.nan, min_split_share=np.nan, confirmation_distance=np.nan,
                                   reason="")
        if rule is None:
            out["reason"] = "no candidate met the discovery constraints"
            return out, None
        s = rule_scores(rule, data.X, data.feature_names)
        if s.sum() <= 0:
            out["reason"] = "frozen rule gives zero weight to every confirmation cluster"
            return out, None
        c = self.plan.contrast_vector(slot.contrast)
        w = s / s.sum()
        H = self.plan.tensor(data.Z, s, masks)
        mu = H.mean(axis=0)
        out.update(ess=float(1.0 / np.sum(w * w)), max_density=float(n * w.max()),
                   min_split_share=self.plan.min_split_share(mu), estimate=float(c @ self.plan.values(mu)))
        # measured in the geometry frozen on D (C.3); a hand-built discovery without one reports NaN
        if slot.family is not None and slot.radius is not None and slot.geometry in geoms:
            out["confirmation_distance"] = float(geoms[slot.geometry].distance(data.X, np.full(n, 1.0 / n), w[None])[0])
        held = support_constraints(slot, out["ess"], out["max_density"], split_share=out["min_split_share"])
        problems = {
            "max_density": f"max density ratio {out['max_density']:.2f} > cap {slot.density_cap:g}",
            "ess": f"ESS {out['ess']:.1f} < minimum {slot.min_ess:g}",
            "min_split_share": f"split denominator share {out['min_split_share']:.2f} < {slot.min_split_share:g}",
        }
        out["reason"] = "; ".join(problems[k] for k, ok in held.items() if not ok)
        out["confirmation_feasible"] = not out["reason"]
        if not out["confirmation_feasible"]:
            return out, None
        return out, (H - mu) @ self.plan.gradient(mu, c)
