"""Figures of the SASST chapters (matplotlib), sized for the book's text column.

Every function takes plain tables (this run's, and optionally the paper's, labelled
"paper"), returns a :class:`matplotlib.figure.Figure` at most ``WIDTH`` inches wide
(about 700 px at the book's 120 dpi) with readable labels, and puts *simulated* in the
title, since every SASST chapter's outcomes are simulated. Nothing is computed here that
a table of the chapter does not already hold; the chapter glues the figure with
``ch.figure(key, fig)``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = [
    "WIDTH", "plot_coverage", "plot_familywise_coverage", "plot_power", "plot_auc",
    "plot_feasibility_checks", "plot_rule_scores", "plot_slot_report", "STATUS_COLORS",
]

#: Figure width in inches (about 700 px at 120 dpi: the book's text column).
WIDTH = 5.8

#: Colour of each SASST status in slot plots.
STATUS_COLORS = {"confirmed": "tab:green", "not confirmed": "tab:blue", "abstained": "tab:orange",
                 "failed feasibility": "tab:red", "failed discovery": "tab:gray"}

_RC = {"font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9, "legend.fontsize": 8,
       "xtick.labelsize": 8, "ytick.labelsize": 8}


def _need(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise KeyError(f"{what}: table lacks column(s) {missing}; has {list(df.columns)}")


def plot_coverage(table: pd.DataFrame, paper: pd.DataFrame | None = None, *, level: float = 0.95,
                  title: str = "Simulated Study A: one-sided coverage") -> plt.Figure:
    """Coverage by ``M`` with Monte-Carlo intervals, one panel per ``R``, fixed vs learned rule.

    ``table`` needs ``M, R, rule, coverage, mc_low, mc_high`` (Table 4 of SASST, App. D.1);
    ``paper`` (``M, R, rule, coverage``) is drawn as open grey markers labelled "paper".

    Raises
    ------
    KeyError
        If a column is missing.
    """
    _need(table, ["M", "R", "rule", "coverage", "mc_low", "mc_high"], "plot_coverage")
    Rs = sorted(table["R"].unique())
    Ms = sorted(table["M"].unique())
    with plt.rc_context(_RC):
        fig, axes = plt.subplots(1, len(Rs), figsize=(WIDTH, 3.0), sharey=True, squeeze=False)
        for ax, R in zip(axes[0], Rs):
            for k, (rule, mk) in enumerate((("fixed", "o"), ("learned", "s"))):
                d = table[(table.R == R) & (table.rule == rule)].set_index("M").reindex(Ms)
                x = np.arange(len(Ms)) + (k - 0.5) * 0.14
                ax.errorbar(x, d.coverage, yerr=[d.coverage - d.mc_low, d.mc_high - d.coverage], fmt=mk,
                            capsize=3, label=f"{rule} (this run)")
                if paper is not None:
                    p = paper[(paper.R == R) & (paper.rule == rule)].set_index("M").reindex(Ms)
                    ax.plot(x + 0.07, p.coverage, mk, mfc="none", color="gray", label=f"{rule} (paper)")
            ax.axhline(level, color="k", lw=0.8, ls="--")
            ax.set_xticks(np.arange(len(Ms)), [str(m) for m in Ms])
            ax.set_xlabel("M (clusters)")
            ax.set_title(f"R = {R}")
        axes[0][0].set_ylabel("coverage")
        axes[0][-1].legend(loc="lower right", fontsize=7)
        fig.suptitle(title)
        fig.tight_layout()
    return fig


def plot_familywise_coverage(table: pd.DataFrame, methods: Sequence[str], *, level: float = 0.95,
                             title: str = "Simulated outcomes: familywise coverage") -> plt.Figure:
    """Familywise coverage per null setting and inference rule with MC intervals (SASST Table 6).

    ``table`` needs ``setting, rule, familywise_coverage, mc_low, mc_high``.
    """
    _need(table, ["setting", "rule", "familywise_coverage", "mc_low", "mc_high"], "plot_familywise_coverage")
    settings = list(dict.fromkeys(table.setting))
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(WIDTH, 3.2))
        w = 0.8 / max(1, len(methods))
        for k, m in enumerate(methods):
            d = table[table.rule == m].set_index("setting").reindex(settings)
            x = np.arange(len(settings)) + (k - (len(methods) - 1) / 2) * w
            ax.errorbar(x, d.familywise_coverage, yerr=[d.familywise_coverage - d.mc_low,
                                                        d.mc_high - d.familywise_coverage],
                        fmt="o", capsize=3, label=m)
        ax.axhline(level, color="k", ls="--", lw=0.8)
        ax.set_xticks(np.arange(len(settings)), settings)
        ax.set_ylabel("familywise coverage")
        ax.set_title(title)
        ax.legend(ncol=len(methods), loc="lower center", fontsize=7)
        fig.tight_layout()
    return fig


def plot_power(table: pd.DataFrame, paper: pd.DataFrame | None = None, *,
               title: str = "Simulated power for a stressed effect") -> plt.Figure:
    """Power of the Gaussian and Bonferroni-t bands per design (SASST Table 7).

    ``table`` needs ``clusters, stressed_ess, excluded`` and ``gaussian_power``,
    ``bonferroni_t_power`` with ``_low`` / ``_high`` interval columns; ``paper`` the same
    keys and the two power columns (black ticks, labelled "paper").
    """
    _need(table, ["clusters", "stressed_ess", "excluded", "gaussian_power", "bonferroni_t_power"], "plot_power")
    d = table[~table.excluded.astype(bool)]
    x = np.arange(len(d))
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(WIDTH, 3.0))
        for k, (key, lab) in enumerate((("gaussian_power", "Gaussian"), ("bonferroni_t_power", "Bonferroni-t"))):
            ax.bar(x + (k - 0.5) * 0.38, d[key], 0.38, yerr=[d[key] - d[key + "_low"], d[key + "_high"] - d[key]],
                   capsize=3, label=f"{lab} (this run)")
            if paper is not None:
                p = paper.set_index(["clusters", "stressed_ess"]).reindex(list(zip(d.clusters, d.stressed_ess)))[key]
                ax.plot(x + (k - 0.5) * 0.38, p.to_numpy(), "k_", ms=14, mew=2, label="paper" if k else None)
        ax.set_xticks(x, [f"{c}/{e}" for c, e in zip(d.clusters, d.stressed_ess)])
        ax.set_xlabel("clusters / stressed ESS")
        ax.set_ylabel("power")
        ax.set_title(title)
        ax.legend()
        fig.tight_layout()
    return fig


def plot_auc(table: pd.DataFrame, se: pd.DataFrame, methods: Sequence[str], mechanisms: Sequence[str],
             paper: pd.DataFrame | None = None, *,
             title: str = "Study B (simulated): held-out AUC of the discovered rule") -> plt.Figure:
    """Held-out AUC per mechanism and geometry with ±1.96 MC s.e. (SASST Table 9).

    ``table`` and ``paper`` have a ``mechanism`` column and one column per method; ``se``
    is indexed by mechanism with one column per method.
    """
    _need(table, ["mechanism", *methods], "plot_auc")
    width = 0.8 / len(methods)
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(WIDTH, 3.3))
        for k, m in enumerate(methods):
            vals = table.set_index("mechanism")[m].reindex(list(mechanisms))
            x = np.arange(len(mechanisms)) + (k - (len(methods) - 1) / 2) * width
            ax.bar(x, vals, width, yerr=1.96 * se[m].reindex(list(mechanisms)), label=m, capsize=2)
            if paper is not None:
                ax.scatter(x, paper.set_index("mechanism")[m].reindex(list(mechanisms)), marker="_", color="k",
                           s=60, zorder=3, label="paper" if k == 0 else None)
        ax.axhline(0.5, color="grey", lw=0.8, ls=":")
        ax.set_xticks(range(len(mechanisms)), list(mechanisms))
        ax.set_ylabel("held-out AUC")
        ax.set_ylim(0.4, 1.0)
        ax.legend(ncol=3, fontsize=7)
        ax.set_title(title)
        fig.tight_layout()
    return fig


def plot_feasibility_checks(trials: pd.DataFrame, *, stability_threshold: float, density_cap: float,
                            min_ess: float, title: str = "Simulated Study C") -> plt.Figure:
    """Left: stability of frozen rules in the near-tie / stable settings; right: density
    ratio and ESS of rules that reached confirmation (SASST Table 11, App. D.5).

    ``trials`` needs ``setting, stability, max_density, ess``.
    """
    _need(trials, ["setting", "stability", "max_density", "ess"], "plot_feasibility_checks")
    with plt.rc_context(_RC):
        fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 5.6))
        stab = trials.dropna(subset=["stability"])
        for s in ("near_tied_rules", "near_tied_four", "stable_positive_rule"):
            v = stab[stab.setting == s]["stability"]
            if len(v):
                axes[0].hist(v, bins=np.linspace(0, 1, 26), alpha=0.55, label=s)
        axes[0].axvline(stability_threshold, color="k", ls="--", lw=1)
        axes[0].set_xlabel("discovery stability (mean top-set Jaccard)")
        axes[0].set_ylabel("trials")
        axes[0].legend()
        axes[0].set_title(f"{title}: stability of the frozen rule")
        for s, mk in (("severe_concentration", "o"), ("density_only", "s"), ("split_support_only", "^")):
            v = trials[(trials.setting == s) & trials["ess"].notna()]
            axes[1].scatter(v["max_density"], v["ess"], marker=mk, s=14, label=s)
        axes[1].axvline(density_cap, color="k", ls="--", lw=1)
        axes[1].axhline(min_ess, color="k", ls=":", lw=1)
        axes[1].set_xlabel("max density ratio")
        axes[1].set_ylabel("ESS")
        axes[1].legend()
        axes[1].set_title(f"{title}: support of rules that reached confirmation")
        fig.tight_layout()
    return fig


def plot_rule_scores(panels: Sequence[tuple[str, np.ndarray, np.ndarray, float]], *, top_share: float = 0.1,
                     title: str = "Simulated scores, real embeddings") -> plt.Figure:
    """Histograms of a frozen rule's scores ``s_g(W)`` on confirmation items, subgroup vs
    the rest (SASST Study D, App. D.6). ``panels``: ``(label, scores, in_subgroup, auc)``."""
    n = len(panels)
    with plt.rc_context(_RC):
        fig, axes = plt.subplots(n, 1, figsize=(WIDTH, 2.6 * n), squeeze=False)
        for ax, (label, s, sub, auc) in zip(axes[:, 0], panels):
            s = np.asarray(s, float)
            sub = np.asarray(sub, bool)
            bins = np.linspace(s.min(), s.max() + 1e-9, 30)
            ax.hist(s[~sub], bins=bins, alpha=0.6, density=True, label="other items")
            ax.hist(s[sub], bins=bins, alpha=0.6, density=True, label="subgroup")
            ax.axvline(np.quantile(s, 1 - top_share), color="k", ls="--", lw=1, label="top-weighted cut")
            ax.set_title(f"{label}: frozen-rule scores, recovery AUC {auc:.2f}")
            ax.set_xlabel("rule score s_g(W)")
            ax.legend()
        fig.suptitle(title)
        fig.tight_layout()
    return fig


def plot_slot_report(tables: Mapping[str, pd.DataFrame], *,
                     title: str = "Ten-slot report (simulated agents)") -> plt.Figure:
    """Estimate and signed simultaneous bound of every slot, coloured by status; one panel
    per report (stacked). Each table is indexed by slot with ``estimate, bound, status``.
    """
    n = len(tables)
    with plt.rc_context(_RC):
        fig, axes = plt.subplots(n, 1, figsize=(WIDTH, 3.2 * n + 0.4), squeeze=False, sharex=True)
        for ax, (label, t) in zip(axes[:, 0], tables.items()):
            _need(t, ["estimate", "bound", "status"], "plot_slot_report")
            y = np.arange(len(t))[::-1]
            for yi, (_, row) in zip(y, t.iterrows()):
                c = STATUS_COLORS.get(row["status"], "k")
                if np.isfinite(row["estimate"]):
                    ax.plot(row["estimate"], yi, "o", color=c)
                if np.isfinite(row["bound"]) and np.isfinite(row["estimate"]):
                    lo, hi = sorted([row["estimate"], row["bound"]])
                    ax.plot([lo, hi], [yi, yi], "-", color=c, lw=2)
                    ax.plot(row["bound"], yi, "|", color=c, ms=12, mew=2)
            ax.axvline(0, color="k", lw=0.8)
            ax.set_yticks(y, [str(s).replace("Confirmation gate", "Gate").replace("Plan + verifier", "PV")
                              for s in t.index])
            ax.set_title(label)
        axes[-1, 0].set_xlabel("confirmation contrast (success-rate difference)")
        handles = [plt.Line2D([], [], color=c, marker="o", ls="-", label=s) for s, c in STATUS_COLORS.items()]
        fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False)
        fig.suptitle(title)
        fig.tight_layout(rect=(0, 0.08 if n == 1 else 0.05, 1, 1))
    return fig
