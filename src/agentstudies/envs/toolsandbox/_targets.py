"""Milestone targets read from the starting world: :class:`WorldRef` (a cell of a table,
e.g. a contact's phone number) and its resolution, so that a perturbed world moves the
target with it (ToolSandbox writes its targets as constants; ours follow the world the
episode ran in).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from agentstudies.envs.toolsandbox._context import ID_COLUMNS

__all__ = ["WorldRef", "resolve_value", "resolve_targets"]


@dataclass(frozen=True)
class WorldRef:
    """A target value read from the starting world: column ``column`` of the row of table
    ``namespace`` whose id column (``ID_COLUMNS[namespace]``) equals ``key``."""

    namespace: str
    key: Any
    column: str


def resolve_value(value: Any, initial: Mapping[str, Sequence[Mapping[str, Any]]]) -> Any:
    """``value`` with every :class:`WorldRef` inside it (dicts, lists, tuples) replaced by the
    cell it names in ``initial`` (namespace -> rows).

    Raises
    ------
    KeyError
        The namespace, row or column is not in ``initial``.
    """
    if isinstance(value, WorldRef):
        idc = ID_COLUMNS.get(value.namespace)
        rows = initial.get(value.namespace)
        if idc is None or rows is None:
            raise KeyError(f"WorldRef namespace {value.namespace!r} is not a table of the starting world "
                           f"({sorted(initial)}); fix the scenario's target")
        for r in rows:
            if r.get(idc) == value.key:
                if value.column not in r:
                    raise KeyError(f"WorldRef column {value.column!r} not in {value.namespace} row {value.key!r} "
                                   f"(columns {sorted(r)})")
                return r[value.column]
        raise KeyError(f"WorldRef row {value.namespace}[{idc} = {value.key!r}] is not in the starting world")
    if isinstance(value, Mapping):
        return {k: resolve_value(v, initial) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(resolve_value(v, initial) for v in value)
    if isinstance(value, list):
        return [resolve_value(v, initial) for v in value]
    return value


def _has_ref(value: Any) -> bool:
    if isinstance(value, WorldRef):
        return True
    if isinstance(value, Mapping):
        return any(_has_ref(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(_has_ref(v) for v in value)
    return False


def _refs(c: Any) -> bool:
    flag = getattr(c, "has_world_ref", None)
    return _has_ref(c.target) if flag is None else flag


def resolve_targets(milestones: Sequence[Any], initial: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[Any, ...]:
    """``milestones`` with their :class:`WorldRef` targets read from ``initial``
    (namespace -> rows, e.g. ``ExecutionContext.table(ns, 0)`` per namespace). Milestones
    without a reference are returned as they are."""
    out = []
    for ms in milestones:
        if any(_refs(c) for c in ms.constraints):
            ms = type(ms)(ms.name, tuple(replace(c, target=resolve_value(c.target, initial)) if _refs(c) else c
                                          for c in ms.constraints))
        out.append(ms)
    return tuple(out)
