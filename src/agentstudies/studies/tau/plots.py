"""Figures of pass^k: one run's curve with its task-cluster intervals, and pass^k across
the τ²-bench leaderboard's published models (submitters' aggregates).

Titles say what is simulated and whose numbers these are; the values come from the
tables passed in (:func:`agentstudies.studies.tau.published.passk_table`,
:func:`agentstudies.studies.tau.leaderboard.passk_wide`,
:func:`~agentstudies.studies.tau.leaderboard.load_leaderboard`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["plot_passk_interval", "plot_passk_curves", "plot_cost_vs_passk"]


def plot_passk_interval(passk: pd.DataFrame, paper: pd.DataFrame | None = None, *, title: str):
    """pass^k against k for one set of runs with its interval (error bars) and, if given,
    the paper's value at each k as open markers labelled "paper".

    ``passk``: rows ``k, estimate, ci_low, ci_high, level, n`` (as
    :func:`agentstudies.studies.tau.published.passk_table` returns: τ-bench's unbiased
    pass^k, Yao et al. 2024 Eq. 1, with a percentile interval over resampled tasks);
    ``paper``: rows ``k, pass_k``. Raises ``KeyError`` naming a missing column.
    """
    import matplotlib.pyplot as plt

    need = {"k", "estimate", "ci_low", "ci_high", "level", "n"}
    if need - set(passk.columns):
        raise KeyError(f"passk lacks column(s) {sorted(need - set(passk.columns))}; expected passk_table's columns")
    t = passk.sort_values("k")
    est = t["estimate"].to_numpy(float)
    err = np.vstack([np.maximum(est - t["ci_low"].to_numpy(float), 0),
                     np.maximum(t["ci_high"].to_numpy(float) - est, 0)])
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    level, n = float(t["level"].iloc[0]), int(t["n"].iloc[0])
    ax.errorbar(t["k"], est, yerr=err, color="black", marker="o", capsize=3,
                label=f"this run ({level:.0%} task-cluster interval, {n} tasks)")
    if paper is not None:
        if {"k", "pass_k"} - set(paper.columns):
            raise KeyError(f"paper lacks column(s) {sorted({'k', 'pass_k'} - set(paper.columns))}")
        ax.plot(paper["k"], paper["pass_k"], ls="none", marker="s", ms=11, mfc="none", mew=1.5, color="#D55E00",
                label="paper", zorder=3)  # open and larger: visible around our point where they agree
    ax.set_xticks(t["k"].to_numpy())
    ax.set_xlabel("k (trials that must all succeed)")
    ax.set_ylabel("pass^k (share of tasks)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_passk_curves(wide: pd.DataFrame, domains, *, title: str):
    """pass^k against k, one panel per domain, one grey line per submission and the
    median over submissions in black (``wide``: rows with ``domain, pass_1 .. pass_4``)."""
    import matplotlib.pyplot as plt

    domains = [d for d in domains if d in set(wide["domain"])]
    fig, axes = plt.subplots(1, len(domains), figsize=(7.2, 3.1), sharey=True, squeeze=False)
    ks = np.arange(1, 5)
    for ax, dom in zip(axes[0], domains):
        g = wide[wide["domain"] == dom]
        vals = g[[f"pass_{k}" for k in ks]].to_numpy(float)
        for row in vals:
            ax.plot(ks, row, color="0.7", lw=0.8)
        ax.plot(ks, np.median(vals, axis=0), color="black", lw=2, marker="o", ms=3, label="median")
        ax.set_title(f"{dom.replace('_', ' ')}\n(n = {len(g)})", fontsize=8)
        ax.set_xticks(ks)
        ax.set_xlabel("k", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("pass^k (submitters' values)", fontsize=8)
    axes[0][0].set_ylim(0, 1)
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_cost_vs_passk(lb: pd.DataFrame, domains, k: int = 4, *, title: str):
    """The submitters' cost per task against pass^1 (open) and pass^k (filled), per domain,
    for submissions reporting a cost."""
    import matplotlib.pyplot as plt

    h = lb[lb["cost"].notna()]
    domains = [d for d in domains if d in set(h["domain"])]
    fig, axes = plt.subplots(1, len(domains), figsize=(7.2, 2.7), sharey=True, squeeze=False)
    for ax, dom in zip(axes[0], domains):
        g = h[h["domain"] == dom]
        ax.scatter(g["cost"], g["pass_1"], facecolors="none", edgecolors="C0", s=18, label="pass^1")
        gk = g[g[f"pass_{k}"].notna()]
        ax.scatter(gk["cost"], gk[f"pass_{k}"], color="C3", s=14, label=f"pass^{k}")
        ax.set_title(dom.replace("_", " "), fontsize=8)
        ax.set_xlabel("cost / task (USD)", fontsize=7)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("submitters' value", fontsize=8)
    axes[0][0].set_ylim(0, 1)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig
