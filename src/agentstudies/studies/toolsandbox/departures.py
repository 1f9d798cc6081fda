"""What remains different from ToolSandbox's scoring and what it changes on a run
(chapter ``toolsandbox_workflows``; agents *simulated*): the named departures
(:data:`agentstudies.envs.toolsandbox.DEPARTURES`) as a table, and, per profile and workflow,
the mean similarity as scored here beside the same trajectories under ToolSandbox's
formulas alone (``tool_sandbox/common/evaluation.py`` of apple/ToolSandbox).
"""

from __future__ import annotations

import pandas as pd

__all__ = ["departures_table", "departure_effects"]


def departures_table() -> pd.DataFrame:
    """The named departures from ToolSandbox that remain (scoring and world), one per row:
    ``departure``, ``switchable`` (whether ``evaluate(..., departures=...)`` can turn it
    off), ``what differs and why``."""
    from agentstudies.envs.toolsandbox import DEPARTURES, SCORING_OPTIONS

    return pd.DataFrame({"departure": list(DEPARTURES), "switchable": [k in SCORING_OPTIONS for k in DEPARTURES],
                         "what differs and why": list(DEPARTURES.values())})


def departure_effects(episodes: pd.DataFrame) -> pd.DataFrame:
    """What the named scoring departures change on the same trajectories.

    Per ``profile`` and ``workflow`` (pass a frame with constant columns for one overall
    row): ``episodes`` (count), ``similarity`` (mean, as scored here),
    ``toolsandbox_similarity`` (mean under ToolSandbox's formulas alone, every departure of
    :data:`agentstudies.envs.toolsandbox.SCORING_OPTIONS` off), ``difference`` (the first
    minus the second), ``share_differs`` (share of episodes whose two scores differ by more
    than ``EXACT_TOL``) and ``undone`` (episodes scored 0 because a matched write was undone).
    Source: ToolSandbox ``tool_sandbox/common/evaluation.py``; departures in
    :data:`agentstudies.envs.toolsandbox.DEPARTURES`.

    Raises
    ------
    KeyError
        A column of ``profile, workflow, similarity, toolsandbox_similarity, undone`` is missing.
    ValueError
        ``episodes`` is empty, or a similarity is NaN.
    """
    from agentstudies._tolerances import EXACT_TOL

    need = ["profile", "workflow", "similarity", "toolsandbox_similarity", "undone"]
    missing = [c for c in need if c not in episodes.columns]
    if missing:
        raise KeyError(f"episodes lack column(s) {missing}; expected the episode table of run_grid (columns {need})")
    if episodes.empty:
        raise ValueError("episodes is empty; run the grid first (run_grid)")
    if episodes[["similarity", "toolsandbox_similarity"]].isna().any().any():
        raise ValueError("a similarity is NaN in episodes; every episode must be scored both ways")
    d = episodes.assign(differs=(episodes["similarity"] - episodes["toolsandbox_similarity"]).abs() > EXACT_TOL,
                        undone=episodes["undone"].astype(bool))
    out = d.groupby(["profile", "workflow"], sort=True).agg(
        episodes=("similarity", "size"), similarity=("similarity", "mean"),
        toolsandbox_similarity=("toolsandbox_similarity", "mean"), share_differs=("differs", "mean"),
        undone=("undone", "sum")).reset_index()
    out.insert(5, "difference", out["similarity"] - out["toolsandbox_similarity"])
    out["undone"] = out["undone"].astype(int)
    return out
