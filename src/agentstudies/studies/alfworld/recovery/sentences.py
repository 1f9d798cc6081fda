"""Sentences of the ALFWorld recovery chapter built from a run's tables: the router's
blanket-rule and horizon-feature sentences, an archived run's verdict and testability
counts, and the ``reappearance.csv`` layout."""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentstudies.studies.alfworld.recovery.pipeline import HORIZON_FEATURES

__all__ = ["archived_run_sentences", "reappearance_table", "router_sentences"]


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


def router_sentences(pipe) -> dict[str, str]:
    """Sentences for the chapter from a :class:`agentstudies.studies.alfworld.recovery.pipeline.RouterPipeline`: ``"blanket"`` (CIR's
    evaluation intervention rate and whether a blanket rule rescues exactly its set) and
    ``"leak"`` (the horizon features, dropped or kept, and their measured separation)."""
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
    return dict(blanket=blanket, leak=leak_s)


def archived_run_sentences(findings: pd.DataFrame, testab: pd.DataFrame) -> dict[str, str]:
    """Sentences for an archived run (:mod:`agentstudies.book.paper.runs`) from its saved tables:
    ``"findings"`` -- the verdict counts of its ``findings.csv`` (column ``verdict``);
    ``"testability"`` -- over its refresh forks in ``testability.csv`` (all forks, an ended
    branch counting as unchanged), how many changed the agent's next action and how many
    the outcome. Raises ``KeyError`` naming a missing column, ``ValueError`` for a verdict
    outside :data:`agentstudies.findings.VERDICTS`."""
    from agentstudies.findings import VERDICTS

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
    nxt = int(round(float((r["next_action_changed"] * r["forks"]).sum())))
    out = int(round(float((r["outcome_changed"] * r["forks"]).sum())))
    pct = (lambda k: f"{100 * k / forks:.1f} %") if forks else (lambda k: "–")
    t_s = (f"A refresh changed the agent's next action in {nxt} of {forks} refresh forks ({pct(nxt)}) and the "
           f"outcome in {out} ({pct(out)}).")
    return dict(findings=f_s, testability=t_s)
