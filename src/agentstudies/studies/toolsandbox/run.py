"""ToolSandbox-style workflow study: category / augmentation means with cluster intervals,
SASST over scenario features, and a milestone-frontier handoff (all agents simulated).

Drives :mod:`agentstudies.envs.toolsandbox` with the scripted agents of
:mod:`agentstudies.agents.toolsandbox` under the three shared workflow controllers and
hands plain tables to the methods (:mod:`agentstudies.sasst`, :mod:`agentstudies.handoff`).

* :func:`run_grid` -- every case x workflow x profile x seed (the per-case artifact:
  :func:`case_artifact`);
* :func:`group_means` -- mean similarity and turn count per category (ToolSandbox's
  multi-label tags or the primary category) or augmentation and workflow, with
  percentile intervals from a cluster bootstrap over *base scenarios* (the eight
  augmentations and all seeds of a base scenario are resampled together) ->
  :class:`GroupMeans`; ToolSandbox itself reports category means only, without repeats or
  intervals (Lu et al., 2024, Sec. 4);
* :func:`sasst_design` / :func:`run_sasst` -- one augmentation per base scenario (drawn
  with the seed) so clusters are independent; features = category tags, dependency depth,
  augmentation indicators, number of distraction tools, number of milestones; uniform and
  stressed slots for each enhanced workflow minus ReAct;
* :func:`run_handoff_study` -- Reach = arriving at the world state of milestone k - 1,
  Solve = finishing from the restored snapshot; profiles ``base`` and ``treated``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.agents import WORKFLOWS
from agentstudies.agents.toolsandbox import run_episodes, run_handoff
from agentstudies.envs.toolsandbox import AUGMENTATIONS, CATEGORIES, Case, Scenario, generate_scenarios, make_cases
from agentstudies.parallel import keyed_seed
from agentstudies.results import Result, ResultProvenance, make_provenance, tidy_rows
from agentstudies.stats import paired_cluster_bootstrap, percentile_interval

__all__ = [
    "BASELINE",
    "ENHANCED",
    "CASE_COLUMNS",
    "PAPER_DESIGN",
    "build_cases",
    "run_grid",
    "case_artifact",
    "GroupMeans",
    "group_means",
    "sasst_design",
    "sasst_features",
    "sasst_slots",
    "run_sasst",
    "run_handoff_study",
    "design_table",
    "plot_group_means",
    "profile_label",
    "AUGMENTATION_CONTRASTS",
    "TESTABILITY_COLUMNS",
    "testability",
    "paired_gap",
    "tag_gap",
    "toolsandbox_findings",
    "CATEGORY_PARAMS",
    "neutral_profile",
    "controls",

]

BASELINE = "ReAct"
ENHANCED = ("Plan + verifier", "Confirmation gate")

#: Columns of the per-case artifact table.
CASE_COLUMNS: tuple[str, ...] = (
    "case_id", "base_scenario", "category", "augmentation", "workflow", "profile", "seed", "similarity",
    "turn_count", "milestones_matched", "minefield_hit",
)

#: ToolSandbox's own design (Lu et al., 2024; shared/notes/toolsandbox.md) -- shown beside ours, labelled "paper".
PAPER_DESIGN: Mapping[str, Any] = {
    "scenarios": 129, "cases": 1032, "tools": 34, "message cap": 30, "insufficient info": 28, "runs per case": 1,
}


def build_cases(seed: int = 0, augmentations: Sequence[str] = AUGMENTATIONS,
                max_scenarios: int | None = None) -> tuple[list[Scenario], list[Case]]:
    """The base scenarios and their cases (see :func:`~agentstudies.envs.toolsandbox.make_cases`).

    ``max_scenarios`` keeps an evenly spaced subset (every template stays represented when
    it is at least the number of templates); ``None`` keeps all.
    """
    scenarios = generate_scenarios(seed)
    if max_scenarios is not None:
        if max_scenarios < 1:
            raise ValueError(f"max_scenarios must be >= 1 or None; got {max_scenarios}")
        idx = np.unique(np.linspace(0, len(scenarios) - 1, min(max_scenarios, len(scenarios))).round().astype(int))
        scenarios = [scenarios[i] for i in idx]
    return scenarios, make_cases(scenarios, augmentations, seed=seed)


def design_table(scenarios: Sequence[Scenario], cases: Sequence[Case], n_repeats: int = 1) -> pd.DataFrame:
    """Our design beside ToolSandbox's (rows: quantity; columns: this run, paper).

    ``scenarios`` = base scenarios, ``cases`` = scenarios x augmentations, ``insufficient
    info`` = base scenarios tagged insufficient information, ``runs per case`` = seeds per
    case, workflow and profile (``n_repeats``).
    """
    from agentstudies.envs.toolsandbox import TOOLS

    ours = {"scenarios": len(scenarios), "cases": len(cases), "tools": len(TOOLS), "message cap": 30,
            "insufficient info": sum("insufficient_information" in s.categories for s in scenarios),
            "runs per case": int(n_repeats)}
    return pd.DataFrame({"quantity": list(ours), "this run": list(ours.values()),
                         "paper": [PAPER_DESIGN[k] for k in ours]})


def run_grid(cases: Sequence[Case], *, seeds: Sequence[int], profiles: Sequence[str] = ("base",),
             workflows: Sequence[str] = WORKFLOWS, n_jobs: int = 1, backend: str = "loky", agent: str = "simulated",
             llm_settings: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Episode table (one row per case x workflow x profile x seed); see
    :data:`agentstudies.agents.toolsandbox.EPISODE_COLUMNS`.

    ``agent="llm:<provider/model>"`` replaces the simulated profiles by an LLM agent
    (:class:`agentstudies.agents.toolsandbox.LLMToolSandboxPolicy`; settings ``llm_settings``): the
    profile column holds the agent string and the LLM columns
    (:data:`agentstudies.agents.toolsandbox.AGENT_COLUMNS`) are added."""
    return run_episodes(cases, workflows=workflows, profiles=profiles, seeds=seeds, n_jobs=n_jobs, backend=backend,
                        agent=agent, llm_settings=llm_settings)


