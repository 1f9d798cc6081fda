"""Inference and figures of the ALFWorld training chapter: held-out success and arrival
by setting with intervals, the paired RL - SFT bootstrap, the chapter's findings, the
learning-curve figures, and the paper's reference values.

Paper reference values (Section 4.3, Table 2; *paper*, SkillRL 7B on official games):
:data:`PAPER_REFERENCE`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentstudies.findings import magnitude_finding
from agentstudies.parallel import keyed_seed

__all__ = ["PAPER_REFERENCE", "setting_summary", "bootstrap_difference", "training_findings", "usability_sentence",
           "plot_learning_curves", "plot_heldout_curves"]

#: Paper values (handoff paper, Section 4.3 / Table 2 / Table 1, ALFWorld valid_unseen).
PAPER_REFERENCE = {
    "arrival_SFT": 0.133, "arrival_RL": 0.825,
    "endpoint_SFT_SFT": 0.058, "endpoint_RL_RL": 0.792,
}


# ------------------------------------------------------------------ inference
def setting_summary(ev: pd.DataFrame, *, level: float = 0.95, n_draws: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Success, arrival and inadmissible commands per episode by ``setting`` (with / without
    the admissible list), checkpoint and split, with intervals (ablation).

    ``ev``: rows of :func:`evaluate_checkpoint` plus a ``setting`` column. Success and
    arrival: share of episodes with the exact Clopper-Pearson ``level`` interval
    (:func:`agentstudies.findings.binomial_interval`); inadmissible commands per episode:
    mean with a percentile bootstrap over tasks (``n_draws`` draws). Returns one row per
    (setting, checkpoint, split): ``n_episodes``, ``success``, ``success_lo``,
    ``success_hi``, ``arrival``, ``arrival_lo``, ``arrival_hi`` (shares),
    ``inadmissible``, ``inadmissible_lo``, ``inadmissible_hi`` (commands per episode).
    Raises ``KeyError`` naming a missing column.
    """
    from agentstudies.findings import binomial_interval

    for c in ("setting", "checkpoint", "split", "task_id", "won", "arrived", "n_invalid"):
        if c not in ev.columns:
            raise KeyError(f"setting_summary: missing column {c!r}")
    rows = []
    a = (1 - level) / 2
    for (st, ck, sp), g in ev.groupby(["setting", "checkpoint", "split"], sort=False):
        n = len(g)
        s, slo, shi = binomial_interval(int(g["won"].astype(bool).sum()), n, level=level)
        r, rlo, rhi = binomial_interval(int(g["arrived"].astype(bool).sum()), n, level=level)
        per = g.groupby("task_id")["n_invalid"].mean().to_numpy(dtype=float)
        rng = np.random.default_rng(keyed_seed(seed, "inadmissible", st, ck, sp))
        draws = per[rng.integers(0, len(per), size=(n_draws, len(per)))].mean(axis=1)
        rows.append(dict(setting=st, checkpoint=ck, split=sp, n_episodes=n, success=s, success_lo=slo, success_hi=shi,
                         arrival=r, arrival_lo=rlo, arrival_hi=rhi, inadmissible=float(g["n_invalid"].mean()),
                         inadmissible_lo=float(np.quantile(draws, a)), inadmissible_hi=float(np.quantile(draws, 1 - a))))
    return pd.DataFrame(rows)


def bootstrap_difference(
    df: pd.DataFrame, column: str, *, base: str = "SFT", treated: str = "RL", n_draws: int = 2000, seed: int = 0,
    level: float = 0.95,
) -> dict[str, float]:
    """Treated minus base mean of ``column`` with a task-stratified paired bootstrap.

    ``df`` has one row per (checkpoint, split, task_id, seed) with ``task_type``. Tasks
    are resampled within task type (all seeds and both checkpoints of a task kept
    together). Returns ``estimate, ci_low, ci_high, n_tasks``. Raises ``KeyError`` for a
    missing column, ``ValueError`` when a checkpoint is missing.
    """
    for c in ("checkpoint", "split", "task_id", "task_type", column):
        if c not in df.columns:
            raise KeyError(f"bootstrap_difference: missing column {c!r}")
    per = (df.assign(v=df[column].astype(float))
           .pivot_table(index=["split", "task_id", "task_type"], columns="checkpoint", values="v", aggfunc="mean"))
    for c in (base, treated):
        if c not in per.columns:
            raise ValueError(f"bootstrap_difference: no rows of checkpoint {c!r}")
    diff = (per[treated] - per[base]).reset_index()
    est = float(diff[0].mean())
    rng = np.random.default_rng(keyed_seed(seed, "bootstrap", column))
    groups = [g[0].to_numpy() for _, g in diff.groupby("task_type")]
    n = sum(len(g) for g in groups)
    draws = np.zeros(n_draws)
    for g in groups:
        k = len(g)
        pick = rng.integers(0, k, size=(n_draws, k))
        draws += g[pick].sum(axis=1)
    draws /= n
    a = (1 - level) / 2
    return {"estimate": est, "ci_low": float(np.quantile(draws, a)), "ci_high": float(np.quantile(draws, 1 - a)),
            "n_tasks": int(n)}


