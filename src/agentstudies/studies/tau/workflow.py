"""The τ-bench workflow stress test of SASST Section 4 (Studies F and G) as reusable pieces.

The design follows Appendix D.8: three workflows (ReAct, Plan + verifier, Confirmation
gate) on the same tasks and simulator seeds; task id is the cluster; a 40/40 whole-task
split; ten slots — two uniform slots testing average success against ReAct, six
stressed slots testing the same two contrasts at three radii, and two controls comparing
the enhanced workflows at the middle radius; one frozen rule per radius, selected on
discovery against the plan's *selected* workflow minus ReAct (so every stressed slot at
one radius shares its rule, ESS, density and stability, as in Tables 15-16); stability
threshold 0.60, density cap 5, minimum ESS 20.

Functions here only configure the engine and shape its output; all statistics live in
:mod:`agentstudies.sasst` and :mod:`agentstudies.stats`.

Length: the findings and their planted controls judge the ten slots this module lays out
(names, contrasts, testability); kept beside them so a slot's name, rule, basis and
verdict are read in one place.
"""

from __future__ import annotations

from typing import Any, Mapping

from agentstudies.findings import controls_sentence
import numpy as np
import pandas as pd

from agentstudies.parallel import keyed_seed
from agentstudies.sasst import SASSTReport
from agentstudies.studies.tau._workflow_sasst import (
    WORKFLOWS, BASELINE, ENHANCED, STRUCTURED_FEATURES, stress_features, tau_plan, tau_family, tau_slots,
    tau_radii, run_tau_sasst, slot_table, summary_table, execution_counts, decomposition, seed_flip_rates,
)

__all__ = [
    "WORKFLOWS",
    "BASELINE",
    "ENHANCED",
    "STRUCTURED_FEATURES",
    "stress_features",
    "tau_plan",
    "tau_family",
    "tau_slots",
    "tau_radii",
    "run_tau_sasst",
    "slot_table",
    "summary_table",
    "execution_counts",
    "decomposition",
    "seed_flip_rates",
    "CONTRASTS",
    "TESTABILITY_COLUMNS",
    "control_subjects",
    "REVIEWER_PARAMS",
    "neutral_profile",
    "neutral_run",
    "workflow_testability",
    "stress_findings",
    "stress_controls",
    "controls_sentence",
]

# ----------------------------------------------------------------------------- findings
#: Contrasts whose testability is measured: (name, workflow, reference).
CONTRASTS: tuple[tuple[str, str, str], ...] = (
    ("Plan + verifier − ReAct", "Plan + verifier", BASELINE),
    ("Confirmation gate − ReAct", "Confirmation gate", BASELINE),
    ("Plan + verifier − gate", "Plan + verifier", "Confirmation gate"),
)

TESTABILITY_COLUMNS = ["profile", "contrast", "workflow", "reference", "pairs", "next_action_changed",
                       "outcome_changed", "trace_changed"]


