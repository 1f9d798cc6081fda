"""The geometry audit of SASST (Xu et al., 2026, Appendix D.4, Table 10) and the bandwidth diagnostic.

The audit uses the frozen τ²-bench task features (real, pre-execution) with a planted
short-goal mechanism and one frozen absolute radius budget per feature geometry, and
records accepted rules, correct rule recovery and held-out AUC per trial
(:func:`run_geometry_audit`; Table 10 itself is
``GeometryResult(audit=records).table(10)`` of :mod:`agentstudies.studies.sasst.tables`).
The bandwidth diagnostic (:func:`bandwidth_diagnostic`) reports the median RBF similarity
between task embeddings at unit and median-heuristic bandwidths (the paper warns of
~4e-177 at unit bandwidth). Outcomes are simulated with Study B's success model
(:mod:`agentstudies.studies.sasst.geometry`); the choices are :class:`AuditConfig` fields,
written down in the chapter ``sasst_geometry``.

Source: Xu et al. (2026), SASST, Appendix D.4 (Table 10).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from agentstudies.parallel import seeded_map
from agentstudies.sasst import SASST, ClusterData, ComparisonPlan, Slot
from agentstudies.sasst.geometry import KMS, Geometry, Standardizer, median_bandwidth, rbf_similarity_median
from agentstudies.sasst.rules import AxisTiltFamily, rule_scores
from agentstudies.studies._paper import paper_note, paper_values
from agentstudies.studies.sasst.geometry import (
    SYSTEMS,
    _fresh,
    informative_columns,
    recovery_auc,
    registry_distances,
    simulate_scores,
    success_probabilities,
)

__all__ = [
    "STRUCTURED_COLUMNS",
    "AUDIT_GEOMETRIES",
    "PAPER_TABLE10",
    "PAPER_BANDWIDTH_SIMILARITY",
    "PreScaledKMS",
    "FeatureMapGeometry",
    "tau_audit_features",
    "short_goal_subgroup",
    "AuditConfig",
    "DISCOVERY_BUDGET",
    "budget_name",
    "audit_radii",
    "discovery_budget_radii",
    "audit_trial",
    "run_geometry_audit",
    "bandwidth_diagnostic",
]

#: Structured (non-embedding) pre-execution columns of the τ²-bench features used by the audit.
STRUCTURED_COLUMNS = (
    "scenario_chars", "scenario_words", "reason_chars", "reason_words", "n_actions",
    "n_write_actions", "n_read_actions", "n_distinct_tools", "has_write",
    "n_communicate_info", "transfer_expected", "is_airline",
)

#: Feature geometries of the audit (Table 10 rows, without the no-radius row).
AUDIT_GEOMETRIES = ("standardized", "normalized_structured", "pca_structured", "structured")

#: Paper Table 10 (mean over six kernel seeds), shown beside ours labelled "paper".
PAPER_TABLE10 = paper_values("sasst_geometry", "table10")  # data/paper/ (labelled "paper", never a result)

#: Paper D.4: median unit-bandwidth RBF similarity in the standardized high-dimensional space.
PAPER_BANDWIDTH_SIMILARITY = paper_note("sasst_geometry", "bandwidth_similarity_unit")  # data/paper/ (labelled "paper", never a result)

def PreScaledKMS(**kwargs: Any) -> KMS:
    """KMS on features the caller has already scaled: ``KMS(standardize=False)``."""
    return KMS(standardize=False, **kwargs)

@dataclass
class FeatureMapGeometry(Geometry):
    """A KMS radius computed on a score-blind feature map of the task features.

    Parameters
    ----------
    mode : one of :data:`AUDIT_GEOMETRIES`
        ``standardized``: every column standardized (the high-dimensional space);
        ``normalized_structured``: the embedding rows as encoded (unit L2 norm, not
        rescaled) beside the standardized structured columns;
        ``pca_structured``: the first ``n_pca`` principal components of the embedding
        block (standardized) beside the standardized structured columns;
        ``structured``: the standardized structured columns only.
    embedding_idx, structured_idx : column indices of the two blocks in ``X``
    kernel_seed : seed of the random Fourier features and witnesses
    n_pca : principal components kept by ``pca_structured``

    Everything (means, scales, principal axes, bandwidth, features, witnesses) is
    fitted on the discovery features and frozen.
    """

    mode: str = "standardized"
    embedding_idx: tuple[int, ...] = ()
    structured_idx: tuple[int, ...] = ()
    kernel_seed: int = 0
    n_pca: int = 8
    n_features: int = 128
    n_witness: int = 64
    name: str = field(default="feature_map", init=False)
    _inner: KMS | None = field(default=None, repr=False, init=False)
    _state: dict = field(default_factory=dict, repr=False, init=False)
    _mapped: tuple | None = field(default=None, repr=False, init=False)  # (X, its feature map), the last X
    _last: tuple | None = field(default=None, repr=False, init=False)  # (X, u, W, distances), the last call

    def __post_init__(self) -> None:
        if self.mode not in AUDIT_GEOMETRIES:
            raise ValueError(f"unknown feature geometry {self.mode!r}; choose from {AUDIT_GEOMETRIES}")
        self.name = self.mode

    @staticmethod
    def _std(A: np.ndarray) -> Standardizer:
        return Standardizer.fit(A)

    def _transform(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        st = self._state
        E = X[:, list(self.embedding_idx)]
        S = X[:, list(self.structured_idx)]
        if self.mode == "standardized":
            return st["all"](np.column_stack([S, E]))
        if self.mode == "structured":
            return st["struct"](S)
        if self.mode == "normalized_structured":
            return np.column_stack([st["struct"](S), E])
        P = (E - st["pca_mean"]) @ st["pca_axes"].T
        return np.column_stack([st["struct"](S), st["pca"](P)])

    def fit(self, X: np.ndarray) -> "FeatureMapGeometry":
        """Freeze the maps and the inner KMS on ``X`` (n, d). A trial fits each geometry twice on
        its discovery half (the outside budget, then discovery): a fit of equal settings on
        byte-identical features reuses the earlier fitted state (:func:`_fit_memo`)."""
        X = np.asarray(X, dtype=float)
        self._mapped = self._last = None
        key = (self.mode, self.embedding_idx, self.structured_idx, self.kernel_seed, self.n_pca,
               self.n_features, self.n_witness)
        hit = _fit_memo(key, X)
        if hit is not None:
            self._state, self._inner = hit
            return self
        self._fit(X)
        _fit_memo(key, X, (self._state, self._inner))
        return self

    def _fit(self, X: np.ndarray) -> None:
        E = X[:, list(self.embedding_idx)]
        S = X[:, list(self.structured_idx)]
        self._state = {"all": self._std(np.column_stack([S, E])), "struct": self._std(S)}
        if self.mode == "pca_structured":
            from sklearn.decomposition import PCA

            k = min(self.n_pca, E.shape[1], E.shape[0] - 1)
            pca = PCA(n_components=k, svd_solver="full").fit(E)
            self._state.update(pca_mean=pca.mean_, pca_axes=pca.components_)
            self._state["pca"] = self._std((E - pca.mean_) @ pca.components_.T)
        self._inner = PreScaledKMS(n_features=self.n_features, n_witness=self.n_witness,
                                   seed=self.kernel_seed).fit(self._transform(X))

    def features(self, X: np.ndarray) -> np.ndarray:
        """The feature map (n, d') the radius is computed in."""
        return self._transform(X)

    @property
    def bandwidth_(self) -> float:
        return float(self._inner.bandwidth_) if self._inner is not None else float("nan")

    def distance(self, X: np.ndarray, u: np.ndarray, W: np.ndarray) -> np.ndarray:
        if self._inner is None:
            raise RuntimeError(f"feature geometry {self.mode!r} used before fit()")
        # the same feature-map array for the same X, so the inner KMS reuses its sorted projections
        # (every slot of this geometry asks for distances on the one discovery matrix)
        if self._mapped is None or self._mapped[0] is not X:  # the array itself is held, so `is` is safe
            self._mapped = (X, self._transform(X))
        # a slot and its "target outside budget" twin ask for the same weights: answered once
        u_b, W_b = _bits(u), _bits(W)
        last = self._last
        if last is not None and last[0] is X and np.array_equal(last[1], u_b) and np.array_equal(last[2], W_b):
            return last[3].copy()
        out = self._inner.distance(self._mapped[1], u, W)
        self._last = (X, u_b, W_b, out.copy())
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"geometry": "feature_map", "mode": self.mode, "kernel_seed": self.kernel_seed,
                "n_pca": self.n_pca, "n_features": self.n_features, "n_witness": self.n_witness,
                "bandwidth": self.bandwidth_}

