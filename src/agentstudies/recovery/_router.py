"""The Causal Intervention Router (CIR), its baselines, the freeze and the outcome vault.

CIR paper, section "CIR: estimate before deciding whether to refresh":

* three l2-regularised logistic models (``C = 0.1``) on pre-decision features ``x``:
  ``p_err(x)`` (the shown observation is wrong), ``p0(x)`` (success without further
  recovery) and ``p1(x)`` (success after an immediate refresh) -- the two outcome models
  are fitted separately on each arm (T-learner);
* rescue score ``s_R = (1 - p0) p1``, harm score ``s_H = p0 (1 - p1)``, utility
  ``u_lambda = s_R - lambda s_H`` (``lambda = 2``) -- ranking signals, not probabilities;
* decision rule: check ``d in (1, 2, 4)`` in order and refresh at the first ``d`` with
  ``p_err >= alpha``, ``1 - p0 >= beta`` and ``u_lambda >= gamma``; at most once per
  trajectory; otherwise never;
* ``alpha, beta, gamma`` maximise the gain over never-refresh on trajectories whose
  observation is wrong subject to the clean-harm limit ``epsilon = 0.02`` (fraction of
  all clean trajectories turned from success into failure), on five-fold out-of-fold
  (OOF) predictions grouped by task; then the models are refitted on all training tasks
  and everything is frozen (:class:`FrozenRouter`, SHA-256) before the evaluation pool's
  outcomes are read (:class:`OutcomeVault`).

Baselines (same OOF predictions, objective and limit): never refresh; *sequential
anomaly* (first ``d`` with ``p_err >= alpha``); *rate-matched anomaly* (the ``p_err``
threshold whose training intervention rate is closest to CIR's). An alternative score
from an econml CATE learner (:func:`fit_cate_router`) is compared under the same cap.

Decision table (one row per task x condition x candidate delay ``d``; plain pandas)::

    task_id, condition, delay (in candidate_delays), y_without (Y^0), y_with (Y^1 after
    a refresh at d), active (bool, optional: False when the task had ended before d --
    such a point is never intervened on and y_with must equal y_without), and the
    feature columns (computed from the transcript up to the decision point only).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.results import Result, ResultProvenance, hash_object, make_provenance, tidy_rows
from agentstudies.stats import paired_cluster_bootstrap, percentile_interval

__all__ = [
    "CANDIDATE_DELAYS",
    "FrozenRouter",
    "OutcomeVault",
    "OutcomesSealedError",
    "RouterEvaluation",
    "RouterFit",
    "evaluate_policies",
    "fit_router",
    "validate_decisions",
    "fit_cate_router",
    "BLANKET_KINDS",
    "blanket_routers",
    "rescue_sets",
]

CANDIDATE_DELAYS: tuple[int, ...] = (1, 2, 4)
_GRID = np.linspace(0.0, 1.0, 21)


class OutcomesSealedError(RuntimeError):
    """Evaluation outcomes were requested before (or without) a valid frozen router."""


# ---------------------------------------------------------------- validation
def validate_decisions(
    table: pd.DataFrame, features: Sequence[str], *, candidate_delays: Sequence[int] = CANDIDATE_DELAYS,
    outcomes: bool = True,
) -> pd.DataFrame:
    """Check a decision table (module docstring) and return it sorted by task, condition, delay.

    Raises ``KeyError`` for a missing column, ``ValueError`` for NaN/inf features, a delay
    outside ``candidate_delays``, a (task, condition) lacking a candidate delay, a
    duplicate (task, condition, delay), non-0/1 outcomes, a y_without that differs across
    the delays of one trajectory, or an inactive point whose y_with differs from y_without
    (each message names the row).
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"decision table must be a DataFrame; got {type(table).__name__}")
    need = ["task_id", "condition", "delay", *features] + (["y_without", "y_with"] if outcomes else [])
    miss = [c for c in need if c not in table.columns]
    if miss:
        raise KeyError(f"decision table lacks column(s) {miss}")
    if not len(features):
        raise ValueError("no feature columns given")
    df = table.copy()
    if "active" not in df.columns:
        df["active"] = True
    df["active"] = df["active"].astype(bool)
    df["task_id"] = df["task_id"].astype(str)
    df["condition"] = df["condition"].astype(str)
    X = df[list(features)].to_numpy(dtype=float)
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"decision table row {df.index[i]!r} (task_id={df['task_id'].iloc[i]!r}): feature "
                         f"{features[j]!r} is {X[i, j]!r}; features must be finite")
    off = ~df["delay"].isin(list(candidate_delays))
    if off.any():
        i = off[off].index[0]
        raise ValueError(f"decision table row {i!r}: delay={df.loc[i, 'delay']!r} not in candidate delays "
                         f"{tuple(candidate_delays)}")
    df["delay"] = df["delay"].astype(int)
    dup = df.duplicated(["task_id", "condition", "delay"])
    if dup.any():
        i = dup[dup].index[0]
        raise ValueError(f"decision table row {i!r}: duplicate decision point (task_id={df.loc[i, 'task_id']!r}, "
                         f"condition={df.loc[i, 'condition']!r}, delay={int(df.loc[i, 'delay'])})")
    n_d = df.groupby(["task_id", "condition"])["delay"].transform("size")
    if (n_d != len(candidate_delays)).any():
        i = n_d[n_d != len(candidate_delays)].index[0]
        raise ValueError(f"decision table: trajectory (task_id={df.loc[i, 'task_id']!r}, condition="
                         f"{df.loc[i, 'condition']!r}) lacks some of the candidate delays {tuple(candidate_delays)}")
    if outcomes:
        for col in ("y_without", "y_with"):
            v = pd.to_numeric(df[col], errors="coerce")
            b = ~v.isin([0, 1])
            if b.any():
                i = b[b].index[0]
                raise ValueError(f"decision table row {i!r} (task_id={df.loc[i, 'task_id']!r}): {col}="
                                 f"{df.loc[i, col]!r}; expected 0/1")
            df[col] = v.astype(int)
        sp = df.groupby(["task_id", "condition"])["y_without"].transform("nunique")
        if (sp > 1).any():
            i = sp[sp > 1].index[0]
            raise ValueError(f"decision table row {i!r}: y_without differs across the delays of trajectory "
                             f"(task_id={df.loc[i, 'task_id']!r}, condition={df.loc[i, 'condition']!r})")
        ia = (~df["active"]) & (df["y_with"] != df["y_without"])
        if ia.any():
            i = ia[ia].index[0]
            raise ValueError(f"decision table row {i!r}: inactive (ended) point with y_with != y_without; an ended "
                             f"task carries its outcome")
    return df.sort_values(["task_id", "condition", "delay"], kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------- models
def _logit_fit(X: np.ndarray, y: np.ndarray, C: float) -> dict[str, Any]:
    """Standardise, then l2 logistic regression (scikit-learn, lbfgs). Plain arrays out."""
    from sklearn.linear_model import LogisticRegression

    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Z = (X - mu) / sd
    if np.unique(y).size < 2:  # degenerate arm: a constant probability
        p = float(np.clip(y.mean() if y.size else 0.5, 1e-6, 1 - 1e-6))
        return dict(mean=mu.tolist(), scale=sd.tolist(), coef=[0.0] * X.shape[1], intercept=float(np.log(p / (1 - p))))
    m = LogisticRegression(C=C, solver="lbfgs", max_iter=2000)  # default penalty: l2
    m.fit(Z, y)
    return dict(mean=mu.tolist(), scale=sd.tolist(), coef=m.coef_[0].tolist(), intercept=float(m.intercept_[0]))


def _logit_predict(model: Mapping[str, Any], X: np.ndarray) -> np.ndarray:
    z = (X - np.asarray(model["mean"])) / np.asarray(model["scale"])
    eta = z @ np.asarray(model["coef"]) + model["intercept"]
    return 1.0 / (1.0 + np.exp(-eta))


def _fit_three(df: pd.DataFrame, features: Sequence[str], clean: str, C: float) -> dict[str, dict]:
    X = df[list(features)].to_numpy(dtype=float)
    err = (df["condition"] != clean).to_numpy().astype(int)
    act = df["active"].to_numpy()
    return {
        "err": _logit_fit(X, err, C),
        "p0": _logit_fit(X[act], df["y_without"].to_numpy()[act], C),
        "p1": _logit_fit(X[act], df["y_with"].to_numpy()[act], C),
    }


def _scores(models: Mapping[str, dict], X: np.ndarray, lam: float) -> dict[str, np.ndarray]:
    perr = _logit_predict(models["err"], X)
    p0 = _logit_predict(models["p0"], X)
    p1 = _logit_predict(models["p1"], X)
    sR = (1 - p0) * p1
    sH = p0 * (1 - p1)
    return dict(p_err=perr, p0=p0, p1=p1, s_R=sR, s_H=sH, u=sR - lam * sH, fail=1 - p0)


# ---------------------------------------------------------------- policy simulation
@dataclass
class _Traj:
    keys: pd.DataFrame  # (J, ...) task_id, condition
    clean: np.ndarray   # (J,) bool
    active: np.ndarray  # (J, D)
    y0: np.ndarray      # (J,)
    y1: np.ndarray | None  # (J, D)


def _trajectories(df: pd.DataFrame, D: int, clean: str, outcomes: bool = True) -> _Traj:
    keys = df[["task_id", "condition"]].iloc[::D].reset_index(drop=True)
    J = len(keys)
    return _Traj(
        keys=keys,
        clean=(keys["condition"] == clean).to_numpy(),
        active=df["active"].to_numpy().reshape(J, D),
        y0=df["y_without"].to_numpy().reshape(J, D)[:, 0] if outcomes else None,
        y1=df["y_with"].to_numpy().reshape(J, D) if outcomes else None,
    )


def _first_trigger(ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(J, D[, G]) bool -> (any, first index) along axis 1."""
    return ok.any(axis=1), ok.argmax(axis=1)


def _policy_outcome(tr: _Traj, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Outcome of the first-trigger policy: (y_pol (J[,G]), intervened (J[,G]), delay index)."""
    ok = ok & (tr.active if ok.ndim == 2 else tr.active[:, :, None])
    anyt, first = _first_trigger(ok)
    if ok.ndim == 2:
        y1f = np.take_along_axis(tr.y1, first[:, None], axis=1)[:, 0]
        return np.where(anyt, y1f, tr.y0), anyt, first
    y1f = np.take_along_axis(tr.y1[:, :, None].repeat(ok.shape[2], 2), first[:, None, :], axis=1)[:, 0, :]
    return np.where(anyt, y1f, tr.y0[:, None]), anyt, first


def _objective(tr: _Traj, ypol: np.ndarray, inter: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gain on wrong-observation trajectories, clean-harm rate, intervention rate)."""
    y0 = tr.y0 if ypol.ndim == 1 else tr.y0[:, None]
    d = ypol - y0
    wrong = ~tr.clean
    gain = d[wrong].mean(axis=0) if wrong.any() else np.zeros(d.shape[1:])
    harm = ((y0 == 1) & (ypol == 0))[tr.clean].mean(axis=0) if tr.clean.any() else np.zeros(d.shape[1:])
    return gain, harm, inter.mean(axis=0)


def _grid(values: np.ndarray, extra: Sequence[float] = ()) -> np.ndarray:
    q = np.quantile(values, _GRID) if values.size else np.array([])
    return np.unique(np.concatenate([q, np.asarray(extra, float), [np.inf]]))


def _select_cir(tr: _Traj, sc: Mapping[str, np.ndarray], eps: float) -> tuple[dict, dict]:
    perr, fail, u = sc["p_err"], sc["fail"], sc["u"]
    A, Bt, G = _grid(perr), _grid(fail), _grid(u, [0.0])
    best = None
    for a in A:
        ma = perr >= a
        for b in Bt:
            base = ma & (fail >= b)
            ok = base[:, :, None] & (u[:, :, None] >= G[None, None, :])
            ypol, inter, _ = _policy_outcome(tr, ok)
            gain, harm, rate = _objective(tr, ypol, inter)
            for k in np.flatnonzero(harm <= eps + 1e-12):
                key = (round(float(gain[k]), 12), -round(float(rate[k]), 12), float(a), float(b), float(G[k]))
                if best is None or key > best[0]:
                    best = (key, dict(alpha=float(a), beta=float(b), gamma=float(G[k])),
                            dict(gain=float(gain[k]), clean_harm=float(harm[k]), rate=float(rate[k])))
    return best[1], best[2]


def _select_anomaly(tr: _Traj, perr: np.ndarray, eps: float, target_rate: float | None = None) -> tuple[dict, dict]:
    A = np.unique(np.concatenate([np.unique(perr), [np.inf]]))
    ok = perr[:, :, None] >= A[None, None, :]
    ypol, inter, _ = _policy_outcome(tr, ok)
    gain, harm, rate = _objective(tr, ypol, inter)
    feas = np.flatnonzero(harm <= eps + 1e-12)
    if target_rate is None:
        keys = [(round(float(gain[k]), 12), -round(float(rate[k]), 12), float(A[k])) for k in feas]
    else:
        keys = [(-round(abs(float(rate[k]) - target_rate), 12), round(float(gain[k]), 12), float(A[k])) for k in feas]
    k = feas[max(range(len(keys)), key=lambda i: keys[i])]
    return dict(alpha=float(A[k])), dict(gain=float(gain[k]), clean_harm=float(harm[k]), rate=float(rate[k]))


#: Kinds of the degeneracy-revealing baselines (issue 25 item 4): ``always`` refreshes every
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
    nothing sealed). Source: issue 25 item 4 (degeneracy-revealing baselines).

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


def rescue_sets(evaluation: "RouterEvaluation", reference: str = "cir") -> pd.DataFrame:
    """Per policy: rescued / harmed trajectories, rescues shared with ``reference``, and
    whether its rescued set (and its harmed set) equals the reference's exactly.

    Columns: policy, rescued, harmed, shared_rescues, same_rescued_set, same_harmed_set,
    rescue_tasks (distinct tasks among the rescues). Raises ``KeyError`` if ``reference``
    was not evaluated.
    """
    e = evaluation.episodes
    if reference not in set(e["policy"]):
        raise KeyError(f"policy {reference!r} not evaluated; policies: {sorted(set(e['policy']))}")

    def sets(g):
        key = list(zip(g["task_id"], g["condition"]))
        res = {k for k, a, b in zip(key, g["y_never"], g["y_policy"]) if a == 0 and b == 1}
        hrm = {k for k, a, b in zip(key, g["y_never"], g["y_policy"]) if a == 1 and b == 0}
        return res, hrm

    ref_r, ref_h = sets(e[e["policy"] == reference])
    rows = []
    for pol, g in e.groupby("policy", sort=False):
        r, h = sets(g)
        rows.append(dict(policy=pol, rescued=len(r), harmed=len(h), shared_rescues=len(r & ref_r),
                         same_rescued_set=r == ref_r, same_harmed_set=h == ref_h,
                         rescue_tasks=len({t for t, _ in r})))
    return pd.DataFrame(rows)


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


# ---------------------------------------------------------------- fitting
@dataclass(frozen=True)
class RouterFit:
    """Result of :func:`fit_router`: frozen routers by name plus the OOF selection table."""

    routers: Mapping[str, FrozenRouter]
    oof: pd.DataFrame          # OOF scores per decision row
    selection: pd.DataFrame    # per router: thresholds, OOF gain, clean harm, rate
    params: Mapping[str, Any]


def _oof_scores(df: pd.DataFrame, features, clean, C, lam, n_folds, seed) -> pd.DataFrame:
    from sklearn.model_selection import GroupKFold

    tasks = df["task_id"].to_numpy()
    n_groups = np.unique(tasks).size
    k = min(n_folds, n_groups)
    if k < 2:
        raise ValueError(f"out-of-fold thresholds need at least 2 training tasks; got {n_groups}")
    # deterministic task -> fold assignment from the seed (GroupKFold on shuffled ids)
    ids = np.unique(tasks)
    rng = np.random.default_rng(seed)
    perm = {t: i for i, t in enumerate(rng.permutation(ids))}
    groups = np.array([perm[t] for t in tasks])
    out = pd.DataFrame(index=df.index, columns=["p_err", "p0", "p1", "s_R", "s_H", "u", "fail", "fold"], dtype=float)
    for f, (tr, te) in enumerate(GroupKFold(n_splits=k).split(df, groups=groups)):
        m = _fit_three(df.iloc[tr], features, clean, C)
        sc = _scores(m, df.iloc[te][list(features)].to_numpy(dtype=float), lam)
        for name, v in sc.items():
            out.iloc[te, out.columns.get_loc(name)] = v
        out.iloc[te, out.columns.get_loc("fold")] = f
    return out


def fit_router(
    train: pd.DataFrame,
    features: Sequence[str],
    *,
    C: float = 0.1,
    lam: float = 2.0,
    epsilon: float = 0.02,
    n_folds: int = 5,
    candidate_delays: Sequence[int] = CANDIDATE_DELAYS,
    clean: str = "clean",
    seed: int = 0,
) -> RouterFit:
    """Fit CIR and its baselines on a training decision table, select thresholds on OOF
    predictions under the clean-harm limit, refit on all tasks, freeze and hash.

    Parameters
    ----------
    train : decision table (module docstring) of the training tasks.
    features : feature columns (pre-decision only).
    C : inverse l2 strength of the three logistic models (paper 0.1).
    lam : harm weight lambda of ``u = s_R - lambda s_H`` (paper 2).
    epsilon : clean-harm limit (paper 0.02).
    n_folds : OOF folds, grouped by task (paper 5).
    candidate_delays : decision times in checking order (paper 1, 2, 4).
    clean : the condition whose observation is correct.
    seed : fold assignment seed.

    Returns
    -------
    :class:`RouterFit` with frozen routers ``never``, ``cir``, ``anomaly`` (sequential),
    ``rate-matched``.

    Raises ``KeyError``/``ValueError`` for a bad table (:func:`validate_decisions`) or
    fewer than two training tasks.
    """
    df = validate_decisions(train, features, candidate_delays=candidate_delays)
    D = len(candidate_delays)
    oof = _oof_scores(df, features, clean, C, lam, n_folds, seed)
    tr = _trajectories(df, D, clean)
    sc = {k: oof[k].to_numpy(dtype=float).reshape(-1, D) for k in ("p_err", "fail", "u")}
    th_cir, m_cir = _select_cir(tr, sc, epsilon)
    th_an, m_an = _select_anomaly(tr, sc["p_err"], epsilon)
    th_rm, m_rm = _select_anomaly(tr, sc["p_err"], epsilon, target_rate=m_cir["rate"])
    full = _fit_three(df, features, clean, C)
    build = lambda kind, th: FrozenRouter.build(kind, features, full, th, lam, tuple(candidate_delays), clean)  # noqa: E731
    routers = {
        "never": FrozenRouter.build("never", features, {}, {}, lam, tuple(candidate_delays), clean),
        "cir": build("cir", th_cir),
        "anomaly": build("anomaly", th_an),
        "rate-matched": build("rate-matched", th_rm),
    }
    sel = pd.DataFrame([
        dict(router="never", alpha=np.nan, beta=np.nan, gamma=np.nan, oof_gain=0.0, oof_clean_harm=0.0, oof_rate=0.0),
        dict(router="cir", **th_cir, oof_gain=m_cir["gain"], oof_clean_harm=m_cir["clean_harm"], oof_rate=m_cir["rate"]),
        dict(router="anomaly", alpha=th_an["alpha"], beta=np.nan, gamma=np.nan, oof_gain=m_an["gain"],
             oof_clean_harm=m_an["clean_harm"], oof_rate=m_an["rate"]),
        dict(router="rate-matched", alpha=th_rm["alpha"], beta=np.nan, gamma=np.nan, oof_gain=m_rm["gain"],
             oof_clean_harm=m_rm["clean_harm"], oof_rate=m_rm["rate"]),
    ])
    oof = pd.concat([df[["task_id", "condition", "delay"]], oof], axis=1)
    params = dict(C=C, lam=lam, epsilon=epsilon, n_folds=n_folds, candidate_delays=list(candidate_delays),
                  clean=clean, seed=seed, features=list(features), n_train_tasks=int(df["task_id"].nunique()))
    return RouterFit(routers, oof, sel, params)


def fit_cate_router(
    train: pd.DataFrame,
    features: Sequence[str],
    *,
    learner: str = "dr",
    C: float = 0.1,
    epsilon: float = 0.02,
    n_folds: int = 5,
    candidate_delays: Sequence[int] = CANDIDATE_DELAYS,
    clean: str = "clean",
    seed: int = 0,
    base: FrozenRouter | None = None,
) -> tuple[FrozenRouter, dict]:
    """Alternative router score: an econml CATE learner of the refresh effect.

    The paired decision rows are stacked into a randomised experiment (each point once
    with ``T = 0, Y = y_without`` and once with ``T = 1, Y = y_with``; propensity 1/2),
    and ``econml.dr.DRLearner`` (``learner="dr"``, linear final stage) or
    ``econml.dml.CausalForestDML`` (``learner="forest"``) estimates ``tau(x) = E[Y^1 -
    Y^0 | x]``. Rule: the first ``d`` with ``p_err >= alpha`` (same error model as CIR)
    and ``tau(x) >= gamma``; ``alpha, gamma`` chosen on five-fold OOF predictions with
    the same objective and clean-harm limit, then refitted and frozen.

    Returns ``(frozen_router, selection_metrics)``.
    """
    df = validate_decisions(train, features, candidate_delays=candidate_delays)
    D = len(candidate_delays)
    oof = _oof_scores(df, features, clean, C, 2.0, n_folds, seed)
    tau = np.zeros(len(df))
    ids = np.unique(df["task_id"])
    rng = np.random.default_rng(seed)
    perm = {t: i for i, t in enumerate(rng.permutation(ids))}
    from sklearn.model_selection import GroupKFold

    groups = np.array([perm[t] for t in df["task_id"]])
    for tr_idx, te_idx in GroupKFold(n_splits=min(n_folds, ids.size)).split(df, groups=groups):
        est = _cate_fit(df.iloc[tr_idx], features, learner, C, seed)
        tau[te_idx] = np.asarray(est.effect(df.iloc[te_idx][list(features)].to_numpy(dtype=float))).ravel()
    tr = _trajectories(df, D, clean)
    perr = oof["p_err"].to_numpy(dtype=float).reshape(-1, D)
    t2 = tau.reshape(-1, D)
    best = None
    for a in _grid(perr):
        ok = (perr >= a)[:, :, None] & (t2[:, :, None] >= _grid(t2, [0.0])[None, None, :])
        ypol, inter, _ = _policy_outcome(tr, ok)
        gain, harm, rate = _objective(tr, ypol, inter)
        G = _grid(t2, [0.0])
        for k in np.flatnonzero(harm <= epsilon + 1e-12):
            key = (round(float(gain[k]), 12), -round(float(rate[k]), 12), float(a), float(G[k]))
            if best is None or key > best[0]:
                best = (key, dict(alpha=float(a), gamma=float(G[k])),
                        dict(gain=float(gain[k]), clean_harm=float(harm[k]), rate=float(rate[k])))
    full_models = base.models if base is not None else _fit_three(df, features, clean, C)
    est = _cate_fit(df, features, learner, C, seed)
    frozen = FrozenRouter.build("cate", features, full_models, best[1], 2.0, tuple(candidate_delays), clean, est)
    return frozen, dict(best[2], learner=learner, **best[1])


def _cate_fit(df: pd.DataFrame, features, learner: str, C: float, seed: int):
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression

    act = df["active"].to_numpy()
    X = df[list(features)].to_numpy(dtype=float)[act]
    mu, sd = X.mean(0), X.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    Xs = np.vstack([X, X])
    Y = np.concatenate([df["y_without"].to_numpy()[act], df["y_with"].to_numpy()[act]]).astype(float)
    T = np.concatenate([np.zeros(X.shape[0]), np.ones(X.shape[0])]).astype(int)
    if learner == "dr":
        from econml.dr import DRLearner

        est = DRLearner(model_propensity=DummyClassifier(strategy="prior"),
                        model_regression=_Std(LogisticRegression(C=C, max_iter=2000), mu, sd),
                        discrete_outcome=True, cv=2, random_state=seed)
    elif learner == "forest":
        from econml.dml import CausalForestDML

        est = CausalForestDML(model_y=_Std(LogisticRegression(C=C, max_iter=2000), mu, sd),
                              model_t=DummyClassifier(strategy="prior"), discrete_outcome=True,
                              discrete_treatment=True, n_estimators=200, min_samples_leaf=10, cv=2,
                              random_state=seed)
    else:
        raise ValueError(f"learner={learner!r}; expected 'dr' or 'forest'")
    import warnings

    try:
        with warnings.catch_warnings():
            # inference (standard errors) of the final stage is not used: only effect() is
            warnings.simplefilter("ignore", UserWarning)
            est.fit(Y, T, X=Xs)
    except ValueError as exc:  # a cross-fitting fold with one outcome class (tiny cohorts)
        if "class" not in str(exc):
            raise
        return _ConstantEffect(float(Y[T == 1].mean() - Y[T == 0].mean()) if Y.size else 0.0)
    return est


class _ConstantEffect:
    """Fallback CATE model (tiny data, one outcome class in a fold): the average paired
    effect for every x. Exposes ``effect``, ``coef_`` and ``intercept_`` like a linear
    final stage, so the frozen router's hash covers it."""

    def __init__(self, tau: float):
        self.tau = float(tau)
        self.coef_ = np.zeros(1)
        self.intercept_ = np.array([self.tau])

    def effect(self, X):
        return np.full(np.asarray(X).shape[0], self.tau)


class _Std:
    """A classifier behind a fixed standardisation (econml clones it; keeps mu/sd)."""

    def __init__(self, clf, mu, sd):
        self.clf, self.mu, self.sd = clf, np.asarray(mu), np.asarray(sd)

    def get_params(self, deep=True):
        return dict(clf=self.clf, mu=self.mu, sd=self.sd)

    def set_params(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)
        return self

    def _z(self, X):
        X = np.asarray(X, dtype=float)
        k = self.mu.size
        return np.hstack([(X[:, :k] - self.mu) / self.sd, X[:, k:]])

    def fit(self, X, y, **kw):
        from sklearn.base import clone

        self.clf_ = clone(self.clf).fit(self._z(X), np.asarray(y).ravel())
        self.classes_ = self.clf_.classes_
        return self

    def predict_proba(self, X):
        return self.clf_.predict_proba(self._z(X))

    def predict(self, X):
        return self.clf_.predict(self._z(X))


# ---------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class RouterEvaluation(Result):
    """Success of each frozen policy on the evaluation pool vs never-refresh.

    ``table`` (one row per policy x condition, condition ``"all"`` pooled): policy,
    condition, n (trajectories), success_never, success_policy (percent), delta (points)
    with task-level cluster-bootstrap interval, rescue, harm, interventions,
    intervention_rate (percent), and for ``all`` the task-level sign-flip p-value.
    ``episodes``: per trajectory outcomes and decisions. ``clean_harm``: per policy, the
    clean-condition harm rate (percent of clean trajectories turned from success into
    failure) with its bootstrap interval.
    """

    table: pd.DataFrame
    episodes: pd.DataFrame
    clean_harm: pd.DataFrame
    hashes: Mapping[str, str]
    params: Mapping[str, Any] = field(default_factory=dict)
    provenance: ResultProvenance = field(default_factory=ResultProvenance)
    title: str = "CIR evaluation (frozen routers on the evaluation pool)"

    def _tidy(self) -> pd.DataFrame:
        level = self.params.get("level", np.nan)
        rows = []
        for r in self.table.itertuples(index=False):
            base = dict(policy=r.policy, condition=r.condition, n=r.n)
            rows += [
                dict(base, estimand="success_never", estimate=r.success_never),
                dict(base, estimand="success_policy", estimate=r.success_policy),
                dict(base, estimand="delta", estimate=r.delta, ci_low=r.ci_low, ci_high=r.ci_high, side="two-sided",
                     level=level),
                dict(base, estimand="rescue", estimate=r.rescue),
                dict(base, estimand="harm", estimate=r.harm),
                dict(base, estimand="intervention_rate", estimate=r.intervention_rate),
            ]
            if r.condition == "all":
                rows.append(dict(base, estimand="sign_flip_p", estimate=r.sign_flip_p))
        for r in self.clean_harm.itertuples(index=False):
            rows.append(dict(policy=r.policy, condition=self.params.get("clean", "clean"), n=r.n,
                             estimand="clean_harm_rate", estimate=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high,
                             side="two-sided", level=level))
        return tidy_rows(rows, strata=("policy", "condition"))


def evaluate_policies(
    routers: Mapping[str, FrozenRouter],
    vault: OutcomeVault,
    *,
    level: float = 0.95,
    n_draws: int = 2000,
    seed: int = 0,
    sign_flip_draws: int = 100_000,
) -> RouterEvaluation:
    """Apply frozen routers to the evaluation pool, then unseal outcomes and compare.

    Decisions are made on ``vault.features`` (no outcomes); only then does
    :meth:`OutcomeVault.unseal` verify every router's SHA-256 and release outcomes.
    Delta intervals: task-level cluster bootstrap (a task's conditions resampled together);
    ``sign_flip_p``: :func:`sign_flip_test` on per-task sums of ``Y^pi - Y^never``.

    Raises :class:`OutcomesSealedError` if a router is not frozen / was modified.
    """
    if not routers:
        raise ValueError("no routers to evaluate")
    feats = vault.features
    decisions = {}
    for name, r in routers.items():
        if not isinstance(r, FrozenRouter):
            raise OutcomesSealedError(f"router {name!r} is not frozen ({type(r).__name__}); freeze before evaluating")
        r.verify()
        decisions[name] = r.decide(feats)
    any_router = next(iter(routers.values()))
    clean = any_router.clean
    delays = any_router.candidate_delays
    out = validate_decisions(vault.unseal(*routers.values()), any_router.features, candidate_delays=delays)
    D = len(delays)
    tr = _trajectories(out, D, clean)
    keys = tr.keys
    conds = list(dict.fromkeys(keys["condition"]))
    tasks = sorted(keys["task_id"].unique())
    ti = keys["task_id"].map({t: i for i, t in enumerate(tasks)}).to_numpy()
    rows, eps_rows, harm_rows = [], [], []
    for name, dec in decisions.items():
        ypol, e = _policy_outcomes(name, dec, keys, tr, delays)
        eps_rows.append(e)
        inter = e["intervene"].to_numpy(dtype=bool)
        for cond in conds + ["all"]:
            m = np.ones(len(keys), bool) if cond == "all" else (keys["condition"] == cond).to_numpy()
            rows.append(_condition_row(name, cond, m, ti, len(tasks), ypol, tr.y0, inter,
                                       level=level, n_draws=n_draws, seed=seed, sign_flip_draws=sign_flip_draws))
            if cond == clean:
                harm_rows.append(_clean_harm_row(name, m, ti, len(tasks), ypol, tr.y0,
                                                 level=level, n_draws=n_draws, seed=seed))
    table = pd.DataFrame(rows)
    return RouterEvaluation(
        table=table, episodes=pd.concat(eps_rows, ignore_index=True),
        clean_harm=pd.DataFrame(harm_rows, columns=["policy", "n", "harms", "estimate", "ci_low", "ci_high", "cp_low", "cp_high"]),
        hashes={k: r.sha256 for k, r in routers.items()},
        params=dict(level=level, n_draws=n_draws, seed=seed, clean=clean, candidate_delays=list(delays)),
        provenance=make_provenance(seed=seed, evaluation=out),
    )


def _policy_outcomes(name, dec, keys, tr, delays):
    """Y^pi per (task, condition): the with-recovery branch at the chosen delay where the
    router intervenes, the no-recovery branch elsewhere; and the episode rows."""
    dec = dec.set_index(["task_id", "condition"]).loc[list(map(tuple, keys.to_numpy()))].reset_index()
    inter = dec["intervene"].to_numpy(dtype=bool)
    di = np.array([delays.index(int(d)) if i else 0 for d, i in zip(dec["delay"].fillna(delays[0]), inter)])
    ypol = np.where(inter, tr.y1[np.arange(len(keys)), di], tr.y0)
    e = keys.assign(policy=name, intervene=inter, delay=dec["delay"], y_never=tr.y0, y_policy=ypol)
    return ypol, e


def _task_sums(values, m, ti, n_tasks):
    """Per-task (sum of ``values``, count) over the rows in mask ``m``: shape (n_tasks, 2)."""
    sums = np.zeros((n_tasks, 2))
    np.add.at(sums[:, 0], ti[m], values[m].astype(float))
    np.add.at(sums[:, 1], ti[m], 1.0)
    return sums


def _condition_row(name, cond, m, ti, n_tasks, ypol, y0, inter, *, level, n_draws, seed, sign_flip_draws):
    """One row of the evaluation table: success without / with the policy, Delta with its
    task-cluster bootstrap interval, rescues, harms, interventions (and, for ``all``,
    the sign-flip p-value on per-task sums)."""
    from agentstudies.parallel import keyed_seed
    from agentstudies.recovery._signflip import sign_flip_test

    d = ypol - y0
    resc = ((y0 == 0) & (ypol == 1))[m]
    hrm = ((y0 == 1) & (ypol == 0))[m]
    n = int(m.sum())
    sums = _task_sums(d, m, ti, n_tasks)
    rng = np.random.default_rng(keyed_seed(seed, "router-eval", name, cond))
    reps = paired_cluster_bootstrap(sums, lambda t: 100 * t[:, 0] / t[:, 1], n_draws=n_draws, rng=rng)
    lo, hi = percentile_interval(reps, level)
    row = dict(policy=name, condition=cond, n=n, success_never=100 * y0[m].mean(),
               success_policy=100 * ypol[m].mean(), delta=100 * d[m].mean(), ci_low=float(lo), ci_high=float(hi),
               rescue=int(resc.sum()), harm=int(hrm.sum()), interventions=int(inter[m].sum()),
               intervention_rate=100 * inter[m].mean(), sign_flip_p=np.nan)
    if cond == "all":
        row["sign_flip_p"] = sign_flip_test(sums[:, 0], n_draws=sign_flip_draws, seed=seed).p_value
    return row


def _clean_harm_row(name, m, ti, n_tasks, ypol, y0, *, level, n_draws, seed):
    """Clean-condition harm rate with its task-cluster bootstrap interval and, because a
    zero count has a degenerate bootstrap interval, the exact Clopper-Pearson bounds."""
    from scipy.stats import beta as _beta

    from agentstudies.parallel import keyed_seed

    harm = (y0 == 1) & (ypol == 0)
    n = int(m.sum())
    hs = _task_sums(harm, m, ti, n_tasks)
    rng = np.random.default_rng(keyed_seed(seed, "router-clean-harm", name))
    hr = paired_cluster_bootstrap(hs, lambda t: 100 * t[:, 0] / t[:, 1], n_draws=n_draws, rng=rng)
    hl, hh = percentile_interval(hr, level)
    k = int(harm[m].sum())
    cp_hi = 100 * float(_beta.ppf(1 - (1 - level) / 2, k + 1, n - k)) if k < n else 100.0
    cp_lo = 100 * float(_beta.ppf((1 - level) / 2, k, n - k + 1)) if k > 0 else 0.0
    return dict(policy=name, n=n, harms=k, estimate=100 * harm[m].mean(), ci_low=float(hl),
                ci_high=float(hh), cp_low=cp_lo, cp_high=cp_hi)
