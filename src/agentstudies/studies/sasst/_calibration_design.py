"""Study A's data-generating process and its population truths (the design of
:mod:`agentstudies.studies.sasst.calibration`, whose docstring states it): the features,
systems and contrast, :class:`StudyADesign` (the artifacts' stress responses, the rule
registries) and the truths integrated with a fixed scrambled-Sobol sample
(:func:`population_means`, :func:`population_contrasts`, :func:`oracle_index`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import special as _special
from scipy import stats as _st
from scipy.stats import qmc

from agentstudies.sasst import SELECTED, ClusterData, ComparisonPlan, Slot
from agentstudies.sasst.geometry import Standardizer
from agentstudies.sasst.rules import ProjectionTiltRule, Rule, UniformRule, rule_scores
from agentstudies.studies.sasst._common import (
    StepRule,
    latent_probit_scores,
)


FEATURES: tuple[str, ...] = tuple(f"x{i}" for i in range(1, 9))
SYSTEMS: tuple[str, ...] = ("baseline", "A1", "A2", "A3", "A4", "A5")
ARTIFACTS: tuple[str, ...] = SYSTEMS[1:]
#: The stressed contrast of Study A: the plan's selected artifact minus the baseline.
CONTRAST: dict[str, float] = {SELECTED: 1.0, "baseline": -1.0}

_TERCILE = float(_st.norm.ppf(2 / 3))
#: ``separated_stress`` of Table 5's separated design: the high tercile of ``x4`` lies
#: about 0.18 (several standard errors at M >= 1000) below every other tercile's truth.
SEPARATED_STRESS = 0.8


@functools.lru_cache(maxsize=16)
def _cluster_ids(n: int) -> np.ndarray:
    """``c00000 ... c{n-1}`` (read-only, shared by every trial with ``n`` clusters)."""
    ids = np.array([f"c{i:05d}" for i in range(n)])
    ids.flags.writeable = False
    return ids


@dataclass(frozen=True)
class StudyADesign:
    """The Study A data-generating process and comparison plan (see the module docstring).

    Parameters
    ----------
    rho : float
        Loading of the shared latent task effect (pairing of the systems' outcomes).
    temperature : float
        Softmax temperature ``tau`` of the plan's selection step (success-rate units).
    tilt_strength, tilt_clip : float
        ``lambda`` and ``c`` of the registry tilts ``exp(lambda clip(u, -c, c))``.
    separated_stress : float
        ``d >= 0``: every artifact's probit index drops by ``d`` on the high tercile of
        ``x4`` (``x4 > Phi^{-1}(2/3)``), a common-mode stress the softmax cannot escape, so
        that tercile's truth stands apart from every other tercile (Table 5's *separated*
        design). ``0`` (default) is the near-tie design: ``x4..x8`` are irrelevant.
    """

    rho: float = 0.5
    temperature: float = 0.05
    tilt_strength: float = 0.75
    tilt_clip: float = 2.0
    separated_stress: float = 0.0

    # -------------------------------------------------------------- outcomes
    def probit_index(self, X: np.ndarray) -> np.ndarray:
        """Probit indices ``a_j(W)`` (N, 6) in :data:`SYSTEMS` order for features (N, 8)."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != len(FEATURES):
            raise ValueError(f"features must have shape (N, {len(FEATURES)}); got {X.shape}")
        x1, x2, x3 = X[:, 0], X[:, 1], X[:, 2]
        zero = np.zeros(len(X))
        drop = self.separated_stress * (X[:, 3] > _TERCILE) if self.separated_stress else zero
        return np.column_stack([
            zero,
            0.40 - 0.35 * x1 - drop,
            0.35 - 0.25 * (x2**2 - 1.0) - drop,
            0.30 + 0.25 * x3 - drop,
            zero + 0.25 - drop,
            zero - drop,
        ])

    def success_prob(self, X: np.ndarray) -> np.ndarray:
        """``P(Y_j = 1 | W) = Phi(a_j(W))``, shape (N, 6)."""
        # scipy.special.ndtr is what norm.cdf evaluates (loc 0, scale 1: the same bits) without
        # the distribution machinery's argument checks, a third of a Table 4 trial's simulation
        return _special.ndtr(self.probit_index(X))

    def simulate(self, n_clusters: int, rng: np.random.Generator) -> ClusterData:
        """``n_clusters`` i.i.d. clusters: features, one paired outcome per system.

        Cluster ids are ``c00000, c00001, ...`` (the plan's split masks hash them).
        """
        if n_clusters < 4:
            raise ValueError(f"n_clusters must be >= 4; got {n_clusters}")
        X = rng.standard_normal((n_clusters, len(FEATURES)))
        Z = latent_probit_scores(self.success_prob(X), self.rho, 1, rng)
        return ClusterData(_cluster_ids(n_clusters), Z, X, SYSTEMS, FEATURES, np.ones(n_clusters, dtype=int))

    # -------------------------------------------------------------- plan and rules
    def plan(self, n_splits: int) -> ComparisonPlan:
        """Soft selection among A1..A5 with ``R = n_splits`` scoring/held-out splits."""
        return ComparisonPlan(SYSTEMS, candidates=ARTIFACTS, selection="soft",
                              temperature=self.temperature, n_splits=int(n_splits))

    @functools.cached_property
    def _registry(self) -> tuple[Rule, ...]:
        st = Standardizer(mean=np.zeros(len(FEATURES)), scale=np.ones(len(FEATURES)))
        rules: list[Rule] = [UniformRule()]

        def tilt(direction: np.ndarray, label: str) -> ProjectionTiltRule:
            return ProjectionTiltRule(columns=FEATURES, standardizer=st, direction=direction,
                                      strength=self.tilt_strength, clip=self.tilt_clip, label=label)

        for f, name in enumerate(FEATURES):
            for sign, side in ((1.0, "high"), (-1.0, "low")):
                e = np.zeros(len(FEATURES))
                e[f] = sign
                rules.append(tilt(e, f"{side} {name}"))
        for sign, side in ((1.0, "high"), (-1.0, "low")):
            e = np.zeros(len(FEATURES))
            e[0], e[2] = sign / np.sqrt(2), -sign / np.sqrt(2)
            rules.append(tilt(e, f"{side} (x1 - x3)"))
        return tuple(rules)

    def registry(self) -> tuple[Rule, ...]:
        """The 19 bounded candidate rules (uniform, 16 axis tilts, 2 oblique tilts)."""
        return self._registry

    @functools.cached_property
    def _terciles(self) -> tuple[Rule, ...]:
        cuts = {"low": (-np.inf, -_TERCILE), "middle": (-_TERCILE, _TERCILE), "high": (_TERCILE, np.inf)}
        return tuple(StepRule(columns=(f,), lo=lo, hi=hi, inside=1.0, outside=0.0, label=f"{t} tercile of {f}")
                     for f in FEATURES for t, (lo, hi) in cuts.items())

    def tercile_registry(self) -> tuple[Rule, ...]:
        """24 tercile indicators (Table 5's worst-tercile search), population cut points."""
        return self._terciles

    def rule_labels(self, which: str = "registry") -> list[str]:
        rules = self.registry() if which == "registry" else self.tercile_registry()
        return [r.describe() if isinstance(r, UniformRule) else (r.label or r.describe()) for r in rules]

    def __getstate__(self) -> dict:  # do not pickle cached rules (rebuilt on demand)
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


