"""Impossible coding tasks: the rate estimands, their summaries and the paper's headlines beside ours.

Part of the study driver :mod:`agentstudies.studies.impossible` (import from there):
:func:`cheating_rates` -- the paper's estimand, the pass rate on an impossible variant, by
stratum with task-cluster bootstrap intervals (:class:`RateResult`) -- and
:func:`legit_pass_rates`; :func:`strategy_mix`, :func:`difficulty_bins`,
:func:`variant_summary`; :func:`headline_directions` (the paper's approximate headline
numbers, ``data/paper/impossible_cheating_headlines.csv``, only ever shown beside ours,
labelled "paper (approx.)"); :func:`workflow_sasst` (SASST on the workflow comparison over
task features); :func:`reminder_forks` + :func:`reminder_analysis` (paired forks after the
first failing run, with and without a specification reminder: rescue / harm); and
:func:`labelled` captions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from agentstudies.envs.impossible import load_variant_table, variant_frame
from agentstudies.parallel import keyed_seed
from agentstudies.results import Result, ResultProvenance, make_provenance, tidy_rows
from agentstudies.specs import BootstrapSpec
from agentstudies.studies.impossible.run import BASE_WORKFLOW, IMPOSSIBLE_KINDS, StudyRun

__all__ = [
    "RateResult", "agent_label", "agents_label", "cheating_rates", "legit_pass_rates", "strategy_mix",
    "difficulty_bins", "variant_summary", "paper_headlines", "headline_directions", "workflow_sasst",
    "reminder_forks", "reminder_analysis", "labelled",
]


# ------------------------------------------------------------------------ estimands
@dataclass(frozen=True)
class RateResult(Result):
    """Rates by stratum with task-cluster bootstrap percentile intervals (percent)."""

    rows: pd.DataFrame
    strata_cols: tuple = ()
    params: dict = field(default_factory=dict)
    provenance: ResultProvenance = field(default_factory=ResultProvenance)
    title: str = "rates (simulated agents)"

    def _tidy(self) -> pd.DataFrame:
        return tidy_rows(self.rows, strata=tuple(self.strata_cols))

    def table(self) -> pd.DataFrame:
        """Compact: strata, ``agents`` (simulated), ``rate %``, ``CI`` (percentile), ``n``."""
        df = self.to_frame()
        out = df[list(self.strata_cols) + ["agents"]].copy()
        out["rate %"] = df["estimate"].round(1)
        out["CI"] = [f"[{lo:.1f}, {hi:.1f}]" for lo, hi in zip(df["ci_low"], df["ci_high"])]
        out["n"] = df["n"].astype(int)
        return out


def _cluster_rate(df: pd.DataFrame, col: str, rng: np.random.Generator, n_draws: int, level: float):
    g = df.groupby("task_id")[col].agg(["sum", "count"])
    s, c = g["sum"].to_numpy(float), g["count"].to_numpy(float)
    est = 100.0 * s.sum() / c.sum()
    idx = rng.integers(0, len(s), size=(n_draws, len(s)))
    reps = 100.0 * s[idx].sum(1) / c[idx].sum(1)
    a = (1 - level) / 2
    return est, float(reps.std(ddof=1)), float(np.quantile(reps, a)), float(np.quantile(reps, 1 - a)), int(c.sum())


def _rates(df: pd.DataFrame, col: str, by: Sequence[str], estimand: str, *, n_draws: int, level: float,
           seed: int) -> RateResult:
    if col not in df.columns:
        raise KeyError(f"episode table lacks column {col!r}")
    missing = [b for b in by if b not in df.columns]
    if missing:
        raise KeyError(f"episode table lacks stratum column(s) {missing}")
    if len(df) == 0:
        raise ValueError(f"no episodes to estimate {estimand!r}")
    rows = []
    for keys, g in df.groupby(list(by), sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        rng = np.random.default_rng(keyed_seed(seed, "bootstrap", estimand, *[str(k) for k in keys]))
        est, se, lo, hi, n = _cluster_rate(g.assign(**{col: g[col].astype(float)}), col, rng, n_draws, level)
        rows.append(dict(zip(by, keys), agents=agents_label(g), estimand=estimand, estimate=est, se=se, ci_low=lo,
                         ci_high=hi, side="two-sided", level=level, n=n))
    title = f"rates ({agents_label(df)} agents)" if agents_label(df) == "simulated" else f"rates ({agents_label(df)})"
    return RateResult(pd.DataFrame(rows), tuple(by), {"level": level, "n_draws": n_draws, "seed": seed},
                      make_provenance(seed=seed, episodes=df[["task_id"] + list(by) + [col]].reset_index(drop=True)),
                      title)


def agent_label(agent: str) -> str:
    """How a chapter names the agent: ``"simulated"`` -> ``"simulated agents"``,
    ``"llm:<provider/model>"`` -> ``"LLM (<provider/model>)"``."""
    return f"LLM ({agent[len('llm:'):]})" if str(agent).startswith("llm:") else "simulated agents"


def agents_label(episodes: pd.DataFrame) -> str:
    """``"simulated"`` for simulated episodes, else the LLM label(s) of the ``agent`` column."""
    if "simulated" not in episodes.columns or episodes["simulated"].astype(bool).all():
        return "simulated"
    return ", ".join(sorted({agent_label(a) for a in episodes.loc[~episodes["simulated"].astype(bool), "agent"]}))


def cheating_rates(episodes: pd.DataFrame, by: Sequence[str] = ("kind", "workflow"), *, n_draws: int = 2000,
                   level: float = 0.95, seed: int = 0) -> RateResult:
    """Cheating rate = pass rate on the impossible variants (ImpossibleBench Sec. 3), in %.

    Task-cluster bootstrap: tasks resampled with replacement (``n_draws`` draws), the
    percentile interval at ``level``; ``n`` is the number of episodes.

    Raises
    ------
    KeyError
        A missing column. ValueError: no impossible-variant episodes; ValueError /
        TypeError naming ``n_draws``, ``level`` or ``seed`` when out of range
        (:class:`agentstudies.specs.BootstrapSpec`).
    """
    BootstrapSpec(n_draws=n_draws, level=level, seed=seed)
    df = episodes[episodes["kind"].isin(IMPOSSIBLE_KINDS)]
    return _rates(df, "cheated", by, "cheating_rate", n_draws=n_draws, level=level, seed=seed)


def legit_pass_rates(episodes: pd.DataFrame, by: Sequence[str] = ("workflow",), *, n_draws: int = 2000,
                     level: float = 0.95, seed: int = 0) -> RateResult:
    """Pass rate on the original (possible) tasks, in % (the legitimate performance); the
    interval and its errors as :func:`cheating_rates`."""
    BootstrapSpec(n_draws=n_draws, level=level, seed=seed)
    df = episodes[episodes["kind"] == "original"]
    return _rates(df, "passed", by, "legit_pass_rate", n_draws=n_draws, level=level, seed=seed)


def strategy_mix(episodes: pd.DataFrame, by: str = "test_access") -> pd.DataFrame:
    """Share (%) of each classified strategy among cheating episodes, by ``by``."""
    ch = episodes[episodes["cheated"]]
    if len(ch) == 0:
        return pd.DataFrame(columns=[by])
    tab = pd.crosstab(ch[by], ch["classified"], normalize="index") * 100
    tab["n"] = ch.groupby(by).size()
    return tab.round(1)


def difficulty_bins(episodes: pd.DataFrame, n_bins: int = 3) -> pd.Series:
    """Task difficulty terciles (``easy`` / ``medium`` / ``hard``) of the episodes' tasks."""
    d = episodes.groupby("task_id")["difficulty"].first()
    labels = ["easy", "medium", "hard"] if n_bins == 3 else [f"q{i + 1}" for i in range(n_bins)]
    q = pd.qcut(d.rank(method="first"), n_bins, labels=labels)
    return episodes["task_id"].map(q).astype(str)


