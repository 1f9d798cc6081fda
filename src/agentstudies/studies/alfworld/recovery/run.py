"""The ALFWorld recovery study: cohort pools, the run over every task, and model cost.

:func:`cohort_pools` builds the four disjoint generated pools, :func:`run_recovery_study`
runs the fork harness (:func:`agentstudies.studies.alfworld.recovery.harness.run_task`,
its protocol in that module's docstring) on every task in parallel and collects the
tables of :class:`RecoveryStudy`; :func:`llm_cost` sums what a model-calling agent cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd

from agentstudies.agents import LLM_RECORD_COLUMNS
from agentstudies.parallel import seeded_map
from agentstudies.recovery import FEATURE_NAMES
from agentstudies.specs import AgentSpec
from agentstudies.studies.alfworld.recovery.harness import (COHORT_DESIGNS, POLICY_FEATURES, STALE_ADMISSIBLE, _env,
                                                            run_task)

__all__ = ["CHECKPOINTS", "RecoveryStudy", "cohort_pools", "llm_cost", "run_recovery_study"]

#: The checkpoints the recovery chapter's ``checkpoint`` parameter accepts (checked before a
#: run): the shipped memory checkpoint, the trained SFT / SFT-equal / RL and the untrained
#: hand-set weights, each loaded by
#: :meth:`agentstudies.agents.alfworld.LearnedAlfworldPolicy.load`.
CHECKPOINTS: tuple[str, ...] = ("BC-memory", "RL", "SFT", "SFT-equal", "hand")


# ------------------------------------------------------------------ pools
def _gen_item(item, rng):  # seeded_map signature; generation is keyed by (split, type, index, seed)
    from agentstudies.envs.alfworld.generate import generate_game

    split, tt, k, seed = item
    return generate_game(split, tt, k, seed, env=_env(48))


def _manifest_sizes(seed: int) -> dict[str, int]:
    """Tasks per type the embedded manifest holds for each split at ``seed`` (largest pool)."""
    from agentstudies.envs.alfworld.pools import load_manifest

    out: dict[str, int] = {}
    for val in load_manifest().values():
        if int(val.get("seed", -1)) == int(seed):
            out[val["split"]] = max(out.get(val["split"], 0), int(val.get("tasks_per_type", 0)))
    return out


def cohort_pools(per_type: Mapping[str, int], *, seed: int = 2029,
                 task_types: Sequence[str] | None = None, n_jobs: int = 1) -> dict[str, list[dict[str, Any]]]:
    """Disjoint generated task pools per cohort (``{cohort: n tasks per task type}``).

    ``primary``, ``mechanism``, ``evaluation`` draw from the ``valid_seen`` floor plans,
    ``independent`` from ``valid_unseen`` (disjoint floor plans); within ``valid_seen`` the
    cohorts take disjoint generator indices (primary first, then mechanism, then
    evaluation), so no task appears in two cohorts. Games inside the embedded manifest
    (``data/alfworld/pools.json``, seed 2029: 44 per type of ``valid_seen`` and 17 of
    ``valid_unseen``, enough for the paper profile) are rebuilt from their recorded
    generator attempt and checked against their SHA-256 (milliseconds each); the rest are
    generated with the full winnability checks (slow: the planner runs once per game).
    Task ids are prefixed with the cohort. ``task_types`` restricts the task types (default all six); ``n_jobs``
    generates games beyond the manifest in parallel (same games for any value). Raises
    ``ValueError`` for an unknown cohort or task type, or a negative size.
    """
    from agentstudies.envs.alfworld.generate import SHORT_NAMES, TASK_TYPES
    from agentstudies.envs.alfworld.pools import load_pool

    unknown = set(per_type) - set(COHORT_DESIGNS)
    if unknown:
        raise ValueError(f"unknown cohort(s) {sorted(unknown)}; expected some of {list(COHORT_DESIGNS)}")
    types = tuple(TASK_TYPES if task_types is None else task_types)
    bad = [t for t in types if t not in TASK_TYPES]
    if bad:
        raise ValueError(f"unknown task type(s) {bad}; expected some of {TASK_TYPES}")
    offsets = {"valid_seen": 0, "valid_unseen": 0}
    cache: dict[str, dict[str, Any]] = {}
    out: dict[str, list[dict[str, Any]]] = {}
    plan: list[tuple[str, str, str, int]] = []
    for cohort in ("primary", "mechanism", "evaluation", "independent"):
        n = int(per_type.get(cohort, 0))
        if n < 0:
            raise ValueError(f"{cohort}: negative pool size {n}")
        if n == 0:
            continue
        split = "valid_unseen" if cohort == "independent" else "valid_seen"
        start = offsets[split]
        offsets[split] += n
        for tt in types:
            for k in range(start, start + n):
                plan.append((cohort, split, tt, k))
    held = _manifest_sizes(seed)
    todo = [(split, tt, k, seed) for _, split, tt, k in plan if k >= held.get(split, 0)]
    made = dict(zip(todo, seeded_map(_gen_item, todo, seed=seed, n_jobs=n_jobs))) if todo else {}
    for cohort, split, tt, k in plan:
        if k < held.get(split, 0):
            if split not in cache:
                need = 1 + max(kk for _, sp, _, kk in plan if sp == split and kk < held[split])
                cache[split] = {x["task_id"]: x for x in load_pool(split, need, seed, task_types=types)}
            g = cache[split][f"{split}-{SHORT_NAMES[tt]}-{k:02d}"]
        else:
            g = made[(split, tt, k, seed)]
        g = dict(g)
        g["task_id"] = f"{cohort}/{g['task_id']}"
        g["cohort"] = cohort
        out.setdefault(cohort, []).append(g)
    return out



def _task_item(item, rng, **kw):  # seeded_map signature; the task's seeds are keyed, rng unused
    game, design = item
    return run_task(game, kw["policy"], seed=kw["root_seed"], cap_scale=kw["cap_scale"],
                    refresh_commands=kw["refresh_commands"], look_format=kw["look_format"],
                    stale_admissible=kw["stale_admissible"], **design)


# ------------------------------------------------------------------ study
@dataclass(frozen=True)
class RecoveryStudy:
    """Tables of one run (module docstring), parameters and timing (seconds)."""

    tasks: pd.DataFrame
    paired: pd.DataFrame
    decisions: pd.DataFrame
    params: Mapping[str, Any] = field(default_factory=dict)
    timing: Mapping[str, float] = field(default_factory=dict)

    @property
    def feature_names(self) -> list[str]:
        """Router feature columns of :attr:`decisions`."""
        return list(FEATURE_NAMES) + list(POLICY_FEATURES)

    def analysis_table(self) -> pd.DataFrame:
        """The paired table with analysis cohorts for :func:`agentstudies.recovery.analyze_paired`:
        each run cohort as ``<cohort>-complete`` (all prefix-feasible tasks) and, for
        primary / independent, ``<cohort>-factual-success`` (the factual-success subset)."""
        p = self.paired
        parts = []
        for c in p["cohort"].unique():
            g = p[p["cohort"] == c]
            parts.append(g.assign(cohort=f"{c}-complete"))
            if c in ("primary", "independent"):
                parts.append(g[g["factual_success"]].assign(cohort=f"{c}-factual-success"))
        cols = ["cohort", "task_id", "condition", "delay", "operation", "y_without", "y_with"]
        return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)

    def cohort_sizes(self) -> pd.DataFrame:
        """Per cohort: tasks run, prefix-feasible, factual successes among them."""
        t = self.tasks
        g = t.groupby("cohort", sort=False)
        return pd.DataFrame({
            "tasks": g.size(),
            "prefix_feasible": g["feasible"].sum(),
            "feasible_factual_success": g.apply(lambda x: int((x["feasible"] & x["factual_success"]).sum()),
                                                include_groups=False),
            "factual_success_rate": g["factual_success"].mean() * 100,
        }).reset_index()


def run_recovery_study(
    pools: Mapping[str, Sequence[Mapping[str, Any]]],
    policy: Any = None,
    *,
    agent: str | AgentSpec | None = None,
    llm_settings: Mapping[str, Any] | None = None,
    seed: int = 0,
    cap_scale: float = 1.0,
    designs: Mapping[str, Mapping[str, Sequence]] | None = None,
    refresh_commands: Sequence[str] = ("look",),
    look_format: str = "raw",
    stale_admissible: str = "stale",
    n_jobs: int = 1,
) -> RecoveryStudy:
    """Run the protocol on every cohort's pool (module docstring).

    Parameters
    ----------
    pools : ``{cohort: [game, ...]}`` (e.g. :func:`cohort_pools`).
    policy : an agent with ``reset(task_id, seed, role)`` and ``act(observation) -> str``
        that reads only ``observation["goal"]`` / ``observation["observation"]``; it is
        deep-copied per task and per branch. Give it, or a model as ``agent``.
    agent, llm_settings : a model as the agent instead of ``policy``:
        ``agent="llm:<provider/model>"`` with its settings in ``llm_settings`` (the chapter's
        flat parameters), or one :class:`agentstudies.specs.AgentSpec` (then no
        ``llm_settings``); built by :func:`agentstudies.agents.llm_spec` (every field
        checked) into an :class:`agentstudies.agents.alfworld.LLMAlfworldPolicy`, the same
        policy :func:`agentstudies.agents.alfworld.make_llm_policy` gives.
        ``agent="simulated"`` (or ``None``) keeps ``policy``.
    seed : root seed (env resets and the policy's streams derive from it by key).
    cap_scale : multiplies the paper's caps (49 turns, 64 environment actions).
    designs : per cohort ``conditions`` / ``delays`` / ``operations`` (default
        :data:`COHORT_DESIGNS`).
    refresh_commands : the environment query of a refresh (paper: one ``look``); each
        command costs one environment action; ``refresh`` appends the replies,
        ``ablated`` issues the same commands and hides the replies.
    look_format : how a refresh reply is shown (:data:`LOOK_FORMATS`): ``"raw"`` (the
        paper: verbatim) or ``"arrival"`` (the harness rewrites ALFWorld's look reply
        "You are facing the X" as "You arrive at X." -- for agents that only parse the
        arrival form; a harness-side formatting choice, reported with the results).
    stale_admissible : the admissible list shown with a stale observation
        (:data:`STALE_ADMISSIBLE`): ``"stale"`` (default) the list recorded with that
        earlier observation; ``"current"`` the true state's list (ablation; module docstring).
    n_jobs : parallel tasks (:func:`agentstudies.parallel.seeded_map`); tables do not
        depend on it. A policy that calls a model (an
        :class:`agentstudies.agents.alfworld.LLMAlfworldPolicy`, e.g. from
        :func:`agentstudies.agents.alfworld.make_llm_policy`) runs tasks one at a time.

    With a policy that calls a model the model is never re-asked for the shared prefix:
    the fork state's policy is the factual run's own copy after ``t0`` actions (``tasks``
    column ``policy_clone = "copied"``; the engine state is still a verified replay), and
    the tables gain :data:`agentstudies.agents.LLM_RECORD_COLUMNS` (``tasks``: the
    factual run's record; ``paired``: the with-recovery branch's, plus
    ``llm_errors_without`` / ``llm_limit_without`` of the no-recovery branch). A failed
    call is flagged there and the branch scored by the engine; nothing is dropped.

    Raises ``ValueError`` for an empty pool set, an unknown cohort without a design,
    duplicate task ids, an unknown ``stale_admissible``, no agent (neither ``policy`` nor
    a model), both ``policy`` and a model, ``llm_settings`` beside an ``AgentSpec`` or
    with the simulated agent, or a malformed agent setting (named).
    """
    policy = _study_policy(policy, agent, llm_settings)
    if stale_admissible not in STALE_ADMISSIBLE:
        raise ValueError(f"stale_admissible={stale_admissible!r}; expected one of {STALE_ADMISSIBLE}")
    designs = {**COHORT_DESIGNS, **(designs or {})}
    items = []
    for cohort, games in pools.items():
        if cohort not in designs:
            raise ValueError(f"cohort {cohort!r} has no design; give designs[{cohort!r}]")
        for g in games:
            g = dict(g)
            g["cohort"] = cohort
            items.append((g, dict(designs[cohort])))
    if not items:
        raise ValueError("no tasks: every pool is empty")
    ids = [g["task_id"] for g, _ in items]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate task ids across the cohorts' pools; cohorts must be disjoint")
    calls_model = hasattr(policy, "episode_record")
    if calls_model:  # a model client does not cross process boundaries: tasks run one at a time
        n_jobs = 1
    t0 = time.perf_counter()
    res = seeded_map(_task_item, items, seed=seed, n_jobs=n_jobs, policy=policy, cap_scale=cap_scale, root_seed=seed,
                     refresh_commands=tuple(refresh_commands), look_format=look_format,
                     stale_admissible=stale_admissible)
    wall = time.perf_counter() - t0
    tasks = pd.DataFrame([r["task"] for r in res])
    paired = pd.DataFrame([x for r in res for x in r["paired"]],
                          columns=["cohort", "task_id", "condition", "delay", "operation", "y_without", "y_with",
                                   "active", "factual_success", "changed", "changed_next"]
                          + (list(LLM_RECORD_COLUMNS) + ["llm_errors_without", "llm_limit_without"]
                             if calls_model else []))
    dec = pd.DataFrame([x for r in res for x in r["decisions"]])
    timing = dict(wall_seconds=wall, worker_seconds=float(sum(r["seconds"] for r in res)), tasks=len(items))
    params = dict(seed=seed, cap_scale=cap_scale, n_jobs=n_jobs, refresh_commands=list(refresh_commands),
                  look_format=look_format, stale_admissible=stale_admissible, designs={k: {kk: list(vv) for kk, vv in v.items()}
                                                                         for k, v in designs.items() if k in pools},
                  policy=getattr(policy, "params", repr(policy)), pool_sizes={k: len(v) for k, v in pools.items()})
    return RecoveryStudy(tasks, paired, dec, params, timing)


def _study_policy(policy: Any, agent: str | AgentSpec | None, llm_settings: Mapping[str, Any] | None) -> Any:
    """The agent of :func:`run_recovery_study`: ``policy``, or the model ``agent`` names."""
    from agentstudies.agents import llm_spec
    from agentstudies.agents.alfworld import LLMAlfworldPolicy

    spec = llm_spec("simulated" if agent is None else agent, llm_settings)  # names a bad field
    if spec is None:
        if policy is None:
            raise ValueError("no agent: give policy (e.g. LearnedAlfworldPolicy.load('RL')) or a model as "
                             "agent='llm:<provider>/<model>' / an AgentSpec")
        return policy
    if policy is not None:
        raise ValueError(f"both policy and agent={spec.model!r} given; give the policy or the model, not both")
    return LLMAlfworldPolicy(spec)


def llm_cost(study: RecoveryStudy) -> pd.DataFrame:
    """Per cohort, what a model-calling agent cost and where it failed: tasks, the
    factual runs' model calls and input / output tokens, tasks whose factual run had a
    model error or a generation limit, forks, and forks with a model error in either
    branch. Forks' own calls are not summed (each branch's record starts at the
    episode's start, so the shared prefix would be counted once per fork). Raises
    ``KeyError`` when the study ran without a model (no model-call columns)."""
    t, p = study.tasks, study.paired
    if "llm_calls" not in t or "llm_errors" not in p:
        raise KeyError("the study has no model-call columns: run it with an LLM policy")
    t = t.assign(error=t["llm_errors"].fillna("") != "", limit=t["llm_limit"].fillna("") != "")
    p = p.assign(error=(p["llm_errors"].fillna("") != "") | (p["llm_errors_without"].fillna("") != ""))
    out = t.groupby("cohort", sort=False).agg(tasks=("task_id", "size"), factual_calls=("llm_calls", "sum"),
                                              factual_input_tokens=("input_tokens", "sum"),
                                              factual_output_tokens=("output_tokens", "sum"),
                                              factual_errors=("error", "sum"), factual_limits=("limit", "sum"))
    forks = p.groupby("cohort", sort=False).agg(forks=("task_id", "size"), forks_with_errors=("error", "sum"))
    return out.join(forks).fillna(0).reset_index()

