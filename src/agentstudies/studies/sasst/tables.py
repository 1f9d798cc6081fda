"""SASST Tables 6-11 as paper-table results (one table convention).

Each result holds the trial records (and the design) its chapter ran and regenerates the
paper's tables through :meth:`agentstudies.results.PaperTables.table` (``PAPER = "sasst"``):

* :class:`SmallClusterResult` - Tables 6, 7 and 8 (chapter ``sasst_small_clusters``,
  records of :mod:`agentstudies.studies.sasst.small_clusters`);
* :class:`GeometryResult` - Tables 9 and 10 (chapter ``sasst_geometry``, records of
  :mod:`agentstudies.studies.sasst.geometry`);
* :class:`FeasibilityResult` - Table 11 (chapter ``sasst_feasibility``, records of
  :mod:`agentstudies.studies.sasst.feasibility`).

Every frame keeps the columns the chapters have always written (``table6.csv`` ...
``table11.csv``). A table asked of a result that lacks its records raises ``ValueError``
naming the missing field. Monte-Carlo rates carry exact (Clopper-Pearson) intervals at
the result's ``level``.

Source: Xu et al. (2026), SASST, Appendix D.2-D.5, Tables 6-11.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from agentstudies.results import PaperTables
from agentstudies.sasst.statuses import ABSTAINED, CONFIRMED, FAILED_DISCOVERY, FAILED_FEASIBILITY, NOT_CONFIRMED
from agentstudies.studies.sasst import feasibility as _fz
from agentstudies.studies.sasst import geometry as _gs
from agentstudies.studies.sasst import geometry_audit as _ga
from agentstudies.studies.sasst import small_clusters as _sc
from agentstudies.studies.sasst._common import proportion_interval

__all__ = ["SmallClusterResult", "GeometryResult", "FeasibilityResult"]

#: Statuses that block a slot (Table 11's "abstention or failure"), and Table 11's columns.
_BLOCKED = (ABSTAINED, FAILED_FEASIBILITY, FAILED_DISCOVERY)
_STATUSES = (CONFIRMED, NOT_CONFIRMED, ABSTAINED, FAILED_FEASIBILITY, FAILED_DISCOVERY)


def _need(obj: Any, name: str, table: int) -> Any:
    value = getattr(obj, name)
    if value is None:
        raise ValueError(f"{type(obj).__name__}.{name} is None: Table {table} needs it")
    return value


@dataclass
class SmallClusterResult(PaperTables):
    """The small-cluster audit, power designs and positive control (SASST Tables 6-8).

    ``pool`` and ``rules`` are the task pool and the 32-rule registry the trials used;
    ``target`` the registry index of the planted target rule (Table 8). Records:
    ``table6_records`` (:func:`~agentstudies.studies.sasst.small_clusters.run_table6`),
    ``table7_records`` and ``excluded`` (:func:`~.run_table7`, :func:`~.split_designs`),
    ``null40``, ``null200`` and ``control`` (:func:`~.run_positive_control`). Fields may
    be filled as the chapter runs each part; a table whose records are missing raises
    ``ValueError``. ``level``: the Monte-Carlo intervals' confidence level.
    """

    PAPER = "sasst"

    pool: Any
    rules: Sequence[Any]
    target: int = -1
    table6_records: pd.DataFrame | None = None
    table7_records: pd.DataFrame | None = None
    excluded: Sequence[Any] = field(default_factory=tuple)
    null40: pd.DataFrame | None = None
    null200: pd.DataFrame | None = None
    control: pd.DataFrame | None = None
    level: float = 0.95

    def _table_6(self, records: pd.DataFrame | None = None,
                 methods: Sequence[str] = _sc.METHODS) -> pd.DataFrame:
        """Table 6: familywise coverage per null setting and inference rule, with MC intervals.

        Truths come from :func:`~agentstudies.studies.sasst.small_clusters.pool_truths` (0
        for every slot and rule in a null setting, computed rather than assumed). A trial's
        family covers when every support-feasible slot's signed bound satisfies
        ``eta (Delta - B) >= 0``. ``records`` replaces ``table6_records`` (e.g. after
        :func:`~.t_quantile_bounds` added a column); ``methods`` name the ``bound_<method>``
        columns to read. Columns: ``setting, rule, familywise_coverage, n_trials, mc_low,
        mc_high, mean_feasible_slots``.
        """
        records = _need(self, "table6_records", 6) if records is None else records
        rows = []
        for name, g in records.groupby("setting", sort=False):
            truth = _sc.pool_truths(self.pool, self.rules, _sc.null_setting(name, self.pool), _sc._F_CONTRASTS)
            fw = _sc._familywise(g, truth, methods)
            for m in methods:
                k, n = int(fw[m].sum()), len(fw)
                lo, hi = proportion_interval(k, n, self.level)
                rows.append({"setting": name, "rule": m, "familywise_coverage": k / n, "n_trials": n,
                             "mc_low": lo, "mc_high": hi,
                             "mean_feasible_slots": float(g.groupby("trial")["feasible"].sum().mean())})
        return pd.DataFrame(rows)

    def _table_7(self) -> pd.DataFrame:
        """Table 7: power (upper bound < 0) of the target slot per design and method.

        Excluded designs (density ratio above ``kappa``) appear with ``excluded = True``
        and no power.
        """
        records = _need(self, "table7_records", 7)
        n_pool = len(self.pool)
        rows = []
        for (n, e), g in records.groupby(["n_clusters", "ess_design"], sort=False):
            row = {"clusters": int(n), "stressed_ess": int(e), "max_density": float(g["max_density"].median()),
                   "pool_density": n_pool / _sc.PowerDesign(n, e).subgroup_size(n_pool), "excluded": False,
                   "n_trials": len(g)}
            for m in ("gaussian", "bonferroni-t"):
                k = int((g[f"bound_{m}"] < 0).sum())
                lo, hi = proportion_interval(k, len(g), self.level)
                key = "gaussian_power" if m == "gaussian" else "bonferroni_t_power"
                row.update({key: k / len(g), f"{key}_low": lo, f"{key}_high": hi})
            rows.append(row)
        for d in self.excluded:
            rows.append({"clusters": d.n_clusters, "stressed_ess": d.ess, "max_density": d.density,
                         "pool_density": n_pool / d.subgroup_size(n_pool), "excluded": True, "n_trials": 0})
        return pd.DataFrame(rows)

    def _table_8(self) -> pd.DataFrame:
        """Table 8's five gates with Clopper-Pearson Monte-Carlo intervals.

        * null familywise error (the gate value): share of null trials in which some slot's
          Bonferroni-t band supports its claim; ``status_level`` is the share in which some
          slot's *status* is ``confirmed`` (which also needs stability);
        * target-rule discovery: the ``r3`` stressed rule is the planted target;
        * conditional confirmation: ``r3: PV - ReAct`` is *confirmed* given the target;
        * end-to-end detection: the target is discovered and the slot confirmed.

        ``result`` is ``pass`` when the value meets the paper's stated gate (``required``).
        """
        null40, null200 = _need(self, "null40", 8), _need(self, "null200", 8)
        pc = _need(self, "control", 8)

        def rate(k: int, n: int) -> tuple[float, float, float, int]:
            lo, hi = proportion_interval(k, n, self.level)
            return (k / n if n else np.nan), lo, hi, n

        rows = []
        for label, df in (("Null familywise error, N = 40", null40), ("Null familywise error, N = 200", null200)):
            any_sup = df.groupby("trial")["supported"].any()
            any_conf = (df["status"] == CONFIRMED).groupby(df["trial"]).any()
            rows.append((label, *rate(int(any_sup.sum()), len(any_sup)), float(any_conf.mean()), "at most 0.075",
                         "le", 0.075))
        t = pc[pc["slot"] == _sc.TARGET_SLOT].set_index("trial")
        hit = t["rule_index"] == self.target
        conf = t["status"] == CONFIRMED
        rows.append(("Target rule discovery, N = 200", *rate(int(hit.sum()), len(t)), np.nan, "at least 0.600",
                     "ge", 0.6))
        rows.append(("Conditional confirmation, N = 200", *rate(int((conf & hit).sum()), int(hit.sum())), np.nan,
                     "at least 0.700", "ge", 0.7))
        rows.append(("End to end detection, N = 200", *rate(int((conf & hit).sum()), len(t)), np.nan,
                     "at least 0.500", "ge", 0.5))
        df = pd.DataFrame(rows, columns=["gate", "value", "mc_low", "mc_high", "n_trials", "status_level",
                                         "required", "op", "limit"])
        df["result"] = np.where(np.where(df["op"] == "le", df["value"] <= df["limit"], df["value"] >= df["limit"]),
                                "pass", "fail")
        return df.drop(columns=["op", "limit"])


@dataclass
class GeometryResult(PaperTables):
    """SASST Study B and the geometry audit (Tables 9 and 10).

    ``study_b``: records of :func:`~agentstudies.studies.sasst.geometry.run_study_b`
    (``mechanism, method, auc, ...``); ``audit``: records of
    :func:`~agentstudies.studies.sasst.geometry.run_geometry_audit`. Either may be ``None``
    when its part was not run; its table then raises ``ValueError``.
    """

    PAPER = "sasst"

    study_b: pd.DataFrame | None = None
    audit: pd.DataFrame | None = None

    def _table_9(self) -> pd.DataFrame:
        """Mean held-out AUC per mechanism (rows) and method (columns), plus the best method."""
        records = _need(self, "study_b", 9)
        t = records.pivot_table(index="mechanism", columns="method", values="auc", aggfunc="mean")
        t = t.reindex(index=[m for m in _gs.MECHANISMS if m in t.index], columns=list(_gs.METHODS))
        t["best"] = t[list(_gs.METHODS)].idxmax(axis=1)
        return t.reset_index()

    def _table_10(self) -> pd.DataFrame:
        """Mean accepted rules, correct rule recovery and held-out AUC per geometry under two
        target-blind budgets -- frozen on all tasks (``<geometry>``) and on each trial's
        discovery half (``<geometry>, discovery budget``) -- and without a radius, with the
        share of trials whose budget excludes the target tilt (``target_outside``: the
        paper's Table 10 premise, here an outcome) and the target's mean percentile among
        the registry's distances (``target_percentile``).

        Means are taken over trials within each kernel seed, then over kernel seeds.
        """
        records = _need(self, "audit", 10)
        cols = ["accepted", "accepted_radius", "correct", "length_axis", "target_feasible", "target_outside",
                "target_percentile", "auc"]
        per_seed = records.assign(target_outside=records["target_outside"].astype(float)).groupby(
            ["geometry", "kernel_seed"])[cols].mean()
        t = per_seed.groupby(level="geometry").mean()
        geos = _ga.AUDIT_GEOMETRIES
        rows = list(geos) + [_ga.budget_name(m) for m in geos] + ["no_radius"]
        t = t.reindex([r for r in rows if r in t.index])
        t = t.rename(columns={"accepted": "accepted_rules", "correct": "correct_recovery",
                              "accepted_radius": "within_radius", "target_feasible": "target_admitted",
                              "length_axis": "goal_length_recovery"})
        return t[["accepted_rules", "within_radius", "target_outside", "target_percentile", "target_admitted",
                  "correct_recovery", "goal_length_recovery", "auc"]].reset_index()


@dataclass
class FeasibilityResult(PaperTables):
    """SASST Study C (Table 11): records of :func:`~agentstudies.studies.sasst.feasibility.run_feasibility`
    (``setting, status, checks, ...``, one per trial)."""

    PAPER = "sasst"

    records: pd.DataFrame

    def _table_11(self) -> pd.DataFrame:
        """Per setting: abstention-or-failure rate, nonabstention rate, status counts, and the
        most frequent recorded check with its share of blocked trials."""
        rows = []
        for setting, grp in self.records.groupby("setting", sort=False):
            blocked = grp["status"].isin(_BLOCKED)
            top = grp.loc[blocked, "checks"].value_counts()
            rec: dict[str, Any] = {"setting": setting, "trials": len(grp),
                                   "abstention_or_failure": float(blocked.mean()),
                                   "nonabstention": float(1 - blocked.mean())}
            for st in _STATUSES:
                rec[st] = int((grp["status"] == st).sum())
            if len(top):
                rec["recorded_check"] = top.index[0]
                rec["share_of_blocked"] = int(top.iloc[0]) / int(blocked.sum())
            else:
                rec["recorded_check"] = "none"
                rec["share_of_blocked"] = np.nan
            rows.append(rec)
        out = pd.DataFrame(rows)
        order = [s for s in _fz.ALL_SETTINGS if s in set(out["setting"])]
        return out.set_index("setting").loc[order].reset_index()
