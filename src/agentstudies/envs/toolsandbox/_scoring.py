"""Milestones, minefields and the ToolSandbox similarity score.

Following ToolSandbox (Lu et al., 2024, Sec. 2.3; ``shared/notes/toolsandbox.md``):

* a **constraint** compares the world after message ``m`` with a target, relative to a
  *reference* snapshot ``r`` (the message index at which the milestone's reference
  milestone -- its latest-matched DAG parent -- was matched; the initial world, ``r = 0``,
  for a root or when no parent is matched):
  ``snapshot`` (the table after ``m`` against a target table: **equal row counts** and an
  optimal one-to-one row matching, :func:`table_similarity`; the message log ``SANDBOX``
  at ``m`` is the single message ``m``; ``SETTING`` is read as one row ``{setting: value}``),
  ``added`` / ``removed`` / ``updated`` (some row added / removed / changed between the
  reference snapshot ``r`` and ``m``), ``tool_trace`` (message ``m`` is a call of the tool
  with matching arguments) and ``guardrail`` (the table after ``m`` equals the table at
  ``r``). A row's similarity is the geometric mean of its column similarities
  (:data:`SIMILARITIES`: ``exact``, ``rouge_l`` (ROUGE-L F1 of the ``rouge-score``
  package; a tuple target is a set of reference sentences and the best one counts),
  ``close:<tol>`` = max(0, 1 - |a - b| / tol), ``contains`` (target text contained,
  case-insensitive; kept for minefields only));
* **automatic guardrails**: every milestone also carries a ``guardrail`` on each database
  table that no milestone of the scenario constrains (:func:`with_guardrails`), so an
  unrelated write before a milestone is matched zeroes that milestone;
* a **milestone**'s similarity at ``m`` is the geometric mean of its constraints';
* milestones form a DAG; a mapping sends every milestone to a message index (or leaves it
  unmatched, similarity 0) so that ``m_u < m_v`` for each edge ``u -> v`` with both
  matched; the score is the **maximum arithmetic mean** over mappings
  (:func:`best_mapping`, an exact branch-and-bound search over ``S[i, r, m]``);
* a **minefield** is a milestone that must never be reached (reference: the initial world):
  if any minefield reaches similarity 1 at some message, the final similarity is 0;
* **turn count**: messages other than system messages and user <-> execution-environment
  messages (the user's ``end_conversation`` call and its reply).

Departures that remain are named in :data:`DEPARTURES`.
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
from agentstudies.envs.toolsandbox._context import ID_COLUMNS, NAMESPACES, ExecutionContext, Role

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
    "similarity_tensor",
    "table_similarity",
    "with_guardrails",
    "constrained_namespaces",
    "DEPARTURES",
]

CONSTRAINT_KINDS: tuple[str, ...] = ("snapshot", "added", "removed", "updated", "tool_trace", "guardrail")
SIMILARITIES: tuple[str, ...] = ("exact", "rouge_l", "close", "contains")

#: Departures from ToolSandbox's scoring that remain, by name (the chapter lists them).
DEPARTURES: Mapping[str, str] = {
    "reference_milestone": "the reference snapshot of a milestone is its latest-matched DAG parent (the initial "
                           "world for a root); ToolSandbox lets a scenario name the reference milestone explicitly",
    "snapshot_row_combination": "a snapshot's matched rows combine by their geometric mean (rows matched one-to-one "
                                "by scipy's linear_sum_assignment after requiring equal row counts)",
    "setting_table": "device settings are stored as key/value rows and read as one row {setting: value} for snapshots",
    "guardrails": "automatic guardrails can be switched off (evaluate(..., guardrails=False)) for comparison; "
                  "on by default as in ToolSandbox",
    "contains_in_minefields": "containment ('contains') is used only by minefields (e.g. a made-up price in USD); "
                              "replies and declines are graded by ROUGE-L against reference sentences",
    "web_fixtures": "web look-ups (places, weather, stocks, currencies) answer from local fixtures, not a paid API",
    "scripted_user": "the user is a seeded scripted simulator answering from hidden facts (ToolSandbox: GPT-4o role-play)",
}


class _MemoTokenizer:
    """rouge-score's default tokenizer (Porter stemmer) memoised by text: the reference
    sentences of a grid are scored against thousands of replies, and stemming is most of
    ROUGE-L's cost. Same tokens as ``DefaultTokenizer(use_stemmer=True)``."""

    def __init__(self):
        from rouge_score import tokenizers

        self._tokenize = lru_cache(maxsize=20000)(lambda text: tuple(tokenizers.DefaultTokenizer(True).tokenize(text)))

    def tokenize(self, text: str) -> list[str]:
        return list(self._tokenize(text))


@lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], tokenizer=_MemoTokenizer())


@lru_cache(maxsize=20000)
def rouge_l(target: str, prediction: str) -> float:
    """ROUGE-L F1 of ``prediction`` against ``target`` (``rouge-score``, Porter stemmer)."""
    if not str(target).strip() and not str(prediction).strip():
        return 1.0
    return float(_scorer().score(str(target), str(prediction))["rougeL"].fmeasure)


def column_similarity(kind: str, target: Any, value: Any) -> float:
    """Similarity in [0, 1] of ``value`` to ``target`` under measure ``kind``.

    ``kind`` is ``"exact"``, ``"rouge_l"``, ``"contains"`` or ``"close:<tol>"``. A tuple
    ``target`` is a set of references (several phrasings of one reply): the best counts.

    Raises
    ------
    ValueError
        Unknown measure.
    """
    if isinstance(target, tuple):
        return max((column_similarity(kind, t, value) for t in target), default=0.0)
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
    target : column -> target value (for ``tool_trace``: argument -> value); for
        ``snapshot`` a mapping is a one-row target table, a tuple of mappings a target
        table of that many rows
    measures : column -> similarity measure (default ``exact``)
    tool : canonical tool name (``tool_trace`` only)
    """

    kind: str
    namespace: str = ""
    target: Any = field(default_factory=dict)
    measures: Mapping[str, str] = field(default_factory=dict)
    tool: str = ""

    def __post_init__(self) -> None:
        if self.kind not in CONSTRAINT_KINDS:
            raise ValueError(f"unknown constraint kind {self.kind!r}; expected one of {CONSTRAINT_KINDS}")
        if self.kind == "tool_trace" and not self.tool:
            raise ValueError("a tool_trace constraint needs a tool name")
        if self.kind != "tool_trace" and self.namespace not in ID_COLUMNS:
            raise ValueError(f"constraint {self.kind!r} needs a namespace in {sorted(ID_COLUMNS)}; got {self.namespace!r}")
        if isinstance(self.target, tuple) and self.kind != "snapshot":
            raise ValueError(f"a tuple of target rows is a snapshot target; got kind {self.kind!r}")

    @property
    def uses_reference(self) -> bool:
        """Whether the similarity depends on the reference snapshot."""
        return self.kind in ("added", "removed", "updated", "guardrail")

    def row_similarity(self, row: Mapping[str, Any], target: Mapping[str, Any] | None = None) -> float:
        t = self.target if target is None else target
        return _geo([column_similarity(self.measures.get(c, "exact"), v, row.get(c)) for c, v in t.items()])


@dataclass(frozen=True)
class Milestone:
    """A named list of constraints (geometric mean)."""

    name: str
    constraints: tuple[Constraint, ...]


def table_similarity(c: Constraint, rows: Sequence[Mapping[str, Any]]) -> float:
    """Snapshot similarity of ``rows`` to ``c.target``: 0 unless the row counts are equal,
    else the geometric mean of row similarities under the one-to-one matching that
    maximises their sum (``scipy.optimize.linear_sum_assignment``)."""
    from scipy.optimize import linear_sum_assignment

    targets = list(c.target) if isinstance(c.target, tuple) else [c.target]
    if len(rows) != len(targets):
        return 0.0
    if not targets:
        return 1.0
    if len(targets) == 1:  # one row, one target: the matching is that pair
        return _geo([float(c.row_similarity(rows[0], targets[0]))])
    M = np.array([[c.row_similarity(r, t) for r in rows] for t in targets])
    ti, ri = linear_sum_assignment(M, maximize=True)
    return _geo([float(M[i, j]) for i, j in zip(ti, ri)])


class _Reader:
    """Cached table reads of one context: versions, wide SETTING rows, single messages."""

    def __init__(self, ctx: ExecutionContext):
        self.ctx = ctx
        self.cache: dict = {}

    def version(self, ns: str, m: int) -> int:
        """Version (last stamp) of table ``ns`` after message ``m``; -1 before any row."""
        if 0 <= m < len(self.ctx.messages):
            return self.versions(ns)[m]
        key = ("v", ns, m)
        if key not in self.cache:
            v = self.ctx._version_index(ns, max(m, 0))
            self.cache[key] = -1 if v is None else v
        return self.cache[key]

    def versions(self, ns: str) -> list[int]:
        """:meth:`version` of ``ns`` after every message ``0..n-1`` of the log (one pass)."""
        key = ("vs", ns)
        if key not in self.cache:
            self.cache[key] = [-1 if v is None else v for v in self.ctx._version_indices(ns, len(self.ctx.messages))]
        return self.cache[key]

    def rows(self, ns: str, m: int) -> list[dict[str, Any]]:
        v = self.version(ns, m)
        key = ("t", ns, v)
        if key not in self.cache:
            self.cache[key] = self.ctx.table(ns, max(m, 0))
        return self.cache[key]

    def snapshot_rows(self, ns: str, m: int) -> list[dict[str, Any]]:
        if ns == "SANDBOX":
            key = ("s", m)
            if key not in self.cache:  # read-only rows, shared by the constraints on message m
                self.cache[key] = [dict(self.ctx.messages[m].to_dict(), index=m)] if 0 <= m < len(self.ctx.messages) else []
            return self.cache[key]
        rows = self.rows(ns, m)
        if ns == "SETTING":
            return [{r["name"]: r["value"] for r in rows}]
        return rows


def _diff_rows(c: Constraint, before: list, now: list) -> list:
    idc = ID_COLUMNS[c.namespace]
    ids_before = {r.get(idc): r for r in before}
    ids_now = {r.get(idc): r for r in now}
    if c.kind == "added":
        return [r for k, r in ids_now.items() if k not in ids_before]
    if c.kind == "removed":
        return [r for k, r in ids_before.items() if k not in ids_now]
    return [r for k, r in ids_now.items() if k in ids_before and r != ids_before[k]]


def _constraint_at(c: Constraint, rd: _Reader, m: int, r: int = 0) -> float:
    """Similarity of ``c`` after message ``m`` with reference snapshot ``r``."""
    if c.kind == "tool_trace":
        msg = rd.ctx.messages[m]
        if msg.sender != Role.AGENT or msg.recipient != Role.EXECUTION_ENVIRONMENT or msg.tool_call is None:
            return 0.0
        if msg.tool_call["name"] != c.tool:
            return 0.0
        return c.row_similarity(msg.tool_call["arguments"])
    if c.kind == "snapshot":
        return table_similarity(c, rd.snapshot_rows(c.namespace, m))
    vm, vr = rd.version(c.namespace, m), rd.version(c.namespace, r)
    key = ("c", id(c), vr, vm)
    if key not in rd.cache:
        now, before = rd.rows(c.namespace, m), rd.rows(c.namespace, r)
        if c.kind == "guardrail":
            rd.cache[key] = float(vm == vr or _strip(now) == _strip(before))
        else:
            rd.cache[key] = max((c.row_similarity(x) for x in _diff_rows(c, before, now)), default=0.0)
    return rd.cache[key]


def _strip(rows):
    return sorted((tuple(sorted((k, str(v)) for k, v in r.items())) for r in rows))


def constrained_namespaces(milestones: Sequence[Milestone]) -> set[str]:
    """Database tables that some milestone constrains (the message log excluded)."""
    return {c.namespace for ms in milestones for c in ms.constraints
            if c.kind != "tool_trace" and c.namespace in NAMESPACES}


def with_guardrails(milestones: Sequence[Milestone]) -> tuple[Milestone, ...]:
    """``milestones`` with ToolSandbox's automatic guardrails: a ``guardrail`` constraint on
    every database table that no milestone constrains, added to every milestone."""
    free = [ns for ns in NAMESPACES if ns not in constrained_namespaces(milestones)]
    extra = tuple(Constraint("guardrail", ns) for ns in free)
    return tuple(Milestone(ms.name, ms.constraints + extra) for ms in milestones)


def similarity_tensor(milestones: Sequence[Milestone], ctx: ExecutionContext) -> np.ndarray:
    """``S[i, r, m]``: similarity of milestone ``i`` at message ``m`` against the reference
    snapshot after message ``r`` (shape K x T x T; ``m = 0``, the system message, and
    ``r >= m`` are 0, since a reference precedes the message it is compared with, except
    ``r = 0`` which is the initial world)."""
    n = len(ctx.messages)
    rd = _Reader(ctx)
    S = np.zeros((len(milestones), n, n))
    for i, ms in enumerate(milestones):
        fixed = [c for c in ms.constraints if not c.uses_reference]
        refd = [c for c in ms.constraints if c.uses_reference]
        spaces = sorted({c.namespace for c in refd})
        # references r < m grouped by the versions of the tables the reference constraints
        # read (equal versions, equal similarity), grown by one reference per message
        keys = list(zip(*(rd.versions(ns) for ns in spaces))) if refd else []
        groups: dict[tuple, list[int]] = {}
        for m in range(1, n):
            if refd:
                groups.setdefault(keys[m - 1], []).append(m - 1)
            vals = []
            for c in fixed:
                v = _constraint_at(c, rd, m)
                vals.append(v)
                if v <= 0.0:
                    break
            if vals and vals[-1] <= 0.0:
                continue
            if not refd:
                S[i, :, m] = _geo(vals)
                continue
            for rs in groups.values():
                more = []
                for c in refd:
                    v = _constraint_at(c, rd, m, rs[0])
                    more.append(v)
                    if v <= 0.0:
                        break
                S[i, rs, m] = _geo(vals + more)
    return S


def similarity_matrix(milestones: Sequence[Milestone], ctx: ExecutionContext) -> np.ndarray:
    """``S[i, m]``: similarity of milestone ``i`` at message ``m`` against the initial world
    (reference ``r = 0``; what minefields use). Shape K x n_messages."""
    S = similarity_tensor(milestones, ctx)
    return S[:, 0, :] if S.size else np.zeros((len(milestones), len(ctx.messages)))


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


def _as_tensor(S: np.ndarray) -> np.ndarray:
    S = np.asarray(S, dtype=float)
    if S.ndim == 2:  # no reference dependence: S[i, r, m] = S[i, m] for every r
        return np.repeat(S[:, None, :], max(S.shape[1], 1), axis=1)
    if S.ndim != 3 or S.shape[1] != S.shape[2]:
        raise ValueError(f"S must be K x T or K x T x T; got shape {S.shape}")
    return S


def _reference(i: int, assign: Sequence[int | None], parents: Mapping[int, list[int]]) -> int:
    """Reference snapshot of milestone ``i``: its latest-matched parent's index, else 0."""
    return max((assign[p] for p in parents[i] if assign[p] is not None), default=0)


