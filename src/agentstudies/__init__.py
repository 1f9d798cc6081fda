"""agentstudies: evaluating LLM agents beyond a single endpoint success rate.

Layers (imports run one way, from studies down to base; ``tests/test_architecture.py``
holds the exact rule):

base      ``results`` (the one result convention: summary / tidy to_frame / get / params /
          provenance), ``parallel`` (keyed_seed, seeded_map), ``_tolerances``.
envs      environments: ``tau`` (tau2-bench retail/airline from inspect-evals), ``alfworld``
          (generated problems on the real engine); impossible-task and tool-sandbox
          environment families join here.
stats     cluster-level weighted ratios, delta-method contributions, multiplier
          bootstrap, Bonferroni-t bands, effective sample size, paired bootstrap.
methods   ``sasst`` (Selection-Aware Semantic Stress Testing, Xu et al., 2026) and
          ``handoff`` (checkpoint handoff: Reach x Solve at a verified frontier); they take
          plain tables. A recovery method family joins here.
agents    policy protocol, scripted (simulated) policies, workflow controllers.
studies   one module per study: drives an environment and agents, or a simulation's
          data-generating process, into a validated table; owns the paper's reference values.
book      ``chapter`` (provenance and artifacts of a chapter), ``runner``, ``cli``.
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("agentstudies")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]


def _defer_iri_grammar() -> None:
    """Defer ``rfc3987_syntax``'s grammar build until an IRI is actually checked (issue 31).

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
