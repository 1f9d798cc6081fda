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
     n_clusters, cluster_ids, data_hash, feature_names, geometries, rules,
     engine_fingerprint, protocol: {inference, columns, seeds_per_cluster, preregistered,
     confirmation_ids}}, "schema": {features: [{name, dtype, kind, n, mean, sd, min, max,
     skew, quantiles, cdf, corr}], tolerance}, "registry": {families, rule_kinds},
     "integrity": {algorithm, digest, fields}}

What binds: ``integrity`` holds a SHA-256 over the four sections and one per field (down
to each slot's and each frozen rule's entries), so an edited threshold, cap, rule or
geometry is refused at :meth:`Preregistration.load`, naming the field. Digests inside a
file guard against edits, not against someone who rewrites them too: the *anchor*
(:attr:`Preregistration.anchor`, the file's digest, or :meth:`Preregistration.record`, its
digests per field) is taken at freeze time and kept outside the file (printed and glued
into the page); ``load(path, anchor=...)`` and ``confirm(..., anchor=...)`` refuse a file
or an in-memory pre-registration that differs from it, naming the fields when given the
record. Only a confirmation checked against an anchor is labelled *pre-registered*.

Every input that can change a confirmation's answer is recorded (the discovery's
``protocol``, :mod:`._protocol`): the inference rule, level, draws and multiplier; the
episode columns (cluster, seed, system, score) and seeds per cluster; the confirmation
cluster set (``confirmation_ids``, fixed before outcomes are read); the feature schema
with its tolerance. Whichever route confirms (:meth:`Preregistration.confirm`,
:meth:`SASST.confirm` on ``pre.discovery``, a replaced or mutated engine), each change is
named in the report's ``departures`` and the report is labelled *not pre-registered*.
``registry`` records the candidate families and the class behind every rule kind the
frozen rules use; a process whose registered class for a kind differs is refused, and so
is an engine whose discovery settings differ (:meth:`SASST.confirm` checks the
discovery's ``engine_fingerprint``). A retyped or shifted feature (the recorded
tolerance, :data:`SHIFT_TOLERANCE` at freeze time) is refused unless an ``override``
names it with a reason; the override is then a departure.

Floats are written with Python's shortest round-trip repr, so a confirmation from the
file reproduces the in-memory confirmation exactly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentstudies.results import make_provenance
from agentstudies.sasst._data import ClusterData, cluster_data
from agentstudies.sasst._engine import SASST
from agentstudies.sasst._report import SASSTReport
from agentstudies.sasst._results import Discovery, FrozenRule, fingerprint_diff
from agentstudies.sasst._geometry import _GEOMETRIES, Geometry, Standardizer
from agentstudies.sasst._plan import ComparisonPlan
from agentstudies.sasst._protocol import (INFERENCE_FIELDS, SHIFT_TOLERANCE, PreregistrationError, schema_of,
                                          schema_problems, stamp)
from agentstudies.sasst._rules import RULE_KINDS, RuleFamily, rule_from_dict
from agentstudies.sasst._slots import Slot

__all__ = ["FORMAT", "SHIFT_TOLERANCE", "PreregistrationError", "Preregistration", "feature_schema",
           "geometry_state", "geometry_from_state", "preregister"]

#: Format tag of a pre-registration file (format 1 had no integrity hash, schema or registry;
#: format 2 no confirmation protocol).
FORMAT = "agentstudies.sasst.preregistration/3"

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
    """A frozen rule as JSON, without its wall-clock ``runtime_s``: the file, and so its
    digest (the anchor), is the same for every run of the same discovery."""
    d = {f.name: getattr(fr, f.name) for f in dataclasses.fields(fr)
         if f.name not in ("rule", "candidates", "runtime_s")}
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