def _bits(a: np.ndarray) -> np.ndarray:
    """A copy of ``a``'s float64 values as unsigned integers: equal exactly when the bytes are."""
    return np.array(a, dtype=float, order="C").view(np.uint64)


#: Fitted (state, inner KMS) of :class:`FeatureMapGeometry` by settings: [(features, fitted)], newest last.
_FITS: dict[tuple, list[tuple[np.ndarray, tuple]]] = {}


def _fit_memo(key: tuple, X: np.ndarray, fitted: tuple | None = None) -> tuple | None:
    """Look up (``fitted`` None) or store the fitted state of settings ``key`` on features ``X``.

    A hit needs byte-identical features; two fits per settings are kept (a trial's discovery
    half is fitted twice, a new trial brings new features) and 32 settings in all.
    """
    bits = _bits(X)
    if fitted is None:
        for old, got in _FITS.get(key, ()):
            if old.shape == bits.shape and np.array_equal(old, bits):
                return got
        return None
    entries = _FITS.pop(key, [])
    _FITS[key] = (entries + [(bits, fitted)])[-2:]
    while len(_FITS) > 32:
        del _FITS[next(iter(_FITS))]
    return None


def tau_audit_features(text_encoder: str = "minilm") -> tuple[pd.DataFrame, list[str], list[str]]:
    """Frozen τ²-bench task features for the audit: (table, structured columns, embedding columns).

    The table is :func:`agentstudies.envs.tau.task_features` for all 164 tasks
    plus ``is_airline`` (1 for airline tasks); the tool-indicator columns and numerically
    dead embedding dimensions (:func:`informative_columns`) are dropped.
    """
    from agentstudies.envs.tau import task_features

    f = task_features(None, text_encoder=text_encoder)
    f = f.assign(is_airline=(f["domain"] == "airline").astype(float))
    emb = [c for c in f.columns if c.startswith("emb_")]
    emb = [c for c, keep in zip(emb, informative_columns(f[emb].to_numpy(float))) if keep]
    cols = list(STRUCTURED_COLUMNS) + emb
    return f[cols].astype(float), list(STRUCTURED_COLUMNS), emb

