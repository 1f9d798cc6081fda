"""Sentences of the ALFWorld recovery chapter built from a run's tables and objects: what
the agent sees (from the loaded policy), whether a refresh reaches later choices, the
router's behaviour, blanket-rule and horizon-feature sentences, which findings are not
testable and why, an archived run's verdict and testability counts, and the
``reappearance.csv`` layout. Every sentence states what a rerun measures, never a
fixed claim."""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentstudies.studies.alfworld.recovery.pipeline import HORIZON_FEATURES

__all__ = ["agent_view_sentence", "archived_run_sentences", "clean_success_sentence", "reach_sentence",
           "reappearance_table", "router_behaviour_sentence", "router_sentences", "untestable_sentence"]

#: What every recovery finding rests on (the ``why`` of its rows).
MEASURED_WHY = ("trained checkpoints (or an LLM) acting in the ALFWorld engine under the CIR fork protocol: "
                "their weights do not contain the paper's effects")

_NEVER = "never the expert plan, a gold answer, the engine's state or a sampled success"


def agent_view_sentence(policy) -> str:
    """What the loaded agent reads at each decision, as a clause that completes "the agent
    is ...", built from the policy object (so a rerun with another checkpoint stays true).

    A memory checkpoint (``policy.params["memory"]``) reads its transcript too, with the
    window of its features (``memory_window``); a list-trained checkpoint
    (``policy.admissible is True``) the admissible commands shown with the text; an LLM
    policy (one with ``messages``) one ReAct conversation. The checkpoint's training
    objective comes from its meta (``objective``; ``source`` for the hand-set weights).
    Source: the policies' module docstrings (:mod:`agentstudies.agents.alfworld`).
    """
    lst = getattr(policy, "admissible", False) is True
    if hasattr(policy, "messages") or type(policy).__name__.startswith("LLM"):
        return ("a language model in one ReAct conversation that holds the goal, every text it was shown (stale, "
                "missing or refreshed) and every reply it gave since the episode began (the harness shows it no "
                f"admissible list) — {_NEVER}; a stale or missing observation stays in its context")
    params = dict(getattr(policy, "params", {}) or {})
    meta = dict(getattr(policy, "meta", {}) or {})
    name = params.get("name", getattr(policy, "name", "?"))
    if meta.get("source") == "hand-set":
        head = f"the checkpoint `{name}`, a small linear policy with hand-set (untrained) weights"
    else:
        head = (f"the checkpoint `{name}`, a small linear policy trained in this project "
                f"({meta.get('objective') or 'training objective not recorded'})")
    reads = ("the goal, the latest text it is shown and the engine's admissible commands shown with that text" if lst
             else "the goal and the latest text it is shown")
    if params.get("memory"):
        return (f"{head}, which reads {reads}, plus its own transcript: every observation text it was shown since the "
                "episode began (stale, missing and refresh replies included) and every command it issued — "
                f"{_NEVER}; its transcript features weigh the last {params.get('memory_window')} shown observations, "
                "so a stale or missing text, and a refresh's reply, keep acting on its choices while they stay in that "
                "window")
    return (f"{head}, which reads {reads}, folded into a belief parsed from every text shown so far and its own past "
            f"commands — {_NEVER}; a stale or missing observation misleads it as long as its belief keeps what it "
            "parsed")


def _pc(x: float) -> str:
    """A fraction as a percentage: one decimal from 1 %, two below (0.04 %, not 0.0 %)."""
    return f"{100 * x:.1f}" if 100 * x >= 1 or x == 0 else f"{100 * x:.2f}"


def _pct_ci(k: int, n: int, lo: float, hi: float, pct: str = "95 %") -> str:
    if not n:
        return "no fork"
    return f"{k} of {n} ({_pc(k / n)} %, exact {pct} interval {_pc(lo)}–{_pc(hi)} %)"


def reach_sentence(reach: pd.DataFrame, *, level: float = 0.95) -> str:
    """The headline of :func:`agentstudies.studies.alfworld.recovery.refresh_reach`'s table
    (rows ``clean + stale``, ``clean``, ``stale`` with ``n``, ``k``, ``ci_low``,
    ``ci_high``): how often a refresh at delays >= 1 changed the agent's next action, with
    exact intervals; with no changed fork, the exact one-sided ``level`` upper bound.
    Raises ``KeyError`` for a missing row or column."""
    from agentstudies.findings import share_upper_bound

    r = reach.set_index("forks")
    row = lambda name: (int(r.loc[name, "k"]), int(r.loc[name, "n"]), float(r.loc[name, "ci_low"]),  # noqa: E731
                        float(r.loc[name, "ci_high"]))
    k, n, lo, hi = row("clean + stale")
    pct = f"{int(round(100 * level))} %"
    head = ("Among the refresh forks under clean and stale observations (clean, stale-1, stale-2) at delays ≥ 1 "
            "in every cohort, a refresh changed the agent's next action in ")
    if n and k == 0:
        head += (f"none of {n} (exact one-sided {pct} upper bound of the share "
                 f"{_pc(share_upper_bound(0, n, level=level)[1])} %)")
    else:
        head += _pct_ci(k, n, lo, hi, pct)
    parts = [f"{name} {_pct_ci(*row(name), pct)}" for name in ("clean", "stale")]
    return f"{head}: {parts[0]}; {parts[1]}."


