"""Milestones, minefields and the ToolSandbox similarity score.

Following ToolSandbox (Lu et al., 2024, Sec. 2.3; ``tool_sandbox/common/evaluation.py`` of
apple/ToolSandbox; ``shared/notes/toolsandbox.md``):

* a **constraint** compares the world after message ``m`` with a target, relative to a
  *reference* snapshot ``r`` (the message index of the milestone's latest-matched DAG
  parent; the first user message, ToolSandbox's reference ``-1``, for a root):
  ``snapshot`` (the table after ``m`` against a target table: 0 unless the row counts are
  equal and the target's columns exist, else the one-to-one row assignment that minimises
  the summed ``-log`` row similarity, i.e. maximises their geometric mean,
  :func:`table_similarity`; the message log ``SANDBOX`` at ``m`` is the single message
  ``m``; ``SETTING`` is read as one row ``{setting: value}``), ``added`` (0 unless the table
  after ``m`` still holds every row of the reference; the rows not in the reference are
  then a ``snapshot`` against the target, so their count must equal the target's),
  ``removed`` (the same with the two snapshots swapped), ``updated`` (0 unless the row counts
  are equal; the changed rows are a ``snapshot`` against the target), ``tool_trace`` (message
  ``m`` is a call of the tool with matching arguments) and ``guardrail`` (the table after
  ``m`` equals the table at ``r``, 0/1). A row's similarity is the geometric mean of its
  column similarities (:data:`SIMILARITIES`: ``exact``, ``rouge_l`` (ROUGE-L F1 of the
  ``rouge-score`` package, Porter stemmer), ``close:<tol>`` = 1 if ``|a - b| <= tol`` else 0,
  ``contains`` (the target text occurs in the value, case-sensitive));
* **guardrails** (:func:`with_guardrails`): a milestone gets a ``guardrail`` against its
  reference on every database table that neither it nor its DAG parents constrain, when it
  has a parent or a reference-dependent constraint (a root made only of replies and tool
  calls has none);
* a **milestone**'s similarity at ``m`` is the product of its constraints' similarities to
  the power ``1 / k``, ``k`` = the number of its constraints that are not guardrails
  (guardrails are 0/1: they multiply in but are not counted);
* milestones form a DAG; a mapping sends **every** milestone to a message index ``m_i`` at
  or after the first user message with ``m_u <= m_v`` for each edge ``u -> v`` (indices
  non-decreasing along a topological order); the score is the **maximum arithmetic mean**
  over mappings (:func:`best_mapping`, an exact branch-and-bound search over ``S[i, r, m]``);
* **minefields** (insufficient-information scenarios only) are matched the same way, chained
  in their listed order; if their best mean is non-zero the final similarity is 0;
* **turn count**: messages other than system messages and user <-> execution-environment
  messages (the user's ``end_conversation`` call and its reply).

A target value may be a :class:`WorldRef` (a cell of the starting world, e.g. a contact's
phone number): it is read from the world the trajectory ran in, so a perturbed world moves
the target with it.

Departures that remain are named in :data:`DEPARTURES`; those that :func:`evaluate` can
switch off are :data:`SCORING_OPTIONS` (``evaluate(..., departures=())`` scores exactly by
ToolSandbox's formulas).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Collection, Mapping, Sequence

import numpy as np

from agentstudies._tolerances import EXACT_TOL
from agentstudies.envs.toolsandbox._context import ID_COLUMNS, NAMESPACES, ExecutionContext, Role
from agentstudies.envs.toolsandbox._matching import _parents, _reference, best_mapping, topological_order
from agentstudies.envs.toolsandbox._targets import WorldRef, _has_ref, resolve_targets, resolve_value

__all__ = [
    "CONSTRAINT_KINDS",
    "SIMILARITIES",
    "Constraint",
    "Milestone",
    "WorldRef",
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
    "resolve_targets",
    "resolve_value",
    "DEPARTURES",
    "SCORING_OPTIONS",
]

CONSTRAINT_KINDS: tuple[str, ...] = ("snapshot", "added", "removed", "updated", "tool_trace", "guardrail")
SIMILARITIES: tuple[str, ...] = ("exact", "rouge_l", "close", "contains")

#: Departures from ToolSandbox's scoring that remain, by name (the chapter lists them).
DEPARTURES: Mapping[str, str] = {
    "final_state": "a trajectory scores 0 when a world write that a milestone matched is no longer in the final "
                   "world (added / updated row gone, removed row back, setting changed again) and no later "
                   "milestone constrains that table; ToolSandbox scores each milestone at the message it is "
                   "matched at, so writing the target and then undoing it scores as if it stayed",
    "reference_sentences": "a reply is graded against several reference phrasings and the best ROUGE-L counts "
                           "(ToolSandbox writes one sentence per constraint); the key value is checked as in "
                           "ToolSandbox, by a separate 'contains' constraint",
    "reference_milestone": "the reference snapshot of a milestone (for added / removed / updated rows and for "
                           "guardrails) is its latest-matched DAG parent, the first user message for a root; "
                           "ToolSandbox names a reference milestone per constraint and puts one guardrail "
                           "against each predecessor, which differs only where a milestone has several parents",
    "initial_world_exempts_nothing": "a root's guardrails against the first user message exempt only the "
                                     "tables the root itself constrains; ToolSandbox's guardrail loop looks the "
                                     "reference -1 up as milestones[-1], which also exempts the last milestone's "
                                     "tables",
    "tool_trace_message": "a tool-call milestone is matched at the agent's call message; ToolSandbox matches the "
                          "execution environment's reply that carries the trace, one message later (the tools "
                          "traced here only read, so the world snapshots compared are the same)",
    "guardrail_row_order": "a guardrail compares a table's rows as a set; ToolSandbox's DataFrame.equals also "
                           "compares their order (no tool here reorders rows, so the two agree)",
    "world_targets": "a target that names a contact's phone number is read from the world the episode ran in "
                     "(a WorldRef); ToolSandbox writes its targets as constants, which is the same unless the "
                     "world is perturbed",
    "setting_table": "device settings are stored as key/value rows and read as one row {setting: value} "
                     "for snapshots (the values compared are the same)",
    "web_fixtures": "web look-ups (places, weather, stocks, currencies) answer from local fixtures, not a paid API",
    "scripted_user": "the user is a seeded scripted simulator answering from hidden facts (ToolSandbox: GPT-4o role-play)",
}
#: The departures :func:`evaluate` can switch off (``departures=...``): the rest are
#: structural (how the world is stored or simulated) and change no formula.
SCORING_OPTIONS: tuple[str, ...] = ("final_state", "reference_sentences")


def _initial_world(ctx: ExecutionContext) -> dict[str, list[dict[str, Any]]]:
    return {ns: ctx.table(ns, 0) for ns in NAMESPACES}


def _resolved(milestones: Sequence["Milestone"], ctx: ExecutionContext) -> tuple["Milestone", ...]:
    """``milestones`` with :class:`WorldRef` targets read from ``ctx``'s starting world."""
    if not any(c.has_world_ref for ms in milestones for c in ms.constraints):
        return tuple(milestones)
    return resolve_targets(milestones, _initial_world(ctx))


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

    ``kind`` is ``"exact"``, ``"rouge_l"``, ``"contains"`` or ``"close:<tol>"`` (ToolSandbox
    ``evaluation.py`` column measures: ``close`` is 0/1 within the absolute tolerance,
    ``contains`` a case-sensitive substring test). A tuple ``target`` is a set of references
    (several phrasings of one reply): the best counts (departure ``reference_sentences``).

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
        return float(isinstance(value, str) and str(target) in value)
    if kind.startswith("close:"):
        tol = float(kind.split(":", 1)[1])
        try:
            d = abs(float(target) - float(value))
        except (TypeError, ValueError):
            return 0.0
        return float(d <= tol)
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
        table of that many rows; a value may be a :class:`WorldRef`
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
        object.__setattr__(self, "has_world_ref", _has_ref(self.target))  # read once; targets are not changed

    @property
    def uses_reference(self) -> bool:
        """Whether the similarity depends on the reference snapshot."""
        return self.kind in ("added", "removed", "updated", "guardrail")

    def row_similarity(self, row: Mapping[str, Any], target: Mapping[str, Any] | None = None) -> float:
        """Geometric mean of the column similarities of ``row`` to the target row (0 as soon as
        one column is 0; ROUGE-L columns are scored last, after the cheap 0/1 ones)."""
        t = self.target if target is None else target
        vals = []
        for c in sorted(t, key=lambda c: self.measures.get(c, "exact") == "rouge_l"):
            v = column_similarity(self.measures.get(c, "exact"), t[c], row.get(c))
            if v <= 0.0:
                return 0.0
            vals.append(v)
        return _geo(vals)


