"""The "Bring your own Inspect logs" chapter's findings.

The chapter converts real Inspect logs (τ²-bench retail, Inspect's mock model playing a
*simulated* agent with two fixed workflows) into an episode table, runs SASST and pass^k
on it, and counts errored samples three ways. :func:`log_findings` judges what the chapter
claims from those tables: exact criteria for the conversion and the abstention, exact
(Clopper-Pearson) or task-bootstrap intervals for rates, and ``not testable here`` from a
measurement (no errored sample, no task whose replicates disagree).

Bases: the conversion, pass^k's drop and the error counting are ``arithmetic`` (true by
the reader's construction or by definition); the idle agent's passes rest on τ²'s own
evaluator (``measured``: the agent does nothing, so a pass is the environment's); SASST's
abstention on a small log is a ``method`` property.

Source: τ-bench's pass^k (Yao et al., 2024, §5); the τ chapters' evaluator
audit (degenerate agents pass some τ² tasks).
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np
import pandas as pd

from agentstudies.parallel import keyed_seed
from agentstudies.stats import percentile_interval

__all__ = ["IDLE_WORKFLOW", "log_findings", "passk_drop_by_task"]

#: The simulated workflow that does nothing (declines) in the chapter's mock logs.
IDLE_WORKFLOW = "decline"


def passk_drop_by_task(episodes: pd.DataFrame, k: int, *, success: float = 1.0) -> pd.DataFrame:
    """Per (workflow, task): trials ``n``, successes ``c``, pass^1 ``c/n``, pass^k
    ``C(c, k) / C(n, k)`` (τ-bench's unbiased estimator) and ``drop`` = pass^1 − pass^k,
    and ``flips`` (the task's replicates disagree). Tasks with fewer than ``k`` trials
    are refused.

    Raises
    ------
    KeyError
        A missing column (``workflow, task_id, score``). ValueError: ``k < 1``, NaN scores,
        or a task with fewer than ``k`` trials (named).
    """
    miss = [c for c in ("workflow", "task_id", "score") if c not in episodes]
    if miss:
        raise KeyError(f"episode table lacks column(s) {miss}")
    if k < 1:
        raise ValueError(f"k must be >= 1; got {k}")
    if episodes["score"].isna().any():
        raise ValueError("unscored rows (NaN score): decide how errored samples count first (on_error)")
    g = episodes.assign(ok=episodes["score"].astype(float) >= success).groupby(["workflow", "task_id"])["ok"]
    t = pd.DataFrame({"n": g.size(), "c": g.sum().astype(int)}).reset_index()
    short = t[t["n"] < k]
    if len(short):
        raise ValueError(f"task(s) {short[['workflow', 'task_id']].head(3).to_dict('records')} have fewer than k={k} trials")
    t["pass1"] = t["c"] / t["n"]
    t["passk"] = [comb(int(c), k) / comb(int(n), k) for c, n in zip(t["c"], t["n"])]
    t["drop"] = t["pass1"] - t["passk"]
    t["flips"] = (t["c"] > 0) & (t["c"] < t["n"])
    return t


def _passk_finding(episodes: pd.DataFrame, k: int, *, level: float, n_draws: int, seed: int) -> Any:
    """The *pass^k falls below pass^1* finding of :func:`log_findings` (task bootstrap of
    the mean drop; ``not testable here`` for ``k < 2`` or when no task's replicates disagree)."""
    from agentstudies.findings import NONNEGATIVE, interval_finding, untestable_finding

    t = passk_drop_by_task(episodes, k)
    n_flip = int(t["flips"].sum())
    name = f"pass^{k} falls below pass^1"
    paper = "pass^k drops as k grows (τ-bench, Yao et al., 2024)"
    if k < 2:
        return (untestable_finding(name, paper, measured=float(k), basis="arithmetic",
                                       why=f"k = {k}: pass^k is pass^1 by definition (run with k >= 2)"))
    elif n_flip == 0:
        return (untestable_finding(name, paper, measured=0.0, basis="arithmetic",
                                       why=f"the replicates of no task disagree (0 of {len(t)}), so "
                                           f"pass^{k} equals pass^1 by construction"))
    else:
        d = t.pivot_table(index="task_id", columns="workflow", values="drop").fillna(0.0)
        x = d.to_numpy(float)
        m = x.shape[1]
        rng = np.random.default_rng(keyed_seed(seed, "inspect_logs", "passk_drop"))
        idx = rng.integers(0, len(x), size=(n_draws, len(x)))
        reps = x[idx].sum(axis=(1, 2)) / (len(x) * m)
        lo, hi = percentile_interval(reps, level)
        return (interval_finding(name, paper, float(x.mean()), float(lo), float(hi), len(x), paper_side="above",
                                     level=level, quantity=f"mean pass^1 − pass^{k} (task bootstrap)",
                                     domain=NONNEGATIVE, basis="arithmetic",
                                     why=f"pass^{k} <= pass^1 by definition; above 0 once some task's replicates "
                                         "disagree"))


def log_findings(episodes: pd.DataFrame, n_samples: int, report: Any, counted: pd.DataFrame, k: int, *,
                 level: float = 0.95, n_draws: int = 2000, seed: int = 0, idle: str = IDLE_WORKFLOW):
    """The chapter's findings from its tables.

    - *every Inspect sample becomes one episode row*: exact, ``len(episodes) == n_samples``
      (Inspect's own count);
    - *an idle agent passes some τ² retail tasks*: the exact interval of the share of tasks
      the ``idle`` workflow passes in at least one replicate lies above 0 (the τ chapters'
      evaluator audit);
    - *SASST certifies nothing from a log this small*: exact, no slot of ``report`` is
      ``confirmed`` (failure is evidence against the chapter's reading, so contradicted);
    - *pass^k falls below pass^1* (τ-bench): the task-bootstrap percentile interval of the
      mean of pass^1 − pass^k over (workflow, task) lies above 0; ``not testable here`` when
      no task's replicates disagree (measured: the number of such tasks, 0), since pass^k
      then equals pass^1 by construction, or when ``k < 2`` (measured: k);
    - *excluding errored samples raises the pass rate*: exact, the ``exclude`` rate exceeds
      the ``zero`` rate in ``counted``; ``not testable here`` when no sample errored.

    Parameters
    ----------
    episodes : the converted table (``workflow, task_id, seed, score``).
    n_samples : Inspect's count of samples in the logs.
    report : the :class:`agentstudies.sasst.SASSTReport` of the chapter.
    counted : the error-counting table indexed by ``on_error`` with ``flagged rows`` and
        ``pass rate``.

    Returns
    -------
    :class:`agentstudies.findings.Findings`.

    Raises
    ------
    KeyError
        A missing column or ``on_error`` row; ValueError as :func:`passk_drop_by_task`.

    Length: five claims, each with its rule, basis and the measurement that can set it
    aside, in the chapter's order.
    """
    from agentstudies.findings import (NONNEGATIVE, PROPORTION, Findings, binomial_interval, exact_finding,
                                       interval_finding, untestable_finding)

    arith = dict(basis="arithmetic")
    rows = [exact_finding("every Inspect sample becomes one episode row", "Inspect's own sample count",
                          len(episodes), n_samples, holds=bool(len(episodes) == n_samples),
                          rule=f"rows = samples ({len(episodes)} vs {n_samples})", basis="arithmetic",
                          why="the reader writes one row per sample by construction; the count checks it did")]
    per = passk_drop_by_task(episodes, 1)
    idle_t = per[per["workflow"] == idle]
    if not len(idle_t):
        raise KeyError(f"no episodes of the idle workflow {idle!r}; workflows: {sorted(per['workflow'].unique())}")
    hits = int((idle_t["c"] > 0).sum())
    rate, lo, hi = binomial_interval(hits, len(idle_t), level=level)
    rows.append(interval_finding("an idle agent passes some τ² retail tasks",
                                 "degenerate agents pass some τ² tasks (the τ chapters' evaluator audit)", rate, lo,
                                 hi, len(idle_t), paper_side="above", level=level, domain=PROPORTION,
                                 quantity=f"share of tasks the {idle!r} agent passes (exact)", basis="measured",
                                 why="the idle agent does nothing, so a pass is τ²'s own evaluator's verdict"))
    status = report.table["status"]
    n_conf = int((status == "confirmed").sum())
    rows.append(exact_finding("SASST certifies nothing from a log this small",
                              "support checks refuse to certify from few clusters (SASST, Appendix C)", n_conf,
                              len(status), holds=n_conf == 0, rule="0 confirmed slots (SASST status)",
                              basis="method", why="SASST's support checks on a log of few task clusters"))
    rows.append(_passk_finding(episodes, k, level=level, n_draws=n_draws, seed=seed))
    for mode in ("zero", "exclude"):
        if mode not in counted.index:
            raise KeyError(f"error-counting table lacks on_error={mode!r}; it has {list(counted.index)}")
    n_err = int(counted.loc["zero", "flagged rows"])
    name = "excluding errored samples raises the pass rate"
    paper = "excluding failed samples conditions on the model not failing (this book's counting rule)"
    if n_err == 0:
        rows.append(untestable_finding(name, paper, measured=0.0, why="no sample errored", **arith))
    else:
        z, e = float(counted.loc["zero", "pass rate"]), float(counted.loc["exclude", "pass rate"])
        rows.append(exact_finding(name, paper, e - z, n_err, holds=bool(e > z), criterion=(">", 0.0),
                                  domain=NONNEGATIVE, rule=f"exclude rate above zero rate ({e:.3f} vs {z:.3f})",
                                  why="passes / (n - errors) >= passes / n by arithmetic", **arith))
    return Findings.build(rows, seed=seed, title="inspect_logs findings", level=level, n_draws=n_draws)