def profile_label(profile: str) -> str:
    """How a chapter names an agent profile: ``"base (simulated)"`` or, for
    ``"llm:<provider/model>"``, ``"LLM (<provider/model>)"``."""
    return f"LLM ({profile[len('llm:'):]})" if str(profile).startswith("llm:") else f"{profile} (simulated)"


def case_artifact(episodes: pd.DataFrame) -> pd.DataFrame:
    """The per-case table of the chapter: columns :data:`CASE_COLUMNS` and ``simulated``
    (True for the scripted profiles); an LLM agent's table adds ``model, llm_calls,
    input_tokens, output_tokens, llm_errors, llm_limit`` (errored episodes stay, flagged
    by a non-empty ``llm_errors``).

    Raises
    ------
    KeyError
        If a column is missing.
    """
    missing = [c for c in CASE_COLUMNS if c not in episodes.columns]
    if missing:
        raise KeyError(f"episode table lacks column(s) {missing}")
    if "simulated" not in episodes.columns:
        return episodes[list(CASE_COLUMNS)].assign(simulated=True).reset_index(drop=True)
    extra = ["simulated", "model", "llm_calls", "input_tokens", "output_tokens", "llm_errors", "llm_limit"]
    return episodes[list(CASE_COLUMNS) + extra].reset_index(drop=True)


# ------------------------------------------------------------- group means
@dataclass(frozen=True)
class GroupMeans(Result):
    """Means per group and workflow with base-scenario cluster-bootstrap intervals.

    ``to_frame()``: strata ``group_by`` (the grouping column name is in ``params``),
    ``group``, ``workflow``, ``profile``; estimands ``similarity`` (mean ToolSandbox
    similarity, fraction) and ``turn_count`` (mean turns); ``n`` = base scenarios.
    """

    rows: pd.DataFrame
    params: dict = field(default_factory=dict)
    provenance: ResultProvenance = field(default_factory=ResultProvenance)
    @property
    def title(self) -> str:  # type: ignore[override]
        """Names the agents: simulated, or the LLM (``LLM (<model>)``) of ``llm:`` profiles."""
        llm = sorted({profile_label(p) for p in self.rows.get("profile", ()) if str(p).startswith("llm:")})
        return f"ToolSandbox-style means by group ({', '.join(llm) or 'simulated agents'}), base-scenario cluster bootstrap"

    def _tidy(self) -> pd.DataFrame:
        return tidy_rows(self.rows, strata=("group", "workflow", "profile"))

    def wide(self, estimand: str = "similarity") -> pd.DataFrame:
        """Group x workflow table of ``estimate [ci_low, ci_high]`` strings (profiles labelled simulated)."""
        df = self.to_frame()
        df["profile"] = df["profile"].astype(str).map(profile_label)
        df = df[df["estimand"] == estimand]
        df = df.assign(cell=[f"{e:.2f} [{lo:.2f}, {hi:.2f}]" for e, lo, hi in zip(df["estimate"], df["ci_low"], df["ci_high"])])
        return df.pivot_table(index=["group", "profile"], columns="workflow", values="cell", aggfunc="first")