@dataclass(frozen=True)
class Milestone:
    """A named list of constraints (product, then the power 1 / number of non-guardrails)."""

    name: str
    constraints: tuple[Constraint, ...]


def table_similarity(c: Constraint, rows: Sequence[Mapping[str, Any]]) -> float:
    """Snapshot similarity of ``rows`` to ``c.target`` (ToolSandbox ``snapshot_similarity``,
    ``evaluation.py`` lines 283-343): 0 unless the row counts are equal and every target
    column exists in the rows; else ``exp(-mean cost)`` of the one-to-one assignment
    minimising the summed cost ``-log(row similarity)`` (``scipy.optimize.linear_sum_assignment``),
    i.e. the largest geometric mean of row similarities; 0 when every assignment has a zero."""
    from scipy.optimize import linear_sum_assignment

    targets = list(c.target) if isinstance(c.target, tuple) else [c.target]
    if len(rows) != len(targets):
        return 0.0
    if not targets:
        return 1.0
    if len(targets) == 1:  # one row, one target: the assignment is that pair
        if any(k not in rows[0] for k in targets[0]):
            return 0.0
        return _geo([float(c.row_similarity(rows[0], targets[0]))])
    cols = set().union(*(r.keys() for r in rows))
    if any(k not in cols for t in targets for k in t):
        return 0.0
    M = np.array([[c.row_similarity(r, t) for r in rows] for t in targets])
    with np.errstate(divide="ignore"):
        cost = -np.log(M)
    try:
        ti, ri = linear_sum_assignment(cost)
    except ValueError:  # every assignment meets a zero similarity
        return 0.0
    return float(np.exp(-cost[ti, ri].mean()))


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


