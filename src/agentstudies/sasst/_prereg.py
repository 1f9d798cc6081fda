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
     engine_fingerprint}, "schema": {features: [{name, dtype, kind, n, mean, sd, min, max,
     quantiles, cdf}], tolerance}, "registry": {families, rule_kinds},
     "integrity": {algorithm, digest, fields}}

What binds (issue 30): ``integrity`` holds a SHA-256 over the four sections and one per
field (down to each slot's and each frozen rule's entries), so an edited threshold, cap,
rule or geometry is refused at :meth:`Preregistration.load`, naming the field (the
digests guard against edits, not against someone who rewrites them too). ``registry``
records the candidate families and the class behind every rule kind the frozen rules
use; a process whose registered class for a kind differs is refused, and so is an
engine whose settings differ from the recorded ones (:meth:`Preregistration.confirm`
with ``engine=``; :meth:`SASST.confirm` checks the discovery's ``engine_fingerprint``).
``schema`` records each feature's dtype, value kind (binary / integer / continuous) and
discovery scale summary; :meth:`Preregistration.confirm` refuses a missing, retyped or
shifted feature (tolerances :data:`SHIFT_TOLERANCE`) unless an ``override`` names it with
a reason, which the report's notes and provenance then carry.

Floats are written with Python's shortest round-trip repr, so a confirmation from the
file reproduces the in-memory confirmation exactly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
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
from agentstudies.sasst._rules import RULE_KINDS, RuleFamily, rule_from_dict
from agentstudies.sasst._slots import Slot

__all__ = ["FORMAT", "SHIFT_TOLERANCE", "PreregistrationError", "Preregistration", "feature_schema",
           "geometry_state", "geometry_from_state", "preregister"]

#: Format tag of a pre-registration file (format 1 had no integrity hash, schema or registry).
FORMAT = "agentstudies.sasst.preregistration/2"

#: Stated tolerances for a confirmation feature against its discovery summary. A feature
#: is refused as *shifted* when, beyond sampling noise at the two sample sizes
#: ``s = sqrt(1/n_D + 1/n_I)``,
#: ``|mean_I - mean_D| / sd_D > mean_sd + 3 s`` (location),
#: ``|log(sd_I / sd_D)| > log_sd + 3 s / sqrt(2)`` (scale; the SE of a log SD is about
#: ``1/sqrt(2n)`` for near-normal data), or the confirmation ECDF at the recorded
#: discovery deciles departs from the discovery ECDF there by more than
#: ``ks + 1.36 s`` (the 5 % two-sample Kolmogorov-Smirnov allowance). A benchmark version
#: may move a feature by less; a rescaling (x100), a swap of two differently distributed
#: features or a recoding is far beyond it. Two features with the same distribution
#: swapped cannot be told apart by any marginal summary.
SHIFT_TOLERANCE = {"mean_sd": 0.5, "log_sd": math.log(2.0), "ks": 0.25}

_DECILES = tuple(round(0.1 * k, 1) for k in range(1, 10))


class PreregistrationError(ValueError):
    """A pre-registration refuses a file, an engine or a confirmation table; ``field``
    names what differs (``engine.slots[1].stability_threshold``, ``registry.rule_kinds.x``,
    ``features.x0``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


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


# ----------------------------------------------------------------------------- feature schema
def _value_kind(x: np.ndarray) -> str:
    """``binary`` (values in {0, 1}), ``integer`` (whole numbers) or ``continuous``."""
    x = np.asarray(x, float)
    if np.all((x == 0) | (x == 1)):
        return "binary"
    return "integer" if np.all(x == np.round(x)) else "continuous"


def _dtype_kind(features: pd.DataFrame | None, name: str) -> str | None:
    """``bool`` or ``number`` from the pandas dtype of a feature column (None without a table)."""
    if features is None or name not in features.columns:
        return None
    return "bool" if pd.api.types.is_bool_dtype(features[name]) else "number"


def feature_schema(data: ClusterData, features: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Per-feature schema and scale summary of cluster data (one dict per column of ``X``).

    Each entry: ``name``, ``dtype`` (``bool``/``number`` from ``features``' pandas dtype,
    or None), ``kind`` (value kind: binary / integer / continuous), ``n`` (clusters),
    ``mean``, ``sd`` (population, ddof 0), ``min``, ``max``, the deciles ``quantiles``
    and the ECDF ``cdf`` at them (ties make it differ from 0.1, ..., 0.9).
    """
    out = []
    for j, name in enumerate(data.feature_names):
        x = np.asarray(data.X[:, j], float)
        q = np.quantile(x, _DECILES)
        out.append({"name": str(name), "dtype": _dtype_kind(features, str(name)), "kind": _value_kind(x),
                    "n": int(len(x)), "mean": float(x.mean()), "sd": float(x.std()), "min": float(x.min()),
                    "max": float(x.max()), "quantiles": [float(v) for v in q],
                    "cdf": [float(np.mean(x <= v)) for v in q]})
    return out


def _shift_problems(rec: dict[str, Any], x: np.ndarray, tol: dict[str, float]) -> list[str]:
    """What moved in one feature beyond :data:`SHIFT_TOLERANCE` (empty when nothing did)."""
    n_d, n_i = max(int(rec["n"]), 1), max(len(x), 1)
    s = math.sqrt(1.0 / n_d + 1.0 / n_i)
    sd_d, sd_i = float(rec["sd"]), float(np.std(x))
    problems = []
    if sd_d > 0:
        z = abs(float(np.mean(x)) - float(rec["mean"])) / sd_d
        if z > tol["mean_sd"] + 3 * s:
            problems.append(f"mean moved {z:.2f} discovery SDs (> {tol['mean_sd'] + 3 * s:.2f})")
    if (sd_d > 0) != (sd_i > 0):
        problems.append(f"SD {sd_i:.4g} where discovery had {sd_d:.4g}")
    elif sd_d > 0:
        r = abs(math.log(sd_i / sd_d))
        if r > tol["log_sd"] + 3 * s / math.sqrt(2):
            problems.append(f"scale changed x{sd_i / sd_d:.3g} (|log ratio| {r:.2f} > "
                            f"{tol['log_sd'] + 3 * s / math.sqrt(2):.2f})")
    ks = max(abs(float(np.mean(x <= q)) - c) for q, c in zip(rec["quantiles"], rec["cdf"]))
    if ks > tol["ks"] + 1.36 * s:
        problems.append(f"ECDF at the discovery deciles moved {ks:.2f} (> {tol['ks'] + 1.36 * s:.2f})")
    return problems


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
    now = _integrity(obj)["fields"]
    was = rec.get("fields", {})
    bad = [p for p in dict.fromkeys([*was, *now]) if was.get(p) != now.get(p)]
    deepest = [p for p in bad if not any(q != p and (q.startswith(p + ".") or q.startswith(p + "[")) for q in bad)]
    raise PreregistrationError(deepest[0] if deepest else "integrity",
                               "edited after the discovery was frozen (integrity hash differs"
                               + (f"; also: {', '.join(deepest[1:6])}" if len(deepest) > 1 else "") + ")")


def _rule_kinds(discovery: Discovery) -> dict[str, str]:
    """Rule kind -> qualified class name of every frozen rule's class."""
    kinds = {}
    for fr in discovery.rules.values():
        if fr.rule is not None:
            kinds[fr.rule.kind] = type(fr.rule).__qualname__
    return dict(sorted(kinds.items()))


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
    schema : per-feature dtype, value kind and discovery scale summary (:func:`feature_schema`)
    """

    engine: SASST
    discovery: Discovery
    data_hash: str
    feature_names: tuple[str, ...]
    schema: tuple[dict[str, Any], ...] = ()

    @classmethod
    def from_discovery(cls, engine: SASST, discovery: Discovery, data: ClusterData,
                       features: pd.DataFrame | None = None) -> "Preregistration":
        """Freeze ``discovery`` (from ``engine.discover(data)``) with the engine's settings.

        ``features`` (the discovery feature table) adds each column's pandas dtype to the
        schema; without it only the value kind is recorded.

        Raises ``ValueError`` if ``data`` is not the discovery data (cluster ids differ) or
        ``engine`` is not the engine that ran the discovery (fields named).
        """
        if tuple(map(str, data.ids)) != tuple(map(str, discovery.cluster_ids)):
            raise ValueError("data is not the discovery data: its cluster ids differ from the discovery's")
        if discovery.engine_fingerprint:
            changed = fingerprint_diff(discovery.engine_fingerprint, engine.fingerprint())
            if changed:
                raise PreregistrationError(f"engine.{changed[0]}", "differs from the engine that ran the discovery")
        disc = discovery if discovery.engine_fingerprint else dataclasses.replace(
            discovery, engine_fingerprint=engine.fingerprint())
        return cls(engine, disc, _data_hash(data), tuple(data.feature_names), tuple(feature_schema(data, features)))

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
            "engine_fingerprint": dict(d.engine_fingerprint),
        }
        obj = {"format": FORMAT, "engine": engine, "discovery": disc,
               "schema": {"features": [dict(f) for f in self.schema], "tolerance": dict(SHIFT_TOLERANCE)},
               "registry": {"families": engine["families"], "rule_kinds": _rule_kinds(d)}}
        # the digests are taken over the JSON text the file will hold (floats as written)
        obj = json.loads(json.dumps(obj))
        obj["integrity"] = _integrity(obj)
        return obj

    def save(self, path: str | Path) -> Path:
        """Write the pre-registration to ``path`` (one JSON file); returns the path."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1))  # key order kept: contrasts are ordered
        return path

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> "Preregistration":
        """Rebuild from :meth:`to_dict`, checking that it binds.

        Raises
        ------
        ValueError
            Another format. :class:`PreregistrationError` (a ``ValueError``) naming the
            field: an edited section (integrity hash), a rule kind registered in this
            process by another class than the recorded one (``registry.rule_kinds.<kind>``),
            or an engine that does not rebuild to the recorded fingerprint.
        """
        if obj.get("format") != FORMAT:
            raise ValueError(f"not a SASST pre-registration of this format (format {obj.get('format')!r}, "
                             f"expected {FORMAT!r}); freeze the discovery again")
        _check_integrity(obj)
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
        rules: dict[str, FrozenRule] = {}
        for k, fr in d["rules"].items():
            rules[k] = _frozen_from_dict(fr)
        disc = Discovery(rules=rules, theta={k: float(v) for k, v in d["theta"].items()},
                         selected_system=d["selected_system"], n_clusters=int(d["n_clusters"]),
                         cluster_ids=tuple(d["cluster_ids"]),
                         geometries={k: geometry_from_state(g) for k, g in d["geometries"].items()},
                         soft_selection={k: float(v) for k, v in d["soft_selection"].items()},
                         engine_fingerprint=dict(d["engine_fingerprint"]))
        return cls(engine, disc, d["data_hash"], tuple(d["feature_names"]),
                   tuple(obj["schema"]["features"]))

    @classmethod
    def load(cls, path: str | Path) -> "Preregistration":
        """Read a file written by :meth:`save` (raises as :meth:`from_dict`).

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
            return cls.from_dict(obj)
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
        """Check the confirmation features against the recorded schema.

        Returns one note per overridden problem. Raises :class:`PreregistrationError`
        (``features.<name>``) for a missing feature, a retyped one (pandas dtype bool vs
        number, or value kind binary / integer / continuous changed; an integer feature
        that shows only 0/1 passes) or a shifted one (:data:`SHIFT_TOLERANCE`), unless
        ``override`` maps its name to a reason (a missing feature is never overridable).
        """
        override = dict(override or {})
        unknown = sorted(set(override) - set(self.feature_names))
        if unknown:
            raise KeyError(f"override names feature(s) {unknown} not in the pre-registration {list(self.feature_names)}")
        notes = []
        for j, rec in enumerate(self.schema):
            name = rec["name"]
            x = data.X[:, j]
            problems = []
            dtype = _dtype_kind(features, name)
            if rec["dtype"] is not None and dtype is not None and dtype != rec["dtype"]:
                problems.append(f"dtype {dtype} where discovery had {rec['dtype']}")
            kind = _value_kind(x)
            if kind != rec["kind"] and not (rec["kind"] == "integer" and kind == "binary"):
                problems.append(f"values are {kind} where discovery's were {rec['kind']}")
            problems += _shift_problems(rec, x, SHIFT_TOLERANCE)
            if not problems:
                continue
            if name not in override:
                raise PreregistrationError(f"features.{name}", "; ".join(problems)
                                           + f" (pass override={{{name!r}: reason}} to confirm anyway)")
            notes.append(f"override for feature {name!r} ({override[name]}): {'; '.join(problems)}")
        return notes

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
    ) -> SASSTReport:
        """Frozen-rule confirmation on new episodes (every cluster is a confirmation cluster).

        The tables are validated as in :meth:`SASST.run`; the features must hold the
        pre-registered columns (read in the pre-registered order) and match the recorded
        schema (:meth:`check_features`). ``engine``, when given (an engine rebuilt from
        code), must match the recorded engine's registry, slots and settings; the
        confirmation always runs with the recorded one. ``override`` (feature -> reason)
        accepts a listed feature's type or distribution change; each override is written
        to the report's ``notes`` and provenance.

        Raises
        ------
        KeyError, ValueError
            On invalid tables, missing feature columns, or clusters reused from discovery.
        PreregistrationError
            Naming the field: ``engine.<setting>`` for another engine, ``features.<name>``
            for a retyped or shifted feature without an override.
        """
        if engine is not None:
            changed = fingerprint_diff(self.discovery.engine_fingerprint, engine.fingerprint())
            changed += [k for k in ("level", "inference", "n_draws", "exact_multiplier")
                        if getattr(engine, k) != getattr(self.engine, k)]
            if changed:
                raise PreregistrationError(f"engine.{changed[0]}", "this engine differs from the pre-registered one"
                                           + (f" (also {', '.join(changed[1:])})" if len(changed) > 1 else ""))
        data = cluster_data(episodes, features, self.engine.plan.systems, cluster=cluster, seed=seed_col,
                            system=system, score=score, feature_columns=list(self.feature_names))
        notes = self.check_features(features, data, override)
        report = self.engine.confirm(self.discovery, data)
        return dataclasses.replace(report, notes=tuple(report.notes) + tuple(data.notes) + tuple(notes),
                                   provenance=make_provenance(
            seed=self.engine.seed, episodes=episodes, features=features, preregistration=self.data_hash,
            overrides=json.dumps(sorted(notes))))


def preregister(engine: SASST, discovery: Discovery, data: ClusterData,
                path: str | Path | None = None, features: pd.DataFrame | None = None) -> Preregistration:
    """Shorthand: :meth:`Preregistration.from_discovery`, saved to ``path`` when given."""
    pre = Preregistration.from_discovery(engine, discovery, data, features)
    if path is not None:
        pre.save(path)
    return pre