def group_means(episodes: pd.DataFrame, by: str = "category", *, multilabel: bool = False, n_draws: int = 2000,
                level: float = 0.95, seed: int = 0) -> GroupMeans:
    """Mean similarity and turn count per ``by`` x workflow x profile, with intervals.

    Parameters
    ----------
    episodes : episode table (needs ``base_scenario, workflow, profile, similarity,
        turn_count`` and ``by``; with ``multilabel`` the ``categories`` column, ``|``-joined)
    by : grouping column (``category``, ``augmentation``, ...)
    multilabel : count a case in every ToolSandbox category tag it carries
    n_draws, level, seed : cluster bootstrap over base scenarios (every case, workflow and
        seed of a base scenario moves together); ``n_draws=0`` skips the intervals

    Raises
    ------
    KeyError
        Missing columns. ValueError: NaN similarity or turn count.
    """
    need = ["base_scenario", "workflow", "profile", "similarity", "turn_count", "categories" if multilabel else by]
    missing = [c for c in need if c not in episodes.columns]
    if missing:
        raise KeyError(f"episode table lacks column(s) {missing}")
    for col in ("similarity", "turn_count"):
        if episodes[col].isna().any():
            raise ValueError(f"column {col!r} has NaN values")
    df = episodes.copy()
    if multilabel:
        df["group"] = df["categories"].str.split("|")
        df = df.explode("group")
        df = df[df["group"].isin(CATEGORIES)]
    else:
        df["group"] = df[by].astype(str)
    clusters = pd.Index(sorted(df["base_scenario"].unique()))
    rows = []
    rng_root = keyed_seed(seed, "toolsandbox-group-means", by, multilabel)
    cells = list(df.groupby(["group", "workflow", "profile"], sort=True))
    for j, ((g, w, p), d) in enumerate(cells):
        s = d.groupby("base_scenario").agg(sim=("similarity", "sum"), turns=("turn_count", "sum"), k=("similarity", "size"))
        s = s.reindex(clusters, fill_value=0.0)
        s = s[s["k"] > 0]
        sums = s[["sim", "turns", "k"]].to_numpy(float)
        point = sums.sum(axis=0)
        est = {"similarity": point[0] / point[2], "turn_count": point[1] / point[2]}
        ci = {"similarity": (np.nan, np.nan), "turn_count": (np.nan, np.nan)}
        if n_draws and len(s) > 1:
            reps = paired_cluster_bootstrap(
                sums, lambda t: np.column_stack([t[:, 0] / t[:, 2], t[:, 1] / t[:, 2]]),
                n_draws=n_draws, rng=np.random.default_rng(keyed_seed(rng_root, j)))
            lo, hi = percentile_interval(reps, level)
            ci = {"similarity": (lo[0], hi[0]), "turn_count": (lo[1], hi[1])}
        for e in ("similarity", "turn_count"):
            rows.append({"group": g, "workflow": w, "profile": p, "estimand": e, "estimate": est[e],
                         "ci_low": ci[e][0], "ci_high": ci[e][1], "side": "two-sided" if n_draws else "",
                         "level": level, "n": len(s)})
    return GroupMeans(pd.DataFrame(rows), params={"by": "categories (multi-label)" if multilabel else by,
                                                  "n_draws": n_draws, "level": level, "seed": seed},
                      provenance=make_provenance(seed=seed, episodes=episodes))


# ------------------------------------------------------------------- SASST
def sasst_design(cases: Sequence[Case], seed: int = 0) -> list[Case]:
    """One case per base scenario, its augmentation drawn with ``keyed_seed(seed, "sasst-aug", id)``
    (clusters stay independent: no base scenario appears twice)."""
    by: dict[str, dict[str, Case]] = {}
    for c in cases:
        by.setdefault(c.scenario.scenario_id, {})[c.augmentation] = c
    out = []
    for sid in sorted(by):
        augs = sorted(by[sid])
        k = int(np.random.default_rng(keyed_seed(seed, "sasst-aug", sid)).integers(len(augs)))
        out.append(by[sid][augs[k]])
    return out


def sasst_features(cases: Sequence[Case]) -> pd.DataFrame:
    """Numeric pre-execution features per case (index ``task_id`` = case id): one 0/1 column
    per category tag, ``dependency_depth``, ``n_milestones``, ``n_distractors``,
    ``scrambled`` and one 0/1 column per augmentation. Constant columns are dropped."""
    rows = []
    for c in cases:
        sc = c.scenario
        r = {"task_id": c.case_id, "dependency_depth": float(sc.dependency_depth),
             "n_milestones": float(len(sc.milestones)), "n_distractors": float(c.n_distractors),
             "scrambled": float(c.view.scramble is not None)}
        for cat in CATEGORIES:
            r[f"cat_{cat}"] = float(cat in sc.categories)
        for aug in AUGMENTATIONS:
            r[f"aug_{aug}"] = float(c.augmentation == aug)
        rows.append(r)
    X = pd.DataFrame(rows).set_index("task_id")
    return X.loc[:, X.std(axis=0) > 0]


STRUCTURED = ("dependency_depth", "n_milestones", "n_distractors", "scrambled")


