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
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from agentstudies.findings import controls_sentence
import numpy as np
import pandas as pd

from agentstudies.parallel import keyed_seed
from agentstudies.specs import BootstrapSpec
from agentstudies.stats import paired_cluster_bootstrap, percentile_interval
from agentstudies.sasst import SASST, SELECTED, STATUSES, ComparisonPlan, SASSTReport, Slot
from agentstudies.sasst.geometry import calibrate_radii
from agentstudies.sasst.rules import CompositeFamily, DirectionTiltFamily, RuleFamily, ThresholdFamily

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
    "CONTROL_SUBJECTS",
    "workflow_testability",
    "stress_findings",
    "stress_controls",
    "controls_sentence",
]

BASELINE = "ReAct"
ENHANCED = ("Plan + verifier", "Confirmation gate")
WORKFLOWS = (BASELINE, *ENHANCED)

#: Structured pre-execution features used by the threshold rules (interpretable task types).
STRUCTURED_FEATURES = (
    "is_airline", "scenario_words", "reason_words", "n_actions", "n_write_actions",
    "n_read_actions", "n_distinct_tools", "n_communicate_info", "transfer_expected",
)


def stress_features(task_features: pd.DataFrame) -> pd.DataFrame:
    """Numeric, score-blind feature table for the stress rules (indexed by task id).

    Adds ``is_airline`` from ``domain`` and keeps every numeric column of
    :func:`agentstudies.envs.tau.task_features` (structured counts, tool indicators and the
    text embedding ``emb_*``). Constant columns are dropped (they carry no task type).

    Raises
    ------
    KeyError
        If ``domain`` or a structured feature is missing.
    """
    missing = [c for c in ("domain", *[c for c in STRUCTURED_FEATURES if c != "is_airline"]) if c not in task_features]
    if missing:
        raise KeyError(f"task feature table lacks column(s) {missing}")
    f = task_features.copy()
    f["is_airline"] = (f["domain"] == "airline").astype(float)
    num = f.select_dtypes(include=["number", "bool"]).astype(float)
    return num.loc[:, num.std(axis=0) > 0]


def tau_plan(*, temperature: float = 0.05, n_splits: int = 2, split_seed: int = 0) -> ComparisonPlan:
    """The fixed plan ``A``: weighted success of each workflow plus a cross-fit soft
    selection of the better enhanced workflow (``selected``), Appendix C.3."""
    return ComparisonPlan(WORKFLOWS, candidates=ENHANCED, selection="soft", temperature=temperature,
                          n_splits=n_splits, split_seed=split_seed)


def tau_family(feature_names: Sequence[str], *, seed: int = 0) -> RuleFamily:
    """Candidate registry: threshold rules on structured features (coherent task types) and
    kernel tilts on all features (text embedding included)."""
    structured = tuple(c for c in STRUCTURED_FEATURES if c in feature_names)
    return CompositeFamily((
        ThresholdFamily(quantiles=(1 / 3, 1 / 2, 2 / 3), lifts=(3.0,), use_columns=structured),
        DirectionTiltFamily(n_directions=12, strengths=(0.5, 1.0), clip=2.0, kernel=True, seed=seed),
    ))


def tau_slots(
    radii: Sequence[float],
    *,
    min_ess: float = 20.0,
    density_cap: float = 5.0,
    stability_threshold: float = 0.60,
    geometry: str = "kms",
) -> list[Slot]:
    """The ten slots of Studies F and G (two uniform, six stressed, two controls).

    ``radii`` are the three radius budgets ``r1 < r2 < r3``; the controls use ``r2``.
    """
    if len(radii) != 3:
        raise ValueError(f"need exactly three radii r1 < r2 < r3; got {list(radii)}")
    target = {SELECTED: 1.0, BASELINE: -1.0}
    common = dict(family="stress", geometry=geometry, density_cap=density_cap, min_ess=min_ess,
                  stability_threshold=stability_threshold, discovery_target=target)
    slots = [
        Slot("Uniform: Plan + verifier − ReAct", {"Plan + verifier": 1, BASELINE: -1}, sign=+1,
             min_ess=min_ess, density_cap=density_cap),
        Slot("Uniform: Confirmation gate − ReAct", {"Confirmation gate": 1, BASELINE: -1}, sign=+1,
             min_ess=min_ess, density_cap=density_cap),
    ]
    for k, r in enumerate(radii, start=1):
        for w in ENHANCED:
            slots.append(Slot(f"Stress r{k}: {w} − ReAct", {w: 1, BASELINE: -1}, sign=-1, radius=float(r), **common))
    slots.append(Slot("Control r2: Plan + verifier − gate", {"Plan + verifier": 1, "Confirmation gate": -1},
                      sign=+1, radius=float(radii[1]), **common))
    slots.append(Slot("Control r2: gate − Plan + verifier", {"Confirmation gate": 1, "Plan + verifier": -1},
                      sign=+1, radius=float(radii[1]), **common))
    return slots