def short_goal_subgroup(features: pd.DataFrame, quantile: float = 0.25) -> np.ndarray:
    """Planted short-goal tasks: ``scenario_words`` at or below its ``quantile`` (bool (n,))."""
    if "scenario_words" not in features.columns:
        raise KeyError("features lack column 'scenario_words' (the goal length)")
    w = features["scenario_words"].to_numpy(float)
    return w <= np.quantile(w, quantile)

@dataclass(frozen=True)
class AuditConfig:
    """Frozen settings of the geometry audit (Table 10).

    Attributes
    ----------
    n_kernel_seeds : kernel seeds (random features and witnesses); trial ``t`` uses seed
        ``t mod n_kernel_seeds``
    radius_quantile : the common radius budget: each geometry's absolute radius is this
        quantile of the registry's distances on all frozen task features (score-blind)
    strengths : axis-tilt strengths of the fixed registry
    n_seeds : seeds per task and system
    short_quantile : goal-length quantile defining the planted short-goal tasks
    n_pca : principal components of ``pca_structured``
    """

    n_kernel_seeds: int = 6
    radius_quantile: float = 0.75
    strengths: tuple[float, ...] = (0.5, 1.0)
    n_seeds: int = 2
    short_quantile: float = 0.25
    n_pca: int = 8
    min_ess: float = 20.0
    density_cap: float = 5.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

#: Suffix of the Table 10 rows whose radius is the target-blind budget frozen on each trial's
#: discovery half: the ``radius_quantile`` of the registry's distances there, set from the
#: features alone before any outcome is drawn and without knowing which tilt is the target
#: (the paper's "one frozen absolute radius budget"). Whether the target then falls outside
#: it is an empirical result of the trial, recorded as ``target_outside``.
DISCOVERY_BUDGET = ", discovery budget"

def budget_name(geometry: str) -> str:
    """Table 10 row name of ``geometry`` with the target-blind discovery budget."""
    return geometry + DISCOVERY_BUDGET

def _audit_registry(cfg: AuditConfig) -> AxisTiltFamily:
    return AxisTiltFamily(strengths=tuple(cfg.strengths), use_columns=STRUCTURED_COLUMNS)

def _audit_geometry(mode: str, names: Sequence[str], emb: Sequence[str], kernel_seed: int,
                    cfg: AuditConfig) -> FeatureMapGeometry:
    idx = {c: i for i, c in enumerate(names)}
    return FeatureMapGeometry(mode=mode, embedding_idx=tuple(idx[c] for c in emb),
                              structured_idx=tuple(idx[c] for c in STRUCTURED_COLUMNS),
                              kernel_seed=kernel_seed, n_pca=cfg.n_pca)

