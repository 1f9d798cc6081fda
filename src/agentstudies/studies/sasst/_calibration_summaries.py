"""Study A's trial records summarised as the paper's Table 4, Table 5 and Study A4
(:class:`StudyAResult`, ``result.table(4 | 5 | "a4")``), against the population truths of
:mod:`agentstudies.studies.sasst._calibration_design`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as _st
from statsmodels.stats.contingency_tables import mcnemar

from agentstudies.studies.sasst._common import (
    proportion_interval,
)
from agentstudies.results import PaperTables
from agentstudies.studies.sasst._calibration_design import (StudyADesign, a4_slots, population_contrasts,
                                                           population_means)


# ------------------------------------------------------------------ summaries
def _truths(design: StudyADesign, which: str, n_points: int, contrast=None) -> np.ndarray:
    return population_contrasts(design, population_means(design, which, n_points), contrast)


def _summarize_table4(records: pd.DataFrame, design: StudyADesign, n_points: int = 2**21) -> pd.DataFrame:
    """Table 4: one-sided pointwise coverage (fragility direction), bias and SE ratio.

    ``coverage`` is the share of trials with ``Delta(g_hat) <= estimate + crit * se``
    among trials whose rule passed discovery and confirmation support (the others have no
    bound; ``n_failed`` counts them). ``lower_coverage`` is the opposite one-sided bound,
    ``bias = mean(estimate - Delta)``, ``se_ratio = mean(se) / sd(estimate - Delta)``,
    ``oracle_share`` the share of learned rules equal to the oracle rule.
    """
    truth = _truths(design, "registry", n_points)
    oracle = int(np.argmin(truth))
    rows = []
    for (M, R, rule), g in records.groupby(["M", "R", "rule"], sort=True):
        ok = g[g["feasible"]]
        t = truth[ok["rule_index"].to_numpy()]
        err = ok["estimate"].to_numpy() - t
        cov = t <= ok["estimate"].to_numpy() + ok["crit_upper"].to_numpy() * ok["se"].to_numpy() + 1e-12
        low = t >= ok["estimate"].to_numpy() - ok["crit_lower"].to_numpy() * ok["se"].to_numpy() - 1e-12
        k, n = int(cov.sum()), len(ok)
        lo_ci, hi_ci = proportion_interval(k, n)
        rows.append({
            "M": int(M), "R": int(R), "rule": rule, "coverage": k / n if n else np.nan, "n_trials": n,
            "mc_low": lo_ci, "mc_high": hi_ci, "lower_coverage": float(low.mean()) if n else np.nan,
            "bias": float(err.mean()) if n else np.nan, "emp_se": float(err.std(ddof=1)) if n > 1 else np.nan,
            "mean_se": float(ok["se"].mean()) if n else np.nan,
            "se_ratio": float(ok["se"].mean() / err.std(ddof=1)) if n > 1 else np.nan,
            "oracle_share": float((ok["rule_index"] == oracle).mean()) if n else np.nan,
            "n_failed": int(len(g) - n),
        })
    return pd.DataFrame(rows)


def _summarize_table5(records: pd.DataFrame, design: StudyADesign, n_points: int = 2**21,
                     level: float = 0.95) -> pd.DataFrame:
    """Table 5: split vs same-data coverage of the worst-tercile upper bound, paired.

    Per ``M``: both coverages (trials where both procedures produced a bound), the paired
    gap ``split - same``, its one-sided ``level`` lower bound (normal approximation to the
    paired difference, ``gap - z sd(d)/sqrt(T)``) and McNemar's test on the discordant
    pairs (statsmodels, exact binomial).
    """
    truth = _truths(design, "tercile", n_points)
    rows = []
    for M, g in records.groupby("M", sort=True):
        wide = g.pivot(index="trial", columns="procedure")
        ok = wide["feasible"].all(axis=1)
        cov = {}
        for proc in ("split", "same data"):
            est = wide[("estimate", proc)][ok].to_numpy()
            up = est + wide[("crit_upper", proc)][ok].to_numpy() * wide[("se", proc)][ok].to_numpy()
            cov[proc] = truth[wide[("rule_index", proc)][ok].to_numpy(int)] <= up + 1e-12
        a, b = cov["split"], cov["same data"]
        T = len(a)
        d = a.astype(float) - b.astype(float)
        gap = float(d.mean())
        lb = gap - _st.norm.ppf(level) * float(d.std(ddof=1)) / np.sqrt(T) if T > 1 else np.nan
        table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
        p = float(mcnemar(table, exact=True).pvalue) if (table[0][1] + table[1][0]) > 0 else 1.0
        rows.append({"M": int(M), "split_coverage": float(a.mean()), "same_data_coverage": float(b.mean()),
                     "gap": gap, "gap_lower_bound": lb, "mcnemar_p": p, "split_only": table[0][1],
                     "same_only": table[1][0], "n_trials": T})
    return pd.DataFrame(rows)


def _summarize_a4(records: pd.DataFrame, design: StudyADesign, n_points: int = 2**21) -> pd.DataFrame:
    """Study A4: familywise coverage of the six-slot signed band and false-fragility rate.

    Familywise coverage: every support-feasible slot's signed bound lies on the correct
    side of its truth (``eta (Delta - B) >= 0``). False fragility: some stressed slot's
    upper bound is below 0 (a confirmed fragility claim at the band level, stability not
    required) although its truth is ``>= 0``. Infeasible slots have no bound and count
    as covered and not confirmed.
    """
    means = population_means(design, "registry", n_points)
    truths = {}
    for s in a4_slots():
        t = population_contrasts(design, means, s.contrast)
        truths[s.name] = t
    rows = []
    for M, g in records.groupby("M", sort=True):
        feas = g["feasible"].to_numpy(bool)
        idx = np.where(feas, g["rule_index"].to_numpy(int), 0)
        t = np.array([truths[s][i] for s, i in zip(g["slot"], idx)])
        sign = g["sign"].to_numpy(float)
        crit = np.nan_to_num(g["crit"].to_numpy(float), nan=0.0)
        bound = g["estimate"].to_numpy(float) - sign * crit * np.nan_to_num(g["se"].to_numpy(float))
        covered = ~feas | (sign * (t - bound) >= -1e-12)
        false = feas & (sign < 0) & (bound < 0) & (t >= 0)
        fam = pd.Series(covered).groupby(g["trial"].to_numpy()).all()
        ff = pd.Series(false).groupby(g["trial"].to_numpy()).any()
        n, k, f = len(fam), int(fam.sum()), int(ff.sum())
        c_lo, c_hi = proportion_interval(k, n)
        f_lo, f_hi = proportion_interval(f, n)
        rows.append({"M": int(M), "familywise_coverage": k / n, "fw_mc_low": c_lo, "fw_mc_high": c_hi,
                     "false_fragility": f / n, "ff_mc_low": f_lo, "ff_mc_high": f_hi, "n_trials": n})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class StudyAResult(PaperTables):
    """Trial records of one Study A run and the design they were drawn from.

    ``table(4)``, ``table(5)`` and ``table("a4")`` (:class:`~agentstudies.results.PaperTables`,
    paper ``"sasst"``) summarise ``table4`` / ``table5`` / ``a4`` records (from
    :func:`run_table4`, :func:`run_table5`, :func:`run_a4`); the population truths are
    integrated over ``n_points`` quasi-random feature points. Table 4: one-sided pointwise
    coverage (fragility direction) with its exact Monte-Carlo interval, the opposite
    bound's coverage, bias, SE ratio, oracle share, per ``M, R, rule``. Table 5: split vs
    same-data coverage of the worst-tercile upper bound, the paired gap, its one-sided
    ``level`` lower bound and McNemar's p per ``M``. A4: familywise coverage and
    false-fragility rate of the six-slot signed band per ``M``.

    Raises
    ------
    ValueError
        From :meth:`table` when the records that table needs were not given.
    """

    PAPER = "sasst"
    design: StudyADesign
    table4: pd.DataFrame | None = None
    table5: pd.DataFrame | None = None
    a4: pd.DataFrame | None = None
    n_points: int = 2**21
    level: float = 0.95

    def _records(self, name: str) -> pd.DataFrame:
        rec = getattr(self, name)
        if rec is None:
            raise ValueError(f"this StudyAResult holds no {name} records (pass {name}=run_{name if name == 'a4' else name}(...))")
        return rec

    def _table_4(self) -> pd.DataFrame:
        return _summarize_table4(self._records("table4"), self.design, self.n_points)

    def _table_5(self) -> pd.DataFrame:
        return _summarize_table5(self._records("table5"), self.design, self.n_points, self.level)

    def _table_a4(self) -> pd.DataFrame:
        return _summarize_a4(self._records("a4"), self.design, self.n_points)
