"""Causal recovery evaluation on the real ALFWorld engine (CIR paper protocol): the
public surface, one name per job, from these modules:

* :mod:`agentstudies.studies.alfworld.recovery.harness` -- the fork harness of one task
  (:func:`run_task`, each fork a :class:`Fork`; the protocol, the observation conditions
  and the stale admissible-list rule in its docstring);
* :mod:`agentstudies.studies.alfworld.recovery.run` -- cohort pools, the run over every
  task (:func:`run_recovery_study` -> :class:`RecoveryStudy`), model cost;
* :mod:`agentstudies.studies.alfworld.recovery.pipeline` -- the Causal Intervention
  Router fitted, frozen and evaluated (:func:`router_pipeline` -> :class:`RouterPipeline`);
* :mod:`agentstudies.studies.alfworld.recovery.report` -- the paper's tables
  (:class:`RecoveryTables`, ``tables.table("delta" | "counts" | "mechanism" | "router")``),
  findings, planted controls; what each arm changed (:func:`testability`,
  :func:`testability_summary`, :func:`refresh_reach`) from
  :mod:`~agentstudies.studies.alfworld.recovery.arms`, the chapter's sentences from
  :mod:`~agentstudies.studies.alfworld.recovery.sentences`. The harness's other constants
  (``LOOK_FORMATS``, ``MISSING_TEXT``, ``PAPER_COHORT_SIZES``, ``POLICY_FEATURES``) and
  ``CONTROL_SUBJECTS`` stay in their modules.

Notebooks, tests and readers import from here (``from agentstudies.studies.alfworld
import recovery as ar``); a test that swaps the harness's worker env uses
:mod:`~agentstudies.studies.alfworld.recovery.testing`.
"""

from __future__ import annotations

from agentstudies.studies.alfworld.recovery.harness import (ABLATED_TEXT, COHORT_DESIGNS, CONDITIONS, DELAYS,
                                                            OPERATIONS, REPLAN_TEXT, STALE_ADMISSIBLE,
                                                            Fork, format_reply, run_task)
from agentstudies.studies.alfworld.recovery.pipeline import (HORIZON_FEATURES, RouterPipeline, horizon_leak,
                                                             router_pipeline)
from agentstudies.studies.alfworld.recovery.report import (TESTABILITY_COLUMNS, RecoveryTables, archived_run_sentences,
                                                           controls_sentence, paper_table, reappearance_table,
                                                           recovery_controls, recovery_findings, refresh_reach,
                                                           router_sentences, testability, testability_summary)
from agentstudies.studies.alfworld.recovery.sentences import (agent_view_sentence, clean_success_sentence,
                                                              reach_sentence, untestable_sentence)
from agentstudies.studies.alfworld.recovery.run import RecoveryStudy, cohort_pools, llm_cost, run_recovery_study

__all__ = [
    "ABLATED_TEXT",
    "CONDITIONS",
    "COHORT_DESIGNS",
    "DELAYS",
    "Fork",
    "HORIZON_FEATURES",
    "OPERATIONS",
    "REPLAN_TEXT",
    "RecoveryStudy",
    "RecoveryTables",
    "RouterPipeline",
    "STALE_ADMISSIBLE",
    "TESTABILITY_COLUMNS",
    "agent_view_sentence",
    "archived_run_sentences",
    "clean_success_sentence",
    "cohort_pools",
    "controls_sentence",
    "format_reply",
    "horizon_leak",
    "llm_cost",
    "paper_table",
    "reach_sentence",
    "reappearance_table",
    "recovery_controls",
    "recovery_findings",
    "refresh_reach",
    "router_pipeline",
    "router_sentences",
    "run_recovery_study",
    "run_task",
    "testability",
    "testability_summary",
    "untestable_sentence",
]