def _rowkey(r: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in r.items()))


def _change_similarity(c: Constraint, before: list, now: list) -> float:
    """``added`` / ``removed`` / ``updated`` similarity of ``now`` against reference ``before``
    (ToolSandbox ``addition_similarity`` / ``removal_similarity`` / ``update_similarity``,
    ``evaluation.py`` lines 346-478; rows compared on every column)."""
    if c.kind == "removed":  # removal = addition with the two snapshots swapped
        before, now = now, before
    kb = {_rowkey(r) for r in before}
    kn = {_rowkey(r) for r in now}
    if c.kind == "updated":
        if len(before) != len(now):
            return 0.0
    elif not kb <= kn:  # the snapshot must still contain the reference
        return 0.0
    return table_similarity(c, [r for r in now if _rowkey(r) not in kb])


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
            rd.cache[key] = _change_similarity(c, before, now)
    return rd.cache[key]


def _strip(rows):
    return sorted((tuple(sorted((k, str(v)) for k, v in r.items())) for r in rows))


def constrained_namespaces(milestones: Sequence[Milestone]) -> set[str]:
    """Database tables that some milestone constrains other than by a guardrail (the message
    log excluded)."""
    return {c.namespace for ms in milestones for c in ms.constraints
            if c.kind not in ("tool_trace", "guardrail") and c.namespace in NAMESPACES}


def with_guardrails(milestones: Sequence[Milestone], edges: Sequence[tuple[int, int]] = ()) -> tuple[Milestone, ...]:
    """``milestones`` with ToolSandbox's automatic guardrails (``MilestoneMatcher.
    _add_guardrail_constraints``, ``evaluation.py`` lines 996-1041): milestone ``i`` gets a
    ``guardrail`` (against its reference) on every database table that no non-guardrail
    constraint of ``i`` or of its DAG parents constrains, provided ``i`` has a parent or a
    reference-dependent constraint (ToolSandbox adds guardrails only against reference and
    predecessor milestones)."""
    parents = _parents(len(milestones), edges)
    out = []
    for i, ms in enumerate(milestones):
        if not parents[i] and not any(c.uses_reference for c in ms.constraints):
            out.append(ms)
            continue
        exempt = constrained_namespaces([ms] + [milestones[p] for p in parents[i]])
        extra = tuple(Constraint("guardrail", ns) for ns in NAMESPACES if ns not in exempt)
        out.append(Milestone(ms.name, ms.constraints + extra))
    return tuple(out)