def untestable_sentence(findings: pd.DataFrame, *, preamble: str | None = None) -> str:
    """Which findings are *not testable here* and why, from a findings table (``finding``,
    ``verdict``, ``why`` columns: ``Findings.table()`` or a saved ``findings.csv``):
    findings sharing one reason are listed together under it. ``preamble``: the reason
    prefix every row carries, removed before grouping (``None``: the recovery findings'
    basis sentence, :data:`MEASURED_WHY`).
    Raises ``KeyError`` naming a missing column."""
    missing = [c for c in ("finding", "verdict", "why") if c not in findings]
    if missing:
        raise KeyError(f"findings table lacks column(s) {missing}")
    if preamble is None:
        preamble = MEASURED_WHY
    u = findings[findings["verdict"] == "not testable here"]
    if u.empty:
        return ("No finding is marked not testable here: every arm a finding rests on changed the agent's actions "
                "in some fork, or too few forks were run to bound the share of changed forks below the threshold.")
    why = [str(w)[len(preamble):].lstrip("; ") if preamble and str(w).startswith(preamble) else str(w)
           for w in u["why"]]
    groups: dict[str, list[str]] = {}
    for f, w in zip(u["finding"], why):
        groups.setdefault(w, []).append(f"“{f}”")
    n = len(u)
    body = "; ".join(f"{', '.join(fs)}, because {w}" for w, fs in groups.items())
    return f"{n} finding{'s are' if n != 1 else ' is'} not testable here: {body}."


def reappearance_table(findings) -> pd.DataFrame:
    """The earlier ``reappearance.csv`` layout as a superset of ``findings.csv``: the
    findings table plus ``this_run`` (the estimate and interval as text) and
    ``reappears`` (True / False from the verdict; NA when inconclusive or not testable)."""
    t = findings.table()
    this_run = [("" if not np.isfinite(e) else (f"{e:+.1f} [{lo:+.1f}, {hi:+.1f}]" if np.isfinite(lo) else f"{e:g}"))
                for e, lo, hi in zip(t["estimate"], t["ci_low"], t["ci_high"])]
    reap = pd.array([True if v == "reappears" else (False if v == "contradicted" else pd.NA) for v in t["verdict"]],
                    dtype="boolean")
    return t.assign(this_run=this_run, reappears=reap)


def _thresholds(th) -> str:
    f = lambda v: "∞" if not np.isfinite(float(v)) else f"{float(v):.3g}"  # noqa: E731
    return ", ".join(f"{g} = {f(th[k])}" for k, g in (("alpha", "α"), ("beta", "β"), ("gamma", "γ")) if k in th)


def _eval_behaviour(episodes: pd.DataFrame, table: pd.DataFrame) -> tuple[str, int]:
    """CIR's refreshes on the evaluation pool (count, delays) against the blanket rules, from
    the evaluation's ``episodes`` (``router_episodes.csv``) and ``table`` (``router_evaluation.csv``)."""
    ep = episodes
    cir = ep[ep["policy"] == "cir"]
    k, n = int(cir["intervene"].astype(bool).sum()), int(len(cir))
    at = cir.loc[cir["intervene"].astype(bool), "delay"].astype(int).value_counts().sort_index()
    where = (" (" + ", ".join(f"{c} at delay {d}" for d, c in at.items()) + ")") if k else ""
    t = table[table["condition"] == "all"].set_index("policy")
    d = lambda pol: f"{t.loc[pol, 'delta']:+.1f} pp [{t.loc[pol, 'ci_low']:+.1f}, {t.loc[pol, 'ci_high']:+.1f}]"  # noqa: E731
    always = [p for p in t.index if str(p).startswith("always-d")]
    rand = [p for p in t.index if str(p).startswith("random-")]
    cmp = [f"always at delay {p[len('always-d'):]}: {d(p)}" for p in always] + [f"random at CIR's rate: {d(p)}"
                                                                                 for p in rand]
    got = f" for {int(t.loc['cir', 'rescue'])} rescues and {int(t.loc['cir', 'harm'])} harms" if k else ""
    s = (f"On the evaluation pool CIR refreshed {k} of {n} trajectories ({100 * k / n if n else 0:.1f} %){where}{got}; "
         f"its success change against never refreshing is {d('cir')}, and the rules with no model give "
         f"{'; '.join(cmp)} (never refreshing: 0 by definition).")
    return s, k


