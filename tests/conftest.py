"""Shared fixtures of the test suite.

``smoke_runs``: every chapter of ``book/_toc.yml`` executed once per test session at its
``smoke`` profile, into a session folder (``<tmp>/chapters/<name>.ipynb``, tables under
``<tmp>/artifacts/<name>/``), with ``--jobs 2`` (:data:`SMOKE_JOBS`). The notebook smoke tests (tests/test_notebooks.py) and the
browser check (tests/test_browser.py, which builds the book from these executed copies)
share the runs, so each chapter executes once per ``make test``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentstudies import runner

#: The suite tests computation, not a user's cross-build cache (issue 31): the ALFWorld
#: user cache (``agentstudies.envs.alfworld.usercache.CACHE_ENV``) is off in every test
#: and chapter run of the session unless a test turns it on (tests/test_alfworld_usercache.py).
os.environ["AGENTSTUDIES_CACHE"] = "off"

REPO = Path(__file__).resolve().parents[1]

#: ``--jobs`` of the shared smoke runs: two workers, as ``make book`` uses;
#: tests/test_jobs_identical.py reruns the parallel chapters with one and compares.
SMOKE_JOBS = 2


class SmokeRuns:
    """Lazily executed smoke copies of the chapters: ``get(name)`` runs a chapter once.

    A chapter whose run failed raises the same :class:`runner.NotebookExecutionError`
    again on every later ``get`` (it is not re-run).
    """

    def __init__(self, folder: Path):
        self.folder = folder
        self.chapters = folder / "chapters"
        self.artifacts = folder / "artifacts"
        self._done: dict[str, runner.RunResult | BaseException] = {}

    def get(self, name: str) -> runner.RunResult:
        if name not in self._done:
            try:
                self._done[name] = runner.run_notebook(
                    name, {}, self.chapters / f"{name}.ipynb", profile="smoke", jobs=SMOKE_JOBS, root=REPO,
                    artifacts=self.artifacts,
                )
            except runner.BookError as exc:
                self._done[name] = exc
        result = self._done[name]
        if isinstance(result, BaseException):
            raise result
        return result


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory) -> SmokeRuns:
    return SmokeRuns(tmp_path_factory.mktemp("smoke"))


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
