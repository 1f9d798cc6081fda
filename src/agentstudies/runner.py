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

Every function takes ``root`` (the repository root: the folder holding ``book/`` and
``notebooks/``); ``None`` means :func:`find_root`.

Declared parameters are read with :mod:`ast` (top-level assignments of the ``parameters``
cell) rather than papermill's line-based inspector, which misreads values that span
several lines (``cfg = dict(a=1,\\n b=2)`` declares a bogus ``b`` there).
"""

from __future__ import annotations

import ast
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import nbformat
import yaml

__all__ = [
    "PROFILES", "KERNEL", "INLINE_BACKEND", "BookError", "ParameterError", "UnknownChapterError",
    "NotebookExecutionError", "BookBuildError", "Parameter", "RunResult", "find_root",
    "toc_chapters", "load_profiles", "declared_parameters", "resolve_parameters",
    "run_notebook", "run_book", "check_root_page", "build_book",
    "QUIET_PROGRESS_ENV", "strip_widgets", "check_parameter", "NotebookReadError", "read_notebook",
]

#: Profile names allowed in ``notebooks/profiles.yaml``.
PROFILES = ("quick", "paper", "smoke")
#: Jupyter kernel that executes the notebooks.
KERNEL = "python3"
#: Matplotlib backend of the kernel: no window, figures stored in the notebook.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


class BookError(Exception):
    """Base class of the pipeline's errors; the CLI prints the message, no traceback."""


class ParameterError(BookError, ValueError):
    """Unknown parameter, missing/unparsable ``parameters`` cell, or a bad profiles file."""


class UnknownChapterError(BookError, ValueError):
    """A chapter name that is not in ``book/_toc.yml``, or a missing notebook."""


class NotebookExecutionError(BookError, RuntimeError):
    """A cell raised while papermill executed a notebook.

    Attributes: ``notebook`` (name), ``cell_index`` (0-based index of the failing cell in
    the *source* notebook; -1 if unknown), ``ename``, ``evalue`` and ``output_path`` (the
    partially executed notebook, kept for inspection). Also raised, with ``ename``
    ``DeadKernelError``, when the kernel dies (crash, out of memory).
    """

    def __init__(self, notebook: str, cell_index: int, ename: str, evalue: str, output_path: Path):
        self.notebook, self.cell_index = notebook, cell_index
        self.ename, self.evalue, self.output_path = ename, evalue, output_path
        where = f" in cell {cell_index}" if cell_index >= 0 else ""
        super().__init__(
            f"notebook {notebook} failed{where} with {ename}: {evalue}\n"
            f"partially executed notebook kept at {output_path}"
        )


class BookBuildError(BookError, RuntimeError):
    """Jupyter Book could not be run, failed, or a chapter has not been executed yet."""


@dataclass(frozen=True)
class Parameter:
    """One assignment of a ``parameters`` cell: name, default (source text), comment."""

    name: str
    default: str
    help: str = ""


@dataclass(frozen=True)
class RunResult:
    """Outcome of one executed notebook: injected parameters and wall time (seconds)."""

    name: str
    input_path: Path
    output_path: Path
    parameters: dict[str, Any]
    seconds: float
    artifacts: Path | None = None

    def summary(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.parameters.items()) or "defaults"
        line = f"ok  {self.name:<28} {self.seconds:8.1f} s  [{params}] -> {self.output_path}"
        if self.artifacts is not None:
            line += f"\n    tables and figures: {self.artifacts}"
        return line


# --------------------------------------------------------------------------- layout
def find_root(start: Path | None = None) -> Path:
    """Repository root: the first of ``start`` (default: cwd) and its parents that holds
    ``book/_toc.yml`` and ``notebooks/``; else the source tree this module lives in.

    Raises
    ------
    BookError
        If no such folder is found.
    """
    here = Path(start or Path.cwd()).resolve()
    candidates = [here, *here.parents, Path(__file__).resolve().parents[2]]
    for folder in candidates:
        if (folder / "book" / "_toc.yml").is_file() and (folder / "notebooks").is_dir():
            return folder
    raise BookError(
        f"cannot find the repository root (a folder with book/_toc.yml and notebooks/) "
        f"from {here}; run inside the repository or pass --root"
    )


def _root(root: Path | str | None) -> Path:
    return find_root() if root is None else Path(root).resolve()


def toc_chapters(root: Path | str | None = None) -> list[str]:
    """Chapter names in TOC order: every ``file: chapters/<name>`` entry of ``book/_toc.yml``
    (any nesting of parts/chapters/sections). Other entries (e.g. ``intro``) are pages
    that are not executed.

    Raises
    ------
    BookError
        If the TOC is missing, or an entry is ``chapters/<a>/<b>`` or listed twice.
    """
    toc_path = _root(root) / "book" / "_toc.yml"
    if not toc_path.is_file():
        raise BookError(f"table of contents {toc_path} does not exist")
    names: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            file = node.get("file")
            if isinstance(file, str) and file.startswith("chapters/"):
                name = file.removeprefix("chapters/").removesuffix(".ipynb")
                if "/" in name or not name:
                    raise BookError(f"{toc_path}: chapter entry {file!r} must be chapters/<name>")
                if name in names:
                    raise BookError(f"{toc_path}: chapter {name!r} is listed twice")
                names.append(name)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load(toc_path.read_text()) or {})
    return names


def load_profiles(root: Path | str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """Read ``notebooks/profiles.yaml`` as ``{chapter: {profile: {param: value}}}``.

    A missing file, chapter or profile means "notebook defaults" (empty dict).

    Raises
    ------
    ParameterError
        If the file is not ``chapters: {<name>: {<profile>: {<param>: value}}}`` or uses a
        profile name other than quick/paper/smoke.
    """
    path = _root(root) / "notebooks" / "profiles.yaml"
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict) or set(data) - {"chapters"}:
        raise ParameterError(f"{path}: the only top-level key must be 'chapters', got {list(data)}")
    chapters = data.get("chapters") or {}
    if not isinstance(chapters, dict):
        raise ParameterError(f"{path}: 'chapters' must map chapter names to profiles")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for chapter, profiles in chapters.items():
        profiles = profiles or {}
        if not isinstance(profiles, dict):
            raise ParameterError(f"{path}: chapter {chapter!r} must map profile names to parameters")
        unknown = sorted(set(profiles) - set(PROFILES))
        if unknown:
            raise ParameterError(
                f"{path}: chapter {chapter!r} has unknown profile(s) {unknown}; "
                f"allowed: {', '.join(PROFILES)}"
            )
        for prof, params in profiles.items():
            if params is not None and not isinstance(params, dict):
                raise ParameterError(f"{path}: {chapter}.{prof} must be a mapping of parameters")
        out[str(chapter)] = {p: dict(v or {}) for p, v in profiles.items()}
    return out


