"""Tables, findings, planted controls and sentences of the ALFWorld recovery study.

:class:`RecoveryTables` regenerates the CIR paper's tables (``result.table("delta")``,
``"counts"``, ``"mechanism"``, ``"router"``; the paper prints them without numbers) with
the paper's values beside this run's; :func:`recovery_findings` judges each paper claim
by an interval; :func:`recovery_controls` runs the verdict rules on planted and null
subjects. What each arm changed (:func:`testability`) is in :mod:`.arms`, the planted
controls in :mod:`.controls`, the sentences in :mod:`.sentences` (all re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import pandas as pd

from agentstudies.findings import controls_sentence
from agentstudies.parallel import keyed_seed
from agentstudies.results import PaperTables
from agentstudies.studies.alfworld.recovery.arms import TESTABILITY_COLUMNS, refresh_reach, testability, testability_summary
from agentstudies.studies.alfworld.recovery.controls import CONTROL_SUBJECTS, recovery_controls
from agentstudies.studies.alfworld.recovery.harness import CONDITIONS, DELAYS, OPERATIONS, ROUTER_DELAYS
from agentstudies.studies.alfworld.recovery.sentences import (MEASURED_WHY, archived_run_sentences, reappearance_table,
                                                              router_sentences)

__all__ = ["CONTROL_SUBJECTS", "RecoveryTables", "TESTABILITY_COLUMNS", "archived_run_sentences", "controls_sentence",
           "paper_table", "reappearance_table", "recovery_controls", "recovery_findings", "refresh_reach",
           "router_sentences", "testability", "testability_summary"]


# ------------------------------------------------------------------ paper values
def paper_table(name: str) -> pd.DataFrame:
    """The paper's values of table ``name`` from ``data/paper/alfworld_recovery_<name>.csv``
    (labelled ``source = "paper"``). Raises ``KeyError`` naming the stored tables."""
    from agentstudies.studies._paper import paper_values

    return paper_values("alfworld_recovery", name).assign(source="paper")


# ------------------------------------------------------------------ paper-shaped tables
def _fmt(est, lo=np.nan, hi=np.nan, digits: int = 1) -> str:
    if est is None or (isinstance(est, float) and np.isnan(est)):
        return ""
    s = f"{est:+.{digits}f}"
    if lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi):
        s += f" [{lo:+.{digits}f}, {hi:+.{digits}f}]"
    return s


def _paper_lookup(p: pd.DataFrame, **keys):
    sel = p
    for k, v in keys.items():
        sel = sel[sel[k].astype(str) == str(v)]
    return sel.iloc[0] if len(sel) else None



def _delta(result, *, cohort: str = "primary-factual-success", operation: str = "refresh",
                stale: str = "stale-2") -> pd.DataFrame:
    """Delta (points, [interval]) of clean and stale and stale - clean per delay for one
    cohort -- this run's rows, then the paper's (``source``; CIR paper, first table and
    "Stale-minus-clean differences stay positive at later delays")."""
    c = result.cells[(result.cells["cohort"] == cohort) & (result.cells["operation"] == operation)]
    k = result.contrasts[(result.contrasts["cohort"] == cohort) & (result.contrasts["operation"] == operation)
                         & (result.contrasts["condition"] == stale)]
    rows = []
    for d in sorted(c["delay"].unique()):
        cl = c[(c["condition"] == "clean") & (c["delay"] == d)]
        st = c[(c["condition"] == stale) & (c["delay"] == d)]
        kk = k[k["delay"] == d]
        rows.append({"source": "this run", "delay": int(d), "n": int(c["n"].iloc[0]),
                     "clean": _fmt(*cl[["delta", "delta_ci_low", "delta_ci_high"]].iloc[0]) if len(cl) else "",
                     stale: _fmt(*st[["delta", "delta_ci_low", "delta_ci_high"]].iloc[0]) if len(st) else "",
                     f"{stale} − clean": _fmt(*kk[["estimate", "ci_low", "ci_high"]].iloc[0]) if len(kk) else ""})
    p = paper_table("delta")
    p = p[p["cohort"] == cohort]
    for d in sorted(p["delay"].unique()):
        g = p[p["delay"] == d]
        def val(cond, est):
            r = _paper_lookup(g, condition=cond, estimand=est)
            return "" if r is None else _fmt(r["value"], r["ci_low"], r["ci_high"], 2)
        rows.append({"source": "paper", "delay": int(d), "n": int(g["n"].iloc[0]), "clean": val("clean", "delta"),
                     stale: val(stale, "delta"), f"{stale} − clean": val(stale, "delta_minus_clean")})
    return pd.DataFrame(rows)


def _counts(result, *, cohorts: Sequence[str] = ("primary-complete", "independent-complete"),
                 delay: int = 0, operation: str = "refresh", conditions: Sequence[str] = ("clean", "stale-2"),
                 paper: str = "complete") -> pd.DataFrame:
    """Paired counts (rescue / harm / both succeed / both fail) and Delta per cohort and
    condition at one delay, this run then paper (CIR paper, complete cohorts)."""
    c = result.cells
    rows = []
    for coh in cohorts:
        for cond in conditions:
            r = c[(c["cohort"] == coh) & (c["condition"] == cond) & (c["delay"] == delay) & (c["operation"] == operation)]
            if r.empty:
                continue
            r = r.iloc[0]
            rows.append({"source": "this run", "cohort": coh, "condition": cond, "n": int(r["n"]), "rescue": int(r["rescue"]),
                         "harm": int(r["harm"]), "both succeed": int(r["both_succeed"]), "both fail": int(r["both_fail"]),
                         "Δ (pp)": _fmt(r["delta"], r["delta_ci_low"], r["delta_ci_high"])})
    p = paper_table(paper)
    for coh in cohorts:
        for cond in conditions:
            g = p[(p["cohort"] == coh) & (p["condition"] == cond) & (p["delay"] == delay)]
            if g.empty:
                continue
            d = _paper_lookup(g, estimand="delta")
            rs = _paper_lookup(g, estimand="rescue")
            hm = _paper_lookup(g, estimand="harm")
            rows.append({"source": "paper", "cohort": coh, "condition": cond, "n": int(g["n"].iloc[0]),
                         "rescue": pd.NA if rs is None else int(rs["value"]), "harm": pd.NA if hm is None else int(hm["value"]),
                         "both succeed": pd.NA, "both fail": pd.NA,
                         "Δ (pp)": "" if d is None else _fmt(d["value"], d["ci_low"], d["ci_high"], 2)})
    out = pd.DataFrame(rows)
    for col in ("rescue", "harm", "both succeed", "both fail"):
        if col in out:
            out[col] = out[col].astype("Int64")
    return out


def _mechanism(result, *, cohort: str = "mechanism-complete",
                    cells: Sequence[tuple[str, int]] = (("stale-2", 4), ("clean", 0))) -> pd.DataFrame:
    """Full refresh / content-ablated / replan-only: Delta, rescue / harm and the rescues
    shared with full refresh, per (condition, delay); this run then paper (CIR paper,
    mechanism controls)."""
    c = result.cells[result.cells["cohort"] == cohort]
    rows = []
    shared = {}
    for op in ("ablated", "replan"):
        try:
            sh = result.shared_rescues("refresh", op)
            for r in sh[sh["cohort"] == cohort].itertuples(index=False):
                shared[(r.condition, int(r.delay), op)] = int(r.shared)
        except KeyError:
            pass
    for cond, d in cells:
        for op in OPERATIONS:
            r = c[(c["condition"] == cond) & (c["delay"] == d) & (c["operation"] == op)]
            if r.empty:
                continue
            r = r.iloc[0]
            rows.append({"source": "this run", "condition": cond, "delay": d, "operation": op, "n": int(r["n"]),
                         "rescue": int(r["rescue"]), "harm": int(r["harm"]),
                         "Δ (pp)": _fmt(r["delta"], r["delta_ci_low"], r["delta_ci_high"]),
                         "rescues shared with full": int(r["rescue"]) if op == "refresh" else shared.get((cond, d, op), pd.NA)})
    p = paper_table("mechanism")
    for cond, d in cells:
        for op in OPERATIONS:
            g = p[(p["condition"] == cond) & (p["delay"] == d) & (p["operation"] == op)]
            if g.empty:
                continue
            dl = _paper_lookup(g, estimand="delta")
            rs = _paper_lookup(g, estimand="rescue")
            shr = _paper_lookup(g, estimand="shared_rescues_with_refresh")
            rows.append({"source": "paper", "condition": cond, "delay": d, "operation": op, "n": int(g["n"].iloc[0]),
                         "rescue": pd.NA if rs is None else int(rs["value"]), "harm": pd.NA,
                         "Δ (pp)": "" if dl is None else _fmt(dl["value"], dl["ci_low"], dl["ci_high"], 2),
                         "rescues shared with full": (int(rs["value"]) if (rs is not None and op == "refresh") else
                                                      (pd.NA if shr is None else int(shr["value"])))})
    out = pd.DataFrame(rows)
    for col in ("rescue", "harm", "rescues shared with full"):
        if col in out:
            out[col] = out[col].astype("Int64")
    return out


def _router(evaluation) -> pd.DataFrame:
    """The CIR evaluation table: success never -> policy, Delta [interval], rescue / harm,
    intervention rate, sign-flip p; per policy (condition ``all``) and CIR per condition;
    this run then paper (CIR paper, "Test: 70.33% -> 73.33%")."""
    t = evaluation.table
    rows = []
    order = ["never", "cir", "anomaly", "rate-matched", "cate"] + [p for p in dict.fromkeys(t["policy"])
                                                                   if p.startswith(("always-", "random-"))]
    for pol in [p for p in order if p in set(t["policy"])]:
        conds = ["all"] + ([c for c in ("clean", "stale-1", "stale-2", "missing") if c in set(t["condition"])]
                           if pol == "cir" else [])
        for cond in conds:
            r = t[(t["policy"] == pol) & (t["condition"] == cond)]
            if r.empty:
                continue
            r = r.iloc[0]
            rows.append({"source": "this run", "policy": pol, "condition": cond, "n": int(r["n"]),
                         "success": f"{r['success_never']:.1f} → {r['success_policy']:.1f}",
                         "Δ vs never (pp)": _fmt(r["delta"], r["ci_low"], r["ci_high"]),
                         "rescue / harm": f"{int(r['rescue'])} / {int(r['harm'])}",
                         "refreshed (%)": round(float(r["intervention_rate"]), 1),
                         "sign-flip p": "" if not np.isfinite(r["sign_flip_p"]) else f"{r['sign_flip_p']:.3f}"})
    p = paper_table("evaluation")
    for r in p.itertuples(index=False):
        rows.append({"source": "paper", "policy": r.policy, "condition": r.condition, "n": int(r.n),
                     "success": f"{r.success_never:.2f} → {r.success_policy:.2f}",
                     "Δ vs never (pp)": _fmt(r.delta, r.ci_low, r.ci_high, 2),
                     "rescue / harm": f"{int(r.rescue)} / {int(r.harm)}",
                     "refreshed (%)": r.intervention_rate if np.isfinite(r.intervention_rate) else np.nan,
                     "sign-flip p": "" if not np.isfinite(r.sign_flip_p) else f"{r.sign_flip_p:.3f}"})
    return pd.DataFrame(rows)



@dataclass(frozen=True)
class RecoveryTables(PaperTables):
    """The CIR paper's tables regenerated from one run, this run's rows then the paper's
    (``source`` column; values from ``data/paper/alfworld_recovery_<name>.csv``).

    ``paired``: :func:`agentstudies.recovery.analyze_paired`'s result on
    :meth:`RecoveryStudy.analysis_table`; ``evaluation``: the router evaluation
    (:attr:`agentstudies.studies.alfworld.recovery.pipeline.RouterPipeline.evaluation`),
    needed only for ``table("router")``. The paper prints these tables without numbers, so
    they are named: ``table("delta", cohort=..., operation=..., stale=...)`` (Δ of clean,
    stale and stale − clean per delay; the paper's first table and "Stale-minus-clean
    differences"), ``table("counts", cohorts=..., delay=..., ...)`` (paired counts of the
    complete cohorts), ``table("mechanism", cohort=..., cells=...)`` (full / content-ablated
    / replan-only) and ``table("router")`` (the CIR evaluation, blanket baselines
    included). Raises ``ValueError`` from ``table("router")`` without an evaluation.
    """

    PAPER = "cir"
    paired: Any
    evaluation: Any = None

    def _table_delta(self, **kw) -> pd.DataFrame:
        return _delta(self.paired, **kw)

    def _table_counts(self, **kw) -> pd.DataFrame:
        return _counts(self.paired, **kw)

    def _table_mechanism(self, **kw) -> pd.DataFrame:
        return _mechanism(self.paired, **kw)

    def _table_router(self) -> pd.DataFrame:
        if self.evaluation is None:
            raise ValueError("RecoveryTables has no router evaluation: pass evaluation=RouterPipeline.evaluation")
        return _router(self.evaluation)


# ------------------------------------------------------------------ findings that can fail
def _paper_text(table: str, unit: str = " pp", **keys) -> str:
    """The paper's value (and interval when given) from ``data/paper`` as text."""
    p = paper_table(table)
    r = _paper_lookup(p, **keys)
    if r is None:
        return "n/a"
    val = r["value"] if "value" in r else r["delta"]
    s = f"{val:+.2f}{unit}" if unit else f"{val:g}"  # no unit: a count
    if np.isfinite(r.get("ci_low", np.nan)) and np.isfinite(r.get("ci_high", np.nan)):
        s += f" [{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]"
    return s


