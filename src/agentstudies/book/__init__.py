"""Everything about the book, one job per module. Importing this package imports none of
them, so ``from agentstudies.book.model import toc_chapters`` loads the model alone.

=====================================  ==================================================
:mod:`agentstudies.book.chapter`       a chapter's parameters, glue, artifacts and provenance
                                       (``Chapter``), as a notebook uses it
:mod:`agentstudies.book.table`         the one table renderer (``Table``, ``render_table``)
:mod:`agentstudies.book.site`          the Sphinx extension: generated indexes, numbering,
                                       thebe off
:mod:`agentstudies.book.cli`           the ``agentstudies`` command
:mod:`agentstudies.book.runner`        the pipeline's public entry point (re-exports the
                                       five modules below)
:mod:`agentstudies.book.model`         TOC, profiles, declared parameters, parameter checks,
                                       the pipeline's errors (reads files, runs nothing)
:mod:`agentstudies.book.kernel`        the environment a chapter's kernel inherits
:mod:`agentstudies.book.execute`       one notebook: papermill, staging, atomic swap, interrupts
:mod:`agentstudies.book.schedule`      the book's chapters in order or side by side, durations
                                       (side by side: ``python -m agentstudies.book._child``)
:mod:`agentstudies.book.build`         the HTML book with Jupyter Book 1
:mod:`agentstudies.book.warm`          set-up only: writes the .pyc files a run imports
:mod:`agentstudies.book.paper`         the papers beside our numbers: the paper-quantity map,
                                       comparisons, archived paper-profile runs
=====================================  ==================================================

Within the pipeline (model ... build) each module imports only the ones above it.
"""