def _milestone_value(vals: Sequence[float], counted: int) -> float:
    """Product of the constraint similarities to the power ``1 / counted`` (the number of
    non-guardrail constraints; ToolSandbox ``CachedSimilarityCalculator.calculate_similarity``,
    ``evaluation.py`` lines 906-914)."""
    if not vals:
        return 1.0
    if min(vals) <= 0.0:
        return 0.0
    total = sum(math.log(v) for v in vals)
    return float(math.exp(total / counted)) if counted else float(math.exp(total))


def similarity_tensor(milestones: Sequence[Milestone], ctx: ExecutionContext) -> np.ndarray:
    """``S[i, r, m]``: similarity of milestone ``i`` at message ``m`` against the reference
    snapshot after message ``r`` (shape K x T x T; ``r > m`` is 0, since a reference never
    follows the message it is compared with). :class:`WorldRef` targets are read from the
    context's starting world."""
    milestones = _resolved(milestones, ctx)
    n = len(ctx.messages)
    rd = _Reader(ctx)
    S = np.zeros((len(milestones), n, n))
    for i, ms in enumerate(milestones):
        counted = sum(1 for c in ms.constraints if c.kind != "guardrail")
        fixed = [c for c in ms.constraints if not c.uses_reference]
        refd = [c for c in ms.constraints if c.uses_reference]
        spaces = sorted({c.namespace for c in refd})
        # references r <= m grouped by the versions of the tables the reference constraints
        # read (equal versions, equal similarity), grown by one reference per message
        keys = list(zip(*(rd.versions(ns) for ns in spaces))) if refd else []
        groups: dict[tuple, list[int]] = {}
        for m in range(n):
            if refd:
                groups.setdefault(keys[m], []).append(m)
            vals = []
            for c in fixed:
                v = _constraint_at(c, rd, m)
                vals.append(v)
                if v <= 0.0:
                    break
            if vals and vals[-1] <= 0.0:
                continue
            if not refd:
                S[i, : m + 1, m] = _milestone_value(vals, counted)
                continue
            for rs in groups.values():
                more = []
                for c in refd:
                    v = _constraint_at(c, rd, m, rs[0])
                    more.append(v)
                    if v <= 0.0:
                        break
                S[i, rs, m] = _milestone_value(vals + more, counted)
    return S


def similarity_matrix(milestones: Sequence[Milestone], ctx: ExecutionContext) -> np.ndarray:
    """``S[i, m]``: similarity of milestone ``i`` at message ``m`` against the initial world
    (reference ``r = 0``). Shape K x n_messages."""
    S = similarity_tensor(milestones, ctx)
    return S[:, 0, :] if S.size else np.zeros((len(milestones), len(ctx.messages)))


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


def first_user_index(ctx: ExecutionContext) -> int:
    """Index of the first message the user sends (ToolSandbox's starting snapshot, reference
    ``-1``); 0 when there is none."""
    return next((k for k, msg in enumerate(ctx.messages) if msg.sender == Role.USER), 0)


@dataclass(frozen=True)
class Evaluation:
    """Score of one trajectory: ``similarity`` (0 if a minefield was hit or a matched write
    was undone, else the milestone part), ``milestone_similarity``, ``mapping`` (message
    index per milestone), per-milestone similarities, whether a minefield was hit,
    ``matched`` (milestones at similarity 1), ``turn_count``, ``undone`` (departure
    ``final_state``) and ``toolsandbox_similarity``: the same trajectory under
    ToolSandbox's formulas alone (every departure of :data:`SCORING_OPTIONS` off; ``nan``
    where not computed)."""

    similarity: float
    milestone_similarity: float
    mapping: tuple[int | None, ...]
    milestone_scores: tuple[float, ...]
    minefield_hit: bool
    matched: int
    turn_count: int
    undone: bool = False
    toolsandbox_similarity: float = float("nan")


def _first_reference(milestones: Sequence[Milestone]) -> tuple[Milestone, ...]:
    """Milestones with each set of reference phrasings cut to its first (one sentence per
    constraint, as in ToolSandbox)."""
    def cut(t):
        if isinstance(t, Mapping):
            return {k: (v[0] if isinstance(v, tuple) and v else v) for k, v in t.items()}
        return tuple(cut(x) for x in t) if isinstance(t, tuple) else t
    def several(t):
        if isinstance(t, Mapping):
            return any(isinstance(v, tuple) for v in t.values())
        return isinstance(t, tuple) and any(several(x) for x in t)
    return tuple(Milestone(ms.name, tuple(replace(c, target=cut(c.target)) if several(c.target) else c for c in ms.constraints))
                 if any(several(c.target) for c in ms.constraints) else ms for ms in milestones)


