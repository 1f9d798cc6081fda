"""Execution of one notebook: :func:`run_notebook` runs it with papermill into a staging
folder and a ``.partial.ipynb``, and commits the run only on success (each artifacts folder
swapped in atomically, then the notebook, with SIGINT/SIGTERM held during the commit);
a failed or interrupted run leaves the earlier notebook and artifacts byte-identical and
keeps ``<OUT stem>.failed.ipynb``. One run at a time writes a given OUT (a lock beside it,
:func:`_run_lock`), so two runs of one chapter never delete each other's files, and a run
that ends without ``ch.finish()`` is a failure. Also the post-processing of the executed copy (widgets
stripped, papermill's injected cell hidden, the run note) and where a run writes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import nbformat

from agentstudies.book.model import (
    _root, BookError, chapter_of, load_profiles, NotebookExecutionError, ParameterError,
    resolve_parameters, run_note, toc_chapters, UnknownChapterError,
)
from agentstudies.book.kernel import (
    _kernel_env, _quiet_progress, KERNEL, resolve_artifacts_env, shared_scratch,
)

__all__ = [
    "RunResult", "run_notebook", "NOTE_TAG", "executed_run_info", "WIDGET_MIME_PREFIX",
    "strip_widgets",
]


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

#: jupyter_client's message when a kernel exits before its first reply (no cell has run):
#: the start-up port race that :func:`run_notebook` retries once.
KERNEL_START_RACE = "Kernel died before replying to kernel_info"

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
    :func:`resolve_artifacts_env`); ``output_path`` wins over it, so two ``-o``
    runs never share a folder. A failed run that created the artifacts root removes it
    again (no empty ``OUT.artifacts/`` is left).

    Nothing that exists is touched until the run succeeds: the kernel writes into a
    staging folder beside the artifacts and papermill into ``<OUT stem>.partial.ipynb``;
    on success each artifacts folder is swapped in atomically, then the notebook. On a
    failing cell, a dead kernel or an interrupt (Ctrl-C, SIGTERM) the earlier notebook and
    artifacts stay byte-identical; the partially executed notebook is kept as
    ``<OUT stem>.failed.ipynb`` for inspection and the staged artifacts are removed.

    A second run writing the same OUT while one runs is refused before it starts
    (:func:`_run_lock`). A notebook that runs to its end without reaching
    ``ch.finish()`` (its staged ``artifacts/<chapter>/`` still holds the ``INCOMPLETE``
    marker, no provenance) fails like a failing cell: nothing is committed.

    A run whose parameters differ from its profile, or at a profile other than ``quick``,
    gets a visible note cell after the title of the executed notebook (an admonition) and
    the record in the notebook's metadata and in the chapter's provenance (``run``).

    Raises
    ------
    ParameterError
        See :func:`resolve_parameters`; also a folder as ``output_path``, or ``profile``
        for a notebook that names no chapter (all raised before any execution).
    BookError
        Another run is writing the same OUT (names its pid); raised before any execution.
    UnknownChapterError
        If the notebook does not exist (lists the chapters for an unknown name).
    NotebookExecutionError
        If a cell raises (names the notebook, the source cell index and the exception).
    """
    import papermill as pm  # slow import: only when executing

    root = _root(root)
    path, is_chapter, out, chapter = _run_targets(name_or_path, output_path, profile, root)
    params = resolve_parameters(path, profile, parameters, jobs, root=root, chapter=chapter)
    _check_llm_endpoint(path, params)
    info = run_note(path, profile, params, chapter=chapter, root=root)
    out = out.resolve()
    book_out = is_chapter and output_path is None
    art_root = (Path(artifacts).expanduser() if artifacts is not None else
                _artifacts_root(out, root, book_out, explicit_out=output_path is not None)).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with _run_lock(out):
        return _execute(pm, path, out, art_root, params, info, root, chapter, log_output)


def _execute(pm: Any, path: Path, out: Path, art_root: Path, params: Mapping[str, Any], info: Mapping[str, Any],
             root: Path, chapter: str, log_output: bool) -> RunResult:
    """:func:`run_notebook` once its targets are known and its lock is held: stage,
    execute, check that the chapter finished, commit."""
    import shutil
    import uuid

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
                _papermill(pm, path, partial, params, log_output)
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
        unfinished = _unfinished(staging)
        if unfinished:
            partial.replace(failed)
            raise NotebookExecutionError(
                path.stem, -1, "ChapterNotFinished",
                f"the notebook ran to its end but never reached ch.finish() (artifacts/{unfinished}/ still holds the "
                "INCOMPLETE marker and no provenance.json); nothing was committed: end the notebook with a cell "
                "calling ch.finish()", failed)
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

#: The marker a chapter keeps in its artifacts folder until ``finish()`` (the value of
#: ``agentstudies.book.chapter.INCOMPLETE``; not imported from there, which imports this package).
INCOMPLETE_MARKER = "INCOMPLETE"