def _bootstrap_diff(diff: pd.Series, *, level: float, n_draws: int, seed: int, key: str) -> tuple[float, float, float, int]:
    """Mean of a per-task difference (points) with its task-level percentile bootstrap
    interval: ``(estimate, ci_low, ci_high, n_tasks)`` (NaNs when empty)."""
    from agentstudies.stats import paired_cluster_bootstrap, percentile_interval

    v = diff.to_numpy(float)
    if v.size == 0:
        return np.nan, np.nan, np.nan, 0
    sums = np.column_stack([v, np.ones_like(v)])
    rng = np.random.default_rng(keyed_seed(seed, "findings", key))
    reps = paired_cluster_bootstrap(sums, lambda t: t[:, 0] / t[:, 1], n_draws=n_draws, rng=rng)  # t: (draws, 2) totals
    lo, hi = percentile_interval(reps, level)
    return float(v.mean()), float(lo), float(hi), int(v.size)


def _arm_share(testab: pd.DataFrame | None, cohort: str, cells: Sequence[tuple[str, str, int]],
               col: str = "action_changed") -> tuple[float, int]:
    """Largest share ``col`` over the arm cells (operation, condition, delay) of a run
    cohort, and their forks; (NaN, 0) without a testability table or cells."""
    if testab is None:
        return np.nan, 0
    t = testab[testab["cohort"] == cohort]
    sel = pd.concat([t[(t["operation"] == op) & (t["condition"] == c) & (t["delay"] == d)] for op, c, d in cells])
    if sel.empty:
        return np.nan, 0
    return float(sel[col].max()), int(sel["forks"].sum())


