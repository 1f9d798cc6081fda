"""What a confirmation is bound to, and how a confirmation departs from it.

SASST freezes, before any confirmation outcome is read, the rule, every threshold *and*
the inference rule (App. C.1: "All encoders, standardization statistics ... are frozen
according to the slot before confirmatory outcomes are read"; C.4: "The inference rule
must be frozen before confirmation outcomes are read"). Every input that can change a
confirmation's answer is therefore recorded in the discovery's ``protocol`` and compared
on every confirmation:

- ``inference``: ``level``, ``inference``, ``n_draws``, ``exact_multiplier`` of the engine
  (the discovery-binding settings, seed included, are in ``engine_fingerprint``);
- ``columns``: the episode-table columns the discovery data were read from (cluster, seed,
  system, score), and ``seeds_per_cluster``, the seeds each discovery cluster held (a
  task x seed clustering shows as one seed per cluster);
- with a pre-registration (``preregistered``): ``confirmation_ids``, the confirmation
  cluster set fixed before outcomes are read (``None``: not recorded), and ``schema``
  with its ``tolerance``: each feature's kind, scale, range, skew and correlations.

:func:`departures` lists what a confirmation changes, one ``"<field>: <what>"`` text each;
a report with any is labelled *not pre-registered*. :func:`schema_of` and
:func:`shift_problems` are the feature screen (:data:`SHIFT_TOLERANCE`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["INFERENCE_FIELDS", "MAX_RECORDED_VALUES", "SHIFT_TOLERANCE", "PreregistrationError", "departures",
           "refuse_departures", "schema_of", "schema_problems", "shift_problems", "stamp", "value_kind"]

#: Engine settings that change a confirmation's band and are not in the discovery fingerprint.
INFERENCE_FIELDS = ("level", "inference", "n_draws", "exact_multiplier")

#: Stated tolerances for a confirmation feature against its discovery summary, with
#: ``s = sqrt(1/n_D + 1/n_I)`` the sampling scale at the two sizes. A feature is *shifted* when
#:
#: - location: ``|mean_I - mean_D| / sd_D > mean_sd + 3 s``;
#: - scale: ``|log(sd_I / sd_D)| > log_sd + 3 s / sqrt(2)`` (the SE of a log SD is about
#:   ``1/sqrt(2n)`` for near-normal data);
#: - shape: the confirmation ECDF at the recorded discovery deciles departs from the
#:   discovery ECDF there by more than ``ks + 1.36 s`` (the 5 % two-sample KS allowance);
#: - range: more confirmation values fall outside the discovery ``[min, max]`` than a
#:   Binomial(n_I, 2 / (n_D + 1)) count exceeds with probability ``range_p`` (under no
#:   shift a new value exceeds the largest of n_D exchangeable values with probability
#:   1/(n_D + 1));
#: - orientation: the skewness changes sign by more than ``skew_z`` standard errors
#:   (``sqrt(6/n_D + 6/n_I)``), or a correlation with another feature changes sign by more
#:   than ``corr_z`` Fisher standard errors (``sqrt(1/(n_D-3) + 1/(n_I-3))``);
#: - with the discovery values recorded (up to :data:`MAX_RECORDED_VALUES` numbers): Mood's
#:   two-sample scale test (``scipy.stats.mood``) has p < ``scale_p``, or the two-sample
#:   Kolmogorov-Smirnov test (``scipy.stats.ks_2samp``) has p < ``shape_p``.
#:
#: A recoding or a swap of differently distributed features is far beyond these. A x2 or
#: x0.45 rescaling is refused by the range and Mood checks with power near 1 at 60
#: clusters a side even for a heavy-tailed (lognormal) feature (about 0.7-0.8 at 40); a
#: sign flip (``-x``) is visible through the skew of a skewed feature or the correlations
#: of a correlated one. A symmetric feature uncorrelated with every other feature,
#: flipped, has the same distribution: no summary of the features can see it.
SHIFT_TOLERANCE = {"mean_sd": 0.25, "log_sd": math.log(1.2), "ks": 0.1, "range_p": 0.001, "skew_z": 3.0,
                   "corr_z": 3.0, "scale_p": 0.001, "shape_p": 0.001}

#: The discovery feature values are recorded in the schema (for the rank tests) when the
#: feature matrix holds at most this many numbers; larger ones keep the summaries only.
MAX_RECORDED_VALUES = 100_000

_DECILES = tuple(round(0.1 * k, 1) for k in range(1, 10))
_R_MAX = 0.999  # |r| clipped before Fisher's z: a perfect correlation has an infinite z


class PreregistrationError(ValueError):
    """A pre-registration refuses a file, an engine or a confirmation table; ``field``
    names what differs (``engine.slots[1].stability_threshold``, ``registry.rule_kinds.x``,
    ``features.x0``, ``anchor``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


# ----------------------------------------------------------------------------- feature schema
def value_kind(x: np.ndarray) -> str:
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


def _skew(x: np.ndarray) -> float:
    """Sample skewness (biased moment estimator, ``scipy.stats.skew``); 0 for a constant."""
    return float(stats.skew(x)) if np.std(x) > 0 else 0.0


def _corr(X: np.ndarray) -> np.ndarray:
    """Pearson correlations of the columns of ``X`` (0 where a column is constant)."""
    sd = X.std(axis=0)
    Zs = np.where(sd > 0, (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
    return np.clip(Zs.T @ Zs / max(len(X), 1), -1.0, 1.0)


def schema_of(X: np.ndarray, names: Sequence[str], features: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Per-feature schema and scale summary of a cluster feature matrix ``X`` (N, d).

    Each entry: ``name``, ``dtype`` (``bool``/``number`` from ``features``' pandas dtype,
    or None), ``kind`` (value kind: binary / integer / continuous), ``n`` (clusters),
    ``mean``, ``sd`` (population, ddof 0), ``min``, ``max``, ``skew``, the deciles
    ``quantiles`` and the ECDF ``cdf`` at them (ties make it differ from 0.1, ..., 0.9),
    ``corr``: the Pearson correlation with every other feature, by name, and ``values``:
    the discovery values themselves when ``X`` holds at most :data:`MAX_RECORDED_VALUES`
    numbers (pre-execution, score-blind features; the rank tests of :data:`SHIFT_TOLERANCE`).
    """
    X = np.asarray(X, float)
    R = _corr(X)
    keep = X.size <= MAX_RECORDED_VALUES
    out = []
    for j, name in enumerate(names):
        x = X[:, j]
        q = np.quantile(x, _DECILES)
        out.append({"name": str(name), "dtype": _dtype_kind(features, str(name)), "kind": value_kind(x),
                    "n": int(len(x)), "mean": float(x.mean()), "sd": float(x.std()), "min": float(x.min()),
                    "max": float(x.max()), "skew": _skew(x), "quantiles": [float(v) for v in q],
                    "cdf": [float(np.mean(x <= v)) for v in q],
                    "corr": {str(o): float(R[j, k]) for k, o in enumerate(names) if k != j}})
        if keep:
            out[-1]["values"] = [float(v) for v in x]
    return out


def _marginal_problems(rec: Mapping[str, Any], x: np.ndarray, tol: Mapping[str, float], s: float) -> list[str]:
    """Location, scale, shape and range of one feature against its record."""
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
    n_d = max(int(rec["n"]), 1)
    outside = int(np.sum((x < float(rec["min"])) | (x > float(rec["max"]))))
    if outside and stats.binom.sf(outside - 1, len(x), min(2.0 / (n_d + 1), 1.0)) < tol["range_p"]:
        problems.append(f"{outside} of {len(x)} values outside the discovery range "
                        f"[{float(rec['min']):.4g}, {float(rec['max']):.4g}]")
    ref = np.asarray(rec.get("values") or [], float)
    if len(ref) >= 5 and len(x) >= 5 and np.ptp(ref) > 0 and np.ptp(x) > 0:
        p_scale = float(stats.mood(ref, x).pvalue)
        if p_scale < tol["scale_p"]:
            problems.append(f"scale differs x{sd_i / sd_d:.3g} (Mood scale test p = {p_scale:.2g} "
                            f"< {tol['scale_p']:g})")
        p_shape = float(stats.ks_2samp(ref, x).pvalue)
        if p_shape < tol["shape_p"]:
            problems.append(f"distribution differs (two-sample KS p = {p_shape:.2g} < {tol['shape_p']:g})")
    return problems


def _orientation_problems(rec: Mapping[str, Any], x: np.ndarray, X: np.ndarray, names: Sequence[str],
                          tol: Mapping[str, float]) -> list[str]:
    """Sign changes of the skew and of the correlations with the other features."""
    n_d, n_i = max(int(rec["n"]), 1), max(len(x), 1)
    problems = []
    sk_d, sk_i = float(rec.get("skew", 0.0)), _skew(x)
    if sk_d * sk_i < 0 and abs(sk_i - sk_d) > tol["skew_z"] * math.sqrt(6.0 / n_d + 6.0 / n_i):
        problems.append(f"skew reversed ({sk_d:+.2f} -> {sk_i:+.2f}): sign flipped?")
    corr = rec.get("corr") or {}
    if corr and n_d > 3 and n_i > 3:
        se = math.sqrt(1.0 / (n_d - 3) + 1.0 / (n_i - 3))
        sd_x = float(np.std(x))
        for k, other in enumerate(names):
            if other not in corr or other == rec["name"]:
                continue
            y = X[:, k]
            r_i = float(np.mean((x - x.mean()) * (y - y.mean())) / (sd_x * y.std())) if sd_x * y.std() > 0 else 0.0
            r_d = float(corr[other])
            za, zb = np.arctanh(np.clip([r_d, r_i], -_R_MAX, _R_MAX))
            if r_d * r_i < 0 and abs(za - zb) > tol["corr_z"] * se:
                problems.append(f"correlation with {other} reversed ({r_d:+.2f} -> {r_i:+.2f}): sign flipped?")
    return problems


def shift_problems(rec: Mapping[str, Any], x: np.ndarray, tol: Mapping[str, float],
                   X: np.ndarray | None = None, names: Sequence[str] = ()) -> list[str]:
    """What moved in one confirmation feature ``x`` (n_I,) beyond ``tol``
    (:data:`SHIFT_TOLERANCE`'s keys) against its discovery record ``rec``
    (:func:`schema_of`); ``X`` (n_I, d) with column ``names`` adds the correlation
    check. Empty when nothing moved."""
    x = np.asarray(x, float)
    s = math.sqrt(1.0 / max(int(rec["n"]), 1) + 1.0 / max(len(x), 1))
    tol = {**SHIFT_TOLERANCE, **dict(tol)}
    problems = _marginal_problems(rec, x, tol, s)
    if X is not None:
        problems += _orientation_problems(rec, x, np.asarray(X, float), list(names), tol)
    return problems


def schema_problems(schema: Sequence[Mapping[str, Any]], tol: Mapping[str, float], X: np.ndarray,
                    names: Sequence[str], features: pd.DataFrame | None = None) -> dict[str, list[str]]:
    """Feature name -> problems (kind, dtype, shift) of confirmation features ``X`` (N, d)
    with columns ``names`` against a recorded ``schema``; only features with a problem.

    Raises ``KeyError`` naming a recorded feature missing from ``names``.
    """
    names = list(map(str, names))
    missing = [rec["name"] for rec in schema if rec["name"] not in names]
    if missing:
        raise KeyError(f"confirmation features lack pre-registered column(s) {missing}")
    X = np.asarray(X, float)
    out: dict[str, list[str]] = {}
    for rec in schema:
        name = rec["name"]
        x = X[:, names.index(name)]
        problems = []
        dtype = _dtype_kind(features, name)
        if rec.get("dtype") is not None and dtype is not None and dtype != rec["dtype"]:
            problems.append(f"dtype {dtype} where discovery had {rec['dtype']}")
        kind = value_kind(x)
        if kind != rec["kind"] and not (rec["kind"] == "integer" and kind == "binary"):
            problems.append(f"values are {kind} where discovery's were {rec['kind']}")
        problems += shift_problems(rec, x, tol, X, names)
        if problems:
            out[name] = problems
    return out


# ----------------------------------------------------------------------------- protocol
def stamp(engine: Any, data: Any) -> dict[str, Any]:
    """The confirmation protocol an engine and its discovery data fix: the inference
    settings (:data:`INFERENCE_FIELDS`), the episode columns the data were read from
    (``None`` for hand-built data) and the seeds per discovery cluster."""
    cols = getattr(data, "columns", None)
    return {"inference": {k: getattr(engine, k) for k in INFERENCE_FIELDS},
            "columns": dict(cols) if cols else None,
            "seeds_per_cluster": sorted({int(v) for v in np.asarray(data.n_seeds).tolist()})}


def _id_departures(recorded: Sequence[str] | None, ids: Sequence[str]) -> list[str]:
    """Dropped and added confirmation clusters against the recorded set, named."""
    if recorded is None:
        return ["confirmation.cluster_ids: the confirmation cluster set was not recorded before outcomes "
                "were read (pass confirmation_ids= when freezing)"]
    rec, have = set(map(str, recorded)), set(map(str, ids))
    out = []
    dropped, added = sorted(rec - have), sorted(have - rec)
    if dropped:
        out.append(f"confirmation.cluster_ids: {len(dropped)} pre-registered cluster(s) dropped: "
                   + ", ".join(dropped[:10]) + (" ..." if len(dropped) > 10 else ""))
    if added:
        out.append(f"confirmation.cluster_ids: {len(added)} cluster(s) added: "
                   + ", ".join(added[:10]) + (" ..." if len(added) > 10 else ""))
    return out


def departures(protocol: Mapping[str, Any], engine: Any, data: Any) -> list[str]:
    """What a confirmation of ``data`` by ``engine`` changes from ``protocol`` (a
    discovery's record, :func:`stamp` plus the pre-registration's entries), one
    ``"<field>: <what>"`` text each; empty when nothing departs or nothing was recorded.

    Checked: each :data:`INFERENCE_FIELDS` setting (``engine.<name>``), each episode column
    (``columns.<role>``), the seeds per cluster, and with a pre-registration the
    confirmation cluster set (``confirmation.cluster_ids``: dropped and added clusters
    named) and the feature schema under its recorded tolerance (``features.<name>``).
    """
    if not protocol:
        return []
    out = []
    for k, v in (protocol.get("inference") or {}).items():
        now = getattr(engine, k)
        if now != v:
            out.append(f"engine.{k}: {now!r} where the discovery froze {v!r}")
    rec_cols, now_cols = protocol.get("columns"), getattr(data, "columns", None)
    if rec_cols and now_cols:
        for role, col in rec_cols.items():
            if dict(now_cols).get(role) != col:
                out.append(f"columns.{role}: read from {dict(now_cols).get(role)!r} where discovery read {col!r}")
    elif protocol.get("preregistered") and not now_cols:
        out.append("columns: the confirmation data carry no record of the episode columns they were read from")
    seeds = protocol.get("seeds_per_cluster")
    if seeds:
        now = sorted({int(v) for v in np.asarray(data.n_seeds).tolist()})
        if not set(now) <= set(seeds):
            out.append(f"clusters.seeds_per_cluster: confirmation clusters hold {now} seed(s) where discovery "
                       f"clusters held {seeds} (another clustering unit?)")
    if protocol.get("preregistered"):
        out += _id_departures(protocol.get("confirmation_ids"), list(map(str, data.ids)))
        schema = protocol.get("schema") or []
        if schema:
            bad = schema_problems(schema, protocol.get("tolerance") or SHIFT_TOLERANCE, data.X, data.feature_names)
            out += [f"features.{k}: {'; '.join(v)}" for k, v in bad.items()]
    return out


def refuse_departures(protocol: Mapping[str, Any], engine: Any, data: Any) -> None:
    """Raise :class:`PreregistrationError` naming the first of :func:`departures` when
    ``protocol`` is a pre-registration's (``preregistered``): for callers whose result
    carries no label (:meth:`SASST.confirm_records`)."""
    if protocol.get("preregistered"):
        gone = departures(protocol, engine, data)
        if gone:
            field, what = gone[0].split(": ", 1)
            raise PreregistrationError(field, what + " (SASST.confirm reports this confirmation labelled "
                                       "not pre-registered)")