def workflow_testability(episodes: pd.DataFrame) -> pd.DataFrame:
    """Did a workflow change anything? ``testability.csv``.

    Pairs are the episodes of one (profile, task, seed) under the contrast's two workflows.
    Per profile and contrast:

    - ``next_action_changed``: share of pairs in which a controller of either workflow
      changed an action the agent proposed (a state-changing call blocked by the verifier
      or declined at the gate, ``blocked_calls + declined_calls > 0``; ReAct never does);
    - ``outcome_changed``: share of pairs whose rewards differ;
    - ``trace_changed``: share of pairs whose executed trace differs (tool calls,
      irreversible calls, steps or termination).

    All three are fractions in [0, 1]. Each episode has its own seed stream
    (:func:`agentstudies.agents.tau.episode_seed` keys the workflow), so ``outcome_changed``
    and ``trace_changed`` also count the policy's own randomness; ``next_action_changed``
    counts only controller interventions and is the measurement that makes a contrast
    ``not testable here`` when it is 0.

    Raises
    ------
    KeyError
        A missing column. ValueError: a duplicated (profile, task, seed, workflow) episode.
    """
    need = ["profile", "task_id", "seed", "workflow", "reward", "blocked_calls", "declined_calls", "tool_calls",
            "irreversible_calls", "steps", "termination"]
    miss = [c for c in need if c not in episodes]
    if miss:
        raise KeyError(f"episode table lacks column(s) {miss}")
    key = ["profile", "task_id", "seed"]
    dup = episodes.duplicated(key + ["workflow"])
    if dup.any():
        raise ValueError(f"duplicate episode(s) {episodes.loc[dup, key + ['workflow']].head(3).to_dict('records')}")
    e = episodes.assign(_int=(episodes["blocked_calls"] + episodes["declined_calls"]) > 0)
    rows = []
    for profile, ep in e.groupby("profile", sort=False):
        by = {w: g.set_index(["task_id", "seed"]) for w, g in ep.groupby("workflow", sort=False)}
        for name, w, ref in CONTRASTS:
            if w not in by or ref not in by:
                continue
            a, b = by[w].align(by[ref], join="inner", axis=0)
            n = len(a)
            if n == 0:
                continue
            trace = np.zeros(n, bool)
            for c in ("tool_calls", "irreversible_calls", "steps", "termination"):
                trace |= (a[c].to_numpy() != b[c].to_numpy())
            rows.append({"profile": profile, "contrast": name, "workflow": w, "reference": ref, "pairs": n,
                         "next_action_changed": float((a["_int"].to_numpy() | b["_int"].to_numpy()).mean()),
                         "outcome_changed": float((a["reward"].to_numpy() != b["reward"].to_numpy()).mean()),
                         "trace_changed": float(trace.mean())})
    return pd.DataFrame(rows, columns=TESTABILITY_COLUMNS)


def _band(row: pd.Series, critical: float) -> tuple[float, float]:
    """The slot's symmetric simultaneous band ``estimate ± critical · se`` (each end is the
    report's one-sided bound on its side); NaN when the slot has no band."""
    est, se = float(row["estimate"]), float(row["se"])
    if not (np.isfinite(est) and np.isfinite(se) and np.isfinite(critical)):
        return float("nan"), float("nan")
    return est - critical * se, est + critical * se


def _inert(testab: pd.DataFrame | None, profile: str, contrast: str) -> float | None:
    """The measured intervention share of a contrast when it is 0 (else None)."""
    if testab is None or not len(testab):
        return None
    t = testab[(testab["profile"] == profile) & (testab["contrast"] == contrast)]
    if not len(t):
        return None
    v = float(t["next_action_changed"].iloc[0])
    return v if v == 0.0 else None


def _paper14(study: str | None) -> dict[str, Any]:
    from agentstudies.studies import paper_values

    if study is None:
        return {}
    t = paper_values("tau_workflow_stress", "table14").set_index("quantity")
    if study not in t.columns:
        return {}
    out = {}
    for k, v in t[study].items():
        try:
            x = float(v)
            out[k] = "not reported" if np.isnan(x) else f"{x:g}"
        except (TypeError, ValueError):
            out[k] = v
    return out


