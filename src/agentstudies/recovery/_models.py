"""The three l2-regularised logistic models of CIR and the scores built from them.

``p_err(x)`` (the shown observation is wrong), ``p0(x)`` (success without further
recovery) and ``p1(x)`` (success after an immediate refresh), the outcome models fitted
separately on each arm (T-learner); rescue score ``s_R = (1 - p0) p1``, harm score
``s_H = p0 (1 - p1)``, utility ``u = s_R - lambda s_H``. Source: CIR paper (Xiao et al.,
arXiv:2610.00372), section "CIR: estimate before deciding whether to refresh".
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

__all__: list[str] = []


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
