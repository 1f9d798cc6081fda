"""Study C of SASST: feasibility and abstention (Xu et al., 2026, Appendix D.5, Table 11).

Five synthetic settings check that the support gates (density, ESS, split denominators,
stability) block infeasible or unstable rules, and that a stable planted rule is not
blocked. Each trial draws fresh tasks and outcomes, runs the full engine
(:class:`~agentstudies.sasst.SASST`: discovery, stability, confirmation, statuses) and
records the stress slot's status and *which check* recorded it.

The paper does not give the settings' data-generating processes; the choices below are
fixed and written down in the chapter ``sasst_feasibility``:

* ``n_tasks = 200`` tasks per trial, split in half (discovery / confirmation), two seeds;
* features ``x1..x4 ~ N(0, 1)``, rare flags ``rare_a, rare_b, rare_c ~ Bernoulli(0.04)``,
  ``minor_a, minor_b ~ Bernoulli(0.03)``, and ``batch``: a score-blind data-collection
  batch that coincides with the first scoring half ``S_1`` of the plan's repeated split;
* baseline success 0.5; candidate 0.6 except where a setting plants a drop;
* support checks: density cap 5, minimum ESS 20, minimum split share 0.2, stability
  threshold 0.6 (top-25% Jaccard over 100 discovery resamples; by default each resample
  reruns the slot with the family refitted, ``stability_mode="fixed"`` keeps the registry
  fitted on discovery -- Table 11 shows both).

=====================  ====================================================  =========================
setting                registry (declared before outcomes)                   planted effect
=====================  ====================================================  =========================
severe_concentration   x60 lift on ``rare_a``, ``rare_b``, ``rare_c``        candidate 0.1 on rare_a
density_only           x10 lift on ``minor_a``, ``minor_b``                  candidate 0.1 on minor_a
split_support_only     x8 lift on ``batch = 1`` or on ``batch = 0``;         none (null)
                       plan with soft selection over two workflows, R = 2
near_tied_rules        axis tilts on x1..x4 (strengths 0.5, 0.75)            -0.3 if x1 > q75, -0.3 if x2 > q75
stable_positive_rule   axis tilts on x1..x4 (strengths 0.5, 0.75)            -0.5 if x1 > q75
near_tied_four         axis tilts on x1..x4 (strengths 0.5, 0.75)            -0.15 per x_k > q75, k = 1..4
=====================  ====================================================  =========================

``near_tied_four`` is a sensitivity setting added after the two-way near tie gave a much
lower abstention rate than the paper; it is not a row of the paper's Table 11.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from agentstudies.parallel import seeded_map
from agentstudies.sasst import SASST, ClusterData, ComparisonPlan, Slot
from agentstudies.sasst.rules import AxisTiltFamily, FixedFamily, RuleFamily, ThresholdRule
from agentstudies.sasst.statuses import (
    ABSTAINED,
    CONFIRMED,
    FAILED_DISCOVERY,
    FAILED_FEASIBILITY,
    NOT_CONFIRMED,
)
from agentstudies.studies._paper import paper_values
from agentstudies.studies.sasst.geometry import _fresh

__all__ = [
    "SETTINGS",
    "EXTRA_SETTINGS",
    "ALL_SETTINGS",
    "FEATURE_COLUMNS",
    "FeasibilityConfig",
    "feasibility_features",
    "planted_probabilities",
    "setting_plan",
    "setting_registry",
    "recorded_checks",
    "batch_flags",
    "feasibility_trial",
    "run_feasibility",
    "table11",
    "PAPER_TABLE11",
]

SETTINGS = ("severe_concentration", "density_only", "split_support_only", "near_tied_rules", "stable_positive_rule")
#: Sensitivity setting added after seeing the two-way near-tie result (not a paper row):
#: four tied axes, candidate 0.6 - 0.15 x (number of x1..x4 above their upper quartile).
EXTRA_SETTINGS = ("near_tied_four",)
ALL_SETTINGS = SETTINGS + EXTRA_SETTINGS
FEATURE_COLUMNS = ("x1", "x2", "x3", "x4", "rare_a", "rare_b", "rare_c", "minor_a", "minor_b", "batch")
P_RARE, P_MINOR = 0.04, 0.03
P_BASELINE, P_CANDIDATE = 0.5, 0.6
#: Axis-tilt strengths of the near-tied and stable settings: with clip 2 every rule's
#: density ratio stays near exp(1.5) / E[exp(0.75 u)] = 3.4 < 5, so support passes by design.
TILT_STRENGTHS = (0.5, 0.75)
#: Upper quartile of a standard normal: the threshold of the planted tilt effects.
Q75 = float(stats.norm.ppf(0.75))

#: Paper Table 11 (500 trials per setting), shown beside ours labelled "paper".
PAPER_TABLE11 = paper_values("sasst_feasibility", "table11")  # data/paper/ (labelled "paper", never a result)


@dataclass(frozen=True)
class FeasibilityConfig:
    """Frozen settings of Study C (see the module docstring)."""

    n_tasks: int = 200
    n_seeds: int = 2
    density_cap: float = 5.0
    min_ess: float = 20.0
    min_split_share: float = 0.2
    stability_threshold: float = 0.6
    n_stability: int = 100
    top_fraction: float = 0.25
    n_draws: int = 1000
    stability_mode: str = "refit"  # "refit": the family refitted per resample; "fixed": registry kept

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def feasibility_features(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Score-blind features (n, 10), columns :data:`FEATURE_COLUMNS`; ``batch`` is 0 here
    and is set per split by :func:`feasibility_trial` (it depends only on task ids).

    Raises ``ValueError`` if ``n < 4``."""
    return pd.DataFrame(_feature_matrix(n, rng), columns=list(FEATURE_COLUMNS))


