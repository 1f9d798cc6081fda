"""The milestone matcher: the best DAG-respecting assignment of milestones to messages
(ToolSandbox ``MilestoneMatcher._dfs``, ``tool_sandbox/common/evaluation.py`` lines
1056-1212 of apple/ToolSandbox), a topological order, and a brute-force reference for tests.
"""

from __future__ import annotations

import itertools
from typing import Mapping, Sequence

import numpy as np

from agentstudies._tolerances import EXACT_TOL

__all__ = ["topological_order", "best_mapping", "brute_force_mapping"]


def _parents(k: int, edges: Sequence[tuple[int, int]]) -> dict[int, list[int]]:
    return {i: [u for u, v in edges if v == i] for i in range(k)}


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


def _reference(i: int, assign: Sequence[int | None], parents: Mapping[int, list[int]], first: int = 0) -> int:
    """Reference snapshot of milestone ``i``: its latest-matched parent's index, else ``first``."""
    return max((assign[p] for p in parents[i] if assign[p] is not None), default=first)


def best_mapping(S: np.ndarray, edges: Sequence[tuple[int, int]], first: int = 0) -> tuple[float, list[int]]:
    """Exact maximum of the mean milestone similarity over DAG-respecting mappings.

    ``S`` is K x T (no reference dependence) or K x T x T with ``S[i, r, m]`` the
    similarity of milestone ``i`` at message ``m`` against the reference snapshot ``r``
    (:func:`similarity_tensor`). As in ToolSandbox (``MilestoneMatcher._dfs``,
    ``evaluation.py`` lines 1056-1163) every milestone gets an index ``m_i`` in
    ``first..T-1`` (``first``: the first user message) with ``m_u <= m_v`` for every edge
    ``u -> v`` (the indices are non-decreasing along a topological order); milestone ``i``
    is scored against ``r_i`` = the largest index of its parents (``first`` for a root).
    Branch and bound over a topological order with an upper bound ``max_{r,m} S`` per
    milestone. For a milestone none of whose children depend on the reference, only
    *record* indices are tried (an index whose similarity exceeds every earlier admissible
    one): a later index of no larger similarity only tightens the children's range.

    Returns ``(mean similarity, mapping)``; ``(1.0, [])`` when K = 0.

    Raises
    ------
    ValueError
        A cycle or bad edge, a malformed ``S``, or ``first`` outside ``0..T-1``.
    """
    S = _as_tensor(S)
    K = S.shape[0]
    if K == 0:
        return 1.0, []
    T = S.shape[2]
    if not 0 <= first < T:
        raise ValueError(f"first (the first user message) must be in 0..{T - 1}; got {first}")
    order = topological_order(K, edges)
    parents = _parents(K, edges)
    children = {i: [v for u, v in edges if u == i] for i in range(K)}
    rdep = [bool(np.ptp(S[i], axis=0).max() > 0) for i in range(K)]
    dominance = [not any(rdep[c] for c in children[i]) for i in range(K)]
    row_max = S.reshape(K, -1).max(axis=1)
    suffix = np.zeros(K + 1)
    for j in range(K - 1, -1, -1):
        suffix[j] = suffix[j + 1] + row_max[order[j]]
    best_val, best_map = -1.0, [first] * K
    assign: list[int | None] = [None] * K

    def rec(j: int, acc: float) -> None:
        nonlocal best_val, best_map
        if acc + suffix[j] <= best_val + EXACT_TOL:
            return
        if j == K:
            best_val, best_map = acc, [int(a) for a in assign]
            return
        i = order[j]
        ref = _reference(i, assign, parents, first)
        record = -1.0
        for m in range(ref, T):
            s = S[i, ref, m]
            if s > record or not dominance[i]:
                record = max(record, s)
                assign[i] = m
                rec(j + 1, acc + s)
                assign[i] = None
                if dominance[i] and s >= row_max[i]:
                    break

    rec(0, 0.0)
    return max(best_val, 0.0) / K, best_map


def brute_force_mapping(S: np.ndarray, edges: Sequence[tuple[int, int]], first: int = 0) -> float:
    """Maximum mean over *all* mappings (exponential; for tests). ``S``: K x T or K x T x T."""
    S = _as_tensor(S)
    K, T = S.shape[0], S.shape[2]
    if K == 0:
        return 1.0
    parents = _parents(K, edges)
    best = 0.0
    for combo in itertools.product(range(first, T), repeat=K):
        if any(combo[u] > combo[v] for u, v in edges):
            continue
        best = max(best, sum(S[i, _reference(i, combo, parents, first), m] for i, m in enumerate(combo)) / K)
    return best
