"""Remaining distance ``l_T(sigma)`` and the solvable frontier ``F_D`` (handoff paper Eq. 5-6).

``l_T(sigma)`` is the fewest valid actions from ``sigma`` after which the task verifier
(ALFWorld's native ``won`` flag) is 1; ``F_D = {sigma : l_T(sigma) = D, b(sigma) >= D}``.
Membership is certified by the exhaustive local search of Appendix A: reject terminal
states; test every admissible first action and reject if one wins; otherwise test every
admissible action after each first action (and so on, to depth ``D``) and accept iff some
``D``-action path wins. The counts of first and second actions tested are returned.

Two implementations give the same answer (tested on reached states of every task type):

* :func:`frontier_check` -- the FAST path. It works on the fast-downward library directly:
  the applicable operators of a state (one per grounded action, i.e. per admissible
  command), ``apply_operator`` and ``check_goal`` (the same C-side goal test that sets
  ``won``), with ``get_state_id``/``set_state_id`` to come back. No text is rendered;
  operator names are decoded at the root only (below it the search needs ids), and the
  ids of the states reached at the last depth are not read (they are not expanded).
  At the last depth an operator is applied only if it can change whether the goal holds
  (:func:`goal_relevant_operators`: one of its effects sets a variable the goal depends
  on); the others are counted as tested, since applied from a state that is not a goal
  state they cannot win. Same answer, counts and actions as applying every operator
  (tested). ~1-10 ms per distance-two check in ALFWorld-size rooms.
* :func:`frontier_check_reference` -- by clones and ``env.step`` on the rendered command
  text: ``method="snapshot"`` restores an in-process snapshot before each branch,
  ``method="replay"`` re-creates every branch by reset + replay of the recorded prefix
  (the paper's operational clone; very slow, for cross-checks only).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from agentstudies.envs.alfworld.engine import _operator_array, applicable_operator_ids, applicable_operators

if TYPE_CHECKING:  # pragma: no cover
    from agentstudies.envs.alfworld.env import AlfworldEnv

__all__ = ["FrontierCheck", "frontier_check", "frontier_check_reference", "goal_relevant_operators",
           "remaining_distance"]

#: :func:`goal_relevant_operators` per sha256 of a SAS task (least recently used dropped
#: beyond 64 entries). Set ``USE_GOAL_RELEVANCE = False`` to apply every operator at the
#: last depth (the check before the filter; tests compare both).
_RELEVANT: "OrderedDict[str, dict[bytes, bool]]" = OrderedDict()
USE_GOAL_RELEVANCE = True
#: The same memo by identity of the SAS text: ``id(text) -> (text, relevant)``.
_RELEVANT_OF_TEXT: dict[int, tuple[str, dict[bytes, bool]]] = {}
#: Per relevance map (by identity, one per task), the operator table of
#: :func:`_last_level_ops`: ``id(relevant) -> _LastLevel``.
_LAST_LEVEL: dict[int, "_LastLevel"] = {}


@dataclass(frozen=True)
class FrontierCheck:
    """Result of the Appendix A check at one state.

    Attributes
    ----------
    D:
        Target distance.
    on_frontier:
        ``sigma in F_D``: not terminal, ``b >= D``, no path shorter than ``D`` wins, some
        ``D``-action path wins.
    distance:
        ``l_T(sigma)`` if it is ``<= D`` (0 for a won state), else ``None`` (``> D``).
        ``None`` also when the check was skipped (terminal or ``b < D`` is reported by
        ``terminal`` / ``budget``).
    terminal:
        The state is won or has no budget left.
    budget:
        Remaining budget ``b(sigma)``.
    actions_tested:
        Actions tested at depth 1, 2, ..., D (paths, not distinct states, as in the paper).
    winning_actions:
        First actions that win at once (non-empty iff ``distance == 1``).
    bridge_actions:
        For ``D >= 2``: first actions from which one further action wins (Appendix C).
    """

    D: int
    on_frontier: bool
    distance: int | None
    terminal: bool
    budget: int
    actions_tested: tuple[int, ...] = field(default_factory=tuple)
    winning_actions: tuple[str, ...] = field(default_factory=tuple)
    bridge_actions: tuple[str, ...] = field(default_factory=tuple)

    @property
    def first_actions_tested(self) -> int:
        """Number of first actions tested."""
        return self.actions_tested[0] if self.actions_tested else 0

    @property
    def second_actions_tested(self) -> int:
        """Number of second actions tested (0 if the search stopped at depth 1)."""
        return self.actions_tested[1] if len(self.actions_tested) > 1 else 0

    def summary(self) -> tuple:
        """Comparable core: (on_frontier, distance, terminal, budget, counts, wins, bridges)."""
        return (
            self.on_frontier,
            self.distance,
            self.terminal,
            self.budget,
            tuple(self.actions_tested),
            tuple(sorted(self.winning_actions)),
            tuple(sorted(self.bridge_actions)),
        )


def _sas_goal_parts(sas: str) -> tuple[set[int], list[tuple[int, list[int]]], list[tuple[str, set[int]]]]:
    """``(goal variables, axioms as (head variable, condition variables), operators as
    (name, variables their effects set))`` of a fast-downward SAS task (format 3)."""
    it = iter(sas.split("\n"))
    goal: set[int] = set()
    rules: list[tuple[int, list[int]]] = []
    ops: list[tuple[str, set[int]]] = []
    for line in it:
        if line == "begin_goal":
            goal = {int(next(it).split()[0]) for _ in range(int(next(it)))}
        elif line == "begin_operator":
            name = next(it)
            for _ in range(int(next(it))):  # prevail conditions
                next(it)
            targets = set()
            for _ in range(int(next(it))):  # effects: ncond (var val)*ncond var pre post
                parts = next(it).split()
                targets.add(int(parts[1 + 2 * int(parts[0])]))
            ops.append((name, targets))
        elif line == "begin_rule":
            conds = [int(next(it).split()[0]) for _ in range(int(next(it)))]
            rules.append((int(next(it).split()[0]), conds))
    return goal, rules, ops


def goal_relevant_operators(sas: str) -> dict[bytes, bool]:
    """Operator name (bytes, as the library lists it) -> can applying it change whether
    the goal holds.

    The goal's variables are closed under the axioms (a derived goal variable depends on
    the variables in the conditions of its rules, recursively). An operator none of whose
    effects (conditional effects included) sets one of those variables leaves every one
    of them, and so the goal, as it was: from a state that is not a goal state it cannot
    win. Memoised per task; raises ``ValueError`` for a SAS text without a goal.
    """
    same = _RELEVANT_OF_TEXT.get(id(sas))
    if same is not None and same[0] is sas:  # this very text object: no need to hash ~1 MB again
        return same[1]
    key = hashlib.sha256(sas.encode()).hexdigest()
    hit = _RELEVANT.get(key)
    if hit is not None:
        _RELEVANT.move_to_end(key)
        _remember_text(sas, hit)
        return hit
    goal, rules, ops = _sas_goal_parts(sas)
    if not goal:
        raise ValueError("SAS task without a goal (no begin_goal section with a variable)")
    deps = set(goal)
    grew = True
    while grew:
        grew = False
        for head, conds in rules:
            if head in deps and not deps.issuperset(conds):
                deps.update(conds)
                grew = True
    hit = {}
    for name, targets in ops:
        k = name.encode("cp1252")
        hit[k] = hit.get(k, False) or not deps.isdisjoint(targets)
    _RELEVANT[key] = hit
    if len(_RELEVANT) > 64:
        _RELEVANT.popitem(last=False)
    _remember_text(sas, hit)
    return hit


def _remember_text(sas: str, relevant: dict[bytes, bool]) -> None:
    """Key ``relevant`` by the identity of the SAS text object too (the text is kept
    alive with it, so its id cannot be reused): a task's every check passes the same
    string, and hashing it (up to ~1 MB, ~1.5 ms) was half the cost of a check."""
    if len(_RELEVANT_OF_TEXT) >= 64:
        _RELEVANT_OF_TEXT.clear()
    _RELEVANT_OF_TEXT[id(sas)] = (sas, relevant)


class _LastLevel:
    """One task's operator table for :func:`_last_level_ops`: operator id -> code of its
    name (an operator id is the operator's index in the loaded SAS task, so its name
    never changes) and whether :func:`goal_relevant_operators` keeps that name. Filled
    lazily: only the names of operator ids not met before are read."""

    def __init__(self, relevant: dict[bytes, bool]):
        self.relevant = relevant  # kept alive: the table is keyed by its id
        self.of_id: dict[int, tuple[int, bool]] = {}
        self.codes: dict[bytes, int] = {}

    def learn(self, arr: np.ndarray, j: int) -> tuple[int, bool]:
        """Code and relevance of the operator in row ``j`` of a structured operator array."""
        name = bytes(arr["name"][j])
        code = self.codes.setdefault(name, len(self.codes))
        hit = self.of_id[int(arr["id"][j])] = (code, self.relevant.get(name, True))
        return hit


def _last_level_ops(lib, relevant: dict[bytes, bool]) -> tuple[int, list[int]]:
    """At the last depth: ``(number of operators tested, ids of those that can change the
    goal)`` -- the operators of :func:`applicable_operator_ids` (one per name, the first
    listed, in the library's order), keeping those :func:`goal_relevant_operators` does
    not rule out (a name it does not know is kept). Names are compared as codes from the
    task's operator table (:class:`_LastLevel`), not read and decoded on every call."""
    _, arr = _operator_array(lib)
    table = _LAST_LEVEL.get(id(relevant))
    if table is None or table.relevant is not relevant:
        if len(_LAST_LEVEL) >= 64:
            _LAST_LEVEL.clear()
        table = _LAST_LEVEL[id(relevant)] = _LastLevel(relevant)
    of_id = table.of_id
    seen: set[int] = set()
    keep: list[int] = []
    for j, op_id in enumerate(arr["id"].tolist()):
        hit = of_id.get(op_id)
        if hit is None:
            hit = table.learn(arr, j)
        code, relevant_op = hit
        if code not in seen:
            seen.add(code)
            if relevant_op:
                keep.append(op_id)
    return len(seen), keep


def _check_D(D: int) -> int:
    if int(D) != D or D < 1:
        raise ValueError(f"D={D!r}: expected a positive integer")
    return int(D)


def frontier_check(env: "AlfworldEnv", D: int = 2) -> FrontierCheck:
    """FAST membership test ``sigma in F_D`` at the env's current state (Appendix A).

    Works on the fast-downward library (operators, ``check_goal``) without rendering
    text; the env is left exactly where it was (state id restored; the Python side is
    never touched). Paths are enumerated exhaustively to depth ``D`` (``n^D`` leaves), so
    use ``D <= 3``.

    Raises ``ValueError`` for ``D < 1``; ``RuntimeError`` without an episode.
    """
    D = _check_D(D)
    b = env.remaining_budget
    if env.won or b <= 0:
        return FrontierCheck(D, False, 0 if env.won else None, True, b)
    if b < D:
        return FrontierCheck(D, False, None, False, b)
    lib = env.lib
    root = lib.get_state_id()
    names = env.operator_commands()
    relevant = goal_relevant_operators(env._pddl._pddl_state.sas) if USE_GOAL_RELEVANCE else None
    tested: list[int] = []
    winning: list[str] = []
    bridges: set[str] = set()
    try:
        # level: list of (first-action op id, state id)
        level: list[tuple[int, int]] = [(-1, root)]
        for depth in range(1, D + 1):
            nxt: list[tuple[int, int]] = []
            n_tested = 0
            any_win = False
            last = depth == D  # the states reached at the last depth are not expanded
            for first, sid in level:
                lib.set_state_id(sid)
                if depth == 1:  # the root: names are needed for the winning actions
                    ops = applicable_operators(lib)
                    op_ids = [op[0] for op in ops]
                    op_names = {op[0]: op[1] for op in ops}
                elif last and relevant is not None:  # the others cannot win from a non-goal state
                    n_ops, op_ids = _last_level_ops(lib, relevant)
                    n_tested += n_ops - len(op_ids)
                else:  # below the root only ids are used (same operators, same order)
                    op_ids = applicable_operator_ids(lib)
                n_tested += len(op_ids)
                for op_id in op_ids:
                    lib.set_state_id(sid)
                    lib.apply_operator(op_id, None)
                    f = op_id if depth == 1 else first
                    if lib.check_goal():
                        any_win = True
                        if depth == 1:
                            winning.append(names.get(op_id, op_names[op_id]))
                        elif depth == 2:
                            bridges.add(names.get(f, str(f)))
                    elif not last:
                        nxt.append((f, lib.get_state_id()))
            tested.append(n_tested)
            if any_win:
                dist = depth
                return FrontierCheck(
                    D, dist == D, dist, False, b, tuple(tested), tuple(winning), tuple(sorted(bridges))
                )
            level = nxt
        return FrontierCheck(D, False, None, False, b, tuple(tested), (), ())
    finally:
        lib.set_state_id(root)


def frontier_check_reference(
    env: "AlfworldEnv", D: int = 2, method: Literal["snapshot", "replay"] = "snapshot"
) -> FrontierCheck:
    """REFERENCE membership test by clones and ``env.step`` on the rendered admissible
    commands (Appendix A, as the paper runs it).

    ``method="snapshot"``: each branch starts from :meth:`AlfworldEnv.restore` of a
    snapshot of its parent. ``method="replay"``: each branch starts from
    :meth:`AlfworldEnv.replay` (reset with the task seed + replay of the recorded prefix,
    verified against the recorded records). The env is put back at the original state.
    Cost: one rendered step per tested action (plus a full replay per branch for
    ``"replay"``).
    """
    D = _check_D(D)
    if method not in ("snapshot", "replay"):
        raise ValueError(f"method={method!r}: expected 'snapshot' or 'replay'")
    b = env.remaining_budget
    if env.won or b <= 0:
        return FrontierCheck(D, False, 0 if env.won else None, True, b)
    if b < D:
        return FrontierCheck(D, False, None, False, b)
    seed = env.seed
    prefix = env.actions
    records = env.records
    root_snap = env.snapshot() if method == "snapshot" else None

    def goto(path: tuple[str, ...], snap) -> None:
        if method == "snapshot":
            env.restore(snap)
        else:
            env.replay(seed, prefix + list(path), records if not path else None)

    tested: list[int] = []
    winning: list[str] = []
    bridges: set[str] = set()
    level = [((), root_snap)]
    result = None
    for depth in range(1, D + 1):
        nxt = []
        n_tested = 0
        any_win = False
        for path, snap in level:
            goto(path, snap)
            adm = env.admissible
            n_tested += len(adm)
            for a in adm:
                goto(path, snap)
                env.step(a)
                if env.won:
                    any_win = True
                    if depth == 1:
                        winning.append(a)
                    elif depth == 2:
                        bridges.add(path[0])
                elif depth < D:
                    child = env.snapshot() if method == "snapshot" else None
                    nxt.append((path + (a,), child))
        tested.append(n_tested)
        if any_win:
            result = FrontierCheck(D, depth == D, depth, False, b, tuple(tested), tuple(winning), tuple(sorted(bridges)))
            break
        level = nxt
    if result is None:
        result = FrontierCheck(D, False, None, False, b, tuple(tested), (), ())
    if method == "snapshot":
        env.restore(root_snap)
    else:
        env.replay(seed, prefix, records)
    return result


def remaining_distance(env: "AlfworldEnv", max_depth: int = 6) -> int | None:
    """``l_T(sigma)`` by breadth-first search over engine states (fast path).

    States are deduplicated by fast-downward's state registry (equal states share an id).
    Returns the distance, ``0`` if already won, or ``None`` if it exceeds ``max_depth``.
    Budget is ignored (this is Eq. 5 alone). Cost grows quickly with ``max_depth`` in big
    rooms; it is meant for checks, not for policies.
    """
    if env.won:
        return 0
    lib = env.lib
    root = lib.get_state_id()
    seen = {root}
    frontier = deque([root])
    try:
        for depth in range(1, max_depth + 1):
            nxt = deque()
            for sid in frontier:
                lib.set_state_id(sid)
                for op_id, _, _ in applicable_operators(lib):
                    lib.set_state_id(sid)
                    lib.apply_operator(op_id, None)
                    if lib.check_goal():
                        return depth
                    child = lib.get_state_id()
                    if child not in seen:
                        seen.add(child)
                        nxt.append(child)
            frontier = nxt
            if not frontier:
                return None
        return None
    finally:
        lib.set_state_id(root)