#: An arm that changed nothing is "not testable here" only when the exact one-sided 95%
#: upper bound of the share of forks it changed lies under this (0 of 6 forks, bound 0.39,
#: is no such measurement: the claim's own rule then decides).
INERT_BOUND = 0.05



def _inert(share: float, forks: int) -> bool:
    """The arms changed nothing in ``forks`` forks and the exact upper bound of that share
    is under :data:`INERT_BOUND` (:func:`agentstudies.findings.share_upper_bound`)."""
    from agentstudies.findings import share_upper_bound

    return bool(np.isfinite(share) and share == 0.0 and forks > 0
                and share_upper_bound(0, int(forks))[1] < INERT_BOUND)


def _bound(forks: int) -> str:
    from agentstudies.findings import share_upper_bound

    return f" (exact 95% upper bound {share_upper_bound(0, int(forks))[1]:.3f}, under {INERT_BOUND:g})"


def _interval_or_untestable(name, paper, est, lo, hi, n, *, side, level, quantity, testab, run_cohort, cells,
                            col="action_changed", what="changed the agent's actions"):
    """An interval finding, unless the arms it rests on changed nothing (measured)."""
    from agentstudies.findings import interval_finding, untestable_finding

    share, forks = _arm_share(testab, run_cohort, cells, col)
    if _inert(share, forks):
        arms = ", ".join(f"{op} ({c}, d = {d})" for op, c, d in cells)
        return untestable_finding(name, paper, measured=share,
                                  why=f"{arms} {what} in 0 of {forks} forks of the {run_cohort} cohort{_bound(forks)}")
    return interval_finding(name, paper, est, lo, hi, n, paper_side=side, level=level, quantity=quantity, fmt="+.1f")