# ------------------------------------------------------------------ population truths
def _rules(design: StudyADesign, which: str) -> tuple[Rule, ...]:
    if which == "registry":
        return design.registry()
    if which == "tercile":
        return design.tercile_registry()
    raise ValueError(f"unknown registry {which!r}; expected 'registry' or 'tercile'")


@functools.lru_cache(maxsize=16)
def population_means(design: StudyADesign, which: str = "registry", n_points: int = 2**21,
                     seed: int = 20260831) -> np.ndarray:
    """Population tilted success rates ``m_gj = E[s_g(W) Phi(a_j(W))] / E[s_g(W)]``.

    A fixed scrambled-Sobol sample of ``W ~ N(0, I_8)`` (``n_points``, a power of two;
    scipy ``qmc.Sobol``) integrates every rule of the registry ``which``
    (``"registry"``: the 19 rules; ``"tercile"``: the 24 terciles). The conditional
    success probabilities are exact, so the only error is the integration error of the
    feature sample (about ``1e-5`` at the default size). Cached per process.

    Returns
    -------
    array (G, 6), systems in :data:`SYSTEMS` order.

    Raises
    ------
    ValueError
        If ``n_points`` is not a power of two or ``which`` is unknown.
    """
    if n_points < 2 or n_points & (n_points - 1):
        raise ValueError(f"n_points must be a power of two; got {n_points}")
    rules = _rules(design, which)
    sob = qmc.Sobol(d=len(FEATURES), scramble=True, seed=seed)
    chunk = min(n_points, 2**17)
    num = np.zeros((len(rules), len(SYSTEMS)))
    den = np.zeros(len(rules))
    for _ in range(n_points // chunk):
        X = _st.norm.ppf(sob.random(chunk))
        P = design.success_prob(X)
        S = np.vstack([rule_scores(r, X, FEATURES) for r in rules])
        num += S @ P
        den += S.sum(axis=1)
    return num / den[:, None]


def population_contrasts(design: StudyADesign, means: np.ndarray,
                         contrast: dict[str, float] | None = None) -> np.ndarray:
    """``Delta(g) = c^T theta(P^g; A)`` for every rule from its population means (G,).

    The selected pseudo-system's population value is ``softmax(m / tau)^T m`` over the
    artifacts (every scoring and held-out subset has the same population ratio ``m``).
    """
    contrast = CONTRAST if contrast is None else contrast
    m = np.asarray(means, dtype=float)
    cand = m[:, 1:]
    z = (cand - cand.max(axis=1, keepdims=True)) / design.temperature
    q = np.exp(z)
    q /= q.sum(axis=1, keepdims=True)
    theta = {s: m[:, j] for j, s in enumerate(SYSTEMS)}
    theta[SELECTED] = np.sum(q * cand, axis=1)
    out = np.zeros(m.shape[0])
    for k, coef in contrast.items():
        if k not in theta:
            raise ValueError(f"contrast refers to unknown system {k!r}")
        out += coef * theta[k]
    return out


def oracle_index(design: StudyADesign, n_points: int = 2**21, tol: float = 1e-9) -> int:
    """Registry index of the fixed oracle rule: the population minimizer of ``Delta(g)``.

    Ties within ``tol`` go to the first rule in registry order.
    """
    delta = population_contrasts(design, population_means(design, "registry", n_points))
    return int(np.flatnonzero(delta <= delta.min() + tol)[0])


# ------------------------------------------------------------------ Study A4's slots
def _stress_slot(name: str, family: str, contrast: dict[str, float] | None = None) -> Slot:
    return Slot(name, dict(CONTRAST if contrast is None else contrast), sign=-1, family=family, radius=None,
                geometry="none", density_cap=5.0, min_ess=20.0)


def a4_slots() -> list[Slot]:
    """The six-slot signed family of Study A4 (uniform +1 / stressed -1 for three contrasts)."""
    out = []
    for label, contrast in (("selected", CONTRAST), ("A4", {"A4": 1.0, "baseline": -1.0}),
                            ("A5", {"A5": 1.0, "baseline": -1.0})):
        out.append(Slot(f"uniform: {label} - baseline", dict(contrast), sign=1))
        out.append(_stress_slot(f"stress: {label} - baseline", "registry", contrast))
    return out
