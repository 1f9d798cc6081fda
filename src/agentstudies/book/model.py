"""The book model: which chapters exist, their profiles and parameters, and the checks
on a parameter value. Reads files only (``book/_toc.yml``, ``notebooks/profiles.yaml``, a
notebook's cell tagged ``parameters``); executes nothing and imports no papermill, so
:mod:`agentstudies.book.chapter`, :mod:`agentstudies.book.site` and :mod:`agentstudies.book.paper.runs`
import it without the rest of the pipeline.

Parameters are validated before anything runs: every key injected (from a profile, from
the caller, or ``n_jobs`` from ``jobs``) must be assigned in the notebook's cell tagged
``parameters``; otherwise :class:`ParameterError` names the parameter, the notebook and
the declared names. ``jobs`` only sets ``n_jobs`` in notebooks that declare ``n_jobs``.
Precedence, lowest first: notebook defaults < profile < ``jobs`` < explicit parameters.

Declared parameters are read with :mod:`ast` (top-level assignments of the ``parameters``
cell) rather than papermill's line-based inspector, which misreads values that span
several lines (``cfg = dict(a=1,\\n b=2)`` declares a bogus ``b`` there).

Every function takes ``root`` (the repository root: the folder holding ``book/`` and
``notebooks/``); ``None`` means :func:`find_root`. The pipeline's errors
(:class:`BookError` and its subclasses) live here so every step raises the same classes.
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import nbformat
import yaml

__all__ = [
    "PROFILES", "BookError", "ParameterError", "UnknownChapterError", "NotebookReadError",
    "NotebookExecutionError", "BookBuildError", "Parameter", "find_root", "toc_chapters",
    "load_profiles", "read_notebook", "declared_parameters", "resolve_parameters",
    "check_parameter", "check_parameter_set", "SAMPLE_SIZE_PARAMETERS", "DRAW_PARAMETERS", "chapter_of", "run_note",
]


#: Profile names allowed in ``notebooks/profiles.yaml``.
PROFILES = ("quick", "paper", "smoke")

class BookError(Exception):
    """Base class of the pipeline's errors; the CLI prints the message, no traceback."""

class ParameterError(BookError, ValueError):
    """Unknown parameter, missing/unparsable ``parameters`` cell, or a bad profiles file."""

class UnknownChapterError(BookError, ValueError):
    """A chapter name that is not in ``book/_toc.yml``, or a missing notebook."""

class NotebookReadError(BookError, ValueError):
    """A file that is not a readable Jupyter notebook (truncated, not JSON, bad schema)."""

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

def find_root(start: Path | None = None) -> Path:
    """Repository root: the first of ``start`` (default: cwd) and its parents that holds
    ``book/_toc.yml`` and ``notebooks/``; else the source tree this module lives in.

    Raises
    ------
    BookError
        If no such folder is found.
    """
    here = Path(start or Path.cwd()).resolve()
    candidates = [here, *here.parents, Path(__file__).resolve().parents[3]]  # src/agentstudies/book/model.py -> repo
    for folder in candidates:
        if (folder / "book" / "_toc.yml").is_file() and (folder / "notebooks").is_dir():
            return folder
    raise BookError(
        f"cannot find the repository root (a folder with book/_toc.yml and notebooks/) "
        f"from {here}; run inside the repository or pass --root"
    )

def _root(root: Path | str | None) -> Path:
    """``root`` resolved, or :func:`find_root` when None.

    Raises
    ------
    BookError
        A given ``root`` that is not an existing folder (``--root /nonexistent`` used to
        report "no chapter named ...; chapters: (none)").
    """
    if root is None:
        return find_root()
    path = Path(root).expanduser().resolve()
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a folder"
        raise BookError(f"--root {root}: {path} {what}; the repository root is the folder holding book/_toc.yml "
                        "and notebooks/ (leave --root out inside the repository)")
    return path

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
    check_parameter_set(chapter or path.stem, declared, merged, "the given parameters and profile")
    return merged