def sasst_slots(*, min_ess: float = 20.0, density_cap: float = 5.0, stability_threshold: float = 0.6):
    """Four slots: uniform benefit and stressed fragility of each enhanced workflow vs ReAct."""
    from agentstudies.sasst import Slot

    slots = []
    for w in ENHANCED:
        slots.append(Slot(f"Uniform: {w} − ReAct", {w: 1, BASELINE: -1}, sign=+1, min_ess=min_ess, density_cap=density_cap))
    for w in ENHANCED:
        slots.append(Slot(f"Stress: {w} − ReAct", {w: 1, BASELINE: -1}, sign=-1, family="features", radius=None,
                          min_ess=min_ess, density_cap=density_cap, stability_threshold=stability_threshold))
    return slots


def run_sasst(episodes: pd.DataFrame, features: pd.DataFrame, *, seed: int = 0, n_draws: int = 2000,
              n_stability: int = 100, level: float = 0.95, min_ess: float = 20.0, density_cap: float = 5.0,
              stability_threshold: float = 0.6):
    """SASST on ``task_id, seed, workflow, similarity`` episodes (one profile) over ``features``.

    Threshold rules on every feature (category tags, dependency depth, augmentation,
    milestones); a seeded 50/50 split of cases (= base scenarios) stratified by primary
    category; ``n_draws`` Gaussian multiplier draws, joint one-sided bounds at ``level``.
    Returns the :class:`~agentstudies.sasst.SASSTReport`.

    Raises
    ------
    KeyError
        Missing columns; ValueError from the engine on invalid tables.
    """
    from agentstudies.sasst import SASST, ComparisonPlan, split_clusters
    from agentstudies.sasst.rules import ThresholdFamily

    need = ["case_id", "seed", "workflow", "similarity", "category"]
    missing = [c for c in need if c not in episodes.columns]
    if missing:
        raise KeyError(f"episode table lacks column(s) {missing}")
    if episodes.get("profile") is not None and episodes["profile"].nunique() > 1:
        raise ValueError("run_sasst takes one profile's episodes; filter on 'profile' first")
    ep = episodes.rename(columns={"case_id": "task_id", "similarity": "score"})[["task_id", "seed", "workflow", "score"]]
    strata = episodes.drop_duplicates("case_id").set_index("case_id")["category"]
    split = split_clusters(list(strata.index), discovery_fraction=0.5, seed=seed, strata=strata)
    family = ThresholdFamily(quantiles=(1 / 3, 1 / 2, 2 / 3), lifts=(3.0,))
    eng = SASST(ComparisonPlan(tuple(WORKFLOWS)), sasst_slots(min_ess=min_ess, density_cap=density_cap,
                                                             stability_threshold=stability_threshold),
                {"features": family}, level=level, n_draws=n_draws, n_stability=n_stability, seed=seed)
    return eng.run(ep, features.loc[sorted(ep["task_id"].unique())], split)


# ------------------------------------------------------------------ handoff
def run_handoff_study(cases: Sequence[Case], *, seeds: Sequence[int], n_draws: int = 2000, seed: int = 0,
                      workflow: str = "ReAct", n_jobs: int = 1, backend: str = "loky"):
    """Handoff on the milestone frontier: episode table and :func:`analyze_handoff` result.

    Profiles ``base`` (reacher/solver label ``base``) and ``treated``; only cases with at
    least two milestones. ``task_type`` (the bootstrap strata) is the scenario category;
    categories with fewer than two base scenarios are pooled into one stratum
    ``"other (pooled)"`` (and everything into one stratum if that is still a single task),
    so no stratum has a single task (see :func:`pool_small_strata`). Returns
    ``(episodes, HandoffResult)``.
    """
    from agentstudies.handoff import analyze_handoff

    df = run_handoff(cases, seeds=seeds, profiles=("base", "treated"), workflow=workflow, n_jobs=n_jobs, backend=backend)
    df = pool_small_strata(df)
    return df, analyze_handoff(df, base="base", treated="treated", n_draws=n_draws, seed=seed)


def pool_small_strata(df: pd.DataFrame, column: str = "task_type", min_tasks: int = 2) -> pd.DataFrame:
    """Pool values of ``column`` held by fewer than ``min_tasks`` tasks into one stratum.

    A bootstrap stratum with one task contributes no resampling variance. Types with too
    few distinct ``task_id`` become ``"other (pooled)"``; if that pooled stratum itself
    has fewer than ``min_tasks`` tasks, every task goes into a single stratum ``"all"``.
    Returns a copy; the table is otherwise unchanged.
    """
    out = df.copy()
    counts = out.groupby(column)["task_id"].nunique()
    small = counts.index[counts < min_tasks]
    if len(small):
        out[column] = out[column].where(~out[column].isin(small), "other (pooled)")
        if out.loc[out[column] == "other (pooled)", "task_id"].nunique() < min_tasks:
            out[column] = "all"
    return out


