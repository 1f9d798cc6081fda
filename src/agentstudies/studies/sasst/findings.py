"""Findings of the SASST simulation chapters: Monte-Carlo coverage and error rates judged
by exact intervals against the paper's stated targets.

:func:`calibration_findings` reads the summaries of :mod:`agentstudies.studies.sasst.calibration`
(Table 4, Table 5, Study A4); :func:`small_cluster_findings` Table 6, :func:`feasibility_findings`
Table 11, :func:`geometry_findings` Table 9's trial records and :func:`real_features_findings`
Study D's quantities (Table 12). Every rate is a count of trials, so its interval is exact
(Clopper-Pearson, :func:`agentstudies.findings.binomial_interval`); the paired split vs
same-data gap has a Wald interval from the discordant pairs (the same pairs McNemar's test
uses). The targets are the paper's: nominal ``1 - alpha`` coverage and an ``alpha``
false-fragility rate (SASST, Appendix D.1).

Every row rests on a ``method`` basis (a property of SASST checked where the simulation
knows the truth), except the feasibility settings whose candidate lifts exceed the density
cap by construction (``arithmetic``). A "near nominal" coverage claim is judged by an
equivalence rule (:func:`agentstudies.findings.coverage_finding`, margin alpha/2), pooled
only over independent configurations (Table 4: over M, never over R, whose trials share
their clusters); a "worst setting" claim is adjusted for its selection
(:func:`agentstudies.findings.worst_setting_finding`).

Source: SASST Appendix D (Tables 4-12).
"""

from __future__ import annotations

import math

import pandas as pd
from scipy import stats

__all__ = ["calibration_findings", "feasibility_findings", "feasibility_testability", "feasibility_controls", "small_cluster_findings", "real_features_findings", "geometry_findings", "paired_gap_interval"]


def paired_gap_interval(split_only: int, same_only: int, n: int, *, level: float = 0.95) -> tuple[float, float, float]:
    """Paired difference of two coverage rates on the same ``n`` trials, ``(b - c) / n``
    with ``b`` = trials covered by split only, ``c`` = by same-data only, and its two-sided
    Wald ``level`` interval ``± z sqrt(b + c - (b - c)^2 / n) / n``.

    Raises ``ValueError`` for ``n < 1`` or counts outside ``[0, n]``.
    """
    b, c, n = int(split_only), int(same_only), int(n)
    if n < 1 or not (0 <= b <= n and 0 <= c <= n and b + c <= n):
        raise ValueError(f"need 0 <= split_only + same_only <= n with n >= 1; got {b}, {c}, {n}")
    d = (b - c) / n
    se = math.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n
    z = float(stats.norm.ppf(0.5 + level / 2))
    return d, d - z * se, d + z * se


def _paper(pa4: pd.DataFrame, M: int, col: str) -> str:
    return f"{col.replace('_', ' ')} {pa4.loc[int(M), col]:g}" if int(M) in pa4.index else "M not run in the paper"


