"""Frozen routers (models and thresholds hashed with SHA-256), the blanket baselines, and
the vault that seals the evaluation outcomes until frozen routers are shown.

Source: CIR paper (Xiao et al., arXiv:2610.00372): everything is frozen before the
evaluation pool's outcomes are read; the blanket baselines are ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.recovery._decisions import CANDIDATE_DELAYS, _first_trigger, validate_decisions
from agentstudies.recovery._models import _scores
from agentstudies.results import hash_object

__all__ = ["BLANKET_KINDS", "FrozenRouter", "OutcomeVault", "OutcomesSealedError", "blanket_routers"]


class OutcomesSealedError(RuntimeError):
    """Evaluation outcomes were requested before (or without) a valid frozen router."""



#: Kinds of the degeneracy-revealing baselines: ``always`` refreshes every
#: trajectory at one delay; ``random`` refreshes a keyed random share of trajectories at a
#: keyed random candidate delay.
BLANKET_KINDS: tuple[str, ...] = ("always", "random")


def _blanket_trigger(router: "FrozenRouter", table: pd.DataFrame) -> np.ndarray:
    """Rows where a blanket baseline refreshes: ``always`` at ``delay == thresholds["delay"]``;
    ``random``: trajectory (task, condition) refreshed when its keyed uniform is below
    ``thresholds["rate"]``, at the candidate delay its keyed draw picks."""
    from agentstudies.parallel import keyed_seed

    delay = table["delay"].to_numpy(dtype=int)
    if router.kind == "always":
        return delay == int(router.thresholds["delay"])
    rate, seed = float(router.thresholds["rate"]), int(router.thresholds["seed"])
    ok = np.zeros(len(table), dtype=bool)
    pick: dict[tuple[str, str], int | None] = {}
    for i, (t, c) in enumerate(zip(table["task_id"].astype(str), table["condition"].astype(str))):
        if (t, c) not in pick:
            rng = np.random.default_rng(keyed_seed(seed, "random-refresh", t, c))
            u, k = rng.random(), int(rng.integers(len(router.candidate_delays)))
            pick[(t, c)] = router.candidate_delays[k] if u < rate else None
        ok[i] = pick[(t, c)] == delay[i]
    return ok


def blanket_routers(features: Sequence[str], *, rate: float, seed: int = 0,
                    candidate_delays: Sequence[int] = CANDIDATE_DELAYS, clean: str = "clean") -> dict[str, "FrozenRouter"]:
    """Frozen blanket baselines: ``always-d<d>`` for each candidate delay and
    ``random-<rate>%`` refreshing a keyed random ``rate`` share of trajectories.

    ``rate`` is a fraction in [0, 1]; match it to the router's *evaluation* intervention
    rate (decisions on the evaluation features need no outcomes, so matching there reads
    nothing sealed). Source: ours (degeneracy-revealing baselines).

    Raises ``ValueError`` for a rate outside [0, 1].
    """
    rate = float(rate)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate={rate}: expected a fraction in [0, 1]")
    delays = tuple(int(d) for d in candidate_delays)
    out = {f"always-d{d}": FrozenRouter.build("always", features, {}, {"delay": float(d)}, 0.0, delays, clean)
           for d in delays}
    out[f"random-{100 * rate:.0f}%"] = FrozenRouter.build("random", features, {}, {"rate": rate, "seed": float(seed)},
                                                        0.0, delays, clean)
    return out


# ---------------------------------------------------------------- frozen router
@dataclass(frozen=True)
class FrozenRouter:
    """Models and thresholds fixed before evaluation, with their SHA-256.

    ``kind`` is ``"cir"``, ``"anomaly"`` (sequential), ``"rate-matched"``, ``"never"`` or
    ``"cate"`` (an econml score; its fitted learner is kept in ``cate_model`` and the
    hash covers its OOF-free parameters and thresholds). :meth:`decide` applies the rule
    to a decision table; :meth:`verify` recomputes the hash.
    """

    kind: str
    features: tuple[str, ...]
    models: Mapping[str, Any]
    thresholds: Mapping[str, float]
    lam: float
    candidate_delays: tuple[int, ...]
    clean: str
    sha256: str
    cate_model: Any = None

    @staticmethod
    def _digest(kind, features, models, thresholds, lam, delays, clean, cate_state=None) -> str:
        blob = json.dumps(dict(kind=kind, features=list(features), models=models, thresholds=thresholds, lam=lam,
                               delays=list(delays), clean=clean, cate=cate_state), sort_keys=True, default=str)
        return hash_object(blob)

    @classmethod
    def build(cls, kind, features, models, thresholds, lam, delays, clean, cate_model=None) -> "FrozenRouter":
        cate_state = _cate_state(cate_model, len(features))
        sha = cls._digest(kind, features, models, thresholds, lam, delays, clean, cate_state)
        return cls(kind, tuple(features), models, dict(thresholds), float(lam), tuple(delays), clean, sha, cate_model)

    def verify(self) -> str:
        """Recompute the SHA-256; raises ``OutcomesSealedError`` if anything changed."""
        sha = self._digest(self.kind, self.features, self.models, self.thresholds, self.lam, self.candidate_delays,
                           self.clean, _cate_state(self.cate_model, len(self.features)))
        if sha != self.sha256:
            raise OutcomesSealedError(f"frozen {self.kind!r} router was modified after the freeze "
                                      f"(sha256 {sha[:12]} != {self.sha256[:12]})")
        return sha

    def write(self, path: str | Path) -> Path:
        """Write the hash (and the thresholds) as JSON -- the freeze record."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        th = {k: (v if np.isfinite(v) else str(v)) for k, v in self.thresholds.items()}  # strict JSON: "inf"
        p.write_text(json.dumps(dict(kind=self.kind, sha256=self.sha256, thresholds=th), indent=1) + "\n")
        return p

    def scores(self, table: pd.DataFrame) -> pd.DataFrame:
        """Per-row scores (p_err, p0, p1, s_R, s_H, u, fail; ``cate`` for the econml router)."""
        X = table[list(self.features)].to_numpy(dtype=float)
        if self.kind == "never" or self.kind in BLANKET_KINDS:
            return pd.DataFrame(index=table.index)
        sc = _scores(self.models, X, self.lam)
        if self.kind == "cate":
            sc["cate"] = np.asarray(self.cate_model.effect(X)).ravel()
        return pd.DataFrame(sc, index=table.index)

    def trigger(self, table: pd.DataFrame) -> np.ndarray:
        """Bool per row: the rule's conditions hold at that decision point (before 'first')."""
        th = self.thresholds
        if self.kind == "never":
            return np.zeros(len(table), dtype=bool)
        if self.kind in BLANKET_KINDS:
            ok = _blanket_trigger(self, table)
            return ok & table["active"].to_numpy(dtype=bool) if "active" in table else ok
        sc = self.scores(table)
        ok = sc["p_err"].to_numpy() >= th["alpha"]
        if self.kind == "cir":
            ok &= (sc["fail"].to_numpy() >= th["beta"]) & (sc["u"].to_numpy() >= th["gamma"])
        elif self.kind == "cate":
            ok &= sc["cate"].to_numpy() >= th["gamma"]
        return ok & table["active"].to_numpy(dtype=bool) if "active" in table else ok

    def decide(self, table: pd.DataFrame) -> pd.DataFrame:
        """Decisions per trajectory from a decision table *without* outcomes: columns
        task_id, condition, intervene (bool), delay (Int64, NA if none). Checks delays in
        ``candidate_delays`` order; at most one refresh per trajectory."""
        df = validate_decisions(table, self.features, candidate_delays=self.candidate_delays, outcomes=False)
        D = len(self.candidate_delays)
        ok = self.trigger(df).reshape(-1, D)
        anyt, first = _first_trigger(ok)
        keys = df[["task_id", "condition"]].iloc[::D].reset_index(drop=True)
        delay = pd.array([self.candidate_delays[f] if a else pd.NA for a, f in zip(anyt, first)], dtype="Int64")
        return keys.assign(intervene=anyt, delay=delay)


