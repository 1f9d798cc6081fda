"""Reusing sandbox verdicts: a reused verdict equals a fresh run of the same submission,
a changed submission (or limits) never gets another's verdict, load-dependent outcomes are
never stored, and the studies' tables are the same with and without reuse."""

from __future__ import annotations

import dataclasses
import json
import stat

import pandas as pd

import pytest

from agentstudies.envs.impossible import (
    RunOutcome, SandboxConfig, Submission, VerdictCache, reusable, run_submission,
)
from agentstudies.envs.impossible import _verdicts as vc

TESTS = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n"
GOOD = "def square(x):\n    return x * x\n"
HALF = "def square(x):\n    return 4 if x == 2 else 0\n"
FAST = SandboxConfig(wall_s=8, cpu_s=4, mem_mb=256)


def _same(a: RunOutcome, b: RunOutcome) -> bool:
    """Equal in everything a run determines (not its duration, nor the reuse mark)."""
    strip = dict(wall_s=0.0, extra={})
    return dataclasses.replace(a, **strip) == dataclasses.replace(b, **strip)


@pytest.fixture
def counted(monkeypatch):
    ran: list[Submission] = []

    def spy(sub, config=FAST):
        ran.append(sub)
        return run_submission(sub, config)

    monkeypatch.setattr(vc, "run_submission", spy)
    return ran


@pytest.mark.parametrize("code,tests,access,edit", [
    (GOOD, TESTS, "read_only", None),
    (HALF, TESTS, "hidden", None),
    ("def square(x):\n    return x / 0\n", TESTS, "read_only", None),
    ("import sys\nsys.exit(0)\n" + GOOD, TESTS, "read_only", None),
    (HALF, TESTS, "writable",
     "p = '../tests/test_check.py'\nsrc = open(p).read().replace('== 9', '== 0')\nopen(p, 'w').write(src)\n"),
])
def test_reused_verdict_equals_a_fresh_run(counted, code, tests, access, edit):
    sub = Submission(code, "square", tests, access, edit=edit)
    cache = VerdictCache()
    first = cache.run(sub, FAST)
    again = cache.run(Submission(code, "square", tests, access, edit=edit), FAST)   # a new, equal object
    fresh = vc.run_submission(sub, FAST)        # independent: no cache involved (the spy counts it)
    assert len(counted) == 2                    # the cache ran once, the check once
    assert again.extra.get("reused") is True and not first.extra.get("reused")
    assert _same(first, again) and _same(again, fresh)
    assert (cache.runs, cache.hits) == (1, 1)


def test_mutated_submission_is_not_served_from_the_cache(counted):
    cache = VerdictCache()
    assert cache.run(Submission(GOOD, "square", TESTS), FAST).outcome == "passed"
    # one byte of code, of the tests, the access level, the edit, or the limits: a new run
    variants = [
        (Submission(GOOD.replace("x * x", "x * x "), "square", TESTS), FAST),
        (Submission(HALF, "square", TESTS), FAST),
        (Submission(GOOD, "square", TESTS.replace("== 9", "== 8")), FAST),
        (Submission(GOOD, "square", TESTS, "hidden"), FAST),
        (Submission(GOOD, "square", TESTS, edit="pass\n"), FAST),
        (Submission(GOOD, "square", TESTS), dataclasses.replace(FAST, mem_mb=300)),
    ]
    outs = [cache.run(s, c) for s, c in variants]
    assert len(counted) == 1 + len(variants) and cache.hits == 0
    assert not any(o.extra.get("reused") for o in outs)
    assert [o.outcome for o in outs[1:3]] == ["failed", "failed"]
    assert len({VerdictCache.key(s, c) for s, c in variants}) == len(variants)


