"""agentstudies: evaluating LLM agents beyond a single endpoint success rate.

Layers (imports run one way, from the book down to base; ``tests/test_architecture.py``
holds the exact rule):

base      ``results`` (the one result convention), ``parallel`` (keyed_seed, seeded_map),
          ``specs`` (parameter objects), ``findings`` (verdicts), ``episodes`` (episode
          tables from the user's Inspect logs), ``_tolerances``, ``_data``.
envs      environments: ``tau``, ``alfworld``, ``impossible``, ``toolsandbox``.
stats     cluster-level weighted ratios, delta-method contributions, multiplier
          bootstrap, Bonferroni-t bands, effective sample size, paired bootstrap.
methods   ``sasst`` (Selection-Aware Semantic Stress Testing), ``handoff`` (checkpoint
          handoff: Reach x Solve at a verified frontier), ``recovery`` (causal recovery);
          they take plain tables.
agents    one subpackage per environment: policies, the LLM policy, workflow controllers.
studies   one subpackage per study family (``sasst``, ``tau``, ``impossible``,
          ``alfworld.{handoff,training,recovery}``, ``toolsandbox``, ``inspect``): drives an
          environment and agents, or a simulation's data-generating process, into a
          validated table; owns the paper's reference values.
book      everything about the book: chapter, table renderer, site, CLI, runner and
          pipeline, ``book.paper`` (paper-quantity map, comparisons, archived runs).

Moved modules
-------------
Every module that moved into its family subpackage or into ``book/``, old path -> new
path (none of the old paths imports any more; the ``agentstudies`` console script is
``agentstudies.book.cli:main``).

==================================================  ====================================================
old path                                            new path
==================================================  ====================================================
agentstudies.studies._sasst_common                  agentstudies.studies.sasst._common
agentstudies.studies._sasst_neighbourhood           agentstudies.studies.sasst._neighbourhood
agentstudies.studies.sasst_calibration              agentstudies.studies.sasst.calibration
agentstudies.studies.sasst_feasibility              agentstudies.studies.sasst.feasibility
agentstudies.studies.sasst_findings                 agentstudies.studies.sasst.findings
agentstudies.studies.sasst_geometry_audit           agentstudies.studies.sasst.geometry_audit
agentstudies.studies.sasst_geometry                 agentstudies.studies.sasst.geometry
agentstudies.studies.sasst_real_features            agentstudies.studies.sasst.real_features
agentstudies.studies.sasst_small_clusters           agentstudies.studies.sasst.small_clusters
agentstudies.studies.sasst_summaries                agentstudies.studies.sasst.sentences
agentstudies.studies.sasst_tables                   agentstudies.studies.sasst.tables
agentstudies.studies.tau_controller_audit           agentstudies.studies.tau.controller_audit
agentstudies.studies.tau_evaluator                  agentstudies.studies.tau.evaluator
agentstudies.studies.tau_published                  agentstudies.studies.tau.published
agentstudies.studies.tau_workflow                   agentstudies.studies.tau.workflow
agentstudies.studies.impossible_episodes            agentstudies.studies.impossible.run
agentstudies.studies.impossible_rates               agentstudies.studies.impossible.rates
agentstudies.studies.impossible_classifier          agentstudies.studies.impossible.classifier
agentstudies.studies.impossible_findings            agentstudies.studies.impossible.findings
agentstudies.studies.impossible_controls            agentstudies.studies.impossible.controls
agentstudies.studies.impossible_plots               agentstudies.studies.impossible.plots
agentstudies.studies.impossible (module)            agentstudies.studies.impossible (package)
agentstudies.studies.alfworld_handoff_report        agentstudies.studies.alfworld.handoff.report
agentstudies.studies.alfworld_handoff               agentstudies.studies.alfworld.handoff.run
agentstudies.studies.alfworld_training_checkpoints  agentstudies.studies.alfworld.training.checkpoints
agentstudies.studies.alfworld_training_loop         agentstudies.studies.alfworld.training.loop
agentstudies.studies.alfworld_training_pools        agentstudies.studies.alfworld.training.pools
agentstudies.studies.alfworld_training_report       agentstudies.studies.alfworld.training.report
agentstudies.studies.alfworld_training              agentstudies.studies.alfworld.training
agentstudies.studies.alfworld_equal_footing         agentstudies.studies.alfworld.training.equal_footing
agentstudies.studies.alfworld_recovery_harness      agentstudies.studies.alfworld.recovery.harness
agentstudies.studies.alfworld_recovery_pipeline     agentstudies.studies.alfworld.recovery.pipeline
agentstudies.studies.alfworld_recovery_report       agentstudies.studies.alfworld.recovery.report
agentstudies.studies.alfworld_recovery_study        agentstudies.studies.alfworld.recovery.run
agentstudies.studies.alfworld_recovery              agentstudies.studies.alfworld.recovery
agentstudies.studies.toolsandbox                    agentstudies.studies.toolsandbox (code: .run)
agentstudies.studies.inspect_logs                   agentstudies.studies.inspect.findings
agentstudies.chapter                                agentstudies.book.chapter
agentstudies.booktable                              agentstudies.book.table
agentstudies.booksite                               agentstudies.book.site
agentstudies.cli                                    agentstudies.book.cli
agentstudies._book_child                            agentstudies.book._child
agentstudies.runner                                 agentstudies.book.runner
agentstudies.paper_map                              agentstudies.book.paper.map
agentstudies.paper_compare                          agentstudies.book.paper.compare
agentstudies.paper_runs                             agentstudies.book.paper.runs
agentstudies.studies.alfworld_handoff (surface)     agentstudies.studies.alfworld.handoff
agentstudies._pytest_offline                        tests/_pytest_offline.py (pytest plugin)
==================================================  ====================================================
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("agentstudies")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]


def _defer_iri_grammar() -> None:
    """Defer ``rfc3987_syntax``'s grammar build until an IRI is actually checked.

    jsonschema's format module imports ``rfc3987_syntax`` whenever it is installed
    (jupyter-events pulls it in), and that import builds an Earley parser for RFC 3987:
    about 1.4 CPU-s in every process that imports jsonschema -- the runner (papermill,
    nbformat) and every chapter kernel (myst-nb's glue) -- although no validation here
    checks an ``iri`` format. A stand-in module is registered under that name; its
    ``is_valid_syntax`` (and any other attribute) imports the real module on first use and
    delegates, so an IRI check, should one run, gives the real answer. Nothing happens
    when jsonschema or rfc3987_syntax is already imported, or when it is not installed.
    No third-party code is changed.
    """
    import sys

    name = "rfc3987_syntax"
    if name in sys.modules or "jsonschema" in sys.modules:
        return
    import importlib
    import importlib.util
    import types

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return
    if spec is None:
        return

    def _real():
        if sys.modules.get(name) is stub:
            del sys.modules[name]
        return importlib.import_module(name)

    def is_valid_syntax(term, value):
        return _real().is_valid_syntax(term, value)

    stub = types.ModuleType(name, "stand-in for rfc3987_syntax (agentstudies._defer_iri_grammar)")
    stub.__spec__ = spec
    stub.is_valid_syntax = is_valid_syntax

    def __getattr__(attr):
        if attr.startswith("__"):  # import machinery probes (__path__, ...): a plain module
            raise AttributeError(attr)
        return getattr(_real(), attr)

    stub.__getattr__ = __getattr__
    sys.modules[name] = stub


_defer_iri_grammar()
