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
    """

    ids: np.ndarray
    Z: np.ndarray
    X: np.ndarray
    systems: tuple[str, ...]
    feature_names: tuple[str, ...]
    n_seeds: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, mask: np.ndarray) -> "ClusterData":
        return ClusterData(self.ids[mask], self.Z[mask], self.X[mask], self.systems,
                           self.feature_names, self.n_seeds[mask])

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
    scores = pd.to_numeric(ep[score], errors="coerce")
    bad = ~np.isfinite(scores.to_numpy(dtype=float))
    if bad.any():
        rows = ep.loc[bad, [cluster, seed, system]].astype(str).agg("/".join, axis=1)
        raise ValueError(f"NaN or non-numeric score in column {score!r} for {int(bad.sum())} row(s): {_preview(rows)}")
    dup = ep.duplicated([cluster, seed, system], keep=False)
    if dup.any():
        rows = ep.loc[dup, [cluster, seed, system]].astype(str).agg("/".join, axis=1).unique()
        raise ValueError(f"duplicate ({cluster}, {seed}, {system}) rows: {_preview(rows)}")
    systems = tuple(systems)
    unknown = sorted(set(ep[system].astype(str)) - set(systems))
    if unknown:
        raise ValueError(f"episode table has system(s) {unknown} not in the plan's systems {list(systems)}")
    ep = ep.assign(**{cluster: ep[cluster].astype(str), score: scores.astype(float)})
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

    feats = features
    if cluster in feats.columns:
        feats = feats.set_index(cluster)
    feats = feats.copy()
    feats.index = feats.index.astype(str)
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
    absent = [c for c in Zdf.index if c not in feats.index]
    if absent:
        raise ValueError(f"cluster(s) without features: {_preview(absent)}")
    F = feats.loc[Zdf.index, list(feature_columns)].astype(float)
    nan = F.isna()
    if nan.to_numpy().any():
        where = [f"{r}:{c}" for r, c in zip(*np.nonzero(nan.to_numpy()))]
        cols = sorted({feature_columns[c] for _, c in zip(*np.nonzero(nan.to_numpy()))})
        raise ValueError(f"NaN feature values in column(s) {cols} ({len(where)} cells)")
    return ClusterData(
        ids=Zdf.index.to_numpy(dtype=str),
        Z=Zdf.to_numpy(dtype=float),
        X=F.to_numpy(dtype=float),
        systems=systems,
        feature_names=tuple(str(c) for c in feature_columns),
        n_seeds=n_seeds,
    )


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