def tau_radii(features: pd.DataFrame, discovery_ids: Sequence[str], family: RuleFamily,
              quantiles: Sequence[float] = (0.25, 0.5, 0.9), geometry: str = "kms") -> tuple[float, ...]:
    """Three radii from quantiles of the candidates' KMS distances on discovery features
    (score-blind; frozen before any outcome is read)."""
    X = features.loc[list(discovery_ids)]
    return calibrate_radii(X.to_numpy(float), list(X.columns), family, geometry, quantiles)


def run_tau_sasst(
    episodes: pd.DataFrame,
    features: pd.DataFrame,
    split: Mapping[str, str] | pd.Series,
    radii: Sequence[float],
    *,
    inference: str = "gaussian",
    n_draws: int = 2000,
    n_stability: int = 100,
    level: float = 0.95,
    seed: int = 0,
    family_seed: int = 0,
    min_ess: float = 20.0,
    density_cap: float = 5.0,
    stability_threshold: float = 0.60,
) -> SASSTReport:
    """Run the ten-slot SASST protocol on one model profile's episode table.

    ``episodes`` needs columns ``task_id, seed, workflow, reward``; ``features`` is the
    output of :func:`stress_features`; ``split`` maps task id to discovery/confirmation.
    """
    if "reward" not in episodes.columns:
        raise KeyError(f"episode table lacks column 'reward'; it has {list(episodes.columns)}")
    _warn_non_binary(episodes["reward"])
    slots = tau_slots(radii, min_ess=min_ess, density_cap=density_cap, stability_threshold=stability_threshold)
    eng = SASST(tau_plan(), slots, {"stress": tau_family(list(features.columns), seed=family_seed)},
                level=level, inference=inference, n_draws=n_draws, n_stability=n_stability, seed=seed)
    return eng.run(episodes.rename(columns={"reward": "score"}), features, split)


def _warn_non_binary(reward: pd.Series) -> None:
    """τ-bench success is 0/1; the study's plan, tables and prose read it so. Other values
    (partial credit, booleans, text) are not refused by SASST, which takes any numeric
    score, but they are named here (pandera check of the column)."""
    import warnings

    import pandera.pandas as pa

    schema = pa.SeriesSchema(float, pa.Check.isin([0.0, 1.0]), coerce=True, name=reward.name)
    try:
        schema.validate(reward)
    except (pa.errors.SchemaError, ValueError, TypeError) as exc:
        bad = sorted({repr(v) for v in reward if not (isinstance(v, (int, float, np.number))
                                                     and not isinstance(v, bool) and v in (0, 1))})[:5]
        warnings.warn(
            f"run_tau_sasst assumes 0/1 task success in column 'reward'; found other values {bad} "
            f"({type(exc).__name__}); the success-rate reading of the tables does not apply",
            UserWarning, stacklevel=3,
        )


# ----------------------------------------------------------------------------- tables
def slot_table(report: SASSTReport, bonferroni: SASSTReport | None = None) -> pd.DataFrame:
    """Tables 15/16 layout: estimate, SE, signed simultaneous bound, ESS, density, stability,
    status (and the Bonferroni-t bound and status beside it when given)."""
    t = report.table
    out = pd.DataFrame({
        "estimate": t["estimate"], "se": t["se"],
        "bound": [f"{side} {b:+.3f}" if np.isfinite(b) else "NA" for side, b in zip(t["bound_side"], t["bound"])],
        "bound_value": t["bound"], "ess": t["ess"], "max_density": t["max_density"],
        "stability": t["stability"], "status": t["status"], "rule": t["rule"],
    })
    if bonferroni is not None:
        b = bonferroni.table
        out["bonferroni_bound"] = b["bound"]
        out["bonferroni_status"] = b["status"]
    return out


