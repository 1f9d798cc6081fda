"""Nearest-neighbourhood means of discovery items, for the neighbourhood direction registry.

:class:`agentstudies.studies.sasst.real_features.NeighbourhoodDirectionFamily` fits one
linear discriminant direction per discovery item and neighbourhood size on every stability
resample (SASST Study D, Appendix D.5 of Xu et al., 2026); the mean of each neighbourhood
is the same running sum read at several sizes, computed here for all items at once.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__: list[str] = []


def _neighbourhood_means(X: np.ndarray, order: np.ndarray, idx: np.ndarray, sizes: Sequence[int]
                         ) -> dict[int, np.ndarray]:
    """Mean features of every item's nearest neighbourhoods: ``{m: array (len(idx), d)}``,
    row ``r`` = ``X[order[idx[r], :m]].mean(axis=0)`` for each size ``m`` in ``sizes``.

    ``X`` (n, d) features, ``order`` (n, n) each item's neighbours nearest first, ``idx``
    the items. NumPy reduces a (m, d) block over its rows one row after the other when
    ``d >= 2`` (the rows are added in order, then divided by ``m``), so one running sum of
    every item's ``j``-th nearest row, ``j = 0 .. max(sizes) - 1``, read at every size, gives
    each mean bit for bit without gathering the blocks. With one column NumPy sums
    pairwise: each mean is then taken on its own.
    """
    d = X.shape[1]
    out = {m: np.empty((len(idx), d)) for m in sizes}
    if d < 2:
        for m in sizes:
            for r, i in enumerate(idx):
                out[m][r] = X[order[i, :m]].mean(axis=0)
        return out
    rank = np.ascontiguousarray(order[idx, :max(sizes)].T)  # (top, items): the j-th nearest row of each item
    s = X.take(rank[0], axis=0)
    row = np.empty_like(s)
    for j in range(1, len(rank) + 1):
        if j in out:
            np.divide(s, j, out=out[j])
        if j < len(rank):
            s += X.take(rank[j], axis=0, out=row)
    return out