def calibration_findings(t4: pd.DataFrame, t5: pd.DataFrame, a4: pd.DataFrame, *, alpha: float = 0.05,
                         level: float = 0.95):
    """The calibration chapter's findings (SASST Study A, Appendix D.1).

    - per rule of Table 4 (``fixed``, ``learned``) and R, pooled over its M cells (each M
      an independent set of trials; the R cells of one M share them): *the one-sided
      pointwise bound covers near the nominal* ``1 - alpha``: the exact interval of the
      pooled coverage within ``1 - alpha ± alpha / 2``
      (:func:`agentstudies.findings.coverage_finding`; contradicted when it lies wholly
      outside);
    - *same-data selection covers less than the split*: the pooled paired gap (split −
      same data, :func:`paired_gap_interval` over Table 5's M) above 0 (paper values read
      from ``data/paper``);
    - per M of Study A4: *false fragility stays below alpha* (exact interval of the rate
      below ``alpha``) and *familywise coverage is near nominal* (exact interval within
      ``1 - alpha ± alpha / 2``).

    Parameters
    ----------
    t4 : the Table 4 summary (``M, R, rule, coverage, n_trials``).
    t5 : :func:`sasst_calibration.summarize_table5` (``split_only, same_only, n_trials``).
    a4 : :func:`sasst_calibration.summarize_a4` (``M, familywise_coverage,
        false_fragility, n_trials``).

    Returns
    -------
    :class:`agentstudies.findings.Findings`.

    Raises
    ------
    KeyError
        A missing column.
    """
    from agentstudies.findings import Findings, binomial_interval, coverage_finding, interval_finding, pool_independent
    from agentstudies.studies import paper_values

    for name, t, cols in (("t4", t4, {"M", "R", "rule", "coverage", "n_trials"}),
                          ("t5", t5, {"split_only", "same_only", "n_trials"}),
                          ("a4", a4, {"M", "familywise_coverage", "false_fragility", "n_trials"})):
        if not cols <= set(t.columns):
            raise KeyError(f"{name} lacks column(s) {sorted(cols - set(t.columns))}")
    nominal = 1.0 - alpha
    known = dict(basis="method", why="coverage of the population contrast the simulation knows")
    p4 = paper_values("sasst_calibration", "table4")
    rows = []
    for (rule, R), g in t4.groupby(["rule", "R"], sort=True):
        g = g[g["n_trials"] > 0]
        if not len(g):
            continue
        k, n = pool_independent(g, sample="M", rate="coverage")
        pr = p4[(p4["rule"] == rule) & (p4["R"] == R)]["coverage"]
        ptxt = (f"Table 4: {rule} rule, R = {int(R)}: {pr.min():g} to {pr.max():g} over M" if len(pr)
                else f"Table 4: R = {int(R)} not run in the paper")
        rows.append(coverage_finding(f"the {rule} rule's one-sided bound covers near the nominal level (R = {int(R)})",
                                     ptxt, k, n, nominal=nominal, level=level,
                                     quantity=f"coverage of the {rule} rule pooled over M (exact)", **known))
    p5 = paper_values("sasst_calibration", "table5").dropna(subset=["gap"])
    p5_txt = "; ".join(f"M = {int(r.M)}: gap {r.gap:g}, one-sided lower bound {r.gap_lower_bound:g}, McNemar p "
                       f"{r.mcnemar_p:g}" for r in p5.itertuples()) or "gap not reported"
    pa4 = paper_values("sasst_calibration", "a4").set_index("M")
    b, c, n = int(t5["split_only"].sum()), int(t5["same_only"].sum()), int(t5["n_trials"].sum())
    if n > 0:
        d, lo, hi = paired_gap_interval(b, c, n, level=level)
        rows.append(interval_finding("same-data selection covers less than the split",
                                     f"Table 5: {p5_txt}",
                                     d, lo, hi, n, paper_side="above", level=level, domain=(-1.0, 1.0),
                                     quantity="split − same-data coverage (paired, pooled over M)", fmt=".4f",
                                     **known))
    for r in a4.itertuples(index=False):
        nt = int(r.n_trials)
        if nt == 0:
            continue
        rate, lo, hi = binomial_interval(int(round(r.false_fragility * nt)), nt, level=level)
        rows.append(interval_finding(f"false fragility stays below alpha (M = {int(r.M)})",
                                     f"Study A4: {_paper(pa4, r.M, 'false_fragility')}", rate, lo, hi, nt,
                                     paper_side="below", threshold=alpha, level=level, domain=(0.0, 1.0),
                                     quantity="false-fragility rate (exact)", fmt=".4f", basis="method",
                                     why="the null family's truth is known: every fragility call is false"))
        rows.append(coverage_finding(f"familywise coverage is near nominal (M = {int(r.M)})",
                                     f"Study A4: {_paper(pa4, r.M, 'familywise_coverage')}",
                                     int(round(r.familywise_coverage * nt)), nt, nominal=nominal, level=level,
                                     quantity="familywise coverage (exact)", **known))
    return Findings.build(rows, seed=None, title="sasst_calibration findings", alpha=alpha, level=level)


