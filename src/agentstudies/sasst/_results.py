"""What discovery freezes: :class:`FrozenRule` per slot, :class:`Discovery`, and the
fingerprint binding a discovery to the engine settings that produced it (SASST Algorithm 1).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from agentstudies.sasst._geometry import Geometry
from agentstudies.sasst._rules import Rule

__all__ = ["Discovery", "FINGERPRINT_FIELDS", "FrozenRule", "fingerprint_diff", "refuse_other_engine"]


@dataclass(frozen=True)
class FrozenRule:
    """The rule a discovery specification froze, with its discovery diagnostics.

    ``rule`` is ``None`` when discovery failed (no feasible candidate; build that case
    with :meth:`failed`). Construct with keywords.
    """

    rule: Rule | None
    index: int
    n_candidates: int
    n_feasible: int
    predicted: float
    ess: float
    max_density: float
    distance: float
    stability: float
    stability_correlation: float
    stability_jaccard: float
    candidates: pd.DataFrame = field(repr=False, compare=False)
    runtime_s: float = 0.0

    @classmethod
    def failed(cls, *, n_candidates: int, n_feasible: int, candidates: pd.DataFrame,
               runtime_s: float = 0.0) -> "FrozenRule":
        """The record of a failed discovery: no rule, NaN diagnostics, zero stability."""
        return cls(rule=None, index=-1, n_candidates=n_candidates, n_feasible=n_feasible,
                   predicted=np.nan, ess=np.nan, max_density=np.nan, distance=np.nan, stability=0.0,
                   stability_correlation=0.0, stability_jaccard=0.0, candidates=candidates,
                   runtime_s=runtime_s)


@dataclass(frozen=True)
class Discovery:
    """Everything discovery froze: rules per specification and the unweighted comparison.

    Attributes
    ----------
    rules : dict slot name -> :class:`FrozenRule`
    theta : dict plan output -> unweighted discovery estimate
    selected_system : the candidate with the highest discovery estimate (the hard argmax,
        or None without candidates)
    n_clusters : |D|
    cluster_ids : the discovery cluster ids
    geometries : dict geometry name -> the geometry fitted (frozen) on the discovery
        features; confirmation distances are measured in it (C.3)
    soft_selection : dict candidate -> weight of the plan's cross-fitted selection step on
        ``D`` (the selection the rules are tuned against through Eq. 2); empty without a
        selection step
    engine_fingerprint : digests of the discovery-binding engine settings
        (:data:`FINGERPRINT_FIELDS`)
    protocol : what a confirmation is bound to beyond the fingerprint: the inference
        settings, episode columns and seeds per cluster (:func:`._protocol.stamp`), and
        from a pre-registration the confirmation cluster set and feature schema; a
        confirmation that departs from it is labelled *not pre-registered*
    """

    rules: dict[str, FrozenRule]
    theta: dict[str, float]
    selected_system: str | None
    n_clusters: int
    cluster_ids: tuple[str, ...] = field(repr=False, default=())
    geometries: dict[str, Geometry] = field(repr=False, default_factory=dict)
    soft_selection: dict[str, float] = field(default_factory=dict)
    engine_fingerprint: dict[str, str] = field(repr=False, default_factory=dict)
    protocol: dict[str, Any] = field(repr=False, default_factory=dict)


#: Engine settings a discovery is bound to (:meth:`SASST.fingerprint`): the plan, the
#: slots (with every threshold and cap), the candidate-family registry, the radius
#: geometries and the stability settings. The confirmation-only inference settings
#: (``level``, ``inference``, ``n_draws``, ``exact_multiplier``) are not among them: they
#: are recorded in :attr:`Discovery.protocol`, and a confirmation that changes one is
#: labelled *not pre-registered* with the change named.
FINGERPRINT_FIELDS = ("plan", "slots", "families", "geometries", "n_stability", "stability_metric",
                      "stability_mode", "top_fraction", "seed")


def _spec_json(v: Any) -> Any:
    """JSON-safe text of an engine setting (a Geometry object by class and fields)."""
    if isinstance(v, Geometry) and dataclasses.is_dataclass(v):
        return {"geometry": type(v).__name__, **{f.name: _spec_json(getattr(v, f.name))
                                                 for f in dataclasses.fields(v) if f.name != "_cache"}}
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {str(k): _spec_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_spec_json(x) for x in v]
    return v


def fingerprint_diff(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Names of the :data:`FINGERPRINT_FIELDS` whose digests differ (or are missing)."""
    return [k for k in dict.fromkeys([*recorded, *current]) if recorded.get(k) != current.get(k)]


def refuse_other_engine(discovery: Discovery, engine: Any) -> None:
    """Raise ``ValueError`` naming the :data:`FINGERPRINT_FIELDS` in which ``engine``
    differs from the engine that ran ``discovery`` (a hand-built Discovery carries no
    fingerprint and passes)."""
    if discovery.engine_fingerprint:
        changed = fingerprint_diff(discovery.engine_fingerprint, engine.fingerprint())
        if changed:
            raise ValueError(f"this engine is not the one that ran the discovery: its {', '.join(changed)} "
                             "differ from the discovery's (a frozen rule is confirmed only by the engine, "
                             "registry and thresholds it was frozen with)")