def _why_no_refresh(pipe, level: float) -> str:
    """Why CIR never refreshed: its frozen thresholds and what a refresh did to its training rows."""
    th = pipe.fit.routers["cir"].thresholds
    eps = float(pipe.fit.params.get("epsilon", 0.02))
    if all(np.isfinite(float(v)) for v in th.values()):
        return ("Its thresholds are finite, but no evaluation trajectory passed all three of them (out of fold it "
                f"refreshed {100 * float(pipe.fit.selection.set_index('router').loc['cir', 'oof_rate']):.1f} % of the "
                "training trajectories).")
    s = ("It never refreshes because on its out-of-fold training predictions no threshold rule gained anything on the "
         f"wrong-observation trajectories under the clean-harm cap ε = {eps:g} (the selection prefers fewer refreshes "
         "on ties).")
    if pipe.train_rows is None:
        return s
    o = pipe.training_outcomes(level)
    w, c = o[o["observation"] == "wrong"], o[o["observation"] == "clean"]
    s += " Its training rows say why: " + _training_rows(o, level)
    if int(w["rescues"].sum()) == 0:
        return s + ("; with no rescue at any candidate delay there is nothing a threshold rule can gain, whatever its "
                    "thresholds.")
    ch = ", ".join(f"{int(r.harms)} at delay {int(r.delay)}" for r in c.itertuples(index=False))
    return s + (f". Rescues existed, so the data allowed a gain; no threshold on p_err, 1 − p0 and u picked them out "
                f"without the harms beside them (clean training trajectories harmed by a refresh: {ch}).")


def clean_success_sentence(tasks: pd.DataFrame, paper_cohorts: pd.DataFrame | None = None, *,
                           level: float = 0.95) -> str:
    """How often the agent succeeds from clean states: its factual runs (no observation
    modified; the engine's ``won``) on the independent cohort (the ``valid_unseen`` floor
    plans) and on the primary cohort's prefix-feasible tasks (the paper's denominator), each
    ``k of n`` with an exact (Clopper-Pearson) ``level`` interval; with ``paper_cohorts``
    (the paper's ``cohorts`` table: ``cohort``, ``prefix_feasible``,
    ``feasible_factual_success``) the paper's primary-cohort rate beside it, labelled.

    ``tasks``: ``tasks.csv`` (columns ``cohort``, ``feasible``, ``factual_success``).
    Source: the CIR paper's cohort table (primary cohort: prefix-feasible tasks and their
    factual successes), ``data/paper``'s ``alfworld_recovery_cohorts``.
    Raises ``KeyError`` naming a missing column."""
    from agentstudies.findings import binomial_interval

    missing = [c for c in ("cohort", "feasible", "factual_success") if c not in tasks]
    if missing:
        raise KeyError(f"tasks table lacks column(s) {missing}")
    won = tasks["factual_success"].astype(bool)
    parts = []
    for label, sel in (("the independent cohort on the valid_unseen floor plans", tasks["cohort"] == "independent"),
                       ("the primary cohort's prefix-feasible tasks",
                        (tasks["cohort"] == "primary") & tasks["feasible"].astype(bool))):
        n = int(sel.sum())
        if n:
            k = int(won[sel].sum())
            _, lo, hi = binomial_interval(k, n, level=level)
            parts.append(f"on {label} in {_pct_ci(k, n, lo, hi, f'{int(round(100 * level))} %')}")
    s = ("From clean states (the factual runs) the agent succeeded " + " and ".join(parts) + "."
         if parts else "No factual run of the independent or primary cohort was recorded.")
    if paper_cohorts is not None:
        row = paper_cohorts[paper_cohorts["cohort"] == "primary"]
        if len(row) and np.isfinite(float(row["prefix_feasible"].iloc[0])):
            k, n = int(row["feasible_factual_success"].iloc[0]), int(row["prefix_feasible"].iloc[0])
            s += f" The paper's Qwen3-14B (paper): {k} of {n} prefix-feasible primary tasks ({100 * k / n:.1f} %)."
    return s


