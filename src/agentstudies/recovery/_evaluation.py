"""Evaluation of frozen routers on the evaluation pool: success vs never-refresh with
task-level cluster-bootstrap intervals, rescue / harm, intervention rates, the clean-harm
rate and the sign-flip p-value (:func:`evaluate_policies` -> :class:`RouterEvaluation`),
and which trajectories each policy rescues (:func:`rescue_sets`).

Source: CIR paper (Xiao et al., arXiv:2610.00372), the evaluation protocol (the rescue-set
comparison is ours).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from agentstudies.recovery._decisions import _trajectories, validate_decisions
from agentstudies.recovery._freeze import FrozenRouter, OutcomesSealedError, OutcomeVault
from agentstudies.results import Result, ResultProvenance, make_provenance, tidy_rows
from agentstudies.specs import check_n_draws
from agentstudies.stats import paired_cluster_bootstrap, percentile_interval

__all__ = ["RouterEvaluation", "evaluate_policies", "rescue_sets"]


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

    Raises :class:`OutcomesSealedError` if a router is not frozen / was modified;
    ``ValueError`` / ``TypeError`` for ``n_draws`` below
    :func:`agentstudies.specs.min_draws` (``level``), checked before anything is unsealed.
    """
    if not routers:
        raise ValueError("no routers to evaluate")
    check_n_draws(n_draws, level, where="evaluate_policies")
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
