"""The Causal Intervention Router on the ALFWorld recovery study: fit, freeze, evaluate.

:func:`router_pipeline` seals the evaluation cohort's outcomes, fits CIR, its anomaly
baselines and an econml CATE router on the primary cohort, freezes them, adds the
degeneracy-revealing blanket baselines and evaluates; it returns a :class:`RouterPipeline`.
:func:`horizon_leak` measures how well the horizon features separate factual success;
:func:`training_outcomes` counts what a refresh did to the training trajectories (the
rescues a threshold rule could gain from).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.studies.alfworld.recovery.run import RecoveryStudy

__all__ = ["HORIZON_FEATURES", "RouterPipeline", "horizon_leak", "router_pipeline", "training_outcomes"]

#: Router features computed from the decision point's step count: the intervention point is
#: ``t0 = ceil(0.25 L)`` with ``L`` the *factual* run's length, so at a decision point they
#: encode the post-decision horizon (how long the factual run went on, i.e. mostly whether
#: it failed at the cap). :func:`router_pipeline` drops them unless told to keep them;
#: :func:`horizon_leak` measures how well they separate factual success from failure.
HORIZON_FEATURES: tuple[str, ...] = ("steps_frac", "turns_left_frac")



def horizon_leak(study: RecoveryStudy, features: Sequence[str] | None = None, *, cohort: str = "primary",
                 condition: str = "clean") -> pd.DataFrame:
    """How well each router feature separates factual success from failure (a leak of
    the post-decision horizon when it is near perfect).

    Per router delay and feature, on ``cohort``'s ``condition`` decision rows (one per
    task): ``auc`` = P(feature of a factual success > that of a failure) + 0.5 P(tie)
    (the Mann-Whitney statistic / n1 n0), ``separation = max(auc, 1 - auc)`` (1 = a
    threshold splits successes from failures perfectly), n_success, n_failure. ``auc`` is
    NaN when either group is empty (e.g. factual-success training rows).
    """
    from scipy.stats import mannwhitneyu

    feats = list(features if features is not None else study.feature_names)
    d = study.decisions
    d = d[(d["cohort"] == cohort) & (d["condition"] == condition)]
    rows = []
    for delay, g in d.groupby("delay"):
        y = g["factual_success"].astype(bool).to_numpy()
        for f in feats:
            x = g[f].to_numpy(float)
            n1, n0 = int(y.sum()), int((~y).sum())
            auc = float(mannwhitneyu(x[y], x[~y]).statistic / (n1 * n0)) if n1 and n0 else np.nan
            rows.append(dict(feature=f, delay=int(delay), auc=auc, separation=max(auc, 1 - auc) if n1 and n0 else np.nan,
                             n_success=n1, n_failure=n0, horizon_feature=f in HORIZON_FEATURES))
    return pd.DataFrame(rows, columns=["feature", "delay", "auc", "separation", "n_success", "n_failure",
                                       "horizon_feature"])



def training_outcomes(rows: pd.DataFrame, *, clean: str = "clean", level: float = 0.95) -> pd.DataFrame:
    """What a refresh did to the router's training trajectories, per observation kind and delay.

    ``rows``: decision rows (one per task x condition x delay: ``condition``, ``delay``,
    ``y_without``, ``y_with``, ``active``). Per ``observation`` (``wrong``: every condition
    but ``clean``, the trajectories CIR's gain is measured on; ``clean``: those its harm cap
    counts) and ``delay``: ``trajectories``, ``active`` (still running at the delay),
    ``rescues`` (``y_with > y_without``), ``harms`` (``y_with < y_without``) and the exact
    one-sided ``level`` upper bounds of both shares (``rescue_upper``, ``harm_upper``;
    :func:`agentstudies.findings.share_upper_bound`; NaN with no trajectory). A threshold
    rule can gain only where a wrong-observation row has a rescue. Raises ``KeyError``
    naming a missing column.
    """
    from agentstudies.findings import share_upper_bound

    missing = [c for c in ("condition", "delay", "y_without", "y_with", "active") if c not in rows]
    if missing:
        raise KeyError(f"decision rows lack column(s) {missing}")
    kind = pd.Categorical(np.where(rows["condition"].astype(str) == clean, "clean", "wrong"),
                          categories=["wrong", "clean"], ordered=True)
    r = rows.assign(observation=kind, rescue=(rows["y_with"].astype(int) > rows["y_without"].astype(int)).astype(int),
                    harm=(rows["y_with"].astype(int) < rows["y_without"].astype(int)).astype(int),
                    active=rows["active"].astype(bool).astype(int))
    out = (r.groupby(["observation", "delay"], sort=True, observed=True)
           .agg(trajectories=("rescue", "size"), active=("active", "sum"), rescues=("rescue", "sum"),
                harms=("harm", "sum")).reset_index())
    out["observation"] = out["observation"].astype(str)
    for col, name in (("rescues", "rescue_upper"), ("harms", "harm_upper")):
        out[name] = [share_upper_bound(int(k), int(n), level=level)[1] if n else np.nan
                     for k, n in zip(out[col], out["trajectories"])]
    return out


@dataclass(frozen=True)
class RouterPipeline:
    """What :func:`router_pipeline` fitted, froze and evaluated.

    Fields: ``fit`` (:func:`agentstudies.recovery.fit_router`'s result: CIR and the anomaly
    baselines, OOF ``selection``), ``cate`` / ``cate_selection`` (the econml router and its
    OOF operating point: ``alpha``, ``gamma``, ``gain``, ``clean_harm``, ``rate``),
    ``evaluation`` (:func:`agentstudies.recovery.evaluate_policies` on the sealed pool, the
    blanket baselines included), ``vault``, ``train_tasks`` / ``eval_tasks`` (task counts),
    ``train_used`` (the training rows actually used, in words), ``features`` /
    ``dropped_features`` (router feature names), ``cir_eval_rate`` (CIR's intervention
    rate on the evaluation pool, a fraction), ``rescue_sets`` (which policy rescues exactly
    CIR's set), ``leak`` (:func:`horizon_leak` of the primary cohort) and ``train_rows``
    (the decision rows CIR was fitted on; ``None`` when not kept).
    """

    fit: Any
    cate: Any
    cate_selection: Mapping[str, Any]
    evaluation: Any
    vault: Any
    train_tasks: int
    eval_tasks: int
    train_used: str
    features: list
    dropped_features: list
    cir_eval_rate: float
    rescue_sets: pd.DataFrame
    leak: pd.DataFrame
    train_rows: pd.DataFrame | None = None

    def training_outcomes(self, level: float = 0.95) -> pd.DataFrame:
        """:func:`training_outcomes` of :attr:`train_rows` (the clean condition as CIR's).
        Raises ``ValueError`` when the pipeline kept no training rows."""
        if self.train_rows is None:
            raise ValueError("this RouterPipeline kept no training rows")
        return training_outcomes(self.train_rows, clean=self.fit.params.get("clean", "clean"), level=level)

    def selection_table(self) -> pd.DataFrame:
        """Frozen thresholds and OOF operating points, one row per router (CIR, the anomaly
        baselines, then ``cate``), with the first 12 hex digits of each router's SHA-256.
        ``cate_constant_fits`` (``cate`` row only) counts the econml fits that fell back to a
        constant effect (a one-class fold) out of ``cate_fits``: shown, never silent."""
        cs = self.cate_selection
        sel = pd.concat([self.fit.selection, pd.DataFrame([dict(
            router="cate", alpha=cs["alpha"], gamma=cs["gamma"], oof_gain=cs["gain"], oof_clean_harm=cs["clean_harm"],
            oof_rate=cs["rate"], cate_constant_fits=cs.get("cate_fallbacks", 0), cate_fits=cs.get("cate_fits"))])],
            ignore_index=True)
        sel["sha256"] = [self.evaluation.hashes[r][:12] for r in sel["router"]]
        return sel


def router_pipeline(
    study: RecoveryStudy,
    *,
    seed: int = 0,
    level: float = 0.95,
    n_draws: int = 2000,
    train: str = "factual-success",
    cate_learner: str = "dr",
    freeze_path: str | None = None,
    min_train_tasks: int = 4,
    horizon_features: str = "drop",
) -> dict[str, Any]:
    """Fit CIR and its baselines on the primary cohort, freeze, then evaluate.

    Order (CIR paper, "CIR: estimate before deciding"): the evaluation cohort's decision
    rows go into an :class:`agentstudies.recovery.OutcomeVault` *first* (sealed); CIR, the
    two anomaly baselines and the econml CATE router are fitted on the training rows
    (``train="factual-success"``: the primary cohort's factual-success tasks, as the
    paper; ``"complete"``: every prefix-feasible primary task), thresholds chosen on
    five-fold OOF predictions, refitted and frozen (SHA-256; written to
    ``freeze_path`` as JSON when given); only then are evaluation outcomes unsealed.

    When ``train="factual-success"`` yields fewer than ``min_train_tasks`` tasks (a weak
    agent or a tiny cohort), the complete primary cohort is used instead and the returned
    ``train_used`` says so (shown in the chapter) -- never silently.

    Returns a :class:`RouterPipeline` (named fields): its ``evaluation`` also holds the blanket
    baselines
    ``always-d<d>`` and ``random-<rate>%`` (CIR's evaluation intervention rate;
    :func:`agentstudies.recovery.blanket_routers`), ``rescue_sets`` says which policy's
    rescued set equals CIR's, ``leak`` is :func:`horizon_leak` of the primary cohort.
    ``horizon_features="drop"`` (default) removes :data:`HORIZON_FEATURES` (they encode the
    factual run's length, i.e. the post-decision horizon); ``"keep"`` keeps them (the
    earlier behaviour). Raises ``ValueError`` with fewer than two training tasks, an
    empty evaluation cohort or an unknown ``horizon_features``.
    """
    import json
    from pathlib import Path

    from agentstudies.recovery import (OutcomeVault, blanket_routers, evaluate_policies, fit_cate_router, fit_router,
                                       rescue_sets)

    if horizon_features not in ("drop", "keep"):
        raise ValueError(f"horizon_features={horizon_features!r}: expected 'drop' or 'keep'")
    feats = [f for f in study.feature_names if horizon_features == "keep" or f not in HORIZON_FEATURES]
    dec = study.decisions
    if dec.empty or "cohort" not in dec:
        raise ValueError("the study has no router decision rows")
    ev = dec[dec["cohort"] == "evaluation"].reset_index(drop=True)
    if ev.empty:
        raise ValueError("no prefix-feasible task in the evaluation cohort")
    vault = OutcomeVault(ev, feats)  # sealed before anything is fitted
    tr = dec[dec["cohort"] == "primary"]
    train_used = train
    if train == "factual-success":
        fs = tr[tr["factual_success"].astype(bool)]
        k = int(fs["task_id"].nunique())
        if k >= min_train_tasks:
            tr = fs
        else:
            train_used = f"complete (only {k} factual-success primary task(s) < {min_train_tasks})"
    elif train != "complete":
        raise ValueError(f"train={train!r}: expected 'factual-success' or 'complete'")
    tr = tr.reset_index(drop=True)
    n_train = int(tr["task_id"].nunique())
    if n_train < 2:
        raise ValueError(f"{n_train} training task(s) ({train}); the OOF threshold selection needs at least 2 -- "
                         f"enlarge the primary cohort or use train='complete'")
    fit = fit_router(tr, feats, seed=seed)
    cate, cate_sel = fit_cate_router(tr, feats, learner=cate_learner, seed=seed, base=fit.routers["cir"])
    routers = {**fit.routers, "cate": cate}
    if freeze_path is not None:
        p = Path(freeze_path)
        p.parent.mkdir(parents=True, exist_ok=True)
        finite = lambda th: {k: (v if np.isfinite(v) else str(v)) for k, v in th.items()}  # noqa: E731 - strict JSON
        p.write_text(json.dumps({k: dict(kind=r.kind, sha256=r.sha256, thresholds=finite(r.thresholds))
                                 for k, r in routers.items()}, indent=1, sort_keys=True) + "\n")
    # degeneracy-revealing baselines: blanket "always at d" rules and a random
    # refresh matched to CIR's rate on the *evaluation* pool (decisions need no outcomes)
    eval_rate = float(routers["cir"].decide(vault.features)["intervene"].mean())
    blankets = blanket_routers(feats, rate=eval_rate, seed=seed, candidate_delays=routers["cir"].candidate_delays,
                               clean=routers["cir"].clean)
    evaluation = evaluate_policies({**routers, **blankets}, vault, level=level, n_draws=n_draws, seed=seed)
    return RouterPipeline(fit=fit, cate=cate, cate_selection=cate_sel, evaluation=evaluation, vault=vault,
                train_tasks=n_train, eval_tasks=int(ev["task_id"].nunique()), train_used=train_used,
                features=feats, dropped_features=[f for f in study.feature_names if f not in feats],
                cir_eval_rate=eval_rate, rescue_sets=rescue_sets(evaluation, "cir"),
                leak=horizon_leak(study, cohort="primary"), train_rows=tr)