def _training_rows(outcomes: pd.DataFrame, level: float) -> str:
    """What a refresh did to the router's training trajectories with a wrong observation, per
    candidate delay (a :func:`~agentstudies.studies.alfworld.recovery.pipeline.training_outcomes`
    table, ``router_training_outcomes.csv``), without a final full stop."""
    w = outcomes[outcomes["observation"] == "wrong"]
    per = "; ".join(f"a refresh at delay {int(r.delay)} rescued {int(r.rescues)} and harmed {int(r.harms)} of "
                    f"{int(r.trajectories)} (rescue share at most {_pc(r.rescue_upper)} %)"
                    for r in w.itertuples(index=False))
    return (f"on its training trajectories with a stale or missing observation, {per} (exact one-sided "
            f"{int(round(100 * level))} % upper bounds)")


def router_behaviour_sentence(thresholds, episodes: pd.DataFrame, table: pd.DataFrame,
                              outcomes: pd.DataFrame | None = None, *, level: float = 0.95) -> str:
    """CIR's behaviour from saved tables (a live run's or an archive's): its frozen
    ``thresholds`` (mapping ``alpha`` / ``beta`` / ``gamma``), how often and at which delays
    it refreshed the evaluation pool (``episodes``: ``router_episodes.csv``) against never /
    always-at-d / random-at-its-rate (``table``: ``router_evaluation.csv``), and -- when it
    refreshed -- what a refresh did to its training trajectories (``outcomes``:
    ``router_training_outcomes.csv``), the rescues any threshold rule had to find.
    Source: the CIR paper's router (thresholds α, β, γ on ``p_err``, ``1 - p0`` and ``u``
    at the first candidate delay) and its evaluation table against never refreshing.
    Raises ``KeyError`` if ``table`` has no ``cir`` row."""
    ev, k = _eval_behaviour(episodes, table)
    s = f"CIR froze its thresholds at {_thresholds(thresholds)}. {ev}"
    if k and outcomes is not None and len(outcomes):
        w = outcomes[outcomes["observation"] == "wrong"]
        s += (" What a refresh did to its training trajectories: " + _training_rows(outcomes, level)
              + f" -- {int(w['rescues'].sum())} rescues in all, the ones its thresholds had to find.")
    return s


def router_sentences(pipe, *, level: float = 0.95) -> dict[str, str]:
    """Sentences for the chapter from a
    :class:`agentstudies.studies.alfworld.recovery.pipeline.RouterPipeline`: ``"blanket"`` (CIR's evaluation intervention rate and whether a blanket rule rescues exactly its set),
    ``"leak"`` (the horizon features, dropped or kept, and their measured separation) and
    ``"behaviour"`` (CIR's frozen thresholds, how often and at which delays it refreshed
    the evaluation pool against never / always-at-d / random-at-its-rate, and -- when it
    never refreshed -- why, from its training rows' rescues and harms per candidate delay
    with exact one-sided ``level`` upper bounds, :meth:`RouterPipeline.training_outcomes`)."""
    rs = pipe.rescue_sets.set_index("policy")
    cir = rs.loc["cir"]
    same = [p for p in rs.index if p.startswith(("always-", "random-")) and bool(rs.loc[p, "same_rescued_set"])]
    rate = 100 * float(pipe.cir_eval_rate)
    if int(cir["rescued"]) == 0:
        blanket = (f"CIR refreshed {rate:.1f}% of the evaluation trajectories and rescued none, so no rescued set "
                   "can distinguish it from a blanket rule here.")
    elif same:
        blanket = (f"CIR refreshed {rate:.1f}% of the evaluation trajectories; its {int(cir['rescued'])} rescued "
                   f"trajectories (from {int(cir['rescue_tasks'])} tasks) are exactly those of the blanket rule(s) "
                   f"{', '.join(same)}: on this pool its selectivity adds nothing a fixed rule does not.")
    else:
        blanket = (f"CIR refreshed {rate:.1f}% of the evaluation trajectories; no blanket rule (always at one delay, "
                   f"or random at CIR's rate) rescues exactly its {int(cir['rescued'])} trajectories.")
    leak = pipe.leak
    hz = leak[leak["horizon_feature"]]
    sep = float(hz["separation"].max()) if hz["separation"].notna().any() else np.nan
    meas = ("(not measurable here: the primary cohort has only successes or only failures)" if not np.isfinite(sep)
            else f"(on the primary cohort they separate factual success from failure with AUC up to {sep:.2f})")
    if pipe.dropped_features:
        leak_s = (f"The router features {', '.join(pipe.dropped_features)} encode how long the factual run "
                  f"lasted, which a router cannot know at its decision, and were removed {meas}.")
    else:
        leak_s = (f"The router kept {', '.join(HORIZON_FEATURES)}, which encode how long the factual run lasted, "
                  f"information a router cannot have at its decision {meas}.")
    outcomes = pipe.training_outcomes(level) if pipe.train_rows is not None else None
    behaviour = router_behaviour_sentence(pipe.fit.routers["cir"].thresholds, pipe.evaluation.episodes,
                                          pipe.evaluation.table, outcomes, level=level)
    if not bool(pipe.evaluation.episodes.query("policy == 'cir'")["intervene"].astype(bool).any()):
        behaviour += " " + _why_no_refresh(pipe, level)
    return dict(blanket=blanket, leak=leak_s, behaviour=behaviour)


