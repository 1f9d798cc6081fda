"""ToolSandbox-style workflow study (chapter ``toolsandbox_workflows``; all agents
*simulated*): the study itself is :mod:`~agentstudies.studies.toolsandbox.run` (grid,
group means with cluster intervals, SASST over scenario features, the milestone-frontier
handoff, findings and controls); its public names are importable from here
(``from agentstudies.studies import toolsandbox as ts``). What remains different from
ToolSandbox's scoring, and what it changes on a run, is the public submodule
:mod:`~agentstudies.studies.toolsandbox.departures`.
"""

from __future__ import annotations

from agentstudies.studies.toolsandbox.run import (
    AUGMENTATION_CONTRASTS, BASELINE, CASE_COLUMNS, ENHANCED, PAPER_DESIGN, TESTABILITY_COLUMNS,
    build_cases, case_artifact, controls, design_table, group_means, GroupMeans,
    paired_gap, plot_group_means, profile_label, run_grid, run_handoff_study, run_sasst, sasst_design,
    sasst_features, sasst_slots, tag_gap, testability, toolsandbox_findings,
)

__all__ = [
    "BASELINE", "ENHANCED", "CASE_COLUMNS", "PAPER_DESIGN", "build_cases", "run_grid", "case_artifact",
    "GroupMeans", "group_means", "sasst_design", "sasst_features", "sasst_slots", "run_sasst",
    "run_handoff_study", "design_table", "plot_group_means", "profile_label", "AUGMENTATION_CONTRASTS",
    "TESTABILITY_COLUMNS", "testability", "paired_gap", "tag_gap", "toolsandbox_findings", "controls",
]
