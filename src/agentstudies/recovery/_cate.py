"""An alternative router score: an econml CATE learner of the refresh effect, selected
under the same objective and clean-harm limit as CIR (:func:`fit_cate_router`).

Source: CIR paper (Xiao et al., arXiv:2610.00372), the CATE comparison; econml's
``DRLearner`` and ``CausalForestDML``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from agentstudies.recovery._decisions import CANDIDATE_DELAYS, _objective, _policy_outcome, _trajectories, validate_decisions
from agentstudies.recovery._freeze import FrozenRouter
from agentstudies.recovery._models import _fit_three
from agentstudies.recovery._router import _grid, _oof_scores

__all__ = ["fit_cate_router"]


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

    When econml cannot fit (a cross-fitting fold with one outcome class, tiny cohorts),
    that fit falls back to the average paired effect for every ``x`` (a constant CATE).
    The fallback is never silent: it is warned (``UserWarning`` naming the fits) and
    recorded in ``selection_metrics``: ``cate_fits`` (cross-fitting folds + the final fit),
    ``cate_fallbacks`` (how many fell back), ``cate_fallback`` (True when the frozen
    router's own model is the constant) and ``cate_fallback_reason`` (econml's message).

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
    fits: list[object] = []
    for tr_idx, te_idx in GroupKFold(n_splits=min(n_folds, ids.size)).split(df, groups=groups):
        est = _cate_fit(df.iloc[tr_idx], features, learner, C, seed)
        fits.append(est)
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
    fits.append(est)
    fallback = _fallback_record(fits, learner)
    frozen = FrozenRouter.build("cate", features, full_models, best[1], 2.0, tuple(candidate_delays), clean, est)
    return frozen, dict(best[2], learner=learner, **best[1], **fallback)


def _fallback_record(fits: list, learner: str) -> dict:
    """How many CATE fits fell back to a constant effect, warned when any did."""
    import warnings

    fell = [f for f in fits if isinstance(f, _ConstantEffect)]
    rec = dict(cate_fits=len(fits), cate_fallbacks=len(fell), cate_fallback=isinstance(fits[-1], _ConstantEffect),
               cate_fallback_reason=fell[0].reason if fell else "")
    if fell:
        warnings.warn(
            f"fit_cate_router: econml's {learner!r} learner could not fit {len(fell)} of {len(fits)} CATE model(s) "
            f"(cross-fitting folds + the final fit; {fell[0].reason}); those use the average paired effect for every "
            f"task instead (a constant CATE){' -- including the frozen router' if rec['cate_fallback'] else ''}. "
            "Recorded in the selection metrics as cate_fallbacks; more tasks per cohort avoid it",
            UserWarning, stacklevel=3)
    return rec


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
        return _ConstantEffect(float(Y[T == 1].mean() - Y[T == 0].mean()) if Y.size else 0.0,
                               reason=" ".join(str(exc).split())[:200])
    return est


class _ConstantEffect:
    """Fallback CATE model (tiny data, one outcome class in a fold): the average paired
    effect for every x. Exposes ``effect``, ``coef_`` and ``intercept_`` like a linear
    final stage, so the frozen router's hash covers it."""

    def __init__(self, tau: float, reason: str = ""):
        self.tau = float(tau)
        self.reason = reason
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