# ------------------------------------------------------------------- plots
def plot_group_means(result: GroupMeans, estimand: str = "similarity", *, title: str = "", ax=None):
    """Dot-and-interval plot: one row per group, one colour per workflow (simulated agents)."""
    import matplotlib.pyplot as plt

    df = result.to_frame()
    df = df[df["estimand"] == estimand]
    groups = sorted(df["group"].unique())
    workflows = [w for w in WORKFLOWS if w in set(df["workflow"])]
    profiles = sorted(df["profile"].unique())
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6.8, 0.42 * len(groups) * len(profiles) + 1.6))
    y0 = np.arange(len(groups) * len(profiles))[::-1]
    labels = [f"{g} ({p})" if len(profiles) > 1 else g for g in groups for p in profiles]
    colors = ("tab:gray", "tab:blue", "tab:orange")
    for k, w in enumerate(workflows):
        d = df[df["workflow"] == w].set_index(["group", "profile"])
        est = np.array([d.loc[(g, p), "estimate"] if (g, p) in d.index else np.nan for g in groups for p in profiles])
        lo = np.array([d.loc[(g, p), "ci_low"] if (g, p) in d.index else np.nan for g in groups for p in profiles])
        hi = np.array([d.loc[(g, p), "ci_high"] if (g, p) in d.index else np.nan for g in groups for p in profiles])
        yy = y0 + (k - 1) * 0.22
        err = np.vstack([np.clip(est - lo, 0, None), np.clip(hi - est, 0, None)])
        ax.errorbar(est, yy, xerr=np.nan_to_num(err), fmt="o", ms=4, capsize=2, color=colors[k % 3], label=w)
    ax.set_yticks(y0, labels, fontsize=8)
    ax.set_xlabel({"similarity": "mean similarity (ToolSandbox score)", "turn_count": "mean turn count"}.get(estimand, estimand))
    ax.legend(frameon=False, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=3)
    who = ", ".join(profile_label(p) for p in profiles) if any(str(p).startswith("llm:") for p in profiles) else "simulated agents"
    ax.set_title(title or f"{estimand} by {result.params.get('by')} ({who}, {result.params.get('level', 0.95):.0%} cluster intervals)",
                 fontsize=9)
    fig.tight_layout()
    return fig


# ------------------------------------------------- findings
#: (arm, reference) augmentation contrasts: distraction tools against the base allow-list,
#: each scramble against the +3 distraction tools it is applied on.
AUGMENTATION_CONTRASTS: tuple[tuple[str, str], ...] = (
    ("3_distraction_tools", "base"), ("10_distraction_tools", "base"), ("all_tools", "base"),
    ("tool_name_scrambled", "3_distraction_tools"), ("tool_description_scrambled", "3_distraction_tools"),
    ("arg_description_scrambled", "3_distraction_tools"), ("arg_type_scrambled", "3_distraction_tools"),
)

#: Columns of :func:`testability` (``testability.csv``).
TESTABILITY_COLUMNS: tuple[str, ...] = ("kind", "arm", "reference", "profile", "n_pairs", "share_action_changed",
                                        "share_outcome_changed")

_TRAJECTORY = ("tool_calls", "failed_calls", "blocked_calls", "declined_calls", "turn_count", "messages")


def _pairs(episodes: pd.DataFrame, column: str, arm: str, reference: str) -> pd.DataFrame:
    """Episodes of ``arm`` joined to those of ``reference`` on everything else that defines a cell."""
    keys = ["base_scenario", "profile", "seed"] + [c for c in ("augmentation", "workflow") if c != column]
    cols = keys + ["similarity", *[c for c in _TRAJECTORY if c in episodes.columns]]
    a = episodes.loc[episodes[column] == arm, cols]
    b = episodes.loc[episodes[column] == reference, cols]
    return a.merge(b, on=keys, suffixes=("_arm", "_ref"), validate="one_to_one")