def summary_table(episodes: pd.DataFrame, reports: Mapping[str, SASSTReport]) -> pd.DataFrame:
    """Table 14 layout: one column per model profile."""
    cols = {}
    for profile, rep in reports.items():
        ep = episodes[episodes["profile"] == profile]
        rates = ep.groupby("workflow")["reward"].mean()
        t = rep.table
        d = rep.discovery
        stressed = t[t["family"] != "uniform"]
        counts = t["status"].value_counts()
        sel = d.selected_system
        col = {f"Full-study {w} success": rates.get(w, np.nan) for w in WORKFLOWS}
        soft = d.soft_selection
        # the rules were tuned (Eq. 2) against the plan's cross-fitted soft selection;
        # the hard argmax of the unweighted discovery rates is the label beside it
        col["Discovery selection (soft weights, the target the rules were tuned against)"] = (
            ", ".join(f"{k} {v:.2f}" for k, v in soft.items()) if soft else "—")
        col["Discovery choice (hard argmax)"] = sel
        col["Discovery gain of the choice over ReAct"] = d.theta[sel] - d.theta[BASELINE] if sel else np.nan
        col["Plan + verifier − ReAct on confirmation"] = t.loc["Uniform: Plan + verifier − ReAct", "estimate"]
        col["Confirmation gate − ReAct on confirmation"] = t.loc["Uniform: Confirmation gate − ReAct", "estimate"]
        col["Maximum rule stability"] = stressed["stability"].max()
        for s in STATUSES:
            col[s.capitalize()] = int(counts.get(s, 0))
        cols[profile] = col
    return pd.DataFrame(cols)


def execution_counts(episodes: pd.DataFrame) -> pd.DataFrame:
    """Table 17 layout per profile and workflow: tokens (input + output, summed over the
    episodes of an LLM agent; "n/a (scripted policy)" for simulated agents, which call no
    model), tool calls, failed calls, irreversible calls, steps (summed)."""
    g = episodes.groupby(["profile", "workflow"], sort=False)
    out = g[["tool_calls", "failed_calls", "irreversible_calls", "blocked_calls", "declined_calls", "steps"]].sum()
    if {"input_tokens", "output_tokens"} <= set(episodes.columns) and episodes["input_tokens"].notna().any():
        tokens = (episodes["input_tokens"].fillna(0) + episodes["output_tokens"].fillna(0)).astype("int64")
        out.insert(0, "tokens", tokens.groupby([episodes["profile"], episodes["workflow"]], sort=False).sum())
    else:
        out.insert(0, "tokens", "n/a (scripted policy)")
    out["episodes"] = g.size()
    return out


def decomposition(episodes: pd.DataFrame) -> pd.DataFrame:
    """Post-hoc descriptive decomposition (D.8): all-workflow-zero task-seed blocks,
    environment completion and termination codes per workflow, and conditional success
    among completed episodes (a post-treatment selected population — descriptive only)."""
    rows = []
    for profile, ep in episodes.groupby("profile", sort=False):
        blocks = ep.groupby(["task_id", "seed"])["reward"].max()
        for w, e in ep.groupby("workflow", sort=False):
            completed = e["termination"].isin(["done", "agent_stop", "transfer_to_human"])
            row = {"profile": profile, "workflow": w, "episodes": len(e),
                   "all_workflow_zero_blocks": int((blocks == 0).sum()), "task_seed_blocks": len(blocks),
                   "completed": int(completed.sum()),
                   "success_given_completed": float(e.loc[completed, "reward"].mean()) if completed.any() else np.nan}
            for term, k in e["termination"].value_counts().items():
                row[f"termination: {term}"] = int(k)
            rows.append(row)
    out = pd.DataFrame(rows)
    term = [c for c in out.columns if c.startswith("termination: ")]
    out[term] = out[term].fillna(0).astype(int)
    return out