def recovery_findings(result, evaluation=None, testab: pd.DataFrame | None = None, *, n_draws: int = 2000,
                      seed: int = 0):
    """The CIR paper's findings judged on this run: a :class:`agentstudies.findings.Findings`.

    Parameters
    ----------
    result : :class:`agentstudies.recovery.RecoveryResult` of ``study.analysis_table()``;
        its ``level`` is the level of every interval here.
    evaluation : :class:`agentstudies.recovery.RouterEvaluation` (router findings; omitted if None).
    testab : :func:`testability` of the study; an arm that changed the agent's actions in
        0 forks (exact upper bound under :data:`INERT_BOUND`) makes the findings resting on
        it ``not testable here`` (the CIR
        "harms no clean trajectory" finding: an arm that changed no clean *outcome*).
    n_draws, seed : task-level bootstrap of the contrasts computed here (full - replan;
        CIR vs baselines; CIR's stale-2 gain vs the other conditions).

    Each row's rule names its interval (Delta and contrasts in points, CIR paper tables;
    thresholds 0, the paper's sign-flip criterion p < 0.05). Never a point-estimate sign.

    Length: one block per paper finding (twelve to sixteen), in the paper's order.
    """
    from agentstudies.findings import Findings

    level = float(result.params.get("level", 0.95))
    c = result.cells.set_index(["cohort", "condition", "delay", "operation"])
    k = result.contrasts.set_index(["cohort", "condition", "delay", "operation"])
    nan4 = (np.nan, np.nan, np.nan, 0)

    def cell(coh, cond, d, op="refresh"):
        try:
            r = c.loc[(coh, cond, d, op)]
            return float(r["delta"]), float(r["delta_ci_low"]), float(r["delta_ci_high"]), int(r["n"])
        except KeyError:
            return nan4

    def con(coh, d, cond="stale-2", op="refresh"):
        try:
            r = k.loc[(coh, cond, d, op)]
            return float(r["estimate"]), float(r["ci_low"]), float(r["ci_high"]), int(r["n"])
        except KeyError:
            return nan4

    kw = dict(level=level, testab=testab)
    fs, rows = "primary-factual-success", []
    rows.append(_interval_or_untestable(
        "Immediate refresh harms clean factual-success trajectories", _paper_text("delta", cohort=fs, condition="clean",
                                                                                   delay=0, estimand="delta"),
        *cell(fs, "clean", 0), side="below", quantity="Δ (clean, d = 0, pp)", run_cohort="primary",
        cells=[("refresh", "clean", 0)], **kw))
    for d in DELAYS:
        rows.append(_interval_or_untestable(
            f"Stale − clean > 0 at d = {d} (factual-success cohort)",
            _paper_text("delta", cohort=fs, condition="stale-2", delay=d, estimand="delta_minus_clean"),
            *con(fs, d), side="above", quantity=f"Δ(stale-2) − Δ(clean) at d = {d} (pp)", run_cohort="primary",
            cells=[("refresh", "clean", d), ("refresh", "stale-2", d)], **kw))
    ind = "independent-factual-success"
    rows.append(_interval_or_untestable(
        "Independent cohort keeps stale > clean (d = 2)",
        f"stale {_paper_text('delta', cohort=ind, condition='stale-2', delay=2, estimand='delta')} vs clean "
        f"{_paper_text('delta', cohort=ind, condition='clean', delay=2, estimand='delta')}",
        *con(ind, 2), side="above", quantity="Δ(stale-2) − Δ(clean) at d = 2, independent (pp)",
        run_cohort="independent", cells=[("refresh", "clean", 2), ("refresh", "stale-2", 2)], **kw))
    pc = "primary-complete"
    rows.append(_interval_or_untestable(
        "Complete primary cohort: stale Δ > clean Δ at d = 0",
        _paper_text("complete", cohort=pc, condition="stale-2", delay=0, estimand="delta_minus_clean"),
        *con(pc, 0), side="above", quantity="Δ(stale-2) − Δ(clean) at d = 0, complete (pp)", run_cohort="primary",
        cells=[("refresh", "clean", 0), ("refresh", "stale-2", 0)], **kw))
    rows.append(_two_way(result, testab))
    rows += _mechanism_findings(result, cell, testab, level=level, n_draws=n_draws, seed=seed)
    if evaluation is not None:
        rows += _router_findings(evaluation, testab, level=level, n_draws=n_draws, seed=seed)
    rows = [replace(r, basis="measured", why="; ".join(x for x in (MEASURED_WHY, r.why) if x)) for r in rows]
    return Findings.build(rows, seed=seed, title="CIR paper findings on this run (simulated agent unless an LLM)",
                          level=level, n_draws=n_draws)