# ----------------------------------------------------------------------------- feature schema
def feature_schema(data: ClusterData, features: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Per-feature schema and scale summary of cluster data (one dict per column of ``X``).

    Each entry: ``name``, ``dtype`` (``bool``/``number`` from ``features``' pandas dtype,
    or None), ``kind`` (value kind: binary / integer / continuous), ``n`` (clusters),
    ``mean``, ``sd`` (population, ddof 0), ``min``, ``max``, ``skew``, the deciles
    ``quantiles``, the ECDF ``cdf`` at them (ties make it differ from 0.1, ..., 0.9) and
    ``corr`` (Pearson correlation with each other feature, by name).
    """
    return schema_of(data.X, data.feature_names, features)


# ----------------------------------------------------------------------------- integrity
def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, separators=(",", ":")).encode()).hexdigest()


def _field_digests(obj: Any, path: str, depth: int, out: dict[str, str]) -> dict[str, str]:
    """SHA-256 of ``obj`` at ``path`` and of its dict entries / list items, ``depth`` levels down."""
    out[path] = _digest(obj)
    if depth > 0 and isinstance(obj, dict):
        for k, v in obj.items():
            _field_digests(v, f"{path}.{k}", depth - 1, out)
    elif depth > 0 and isinstance(obj, list) and all(isinstance(v, dict) for v in obj):
        for i, v in enumerate(obj):
            _field_digests(v, f"{path}[{i}]", depth - 1, out)
    return out


_SIGNED = ("engine", "discovery", "schema", "registry")


def _integrity(obj: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, str] = {}
    for k in _SIGNED:
        _field_digests(obj[k], k, 3, fields)
    return {"algorithm": "sha256", "digest": _digest([obj[k] for k in _SIGNED]), "fields": fields}


def _deepest(was: dict[str, str], now: dict[str, str]) -> list[str]:
    """The deepest field paths whose digests differ between two integrity records."""
    bad = [p for p in dict.fromkeys([*was, *now]) if was.get(p) != now.get(p)]
    return [p for p in bad if not any(q != p and (q.startswith(p + ".") or q.startswith(p + "[")) for q in bad)]


def _check_integrity(obj: dict[str, Any]) -> None:
    """Refuse a file whose signed sections differ from its integrity record, naming the
    deepest differing fields."""
    rec = obj.get("integrity")
    if not isinstance(rec, dict) or "digest" not in rec:
        raise PreregistrationError("integrity", "the file carries no integrity hash; freeze the discovery again")
    missing = [k for k in _SIGNED if k not in obj]
    if missing:
        raise PreregistrationError(missing[0], "section missing from the file")
    if _digest([obj[k] for k in _SIGNED]) == rec["digest"]:
        return
    deepest = _deepest(rec.get("fields", {}), _integrity(obj)["fields"])
    raise PreregistrationError(deepest[0] if deepest else "integrity",
                               "edited after the discovery was frozen (integrity hash differs"
                               + (f"; also: {', '.join(deepest[1:6])}" if len(deepest) > 1 else "") + ")")


def _anchor_digest(anchor: str | dict[str, Any]) -> str:
    if isinstance(anchor, str):
        return anchor
    if isinstance(anchor, dict) and isinstance(anchor.get("digest"), str):
        return anchor["digest"]
    raise TypeError(f"anchor must be the digest string (Preregistration.anchor) or the record dict "
                    f"(Preregistration.record()); got {type(anchor).__name__}")


def _check_anchor(integrity: dict[str, Any], anchor: str | dict[str, Any]) -> None:
    """Refuse a pre-registration whose digest differs from the ``anchor`` taken at freeze
    time and kept outside the file, naming the differing fields when the anchor is a
    :meth:`Preregistration.record`."""
    want = _anchor_digest(anchor)
    if integrity["digest"] == want:
        return
    where = _deepest(anchor.get("fields", {}), integrity["fields"]) if isinstance(anchor, dict) else []
    raise PreregistrationError(
        where[0] if where else "anchor",
        f"differs from the anchor taken when the discovery was frozen (digest {integrity['digest'][:16]}... "
        f"where the anchor holds {want[:16]}...)" + (f"; also: {', '.join(where[1:6])}" if len(where) > 1 else "")
        + ": the pre-registration was changed after it was anchored")


def _rule_kinds(discovery: Discovery) -> dict[str, str]:
    """Rule kind -> qualified class name of every frozen rule's class."""
    kinds = {}
    for fr in discovery.rules.values():
        if fr.rule is not None:
            kinds[fr.rule.kind] = type(fr.rule).__qualname__
    return dict(sorted(kinds.items()))


# ----------------------------------------------------------------------------- the artifact
def _confirmation_ids(ids: Any, discovery: Discovery) -> list[str] | None:
    """The recorded confirmation cluster set (sorted text ids), checked: unique, non-empty,
    disjoint from discovery. ``None`` records that it was not fixed."""
    if ids is None:
        return None
    out = [str(i) for i in (ids.index if isinstance(ids, (pd.DataFrame, pd.Series)) else ids)]
    if not out:
        raise ValueError("confirmation_ids is empty; pass the confirmation cluster ids (or None: not recorded)")
    dup = sorted({i for i in out if out.count(i) > 1})
    if dup:
        raise ValueError(f"confirmation_ids repeats cluster id(s) {dup[:5]}")
    reused = sorted(set(out) & set(map(str, discovery.cluster_ids)))
    if reused:
        raise ValueError(f"confirmation_ids include discovery cluster(s) {reused[:5]}; confirmation clusters "
                         "must be new")
    return sorted(out)


@dataclass(frozen=True)
class Preregistration:
    """A frozen SASST discovery with everything a later confirmation needs.

    Build with :meth:`from_discovery` (after :meth:`SASST.discover`), write with
    :meth:`save`, keep :attr:`anchor` (or :meth:`record`) outside the file, read with
    :meth:`load` and confirm new episodes with :meth:`confirm`.

    Attributes
    ----------
    engine : the :class:`SASST` engine (plan, slots, thresholds, inference, seed); its
        families are the recorded specifications (they cannot rerun discovery)
    discovery : the frozen :class:`Discovery` (rules, fitted geometries, diagnostics, and
        the confirmation ``protocol``: inference, columns, seeds per cluster, confirmation
        cluster set, feature schema and tolerance)
    data_hash : SHA-256 of the discovery cluster data (ids, systems, features, scores)
    feature_names : the feature columns, in the order the rules and geometries read them
    """

    engine: SASST
    discovery: Discovery
    data_hash: str
    feature_names: tuple[str, ...]

    @property
    def schema(self) -> tuple[dict[str, Any], ...]:
        """Per-feature dtype, value kind and discovery summary (:func:`feature_schema`)."""
        return tuple(self.discovery.protocol.get("schema") or ())

    @property
    def tolerance(self) -> dict[str, float]:
        """The feature-shift tolerance recorded at freeze time (:data:`SHIFT_TOLERANCE` then)."""
        return dict(self.discovery.protocol.get("tolerance") or SHIFT_TOLERANCE)

    @property
    def confirmation_ids(self) -> tuple[str, ...] | None:
        """The pre-registered confirmation cluster set (None: not recorded)."""
        ids = self.discovery.protocol.get("confirmation_ids")
        return None if ids is None else tuple(ids)

    @classmethod
    def from_discovery(cls, engine: SASST, discovery: Discovery, data: ClusterData,
                       features: pd.DataFrame | None = None, *,
                       confirmation_ids: Any = None) -> "Preregistration":
        """Freeze ``discovery`` (from ``engine.discover(data)``) with the engine's settings.

        ``features`` (the discovery feature table) adds each column's pandas dtype to the
        schema; without it only the value kind is recorded. ``confirmation_ids`` (ids, or
        a feature table / Series indexed by them) fixes the confirmation cluster set before
        any outcome is read; a confirmation on another set names the dropped and added
        clusters as departures. Without it the set is not recorded and every confirmation
        says so.

        Raises ``ValueError`` if ``data`` is not the discovery data (cluster ids differ),
        ``engine`` is not the engine that ran the discovery (fields named, inference
        settings included), or ``confirmation_ids`` is empty, repeats an id or reuses a
        discovery cluster.
        """
        if tuple(map(str, data.ids)) != tuple(map(str, discovery.cluster_ids)):
            raise ValueError("data is not the discovery data: its cluster ids differ from the discovery's")
        if discovery.engine_fingerprint:
            changed = fingerprint_diff(discovery.engine_fingerprint, engine.fingerprint())
            if changed:
                raise PreregistrationError(f"engine.{changed[0]}", "differs from the engine that ran the discovery")
        base = dict(discovery.protocol) or stamp(engine, data)
        for k in INFERENCE_FIELDS:
            if k in (base.get("inference") or {}) and base["inference"][k] != getattr(engine, k):
                raise PreregistrationError(f"engine.{k}", f"{getattr(engine, k)!r} differs from the "
                                           f"{base['inference'][k]!r} the discovery ran with")
        protocol = {**base, "preregistered": True,
                    "confirmation_ids": _confirmation_ids(confirmation_ids, discovery),
                    "schema": feature_schema(data, features), "tolerance": dict(SHIFT_TOLERANCE)}
        disc = dataclasses.replace(discovery, engine_fingerprint=dict(discovery.engine_fingerprint
                                                                      or engine.fingerprint()),
                                   protocol=protocol)
        return cls(engine, disc, _data_hash(data), tuple(data.feature_names))

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe pre-registration (see the module docstring for the layout)."""
        e, d = self.engine, self.discovery
        engine = {k: v for k, v in e.params().items()}
        engine["geometries"] = {k: _geometry_spec(v) for k, v in e.geometries.items()}
        engine["discovery_fraction"] = e.discovery_fraction
        protocol = {k: v for k, v in d.protocol.items() if k not in ("schema", "tolerance")}
        disc = {
            "theta": d.theta, "selected_system": d.selected_system, "soft_selection": d.soft_selection,
            "n_clusters": d.n_clusters, "cluster_ids": list(map(str, d.cluster_ids)),
            "data_hash": self.data_hash, "feature_names": list(self.feature_names),
            "geometries": {k: geometry_state(g) for k, g in d.geometries.items()},
            "rules": {k: _frozen_to_dict(fr) for k, fr in d.rules.items()},
            "engine_fingerprint": dict(d.engine_fingerprint), "protocol": protocol,
        }
        obj = {"format": FORMAT, "engine": engine, "discovery": disc,
               "schema": {"features": [dict(f) for f in self.schema], "tolerance": self.tolerance},
               "registry": {"families": engine["families"], "rule_kinds": _rule_kinds(d)}}
        # the digests are taken over the JSON text the file will hold (floats as written)
        obj = json.loads(json.dumps(obj))
        obj["integrity"] = _integrity(obj)
        return obj

    @property
    def anchor(self) -> str:
        """SHA-256 of this pre-registration (the file's ``integrity.digest``). Take it when
        freezing and keep it outside the file (print it, glue it into the page): a file
        edited and re-signed later no longer matches it."""
        return self.to_dict()["integrity"]["digest"]

    def record(self) -> dict[str, Any]:
        """A detached record to keep outside the file: ``{"format", "digest", "fields"}``
        (the digest per field). Passed as ``anchor=``, a mismatch names the changed fields."""
        integ = self.to_dict()["integrity"]
        return {"format": FORMAT, "digest": integ["digest"], "fields": dict(integ["fields"])}

    def save(self, path: str | Path) -> Path:
        """Write the pre-registration to ``path`` (one JSON file); returns the path."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1))  # key order kept: contrasts are ordered
        return path

    @classmethod
    def from_dict(cls, obj: dict[str, Any], anchor: str | dict[str, Any] | None = None) -> "Preregistration":
        """Rebuild from :meth:`to_dict`, checking that it binds (and, given the ``anchor``
        taken at freeze time, that it is the anchored pre-registration).

        Raises
        ------
        ValueError
            Another format. :class:`PreregistrationError` (a ``ValueError``) naming the
            field: an edited section (integrity hash), a digest other than the anchor's
            (``anchor``, or the changed fields given a :meth:`record`), a rule kind
            registered in this process by another class than the recorded one
            (``registry.rule_kinds.<kind>``), or an engine that does not rebuild to the
            recorded fingerprint.

        Length: one pass over the file's sections in order, each rebuilt and checked where
        it is read; split, the checks would be separated from the fields they guard.
        """
        if obj.get("format") != FORMAT:
            raise ValueError(f"not a SASST pre-registration of this format (format {obj.get('format')!r}, "
                             f"expected {FORMAT!r}); freeze the discovery again")
        _check_integrity(obj)
        if anchor is not None:
            _check_anchor(obj["integrity"], anchor)
        for kind, qualname in obj["registry"]["rule_kinds"].items():
            have = RULE_KINDS.get(kind)
            if have is None:
                raise PreregistrationError(f"registry.rule_kinds.{kind}",
                                           f"rule kind {kind!r} ({qualname}) is not registered in this process; "
                                           "import or register_rule() it before loading")
            if have.__qualname__ != qualname:
                raise PreregistrationError(f"registry.rule_kinds.{kind}",
                                           f"rule kind {kind!r} is registered here by {have.__qualname__}, "
                                           f"frozen with {qualname}")
        e = dict(obj["engine"])
        plan = ComparisonPlan(**{**e.pop("plan"), "systems": tuple(obj["engine"]["plan"]["systems"]),
                                 "candidates": tuple(obj["engine"]["plan"]["candidates"])})
        slots = [Slot.from_dict(s) for s in e.pop("slots")]
        families = {k: _RecordedFamily(spec=v) for k, v in e.pop("families").items()}
        geometries = {k: _geometry_unspec(v) for k, v in e.pop("geometries").items()}
        engine = SASST(plan, slots, families, geometries=geometries, **e)
        d = obj["discovery"]
        changed = fingerprint_diff(d["engine_fingerprint"], engine.fingerprint())
        if changed:
            raise PreregistrationError(f"engine.{changed[0]}", "the recorded engine does not rebuild to the "
                                       "discovery's fingerprint (edited consistently with its digests?)")
        rules = {k: _frozen_from_dict(fr) for k, fr in d["rules"].items()}
        protocol = {**d["protocol"], "schema": obj["schema"]["features"], "tolerance": obj["schema"]["tolerance"]}
        disc = Discovery(rules=rules, theta={k: float(v) for k, v in d["theta"].items()},
                         selected_system=d["selected_system"], n_clusters=int(d["n_clusters"]),
                         cluster_ids=tuple(d["cluster_ids"]),
                         geometries={k: geometry_from_state(g) for k, g in d["geometries"].items()},
                         soft_selection={k: float(v) for k, v in d["soft_selection"].items()},
                         engine_fingerprint=dict(d["engine_fingerprint"]), protocol=protocol)
        return cls(engine, disc, d["data_hash"], tuple(d["feature_names"]))

    @classmethod
    def load(cls, path: str | Path, anchor: str | dict[str, Any] | None = None) -> "Preregistration":
        """Read a file written by :meth:`save`, checked against ``anchor`` when given
        (raises as :meth:`from_dict`).

        Raises
        ------
        ValueError
            A file that is not JSON (e.g. truncated) or lacks a section, naming the file;
            :class:`PreregistrationError` as :meth:`from_dict`, its message ending with the
            file's path.
        """
        path = Path(path)
        try:
            obj = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"pre-registration {path} is not readable JSON ({type(exc).__name__}: {exc}); the file "
                             "is truncated or edited: restore it from version control or freeze the discovery "
                             "again") from exc
        if not isinstance(obj, dict):
            raise ValueError(f"pre-registration {path} holds a JSON {type(obj).__name__}, not the object "
                             ":meth:`save` writes; restore it or freeze the discovery again")
        try:
            return cls.from_dict(obj, anchor=anchor)
        except PreregistrationError as exc:
            raise PreregistrationError(exc.field, f"{str(exc)[len(exc.field) + 2:]} (pre-registration {path})") from exc
        except KeyError as exc:
            raise ValueError(f"pre-registration {path} lacks the field {exc.args[0]!r}; the file is truncated or "
                             "edited: restore it from version control or freeze the discovery again") from exc

    def verify_data(self, data: ClusterData) -> None:
        """Check that ``data`` is the discovery data this file was frozen on (``data_hash``).

        Raises :class:`PreregistrationError` (``discovery.data_hash``) when it is not.
        """
        if _data_hash(data) != self.data_hash:
            raise PreregistrationError("discovery.data_hash", "these are not the data the discovery was frozen on")

    # ------------------------------------------------------------------ confirmation
    def check_features(self, features: pd.DataFrame, data: ClusterData,
                       override: dict[str, str] | None = None) -> list[str]:
        """Check the confirmation features against the recorded schema, under the recorded
        tolerance (:attr:`tolerance`; :data:`SHIFT_TOLERANCE` documents its checks).

        Returns one note per overridden problem. Raises :class:`PreregistrationError`
        (``features.<name>``) for a retyped feature (pandas dtype bool vs number, or value
        kind binary / integer / continuous changed; an integer feature that shows only 0/1
        passes) or a shifted, rescaled or sign-flipped one, unless ``override`` maps its
        name to a reason; ``KeyError`` for a missing feature (never overridable) or an
        override naming an unknown feature.
        """
        override = dict(override or {})
        unknown = sorted(set(override) - set(self.feature_names))
        if unknown:
            raise KeyError(f"override names feature(s) {unknown} not in the pre-registration {list(self.feature_names)}")
        bad = schema_problems(self.schema, self.tolerance, data.X, data.feature_names, features)
        for name in list(bad):  # a correlation reversed with an overridden feature is covered by its override
            rest = [p for p in bad[name] if not any(p.startswith(f"correlation with {o} reversed") for o in override)]
            if name not in override and rest != bad[name]:
                if rest:
                    bad[name] = rest
                else:
                    del bad[name]
        refused = [k for k in bad if k not in override]
        if refused:
            also = "; ".join(f"features.{k}: {'; '.join(bad[k])}" for k in refused[1:4])
            raise PreregistrationError(f"features.{refused[0]}", "; ".join(bad[refused[0]])
                                       + (f" (also {also})" if also else "")
                                       + f" (pass override={{{refused[0]!r}: reason}} to confirm anyway)")
        return [f"override for feature {name!r} ({override[name]}): {'; '.join(problems)}"
                for name, problems in bad.items()]

    def confirm(
        self,
        episodes: pd.DataFrame,
        features: pd.DataFrame,
        *,
        cluster: str = "task_id",
        seed_col: str = "seed",
        system: str = "workflow",
        score: str = "score",
        engine: SASST | None = None,
        override: dict[str, str] | None = None,
        anchor: str | dict[str, Any] | None = None,
    ) -> SASSTReport:
        """Frozen-rule confirmation on new episodes (every cluster is a confirmation cluster).

        The tables are validated as in :meth:`SASST.run`; the features must hold the
        pre-registered columns (read in the pre-registered order) and match the recorded
        schema (:meth:`check_features`). ``engine``, when given (an engine rebuilt from
        code), must match the recorded engine's registry, slots and settings; the
        confirmation always runs with this pre-registration's engine. ``anchor`` (the
        :attr:`anchor` or :meth:`record` kept outside the file) is checked against this
        pre-registration as it is now (a replaced or mutated engine, an edited and
        re-signed file); only an anchored confirmation with no departure is labelled
        *pre-registered*. Any departure from the recorded protocol (columns ``cluster``,
        ``seed_col``, ``system``, ``score``; seeds per cluster; the confirmation cluster set;
        the inference settings of this pre-registration's engine; an ``override``) is named
        in the report's ``departures`` and labels it *not pre-registered*. ``override``
        (feature -> reason) accepts a listed feature's type or distribution change; each
        is written to the report's ``notes`` and provenance.

        Raises
        ------
        KeyError, ValueError
            On invalid tables, missing feature columns, or clusters reused from discovery.
        PreregistrationError
            Naming the field: ``engine.<setting>`` for another ``engine``, ``anchor`` (or
            the changed fields) for a pre-registration that differs from its anchor,
            ``features.<name>`` for a retyped or shifted feature without an override.
        """
        if anchor is not None:
            _check_anchor(self.to_dict()["integrity"], anchor)
        if engine is not None:
            changed = fingerprint_diff(self.discovery.engine_fingerprint, engine.fingerprint())
            changed += [k for k in INFERENCE_FIELDS if getattr(engine, k) != getattr(self.engine, k)]
            if changed:
                raise PreregistrationError(f"engine.{changed[0]}", "this engine differs from the pre-registered one"
                                           + (f" (also {', '.join(changed[1:])})" if len(changed) > 1 else ""))
        data = cluster_data(episodes, features, self.engine.plan.systems, cluster=cluster, seed=seed_col,
                            system=system, score=score, feature_columns=list(self.feature_names))
        notes = self.check_features(features, data, override)
        report = self.engine.confirm(self.discovery, data)
        return dataclasses.replace(
            report, notes=tuple(report.notes) + tuple(data.notes) + tuple(notes),
            anchor=_anchor_digest(anchor) if anchor is not None else "",
            provenance=make_provenance(seed=self.engine.seed, episodes=episodes, features=features,
                                       preregistration=self.data_hash, anchor=_anchor_digest(anchor) if anchor else "",
                                       overrides=json.dumps(sorted(notes))))


def preregister(engine: SASST, discovery: Discovery, data: ClusterData,
                path: str | Path | None = None, features: pd.DataFrame | None = None, *,
                confirmation_ids: Any = None) -> Preregistration:
    """Shorthand: :meth:`Preregistration.from_discovery`, saved to ``path`` when given
    (keep its :attr:`~Preregistration.anchor` outside the file)."""
    pre = Preregistration.from_discovery(engine, discovery, data, features, confirmation_ids=confirmation_ids)
    if path is not None:
        pre.save(path)
    return pre