def test_load_dependent_outcomes_are_never_stored(counted):
    cache = VerdictCache()
    spin = Submission("def square(x):\n    while True:\n        pass\n", "square", TESTS)
    cfg = SandboxConfig(wall_s=3, cpu_s=1)
    assert cache.run(spin, cfg).outcome == "timeout"
    assert cache.run(spin, cfg).outcome == "timeout"
    assert len(counted) == 2 and cache.hits == 0
    killed = Submission("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n" + GOOD, "square", TESTS)
    r = cache.run(killed, FAST)
    assert r.outcome == "exited_early" and not reusable(r, FAST)


def test_reusable_rules():
    cfg = SandboxConfig(wall_s=4)
    assert reusable(RunOutcome("passed", wall_s=0.1), cfg)
    assert reusable(RunOutcome("exited_early", returncode=0, wall_s=0.1), cfg)
    assert not reusable(RunOutcome("passed", wall_s=2.5), cfg)          # near the wall limit
    assert not reusable(RunOutcome("timeout", wall_s=0.1), cfg)
    assert not reusable(RunOutcome("exited_early", returncode=137, wall_s=0.1), cfg)
    assert not reusable(RunOutcome("exited_early", returncode=-9, wall_s=0.1), cfg)
    assert not reusable(RunOutcome("aborted"), cfg)


def test_folder_is_shared_private_and_checked(tmp_path, counted):
    folder = tmp_path / "verdicts"
    sub = Submission(HALF, "square", TESTS, "writable")
    a = VerdictCache(folder).run(sub, FAST)
    b = VerdictCache(folder).run(sub, FAST)       # another process's cache: same folder
    assert len(counted) == 1 and b.extra.get("reused") and _same(a, b)
    assert b.tests_after == a.tests_after == TESTS
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = list(folder.glob("*.json"))
    assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
    # a stored verdict for another key, or a damaged file, is ignored (the run happens)
    rec = json.loads(files[0].read_text())
    rec["outcome"]["outcome"] = "passed"
    rec["key"] = "0" * 64
    files[0].write_text(json.dumps(rec))
    assert VerdictCache(folder).run(sub, FAST).outcome == "failed"
    files[0].write_text("{not json")
    assert VerdictCache(folder).run(sub, FAST).outcome == "failed"
    assert len(counted) == 3


def test_shared_cache_follows_the_scratch_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(vc, "_SHARED", {})
    monkeypatch.setenv(vc.SCRATCH_ENV, str(tmp_path))
    c = vc.shared_verdict_cache()
    assert c.folder == tmp_path / "impossible-verdicts" and vc.shared_verdict_cache() is c
    monkeypatch.delenv(vc.SCRATCH_ENV)
    assert vc.shared_verdict_cache().folder is None


def test_study_tables_identical_with_and_without_reuse(monkeypatch):
    from agentstudies.envs.impossible import Workflow
    from agentstudies.studies import impossible as st

    monkeypatch.setattr(vc, "_SHARED", {})
    monkeypatch.delenv(vc.SCRATCH_ENV, raising=False)
    tasks = st.load_tasks(2, seed=0)
    wfs = [Workflow("lenient", "writable", False, 3), Workflow("neutral", "read_only", False, 3)]
    cfg = SandboxConfig(wall_s=5, cpu_s=2)
    plain = st.simulate_episodes(tasks, wfs, config=cfg, reuse_verdicts=False)
    first = st.simulate_episodes(tasks, wfs, config=cfg)
    second = st.simulate_episodes(tasks, wfs, config=cfg)          # every verdict reused
    assert plain.reused == 0 and second.runs == plain.runs == first.runs
    # every verdict not reused is a load-dependent one (a timeout here), never stored
    not_stored = int(plain.attempts["outcome"].isin(["timeout", "exited_early"]).sum())
    assert 0 < second.reused <= second.runs and second.runs - second.reused <= not_stored
    for r in (first, second):
        pd.testing.assert_frame_equal(r.episodes, plain.episodes)
        pd.testing.assert_frame_equal(r.attempts, plain.attempts)
