"""run_many: thread workers give the outcomes of the sequential path, in input order."""

from __future__ import annotations

import threading

import pytest

from agentstudies.envs.impossible import SandboxConfig, SandboxFault, Submission, isolation, run_many
from agentstudies.envs.impossible import _sandbox as sb

TESTS = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n"


def _subs():
    good = Submission("def square(x):\n    return x * x\n", "square", TESTS)
    second = Submission("def square(x):\n    return 4 if x == 2 else 0\n", "square", TESTS)   # fails statement 1
    first = Submission("def square(x):\n    return 0\n", "square", TESTS)                      # fails statement 0
    crash = Submission("def square(x):\n    raise KeyError(x)\n", "square", TESTS)
    return [good, second, first, crash, good, first]


def test_run_many_in_threads_matches_the_sequential_path(monkeypatch):
    try:
        isolation()
    except SandboxFault as exc:  # pragma: no cover - a machine without isolation
        pytest.skip(str(exc))
    cfg = SandboxConfig(wall_s=20, cpu_s=5)
    seq, _ = run_many(_subs(), cfg, n_jobs=1)
    threads = set()
    real = sb.run_submission
    monkeypatch.setattr(sb, "run_submission", lambda s, c: threads.add(threading.get_ident()) or real(s, c))
    par, rate = run_many(_subs(), cfg, n_jobs=2)
    key = [(o.outcome, o.failed_stmt) for o in seq]
    assert key == [(o.outcome, o.failed_stmt) for o in par]
    assert [k[0] for k in key] == ["passed", "failed", "failed", "error", "passed", "failed"]
    assert [k[1] for k in key][1:3] == [1, 0]
    assert len(threads) >= 1 and rate > 0      # ran in this process's threads (no process workers)