def training_findings(ev: pd.DataFrame, *, equal: pd.DataFrame | None = None, equal_name: str = "SFT-equal",
                      n_draws: int = 2000, seed: int = 0, level: float = 0.95, training=None):
    """The training chapter's findings from the held-out episodes (all ``measured``: trained
    checkpoints whose weights do not contain the paper's effects).

    - *RL arrives at the frontier more often than SFT*: the task-stratified paired
      bootstrap interval (:func:`bootstrap_difference`, column ``arrived``) of RL − SFT
      lies above 0 (paper: arrival 13.3 % vs 82.5 %, :data:`PAPER_REFERENCE`);
    - *RL succeeds more often than SFT at the endpoint*: the same on ``won`` (paper: 5.8 %
      vs 79.2 %).

    Both compare the size too (:func:`agentstudies.findings.magnitude_finding`): an
    interval that excludes every gap within a factor of 2 of the paper's gives "same
    direction, magnitude differs".

    The shipped SFT imitates the expert on a few of RL's training problems, so each row
    shows beside it (in ``why``) the equal-data comparison: the same difference and rule
    against ``equal`` (the held-out episodes of the SFT trained on every RL training
    problem, checkpoint ``equal_name``; :mod:`~agentstudies.studies.alfworld.training.equal_footing`).
    Whether the checkpoints are usable for the handoff study is the book's own criterion,
    not a paper finding (:func:`usability_sentence`).

    Parameters
    ----------
    ev : held-out episodes (:func:`evaluate_checkpoint` rows of both checkpoints).
    equal : held-out episodes of the equal-data SFT on the same tasks, or None.
    training : mapping checkpoint name -> what it was trained on
        (:func:`agentstudies.studies.alfworld.handoff.pairs.training_data`), or None; when
        given, every row's ``why`` states the lines of SFT, RL and (with ``equal``)
        ``equal_name``. ``KeyError`` names a missing checkpoint.

    Returns
    -------
    :class:`agentstudies.findings.Findings` (estimates in percentage points).

    Raises
    ------
    KeyError / ValueError
        As :func:`bootstrap_difference` (a missing column or checkpoint).
    """
    from agentstudies.findings import Findings, judge

    ref = PAPER_REFERENCE
    # the paper's RL − SFT gaps (pp): the size a row's interval is compared with (within a factor of 2)
    paper_gap = {"arrived": 100 * (ref["arrival_RL"] - ref["arrival_SFT"]),
                 "won": 100 * (ref["endpoint_RL_RL"] - ref["endpoint_SFT_SFT"])}
    pair = None
    if equal is not None:
        pair = pd.concat([equal, ev[ev["checkpoint"] == "RL"]], ignore_index=True)
    stated = ""
    if training is not None:
        names = ["SFT", "RL"] + ([equal_name] if equal is not None else [])
        missing = [n for n in names if n not in training]
        if missing:
            raise KeyError(f"training data of checkpoint(s) {missing} not given (have {sorted(training)})")
        stated = "; training data -- " + "; ".join(training[n] for n in names)
    rows = []
    for col, name, paper in (
        ("arrived", "RL arrives at the frontier more often than SFT",
         f"arrival SFT {100 * ref['arrival_SFT']:.1f}% vs RL {100 * ref['arrival_RL']:.1f}% (handoff paper, valid_unseen)"),
        ("won", "RL succeeds more often than SFT at the endpoint",
         f"success SFT {100 * ref['endpoint_SFT_SFT']:.1f}% vs RL {100 * ref['endpoint_RL_RL']:.1f}% "
         "(handoff paper, Table 1)"),
    ):
        d = bootstrap_difference(ev, col, n_draws=n_draws, seed=seed, level=level)
        if pair is None:
            beside = "equal-data comparison not run (the shipped SFT saw fewer training problems than RL)"
        else:
            e = bootstrap_difference(pair, col, base=equal_name, treated="RL", n_draws=n_draws, seed=seed, level=level)
            beside = (f"equal data, RL − {equal_name}: {100 * e['estimate']:+.1f} pp [{100 * e['ci_low']:+.1f}, "
                      f"{100 * e['ci_high']:+.1f}] ({judge(e['ci_low'], e['ci_high'], paper_side='above')} by the "
                      "same rule; the shipped SFT saw fewer training problems than RL)")
        rows.append(magnitude_finding(name, paper, 100 * d["estimate"], 100 * d["ci_low"], 100 * d["ci_high"],
                                      d["n_tasks"], paper_value=paper_gap[col], paper_side="above", level=level,
                                      domain=(-100.0, 100.0), fmt="+.1f",
                                      quantity=f"RL − SFT {col} (pp, task-stratified paired bootstrap)",
                                      basis="measured", why=f"trained checkpoints; {beside}{stated}"))
    return Findings.build(rows, seed=seed, title="alfworld_training findings", n_draws=n_draws, level=level)