def stress_findings(reports: Mapping[str, SASSTReport], *, testab: pd.DataFrame | None = None,
                    seed_flips: pd.DataFrame | None = None, study_of: Mapping[str, str] | None = None,
                    labels: Mapping[str, str] | None = None, neutral: Mapping[str, SASSTReport] | None = None,
                    neutral_testab: pd.DataFrame | None = None):
    """The workflow stress chapter's findings, per agent profile.

    For each profile's ten-slot report (Studies F / G of SASST Section 4):

    - *the discovery choice's gain over ReAct shrinks on confirmation*: the simultaneous
      band ``estimate ± c·se`` (``c`` = the report's critical value; each end is the
      report's one-sided bound at its level) of the chosen workflow's uniform slot lies
      below its discovery gain (paper, Study F: +0.0375 on discovery, 0.000 on
      confirmation);
    - *no average gain over ReAct is confirmed*: the paper's exact criterion, 0 confirmed
      uniform slots (paper: 0 of 2 in both studies);
    - *no stress or control claim is confirmed*: 0 confirmed among the eight other slots
      (paper: 0 in both studies); ``not testable here`` when none of them has a band;
    - *the most stable frozen rule stays below the stability threshold*: SASST's own
      abstain criterion, the highest stability (a mean Jaccard over ``n_stability``
      resamples, which has no binomial interval) of a stressed slot with a frozen rule is
      below the slots' stability threshold (paper 0.37 / 0.27 < 0.60); ``not testable
      here`` when discovery froze no stress rule (measured: the number of frozen rules);
    - with ``seed_flips`` (:func:`seed_flip_rates`): *identical reruns flip the verdict on
      some tasks* (ReAct's share above 0; the τ-bench paper's inconsistency claim).

    A contrast whose workflows never changed a proposed action (``testab`` from
    :func:`workflow_testability`, ``next_action_changed == 0``) makes the claims that rest
    on it ``not testable here`` (the stress and control claim rests on all three).

    What each rests on (:data:`CLAIM_BASIS`): with the simulated profiles, the workflows'
    gains and the stress effects are set by the profiles' intercepts and the shared
    slopes of :func:`agentstudies.agents.tau.mistake_probabilities` (``built in``); the
    shrinking of the discovery choice's gain and the stability abstention are properties
    of SASST's selection (``method``); an LLM's rows are ``measured``. *No average gain
    is confirmed* carries the power of its rule at this run's size to see the paper's
    discovery gain (+3.75 points, ``data/paper``): the better uniform slot's
    ``Phi(0.0375 / se - c)`` with the report's critical value ``c``
    (:func:`agentstudies.findings.wald_power`); under 0.8 the verdict is ``not testable
    here`` (:func:`agentstudies.findings.power_gated`).

    With ``neutral`` (``{profile: SASSTReport}`` of :func:`neutral_run`: the same tasks and
    seeds with :data:`REVIEWER_PARAMS` neutral, the three workflows identical in the agent)
    and its ``neutral_testab``, each claim of :data:`NEUTRAL_CLAIMS` takes its verdict from
    the neutral run and shows the simulated estimate apart, labelled "set by the
    simulation" (:func:`agentstudies.findings.neutral_control`).

    Parameters
    ----------
    reports : {profile: SASSTReport} from :func:`run_tau_sasst`.
    study_of : {profile: paper study column of Table 14}; default in order Study F, Study G.
    labels : {profile: label used in the finding texts}; default the profile name.
    neutral, neutral_testab : the neutral run's reports and testability (simulated agents only).

    Returns
    -------
    :class:`agentstudies.findings.Findings`.

    Raises
    ------
    ValueError
        No report; a report without the ten slots of :func:`tau_slots`; a neutral run
        without a report of every profile.
    """
    from agentstudies.findings import Findings

    if not reports:
        raise ValueError("stress_findings needs at least one report")
    rows, level = _claim_rows(reports, testab, seed_flips, study_of, labels)
    simulated = not any(str(p).startswith("llm:") for p in reports)
    rows = [_stated(r, simulated) for r in rows]
    if neutral is not None and simulated:
        missing = sorted(set(reports) - set(neutral))
        if missing:
            raise ValueError(f"the neutral run has no report of profile(s) {missing}; run neutral_run on every profile")
        neutral_rows, _ = _claim_rows({p: neutral[p] for p in reports}, neutral_testab, None, study_of, labels)
        rows = _neutral_controlled(rows, {r.finding: r for r in neutral_rows})
    return Findings.build(rows, seed=None, title="tau_workflow_stress findings", level=level)


