"""The SASST protocol: discovery, stability, frozen-rule confirmation, joint bounds, statuses.

Implements Algorithm 1 and Appendix C of Xu et al. (2026), *Selection-Aware Stress
Testing for Interactive Agents*:

1. split whole clusters into discovery ``D`` and confirmation ``I``;
2. on ``D``, for every slot, rank the feasible candidates of its family by Eq. (2),
   ``Delta_loc(g) = Delta_D + sum_i (w_i(g; D) - 1/|D|) psi_i``, with ``psi_i`` the
   first-order contributions of the fixed plan (including its selection step), subject
   to the density cap, minimum ESS and radius; record *failed discovery* if none is
   feasible; break ties by the slot's deterministic rule;
3. freeze the rule; estimate its stability by resampling discovery clusters (weight
   correlation and top-weighted-set overlap on the frozen discovery feature set);
4. on ``I``, apply the frozen rule, recheck support (density, ESS, split denominators),
   compute the exact weighted contrast and its plug-in contributions (Lemma 2);
5. form joint one-sided bounds over all support-feasible slots (Gaussian multiplier
   maximum with one multiplier per cluster shared across slots, or Bonferroni-t), and
   assign one of the five statuses of Table 3.

This module is the protocol (:class:`SASST`: discovery, stability, confirmation); its
pieces have one module each: rule scores and their agreement (:mod:`._scores`), support
constraints and selection (:mod:`._support`), what discovery freezes (:mod:`._results`),
the report with its joint band and statuses (:mod:`._report`). Their names stay
importable from here.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.sasst._data import CONFIRMATION, DISCOVERY, ClusterData, cluster_data, split_clusters
from agentstudies.sasst._geometry import Geometry, make_geometry
from agentstudies.sasst._plan import ComparisonPlan
from agentstudies.sasst._protocol import departures, refuse_departures, stamp
from agentstudies.sasst._report import SASSTReport, _joint_band, _report_frame, _status_fields
from agentstudies.sasst._shared import SharedWork, tensor_mean as _tensor_mean
from agentstudies.sasst._results import FINGERPRINT_FIELDS, Discovery, FrozenRule, _spec_json, refuse_other_engine
from agentstudies.sasst._rules import FixedFamily, Rule, RuleFamily, UniformRule
from agentstudies.sasst._scores import (_jaccard, rule_scores, score_matrix, top_set_jaccard, top_weighted_sets,
                                       weight_correlation)
from agentstudies.sasst._resample import resample_selections
from agentstudies.sasst._slots import Slot
from agentstudies.sasst._support import _all_hold, _radius_screen, _select, support_constraints  # noqa: F401 (re-exported)
from agentstudies._tolerances import SUPPORT_TOL
from agentstudies.parallel import keyed_seed
from agentstudies.results import make_provenance
from agentstudies.specs import check_count, check_n_draws, check_share
from agentstudies.stats import INFERENCE_METHODS, bootstrap_counts

__all__ = [
    "SASST", "STABILITY_MODES", "Discovery", "FrozenRule", "SASSTReport", "rule_scores", "score_matrix",
    "support_constraints",
    "top_set_jaccard", "top_weighted_sets", "weight_correlation",
]

#: Stability variants: refit the slot's family on each resample, or keep the fitted registry.
STABILITY_MODES = ("refit", "fixed")

#: Field digests shared by engines (:meth:`SASST._digest_key` -> (snapshot, digest, objects held)).
_DIGESTS: dict[tuple, tuple[Any, str, list]] = {}
_DIGESTS_SIZE = 256

#: The empty candidate table of ``discover(candidate_tables=False)`` (each rule gets a copy).
_NO_TABLE = pd.DataFrame()

#: The entries of :meth:`SASST.params`, in order.
_PARAMS = ("plan", "slots", "families", "level", "inference", "n_draws", "n_stability", "stability_metric",
           "stability_mode", "top_fraction", "exact_multiplier", "seed")


@dataclass
class _DiscoveryCache:
    """Fitted candidate families (rules, score matrix) and geometries of one discovery."""

    families: dict[str, tuple[list[Rule], np.ndarray]] = field(default_factory=dict)
    geometries: dict[str, Geometry] = field(default_factory=dict)
    masks: np.ndarray | None = None
    #: first-order contributions ``(H1 - mu1) @ grad`` (n,) by the bytes of the target contrast
    #: ``c``: slots that share a discovery target share them (the same product, computed once)
    psi: dict[bytes, np.ndarray] = field(default_factory=dict)


def _same_state(a: tuple, b: tuple) -> bool:
    """Whether two :meth:`SASST._fingerprint_state` snapshots are equal (False when a value
    cannot be compared, e.g. an array inside a family's ``to_dict()``: the digest is then
    recomputed)."""
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False


# ----------------------------------------------------------------------------- engine
class SASST:
    """Selection-Aware Semantic Stress Testing (Algorithm 1, Appendix C).

    Parameters
    ----------
    plan : :class:`~agentstudies.sasst.ComparisonPlan`
        The fixed comparison plan ``A``.
    slots : sequence of :class:`Slot` or dicts
        The planned family ``J_0`` (dicts are checked by :meth:`Slot.from_dict`).
    families : mapping name -> :class:`RuleFamily`
        Candidate families referenced by the slots.
    geometries : mapping name -> Geometry or spec, optional
        Radius geometries; ``kms``, ``mmd``, ``max_sliced`` and ``none`` are available by
        name with default settings.
    level : float
        Familywise confidence level of the joint one-sided band (``1 - alpha``; 0.95).
    inference : str
        ``gaussian`` (default), ``bonferroni-t``, ``hc1``, ``t-scaled`` or ``pointwise``.
    n_draws : int
        Gaussian multiplier draws.
    n_stability : int
        Discovery resamples for stability (0 skips stability; every slot is then stable).
    stability_metric : {"jaccard", "correlation", "min"}
        Which functional agreement the stability threshold applies to.
    stability_mode : {"refit", "fixed"}
        ``refit`` (default) reruns the whole slot on each discovery resample: the family
        is refitted on the resampled discovery features (quantile thresholds, k-means bump
        centres, standardization and tilt centring move with the resample), then Eq. (2)
        and every constraint select a rule, whose scores on the frozen discovery feature
        set are compared with the frozen rule's (C.2). ``fixed`` keeps the registry fitted
        on ``D`` and reselects among its candidates only (cheaper, likely optimistic).
    top_fraction : float
        Share of the reference set forming the top-weighted set.
    discovery_fraction : float
        Share of clusters sent to discovery by :meth:`run` when no split is given.
    exact_multiplier : bool
        Draw the multiplier maximum from its exact conditional Gaussian law (same
        distribution as one multiplier per cluster, cheaper for large N; see
        :func:`agentstudies.stats.multiplier_critical_value`).
    seed : int
        Root seed: the split, the stability resamples (one stream per discovery
        specification) and the multipliers use ``keyed_seed(seed, "split")``,
        ``keyed_seed(seed, "stability", k)`` and ``keyed_seed(seed, "multiplier")``.

    Raises
    ------
    ValueError
        Duplicate slot names, a slot referring to an unknown family or geometry or
        system, an unknown inference method or slot field; ``n_draws`` < one-sided ``specs.min_draws``
        (20 at 0.95), ``n_stability`` < 0, a fraction outside (0, 1]; TypeError: non-integer counts (2.7).
    """

    def __init__(
        self,
        plan: ComparisonPlan,
        slots: Sequence[Slot | Mapping[str, Any]],
        families: Mapping[str, RuleFamily] | None = None,
        *,
        geometries: Mapping[str, Geometry | str | dict] | None = None,
        level: float = 0.95,
        inference: str = "gaussian",
        n_draws: int = 2000,
        n_stability: int = 100,
        stability_metric: str = "jaccard",
        stability_mode: str = "refit",
        top_fraction: float = 0.25,
        discovery_fraction: float = 0.5,
        exact_multiplier: bool = False,
        seed: int = 0,
    ) -> None:
        self.plan = plan
        self.slots = [s if isinstance(s, Slot) else Slot.from_dict(s) for s in slots]
        if not self.slots:
            raise ValueError("SASST needs at least one slot")
        names = [s.name for s in self.slots]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate slot name(s): {dup}")
        self.families = dict(families or {})
        geoms: dict[str, Any] = {"kms": "kms", "mmd": "mmd", "max_sliced": "max_sliced", "none": "none"}
        geoms.update(geometries or {})
        self.geometries = geoms
        self._check_slots()
        if inference not in INFERENCE_METHODS:
            raise ValueError(f"unknown inference method {inference!r}; choose from {INFERENCE_METHODS}")
        if stability_metric not in ("jaccard", "correlation", "min"):
            raise ValueError(f"stability_metric must be 'jaccard', 'correlation' or 'min'; got {stability_metric!r}")
        if not 0 < level < 1:
            raise ValueError(f"level must lie in (0, 1); got {level}")
        self.level = float(level)
        self.inference = inference
        self.n_draws = check_n_draws(n_draws, level, sides=1, where="SASST")
        self.n_stability = check_count("n_stability", n_stability, where="SASST", what="stability resamples; 0: none")
        check_share("top_fraction", top_fraction, where="SASST")
        check_share("discovery_fraction", discovery_fraction, include_one=False, where="SASST")
        self.stability_metric = stability_metric
        if stability_mode not in STABILITY_MODES:
            raise ValueError(f"stability_mode must be one of {STABILITY_MODES}; got {stability_mode!r}")
        self.stability_mode = stability_mode
        self.top_fraction = top_fraction
        self.discovery_fraction = discovery_fraction
        self.exact_multiplier = bool(exact_multiplier)
        self.seed = seed

    def _check_slots(self) -> None:
        for s in self.slots:
            self.plan.contrast_vector(s.contrast)
            if s.discovery_target is not None:
                self.plan.contrast_vector(s.discovery_target)
            if s.family is not None and s.family not in self.families:
                raise ValueError(f"slot {s.name!r} refers to unknown family {s.family!r}; known: {sorted(self.families)}")
            if s.family is not None and s.geometry not in self.geometries:
                raise ValueError(f"slot {s.name!r} refers to unknown geometry {s.geometry!r}; known: {sorted(self.geometries)}")

    # ------------------------------------------------------------------ params
    def params(self) -> dict[str, Any]:
        return {k: self._param(k) for k in _PARAMS}

    def _param(self, k: str) -> Any:
        """One entry of :meth:`params` (the plan, slots and families as ``to_dict()``)."""
        if k == "plan":
            return self.plan.to_dict()
        if k == "slots":
            return [s.to_dict() for s in self.slots]
        if k == "families":
            return {name: f.to_dict() for name, f in self.families.items()}
        return getattr(self, k)

    def fingerprint(self) -> dict[str, str]:
        """SHA-256 of each discovery-binding setting (:data:`FINGERPRINT_FIELDS`).

        :meth:`discover` stamps it on the :class:`Discovery`; :meth:`confirm` refuses a
        discovery stamped by an engine whose slots, registry (families), geometries,
        plan or stability settings differ, naming the fields (SASST Algorithm 1: the
        rule, its family and every threshold are frozen before confirmation).
        """
        state = self._fingerprint_state()
        memo = self.__dict__.get("_fingerprint_memo")
        if memo is not None and _same_state(memo[0], state):
            return dict(memo[1])
        digests = {}
        for i, k in enumerate(FINGERPRINT_FIELDS):  # the snapshot holds one part per field, in this order
            if memo is not None and _same_state(memo[0][i], state[i]):
                digests[k] = memo[1][k]  # this setting is unchanged since the last digest (e.g. only the seed moved)
                continue
            key = self._digest_key(k, state[i])
            hit = _DIGESTS.get(key) if key is not None else None
            if hit is not None and _same_state(hit[0], state[i]):
                digests[k] = hit[1]
                continue
            v = self.geometries if k == "geometries" else self._param(k)
            digests[k] = hashlib.sha256(json.dumps(_spec_json(v), default=str).encode()).hexdigest()
            if key is not None:
                if len(_DIGESTS) >= _DIGESTS_SIZE:
                    _DIGESTS.clear()
                _DIGESTS[key] = (state[i], digests[k], list(self.families.values()))
        self._fingerprint_memo = (state, digests)
        return dict(digests)

    def _digest_key(self, k: str, part: Any) -> tuple | None:
        """Key of field ``k``'s digest in the digests shared by engines (None: not shared).

        The slots by type and ``repr`` (every field, exact), the plan by type and ``repr``,
        the families by name, type and identity (a :class:`FixedFamily` by its rules'
        identities; the entry holds the objects, so an id is not reused while it lives). A
        shared digest is used only if the field's snapshot also equals the one it was
        computed from, the check the engine's own memo makes: so a new engine with the same
        plan, slots and registry objects (a simulation trial) does not digest them again.
        """
        if k == "slots":
            return (k, tuple(part))
        if k == "plan":
            return (k, type(self.plan), repr(self.plan))
        if k == "families":
            return (k, tuple((name, type(f), tuple(map(id, f.rules)) if type(f) is FixedFamily else id(f))
                             for name, f in self.families.items()))
        return None

    def _fingerprint_state(self) -> tuple:
        """A cheap snapshot of every setting :meth:`fingerprint` digests, by value: the plan's
        and families' ``to_dict()``, each slot's type and ``repr`` (every field), the
        geometry specs and the stability settings. Equal snapshots give equal digests, so
        a trial that discovers and confirms with one engine digests its settings once (the
        JSON walk over a registry's rules cost about 40% of a small simulation trial); an
        engine changed in place (a family's field, a slot, a threshold) gets a new digest.
        One part per :data:`FINGERPRINT_FIELDS` entry, in that order: an engine reused with
        a new seed digests only the seed again.
        """
        return (self.plan.to_dict(), [(type(s), repr(s)) for s in self.slots],
                [(k, type(f), f.to_dict()) for k, f in self.families.items()], _spec_json(self.geometries),
                self.n_stability, self.stability_metric, self.stability_mode, self.top_fraction, self.seed)

    # ------------------------------------------------------------------ run
    def run(
        self,
        episodes: pd.DataFrame,
        features: pd.DataFrame,
        split: Mapping[str, str] | pd.Series | None = None,
        *,
        strata: Mapping[str, str] | pd.Series | None = None,
        cluster: str = "task_id",
        seed_col: str = "seed",
        system: str = "workflow",
        score: str = "score",
        feature_columns: Sequence[str] | None = None,
    ) -> SASSTReport:
        """Validate the tables, split whole clusters, discover, confirm and report.

        ``split`` maps cluster id -> ``"discovery"``/``"confirmation"``; if omitted,
        clusters are split at random (seeded, optionally within ``strata``).

        Raises
        ------
        KeyError, ValueError
            On invalid tables (see :func:`~agentstudies.sasst.cluster_data`), a split
            missing clusters or with unknown labels, or an empty discovery or
            confirmation split.
        """
        data = cluster_data(episodes, features, self.plan.systems, cluster=cluster, seed=seed_col,
                            system=system, score=score, feature_columns=feature_columns)
        is_d = self._discovery_mask(data, split, strata)
        report = self.confirm(self.discover(data.subset(is_d)), data.subset(~is_d))
        return replace(report, provenance=make_provenance(seed=self.seed, episodes=episodes, features=features),
                       notes=tuple(data.notes))

    def _discovery_mask(self, data: ClusterData, split: Mapping[str, str] | pd.Series | None,
                        strata: Mapping[str, str] | pd.Series | None) -> np.ndarray:
        """Boolean mask of the discovery clusters: ``split`` checked, or a seeded split."""
        if split is None:
            split = split_clusters(data.ids, discovery_fraction=self.discovery_fraction,
                                   seed=int(keyed_seed(self.seed, "split").generate_state(1)[0]), strata=strata)
        sp = pd.Series(split)
        sp.index = sp.index.astype(str)
        missing = [str(c) for c in data.ids if c not in sp.index]
        if missing:
            raise ValueError(f"split lacks cluster(s): {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
        labels = sp.loc[data.ids].to_numpy()
        bad = sorted(set(labels) - {DISCOVERY, CONFIRMATION})
        if bad:
            raise ValueError(f"split labels must be {DISCOVERY!r} or {CONFIRMATION!r}; got {bad}")
        is_d = labels == DISCOVERY
        if not is_d.any():
            raise ValueError("empty discovery split: no cluster is labelled 'discovery'")
        if is_d.all():
            raise ValueError("empty confirmation split: no cluster is labelled 'confirmation'")
        return is_d

    # ------------------------------------------------------------------ discovery
    def _geometry(self, name: str, X: np.ndarray) -> Geometry:
        """The slot geometry fitted on ``X``; a user's Geometry object is copied, never fitted in place."""
        return copy.deepcopy(make_geometry(self.geometries[name])).fit(X)

    def discover(self, data: ClusterData, *, candidate_tables: bool = True,
                 shared: SharedWork | None = None) -> Discovery:
        """Discovery on ``D``: select, freeze and stability-check a rule per slot (C.2).

        ``candidate_tables=False`` leaves each :attr:`FrozenRule.candidates` empty (the
        per-candidate predicted contrast, ESS, density, distance and feasibility);
        simulation trials that never read it skip building thousands of small tables.
        The frozen rules and every number of the report are the same. ``shared`` (a
        :class:`~agentstudies.sasst._shared.SharedWork` of one trial) reuses score matrices
        and tensors computed by earlier calls on the same data: the same numbers, bit for bit.
        """
        n = len(data)
        if n < 2:
            raise ValueError(f"discovery split has {n} cluster(s); need at least 2")
        plan = self.plan
        H1, mu1 = _tensor_mean(plan, data.Z, np.ones(n), plan.split_masks(data.ids), shared)
        theta = plan.values(mu1)
        theta_d = dict(zip(plan.outputs, map(float, theta)))
        selected = None
        soft: dict[str, float] = {}
        if plan.candidates:
            selected = max(plan.candidates, key=lambda c: (theta_d[c], -plan.candidates.index(c)))
            soft = dict(zip(plan.candidates, map(float, plan.selection_weights(mu1))))
        cache = _DiscoveryCache()
        cache.masks = plan.split_masks(data.ids)
        by_key: dict[tuple, FrozenRule] = {}
        rules: dict[str, FrozenRule] = {}
        for slot in self.slots:
            if slot.is_uniform:
                continue
            key = slot.discovery_key()
            if key not in by_key:
                # one independent stability stream per discovery specification, in slot order
                by_key[key] = self._discover_slot(slot, data, H1, mu1, theta, cache, stream=len(by_key),
                                                  candidate_table=candidate_tables, shared=shared)
            rules[slot.name] = by_key[key]
        return Discovery(rules, theta_d, selected, n, tuple(data.ids), geometries=dict(cache.geometries),
                         soft_selection=soft, engine_fingerprint=self.fingerprint(), protocol=stamp(self, data))

    def _candidates(self, slot: Slot, data: ClusterData, cache: _DiscoveryCache,
                    shared: SharedWork | None = None) -> tuple[list[Rule], np.ndarray]:
        """The slot family's candidate rules fitted on ``D`` and their score matrix (G, n)."""
        if slot.family not in cache.families:
            family = self.families[slot.family]

            def fit() -> tuple[list[Rule], np.ndarray]:
                cands = family.fit(data.X, data.feature_names)
                if not cands:
                    raise ValueError(f"family {slot.family!r} produced no candidate rules")
                return cands, score_matrix(cands, data.X, data.feature_names)
            cache.families[slot.family] = fit() if shared is None else shared.family_scores(
                family, data.X, data.feature_names, fit)
        return cache.families[slot.family]

    def _discover_slot(self, slot: Slot, data: ClusterData, H1: np.ndarray, mu1: np.ndarray,
                       theta: np.ndarray, cache: _DiscoveryCache, *, stream: int,
                       candidate_table: bool = True, shared: SharedWork | None = None) -> FrozenRule:
        """Rank the feasible candidates by Eq. (2), freeze the selected one, check stability."""
        t0 = time.perf_counter()
        n = len(data)
        cands, S = self._candidates(slot, data, cache, shared)
        if slot.geometry not in cache.geometries:
            cache.geometries[slot.geometry] = self._geometry(slot.geometry, data.X)
        geom = cache.geometries[slot.geometry]
        target = slot.discovery_target if slot.discovery_target is not None else slot.contrast
        c = self.plan.contrast_vector(target)
        with np.errstate(invalid="ignore", divide="ignore"):
            W = S / S.sum(axis=1, keepdims=True)
        ok_mass = np.isfinite(W).all(axis=1)
        W = np.where(ok_mass[:, None], W, 1.0 / n)
        u = np.full(n, 1.0 / n)
        ess = 1.0 / np.sum(W * W, axis=1)
        dens = n * W.max(axis=1)
        dist = geom.distance(data.X, u, W) if slot.radius is not None else np.zeros(len(cands))
        psi = cache.psi.get(c.tobytes())
        if psi is None:
            psi = cache.psi[c.tobytes()] = (H1 - mu1) @ self.plan.gradient(mu1, c)
        loc = float(c @ theta) + (W - u) @ psi
        share = self.plan.split_shares(S, cache.masks)
        # every predeclared score-blind constraint of C.2, split denominators included
        feasible = ok_mass & _all_hold(support_constraints(slot, ess, dens, distance=dist, split_share=share))
        g = _select(loc, feasible, ess, dist, slot.tie_rule, slot.tolerance)
        cand_table = pd.DataFrame({
            "rule": [r.describe() for r in cands], "predicted": loc, "ess": ess,
            "max_density": dens, "distance": dist, "min_split_share": share, "feasible": feasible,
            "selected": np.arange(len(cands)) == g,
        }) if candidate_table else _NO_TABLE.copy()  # its own empty frame (a copy: 4x cheaper than a new one)
        if g < 0:
            return FrozenRule.failed(n_candidates=len(cands), n_feasible=int(feasible.sum()),
                                     candidates=cand_table, runtime_s=time.perf_counter() - t0)
        corr = jac = 1.0
        if self.n_stability > 0:
            rng = np.random.default_rng(keyed_seed(self.seed, "stability", stream))
            corr, jac = self._stability(data, H1, S, c, geom, slot, g, rng, cache.masks)
        stab = {"jaccard": jac, "correlation": corr, "min": min(jac, corr)}[self.stability_metric]
        return FrozenRule(
            rule=cands[g], index=g, n_candidates=len(cands), n_feasible=int(feasible.sum()),
            predicted=float(loc[g]), ess=float(ess[g]), max_density=float(dens[g]), distance=float(dist[g]),
            stability=float(stab), stability_correlation=float(corr), stability_jaccard=float(jac),
            candidates=cand_table, runtime_s=time.perf_counter() - t0,
        )

    def _stability(self, data: ClusterData, H1: np.ndarray, S: np.ndarray, c: np.ndarray,
                   geom: Geometry, slot: Slot, g0: int, rng: np.random.Generator,
                   masks: np.ndarray) -> tuple[float, float]:
        """Mean weight correlation and top-set Jaccard of resampled selections (C.2)."""
        n = len(data)
        B = self.n_stability
        counts = bootstrap_counts(n, B, rng).astype(float)  # (B, n)
        mu = counts @ H1 / n  # (B, p)
        theta = self.plan.values(mu)  # (B, K)
        delta = theta @ c  # (B,)
        grad = self.plan.gradient(mu, c)  # (B, p)
        psi = H1 @ grad.T - np.sum(mu * grad, axis=1)  # (n, B)
        refit = self.stability_mode == "refit" and not isinstance(self.families[slot.family], FixedFamily)
        s0 = S[g0]
        if not refit:  # one registry for every resample: its agreement with s0 once
            corr_all = weight_correlation(s0, S)  # (G,)
            jac_all = top_set_jaccard(s0, S, self.top_fraction)  # (G,)
        top0 = top_weighted_sets(s0[None, :], self.top_fraction)[0]
        corr = np.zeros(B)
        jac = np.zeros(B)
        if not refit:  # every resample selects from the same registry: in blocks of resamples
            picks = resample_selections(self.plan, S, counts, delta, psi, slot, geom, data.X, masks)
            hit = picks >= 0
            corr[hit] = corr_all[picks[hit]]
            jac[hit] = jac_all[picks[hit]]
            return float(corr.mean()), float(jac.mean())
        bump_cache: dict[tuple[bytes, bytes], np.ndarray] = {}  # bump distance rows, reused across resamples
        chosen: list[np.ndarray] = []  # refit: the scores each resample chose, and which resample
        chosen_at: list[int] = []
        for b in range(B):  # rerun the slot: the family refitted on the resampled discovery features
            rows = np.repeat(np.arange(n), counts[b].astype(int))
            cands = self.families[slot.family].fit(data.X[rows], data.feature_names)
            S = score_matrix(cands, data.X, data.feature_names, bump_cache=bump_cache)
            gb = int(resample_selections(self.plan, S, counts[b:b + 1], delta[b:b + 1], psi[:, b:b + 1], slot, geom,
                                         data.X, masks)[0])
            if gb >= 0:  # agreement of the refitted registry's choice only (row-wise: same values)
                corr[b] = weight_correlation(s0, S[gb:gb + 1])[0]
                chosen.append(S[gb])
                chosen_at.append(b)
        if chosen:  # = top_set_jaccard per resample: the quantile of each row is taken on its own
            jac[chosen_at] = _jaccard(top0, top_weighted_sets(np.vstack(chosen), self.top_fraction))
        return float(corr.mean()), float(jac.mean())

    # ------------------------------------------------------------------ confirmation
    def confirm(self, discovery: Discovery, data: ClusterData) -> SASSTReport:
        """Frozen-rule confirmation on ``I`` with joint bounds and statuses (C.3-C.5); what it
        changes from :attr:`Discovery.protocol` is named in the report's ``departures``."""
        rows, phi, names, crit = self._confirm_rows(discovery, data)
        return SASSTReport(
            table=_report_frame(rows), phi=phi, phi_slots=names, critical=crit,
            method=self.inference, level=self.level, discovery=discovery, params=self.params(),
            n_confirmation=len(data), departures=tuple(departures(discovery.protocol, self, data)),
            provenance=make_provenance(seed=self.seed, confirmation_scores=data.Z, confirmation_features=data.X),
        )

    def confirm_records(self, discovery: Discovery, data: ClusterData, *, shared: SharedWork | None = None
                        ) -> tuple[list[dict[str, Any]], np.ndarray, tuple[str, ...], float]:
        """:meth:`confirm`'s numbers without its tables, for simulation trials (SASST C.3-C.5).

        Returns ``(rows, phi, phi_slots, critical)``: one dict per slot with every field of
        :data:`REPORT_COLUMNS` plus ``slot``, the contributions (N_I, m) of the ``m``
        support-feasible slots ``phi_slots`` and the joint critical value. Raises
        ``ValueError`` for an empty or one-cluster confirmation split or clusters reused from
        discovery, and refuses a pre-registered discovery confirmed with a departure (it
        carries no label). ``shared`` as in :meth:`discover`."""
        refuse_departures(discovery.protocol, self, data)
        return self._confirm_rows(discovery, data, shared=shared)

    def _confirm_rows(self, discovery: Discovery, data: ClusterData, *, shared: SharedWork | None = None) -> tuple:
        """The numbers of :meth:`confirm_records`, without the pre-registration check."""
        n = len(data)
        if n == 0:
            raise ValueError("empty confirmation split: no confirmation clusters")
        if n < 2:
            raise ValueError(f"confirmation split has {n} cluster; need at least 2 for a standard error")
        ids = data.ids.tolist() if isinstance(data.ids, np.ndarray) else data.ids  # plain str: hashed faster
        overlap = () if set(discovery.cluster_ids).isdisjoint(ids) else set(discovery.cluster_ids) & set(data.ids)
        if overlap:
            raise ValueError(f"confirmation reuses discovery cluster(s): {sorted(overlap)[:5]}")
        refuse_other_engine(discovery, self)
        masks = self.plan.split_masks(data.ids)
        memo: dict[Any, Any] = {"shared": shared}  # per frozen rule: its weighting of I (slots share rules)
        theta0 = self._weighted(UniformRule(), data, masks, memo).theta
        rows, phis, geoms = [], {}, dict(discovery.geometries)
        for slot in self.slots:
            t0 = time.perf_counter()
            fr = discovery.rules.get(slot.name)
            row, rule = self._discovery_fields(slot, fr, theta0)
            conf, phi = self._confirm_slot(slot, rule, data, masks, geoms, memo)
            row.update(conf)
            if not row["reason"] and not row["stable"]:
                row["reason"] = f"stability {row['stability']:.2f} < threshold {slot.stability_threshold:g}"
            row["runtime_s"] = time.perf_counter() - t0 + (fr.runtime_s if fr is not None else 0.0)
            rows.append(row)
            if phi is not None:
                phis[slot.name] = phi
        names = tuple(phis)
        phi = np.column_stack([phis[k] for k in names]) if names else np.zeros((n, 0))
        crit = np.nan
        by_name = {r["slot"]: r for r in rows}
        if names:
            se, bound, crit = _joint_band(
                phi, np.array([by_name[k]["estimate"] for k in names], float),
                np.array([by_name[k]["sign"] for k in names], float), method=self.inference,
                level=self.level, n_slots=len(self.slots), n_draws=self.n_draws,
                exact=self.exact_multiplier, seed=self.seed,
            )
            for k, e, bd in zip(names, se, bound):
                by_name[k]["se"], by_name[k]["bound"] = float(e), float(bd)
        for r in rows:
            r["critical"] = float(crit) if r["slot"] in phis else np.nan
            r["method"] = self.inference
        _status_fields(rows)
        return rows, phi, names, float(crit)

    def _discovery_fields(self, slot: Slot, fr: FrozenRule | None, theta0: np.ndarray) -> tuple[dict[str, Any], Rule | None]:
        """The slot's report fields fixed before confirmation, and its frozen rule."""
        c = self.plan.contrast_vector(slot.contrast)
        row: dict[str, Any] = {
            "slot": slot.name, "claim": slot.claim, "sign": slot.sign, "threshold": slot.threshold,
            "family": slot.family or "uniform", "geometry": slot.geometry if slot.family else "none",
            "radius": slot.radius if slot.family else np.nan,
            "ordinary": float(c @ theta0),
        }
        if slot.is_uniform:
            rule: Rule | None = UniformRule()
            row.update(discovery_feasible=True, n_candidates=1, n_feasible=1, predicted=np.nan,
                       discovery_distance=0.0, stability=1.0, stability_correlation=1.0,
                       stability_jaccard=1.0)
        else:
            rule = fr.rule
            row.update(discovery_feasible=rule is not None, n_candidates=fr.n_candidates,
                       n_feasible=fr.n_feasible, predicted=fr.predicted, discovery_distance=fr.distance,
                       stability=fr.stability, stability_correlation=fr.stability_correlation,
                       stability_jaccard=fr.stability_jaccard)
        row["stable"] = bool(row["stability"] >= slot.stability_threshold - SUPPORT_TOL)
        row["rule"] = rule.describe() if rule is not None else "—"
        row["rule_json"] = rule.to_json() if rule is not None else ""
        return row, rule

    def _weighted(self, rule: Rule, data: ClusterData, masks: Any, memo: dict[Any, "_Weighted"]) -> "_Weighted":
        """The frozen rule's weighting of ``I``: scores, weights, tensor, its mean and ``theta``.

        Computed once per rule and confirmation (``memo``): slots that share a frozen rule
        (one discovery specification, several contrasts) or the uniform rule (also the
        unweighted ``theta`` of the report) reuse the same arrays. A uniform rule's scores
        are ones whatever its type, so every uniform rule shares one entry.
        ``memo["shared"]`` (a :class:`SharedWork` or None, set by :meth:`confirm_records`)
        supplies scores and tensors computed by earlier calls of the trial.
        """
        key = "uniform" if rule.is_uniform else id(rule)
        hit = memo.get(key)
        if hit is not None:
            return hit
        shared = memo.get("shared")
        s = rule_scores(rule, data.X, data.feature_names) if shared is None else shared.rule_scores(
            rule, data.X, data.feature_names, lambda: rule_scores(rule, data.X, data.feature_names))
        tot = s.sum()
        wt = _Weighted(rule, s, tot)
        if tot > 0:
            wt.w = s / tot
            wt.H, wt.mu = _tensor_mean(self.plan, data.Z, s, masks, shared)
            wt.theta = self.plan.values(wt.mu)
        memo[key] = wt  # holds the rule, so its id is not reused while the memo lives
        return wt

    def _confirm_slot(self, slot: Slot, rule: Rule | None, data: ClusterData, masks: Any,
                      geoms: dict[str, Geometry], memo: dict[Any, "_Weighted"] | None = None,
                      ) -> tuple[dict[str, Any], np.ndarray | None]:
        """The frozen rule on ``I``: weighted contrast, support recheck, contributions (C.3).

        Returns the confirmation fields of the report row and the plug-in contributions
        (N_I,) when the slot is support-feasible (else ``None``). ``memo`` (one per
        confirmation) shares a rule's weighting, distances and contributions among slots.
        """
        n = len(data)
        out: dict[str, Any] = dict(confirmation_feasible=False, estimate=np.nan, se=np.nan, bound=np.nan,
                                   bound_side="lower" if slot.sign > 0 else "upper", ess=np.nan,
                                   max_density=np.nan, min_split_share=np.nan, confirmation_distance=np.nan,
                                   reason="")
        if rule is None:
            out["reason"] = "no candidate met the discovery constraints"
            return out, None
        wt = self._weighted(rule, data, masks, {} if memo is None else memo)
        if wt.tot <= 0:
            out["reason"] = "frozen rule gives zero weight to every confirmation cluster"
            return out, None
        c = self.plan.contrast_vector(slot.contrast)
        if wt.ess is None:
            wt.ess, wt.dens, wt.share = (float(1.0 / np.sum(wt.w * wt.w)), float(n * wt.w.max()),
                                         self.plan.min_split_share(wt.mu))
        out.update(ess=wt.ess, max_density=wt.dens, min_split_share=wt.share, estimate=float(c @ wt.theta))
        # measured in the geometry frozen on D (C.3); a hand-built discovery without one reports NaN
        if slot.family is not None and slot.radius is not None and slot.geometry in geoms:
            if slot.geometry not in wt.distance:
                wt.distance[slot.geometry] = float(
                    geoms[slot.geometry].distance(data.X, np.full(n, 1.0 / n), wt.w[None])[0])
            out["confirmation_distance"] = wt.distance[slot.geometry]
        held = support_constraints(slot, out["ess"], out["max_density"], split_share=out["min_split_share"])
        problems = {
            "max_density": f"max density ratio {out['max_density']:.2f} > cap {slot.density_cap:g}",
            "ess": f"ESS {out['ess']:.1f} < minimum {slot.min_ess:g}",
            "min_split_share": f"split denominator share {out['min_split_share']:.2f} < {slot.min_split_share:g}",
        }
        out["reason"] = "; ".join(problems[k] for k, ok in held.items() if not ok)
        out["confirmation_feasible"] = not out["reason"]
        if not out["confirmation_feasible"]:
            return out, None
        key = c.tobytes()
        if key not in wt.phi:
            wt.phi[key] = (wt.H - wt.mu) @ self.plan.gradient(wt.mu, c)
        return out, wt.phi[key]


@dataclass(eq=False)
class _Weighted:
    """One frozen rule's weighting of the confirmation clusters (:meth:`SASST._weighted`):
    scores ``s`` (N,), their total, weights ``w = s / tot``, the tensor ``H`` (N, p), its
    mean ``mu`` (p,) and ``theta(mu)`` (K,); the support numbers, distances by geometry
    name and contributions by contrast bytes are filled on first use."""

    rule: Rule
    s: np.ndarray
    tot: float
    w: np.ndarray | None = None
    H: np.ndarray | None = None
    mu: np.ndarray | None = None
    theta: np.ndarray | None = None
    ess: float | None = None
    dens: float = np.nan
    share: float = np.nan
    distance: dict[str, float] = field(default_factory=dict)
    phi: dict[bytes, np.ndarray] = field(default_factory=dict)