def _feature_matrix(n: int, rng: np.random.Generator) -> np.ndarray:
    """The array (n, 10) of :func:`feasibility_features` (the same draws), without the table."""
    if n < 4:
        raise ValueError(f"n must be >= 4; got {n}")
    cont = rng.standard_normal((n, 4))
    rare = (rng.random((n, 3)) < P_RARE).astype(float)
    minor = (rng.random((n, 2)) < P_MINOR).astype(float)
    return np.column_stack([cont, rare, minor, np.zeros(n)])


def setting_plan(setting: str) -> ComparisonPlan:
    """The fixed comparison plan: ``candidate - baseline``, or, for
    ``split_support_only``, soft selection between two workflows over two repeated splits."""
    _check(setting)
    if setting == "split_support_only":
        return ComparisonPlan(("baseline", "wf_a", "wf_b"), candidates=("wf_a", "wf_b"), selection="soft",
                              temperature=0.05, n_splits=2, split_seed=0)
    return ComparisonPlan(("baseline", "candidate"))


def _contrast(setting: str) -> dict[str, float]:
    return {"selected": 1, "baseline": -1} if setting == "split_support_only" else {"candidate": 1, "baseline": -1}


def planted_probabilities(setting: str, X: pd.DataFrame | np.ndarray) -> np.ndarray:
    """Success probabilities (n, J) in the plan's system order (see the module table).

    ``X`` is a feature table with the columns the setting reads, or an array (n, 10) whose
    columns are :data:`FEATURE_COLUMNS` in that order. Raises ``ValueError`` on an unknown
    setting or an array of another width; ``KeyError`` on a missing column."""
    _check(setting)
    if isinstance(X, np.ndarray):
        if X.ndim != 2 or X.shape[1] != len(FEATURE_COLUMNS):
            raise ValueError(f"a feature array needs shape (n, {len(FEATURE_COLUMNS)}); got {X.shape}")
        col = lambda c: X[:, FEATURE_COLUMNS.index(c)]  # noqa: E731
    else:
        col = lambda c: X[c].to_numpy()  # noqa: E731
    n = len(X)
    base = np.full(n, P_BASELINE)
    if setting == "split_support_only":
        return np.column_stack([base, np.full(n, P_CANDIDATE), np.full(n, P_CANDIDATE)])
    cand = np.full(n, P_CANDIDATE)
    if setting == "severe_concentration":
        cand = np.where(col("rare_a") > 0.5, 0.1, cand)
    elif setting == "density_only":
        cand = np.where(col("minor_a") > 0.5, 0.1, cand)
    elif setting == "near_tied_rules":
        cand = cand - 0.3 * (col("x1") > Q75) - 0.3 * (col("x2") > Q75)
    elif setting == "near_tied_four":
        cand = cand - 0.15 * (np.column_stack([col(c) for c in ("x1", "x2", "x3", "x4")]) > Q75).sum(axis=1)
    else:
        cand = cand - 0.5 * (col("x1") > Q75)
    return np.column_stack([base, cand])