def _claim_rows(reports, testab, seed_flips, study_of, labels):
    """The rows of :func:`stress_findings` before their basis is stated, and the level.

    Length: one block per claim of :func:`stress_findings`, in that order, inside the loop
    over profiles; each block is the claim's whole rule, so a reader checks a verdict
    against one place.
    """
    from agentstudies.findings import exact_finding, interval_finding, untestable_finding

    from agentstudies.studies import paper_note

    paper_gain = float(paper_note("tau_workflow_stress", "discovery_gain_study_f"))
    studies = ["Study F, Qwen3-8B (paper)", "Study G, Qwen2.5-7B (paper)"]
    study_of = dict(study_of) if study_of is not None else {p: (studies[i] if i < 2 else None)
                                                             for i, p in enumerate(reports)}
    labels = dict(labels or {})
    rows = []
    level = None
    for p, rep in reports.items():
        t = rep.table
        uni = [s for s in t.index if str(s).startswith("Uniform: ")]
        other = [s for s in t.index if not str(s).startswith("Uniform: ")]
        if len(uni) != 2 or len(other) != 8:
            raise ValueError(f"profile {p!r}: expected the ten slots of tau_slots; got {list(t.index)}")
        level = float(rep.level)
        lab = labels.get(p, str(p))
        pp = _paper14(study_of.get(p))
        sname = (study_of.get(p) or "paper").split(",")[0]
        d = rep.discovery
        sel = d.selected_system
        # 1. discovery gain shrinks on confirmation
        name = f"{lab}: the discovery choice's gain over ReAct shrinks on confirmation"
        contrast = f"{sel} − {BASELINE}" if sel else None
        pchoice = pp.get("Discovery choice (hard argmax)", "not reported")
        paper_txt = (f"{sname}: choice {pchoice}, discovery gain "
                     f"{pp.get('Discovery gain of the choice over ReAct', 'not reported')}, confirmation "
                     f"{pp.get(f'{pchoice} − ReAct on confirmation', 'not reported')}")
        inert = _inert(testab, p, contrast) if contrast else None
        if inert is not None:
            rows.append(untestable_finding(name, paper_txt, measured=inert,
                                           why=f"{sel} never changed a proposed action of the agent "
                                               f"(share of paired episodes {inert:.3f})"))
        elif sel and f"Uniform: {sel} − {BASELINE}" in t.index:
            gain = float(d.theta[sel] - d.theta[BASELINE])
            lo, hi = _band(t.loc[f"Uniform: {sel} − {BASELINE}"], rep.critical)
            rows.append(interval_finding(name, paper_txt, float(t.loc[f"Uniform: {sel} − {BASELINE}", "estimate"]),
                                         lo, hi, rep.n_confirmation, paper_side="below", threshold=round(gain, 6),
                                         level=level, quantity=f"confirmation {sel} − ReAct (simultaneous band) "
                                                                f"vs the discovery gain"))
        else:
            rows.append(interval_finding(name, paper_txt, float("nan"), float("nan"), float("nan"),
                                         rep.n_confirmation, paper_side="below", level=level,
                                         quantity="confirmation gain of the discovery choice"))
        # 2. no average gain confirmed (exact), unless both enhanced workflows are inert
        inert_all = [_inert(testab, p, f"{w} − {BASELINE}") for w in ENHANCED]
        n_conf_uni = int((t.loc[uni, "status"] == "confirmed").sum())
        name = f"{lab}: no average gain over ReAct is confirmed"
        if all(v is not None for v in inert_all):
            rows.append(untestable_finding(name, f"{sname}: {pp.get('Confirmed', 0)} confirmed of 10 slots",
                                           measured=0.0, why="neither enhanced workflow changed a proposed action"))
        else:
            f = exact_finding(name, f"{sname}: 0 of 2 uniform slots confirmed", n_conf_uni, len(uni),
                              criterion=("==", 0), domain=(0, len(uni)), rule="0 confirmed uniform slots (SASST status)")
            rows.append(_gain_power(f, t.loc[uni, "se"], rep.critical, paper_gain, level=float(rep.level)))
        # 3. no stress / control claim confirmed (exact)
        n_conf_other = int((t.loc[other, "status"] == "confirmed").sum())
        n_band = int(np.isfinite(t.loc[other, "bound"].to_numpy(float)).sum())
        name = f"{lab}: no stress or control claim is confirmed"
        if all(_inert(testab, p, c) is not None for c, _, _ in CONTRASTS):
            rows.append(untestable_finding(name, f"{sname}: 0 of 8 stress and control slots confirmed",
                                           measured=0.0, why="no workflow changed a proposed action in any contrast"))
        elif n_band == 0:
            rows.append(untestable_finding(name, f"{sname}: 0 of 8 stress and control slots confirmed",
                                           measured=0.0, why="no stress or control slot has a band (every one "
                                                             "failed discovery or feasibility)",
                                           rule="a claim needs a band to be confirmed"))
        else:
            rows.append(exact_finding(name, f"{sname}: 0 of 8 stress and control slots confirmed", n_conf_other,
                                      len(other), holds=n_conf_other == 0,
                                      rule="0 confirmed stress and control slots (SASST status)"))
        # 4. stability below threshold: SASST's own abstain rule on the frozen rules
        stress = t.loc[[s for s in other if str(s).startswith("Stress ")]]
        frozen = stress[stress["status"] != "failed discovery"]
        thr = float(next((sl["stability_threshold"] for sl in rep.params.get("slots", [])
                          if str(sl.get("name", "")).startswith("Stress ")), np.nan))
        name = f"{lab}: the most stable frozen rule stays below the stability threshold"
        paper_stab = f"{sname}: maximum stability {pp.get('Maximum rule stability', 'not reported')}"
        if len(frozen) and frozen["stability"].notna().any() and np.isfinite(thr):
            top = float(frozen["stability"].max())
            rows.append(exact_finding(name, paper_stab, top, int(rep.params.get("n_stability", 0) or 0),
                                      holds=bool(top < thr),
                                      rule=f"highest stability of a frozen stress rule below {thr:g} (SASST's "
                                           "abstain rule; stability is a mean Jaccard over the resamples, n)"))
        else:
            rows.append(untestable_finding(name, paper_stab, measured=float(len(frozen)),
                                           why=f"discovery froze no stress rule ({len(frozen)} of {len(stress)} "
                                               "stressed slots)", rule="stability needs a frozen rule"))
        # 5. seed flips
        if seed_flips is not None and len(seed_flips):
            f = seed_flips[(seed_flips["profile"] == p) & (seed_flips["workflow"] == BASELINE)]
            if len(f):
                r = f.iloc[0]
                rows.append(interval_finding(f"{lab}: identical reruns of ReAct flip the verdict on some tasks",
                                             "agents are inconsistent across trials (τ-bench, Yao et al., 2024)",
                                             float(r["share"]), float(r["ci_low"]), float(r["ci_high"]),
                                             int(r["tasks"]), paper_side="above", level=float(r["level"]),
                                             domain=(0.0, 1.0),
                                             quantity="share of tasks whose ReAct verdict flips across seeds"))
    return rows, level


