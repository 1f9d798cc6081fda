"""Findings, planted controls, solver testability and Table 8 of the ALFWorld handoff study.

The package :mod:`agentstudies.studies.alfworld.handoff` re-exports every public name
here beside those of :mod:`~agentstudies.studies.alfworld.handoff.run`. Everything here reads the study's tables (``episodes``, ``actions``) or the handoff method's results;
nothing runs the engine.
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.envs.alfworld.generate import TASK_TYPES

__all__ = [
    "TABLE8_COLUMNS", "PAPER_FINDINGS", "SOLVER_TESTABILITY_COLUMNS", "solver_testability", "handoff_findings",
    "HANDOFF_CONTROL_SUBJECTS", "handoff_controls",
]

#: Columns of Table 8 (``HandoffStudy.table(8)``).
TABLE8_COLUMNS = ["solver", "step", "command", "valid", "n_candidates", "shown (last line)"]


def _table8_state(episodes: pd.DataFrame, *, base: str = "SFT", treated: str = "RL",
                 splits: Sequence[str] = ("valid_unseen", "valid_seen")) -> pd.Series | None:
    """The handoff state of Table 8, chosen by the paper's prespecified rule (Appendix D).

    Among states the ``treated`` solver completes and the ``base`` solver does not: a
    ``base``-produced state (reacher = ``base``), of the simplest task type
    (``pick_and_place_simple``; if none, the next type in ALFWorld's order), on which
    the ``base`` solver's first action is not a bridge action; the first such state in
    (split order, task id, seed) order. Returns the ``base`` solver's episode row
    (``None`` if no state qualifies).
    """
    e = episodes[episodes["arrived"]]
    key = ["split", "task_id", "seed", "reacher"]
    b = e[e["solver"] == base].set_index(key)
    t = e[e["solver"] == treated].set_index(key)
    both = b.join(t[["solved"]], rsuffix="_treated", how="inner").reset_index()
    both = both[(both["reacher"] == base) & both["solved_treated"].astype(bool) & ~both["solved"].astype(bool)
                & ~both["bridge"].astype(bool)]
    for split in splits:
        for tt in TASK_TYPES:
            c = both[(both["split"] == split) & (both["task_type"] == tt)].sort_values(["task_id", "seed"])
            if len(c):
                return c.iloc[0]
    return None


def _table8(actions: pd.DataFrame, state: pd.Series, *, solvers: Sequence[str] = ("SFT", "RL")) -> pd.DataFrame:
    """Table 8: the two solvers' actions on one cloned state (from the ``actions`` log).

    One row per (solver, step): solver, step, command, valid, n_candidates, and the last
    line of the text shown at that step. Raises ``KeyError`` if the log lacks the state.
    """
    a = actions[(actions["split"] == state["split"]) & (actions["task_id"] == state["task_id"])
                & (actions["seed"] == state["seed"]) & (actions["reacher"] == state["reacher"])
                & (actions["role"] == "solver")]
    if a.empty:
        raise KeyError(f"no solver actions logged for {state['task_id']!r} seed {state['seed']}")
    rows = []
    for sname in solvers:
        for _, r in a[a["solver"] == sname].sort_values("step").iterrows():
            last = [ln for ln in str(r["shown"]).splitlines() if ln.strip()]
            rows.append({"solver": sname, "step": int(r["step"]), "command": r["command"], "valid": bool(r["valid"]),
                         "n_candidates": len(json.loads(r["candidates"])), "shown (last line)": last[-1] if last else ""})
    return pd.DataFrame(rows, columns=TABLE8_COLUMNS)


#: The handoff paper's ALFWorld valid_unseen values behind :func:`handoff_findings`
#: (Sections 2.4, 4.2-4.5, Appendices B-C; released SkillRL 7B checkpoints, official games).
#: "Rarely" in "the SFT solver rarely wins where RL fails": under one reached state in ten
#: (the paper: 0 of 115).
RARE_SHARE = 0.1

#: What every handoff finding rests on.
MEASURED_WHY = ("checkpoints trained here (SFT, RL) acting in the ALFWorld engine: their weights do not contain "
                "the paper's effects")

PAPER_FINDINGS = {
    "interaction": "+24.2 pp [13.3, 35.0]",
    "reached_only": "-12.6 pp [-45.8, 22.7] (opposite sign to the endpoint interaction)",
    "reached_minus_endpoint": "-12.6 vs +24.2 pp (reached-only below the endpoint interaction)",
    "delta_all": "RL converts more identical states than SFT (Table 2b)",
    "delta_by_producer": "SFT-produced states +50.0 pp, RL-produced +37.4 pp (larger on SFT states)",
    "one_solver_wins": "SFT-only 0, RL-only 45 of 115 states",
    "eq9_residual": "+3.5 pp [-7.2, 14.2] (predicted 20.7, observed 24.2)",
    "failure_modes": "SFT 102 of 104 non-arrivals are loops; RL 18 of 21",
    "reach": "arrival SFT 13.3%, RL 82.5%",
}

#: Columns of :func:`solver_testability` (``testability.csv``).
SOLVER_TESTABILITY_COLUMNS = ["split", "reacher", "states", "next_action_changed", "outcome_changed"]


def solver_testability(episodes: pd.DataFrame, actions: pd.DataFrame | None = None, *, base: str = "SFT",
                       treated: str = "RL") -> pd.DataFrame:
    """Did swapping the solver change anything?

    Per split and reacher, over the reached states (one per task, seed, reacher): the share
    of states where the ``treated`` solver's first command differs from the ``base``
    solver's (``next_action_changed``, from ``solver_first_action`` or else the ``actions``
    log; NaN without either) and where their
    outcomes differ (``outcome_changed``: ``solved`` differs) -- fractions in [0, 1].

    Raises ``KeyError`` if ``episodes`` lacks a column it needs.
    """
    need = ["split", "task_id", "seed", "reacher", "solver", "arrived", "solved"]
    miss = [c for c in need if c not in episodes]
    if miss:
        raise KeyError(f"episodes lack column(s) {miss}")
    key = ["split", "task_id", "seed", "reacher"]
    e = episodes[episodes["arrived"].astype(bool) & episodes["solver"].isin([base, treated])]
    w = e.pivot_table(index=key, columns="solver", values="solved", aggfunc="first")
    w["outcome"] = (w.get(base) != w.get(treated)).astype(float) if {base, treated} <= set(w.columns) else np.nan
    if "solver_first_action" in e:
        first = e.pivot_table(index=key, columns="solver", values="solver_first_action", aggfunc="first")
        if {base, treated} <= set(first.columns):
            w = w.join((first[base] != first[treated]).astype(float).rename("next"), how="left")
    elif actions is not None and len(actions):
        a = actions[(actions["role"] == "solver") & actions["solver"].isin([base, treated])]
        first = a.sort_values("step").groupby(key + ["solver"])["command"].first().unstack("solver")
        if {base, treated} <= set(first.columns):
            w = w.join((first[base] != first[treated]).astype(float).rename("next"), how="left")
    if "next" not in w:
        w["next"] = np.nan
    g = w.reset_index().groupby(["split", "reacher"])
    out = g.agg(states=("outcome", "size"), next_action_changed=("next", "mean"),
                outcome_changed=("outcome", "mean")).reset_index()
    return out[SOLVER_TESTABILITY_COLUMNS]


def _opposite_signs(inter, surv, *, level: float, flagged: bool):
    """'Reached-only flips the sign': both intervals exclude 0, on opposite sides."""
    from agentstudies.findings import Finding, can_contradict, judge

    side_i = judge(inter[1], inter[2], paper_side="above")
    if flagged or side_i == "inconclusive":
        verdict = "inconclusive"
    else:
        verdict = judge(surv[1], surv[2], paper_side="below" if side_i == "reappears" else "above")
    why = ("the reached-only interval is flagged by analyze_handoff (empty-denominator draws excluded)" if flagged
           else ("the endpoint interval contains 0, so it has no sign to flip" if side_i == "inconclusive" else ""))
    return Finding("Reached-only estimate has the opposite sign to the endpoint interaction",
                   PAPER_FINDINGS["reached_only"], 100 * surv[0], 100 * surv[1], 100 * surv[2], surv[3], verdict,
                   f"{100 * level:g}% CIs of the endpoint and the reached-only interaction both exclude 0, "
                   "on opposite sides (pp)", why=why, level=level, fmt="+.1f",
                   can_contradict=can_contradict((-100.0, 100.0), paper_side="above", threshold=0.0))


def _eq9_finding(prediction, *, level: float):
    """'Eq. 9 predicts the interaction', respecting predict_interaction's own flags:
    reappears when the predicted interval lies above 0 and the residual interval contains
    0; contradicted when the residual interval excludes 0; inconclusive otherwise (or
    when any of observed / predicted / residual is flagged)."""
    from agentstudies.findings import Finding, can_contradict, judge

    name, paper = "Eq. 9 predicts the interaction", PAPER_FINDINGS["eq9_residual"]
    # a residual interval excluding 0 contradicts: the residual is a difference in pp
    cc = can_contradict((-100.0, 100.0), paper_side="above", threshold=0.0)
    rule = (f"{100 * level:g}% CI of the Eq. 9 prediction above 0 and that of the residual (observed − predicted) "
            "containing 0; a residual CI excluding 0 contradicts")
    if prediction is None:
        return Finding(name, paper, np.nan, np.nan, np.nan, np.nan, "inconclusive", rule, level=level,
                       can_contradict=cc,
                       why="predict_interaction cannot evaluate Eq. 9 on this run (a task type without reached "
                           "states in the external sample)")
    o = prediction.overall.set_index("estimand")
    r = o.loc["residual"]
    flagged = o.loc[["observed", "predicted", "residual"], "flagged"].astype(bool)
    if flagged.any():
        share = float(o.loc[flagged[flagged].index, "excluded_share"].max())
        return Finding(name, paper, 100 * r["estimate"], 100 * r["ci_low"], 100 * r["ci_high"], np.nan, "inconclusive",
                       rule, level=level, fmt="+.1f", can_contradict=cc,
                       why=f"predict_interaction flags {', '.join(flagged[flagged].index)} "
                           f"({100 * share:.0f}% of draws excluded), so its intervals do not decide")
    pred_side = judge(o.loc["predicted", "ci_low"], o.loc["predicted", "ci_high"], paper_side="above")
    res_side = judge(r["ci_low"], r["ci_high"], paper_side="above")
    verdict = ("contradicted" if res_side != "inconclusive" else
               ("reappears" if pred_side == "reappears" else "inconclusive"))
    return Finding(name, paper, 100 * r["estimate"], 100 * r["ci_low"], 100 * r["ci_high"], np.nan, verdict, rule,
                   level=level, fmt="+.1f", can_contradict=cc)


def handoff_findings(result, prediction, failures, episodes: pd.DataFrame, *, split: str = "valid_unseen",
                     base: str = "SFT", treated: str = "RL", testability: pd.DataFrame | None = None,
                     selected_reach: bool = False, training: Mapping[str, str] | None = None,
                     equal=None, equal_base: str = "SFT-equal"):
    """The handoff paper's ALFWorld findings judged on a run: an :class:`agentstudies.findings.Findings`.

    ``result`` is :func:`agentstudies.handoff.analyze_handoff`'s result (its ``level`` is
    the level of every interval), ``prediction`` :func:`agentstudies.handoff.predict_interaction`'s
    (or None), ``failures`` :func:`agentstudies.handoff.audit_non_arrivals`'s, all on the same
    episodes. Every verdict comes from intervals (pp; no sign of a point estimate):
    Reach (reach gap), the interaction (Eq. 4), the reached-only flip (both intervals exclude
    0 on opposite sides), reached-only below endpoint, the same-state Solve gap, the Solve
    gap larger on SFT-produced states (the conservative difference interval
    ``[lo_SFT - hi_RL, hi_SFT - lo_RL]`` of the two level intervals), one-solver wins
    (Clopper-Pearson interval of the share of reached states only SFT wins below
    :data:`RARE_SHARE`; the sign of RL-only minus SFT-only wins is the same-state Solve gap
    already, so it is not judged twice), Eq. 9
    (:func:`_eq9_finding`, honouring the prediction's flags), and loops (Clopper-Pearson
    interval of the loop share of each reacher's non-arrivals above 0.5). A flagged
    estimate is inconclusive. ``testability`` (:func:`solver_testability`): when swapping
    the solver changed no outcome on any reached state of ``split``, every Solve-based
    finding is ``not testable here``. ``selected_reach=True`` discloses that the
    checkpoints were accepted only if RL arrived more often (the Reach row says so).
    Every row is ``measured`` (trained checkpoints, :data:`MEASURED_WHY`). Reach and the
    interaction also compare their size with the paper's value on ``split`` (Table 2a,
    Figure 3; :func:`agentstudies.findings.magnitude_finding`, within a factor of 2).

    Checkpoint pairings (:mod:`~agentstudies.studies.alfworld.handoff.pairs`): ``training``
    maps each checkpoint name to what it was trained on
    (:func:`~agentstudies.studies.alfworld.handoff.pairs.training_data`); the ``base`` and
    ``treated`` lines are stated in every row's ``why`` (``KeyError`` if one is missing).
    ``equal`` is the :func:`~agentstudies.handoff.analyze_handoff` result of the equal-data
    pairing (``treated`` x ``equal_base``): each row judged on one estimand (Reach, the
    interaction, reached-only minus endpoint, the same-state Solve gap) shows beside it the
    same estimand of that pairing with its interval and the verdict of the same directional
    rule (:func:`agentstudies.findings.judge`). A ``base`` other than ``"SFT"`` is named in
    the findings' wording ("RL arrives more often than SFT-equal").

    Length: one block per paper finding (ten), in the paper's order.
    """
    from dataclasses import replace

    from agentstudies.findings import Findings, binomial_interval, interval_finding, magnitude_finding, untestable_finding
    from agentstudies.studies import paper_values

    level = float(result.params.get("level", 0.95))
    est = result.estimates[result.estimates["split"] == split].set_index("estimand")

    def pp(name):
        r = est.loc[name]
        return float(r.estimate), float(r.ci_low), float(r.ci_high), bool(r.flagged)

    n_traj = int(episodes[(episodes["split"] == split) & (episodes["solver"] == base)].shape[0] // 2)
    kw = dict(level=level, fmt="+.1f")

    def iv(name, paper, x, side, quantity, n=n_traj, paper_value=None):
        if paper_value is not None and np.isfinite(paper_value) and (paper_value > 0) == (side == "above"):
            f = magnitude_finding(name, paper, 100 * x[0], 100 * x[1], 100 * x[2], n, paper_value=paper_value,
                                  paper_side=side, quantity=quantity, domain=(-100.0, 100.0), **kw)
        else:
            f = interval_finding(name, paper, 100 * x[0], 100 * x[1], 100 * x[2], n, paper_side=side,
                                 quantity=quantity, **kw)
        return replace(f, verdict="inconclusive", why="the interval is flagged (empty-denominator draws excluded)") \
            if x[3] else f

    # the paper's values on this split, where it gives them: the size each row is compared with
    t2a = paper_values("alfworld_handoff", "table2a")
    t2a = t2a[t2a["split"] == split].set_index("reacher")["arrival"]
    reach_p = float(t2a[treated] - t2a[base]) if {base, treated} <= set(t2a.index) else None
    f3 = paper_values("alfworld_handoff", "figure3")
    f3 = f3[f3["split"] == split].set_index("estimand")["estimate"]
    inter_p = float(f3["interaction"]) if "interaction" in f3.index else None
    rows = []
    f = iv("Reach: RL arrives more often than SFT", PAPER_FINDINGS["reach"], pp("reach_gap"), "above",
           "arrival gap A_RL − A_SFT (pp)", paper_value=reach_p)
    if selected_reach:
        f = replace(f, why="the trained checkpoints were accepted only if RL arrived more often than SFT, so this "
                           "direction was partly selected for")
    rows.append(f)
    inter = pp("interaction")
    rows.append(iv("Interaction I (Eq. 4) is positive", PAPER_FINDINGS["interaction"], inter, "above",
                   "endpoint interaction I (pp)", paper_value=inter_p))
    surv = pp("survivor_interaction")
    rows.append(_opposite_signs(inter[:3] + (n_traj,), surv[:3] + (n_traj,), level=level, flagged=surv[3]))
    rows.append(iv("Reached-only estimate lies below the endpoint interaction", PAPER_FINDINGS["reached_minus_endpoint"],
                   pp("survivor_minus_endpoint"), "below", "reached-only − endpoint interaction (pp)"))
    rows.append(iv("RL solves better from identical states", PAPER_FINDINGS["delta_all"], pp("delta_solve_all_states"),
                   "above", "same-state Solve gap, all reached states (pp)"))
    b, t = pp("delta_solve_base_states"), pp("delta_solve_treated_states")
    rows.append(iv("The Solve gap is larger on SFT-produced states", PAPER_FINDINGS["delta_by_producer"],
                   (b[0] - t[0], b[1] - t[2], b[2] - t[1], b[3] or t[3]), "above",
                   "Solve gap on SFT- minus RL-produced states (pp; bounds lo_SFT − hi_RL, hi_SFT − lo_RL of the two "
                   "intervals: disjoint intervals decide)"))
    st = result.stages[result.stages["split"] == split].set_index("solver")
    sft_only = int(st.loc[base, "only_this_solver_wins"])
    n_states = int(st.loc[base, "n_states"]) if "n_states" in st.columns else 0
    # one finding per fact: the sign of RL-only minus SFT-only wins is the same-state Solve
    # gap above; this claim is about how rare the SFT-only wins are among reached states
    name = "The SFT solver rarely wins where RL fails"
    if n_states:
        r, lo, hi = binomial_interval(sft_only, n_states, level=level)
        rows.append(interval_finding(name, PAPER_FINDINGS["one_solver_wins"], r, lo, hi, n_states,
                                     paper_side="below", threshold=RARE_SHARE, level=level, fmt=".2f",
                                     domain=(0.0, 1.0),
                                     quantity="share of reached states only the SFT solver wins (exact CI)"))
    else:
        rows.append(interval_finding(name, PAPER_FINDINGS["one_solver_wins"], np.nan, np.nan, np.nan, 0,
                                     paper_side="below", threshold=RARE_SHARE, level=level,
                                     quantity="share of reached states only the SFT solver wins (exact CI)"))
    rows.append(_eq9_finding(prediction, level=level))
    rows.append(_loop_finding(failures, split, (base, treated), level))
    if testability is not None:
        tb = testability[testability["split"] == split]
        if len(tb) and float(tb["outcome_changed"].max()) == 0.0:
            n_states = int(tb["states"].sum())
            solve_based = {"Interaction I (Eq. 4) is positive", rows[2].finding, rows[3].finding,
                           "RL solves better from identical states", "The Solve gap is larger on SFT-produced states",
                           "The SFT solver rarely wins where RL fails", "Eq. 9 predicts the interaction"}
            rows = [untestable_finding(r.finding, r.paper, measured=0.0,
                                       why=f"swapping the solver changed the outcome on 0 of {n_states} reached "
                                           f"states of {split}")
                    if r.finding in solve_based else r for r in rows]
    rows = [replace(r, basis="measured", why="; ".join(x for x in (MEASURED_WHY, r.why) if x)) for r in rows]
    rows = _pairing_notes(rows, split=split, base=base, treated=treated, training=training, equal=equal,
                          equal_base=equal_base)
    title = f"handoff paper findings on this run ({split})" if base == "SFT" else \
        f"handoff paper findings on this run ({split}; {treated} x {base})"
    return Findings.build(rows, seed=result.params.get("seed"), title=title, level=level, split=split)


def _pairing_notes(rows, *, split, base, treated, training, equal, equal_base):
    """Add each checkpoint's training data and the equal-data pairing's estimate to the rows'
    ``why`` (see :func:`handoff_findings`); rename ``SFT`` to ``base`` in the wording."""
    from dataclasses import replace

    from agentstudies.studies.alfworld.handoff.pairs import equal_beside

    common = ""
    if training is not None:
        for ck in (base, treated):
            if ck not in training:
                raise KeyError(f"training data of checkpoint {ck!r} not given (have {sorted(training)}); pass "
                               "training={name: pairs.training_data(policy.meta)} for both checkpoints")
        common = f"training data -- {training[base]}; {training[treated]}"
    beside = {} if equal is None else equal_beside(equal, split=split, treated=treated, equal_base=equal_base)
    out = []
    for r in rows:
        extra = [common, f"equal data, {treated} x {equal_base}: {beside[r.finding]}" if r.finding in beside else ""]
        name = r.finding if base == "SFT" else r.finding.replace("SFT", base)
        out.append(replace(r, finding=name, why="; ".join(x for x in (r.why, *extra) if x)))
    return out


def _loop_finding(failures, split, reachers, level):
    """'Non-arrivals are mostly loops': for each reacher, the exact CI of the loop share of
    its non-arrivals above 0.5; the row carries the smaller lower and upper bounds."""
    from agentstudies.findings import binomial_interval, interval_finding

    c = failures.counts[failures.counts["split"] == split]
    ests = []
    for r in reachers:
        cc = c[c["reacher"] == r]
        n = int(cc["n"].sum())
        if n:
            ests.append(binomial_interval(int(cc.loc[cc["label"] == "loop", "n"].sum()), n, level=level) + (n,))
    if not ests:
        return interval_finding("Non-arrivals are mostly loops", PAPER_FINDINGS["failure_modes"], np.nan, np.nan, np.nan,
                                0, paper_side="above", threshold=0.5, level=level,
                                quantity="loop share of each reacher's non-arrivals")
    return interval_finding("Non-arrivals are mostly loops", PAPER_FINDINGS["failure_modes"],
                            min(e[0] for e in ests), min(e[1] for e in ests), min(e[2] for e in ests),
                            sum(e[3] for e in ests), paper_side="above", threshold=0.5, level=level, fmt=".2f",
                            quantity="loop share of each reacher's non-arrivals (exact CIs; the row shows the smaller "
                                     "bounds)")


#: The planted and null subjects of :func:`handoff_controls` (labels on every row), as
#: (label, example_tables keywords): arrival, bridge and finish rates (base, treated).
HANDOFF_CONTROL_SUBJECTS = {
    "planted": ("planted (synthetic handoff tables): RL arrives 80% vs SFT 15% and bridges / finishes better "
                "(0.97 / 0.98 vs 0.70 / 0.75), so reach gap and interaction are positive by construction",
                dict(arrival=(0.15, 0.8), bridge=(0.7, 0.97), finish=(0.75, 0.98))),
    "null": ("null (synthetic handoff tables): both checkpoints arrive 50% and bridge / finish 0.85 / 0.90",
             dict(arrival=(0.5, 0.5), bridge=(0.85, 0.85), finish=(0.9, 0.9))),
}


def _handoff_control_replicate(item, rng, **kw):  # seeded_map signature
    import warnings

    from agentstudies.findings import judge
    from agentstudies.handoff import analyze_handoff
    from agentstudies.handoff.testing import example_tables
    from agentstudies.parallel import keyed_seed

    kind, r = item
    s = int(keyed_seed(kw["root"], "handoff-control", kind, r).generate_state(1)[0] % (2 ** 31))
    t = example_tables(seed=s, n_per_type=kw["n_per_type"], n_seeds=kw["n_seeds"], **HANDOFF_CONTROL_SUBJECTS[kind][1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = analyze_handoff(t["episodes"], n_draws=kw["n_draws"], seed=s, level=kw["level"])
    e = res.estimates.set_index("estimand")
    out = []
    for name in ("reach_gap", "interaction"):
        v = judge(e.loc[name, "ci_low"], e.loc[name, "ci_high"], paper_side="above")
        out.append("inconclusive" if bool(e.loc[name, "flagged"]) else v)
    return tuple(out)


def handoff_controls(*, replicates: int = 40, n_per_type: int = 5, n_seeds: int = 2, level: float = 0.95,
                     n_draws: int = 200, seed: int = 0, n_jobs: int = 1) -> pd.DataFrame:
    """Planted controls of the handoff verdict rules: ``controls.csv``.

    The chapter's rules (:func:`agentstudies.handoff.analyze_handoff` task-stratified
    bootstrap intervals judged by :func:`agentstudies.findings.judge`) on ``replicates``
    synthetic handoff studies (:func:`agentstudies.handoff.testing.example_tables`, 6 task
    types x ``n_per_type`` tasks x ``n_seeds`` seeds) of a *planted* subject (reach gap and
    interaction positive by construction) and a *null* one (:data:`HANDOFF_CONTROL_SUBJECTS`).
    Families "Reach: RL arrives more often" and "Interaction I is positive". Returns
    :data:`agentstudies.findings.CONTROL_COLUMNS` rows (power / false-positive rate with
    exact intervals). Synthetic tables, not the ALFWorld engine: this checks the method.
    Raises ``ValueError`` for fewer than 2 replicates.
    """
    from agentstudies.findings import control_row
    from agentstudies.parallel import seeded_map

    if replicates < 2:
        raise ValueError(f"replicates={replicates}: need at least 2")
    items = [(kind, r) for kind in ("planted", "null") for r in range(replicates)]
    out = seeded_map(_handoff_control_replicate, items, seed=seed, n_jobs=n_jobs, root=seed, n_per_type=n_per_type,
                     n_seeds=n_seeds, level=level, n_draws=n_draws)
    fams = [("Reach: RL arrives more often than SFT", "reach gap"), ("Interaction I (Eq. 4) is positive", "interaction")]
    rows = []
    for j, (fam, q) in enumerate(fams):
        for kind in ("planted", "null"):
            v = [o[j] for (kd, _), o in zip(items, out) if kd == kind]
            rows.append(control_row(fam, HANDOFF_CONTROL_SUBJECTS[kind][0], v, planted=kind == "planted",
                                    rule=f"{100 * level:g}% CI of the {q} above 0; {6 * n_per_type} tasks x {n_seeds} "
                                         "seeds per replicate", level=level))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ LLM checkpoint
