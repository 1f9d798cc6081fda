"""Impossible coding tasks: cheating rates, workflows and a mid-episode reminder.

Study driver of the ``impossible_cheating`` and ``impossible_workflows`` chapters.
ImpossibleBench (Zhong, Raghunathan & Carlini, 2025) on HumanEval: the variant table of
:mod:`agentstudies.envs.impossible` (verified impossible one-off / conflicting variants),
**simulated** coding agents (:class:`agentstudies.agents.impossible.SimulatedCodingAgent`) whose every
submission really runs in the sandbox, and the book's protocols on top:

* :func:`simulate_episodes` -- one seeded-map item per task (all its variants x workflows x
  policies x replicates, with a per-task memo of identical submissions, whose verdicts are
  reused across tasks and studies of a build by :func:`~agentstudies.envs.impossible.run_cached`)
  -> episode and attempt tables and the sandbox throughput;
* :func:`cheating_rates` -- the paper's estimand, the pass rate on an impossible variant,
  by stratum with task-cluster bootstrap intervals (:class:`RateResult`);
* :func:`classifier_confusion` -- the artefact classifier against the agents' known
  strategies;
* :func:`workflow_sasst` -- SASST on the workflow comparison over task features;
* :func:`reminder_forks` + :func:`reminder_analysis` -- paired forks after the first failing
  run, with and without a specification reminder, analysed with
  :func:`agentstudies.recovery.analyze_paired` (rescue / harm).

One job per module, all importable from here: :mod:`~agentstudies.studies.impossible.run`
(tasks, episodes), :mod:`~agentstudies.studies.impossible.rates` (estimands, summaries, SASST,
reminder forks), :mod:`~agentstudies.studies.impossible.classifier` (classifier validation,
HumanEval audit), :mod:`~agentstudies.studies.impossible.findings` (findings, testability),
:mod:`~agentstudies.studies.impossible.controls` (planted controls) and
:mod:`~agentstudies.studies.impossible.plots` (figures). The real-data chapter
``impossible_real`` imports its two modules directly (not re-exported here):
:mod:`~agentstudies.studies.impossible.real_runs` (the labelled Impossible-LiveCodeBench
runs of an independent audit, re-analysed) and :mod:`~agentstudies.studies.impossible.real_code`
(GPT-4's published HumanEval solutions through the sandbox).

The paper's approximate headline numbers live in ``data/paper/impossible_cheating_headlines.csv``
(:func:`paper_headlines`) and are only ever shown beside ours, labelled
"paper (approx.)".
"""

from __future__ import annotations

from agentstudies.findings import controls_sentence
from agentstudies.studies.impossible.classifier import (
    attempt_truth, audit_summary, classifier_confusion, classifier_corpus, corpus_confusion, corpus_recall,
)
from agentstudies.studies.impossible.controls import CONTROL_SUBJECTS, impossible_controls
from agentstudies.studies.impossible.run import (
    BASE_WORKFLOW, IMPOSSIBLE_KINDS, StudyRun, load_tasks, simulate_episodes,
)
from agentstudies.studies.impossible.findings import (
    PAPER_FINDINGS, TESTABILITY_COLUMNS, cheating_findings, rate_difference, reminder_harm_sentence,
    reminder_testability, testability_sentence, workflow_findings, workflow_testability,
)
from agentstudies.studies.impossible.plots import plot_confusion, plot_difficulty, plot_rates, plot_rescue_harm
from agentstudies.studies.impossible.rates import (
    RateResult, agent_label, agents_label, cheating_rates, difficulty_bins, headline_directions, labelled,
    legit_pass_rates, paper_headlines, reminder_analysis, reminder_forks, strategy_mix, variant_summary,
    workflow_sasst,
)

__all__ = [
    "load_tasks", "simulate_episodes", "StudyRun", "RateResult", "cheating_rates", "strategy_mix",
    "classifier_confusion", "attempt_truth", "difficulty_bins", "variant_summary", "paper_headlines",
    "headline_directions", "workflow_sasst", "reminder_forks", "reminder_analysis",
    "plot_rates", "plot_confusion", "plot_difficulty", "plot_rescue_harm", "IMPOSSIBLE_KINDS", "BASE_WORKFLOW",
    "legit_pass_rates", "labelled", "agent_label", "agents_label", "classifier_corpus", "corpus_confusion",
    "corpus_recall", "audit_summary", "PAPER_FINDINGS", "TESTABILITY_COLUMNS", "CONTROL_SUBJECTS",
    "workflow_testability", "reminder_testability", "rate_difference", "cheating_findings", "workflow_findings",
    "impossible_controls", "controls_sentence", "testability_sentence", "reminder_harm_sentence",
]
