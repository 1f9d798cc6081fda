"""Write the byte code that a book run and the test suite load, once, at set-up.

``make setup`` installs with ``pip install --no-compile`` and then runs
``python -m agentstudies.book.warm``: it imports every study module and the machinery
around a chapter (kernel, papermill, Jupyter Book's Sphinx, pytest), so Python writes the
``.pyc`` files of exactly what those processes import (about 3,000 modules here).
Byte-compiling the whole ``site-packages`` instead (``compileall``, about 28,000 files,
most of them tests and libraries no chapter imports) took about 120 CPU-s on this
project's 2-core machines; this takes about 10 (measured 2026-12-03).

The Makefile unexports ``PYTHONDONTWRITEBYTECODE`` for its own commands, so whatever a
``make book``/``make test`` run imports beyond this list is also compiled once and kept.
Run directly with that variable set, this module turns writing back on for itself
(``sys.dont_write_bytecode``), since writing the files is its only job.

Errors: an import that fails is reported by name and the exit status is 1 (set-up
stops), since the same import would fail in a chapter later.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["WARM_MODULES", "main"]

#: What a chapter's kernel, the runner, the book build and the tests import (their
#: dependencies follow). Optional heavy back ends (torch for the ``minilm`` encoder) are
#: imported only by the chapters that use them and compile on their first use.
WARM_MODULES: tuple[str, ...] = (
    "agentstudies.book.cli", "agentstudies.book.runner", "agentstudies.book.chapter", "agentstudies.book.site",
    "agentstudies.book.table", "agentstudies.book.build", "agentstudies.book.schedule",
    "agentstudies.studies.alfworld.handoff.run", "agentstudies.studies.alfworld.recovery",
    "agentstudies.studies.alfworld.training", "agentstudies.studies.alfworld.training.equal_footing",
    "agentstudies.studies.impossible", "agentstudies.studies.inspect.findings",
    "agentstudies.studies.sasst.calibration", "agentstudies.studies.sasst.feasibility",
    "agentstudies.studies.sasst.geometry", "agentstudies.studies.sasst.geometry_audit",
    "agentstudies.studies.sasst.real_features", "agentstudies.studies.sasst.small_clusters",
    "agentstudies.studies.sasst.tables", "agentstudies.studies.tau.controller_audit",
    "agentstudies.studies.tau.published", "agentstudies.studies.tau.workflow",
    "agentstudies.studies.toolsandbox.run", "agentstudies.sasst.plots", "agentstudies.handoff",
    "agentstudies.recovery", "agentstudies.studies.sasst.findings", "agentstudies.studies.sasst.sentences",
    "agentstudies.agents.tau", "agentstudies.agents.testing", "agentstudies.envs.tau",
    "agentstudies.envs.alfworld.pools", "agentstudies.envs.alfworld._testing", "agentstudies.episodes",
    "agentstudies.book.paper.runs",
    "matplotlib.pyplot", "matplotlib_inline.backend_inline", "seaborn", "papermill",
    "ipykernel.kernelapp", "ipykernel.ipkernel", "nbclient", "nbformat", "jupyter_client",
    "jupyter_book.cli.main", "myst_nb", "sphinx.application", "sphinx.builders.html",
    "pytest", "xdist", "hypothesis",
)


def main(modules: tuple[str, ...] = WARM_MODULES) -> int:
    """Import ``modules`` with byte-code writing on; returns the exit status (0, or 1 if
    any import failed, each failure printed to stderr with its module name)."""
    sys.dont_write_bytecode = False
    failed = 0
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # report every failure, not only the first
            print(f"agentstudies.book.warm: importing {name} failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
