"""The fixed comparison plan ``A`` of SASST and its exact first-order contributions.

A plan turns cluster-level workflow scores and task weights into one estimate per
workflow, ``theta(Q; A)``, and optionally a *selected* workflow (SASST Section 2,
Appendix C.3). Everything is a smooth function ``F`` of cluster means ``mu = E[H_k]`` of a
cluster tensor ``H_k`` holding every weighted numerator and denominator, so the plug-in
contributions of Lemma 2 are ``Phi_k = grad F(mu_hat)^T (H_k - mu_hat)``; the gradient
here is exact (tested against finite differences).

Layout of ``H_k`` (``s_k`` the rule score of cluster ``k``, ``Z_kj`` its seed-averaged
score under system ``j``, ``C`` candidate systems for the selection step)::

    [ s Z_1 .. s Z_J, s ]                                  all clusters
    for r = 1..R:
      [ s 1{S_r} Z_c1 .. Z_cC, s 1{S_r} ]                   scoring subset S_r
      [ s 1{E_r} Z_c1 .. Z_cC, s 1{E_r} ]                   held-out subset E_r

Fixed systems use ``theta_j = mean(s Z_j) / mean(s)``. The selected pseudo-system uses the
exact ratios of C.3: ``S_{r,j} = sum_{S_r} s Z_j / sum_{S_r} s`` (scoring),
``T_{r,j}`` the same on ``E_r`` (held out), selector ``q_r = softmax(S_r / tau)`` (or a hard
argmax), ``Y_r = q_r^T T_r`` and ``theta_sel = sum_r lambda_r Y_r`` with
``lambda_r = 1/R``. With ``R = 0`` the selector scores and evaluates on all clusters
(in-sample selection). The selection enters the contributions through
``d q / d S = (diag q - q q^T) / tau`` (Lemma 2's "splitwise selection term"); a hard
argmax contributes no selection term, and then the protected objects are the candidate
contrasts, not the argmax (Section 2).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal, Mapping, Sequence

import numpy as np

__all__ = ["ComparisonPlan", "SELECTED"]

#: Name of the pseudo-system chosen by the plan's selection step.
SELECTED = "selected"


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Vectorized SplitMix64 finalizer: a fixed, well-mixed hash of uint64 keys."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


#: Split masks by (R, split seed, cluster ids), oldest evicted first.
_MASK_CACHE: dict[tuple, np.ndarray] = {}
_MASK_CACHE_SIZE = 64


def _softmax(x: np.ndarray, tau: float) -> np.ndarray:
    z = x / tau
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _ratio(num, den) -> np.ndarray:
    """``num / den`` (broadcast), NaN where ``den == 0``, without a warning.

    A zero denominator is a subset (all clusters, a scoring subset ``S_r`` or a held-out
    subset ``E_r``) that carries no rule weight, e.g. a bootstrap resample drawing none of
    its clusters or a frozen rule scoring all of them 0: the weighted mean there is
    undefined, so it is NaN (as ``0 / 0`` was, but numpy warned "invalid value encountered
    in divide" into chapter output). The support check rejects such a rule (its
    :meth:`ComparisonPlan.min_split_share` is 0).
    """
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    if den.all():  # no zero denominator (NaN is not zero, as below): the same quotients, fewer calls
        return np.asarray(num / den)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)  # ``where`` broadcasts like the operands
    return out


def _hard(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    idx = np.argmax(x, axis=-1)  # ties: first candidate in declared order
    np.put_along_axis(out, idx[..., None], 1.0, axis=-1)
    return out


@dataclass(frozen=True)
class ComparisonPlan:
    """The frozen comparison plan ``A`` (SASST Section 2, Appendix C.3).

    Parameters
    ----------
    systems : sequence of str
        Workflow / system names, in the order of the columns of ``Z``.
    candidates : sequence of str
        Systems among which the selection step chooses (empty: no selection step).
    selection : {"none", "soft", "hard"}
        ``soft``: softmax selector with temperature ``temperature`` (smooth, so the
        selection step is part of the first-order contributions); ``hard``: argmax.
    temperature : float
        Softmax temperature ``tau`` in score units (success-rate points / 100).
    n_splits : int
        ``R`` repeated scoring / held-out splits; 0 scores and evaluates in sample.
    split_seed : int
        Seed of the deterministic, score-blind split assignment (a hash of the cluster id).

    Raises
    ------
    ValueError
        On unknown candidates, duplicate systems, a bad temperature or selection mode.
    """

    systems: tuple[str, ...]
    candidates: tuple[str, ...] = ()
    selection: Literal["none", "soft", "hard"] = "none"
    temperature: float = 0.05
    n_splits: int = 0
    split_seed: int = 0
    _index: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for label in ("systems", "candidates"):
            if isinstance(getattr(self, label), str):
                raise ValueError(f"{label} must be a sequence of names, not the string {getattr(self, label)!r}; "
                                 f"write ({getattr(self, label)!r},)")
        object.__setattr__(self, "systems", tuple(self.systems))
        object.__setattr__(self, "candidates", tuple(self.candidates))
        if len(set(self.systems)) != len(self.systems) or not self.systems:
            raise ValueError(f"systems must be non-empty and distinct; got {self.systems}")
        if SELECTED in self.systems:
            raise ValueError(f"{SELECTED!r} is reserved for the plan's selected system")
        unknown = [c for c in self.candidates if c not in self.systems]
        if unknown:
            raise ValueError(f"selection candidates {unknown} are not among systems {self.systems}")
        if self.selection not in ("none", "soft", "hard"):
            raise ValueError(f"selection must be 'none', 'soft' or 'hard'; got {self.selection!r}")
        if self.selection != "none" and len(self.candidates) < 1:
            raise ValueError("a selection step needs at least one candidate system")
        if self.selection == "soft" and not self.temperature > 0:
            raise ValueError(f"temperature must be > 0; got {self.temperature}")
        if self.n_splits < 0:
            raise ValueError(f"n_splits must be >= 0; got {self.n_splits}")
        object.__setattr__(self, "_index", {s: i for i, s in enumerate(self.systems)})

    # ------------------------------------------------------------------ layout
    @property
    def has_selection(self) -> bool:
        return self.selection != "none"

    @property
    def outputs(self) -> tuple[str, ...]:
        """Names of the entries of ``theta``: the systems, then ``selected`` if any."""
        return self.systems + ((SELECTED,) if self.has_selection else ())

    @property
    def n_columns(self) -> int:
        """``p``, the width of the cluster tensor ``H``."""
        J, C = len(self.systems), len(self.candidates)
        return J + 1 + (self.n_splits * (2 * C + 2) if self.has_selection else 0)

    def contrast_vector(self, contrast: Mapping[str, float]) -> np.ndarray:
        """Coefficient vector ``c`` over :attr:`outputs` for a ``{name: coef}`` contrast."""
        if not contrast:
            raise ValueError("a contrast needs at least one {system: coefficient} entry")
        c = np.zeros(len(self.outputs))
        names = self.outputs
        for key, coef in contrast.items():
            if key not in names:
                raise ValueError(f"contrast refers to unknown system {key!r}; plan outputs: {names}")
            c[names.index(key)] = float(coef)
        return c

    def split_masks(self, cluster_ids: Sequence[str]) -> np.ndarray:
        """Scoring-subset membership ``1{k in S_r}`` of shape (R, N).

        For each split ``r`` clusters are ranked by a hash of ``(split_seed, r, id)`` and
        the lower half forms ``S_r``; ``E_r`` is the rest. The assignment depends only on
        the cluster ids (score-blind) and is frozen with the plan.
        """
        n = len(cluster_ids)
        if self.n_splits == 0 or n == 0:
            return np.zeros((self.n_splits, n), dtype=bool)
        if isinstance(cluster_ids, np.ndarray) and cluster_ids.dtype.kind == "U":  # ClusterData.ids
            key: tuple = (self.n_splits, self.split_seed, cluster_ids.dtype.str, cluster_ids.tobytes())
        else:
            key = (self.n_splits, self.split_seed, tuple(str(c) for c in cluster_ids))
        hit = _MASK_CACHE.get(key)
        if hit is not None:  # a pure function of (R, split seed, ids): cached, read-only
            return hit
        ids = [str(c) for c in cluster_ids]
        masks = np.zeros((self.n_splits, n), dtype=bool)
        base = np.array(
            [int.from_bytes(hashlib.blake2b(c.encode(), digest_size=8).digest(), "little") for c in ids],
            dtype=np.uint64,
        )
        for r in range(self.n_splits):
            keys = _splitmix64(base ^ np.uint64((self.split_seed * 1_000_003 + r + 1) & (2**64 - 1)))
            order = np.lexsort((np.array(ids), keys))
            masks[r, order[: n // 2]] = True
        masks.flags.writeable = False
        if len(_MASK_CACHE) >= _MASK_CACHE_SIZE:
            _MASK_CACHE.pop(next(iter(_MASK_CACHE)))
        _MASK_CACHE[key] = masks
        return masks

    # ------------------------------------------------------------------ tensor
    def tensor(self, Z: np.ndarray, s: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        """Cluster tensor ``H`` (N, p) for scores ``Z`` (N, J) and rule scores ``s`` (N,)."""
        Z = np.asarray(Z, dtype=float)
        s = np.asarray(s, dtype=float)
        n, J = Z.shape
        if J != len(self.systems):
            raise ValueError(f"Z has {J} systems, plan has {len(self.systems)}")
        if s.shape != (n,):
            raise ValueError(f"s must have shape ({n},); got {s.shape}")
        J, R = len(self.systems), self.n_splits
        if not (self.has_selection and R):
            return np.concatenate([Z * s[:, None], s[:, None]], axis=1)
        if masks is None or masks.shape != (R, n):
            raise ValueError(f"split masks of shape ({R}, {n}) are required")
        C = len(self.candidates)
        H = np.empty((n, J + 1 + 2 * R * (C + 1)))
        np.multiply(Z, s[:, None], out=H[:, :J])
        H[:, J] = s
        # Per split r a cluster's block is [Z_c w_S, w_S, Z_c w_E, w_E] with (w_S, w_E) =
        # (s 1, s 0) in S_r and (s 0, s 1) in E_r: so every cluster has just two possible
        # blocks. Both are computed once, (N, 2, 2C + 2), and each (cluster, split) block is
        # gathered from them into H (the same products, bit for bit, as
        # multiplying per split: s * True and s * False are the casts of s * member, and
        # Z_c * w the same product; a gather of 96-byte rows instead of C strided products
        # over (N, R, 2)).
        member = masks.T
        w1, w0 = s * np.True_, s * np.False_
        cand = Z[:, [self._index[c] for c in self.candidates]]
        two = np.empty((n, 2, 2, C + 1))  # [cluster, in S_r / in E_r, S part / E part, C + 1]
        np.multiply(cand, w1[:, None], out=two[:, 0, 0, :C])
        two[:, 0, 0, C] = w1
        np.multiply(cand, w0[:, None], out=two[:, 0, 1, :C])
        two[:, 0, 1, C] = w0
        two[:, 1, 0] = two[:, 0, 1]
        two[:, 1, 1] = two[:, 0, 0]
        pick = 2 * np.arange(n, dtype=np.intp)[:, None] + ~member  # (N, R): row of ``two`` per block
        # gathered into a contiguous (N R, 2C + 2) array, then copied into H's columns (a
        # gather straight into the strided view of H goes through numpy's buffering: 2x slower)
        H[:, J + 1:] = np.take(two.reshape(2 * n, 2 * (C + 1)), pick.ravel(), axis=0, mode="clip").reshape(n, -1)
        return H

    # ------------------------------------------------------------------ F and grad F
    def _pieces(self, mu: np.ndarray):
        J, C, R = len(self.systems), len(self.candidates), self.n_splits
        den = mu[..., J]
        theta = _ratio(mu[..., :J], den[..., None])
        return J, C, R, den, theta

    def values(self, mu: np.ndarray) -> np.ndarray:
        """``theta`` over :attr:`outputs` for cluster means ``mu`` (..., p) -> (..., K)."""
        mu = np.asarray(mu, dtype=float)
        J, C, R, den, theta = self._pieces(mu)
        if not self.has_selection:
            return theta
        cidx = [self._index[c] for c in self.candidates]
        select = _hard if self.selection == "hard" else (lambda x: _softmax(x, self.temperature))
        if R == 0:
            sc = theta[..., cidx]
            sel = np.sum(select(sc) * sc, axis=-1)
        else:
            # every split's scoring ratios S_r and held-out ratios T_r at once, (..., R, C); the
            # R split terms are then added in split order (the same additions as one split at a time)
            mb = mu[..., J + 1:].reshape(mu.shape[:-1] + (R, 2 * C + 2))
            S = _ratio(mb[..., :C], mb[..., C, None])
            T = _ratio(mb[..., C + 1 : 2 * C + 1], mb[..., 2 * C + 1, None])
            terms = np.sum(select(S) * T, axis=-1) / R  # (..., R)
            sel = 0.0
            if terms.ndim == 1:  # one mean: the same float64 additions on Python floats (no indexing)
                for t in terms.tolist():
                    sel = sel + t
            else:
                for r in range(R):
                    sel = sel + terms[..., r]
        return np.concatenate([theta, np.asarray(sel)[..., None]], axis=-1)

    def selection_weights(self, mu: np.ndarray) -> np.ndarray:
        """Weights (C,) the selection step puts on each candidate for cluster means ``mu``.

        With splits, the average over the R scoring subsets of ``q(S_r)`` (softmax at
        ``temperature`` for ``soft``, one-hot argmax for ``hard``), the selection the
        cross-fitted ``selected`` output uses; without splits, ``q`` of the in-sample
        candidate estimates. Empty without a selection step.
        """
        mu = np.asarray(mu, dtype=float)
        if not self.has_selection:
            return np.zeros(0)
        J, C, R, den, theta = self._pieces(mu)
        select = _hard if self.selection == "hard" else (lambda x: _softmax(x, self.temperature))
        if R == 0:
            return np.asarray(select(theta[[self._index[c] for c in self.candidates]]), float)
        mb = mu[J + 1:].reshape(R, 2 * C + 2)
        terms = select(_ratio(mb[:, :C], mb[:, C, None])) / R  # every split's q(S_r) / R, (R, C)
        out = np.zeros(C)
        for r in range(R):  # added in split order
            out += terms[r]
        return out

    def split_shares(self, S: np.ndarray, masks: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
        """Smallest split-denominator share of each rule's weight mass, (G,), for scores ``S`` (G, N).

        The same quantity as :meth:`min_split_share` of the tensor mean (share of
        ``sum_k m_k s_k`` in every scoring subset ``S_r`` and held-out subset ``E_r``),
        for many rules at once; ``counts`` are resampling multiplicities ``m_k`` (default 1).
        1.0 for every rule without splits. A rule with zero total mass gets 0.
        """
        S = np.atleast_2d(np.asarray(S, dtype=float))
        if not (self.has_selection and self.n_splits):
            return np.ones(S.shape[0])
        Sm = S if counts is None else S * counts
        tot = Sm.sum(axis=1)
        inside = Sm @ masks.T.astype(float)  # (G, R)
        share = np.minimum(inside, tot[:, None] - inside).min(axis=1)
        return np.where(tot > 0, share / np.where(tot > 0, tot, 1.0), 0.0)

    def gradient(self, mu: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Exact gradient of ``c^T theta(mu)`` with respect to ``mu``: (..., p)."""
        mu = np.asarray(mu, dtype=float)
        c = np.asarray(c, dtype=float)
        J, C, R, den, theta = self._pieces(mu)
        g = np.zeros(mu.shape)
        cj = c[:J]
        inv = _ratio(1.0, den)
        g[..., :J] = cj * inv[..., None]
        g[..., J] = -np.sum(cj * theta, axis=-1) * inv
        if not self.has_selection or c[J] == 0.0:
            return g
        csel = c[J]
        cidx = [self._index[k] for k in self.candidates]
        tau = self.temperature
        if R == 0:
            sc = theta[..., cidx]
            if self.selection == "hard":
                q = _hard(sc)
                dsel = q
            else:
                q = _softmax(sc, tau)
                y = np.sum(q * sc, axis=-1, keepdims=True)
                dsel = q + q * (sc - y) / tau
            for a, j in enumerate(cidx):
                g[..., j] += csel * dsel[..., a] * inv
                g[..., J] -= csel * dsel[..., a] * theta[..., j] * inv
            return g
        lam = 1.0 / R
        # the R split blocks of mu and g, (..., R, 2C + 2): [S-sums (C), S-den, E-sums (C), E-den]
        mb = mu[..., J + 1:].reshape(mu.shape[:-1] + (R, 2 * C + 2))
        gb = g[..., J + 1:].reshape(mb.shape)  # a view (the last axis splits): writes land in g
        assert np.may_share_memory(gb, g)
        bden = mb[..., C]
        eden = mb[..., 2 * C + 1]
        binv, einv = _ratio(1.0, bden), _ratio(1.0, eden)
        S = _ratio(mb[..., :C], bden[..., None])
        T = _ratio(mb[..., C + 1 : 2 * C + 1], eden[..., None])
        if self.selection == "hard":
            q = _hard(S)
            dS = np.zeros_like(S)
            yr = np.sum(q * T, axis=-1)
        else:
            q = _softmax(S, tau)
            y = np.sum(q * T, axis=-1, keepdims=True)
            dS = q * (T - y) / tau
            yr = y[..., 0]  # the same sum (keepdims does not change the reduction)
        gb[..., C + 1 : 2 * C + 1] += csel * lam * q * einv[..., None]
        gb[..., 2 * C + 1] -= csel * lam * yr * einv
        gb[..., :C] += csel * lam * dS * binv[..., None]
        gb[..., C] -= csel * lam * np.sum(dS * S, axis=-1) * binv
        return g

    def min_split_share(self, mu: np.ndarray) -> float:
        """Smallest share of the weight mass in any scoring or held-out subset.

        1.0 without splits; about 0.5 for balanced halves. SASST C.3 requires every
        scoring and held-out denominator to be stable (bounded away from zero).
        """
        if not (self.has_selection and self.n_splits):
            return 1.0
        J, C = len(self.systems), len(self.candidates)
        tot = mu[J]
        shares = []
        for r in range(self.n_splits):
            o = J + 1 + r * (2 * C + 2)
            shares += [mu[o + C], mu[o + 2 * C + 1]]
        return float(np.min(shares) / tot) if tot > 0 else 0.0

    def to_dict(self) -> dict:
        """JSON-safe description (everything needed to rebuild the plan)."""
        return {
            "systems": list(self.systems),
            "candidates": list(self.candidates),
            "selection": self.selection,
            "temperature": self.temperature,
            "n_splits": self.n_splits,
            "split_seed": self.split_seed,
        }