def check_parameter(notebook: str, param: Parameter, value: Any, source: str) -> None:
    """Check one parameter value as :func:`resolve_parameters` does: type like the default,
    range (seeds, counts, levels) and usability (finite numbers, sample sizes and draws >= 1).

    Raises
    ------
    ParameterError
        Naming the parameter, the notebook, the problem, ``source`` and the default.
    """
    _check_type(notebook, param, value, source)

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
    elif name in PROBABILITY_PARAMETERS:
        return _probability_problem(value)
    elif name == "task_types":
        return _task_types_problem(value)
    elif name in CHOICE_PARAMETERS:
        allowed = CHOICE_PARAMETERS[name]
        bad = [v for v in (value if isinstance(value, (list, tuple)) else [value]) if v not in allowed]
        if bad:
            shown = ", ".join("None" if a is None else str(a) for a in allowed)
            return f"must be one of {shown}{' (each element)' if isinstance(value, (list, tuple)) else ''}; got {bad[0]!r}"
    return None

def _probability_problem(value: Any, where: str = "") -> str | None:
    """Why ``value`` (a number, or lists / mappings of numbers) is not all probabilities."""
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = list(enumerate(value))
    else:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not 0 <= value <= 1:
            at = f" (element {where})" if where else ""
            return (f"is a probability and must lie in [0, 1]; got {value}{at} -- a share, not a percentage: "
                    "write 0.5 for 50 %")
        return None
    for k, v in items:
        inner = _probability_problem(v, f"{where}[{k!r}]")
        if inner:
            return inner
    return None

def _task_types_problem(value: Any) -> str | None:
    """``task_types``: None (all six) or a list of ALFWorld task type names."""
    if value is None:
        return None
    from agentstudies.envs.alfworld.validation import TASK_TYPES

    if not isinstance(value, (list, tuple)) or not value:
        return (f"must be None (all six types) or a non-empty list of ALFWorld task types such as "
                f"[{TASK_TYPES[0]}, {TASK_TYPES[1]}]; got {type(value).__name__} {value!r}")
    unknown = [v for v in value if v not in TASK_TYPES]
    if unknown:
        return f"names unknown ALFWorld task type(s) {unknown}; known: {', '.join(TASK_TYPES)}"
    return None

def check_parameter_set(notebook: str, declared: Mapping[str, Parameter], values: Mapping[str, Any],
                        source: str) -> None:
    """Checks that need several parameters, with every value known (``values`` over the
    literal defaults of ``declared``): draw counts against the chapter's own ``level`` (or
    ``1 - alpha``), probability mappings (``arrival`` / ``solve``) with the default's keys
    and lists of one length, and the sums a chapter uses as probabilities
    (:data:`PROBABILITY_SUMS`). Runs before the run (``agentstudies run`` / ``book``) and
    inside the kernel (plain papermill).

    Raises
    ------
    ParameterError
        Naming the parameter(s), the notebook, the value, the allowed range and ``source``.
    """
    full: dict[str, Any] = {}
    for name, p in declared.items():
        try:
            full[name] = ast.literal_eval(p.default)
        except (ValueError, SyntaxError, TypeError):
            pass
    full.update(values)
    level = full.get("level")
    if not isinstance(level, float) and isinstance(full.get("alpha"), float):
        level = 1.0 - full["alpha"]
    if isinstance(level, (int, float)) and not isinstance(level, bool) and 0 < level < 1:
        for name in sorted(DRAW_PARAMETERS & set(full)):
            problem = _usable_problem(name, full[name], float(level))
            if problem is not None:
                raise ParameterError(f"parameter {name!r} of notebook {notebook} {problem} (from {source}); "
                                     f"default: {declared[name].default}")
    _check_probability_maps(notebook, declared, full, source)
    _check_chapter_choices(notebook, values, source)
    for what, fn in PROBABILITY_SUMS.get(notebook, ()):
        try:
            v = float(fn(full))
        except (KeyError, TypeError):
            continue
        if not 0 <= v <= 1:
            raise ParameterError(f"parameters of notebook {notebook}: {what} = {v:g} must be a probability in "
                                 f"[0, 1] (from {source}); change them so that it does")

def _check_chapter_choices(notebook: str, values: Mapping[str, Any], source: str) -> None:
    """The named settings of :data:`CHAPTER_CHOICES` given for ``notebook`` (each element of a list)."""
    import importlib

    for name, (module, attr) in CHAPTER_CHOICES.get(notebook, {}).items():
        if name not in values:
            continue
        allowed = list(getattr(importlib.import_module(module), attr))
        value = values[name]
        bad = [v for v in (value if isinstance(value, (list, tuple)) else [value]) if v not in allowed]
        if bad:
            raise ParameterError(f"parameter {name!r} of notebook {notebook} names {bad[0]!r}, not one of "
                                 f"{', '.join(map(str, allowed))} ({module}.{attr}) (from {source})")

