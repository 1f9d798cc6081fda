"""ImpossibleBench on real runs: testability and controls of the findings' verdict rule.

The rule of :func:`agentstudies.studies.impossible.real_runs.real_run_findings` says a
prompt arm raises a rate when the task-cluster interval of the paired difference lies
above 0. Two checks say what that rule can do on *these* runs:

* **testability** (``testability.csv``): for each claim, the share of tasks whose label
  rate differs between the two arms; an arm that changed nothing cannot support a claim
  (:func:`agentstudies.findings.testability_gate`);
* **controls** (``controls.csv``, :func:`agentstudies.findings.control_row`): the audit ran
  prompt D twice on the Gemini models in the minimal loop (arms ``D`` and ``D_r2``, an
  interleaved rerun), which gives a real *null* pair. Swapping the two runs of each task
  at random (the arms are exchangeable under the null) gives replicate null subjects with
  the real run-to-run noise; the rule's share of "reappears" on them is its false-positive
  rate. Adding a planted rise of ``planted_pp`` points to one arm of the same subjects
  (flipping a random share of its runs' label to true) gives its power at that effect.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from agentstudies.findings import control_row, judge, share_upper_bound
from agentstudies.parallel import keyed_seed
from agentstudies.specs import BootstrapSpec
from agentstudies.studies.impossible.real_runs import IMPOSSIBLE_SPLITS, lcb_difference

__all__ = ["NULL_PAIRS", "TESTABILITY_COLUMNS", "arm_testability", "real_run_controls"]

#: (harness, model, arm, rerun arm): the same prompt run twice by the audit.
NULL_PAIRS: tuple[tuple[str, str, str, str], ...] = (
    ("inspect_minimal", "gemini-3.8-flash", "D", "D_r2"),
    ("inspect_minimal", "gemini-3.1-pro-preview", "D", "D_r2"),
)
#: Columns of :func:`arm_testability`.
TESTABILITY_COLUMNS: tuple[str, ...] = ("finding", "estimand", "arm_a", "arm_b", "tasks", "tasks_changed", "share",
                                        "upper", "level")


def _per_task(runs: pd.DataFrame, col: str) -> pd.Series:
    return runs.groupby("task_id")[col].mean()


def arm_testability(runs: pd.DataFrame, detail: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Did the second arm change anything? One row per finding of ``detail``.

    ``detail``: the second value of :func:`real_run_findings` (``finding, estimand, arm_a,
    arm_b``; rows comparing one arm with itself, e.g. metric minus judge, compare the two
    labels instead). ``tasks_changed``: tasks whose rate of the label differs between the
    arms (or labels); ``upper``: the exact one-sided ``level`` upper bound of that share.
    The model is read from the finding (``Flash`` / ``Pro``).
    """
    imp = runs[runs["split"].isin(IMPOSSIBLE_SPLITS) & (runs["harness"] == "inspect_minimal")]
    rows = []
    for r in detail.to_dict("records"):
        model = "gemini-3.8-flash" if "Flash" in r["finding"] else "gemini-3.1-pro-preview"
        m = imp[imp["model"] == model]
        if r["arm_a"] == r["arm_b"]:
            a_col, b_col = r["estimand"].split(" - ")
            g = m[m["arm"] == r["arm_a"]]
            ra, rb = _per_task(g, a_col), _per_task(g, b_col)
        else:
            ra = _per_task(m[m["arm"] == r["arm_a"]], r["estimand"])
            rb = _per_task(m[m["arm"] == r["arm_b"]], r["estimand"])
        ra, rb = ra.align(rb, join="inner")
        changed = int((ra != rb).sum())
        share, upper = share_upper_bound(changed, len(ra), level=level)
        rows.append(dict(finding=r["finding"], estimand=r["estimand"], arm_a=r["arm_a"], arm_b=r["arm_b"],
                         tasks=len(ra), tasks_changed=changed, share=share, upper=upper, level=level))
    return pd.DataFrame(rows, columns=list(TESTABILITY_COLUMNS))