def _neutral_controlled(rows, neutral_rows):
    """Each row of :data:`NEUTRAL_CLAIMS` with its verdict from the neutral run (same
    finding text), the simulated estimate shown apart; the simulated row's reasons (its
    power) stay in ``why``."""
    from dataclasses import replace

    from agentstudies.findings import neutral_control

    out = []
    for r in rows:
        claim = r.finding.split(": ", 1)[-1]
        if claim in NEUTRAL_CLAIMS and r.finding in neutral_rows:
            c = neutral_control(neutral_rows[r.finding], r, built_in=r.built_in, setting=NEUTRAL_SETTING)
            r = replace(c, why=f"{c.why}; as simulated: {r.verdict} ({r.why})")
        out.append(r)
    return out


#: What each claim of :func:`stress_findings` rests on with the simulated profiles, by the
#: claim's text after the profile label: (basis, why, built-in parameters or code path).
CLAIM_BASIS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "the discovery choice's gain over ReAct shrinks on confirmation": (
        "method", "selection: the hard argmax on discovery is scored again on held-out confirmation tasks", ()),
    "no average gain over ReAct is confirmed": (
        "built in", "the workflows' success levels were set a few points apart by hand",
        tuple(f"TauProfile.{k}" for k in ("verifier_detect", "verifier_false_reject", "verifier_malformed",
                                          "user_decline_invalid", "user_decline_valid"))),
    "no stress or control claim is confirmed": (
        "built in", "the stress effects are the simulated reviewers' feature slopes and intercepts",
        ("mistake_probabilities reviewer slopes (verifier_*, user_decline_invalid)",
         "TauProfile verifier_* and user_decline_* intercepts")),
    "the most stable frozen rule stays below the stability threshold": (
        "method", "SASST's own abstain rule on its discovery resamples", ()),
    "identical reruns of ReAct flip the verdict on some tasks": (
        "built in", "the scripted policy draws its mistakes afresh for each seed", ("ScriptedTauPolicy seeded draws",)),
}