def _check_llm_endpoint(path: Path, params: Mapping[str, Any]) -> None:
    """An LLM agent's ``model_base_url`` answers before the kernel starts (one short
    request, :func:`agentstudies.agents._llm.check_endpoint`): a dead endpoint ends the
    run in seconds with the URL named, instead of after the kernel's start and imports.

    Raises
    ------
    ParameterError
        The endpoint does not answer (names the URL and the fix).
    """
    from agentstudies.book.model import _literal, declared_parameters

    declared = declared_parameters(path)
    value = {k: _literal(p.default) for k, p in declared.items() if k in ("agent", "model_base_url")}
    value.update({k: v for k, v in params.items() if k in ("agent", "model_base_url")})
    agent, url = value.get("agent"), value.get("model_base_url")
    if not (isinstance(agent, str) and agent.startswith("llm:") and isinstance(url, str) and url.strip()):
        return
    from agentstudies.agents.endpoint import EndpointUnreachable, check_endpoint

    try:
        check_endpoint(url.strip())
    except EndpointUnreachable as exc:
        raise ParameterError(f"-p model_base_url: {exc}") from None


def _unfinished(staging: Path) -> str | None:
    """The first staged artifacts folder whose chapter never reached ``finish()``."""
    for entry in sorted(staging.iterdir()):
        if entry.is_dir() and (entry / INCOMPLETE_MARKER).exists():
            return entry.name
    return None


@contextmanager
def _run_lock(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``<OUT folder>/.<OUT name>.lock`` while a run writes OUT.

    Two runs of one chapter at once shared ``.partial.ipynb`` / ``.failed.ipynb`` and one's
    commit deleted the other's kept notebook; now the second is refused at once, naming
    the first's pid. The lock is the kernel's (``flock``): a crashed run holds nothing.

    Raises
    ------
    BookError
        When another process holds the lock.
    """
    import fcntl

    lock = out.with_name(f".{out.name}.lock")
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise BookError(
                f"another run is writing {out} (pid {holder}); two runs of one chapter at once would replace each "
                f"other's files: wait for it to end, or give this run its own output with -o OTHER.ipynb"
            ) from None
        try:
            same = os.path.exists(lock) and os.stat(lock).st_ino == os.fstat(fd).st_ino
        except OSError:
            same = False
        if same:  # not a lock file the previous holder removed meanwhile
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        try:
            os.unlink(lock)
        except OSError:
            pass
        os.close(fd)


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

NOTE_TAG = "agentstudies-run-note"

def _note_cell(info: Mapping[str, Any]) -> Any:
    prof = info["profile"]
    if info["overrides"]:
        items = ", ".join(f"`{k} = {v!r}`" for k, v in info["overrides"].items())
        body = (f"This page was executed with parameters outside the `{prof}` profile of "
                f"`notebooks/profiles.yaml`: {items}. Its numbers are not those of the "
                f"book's profile run; `agentstudies book --only {info.get('chapter', '<chapter>')}` restores it.")
        title = "Non-profile run"
        body += _local_model_sentence(info["overrides"])
    else:
        body = (f"This page was executed at the `{prof}` profile of `notebooks/profiles.yaml` "
                f"(the book's default is `quick`).")
        title = f"Profile {prof}"
    cell = nbformat.v4.new_markdown_cell(
        f"```{{admonition}} {title}\n:class: warning\n{body}\n```"
    )
    cell.metadata["tags"] = [NOTE_TAG]
    return cell

def _local_model_sentence(overrides: Mapping[str, Any]) -> str:
    """The label of a run whose agent is the packaged local model (``run --local-llm``)."""
    from agentstudies.agents import LOCAL_MODEL

    if overrides.get("agent") != f"llm:openai-api/local/{LOCAL_MODEL}":
        return ""
    return (f" The agent is the packaged {LOCAL_MODEL} base model served on this machine: a plumbing "
            "demonstration, not evidence; no finding on this page rests on it.")

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

#: MIME types of ipywidgets outputs (``...widget-view+json``) and notebook widget state.
WIDGET_MIME_PREFIX = "application/vnd.jupyter.widget"

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


def _papermill(pm: Any, path: Path, partial: Path, params: Mapping[str, Any], log_output: bool) -> None:
    """papermill's run of ``path`` into ``partial``, started once more when the kernel dies
    before its first reply (:data:`KERNEL_START_RACE`: no cell has run)."""
    for attempt in (1, 2):
        try:
            pm.execute_notebook(
                str(path), str(partial), parameters=params, kernel_name=KERNEL,
                cwd=str(path.parent), progress_bar=False, log_output=log_output,
                extra_arguments=["--IPKernelApp.log_level=CRITICAL"],  # silence kernel chatter
            )
            return
        except RuntimeError as exc:
            if attempt == 2 or KERNEL_START_RACE not in str(exc):
                raise
            # jupyter_client picks free ports and the kernel binds them later, so another
            # process starting at the same moment can take one; a second start gets fresh ports
            print(f"{path.stem}: the kernel died before it answered ({exc}); starting it once more",
                  file=sys.stderr, flush=True)