def _check_probability_maps(notebook: str, declared: Mapping[str, Parameter], full: Mapping[str, Any],
                            source: str) -> None:
    """``arrival`` / ``solve``-like mappings: the default's keys, per-type lists of one length."""
    lengths: dict[int, str] = {}
    for name in sorted(PROBABILITY_PARAMETERS & set(full)):
        if not isinstance(full[name], Mapping):
            continue
        try:
            default = ast.literal_eval(declared[name].default)
        except (ValueError, SyntaxError, TypeError):
            continue
        if isinstance(default, Mapping) and set(full[name]) != set(default):
            raise ParameterError(f"parameter {name!r} of notebook {notebook} needs the keys "
                                 f"{sorted(default)} like its default; got {sorted(full[name])} (from {source})")
        for key, v in full[name].items():
            if isinstance(v, (list, tuple)):
                lengths.setdefault(len(v), f"{name}[{key!r}]")
    if len(lengths) > 1:
        shown = ", ".join(f"{where} has {n}" for n, where in sorted(lengths.items()))
        raise ParameterError(f"parameters of notebook {notebook}: the per-type lists must have one length "
                             f"(one entry per task type); {shown} (from {source})")

#: Counts that set a chapter's sample (tasks, trials, clusters, seeds): a value below 1 passes
#: the type and ``n_* >= 0`` checks but leaves the chapter nothing to estimate from (``-p n_tasks
#: 0`` failed inside the notebook with "zero-size array").
SAMPLE_SIZE_PARAMETERS = frozenset({
    "n_tasks", "n_tasks_b", "n_tasks_per_type", "n_ext_per_type", "tasks_per_type", "train_tasks_per_type",
    "sft_tasks_per_type", "eval_tasks_per_type", "n_trials", "n_trials_b", "n_trials_control", "n_audit_trials",
    "n_clusters", "n_seeds", "n_validation_tasks", "n_recovery_tasks", "epochs", "k", "n_kernel_seeds",
    "n_population",
})

#: Scales that multiply a budget and must be positive (``alfworld_recovery -p cap_scale 0``
#: failed 10-14 s into the notebook with "cap_scale=0: expected a positive number").
POSITIVE_PARAMETERS = frozenset({"cap_scale"})

#: Tasks per task type where the task type is the bootstrap stratum: one task per stratum is
#: resampled as itself every time, a zero-width interval (``method_handoff -p n_tasks_per_type
#: 1``); the handoff library refuses such strata, so the chapters do too, before the run.
STRATUM_SIZE_PARAMETERS = frozenset({"n_tasks_per_type", "tasks_per_type"})

#: Parameters that are probabilities or shares: a number, or lists / mappings of numbers, each
#: in [0, 1] (``method_handoff -p arrival`` 1.5 showed 150 %; ``method_sasst -p base_rate
#: 1.5`` failed with ZeroDivisionError in cell 26).
PROBABILITY_PARAMETERS = frozenset({
    "arrival", "solve", "base_rate", "min_stability", "stability_threshold", "radius_quantile", "radius_quantiles",
})

#: Parameters that pick one of a few named settings (a list parameter: each element), with
#: the values the studies accept: a typo failed 10-40 s into the notebook (or, for
#: ``cate_learner``, after the whole study ran).
CHOICE_PARAMETERS: dict[str, tuple[Any, ...]] = {
    "clone": ("replay", "snapshot"),
    "checkpoints": ("trained", "scripted"),
    "look_format": ("raw", "arrival"),
    "stale_admissible": ("stale", "current"),
    "router_train": ("factual-success", "complete"),
    "cate_learner": ("dr", "forest"),
    "horizon_features": ("drop", "keep"),
    "backend": ("loky", "threading", "sequential", "dask"),
    "text_encoder": ("tfidf-svd", "minilm"),
    "compare_encoder": ("tfidf-svd", "minilm", None),
    "diagnostic_encoders": ("tfidf-svd", "minilm"),
}