def _is_target(describe: str) -> bool:
    return describe.endswith("along low scenario_words")

def _is_length_axis(describe: str) -> bool:
    return describe.endswith("along low scenario_words") or describe.endswith("along low scenario_chars")

def audit_radii(features: pd.DataFrame, emb: Sequence[str], cfg: AuditConfig) -> pd.DataFrame:
    """The frozen absolute radius budget on all tasks: per (kernel seed, geometry), the
    radius (``radius_quantile`` of the registry's distances), the nearest target tilt's
    distance and whether the target rule (low ``scenario_words``) lies within it.

    Score-blind and target-blind: only the features enter the radius; the target's
    distance is reported beside it, never used to set it.
    """
    X = features.to_numpy(float)
    names = list(features.columns)
    fam = _audit_registry(cfg)
    rules = fam.fit(X, names)
    target = np.array([_is_target(r.describe()) for r in rules])
    rows = []
    for k in range(cfg.n_kernel_seeds):
        for mode in AUDIT_GEOMETRIES:
            dist = registry_distances(fam, X, names, _audit_geometry(mode, names, emb, k, cfg))
            r = float(np.quantile(dist, cfg.radius_quantile))
            t_min = float(dist[target].min())
            rows.append({"kernel_seed": k, "geometry": mode, "radius": r,
                         "target_distance_min": t_min,
                         "target_within": bool((dist[target] <= r).any()),
                         "n_registry": len(rules)})
    return pd.DataFrame(rows)

def discovery_budget_radii(X_d: np.ndarray, names: Sequence[str], emb: Sequence[str], kernel_seed: int,
                           cfg: AuditConfig) -> dict[str, float]:
    """The target-blind radius budget of each geometry, frozen on the discovery half.

    The ``cfg.radius_quantile`` of the registry's distances from uniform weights, computed
    on the discovery features ``X_d`` (n_D, d) with the registry and the geometry fitted on
    them (the distances discovery checks the radius against). Score-blind and target-blind:
    only features enter, and no tilt is singled out. Returns geometry -> radius.
    """
    fam = _audit_registry(cfg)
    return {m: float(np.quantile(registry_distances(fam, X_d, names, _audit_geometry(m, names, emb, kernel_seed, cfg)),
                                 cfg.radius_quantile)) for m in AUDIT_GEOMETRIES}

