"""Does τ²-bench's evaluator decide a workflow comparison? Tables for the τ chapters.

The audit itself is :func:`agentstudies.envs.tau.task_audit` (scripted degenerate agents
through the real tools and the package's reward). This module turns an audit of the
sampled tasks and a study's episode table into the chapters' tables:

- :func:`degenerate_summary` -- per domain: tasks audited, declared reward basis, how many
  tasks each degenerate agent passes, failed gold writes, ignored NL assertions.
- :func:`success_with_without` -- success per profile and workflow on all sampled tasks
  and without the tasks a degenerate agent passes, beside τ²-bench's action check.
- :func:`slots_side_by_side` -- two SASST reports (all tasks / without those tasks) slot
  by slot: estimate, signed bound and status.

Agents in the episode tables are *simulated* (scripted); the comparison says how much of
a workflow difference rests on tasks the evaluator cannot tell apart from doing nothing.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

__all__ = ["degenerate_summary", "success_with_without", "slots_side_by_side"]


def _need(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise KeyError(f"{what} lacks column(s) {missing}; it has {list(df.columns)}")


def degenerate_summary(audit: pd.DataFrame) -> pd.DataFrame:
    """Counts of :func:`~agentstudies.envs.tau.task_audit` per domain (rows) plus ``all``.

    Columns: ``tasks``, ``reward_basis`` (the distinct declared bases), ``idle_passes``,
    ``idle_info_passes``, ``transfer_expected``, ``no_transfer_passes``,
    ``write_drop_passes`` (tasks where dropping one gold write still scores 1),
    ``failed_gold_writes`` (tasks with a gold write that fails in the gold replay),
    ``nl_assertions_ignored`` (tasks with NL assertions, none scored),
    ``degenerate_passes`` (tasks passed by the idle, idle-with-info or no-transfer agent).
    """
    _need(audit, ["domain", "reward_basis", "idle_reward", "idle_info_reward", "transfer_expected",
                  "no_transfer_reward", "write_drop_passes", "n_failed_gold_writes",
                  "nl_assertions_ignored", "degenerate_pass"], "audit table")

    def one(a: pd.DataFrame) -> dict[str, Any]:
        return {
            "tasks": len(a),
            "reward_basis": ", ".join(sorted(set(a["reward_basis"]))),
            "idle_passes": int((a["idle_reward"] == 1).sum()),
            "idle_info_passes": int((a["idle_info_reward"] == 1).sum()),
            "transfer_expected": int(a["transfer_expected"].sum()),
            "no_transfer_passes": int((a["no_transfer_reward"] == 1).sum()),
            "write_drop_passes": int((a["write_drop_passes"] > 0).sum()),
            "failed_gold_writes": int((a["n_failed_gold_writes"] > 0).sum()),
            "nl_assertions_ignored": int(a["nl_assertions_ignored"].sum()),
            "degenerate_passes": int(a["degenerate_pass"].sum()),
        }

    rows = {d: one(a) for d, a in audit.groupby("domain", sort=False)}
    rows["all"] = one(audit)
    return pd.DataFrame(rows).T.rename_axis("domain")


def success_with_without(episodes: pd.DataFrame, degenerate: Sequence[str]) -> pd.DataFrame:
    """Success per (profile, workflow): all tasks vs without the ``degenerate`` tasks.

    Columns: ``tasks_all``, ``success_all``, ``tasks_without``, ``success_without``,
    ``action_match_all`` (share of episodes passing τ²-bench's action check, which the
    reward does not use) and ``reward_without_action_match`` (share of episodes scored 1
    whose calls fail the action check).
    """
    _need(episodes, ["profile", "workflow", "task_id", "reward", "action_match"], "episode table")
    bad = set(map(str, degenerate))
    keep = ~episodes["task_id"].astype(str).isin(bad)
    rows = []
    for (p, w), e in episodes.groupby(["profile", "workflow"], sort=False):
        k = keep.loc[e.index]
        ok = e["reward"] == 1
        rows.append({
            "profile": f"{p} (simulated)", "workflow": w,
            "tasks_all": e["task_id"].nunique(), "success_all": float(e["reward"].mean()),
            "tasks_without": e.loc[k, "task_id"].nunique(),
            "success_without": float(e.loc[k, "reward"].mean()) if k.any() else np.nan,
            "action_match_all": float(e["action_match"].astype(bool).mean()),
            "reward_without_action_match": float((ok & ~e["action_match"].astype(bool)).mean()),
        })
    return pd.DataFrame(rows).set_index(["profile", "workflow"])


def slots_side_by_side(all_tasks: Any, without: Any, labels: tuple[str, str] = ("all tasks", "without degenerate-pass tasks")) -> pd.DataFrame:
    """Two SASST reports slot by slot (rows: slots; columns: report × estimate/bound/status).

    ``bound`` is written ``"lower +0.012"`` / ``"upper -0.034"`` (the side is part of the
    claim); ``NA`` where a slot has no band.
    """
    parts = {}
    for label, rep in zip(labels, (all_tasks, without)):
        t = rep.table
        _need(t, ["estimate", "bound", "bound_side", "status"], "SASST report table")
        parts[label] = pd.DataFrame({
            "estimate": t["estimate"].round(3),
            "bound": [f"{s} {b:+.3f}" if np.isfinite(b) else "NA" for s, b in zip(t["bound_side"], t["bound"])],
            "status": t["status"],
        })
    return pd.concat(parts, axis=1)


def _flat(df: pd.DataFrame) -> pd.DataFrame:  # CSV-friendly columns for a side-by-side table
    out = df.copy()
    out.columns = [" | ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in out.columns]
    return out


def flat_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with MultiIndex columns joined by ``" | "`` (for ``ch.save_table``)."""
    return _flat(df)


__all__ += ["flat_columns"]