#: Named settings whose allowed values are one chapter's (chapter -> parameter -> (module,
#: name of the collection of allowed values)); read when that parameter is given.
CHAPTER_CHOICES: dict[str, dict[str, tuple[str, str]]] = {
    "alfworld_recovery": {"checkpoint": ("agentstudies.studies.alfworld.recovery.run", "CHECKPOINTS")},
    "tau_workflow_stress": {"profiles": ("agentstudies.agents.tau", "PROFILES")},
    "toolsandbox_workflows": {
        "profiles": ("agentstudies.agents.toolsandbox", "PROFILES"),
        "sasst_profile": ("agentstudies.agents.toolsandbox", "PROFILES"),
        "augmentations": ("agentstudies.envs.toolsandbox", "AUGMENTATIONS"),
        "handoff_augmentations": ("agentstudies.envs.toolsandbox", "AUGMENTATIONS"),
    },
}

#: Sums of parameters a chapter uses as probabilities (chapter -> (expression, function of
#: the parameter values)): checked with every value known, before the run.
PROBABILITY_SUMS: dict[str, tuple[tuple[str, Any], ...]] = {
    "method_sasst": (
        ("base_rate + gain (workflow B's success probability)", lambda v: v["base_rate"] + v["gain"]),
        ("base_rate + gain - long_task_penalty (workflow B on long tasks)",
         lambda v: v["base_rate"] + v["gain"] - v["long_task_penalty"]),
    ),
}

#: Resample counts behind the intervals and bands a chapter shows: 0 draws gives NaN intervals
#: (without this check ``method_recovery -p n_boot 0`` would "succeed" with NaN intervals).
DRAW_PARAMETERS = frozenset({"n_boot", "n_draws", "n_multiplier", "control_draws"})

def _usable_problem(name: str, value: Any, level: float | None = None) -> str | None:
    """Why an in-type, in-range value still cannot work (``None``: it can).

    Checked before a run (``agentstudies run``/``book``) and inside the kernel by
    :meth:`agentstudies.book.chapter.Chapter.from_parameters` (plain papermill): NaN or +/-inf for
    any number (``-p min_ess inf`` failed with ``KeyError: None``), a sample-size count of
    :data:`SAMPLE_SIZE_PARAMETERS` below 1, a scale of :data:`POSITIVE_PARAMETERS` at or below 0,
    a stratum size of :data:`STRATUM_SIZE_PARAMETERS` below 2, a draw count of :data:`DRAW_PARAMETERS` below
    :func:`agentstudies.specs.min_draws` at ``level`` (0.95 when not known) or so large that one float64 replicate per draw exceeds the bootstrap's memory bound
    (:data:`agentstudies.stats.MAX_REPLICATE_BYTES`). Counts that may be 0 (``n_stability = 0`` skips the stability check) are not listed.
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return (f"must be a finite number; got {value} (a non-finite threshold or setting selects nothing "
                "and fails inside the notebook)")
    if name in SAMPLE_SIZE_PARAMETERS and value < 1:
        return f"sets the chapter's sample and must be >= 1; got {value} (no tasks, trials or seeds to estimate from)"
    if name in POSITIVE_PARAMETERS and value <= 0:
        return f"multiplies a budget and must be > 0; got {value}"
    if name in STRATUM_SIZE_PARAMETERS and value < 2:
        return (f"sets the tasks of each task type, the bootstrap stratum, and must be >= 2; got {value} (one task "
                "per stratum is resampled as itself every time: a zero-width interval)")
    if name in DRAW_PARAMETERS:
        from agentstudies.specs import min_draws

        lvl = 0.95 if level is None else level
        low = min_draws(lvl, 1 if name == "n_multiplier" else 2)
        if value < low:
            return (f"is the number of resamples behind the intervals this chapter shows and must be >= {low} at "
                    f"level {lvl:g}; got {value} (agentstudies.specs.min_draws: each tail outside a percentile "
                    "interval must hold a resample; the papers use 2,000-100,000)")
    if name in DRAW_PARAMETERS:
        from agentstudies.stats import MAX_REPLICATE_BYTES

        need = float(value) * 8.0  # at least one float64 replicate per draw
        if need > MAX_REPLICATE_BYTES:
            return (f"is too large: {value:,} resamples hold at least {need / 2**30:,.1f} GiB of replicates "
                    f"(one float64 each; bound {MAX_REPLICATE_BYTES / 2**30:.0f} GiB, "
                    "agentstudies.stats.check_resample_budget); the papers use 2,000-100,000")
    return None

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