def audit_trial(trial: int, rng: np.random.Generator, *, features: pd.DataFrame, emb: Sequence[str],
                radii: pd.DataFrame, cfg: AuditConfig) -> list[dict[str, Any]]:
    """One audit trial: a random half split of the frozen tasks, fresh outcomes with the
    planted short-goal mechanism, discovery under every geometry's frozen radius.

    Returns one record per geometry (and ``no_radius``): ``accepted`` (candidates meeting
    every discovery constraint), ``accepted_radius`` (within the radius), ``correct``
    (the selected rule is a low-``scenario_words`` tilt), ``auc`` on the held-out half,
    ``target_outside`` (the nearest target tilt's discovery distance exceeds the radius)
    and ``target_percentile`` (the share of candidates nearer uniform weights than it).
    Each geometry has two budgets: the one frozen on all tasks (``radii``) and the one
    frozen on this trial's discovery half (:func:`discovery_budget_radii`); both are
    target-blind.
    """
    names = list(features.columns)
    X = features.to_numpy(float)
    n = X.shape[0]
    g = short_goal_subgroup(features, cfg.short_quantile)
    Z = simulate_scores(success_probabilities(g), cfg.n_seeds, rng)
    perm = rng.permutation(n)
    d = np.zeros(n, dtype=bool)
    d[perm[: n // 2]] = True
    ks = trial % cfg.n_kernel_seeds
    rad = radii[radii["kernel_seed"] == ks].set_index("geometry")["radius"]
    contrast = {"candidate": 1, "baseline": -1}
    common = dict(sign=-1, family="axis", min_ess=cfg.min_ess, density_cap=cfg.density_cap)
    rad_d = discovery_budget_radii(X[d], names, emb, ks, cfg)
    slots = [Slot(m, contrast, geometry=m, radius=float(rad[m]), **common) for m in AUDIT_GEOMETRIES]
    slots += [Slot(budget_name(m), contrast, geometry=m, radius=float(rad_d[m]), **common)
              for m in AUDIT_GEOMETRIES]
    slots.append(Slot("no_radius", contrast, geometry="none", radius=None, **common))
    geoms = {m: _audit_geometry(m, names, emb, ks, cfg) for m in AUDIT_GEOMETRIES}
    ids = np.asarray(features.index, dtype=str)
    data = ClusterData(ids[d], Z[d], X[d], SYSTEMS, tuple(names), np.full(int(d.sum()), cfg.n_seeds))
    eng = SASST(ComparisonPlan(SYSTEMS), slots, {"axis": _audit_registry(cfg)}, geometries=geoms,
                n_stability=0, seed=int(rng.integers(2**31)))
    disc = eng.discover(data)
    out = []
    for s in slots:
        fr = disc.rules[s.name]
        cand = fr.candidates
        within = int((cand["distance"] <= (s.radius if s.radius is not None else np.inf) + 1e-15).sum())
        if fr.rule is None:
            auc, correct, length_axis, rule = 0.5, False, False, "failed discovery"
        else:
            auc = recovery_auc(g[~d], rule_scores(fr.rule, X[~d], names))
            rule = fr.rule.describe()
            correct = _is_target(rule)
            length_axis = _is_length_axis(rule)
        is_t = cand["rule"].map(_is_target)
        target_ok = is_t & cand["feasible"]
        t_dist = float(cand.loc[is_t, "distance"].min()) if s.radius is not None else np.nan
        out.append({"trial": trial, "kernel_seed": ks, "geometry": s.name, "radius": s.radius,
                    "accepted": fr.n_feasible,
                    "accepted_radius": within, "n_candidates": fr.n_candidates, "correct": correct,
                    "length_axis": length_axis, "target_feasible": bool(target_ok.any()),
                    "target_distance": t_dist,
                    "target_outside": bool(t_dist > s.radius) if s.radius is not None else np.nan,
                    "target_percentile": float((cand["distance"] < t_dist).mean()) if s.radius is not None else np.nan,
                    "auc": auc, "rule": rule})
    return out

def run_geometry_audit(features: pd.DataFrame, emb: Sequence[str], cfg: AuditConfig, n_trials: int, *,
                       seed: int | np.random.SeedSequence = 0, n_jobs: int = 1, backend: str = "loky") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the audit: (per-trial records, frozen radius budget). Trial ``i`` gets the
    ``i``-th SeedSequence child of ``seed``; kernel seed ``i mod n_kernel_seeds``."""
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1; got {n_trials}")
    missing = [c for c in STRUCTURED_COLUMNS if c not in features.columns]
    if missing:
        raise KeyError(f"audit features lack structured column(s) {missing}")
    radii = audit_radii(features, emb, cfg)
    res = seeded_map(audit_trial, n_trials, seed=_fresh(seed), n_jobs=n_jobs, backend=backend,
                     features=features, emb=list(emb), radii=radii, cfg=cfg)
    return pd.DataFrame([r for rows in res for r in rows]), radii

def bandwidth_diagnostic(spaces: dict[str, np.ndarray]) -> pd.DataFrame:
    """Median RBF similarity between tasks at unit and median-heuristic bandwidths.

    Parameters
    ----------
    spaces : mapping label -> feature matrix (n, d) *already in the space of interest*
        (for example every column standardized).

    Returns
    -------
    DataFrame with ``space, dim, median_sq_distance, median_heuristic_bandwidth,
    similarity_unit, similarity_median``. At the median heuristic the median similarity
    is ``exp(-1/2)`` up to the even-count midpoint; at unit bandwidth it is
    ``exp(-median ||x_i - x_j||^2 / 2)``, which underflows towards 0 as the dimension grows
    (standardized d-dimensional features have ``E||x_i - x_j||^2 = 2d``).
    """
    from scipy.spatial.distance import pdist

    rows = []
    for label, A in spaces.items():
        A = np.asarray(A, dtype=float)
        d2 = pdist(A, "sqeuclidean")
        h = median_bandwidth(A)
        rows.append({"space": label, "dim": A.shape[1], "median_sq_distance": float(np.median(d2)),
                     "median_heuristic_bandwidth": h,
                     "similarity_unit": rbf_similarity_median(A, 1.0),
                     "log10_similarity_unit": -float(np.median(d2)) / (2.0 * np.log(10.0)),
                     "similarity_median": rbf_similarity_median(A, h)})
    return pd.DataFrame(rows)