def seed_flip_rates(episodes: pd.DataFrame, *, n_draws: int = 2000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Seed-to-seed verdict flips per profile and workflow, with task-cluster intervals.

    A (task, workflow) pair *flips* when its reward differs between the simulator seeds of
    that task (same task, same workflow, same agent profile; only the seed changes). The
    share of flipping tasks is a mean over tasks; its interval is the percentile interval
    of a task bootstrap (all workflows of a task resampled together, per profile).

    Parameters
    ----------
    episodes : DataFrame with columns ``profile, workflow, task_id, seed, reward``; every
        (profile, workflow, task) needs the same set of at least two seeds.

    Returns
    -------
    DataFrame with ``profile, workflow, tasks, flips, share, ci_low, ci_high, level, seeds``.

    Raises
    ------
    KeyError
        A missing column. ValueError: fewer than two seeds, a duplicated episode, or a
        (profile, workflow, task) whose seeds differ from the others' (named); ValueError /
        TypeError naming ``n_draws``, ``level`` or ``seed`` when out of range
        (:class:`agentstudies.specs.BootstrapSpec`).
    """
    boot = BootstrapSpec(n_draws=n_draws, level=level, seed=seed)
    need = {"profile", "workflow", "task_id", "seed", "reward"}
    missing = need - set(episodes.columns)
    if missing:
        raise KeyError(f"episode table lacks column(s) {sorted(missing)}")
    keys = ["profile", "workflow", "task_id", "seed"]
    dup = episodes.duplicated(keys)
    if dup.any():
        raise ValueError(f"duplicate episode(s) {episodes.loc[dup, keys].head(3).to_dict('records')}")
    seeds = sorted(episodes["seed"].unique())
    if len(seeds) < 2:
        raise ValueError(f"seed-to-seed flips need at least two simulator seeds; the episodes have {seeds}")
    rows = []
    for profile, ep in episodes.groupby("profile", sort=False):
        wide = ep.pivot_table(index="task_id", columns=["workflow", "seed"], values="reward", aggfunc="first")
        if wide.isna().any().any():
            bad = wide.index[wide.isna().any(axis=1)].tolist()[:5]
            raise ValueError(f"profile {profile!r}: task(s) {bad} lack a (workflow, seed) episode")
        wfs = list(dict.fromkeys(ep["workflow"]))
        flags = np.column_stack([wide[w].nunique(axis=1).to_numpy() > 1 for w in wfs]).astype(float)
        T = flags.shape[0]
        reps = paired_cluster_bootstrap(flags, lambda tot: tot / T, n_draws=boot.n_draws,
                                        rng=np.random.default_rng(keyed_seed(boot.seed, "seed_flips", str(profile))))
        lo, hi = percentile_interval(reps, boot.level)
        for j, w in enumerate(wfs):
            rows.append({"profile": profile, "workflow": w, "tasks": T, "flips": int(flags[:, j].sum()),
                         "share": float(flags[:, j].mean()), "ci_low": float(lo[j]), "ci_high": float(hi[j]),
                         "level": level, "seeds": len(seeds)})
    return pd.DataFrame(rows)


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
                    labels: Mapping[str, str] | None = None):
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
    on it ``not testable here``.

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

    Parameters
    ----------
    reports : {profile: SASSTReport} from :func:`run_tau_sasst`.
    study_of : {profile: paper study column of Table 14}; default in order Study F, Study G.
    labels : {profile: label used in the finding texts}; default the profile name.

    Returns
    -------
    :class:`agentstudies.findings.Findings`.

    Raises
    ------
    ValueError
        No report; a report without the ten slots of :func:`tau_slots`.

    Length: one block per claim above, in that order, inside the loop over profiles; each
    block is the claim's whole rule, so a reader checks a verdict against one place.
    """
    from agentstudies.findings import Findings, exact_finding, interval_finding, untestable_finding

    if not reports:
        raise ValueError("stress_findings needs at least one report")
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
        if n_band == 0:
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
                                             quantity="share of tasks whose ReAct verdict flips across seeds"))
    simulated = not any(str(p).startswith("llm:") for p in reports)
    rows = [_stated(r, simulated) for r in rows]
    return Findings.build(rows, seed=None, title="tau_workflow_stress findings", level=level)


#: What each claim of :func:`stress_findings` rests on with the simulated profiles, by the
#: claim's text after the profile label: (basis, why, built-in parameters or code path).
CLAIM_BASIS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "the discovery choice's gain over ReAct shrinks on confirmation": (
        "method", "selection: the hard argmax on discovery is scored again on held-out confirmation tasks", ()),
    "no average gain over ReAct is confirmed": (
        "built in", "the workflows' success levels were set a few points apart by hand",
        ("TauProfile intercepts (verifier_*, user_decline_*)",)),
    "no stress or control claim is confirmed": (
        "built in", "the stress effects are the simulated mistakes' feature slopes",
        ("mistake_probabilities slopes", "TauProfile intercepts")),
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


