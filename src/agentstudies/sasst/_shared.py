"""Work shared by several SASST engine calls on the same cluster data (one simulation trial).

A simulation trial runs the protocol several times on the same discovery and confirmation
clusters: Study A's Table 4 with ``R = 5`` and ``R = 20`` splits (two engines), Table 5's
split and same-data procedures (both confirm on ``I``, and the same-data discovery weights
``I`` uniformly as confirmation does). Those runs repeat pure, deterministic computations
on the same arrays: a family's score matrix, a rule's scores, the plan tensor ``H`` and its
column mean. :class:`SharedWork` computes each once and hands the same arrays to every
later call, so every number is the one the call would have computed itself, bit for bit:

* scores are keyed by the identity of the rules (a :class:`~agentstudies.sasst.rules.FixedFamily`
  by its rules' identities) and of the feature array;
* the tensor by the plan's layout (systems, candidates, selection, split seed), the identity
  of the score array ``Z`` and the bytes of the rule scores ``s``; a plan with fewer splits
  than one already built gets the first columns of the larger tensor (the layout puts the
  splits in order and a split's membership does not depend on how many splits there are;
  the masks are compared before the columns are reused), copied to a contiguous array,
  and its mean is computed from that copy as the plan's own tensor would be.

Entries hold the objects whose identities they use, so an id is not reused while the
object lives. The caller promises not to change the data arrays in place while the object
is in use: one object per trial, dropped with it. Returned arrays are read-only.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from agentstudies.sasst._plan import ComparisonPlan
from agentstudies.sasst._rules import FixedFamily

__all__ = ["SharedWork"]


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class SharedWork:
    """Results of pure computations shared by engine calls on the same, unchanged data.

    Pass one instance to :meth:`SASST.discover` and :meth:`SASST.confirm_records` (keyword
    ``shared``) of every engine run of one trial; ``None`` (the default) computes
    everything per call. The results are identical either way (see the module docstring).
    """

    def __init__(self) -> None:
        self._items: dict[tuple, tuple[Any, Any]] = {}
        #: how many results were computed and how many were reused (tests read them)
        self.computed = 0
        self.reused = 0

    def _get(self, key: tuple, held: Any, compute: Callable[[], Any]) -> Any:
        hit = self._items.get(key)
        if hit is not None:
            self.reused += 1
            return hit[1]
        value = compute()
        self.computed += 1
        self._items[key] = (held, value)
        return value

    def family_scores(self, family: Any, X: np.ndarray, names: Sequence[str],
                      compute: Callable[[], tuple[list, np.ndarray]]) -> tuple[list, np.ndarray]:
        """``compute()`` (a family's candidates fitted on ``X`` and their score matrix), once
        per family (a fixed family: per tuple of rule objects) and feature array."""
        rules = getattr(family, "rules", None)
        fam = ("fixed", tuple(map(id, rules))) if type(family) is FixedFamily else ("family", id(family))
        cands, S = self._get(("family", fam, id(X), tuple(names)), (family, rules, X), compute)
        return cands, S

    def rule_scores(self, rule: Any, X: np.ndarray, names: Sequence[str],
                    compute: Callable[[], np.ndarray]) -> np.ndarray:
        """``compute()`` (the rule's scores on ``X``), once per rule object and feature array."""
        return self._get(("rule", id(rule), id(X), tuple(names)), (rule, X), compute)

    def tensor(self, plan: ComparisonPlan, Z: np.ndarray, s: np.ndarray, masks: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray]:
        """``(H, H.mean(axis=0))`` of ``plan.tensor(Z, s, masks)``, read-only."""
        s = np.asarray(s, dtype=float)
        R = plan.n_splits
        key = ("tensor", plan.systems, plan.candidates, plan.has_selection, plan.split_seed, id(Z), s.tobytes())
        hit = self._items.get(key)
        if hit is not None:
            base_masks, by_R = hit[1]
            big = max(by_R)
            if big >= R and _same_masks(base_masks, masks, R):
                self.reused += 1
                if R not in by_R:  # the first columns of the larger tensor, as a contiguous copy
                    H = np.ascontiguousarray(by_R[big][0][:, : plan.n_columns])
                    by_R[R] = (_frozen(H), _frozen(H.mean(axis=0)))
                return by_R[R]
        H = plan.tensor(Z, s, masks)
        out = (_frozen(H), _frozen(H.mean(axis=0)))
        self.computed += 1
        if hit is None or R > max(hit[1][1]):  # keep the tensor with the most splits
            self._items[key] = ((Z, s), (None if masks is None else np.array(masks, dtype=bool), {R: out}))
        return out

def _same_masks(base: np.ndarray | None, masks: np.ndarray | None, R: int) -> bool:
    """Whether the first ``R`` split masks of ``base`` are ``masks`` (``R = 0``: nothing to compare)."""
    if R == 0:
        return True
    if base is None or masks is None or base.shape[0] < R or base.shape[1:] != masks.shape[1:]:
        return False
    return bool(np.array_equal(base[:R], masks))


def tensor_mean(plan: ComparisonPlan, Z: np.ndarray, s: np.ndarray, masks: np.ndarray,
                shared: SharedWork | None) -> tuple[np.ndarray, np.ndarray]:
    """The plan tensor (N, p) and its column mean (p,), from ``shared`` when given (else
    computed here: ``plan.tensor(Z, s, masks)`` and its mean over clusters)."""
    if shared is not None:
        return shared.tensor(plan, Z, s, masks)
    H = plan.tensor(Z, s, masks)
    return H, H.mean(axis=0)
