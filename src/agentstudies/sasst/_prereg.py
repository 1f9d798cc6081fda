"""Pre-registration: a frozen discovery saved to one JSON file, confirmed from it alone.

SASST's frozen-rule workflow (Algorithm 1; App. C.1-C.2) as a user lives it: discover on
one benchmark version, write everything discovery froze -- the plan, the slots, the
family specifications, the fitted (frozen) radius geometries, the frozen rules with
their discovery diagnostics, the thresholds, the inference rule and level, the seeds and
a SHA-256 of the discovery data -- to one JSON file, and later confirm on new episodes
(new task clusters) from that file alone, in another process, without the discovery
data or the candidate families.

File layout (``format`` :data:`FORMAT`)::

    {"format", "engine": {plan, slots, families, geometries, level, inference, n_draws,
     n_stability, stability_metric, stability_mode, top_fraction, discovery_fraction,
     exact_multiplier, seed}, "discovery": {theta, selected_system, soft_selection,
     n_clusters, cluster_ids, data_hash, feature_names, geometries, rules}}

Floats are written with Python's shortest round-trip repr, so a confirmation from the
file reproduces the in-memory confirmation exactly.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentstudies.results import make_provenance
from agentstudies.sasst._data import ClusterData, cluster_data
from agentstudies.sasst._engine import SASST, Discovery, FrozenRule, SASSTReport
from agentstudies.sasst._geometry import _GEOMETRIES, Geometry, Standardizer
from agentstudies.sasst._plan import ComparisonPlan
from agentstudies.sasst._rules import RuleFamily, rule_from_dict
from agentstudies.sasst._slots import Slot

__all__ = ["FORMAT", "Preregistration", "geometry_state", "geometry_from_state", "preregister"]

#: Format tag of a pre-registration file.
FORMAT = "agentstudies.sasst.preregistration/1"


# ----------------------------------------------------------------------------- geometry
def _encode(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return {"__array__": v.tolist()}
    if isinstance(v, Standardizer):
        return {"__standardizer__": v.to_dict()}
    if isinstance(v, np.generic):
        return v.item()
    return v


def _decode(v: Any) -> Any:
    if isinstance(v, dict) and "__array__" in v:
        return np.asarray(v["__array__"], float)
    if isinstance(v, dict) and "__standardizer__" in v:
        return Standardizer.from_dict(v["__standardizer__"])
    return v


def geometry_state(geom: Geometry) -> dict[str, Any]:
    """JSON-safe state of a (fitted or unfitted) built-in geometry: every field, fitted
    arrays included, so :func:`geometry_from_state` rebuilds the frozen geometry.

    Raises ``TypeError`` for a geometry class that is not a built-in dataclass geometry.
    """
    if not dataclasses.is_dataclass(geom) or _GEOMETRIES.get(geom.name) is not type(geom):
        raise TypeError(f"cannot save geometry {type(geom).__name__}: only built-in geometries "
                        f"{sorted(_GEOMETRIES)} are serializable")
    fields = {f.name: _encode(getattr(geom, f.name)) for f in dataclasses.fields(geom) if f.name != "_cache"}
    return {"geometry": geom.name, "fields": fields}


def geometry_from_state(d: dict[str, Any]) -> Geometry:
    """Inverse of :func:`geometry_state`. Raises ``ValueError`` on an unknown geometry."""
    name = d.get("geometry")
    if name not in _GEOMETRIES:
        raise ValueError(f"unknown geometry {name!r} in pre-registration; known {sorted(_GEOMETRIES)}")
    return _GEOMETRIES[name](**{k: _decode(v) for k, v in d["fields"].items()})


def _geometry_spec(v: Any) -> Any:
    return {"__state__": geometry_state(v)} if isinstance(v, Geometry) else v


def _geometry_unspec(v: Any) -> Any:
    return geometry_from_state(v["__state__"]) if isinstance(v, dict) and "__state__" in v else v


# ----------------------------------------------------------------------------- families
@dataclass
class _RecordedFamily(RuleFamily):
    """A family known only by its recorded specification: confirmation never refits it."""

    spec: dict[str, Any] = dataclasses.field(default_factory=dict)

    def fit(self, X, columns):
        raise RuntimeError(f"family {self.spec.get('family')!r} was loaded from a pre-registration: "
                           "a confirmation does not rerun discovery")

    def to_dict(self) -> dict[str, Any]:
        return dict(self.spec)


# ----------------------------------------------------------------------------- frozen rules
def _frozen_to_dict(fr: FrozenRule) -> dict[str, Any]:
    d = {f.name: getattr(fr, f.name) for f in dataclasses.fields(fr) if f.name not in ("rule", "candidates")}
    d = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in d.items()}
    d["rule"] = fr.rule.to_dict() if fr.rule is not None else None
    cand = fr.candidates if isinstance(fr.candidates, pd.DataFrame) else pd.DataFrame()
    d["candidates"] = {c: [x.item() if isinstance(x, np.generic) else x for x in cand[c].tolist()]
                       for c in cand.columns}
    return d


def _frozen_from_dict(d: dict[str, Any]) -> FrozenRule:
    d = dict(d)
    rule = rule_from_dict(d.pop("rule")) if d.get("rule") is not None else None
    d.pop("rule", None)
    cand = pd.DataFrame(d.pop("candidates", {}))
    return FrozenRule(rule=rule, candidates=cand, **d)


def _data_hash(data: ClusterData) -> str:
    from agentstudies.results import hash_object

    return hash_object([list(map(str, data.ids)), list(data.systems), list(data.feature_names),
                        hash_object(np.asarray(data.Z, float)), hash_object(np.asarray(data.X, float))])


# ----------------------------------------------------------------------------- the artifact
@dataclass(frozen=True)
class Preregistration:
    """A frozen SASST discovery with everything a later confirmation needs.

    Build with :meth:`from_discovery` (after :meth:`SASST.discover`), write with
    :meth:`save`, read with :meth:`load`, and confirm new episodes with :meth:`confirm`.

    Attributes
    ----------
    engine : the :class:`SASST` engine (plan, slots, thresholds, inference, seed); its
        families are the recorded specifications (they cannot rerun discovery)
    discovery : the frozen :class:`Discovery` (rules, fitted geometries, diagnostics)
    data_hash : SHA-256 of the discovery cluster data (ids, systems, features, scores)
    feature_names : the feature columns, in the order the rules and geometries read them
    """

    engine: SASST
    discovery: Discovery
    data_hash: str
    feature_names: tuple[str, ...]

    @classmethod
    def from_discovery(cls, engine: SASST, discovery: Discovery, data: ClusterData) -> "Preregistration":
        """Freeze ``discovery`` (from ``engine.discover(data)``) with the engine's settings.

        Raises ``ValueError`` if ``data`` is not the discovery data (cluster ids differ).
        """
        if tuple(map(str, data.ids)) != tuple(map(str, discovery.cluster_ids)):
            raise ValueError("data is not the discovery data: its cluster ids differ from the discovery's")
        return cls(engine, discovery, _data_hash(data), tuple(data.feature_names))

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe pre-registration (see the module docstring for the layout)."""
        e, d = self.engine, self.discovery
        engine = {k: v for k, v in e.params().items()}
        engine["geometries"] = {k: _geometry_spec(v) for k, v in e.geometries.items()}
        engine["discovery_fraction"] = e.discovery_fraction
        disc = {
            "theta": d.theta, "selected_system": d.selected_system, "soft_selection": d.soft_selection,
            "n_clusters": d.n_clusters, "cluster_ids": list(map(str, d.cluster_ids)),
            "data_hash": self.data_hash, "feature_names": list(self.feature_names),
            "geometries": {k: geometry_state(g) for k, g in d.geometries.items()},
            "rules": {k: _frozen_to_dict(fr) for k, fr in d.rules.items()},
        }
        return {"format": FORMAT, "engine": engine, "discovery": disc}

    def save(self, path: str | Path) -> Path:
        """Write the pre-registration to ``path`` (one JSON file); returns the path."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1))  # key order kept: contrasts are ordered
        return path

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> "Preregistration":
        """Rebuild from :meth:`to_dict`. Raises ``ValueError`` on another format."""
        if obj.get("format") != FORMAT:
            raise ValueError(f"not a SASST pre-registration (format {obj.get('format')!r}, expected {FORMAT!r})")
        e = dict(obj["engine"])
        plan = ComparisonPlan(**{**e.pop("plan"), "systems": tuple(obj["engine"]["plan"]["systems"]),
                                 "candidates": tuple(obj["engine"]["plan"]["candidates"])})
        slots = [Slot.from_dict(s) for s in e.pop("slots")]
        families = {k: _RecordedFamily(spec=v) for k, v in e.pop("families").items()}
        geometries = {k: _geometry_unspec(v) for k, v in e.pop("geometries").items()}
        engine = SASST(plan, slots, families, geometries=geometries, **e)
        d = obj["discovery"]
        rules: dict[str, FrozenRule] = {}
        for k, fr in d["rules"].items():
            rules[k] = _frozen_from_dict(fr)
        disc = Discovery(rules=rules, theta={k: float(v) for k, v in d["theta"].items()},
                         selected_system=d["selected_system"], n_clusters=int(d["n_clusters"]),
                         cluster_ids=tuple(d["cluster_ids"]),
                         geometries={k: geometry_from_state(g) for k, g in d["geometries"].items()},
                         soft_selection={k: float(v) for k, v in d["soft_selection"].items()})
        return cls(engine, disc, d["data_hash"], tuple(d["feature_names"]))

    @classmethod
    def load(cls, path: str | Path) -> "Preregistration":
        """Read a file written by :meth:`save`."""
        return cls.from_dict(json.loads(Path(path).read_text()))

    # ------------------------------------------------------------------ confirmation
    def confirm(
        self,
        episodes: pd.DataFrame,
        features: pd.DataFrame,
        *,
        cluster: str = "task_id",
        seed_col: str = "seed",
        system: str = "workflow",
        score: str = "score",
    ) -> SASSTReport:
        """Frozen-rule confirmation on new episodes (every cluster is a confirmation cluster).

        The tables are validated as in :meth:`SASST.run`; the features must hold the
        pre-registered columns (read in the pre-registered order).

        Raises
        ------
        KeyError, ValueError
            On invalid tables, missing feature columns, or clusters reused from discovery.
        """
        data = cluster_data(episodes, features, self.engine.plan.systems, cluster=cluster, seed=seed_col,
                            system=system, score=score, feature_columns=list(self.feature_names))
        report = self.engine.confirm(self.discovery, data)
        return dataclasses.replace(report, provenance=make_provenance(
            seed=self.engine.seed, episodes=episodes, features=features, preregistration=self.data_hash))


def preregister(engine: SASST, discovery: Discovery, data: ClusterData,
                path: str | Path | None = None) -> Preregistration:
    """Shorthand: :meth:`Preregistration.from_discovery`, saved to ``path`` when given."""
    pre = Preregistration.from_discovery(engine, discovery, data)
    if path is not None:
        pre.save(path)
    return pre