def _feasibility_finding(setting: str, k: int, n: int, prate: float, check: str, *, level: float = 0.95):
    """The feasibility rule for one setting: ``k`` of ``n`` trials blocked against the
    paper's rate ``prate`` (exact criterion at 0 and 1, the exact interval above one half
    in between; see :func:`feasibility_findings`)."""
    from agentstudies.findings import binomial_interval, exact_finding, interval_finding

    ptxt = f"Table 11: abstention or failure {prate:g} ({check})"
    name = setting.replace("_", " ")
    method = dict(basis="method", why="the setting's registry and truth are known: the support checks are judged "
                                      "on a design where the right answer is set")
    if prate == 1.0:
        return exact_finding(f"{name}: every trial abstains or fails a check", ptxt, k / n, n,
                             holds=k == n, rule=f"all {n} trials blocked (ours: {k})", basis="arithmetic",
                             why=f"the setting's candidates are built to break a support check ({check}), so "
                                 "blocking them follows from the check's threshold")
    if prate == 0.0:
        return exact_finding(f"{name}: no trial is blocked", ptxt, k / n, n, holds=k == 0,
                             rule=f"0 of {n} trials blocked (ours: {k})", **method)
    rate, lo, hi = binomial_interval(k, n, level=level)
    return interval_finding(f"{name}: most trials abstain or fail", ptxt, rate, lo, hi, n,
                            paper_side="above", threshold=0.5, level=level, domain=(0.0, 1.0),
                            quantity="abstention-or-failure rate (exact)", fmt=".3f", **method)


def feasibility_findings(t11: pd.DataFrame, *, level: float = 0.95):
    """The feasibility chapter's findings (SASST Study C, Table 11), one per setting the
    paper reports (values read from ``data/paper``):

    - a paper rate of 1 (every trial abstains or fails a check): the paper's exact
      criterion, every one of our trials does too (else contradicted);
    - a paper rate of 0 (the stable positive rule is never blocked): exact, none of ours is;
    - a rate strictly between (near-tied rules, 0.958): *most trials abstain*, the exact
      interval of our abstention-or-failure rate lies above one half.

    Parameters
    ----------
    t11 : ``FeasibilityResult(records).table(11)`` (:mod:`agentstudies.studies.sasst.tables`;
          ``setting, trials, abstention_or_failure``).

    Returns
    -------
    :class:`agentstudies.findings.Findings`; settings absent from ``t11`` are skipped.

    Raises
    ------
    KeyError
        A missing column.
    """
    from agentstudies.findings import Findings
    from agentstudies.studies import paper_values

    need = {"setting", "trials", "abstention_or_failure"}
    if not need <= set(t11.columns):
        raise KeyError(f"t11 lacks column(s) {sorted(need - set(t11.columns))}")
    paper = paper_values("sasst_feasibility", "table11").set_index("setting")
    ours = t11.set_index("setting")
    rows = []
    for setting, p in paper.iterrows():
        if setting not in ours.index:
            continue
        n = int(ours.loc[setting, "trials"])
        k = int(round(float(ours.loc[setting, "abstention_or_failure"]) * n))
        rows.append(_feasibility_finding(str(setting), k, n, float(p["abstention_or_failure"]),
                                         str(p["recorded_check"]), level=level))
    return Findings.build(rows, seed=None, title="sasst_feasibility findings", level=level)