def usability_sentence(ev: pd.DataFrame, *, level: float = 0.95,
                       informative_range: tuple[float, float] = (0.05, 0.95)) -> str:
    """Whether both checkpoints are usable by the handoff study -- the book's own criterion,
    not a paper finding: each checkpoint's exact (Clopper-Pearson) ``level`` interval of
    held-out success inside ``informative_range``.

    Raises
    ------
    ValueError
        A checkpoint without held-out episodes.
    """
    from agentstudies.findings import binomial_interval

    lo_r, hi_r = informative_range
    parts, inside = [], []
    for ck in ("SFT", "RL"):
        w = ev.loc[ev["checkpoint"] == ck, "won"].astype(bool)
        if not len(w):
            raise ValueError(f"usability_sentence: no held-out episodes of checkpoint {ck!r}")
        rate, lo, hi = binomial_interval(int(w.sum()), len(w), level=level)
        inside.append(lo > lo_r and hi < hi_r)
        parts.append(f"{ck} {rate:.3f} [{lo:.3f}, {hi:.3f}]")
    verdict = "both lie" if all(inside) else ("neither lies" if not any(inside) else "one lies")
    return (f"Usability for the handoff study (this book's criterion, not a paper finding): held-out success with "
            f"{100 * level:g}% exact intervals {'; '.join(parts)}; {verdict} inside ({lo_r:g}, {hi_r:g}).")


def plot_learning_curves(sft_curve: pd.DataFrame, rl_curve: pd.DataFrame, *, label: str = ""):
    """Figure: behaviour-cloning loss / top-1 agreement by step; RL batch success by iteration."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(8.5, 3.2))
    a.plot(sft_curve["step"], sft_curve["loss"], color="#4C72B0", label="NLL + L2")
    a.set_xlabel("SFT step (full-batch Adam)")
    a.set_ylabel("loss")
    a2 = a.twinx()
    a2.plot(sft_curve["step"], 100 * sft_curve["accuracy"], color="#DD8452", label="expert command ranked first (%)")
    a2.set_ylabel("ranked first (%)")
    a.set_title("SFT: behaviour cloning", fontsize=10)
    r = rl_curve["train_success"].rolling(5, min_periods=1).mean()
    b.plot(rl_curve["iteration"], 100 * rl_curve["train_success"], color="#bbbbbb", lw=1, label="batch")
    b.plot(rl_curve["iteration"], 100 * r, color="#DD8452", label="5-iteration mean")
    b.set_xlabel("RL iteration")
    b.set_ylabel("training success (%)")
    b.set_ylim(0, 100)
    b.legend(frameon=False, fontsize=8)
    b.set_title("RL: REINFORCE from the SFT weights", fontsize=10)
    if label:
        fig.suptitle(f"Learning curves ({label})", fontsize=10)
    fig.tight_layout()
    return fig


def plot_heldout_curves(evals: pd.DataFrame, *, label: str = ""):
    """Figure: held-out success and arrival by task type over training (SFT steps then
    RL iterations on one axis of training stages)."""
    import matplotlib.pyplot as plt

    e = evals.copy()
    stages = e[["phase", "step"]].drop_duplicates().reset_index(drop=True)
    stages["stage"] = [f"{p}\n{s}" for p, s in zip(stages["phase"], stages["step"])]
    e = e.merge(stages, on=["phase", "step"])
    order = list(stages["stage"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, col, title in zip(axes, ("won", "arrived"), ("success", "arrival at F_2")):
        g = e.groupby(["task_type", "stage"])[col].mean().unstack("stage").reindex(columns=order)
        for tt, row in g.iterrows():
            ax.plot(range(len(order)), 100 * row.to_numpy(), marker="o", ms=3, lw=1, label=tt.replace("_", " "))
        tot = e.groupby("stage")[col].mean().reindex(order)
        ax.plot(range(len(order)), 100 * tot.to_numpy(), color="black", lw=2.2, label="all types")
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order, fontsize=7)
        ax.set_title(f"held-out {title}", fontsize=10)
        ax.set_ylim(0, 100)
    axes[0].set_ylabel("% of episodes")
    axes[1].legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    if label:
        fig.suptitle(f"Held-out success and arrival over training ({label})", fontsize=10)
    fig.tight_layout()
    return fig
