"""Predicting the reacher x solver interaction from independent Reach and Solve gaps.

Source: Section 3.3, Eq. 9; Section 4.5; Appendix B (Table 6, Figures 7-9).

    Î^comp = sum_k p_k [A_RL(k) - A_SFT(k)] [C_RL^ext(k) - C_SFT^ext(k)]

with strata ``k`` = task types, arrival rates ``A_W(k)`` from the *target* sample and
conversion rates ``C_R^ext(k)`` from an independent *external* sample (its reached states,
pooled over its reachers unless ``external_reacher`` is set). The residual
``R_comp = I - Î^comp`` is a forecast error: nothing in Eq. 9 uses the observed ``I``.
Overall quantities use the same weights for observed and predicted values:
``weights="prevalence"`` -> ``p_k`` = the target's share of (task, seed) trajectories of
type ``k`` (then the observed overall ``I`` equals the pooled Eq. 4 value exactly);
``weights="equal"`` -> the unweighted mean over types (the paper's choice; identical
for balanced types).

Intervals: each bootstrap draw resamples tasks within type from the target *and*,
independently, from the external sample (all seeds and assignments of a task together),
and recomputes observed, predicted and residual (Sec. 4.1). A draw in which some type
of the external sample has no reached state leaves ``C^ext(k)`` undefined: it is
excluded and counted (empty-denominator rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from agentstudies.handoff._boot import (
    HandoffResultBase,
    UnitStats,
    bootstrap_seed,
    check_draws,
    check_level,
    fmt_ci,
    fmt_pp,
    run_bootstrap,
    summarise,
    tidy_estimates,
    warn_flagged,
)
from agentstudies.handoff._estimands import _div, _interaction, _rates, episode_task_stats
from agentstudies.handoff._validate import check_strata, validate_episodes
from agentstudies.results import PaperTables, make_provenance, tidy_rows

__all__ = ["InteractionPrediction", "predict_interaction", "prediction_design", "prediction_replicates"]

_PER_TYPE = (
    "arrival_base", "arrival_treated", "arrival_gap",
    "ext_conversion_base", "ext_conversion_treated", "ext_conversion_gap",
    "target_conversion_base", "target_conversion_treated", "target_conversion_gap",
    "predicted", "observed", "residual",
)
_OVERALL = ("observed", "predicted", "residual")


def _one_split(df: pd.DataFrame, split: str | None, role: str) -> pd.DataFrame:
    splits = sorted(df["split"].unique())
    if split is None:
        if len(splits) != 1:
            raise ValueError(f"{role} sample holds several splits {splits}; pass {role}_split=")
        return df
    if split not in splits:
        raise ValueError(f"{role}_split={split!r} not in the {role} sample's splits {splits}")
    return df[df["split"] == split]


@dataclass(frozen=True, eq=False)
class _Design:
    target: UnitStats
    external: UnitStats
    weights: str
    target_split: str
    external_split: str

    @property
    def K(self) -> int:
        return self.target.n_strata

    def sums(self) -> np.ndarray:
        a, b = self.target.block_sums(), self.external.block_sums()
        out = np.zeros((a.shape[0] + b.shape[0], a.shape[1] + b.shape[1]))
        out[: a.shape[0], : a.shape[1]] = a
        out[a.shape[0]:, a.shape[1]:] = b
        return out

    def strata(self) -> np.ndarray:
        return np.concatenate([self.target.strata, self.external.strata + self.K])

    def statistic(self, totals: np.ndarray) -> np.ndarray:
        K, mt, me = self.K, len(self.target.columns), len(self.external.columns)
        B = totals.shape[0]
        T = self.target.named(totals[:, : K * mt].reshape(B, K, mt))
        E = self.external.named(totals[:, K * mt:].reshape(B, K, me))
        n = T["n"]
        r = _rates(T)
        a_b, a_t = r["A_b"], r["A_t"]
        ext_arr = E["ext_arr"]
        ce_b, ce_t = _div(E["ext_s_b"], ext_arr), _div(E["ext_s_t"], ext_arr)
        ct_b, ct_t = r["S_b"], r["S_t"]
        obs_k = _interaction(r)
        pred_k = (a_t - a_b) * (ce_t - ce_b)
        if self.weights == "equal":
            p = np.full_like(n, 1.0 / K)
        else:
            p = n / n.sum(axis=1, keepdims=True)
        obs = (p * obs_k).sum(axis=1)
        pred = (p * pred_k).sum(axis=1)  # NaN if any type's external conversion is undefined
        per = dict(
            arrival_base=a_b, arrival_treated=a_t, arrival_gap=a_t - a_b,
            ext_conversion_base=ce_b, ext_conversion_treated=ce_t, ext_conversion_gap=ce_t - ce_b,
            target_conversion_base=ct_b, target_conversion_treated=ct_t, target_conversion_gap=ct_t - ct_b,
            predicted=pred_k, observed=obs_k, residual=obs_k - pred_k,
        )
        cols = [obs, pred, obs - pred] + [per[name][:, k] for name in _PER_TYPE for k in range(K)]
        return np.column_stack(cols)


def _external_stats(df: pd.DataFrame, base: str, treated: str, external_reacher: str | None) -> UnitStats:
    st = next(iter(episode_task_stats(df, base=base, treated=treated, validate=False).values()))
    v = st.named(st.values)
    if external_reacher is None:
        ws = ("b", "t")
    elif external_reacher == base:
        ws = ("b",)
    elif external_reacher == treated:
        ws = ("t",)
    else:
        raise ValueError(f"external_reacher must be None, {base!r} or {treated!r}; got {external_reacher!r}")
    arr = sum(v[f"arr_{w}"] for w in ws)
    s_b = sum(v[f"s_{w}b"] for w in ws)
    s_t = sum(v[f"s_{w}t"] for w in ws)
    return UnitStats(units=st.units, strata=st.strata, stratum_labels=st.stratum_labels,
                     columns=("ext_arr", "ext_s_b", "ext_s_t"), values=np.column_stack([arr, s_b, s_t]))


def prediction_design(
    target: pd.DataFrame,
    external: pd.DataFrame,
    *,
    base: str = "SFT",
    treated: str = "RL",
    weights: str = "prevalence",
    external_reacher: str | None = None,
    target_split: str | None = None,
    external_split: str | None = None,
) -> _Design:
    """Validated per-task statistics of both samples (used by :func:`predict_interaction`).

    The combined bootstrap units are the target tasks (strata ``0..K-1``, task types in
    sorted order) followed by the external tasks (strata ``K..2K-1``).

    Raises
    ------
    ValueError
        Unknown ``weights``; a type of the target absent from the external sample or vice
        versa (names them); several splits without ``*_split``; invalid episodes.
    """
    if weights not in ("prevalence", "equal"):
        raise ValueError(f"weights must be 'prevalence' or 'equal'; got {weights!r}")
    t = _one_split(validate_episodes(target, base=base, treated=treated), target_split, "target")
    e = _one_split(validate_episodes(external, base=base, treated=treated), external_split, "external")
    tt, et = set(t["task_type"]), set(e["task_type"])
    if tt - et:
        raise ValueError(
            f"external sample has no tasks of target task type(s) {sorted(tt - et)}; Eq. 9 needs "
            "C^ext(k) for every target stratum k"
        )
    if et - tt:
        raise ValueError(
            f"external sample has task type(s) {sorted(et - tt)} absent from the target (p_k = 0); "
            "filter them out of the external table first"
        )
    tstats = next(iter(episode_task_stats(t, base=base, treated=treated, validate=False).values()))
    estats = _external_stats(e, base, treated, external_reacher)
    assert tstats.stratum_labels == estats.stratum_labels
    return _Design(target=tstats, external=estats, weights=weights,
                   target_split=str(t["split"].iloc[0]), external_split=str(e["split"].iloc[0]))


def prediction_replicates(design: _Design, counts: np.ndarray) -> pd.DataFrame:
    """Observed, predicted and residual interaction for each row of ``counts``.

    ``counts`` is (B, n_target_tasks + n_external_tasks) in the unit order of
    :func:`prediction_design`. Returns a DataFrame with columns ``observed``,
    ``predicted``, ``residual`` and ``<quantity>@<task_type>`` for every per-type column.
    """
    counts = np.asarray(counts, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = design.statistic(counts @ design.sums())
    names = list(_OVERALL) + [f"{q}@{lab}" for q in _PER_TYPE for lab in design.target.stratum_labels]
    return pd.DataFrame(out, columns=names)


@dataclass(frozen=True, eq=False, kw_only=True)
class InteractionPrediction(PaperTables, HandoffResultBase):
    """Eq. 9 prediction of the interaction, observed value and residual (Table 6).

    ``to_frame()`` is the tidy table: stratum ``task_type`` (``"all"`` for the weighted
    overall values), estimands ``observed, predicted, residual`` (overall, with
    intervals) and per type the :data:`_PER_TYPE` quantities (intervals for ``observed,
    predicted, residual``), ``n`` = target tasks. ``table(6)`` is the paper's layout (``PAPER = "handoff"``).

    Attributes
    ----------
    overall : DataFrame
        ``estimand`` in (observed, predicted, residual), ``estimate, ci_low, ci_high,
        n_boot, n_excluded, excluded_share, flagged``.
    by_type : DataFrame
        One row per task type: ``task_type, p_k, n_tasks_target, n_tasks_external,
        n_states_external``, the target arrival rates and gap, the external conversion
        rates and gap, the target's own same-state conversion rates and gap (Figure 8),
        ``predicted, observed, residual`` and their ``*_low`` / ``*_high`` bounds.
    weights, external_reacher, target_split, external_split, base, treated, n_draws,
    seed, level, empty_threshold : settings; provenance : version, SHA-256 of the
    target and external tables, seed.
    """

    PAPER = "handoff"

    overall: pd.DataFrame
    by_type: pd.DataFrame
    weights: str
    external_reacher: str | None
    target_split: str
    external_split: str
    empty_threshold: float

    title = "Interaction predicted from independent Reach and Solve gaps (Eq. 9)"

    def _tidy(self) -> pd.DataFrame:
        n_all = int(self.by_type["n_tasks_target"].sum())
        overall = tidy_estimates(self.overall.assign(task_type="all"), level=self.level, n=n_all)
        per = []
        for r in self.by_type.itertuples(index=False):
            row = r._asdict()
            for q in _PER_TYPE:
                with_ci = q in _OVERALL
                per.append(dict(task_type=row["task_type"], estimand=q, estimate=row[q],
                                ci_low=row[f"{q}_low"] if with_ci else np.nan,
                                ci_high=row[f"{q}_high"] if with_ci else np.nan,
                                side="two-sided" if with_ci and self.n_draws > 0 else "",
                                level=self.level, n=row["n_tasks_target"], n_draws=self.n_draws))
        return tidy_rows(pd.concat([overall, pd.DataFrame(per)], ignore_index=True), strata=("task_type",))

    def get(self, estimand: str, **keys) -> pd.Series:
        """The tidy row of ``estimand``; ``task_type`` defaults to ``"all"`` (overall)."""
        keys.setdefault("task_type", "all")
        return super().get(estimand, **keys)

    def _table_6(self) -> pd.DataFrame:
        """Table 6 layout: per-type rows plus an ``overall`` row (undefined cells NaN)."""
        o = self.overall.set_index("estimand")
        row = {"task_type": "overall", "p_k": 1.0}
        for q in _OVERALL:
            row[q] = o.loc[q, "estimate"]
            row[f"{q}_low"] = o.loc[q, "ci_low"]
            row[f"{q}_high"] = o.loc[q, "ci_high"]
        return pd.concat([self.by_type, pd.DataFrame([row])], ignore_index=True)

    def summary(self) -> str:
        w = "unweighted mean over types" if self.weights == "equal" else "target type prevalence p_k"
        lines = [
            f"Interaction predicted from independent Reach and Solve gaps (Eq. 9), weights: {w}",
            f"target split {self.target_split} (arrival), external split {self.external_split} (conversion"
            f"{'' if self.external_reacher is None else ', ' + self.external_reacher + '-reached states'})",
            f"{self.n_draws:,} independent stratified resamples of both samples, {self.level:.0%} intervals; points",
        ]
        for r in self.overall.itertuples():
            flag = f"  [excluded {r.excluded_share:.3%}{' FLAGGED' if r.flagged else ''}]" if r.n_excluded else ""
            lines.append(f"  {r.estimand:<10} {fmt_pp(r.estimate):>7} {fmt_ci(r.ci_low, r.ci_high)}{flag}")
        lines.append("")
        lines.append(f"{'task type':<34}{'dA':>7}{'dC_ext':>8}{'dC_tgt':>8}{'pred':>7}{'obs':>7}{'resid':>7}")
        for r in self.by_type.itertuples():
            lines.append(
                f"{r.task_type:<34}{fmt_pp(r.arrival_gap):>7}{fmt_pp(r.ext_conversion_gap):>8}"
                f"{fmt_pp(r.target_conversion_gap):>8}{fmt_pp(r.predicted):>7}{fmt_pp(r.observed):>7}"
                f"{fmt_pp(r.residual):>7}"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:  # pragma: no cover
        return f"InteractionPrediction(target={self.target_split}, external={self.external_split}, n_draws={self.n_draws})"


def _by_type_rows(design: _Design, per: pd.DataFrame, ext_arrivals: np.ndarray) -> list[dict[str, object]]:
    """Table 6 rows: per task type the weight ``p_k``, sample sizes, every per-type
    quantity and the bounds of ``predicted, observed, residual``."""
    labels = design.target.stratum_labels
    K = len(labels)
    n = design.target.named(design.target.totals(design.target.point_counts())[0])["n"]
    p = np.full(K, 1.0 / K) if design.weights == "equal" else n / n.sum()
    rows = []
    for k, lab in enumerate(labels):
        row = dict(task_type=lab, p_k=p[k],
                   n_tasks_target=int((design.target.strata == k).sum()),
                   n_tasks_external=int((design.external.strata == k).sum()),
                   n_states_external=int(ext_arrivals[k]))
        for q in _PER_TYPE:
            row[q] = per.loc[f"{q}@{lab}", "estimate"]
        for q in ("predicted", "observed", "residual"):
            row[f"{q}_low"] = per.loc[f"{q}@{lab}", "ci_low"]
            row[f"{q}_high"] = per.loc[f"{q}@{lab}", "ci_high"]
        rows.append(row)
    return rows


def predict_interaction(
    target: pd.DataFrame,
    external: pd.DataFrame,
    *,
    base: str = "SFT",
    treated: str = "RL",
    weights: str = "prevalence",
    external_reacher: str | None = None,
    target_split: str | None = None,
    external_split: str | None = None,
    n_draws: int = 100_000,
    seed: int = 0,
    level: float = 0.95,
    empty_threshold: float = 0.01,
    chunk: int = 20_000,
    allow_singleton_strata: bool = False,
) -> InteractionPrediction:
    """Eq. 9 prediction Î^comp, observed I and residual R = I - Î^comp, overall and per type.

    Parameters
    ----------
    target : episodes table of the target sample (one split, or pick ``target_split``);
        supplies ``A_W(k)``, the observed ``I`` and ``p_k``.
    external : episodes table of the independent sample (same schema; ``external_split``);
        supplies ``C_R^ext(k)`` = share of its reached states solver R wins, pooled over
        its reachers or restricted to ``external_reacher``.
    weights : ``"prevalence"`` (``p_k`` = target trajectory share of type k) or
        ``"equal"`` (unweighted mean over types, the paper's overall row).
    n_draws, seed, level, empty_threshold, chunk : as in :func:`analyze_handoff`; the
        draws use ``keyed_seed(seed, "prediction", target_split, external_split)``.

    Returns
    -------
    InteractionPrediction

    Raises
    ------
    ValueError
        See :func:`prediction_design`; if some external type has no reached state
        (``C^ext(k)`` undefined in the sample itself).
    """
    check_level(level, empty_threshold)
    n_draws = check_draws(n_draws, level, "predict_interaction")
    if n_draws > 0:  # task_type sets the bootstrap strata (see analyze_handoff)
        for label, table in (("target", target), ("external", external)):
            check_strata(validate_episodes(table, base=base, treated=treated), f"{label} episodes",
                         allow_singleton_strata=allow_singleton_strata, where="predict_interaction")
    design = prediction_design(target, external, base=base, treated=treated, weights=weights,
                               external_reacher=external_reacher, target_split=target_split,
                               external_split=external_split)
    t_split, e_split = design.target_split, design.external_split
    ev = design.external.named(design.external.totals(design.external.point_counts())[0])
    empty = [lab for k, lab in enumerate(design.external.stratum_labels) if ev["ext_arr"][k] == 0]
    if empty:
        raise ValueError(
            f"external sample has no reached state in task type(s) {empty}: C^ext(k) is undefined, so "
            "Eq. 9 cannot be evaluated"
        )
    sums, strata = design.sums(), design.strata()
    with np.errstate(divide="ignore", invalid="ignore"):
        point = design.statistic(np.ones((1, sums.shape[0])) @ sums)[0]
    reps = None
    if n_draws > 0:
        reps = run_bootstrap(sums, strata, design.statistic, n_draws=n_draws,
                             seed_seq=bootstrap_seed(seed, "prediction", t_split, e_split), chunk=chunk)
    overall = summarise(list(_OVERALL), point[:3], None if reps is None else reps[:, :3],
                        level=level, empty_threshold=empty_threshold)
    per = summarise([f"{q}@{lab}" for q in _PER_TYPE for lab in design.target.stratum_labels], point[3:],
                    None if reps is None else reps[:, 3:], level=level, empty_threshold=empty_threshold)
    rows = _by_type_rows(design, per.set_index("estimand"), ev["ext_arr"])
    if n_draws > 0:
        warn_flagged(overall, "predict_interaction", empty_threshold)
    return InteractionPrediction(
        overall=overall, by_type=pd.DataFrame(rows), base=base, treated=treated, weights=weights,
        external_reacher=external_reacher, target_split=t_split, external_split=e_split,
        n_draws=n_draws, seed=seed, level=level, empty_threshold=empty_threshold,
        params=dict(base=base, treated=treated, weights=weights, external_reacher=external_reacher,
                    target_split=t_split, external_split=e_split, n_draws=n_draws, seed=seed,
                    level=level, empty_threshold=empty_threshold, chunk=chunk),
        provenance=make_provenance(seed=seed, target=target, external=external),
    )
