"""The τ-bench / τ²-bench studies, one public module per chapter or job:

* :mod:`~agentstudies.studies.tau.workflow` -- the workflow stress test on τ² retail /
  airline (chapter ``tau_workflow_stress``);
* :mod:`~agentstudies.studies.tau.controller_audit` -- the controller audit (chapter
  ``tau_controller_audit``);
* :mod:`~agentstudies.studies.tau.evaluator` -- does the evaluator decide a comparison
  (tables for both chapters);
* :mod:`~agentstudies.studies.tau.published` -- τ-bench's published runs (chapter
  ``tau_published_runs``);
* :mod:`~agentstudies.studies.tau.leaderboard` -- pass^k across the τ²-bench leaderboard's
  published models, the submitters' aggregates (same chapter), with its figures in
  :mod:`~agentstudies.studies.tau.plots`.

Importing this package imports none of them.
"""

__all__: list[str] = []
