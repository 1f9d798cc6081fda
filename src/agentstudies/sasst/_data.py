"""Input tables for SASST: validation, cluster aggregation and the whole-cluster split.

An *episode table* has one row per (cluster, seed, system) with a numeric score; a
*feature table* is indexed by cluster id and holds pre-execution, score-blind features.
All outcomes of one cluster (task) stay together (SASST Section 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.results import _id_text  # one text form per id, shared by every method and importer

__all__ = ["ClusterData", "cluster_data", "split_clusters", "DISCOVERY", "CONFIRMATION"]

DISCOVERY = "discovery"
CONFIRMATION = "confirmation"


@dataclass(frozen=True)
class ClusterData:
    """Cluster-level arrays.

    Attributes
    ----------
    ids : array (N,) of str, cluster ids
    Z : array (N, J), seed-averaged score of each system (columns in ``systems`` order)
    X : array (N, d), pre-execution features (columns ``feature_names``)
    systems : tuple of J system names
    feature_names : tuple of d names
    n_seeds : array (N,), seeds per cluster
    columns : ((role, column), ...) the episode-table columns the data were read from
        (roles ``cluster``, ``seed``, ``system``, ``score``; set by :func:`cluster_data`,
        empty for hand-built data); a pre-registered confirmation checks them
    """

    ids: np.ndarray
    Z: np.ndarray
    X: np.ndarray
    systems: tuple[str, ...]
    feature_names: tuple[str, ...]
    n_seeds: np.ndarray
    notes: tuple[str, ...] = ()
    extra_feature_ids: tuple[str, ...] = ()
    columns: tuple[tuple[str, str], ...] = ()

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, mask: np.ndarray) -> "ClusterData":
        return ClusterData(self.ids[mask], self.Z[mask], self.X[mask], self.systems,
                           self.feature_names, self.n_seeds[mask], self.notes, self.extra_feature_ids,
                           self.columns)

    def features_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.X, index=pd.Index(self.ids, name="cluster"), columns=list(self.feature_names))


def _preview(values: Sequence, k: int = 5) -> str:
    vals = [str(v) for v in values]
    return ", ".join(vals[:k]) + (f", ... ({len(vals)} in all)" if len(vals) > k else "")


def cluster_data(
    episodes: pd.DataFrame,
    features: pd.DataFrame,
    systems: Sequence[str],
    *,
    cluster: str = "task_id",
    seed: str = "seed",
    system: str = "workflow",
    score: str = "score",
    feature_columns: Sequence[str] | None = None,
) -> ClusterData:
    """Validate an episode table and a feature table and aggregate to clusters.

    Parameters
    ----------
    episodes : DataFrame
        One row per (cluster, seed, system) with columns named by ``cluster``, ``seed``,
        ``system`` and ``score``.
    features : DataFrame
        Indexed by cluster id (or with a ``cluster`` column); numeric pre-execution
        features. ``feature_columns`` selects a subset (default: all numeric columns).
    systems : sequence of str
        The plan's systems; each cluster must have every one, on the same seeds (paired).

    Returns
    -------
    :class:`ClusterData` with clusters in sorted id order.

    Raises
    ------
    KeyError
        A required column is missing (named).
    ValueError
        Missing cluster ids, NaN/infinite scores, duplicate (cluster, seed, system) rows,
        unknown or missing systems, unpaired seeds, clusters without features, or NaN /
        non-numeric features, each named with the offending ids.
    """
    if not isinstance(episodes, pd.DataFrame):
        raise TypeError(f"episodes must be a pandas DataFrame; got {type(episodes).__name__}")
    if not isinstance(features, pd.DataFrame):
        raise TypeError(
            f"features must be a pandas DataFrame indexed by cluster id (one row per cluster, "
            f"numeric columns); got {type(features).__name__}"
            + (" -- build one with pandas.DataFrame.from_dict(mapping, orient='index')"
               if isinstance(features, Mapping) else "")
        )
    notes: list[str] = []
    systems = tuple(systems)
    Zdf, n_seeds = _paired_cluster_means(episodes, systems, cluster, seed, system, score, notes)
    F, feature_columns, extra = _feature_matrix(features, Zdf.index, cluster, feature_columns, notes)
    return ClusterData(
        ids=Zdf.index.to_numpy(dtype=str),
        Z=Zdf.to_numpy(dtype=float),
        X=F.to_numpy(dtype=float),
        systems=systems,
        feature_names=tuple(str(c) for c in feature_columns),
        n_seeds=n_seeds,
        notes=tuple(notes),
        extra_feature_ids=extra,
        columns=(("cluster", str(cluster)), ("seed", str(seed)), ("system", str(system)), ("score", str(score))),
    )


def _paired_cluster_means(episodes: pd.DataFrame, systems: tuple[str, ...], cluster: str, seed: str,
                          system: str, score: str, notes: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """Validate the episode table (columns, missing ids, scores, duplicates, systems,
    pairing) and return the per-cluster mean score of each system (clusters sorted, one
    column per system in plan order) and the number of seeds per cluster. Appends
    non-fatal observations to ``notes``."""
    for col in (cluster, seed, system, score):
        if col not in episodes.columns:
            raise KeyError(
                f"episode table lacks required column {col!r}; it has {list(episodes.columns)}"
            )
    if len(episodes) == 0:
        raise ValueError("episode table is empty")
    ep = episodes[[cluster, seed, system, score]]
    for col in (seed, system):
        na = ep[col].isna()
        if na.any():
            raise ValueError(
                f"missing {col!r} (NaN/None) in {int(na.sum())} row(s): clusters "
                f"{_preview(ep.loc[na, cluster].astype(str).unique())}"
            )
    na_cluster = ep[cluster].isna()
    if na_cluster.any():
        raise ValueError(
            f"missing cluster id ({cluster!r} is NaN/None) in {int(na_cluster.sum())} row(s): "
            f"rows {_preview(ep.index[na_cluster])}"
        )
    scores = _score_values(ep, cluster, seed, system, score, notes)
    # one id type before the duplicate check: 5 and "5" name the same cluster
    ep = ep.assign(**{cluster: ep[cluster].map(_id_text), seed: ep[seed].map(_id_text),
                      system: ep[system].astype(str)})
    mixed = {type(v).__name__ for v in episodes[cluster]}
    if len(mixed) > 1:
        notes.append(f"cluster ids in column {cluster!r} mix types {sorted(mixed)}; compared as text")
    dup = ep.duplicated([cluster, seed, system], keep=False)
    if dup.any():
        rows = ep.loc[dup, [cluster, seed, system]].astype(str).agg("/".join, axis=1).unique()
        raise ValueError(f"duplicate ({cluster}, {seed}, {system}) rows: {_preview(rows)}")
    unknown = sorted(set(ep[system].astype(str)) - set(systems))
    if unknown:
        raise ValueError(f"episode table has system(s) {unknown} not in the plan's systems {list(systems)}")
    ep = ep.assign(**{score: scores.astype(float)})
    wide = ep.pivot_table(index=[cluster, seed], columns=system, values=score, aggfunc="first")
    missing_sys = [s for s in systems if s not in wide.columns]
    if missing_sys:
        raise ValueError(f"system(s) {missing_sys} have no episodes at all")
    wide = wide[list(systems)]
    holes = wide.isna().any(axis=1)
    if holes.any():
        keys = [f"{c}/seed {s}" for c, s in wide.index[holes]]
        raise ValueError(
            "unpaired design: these (cluster, seed) pairs lack some system's episode "
            f"(every system must run on the same seeds): {_preview(keys)}"
        )
    Zdf = wide.groupby(level=0).mean().sort_index()
    n_seeds = wide.groupby(level=0).size().reindex(Zdf.index).to_numpy()
    return Zdf, n_seeds


def _feature_matrix(features: pd.DataFrame, cluster_ids: pd.Index, cluster: str,
                    feature_columns: Sequence[str] | None, notes: list[str]
                    ) -> tuple[pd.DataFrame, list[str], tuple[str, ...]]:
    """Validate the feature table against the clusters and return the float feature
    matrix in cluster order, the feature columns used and the ids of clusters with
    features but no episodes (noted in ``notes``)."""
    feats = features
    if cluster in feats.columns:
        feats = feats.set_index(cluster)
    feats = feats.copy()
    feats.index = pd.Index([_id_text(v) for v in feats.index])
    if feats.index.has_duplicates:
        raise ValueError(f"feature table has duplicate cluster ids: {_preview(feats.index[feats.index.duplicated()].unique())}")
    if feature_columns is None:
        numeric = [c for c in feats.columns if pd.api.types.is_numeric_dtype(feats[c]) or pd.api.types.is_bool_dtype(feats[c])]
        other = [c for c in feats.columns if c not in numeric]
        if other:
            raise ValueError(
                f"feature column(s) {other} are not numeric; rules need numbers. Encode them "
                "(for example pandas.get_dummies) or choose the columns with feature_columns=[...]"
            )
        feature_columns = numeric
        if not feature_columns:
            raise ValueError("feature table has no columns")
    else:
        miss = [c for c in feature_columns if c not in feats.columns]
        if miss:
            raise KeyError(f"feature table lacks column(s) {miss}")
        nonnum = [c for c in feature_columns if not (pd.api.types.is_numeric_dtype(feats[c]) or pd.api.types.is_bool_dtype(feats[c]))]
        if nonnum:
            raise ValueError(f"feature column(s) {nonnum} are not numeric")
    absent = [c for c in cluster_ids if c not in feats.index]
    if absent:
        raise ValueError(f"cluster(s) without features: {_preview(absent)}")
    F = feats.loc[cluster_ids, list(feature_columns)].astype(float)
    values = F.to_numpy()
    for kind, bad in (("NaN", np.isnan(values)), ("infinite (+/-inf)", np.isinf(values))):
        if bad.any():
            rows, cols = np.nonzero(bad)
            where = [f"{F.columns[c]} of cluster {F.index[r]}" for r, c in zip(rows, cols)]
            names = sorted({str(F.columns[c]) for c in cols})
            raise ValueError(
                f"{kind} feature values in column(s) {names} ({len(where)} cells): {_preview(where)}; "
                "features must be finite numbers"
            )
    extra = tuple(sorted(set(feats.index) - set(cluster_ids)))
    if extra:
        notes.append(
            f"feature table has {len(extra)} cluster(s) without episodes, not used: {_preview(extra)}"
        )
    return F, list(feature_columns), extra


def _score_values(ep: pd.DataFrame, cluster: str, seed: str, system: str, score: str,
                  notes: list[str]) -> pd.Series:
    """The score column as floats; strings are refused, booleans read as 0/1 (noted),
    NaN and +/-inf named separately with their rows."""
    col = ep[score]

    def keys() -> pd.Series:  # row labels for the error messages only (a row-wise join: built on demand)
        return ep[[cluster, seed, system]].astype(str).agg("/".join, axis=1)

    if pd.api.types.is_bool_dtype(col):
        notes.append(f"score column {score!r} is boolean; read as 0/1")
        return col.astype(float)
    if not pd.api.types.is_numeric_dtype(col):
        kinds = sorted({type(v).__name__ for v in col if not isinstance(v, (int, float, np.number))})
        strings = [isinstance(v, str) for v in col]
        if any(strings):
            raise TypeError(
                f"score column {score!r} holds text ({kinds}), e.g. {col[np.array(strings)].iloc[0]!r} "
                f"for {keys()[np.array(strings)].iloc[0]}; convert it to numbers first "
                "(pandas.to_numeric) -- strings such as '0'/'1' are not read as scores"
            )
        bools = np.array([isinstance(v, (bool, np.bool_)) for v in col])
        if bools.any():
            notes.append(f"score column {score!r} mixes booleans with numbers; booleans read as 0/1")
        col = pd.to_numeric(col.map(lambda v: float(v) if isinstance(v, (bool, np.bool_)) else v), errors="coerce")
    values = col.to_numpy(dtype=float)
    nan = np.isnan(values)
    if nan.any():
        raise ValueError(f"NaN or non-numeric score in column {score!r} for {int(nan.sum())} row(s): {_preview(keys()[nan])}")
    inf = np.isinf(values)
    if inf.any():
        raise ValueError(
            f"non-finite score (+/-inf) in column {score!r} for {int(inf.sum())} row(s): {_preview(keys()[inf])}"
        )
    return pd.Series(values, index=ep.index)


def split_clusters(
    ids: Sequence[str],
    *,
    discovery_fraction: float = 0.5,
    seed: int = 0,
    strata: Mapping[str, str] | pd.Series | None = None,
) -> pd.Series:
    """Split whole clusters into discovery and confirmation (SASST Algorithm 1, step 1).

    Parameters
    ----------
    ids : cluster ids
    discovery_fraction : share of clusters (per stratum) sent to discovery
    seed : int, seed of the permutation
    strata : optional mapping cluster id -> stratum; the split is made within strata

    Returns
    -------
    Series indexed by cluster id with values ``"discovery"`` / ``"confirmation"``.

    Raises
    ------
    ValueError
        If the fraction is outside (0, 1) or either side would be empty.
    """
    ids = pd.Index([str(i) for i in ids])
    if ids.has_duplicates:
        raise ValueError("cluster ids must be unique to split whole clusters")
    if not 0 < discovery_fraction < 1:
        raise ValueError(f"discovery_fraction must lie in (0, 1); got {discovery_fraction}")
    rng = np.random.default_rng(seed)
    out = pd.Series(CONFIRMATION, index=ids, name="split")
    groups: dict = {"all": ids}
    if strata is not None:
        st = pd.Series(strata)
        st.index = st.index.astype(str)
        missing = [i for i in ids if i not in st.index]
        if missing:
            raise ValueError(f"strata lack cluster(s): {_preview(missing)}")
        groups = {k: pd.Index(v) for k, v in st.loc[ids].groupby(st.loc[ids]).groups.items()}
    for key in sorted(groups):
        members = np.array(sorted(groups[key]))
        perm = rng.permutation(len(members))
        k = int(round(discovery_fraction * len(members)))
        out.loc[members[perm[:k]]] = DISCOVERY
    n_d = int((out == DISCOVERY).sum())
    if n_d == 0 or n_d == len(out):
        raise ValueError(
            f"split of {len(out)} clusters leaves an empty {'discovery' if n_d == 0 else 'confirmation'} split"
        )
    return out
