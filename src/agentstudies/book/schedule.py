"""Scheduling the book's chapters: :func:`run_book` checks every selected chapter's
notebook and parameters first, then runs them one after another or ``at_once`` side by side
(each in a ``python -m agentstudies.book._child`` process, longest first by the recorded
durations), records each chapter's wall time, and reports which executed copies a run
will replace.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from agentstudies.book.model import (
    _root, BookError, NotebookExecutionError, ParameterError, resolve_parameters, toc_chapters,
    UnknownChapterError,
)
from agentstudies.book.kernel import shared_scratch
from agentstudies.book.execute import executed_run_info, run_notebook, RunResult
from agentstudies.book.progress import BookProgress, heartbeat

__all__ = [
    "run_book", "DURATIONS_FILE", "REFERENCE_DURATIONS_FILE", "overwrite_report",
]


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
    runs, so a typo in ``profiles.yaml`` costs nothing. Prints through ``echo`` a line when
    a chapter starts and one when it ends, each with chapters done / total, the elapsed
    time and an ETA from the chapters' expected times (:class:`BookProgress`), and a
    heartbeat line every 30 s while a chapter runs (:func:`heartbeat`); stops at the first
    failing notebook.

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
    side_by_side = int(at_once) > 1 and len(chapters) > 1
    progress = BookProgress(chapters, {c: _last_seconds(root, c, profile) for c in chapters},
                            int(at_once) if side_by_side else 1)
    echo(f"running {len(chapters)} chapter(s) at profile {profile}"
         f"{f', {int(at_once)} at once' if side_by_side else ''}: {progress.status()}")
    with shared_scratch():  # one translation cache for every chapter of the book
        if side_by_side:
            results = _run_side_by_side(chapters, profile, jobs, root, log_output, echo, int(at_once), progress)
        else:
            results = []
            for chapter in chapters:
                echo(progress.start(chapter))
                with heartbeat(echo, lambda: progress.beat(chapter)):
                    result = run_notebook(chapter, None, None, profile, jobs=jobs, root=root, log_output=log_output)
                _record_seconds(root, profile, chapter, result.seconds)
                echo(f"{result.summary()}\n    {progress.finish(chapter, result.seconds)}")
                results.append(result)
    echo(f"executed {len(results)} chapter(s) in {time.perf_counter() - t0:.1f} s")
    return results

def _run_side_by_side(chapters: Sequence[str], profile: str, jobs: int | None, root: Path, log_output: bool,
                      echo: Callable[[str], None], at_once: int, progress: BookProgress) -> list[RunResult]:
    """:func:`run_book`'s ``at_once`` path: up to ``at_once`` child processes
    (``python -m agentstudies.book._child``), each running one chapter and writing its
    :class:`RunResult` (or its error) as JSON. Ctrl-C / SIGTERM here sends SIGTERM to the
    running children, waits for them (each keeps its last good chapter) and re-raises."""

    # longest first (by the last run at this profile, else the shipped time, else the last
    # executed copy; chapters with none first), so the run does not end with one long
    # chapter on one core
    todo = sorted(enumerate(chapters, 1), key=lambda ic: -_last_seconds(root, ic[1], profile))
    running: dict[str, tuple[subprocess.Popen, Path]] = {}
    done: dict[str, RunResult] = {}
    failure: BookError | None = None
    with tempfile.TemporaryDirectory(prefix="agentstudies-book-") as tmp, \
            heartbeat(echo, lambda: "\n".join(progress.beat(c) for c in list(running))):
        try:
            while todo or running:
                while todo and failure is None and len(running) < at_once:
                    _, chapter = todo.pop(0)
                    echo(progress.start(chapter))
                    out = Path(tmp) / f"{chapter}.json"
                    spec = json.dumps({"chapter": chapter, "profile": profile, "jobs": jobs, "root": str(root),
                                       "log_output": log_output, "result": str(out)})
                    running[chapter] = (subprocess.Popen([sys.executable, "-m", "agentstudies.book._child", spec]), out)
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
                        echo(f"{res.summary()}\n    {progress.finish(chapter, res.seconds)}")
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
    """Read what a ``book._child`` process wrote: a :class:`RunResult`, or the error it hit."""
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

def _say(message: str) -> None:
    print(message, flush=True)