def _two_way(result, testab):
    """'Refresh both rescues and harms under stale' (complete primary, d = 0): the
    paper's exact criterion rescue > 0 and harm > 0."""
    from agentstudies.findings import exact_finding, untestable_finding

    paper = (f"{_paper_text('complete', '', cohort='primary-complete', condition='stale-2', delay=0, estimand='rescue')}"
             f" rescues / {_paper_text('complete', '', cohort='primary-complete', condition='stale-2', delay=0, estimand='harm')}"
             " harms")
    name = "Refresh both rescues and harms under two-step stale (complete, d = 0)"
    share, forks = _arm_share(testab, "primary", [("refresh", "stale-2", 0)])
    if _inert(share, forks):
        return untestable_finding(name, paper, measured=share,
                                  why=f"refresh (stale-2, d = 0) changed the agent's actions in 0 of {forks} "
                                      f"forks{_bound(forks)}")
    r = result.cells[(result.cells["cohort"] == "primary-complete") & (result.cells["condition"] == "stale-2")
                     & (result.cells["delay"] == 0) & (result.cells["operation"] == "refresh")]
    if r.empty:
        return untestable_finding(name, paper, measured=0.0, why="this run has no complete primary stale-2 cell")
    r = r.iloc[0]
    return exact_finding(name, paper, float(r["rescue"] + r["harm"]), int(r["n"]),
                         holds=bool(r["rescue"] > 0 and r["harm"] > 0),
                         rule=f"rescue > 0 and harm > 0 (this run: {int(r['rescue'])} rescues, {int(r['harm'])} harms)",
                         fmt=".0f", otherwise="inconclusive")


