"""Shared fixtures of the test suite.

``smoke_runs``: every chapter of ``book/_toc.yml`` executed once per test session at its
``smoke`` profile, into a session folder (``<tmp>/chapters/<name>.ipynb``, tables under
``<tmp>/artifacts/<name>/``), with ``--jobs 2`` (:data:`SMOKE_JOBS`). The notebook smoke tests (tests/test_notebooks.py) and the
browser check (tests/test_browser.py, which builds the book from these executed copies)
share the runs, so each chapter executes once per ``make test``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from agentstudies.book import runner

#: The suite tests computation, not a user's cross-build cache: the ALFWorld
#: user cache (``agentstudies.envs.alfworld.usercache.CACHE_ENV``) is off in every test
#: and chapter run of the session unless a test turns it on (tests/test_alfworld_usercache.py).
os.environ["AGENTSTUDIES_CACHE"] = "off"

REPO = Path(__file__).resolve().parents[1]

#: ``--jobs`` of the shared smoke runs: two workers, as ``make book`` uses;
#: tests/test_jobs_identical.py reruns the parallel chapters with one and compares.
SMOKE_JOBS = 2


#: How many smoke chapters run side by side, each in its own process
#: (``python -m agentstudies.book._child``, as ``make book --at-once 2``), when the session
#: needs the whole book (the browser check is collected): the longest start first, and a
#: chapter a test asks for jumps the queue. ``AGENTSTUDIES_SMOKE_AT_ONCE=1`` runs every
#: chapter on demand in this process instead. Only the order changes, never a table.
SMOKE_AT_ONCE = max(1, int(os.environ.get("AGENTSTUDIES_SMOKE_AT_ONCE", "2")))

#: Chapters rerun with ``--jobs 1`` (tests/test_jobs_identical.py): those that declare ``n_jobs``.
JOBS_TWINS = frozenset(name for name in runner.toc_chapters(REPO)
                       if (REPO / "notebooks" / f"{name}.ipynb").is_file()
                       and "n_jobs" in runner.declared_parameters(REPO / "notebooks" / f"{name}.ipynb"))

#: Set by :func:`pytest_collection_modifyitems`: the session collected the smoke book's
#: browser check, which executes every chapter, so running them side by side costs nothing extra.
_WHOLE_BOOK = {"needed": False}


class SmokeRuns:
    """Smoke copies of the chapters: ``get(name)`` returns a chapter's run, executing it once.

    When the whole book is needed (:data:`_WHOLE_BOOK`) and :data:`SMOKE_AT_ONCE` > 1, the
    first ``get`` starts a background scheduler that runs every TOC chapter, up to
    ``SMOKE_AT_ONCE`` at a time in child processes, longest first by the last quick run;
    ``get`` waits for its chapter (moved to the front if not started). Otherwise each
    chapter runs on demand in this process. A chapter whose run failed raises the same
    :class:`runner.BookError` again on every later ``get`` (it is not re-run).

    ``get(name, jobs=1)`` is the same chapter's second run with ``--jobs 1``, into its own
    folders (tests/test_jobs_identical.py compares the two). Side by side, the scheduler
    queues these reruns (:data:`JOBS_TWINS`) after the whole book, so they keep both cores
    busy while the browser check and the other tests run instead of running one after
    another at the end of the session.
    """

    def __init__(self, folder: Path, at_once: int = SMOKE_AT_ONCE):
        self.folder = folder
        self.chapters = folder / "chapters"
        self.artifacts = folder / "artifacts"
        self.at_once = at_once
        self._done: dict[str, runner.RunResult | BaseException] = {}
        self._cond = threading.Condition()
        self._queue: list[str] = []
        self._running: dict[str, tuple[subprocess.Popen, Path]] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    def _key(self, name: str, jobs: int) -> str:
        return name if jobs == SMOKE_JOBS else f"{name}@jobs{jobs}"

    def _folders(self, key: str) -> tuple[str, int, Path, Path]:
        """(chapter, jobs, executed-notebook folder, artifacts root) of a run key."""
        if "@jobs" not in key:
            return key, SMOKE_JOBS, self.chapters, self.artifacts
        name, jobs = key.split("@jobs")
        base = self.folder / f"jobs{jobs}"
        return name, int(jobs), base / "chapters", base / "artifacts"

    def get(self, name: str, jobs: int = SMOKE_JOBS) -> runner.RunResult:
        key = self._key(name, jobs)
        if self.at_once > 1 and _WHOLE_BOOK["needed"]:
            self._wait_side_by_side(key)
        elif key not in self._done:
            _, _, chapters, artifacts = self._folders(key)
            try:
                self._done[key] = runner.run_notebook(
                    name, {}, chapters / f"{name}.ipynb", profile="smoke", jobs=jobs, root=REPO,
                    artifacts=artifacts,
                )
            except runner.BookError as exc:
                self._done[key] = exc
        result = self._done[key]
        if isinstance(result, BaseException):
            raise result
        return result

    # ------------------------------------------------------------ side by side
    def _wait_side_by_side(self, name: str) -> None:
        with self._cond:
            if self._thread is None:
                chapters = sorted(runner.toc_chapters(REPO), key=lambda c: -_last_quick_seconds(c))
                twins = [self._key(c, 1) for c in chapters if c in JOBS_TWINS]
                self._queue = chapters + twins
                self._tmp = Path(tempfile.mkdtemp(prefix="smoke-results-", dir=self.folder))
                self._thread = threading.Thread(target=self._schedule, name="smoke-runs", daemon=True)
                self._thread.start()
            if name not in self._done and name not in self._running:
                if name in self._queue:
                    self._queue.remove(name)
                self._queue.insert(0, name)
            while name not in self._done:
                self._cond.wait()

    def _start(self, key: str) -> None:
        name, jobs, chapters, artifacts = self._folders(key)
        out = self._tmp / f"{key}.json"
        spec = json.dumps({"chapter": name, "profile": "smoke", "jobs": jobs, "root": str(REPO),
                           "log_output": False, "result": str(out),
                           "output": str(chapters / f"{name}.ipynb"), "artifacts": str(artifacts)})
        chapters.mkdir(parents=True, exist_ok=True)
        self._running[key] = (subprocess.Popen([sys.executable, "-m", "agentstudies.book._child", spec]), out)

    def _schedule(self) -> None:
        from agentstudies.book.schedule import _child_result

        while True:
            with self._cond:
                if self._closed or not (self._queue or self._running):
                    return
                while self._queue and len(self._running) < self.at_once:
                    self._start(self._queue.pop(0))
                for name, (proc, out) in list(self._running.items()):
                    if proc.poll() is not None:
                        del self._running[name]
                        self._done[name] = _child_result(self._folders(name)[0], proc.returncode, out)
                        self._cond.notify_all()
            time.sleep(0.1)

    def close(self) -> None:
        """Stop the scheduler; terminate chapters still running (an interrupted session)."""
        with self._cond:
            self._closed = True
            for proc, _ in self._running.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
        for proc, _ in list(self._running.values()):
            proc.wait()


def _last_quick_seconds(chapter: str) -> float:
    from agentstudies.book.schedule import _last_seconds

    seconds = _last_seconds(REPO, chapter, "quick")
    return seconds if seconds != float("inf") else 1e9


def pytest_collection_finish(session):
    """After selection (``-k`` / ``-m`` applied): does any selected test build the smoke book?"""
    _WHOLE_BOOK["needed"] = any(Path(str(item.fspath)).name == "test_browser.py"
                                and "smoke_runs" in getattr(item, "fixturenames", ()) for item in session.items)


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory):
    runs = SmokeRuns(tmp_path_factory.mktemp("smoke"))
    yield runs
    runs.close()


#: Test modules that use the shared smoke runs (found by name, as the xdist controller
#: collects nothing itself): ``make test`` keeps them on one worker.
SMOKE_MODULES = frozenset(p.name for p in Path(__file__).parent.glob("test_*.py")
                          if "smoke_runs" in p.read_text(encoding="utf-8"))


def pytest_xdist_make_scheduler(config, log):
    """``pytest -n 2 --dist loadfile`` (``make test``): every module goes whole to one
    worker, and the modules that use the shared smoke runs go together to the same one,
    so each chapter still executes once per session. (xdist's ``loadgroup`` marks do not
    reach the scheduler under pytest 9, which ignores the node-id suffix they set.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SmokeRunsTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "smoke-runs" if Path(module).name in SMOKE_MODULES else module

    return SmokeRunsTogether(config, log)
