"""Test hooks of the recovery harness (not part of the study's public surface).

:func:`worker_env` runs the harness with another env as this process's worker env (the
step-cache test compares a cached env with a plain one) and always restores the one
before.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from agentstudies.studies.alfworld.recovery import harness

__all__ = ["cached_env", "worker_env"]


def cached_env(budget: int) -> Any:
    """The env the harness uses in this process (made on first use, step cache on)."""
    return harness._env(budget)


@contextmanager
def worker_env(env: Any) -> Iterator[Any]:
    """Within the block the harness's :func:`~agentstudies.studies.alfworld.recovery.run_task`
    steps ``env``; on exit ``env`` is closed and the previous worker env (or none) restored."""
    before = harness._WORKER.get("env")
    harness._WORKER["env"] = env
    try:
        yield env
    finally:
        env.close()
        if before is None:
            harness._WORKER.pop("env", None)
        else:
            harness._WORKER["env"] = before
