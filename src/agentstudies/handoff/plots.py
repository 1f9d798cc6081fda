"""Figures of the checkpoint-handoff paper, drawn from the result objects.

Every function returns a :class:`matplotlib.figure.Figure` and takes ``label``: a caption
suffix appended to the title (for example ``"simulated checkpoints"``), so a chapter can
mark simulated agents in every figure. Rates are plotted in percent, contrasts in points.

=========  ==========================================  ===============================
Figure     function                                    input
=========  ==========================================  ===============================
Fig. 2     :func:`plot_arrival_curve`                  :class:`BudgetDiagnostic`
Fig. 3     :func:`plot_estimands`                      :class:`HandoffResult`
Fig. 5     :func:`plot_assignments`                    :class:`HandoffResult`
Fig. 6     :func:`plot_reach_solve`                    :class:`HandoffResult`
2 x 2      :func:`plot_assignment_grid`                :class:`HandoffResult`
Fig. 7     :func:`plot_prediction`                     :class:`InteractionPrediction`
Fig. 8     :func:`plot_solve_by_type`                  :class:`HandoffResult`
Fig. 9     :func:`plot_residuals`                      :class:`InteractionPrediction`
Fig. 10    :func:`plot_budget`                         :class:`BudgetDiagnostic`
=========  ==========================================  ===============================
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from agentstudies.handoff._diagnostics import BudgetDiagnostic
from agentstudies.handoff._analysis import HandoffResult
from agentstudies.handoff._prediction import InteractionPrediction

__all__ = [
    "plot_arrival_curve",
    "plot_assignment_grid",
    "plot_assignments",
    "plot_budget",
    "plot_estimands",
    "plot_prediction",
    "plot_reach_solve",
    "plot_residuals",
    "plot_solve_by_type",
]

_COLORS = tuple(sns.color_palette("colorblind", 2).as_hex())  # base, treated: seaborn's colour-blind-safe palette


def _title(text: str, label: str) -> str:
    return f"{text}\n({label})" if label else text


def _err(est, lo, hi):
    est, lo, hi = (np.asarray(x, dtype=float) for x in (est, lo, hi))
    low = np.where(np.isfinite(lo), est - lo, 0.0)
    high = np.where(np.isfinite(hi), hi - est, 0.0)
    return np.vstack([np.maximum(low, 0), np.maximum(high, 0)])


def _pick_split(splits, split, what):
    splits = list(splits)
    if split is None:
        if len(splits) != 1:
            raise ValueError(f"{what}: several splits {splits}; pass split=")
        return splits[0]
    if split not in splits:
        raise ValueError(f"{what}: split {split!r} not in {splits}")
    return split


def plot_arrival_curve(budget: BudgetDiagnostic, *, split: str | None = None, label: str = "", ax=None):
    """Figure 2: cumulative arrival at the frontier by reacher action, one line per reacher."""
    split = _pick_split(budget.curve["split"].unique(), split, "plot_arrival_curve")
    c = budget.curve[budget.curve["split"] == split]
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5, 3.5))
    for col, lab in zip(_COLORS, (budget.base, budget.treated)):
        cc = c[c["reacher"] == lab]
        n = int(cc["n"].iloc[0]) if len(cc) else 0
        ax.step(cc["action"], 100 * cc["cumulative_arrival"], where="post", color=col, label=f"{lab} (n={n})")
    ax.set_xlabel("reacher action")
    ax.set_ylabel("arrived at frontier (%)")
    ax.set_ylim(0, 100)
    ax.legend(frameon=False)
    ax.set_title(_title(f"Arrival by reacher action, {split}", label), fontsize=10)
    fig.tight_layout()
    return fig


def plot_estimands(result: HandoffResult, *, label: str = "", ax=None):
    """Figure 3: the interaction under the endpoint (full-population) and reached-only estimands."""
    e = result.estimates
    rows = []
    for split in result.splits:
        for key, name in (("interaction", "endpoint (non-arrivals kept)"), ("survivor_interaction", "reached-only")):
            r = e[(e["split"] == split) & (e["estimand"] == key)].iloc[0]
            rows.append((f"{name}\n{split}" if len(result.splits) > 1 else name, r))
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5, 0.7 * len(rows) + 1.2))
    y = np.arange(len(rows))[::-1]
    est = np.array([100 * r.estimate for _, r in rows])
    err = _err(est, [100 * r.ci_low for _, r in rows], [100 * r.ci_high for _, r in rows])
    ax.errorbar(est, y, xerr=err, fmt="o", color="k", capsize=3)
    ax.axvline(0, color="grey", lw=0.8, ls="--")
    ax.set_yticks(y, [n for n, _ in rows])
    ax.set_xlabel(f"interaction I (points), {result.level:.0%} paired bootstrap")
    ax.set_title(_title("Interaction under two estimands", label), fontsize=10)
    fig.tight_layout()
    return fig


def plot_assignments(result: HandoffResult, *, label: str = ""):
    """Figure 5: endpoint success of the four assignments; non-parallel lines = interaction."""
    splits = result.splits
    fig, axes = plt.subplots(1, len(splits), figsize=(3.6 * len(splits), 3.4), squeeze=False, sharey=True)
    for ax, split in zip(axes[0], splits):
        a = result.assignments[result.assignments["split"] == split]
        for col, solver in zip(_COLORS, (result.base, result.treated)):
            s = a[a["solver"] == solver].set_index("reacher").loc[[result.base, result.treated]]
            est = 100 * s["endpoint"].to_numpy()
            err = _err(est, 100 * s["endpoint_low"].to_numpy(), 100 * s["endpoint_high"].to_numpy())
            ax.errorbar([0, 1], est, yerr=err, marker="o", color=col, capsize=3, label=f"solver {solver}")
        ax.set_xticks([0, 1], [f"reacher {result.base}", f"reacher {result.treated}"])
        ax.set_xlim(-0.4, 1.4)
        ax.set_title(split, fontsize=9)
    axes[0][0].set_ylabel("endpoint success J (%)")
    axes[0][-1].legend(frameon=False, fontsize=8)
    fig.suptitle(_title("Endpoint success for the four reacher x solver assignments", label), fontsize=10)
    fig.tight_layout()
    return fig


def plot_reach_solve(result: HandoffResult, *, splits: list[str] | None = None, label: str = "", ax=None):
    """Figure 6: Reach gap, same-state Solve gap and endpoint interaction per split
    (the first of ``splits`` - default sorted order - filled markers, others open)."""
    keys = (("reach_gap", "Reach\n(arrival gap)"), ("delta_solve_all_states", "Solve\n(same-state gap)"),
            ("interaction", "Interaction I"))
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5, 3.5))
    splits = list(result.splits if splits is None else splits)
    for sp in splits:
        _pick_split(result.splits, sp, "plot_reach_solve")
    n = len(splits)
    for j, split in enumerate(splits):
        e = result.estimates[result.estimates["split"] == split].set_index("estimand")
        x = np.arange(len(keys)) + (j - (n - 1) / 2) * 0.15
        est = np.array([100 * e.loc[k, "estimate"] for k, _ in keys])
        err = _err(est, [100 * e.loc[k, "ci_low"] for k, _ in keys], [100 * e.loc[k, "ci_high"] for k, _ in keys])
        ax.errorbar(x, est, yerr=err, fmt="o", capsize=3, color="k",
                    mfc="k" if j == 0 else "white", label=split)
    ax.axhline(0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(keys)), [t for _, t in keys])
    ax.set_ylabel(f"{result.treated} - {result.base} (points)")
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(_title("Reach, Solve and the endpoint interaction", label), fontsize=10)
    fig.tight_layout()
    return fig


def plot_assignment_grid(result: HandoffResult, *, splits: list[str] | None = None, label: str = ""):
    """The Reach x Solve 2 x 2, one panel (row) per split (default: every split, sorted order):
    rows are the reacher, columns the solver (base, treated); each cell is shaded by its
    endpoint success ``J_WR`` (percent) and reads Reach ``A_W``, Solve ``C_WR`` and
    ``J_WR`` with its percentile interval (Tables 1-2, Eq. 7: ``J_WR = A_W * C_WR``). Each
    panel's image array is ``J`` in percent, reacher by solver.

    Raises ``ValueError`` naming the splits if one of ``splits`` is not in the result.
    """
    splits = list(result.splits if splits is None else splits)
    for sp in splits:
        _pick_split(result.splits, sp, "plot_assignment_grid")
    roles = [result.base, result.treated]
    # one panel per row: legible at phone width; constrained layout keeps the colour bar clear of the panels
    fig, axes = plt.subplots(len(splits), 1, figsize=(5.2, 0.4 + 3.9 * len(splits)), squeeze=False,
                             layout="constrained")
    for ax, split in zip(axes[:, 0], splits):
        a = result.assignments[result.assignments["split"] == split].set_index(["reacher", "solver"])
        J = np.array([[100 * a.loc[(w, r), "endpoint"] for r in roles] for w in roles], dtype=float)
        im = ax.imshow(J, cmap="Blues", vmin=0, vmax=100)
        for i, w in enumerate(roles):
            for j, r in enumerate(roles):
                row = a.loc[(w, r)]
                lo, hi = 100 * row["endpoint_low"], 100 * row["endpoint_high"]
                text = (f"Reach {100 * row['arrival']:.0f}%\nSolve {100 * row['conversion']:.0f}%\n"
                        f"J {J[i, j]:.0f}% [{lo:.0f}, {hi:.0f}]")
                ax.text(j, i, text, ha="center", va="center", fontsize=9,
                        color="white" if J[i, j] > 60 else "black")
        ax.set_xticks([0, 1], roles)
        ax.set_yticks([0, 1], roles)
        ax.set_xlabel("solver (finishes from the checkpoint)")
        ax.set_ylabel("reacher (reaches the checkpoint)")
        ax.set_title(split.replace("_", " "), fontsize=9)  # "valid unseen": words, not an identifier
    fig.colorbar(im, ax=list(axes[:, 0]), label="endpoint success J (%)", shrink=0.8)
    fig.suptitle(_title("Reach x Solve: the four reacher x solver assignments", label), fontsize=10)
    return fig


def plot_prediction(prediction: InteractionPrediction, *, label: str = "", ax=None):
    """Figure 7: predicted (Eq. 9) against observed interaction per task type, y = x dashed,
    overall point as a black diamond. Each task type has its own marker, named in the
    legend below the axes (text beside the points overlapped where types lie close)."""
    b = prediction.by_type
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(4.6, 5.6))
    x, y = 100 * b["predicted"].to_numpy(float), 100 * b["observed"].to_numpy(float)
    markers, colors = "osv^<>PX*hd", sns.color_palette("colorblind", max(len(b), 1)).as_hex()
    for k, (xi, yi, t) in enumerate(zip(x, y, b["task_type"])):
        ax.scatter([xi], [yi], marker=markers[k % len(markers)], color=colors[k], zorder=3,
                   label=str(t).replace("_", " "))
    o = prediction.overall.set_index("estimand")
    ax.scatter([100 * o.loc["predicted", "estimate"]], [100 * o.loc["observed", "estimate"]], marker="D",
               color="k", s=50, zorder=4, label="overall")
    finite = np.concatenate([x[np.isfinite(x)], y[np.isfinite(y)], [0.0]])
    lo, hi = finite.min() - 10, finite.max() + 10
    ax.plot([lo, hi], [lo, hi], ls="--", color="grey", lw=0.8)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("predicted interaction, Eq. 9 (points)")
    ax.set_ylabel("observed interaction (points)")
    ax.legend(frameon=False, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    ax.set_title(_title("Predicted vs observed interaction by task type", label), fontsize=10)
    fig.tight_layout()
    return fig


def plot_residuals(prediction: InteractionPrediction, *, label: str = "", ax=None):
    """Figure 9: per-type residual observed - predicted (positive = external profile underpredicts),
    with the bootstrap interval of each residual (``residual_low`` / ``residual_high`` of
    ``prediction.by_type``) drawn as an error bar."""
    b = prediction.by_type.sort_values("residual")
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5, 0.45 * len(b) + 1.2))
    y = np.arange(len(b))
    r = 100 * b["residual"].to_numpy(float)
    lo, hi = 100 * b["residual_low"].to_numpy(float), 100 * b["residual_high"].to_numpy(float)
    ax.barh(y, r, color=_COLORS[0], alpha=0.6)
    ax.errorbar(r, y, xerr=np.vstack([np.clip(r - lo, 0, None), np.clip(hi - r, 0, None)]), fmt="none",
                ecolor="k", capsize=3, lw=1)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(y, [str(t).replace("_", " ") for t in b["task_type"]], fontsize=8)
    ax.set_xlabel("residual, observed - predicted (points)")
    ax.set_title(_title("Interaction-prediction residual by task type", label), fontsize=10)
    fig.tight_layout()
    return fig


def plot_solve_by_type(result: HandoffResult, *, split: str | None = None, label: str = "", ax=None):
    """Figure 8: same-state Solve of each solver by task type on the split's reached states,
    rows sorted by the treated - base gap."""
    split = _pick_split(result.splits, split, "plot_solve_by_type")
    bt = result.by_type[result.by_type["split"] == split]
    piv = bt.pivot(index="task_type", columns="estimand", values="estimate")
    piv = piv.sort_values("delta_solve_all_states", na_position="first")
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5.2, 0.45 * len(piv) + 1.3))
    y = np.arange(len(piv))
    for col, role, lab in zip(_COLORS, ("base", "treated"), (result.base, result.treated)):
        ax.scatter(100 * piv[f"solve_all_states[{role}]"], y, color=col, label=f"{lab} solver", zorder=3)
    for yi, (a, b) in enumerate(zip(piv["solve_all_states[base]"], piv["solve_all_states[treated]"])):
        if np.isfinite(a) and np.isfinite(b):
            ax.plot([100 * a, 100 * b], [yi, yi], color="grey", lw=1, zorder=2)
    ax.set_yticks(y, [str(t).replace("_", " ") for t in piv.index], fontsize=8)
    ax.set_xlim(-3, 103)
    ax.set_xlabel("same-state Solve (% of reached states)")
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(_title(f"Same-state Solve by task type, {split}", label), fontsize=10)
    fig.tight_layout()
    return fig


def plot_budget(budget: BudgetDiagnostic, *, split: str | None = None, label: str = "", ax=None):
    """Figure 10: frontier arrival against reacher action budget with paired-bootstrap intervals."""
    split = _pick_split(budget.levels["split"].unique(), split, "plot_budget")
    lv = budget.levels[budget.levels["split"] == split]
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(4.6, 3.5))
    for col, lab in zip(_COLORS, (budget.base, budget.treated)):
        s = lv[lv["reacher"] == lab].sort_values("budget")
        est = 100 * s["arrival"].to_numpy(float)
        err = _err(est, 100 * s["ci_low"].to_numpy(float), 100 * s["ci_high"].to_numpy(float))
        ax.errorbar(s["budget"], est, yerr=err, marker="o", capsize=3, color=col, label=lab)
    ax.set_xticks(list(budget.budgets))
    ax.set_xlabel("reacher action budget")
    ax.set_ylabel("arrived at frontier (%)")
    ax.set_ylim(0, 100)
    ax.legend(frameon=False)
    ax.set_title(_title(f"Arrival by action budget, {split}", label), fontsize=10)
    fig.tight_layout()
    return fig