def _mechanism_findings(result, cell, testab, *, level, n_draws, seed):
    """Mechanism controls (stale-2, d = 4, mechanism cohort): full refresh helps; the
    content-ablated refresh keeps a positive effect; full refresh beats replan-only."""
    mc = "mechanism-complete"
    paper = lambda op: _paper_text("mechanism", cohort=mc, condition="stale-2", delay=4, operation=op,  # noqa: E731
                                   estimand="delta")
    rows = [
        _interval_or_untestable("Full refresh helps under two-step stale at d = 4 (mechanism cohort)", paper("refresh"),
                                *cell(mc, "stale-2", 4, "refresh"), side="above", level=level, testab=testab,
                                quantity="Δ full refresh (stale-2, d = 4, pp)", run_cohort="mechanism",
                                cells=[("refresh", "stale-2", 4)]),
        _interval_or_untestable("Content-ablated refresh keeps a positive effect (stale-2, d = 4)", paper("ablated"),
                                *cell(mc, "stale-2", 4, "ablated"), side="above", level=level, testab=testab,
                                quantity="Δ content-ablated (stale-2, d = 4, pp)", run_cohort="mechanism",
                                cells=[("ablated", "stale-2", 4)]),
    ]
    t = result.table
    t = t[(t["cohort"] == mc) & (t["condition"] == "stale-2") & (t["delay"] == 4)]
    w = t.pivot_table(index="task_id", columns="operation", values="y_with", aggfunc="first")
    diff = (100 * (w["refresh"] - w["replan"])) if {"refresh", "replan"} <= set(w.columns) else pd.Series(dtype=float)
    est = _bootstrap_diff(diff, level=level, n_draws=n_draws, seed=seed, key="full-minus-replan")
    rows.append(_interval_or_untestable(
        "Full refresh beats replan-only (stale-2, d = 4)", f"{paper('refresh')} vs {paper('replan')}", *est,
        side="above", level=level, testab=testab, quantity="Δ full − Δ replan-only (stale-2, d = 4, pp)",
        run_cohort="mechanism", cells=[("replan", "stale-2", 4)]))
    return rows


