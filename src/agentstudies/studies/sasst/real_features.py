"""Study D of SASST: a partly synthetic real-feature study (Xu et al., 2026, D.6, Table 12).

The paper used 1,001 MMLU-Pro Law items, Qwen3-8B score tensors, 384-dimensional text
features and an injected degradation flipping 70% of correct answers inside a 40-item
jurisprudence subgroup. MMLU-Pro is not bundled with any installed package (the
``inspect_evals`` MMLU-Pro task downloads it). The closest bundled pool is WritingBench
(``inspect_evals/writingbench/benchmark_all.jsonl``): exactly 1,000 real writing
queries (564 English, 436 Chinese) with a six-way topical ``domain1`` label and a
100-way ``domain2`` label. The stressed subgroup is the 42 *legal-practice* items of the
``Politics & Law`` domain: ``domain2`` in :data:`SUBGROUP_DOMAIN2`.

What is real and what is simulated
----------------------------------
* real: the item texts, their topical labels, and their sentence embeddings
  (all-MiniLM-L6-v2, 384-d; or the TF-IDF + SVD encoder);
* simulated: the score tensor (items x 2 systems x seeds) and the injected degradation.

Score tensor (:func:`simulate_score_tensor`; the paper does not state it):
``p_i ~ Beta(a, b)`` with mean ``base_accuracy = 0.5`` and ``a + b = 2`` (uniform item
difficulty); the ``reference`` and ``degraded`` systems are two independent runs of the
same model, ``Y[i, j, r] ~ Bernoulli(p_i)`` for ``n_seeds = 3`` seeds each; then every
correct answer of ``degraded`` on a subgroup item is flipped to incorrect with
probability ``flip_share = 0.7``. Outside the subgroup the two systems have the same
law, so the population contrast ``degraded - reference`` is 0 there and
``-0.7 E[p_i]`` on the subgroup.

The item pool and its embedding cache live in
:mod:`agentstudies.studies.sasst._real_features_data` (re-exported here).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from agentstudies.sasst import CONFIRMATION, DISCOVERY, SASST, ComparisonPlan, SASSTReport, Slot, split_clusters
from agentstudies.stats import contribution_se
from agentstudies.sasst.geometry import KMS, Standardizer
from agentstudies.sasst.rules import (
    BumpFamily,
    CompositeFamily,
    DirectionTiltFamily,
    ItemBumpFamily,
    ProjectionTiltRule,
    RuleFamily,
    rule_from_dict,
    rule_scores,
    score_matrix,
    top_weighted_sets,
)
from agentstudies.studies.sasst.geometry import recovery_auc, registry_distances
from agentstudies.results import PaperTables
from agentstudies.studies._paper import paper_values
from agentstudies.studies.sasst._neighbourhood import _neighbourhood_means
from agentstudies.studies.sasst._real_features_data import (  # noqa: F401 - re-exported
    POOL_RESOURCE, POOL_SHA256, SUBGROUP_DOMAIN2, CACHE_NAME, pool_path, load_item_pool, subgroup_mask,
    embed_pool, study_features, write_embedding_cache, load_cached_embeddings,
)

__all__ = [
    "POOL_RESOURCE",
    "POOL_SHA256",
    "SUBGROUP_DOMAIN2",
    "SYSTEMS",
    "RealFeatureConfig",
    "pool_path",
    "load_item_pool",
    "subgroup_mask",
    "simulate_score_tensor",
    "episode_table",
    "embed_pool",
    "study_features",
    "load_cached_embeddings",
    "write_embedding_cache",
    "top_weighted_overlap",
    "StudyDResult",
    "StudyDRuns",
    "NeighbourhoodDirectionFamily",
    "run_study_d",
    "registry_ceiling",
    "study_d_features",
    "ceiling_over_splits",
    "oracle_recovery_auc",
    "study_d_sentences",
    "ORACLE_ROWS",
    "PAPER_RECOVERY_AUC",
    "CEILING_ROWS",
    "PAPER_TABLE12",
]

SYSTEMS = ("reference", "degraded")

#: Paper Table 12, shown beside ours labelled "paper".
PAPER_TABLE12 = paper_values("sasst_real_features", "table12")  # data/paper/ (labelled "paper", never a result)
#: The recovery AUC the paper's selected rule *achieved*: a lower bound of its registry's
#: ceiling, so a design whose ceiling is below it cannot reproduce the paper's recovery.
PAPER_RECOVERY_AUC = float(PAPER_TABLE12.set_index("quantity").loc["recovery AUC", "paper"])


@dataclass(frozen=True)
class RealFeatureConfig:
    """Frozen settings of Study D (see the module docstring).

    Attributes
    ----------
    base_accuracy, concentration : mean and ``a + b`` of the Beta item accuracies
    n_seeds : seeds per item and system
    flip_share : share of the degraded system's correct subgroup answers flipped
    discovery_fraction : share of items sent to discovery
    radius_quantile : KMS radius = this quantile of the registry's distances on the
        discovery features (score-blind)
    n_centers : RBF bumps (lift 3) around k-means centers of the discovery embeddings
    n_directions : kernel direction tilts added to the bumps when ``registry="mixed"``
    registry : ``"item_bump"`` (the chapter's design: one bump per discovery item,
        bandwidth the median distance to the ``k_neighbors``-th nearest discovery item,
        a score-blind diagnostic; it can express the subgroup: its ceiling is reported),
        ``"bump"`` (k-means centres at half the median distance: the earlier design, kept
        as the labelled contrast whose ceiling is low), ``"mixed"`` (k-means bumps +
        kernel tilts, a sensitivity run) or ``"item_bump+direction"`` (the item bumps plus
        :class:`NeighbourhoodDirectionFamily` linear tilts: a registry whose ceiling can
        reach the paper's achieved recovery AUC on the MiniLM features)
    topic_features : append the items' real topical label ``domain1`` (one-hot, scaled by
        1/sqrt(2) so two different labels are at distance 1) to the embeddings: a
        pre-execution, score-blind feature like the paper's subject metadata
    k_neighbors, item_lift : bandwidth neighbour rank and lift of the ``item_bump`` registry
    direction_neighbours : neighbourhood sizes of the ``item_bump+direction`` registry's tilts:
        one size, equal to ``k_neighbors`` (the item-bump registry's bandwidth rank), set by
        that rule and not chosen by any ceiling or subgroup label
    ceiling_target : recovery-AUC ceiling at or above which the design can reproduce the
        paper's recovery; ``None`` (default) is the paper's achieved AUC
        (:data:`PAPER_RECOVERY_AUC`: a lower cut-off of ours would say "can test" for
        a ceiling below what the paper's rule achieved)
    n_stability : discovery resamples for functional stability
    top_fraction : share of items forming the top-weighted set (stability and diagnostics)
    stability_threshold, min_ess, density_cap : support and stability checks
    """

    base_accuracy: float = 0.5
    concentration: float = 2.0
    n_seeds: int = 3
    flip_share: float = 0.7
    discovery_fraction: float = 0.5
    radius_quantile: float = 0.75
    n_centers: int = 24
    n_directions: int = 16
    registry: str = "item_bump"
    topic_features: bool = True
    k_neighbors: int = 20
    item_lift: float = 3.0
    direction_neighbours: tuple[int, ...] = (20,)
    ceiling_target: float | None = None
    n_stability: int = 100
    top_fraction: float = 0.10
    stability_threshold: float = 0.6
    min_ess: float = 20.0
    density_cap: float = 5.0
    n_draws: int = 2000

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ----------------------------------------------------------------------------- scores
def simulate_score_tensor(subgroup: np.ndarray, cfg: RealFeatureConfig, rng: np.random.Generator
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Simulated score tensor with the injected degradation.

    Returns
    -------
    Y : uint8 array (n, 2, n_seeds), systems in :data:`SYSTEMS` order (after flipping)
    p : array (n,), item accuracies
    flipped : bool array (n, n_seeds), which degraded answers were flipped (only
        correct answers on subgroup items can be)

    Raises
    ------
    ValueError
        On parameters outside their range.
    """
    g = np.asarray(subgroup, dtype=bool)
    if not 0 < cfg.base_accuracy < 1 or cfg.concentration <= 0:
        raise ValueError("base_accuracy must lie in (0, 1) and concentration be > 0")
    if not 0 <= cfg.flip_share <= 1:
        raise ValueError(f"flip_share must lie in [0, 1]; got {cfg.flip_share}")
    n = g.size
    a = cfg.base_accuracy * cfg.concentration
    p = rng.beta(a, cfg.concentration - a, size=n)
    Y = (rng.random((n, 2, cfg.n_seeds)) < p[:, None, None]).astype(np.uint8)
    flip = (rng.random((n, cfg.n_seeds)) < cfg.flip_share) & g[:, None] & (Y[:, 1, :] == 1)
    Y[:, 1, :][flip] = 0
    return Y, p, flip


def episode_table(Y: np.ndarray, item_ids: Sequence[str]) -> pd.DataFrame:
    """Long episode table (``task_id, seed, workflow, score``) from a (n, J, R) tensor."""
    n, J, R = Y.shape
    if len(item_ids) != n:
        raise ValueError(f"{len(item_ids)} item ids for a tensor of {n} items")
    ii, jj, rr = np.meshgrid(np.arange(n), np.arange(J), np.arange(R), indexing="ij")
    return pd.DataFrame({"task_id": np.asarray(item_ids)[ii.ravel()], "seed": rr.ravel(),
                         "workflow": np.asarray(SYSTEMS)[jj.ravel()], "score": Y.ravel().astype(float)})


# ----------------------------------------------------------------------------- diagnostics
def top_weighted_overlap(scores: np.ndarray, subgroup: np.ndarray, top_fraction: float) -> dict[str, float]:
    """Precision, recall and Jaccard of the top-weighted set against the subgroup.

    The top-weighted set is ``{i: s_i >= q_{1 - top_fraction}(s)}`` (ties included, a
    non-constant rule's baseline level excluded), the same definition as the engine's
    stability metric (:func:`agentstudies.sasst.rules.top_set_jaccard`).
    """
    s = np.asarray(scores, dtype=float)
    g = np.asarray(subgroup, dtype=bool)
    if s.shape != g.shape:
        raise ValueError(f"scores {s.shape} and subgroup {g.shape} differ in shape")
    top = top_weighted_sets(s[None, :], top_fraction)[0]
    inter = int((top & g).sum())
    return {"top_size": int(top.sum()), "precision": inter / max(1, int(top.sum())),
            "recall": inter / max(1, int(g.sum())), "jaccard": inter / max(1, int((top | g).sum()))}


@dataclass
class NeighbourhoodDirectionFamily(RuleFamily):
    """Linear exponential tilts along score-blind *neighbourhood discriminant* directions.

    For each discovery item ``k`` (every ``stride``-th when ``max_centers`` caps the count)
    and each neighbourhood size ``m`` in ``neighbours``: ``beta = (Sigma + s I)^-1 (xbar_k -
    xbar)``, the linear discriminant (Fisher) direction between the item's ``m`` nearest
    discovery neighbours (itself included; mean ``xbar_k``) and the whole discovery set
    (mean ``xbar``, covariance ``Sigma``, ridge ``s = shrinkage * trace(Sigma) / d``). The
    family is ours: the paper names no candidate family for Study D (Appendix C.1 asks
    only for a reusable score map). Each rule is a frozen projection, exponentially tilted
    and clipped (:class:`~agentstudies.sasst.rules.ProjectionTiltRule`), the projection
    centred and scaled by its discovery mean and standard deviation. Every
    direction is fitted on discovery *features* only (score-blind, label-blind): the
    neighbourhoods stand in for the subgroup a tilt could express.

    Why: Table 12's recovery AUC ranks items by one rule's score. A bump ranks by the
    distance to one item, which in a few hundred dimensions mixes the subgroup with the
    rest of its topic (ceiling 0.957 on MiniLM); a supervised linear direction separates
    the subgroup at held-out AUC about 0.98 (:func:`oracle_recovery_auc`), so a linear
    registry that can point at a neighbourhood can reach the paper's achieved AUC.

    Raises
    ------
    ValueError
        On an empty ``neighbours``, a size below 1, or negative ``shrinkage`` / ``clip``.
    """

    name = "neighbourhood_direction"
    _pure_fit = True  # fit depends on to_dict(), the features and the columns only (rules._memo_fit)
    neighbours: tuple[int, ...] = (20,)
    shrinkage: float = 1.0
    strengths: tuple[float, ...] = (1.0,)
    clip: float = 3.0
    max_centers: int | None = None

    def fit(self, X, columns):
        if not self.neighbours or min(self.neighbours) < 1:
            raise ValueError(f"neighbours must be non-empty sizes >= 1; got {self.neighbours}")
        if self.shrinkage < 0 or self.clip <= 0:
            raise ValueError(f"shrinkage must be >= 0 and clip > 0; got {self.shrinkage}, {self.clip}")
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != len(columns):
            raise ValueError(f"features have shape {X.shape} but {len(columns)} columns were named")
        cols = tuple(str(c) for c in columns)
        n, d = X.shape
        st = Standardizer(mean=np.zeros(d), scale=np.ones(d))  # features used as given (as item bumps)
        mean = X.mean(axis=0)
        cov = np.atleast_2d(np.cov(X, rowvar=False))
        ridge = self.shrinkage * float(np.trace(cov)) / d
        inv = np.linalg.pinv(cov + ridge * np.eye(d), hermitian=True)
        sq = np.sum(X * X, axis=1)
        order = np.argsort(np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0), axis=1, kind="stable")
        idx = np.arange(n)
        if self.max_centers is not None and n > self.max_centers:
            idx = idx[:: int(np.ceil(n / self.max_centers))]
        means = _neighbourhood_means(X, order, idx, sorted({min(m, n) for m in self.neighbours}))
        # a resample repeats items: a neighbourhood whose mean difference has the same bytes as
        # one already seen gets the same direction, centre and spread (computed once, shared)
        seen: dict[bytes, int] = {}  # bytes of the mean difference -> row of `betas` (-1: zero direction)
        betas: list[np.ndarray] = []
        picks: list[tuple[int, int, int]] = []  # (item, size, row) in registry order
        for r, i in enumerate(idx):
            for m in self.neighbours:
                diff = means[min(m, n)][r] - mean
                key = diff.tobytes()
                row = seen.get(key)
                if row is None:
                    beta = inv @ diff
                    norm = math.sqrt(float(beta.dot(beta)))  # np.linalg.norm of a vector, without its checks
                    row = seen[key] = -1 if norm == 0.0 else len(betas)
                    if norm != 0.0:
                        betas.append(beta / norm)
                if row >= 0:
                    picks.append((int(i), m, row))
        P = np.empty((len(betas), n))  # each projection X @ beta (one matrix-vector product per row) ...
        for row, beta in enumerate(betas):
            np.matmul(X, beta, out=P[row])
        centers, spreads = P.mean(axis=1), P.std(axis=1)  # ... reduced row by row as the vector was
        rules: list = []
        for i, m, row in picks:
            for lam in self.strengths:
                rules.append(ProjectionTiltRule(
                    columns=cols, standardizer=st, direction=betas[row], center=float(centers[row]),
                    spread=float(spreads[row]) or 1.0, strength=lam, clip=self.clip,
                    label=f"linear tilt toward the {m} discovery neighbours of item {i}"))
        return rules

    def to_dict(self):
        return {"family": self.name, "neighbours": list(self.neighbours), "shrinkage": self.shrinkage,
                "strengths": list(self.strengths), "clip": self.clip, "max_centers": self.max_centers}


def _registry(cfg: RealFeatureConfig) -> CompositeFamily:
    """The declared registry: RBF bumps with lift 3 around k-means centers of the discovery
    embeddings (``bump``), optionally with kernel direction tilts (``mixed``)."""
    items = ItemBumpFamily(lifts=(cfg.item_lift,), k_neighbors=cfg.k_neighbors)
    if cfg.registry == "item_bump":
        return CompositeFamily((items,))
    if cfg.registry == "item_bump+direction":
        return CompositeFamily((items, NeighbourhoodDirectionFamily(neighbours=cfg.direction_neighbours)))
    bumps = BumpFamily(n_centers=cfg.n_centers, lifts=(3.0,), seed=0)
    if cfg.registry == "bump":
        return CompositeFamily((bumps,))
    if cfg.registry == "mixed":
        return CompositeFamily((bumps, DirectionTiltFamily(n_directions=cfg.n_directions, kernel=True, seed=0)))
    raise ValueError(f"registry must be 'item_bump', 'item_bump+direction', 'bump' or 'mixed'; got {cfg.registry!r}")


@dataclass(frozen=True)
class StudyDResult:
    """Result of one Study D run (one encoder).

    Attributes
    ----------
    report : the engine's :class:`~agentstudies.sasst.SASSTReport`
    quantities : dict of the Table 12 quantities
    confirmation_scores : the frozen rule's scores on the confirmation items
    confirmation_subgroup : subgroup membership of the confirmation items
    radius : the frozen KMS radius
    """

    text_encoder: str
    report: SASSTReport = field(repr=False)
    quantities: dict[str, Any]
    confirmation_scores: np.ndarray = field(repr=False)
    confirmation_subgroup: np.ndarray = field(repr=False)
    radius: float


def run_study_d(pool: pd.DataFrame, embeddings: np.ndarray, Y: np.ndarray, split: pd.Series,
                cfg: RealFeatureConfig, *, text_encoder: str, seed: int = 0) -> StudyDResult:
    """Run SASST on the pool: discovery of a stress rule on the text embeddings, 100
    stability resamples, frozen-rule confirmation, joint bounds and status.

    Two slots share one confirmation family: ``unweighted`` (uniform) and ``stress``
    (registry of RBF bumps around k-means centers and kernel direction tilts, KMS radius),
    both for the fragility claim ``degraded - reference < 0``.
    """
    n = len(pool)
    if embeddings.shape[0] != n or Y.shape[0] != n:
        raise ValueError(f"pool has {n} items but embeddings {embeddings.shape[0]} and scores {Y.shape[0]}")
    embeddings, cols = study_d_features(pool, embeddings, cfg)
    feats = pd.DataFrame(embeddings, index=pool.index, columns=cols)
    episodes = episode_table(Y, list(pool.index))
    d_mask = split.loc[pool.index].to_numpy() == DISCOVERY
    fam = _registry(cfg)
    radius = float(np.quantile(registry_distances(fam, embeddings[d_mask], cols, KMS()), cfg.radius_quantile))
    contrast = {"degraded": 1, "reference": -1}
    slots = [Slot("unweighted", contrast, sign=-1, min_ess=cfg.min_ess, density_cap=cfg.density_cap),
             Slot("stress", contrast, sign=-1, family="registry", geometry="kms", radius=radius,
                  min_ess=cfg.min_ess, density_cap=cfg.density_cap, stability_threshold=cfg.stability_threshold)]
    conf_ids = split.index[split == CONFIRMATION]
    conf = pool.index.isin(conf_ids)
    g_conf = pool["subgroup"].to_numpy()[conf]
    # before the engine: the registry is fitted on these discovery features three times (the radius
    # budget above, this ceiling, discovery), and CompositeFamily reuses a fit on identical features
    ceiling = registry_ceiling(fam, embeddings[d_mask], embeddings[conf], cols, g_conf)
    eng = SASST(ComparisonPlan(SYSTEMS), slots, {"registry": fam}, n_stability=cfg.n_stability,
                top_fraction=cfg.top_fraction, n_draws=cfg.n_draws, seed=seed)
    rep = eng.run(episodes, feats, split)
    t = rep.table
    st, un = t.loc["stress"], t.loc["unweighted"]
    q: dict[str, Any] = {"rule": st["rule"], "radius": radius, "n_candidates": st["n_candidates"],
                         "n_feasible": st["n_feasible"]}
    z = stats.norm.ppf(0.975)
    if st["rule_json"]:
        rule = rule_from_dict(st["rule_json"])
        s = rule_scores(rule, embeddings[conf], cols)
        q["recovery_auc"] = recovery_auc(g_conf, s)
        q.update({f"top_{k}": v for k, v in top_weighted_overlap(s, g_conf, cfg.top_fraction).items()})
    else:
        s = np.ones(int(conf.sum()))
        q.update(recovery_auc=np.nan, top_precision=np.nan, top_recall=np.nan, top_jaccard=np.nan, top_top_size=0)
    q.update(ceiling)
    q.update(oracle_recovery_auc(embeddings[d_mask], pool["subgroup"].to_numpy()[d_mask], embeddings[conf], g_conf))
    target = PAPER_RECOVERY_AUC if cfg.ceiling_target is None else cfg.ceiling_target
    q["ceiling_target"] = target
    q["can_test"] = bool(q["registry_ceiling"] >= target)
    q.update({
        "weighted": st["estimate"], "se": st["se"],
        "ci_low": st["estimate"] - z * st["se"], "ci_high": st["estimate"] + z * st["se"],
        "unweighted": un["estimate"], "amplification": st["estimate"] - un["estimate"],
        "ess": st["ess"], "max_density": st["max_density"], "stability": st["stability"],
        "stability_correlation": st["stability_correlation"], "status": st["status"],
        "bound": st["bound"], "unweighted_status": un["status"], "n_discovery": int(d_mask.sum()),
        "n_confirmation": int(conf.sum()), "subgroup_confirmation": int(g_conf.sum()),
        "amplification_se": _amplification_se(rep),
    })
    return StudyDResult(text_encoder, rep, q, s, g_conf, radius)


def _amplification_se(rep: SASSTReport) -> float:
    """Standard error of ``stress - unweighted`` on the confirmation items: the cluster SE of
    the difference of the two slots' plug-in contributions (NaN when either is infeasible)."""
    phi = dict(zip(rep.phi_slots, np.asarray(rep.phi, float).T))
    if not {"stress", "unweighted"} <= set(phi):
        return float("nan")
    return float(contribution_se(phi["stress"] - phi["unweighted"]))


def study_d_features(pool: pd.DataFrame, embeddings: np.ndarray, cfg: RealFeatureConfig
                     ) -> tuple[np.ndarray, list[str]]:
    """Study D's feature matrix (n, d) and its column names: the embeddings (``emb_###``)
    and, with ``cfg.topic_features``, the one-hot ``domain1`` label scaled by 1/sqrt(2)
    (``topic_<label>``). Score-blind and pre-execution."""
    cols = [f"emb_{j:03d}" for j in range(embeddings.shape[1])]
    X = np.asarray(embeddings, float)
    if cfg.topic_features:
        topics = pd.get_dummies(pool["domain1"]).astype(float) / np.sqrt(2.0)
        X = np.hstack([X, topics.to_numpy()])
        cols = cols + [f"topic_{t}" for t in topics.columns]
    return X, cols


def ceiling_over_splits(pool: pd.DataFrame, embeddings: np.ndarray, cfg: RealFeatureConfig,
                        seeds: Sequence[int]) -> pd.DataFrame:
    """The registry ceiling of ``cfg``'s registry over split seeds: how much of a ceiling is
    the split's.

    For each seed, ``split_clusters(pool.index, seed=seed)`` draws the discovery half, the
    registry is fitted there and :func:`registry_ceiling` ranks the confirmation subgroup.
    Returns one row per seed: ``split_seed, registry_ceiling, ceiling_rule,
    reaches_target`` (at or above ``cfg.ceiling_target``, default the paper's achieved
    recovery AUC). Raises ``ValueError`` for no seeds.
    """
    if len(seeds) == 0:
        raise ValueError("ceiling_over_splits needs at least one split seed")
    X, cols = study_d_features(pool, embeddings, cfg)
    fam, g = _registry(cfg), pool["subgroup"].to_numpy()
    target = PAPER_RECOVERY_AUC if cfg.ceiling_target is None else cfg.ceiling_target
    rows = []
    for seed in seeds:
        d = (split_clusters(pool.index, seed=int(seed)).loc[pool.index] == DISCOVERY).to_numpy()
        c = registry_ceiling(fam, X[d], X[~d], cols, g[~d])
        rows.append({"split_seed": int(seed), **c, "reaches_target": bool(c["registry_ceiling"] >= target)})
    return pd.DataFrame(rows)


def registry_ceiling(family, X_discovery: np.ndarray, X_confirmation: np.ndarray, columns: Sequence[str],
                     subgroup: np.ndarray) -> dict[str, Any]:
    """The best recovery AUC any candidate of the registry reaches on the confirmation items.

    The family is fitted on the discovery features (as discovery does); each candidate's
    scores on the confirmation items are ranked against ``subgroup``
    (:func:`~agentstudies.studies.sasst.geometry.recovery_auc`). A low ceiling means no
    selection, however good, could recover the subgroup: the design cannot test recovery.

    Returns ``{"registry_ceiling": max AUC, "ceiling_rule": its description}``.
    """
    cands = family.fit(np.asarray(X_discovery, float), list(columns))
    S = score_matrix(cands, np.asarray(X_confirmation, float), columns)  # row g: rule_scores(cands[g], ...)
    aucs = [recovery_auc(subgroup, s) for s in S]
    k = int(np.nanargmax(aucs))
    return {"registry_ceiling": float(aucs[k]), "ceiling_rule": cands[k].describe()}


def oracle_recovery_auc(X_discovery: np.ndarray, g_discovery: np.ndarray, X_confirmation: np.ndarray,
                        g_confirmation: np.ndarray, *, C: float = 1.0, C_insample: float = 1e4) -> dict[str, float]:
    """How separable the subgroup is in the feature space itself, with its labels known.

    Two label-aware logistic regressions on the features (never used by discovery, which
    is label- and score-blind; a diagnostic of the design):

    * ``oracle_auc_heldout``: fitted on the discovery items' subgroup labels (``C``),
      recovery AUC on the confirmation items. The selection strength a rule learned with
      the answer in hand reaches out of sample: if it were below the paper's achieved
      0.974, the pool and features themselves (not the registry) would be the limit.
    * ``oracle_auc_insample``: fitted on the confirmation items' own labels (``C_insample``,
      nearly unregularised) and scored on them: the best a linear rule on these features
      can rank the confirmation subgroup, an upper bound of every linear registry's
      ceiling (1.0 when the subgroup is linearly separable there).

    Parameters
    ----------
    X_discovery, X_confirmation : arrays (n_D, d), (n_I, d), the rule features
    g_discovery, g_confirmation : bool arrays (n_D,), (n_I,), subgroup membership

    Raises
    ------
    ValueError
        On mismatched shapes or a split without both classes (AUC undefined).
    """
    Xd, Xc = np.asarray(X_discovery, float), np.asarray(X_confirmation, float)
    gd, gc = np.asarray(g_discovery, bool), np.asarray(g_confirmation, bool)
    if Xd.shape[0] != gd.size or Xc.shape[0] != gc.size or Xd.shape[1] != Xc.shape[1]:
        raise ValueError(f"feature / label shapes disagree: {Xd.shape}, {gd.shape}, {Xc.shape}, {gc.shape}")
    for name, gg in (("discovery", gd), ("confirmation", gc)):
        if gg.all() or not gg.any():
            raise ValueError(f"the {name} split holds only one class of subgroup membership: AUC undefined")
    from sklearn.linear_model import LogisticRegression

    held = LogisticRegression(C=C, max_iter=5000).fit(Xd, gd).decision_function(Xc)
    ins = LogisticRegression(C=C_insample, max_iter=5000).fit(Xc, gc).decision_function(Xc)
    return {"oracle_auc_heldout": recovery_auc(gc, held), "oracle_auc_insample": recovery_auc(gc, ins)}


#: Rows Table 12 adds after the paper's quantities (no paper value).
CEILING_ROWS = ("registry ceiling (best candidate's recovery AUC)",
                "ceiling reaches the paper's achieved recovery AUC")
#: Rows after :data:`CEILING_ROWS`: the label-aware oracle AUCs (:func:`oracle_recovery_auc`).
ORACLE_ROWS = ("oracle recovery AUC, labels known (held out)",
               "oracle recovery AUC, labels known (in sample, linear bound)")
#: The paper column of the added rows: the paper reports no ceiling; its selected rule's
#: achieved AUC is a lower bound of it (so its ceiling reaches it by definition).
_PAPER_ADDED = (f">= {PAPER_RECOVERY_AUC:.3f} (its achieved AUC)", "yes", "not reported", "not reported")


def _table12_frame(results: Sequence[StudyDResult]) -> pd.DataFrame:
    """Table 12 quantities (rows) for each run (column named by its ``text_encoder``) and the
    paper's values (column ``paper``, from ``data/paper/``)."""
    def fmt(q: dict[str, Any]) -> list[str]:
        f4 = lambda x: "nan" if not np.isfinite(x) else f"{x:.4f}"  # noqa: E731
        return [f4(q["weighted"]), f"[{f4(q['ci_low'])}, {f4(q['ci_high'])}]", f4(q["unweighted"]),
                f4(q["amplification"]), f"{q['recovery_auc']:.3f}", f"{q['top_precision']:.3f}",
                f"{q['top_jaccard']:.3f}", f"{q['top_recall']:.3f}", f"{q['ess']:.1f}", f"{q['stability']:.2f}",
                q["status"]]

    out = pd.DataFrame({"quantity": list(PAPER_TABLE12["quantity"]) + list(CEILING_ROWS) + list(ORACLE_ROWS)})
    for r in results:
        q = r.quantities
        out[r.text_encoder] = fmt(q) + [f"{q['registry_ceiling']:.3f}", "yes" if q["can_test"] else "no",
                                        f"{q['oracle_auc_heldout']:.3f}", f"{q['oracle_auc_insample']:.3f}"]
    out["paper"] = list(PAPER_TABLE12["paper"].astype(str)) + list(_PAPER_ADDED)
    return out


@dataclass(frozen=True)
class StudyDRuns(PaperTables):
    """The Study D runs a chapter reports side by side (one per encoder or registry).

    ``table(12)`` (:class:`~agentstudies.results.PaperTables`, paper ``"sasst"``): the
    Table 12 quantities, one column per run named by its ``text_encoder``, then the rows
    :data:`CEILING_ROWS` and :data:`ORACLE_ROWS`, then the paper's column ``paper``.
    """

    PAPER = "sasst"
    results: tuple[StudyDResult, ...]

    def __post_init__(self) -> None:
        if not self.results:
            raise ValueError("StudyDRuns needs at least one StudyDResult")
        names = [r.text_encoder for r in self.results]
        if len(set(names)) != len(names) or "paper" in names or "quantity" in names:
            raise ValueError(f"run names must be distinct and not 'paper' / 'quantity': {names}")

    def _table_12(self) -> pd.DataFrame:
        return _table12_frame(self.results)


def study_d_sentences(q: dict[str, Any], expected: float, *, level: float = 0.95) -> dict[str, Any]:
    """The chapter's signal, amplification and status sentences for one run, beside the paper.

    Parameters
    ----------
    q : :attr:`StudyDResult.quantities` of the main run
    expected : the expected unweighted confirmation shift given the drawn item accuracies
    level : the injected effect is called "as large as the noise" when ``|expected|`` is
        below the two-sided ``level`` normal quantile times the standard error

    Returns ``{"signal_sentence", "amp_sentence", "status_sentence": text,
    "barely_reweights": bool (ESS above 80 % of the confirmation items), "amplification_tested":
    bool (|amplification| beyond the two-sided ``level`` normal quantile times
    ``q["amplification_se"]``; the sentence says whether the claim is tested)}``; paper
    values are read from ``data/paper/`` (:data:`PAPER_TABLE12`).

    Raises
    ------
    ValueError
        If ``level`` is not in (0, 1); ``KeyError`` naming a missing quantity.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    need = ["unweighted", "weighted", "se", "amplification", "recovery_auc", "ess", "n_confirmation",
            "max_density", "unweighted_status", "status", "stability"]
    missing = [k for k in need if k not in q]
    if missing:
        raise KeyError(f"study quantities lack {missing}")
    p12 = PAPER_TABLE12.set_index("quantity")["paper"]
    z = float(stats.norm.ppf(1 - (1 - level) / 2))
    noisy = bool(np.isfinite(q["se"]) and abs(expected) < z * q["se"])
    amp_se = float(q.get("amplification_se", np.nan))
    amp_beyond = bool(np.isfinite(amp_se) and abs(q["amplification"]) > z * amp_se)
    return {
        "signal_sentence": (
            f"The degradation moves the expected unweighted confirmation contrast by {expected:.4f}; the realized "
            f"unweighted contrast is {q['unweighted']:.4f} and the weighted one {q['weighted']:.4f} (standard error "
            f"{q['se']:.4f}; paper {p12['unweighted confirmation contrast']} and "
            f"{p12['weighted confirmation contrast']}). "
            + ("The simulated noise is as large as the injected effect." if noisy else
               "The injected effect is large relative to the noise.")),
        "amp_sentence": (
            f"Stress amplification (weighted minus unweighted) is {q['amplification']:.4f}, standard error "
            f"{amp_se:.4f} (paper {p12['stress amplification']}): "
            + ("beyond noise, so this run tests the paper's amplification claim. " if amp_beyond else
               "within noise of zero, so the stress rule adds nothing measurable to the uniform contrast and this run "
               "does not test the paper's amplification claim. ")
            + f"Recovery AUC is {q['recovery_auc']:.3f} (paper {p12['recovery AUC']}); the frozen rule keeps an ESS of "
            f"{q['ess']:.0f} of {q['n_confirmation']} confirmation items (paper {p12['inference ESS']}) with maximum "
            f"density ratio {q['max_density']:.2f}."),
        "status_sentence": (
            f"The uniform slot is *{q['unweighted_status']}*; the stress slot is *{q['status']}* with functional "
            f"stability {q['stability']:.2f} (paper: *{p12['formal status']}*, stability "
            f"{p12['functional stability (100 resamples)']})."),
        "barely_reweights": bool(q["ess"] > 0.8 * q["n_confirmation"]),
        "amplification_tested": amp_beyond,
    }