def setting_registry(setting: str) -> RuleFamily:
    """The declared candidate registry of a setting (fixed before outcomes are drawn)."""
    _check(setting)
    if setting == "severe_concentration":
        return FixedFamily(tuple(ThresholdRule(columns=(c,), threshold=0.5, above=True, lift=60.0)
                                 for c in ("rare_a", "rare_b", "rare_c")))
    if setting == "density_only":
        return FixedFamily(tuple(ThresholdRule(columns=(c,), threshold=0.5, above=True, lift=10.0)
                                 for c in ("minor_a", "minor_b")))
    if setting == "split_support_only":
        return FixedFamily((ThresholdRule(columns=("batch",), threshold=0.5, above=True, lift=8.0),
                            ThresholdRule(columns=("batch",), threshold=0.5, above=False, lift=8.0)))
    return AxisTiltFamily(strengths=TILT_STRENGTHS, use_columns=("x1", "x2", "x3", "x4"))


def _check(setting: str) -> None:
    if setting not in ALL_SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; choose from {ALL_SETTINGS}")


def recorded_checks(row: pd.Series | Mapping[str, Any], candidates: pd.DataFrame | None, slot: Slot
                    ) -> tuple[str, str]:
    """(stage, checks) that recorded a slot's status, from the slot's report row (a row of
    the report table or its dict from :meth:`~agentstudies.sasst.SASST.confirm_records`).

    * failed discovery: the discovery checks (``ESS``, ``density``, ``radius``, ``split
      support``: every predeclared score-blind constraint of App. C.2) failed by the
      candidate with the lowest Eq. (2) prediction (the rule discovery would have chosen
      without constraints);
    * failed feasibility: the confirmation checks failed by the frozen rule (``density``,
      ``ESS``, ``split support``);
    * abstained: ``stability``; confirmed / not confirmed: ``none``.
    """
    status = row["status"]
    if status == FAILED_DISCOVERY:
        c = candidates.loc[candidates["predicted"].idxmin()]
        fails = []
        if c["ess"] < slot.min_ess - 1e-12:
            fails.append("ESS")
        if c["max_density"] > slot.density_cap + 1e-12:
            fails.append("density")
        if slot.radius is not None and c["distance"] > slot.radius + 1e-15:
            fails.append("radius")
        if "min_split_share" in c and c["min_split_share"] < slot.min_split_share - 1e-12:
            fails.append("split support")
        return "discovery", " + ".join(fails) or "none"
    if status == FAILED_FEASIBILITY:
        fails = []
        if row["ess"] < slot.min_ess - 1e-12:
            fails.append("ESS")
        if row["max_density"] > slot.density_cap + 1e-12:
            fails.append("density")
        if row["min_split_share"] < slot.min_split_share - 1e-12:
            fails.append("split support")
        return "confirmation", " + ".join(fails) or "none"
    if status == ABSTAINED:
        return "stability", "stability"
    return "passed", "none"


def batch_flags(ids: np.ndarray, plan: ComparisonPlan) -> np.ndarray:
    """The score-blind ``batch`` feature of the clusters ``ids`` (n,) of one side of the
    split: 1.0 on the first scoring half ``S_1`` of ``plan``'s repeated split on these
    ids, 0.0 elsewhere (it depends on the ids and ``plan.split_seed`` only)."""
    return ComparisonPlan(("s",), candidates=("s",), selection="hard", n_splits=1,
                          split_seed=plan.split_seed).split_masks(np.asarray(ids))[0].astype(float)


