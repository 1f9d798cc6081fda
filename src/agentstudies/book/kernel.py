"""The environment a chapter's kernel inherits while it executes: the artifacts folder
(``AGENTSTUDIES_ARTIFACTS``, absolute), the notebook and run record for the chapter's
provenance, matplotlib's inline backend, quiet progress bars, one BLAS thread, and the
run's shared scratch folder. Each is a context manager that restores the caller's
environment afterwards.
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

__all__ = [
    "KERNEL", "INLINE_BACKEND", "resolve_artifacts_env", "QUIET_PROGRESS_ENV", "KERNEL_THREAD_ENV",
    "SCRATCH_ENV", "shared_scratch",
]


#: Jupyter kernel that executes the notebooks.
KERNEL = "python3"

#: Matplotlib backend of the kernel: no window, figures stored in the notebook.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"

def resolve_artifacts_env(value: str | os.PathLike[str], base: Path | None = None) -> Path:
    """Absolute form of an ``AGENTSTUDIES_ARTIFACTS`` value -- one rule for the CLI and
    plain papermill: a relative folder is relative to the folder where the command was
    given. The ``agentstudies`` process never changes folder, so that is its cwd (the
    default ``base``); it hands the kernel the absolute path. A kernel started by plain
    papermill may run elsewhere (``--cwd notebooks``), so :func:`agentstudies.book.chapter.
    artifacts_root` resolves against the shell's ``$PWD``, which papermill passes on
    unchanged.
    """
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    return path.resolve()

@contextmanager
def _kernel_env(root: Path, artifacts: Path | None = None, notebook: Path | None = None,
                run_info: Mapping[str, Any] | None = None) -> Iterator[None]:
    """Environment inherited by the kernel: artifacts folder and a non-GUI matplotlib.

    The backend is matplotlib's inline backend (what ipykernel uses when MPLBACKEND is
    unset), not ``Agg``: it never opens a window either, but unlike ``Agg`` it puts the
    figures into the executed notebook, so they appear in the book. A user's own
    MPLBACKEND (``TkAgg``, ``Agg``...) would drop them, hence it is always overridden.
    ``AGENTSTUDIES_RUN`` (JSON: profile and non-profile parameters) reaches the chapter's
    provenance.
    """
    keys = ("AGENTSTUDIES_ARTIFACTS", "MPLBACKEND", "AGENTSTUDIES_NOTEBOOK", "AGENTSTUDIES_RUN")
    saved = {k: os.environ.get(k) for k in keys}
    # absolute, since the kernel's cwd is the notebooks folder
    artifacts = Path(artifacts or root / "artifacts").expanduser().resolve()
    os.environ["AGENTSTUDIES_ARTIFACTS"] = str(artifacts)
    os.environ["MPLBACKEND"] = INLINE_BACKEND
    if notebook is not None:  # Chapter.from_parameters reads this notebook's parameters cell
        os.environ["AGENTSTUDIES_NOTEBOOK"] = str(Path(notebook).resolve())
    if run_info is not None:
        os.environ["AGENTSTUDIES_RUN"] = json.dumps(run_info, default=repr, sort_keys=True)
    else:
        os.environ.pop("AGENTSTUDIES_RUN", None)
    try:
        yield
    finally:
        _restore_env(saved)

def _restore_env(saved: Mapping[str, str | None]) -> None:
    """Put environment variables back as ``saved`` holds them (``None``: unset)."""
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value

#: Set in the kernel's environment while a notebook executes: progress bars stay out of the
#: saved notebook (tqdm, also ``tqdm.auto``, and Hugging Face's bars read these), so no
#: ipywidgets output and no widget manager from a CDN ends up in the offline book.
QUIET_PROGRESS_ENV = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}

#: BLAS / OpenMP threads of the kernel, where the caller's environment does not set them:
#: one, as inside every seeded_map worker (agentstudies.parallel), so a chapter's in-kernel
#: linear algebra sums in the same order on any machine, and two chapters run side by side
#: (``book --at-once``) do not spin-wait against each other's BLAS threads.
KERNEL_THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

#: Where the run's processes share pure, expensive results (today ALFWorld's PDDL->SAS
#: translations, :data:`agentstudies.envs.alfworld.engine.SCRATCH_ENV`).
SCRATCH_ENV = "AGENTSTUDIES_SCRATCH"

@contextmanager
def shared_scratch() -> Iterator[None]:
    """A scratch folder in :data:`SCRATCH_ENV` for the run's kernels and their workers,
    removed afterwards (nothing outlives the run); an outer run's folder, or one the
    caller set, is kept and left in place."""
    if os.environ.get(SCRATCH_ENV):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="agentstudies-scratch-") as folder:
        os.environ[SCRATCH_ENV] = folder
        try:
            yield
        finally:
            os.environ.pop(SCRATCH_ENV, None)

@contextmanager
def _quiet_progress() -> Iterator[None]:
    """Set :data:`QUIET_PROGRESS_ENV` (and :data:`KERNEL_THREAD_ENV` where unset) for the
    kernel (inherited), restore it afterwards."""
    keys = list(QUIET_PROGRESS_ENV) + list(KERNEL_THREAD_ENV)
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(QUIET_PROGRESS_ENV)
    for k, v in KERNEL_THREAD_ENV.items():
        os.environ.setdefault(k, v)
    try:
        yield
    finally:
        _restore_env(saved)
