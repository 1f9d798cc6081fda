"""The one place this package uses a private name of ``inspect_ai`` (pinned
``inspect_ai==0.3.285`` in pyproject.toml; re-check this module when the pin moves).

* :func:`suspend_store_events` -- ``inspect_ai.util._store.suspend_store_events``: inside
  it Inspect records no per-span ``StoreEvent`` (a JSON diff of the task's store), which
  :func:`agentstudies.agents.testing.mock_tau2_eval` turns off to write smaller logs.
  Scores, messages and usage are unchanged.
"""

from __future__ import annotations

from contextlib import AbstractContextManager


def suspend_store_events() -> AbstractContextManager:
    """Inspect's private ``suspend_store_events()`` context manager (inspect_ai 0.3.285)."""
    from inspect_ai.util._store import suspend_store_events as _suspend

    return _suspend()