def _policy_diff(ep: pd.DataFrame, a: str, b: str | None = None, cond_a: str | None = None,
                 cond_b: str | None = None) -> pd.Series:
    """Per-task difference (points per trajectory) between two policies' outcomes, or
    (``b`` None) between policy ``a``'s gains Delta = Y^pi - Y^never on two conditions."""
    e = ep.assign(gain=100.0 * (ep["y_policy"] - ep["y_never"]), y=100.0 * ep["y_policy"])
    if b is not None:
        w = e.pivot_table(index=["task_id", "condition"], columns="policy", values="y", aggfunc="first")
        if a not in w or b not in w:
            return pd.Series(dtype=float)
        return (w[a] - w[b]).groupby(level="task_id").mean()
    g = e[e["policy"] == a].pivot_table(index="task_id", columns="condition", values="gain", aggfunc="first")
    if cond_a not in g or cond_b not in g:
        return pd.Series(dtype=float)
    return g[cond_a] - g[cond_b]


def _router_findings(evaluation, testab, *, level, n_draws, seed):
    """CIR findings on the evaluation pool: gain over never-refresh, no clean harm,
    largest gain on two-step stale, CIR > both anomaly baselines, sign-flip p < 0.05.

    Length: five findings, each with its paper value, interval and testability check.
    """
    from agentstudies.findings import exact_finding, interval_finding, untestable_finding

    t = evaluation.table.set_index(["policy", "condition"])
    ep = evaluation.episodes
    pe = paper_table("evaluation").set_index(["policy", "condition"])
    pv = lambda pol, cond, col="delta": float(pe.loc[(pol, cond), col]) if (pol, cond) in pe.index else np.nan  # noqa: E731
    rows = []
    arms = [("refresh", c, d) for c in CONDITIONS for d in ROUTER_DELAYS]
    share, forks = _arm_share(testab, "evaluation", arms)
    inert = _inert(share, forks)
    what = "changed the agent's actions"
    oall, _ = _arm_share(testab, "evaluation", arms, col="outcome_changed")
    if not inert and _inert(oall, forks):  # actions changed, no outcome ever did
        inert, share, what = True, oall, "changed the outcome"
    name = "CIR raises success over never-refresh"
    paper = f"{pv('cir', 'all'):+.2f} pp [{pv('cir', 'all', 'ci_low'):+.2f}, {pv('cir', 'all', 'ci_high'):+.2f}]"
    if inert:
        why = f"refresh {what} in 0 of {forks} evaluation forks{_bound(forks)}"
        rows.append(untestable_finding(name, paper, why=why, measured=share))
    else:
        r = t.loc[("cir", "all")]
        rows.append(interval_finding(name, paper, r["delta"], r["ci_low"], r["ci_high"], r["n"], paper_side="above",
                                     level=level, quantity="CIR Δ vs never (pp, evaluation pool)", fmt="+.1f"))
    # no clean harm: testable only if refresh can change a clean outcome at some router delay
    name = "CIR harms no clean trajectory"
    paper = f"{pv('cir', 'clean', 'harm'):.0f} clean harms"
    oshare, oforks = _arm_share(testab, "evaluation", [("refresh", "clean", d) for d in ROUTER_DELAYS],
                                col="outcome_changed")
    if _inert(oshare, oforks):
        rows.append(untestable_finding(name, paper, measured=oshare,
                                       why=f"refresh on clean observations changed no outcome in {oforks} evaluation "
                                           f"forks at any delay{_bound(oforks)}, so no router can harm a clean "
                                           "trajectory here"))
    else:
        h = evaluation.clean_harm.set_index("policy").loc["cir"]
        rows.append(exact_finding(name, paper, h["harms"], h["n"], holds=bool(h["harms"] == 0),
                                  rule="0 clean harms (the paper reports 0)", fmt=".0f"))
    # largest gain on two-step stale: stale-2's gain exceeds each other condition's
    others = [x for x in ("clean", "stale-1", "missing") if (("cir", x) in t.index)]
    ests = [_bootstrap_diff(_policy_diff(ep, "cir", None, "stale-2", o), level=level, n_draws=n_draws, seed=seed,
                            key=f"cir-stale2-vs-{o}") for o in others]
    name = "CIR's largest gain is on two-step stale"
    paper = f"{pv('cir', 'stale-2'):+.2f} pp on stale-2"
    if inert:
        rows.append(untestable_finding(name, paper, measured=share,
                                       why=f"refresh {what} in 0 of {forks} evaluation forks{_bound(forks)}"))
    elif ests:
        lo, hi = min(e[1] for e in ests), min(e[2] for e in ests)
        est = min(e[0] for e in ests)
        rows.append(interval_finding(name, paper, est, lo, hi, ests[0][3], paper_side="above",
                                     level=level, fmt="+.1f",
                                     quantity="every Δ(stale-2) − Δ(other condition) of CIR (pp; the bounds are "
                                              "the smallest lower and smallest upper bound of the three intervals)"))
    for base in ("anomaly", "rate-matched"):
        name = f"CIR beats the {base} baseline"
        paper = f"{pv('cir', 'all'):+.2f} vs {pv(base, 'all'):+.2f} pp"
        if inert:
            rows.append(untestable_finding(name, paper, measured=share,
                                       why=f"refresh {what} in 0 of {forks} evaluation forks{_bound(forks)}"))
            continue
        e = _bootstrap_diff(_policy_diff(ep, "cir", base), level=level, n_draws=n_draws, seed=seed, key=f"cir-{base}")
        rows.append(interval_finding(name, paper, *e, paper_side="above", level=level, fmt="+.1f",
                                     quantity=f"success(CIR) − success({base}) per trajectory (pp)"))
    p, alpha = float(t.loc[("cir", "all"), "sign_flip_p"]), 1 - level
    if inert:
        rows.append(untestable_finding("CIR's gain is significant (sign-flip test)",
                                       f"p = {pv('cir', 'all', 'sign_flip_p'):.3f}", measured=share,
                                       why=f"refresh {what} in 0 of {forks} evaluation forks{_bound(forks)}"))
        return rows
    rows.append(exact_finding("CIR's gain is significant (sign-flip test)", f"p = {pv('cir', 'all', 'sign_flip_p'):.3f}",
                              p, t.loc[("cir", "all"), "n"], holds=bool(p < alpha),
                              rule=f"task-level sign-flip p < {alpha:g} = 1 − level (this run: p = {p:.3f})", fmt=".3f",
                              otherwise="inconclusive"))
    return rows
