"""Reusing the verdicts of sandboxed runs (:class:`VerdictCache`, :func:`run_cached`).

Part of the sandboxed runner (:mod:`agentstudies.envs.impossible._sandbox`; import the
public names from :mod:`agentstudies.envs.impossible`).

A run is a deterministic function of the submission, the limits, the isolation in force
and the harness (the environment is fixed, ``PYTHONHASHSEED=0``; the process limit is per
run), so the verdict
of a byte-identical submission is reused instead of running it again -- within a process,
and across the processes of one book build through a folder under ``$AGENTSTUDIES_SCRATCH``
when the runner sets it. The key includes the isolation layer in force. Only
load-independent outcomes are reused: never a ``timeout``, never a run that used more
than half the wall limit, never an early exit by a signal, never ``tampered`` (see
:func:`reusable`). The folder and its files are the runner's (mode ``0700`` / ``0600``,
written atomically); a submission cannot see it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from agentstudies.envs.impossible._isolation import _HARNESS_SHA, _layer_info
from agentstudies.envs.impossible._sandbox import RunOutcome, SandboxConfig, Submission, run_submission

__all__ = ["VerdictCache", "run_cached", "reusable", "shared_verdict_cache", "SCRATCH_ENV"]

#: Bump when the stored form of a verdict or what determines a run changes.
_CACHE_FORMAT = 3
#: Environment variable naming the build's scratch folder (set by the runner,
#: :data:`agentstudies.book.runner.SCRATCH_ENV`); verdicts go to ``<folder>/impossible-verdicts``.
SCRATCH_ENV = "AGENTSTUDIES_SCRATCH"
#: Outcomes that depend only on what determines the run (not on the machine's load).
_REUSABLE_OUTCOMES = frozenset({"passed", "failed", "error", "memory", "exited_early"})


def reusable(outcome: RunOutcome, config: SandboxConfig) -> bool:
    """May the verdict of this run stand for every byte-identical run under ``config``?

    No for anything the machine's load could change: a ``timeout`` (wall or CPU limit), a
    run that took more than half the wall limit (a rerun under load might time out), an
    early exit by a signal or with no exit status (rc < 0 or >= 128: the kernel or the
    namespace init killed it), and ``aborted`` (nothing ran). Yes otherwise.
    """
    if outcome.outcome not in _REUSABLE_OUTCOMES or outcome.wall_s > config.wall_s / 2:
        return False
    if outcome.outcome == "exited_early":
        return outcome.returncode is not None and 0 <= outcome.returncode < 128
    return True


def _run_identity(config: SandboxConfig) -> dict[str, Any]:
    """Everything besides the submission that determines a run: the limits, the isolation
    layer actually in force (namespaces, user, interpreter), the harness source and the
    format. A verdict got under one layer is never reused under another."""
    iso = _layer_info(config.wanted_layer())
    return {"format": _CACHE_FORMAT, "config": asdict(config), "isolation": dict(iso), "harness": _HARNESS_SHA}


class VerdictCache:
    """Verdicts of sandboxed runs, keyed by everything that determines a run.

    ``folder``: where verdicts are also stored as ``<key>.json`` (shared by every process
    of a build; ``None``: this process only). ``max_entries`` bounds the in-memory table
    (oldest dropped first). Counters: ``hits`` (reused), ``runs`` (executed here).
    """

    def __init__(self, folder: str | os.PathLike | None = None, max_entries: int = 50_000):
        self.folder = Path(folder) if folder is not None else None
        self.max_entries = int(max_entries)
        self._memory: dict[str, RunOutcome] = {}
        self.hits = self.runs = 0
        if self.folder is not None:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)

    @staticmethod
    def key(sub: Submission, config: SandboxConfig) -> str:
        """SHA-256 of the submission (:meth:`Submission.key`) and :func:`_run_identity`."""
        blob = json.dumps([sub.key(), _run_identity(config)], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> RunOutcome | None:
        """The stored verdict of ``key`` (memory, then the folder), or ``None``. A stored
        file that is unreadable, malformed or made for another key counts as absent."""
        out = self._memory.get(key)
        if out is not None or self.folder is None:
            return out
        try:
            rec = json.loads((self.folder / f"{key}.json").read_text())
            if rec.get("key") != key or rec.get("format") != _CACHE_FORMAT:
                return None
            out = RunOutcome(**rec["outcome"])
        except (OSError, ValueError, TypeError, KeyError):
            return None
        self._remember(key, out)
        return out

    def put(self, key: str, outcome: RunOutcome) -> None:
        """Store ``outcome`` under ``key`` (in memory; in the folder atomically, mode 0600)."""
        self._remember(key, outcome)
        if self.folder is None:
            return
        rec = {"format": _CACHE_FORMAT, "key": key, "outcome": asdict(outcome)}
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".json")  # mode 0600
            with os.fdopen(fd, "w") as fh:
                json.dump(rec, fh)
            os.replace(tmp, self.folder / f"{key}.json")
        except OSError:       # a full or vanished scratch folder only costs a rerun later
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def _remember(self, key: str, outcome: RunOutcome) -> None:
        self._memory[key] = outcome
        while len(self._memory) > self.max_entries:
            self._memory.pop(next(iter(self._memory)))

    def run(self, sub: Submission, config: SandboxConfig = SandboxConfig()) -> RunOutcome:
        """:func:`run_submission`, or the stored verdict of a byte-identical run under the
        same identity. A reused outcome is the stored one (its ``wall_s`` is the original
        run's) with ``extra["reused"] = True``; a fresh one is stored when :func:`reusable`."""
        if sub.aborted:
            return run_submission(sub, config)
        key = self.key(sub, config)
        out = self.get(key)
        if out is not None:
            self.hits += 1
            return replace(out, extra={**out.extra, "reused": True})
        out = run_submission(sub, config)
        self.runs += 1
        if reusable(out, config):
            self.put(key, out)
        return out


_SHARED: dict[str, VerdictCache] = {}


def shared_verdict_cache() -> VerdictCache:
    """This process's :class:`VerdictCache`, stored under ``$AGENTSTUDIES_SCRATCH/
    impossible-verdicts`` when that variable names a folder (one cache per folder)."""
    scratch = os.environ.get(SCRATCH_ENV, "")
    folder = os.path.join(scratch, "impossible-verdicts") if scratch and os.path.isdir(scratch) else ""
    if folder not in _SHARED:
        _SHARED[folder] = VerdictCache(folder or None)
    return _SHARED[folder]


def run_cached(sub: Submission, config: SandboxConfig = SandboxConfig()) -> RunOutcome:
    """:meth:`VerdictCache.run` on :func:`shared_verdict_cache` (same signature as
    :func:`run_submission`, so it can be a :class:`~agentstudies.agents.impossible.MemoRunner`'s ``run``)."""
    return shared_verdict_cache().run(sub, config)