def testability(episodes: pd.DataFrame) -> pd.DataFrame:
    """Share of paired episodes in which each intervention changed the agent's actions / the outcome.

    Interventions: each augmentation contrast of :data:`AUGMENTATION_CONTRASTS` (pairs: same
    base scenario, workflow, profile, seed) and each enhanced workflow against ReAct (same
    case, profile, seed). ``share_action_changed``: the trajectory's counts of tool calls,
    failed, blocked and declined calls, turns or messages differ (a lower bound on the share
    in which some action changed); ``share_outcome_changed``: the similarity differs.
    Columns :data:`TESTABILITY_COLUMNS`, one row per intervention and profile (only
    interventions whose two arms are both in the table).

    Raises
    ------
    KeyError
        A missing column (``base_scenario, profile, seed, augmentation, workflow, similarity``).
    """
    need = ["base_scenario", "profile", "seed", "augmentation", "workflow", "similarity", *_TRAJECTORY]
    missing = [c for c in need if c not in episodes.columns]
    if missing:
        raise KeyError(f"episode table lacks column(s) {missing}")
    rows = []
    contrasts = [("augmentation", a, r) for a, r in AUGMENTATION_CONTRASTS] + [("workflow", w, BASELINE) for w in ENHANCED]
    for kind, arm, ref in contrasts:
        present = set(episodes[kind])
        if arm not in present or ref not in present:
            continue
        for prof, d in episodes.groupby("profile", sort=True):
            pr = _pairs(d, kind, arm, ref)
            if pr.empty:
                continue
            acted = np.zeros(len(pr), dtype=bool)
            for c in _TRAJECTORY:
                acted |= (pr[f"{c}_arm"] != pr[f"{c}_ref"]).to_numpy()
            rows.append({"kind": kind, "arm": arm, "reference": ref, "profile": prof, "n_pairs": len(pr),
                         "share_action_changed": float(acted.mean()),
                         "share_outcome_changed": float((pr["similarity_arm"] != pr["similarity_ref"]).mean())})
    return pd.DataFrame(rows, columns=list(TESTABILITY_COLUMNS))


def _cluster_mean_ci(values: pd.Series, clusters: pd.Series, *, n_draws: int, level: float, rng) -> tuple[float, float, float, int]:
    """Mean of per-cluster means of ``values`` and its percentile cluster-bootstrap interval."""
    per = values.groupby(clusters.to_numpy()).mean().sort_index().to_numpy(float)
    k = len(per)
    if k < 2 or n_draws < 1:
        return float(per.mean()) if k else float("nan"), float("nan"), float("nan"), k
    idx = rng.integers(0, k, size=(n_draws, k))
    reps = per[idx].mean(axis=1)
    a = (1 - level) / 2
    return float(per.mean()), float(np.quantile(reps, a)), float(np.quantile(reps, 1 - a)), k


def paired_gap(episodes: pd.DataFrame, column: str, arm: str, reference: str, *, n_draws: int = 2000,
               level: float = 0.95, seed: int = 0) -> tuple[float, float, float, int]:
    """Mean similarity gap ``arm - reference`` over paired episodes, averaged within base
    scenario first, with a percentile bootstrap over base scenarios.

    Returns ``(estimate, ci_low, ci_high, n_scenarios)`` (fractions of similarity).

    Raises
    ------
    ValueError
        No paired episodes.
    """
    pr = _pairs(episodes, column, arm, reference)
    if pr.empty:
        raise ValueError(f"no paired episodes of {column}={arm!r} and {reference!r}")
    rng = np.random.default_rng(keyed_seed(seed, "toolsandbox-gap", column, arm, reference))
    return _cluster_mean_ci(pr["similarity_arm"] - pr["similarity_ref"], pr["base_scenario"], n_draws=n_draws,
                            level=level, rng=rng)


def tag_gap(episodes: pd.DataFrame, tag: str, *, n_draws: int = 2000, level: float = 0.95,
            seed: int = 0) -> tuple[float, float, float, int]:
    """Mean similarity of scenarios tagged ``tag`` minus that of the others (scenario means),
    with a stratified percentile bootstrap over base scenarios. Returns
    ``(estimate, ci_low, ci_high, n_scenarios)``.

    Raises
    ------
    ValueError
        No scenario with, or none without, the tag.
    """
    per = episodes.groupby("base_scenario").agg(sim=("similarity", "mean"), cats=("categories", "first"))
    has = per["cats"].str.split("|").map(lambda t: tag in t).to_numpy()
    x, y = per["sim"].to_numpy(float)[has], per["sim"].to_numpy(float)[~has]
    if not len(x) or not len(y):
        raise ValueError(f"tag {tag!r}: need scenarios with and without it; got {len(x)} / {len(y)}")
    rng = np.random.default_rng(keyed_seed(seed, "toolsandbox-tag", tag))
    est = float(x.mean() - y.mean())
    if n_draws < 1 or len(x) < 2 or len(y) < 2:
        return est, float("nan"), float("nan"), len(per)
    reps = x[rng.integers(0, len(x), (n_draws, len(x)))].mean(1) - y[rng.integers(0, len(y), (n_draws, len(y)))].mean(1)
    a = (1 - level) / 2
    return est, float(np.quantile(reps, a)), float(np.quantile(reps, 1 - a)), len(per)


_PAPER_NOTE = "lower (ToolSandbox's direction; its numbers are not in /work/shared, so none is shown)"

#: The scripted agent's per-category mistake probability behind each category claim
#: (:class:`agentstudies.agents.toolsandbox.ToolAgentProfile`); 0 is its neutral value.
CATEGORY_PARAMS: Mapping[str, str] = {"state_dependency": "p_dependency_giveup",
                                      "canonicalization": "p_canonicalization",
                                      "insufficient_information": "p_insufficient"}


