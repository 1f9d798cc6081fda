"""The book pipeline, one job per module (issue 22 item 3); :mod:`agentstudies.runner`
re-exports their public names and stays the entry point.

=====================================  ==================================================
:mod:`agentstudies.book.model`         TOC, profiles, declared parameters, parameter checks,
                                       the pipeline's errors (reads files, runs nothing)
:mod:`agentstudies.book.kernel`        the environment a chapter's kernel inherits
:mod:`agentstudies.book.execute`       one notebook: papermill, staging, atomic swap, interrupts
:mod:`agentstudies.book.schedule`      the book's chapters in order or side by side, durations
:mod:`agentstudies.book.build`         the HTML book with Jupyter Book 1
:mod:`agentstudies.book.warm`          set-up only: writes the .pyc files a run imports
=====================================  ==================================================

Each module imports only the ones above it in this table; importing this package imports
none of them, so ``from agentstudies.book.model import toc_chapters`` loads the model alone.
"""