def feasibility_trial(item: tuple[str, int], rng: np.random.Generator, *, cfg: FeasibilityConfig) -> dict[str, Any]:
    """One Study C trial of one setting; returns the stress slot's status and checks.

    The record has ``setting, trial, status, stage, checks, reason`` (the engine's
    ``reason`` column), ``rule, ess, max_density, min_split_share, stability, estimate`` and
    ``uniform_estimate`` (the uniform slot's estimate of the same contrast on the same tasks).
    """
    setting, trial = item
    n = cfg.n_tasks
    Xa = _feature_matrix(n, rng)  # the draws of feasibility_features, as an array
    plan = setting_plan(setting)
    Z = (rng.random((cfg.n_seeds, n, len(plan.systems))) < planted_probabilities(setting, Xa)).mean(axis=0)
    ids = np.array([f"c{trial:04d}_{i:04d}" for i in range(n)])
    d = np.zeros(n, dtype=bool)
    d[rng.permutation(n)[: n // 2]] = True
    b = FEATURE_COLUMNS.index("batch")
    for mask in (d, ~d):
        Xa[mask, b] = batch_flags(ids[mask], plan)
    contrast = _contrast(setting)
    stress = Slot("stress", contrast, sign=-1, family="registry", radius=None, geometry="none",
                  density_cap=cfg.density_cap, min_ess=cfg.min_ess, min_split_share=cfg.min_split_share,
                  stability_threshold=cfg.stability_threshold)
    slots = [Slot("uniform", contrast, sign=-1, min_split_share=cfg.min_split_share), stress]
    eng = SASST(plan, slots, {"registry": setting_registry(setting)}, n_stability=cfg.n_stability,
                stability_mode=cfg.stability_mode, top_fraction=cfg.top_fraction, n_draws=cfg.n_draws, exact_multiplier=True,
                seed=int(rng.integers(2**31)))
    seeds = np.full(n, cfg.n_seeds)
    data = ClusterData(ids, Z, Xa, plan.systems, FEATURE_COLUMNS, seeds)
    disc = eng.discover(data.subset(d))
    # the report's rows without building the report table (the same values; SASST.confirm_records)
    rows = {r["slot"]: r for r in eng.confirm_records(disc, data.subset(~d))[0]}
    row = rows["stress"]
    cands = disc.rules["stress"].candidates
    stage, checks = recorded_checks(row, cands, stress)
    share = row["min_split_share"]
    if stage == "discovery":  # the split share discovery measured on the would-be choice
        share = float(cands.loc[cands["predicted"].idxmin(), "min_split_share"])
    return {"setting": setting, "trial": trial, "status": row["status"], "stage": stage, "checks": checks,
            "reason": row["reason"], "rule": row["rule"], "ess": row["ess"], "max_density": row["max_density"],
            "min_split_share": share, "stability": row["stability"],
            "estimate": row["estimate"], "uniform_estimate": rows["uniform"]["estimate"]}


def run_feasibility(cfg: FeasibilityConfig, n_trials: int, *, seed: int | np.random.SeedSequence = 0, n_jobs: int = 1,
                    backend: str = "loky", settings: Sequence[str] = SETTINGS,
                    run_only: Sequence[str] | None = None) -> pd.DataFrame:
    """Run Study C: ``n_trials`` per setting, trial ``i`` of the flattened (setting, trial)
    list on the ``i``-th SeedSequence child of ``seed`` (independent of ``n_jobs``).

    ``run_only`` (a subset of ``settings``) runs only those settings' trials, each on the
    same seed as in the full run (the seeds still follow the flattened list of every
    ``settings`` entry), so its records are the full run's rows of those settings.

    Raises
    ------
    ValueError
        ``n_trials < 1``, an unknown setting, or a ``run_only`` entry outside ``settings``.
    """
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1; got {n_trials}")
    for s in settings:
        _check(s)
    if run_only is not None:
        extra = [s for s in run_only if s not in settings]
        if extra:
            raise ValueError(f"run_only names setting(s) {extra} that are not among settings {tuple(settings)}")
    items = [(s, t) for s in settings for t in range(n_trials)]
    keep = None if run_only is None else tuple(run_only)
    recs = seeded_map(_trial_or_skip, items, seed=_fresh(seed), n_jobs=n_jobs, backend=backend, cfg=cfg, keep=keep)
    return pd.DataFrame([r for r in recs if r is not None])


def _trial_or_skip(item: tuple[str, int], rng: np.random.Generator, *, cfg: FeasibilityConfig,
                   keep: tuple[str, ...] | None) -> dict[str, Any] | None:
    """:func:`feasibility_trial`, or None for a setting outside ``keep`` (its seed is used by no one)."""
    return feasibility_trial(item, rng, cfg=cfg) if keep is None or item[0] in keep else None


def table11(records: pd.DataFrame) -> pd.DataFrame:
    """Per setting: abstention-or-failure rate, nonabstention rate, status counts, and the
    most frequent recorded check with its share of trials."""
    rows = []
    for setting, grp in records.groupby("setting", sort=False):
        blocked = grp["status"].isin([ABSTAINED, FAILED_FEASIBILITY, FAILED_DISCOVERY])
        top = grp.loc[blocked, "checks"].value_counts()
        rec = {"setting": setting, "trials": len(grp),
               "abstention_or_failure": float(blocked.mean()), "nonabstention": float(1 - blocked.mean())}
        for st in (CONFIRMED, NOT_CONFIRMED, ABSTAINED, FAILED_FEASIBILITY, FAILED_DISCOVERY):
            rec[st] = int((grp["status"] == st).sum())
        if len(top):
            checks, cnt = top.index[0], int(top.iloc[0])
            rec["recorded_check"] = checks
            rec["share_of_blocked"] = cnt / int(blocked.sum())
        else:
            rec["recorded_check"] = "none"
            rec["share_of_blocked"] = np.nan
        rows.append(rec)
    out = pd.DataFrame(rows)
    order = [s for s in ALL_SETTINGS if s in set(out["setting"])]
    return out.set_index("setting").loc[order].reset_index()
