"""Causal recovery evaluation on the real ALFWorld engine (CIR paper protocol): the
public surface, one name per job, from four modules:

* :mod:`agentstudies.studies.alfworld.recovery.harness` -- the fork harness of one task
  (:func:`run_task`, each fork a :class:`Fork`; the protocol, the observation conditions
  and the stale admissible-list rule in its docstring);
* :mod:`agentstudies.studies.alfworld.recovery.run` -- cohort pools, the run over every
  task (:func:`run_recovery_study` -> :class:`RecoveryStudy`), model cost;
* :mod:`agentstudies.studies.alfworld.recovery.pipeline` -- the Causal Intervention
  Router fitted, frozen and evaluated (:func:`router_pipeline` -> :class:`RouterPipeline`);
* :mod:`agentstudies.studies.alfworld.recovery.report` -- the paper's tables
  (:class:`RecoveryTables`, ``tables.table("delta" | "counts" | "mechanism" | "router")``),
  testability, findings, planted controls and the chapter's sentences.

Notebooks, tests and readers import from here (``from agentstudies.studies.alfworld
import recovery as ar``); a test that swaps the harness's worker env uses
:mod:`~agentstudies.studies.alfworld.recovery.testing`.
"""

from __future__ import annotations

from agentstudies.studies.alfworld.recovery.harness import (ABLATED_TEXT, COHORT_DESIGNS, CONDITIONS, DELAYS,
                                                            LOOK_FORMATS, MISSING_TEXT, OPERATIONS,
                                                            PAPER_COHORT_SIZES, POLICY_FEATURES, REPLAN_TEXT,
                                                            ROUTER_DELAYS, STALE_ADMISSIBLE, Fork,
                                                            format_reply, run_task)
from agentstudies.studies.alfworld.recovery.pipeline import (HORIZON_FEATURES, RouterPipeline, horizon_leak,
                                                             router_pipeline)
from agentstudies.studies.alfworld.recovery.report import (CONTROL_SUBJECTS, TESTABILITY_COLUMNS, RecoveryTables,
                                                           archived_run_sentences, controls_sentence, paper_table,
                                                           reappearance_table,
                                                           recovery_controls, recovery_findings, router_sentences,
                                                           testability)
from agentstudies.studies.alfworld.recovery.run import RecoveryStudy, cohort_pools, llm_cost, run_recovery_study

__all__ = [
    "ABLATED_TEXT",
    "CONDITIONS",
    "COHORT_DESIGNS",
    "CONTROL_SUBJECTS",
    "DELAYS",
    "Fork",
    "HORIZON_FEATURES",
    "LOOK_FORMATS",
    "MISSING_TEXT",
    "OPERATIONS",
    "PAPER_COHORT_SIZES",
    "POLICY_FEATURES",
    "REPLAN_TEXT",
    "ROUTER_DELAYS",
    "RecoveryStudy",
    "RecoveryTables",
    "RouterPipeline",
    "STALE_ADMISSIBLE",
    "TESTABILITY_COLUMNS",
    "archived_run_sentences",
    "cohort_pools",
    "controls_sentence",
    "format_reply",
    "horizon_leak",
    "llm_cost",
    "paper_table",
    "reappearance_table",
    "recovery_controls",
    "recovery_findings",
    "router_pipeline",
    "router_sentences",
    "run_recovery_study",
    "run_task",
    "testability",
]