def small_cluster_findings(t6: pd.DataFrame, *, alpha: float = 0.05, level: float = 0.95):
    """The small-cluster chapter's Table 6 findings (SASST Appendix D.3), one per band rule,
    with the paper's ranges read from ``data/paper``:

    - a paper range wholly below the nominal ``1 - alpha`` (Gaussian, HC1): *the rule
      under-covers*, the exact interval of our familywise coverage pooled over the null
      settings lies below ``1 - alpha``;
    - a range wholly above (Bonferroni-t): *the rule is conservative*, the pooled interval
      lies above;
    - a range straddling it (t-scaled, "not uniformly adequate"): *the rule under-covers in
      some setting*, adjusted for choosing the worst of the settings
      (:func:`agentstudies.findings.worst_setting_finding`, Šidák): reappears when one
      setting's adjusted exact interval lies below, contradicted when every one lies above.

    Parameters
    ----------
    t6 : ``SmallClusterResult.table(6)`` (:mod:`agentstudies.studies.sasst.tables`; ``setting, rule,
        familywise_coverage, n_trials``).

    Returns
    -------
    :class:`agentstudies.findings.Findings`; rules absent from ``t6`` are skipped.

    Raises
    ------
    KeyError
        A missing column.
    """
    from agentstudies.findings import Findings, binomial_interval, interval_finding, worst_setting_finding
    from agentstudies.studies import paper_values

    need = {"setting", "rule", "familywise_coverage", "n_trials"}
    if not need <= set(t6.columns):
        raise KeyError(f"t6 lacks column(s) {sorted(need - set(t6.columns))}")
    nominal = 1.0 - alpha
    known = dict(basis="method", why="familywise coverage under null settings the simulation knows")
    rows = []
    for p in paper_values("sasst_small_clusters", "table6").itertuples(index=False):
        g = t6[(t6["rule"] == p.rule) & (t6["n_trials"] > 0)]
        if not len(g):
            continue
        ptxt = f"Table 6: {p.familywise_low:g} to {p.familywise_high:g} ({p.reading})"
        k = (g["familywise_coverage"] * g["n_trials"]).round().astype(int)
        if p.familywise_high < nominal or p.familywise_low > nominal:
            side = "below" if p.familywise_high < nominal else "above"
            rate, lo, hi = binomial_interval(int(k.sum()), int(g["n_trials"].sum()), level=level)
            what = "under-covers" if side == "below" else "is conservative"
            rows.append(interval_finding(f"the {p.rule} band {what}", ptxt, rate, lo, hi, int(g["n_trials"].sum()),
                                         paper_side=side, threshold=nominal, level=level, domain=(0.0, 1.0),
                                         quantity="familywise coverage pooled over the null settings (exact)",
                                         fmt=".4f", **known))
        else:
            rows.append(worst_setting_finding(f"the {p.rule} band under-covers in some setting", ptxt,
                                              k.tolist(), g["n_trials"].astype(int).tolist(),
                                              g["setting"].astype(str).tolist(), threshold=nominal,
                                              paper_side="below", level=level, quantity="familywise coverage",
                                              **known))
    return Findings.build(rows, seed=None, title="sasst_small_clusters findings", alpha=alpha, level=level)


def real_features_findings(q: dict, *, level: float = 0.95):
    """The real-features chapter's findings (SASST Study D, Table 12) from one run's
    quantities (:func:`sasst_real_features.run_study_d` ``.quantities``), paper values read
    from ``data/paper``:

    - *the frozen rule's weighted confirmation contrast is negative*: the pointwise
      ``level`` interval ``weighted ± z se`` lies below 0;
    - *the formal status is the paper's*: exact, our SASST status equals the paper's
      (``abstained``);
    - *the frozen rule recovers the degraded subgroup as well as the paper's*: exact,
      recovery AUC at least the paper's; ``not testable here`` when no rule of the
      registry reaches it (measured: the registry's ceiling AUC).

    Raises
    ------
    KeyError
        A missing quantity (named).
    """
    from agentstudies.findings import Findings, exact_finding, interval_finding, untestable_finding
    from agentstudies.studies import paper_values

    need = ["weighted", "se", "status", "recovery_auc", "registry_ceiling", "ceiling_target", "n_confirmation"]
    miss = [k for k in need if k not in q]
    if miss:
        raise KeyError(f"quantities lack {miss}")
    p = paper_values("sasst_real_features", "table12").set_index("quantity")["paper"]
    z = float(stats.norm.ppf(0.5 + level / 2))
    w, se, n = float(q["weighted"]), float(q["se"]), int(q["n_confirmation"])
    known = dict(basis="method", why="real item texts and features, a simulated score tensor and a planted "
                                     "degradation of known size")
    rows = [interval_finding("the frozen rule's weighted confirmation contrast is negative",
                             f"Table 12: {p['weighted confirmation contrast']} {p['pointwise 95% interval']}",
                             w, w - z * se, w + z * se, n, paper_side="below", level=level,
                             quantity="weighted confirmation contrast (pointwise)", fmt=".4f", **known)]
    rows.append(exact_finding("the formal status is the paper's", f"Table 12: {p['formal status']}",
                              float(q["status"] == p["formal status"]), n, holds=bool(q["status"] == p["formal status"]),
                              rule=f"SASST status equals the paper's (ours: {q['status']})", **known))
    name = "the frozen rule recovers the degraded subgroup as well as the paper's"
    ceil, target = float(q["registry_ceiling"]), float(q["ceiling_target"])
    if not ceil >= target:
        rows.append(untestable_finding(name, f"Table 12: recovery AUC {p['recovery AUC']}", measured=ceil,
                                       why=f"no rule of the registry reaches the paper's AUC {target:.3f} on this "
                                           f"pool (ceiling {ceil:.3f})", basis="method"))
    else:
        auc = float(q["recovery_auc"])
        rows.append(exact_finding(name, f"Table 12: recovery AUC {p['recovery AUC']}", auc, n,
                                  holds=bool(auc >= target), otherwise="inconclusive",
                                  rule=f"recovery AUC at least the paper's {target:.3f}", **known))
    return Findings.build(rows, seed=None, title="sasst_real_features findings", level=level)