#: Subjects of :func:`stress_controls` (labels say planted / null).
CONTROL_SUBJECTS = {
    "planted": "planted (synthetic episodes): Plan + verifier succeeds 0.65 vs 0.30 for ReAct and the gate",
    "null": "null (synthetic episodes): every workflow succeeds 0.30",
}


def _control_episodes(kind: str, n_tasks: int, n_seeds: int, rng: np.random.Generator):
    ids = [f"s{t:03d}" for t in range(n_tasks)]
    feat = pd.DataFrame({c: rng.integers(1, 9, n_tasks).astype(float)
                         for c in ("scenario_words", "reason_words", "n_actions", "n_write_actions")}, index=ids)
    feat["is_airline"] = (rng.random(n_tasks) < 0.5).astype(float)
    p = {BASELINE: 0.30, "Plan + verifier": 0.65 if kind == "planted" else 0.30, "Confirmation gate": 0.30}
    ep = pd.DataFrame([dict(task_id=t, seed=s, workflow=w, reward=float(rng.random() < p[w]))
                       for t in ids for s in range(n_seeds) for w in WORKFLOWS])
    return ep, feat


def _stress_control_replicate(item, rng, **kw):  # seeded_map signature
    from agentstudies.sasst import split_clusters

    kind, r = item
    ep, feat = _control_episodes(kind, kw["n_tasks"], kw["n_seeds"],
                                 np.random.default_rng(keyed_seed(kw["root"], "control", kind, r)))
    split = split_clusters(list(feat.index), discovery_fraction=0.5, seed=int(r))
    fam = tau_family(list(feat.columns))
    radii = tau_radii(feat, split.index[split == "discovery"], fam)
    rep = run_tau_sasst(ep, feat, split, radii, n_draws=kw["n_draws"], n_stability=kw["n_stability"],
                        level=kw["level"], seed=int(r), min_ess=kw["min_ess"])
    return "reappears" if rep.table.loc["Uniform: Plan + verifier − ReAct", "status"] == "confirmed" else "inconclusive"


def stress_controls(*, replicates: int = 40, n_tasks: int = 40, n_seeds: int = 2, level: float = 0.95,
                    n_draws: int = 400, n_stability: int = 10, min_ess: float = 20.0, seed: int = 0,
                    n_jobs: int = 1) -> pd.DataFrame:
    """Planted controls of the chapter's SASST verdict rule: ``controls.csv``.

    Runs :func:`run_tau_sasst` (the ten slots, the same plan, family and radii rule) on
    ``replicates`` synthetic episode tables of ``n_tasks`` tasks × ``n_seeds`` seeds with
    five random pre-execution features, from a *planted* subject (Plan + verifier's average
    gain over ReAct exists by construction, +0.35) and a *null* subject (no workflow
    differs; :data:`CONTROL_SUBJECTS`). Family: "a workflow's average gain over ReAct is
    confirmed" -- the uniform Plan + verifier slot's SASST status is ``confirmed``
    (simultaneous lower bound above 0). Its power is what makes the chapter's "no
    average gain is confirmed" informative. Returns
    :data:`agentstudies.findings.CONTROL_COLUMNS` rows with exact Clopper-Pearson intervals.

    Raises ``ValueError`` for fewer than 2 replicates or fewer than 8 tasks.
    """
    from agentstudies.findings import control_row
    from agentstudies.parallel import seeded_map

    if replicates < 2 or n_tasks < 8:
        raise ValueError(f"replicates={replicates}, n_tasks={n_tasks}: need at least 2 replicates and 8 tasks")
    items = [(kind, r) for kind in ("planted", "null") for r in range(replicates)]
    out = seeded_map(_stress_control_replicate, items, seed=seed, n_jobs=n_jobs, n_tasks=n_tasks, n_seeds=n_seeds,
                     level=level, n_draws=n_draws, n_stability=n_stability, min_ess=min_ess, root=seed)
    rule = (f"SASST status 'confirmed' of the uniform Plan + verifier − ReAct slot (simultaneous {100 * level:g}% "
            f"lower bound above 0); {n_tasks} tasks × {n_seeds} seeds per replicate")
    return pd.DataFrame([control_row("A workflow's average gain over ReAct is confirmed", CONTROL_SUBJECTS[kind],
                                     [o for (kd, _), o in zip(items, out) if kd == kind],
                                     planted=kind == "planted", rule=rule, level=level)
                         for kind in ("planted", "null")])


