"""Study B and the geometry audit of SASST (Xu et al., 2026, Appendix D.4, Tables 9-10).

Study B (Table 9) asks which radius geometry lets discovery recover a planted stressed
subgroup: KMS, MMD, linear max-sliced, no radius, and a restricted linear registry,
across four mechanisms (linear, XOR, circular, policy by tool). The score is the
*held-out AUC*: the AUC of the selected rule's scores ``s_g(W)`` for separating the
planted stressed tasks from the rest on tasks not used in discovery.

The geometry audit (Table 10, :mod:`agentstudies.studies.sasst.geometry_audit`) uses the frozen τ²-bench task features (real,
pre-execution) with a planted short-goal mechanism and one frozen absolute radius
budget per feature geometry, and reports accepted rules, correct rule recovery and AUC.
The bandwidth diagnostic (in the same module) reports the median RBF similarity between task embeddings at
unit and median-heuristic bandwidths (the paper warns of ~4e-177 at unit bandwidth).

The paper leaves the data-generating details unstated; the choices made here are module
constants and :class:`StudyBConfig` / :class:`AuditConfig` fields, written down in the
chapter ``sasst_geometry`` and kept fixed:

* features of Study B: ``x1..x6 ~ N(0, 1)``, ``tool_1..tool_4 ~ Bernoulli(1/2)``,
  ``strict_policy ~ Bernoulli(1/2)``, all independent (11 columns);
* every mechanism stresses a quarter of the tasks (:func:`planted_subgroup`);
* outcomes: two systems, ``baseline`` succeeds with probability 0.5, ``candidate`` with
  0.6 outside the stressed subgroup and 0.3 inside it; two seeds per task;
  the contrast is ``candidate - baseline`` with a fragility sign (``eta = -1``);
* the radius of each geometry is frozen *score-blind* on a pilot draw of features: the
  75th percentile of the registry's distances (the paper's "common 75% radius budget").

The tables are built from the trial records by :class:`agentstudies.studies.sasst.tables.GeometryResult`
(``result.table(9)``, ``result.table(10)``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from agentstudies.parallel import seeded_map
from agentstudies.sasst import SASST, ClusterData, ComparisonPlan, Slot
from agentstudies.sasst.geometry import KMS, MMD, Geometry, MaxSliced, candidate_distances
from agentstudies.sasst.rules import (
    AxisTiltFamily,
    BumpFamily,
    CompositeFamily,
    DirectionTiltFamily,
    QuadraticTiltFamily,
    RuleFamily,
    rule_scores,
    score_matrix,
)
from agentstudies.studies._paper import paper_values

__all__ = [
    "MECHANISMS",
    "METHODS",
    "SYSTEMS",
    "STUDY_B_COLUMNS",
    "registry_ceiling",
    "recovery_auc",
    "xor_threshold",
    "study_b_features",
    "planted_subgroup",
    "success_probabilities",
    "simulate_scores",
    "StudyBConfig",
    "full_registry",
    "linear_registry",
    "registry_distances",
    "pilot_radii",
    "study_b_trial",
    "run_study_b",
    "PAPER_TABLE9",
    "informative_columns",
]

#: The four planted mechanisms of Study B (Table 9 rows).
MECHANISMS = ("linear", "xor", "circular", "policy_by_tool")


#: The five discovery methods of Study B (Table 9 columns).
METHODS = ("kms", "mmd", "max_sliced", "no_radius", "linear_only")


#: Systems of the simulated comparison (``candidate - baseline``).
SYSTEMS = ("baseline", "candidate")


#: Feature columns of Study B.
STUDY_B_COLUMNS = ("x1", "x2", "x3", "x4", "x5", "x6", "tool_1", "tool_2", "tool_3", "tool_4", "strict_policy")


#: Share of stressed tasks under every mechanism.
STRESSED_SHARE = 0.25


#: Success probabilities: baseline everywhere; candidate outside / inside the stressed subgroup.
P_BASELINE, P_CANDIDATE_OUT, P_CANDIDATE_IN = 0.5, 0.6, 0.3


#: Paper Table 9 (held-out AUC, mean over 200 trials), shown beside ours labelled "paper".
PAPER_TABLE9 = paper_values("sasst_geometry", "table9")  # data/paper/ (labelled "paper", never a result)


def recovery_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for the binary ``labels`` (ties count 1/2).

    The Mann-Whitney form ``AUC = (R_1 - n_1 (n_1 + 1) / 2) / (n_1 n_0)`` with average
    ranks ``R``; a constant score (for example a failed discovery, uniform weights) gives
    0.5.

    Parameters
    ----------
    labels : array (n,) of {0, 1} or bool, 1 = planted stressed task
    scores : array (n,) of rule scores ``s_g(W)``

    Raises
    ------
    ValueError
        If shapes differ, a score is not finite, or one class is empty.
    """
    y = np.asarray(labels).astype(bool).ravel()
    s = np.asarray(scores, dtype=float).ravel()
    if y.shape != s.shape:
        raise ValueError(f"labels have shape {y.shape} but scores {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    n1 = int(y.sum())
    n0 = y.size - n1
    if n1 == 0 or n0 == 0:
        raise ValueError(f"AUC needs both classes; got {n1} positive and {n0} negative labels")
    ranks = stats.rankdata(s)
    return float((ranks[y].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def _fresh(seed: int | np.random.SeedSequence) -> np.random.SeedSequence:
    """A SeedSequence equal to ``seed`` whose spawn counter starts at zero (so passing the
    same sequence twice gives the same children)."""
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key)
    return np.random.SeedSequence(seed)


def xor_threshold(share: float = STRESSED_SHARE) -> float:
    """``c`` with ``P(x1 x2 < -c) = share`` for independent standard normals.

    ``P(x1 x2 < -c) = (1/2) P(|x1 x2| > c)`` and
    ``P(|x1 x2| > c) = 4 int_0^inf (1 - Phi(c / x)) phi(x) dx`` (solved with brentq).
    """
    if not 0 < share < 0.5:
        raise ValueError(f"share must lie in (0, 0.5); got {share}")

    def tail(c: float) -> float:
        from scipy import integrate

        val, _ = integrate.quad(lambda x: _norm_sf(c / x) * _norm_pdf(x), 0, np.inf, limit=200)
        return 2.0 * val  # = P(x1 x2 < -c)

    return float(optimize.brentq(lambda c: tail(c) - share, 1e-9, 10.0, xtol=1e-12))


_SQRT_2PI = np.sqrt(2 * np.pi)  # scipy.stats' normal density constant


def _norm_pdf(x: float) -> np.float64:
    """``stats.norm.pdf(x)`` of a scalar, bit for bit, without the distribution machinery:
    it evaluates ``exp(-x**2 / 2) / sqrt(2 pi)`` on a one-element float64 array (NumPy's
    array loops; a float64 scalar's ``exp`` may differ in the last bit), then divides by the
    scale 1. About 50 times faster in :func:`xor_threshold`'s integrand."""
    a = np.array([x], dtype=float)
    return (np.exp(-a**2 / 2.0) / _SQRT_2PI)[0]


def _norm_sf(x: float) -> np.float64:
    """``stats.norm.sf(x)`` of a scalar, bit for bit: ``ndtr(-x)`` on a one-element array."""
    return special.ndtr(-np.array([x], dtype=float))[0]


_XOR_C = None


def _xor_c() -> float:
    global _XOR_C
    if _XOR_C is None:
        _XOR_C = xor_threshold(STRESSED_SHARE)
    return _XOR_C


def study_b_features(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Score-blind task features of Study B, shape (n, 11), columns :data:`STUDY_B_COLUMNS`.

    ``x1..x6 ~ N(0, 1)``; ``tool_1..tool_4, strict_policy ~ Bernoulli(1/2)``; independent.
    """
    if n < 2:
        raise ValueError(f"n must be >= 2; got {n}")
    cont = rng.standard_normal((n, 6))
    binary = (rng.random((n, 5)) < 0.5).astype(float)
    return pd.DataFrame(np.column_stack([cont, binary]), columns=list(STUDY_B_COLUMNS))


def planted_subgroup(mechanism: str, X: pd.DataFrame) -> np.ndarray:
    """Membership (bool, (n,)) of the planted stressed subgroup; each has share 1/4.

    * ``linear``: ``x1 + x2 > sqrt(2) z_{0.75}`` (a half-space);
    * ``xor``: ``x1 x2 < -c`` with ``c`` from :func:`xor_threshold` (opposite signs, away
      from the axes: quadrants 2 and 4);
    * ``circular``: ``x1^2 + x2^2 < -2 log(3/4)`` (a disc, the chi-square(2) quartile);
    * ``policy_by_tool``: ``tool_1 = 1`` and ``strict_policy = 1`` (an interaction of two
      binary pre-execution flags).

    Raises
    ------
    ValueError
        Unknown mechanism. ``KeyError`` if a needed column is missing.
    """
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r}; choose from {MECHANISMS}")
    need = ("tool_1", "strict_policy") if mechanism == "policy_by_tool" else ("x1", "x2")
    missing = [c for c in need if c not in X.columns]
    if missing:
        raise KeyError(f"features lack column(s) {missing} needed by mechanism {mechanism!r}")
    if mechanism == "policy_by_tool":
        return (X["tool_1"].to_numpy() > 0.5) & (X["strict_policy"].to_numpy() > 0.5)
    x1, x2 = X["x1"].to_numpy(float), X["x2"].to_numpy(float)
    if mechanism == "linear":
        return x1 + x2 > np.sqrt(2.0) * stats.norm.ppf(1 - STRESSED_SHARE)
    if mechanism == "xor":
        return x1 * x2 < -_xor_c()
    return x1**2 + x2**2 < -2.0 * np.log(1 - STRESSED_SHARE)


def success_probabilities(stressed: np.ndarray, p_baseline: float = P_BASELINE,
                          p_out: float = P_CANDIDATE_OUT, p_in: float = P_CANDIDATE_IN) -> np.ndarray:
    """Success probabilities (n, 2) of (baseline, candidate) given subgroup membership."""
    g = np.asarray(stressed, dtype=bool)
    return np.column_stack([np.full(g.size, p_baseline), np.where(g, p_in, p_out)])


def simulate_scores(prob: np.ndarray, n_seeds: int, rng: np.random.Generator) -> np.ndarray:
    """Seed-averaged binary scores (n, J): mean of ``n_seeds`` Bernoulli(prob) draws."""
    prob = np.asarray(prob, dtype=float)
    if n_seeds < 1:
        raise ValueError(f"n_seeds must be >= 1; got {n_seeds}")
    return (rng.random((n_seeds,) + prob.shape) < prob).mean(axis=0)


@dataclass(frozen=True)
class StudyBConfig:
    """Frozen settings of Study B (Table 9).

    Attributes
    ----------
    n_tasks : total tasks per trial, split in half into discovery and held-out
    n_seeds : seeds per task and system
    radius_quantile : share of the registry admitted by each geometry's radius on the pilot
    n_directions, n_centers : sizes of the direction-tilt and bump families
    min_ess, density_cap : discovery support checks
    quadratic : add pairwise product / squared-radius tilts on ``x1..x6`` to the full
        registry (it can then express XOR and circular: ceiling near 1); ``False`` is the
        earlier registry, whose ceiling on those mechanisms is low (the contrast)
    """

    n_tasks: int = 400
    n_seeds: int = 2
    radius_quantile: float = 0.75
    n_directions: int = 16
    n_centers: int = 12
    min_ess: float = 20.0
    density_cap: float = 5.0
    quadratic: bool = True

    @property
    def columns(self) -> tuple[str, ...]:
        """The feature columns the registry and the geometries see."""
        return STUDY_B_COLUMNS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def full_registry(cfg: StudyBConfig) -> CompositeFamily:
    """The full candidate registry: axis tilts, linear and kernel direction tilts, RBF bumps,
    and (``cfg.quadratic``) pairwise product / squared-radius tilts on ``x1..x6``."""
    fams: tuple[RuleFamily, ...] = (
        AxisTiltFamily(strengths=(0.5, 1.0)),
        DirectionTiltFamily(n_directions=cfg.n_directions, kernel=False, seed=1),
        DirectionTiltFamily(n_directions=cfg.n_directions, kernel=True, seed=2),
        BumpFamily(n_centers=cfg.n_centers, lifts=(3.0,), seed=3),
    )
    if getattr(cfg, "quadratic", False):
        fams += (QuadraticTiltFamily(strengths=(0.5, 1.0), use_columns=STUDY_B_COLUMNS[:6]),)
    return CompositeFamily(fams)


def linear_registry(cfg: StudyBConfig) -> CompositeFamily:
    """The restricted linear registry: axis tilts and linear direction tilts only."""
    return CompositeFamily((
        AxisTiltFamily(strengths=(0.5, 1.0)),
        DirectionTiltFamily(n_directions=cfg.n_directions, kernel=False, seed=1),
    ))


def _geometry(name: str, seed: int = 0) -> Geometry:
    return {"kms": KMS(seed=seed), "mmd": MMD(), "max_sliced": MaxSliced(seed=seed)}[name]


def registry_distances(family: RuleFamily, X: np.ndarray, columns: Sequence[str],
                       geometry: Geometry) -> np.ndarray:
    """Distances (G,) between uniform weights and each registry rule's weights on ``X``.

    The registry and the geometry are fitted on ``X`` (features only: score-blind);
    this is :func:`agentstudies.sasst.geometry.candidate_distances`.
    """
    return candidate_distances(np.asarray(X, dtype=float), list(columns), family, geometry)


def pilot_radii(cfg: StudyBConfig, rng: np.random.Generator) -> dict[str, float]:
    """Frozen absolute radius per geometry from one score-blind pilot draw of features.

    The radius is the ``cfg.radius_quantile`` quantile of the full registry's distances
    on ``n_tasks / 2`` pilot tasks (no outcomes are drawn).
    """
    Xp = study_b_features(cfg.n_tasks // 2, rng)[list(cfg.columns)]
    fam = full_registry(cfg)
    return {g: float(np.quantile(registry_distances(fam, Xp.to_numpy(), cfg.columns, _geometry(g)),
                                 cfg.radius_quantile))
            for g in ("kms", "mmd", "max_sliced")}


def registry_ceiling(family: RuleFamily, X_fit: np.ndarray, X_eval: np.ndarray, labels: np.ndarray,
                     columns: Sequence[str]) -> float:
    """Best held-out AUC any registry rule reaches: ``max_g AUC(labels, s_g(X_eval))``.

    The registry is fitted on ``X_fit`` (the discovery features), as in discovery. The
    ceiling is an oracle (it looks at the held-out labels) and only says whether the
    registry can *express* the mechanism; it is never used to choose a rule.
    """
    rules = family.fit(np.asarray(X_fit, dtype=float), list(columns))
    y = np.asarray(labels, dtype=bool)
    S = score_matrix(rules, np.asarray(X_eval), columns)  # row g is rule_scores(rules[g], X_eval, columns)
    ranks = stats.rankdata(S, axis=1)
    n1 = int(y.sum())
    n0 = y.size - n1
    auc = (ranks[:, y].sum(axis=1) - n1 * (n1 + 1) / 2.0) / (n1 * n0)
    return float(auc.max())


def _study_b_slots(cfg: StudyBConfig, radii: dict[str, float]) -> list[Slot]:
    contrast = {"candidate": 1, "baseline": -1}
    common = dict(sign=-1, min_ess=cfg.min_ess, density_cap=cfg.density_cap)
    return [
        Slot("kms", contrast, family="full", geometry="kms", radius=radii["kms"], **common),
        Slot("mmd", contrast, family="full", geometry="mmd", radius=radii["mmd"], **common),
        Slot("max_sliced", contrast, family="full", geometry="max_sliced", radius=radii["max_sliced"], **common),
        Slot("no_radius", contrast, family="full", geometry="none", radius=None, **common),
        Slot("linear_only", contrast, family="linear", geometry="none", radius=None, **common),
    ]


def study_b_trial(item: tuple[str, int], rng: np.random.Generator, *, cfg: StudyBConfig,
                  radii: dict[str, float]) -> list[dict[str, Any]]:
    """One Study B trial: draw tasks and outcomes, discover with every method, score held out.

    Parameters
    ----------
    item : (mechanism, trial index)
    rng : the trial's own generator (a SeedSequence child)

    Returns
    -------
    One record per method: ``mechanism, trial, method, auc, failed, rule, n_feasible,
    n_candidates, stressed_share, ceiling`` (the registry's best held-out AUC, see
    :func:`registry_ceiling`). A failed discovery scores AUC 0.5 (uniform weights).
    """
    mechanism, trial = item
    n = cfg.n_tasks
    X = study_b_features(n, rng)
    g = planted_subgroup(mechanism, X)
    Z = simulate_scores(success_probabilities(g), cfg.n_seeds, rng)
    half = n // 2
    d = np.arange(n) < half
    ids = np.array([f"t{i:04d}" for i in range(n)])
    cols = cfg.columns
    Xa = X[list(cols)].to_numpy(float)
    data = ClusterData(ids[d], Z[d], Xa[d], SYSTEMS, cols, np.full(half, cfg.n_seeds))
    eng = SASST(ComparisonPlan(SYSTEMS), _study_b_slots(cfg, radii),
                {"full": full_registry(cfg), "linear": linear_registry(cfg)},
                n_stability=0, seed=int(rng.integers(2**31)))
    disc = eng.discover(data, candidate_tables=False)  # the records read no candidate table
    ceiling_full = registry_ceiling(full_registry(cfg), Xa[d], Xa[~d], g[~d], cols)
    ceiling_linear = registry_ceiling(linear_registry(cfg), Xa[d], Xa[~d], g[~d], cols)
    out = []
    for method in METHODS:
        fr = disc.rules[method]
        if fr.rule is None:
            auc, rule = 0.5, "failed discovery"
        else:
            auc = recovery_auc(g[~d], rule_scores(fr.rule, Xa[~d], cols))
            rule = fr.rule.describe()
        out.append({"mechanism": mechanism, "trial": trial, "method": method, "auc": auc,
                    "failed": fr.rule is None, "rule": rule, "n_feasible": fr.n_feasible,
                    "n_candidates": fr.n_candidates, "stressed_share": float(g.mean()),
                    "ceiling": ceiling_linear if method == "linear_only" else ceiling_full})
    return out


def run_study_b(cfg: StudyBConfig, n_trials: int, *, seed: int | np.random.SeedSequence = 0, n_jobs: int = 1,
                backend: str = "loky", mechanisms: Sequence[str] = MECHANISMS) -> tuple[pd.DataFrame, dict[str, float]]:
    """Run Study B: ``n_trials`` per mechanism; returns (per-trial records, frozen radii).

    ``seed`` spawns two children: the pilot (radii) and the trials; trial ``i`` of the
    flattened (mechanism, trial) list always gets the ``i``-th grandchild, so the table
    does not depend on ``n_jobs`` or ``backend``.
    """
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1; got {n_trials}")
    for m in mechanisms:
        if m not in MECHANISMS:
            raise ValueError(f"unknown mechanism {m!r}; choose from {MECHANISMS}")
    pilot_seq, trial_seq = _fresh(seed).spawn(2)
    radii = pilot_radii(cfg, np.random.default_rng(pilot_seq))
    items = [(m, t) for m in mechanisms for t in range(n_trials)]
    res = seeded_map(study_b_trial, items, seed=trial_seq, n_jobs=n_jobs, backend=backend, cfg=cfg, radii=radii)
    return pd.DataFrame([r for rows in res for r in rows]), radii


def informative_columns(E: np.ndarray, rel_tol: float = 1e-4) -> np.ndarray:
    """Mask (d,) of embedding dimensions that are not numerically dead on this pool.

    A dimension is dead when its standard deviation over the pool is below ``rel_tol``
    times the median standard deviation of all dimensions. all-MiniLM-L6-v2 has such
    dimensions (on the τ²-bench scenarios and on WritingBench three have standard
    deviations of about 4e-33, 4e-33 and 8e-9 against a median of about 0.05); the
    per-column standardization of the engine would blow the last one up to a
    unit-variance column of floating-point noise, which then differs between a live
    encoding and a cached one. Score-blind: only the features enter.
    """
    E = np.asarray(E, dtype=float)
    sd = E.std(axis=0)
    return sd >= rel_tol * float(np.median(sd))
