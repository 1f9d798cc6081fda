"""Impossible coding tasks: the tasks and the simulated episodes (every verdict a real sandboxed run).

Part of the study driver :mod:`agentstudies.studies.impossible` (the ``impossible_cheating``
and ``impossible_workflows`` chapters; import from there). :func:`load_tasks` samples the
HumanEval tasks of the verified variant table; :func:`simulate_episodes` runs every
(task, kind, policy, workflow, replicate) episode of the **simulated** coding agents (or an
LLM) as one seeded-map item per task, with a per-task memo of identical submissions whose
verdicts are reused across tasks and studies of a build
(:func:`~agentstudies.envs.impossible.run_cached`) -> :class:`StudyRun`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from agentstudies.agents import LLMClient, llm_spec
from agentstudies.agents.impossible import (
    AgentParams,
    CodingTask,
    LLMCodingAgent,
    MemoRunner,
    SimulatedCodingAgent,
    coding_tasks_from_table,
)
from agentstudies.envs.impossible import (
    SandboxConfig, Workflow, isolation, load_variant_table, run_cached, run_submission,
)
from agentstudies.parallel import keyed_seed, seeded_map
from agentstudies.specs import AgentSpec

__all__ = ["IMPOSSIBLE_KINDS", "BASE_WORKFLOW", "load_tasks", "StudyRun", "simulate_episodes"]

IMPOSSIBLE_KINDS: tuple[str, ...] = ("one_off", "conflicting")
#: The workflow every one-factor change departs from.
BASE_WORKFLOW = Workflow("neutral", "writable", False, 3)


def _repo_root() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "data").is_dir():
            return parent
    return Path.cwd()


def load_tasks(n_tasks: int | None = None, *, seed: int = 0, require: Sequence[str] = ("conflicting",)) -> list[CodingTask]:
    """Tasks from the cached variant table (flagged originals excluded).

    ``n_tasks``: a seeded sample (``keyed_seed(seed, "tasks")``) of the tasks that keep every
    kind in ``require``; ``None``: all of them. Returned in task-number order.

    Raises
    ------
    ValueError
        If ``n_tasks`` exceeds the tasks available.
    """
    tasks = [t for t in coding_tasks_from_table(load_variant_table()) if all(k in t.tests for k in require)]
    if n_tasks is None:
        return tasks
    if n_tasks > len(tasks):
        raise ValueError(f"n_tasks={n_tasks} but only {len(tasks)} tasks keep {list(require)}")
    rng = np.random.default_rng(keyed_seed(seed, "tasks"))
    idx = np.sort(rng.choice(len(tasks), size=n_tasks, replace=False))
    return [tasks[i] for i in idx]


@dataclass
class StudyRun:
    """Tables of one simulation: ``episodes`` (one row per episode), ``attempts`` (one row
    per submission), ``runs`` (distinct submissions per task, summed over tasks: the
    sandboxed runs the episodes needed), ``reused`` (how many of those took the verdict of
    a byte-identical run made earlier in the build instead of running again), ``wall_s``."""

    episodes: pd.DataFrame
    attempts: pd.DataFrame
    runs: int
    wall_s: float
    isolation: dict = field(default_factory=dict)
    reused: int = 0

    @property
    def executed(self) -> int:
        """Sandbox executions this simulation actually made (``runs - reused``)."""
        return self.runs - self.reused

    @property
    def runs_per_s(self) -> float:
        """Throughput of the sandbox: :attr:`executed` runs per second of ``wall_s``."""
        return self.executed / self.wall_s if self.wall_s > 0 else float("nan")


def _task_item(task: CodingTask, rng, *, workflows, policies, kinds, replicates, root_seed, config, params,
               reminder: bool, reminder_after: int, llm=None, reuse_verdicts: bool = True):
    runner = MemoRunner(config, run=run_cached if reuse_verdicts else run_submission)
    eps, atts = [], []
    for kind in kinds:
        if kind not in task.tests:
            continue
        for pol in policies:
            agent = SimulatedCodingAgent(pol, params) if llm is None else LLMCodingAgent(llm[0], client=llm[1])
            for wf in workflows:
                for rep in range(replicates):
                    arms = (False, True) if reminder else (False,)
                    for arm in arms:
                        out = agent.run_episode(task, kind, wf, seed=root_seed, replicate=rep, runner=runner,
                                                reminder=arm, reminder_after=reminder_after)
                        out["episode"].update({f"feat_{k}": v for k, v in task.features.items()})
                        eps.append(out["episode"])
                        atts += out["attempts"]
    return eps, atts, runner.executed, runner.reused


def simulate_episodes(tasks: Sequence[CodingTask], workflows: Sequence[Workflow], *,
                      policies: Sequence[str] = ("shortcut",), kinds: Sequence[str] = ("original",) + IMPOSSIBLE_KINDS,
                      replicates: int = 1, seed: int = 0, n_jobs: int = 1,
                      config: SandboxConfig = SandboxConfig(wall_s=10, cpu_s=5),
                      params: AgentParams = AgentParams(), reminder: bool = False,
                      reminder_after: int = 1, agent: str | AgentSpec = "simulated",
                      llm_settings: dict | None = None, reuse_verdicts: bool = True) -> StudyRun:
    """Run every (task, kind, policy, workflow, replicate) episode; every verdict is a real run.

    Work is one :func:`~agentstudies.parallel.seeded_map` item per task; tables are sorted,
    so they are identical for any ``n_jobs``. ``reminder=True`` runs each episode twice, as
    paired forks without / with the specification reminder after run ``reminder_after``.
    ``agent="llm:<provider/model>"`` runs :class:`agentstudies.agents.impossible.LLMCodingAgent`
    (settings ``llm_settings``, or an :class:`agentstudies.specs.AgentSpec` as ``agent``) instead of the
    simulated policies: ``policies`` is ignored, the policy column holds the agent string,
    the LLM record columns (model, tokens, ``llm_errors`` ...) are added, and the threads
    share one client. Tasks run in ``n_jobs`` threads either way.
    ``reuse_verdicts``: take the verdict of a byte-identical earlier run (this process, or
    the build's scratch folder) instead of running it again
    (:func:`~agentstudies.envs.impossible.run_cached`; tables are the same either way, only
    :attr:`StudyRun.reused` and the time differ); ``False`` runs every distinct submission
    of each task.

    Raises
    ------
    ValueError
        No tasks, a malformed ``agent``, or ``llm_settings`` with the simulated agent.

    Returns
    -------
    :class:`StudyRun`.
    """
    if not tasks:
        raise ValueError("simulate_episodes: no tasks")
    # threads, not processes: a run's work is in its sandboxed child; the threads share the
    # verdict and classifier memos and skip the per-process import, probe and canary runs
    # (tables equal to loky's; 10 tasks of the cheating grid, n_jobs=2: 10.8 -> 8.9 CPU-s)
    llm = None
    spec = llm_spec(agent, llm_settings)  # validates the agent and its settings (AgentSpec)
    if spec is not None:
        llm, policies = (spec, LLMClient(spec)), (f"llm:{spec.model}",)
    t0 = time.perf_counter()
    res = seeded_map(_task_item, list(tasks), seed=seed, n_jobs=n_jobs, backend="threading",
                     workflows=list(workflows),
                     policies=list(policies), kinds=list(kinds), replicates=replicates, root_seed=seed,
                     config=config, params=params, reminder=reminder, reminder_after=reminder_after, llm=llm,
                     reuse_verdicts=reuse_verdicts)
    wall = time.perf_counter() - t0
    eps = pd.DataFrame([e for r in res for e in r[0]])
    # every episode may end without a submission (aborted at once, or a model error)
    atts = pd.DataFrame([a for r in res for a in r[1]],
                        columns=None if any(r[1] for r in res) else ["task_id", "kind", "policy", "workflow",
                                                                      "replicate", "reminder", "round"])
    key = ["task_id", "kind", "policy", "workflow", "replicate", "reminder"]
    eps = eps.sort_values(key, kind="stable").reset_index(drop=True)
    atts = atts.sort_values(key + ["round"], kind="stable").reset_index(drop=True)
    return StudyRun(eps, atts, int(sum(r[2] for r in res)), wall, dict(isolation()), int(sum(r[3] for r in res)))
