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

This module fits the models on out-of-fold folds and searches the thresholds; the decision
table is :mod:`agentstudies.recovery._decisions`, the models :mod:`~agentstudies.recovery._models`,
the freeze and vault :mod:`~agentstudies.recovery._freeze`, the CATE alternative
:mod:`~agentstudies.recovery._cate`, the evaluation :mod:`~agentstudies.recovery._evaluation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.recovery._decisions import (
    CANDIDATE_DELAYS,
    _objective,
    _policy_outcome,
    _trajectories,
    _Traj,
    validate_decisions,
)
from agentstudies.recovery._freeze import FrozenRouter
from agentstudies.recovery._models import _fit_three, _scores

__all__ = ["RouterFit", "fit_router"]

_GRID = np.linspace(0.0, 1.0, 21)


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

