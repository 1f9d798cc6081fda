"""The workflow stress test's SASST protocol and tables (the design of
:mod:`agentstudies.studies.tau.workflow`, whose docstring states it): the workflows and
features, the plan, rule family, ten slots and radii, :func:`run_tau_sasst`, and the
tables shaped from its reports and the episodes. :mod:`~agentstudies.studies.tau.workflow`
re-exports every public name here.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.parallel import keyed_seed
from agentstudies.specs import BootstrapSpec
from agentstudies.stats import paired_cluster_bootstrap, percentile_interval
from agentstudies.sasst import SASST, SELECTED, STATUSES, ComparisonPlan, SASSTReport, Slot
from agentstudies.sasst.geometry import calibrate_radii
from agentstudies.sasst.rules import CompositeFamily, DirectionTiltFamily, RuleFamily, ThresholdFamily

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