class NotebookReadError(BookError, ValueError):
    """A file that is not a readable Jupyter notebook (truncated, not JSON, bad schema)."""


def read_notebook(path: Path | str) -> Any:
    """``nbformat.read(path, as_version=4)``, with one clear line instead of nbformat's
    traceback when the file is not a notebook.

    Raises
    ------
    NotebookReadError
        Naming the file, the reason (first line of nbformat's message) and how to restore it.
    """
    path = Path(path)
    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # noqa: BLE001 - NotJSONError, ValidationError, UnicodeDecodeError ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise NotebookReadError(
            f"notebook {path} is not a readable Jupyter notebook ({type(exc).__name__}: {first}); "
            f"it may be truncated or hand-edited: restore it from the repository (git checkout -- {path})"
        ) from None


# ----------------------------------------------------------------------- parameters
def declared_parameters(notebook: Path | str) -> dict[str, Parameter]:
    """Parameters declared by the notebook's cell tagged ``parameters``, in order.

    Each top-level assignment ``name = value`` or ``name: type = value`` (also
    ``a, b = ...``) declares ``name``; a trailing ``# comment`` becomes its help text.

    Raises
    ------
    ParameterError
        If the notebook has no cell tagged ``parameters`` or that cell is not valid Python.
    NotebookReadError
        If the file is not a readable notebook (see :func:`read_notebook`).
    FileNotFoundError
        If the notebook does not exist.
    """
    path = Path(notebook)
    if not path.is_file():
        raise FileNotFoundError(f"notebook {path} does not exist")
    nb = read_notebook(path)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not cells or cells[0].cell_type != "code":
        raise ParameterError(
            f"notebook {path.stem} ({path}) has no code cell tagged 'parameters'; "
            "tag the cell holding its default parameters"
        )
    source = cells[0].source
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ParameterError(f"parameters cell of notebook {path.stem} is not valid Python: {exc}") from exc
    comments = {
        tok.start[0]: tok.string.lstrip("#").strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    found: dict[str, Parameter] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = []
        for target in targets:
            elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            names += [e.id for e in elts if isinstance(e, ast.Name)]
        default = ast.get_source_segment(source, value) or ""
        for name in names:
            found[name] = Parameter(name, default, comments.get(node.end_lineno, ""))
    return found


def resolve_parameters(
    notebook: Path | str,
    profile: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    jobs: int | None = None,
    *,
    root: Path | str | None = None,
    chapter: str | None = None,
) -> dict[str, Any]:
    """The parameters papermill will inject into ``notebook`` (defaults are not included).

    Merges, lowest precedence first: ``profile``'s entry for the notebook (looked up by
    ``chapter``, default the file stem, in ``notebooks/profiles.yaml``; missing = {}),
    ``n_jobs=jobs`` if the notebook declares ``n_jobs``, then ``parameters``.

    Raises
    ------
    ParameterError
        For a key that the notebook does not declare (naming parameter, notebook and the
        declared names), an unknown profile name, or a notebook without ``parameters`` cell.
    """
    path = Path(notebook)
    if profile is not None and profile not in PROFILES:
        raise ParameterError(f"unknown profile {profile!r}; allowed: {', '.join(PROFILES)}")
    declared = declared_parameters(path)
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if profile is not None:
        prof = load_profiles(root).get(chapter or path.stem, {}).get(profile, {})
        merged.update(prof)
        sources.update({k: f"profile {profile!r} in notebooks/profiles.yaml" for k in prof})
    if jobs is not None and "n_jobs" in declared:
        merged["n_jobs"] = int(jobs)
        sources["n_jobs"] = "--jobs"
    merged.update(parameters or {})
    sources.update({k: "the given parameters" for k in parameters or {}})
    for key in merged:
        if key not in declared:
            raise ParameterError(
                f"unknown parameter {key!r} for notebook {path.stem} (from {sources[key]}); "
                f"declared: {', '.join(declared) or '(none)'}"
            )
        _check_type(path.stem, declared[key], merged[key], sources[key])
    return merged


def _check_type(notebook: str, param: Parameter, value: Any, source: str) -> None:
    """Reject a value whose type or range cannot stand for the declared default's.

    The default's type is read from its literal (``0`` -> int, ``0.5`` -> float,
    ``"x"`` -> str, ``[..]`` -> list, ``{..}`` -> dict, ``True`` -> bool). An int is
    accepted for a float. ``None`` is accepted only where the default is ``None`` or a
    string (an explicit "off", e.g. ``compare_encoder: null``); ``-p n_tasks None`` is an
    error. A list default whose elements share one type checks every element of the
    value against it, recursively (``-p sim_seeds [a,b]`` is an error naming the element).
    Ranges: ``seed``, ``*_seed`` and the elements of ``*_seeds`` are integers >= 0 (numpy
    refuses negative seeds); a count ``n_*`` is >= 0 (``n_jobs``: non-zero); a confidence
    ``level``, ``*_level`` or ``alpha`` lies strictly between 0 and 1. Usability
    (:func:`_usable_problem`): numbers finite, sample sizes and draw counts >= 1. A default
    that is not a literal accepts anything.
    """
    try:
        default = ast.literal_eval(param.default)
    except (ValueError, SyntaxError, TypeError):
        return
    problem = _type_problem(default, value, "")
    if problem is None:
        problem = _range_problem(param.name, value)
    if problem is None:
        problem = _usable_problem(param.name, value)
    if problem is not None:
        raise ParameterError(
            f"parameter {param.name!r} of notebook {notebook} {problem} (from {source}); "
            f"default: {param.default}"
        )


def _kind(default: Any) -> str:
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", tuple: "list",
            dict: "dict"}.get(type(default), "")


