"""Figures of the CIR paper's analyses, drawn from the result objects.

Every function returns a :class:`matplotlib.figure.Figure` and takes ``label``: a title
suffix (for example ``"simulated agent"``) so a chapter can mark simulated agents in
every figure. Differences are in percentage points.

====================================  =====================  =============================
Figure                                function                input
====================================  =====================  =============================
Delta by delay per condition          plot_delta_by_delay    :class:`RecoveryResult`
Policies vs never-refresh             plot_router            :class:`RouterEvaluation`
====================================  =====================  =============================
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from agentstudies.recovery._paired import CONDITION_ORDER, RecoveryResult
from agentstudies.recovery._evaluation import RouterEvaluation

__all__ = ["plot_delta_by_delay", "plot_router"]


def plot_delta_by_delay(result: RecoveryResult, cohort: str, *, operation: str = "refresh", label: str = "",
                        ax=None):
    """Paired success difference Delta (points, with the bootstrap interval) against the
    recovery delay d, one line per observation condition, for one cohort and operation.

    Raises ``KeyError`` naming the available cohorts / operations if none match.
    """
    c = result.cells
    sel = c[(c["cohort"] == cohort) & (c["operation"] == operation)]
    if sel.empty:
        raise KeyError(f"no cells for cohort={cohort!r}, operation={operation!r}; cohorts "
                       f"{sorted(c['cohort'].unique())}, operations {sorted(c['operation'].unique())}")
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