def neutral_profile(profile: str = "base"):
    """The scripted ``profile`` with every per-category mistake probability of
    :data:`CATEGORY_PARAMS` at 0 (its neutral value), under the same name, so its episodes
    share the profile's random numbers (:func:`agentstudies.agents.toolsandbox.run_episodes`
    keys them by profile name) and differ only where a category probability acted.

    Raises
    ------
    KeyError
        An unknown profile name.
    """
    from dataclasses import replace as _replace

    from agentstudies.agents.toolsandbox import get_profile

    return _replace(get_profile(profile), **{p: 0.0 for p in CATEGORY_PARAMS.values()})


def _toolsandbox_rows(ep: pd.DataFrame, testab: pd.DataFrame, *, profile: str, n_draws: int, level: float,
                      seed: int) -> list:
    """The rows of :func:`toolsandbox_findings` before their basis is stated."""
    from agentstudies.findings import interval_finding, untestable_finding

    rows = []
    for arm, ref in AUGMENTATION_CONTRASTS:
        if arm not in set(ep["augmentation"]) or ref not in set(ep["augmentation"]):
            continue
        text = f"{arm} lowers similarity against {ref}"
        t = testab[(testab["kind"] == "augmentation") & (testab["arm"] == arm) & (testab["reference"] == ref)
                   & (testab["profile"] == profile)]
        if len(t) and float(t["share_outcome_changed"].iloc[0]) == 0.0:
            rows.append(untestable_finding(text, _PAPER_NOTE, measured=0.0, why=(
                f"{arm} changed the outcome in 0% of {int(t['n_pairs'].iloc[0])} paired episodes "
                f"(actions in {100 * float(t['share_action_changed'].iloc[0]):.0f}%)")))
            continue
        est, lo, hi, n = paired_gap(ep, "augmentation", arm, ref, n_draws=n_draws, level=level, seed=seed)
        rows.append(interval_finding(text, _PAPER_NOTE, est, lo, hi, n, paper_side="below", level=level,
                                     quantity=f"similarity gap {arm} - {ref}"))
    tagged = ep.groupby("base_scenario")["categories"].first().str.split("|")
    for tag in CATEGORY_PARAMS:
        k = int(tagged.map(lambda t: tag in t).sum())
        if k in (0, len(tagged)):
            rows.append(untestable_finding(f"{tag} scenarios score lower than the rest", _PAPER_NOTE, measured=float(k),
                                           why=f"{k} of {len(tagged)} base scenarios carry the tag: no contrast exists"))
            continue
        est, lo, hi, n = tag_gap(ep, tag, n_draws=n_draws, level=level, seed=seed)
        rows.append(interval_finding(f"{tag} scenarios score lower than the rest", _PAPER_NOTE, est, lo, hi, n,
                                     paper_side="below", level=level, quantity=f"similarity gap {tag} - others"))
    return rows


def _basis_of(text: str, profile: str) -> tuple[str, str, tuple[str, ...]]:
    """(basis, why, built-in names) of a row of :func:`toolsandbox_findings` for ``profile``."""
    if str(profile).startswith("llm:"):
        return "measured", "an LLM agent: its code does not contain the effect", ()
    from agentstudies.agents.toolsandbox import get_profile

    prof = get_profile(profile)
    tag = next((t for t in CATEGORY_PARAMS if text.startswith(f"{t} ")), None)
    if tag is not None:
        p = CATEGORY_PARAMS[tag]
        if getattr(prof, p) > 0:
            return "built in", f"the scripted agent fails {tag} scenarios with probability `{p}`", (
                f"ToolAgentProfile.{p}",)
        return "measured", f"`{p}` is 0 for this profile: what is left comes from the scenarios and the reading", ()
    if prof.tool_choice == "registry":
        return "built in", "the registry agent confuses tools with per-augmentation probabilities", (
            "ToolAgentProfile.confuse_*",)
    return ("measured", "no probability acts on the augmentation: the scripted reader ranks the shown tools by "
                        "their words (`rank_tools`), so a gap is what its reading gets wrong", ())