def archived_run_sentences(findings: pd.DataFrame, testab: pd.DataFrame,
                           paired: pd.DataFrame | None = None, *, tasks: pd.DataFrame | None = None,
                           paper_cohorts: pd.DataFrame | None = None,
                           router: dict | None = None) -> dict[str, str]:
    """Sentences for an archived run (:mod:`agentstudies.book.paper.runs`) from its saved tables:
    ``"findings"`` -- the verdict counts of its ``findings.csv`` (column ``verdict``);
    ``"testability"`` -- over its refresh forks in ``testability.csv`` (all forks, an ended
    branch counting as unchanged), how many changed the agent's next action and how many
    the outcome (the saved counts ``<measure>_k`` where the table has them, else share x
    forks: an archive written before the counts were added); ``"reach"`` (only with
    ``paired``, its ``paired.csv``) -- :func:`reach_sentence` of
    :func:`~agentstudies.studies.alfworld.recovery.refresh_reach`; ``"untestable"`` --
    :func:`untestable_sentence` when ``findings`` has a ``why`` column; ``"clean_success"``
    (only with ``tasks``) -- :func:`clean_success_sentence`; ``"router"`` (only with
    ``router``, a dict of ``thresholds`` -- CIR's entry of ``router_freeze.json`` --,
    ``episodes``, ``evaluation`` and optionally ``training``, the archived
    ``router_episodes`` / ``router_evaluation`` / ``router_training_outcomes`` tables) --
    :func:`router_behaviour_sentence`. Raises
    ``KeyError`` naming a missing column, ``ValueError`` for a verdict outside
    :data:`agentstudies.findings.VERDICTS`."""
    from agentstudies.findings import VERDICTS
    from agentstudies.studies.alfworld.recovery.arms import _counts_of, refresh_reach

    for name, t, cols in (("findings", findings, ("verdict",)),
                          ("testability", testab, ("operation", "forks", "next_action_changed", "outcome_changed"))):
        missing = [c for c in cols if c not in t]
        if missing:
            raise KeyError(f"archived {name} table lacks column(s) {missing}")
    bad = sorted(set(findings["verdict"]) - set(VERDICTS))
    if bad:
        raise ValueError(f"unknown verdict(s) {bad}; expected some of {VERDICTS}")
    c = findings["verdict"].value_counts()
    n = {v: int(c.get(v, 0)) for v in VERDICTS}
    verb = lambda k: "is" if k == 1 else "are"  # noqa: E731
    f_s = (f"Of {len(findings)} paper findings, {n['reappears']} reappear{'s' if n['reappears'] == 1 else ''}, "
           f"{n['contradicted']} "
           f"{verb(n['contradicted'])} contradicted, {n['inconclusive']} {verb(n['inconclusive'])} inconclusive "
           f"and {n['not testable here']} {verb(n['not testable here'])} not testable here.")
    r = testab[testab["operation"] == "refresh"]
    forks = int(r["forks"].sum())
    nxt = int(_counts_of(r, "next_action_changed").sum())
    out = int(_counts_of(r, "outcome_changed").sum())
    pct = (lambda k: f"{100 * k / forks:.1f} %") if forks else (lambda k: "–")
    t_s = (f"A refresh changed the agent's next action in {nxt} of {forks} refresh forks ({pct(nxt)}) and the "
           f"outcome in {out} ({pct(out)}).")
    res = dict(findings=f_s, testability=t_s)
    if paired is not None:
        res["reach"] = reach_sentence(refresh_reach(paired))
    if "why" in findings:
        res["untestable"] = untestable_sentence(findings)
    if tasks is not None:
        res["clean_success"] = clean_success_sentence(tasks, paper_cohorts)
    if router is not None:
        res["router"] = router_behaviour_sentence(router["thresholds"], router["episodes"], router["evaluation"],
                                                  router.get("training"))
    return res