def _stated(row, simulated: bool):
    """``row`` with the basis of :data:`CLAIM_BASIS` (``measured`` for an LLM agent)."""
    from dataclasses import replace

    claim = row.finding.split(": ", 1)[-1]
    if claim not in CLAIM_BASIS:
        raise KeyError(f"no basis stated for the claim {row.finding!r}")
    basis, why, names = CLAIM_BASIS[claim]
    if not simulated and basis == "built in":
        basis, why, names = "measured", "an LLM agent: its code does not contain the effect", ()
    return replace(row, basis=basis, built_in=names, why="; ".join(x for x in (why, row.why) if x))


def _gain_power(row, se: pd.Series, critical: float, effect: float, *, level: float):
    """"No average gain is confirmed" with the power of the SASST confirmation rule to see a
    gain of ``effect`` (success share) at this run's size: the better uniform slot's
    :func:`agentstudies.findings.wald_power` with the report's critical value; not testable
    here under 0.8 (:func:`agentstudies.findings.power_gated`), also when no uniform slot
    has a standard error."""
    from agentstudies.findings import power_gated, untestable_finding, wald_power

    se = pd.to_numeric(se, errors="coerce").to_numpy(float)
    se = se[np.isfinite(se) & (se > 0)]
    words = f"the paper's +{100 * effect:.2f} points"
    if not len(se) or not np.isfinite(critical):
        return untestable_finding(row.finding, row.paper, measured=0.0, rule=row.rule,
                                  why=f"no uniform slot has a band, so the rule's power to see {words} is unknown")
    power = max(wald_power(effect, x, level=level, critical=float(critical)) for x in se)
    return power_gated(row, power, effect=words)


# ----------------------------------------------------------------------------- neutral control
#: The :class:`agentstudies.agents.tau.TauProfile` parameters through which the enhanced
#: workflows differ from ReAct in the simulated agent: the simulated verifier's and
#: consenting user's logits (:func:`agentstudies.agents.tau.mistake_probabilities`).
REVIEWER_PARAMS: tuple[str, ...] = ("verifier_detect", "verifier_false_reject", "verifier_malformed",
                                    "user_decline_invalid", "user_decline_valid")

#: The neutral setting of :data:`REVIEWER_PARAMS`, in words.
NEUTRAL_SETTING = ("verifier and user logits at −∞ (the verifier approves and the user consents to every call, "
                   "so the three workflows are identical in the agent)")

#: Claims of :func:`stress_findings` whose verdict comes from the neutral run.
NEUTRAL_CLAIMS: tuple[str, ...] = ("no average gain over ReAct is confirmed", "no stress or control claim is confirmed")