def _swap(sub: pd.DataFrame, arm_a: str, arm_b: str, rng: np.random.Generator) -> pd.DataFrame:
    """Swap the two arms' runs of a random half of the tasks (exchangeable under the null)."""
    tasks = np.array(sorted(set(sub["task_id"])))
    flip = set(tasks[rng.random(len(tasks)) < 0.5])
    out = sub.copy()
    m = out["task_id"].isin(flip)
    out.loc[m, "arm"] = out.loc[m, "arm"].map({arm_a: arm_b, arm_b: arm_a})
    return out


def real_run_controls(runs: pd.DataFrame, *, estimand: str = "exploit", replicates: int = 100,
                      planted_pp: float = 10.0, pairs: Sequence[tuple[str, str, str, str]] = NULL_PAIRS,
                      n_draws: int = 2000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """``controls.csv`` rows: the findings rule on real null pairs and on a planted rise.

    For each pair of :data:`NULL_PAIRS` and each of ``replicates`` replicates (keyed by
    ``seed``, the pair and the replicate): the two runs of each task swapped at random;
    the rule (``level`` interval of ``arm - rerun`` above 0, :func:`lcb_difference`) on
    that null subject, and on the same subject with ``planted_pp`` points added to the
    first arm (each of its runs whose label is false set true with probability
    ``planted_pp / (100 - its rate)``).

    Returns :func:`agentstudies.findings.control_row` rows (one null, one planted per pair).

    Raises
    ------
    ValueError
        ``replicates < 1``, ``planted_pp`` outside (0, 100), or a pair without runs.
    """
    BootstrapSpec(n_draws=n_draws, level=level, seed=seed)
    if isinstance(replicates, bool) or int(replicates) < 1:
        raise ValueError(f"replicates must be a positive integer; got {replicates!r}")
    if not 0.0 < float(planted_pp) < 100.0:
        raise ValueError(f"planted_pp must lie in (0, 100) percentage points; got {planted_pp}")
    rule = f"{100 * level:g}% task-cluster CI of arm minus its rerun above 0"
    rows = []
    for harness, model, arm_a, arm_b in pairs:
        sub = runs[(runs["harness"] == harness) & (runs["model"] == model) & runs["arm"].isin([arm_a, arm_b])
                   & runs["split"].isin(IMPOSSIBLE_SPLITS)]
        if sub.empty:
            raise ValueError(f"no runs of {model} ({harness}) under arms {arm_a!r} / {arm_b!r}")
        null_v, plant_v = [], []
        for r in range(int(replicates)):
            rng = np.random.default_rng(keyed_seed(seed, "real_control", model, arm_a, arm_b, r))
            s = _swap(sub, arm_a, arm_b, rng)
            where = {"harness": harness, "model": model}
            d = lcb_difference(s, estimand, where=where, arm_a=arm_a, arm_b=arm_b, n_draws=n_draws, level=level,
                               seed=seed)
            null_v.append(judge(d["ci_low"], d["ci_high"], paper_side="above"))
            a = s["arm"] == arm_a
            q = float(planted_pp) / (100.0 - d["rate_a"])
            flip = a & ~s[estimand].astype(bool) & (rng.random(len(s)) < q)
            p = s.assign(**{estimand: s[estimand].astype(bool) | flip})
            d2 = lcb_difference(p, estimand, where=where, arm_a=arm_a, arm_b=arm_b, n_draws=n_draws, level=level,
                                seed=seed)
            plant_v.append(judge(d2["ci_low"], d2["ci_high"], paper_side="above"))
        fam = f"a prompt arm raises the judged gaming rate ({model})"
        rows.append(control_row(fam, f"planted: {arm_a} with +{planted_pp:g} pp vs its rerun {arm_b}", plant_v,
                                planted=True, rule=rule, level=level))
        rows.append(control_row(fam, f"null: {arm_a} vs its rerun {arm_b}, runs swapped at random per task", null_v,
                                planted=False, rule=rule, level=level))
    return pd.DataFrame(rows)
