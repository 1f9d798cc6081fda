"""Milestones, minefields and the ToolSandbox similarity score.

Following ToolSandbox (Lu et al., 2024, Sec. 2.3; ``shared/notes/toolsandbox.md``):

* a **constraint** compares the world after message ``m`` with a target:
  ``snapshot`` (some row of the table after ``m`` matches), ``added`` / ``removed`` /
  ``updated`` (some row added / removed / changed by message ``m``, i.e. between the
  tables after ``m - 1`` and after ``m``), ``tool_trace`` (message ``m`` is a call of the
  tool with matching arguments) and ``guardrail`` (the table after ``m`` equals the
  starting table). A row's similarity is the geometric mean of its column similarities
  (:data:`SIMILARITIES`: ``exact``, ``rouge_l`` (ROUGE-L F1 of the ``rouge-score``
  package), ``close:<tol>`` = max(0, 1 - |a - b| / tol), ``contains`` (target text
  contained, case-insensitive));
* a **milestone**'s similarity at ``m`` is the geometric mean of its constraints';
* milestones form a DAG; a mapping sends every milestone to a message index (or leaves it
  unmatched, similarity 0) so that ``m_u < m_v`` for each edge ``u -> v`` with both
  matched; the score is the **maximum arithmetic mean** over mappings
  (:func:`best_mapping`, an exact dominance-pruned branch-and-bound search);
* a **minefield** is a milestone that must never be reached: if any minefield reaches
  similarity 1 at some message, the final similarity is 0;
* **turn count**: messages other than system messages and user <-> execution-environment
  messages (the user's ``end_conversation`` call and its reply).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from agentstudies._tolerances import EXACT_TOL
from agentstudies.envs.toolsandbox._context import ID_COLUMNS, ExecutionContext, Role

__all__ = [
    "CONSTRAINT_KINDS",
    "SIMILARITIES",
    "Constraint",
    "Milestone",
    "column_similarity",
    "rouge_l",
    "similarity_matrix",
    "best_mapping",
    "Evaluation",
    "evaluate",
    "turn_count",
    "topological_order",
]

CONSTRAINT_KINDS: tuple[str, ...] = ("snapshot", "added", "removed", "updated", "tool_trace", "guardrail")
SIMILARITIES: tuple[str, ...] = ("exact", "rouge_l", "close", "contains")


@lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


@lru_cache(maxsize=20000)
def rouge_l(target: str, prediction: str) -> float:
    """ROUGE-L F1 of ``prediction`` against ``target`` (``rouge-score``, Porter stemmer)."""
    if not str(target).strip() and not str(prediction).strip():
        return 1.0
    return float(_scorer().score(str(target), str(prediction))["rougeL"].fmeasure)


def column_similarity(kind: str, target: Any, value: Any) -> float:
    """Similarity in [0, 1] of ``value`` to ``target`` under measure ``kind``.

    ``kind`` is ``"exact"``, ``"rouge_l"``, ``"contains"`` or ``"close:<tol>"``.

    Raises
    ------
    ValueError
        Unknown measure.
    """
    if kind == "exact":
        if isinstance(target, float) or isinstance(value, float):
            try:
                return float(float(target) == float(value))
            except (TypeError, ValueError):
                return 0.0
        return float(target == value)
    if kind == "rouge_l":
        return rouge_l(str(target), str(value)) if isinstance(value, str) else 0.0
    if kind == "contains":
        return float(isinstance(value, str) and str(target).lower() in value.lower())
    if kind.startswith("close:"):
        tol = float(kind.split(":", 1)[1])
        try:
            d = abs(float(target) - float(value))
        except (TypeError, ValueError):
            return 0.0
        return max(0.0, 1.0 - d / tol)
    raise ValueError(f"unknown similarity {kind!r}; expected one of {SIMILARITIES} (close as 'close:<tol>')")


def _geo(values: Sequence[float]) -> float:
    if not values:
        return 1.0
    if min(values) <= 0.0:
        return 0.0
    return float(math.exp(sum(math.log(v) for v in values) / len(values)))


@dataclass(frozen=True)
class Constraint:
    """One condition on the world after a message.

    Parameters
    ----------
    kind : one of :data:`CONSTRAINT_KINDS`
    namespace : table (``SETTING``, ``CONTACT``, ``MESSAGING``, ``REMINDER``, ``SANDBOX``)
        ignored by ``tool_trace``
    target : column -> target value (for ``tool_trace``: argument -> value)
    measures : column -> similarity measure (default ``exact``)
    tool : canonical tool name (``tool_trace`` only)
    """

    kind: str
    namespace: str = ""
    target: Mapping[str, Any] = field(default_factory=dict)
    measures: Mapping[str, str] = field(default_factory=dict)
    tool: str = ""

    def __post_init__(self) -> None:
        if self.kind not in CONSTRAINT_KINDS:
            raise ValueError(f"unknown constraint kind {self.kind!r}; expected one of {CONSTRAINT_KINDS}")
        if self.kind == "tool_trace" and not self.tool:
            raise ValueError("a tool_trace constraint needs a tool name")
        if self.kind != "tool_trace" and self.namespace not in ID_COLUMNS:
            raise ValueError(f"constraint {self.kind!r} needs a namespace in {sorted(ID_COLUMNS)}; got {self.namespace!r}")

    def row_similarity(self, row: Mapping[str, Any]) -> float:
        return _geo([column_similarity(self.measures.get(c, "exact"), t, row.get(c)) for c, t in self.target.items()])


@dataclass(frozen=True)
class Milestone:
    """A named list of constraints (geometric mean)."""

    name: str
    constraints: tuple[Constraint, ...]


def _tables(ctx: ExecutionContext, ns: str, m: int, cache: dict) -> list[dict[str, Any]]:
    key = (ns, m)
    if key not in cache:
        cache[key] = ctx.table(ns, m) if m >= 0 else ([] if ns == "SANDBOX" else ctx.table(ns, 0))
    return cache[key]


def _constraint_at(c: Constraint, ctx: ExecutionContext, m: int, cache: dict) -> float:
    if c.kind == "tool_trace":
        msg = ctx.messages[m]
        if msg.sender != Role.AGENT or msg.recipient != Role.EXECUTION_ENVIRONMENT or msg.tool_call is None:
            return 0.0
        if msg.tool_call["name"] != c.tool:
            return 0.0
        return c.row_similarity(msg.tool_call["arguments"])
    if c.kind == "guardrail":
        return float(_strip(_tables(ctx, c.namespace, m, cache)) == _strip(_tables(ctx, c.namespace, 0, cache)))
    now = _tables(ctx, c.namespace, m, cache)
    if c.kind == "snapshot":
        return max((c.row_similarity(r) for r in now), default=0.0)
    before = _tables(ctx, c.namespace, m - 1, cache)
    idc = ID_COLUMNS[c.namespace]
    ids_before = {r.get(idc): r for r in before}
    ids_now = {r.get(idc): r for r in now}
    if c.kind == "added":
        rows = [r for k, r in ids_now.items() if k not in ids_before]
    elif c.kind == "removed":
        rows = [r for k, r in ids_before.items() if k not in ids_now]
    else:  # updated
        rows = [r for k, r in ids_now.items() if k in ids_before and r != ids_before[k]]
    return max((c.row_similarity(r) for r in rows), default=0.0)


def _strip(rows):
    return sorted((tuple(sorted((k, str(v)) for k, v in r.items())) for r in rows))


def similarity_matrix(milestones: Sequence[Milestone], ctx: ExecutionContext) -> np.ndarray:
    """``S[i, m]``: similarity of milestone ``i`` at message ``m`` (shape K x n_messages)."""
    n = len(ctx.messages)
    cache: dict = {}
    S = np.zeros((len(milestones), n))
    for i, ms in enumerate(milestones):
        for m in range(1, n):
            vals = []
            for c in ms.constraints:
                v = _constraint_at(c, ctx, m, cache)
                vals.append(v)
                if v <= 0.0:
                    break
            S[i, m] = _geo(vals) if all(v > 0 for v in vals) else 0.0
    return S


def topological_order(k: int, edges: Sequence[tuple[int, int]]) -> list[int]:
    """A topological order of nodes ``0..k-1`` (ValueError on a cycle or a bad node)."""
    parents: dict[int, set[int]] = {i: set() for i in range(k)}
    for u, v in edges:
        if not (0 <= u < k and 0 <= v < k) or u == v:
            raise ValueError(f"bad DAG edge {(u, v)} for {k} milestones")
        parents[v].add(u)
    order, done = [], set()
    while len(order) < k:
        ready = [i for i in range(k) if i not in done and parents[i] <= done]
        if not ready:
            raise ValueError(f"milestone edges {list(edges)} contain a cycle")
        order.append(ready[0])
        done.add(ready[0])
    return order


def best_mapping(S: np.ndarray, edges: Sequence[tuple[int, int]]) -> tuple[float, list[int | None]]:
    """Exact maximum of the mean milestone similarity over DAG-respecting mappings.

    ``S`` is K x T; a mapping gives milestone ``i`` an index ``m_i`` in ``0..T-1`` or
    ``None`` (unmatched, similarity 0), with ``m_u < m_v`` for every edge ``u -> v`` whose
    ends are both matched. Branch and bound over a topological order; at each milestone
    only *record* indices are tried (an index whose similarity exceeds every earlier
    admissible one), since a later index of no larger similarity only tightens the
    children's constraints (dominance), plus ``None``.

    Returns ``(mean similarity, mapping)``; ``(1.0, [])`` when K = 0.
    """
    S = np.asarray(S, dtype=float)
    K = S.shape[0]
    if K == 0:
        return 1.0, []
    T = S.shape[1]
    order = topological_order(K, edges)
    parents = {i: [u for u, v in edges if v == i] for i in range(K)}
    row_max = S.max(axis=1) if T else np.zeros(K)
    suffix = np.zeros(K + 1)
    for j in range(K - 1, -1, -1):
        suffix[j] = suffix[j + 1] + row_max[order[j]]
    best_val, best_map = -1.0, [None] * K
    assign: list[int | None] = [None] * K

    def rec(j: int, acc: float) -> None:
        nonlocal best_val, best_map
        if acc + suffix[j] <= best_val + EXACT_TOL:
            return
        if j == K:
            best_val, best_map = acc, list(assign)
            return
        i = order[j]
        lo = max((assign[p] for p in parents[i] if assign[p] is not None), default=-1) + 1
        record = 0.0
        for m in range(lo, T):
            s = S[i, m]
            if s > record:
                record = s
                assign[i] = m
                rec(j + 1, acc + s)
                assign[i] = None
                if s >= row_max[i]:
                    break
        rec(j + 1, acc)

    rec(0, 0.0)
    return best_val / K, best_map


def turn_count(ctx: ExecutionContext) -> int:
    """Messages other than system messages and user <-> execution-environment messages."""
    n = 0
    for msg in ctx.messages:
        if Role.SYSTEM in (msg.sender, msg.recipient):
            continue
        if {msg.sender, msg.recipient} == {Role.USER, Role.EXECUTION_ENVIRONMENT}:
            continue
        n += 1
    return n


@dataclass(frozen=True)
class Evaluation:
    """Score of one trajectory: ``similarity`` (minefield-zeroed mean), the milestone part,
    ``mapping`` (message index per milestone), per-milestone similarities, whether a
    minefield was hit, ``matched`` (milestones at similarity 1) and ``turn_count``."""

    similarity: float
    milestone_similarity: float
    mapping: tuple[int | None, ...]
    milestone_scores: tuple[float, ...]
    minefield_hit: bool
    matched: int
    turn_count: int


def evaluate(
    ctx: ExecutionContext,
    milestones: Sequence[Milestone],
    edges: Sequence[tuple[int, int]],
    minefields: Sequence[Milestone] = (),
) -> Evaluation:
    """Score the trajectory held in ``ctx`` (ToolSandbox Sec. 2.3)."""
    S = similarity_matrix(milestones, ctx)
    value, mapping = best_mapping(S, edges)
    scores = tuple(float(S[i, m]) if m is not None else 0.0 for i, m in enumerate(mapping))
    hit = False
    if minefields:
        F = similarity_matrix(minefields, ctx)
        hit = bool((F >= 1.0 - EXACT_TOL).any())
    return Evaluation(
        similarity=0.0 if hit else float(value),
        milestone_similarity=float(value),
        mapping=tuple(mapping),
        milestone_scores=scores,
        minefield_hit=hit,
        matched=sum(1 for s in scores if s >= 1.0 - EXACT_TOL),
        turn_count=turn_count(ctx),
    )


def brute_force_mapping(S: np.ndarray, edges: Sequence[tuple[int, int]]) -> float:
    """Maximum mean over *all* mappings (exponential; for tests)."""
    S = np.asarray(S, dtype=float)
    K, T = S.shape
    if K == 0:
        return 1.0
    best = 0.0
    for combo in itertools.product([None, *range(T)], repeat=K):
        if any(combo[u] is not None and combo[v] is not None and not combo[u] < combo[v] for u, v in edges):
            continue
        best = max(best, sum(S[i, m] for i, m in enumerate(combo) if m is not None) / K)
    return best


_NUM = re.compile(r"-?\d+(?:\.\d+)?")
