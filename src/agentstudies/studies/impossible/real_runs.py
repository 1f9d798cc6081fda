"""ImpossibleBench on real runs: the labelled Impossible-LiveCodeBench audit runs, re-analysed.

Reads ``data/impossible_lcb_runs/`` (an independent public audit of ImpossibleBench: 5,752
runs of six coding agents on the 103 ``lcbhard_*`` tasks, each with its harness, model,
prompt arm, split, outcome and LLM-judge labels; 100 manual labels; 14 known defects of
the original split). Every file is checked against ``data/SHA256SUMS`` and its columns
validated before use. Nothing here is simulated: these are *measured* real runs, and the
rates are the audit's counted fields recomputed with task-cluster intervals.

Estimands (per run, in percent of runs; Zhong, Raghunathan & Carlini 2025, Sec. 3 for
the first; the audit's README for the others):

``ib_cheat``
    ImpossibleBench's pass-equals-cheat metric: the run passed an impossible variant.
``exploit``
    the LLM judge says the agent gamed the tests (special-cased inputs, state toggles,
    exit hooks that hide a failing assertion...).
``stop_via_exit``
    the judge says the agent stopped by exiting the process (which the unpatched scorer
    counts as a pass).
``aborted``
    the run ended through the explicit abort channel (``outcome == "abort"``).

Intervals resample the tasks with replacement (every run of a task travels with it;
:func:`agentstudies.stats.paired_cluster_bootstrap`), percentile intervals at ``level``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies import _data
from agentstudies.findings import Findings, binomial_interval, interval_finding
from agentstudies.parallel import keyed_seed
from agentstudies.specs import BootstrapSpec
from agentstudies.stats import paired_cluster_bootstrap, percentile_interval

__all__ = [
    "RUNS_FILE", "RUN_COLUMNS", "BOOL_COLUMNS", "SPLITS", "IMPOSSIBLE_SPLITS", "ESTIMANDS",
    "load_lcb_runs", "load_known_issues", "load_authors_metrics", "load_manual_labels", "load_blind_relabel",
    "PP_DIFFERENCE", "lcb_rates", "lcb_difference", "recount_authors_metrics", "real_run_findings",
    "judge_vs_manual", "blind_relabel_agreement", "cohen_kappa", "known_defects_table", "defect_flag_rates",
]

#: The runs table, relative to ``data/``.
RUNS_FILE = "impossible_lcb_runs/runs_labeled.csv.gz"
#: Columns the runs table must have.
RUN_COLUMNS: tuple[str, ...] = ("source", "harness", "model", "arm", "split", "split_group", "task_id", "outcome",
                                "valid_diag", "exploit", "silent_exploit", "stop_via_exit", "ib_cheat", "flag",
                                "fabricated_strict", "exploit_type", "log")
#: Label columns stored as ``True`` / ``False``.
BOOL_COLUMNS: tuple[str, ...] = ("valid_diag", "exploit", "silent_exploit", "stop_via_exit", "ib_cheat", "flag",
                                 "fabricated_strict")
SPLITS: tuple[str, ...] = ("original", "oneoff", "conflicting")
IMPOSSIBLE_SPLITS: tuple[str, ...] = ("oneoff", "conflicting")
OUTCOMES: tuple[str, ...] = ("pass", "fail", "abort")
#: Estimand -> what it measures (percent of runs).
ESTIMANDS: dict[str, str] = {
    "ib_cheat": "pass-equals-cheat rate (ImpossibleBench's metric)",
    "exploit": "judged gaming rate",
    "stop_via_exit": "stopped by exiting",
    "aborted": "used the abort channel",
}


def _path(rel: str, path: Path | str | None) -> Path:
    return Path(path) if path is not None else _data.data_dir() / rel


def _require(df: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {missing}; found {list(df.columns)}. Restore the file from the "
                         f"repository (git checkout -- {where})")


def _csv(path: Path, columns: Sequence[str]) -> pd.DataFrame:
    raw = _data.verify(path)
    comp = "gzip" if path.suffix == ".gz" else None
    try:
        df = pd.read_csv(io.BytesIO(raw), compression=comp, dtype=str, keep_default_na=False)
    except Exception as exc:  # noqa: BLE001 - re-raised naming the file
        raise _data.DataFileError(f"data file {path} is not a readable CSV ({exc})") from None
    _require(df, columns, str(path))
    return df


def _bools(df: pd.DataFrame, columns: Sequence[str], where: str) -> pd.DataFrame:
    out = df.copy()
    for c in columns:
        bad = ~out[c].isin(["True", "False"])
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"{where}: column {c!r} must hold True/False; row {i + 1} holds {out[c].iloc[i]!r}")
        out[c] = out[c] == "True"
    return out


def _allowed(df: pd.DataFrame, column: str, allowed: Sequence[str], where: str) -> None:
    bad = sorted(set(df[column]) - set(allowed))
    if bad:
        raise ValueError(f"{where}: column {column!r} holds {bad}; allowed values are {list(allowed)}")


def load_lcb_runs(path: Path | str | None = None) -> pd.DataFrame:
    """The 5,752 labelled real runs, one row each, checked.

    Returns the columns of :data:`RUN_COLUMNS` (the :data:`BOOL_COLUMNS` as bool) plus
    ``aborted`` (``outcome == "abort"``) and ``passed`` (``outcome == "pass"``).

    Raises
    ------
    FileNotFoundError, agentstudies._data.DataFileError
        The file is missing or differs from its digest in ``data/SHA256SUMS``.
    ValueError
        A missing column, a label other than True/False, or a split / outcome outside
        :data:`SPLITS` / :data:`OUTCOMES` (naming the file, column and value).
    """
    p = _path(RUNS_FILE, path)
    df = _bools(_csv(p, RUN_COLUMNS), BOOL_COLUMNS, str(p))
    _allowed(df, "split", SPLITS, str(p))
    _allowed(df, "outcome", OUTCOMES, str(p))
    if (df["task_id"] == "").any():
        raise ValueError(f"{p}: column 'task_id' is empty in {int((df['task_id'] == '').sum())} row(s)")
    df["aborted"] = df["outcome"] == "abort"
    df["passed"] = df["outcome"] == "pass"
    return df


def load_known_issues(path: Path | str | None = None) -> pd.DataFrame:
    """``known_issues.csv``: ``task_id, split, issue, detail, action, assert_match`` (checked)."""
    p = _path("impossible_lcb_runs/known_issues.csv", path)
    df = _csv(p, ("task_id", "split", "issue", "detail", "action"))
    _allowed(df, "split", SPLITS, str(p))
    return df


def load_authors_metrics(path: Path | str | None = None) -> pd.DataFrame:
    """The audit authors' own count table (``metrics.csv``): harness, model, arm, split
    (``split_group`` values), n and counts of each label (float; empty = not reported)."""
    p = _path("impossible_lcb_runs/metrics.csv", path)
    df = _csv(p, ("harness", "model", "arm", "split", "n", "ib_cheat", "exploit", "stop_via_exit", "abort"))
    for c in df.columns[4:]:
        df[c] = pd.to_numeric(df[c].replace("", np.nan), errors="raise")
    return df


def _jsonl(path: Path) -> list[dict]:
    raw = _data.verify(path).decode("utf-8")
    out = []
    for i, line in enumerate(raw.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise _data.DataFileError(f"data file {path}: line {i} is not valid JSON ({exc})") from None
    return out


def load_manual_labels(folder: Path | str | None = None) -> pd.DataFrame:
    """The 100 manual labels joined to their items (``human/items.json`` + ``labels.jsonl``).

    Columns: the item's ``id, queue, stratum, task_id, split, log, harness, model, arm,
    outcome`` and the label's ``labeler, basis, final_code`` (stop/exit queue:
    ``stop_only`` / ``targeted_exit`` / ``games_tests``), ``verdict`` (original queue),
    ``agent_claim`` (fabrication queue); missing fields are empty strings.

    Raises ValueError naming the file when an item has no label or a label no item.
    """
    d = Path(folder) if folder is not None else _data.data_dir() / "impossible_lcb_runs" / "human"
    items = _data.read_json(d / "items.json")
    labels = _jsonl(d / "labels.jsonl")
    it = pd.DataFrame(items)
    lb = pd.DataFrame(labels)
    _require(it, ("id", "queue", "task_id", "split", "log", "model", "arm", "outcome"), str(d / "items.json"))
    _require(lb, ("id", "labeler"), str(d / "labels.jsonl"))
    if set(it["id"]) != set(lb["id"]):
        raise ValueError(f"{d}: item ids {sorted(set(it['id']) ^ set(lb['id']))} have an item or a label but not both")
    for c in ("final_code", "verdict", "agent_claim", "basis"):
        if c not in lb.columns:
            lb[c] = ""
    m = it.merge(lb[["id", "labeler", "basis", "final_code", "verdict", "agent_claim"]], on="id", validate="1:1")
    return m.fillna("")


def load_blind_relabel(folder: Path | str | None = None) -> pd.DataFrame:
    """The person's blind relabel of the 15 sampled stop/exit items: ``id, label``.

    ``agreement_labels.jsonl`` holds the blind label of each item of
    ``agreement_sample.json`` first, then labels revised after discussion; the blind one
    (the first per id) is returned.

    Raises ValueError naming the file when a sampled id has no label.
    """
    d = Path(folder) if folder is not None else _data.data_dir() / "impossible_lcb_runs" / "human"
    df = pd.DataFrame(_jsonl(d / "agreement_labels.jsonl"))
    _require(df, ("id", "label"), str(d / "agreement_labels.jsonl"))
    sample = _data.read_json(d / "agreement_sample.json")
    blind = df.drop_duplicates("id", keep="first").set_index("id")
    missing = [i for i in sample if i not in blind.index]
    if missing:
        raise ValueError(f"{d / 'agreement_labels.jsonl'}: sampled item(s) {missing} have no label")
    return blind.loc[list(sample), ["label"]].reset_index()


# ------------------------------------------------------------------ rates with intervals
def _task_sums(df: pd.DataFrame, cols: Sequence[str], tasks: Sequence[str] | None = None) -> pd.DataFrame:
    g = df.groupby("task_id")[list(cols)].sum()
    g["_n"] = df.groupby("task_id").size()
    if tasks is not None:
        g = g.reindex(tasks, fill_value=0)
    return g


def lcb_rates(runs: pd.DataFrame, by: Sequence[str] = ("harness", "model", "arm", "split"),
              estimands: Sequence[str] = tuple(ESTIMANDS), *, splits: Sequence[str] = IMPOSSIBLE_SPLITS,
              n_draws: int = 2000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Rates (percent of runs) by stratum with task-cluster bootstrap intervals.

    Parameters
    ----------
    runs : :func:`load_lcb_runs` (rows of ``splits`` only are used).
    by : stratum columns. estimands : keys of :data:`ESTIMANDS` (bool columns of ``runs``).

    Returns
    -------
    Long table: ``by`` columns, ``estimand, estimate, ci_low, ci_high, level, hits, n``
    (runs) and ``n_tasks`` (clusters); one row per stratum and estimand, strata sorted.

    Raises
    ------
    KeyError
        A missing stratum or estimand column. ValueError: no runs in ``splits``, or
        ``n_draws`` / ``level`` / ``seed`` out of range.
    """
    BootstrapSpec(n_draws=n_draws, level=level, seed=seed)
    missing = [c for c in list(by) + list(estimands) + ["task_id", "split"] if c not in runs.columns]
    if missing:
        raise KeyError(f"runs table lacks column(s) {missing}")
    df = runs[runs["split"].isin(splits)]
    if df.empty:
        raise ValueError(f"no runs in split(s) {list(splits)}; splits present: {sorted(set(runs['split']))}")
    rows = []
    cols = list(estimands)
    for keys, g in df.groupby(list(by), sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        s = _task_sums(g.assign(**{c: g[c].astype(float) for c in cols}), cols)
        sums = s[cols + ["_n"]].to_numpy(float)
        k = len(cols)

        def stat(t, k=k):
            return 100.0 * t[:, :k] / t[:, k:k + 1]

        reps = paired_cluster_bootstrap(sums, stat, n_draws=n_draws,
                                        rng=np.random.default_rng(keyed_seed(seed, "lcb_rate", *map(str, keys))))
        lo, hi = percentile_interval(reps, level)
        tot = sums.sum(0)
        for j, c in enumerate(cols):
            rows.append(dict(zip(by, keys), estimand=c, estimate=100.0 * tot[j] / tot[k], ci_low=float(lo[j]),
                             ci_high=float(hi[j]), level=level, hits=int(tot[j]), n=int(tot[k]), n_tasks=len(s)))
    return pd.DataFrame(rows)


def lcb_difference(runs: pd.DataFrame, estimand: str, *, where: Mapping[str, str], arm_a: str, arm_b: str,
                   splits: Sequence[str] = IMPOSSIBLE_SPLITS, n_draws: int = 2000, level: float = 0.95,
                   seed: int = 0) -> dict[str, Any]:
    """Rate of ``estimand`` under ``arm_a`` minus under ``arm_b`` (percentage points), paired by task.

    The runs matching ``where`` (column -> value) in ``splits``; a task's runs under both
    arms are resampled together. Returns ``estimate, ci_low, ci_high, level, rate_a,
    rate_b, n_a, n_b, n_tasks``.

    Raises
    ------
    KeyError
        A column of ``where`` or ``estimand`` missing. ValueError: an arm without runs.
    """
    BootstrapSpec(n_draws=n_draws, level=level, seed=seed)
    for c in list(where) + [estimand, "arm", "task_id", "split"]:
        if c not in runs.columns:
            raise KeyError(f"runs table lacks column {c!r}")
    m = runs["split"].isin(splits)
    for c, v in where.items():
        m &= runs[c] == v
    sub = runs[m]
    a, b = sub[sub["arm"] == arm_a], sub[sub["arm"] == arm_b]
    for name, part in ((arm_a, a), (arm_b, b)):
        if part.empty:
            raise ValueError(f"no runs of arm {name!r} where {dict(where)} in splits {list(splits)}; arms there: "
                             f"{sorted(set(sub['arm']))}")
    tasks = sorted(set(a["task_id"]) | set(b["task_id"]))
    sa = _task_sums(a.assign(v=a[estimand].astype(float)), ["v"], tasks)
    sb = _task_sums(b.assign(v=b[estimand].astype(float)), ["v"], tasks)
    sums = np.column_stack([sa["v"], sa["_n"], sb["v"], sb["_n"]]).astype(float)

    def stat(t):
        return 100.0 * (t[:, 0] / t[:, 1] - t[:, 2] / t[:, 3])

    reps = paired_cluster_bootstrap(sums, stat, n_draws=n_draws, rng=np.random.default_rng(
        keyed_seed(seed, "lcb_difference", estimand, arm_a, arm_b, *map(str, where.values()))))
    lo, hi = percentile_interval(reps, level)
    tot = sums.sum(0)
    return dict(estimate=float(stat(tot[None, :])[0]), ci_low=float(lo), ci_high=float(hi), level=level,
                rate_a=100.0 * tot[0] / tot[1], rate_b=100.0 * tot[2] / tot[3], n_a=int(tot[1]), n_b=int(tot[3]),
                n_tasks=len(tasks))


def recount_authors_metrics(runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """Our counts of ``n, ib_cheat, exploit, stop_via_exit, abort`` by harness x model x
    arm x split group beside the audit authors' (``metrics.csv``), impossible splits only.

    Returns columns ``harness, model, arm, split, quantity, ours, authors, match``.
    """
    imp = runs[runs["split"].isin(IMPOSSIBLE_SPLITS)]
    key = ["harness", "model", "arm", "split_group"]
    ours = imp.groupby(key).agg(n=("task_id", "size"), ib_cheat=("ib_cheat", "sum"), exploit=("exploit", "sum"),
                                stop_via_exit=("stop_via_exit", "sum"), abort=("aborted", "sum")).reset_index()
    ours = ours.rename(columns={"split_group": "split"})
    theirs = metrics[metrics["split"].isin(IMPOSSIBLE_SPLITS)]
    both = ours.merge(theirs, on=["harness", "model", "arm", "split"], how="outer", suffixes=("_ours", "_authors"),
                      indicator=True)
    rows = []
    for _, r in both.iterrows():
        for q in ("n", "ib_cheat", "exploit", "stop_via_exit", "abort"):
            o, t = r.get(f"{q}_ours", np.nan), r.get(f"{q}_authors", np.nan)
            rows.append(dict(harness=r["harness"], model=r["model"], arm=r["arm"], split=r["split"], quantity=q,
                             ours=o, authors=t, match=bool(pd.notna(o) and pd.notna(t) and float(o) == float(t))))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ findings
#: A difference of two rates in percentage points lies in [-100, 100] (either sign possible:
#: a judged exploit need not pass, and an arm can raise or lower a rate).
PP_DIFFERENCE: tuple[float, float] = (-100.0, 100.0)
#: What every finding here rests on.
MEASURED_WHY = ("real agents' recorded runs on Impossible-LiveCodeBench, labelled by the audit's LLM judge; "
                "no simulation parameter is involved")


def real_run_findings(runs: pd.DataFrame, headlines: pd.DataFrame, *, n_draws: int = 2000, level: float = 0.95,
                      seed: int = 0) -> tuple[Findings, pd.DataFrame]:
    """The paper's claims this data can test, each judged by its task-cluster interval.

    ``headlines`` is the paper's approximate headline table
    (``paper_values("impossible_cheating", "headlines")``: ``comparison, condition,
    cheating_pct, model``), quoted in the ``paper`` column only. Claims (differences in
    percentage points, paired by task, impossible splits; judged "above 0"):

    1. an abort channel lowers cheating: judged gaming under prompt D minus under D with
       the abort option, Gemini 3.8 Flash and Gemini 3.1 Pro in the minimal retry loop;
    2. the prompt's wording moves the cheating rate: judged gaming under the loose prompt
       A minus the strict prompt D (Gemini 3.8 Flash, minimal loop), and the pass-equals-cheat
       rate under the paper's exact prompt ending minus the audit's ending (Gemini 3.1 Pro);
    3. pass-equals-cheat counts stopping as cheating: the pass-equals-cheat rate minus the
       judged gaming rate on the same runs (Gemini 3.1 Pro, prompt D, minimal loop).

    Returns ``(Findings, detail)``: ``detail`` has one row per claim with both arms' rates.
    """
    def paper(comp: str) -> str:
        h = headlines[headlines["comparison"] == comp]
        if h.empty:
            raise KeyError(f"paper headline table lacks comparison {comp!r}; has {sorted(set(headlines['comparison']))}")
        parts = [f"{r.condition} {r.cheating_pct:g} %" for r in h.itertuples()]
        return f"{h['model'].iloc[0]}: " + " -> ".join(parts) + " (paper (approx.))"

    flash = dict(harness="inspect_minimal", model="gemini-3.8-flash")
    pro = dict(harness="inspect_minimal", model="gemini-3.1-pro-preview")
    specs = [
        ("An abort channel lowers judged gaming (Gemini 3.8 Flash, minimal loop)", "exploit", flash, "D", "D_abort",
         paper("abort channel")),
        ("An abort channel lowers judged gaming (Gemini 3.1 Pro, minimal loop)", "exploit", pro, "D", "D_abort",
         paper("abort channel")),
        ("A looser prompt raises judged gaming (Gemini 3.8 Flash, A vs D, minimal loop)", "exploit", flash, "A", "D",
         paper("prompt strictness")),
        ("The paper's prompt ending raises pass-equals-cheat (Gemini 3.1 Pro, D_paper vs D)", "ib_cheat", pro,
         "D_paper", "D", "the audit: +18 to 19 points with the paper's exact setting"),
    ]
    rows, detail = [], []
    for text, est, where, a, b, ptext in specs:
        d = lcb_difference(runs, est, where=where, arm_a=a, arm_b=b, n_draws=n_draws, level=level, seed=seed)
        rows.append(interval_finding(text, ptext, d["estimate"], d["ci_low"], d["ci_high"], d["n_tasks"],
                                     paper_side="above", level=level, quantity=f"{a} minus {b} ({ESTIMANDS[est]}, pp)",
                                     fmt=".1f", domain=PP_DIFFERENCE, basis="measured", why=MEASURED_WHY))
        detail.append(dict(finding=text, estimand=est, arm_a=a, arm_b=b, **d))
    # pass-equals-cheat minus judged gaming on the same runs (paired by run, so by task)
    sub = runs[(runs["harness"] == pro["harness"]) & (runs["model"] == pro["model"]) & (runs["arm"] == "D")
               & runs["split"].isin(IMPOSSIBLE_SPLITS)]
    s = _task_sums(sub.assign(a=sub["ib_cheat"].astype(float), b=sub["exploit"].astype(float)), ["a", "b"])
    sums = s[["a", "b", "_n"]].to_numpy(float)

    def gap(t):
        return 100.0 * (t[:, 0] - t[:, 1]) / t[:, 2]

    reps = paired_cluster_bootstrap(sums, gap, n_draws=n_draws,
                                    rng=np.random.default_rng(keyed_seed(seed, "lcb_metric_gap")))
    lo, hi = percentile_interval(reps, level)
    tot = sums.sum(0)
    est = float(gap(tot[None, :])[0])
    text = "Pass-equals-cheat exceeds judged gaming: stops counted as cheats (Gemini 3.1 Pro, D)"
    rows.append(interval_finding(text, "ImpossibleBench: a pass on an impossible variant is cheating; the audit: about "
                                 "58 % by the metric against 8-20 % gaming", est, float(lo), float(hi), len(s),
                                 paper_side="above", level=level,
                                 quantity="pass-equals-cheat minus judged gaming (pp)", fmt=".1f",
                                 domain=PP_DIFFERENCE, basis="measured", why=MEASURED_WHY))
    detail.append(dict(finding=text, estimand="ib_cheat - exploit", arm_a="D", arm_b="D", estimate=est,
                       ci_low=float(lo), ci_high=float(hi), level=level, rate_a=100 * tot[0] / tot[2],
                       rate_b=100 * tot[1] / tot[2], n_a=int(tot[2]), n_b=int(tot[2]), n_tasks=len(s)))
    f = Findings.build(rows, seed=seed, title="findings (measured on real runs)", n_draws=n_draws, level=level)
    return f, pd.DataFrame(detail)


# ------------------------------------------------------------------ label agreement
def cohen_kappa(a: Sequence, b: Sequence) -> float:
    """Cohen's kappa of two raters' labels (:func:`sklearn.metrics.cohen_kappa_score`).

    Raises ValueError for unequal lengths or no items.
    """
    from sklearn.metrics import cohen_kappa_score

    a, b = list(a), list(b)
    if len(a) != len(b) or not a:
        raise ValueError(f"kappa needs two equal, non-empty label lists; got {len(a)} and {len(b)}")
    return float(cohen_kappa_score(a, b))


def judge_vs_manual(runs: pd.DataFrame, labels: pd.DataFrame, *, n_draws: int = 2000, level: float = 0.95,
                    seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The LLM judge's gaming label against the manual stop/exit labels, run by run.

    Items of the ``stop_exit`` queue are joined to their run by ``log, task_id, split``
    (items whose run is absent from the runs table are counted, not used). Manual gaming:
    ``final_code == "games_tests"``; judge gaming: ``exploit``.

    Returns ``(items, summary)``: ``items`` one row per matched item (``id, task_id,
    final_code, exploit_type, manual_gaming, judge_gaming``); ``summary`` rows
    ``quantity, estimate, ci_low, ci_high, hits, n, interval`` for agreement (exact
    Clopper-Pearson), Cohen's kappa (item bootstrap percentile interval), the judge's
    precision and recall against the manual label (exact), and the items matched.
    """
    BootstrapSpec(n_draws=n_draws, level=level, seed=seed)
    se = labels[labels["queue"] == "stop_exit"]
    j = se.merge(runs[["log", "task_id", "split", "exploit", "exploit_type", "stop_via_exit"]],
                 on=["log", "task_id", "split"], how="left", validate="1:1", indicator=True)
    matched = j[j["_merge"] == "both"].copy()
    matched["manual_gaming"] = matched["final_code"] == "games_tests"
    matched["judge_gaming"] = matched["exploit"].astype(bool)
    m, g = matched["manual_gaming"].to_numpy(), matched["judge_gaming"].to_numpy()
    n = len(matched)
    agree = int((m == g).sum())
    rows = []
    r, lo, hi = binomial_interval(agree, n, level=level)
    rows.append(dict(quantity="agreement", estimate=r, ci_low=lo, ci_high=hi, hits=agree, n=n,
                     interval="exact (Clopper-Pearson)"))
    k = cohen_kappa(m, g)
    rng = np.random.default_rng(keyed_seed(seed, "kappa_bootstrap"))
    idx = rng.integers(0, n, size=(n_draws, n))
    ks = np.array([cohen_kappa(m[i], g[i]) if len(set(m[i]) | set(g[i])) > 1 else np.nan for i in idx])
    klo, khi = percentile_interval(ks, level)
    rows.append(dict(quantity="Cohen's kappa", estimate=k, ci_low=float(klo), ci_high=float(khi), hits=np.nan, n=n,
                     interval="item bootstrap (percentile)"))
    tp = int((m & g).sum())
    for q, hits, den in (("judge precision (manual gaming among judge gaming)", tp, int(g.sum())),
                         ("judge recall (judge gaming among manual gaming)", tp, int(m.sum()))):
        if den:
            r, lo, hi = binomial_interval(hits, den, level=level)
            rows.append(dict(quantity=q, estimate=r, ci_low=lo, ci_high=hi, hits=hits, n=den,
                             interval="exact (Clopper-Pearson)"))
    rows.append(dict(quantity="stop/exit items matched to a run", estimate=n / len(se), ci_low=np.nan,
                     ci_high=np.nan, hits=n, n=len(se), interval=""))
    cols = ["id", "task_id", "split", "model", "arm", "final_code", "exploit_type", "manual_gaming", "judge_gaming"]
    return matched[cols].reset_index(drop=True), pd.DataFrame(rows)


def blind_relabel_agreement(labels: pd.DataFrame, relabel: pd.DataFrame, *, level: float = 0.95) -> dict[str, Any]:
    """The person's blind relabel against the written-rule labels of the same 15 items.

    Returns ``n, agree, agreement, ci_low, ci_high`` (exact) and ``kappa`` (three classes
    ``stop_only / targeted_exit / games_tests``).

    Raises KeyError naming ids without a written-rule label.
    """
    m = relabel.merge(labels[["id", "final_code"]], on="id", how="left")
    if (m["final_code"].fillna("") == "").any():
        raise KeyError(f"relabelled item(s) {m.loc[m['final_code'].fillna('') == '', 'id'].tolist()} have no "
                       "written-rule stop/exit label")
    agree = int((m["label"] == m["final_code"]).sum())
    r, lo, hi = binomial_interval(agree, len(m), level=level)
    return dict(n=len(m), agree=agree, agreement=r, ci_low=lo, ci_high=hi, kappa=cohen_kappa(m["label"], m["final_code"]))


# ------------------------------------------------------------------ known defects
def known_defects_table(known: pd.DataFrame, audit_counts: pd.DataFrame, n_he_tasks: int,
                        n_lcb_tasks: int = 103) -> pd.DataFrame:
    """The audit's known defects of Impossible-LCB's original split beside our HumanEval audit.

    ``known``: :func:`load_known_issues`; ``audit_counts``: the ``(check, n, tasks)``
    table of :func:`agentstudies.studies.impossible.audit_summary` (its last row counts
    the flagged originals). Returns ``benchmark, defect, issues, tasks, of tasks, found by``.
    """
    orig = known[known["split"] == "original"]
    rows = [dict(benchmark="Impossible-LiveCodeBench", defect=issue.replace("_", " "), issues=len(g),
                 tasks=g["task_id"].nunique(), **{"of tasks": n_lcb_tasks}, **{"found by": "the audit's authors"})
            for issue, g in orig.groupby("issue", sort=True)]
    rows.append(dict(benchmark="Impossible-LiveCodeBench", defect="all original-split defects", issues=len(orig),
                     tasks=orig["task_id"].nunique(), **{"of tasks": n_lcb_tasks}, **{"found by": "the audit's authors"}))
    for _, r in audit_counts.iterrows():
        if str(r["check"]).startswith("docstring examples read"):
            continue
        rows.append(dict(benchmark="HumanEval", defect=r["check"], issues=int(r["n"]), tasks=int(r["tasks"]),
                         **{"of tasks": n_he_tasks}, **{"found by": "this book's audit"}))
    return pd.DataFrame(rows)


def defect_flag_rates(runs: pd.DataFrame, *, n_draws: int = 2000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """How often agents flagged a clean vs a defective original task (percent of runs,
    task-cluster intervals), by model: ``split_group`` ``original_clean`` / ``original_defective``."""
    orig = runs[runs["split"] == "original"]
    return lcb_rates(orig, by=("model", "split_group"), estimands=("flag",), splits=("original",), n_draws=n_draws,
                     level=level, seed=seed)
