"""Impossible coding tasks: the chapters' figures (rates with intervals, the classifier's
confusion matrix, rescue / harm of the reminder).

Part of the study driver :mod:`agentstudies.studies.impossible` (import from there).
Titles say what is simulated; the numbers come from the results passed in.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentstudies.studies.impossible.rates import RateResult

__all__ = ["plot_rates", "plot_confusion", "plot_difficulty", "plot_rescue_harm"]


def plot_rates(result: RateResult, x: str, hue: str, *, title: str):
    """Point estimates with interval bars, one series per ``hue`` (title says simulated)."""
    import matplotlib.pyplot as plt

    df = result.to_frame()
    fig, ax = plt.subplots(figsize=(7, 3.4))
    hues = list(dict.fromkeys(df[hue]))
    xs = list(dict.fromkeys(df[x]))
    width = 0.8 / max(1, len(hues))
    for j, h in enumerate(hues):
        g = df[df[hue] == h].set_index(x).reindex(xs)
        pos = np.arange(len(xs)) + (j - (len(hues) - 1) / 2) * width
        ax.errorbar(pos, g["estimate"], yerr=[g["estimate"] - g["ci_low"], g["ci_high"] - g["estimate"]],
                    fmt="o", capsize=3, label=str(h))
    ax.set_xticks(np.arange(len(xs)))
    ax.set_xticklabels([str(v).replace("/", "/\n") for v in xs], fontsize=7)
    ax.set_ylabel("rate (%)")
    ax.set_ylim(-3, 103)
    ax.legend(fontsize=7, title=hue)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_confusion(cm: pd.DataFrame, *, title: str):
    """Heat map of a confusion matrix with counts."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.2, 3.6))
    ax.imshow(np.log1p(cm.to_numpy()), cmap="Blues")
    for i in range(cm.shape[0]):
        for j in range(cm.shape[1]):
            ax.text(j, i, int(cm.iat[i, j]), ha="center", va="center", fontsize=8)
    ax.set_xticks(range(cm.shape[1]))
    ax.set_xticklabels(cm.columns)
    ax.set_yticks(range(cm.shape[0]))
    ax.set_yticklabels(cm.index)
    ax.set_xlabel("classified from artefacts")
    ax.set_ylabel("known strategy")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_difficulty(result: RateResult, *, title: str):
    """Cheating rate by difficulty tercile, one series per kind."""
    return plot_rates(result, "difficulty_tercile", "kind", title=title)


def plot_rescue_harm(cells: pd.DataFrame, *, title: str):
    """Rescue and harm rates (%) with intervals per cohort (variant kind), from
    :attr:`agentstudies.recovery.RecoveryResult.cells`."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    x = np.arange(len(cells))
    for off, (what, color) in zip((-0.15, 0.15), (("rescue", "tab:green"), ("harm", "tab:red"))):
        est = cells[f"{what}_rate"].to_numpy(float)
        lo, hi = cells[f"{what}_ci_low"].to_numpy(float), cells[f"{what}_ci_high"].to_numpy(float)
        ax.errorbar(x + off, est, yerr=[est - lo, hi - est], fmt="o", capsize=3, color=color, label=what)
    ax.set_xticks(x)
    ax.set_xticklabels(cells["cohort"].astype(str))
    ax.set_ylabel("% of forked episodes")
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