def _undone(milestones: Sequence[Milestone], edges: Sequence[tuple[int, int]], ctx: ExecutionContext,
            scores: Sequence[float]) -> bool:
    """Whether a world write matched by a milestone (score > 0) is gone from the final world
    while no later milestone constrains that table (departure ``final_state``)."""
    K = len(milestones)
    later: dict[int, set[int]] = {i: set() for i in range(K)}
    for i in reversed(topological_order(K, edges)):
        for u, v in edges:
            if u == i:
                later[i] |= {v} | later[v]
    rd = _Reader(ctx)
    last = len(ctx.messages) - 1
    for i, ms in enumerate(milestones):
        if scores[i] <= 0.0:
            continue
        busy = constrained_namespaces([milestones[j] for j in later[i]])
        for c in ms.constraints:
            if c.namespace not in NAMESPACES or c.namespace in busy or c.kind in ("tool_trace", "guardrail"):
                continue
            rows = rd.snapshot_rows(c.namespace, last)
            if c.kind == "snapshot":
                held = table_similarity(c, rows) > 0.0
            else:
                present = any(c.row_similarity(r) > 0.0 for r in rows)
                held = not present if c.kind == "removed" else present
            if not held:
                return True
    return False


def evaluate(
    ctx: ExecutionContext,
    milestones: Sequence[Milestone],
    edges: Sequence[tuple[int, int]],
    minefields: Sequence[Milestone] = (),
    *,
    guardrails: bool = True,
    departures: Collection[str] = SCORING_OPTIONS,
) -> Evaluation:
    """Score the trajectory held in ``ctx`` (ToolSandbox Sec. 2.3; ``Evaluation.evaluate``,
    ``evaluation.py`` lines 1226-1279).

    ``departures`` lists the :data:`SCORING_OPTIONS` switched on (default: all; ``()`` scores
    by ToolSandbox's formulas alone). ``guardrails=False`` drops the automatic guardrails
    (for comparison only). Minefields are chained in their listed order and matched like
    milestones; a non-zero best mean nullifies the score.

    Raises
    ------
    ValueError
        An unknown departure name, or a bad DAG.
    """
    bad = sorted(set(departures) - set(SCORING_OPTIONS))
    if bad:
        raise ValueError(f"unknown scoring departure(s) {bad}; expected a subset of {SCORING_OPTIONS}")
    first = first_user_index(ctx)
    plain = _first_reference(milestones)  # one reference sentence per constraint, as in ToolSandbox
    if "reference_sentences" not in departures:
        milestones = plain
    ms = with_guardrails(milestones, edges) if guardrails else tuple(milestones)
    S = similarity_tensor(ms, ctx)
    value, mapping = best_mapping(S, edges, first)
    changed = [i for i, (a, b) in enumerate(zip(plain, milestones)) if a is not b and a != b]
    if "reference_sentences" in departures and changed:  # rescore only the milestones with several phrasings
        ms0 = with_guardrails(plain, edges) if guardrails else plain
        S0 = S.copy()
        S0[changed] = similarity_tensor([ms0[i] for i in changed], ctx)
        value0 = best_mapping(S0, edges, first)[0]
    else:
        value0 = value
    parents = _parents(len(ms), edges)
    scores = tuple(float(S[i, _reference(i, mapping, parents, first), m]) for i, m in enumerate(mapping))
    hit = False
    if minefields:
        chain = [(j, j + 1) for j in range(len(minefields) - 1)]
        mf = with_guardrails(minefields, chain) if guardrails else tuple(minefields)
        hit = best_mapping(similarity_tensor(mf, ctx), chain, first)[0] > 0.0
    undone = "final_state" in departures and _undone(_resolved(milestones, ctx), edges, ctx, scores)
    return Evaluation(
        similarity=0.0 if (hit or undone) else float(value),
        milestone_similarity=float(value),
        mapping=tuple(mapping),
        milestone_scores=scores,
        minefield_hit=hit,
        matched=sum(1 for s in scores if s >= 1.0 - EXACT_TOL),
        turn_count=turn_count(ctx),
        undone=undone,
        toolsandbox_similarity=0.0 if hit else float(value0),
    )