def neutral_profile(profile):
    """``profile`` (a name of :data:`agentstudies.agents.tau.PROFILES` or a
    :class:`~agentstudies.agents.tau.TauProfile`) with every :data:`REVIEWER_PARAMS` logit at
    ``-inf`` -- probability 0 of a rejection, a malformed verdict or a declined consent,
    whatever the task's features -- under the same name, so its episodes share the
    simulated run's seeds (:func:`agentstudies.agents.tau.episode_seed` keys on the name).

    Raises
    ------
    ValueError
        An unknown profile name.
    """
    import math
    from dataclasses import replace

    from agentstudies.agents.tau import get_profile

    return replace(get_profile(profile), **{k: -math.inf for k in REVIEWER_PARAMS})


def neutral_run(episodes: pd.DataFrame, task_ids, features: pd.DataFrame, split: pd.Series, radii, *,
                profiles, seeds, n_jobs: int = 1, backend: str = "loky", **sasst_kw):
    """The chapter's neutral control: the same study with :data:`REVIEWER_PARAMS` neutral.

    Runs the two enhanced workflows (:data:`ENHANCED`) of each :func:`neutral_profile` on
    the same ``task_ids`` and ``seeds``, takes ReAct's episodes from ``episodes`` (ReAct
    has no reviewer, so they are what a neutral rerun would give), and runs
    :func:`run_tau_sasst` per profile with ``sasst_kw``.

    Returns
    -------
    ``(reports, testability)``: ``{profile: SASSTReport}`` and the neutral episodes'
    :func:`workflow_testability` table, for ``stress_findings(neutral=, neutral_testab=)``.

    Raises
    ------
    ValueError
        A profile with no ReAct episodes in ``episodes``; as :func:`run_episodes` and
        :func:`run_tau_sasst`.
    """
    from agentstudies.agents.tau import run_episodes

    profiles = list(profiles)
    neu = run_episodes(task_ids, workflows=ENHANCED, profiles=[neutral_profile(p) for p in profiles],
                       seeds=seeds, n_jobs=n_jobs, backend=backend)
    react = episodes[(episodes["workflow"] == BASELINE) & episodes["profile"].isin(profiles)]
    absent = sorted(set(profiles) - set(react["profile"]))
    if absent:
        raise ValueError(f"episodes hold no ReAct episodes of profile(s) {absent}; run them first")
    eps = pd.concat([react[list(neu.columns)], neu], ignore_index=True)
    reports = {p: run_tau_sasst(eps[eps["profile"] == p], features, split, radii, **sasst_kw) for p in profiles}
    return reports, workflow_testability(eps)


# ----------------------------------------------------------------------------- planted controls
#: ReAct's (and the gate's) success share in the synthetic control episodes.
CONTROL_BASE_RATE = 0.30


def control_subjects(effect: float) -> dict[str, str]:
    """Subjects of :func:`stress_controls` (labels say planted / null) for a planted gain
    of ``effect`` (success share) of Plan + verifier over ReAct and the gate."""
    return {
        "planted": (f"planted (synthetic episodes): Plan + verifier succeeds {CONTROL_BASE_RATE + effect:.4g} vs "
                    f"{CONTROL_BASE_RATE:.2f} for ReAct and the gate (+{100 * effect:.2f} points)"),
        "null": f"null (synthetic episodes): every workflow succeeds {CONTROL_BASE_RATE:.2f}",
    }


def _control_episodes(kind: str, n_tasks: int, n_seeds: int, rng: np.random.Generator, effect: float = 0.35):
    ids = [f"s{t:03d}" for t in range(n_tasks)]
    feat = pd.DataFrame({c: rng.integers(1, 9, n_tasks).astype(float)
                         for c in ("scenario_words", "reason_words", "n_actions", "n_write_actions")}, index=ids)
    feat["is_airline"] = (rng.random(n_tasks) < 0.5).astype(float)
    base = CONTROL_BASE_RATE
    p = {BASELINE: base, "Plan + verifier": base + effect if kind == "planted" else base, "Confirmation gate": base}
    ep = pd.DataFrame([dict(task_id=t, seed=s, workflow=w, reward=float(rng.random() < p[w]))
                       for t in ids for s in range(n_seeds) for w in WORKFLOWS])
    return ep, feat


