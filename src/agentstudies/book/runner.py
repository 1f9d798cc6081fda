"""Execute the book's chapter notebooks with papermill and build the HTML book.

The pipeline has two steps:

1. :func:`run_book` executes every chapter listed in ``book/_toc.yml`` (or a chosen
   subset), in TOC order, from ``notebooks/<name>.ipynb`` into
   ``book/chapters/<name>.ipynb``, with the parameters of one profile of
   ``notebooks/profiles.yaml`` (``quick``, ``paper`` or ``smoke``) injected by papermill.
2. :func:`build_book` runs Jupyter Book 1 on ``book/``; it only renders the executed
   copies (``execute_notebooks: off`` in ``book/_config.yml``), it never executes them.

:func:`run_notebook` runs one notebook with any parameters (tests, or rerunning a chapter).

Parameters are validated before anything runs: every key injected (from a profile, from
the caller, or ``n_jobs`` from ``jobs``) must be assigned in the notebook's cell tagged
``parameters``; otherwise :class:`ParameterError` names the parameter, the notebook and
the declared names. ``jobs`` only sets ``n_jobs`` in notebooks that declare ``n_jobs``.
Precedence, lowest first: notebook defaults < profile < ``jobs`` < explicit parameters.

The pipeline lives in :mod:`agentstudies.book`, one job per module: the book model
(:mod:`~agentstudies.book.model`: TOC, profiles, declared parameters, parameter checks,
errors), the kernel environment (:mod:`~agentstudies.book.kernel`), execution
(:mod:`~agentstudies.book.execute`: papermill, staging and atomic swap, interrupts),
scheduling (:mod:`~agentstudies.book.schedule`: in order or side by side, durations) and
the build (:mod:`~agentstudies.book.build`). This module is the public entry point and
re-exports their names (also the private helpers tests and ``chapter`` reach for); code
that needs only the book model imports :mod:`agentstudies.book.model`, which loads no
papermill.

Every function takes ``root`` (the repository root: the folder holding ``book/`` and
``notebooks/``); ``None`` means :func:`find_root`.

Declared parameters are read with :mod:`ast` (top-level assignments of the ``parameters``
cell) rather than papermill's line-based inspector, which misreads values that span
several lines (``cfg = dict(a=1,\\n b=2)`` declares a bogus ``b`` there).
"""

from __future__ import annotations

from agentstudies.book.model import (  # noqa: F401 - re-exported
    BookBuildError, BookError, _CHAPTER_CALL, chapter_of, check_parameter, check_parameter_set, _check_type,
    declared_parameters, DRAW_PARAMETERS, find_root, _kind, _literal, load_profiles,
    NotebookExecutionError, NotebookReadError, Parameter, ParameterError, PROFILES, _range_problem,
    read_notebook, resolve_parameters, _root, run_note, SAMPLE_SIZE_PARAMETERS, toc_chapters,
    _type_problem, UnknownChapterError, _usable_problem,
)
from agentstudies.book.kernel import (  # noqa: F401 - re-exported
    INLINE_BACKEND, KERNEL, _kernel_env, KERNEL_THREAD_ENV, _quiet_progress, QUIET_PROGRESS_ENV,
    resolve_artifacts_env, _restore_env, SCRATCH_ENV, shared_scratch,
)
from agentstudies.book.execute import (  # noqa: F401 - re-exported
    _artifacts_root, _check_output, _exchange, executed_run_info, _hide_injected_parameters,
    _mark_notebook, _missing_ancestors, _note_cell, NOTE_TAG, _notebook_path, _remove_empty,
    run_notebook, _run_targets, RunResult, _signals_blocked, _source_index, strip_widgets, _swap_in,
    WIDGET_MIME_PREFIX,
)
from agentstudies.book.schedule import (  # noqa: F401 - re-exported
    _child_result, _durations, DURATIONS_FILE, _last_seconds, overwrite_report, _record_seconds,
    REFERENCE_DURATIONS_FILE, run_book, _run_side_by_side, _say,
)
from agentstudies.book.build import (  # noqa: F401 - re-exported
    build_book, check_root_page, _jupyter_book_command,
)

__all__ = [
    "PROFILES", "KERNEL", "INLINE_BACKEND", "BookError", "ParameterError", "UnknownChapterError",
    "NotebookExecutionError", "BookBuildError", "Parameter", "RunResult", "find_root",
    "toc_chapters", "load_profiles", "declared_parameters", "resolve_parameters",
    "run_notebook", "run_book", "check_root_page", "build_book",
    "QUIET_PROGRESS_ENV", "strip_widgets", "check_parameter", "check_parameter_set", "NotebookReadError",
    "read_notebook",
]