def best_mapping(S: np.ndarray, edges: Sequence[tuple[int, int]]) -> tuple[float, list[int | None]]:
    """Exact maximum of the mean milestone similarity over DAG-respecting mappings.

    ``S`` is K x T (no reference dependence) or K x T x T with ``S[i, r, m]`` the
    similarity of milestone ``i`` at message ``m`` against the reference snapshot ``r``
    (:func:`similarity_tensor`). A mapping gives milestone ``i`` an index ``m_i`` in
    ``0..T-1`` or ``None`` (unmatched, similarity 0), with ``m_u < m_v`` for every edge
    ``u -> v`` whose ends are both matched; milestone ``i`` is scored against
    ``r_i`` = the largest index of its matched parents (0 if none); a milestone is matched
    only at an index where its similarity is positive (a zero-similarity index would only
    move its children's reference). Branch and bound over a
    topological order with an upper bound ``max_{r,m} S`` per milestone. For a milestone
    none of whose children depend on the reference, only *record* indices are tried (an
    index whose similarity exceeds every earlier admissible one): a later index of no
    larger similarity only tightens the children's constraints (dominance).

    Returns ``(mean similarity, mapping)``; ``(1.0, [])`` when K = 0.

    Raises
    ------
    ValueError
        A cycle or bad edge, or a malformed ``S``.
    """
    S = _as_tensor(S)
    K = S.shape[0]
    if K == 0:
        return 1.0, []
    T = S.shape[2]
    order = topological_order(K, edges)
    parents = {i: [u for u, v in edges if v == i] for i in range(K)}
    children = {i: [v for u, v in edges if u == i] for i in range(K)}
    rdep = [bool(T) and bool(np.ptp(S[i], axis=0).max() > 0) for i in range(K)]
    dominance = [not any(rdep[c] for c in children[i]) for i in range(K)]
    row_max = S.reshape(K, -1).max(axis=1) if T else np.zeros(K)
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
        ref = _reference(i, assign, parents)
        lo = max((assign[p] for p in parents[i] if assign[p] is not None), default=-1) + 1
        record = 0.0
        for m in range(lo, T):
            s = S[i, ref, m]
            if s > record or (not dominance[i] and s > 0.0):
                record = max(record, s)
                assign[i] = m
                rec(j + 1, acc + s)
                assign[i] = None
                if dominance[i] and s >= row_max[i]:
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
    *,
    guardrails: bool = True,
) -> Evaluation:
    """Score the trajectory held in ``ctx`` (ToolSandbox Sec. 2.3).

    ``guardrails=False`` drops the automatic guardrails (a named departure, for comparison).
    """
    ms = with_guardrails(milestones) if guardrails else tuple(milestones)
    S = similarity_tensor(ms, ctx)
    value, mapping = best_mapping(S, edges)
    parents = {i: [u for u, v in edges if v == i] for i in range(len(ms))}
    scores = tuple(float(S[i, _reference(i, mapping, parents), m]) if m is not None else 0.0 for i, m in enumerate(mapping))
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
    """Maximum mean over *all* mappings (exponential; for tests). ``S``: K x T or K x T x T."""
    S = _as_tensor(S)
    K, T = S.shape[0], S.shape[2]
    if K == 0:
        return 1.0
    parents = {i: [u for u, v in edges if v == i] for i in range(K)}
    best = 0.0
    for combo in itertools.product([None, *range(T)], repeat=K):
        if any(combo[u] is not None and combo[v] is not None and not combo[u] < combo[v] for u, v in edges):
            continue
        vals = [S[i, _reference(i, combo, parents), m] for i, m in enumerate(combo) if m is not None]
        if any(v <= 0.0 for v in vals):
            continue  # matched only where the similarity is positive (else: unmatched, another combo)
        best = max(best, sum(vals) / K)
    return best



_NUM = re.compile(r"-?\d+(?:\.\d+)?")
