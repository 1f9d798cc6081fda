"""pass^k across published models: the τ²-bench leaderboard submissions.

Reads ``data/tau2_leaderboard/submissions/*.json`` (65 submissions to the τ²-bench
leaderboard, sierra-research/tau2-bench; each file checked against ``data/SHA256SUMS``):
the **submitters' own aggregates** pass^1 ... pass^4 (percent) and cost per domain. No
per-trial data are public, so nothing here has an interval over tasks; every number is
labelled as the submitters'.

pass^k (Yao et al. 2024, τ-bench Eq. 1) is the chance that ``k`` independent trials of a
task all succeed, averaged over tasks; it can only fall as ``k`` grows.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from agentstudies import _data

__all__ = ["LEADERBOARD_DIR", "DOMAINS", "KS", "load_leaderboard", "coverage", "passk_wide", "passk_drop_by_domain",
           "rank_change", "cost_vs_passk", "rank_sentence", "cost_sentence"]

#: The submissions folder, relative to ``data/``.
LEADERBOARD_DIR = "tau2_leaderboard/submissions"
#: Domains in report order.
DOMAINS: tuple[str, ...] = ("airline", "retail", "telecom", "banking_knowledge")
KS: tuple[int, ...] = (1, 2, 3, 4)
_FIELDS = ("model_name", "model_organization", "submitting_organization", "results")


def _num(v, where: str) -> float:
    if v is None:
        return math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where} must be a number or null; got {v!r}")
    return float(v)


def load_leaderboard(folder: Path | str | None = None) -> pd.DataFrame:
    """One row per submission and domain it reports: the submitters' aggregates.

    Columns: ``submission`` (file stem), ``model``, ``organization``, ``submitter``,
    ``submission_type`` (``standard`` / ``custom`` / empty), ``modality`` (``text`` /
    ``voice`` / empty = text), ``user_simulator``, ``domain``, ``pass_1 .. pass_4``
    (fractions in [0, 1]; NaN = not reported) and ``cost`` (the submitters' cost per
    task, USD; NaN = not reported). A domain given as ``null`` is not a row.

    Raises
    ------
    FileNotFoundError
        No submission files in the folder.
    agentstudies._data.DataFileError
        A file that differs from its digest in ``data/SHA256SUMS`` or is not JSON.
    ValueError
        A submission lacking a field of ``model_name, model_organization,
        submitting_organization, results``, an unknown domain, a pass^k outside [0, 100]
        percent, or pass^k rising with k (names the file, domain and values).
    """
    d = Path(folder) if folder is not None else _data.data_dir() / LEADERBOARD_DIR
    files = sorted(d.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no submission files (*.json) in {d}")
    rows = []
    for f in files:
        sub = _data.read_json(f)
        missing = [k for k in _FIELDS if k not in sub]
        if missing:
            raise ValueError(f"{f}: missing field(s) {missing}; expected {list(_FIELDS)}")
        for dom, res in sub["results"].items():
            if dom not in DOMAINS:
                raise ValueError(f"{f}: unknown domain {dom!r}; expected one of {list(DOMAINS)}")
            if res is None:
                continue
            row = dict(submission=f.stem, model=sub["model_name"], organization=sub["model_organization"],
                       submitter=sub["submitting_organization"], submission_type=sub.get("submission_type") or "",
                       modality=sub.get("modality") or "", domain=dom,
                       user_simulator=str((sub.get("methodology") or {}).get("user_simulator") or ""))
            for k in KS:
                v = _num(res.get(f"pass_{k}"), f"{f}: results.{dom}.pass_{k}")
                if not (math.isnan(v) or 0.0 <= v <= 100.0):
                    raise ValueError(f"{f}: results.{dom}.pass_{k} = {v} is outside [0, 100] percent")
                row[f"pass_{k}"] = v / 100.0
            row["cost"] = _num(res.get("cost"), f"{f}: results.{dom}.cost")
            vals = [row[f"pass_{k}"] for k in KS if not math.isnan(row[f"pass_{k}"])]
            if any(b > a + 1e-9 for a, b in zip(vals, vals[1:])):
                raise ValueError(f"{f}: results.{dom} pass^k rises with k ({vals}); pass^k cannot rise")
            rows.append(row)
    return pd.DataFrame(rows)


def coverage(lb: pd.DataFrame) -> pd.DataFrame:
    """What each domain reports: submissions with pass^1, with all of pass^1..4, with cost."""
    full = lb[[f"pass_{k}" for k in KS]].notna().all(axis=1)
    out = lb.assign(full=full, has1=lb["pass_1"].notna(), has_cost=lb["cost"].notna(),
                    full_cost=full & lb["cost"].notna())
    g = out.groupby("domain", sort=False).agg(submissions=("submission", "size"), pass_1=("has1", "sum"),
                                              pass_1_to_4=("full", "sum"), cost=("has_cost", "sum"),
                                              pass_1_to_4_and_cost=("full_cost", "sum"))
    return g.reindex([d for d in DOMAINS if d in g.index]).reset_index()


def passk_wide(lb: pd.DataFrame) -> pd.DataFrame:
    """Rows reporting all of pass^1..4 (the curves), with ``drop`` = pass^1 - pass^4 and
    ``ratio`` = pass^4 / pass^1."""
    cols = [f"pass_{k}" for k in KS]
    w = lb[lb[cols].notna().all(axis=1)].copy()
    w["drop"] = w["pass_1"] - w["pass_4"]
    w["ratio"] = np.where(w["pass_1"] > 0, w["pass_4"] / w["pass_1"].where(w["pass_1"] > 0), np.nan)
    return w.reset_index(drop=True)


def passk_drop_by_domain(lb: pd.DataFrame) -> pd.DataFrame:
    """The fall from pass^1 to pass^4 by domain over the submissions reporting both.

    Returns ``domain, n, pass_1_median, pass_4_median, drop_median, drop_q25, drop_q75,
    drop_max, ratio_median`` (fractions; the submitters' aggregates, no interval).
    """
    w = passk_wide(lb)
    rows = []
    for dom, g in w.groupby("domain", sort=False):
        rows.append(dict(domain=dom, n=len(g), pass_1_median=g["pass_1"].median(), pass_4_median=g["pass_4"].median(),
                         drop_median=g["drop"].median(), drop_q25=g["drop"].quantile(0.25),
                         drop_q75=g["drop"].quantile(0.75), drop_max=g["drop"].max(),
                         ratio_median=g["ratio"].median()))
    out = pd.DataFrame(rows)
    return out.set_index("domain").reindex([d for d in DOMAINS if d in set(out["domain"])]).reset_index()


def rank_change(lb: pd.DataFrame, k: int = 4) -> pd.DataFrame:
    """Does the order of submissions change between pass^1 and pass^k? By domain.

    Kendall's tau-b between the two columns (:func:`scipy.stats.kendalltau`), the number
    of submission pairs whose order flips (strictly discordant), the pairs, and the
    leader at k = 1 and at ``k``. Returns ``domain, n, kendall_tau, p_value,
    discordant_pairs, pairs, leader_k1, leader_k``.

    Raises ValueError for ``k`` outside 2..4.
    """
    if k not in KS[1:]:
        raise ValueError(f"k must be one of {KS[1:]}; got {k}")
    rows = []
    for dom, g in lb[lb["pass_1"].notna() & lb[f"pass_{k}"].notna()].groupby("domain", sort=False):
        a, b = g["pass_1"].to_numpy(), g[f"pass_{k}"].to_numpy()
        n = len(g)
        if n < 3:
            continue
        res = stats.kendalltau(a, b)
        i, j = np.triu_indices(n, 1)
        disc = int((np.sign(a[i] - a[j]) * np.sign(b[i] - b[j]) < 0).sum())
        rows.append(dict(domain=dom, n=n, kendall_tau=float(res.statistic), p_value=float(res.pvalue),
                         discordant_pairs=disc, pairs=len(i), leader_k1=g["submission"].iloc[int(np.argmax(a))],
                         **{f"leader_k{k}": g["submission"].iloc[int(np.argmax(b))]}))
    out = pd.DataFrame(rows)
    return out.set_index("domain").reindex([d for d in DOMAINS if d in set(out["domain"])]).reset_index()


def cost_vs_passk(lb: pd.DataFrame, ks: Sequence[int] = (1, 4)) -> pd.DataFrame:
    """Kendall's tau between the submitters' cost per task and pass^k, by domain, over the
    submissions reporting both. Returns ``domain, k, n, kendall_tau, p_value``."""
    rows = []
    for dom, g in lb.groupby("domain", sort=False):
        for k in ks:
            h = g[g["cost"].notna() & g[f"pass_{k}"].notna()]
            if len(h) < 3:
                rows.append(dict(domain=dom, k=k, n=len(h), kendall_tau=np.nan, p_value=np.nan))
                continue
            res = stats.kendalltau(h["cost"], h[f"pass_{k}"])
            rows.append(dict(domain=dom, k=k, n=len(h), kendall_tau=float(res.statistic), p_value=float(res.pvalue)))
    return pd.DataFrame(rows)


def rank_sentence(ranks: pd.DataFrame, k: int = 4) -> str:
    """One clause per domain of :func:`rank_change`: tau, the pairs that flip, and whether
    the leader at k = 1 is still the leader at ``k``."""
    parts = []
    for r in ranks.to_dict("records"):
        same = r["leader_k1"] == r[f"leader_k{k}"]
        parts.append(f"{r['domain'].replace('_', ' ')}: tau = {r['kendall_tau']:.2f}, {r['discordant_pairs']} of "
                     f"{r['pairs']} pairs flip, the leader {'stays' if same else 'changes'}")
    return "; ".join(parts) + "."


def cost_sentence(cost: pd.DataFrame, k: int = 4, *, level: float = 0.95) -> str:
    """Kendall's tau of cost and pass^k per domain (rows of :func:`cost_vs_passk` with
    ``k``), and which domains' correlation is distinguishable from zero at ``1 - level``.

    Raises ValueError for a ``level`` outside (0, 1).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    alpha = 1.0 - level
    c = cost[(cost["k"] == k) & cost["kendall_tau"].notna()]
    head = "; ".join(f"{r.domain.replace('_', ' ')} {r.kendall_tau:.2f} (n = {r.n}, p = {r.p_value:.2f})"
                     for r in c.itertuples())
    sig = c.loc[c["p_value"] < alpha, "domain"].str.replace("_", " ").tolist()
    tail = (f"none is distinguishable from zero at the {100 * alpha:g} % level with so few submissions" if not sig
            else f"distinguishable from zero at the {100 * alpha:g} % level in {', '.join(sig)}")
    return f"Kendall's tau between cost and pass^{k}: {head}; {tail}."