def geometry_findings(records: pd.DataFrame, *, method: str = "kms", level: float = 0.95):
    """The geometry chapter's Table 9 findings (SASST Study B), one per mechanism: *the
    ``method`` geometry's frozen rule recovers the planted subgroup above chance*, the
    ``level`` interval of the mean held-out AUC over trials (mean ± t sem, t with
    ``trials - 1`` degrees of freedom) lies above 0.5; the paper's AUC (read from
    ``data/paper``) beside it. A mechanism with fewer than two trials gets a NaN interval
    (inconclusive).

    Parameters
    ----------
    records : Study B trial records (``mechanism, method, auc``; one row per trial).

    Raises
    ------
    KeyError
        A missing column, or ``method`` absent from the records.
    """
    from agentstudies.findings import Findings, interval_finding
    from agentstudies.studies import paper_values

    need = {"mechanism", "method", "auc"}
    if not need <= set(records.columns):
        raise KeyError(f"records lack column(s) {sorted(need - set(records.columns))}")
    if method not in set(records["method"]):
        raise KeyError(f"no records of method {method!r}; methods: {sorted(set(records['method']))}")
    paper = paper_values("sasst_geometry", "table9").set_index("mechanism")
    rows = []
    for mech, g in records[records["method"] == method].groupby("mechanism", sort=False):
        a = g["auc"].astype(float).dropna().to_numpy()
        n = len(a)
        mean = float(a.mean()) if n else float("nan")
        if n >= 2:
            half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * float(a.std(ddof=1)) / math.sqrt(n)
            lo, hi = mean - half, mean + half
        else:
            lo = hi = float("nan")
        ptxt = (f"Table 9: {method} AUC {paper.loc[mech, method]:g}" if mech in paper.index and method in paper.columns
                else "mechanism not in the paper's Table 9")
        rows.append(interval_finding(f"{mech}: the {method} rule recovers the subgroup above chance", ptxt, mean, lo,
                                     hi, n, paper_side="above", threshold=0.5, level=level, domain=(0.0, 1.0),
                                     quantity=f"mean held-out AUC of the {method} rule (t interval over trials)",
                                     fmt=".3f", basis="method",
                                     why="held-out recovery of a subgroup the simulation planted"))
    return Findings.build(rows, seed=None, title="sasst_geometry findings", method=method, level=level)


#: Columns of :func:`feasibility_testability` (``testability.csv``).
TESTABILITY_COLUMNS: tuple[str, ...] = ("setting", "trials", "rule_frozen", "admitted_by_every_check",
                                        "estimand_changed", "changed_of_frozen")

#: Planted controls of the feasibility rule: family -> (planted setting, null setting, paper
#: rate whose rule is judged, subject labels). The planted registry holds only x10 lifts on
#: 3% flags, so the density cap blocks every candidate by construction unless no flagged
#: task is drawn (then the rule is uniform and rightly passes); the null registry holds
#: axis tilts on continuous features that every support check admits.
FEASIBILITY_CONTROL_FAMILIES: dict[str, tuple[str, str, float, str, str]] = {
    "the support checks block every concentrated rule": (
        "density_only", "stable_positive_rule", 1.0,
        "planted: x10 lifts on 3% flags only (density cap blocks them once a flagged task is drawn)",
        "null: axis tilts on continuous features (support checks admit them)"),
}


