"""τ²-bench leaderboard: the figures of pass^k across published models (submitters' aggregates).

Titles say that nothing is simulated and whose numbers these are; the values come from
the tables passed in (:func:`agentstudies.studies.tau.leaderboard.passk_wide`,
:func:`~agentstudies.studies.tau.leaderboard.load_leaderboard`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["plot_passk_curves", "plot_cost_vs_passk"]


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