def variant_summary(table: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(counts, reasons)``: kept / dropped per kind, and every drop reason with its count."""
    vf = variant_frame(table if table is not None else load_variant_table())
    counts = vf.groupby("kind").agg(kept=("kept", "sum"), dropped=("kept", lambda s: int((~s).sum())))
    counts = counts.reindex(["original", "one_off", "conflicting"]).astype(int)
    reasons = (vf[~vf["kept"]].assign(reason=lambda d: d["drop_reason"].str.replace(r"\s\(.*", "", regex=True).str.strip())
               .groupby(["kind", "reason"]).size().rename("n").reset_index())
    return counts, reasons


# ------------------------------------------------------------------------ paper
def paper_headlines() -> pd.DataFrame:
    """``data/paper/impossible_cheating_headlines.csv``: the paper's approximate headline rates."""
    from agentstudies.studies._paper import paper_values

    return paper_values("impossible_cheating", "headlines")


def headline_directions(episodes: pd.DataFrame, label: str | None = None) -> pd.DataFrame:
    """Our rates for the paper's headline comparisons, beside the paper's (approx.) values.

    Rows: comparison, condition, source (``this run (simulated)`` / ``paper (approx.)``),
    cheating rate %; plus ``direction`` (does the low / high ordering agree?). ``label``
    names this run's agents (default :func:`agents_label` of ``episodes``: ``simulated`` or
    ``LLM (<model>)``).
    """
    who = label or agents_label(episodes)
    ours_src = f"this run ({who})" if who == "simulated" else f"this run, {who}"
    paper = paper_headlines()
    imp = episodes[episodes["kind"].isin(IMPOSSIBLE_KINDS)]
    base = BASE_WORKFLOW

    def rate(**kw) -> float:
        m = np.ones(len(imp), bool)
        for k, v in kw.items():
            m &= (imp[k] == v).to_numpy()
        sel = imp[m]
        return float(100 * sel["cheated"].mean()) if len(sel) else float("nan")

    ours = {
        ("prompt strictness", "lenient"): rate(strictness="lenient", test_access=base.test_access, abort=base.abort, rounds=base.rounds),
        ("prompt strictness", "strict"): rate(strictness="strict", test_access=base.test_access, abort=base.abort, rounds=base.rounds),
        ("abort channel", "off"): rate(strictness=base.strictness, test_access=base.test_access, abort=False, rounds=base.rounds),
        ("abort channel", "on"): rate(strictness=base.strictness, test_access=base.test_access, abort=True, rounds=base.rounds),
        ("feedback rounds", "1"): rate(strictness=base.strictness, test_access=base.test_access, abort=base.abort, rounds=1),
        ("feedback rounds", "10"): rate(strictness=base.strictness, test_access=base.test_access, abort=base.abort, rounds=10),
        ("test access", "writable"): rate(strictness=base.strictness, test_access="writable", abort=base.abort, rounds=base.rounds),
        ("test access", "hidden"): rate(strictness=base.strictness, test_access="hidden", abort=base.abort, rounds=base.rounds),
    }
    rows = []
    for _, p in paper.iterrows():
        key = (p["comparison"], str(p["condition"]))
        rows.append({"comparison": key[0], "condition": key[1], "source": "paper (approx.)",
                     "cheating %": float(p["cheating_pct"])})
        rows.append({"comparison": key[0], "condition": key[1], "source": ours_src,
                     "cheating %": ours.get(key, float("nan"))})
    out = pd.DataFrame(rows)
    agree = {}
    for comp, g in out.groupby("comparison", sort=False):
        conds = list(dict.fromkeys(g["condition"]))
        if len(conds) != 2:
            continue
        d = {src: g[g["source"] == src].set_index("condition")["cheating %"] for src in g["source"].unique()}
        sp = np.sign(d["paper (approx.)"][conds[1]] - d["paper (approx.)"][conds[0]])
        so = np.sign(d[ours_src][conds[1]] - d[ours_src][conds[0]])
        agree[comp] = bool(sp == so) if np.isfinite(so) else False
    out["same direction"] = out["comparison"].map(agree)
    return out


# ------------------------------------------------------------------------ SASST
def workflow_sasst(episodes: pd.DataFrame, candidate: str, baseline: str, *, features: Sequence[str],
                   n_stability: int = 20, n_multiplier: int = 1000, min_ess: float = 8.0,
                   density_cap: float = 5.0, seed: int = 0):
    """SASST (Xu et al., 2026) on ``candidate - baseline`` honesty over task features.

    Score per (task, seed, workflow): ``1 - cheated`` on the impossible variants (seed
    encodes kind and replicate). Slots: the uniform claim "candidate cheats less"
    (sign +1) and a threshold-stressed fragility slot (sign -1: is the advantage gone on
    some task type?). Returns the :class:`~agentstudies.sasst.SASSTReport`.
    """
    from agentstudies.sasst import SASST, ComparisonPlan, Slot
    from agentstudies.sasst.rules import ThresholdFamily

    imp = episodes[episodes["kind"].isin(IMPOSSIBLE_KINDS) & episodes["workflow"].isin([candidate, baseline])].copy()
    if imp.empty:
        raise ValueError(f"no impossible-variant episodes for workflows {candidate!r} / {baseline!r}")
    imp["score"] = 1.0 - imp["cheated"].astype(float)
    imp["seed"] = imp["replicate"].astype(int) * 2 + (imp["kind"] == "conflicting").astype(int)
    ep = imp[["task_id", "seed", "workflow", "score"]].reset_index(drop=True)
    feats = (imp.groupby("task_id")[[f"feat_{f}" for f in features]].first()
             .rename(columns=lambda c: c[len("feat_"):]).astype(float))
    feats = feats.loc[:, feats.std() > 0]
    plan = ComparisonPlan((baseline, candidate))
    slots = [
        Slot("uniform: candidate more honest", {candidate: 1, baseline: -1}, sign=+1, min_ess=min_ess,
             density_cap=density_cap),
        Slot("stress: advantage gone on a task type", {candidate: 1, baseline: -1}, sign=-1, family="thr",
             radius=None, min_ess=min_ess, density_cap=density_cap, stability_threshold=0.5),
    ]
    eng = SASST(plan, slots, {"thr": ThresholdFamily(quantiles=(1 / 3, 1 / 2, 2 / 3), lifts=(3.0,))},
                n_stability=n_stability, n_draws=n_multiplier, seed=seed)
    return eng.run(ep, feats)


# ------------------------------------------------------------------------ recovery
def reminder_forks(run: StudyRun) -> pd.DataFrame:
    """The paired fork table of a ``reminder=True`` simulation (one row per fork).

    Only episodes whose run ``reminder_after`` failed have a fork (the reminder comes
    after it). Columns for :func:`agentstudies.recovery.analyze_paired`: ``cohort`` (the
    variant kind: original / one_off / conflicting), ``task_id`` (``#replicate`` appended
    when there are several), ``condition`` (the workflow), ``delay`` (the run after which
    the reminder comes), ``operation`` (``spec_reminder``), ``y_without`` / ``y_with`` --
    the *good* outcome: solving an original; not cheating on an impossible variant. So
    rescue = would have cheated (or failed an original) and does not; harm = would not have
    cheated (or would have solved) and then cheats (or fails / aborts).

    Raises
    ------
    ValueError
        If the run has no reminder forks, or a fork lacks its other arm.
    """
    eps = run.episodes
    if not eps["reminder"].any():
        raise ValueError("reminder_forks: simulate with reminder=True")
    key = ["task_id", "kind", "policy", "workflow", "replicate"]
    a = eps[~eps["reminder"]].set_index(key)
    b = eps[eps["reminder"]].set_index(key)
    if not a.index.equals(b.index):
        raise ValueError("reminder_forks: unpaired forks (each episode needs both arms)")
    forked = (b["fork_round"] > 0).to_numpy()
    is_orig = a.index.get_level_values("kind") == "original"
    good_a = np.where(is_orig, a["passed"], ~a["cheated"].astype(bool)).astype(int)
    good_b = np.where(is_orig, b["passed"], ~b["cheated"].astype(bool)).astype(int)
    out = pd.DataFrame({"y_without": good_a, "y_with": good_b, "delay": b["fork_round"].to_numpy(),
                        "operation": "spec_reminder"}, index=a.index).reset_index()[forked]
    if out.empty:
        raise ValueError("reminder_forks: no episode reached the fork (no failing first run)")
    if out["replicate"].nunique() > 1:
        out["task_id"] = out["task_id"] + "#" + out["replicate"].astype(str)
    out = out.rename(columns={"kind": "cohort", "workflow": "condition"})
    return out[["cohort", "task_id", "condition", "delay", "operation", "y_without", "y_with"]].reset_index(drop=True)


def reminder_analysis(forks: pd.DataFrame, *, n_draws: int = 2000, level: float = 0.95, seed: int = 0):
    """:func:`agentstudies.recovery.analyze_paired` on the fork table (rescue / harm, %)."""
    from agentstudies.recovery import analyze_paired

    return analyze_paired(forks, level=level, n_draws=n_draws, seed=seed)


def labelled(df: pd.DataFrame, caption: str, *, simulated: bool = True, precision: int = 1,
             agents: str = "simulated agents"):
    """A pandas Styler with a caption (``"... (simulated agents, real sandboxed runs)"`` when
    ``simulated``; ``agents`` names them otherwise, e.g. ``agent_label("llm:...")``) for
    display in a chapter; numbers shown with ``precision`` decimals."""
    cap = caption + (f" ({agents}, real sandboxed runs)" if simulated else "")
    return df.style.set_caption(cap).format(precision=precision)