def feasibility_testability(records: pd.DataFrame, *, tol: float | None = None) -> pd.DataFrame:
    """Was each Study C setting able to test its claim? ``testability.csv``.

    Per setting of the trial records (:func:`agentstudies.studies.sasst.feasibility.run_feasibility`):
    ``rule_frozen`` - share of trials in which discovery admitted a rule (the support
    checks of discovery did not stop it); ``admitted_by_every_check`` - share not blocked
    (status neither abstained nor failed); ``estimand_changed`` - share in which the
    frozen rule's reweighting moved the stressed estimate away from the uniform one by
    more than ``tol`` (default :data:`agentstudies._tolerances.EXACT_TOL`) on the same
    confirmation tasks; ``changed_of_frozen`` - the same share among trials with a frozen
    rule (NaN when none). Columns :data:`TESTABILITY_COLUMNS`.

    Raises
    ------
    KeyError
        A missing column (``setting, status, stage, estimate, uniform_estimate``).
    """
    from agentstudies._tolerances import EXACT_TOL

    need = ["setting", "status", "stage", "estimate", "uniform_estimate"]
    miss = [c for c in need if c not in records.columns]
    if miss:
        raise KeyError(f"records lack column(s) {miss} (uniform_estimate: rerun with this version)")
    tol = EXACT_TOL if tol is None else float(tol)
    blocked = {"abstained", "failed feasibility", "failed discovery"}
    rows = []
    for setting, g in records.groupby("setting", sort=False):
        frozen = g["stage"] != "discovery"
        moved = ((g["estimate"] - g["uniform_estimate"]).abs() > tol) & frozen
        rows.append({"setting": setting, "trials": len(g), "rule_frozen": float(frozen.mean()),
                     "admitted_by_every_check": float((~g["status"].isin(blocked)).mean()),
                     "estimand_changed": float(moved.mean()),
                     "changed_of_frozen": float(moved[frozen].mean()) if frozen.any() else float("nan")})
    return pd.DataFrame(rows, columns=list(TESTABILITY_COLUMNS))


def feasibility_controls(cfg=None, *, replicates: int = 20, trials: int = 5, level: float = 0.95, seed: int = 0,
                         n_jobs: int = 1, backend: str = "loky", n_stability: int = 5) -> pd.DataFrame:
    """Planted controls of the feasibility chapter's verdict rule: ``controls.csv``.

    For each family of :data:`FEASIBILITY_CONTROL_FAMILIES`, ``replicates`` replicates of
    ``trials`` Study C trials of the *planted* setting (the claim holds by construction)
    and of the *null* one (it does not) are drawn with ``cfg``
    (:class:`~agentstudies.studies.sasst.feasibility.FeasibilityConfig`, default settings)
    but ``n_stability`` discovery resamples (the stability check is not the claim's, and
    it is the costly part). Each replicate is judged by the chapter's own rule for the
    paper's rate (:func:`feasibility_findings`: at a paper rate of 1 every trial must be
    blocked). Returns :data:`agentstudies.findings.CONTROL_COLUMNS` rows: detection rate
    (power) on the planted subject and false-positive rate on the null one, with exact
    (Clopper-Pearson) ``level`` intervals. Simulated trials, labelled *planted* / *null*.

    Raises
    ------
    ValueError
        Fewer than 2 replicates or fewer than 1 trial per replicate.
    """
    import numpy as np

    from agentstudies.findings import control_row
    from agentstudies.studies.sasst import feasibility as fz

    if replicates < 2:
        raise ValueError(f"replicates={replicates}: need at least 2")
    if trials < 1:
        raise ValueError(f"trials={trials}: need at least 1")
    base = (cfg or fz.FeasibilityConfig()).to_dict()
    ccfg = fz.FeasibilityConfig(**{**base, "n_stability": int(n_stability)})
    seq = np.random.SeedSequence([int(seed), 11])
    rows = []
    for fam, (planted, null, prate, p_label, n_label) in FEASIBILITY_CONTROL_FAMILIES.items():
        rec = fz.run_feasibility(ccfg, replicates * trials, seed=seq, n_jobs=n_jobs, backend=backend,
                                 settings=(planted, null))
        blocked = rec["status"].isin(["abstained", "failed feasibility", "failed discovery"])
        rep = rec["trial"] // trials
        for setting, label, is_planted in ((planted, p_label, True), (null, n_label, False)):
            k = blocked[rec["setting"] == setting].groupby(rep[rec["setting"] == setting]).sum()
            verdicts = [_feasibility_finding(setting, int(kr), trials, prate, "control", level=level).verdict
                        for kr in k]
            rows.append(control_row(fam, label, verdicts, planted=is_planted, level=level,
                                    rule=f"all {trials} trials of a replicate blocked (feasibility_findings at "
                                         f"paper rate {prate:g})"))
    return pd.DataFrame(rows)