def _stress_control_replicate(item, rng, **kw):  # seeded_map signature
    from agentstudies.sasst import split_clusters

    kind, r = item
    ep, feat = _control_episodes(kind, kw["n_tasks"], kw["n_seeds"],
                                 np.random.default_rng(keyed_seed(kw["root"], "control", kind, r)), kw["effect"])
    split = split_clusters(list(feat.index), discovery_fraction=0.5, seed=int(r))
    fam = tau_family(list(feat.columns))
    radii = tau_radii(feat, split.index[split == "discovery"], fam)
    rep = run_tau_sasst(ep, feat, split, radii, n_draws=kw["n_draws"], n_stability=kw["n_stability"],
                        level=kw["level"], seed=int(r), min_ess=kw["min_ess"])
    return "reappears" if rep.table.loc["Uniform: Plan + verifier − ReAct", "status"] == "confirmed" else "inconclusive"


def stress_controls(*, replicates: int = 40, n_tasks: int = 40, n_seeds: int = 2, level: float = 0.95,
                    n_draws: int = 400, n_stability: int = 10, min_ess: float = 20.0, seed: int = 0,
                    n_jobs: int = 1, effect: float | None = None) -> pd.DataFrame:
    """Planted controls of the chapter's SASST verdict rule: ``controls.csv``.

    Runs :func:`run_tau_sasst` (the ten slots, the same plan, family and radii rule) on
    ``replicates`` synthetic episode tables of ``n_tasks`` tasks × ``n_seeds`` seeds with
    five random pre-execution features, from a *planted* subject (Plan + verifier's average
    gain over ReAct exists by construction: ``effect``, by default the paper's discovery
    gain of +3.75 points, SASST Table 14, ``data/paper``) and a *null* subject (no workflow
    differs; :func:`control_subjects`). Family: "a workflow's average gain over ReAct is
    confirmed" -- the uniform Plan + verifier slot's SASST status is ``confirmed``
    (simultaneous lower bound above 0). Its power is what makes the chapter's "no
    average gain is confirmed" informative. Returns
    :data:`agentstudies.findings.CONTROL_COLUMNS` rows with exact Clopper-Pearson intervals.

    Raises ``ValueError`` for fewer than 2 replicates or fewer than 8 tasks, or an
    ``effect`` outside ``(0, 1 - 0.30]``.
    """
    from agentstudies.findings import control_row
    from agentstudies.parallel import seeded_map
    from agentstudies.studies import paper_note

    if replicates < 2 or n_tasks < 8:
        raise ValueError(f"replicates={replicates}, n_tasks={n_tasks}: need at least 2 replicates and 8 tasks")
    effect = float(paper_note("tau_workflow_stress", "discovery_gain_study_f") if effect is None else effect)
    if not (0.0 < effect <= 1.0 - CONTROL_BASE_RATE):
        raise ValueError(f"effect={effect}: the planted gain must lie in (0, {1 - CONTROL_BASE_RATE:g}] "
                         "(a success share over ReAct's 0.30)")
    subjects = control_subjects(effect)
    items = [(kind, r) for kind in ("planted", "null") for r in range(replicates)]
    out = seeded_map(_stress_control_replicate, items, seed=seed, n_jobs=n_jobs, n_tasks=n_tasks, n_seeds=n_seeds,
                     level=level, n_draws=n_draws, n_stability=n_stability, min_ess=min_ess, root=seed,
                     effect=effect)
    rule = (f"SASST status 'confirmed' of the uniform Plan + verifier − ReAct slot (simultaneous {100 * level:g}% "
            f"lower bound above 0); {n_tasks} tasks × {n_seeds} seeds per replicate")
    return pd.DataFrame([control_row("A workflow's average gain over ReAct is confirmed", subjects[kind],
                                     [o for (kd, _), o in zip(items, out) if kd == kind],
                                     planted=kind == "planted", rule=rule, level=level)
                         for kind in ("planted", "null")])


