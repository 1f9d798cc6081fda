"""Figures of the CIR paper's analyses, drawn from the result objects.

Every function returns a :class:`matplotlib.figure.Figure` and takes ``label``: a title
suffix (for example ``"simulated agent"``) so a chapter can mark simulated agents in
every figure. Differences are in percentage points.

====================================  =====================  =============================
Figure                                function                input
====================================  =====================  =============================
Delta by delay per condition          plot_delta_by_delay    :class:`RecoveryResult`
Policies vs never-refresh             plot_router            :class:`RouterEvaluation`
Rescue / harm by condition            plot_rescue_harm       :class:`RecoveryResult`
A flat figure's sentence              flat_note              :class:`RecoveryResult`
====================================  =====================  =============================
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from agentstudies.recovery._paired import CONDITION_ORDER, RecoveryResult
from agentstudies.recovery._evaluation import RouterEvaluation

__all__ = ["flat_note", "plot_delta_by_delay", "plot_rescue_harm", "plot_router"]


def plot_delta_by_delay(result: RecoveryResult, cohort: str, *, operation: str = "refresh", label: str = "",
                        ax=None):
    """Paired success difference Delta (points, with the bootstrap interval) against the
    recovery delay d, one line per observation condition, for one cohort and operation.

    Raises ``KeyError`` naming the available cohorts / operations if none match.
    """
    sel = _cells(result, cohort, operation)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.8))
    else:
        fig = ax.figure
    conds = [x for x in CONDITION_ORDER if x in set(sel["condition"])] + sorted(
        set(sel["condition"]) - set(CONDITION_ORDER))
    delays = sorted(sel["delay"].unique())
    width = 0.08 * (len(conds) - 1)
    for i, cond in enumerate(conds):
        g = sel[sel["condition"] == cond].set_index("delay").reindex(delays)
        x = np.arange(len(delays)) + (i * 0.08 - width / 2)
        yerr = np.vstack([g["delta"] - g["delta_ci_low"], g["delta_ci_high"] - g["delta"]])
        ax.errorbar(x, g["delta"], yerr=yerr, marker="o", capsize=3, label=cond)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(np.arange(len(delays)), [str(d) for d in delays])
    ax.set_xlabel("recovery delay d (environment actions)")
    ax.set_ylabel("Δ success vs no recovery (pp)")
    n = int(sel["n"].iloc[0])
    title = f"{operation}: Δ by delay, {cohort} (n = {n})"
    ax.set_title(f"{title} — {label}" if label else title, fontsize=10)
    ax.legend(title="condition", fontsize=8, title_fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def plot_router(evaluation: RouterEvaluation, *, label: str = "", ax=None):
    """Success difference vs never-refresh (points, bootstrap interval) for each policy,
    pooled over conditions, annotated with its intervention rate."""
    t = evaluation.table
    t = t[(t["condition"] == "all") & (t["policy"] != "never")]
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.4))
    else:
        fig = ax.figure
    y = np.arange(len(t))
    ax.errorbar(t["delta"], y, xerr=np.vstack([t["delta"] - t["ci_low"], t["ci_high"] - t["delta"]]), fmt="o",
                capsize=3)
    for yi, (_, r) in zip(y, t.iterrows()):  # one row each, right of the axes: labels never meet points
        ax.text(1.02, yi, f"{r['intervention_rate']:.1f}% refreshed", transform=ax.get_yaxis_transform(),
                va="center", ha="left", fontsize=8)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(y, list(t["policy"]))
    ax.set_xlabel("Δ success vs never refresh (pp), all conditions")
    title = "Routers on the evaluation pool"
    ax.set_title(f"{title} — {label}" if label else title, fontsize=10)
    fig.tight_layout()
    fig.subplots_adjust(right=0.78)
    return fig


def plot_rescue_harm(result: RecoveryResult, cohort: str, *, operation: str = "refresh", delay: int | None = None,
                     label: str = "", ax=None):
    """Rescue rate R / n and harm rate H / n (percent of the cell's tasks, with the
    task-bootstrap interval) as paired bars, one pair per observation condition, for one
    cohort, operation and delay (default: the smallest delay of the cohort).

    Rescue counts forks that fail without the operation and succeed with it, harm the
    reverse; Delta = rescue rate - harm rate (CIR paper, "Paired counterfactuals").
    Raises ``KeyError`` naming the available cohorts / operations / delays if none match.
    """
    sel = _cells(result, cohort, operation)
    delays = sorted(sel["delay"].unique())
    d = delays[0] if delay is None else delay
    if d not in delays:
        raise KeyError(f"delay={delay!r} not among this cell's delays {delays}")
    sel = sel[sel["delay"] == d]
    conds = [x for x in CONDITION_ORDER if x in set(sel["condition"])] + sorted(
        set(sel["condition"]) - set(CONDITION_ORDER))
    g = sel.set_index("condition").loc[conds]
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.6))
    else:
        fig = ax.figure
    x = np.arange(len(conds))
    for off, what, word, colour in ((-0.2, "rescue", "rescued (fails without, succeeds with)", "#0072B2"),
                                    (0.2, "harm", "harmed (succeeds without, fails with)", "#D55E00")):
        est = g[f"{what}_rate"].to_numpy(float)
        err = np.vstack([np.maximum(est - g[f"{what}_ci_low"].to_numpy(float), 0),
                         np.maximum(g[f"{what}_ci_high"].to_numpy(float) - est, 0)])
        ax.bar(x + off, est, width=0.4, yerr=err, capsize=3, color=colour, label=word)
    ax.set_xticks(x, conds)
    ax.set_ylim(0, max(ax.get_ylim()[1], 10.0))  # rates are >= 0; an all-zero run keeps a readable scale
    ax.set_xlabel("observation condition")
    ax.set_ylabel("share of tasks (%)")
    n = int(g["n"].iloc[0])
    title = f"{operation}: rescue and harm by condition, {cohort}, delay {d} (n = {n} tasks)"
    ax.set_title(f"{title}\n{label}" if label else title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def flat_note(result: RecoveryResult, cohort: str, *, operation: str = "refresh", delay: int | None = None) -> str:
    """One sentence for under a figure of ``cohort`` / ``operation`` (all delays, or one
    ``delay``): when no fork's outcome changed (rescue = harm = 0 in every cell) it says the
    figure is flat because nothing changed, not because of the drawing; otherwise it gives
    the rescue and harm counts summed over the cells.

    Raises ``KeyError`` naming the available cohorts / operations / delays if none match.
    """
    sel = _cells(result, cohort, operation)
    if delay is not None:
        if delay not in set(sel["delay"]):
            raise KeyError(f"delay={delay!r} not among this cell's delays {sorted(sel['delay'].unique())}")
        sel = sel[sel["delay"] == delay]
    rescued, harmed, n = int(sel["rescue"].sum()), int(sel["harm"].sum()), int(sel["n"].max())
    where = "at any delay or condition" if delay is None else f"under any condition at delay {delay}"
    if rescued == harmed == 0:
        return (f"In this run every value in the figure is 0: {operation} changed the outcome of none of the {n} "
                f"tasks of {cohort} {where}, so the figure is flat because nothing changed, not because of how "
                "it is drawn.")
    return (f"Summed over the cells of the figure, {operation} rescued {rescued} and harmed {harmed} "
            f"task outcome(s) of {cohort}.")


def _cells(result: RecoveryResult, cohort: str, operation: str):
    """The result's cells of one cohort and operation; ``KeyError`` naming what exists if none."""
    c = result.cells
    sel = c[(c["cohort"] == cohort) & (c["operation"] == operation)]
    if sel.empty:
        raise KeyError(f"no cells for cohort={cohort!r}, operation={operation!r}; cohorts "
                       f"{sorted(c['cohort'].unique())}, operations {sorted(c['operation'].unique())}")
    return sel
