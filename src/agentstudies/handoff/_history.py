"""Recorded-history handoff: cut a replayable log before its final model call and verify replays.

Source: Section 4.1 ("TravelPlanner and Agent-STAR") and Appendix A ("TravelPlanner
handoff construction"). When the environment cannot be cloned at a verified frontier, the
handoff is the point *immediately before the reacher trajectory's final model call*: a
function of the recorded reacher run alone (so it satisfies the handoff-rule condition of
Sec. 2.1). The evaluator resets the task, replays every preceding action and tool
response, and requires the reconstructed history to equal the recorded one before either
solver receives it.

A log is any sequence of records (``dict``), one per message / observation / action, in
order. Which records are model calls is decided by ``is_model_call`` (default: a record
whose ``role`` is ``"assistant"``, the chat-message convention; pass e.g.
``lambda r: r["kind"] == "action"`` for an observation/action log). Records are compared
and hashed through canonical JSON (sorted keys, no whitespace, UTF-8), so key order does
not matter but every value must be JSON-serialisable.

Example
-------
>>> log = [{"role": "system", "content": "plan a trip"},
...        {"role": "assistant", "content": "search flights"},
...        {"role": "tool", "content": "3 flights"},
...        {"role": "assistant", "content": "final plan"}]
>>> h = cut_before_final_call(log)
>>> h.cut_index, len(h.prefix)
(3, 3)
>>> digest = verify_replay(log[:3], h)  # raises ReplayMismatch on a difference
>>> digest == h.history_hash
True
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

__all__ = [
    "RecordedHandoff",
    "ReplayMismatch",
    "canonical_record",
    "cut_before_final_call",
    "history_hash",
    "replay_and_verify",
    "verify_replay",
]


class ReplayMismatch(ValueError):
    """A replayed history differs from the recorded one; ``step`` is the first differing index."""

    def __init__(self, message: str, step: int):
        super().__init__(message)
        self.step = step


def _default_is_model_call(record: Mapping[str, Any]) -> bool:
    return record.get("role") == "assistant"


def canonical_record(record: Mapping[str, Any], index: int | None = None) -> str:
    """Canonical JSON text of one record (sorted keys, compact, UTF-8 preserved).

    Raises
    ------
    TypeError
        If ``record`` is not a mapping or holds a value JSON cannot encode (names the index).
    """
    where = "" if index is None else f" at step {index}"
    if not isinstance(record, Mapping):
        raise TypeError(f"history record{where} must be a dict; got {type(record).__name__}")
    try:
        return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"history record{where} is not JSON-serialisable: {exc}") from exc


def history_hash(records: Sequence[Mapping[str, Any]]) -> str:
    """SHA-256 of a history: the canonical JSON records joined by newlines (hex digest)."""
    h = hashlib.sha256()
    for i, r in enumerate(records):
        h.update(canonical_record(r, i).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class RecordedHandoff:
    """The handoff input cut from one recorded reacher trajectory.

    Attributes
    ----------
    prefix : tuple of dict
        ``records[:cut_index]`` - everything before the final model call.
    cut_index : int
        Index of the final model call in the recorded log (``len(prefix)``).
    history_hash : str
        :func:`history_hash` of ``prefix``.
    final_call : dict
        The recorded final model call (the reacher's own continuation; not given to solvers).
    n_records : int
        Length of the full recorded log.
    """

    prefix: tuple
    cut_index: int
    history_hash: str
    final_call: Mapping[str, Any]
    n_records: int


def cut_before_final_call(
    records: Sequence[Mapping[str, Any]],
    *,
    is_model_call: Callable[[Mapping[str, Any]], bool] | None = None,
) -> RecordedHandoff:
    """Cut a recorded trajectory immediately before its final model call (App. A).

    Parameters
    ----------
    records : sequence of dict
        The recorded trajectory, in order (task prompt, model messages, tool calls and
        responses, or observations and actions).
    is_model_call : callable, optional
        ``record -> bool``; default ``record.get("role") == "assistant"``.

    Returns
    -------
    RecordedHandoff

    Raises
    ------
    TypeError
        A record that is not a dict or not JSON-serialisable (names its index).
    ValueError
        Empty log, no model call, or the first record is the only model call position
        (nothing precedes it, so there is no history to hand off).
    """
    is_call = is_model_call or _default_is_model_call
    recs = list(records)
    if not recs:
        raise ValueError("recorded trajectory is empty; expected at least a prompt and one model call")
    for i, r in enumerate(recs):
        canonical_record(r, i)
    calls = [i for i, r in enumerate(recs) if is_call(r)]
    if not calls:
        raise ValueError("recorded trajectory has no model call (is_model_call matched no record); cannot place "
                         "the handoff before the final model call")
    cut = calls[-1]
    if cut == 0:
        raise ValueError("the final model call is the first record: no history precedes it to hand off")
    prefix = tuple(dict(r) for r in recs[:cut])
    return RecordedHandoff(prefix=prefix, cut_index=cut, history_hash=history_hash(prefix),
                           final_call=dict(recs[cut]), n_records=len(recs))


def _diff_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    keys = sorted(set(a) | set(b), key=str)
    return [str(k) for k in keys if k not in a or k not in b or
            json.dumps(a[k], sort_keys=True, default=str) != json.dumps(b[k], sort_keys=True, default=str)]


def verify_replay(
    replayed: Sequence[Mapping[str, Any]],
    recorded: RecordedHandoff | Sequence[Mapping[str, Any]],
) -> str:
    """Require a replayed history to equal the recorded one, record by record.

    Parameters
    ----------
    replayed : the history reconstructed by resetting the task and replaying the prefix.
    recorded : a :class:`RecordedHandoff` (its ``prefix``) or a recorded record list.

    Returns
    -------
    str, the common :func:`history_hash`.

    Raises
    ------
    ReplayMismatch
        (a ``ValueError``) naming the first differing step, the differing keys and both
        values, or the first step present in only one of the two histories.
    """
    want = list(recorded.prefix if isinstance(recorded, RecordedHandoff) else recorded)
    got = list(replayed)
    for i, (g, w) in enumerate(zip(got, want)):
        cg, cw = canonical_record(g, i), canonical_record(w, i)
        if cg != cw:
            keys = _diff_keys(g, w)
            detail = "; ".join(f"{k}: replayed {json.dumps(g.get(k), default=str)[:80]} vs recorded "
                               f"{json.dumps(w.get(k), default=str)[:80]}" for k in keys[:3])
            raise ReplayMismatch(f"replayed history differs from the recording at step {i} (keys {keys}): {detail}", i)
    if len(got) != len(want):
        i = min(len(got), len(want))
        which = "replayed history is shorter" if len(got) < len(want) else "replayed history has extra records"
        raise ReplayMismatch(f"{which}: first unmatched step {i} (replayed {len(got)} records, recorded {len(want)})", i)
    digest = history_hash(got)
    if isinstance(recorded, RecordedHandoff) and digest != recorded.history_hash:  # pragma: no cover - defensive
        raise ReplayMismatch("history hash differs although every record matched", len(got))
    return digest


def replay_and_verify(
    handoff: RecordedHandoff,
    replay: Callable[[tuple], Sequence[Mapping[str, Any]]],
) -> str:
    """Run ``replay(handoff.prefix)`` (reset the task, re-execute the recorded actions,
    return the reconstructed history) and :func:`verify_replay` it; returns the hash."""
    return verify_replay(list(replay(handoff.prefix)), handoff)
