"""Reporting slots and the five decision statuses of SASST.

A slot ``m in J_0`` fixes everything about one planned claim before confirmation
outcomes are read (SASST Appendix C.1): the contrast ``c_m``, the one-sided sign
``eta_m``, the candidate family ``G_m``, the radius ``rho_m`` and its geometry, the
density cap ``kappa_m``, the minimum effective sample size ``n_min,m``, the stability
threshold, the effect threshold, the optimization tolerance and the deterministic tie
rule.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = [
    "Slot",
    "STATUSES",
    "CONFIRMED",
    "NOT_CONFIRMED",
    "FAILED_DISCOVERY",
    "FAILED_FEASIBILITY",
    "ABSTAINED",
    "slot_status",
    "recommendation",
    "TIE_RULES",
]

CONFIRMED = "confirmed"
NOT_CONFIRMED = "not confirmed"
FAILED_DISCOVERY = "failed discovery"
FAILED_FEASIBILITY = "failed feasibility"
ABSTAINED = "abstained"
#: The five statuses of SASST Table 3, in reporting order.
STATUSES = (CONFIRMED, NOT_CONFIRMED, FAILED_DISCOVERY, FAILED_FEASIBILITY, ABSTAINED)

#: Deterministic tie rules among candidates within ``tolerance`` of the minimum.
TIE_RULES = ("registry_order", "max_ess", "min_distance")


@dataclass(frozen=True)
class Slot:
    """One planned claim of the SASST family ``J_0`` (Appendix C.1).

    Parameters
    ----------
    name : str
        Unique slot name.
    contrast : mapping system -> coefficient
        ``c_m`` over the plan's outputs (systems, and ``"selected"`` if the plan has a
        selection step), e.g. ``{"Plan + verifier": 1, "ReAct": -1}``.
    sign : {+1, -1}
        ``eta_m``. ``+1`` claims ``Delta_m > threshold`` (lower bound); ``-1`` is a
        fragility claim ``Delta_m < threshold`` (upper bound).
    family : str or None
        Key of the candidate family in the engine's registry; ``None`` is the uniform
        (unstressed) slot.
    radius : float or None
        ``rho_m``: maximum discovery distance in the slot's geometry (None: no radius).
    geometry : str
        Key of the geometry (``kms``, ``mmd``, ``max_sliced``, ``none`` or a registered one).
    density_cap : float
        ``kappa_m``: maximum density ratio ``n max_i w_i`` (discovery and confirmation).
    min_ess : float
        ``n_min,m``: minimum effective sample size (discovery and confirmation).
    stability_threshold : float
        Minimum discovery stability, in [0, 1]; below it a support-feasible slot is
        *abstained*.
    threshold : float
        ``delta_m``: the effect threshold of the claim (default 0).
    tie_rule : str
        One of :data:`TIE_RULES`.
    tolerance : float
        Candidates within this distance of the minimal Eq. (2) value are tied.
    discovery_target : mapping or None
        The contrast whose Eq. (2) prediction is minimized in discovery; defaults to
        ``contrast``. Slots with identical discovery specifications share one frozen rule
        (e.g. a workflow-selected target ``{"selected": 1, "ReAct": -1}`` shared by the
        per-workflow stress slots and the controls at one radius).
    min_split_share : float
        Minimum share of the rule's weight mass in every scoring and held-out subset of the
        plan (the split denominators of C.3).
    """

    name: str
    contrast: Mapping[str, float]
    sign: int = -1
    family: str | None = None
    radius: float | None = None
    geometry: str = "kms"
    density_cap: float = 5.0
    min_ess: float = 20.0
    stability_threshold: float = 0.6
    threshold: float = 0.0
    tie_rule: str = "registry_order"
    tolerance: float = 1e-9
    discovery_target: Mapping[str, float] | None = None
    min_split_share: float = 0.2
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("slot name must be a non-empty string")
        if not isinstance(self.contrast, Mapping) or not self.contrast:
            raise ValueError(f"slot {self.name!r}: contrast must be a non-empty mapping")
        object.__setattr__(self, "contrast", dict(self.contrast))
        if self.discovery_target is not None:
            object.__setattr__(self, "discovery_target", dict(self.discovery_target))
        if self.sign not in (1, -1):
            raise ValueError(f"slot {self.name!r}: sign must be +1 or -1; got {self.sign!r}")
        if self.density_cap < 1:
            raise ValueError(f"slot {self.name!r}: density_cap must be >= 1; got {self.density_cap}")
        if self.min_ess < 0:
            raise ValueError(f"slot {self.name!r}: min_ess must be >= 0; got {self.min_ess}")
        if not 0.0 <= self.stability_threshold <= 1.0:  # NaN fails too
            raise ValueError(f"slot {self.name!r}: stability_threshold={self.stability_threshold!r} must lie in [0, 1] "
                             "(the stability agreement is a share; 0 accepts every rule, 1 only a rule every "
                             "resample reproduces; to skip stability give SASST n_stability=0)")
        if self.radius is not None and self.radius < 0:
            raise ValueError(f"slot {self.name!r}: radius must be >= 0 or None; got {self.radius}")
        if self.tie_rule not in TIE_RULES:
            raise ValueError(f"slot {self.name!r}: tie_rule must be one of {TIE_RULES}; got {self.tie_rule!r}")
        if not 0 <= self.min_split_share <= 0.5:
            raise ValueError(f"slot {self.name!r}: min_split_share must lie in [0, 0.5]")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Slot":
        """Build a slot from a mapping; an unknown field is an error naming it.

        Raises
        ------
        ValueError
            If ``d`` has a field that is not a slot field, or lacks ``name``/``contrast``.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        label = d.get("name", "<unnamed>")
        if unknown:
            raise ValueError(
                f"slot {label!r} has unknown field(s) {unknown}; allowed fields: {sorted(known)}"
            )
        missing = [k for k in ("name", "contrast") if k not in d]
        if missing:
            raise ValueError(f"slot {label!r} lacks required field(s) {missing}")
        return cls(**dict(d))

    @property
    def is_uniform(self) -> bool:
        return self.family is None

    @property
    def claim(self) -> str:
        op = ">" if self.sign > 0 else "<"
        terms = " ".join(f"{'+' if v > 0 else '-'} {abs(v):g}*{k}" for k, v in self.contrast.items())
        return f"({terms.lstrip('+ ')}) {op} {self.threshold:g}"

    def discovery_key(self) -> tuple:
        """Slots with equal keys share one discovered rule (and its stability)."""
        target = self.discovery_target if self.discovery_target is not None else self.contrast
        return (
            self.family, self.radius, self.geometry, self.density_cap, self.min_ess,
            self.tie_rule, self.tolerance, tuple(sorted(target.items())),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def slot_status(
    discovery_feasible: bool,
    confirmation_feasible: bool,
    stable: bool,
    supported: bool,
) -> str:
    """Decision status of SASST Table 3 / Appendix C.5.

    ``failed discovery`` if no candidate passes discovery; otherwise ``failed
    feasibility`` if the frozen rule fails confirmation support; otherwise ``abstained``
    if the rule is unstable; otherwise ``confirmed`` if the signed band supports the claim
    and ``not confirmed`` if not.
    """
    if not discovery_feasible:
        return FAILED_DISCOVERY
    if not confirmation_feasible:
        return FAILED_FEASIBILITY
    if not stable:
        return ABSTAINED
    return CONFIRMED if supported else NOT_CONFIRMED


_RECOMMENDATIONS = {
    CONFIRMED: "supported within the declared shift; audit the frozen rule's description before acting",
    NOT_CONFIRMED: "bound does not support the claim (not equivalence): more power or a redesigned intervention",
    ABSTAINED: "estimable but the rule is unstable: better features or rule geometry before reuse",
    FAILED_FEASIBILITY: "low confirmation support: more independent task clusters",
    FAILED_DISCOVERY: "no candidate meets the discovery constraints: revisit the registry, radius or caps (score-blind)",
}


def recommendation(status: str) -> str:
    """Audit / control recommendation attached to a status (SASST Section 5)."""
    return _RECOMMENDATIONS[status]