def _type_problem(default: Any, value: Any, where: str) -> str | None:
    """Why ``value`` cannot stand for ``default`` (None: it can); ``where`` names an element."""
    if default is None:
        return None
    kind = _kind(default)
    if not kind:
        return None
    if value is None:
        if kind == "str" and not where:
            return None
        return f"expects {kind} like its default{where}; got None"
    ok = {
        "bool": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "list": lambda v: isinstance(v, (list, tuple)),
        "dict": lambda v: isinstance(v, dict),
    }[kind](value)
    if not ok:
        return f"expects {kind} like its default{where}; got {type(value).__name__} {value!r}"
    if kind == "list" and default:
        kinds = {_kind(d) for d in default}
        if len(kinds) == 1 and "" not in kinds:
            proto = default[0]
            for i, item in enumerate(value):
                inner = _type_problem(proto, item, f"{where} element [{i}]")
                if inner is not None:
                    return inner
    return None


def _range_problem(name: str, value: Any) -> str | None:
    def ints(v: Any) -> list[int]:
        if isinstance(v, (list, tuple)):
            return [x for item in v for x in ints(item)]
        return [v] if isinstance(v, int) and not isinstance(v, bool) else []

    if name == "seed" or name.endswith("_seed") or name.endswith("_seeds"):
        bad = [v for v in ints(value) if v < 0]
        if bad:
            return f"must be a non-negative integer seed (numpy refuses negative seeds); got {bad[0]}"
    elif name == "n_jobs":
        if value == 0:
            return "must be a positive number of workers (or -1 for all cores); got 0"
    elif name.startswith("n_") and isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            return f"is a count and must be >= 0; got {value}"
    elif name in ("level", "alpha") or name.endswith("_level"):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not 0 < value < 1:
            return f"is a probability and must lie strictly between 0 and 1; got {value}"
    return None


#: Counts that set a chapter's sample (tasks, trials, clusters, seeds): a value below 1 passes
#: the type and ``n_* >= 0`` checks but leaves the chapter nothing to estimate from (``-p n_tasks
#: 0`` failed inside the notebook with "zero-size array").
SAMPLE_SIZE_PARAMETERS = frozenset({
    "n_tasks", "n_tasks_b", "n_tasks_per_type", "n_ext_per_type", "tasks_per_type", "train_tasks_per_type",
    "sft_tasks_per_type", "eval_tasks_per_type", "n_trials", "n_trials_b", "n_trials_control", "n_audit_trials",
    "n_clusters", "n_seeds", "n_validation_tasks", "n_recovery_tasks", "epochs", "k", "n_kernel_seeds",
})
#: Resample counts behind the intervals and bands a chapter shows: 0 draws gives NaN intervals
#: (``method_recovery -p n_boot 0`` "succeeded" with NaN intervals before this check).
DRAW_PARAMETERS = frozenset({"n_boot", "n_draws", "n_multiplier"})