def _cate_state(model, n_features: int | None = None) -> Any:
    """Deterministic fingerprint of a fitted CATE model: its effect at the origin and at
    each unit vector of feature space (exact for a linear final stage, a fingerprint for
    a forest), rounded to 10 decimals -- no object addresses, so equal fits hash equal."""
    if model is None:
        return None
    if n_features is None:
        n_features = int(getattr(model, "_n_features", 0) or 0)
    probe = np.vstack([np.zeros((1, n_features)), np.eye(n_features)])
    return np.round(np.asarray(model.effect(probe), dtype=float).ravel(), 10).tolist()


# ---------------------------------------------------------------- vault
class OutcomeVault:
    """Holds the evaluation pool's outcomes sealed until a frozen router is shown.

    ``vault.features`` is the decision table without ``y_without`` / ``y_with`` (safe to
    read at any time). ``vault.unseal(*frozen)`` verifies each router's hash, records
    the hashes, and only then returns the outcomes. Reading :attr:`outcomes` before
    :meth:`unseal`, or unsealing again with a router whose hash differs from those
    recorded (thresholds retuned after outcomes were read), raises
    :class:`OutcomesSealedError`.
    """

    def __init__(self, table: pd.DataFrame, features: Sequence[str]):
        self._table = table.copy()
        self._features = tuple(features)
        self._hashes: tuple[str, ...] | None = None
        self.reads: list[str] = []

    @property
    def features(self) -> pd.DataFrame:
        """Decision table with outcome columns removed."""
        return self._table.drop(columns=[c for c in ("y_without", "y_with") if c in self._table.columns])

    @property
    def outcomes(self) -> pd.DataFrame:
        """The outcomes; raises :class:`OutcomesSealedError` before :meth:`unseal`."""
        if self._hashes is None:
            raise OutcomesSealedError("evaluation outcomes are sealed: freeze the router(s) and call unseal(frozen) "
                                      "first (thresholds must be fixed before evaluation outcomes are read)")
        self.reads.append("outcomes")
        return self._table.copy()

    @property
    def sealed_hashes(self) -> tuple[str, ...] | None:
        """Hashes of the routers the vault was unsealed with (None while sealed)."""
        return self._hashes

    def unseal(self, *frozen: FrozenRouter) -> pd.DataFrame:
        """Verify the frozen routers and return the outcomes (see class docstring)."""
        if not frozen:
            raise OutcomesSealedError("unseal needs at least one FrozenRouter")
        for f in frozen:
            if not isinstance(f, FrozenRouter):
                raise OutcomesSealedError(f"unseal needs FrozenRouter objects; got {type(f).__name__} (freeze first)")
            f.verify()
        hashes = tuple(sorted(f.sha256 for f in frozen))
        if self._hashes is not None and not set(hashes) <= set(self._hashes):
            raise OutcomesSealedError("outcomes were already read with other frozen routers; a router frozen after "
                                      "reading them cannot be evaluated on this pool")
        if self._hashes is None:
            self._hashes = hashes
        return self.outcomes