def toolsandbox_findings(episodes: pd.DataFrame, testab: pd.DataFrame, *, profile: str, workflow: str = BASELINE,
                         neutral: pd.DataFrame | None = None, n_draws: int = 2000, level: float = 0.95,
                         seed: int = 0):
    """The chapter's findings (:class:`agentstudies.findings.Findings`) for one profile and workflow.

    One row per augmentation contrast present ("<arm> lowers similarity against
    <reference>": 95% cluster interval of the paired gap below 0; ``not testable here`` when
    :func:`testability` says the arm changed no outcome for this profile) and one per
    category tag ToolSandbox singles out as hard (state dependency, canonicalization,
    insufficient information: tagged minus untagged scenario means below 0).

    Basis: a category claim of a scripted profile whose probability of
    :data:`CATEGORY_PARAMS` is above 0 is ``built in``; with ``neutral`` (the episodes of
    :func:`neutral_profile` under ``workflow``, same cases and seeds) its verdict is the
    neutral run's, the simulated gap shown apart
    (:func:`agentstudies.findings.neutral_control`). An augmentation claim of a reading
    profile is ``measured`` (no probability acts on the augmentation); of a registry
    profile ``built in``; an LLM's rows are ``measured``.

    Raises
    ------
    ValueError
        Unknown profile or workflow.
    """
    from agentstudies.findings import Findings, neutral_control

    ep = episodes[(episodes["profile"] == profile) & (episodes["workflow"] == workflow)]
    if ep.empty:
        raise ValueError(f"no episodes of profile {profile!r} under workflow {workflow!r}")
    kw = dict(profile=profile, n_draws=n_draws, level=level, seed=seed)
    rows = _toolsandbox_rows(ep, testab, **kw)
    neutral_rows = {}
    if neutral is not None:
        nep = neutral[(neutral["profile"] == profile) & (neutral["workflow"] == workflow)]
        if nep.empty:
            raise ValueError(f"no neutral episodes of profile {profile!r} under workflow {workflow!r}")
        neutral_rows = {r.finding: r for r in _toolsandbox_rows(nep, testability(nep), **kw)}
    out = []
    for r in rows:
        basis, why, names = _basis_of(r.finding, profile)
        if basis == "built in" and r.finding in neutral_rows:
            setting = f"{', '.join('`' + n.split('.')[-1] + '`' for n in names)} = 0, every other draw the same"
            out.append(neutral_control(neutral_rows[r.finding], r, built_in=names, setting=setting))
        else:
            out.append(replace(r, basis=basis, built_in=names, why="; ".join(x for x in (why, r.why) if x)))
    return Findings.build(out, seed=seed, title=f"ToolSandbox-style findings ({profile_label(profile)}, {workflow})",
                          inputs={"episodes": ep}, profile=profile, workflow=workflow, level=level, n_draws=n_draws)


def controls(n_scenarios: int, *, replicates: int = 200, n_draws: int = 1000, level: float = 0.95, seed: int = 0,
             drop: float = 0.3, p_drop: float = 0.1) -> pd.DataFrame:
    """Planted and null subjects for the augmentation-gap rule (``controls.csv``).

    Each replicate draws ``n_scenarios`` reference similarities ``U(0.3, 0.7)`` (no
    clipping below). *Planted*: the arm loses ``drop`` on a ``p_drop`` share of scenarios
    (true mean gap ``-drop * p_drop``). *Null*: the arm moves by ``+/- drop`` on a ``p_drop``
    share, each sign equally likely (true mean gap 0, the same spread). Both go through the
    statistic of :func:`paired_gap` (scenario means, percentile cluster bootstrap) and the
    findings rule (interval below 0). Returns the rows of
    :func:`agentstudies.findings.control_row` (power, false-positive rate, exact intervals).

    Raises
    ------
    ValueError
        ``drop`` would leave [0, 1] or fewer than 2 scenarios.
    """
    from agentstudies.findings import control_row, judge

    if not 0 < drop <= 0.3 or n_scenarios < 2:
        raise ValueError(f"need 0 < drop <= 0.3 (no clipping) and n_scenarios >= 2; got {drop}, {n_scenarios}")
    verdicts: dict[bool, list[str]] = {True: [], False: []}
    clusters = pd.Series(np.arange(n_scenarios))
    for r in range(replicates):
        rng = np.random.default_rng(keyed_seed(seed, "toolsandbox-controls", r))
        ref = rng.uniform(0.3, 0.7, n_scenarios)
        hit = rng.random(n_scenarios) < p_drop
        sign = np.where(rng.random(n_scenarios) < 0.5, -1.0, 1.0)
        for planted in (True, False):
            arm = ref - drop * hit if planted else ref + sign * drop * hit
            _, lo, hi, _ = _cluster_mean_ci(pd.Series(arm - ref), clusters, n_draws=n_draws, level=level,
                                            rng=np.random.default_rng(keyed_seed(seed, "toolsandbox-controls-boot", r, planted)))
            verdicts[planted].append(judge(lo, hi, paper_side="below"))
    rule = f"{100 * level:.0f}% cluster-bootstrap CI of the paired similarity gap below 0"
    fam = "an augmentation lowers similarity"
    return pd.DataFrame([
        control_row(fam, f"planted gap (-{drop:g} on {100 * p_drop:.0f}% of {n_scenarios} scenarios)", verdicts[True],
                    planted=True, rule=rule, level=level),
        control_row(fam, f"null (+/-{drop:g} on {100 * p_drop:.0f}% of {n_scenarios} scenarios)", verdicts[False],
                    planted=False, rule=rule, level=level),
    ])