def _usable_problem(name: str, value: Any) -> str | None:
    """Why an in-type, in-range value still cannot work (``None``: it can), issue 24.

    Checked before a run (``agentstudies run``/``book``) and inside the kernel by
    :meth:`agentstudies.chapter.Chapter.from_parameters` (plain papermill): NaN or +/-inf for
    any number (``-p min_ess inf`` failed with ``KeyError: None``), a sample-size count of
    :data:`SAMPLE_SIZE_PARAMETERS` below 1, a draw count of :data:`DRAW_PARAMETERS` below 1 or
    so large that one float64 replicate per draw exceeds the bootstrap's memory bound
    (:data:`agentstudies.stats.MAX_REPLICATE_BYTES`). Counts that may be 0 (``n_stability = 0`` skips the stability check) are not listed.
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return (f"must be a finite number; got {value} (a non-finite threshold or setting selects nothing "
                "and fails inside the notebook)")
    if name in SAMPLE_SIZE_PARAMETERS and value < 1:
        return f"sets the chapter's sample and must be >= 1; got {value} (no tasks, trials or seeds to estimate from)"
    if name in DRAW_PARAMETERS and value < 1:
        return (f"is the number of resamples behind the intervals this chapter shows and must be >= 1; "
                f"got {value} (0 draws gives NaN intervals)")
    if name in DRAW_PARAMETERS:
        from agentstudies.stats import MAX_REPLICATE_BYTES

        need = float(value) * 8.0  # at least one float64 replicate per draw
        if need > MAX_REPLICATE_BYTES:
            return (f"is too large: {value:,} resamples hold at least {need / 2**30:,.1f} GiB of replicates "
                    f"(one float64 each; bound {MAX_REPLICATE_BYTES / 2**30:.0f} GiB, "
                    "agentstudies.stats.check_resample_budget); the papers use 2,000-100,000")
    return None


def check_parameter(notebook: str, param: Parameter, value: Any, source: str) -> None:
    """Check one parameter value as :func:`resolve_parameters` does: type like the default,
    range (seeds, counts, levels) and usability (finite numbers, sample sizes and draws >= 1).

    Raises
    ------
    ParameterError
        Naming the parameter, the notebook, the problem, ``source`` and the default.
    """
    _check_type(notebook, param, value, source)


# ------------------------------------------------------------------------ execution
def resolve_artifacts_env(value: str | os.PathLike[str], base: Path | None = None) -> Path:
    """Absolute form of an ``AGENTSTUDIES_ARTIFACTS`` value -- one rule for the CLI and
    plain papermill: a relative folder is relative to the folder where the command was
    given. The ``agentstudies`` process never changes folder, so that is its cwd (the
    default ``base``); it hands the kernel the absolute path. A kernel started by plain
    papermill may run elsewhere (``--cwd notebooks``), so :func:`agentstudies.chapter.
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


# ------------------------------------------------- progress bars and widgets (the book)
#: Set in the kernel's environment while a notebook executes: progress bars stay out of the
#: saved notebook (tqdm, also ``tqdm.auto``, and Hugging Face's bars read these), so no
#: ipywidgets output and no widget manager from a CDN ends up in the offline book.
QUIET_PROGRESS_ENV = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}

#: MIME types of ipywidgets outputs (``...widget-view+json``) and notebook widget state.
WIDGET_MIME_PREFIX = "application/vnd.jupyter.widget"


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


def strip_widgets(notebook: Path | str) -> int:
    """Remove every ipywidgets output and the widget state from an executed notebook.

    An output carrying a ``application/vnd.jupyter.widget-*`` MIME bundle (e.g. a
    ``tqdm.auto`` progress bar) is dropped whole: its ``text/plain`` fallback is a stale
    bar, and rendering the widget makes the book load require.js and a widget manager
    from a CDN. The notebook's ``metadata.widgets`` (saved widget state) is removed too.
    The file is rewritten only if something was removed.

    Returns the number of outputs removed.
    """
    path = Path(notebook)
    nb = nbformat.read(path, as_version=4)
    removed = 0
    for cell in nb.cells:
        outputs = cell.get("outputs")
        if not outputs:
            continue
        kept = [o for o in outputs
                if not any(str(m).startswith(WIDGET_MIME_PREFIX) for m in o.get("data", {}))]
        removed += len(outputs) - len(kept)
        cell["outputs"] = kept
    had_state = nb.metadata.pop("widgets", None) is not None
    if removed or had_state:
        nbformat.write(nb, path)
    return removed


def _notebook_path(name_or_path: Path | str, root: Path) -> tuple[Path, bool]:
    """The notebook to run and whether it is a book chapter (``notebooks/<name>.ipynb``).

    Raises
    ------
    UnknownChapterError
        For a chapter name without notebook (lists the chapters) or a missing file.
    """
    text = str(name_or_path)
    if text.endswith(".ipynb") or os.sep in text or "/" in text:
        path = Path(text).expanduser().resolve()
        if not path.is_file():
            raise UnknownChapterError(f"notebook {path} does not exist")
        chapter_file = root / "notebooks" / path.name
        return path, chapter_file.is_file() and chapter_file.resolve() == path
    path = root / "notebooks" / f"{text}.ipynb"
    if not path.is_file():
        try:
            chapters = toc_chapters(root)
        except BookError:
            chapters = []
        raise UnknownChapterError(
            f"no chapter named {text!r} (notebook {path} does not exist); chapters in "
            f"book/_toc.yml: {', '.join(chapters) or '(none)'}; or give a path to a .ipynb file"
        )
    return path, True


_CHAPTER_CALL = re.compile(r"""Chapter(?:\.from_parameters)?\(\s*["']([A-Za-z0-9_\-]+)["']""")


def chapter_of(notebook: Path | str) -> str | None:
    """The chapter name a notebook passes to ``Chapter(...)``/``Chapter.from_parameters``."""
    try:
        nb = nbformat.read(Path(notebook), as_version=4)
    except Exception:  # noqa: BLE001 - unreadable: no chapter
        return None
    for cell in nb.cells:
        if cell.cell_type == "code":
            found = _CHAPTER_CALL.search(cell.source)
            if found:
                return found.group(1)
    return None


def _check_output(output_path: Path | str) -> Path:
    text = str(output_path)
    out = Path(text).expanduser()
    if out.is_dir() or text.endswith(("/", os.sep)):
        raise ParameterError(
            f"-o {text}: is a folder; give the executed notebook's file name, e.g. "
            f"{out / 'out.ipynb'}"
        )
    if out.suffix != ".ipynb":
        raise ParameterError(f"-o {text}: the executed notebook must be a .ipynb file")
    if out.parent.exists() and not out.parent.is_dir():
        raise ParameterError(f"-o {text}: {out.parent} is not a folder")
    return out.resolve()


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError):
        return text


def run_note(path: Path, profile: str | None, params: Mapping[str, Any], *,
             chapter: str | None = None, root: Path | None = None) -> dict[str, Any]:
    """What a run's page and provenance record about its parameters.

    ``{"profile": P, "overrides": {name: value}}`` where ``P`` is the profile the run
    started from (``quick``, i.e. the notebook's defaults, when none was given) and
    ``overrides`` the injected values that differ from that profile (``n_jobs`` is left
    out: it never changes a table).
    """
    base_profile = profile or "quick"
    declared = declared_parameters(path)
    base = {k: _literal(p.default) for k, p in declared.items()}
    base.update(load_profiles(root).get(chapter or path.stem, {}).get(base_profile, {}))
    overrides = {k: v for k, v in params.items() if k != "n_jobs" and base.get(k) != v}
    return {"profile": base_profile, "overrides": overrides, "chapter": chapter or path.stem}


NOTE_TAG = "agentstudies-run-note"


def _note_cell(info: Mapping[str, Any]) -> Any:
    prof = info["profile"]
    if info["overrides"]:
        items = ", ".join(f"`{k} = {v!r}`" for k, v in info["overrides"].items())
        body = (f"This page was executed with parameters outside the `{prof}` profile of "
                f"`notebooks/profiles.yaml`: {items}. Its numbers are not those of the "
                f"book's profile run; `agentstudies book --only {info.get('chapter', '<chapter>')}` restores it.")
        title = "Non-profile run"
    else:
        body = (f"This page was executed at the `{prof}` profile of `notebooks/profiles.yaml` "
                f"(the book's default is `quick`).")
        title = f"Profile {prof}"
    cell = nbformat.v4.new_markdown_cell(
        f"```{{admonition}} {title}\n:class: warning\n{body}\n```"
    )
    cell.metadata["tags"] = [NOTE_TAG]
    return cell


def _mark_notebook(nb_path: Path, info: Mapping[str, Any]) -> None:
    """Record the run in the executed notebook: metadata always, a visible note cell after
    the title when the run is not at the ``quick`` profile or has non-profile parameters."""
    nb = nbformat.read(nb_path, as_version=4)
    nb.metadata["agentstudies"] = json.loads(json.dumps(dict(info), default=repr))
    nb.cells = [c for c in nb.cells if NOTE_TAG not in c.metadata.get("tags", [])]
    if info["overrides"] or info["profile"] != "quick":
        nb.cells.insert(1 if nb.cells else 0, _note_cell(info))
    nbformat.write(nb, nb_path)


def executed_run_info(executed: Path) -> dict[str, Any] | None:
    """The run record an executed notebook carries (``None``: none or unreadable)."""
    try:
        return dict(nbformat.read(executed, as_version=4).metadata.get("agentstudies") or {}) or None
    except Exception:  # noqa: BLE001
        return None


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two existing paths (Linux ``renameat2(RENAME_EXCHANGE)``)."""
    if sys.platform != "linux":
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    return fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0


def _swap_in(staged: Path, target: Path) -> None:
    """Put the folder ``staged`` at ``target``; the old ``target`` is removed afterwards.

    On Linux the two folders are exchanged in one atomic step, so ``target`` always holds
    either the complete old or the complete new artifacts.
    """
    import shutil

    if target.exists():
        if not _exchange(staged, target):
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            target.rename(old)
            staged.rename(target)
            shutil.rmtree(old, ignore_errors=True)
            return
        shutil.rmtree(staged, ignore_errors=True)  # now holds the old artifacts
    else:
        staged.rename(target)


@contextmanager
def _signals_blocked() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while the finished run is committed (a few renames)."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX / thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def run_notebook(
    name_or_path: Path | str,
    parameters: Mapping[str, Any] | None = None,
    output_path: Path | str | None = None,
    profile: str | None = None,
    *,
    jobs: int | None = None,
    root: Path | str | None = None,
    log_output: bool = False,
    artifacts: Path | str | None = None,
) -> RunResult:
    """Execute one notebook with papermill and return its :class:`RunResult`.

    ``name_or_path`` is a chapter name (``notebooks/<name>.ipynb``) or a path to an
    ``.ipynb``. Injected parameters come from :func:`resolve_parameters`. The kernel
    (``python3``) runs with cwd = the notebook's folder and matplotlib's non-GUI inline
    backend (``MPLBACKEND=Agg`` would keep figures out of the executed notebook).

    Where things go:

    * a book chapter without ``output_path``: ``book/chapters/<name>.ipynb``, tables in
      ``<root>/artifacts/<chapter>/``;
    * with ``output_path`` (``-o OUT.ipynb``; a folder is refused before running): OUT,
      tables in ``<OUT folder>/<OUT stem>.artifacts/<chapter>/``;
    * a notebook path that is not a book chapter: ``<its folder>/<stem>.executed.ipynb``,
      tables in ``<stem>.executed.artifacts/`` beside it -- never the book's. ``profile``
      is then looked up under the chapter the notebook names in its
      ``Chapter.from_parameters("<chapter>", ...)`` call, and refused if it names none.

    ``artifacts`` (Python only) names the artifacts root outright and wins over both.
    ``$AGENTSTUDIES_ARTIFACTS`` sets the artifacts root of a run *without* ``output_path``
    (a relative value is relative to the folder the command was given in, see
    :func:`resolve_artifacts_env`); ``output_path`` wins over it (issue 24), so two ``-o``
    runs never share a folder. A failed run that created the artifacts root removes it
    again (no empty ``OUT.artifacts/`` is left).

    Nothing that exists is touched until the run succeeds: the kernel writes into a
    staging folder beside the artifacts and papermill into ``<OUT stem>.partial.ipynb``;
    on success each artifacts folder is swapped in atomically, then the notebook. On a
    failing cell, a dead kernel or an interrupt (Ctrl-C, SIGTERM) the earlier notebook and
    artifacts stay byte-identical; the partially executed notebook is kept as
    ``<OUT stem>.failed.ipynb`` for inspection and the staged artifacts are removed.

    A run whose parameters differ from its profile, or at a profile other than ``quick``,
    gets a visible note cell after the title of the executed notebook (an admonition) and
    the record in the notebook's metadata and in the chapter's provenance (``run``).

    Raises
    ------
    ParameterError
        See :func:`resolve_parameters`; also a folder as ``output_path``, or ``profile``
        for a notebook that names no chapter (all raised before any execution).
    UnknownChapterError
        If the notebook does not exist (lists the chapters for an unknown name).
    NotebookExecutionError
        If a cell raises (names the notebook, the source cell index and the exception).
    """
    import shutil
    import uuid

    import papermill as pm  # slow import: only when executing

    root = _root(root)
    path, is_chapter, out, chapter = _run_targets(name_or_path, output_path, profile, root)
    params = resolve_parameters(path, profile, parameters, jobs, root=root, chapter=chapter)
    info = run_note(path, profile, params, chapter=chapter, root=root)
    out = out.resolve()
    book_out = is_chapter and output_path is None
    art_root = (Path(artifacts).expanduser() if artifacts is not None else
                _artifacts_root(out, root, book_out, explicit_out=output_path is not None)).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    created = _missing_ancestors(art_root)  # removed again if the run commits nothing
    art_root.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f"{out.stem}.partial.ipynb")
    failed = out.with_name(f"{out.stem}.failed.ipynb")
    staging = art_root / f".staging-{path.stem}-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    t0 = time.perf_counter()
    committed: list[Path] = []
    try:
        try:
            with _kernel_env(root, staging, path, info), _quiet_progress(), shared_scratch():
                pm.execute_notebook(
                    str(path), str(partial), parameters=params, kernel_name=KERNEL,
                    cwd=str(path.parent), progress_bar=False, log_output=log_output,
                    extra_arguments=["--IPKernelApp.log_level=CRITICAL"],  # silence kernel chatter
                )
        except BaseException as exc:
            if partial.exists():
                partial.replace(failed)
            if isinstance(exc, KeyboardInterrupt) or not failed.exists():
                raise  # interrupted, or nothing ran at all; earlier output kept either way
            if isinstance(exc, pm.PapermillExecutionError):
                ename, evalue, index = exc.ename, exc.evalue, exc.cell_index
            else:  # e.g. nbclient's DeadKernelError (kernel crashed or ran out of memory)
                ename, evalue, index = type(exc).__name__, str(exc), -1
            raise NotebookExecutionError(
                path.stem, _source_index(failed, index), ename, evalue, failed
            ) from None
        strip_widgets(partial)  # no widget (progress bar) may reach the book: it needs a CDN
        _hide_injected_parameters(partial)
        _mark_notebook(partial, info)
        with _signals_blocked():  # commit: artifacts first, then the notebook
            for entry in sorted(staging.iterdir()):
                if entry.is_dir():
                    _swap_in(entry, art_root / entry.name)
                    committed.append(art_root / entry.name)
            partial.replace(out)
            failed.unlink(missing_ok=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        partial.unlink(missing_ok=True)
        if not committed:  # a failed first run leaves no empty OUT.artifacts/ behind
            _remove_empty(created)
    named_dir = [c for c in committed if c.name == chapter] or committed
    return RunResult(path.stem, path, out, params, time.perf_counter() - t0,
                     named_dir[0] if named_dir else None)


def _run_targets(name_or_path: Path | str, output_path: Path | str | None, profile: str | None,
                 root: Path) -> tuple[Path, bool, Path, str]:
    """Where a run reads and writes (see :func:`run_notebook`): the notebook path, whether
    it is a book chapter, the executed notebook's path (not yet resolved) and the chapter
    whose profiles apply. Raises :class:`ParameterError` for a folder as ``output_path``
    or a ``profile`` for a notebook that names no chapter with profiles."""
    path, is_chapter = _notebook_path(name_or_path, root)
    if output_path is not None:
        out = _check_output(output_path)
    elif is_chapter:
        out = root / "book" / "chapters" / f"{path.stem}.ipynb"
    else:
        out = path.with_name(f"{path.stem}.executed.ipynb")
    chapter = path.stem
    if not is_chapter:
        named = chapter_of(path)
        profiled = named if named in load_profiles(root) else None
        if profile is not None and profiled is None:
            raise ParameterError(
                f"--profile {profile}: notebook {path} is not a chapter of notebooks/"
                f"profiles.yaml{' and names chapter ' + repr(named) + ' which has no profiles' if named else ' and names no chapter'}"
                "; run it without --profile and set parameters with -p"
            )
        chapter = profiled or path.stem
    return path, is_chapter, out, chapter


def _remove_empty(folders: Sequence[Path]) -> None:
    """Remove ``folders`` (deepest first) while they are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            break


def _missing_ancestors(folder: Path) -> list[Path]:
    """``folder`` and those of its parents that do not exist yet, deepest first."""
    missing = []
    for f in (folder, *folder.parents):
        if f.exists():
            break
        missing.append(f)
    return missing


def _artifacts_root(out: Path, root: Path, book_out: bool, *, explicit_out: bool = False) -> Path:
    """The artifacts root. ``-o OUT`` (``explicit_out``) always gives ``<OUT stem>.artifacts``
    beside ``out``: the option on the command line wins over ``$AGENTSTUDIES_ARTIFACTS``, so
    two ``-o`` runs never share a folder. Without ``-o``: ``$AGENTSTUDIES_ARTIFACTS`` if set,
    else ``<root>/artifacts`` for a book chapter written to the book, else ``<OUT
    stem>.artifacts`` beside the ``<stem>.executed.ipynb`` of a notebook given by path."""
    if explicit_out:
        return out.parent / f"{out.stem}.artifacts"
    if os.environ.get("AGENTSTUDIES_ARTIFACTS"):
        return resolve_artifacts_env(os.environ["AGENTSTUDIES_ARTIFACTS"])
    if book_out:
        return root / "artifacts"
    return out.parent / f"{out.stem}.artifacts"


def _hide_injected_parameters(executed: Path) -> None:
    """Tag papermill's ``injected-parameters`` cell ``remove-cell`` so the book omits it.

    The values it injected are recorded in the chapter's provenance table; the page keeps
    the notebook's own ``parameters`` cell (the quick-profile defaults).
    """
    nb = nbformat.read(executed, as_version=4)
    changed = False
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
            changed = True
    if changed:
        nbformat.write(nb, executed)


def _source_index(executed: Path, cell_index: int) -> int:
    """Index, in the source notebook, of the failing cell of a failed executed copy.

    The executed copy has extra cells (papermill's ``injected-parameters`` cell and its
    error banners); without them the cells line up with the source notebook.
    """
    extra = {"injected-parameters", "papermill-error-cell-tag"}
    try:
        cells = nbformat.read(executed, as_version=4).cells
    except Exception:  # pragma: no cover - unreadable partial notebook
        return cell_index
    cells = [c for c in cells if not extra & set(c.metadata.get("tags", []))]
    for i, cell in enumerate(cells):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors or cell.metadata.get("papermill", {}).get("exception"):
            return i
    started = [i for i, c in enumerate(cells) if c.metadata.get("papermill", {}).get("start_time")]
    return started[-1] if started and cell_index < 0 else cell_index  # dead kernel: last started


def run_book(
    profile: str = "quick",
    only: Sequence[str] | None = None,
    jobs: int | None = None,
    *,
    root: Path | str | None = None,
    log_output: bool = False,
    echo: Callable[[str], None] | None = None,
    at_once: int = 1,
) -> list[RunResult]:
    """Execute the TOC's chapters (or ``only`` those, kept in TOC order) at ``profile``.

    Every selected notebook's existence and parameters are checked before the first one
    runs, so a typo in ``profiles.yaml`` costs nothing. Prints one timed line per chapter
    through ``echo``; stops at the first failing notebook.

    ``at_once`` > 1 runs that many chapters side by side, each in a child process through
    :func:`run_notebook` (same staging, atomic swap and interrupt handling as one at a
    time): tables are identical, only the order changes (the longest chapters, by their
    last run at this profile, :data:`DURATIONS_FILE`, else their last executed copy, start
    first). After a
    failure no further chapter starts, the running ones finish, and the first failure is
    raised. The results are returned in TOC order either way.

    Raises
    ------
    UnknownChapterError
        For a name in ``only`` that is not a TOC chapter (lists the chapters), or a TOC
        chapter whose notebook does not exist yet.
    ParameterError, NotebookExecutionError
        See :func:`run_notebook`.
    """
    root, echo = _root(root), echo or _say
    if int(at_once) < 1:
        raise ParameterError(f"at_once must be >= 1, got {at_once!r}")
    chapters = toc_chapters(root)
    if only:
        unknown = [n for n in only if n not in chapters]
        if unknown:
            raise UnknownChapterError(
                f"unknown chapter(s) {', '.join(unknown)}; chapters in book/_toc.yml: "
                f"{', '.join(chapters) or '(none)'}"
            )
        chapters = [c for c in chapters if c in only]
    missing = [c for c in chapters if not (root / "notebooks" / f"{c}.ipynb").is_file()]
    if missing:
        raise UnknownChapterError(
            "book/_toc.yml lists chapter(s) whose notebook does not exist yet: "
            + ", ".join(f"{c} (notebooks/{c}.ipynb)" for c in missing)
        )
    for chapter in chapters:  # validate everything before running anything
        resolve_parameters(root / "notebooks" / f"{chapter}.ipynb", profile, None, jobs, root=root)
    for line in overwrite_report(chapters, root):
        echo(line)
    t0 = time.perf_counter()
    with shared_scratch():  # one translation cache for every chapter of the book
        if int(at_once) > 1 and len(chapters) > 1:
            results = _run_side_by_side(chapters, profile, jobs, root, log_output, echo, int(at_once))
        else:
            results = []
            for i, chapter in enumerate(chapters, 1):
                echo(f"[{i}/{len(chapters)}] running {chapter} (profile {profile}) ...")
                result = run_notebook(chapter, None, None, profile, jobs=jobs, root=root, log_output=log_output)
                _record_seconds(root, profile, chapter, result.seconds)
                echo(result.summary())
                results.append(result)
    echo(f"executed {len(results)} chapter(s) in {time.perf_counter() - t0:.1f} s")
    return results


def _run_side_by_side(chapters: Sequence[str], profile: str, jobs: int | None, root: Path, log_output: bool,
                      echo: Callable[[str], None], at_once: int) -> list[RunResult]:
    """:func:`run_book`'s ``at_once`` path: up to ``at_once`` child processes
    (``python -m agentstudies._book_child``), each running one chapter and writing its
    :class:`RunResult` (or its error) as JSON. Ctrl-C / SIGTERM here sends SIGTERM to the
    running children, waits for them (each keeps its last good chapter) and re-raises."""

    # longest first (by the last run at this profile, else the shipped time, else the last
    # executed copy; chapters with none first), so the run does not end with one long
    # chapter on one core
    todo = sorted(enumerate(chapters, 1), key=lambda ic: -_last_seconds(root, ic[1], profile))
    running: dict[str, tuple[subprocess.Popen, Path]] = {}
    done: dict[str, RunResult] = {}
    failure: BookError | None = None
    with tempfile.TemporaryDirectory(prefix="agentstudies-book-") as tmp:
        try:
            while todo or running:
                while todo and failure is None and len(running) < at_once:
                    i, chapter = todo.pop(0)
                    echo(f"[{i}/{len(chapters)}] running {chapter} (profile {profile}) ...")
                    out = Path(tmp) / f"{chapter}.json"
                    spec = json.dumps({"chapter": chapter, "profile": profile, "jobs": jobs, "root": str(root),
                                       "log_output": log_output, "result": str(out)})
                    running[chapter] = (subprocess.Popen([sys.executable, "-m", "agentstudies._book_child", spec]), out)
                if failure is not None:
                    todo.clear()
                for chapter, (proc, out) in list(running.items()):
                    if proc.poll() is None:
                        continue
                    del running[chapter]
                    res = _child_result(chapter, proc.returncode, out)
                    if isinstance(res, RunResult):
                        done[chapter] = res
                        _record_seconds(root, profile, chapter, res.seconds)
                        echo(res.summary())
                    elif failure is None:
                        failure = res
                time.sleep(0.1)
        except KeyboardInterrupt:
            for proc, _ in running.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc, _ in running.values():
                proc.wait()
            raise
    if failure is not None:
        raise failure
    return [done[c] for c in chapters]


#: Wall time of each chapter's last successful run, per profile (``{profile: {chapter: s}}``):
#: ``book --at-once`` starts the longest chapters first by it.
DURATIONS_FILE = Path("book") / "chapters" / ".durations.json"


def _durations(root: Path, name: Path = DURATIONS_FILE) -> dict[str, dict[str, float]]:
    try:
        data = json.loads((root / name).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _record_seconds(root: Path, profile: str, chapter: str, seconds: float) -> None:
    """Add one run's wall time to :data:`DURATIONS_FILE` (written atomically; best effort)."""
    data = _durations(root)
    data.setdefault(profile, {})[chapter] = round(float(seconds), 1)
    path = root / DURATIONS_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except OSError:
        pass


#: Shipped wall times (``{profile: {chapter: s}}``, one ``make paper`` on 2 cores): they
#: order a fresh clone's first ``book --at-once`` run, which has no :data:`DURATIONS_FILE`
#: (without them it ran the chapters in TOC order, which put the two impossible-task chapters
#: side by side at the end and cost the second its reuse of the first's sandbox verdicts).
REFERENCE_DURATIONS_FILE = Path("notebooks") / "durations.json"


def _last_seconds(root: Path, chapter: str, profile: str | None = None) -> float:
    """Wall time of the chapter's last run at ``profile`` (:data:`DURATIONS_FILE`), else the
    shipped time at ``profile`` (:data:`REFERENCE_DURATIONS_FILE`), else that of its last
    executed copy (papermill's ``duration``, any profile), else +inf. Only the order of a
    side-by-side run depends on it, never a table."""
    for table in (_durations(root), _durations(root, REFERENCE_DURATIONS_FILE)):
        known = table.get(str(profile), {})
        known = known.get(chapter) if isinstance(known, dict) else None
        if isinstance(known, (int, float)):
            return float(known)
    try:
        meta = json.loads((root / "book" / "chapters" / f"{chapter}.ipynb").read_text())["metadata"]
        return float(meta["papermill"]["duration"])
    except (OSError, ValueError, KeyError, TypeError):
        return float("inf")


def _child_result(chapter: str, returncode: int, out: Path) -> RunResult | BookError:
    """Read what a ``_book_child`` process wrote: a :class:`RunResult`, or the error it hit."""
    try:
        rec = json.loads(out.read_text())
    except (OSError, ValueError):
        return NotebookExecutionError(chapter, -1, "ChildProcessError",
                                      f"the chapter's process exited with status {returncode} and no result", out)
    if "error" not in rec:
        return RunResult(rec["name"], Path(rec["input_path"]), Path(rec["output_path"]), rec["parameters"],
                         float(rec["seconds"]), Path(rec["artifacts"]) if rec.get("artifacts") else None)
    err = rec["error"]
    if err.get("type") == "NotebookExecutionError":
        return NotebookExecutionError(err["notebook"], int(err["cell_index"]), err["ename"], err["evalue"],
                                      Path(err["output_path"]))
    if err.get("type") == "KeyboardInterrupt":
        return BookError(f"chapter {chapter} was interrupted; its last good executed copy and artifacts are unchanged")
    cls = {"ParameterError": ParameterError, "UnknownChapterError": UnknownChapterError}.get(err.get("type"), BookError)
    return cls(err.get("message", f"chapter {chapter} failed"))


def overwrite_report(chapters: Sequence[str], root: Path | str | None = None) -> list[str]:
    """Lines saying which executed chapters a book run will replace, and how each was run.

    A copy made at non-profile parameters (``agentstudies run NAME -p ...``) is named with
    its parameters, so ``agentstudies book`` never overwrites one silently.
    """
    root = _root(root)
    lines = []
    for chapter in chapters:
        executed = root / "book" / "chapters" / f"{chapter}.ipynb"
        if not executed.is_file():
            continue
        info = executed_run_info(executed) or {}
        how = f"profile {info.get('profile', 'unknown')}"
        if info.get("overrides"):
            how = "NON-PROFILE run: " + ", ".join(f"{k}={v!r}" for k, v in info["overrides"].items())
        lines.append(f"    {executed.relative_to(root)} ({how}), artifacts/{chapter}/")
    if lines:
        lines.insert(0, f"will overwrite {len(lines)} executed chapter(s) and their artifacts, each only once its new run succeeds:")
    return lines


# -------------------------------------------------------------------------- the book
def _jupyter_book_command() -> list[str]:
    exe = Path(sys.executable).parent / ("jupyter-book.exe" if os.name == "nt" else "jupyter-book")
    if not exe.is_file():
        raise BookBuildError(
            f"jupyter-book is not installed next to {sys.executable}; "
            "install the book extra: pip install -e '.[book]'"
        )
    return [str(exe)]


def check_root_page(root: Path | str | None = None) -> None:
    """Check that the TOC's ``root`` page (e.g. ``book/intro.md``) exists.

    Raises
    ------
    BookBuildError
        If the TOC names no root page or its file is missing.
    """
    book = _root(root) / "book"
    start = (yaml.safe_load((book / "_toc.yml").read_text()) or {}).get("root")
    if not start:
        raise BookBuildError(f"{book / '_toc.yml'} names no root page (root: intro)")
    if not any((book / f"{start}{ext}").is_file() for ext in ("", ".md", ".ipynb", ".rst")):
        raise BookBuildError(f"the TOC's root page book/{start}.md does not exist")


def build_book(root: Path | str | None = None, *, echo: Callable[[str], None] | None = None) -> Path:
    """Render the executed chapters to ``book/_build/html`` with Jupyter Book 1.

    Nothing is executed (``execute_notebooks: off``). Before building, every TOC chapter
    must have an executed copy in ``book/chapters/`` that did not fail; a copy older than
    its source notebook is reported as stale (warning only).

    Sphinx warnings are printed but do not fail the build (no ``-W``): third-party
    extensions and notebook outputs emit harmless warnings that would otherwise block the
    book. Real errors still fail: Jupyter Book's non-zero exit is raised, and since it
    only *warns* about a TOC entry without a file ("toctree contains reference to
    nonexisting document", exit 0), the pages are checked before (executed copies exist)
    and after the build (every chapter's HTML page exists).

    Returns the path of ``index.html``.

    Raises
    ------
    BookBuildError
        If a chapter is not executed (or its last run failed), the TOC root page is
        missing, jupyter-book is not installed or fails, or a chapter's page is missing.
    """
    root, echo = _root(root), echo or _say
    book = root / "book"
    chapters = toc_chapters(root)
    check_root_page(root)
    problems = []
    for chapter in chapters:
        executed = book / "chapters" / f"{chapter}.ipynb"
        source = root / "notebooks" / f"{chapter}.ipynb"
        if not executed.is_file():
            failed = executed.with_name(f"{chapter}.failed.ipynb")
            why = f"its last run failed, see {failed}" if failed.is_file() else "not executed yet"
            problems.append(f"{chapter}: {why}")
        elif source.is_file() and source.stat().st_mtime > executed.stat().st_mtime:
            echo(f"warning: {executed} is older than {source} (stale; rerun with --only {chapter})")
    if problems:
        raise BookBuildError(
            "cannot build the book; chapter(s) without an executed copy in book/chapters/:\n  "
            + "\n  ".join(problems)
            + "\nrun: agentstudies book --profile quick  (or --only NAME ...)"
        )
    cmd = _jupyter_book_command() + ["build", str(book), "--builder", "html"]
    echo(f"building the book: {' '.join(cmd)}")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    log = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)  # drop ANSI colours
    warnings = [line for line in log.splitlines() if "WARNING" in line]
    for line in warnings:
        echo(f"  {line}")
    if proc.returncode != 0:
        tail = "\n".join(log.splitlines()[-40:])
        raise BookBuildError(f"jupyter-book build failed (exit {proc.returncode}):\n{tail}")
    html = book / "_build" / "html"
    absent = [c for c in chapters if not (html / "chapters" / f"{c}.html").is_file()]
    if absent:
        raise BookBuildError(f"jupyter-book did not produce the page of chapter(s) {', '.join(absent)}")
    echo(f"built the book in {seconds:.1f} s ({len(warnings)} warning(s)): {html / 'index.html'}")
    return html / "index.html"


def _say(message: str) -> None:
    print(message, flush=True)
