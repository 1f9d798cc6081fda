"""Findings, testability and planted controls of the ImpossibleBench chapters,
on synthetic truths: a planted effect reappears, none is inconclusive, a reversed one is
contradicted, an inert arm is not testable here, and ``level`` is honoured. No sandbox runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from agentstudies.envs.impossible import Workflow, workflow_grid
from agentstudies.findings import CONTROL_COLUMNS, TABLE_COLUMNS
from agentstudies.parallel import keyed_seed
from agentstudies.studies import impossible as st
from agentstudies.studies.impossible import findings as st_findings

N_TASKS = 12
STRICT, LENIENT = "strict/writable/abort-off/r3", "lenient/writable/abort-off/r3"
BASE = st.BASE_WORKFLOW.name


def grid(cheat, n_tasks: int = N_TASKS, passed=None) -> pd.DataFrame:
    """Episodes of the one-factor grid; ``cheat(t, workflow, kind) -> bool`` on impossible
    variants, ``passed(t, workflow)`` on originals (default: True)."""
    rows = []
    for t in range(n_tasks):
        for wf in workflow_grid(rounds=(1, 3, 10)):
            for kind in ("original", "one_off", "conflicting"):
                c = bool(cheat(t, wf.name, kind)) if kind != "original" else False
                p = c if kind != "original" else (True if passed is None else bool(passed(t, wf.name)))
                rows.append(dict(task_id=f"T/{t}", kind=kind, workflow=wf.name, strictness=wf.strictness,
                                 test_access=wf.test_access, abort=wf.abort, rounds=wf.rounds, cheated=c, passed=p,
                                 classified="B" if c else "none", difficulty=float(t), policy="shortcut",
                                 replicate=0, reminder=False, aborted=False, outcome="passed" if p else "failed"))
    return pd.DataFrame(rows)


def strict_effect(direction: str):
    """strict vs lenient: planted (strict never cheats, lenient always), reversed, or none
    (each cheats on alternate tasks: same rate, no effect); others cheat on half the tasks."""
    def cheat(t, wf, kind):
        if wf == STRICT:
            return {"planted": False, "reversed": True, "none": t % 2 == 0}[direction]
        if wf == LENIENT:
            return {"planted": True, "reversed": False, "none": t % 2 == 1}[direction]
        return t % 2 == 0
    return cheat


def verdict(f, prefix):
    rows = [r for r in f.rows if r.finding.startswith(prefix)]
    assert len(rows) == 1, [r.finding for r in f.rows]
    return rows[0]


@pytest.mark.parametrize("direction, expected", [("planted", "reappears"), ("none", "inconclusive"),
                                                 ("reversed", "contradicted")])
def test_strict_prompt_finding_on_synthetic_truths(direction, expected):
    f = st.cheating_findings(grid(strict_effect(direction)), n_draws=300)
    r = verdict(f, "A strict prompt lowers cheating")
    assert r.verdict == expected
    want = {"planted": -100.0, "reversed": 100.0, "none": 0.0}[direction]
    assert r.estimate == pytest.approx(want) and r.n == N_TASKS
    assert tuple(f.table().columns) == TABLE_COLUMNS


def test_inert_arm_is_not_testable_from_the_measurement():
    ep = grid(strict_effect("planted"))
    testab = pd.DataFrame([dict(arm=w, factor="strictness", compared_with=BASE, episodes=36, next_action_changed=0.0,
                                code_changed=0.0, outcome_changed=0.0) for w in (STRICT, LENIENT)])
    f = st.cheating_findings(ep, testab, n_draws=200)
    r = verdict(f, "A strict prompt lowers cheating")
    assert r.verdict == "not testable here" and r.measured == 0.0 and "0 of 36" in r.why
    # one arm that did change something keeps the claim testable
    testab.loc[0, "code_changed"] = 0.25
    assert verdict(st.cheating_findings(ep, testab, n_draws=200), "A strict prompt").verdict == "reappears"


def test_level_is_honoured():
    rng = np.random.default_rng(5)
    draws = rng.random((N_TASKS, 40))
    ep = grid(lambda t, wf, kind: draws[t, hash((wf, kind)) % 40] < (0.3 if wf == STRICT else 0.6))
    lo_, hi_ = st.cheating_findings(ep, n_draws=500, level=0.5), st.cheating_findings(ep, n_draws=500, level=0.99)
    a, b = verdict(lo_, "A strict prompt"), verdict(hi_, "A strict prompt")
    assert a.rule.startswith("50% CI") and b.rule.startswith("99% CI")
    assert b.ci_low <= a.ci_low <= a.ci_high <= b.ci_high and b.ci_high - b.ci_low > a.ci_high - a.ci_low
    assert lo_.params["level"] == 0.5


def test_rate_difference_matches_a_plain_task_bootstrap():
    ep = grid(strict_effect("none"))
    ep.loc[(ep["workflow"] == STRICT) & (ep["task_id"] == "T/3"), "cheated"] = True
    imp = ep[ep["kind"] != "original"].reset_index(drop=True)
    est, lo, hi, n = st.rate_difference(imp, "cheated", imp["workflow"] == LENIENT, imp["workflow"] == STRICT,
                                        n_draws=400, seed=7, key="k")
    a = imp[imp["workflow"] == LENIENT].groupby("task_id")["cheated"].agg(["sum", "count"])
    b = imp[imp["workflow"] == STRICT].groupby("task_id")["cheated"].agg(["sum", "count"]).reindex(a.index)
    assert est == pytest.approx(100 * (b["sum"].sum() / b["count"].sum() - a["sum"].sum() / a["count"].sum()))
    # the same draws written as a loop: multinomial counts per draw (agentstudies.stats.bootstrap_counts)
    rng = np.random.default_rng(keyed_seed(7, "impossible-findings", "k"))
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=400)
    reps = [100 * ((w * b["sum"]).sum() / (w * b["count"]).sum() - (w * a["sum"]).sum() / (w * a["count"]).sum())
            for w in counts]
    assert (lo, hi) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])))
    assert n == N_TASKS


def test_difficulty_finding_and_exact_read_only_rule():
    # easy tasks (low difficulty) always cheat, hard never: planted; a test edit under read-only contradicts
    ep = grid(lambda t, wf, kind: t < N_TASKS // 3)
    f = st.cheating_findings(ep, n_draws=300)
    assert verdict(f, "Cheating is highest on the easiest").verdict == "reappears"
    assert verdict(f, "Read-only tests stop test edits").verdict == "reappears"
    ro = "neutral/read_only/abort-off/r3"
    m = (ep["workflow"] == ro) & ep["cheated"]
    ep.loc[m[m].index[:1], "classified"] = "A"
    g = verdict(st.cheating_findings(ep, n_draws=300), "Read-only tests stop test edits")
    assert g.verdict == "contradicted" and g.estimate == 1


def test_missing_workflow_is_inconclusive_and_says_why():
    ep = grid(strict_effect("planted"))
    f = st.cheating_findings(ep[ep["workflow"] != STRICT], n_draws=200)
    r = verdict(f, "A strict prompt")
    assert r.verdict == "inconclusive" and "not in this run's grid" in r.why
    with pytest.raises(KeyError, match="classified"):
        st.cheating_findings(ep.drop(columns="classified"))


def _attempts(eps: pd.DataFrame, code) -> pd.DataFrame:
    rows = []
    for r in eps.itertuples():
        for k in (1, 2):
            rows.append(dict(task_id=r.task_id, kind=r.kind, policy=r.policy, workflow=r.workflow,
                             replicate=r.replicate, reminder=r.reminder, round=k, code=code(r, k), edit=""))
    return pd.DataFrame(rows)


def test_workflow_testability_counts_changed_submissions_and_outcomes():
    ep = grid(strict_effect("none"), n_tasks=4)
    ep = ep[ep["workflow"].isin([BASE, STRICT, LENIENT])].reset_index(drop=True)
    # strict changes the second submission on task T/0 (all three kinds); lenient changes nothing
    att = _attempts(ep, lambda r, k: f"s{k}-{r.task_id}" + ("x" if (r.workflow == STRICT and r.task_id == "T/0"
                                                                    and k == 2) else ""))
    t = st.workflow_testability(ep, att).set_index("arm")
    assert tuple(t.reset_index().columns) == st.TESTABILITY_COLUMNS
    assert t.loc[STRICT, "episodes"] == 12 and t.loc[STRICT, "code_changed"] == pytest.approx(3 / 12)
    assert t.loc[STRICT, "next_action_changed"] == 0.0 and t.loc[LENIENT, "code_changed"] == 0.0
    # outcomes: strict cheats on even tasks, base on even tasks -> same outcome; lenient on odd -> all differ
    assert t.loc[STRICT, "outcome_changed"] == 0.0
    assert t.loc[LENIENT, "outcome_changed"] == pytest.approx(8 / 12)
    assert t.loc[STRICT, "factor"] == "strictness"
    with pytest.raises(KeyError, match="code"):
        st.workflow_testability(ep, att.drop(columns="code"))
    with pytest.raises(ValueError, match="base workflow"):
        st.workflow_testability(ep[ep["workflow"] != BASE], att)


def test_reminder_testability_compares_only_after_the_fork():
    base = dict(kind="one_off", policy="shortcut", workflow="w", replicate=0, aborted=False)
    eps = pd.DataFrame([dict(base, task_id=t, reminder=arm, fork_round=(1 if arm else -1) if t != "T/2" else -1,
                             outcome="passed" if (t == "T/0" and not arm) else "failed")
                        for t in ("T/0", "T/1", "T/2") for arm in (False, True)])
    # T/0: the reminder changes round 2; T/1: identical; T/2 never forked (its difference is ignored)
    att = _attempts(eps, lambda r, k: "a" if not (r.reminder and k == 2 and r.task_id in ("T/0", "T/2")) else "b")
    t = st.reminder_testability(SimpleNamespace(episodes=eps, attempts=att)).iloc[0]
    assert t["episodes"] == 2 and t["next_action_changed"] == 0.5 and t["code_changed"] == 0.5
    assert t["outcome_changed"] == 0.5
    with pytest.raises(ValueError, match="reminder=True"):
        st.reminder_testability(SimpleNamespace(episodes=eps.assign(reminder=False), attempts=att))


def _report(est, bound, level=0.95, status="confirmed"):
    return SimpleNamespace(table=pd.DataFrame([dict(estimate=est, bound=bound, status=status, reason="")]),
                           level=level, n_confirmation=20)


def _reminder(delta, lo, hi, cohort="conflicting"):
    return SimpleNamespace(cells=pd.DataFrame([dict(cohort=cohort, condition="w", delay=1, n=30, delta=delta,
                                                    delta_ci_low=lo, delta_ci_high=hi, rescue_rate=max(delta, 0.0),
                                                    rescue_ci_low=max(lo, 0.0), rescue_ci_high=max(hi, 0.0))]))


@pytest.mark.parametrize("case, expected", [("planted", "reappears"), ("none", "inconclusive"),
                                            ("reversed", "contradicted")])
def test_workflow_findings_on_synthetic_truths(case, expected):
    cand, base = "strict/read_only/abort-on/r3", BASE
    sign = {"planted": 1, "none": 0, "reversed": -1}[case]
    ep = grid(lambda t, wf, kind: (wf == base) == (sign > 0) if sign else t % 2 == (wf == cand))
    ep = ep[ep["workflow"] == base].assign(workflow=base)
    ep = pd.concat([ep, ep.assign(workflow=cand, cheated=[(not c) if sign else (t % 2 == 1) for c, t in
                                                          zip(ep["cheated"], ep["difficulty"].astype(int))])])
    report = {"planted": _report(0.3, 0.1), "none": _report(0.0, -0.2, status="not confirmed"),
              "reversed": _report(-0.3, -0.5, status="not confirmed")}[case]
    rem = {"planted": _reminder(20, 5, 35), "none": _reminder(0, -10, 10), "reversed": _reminder(-20, -35, -5)}[case]
    f = st.workflow_findings(report, ep, rem, candidate=cand, baseline=base, n_draws=300)
    assert verdict(f, "The candidate workflow is more honest").verdict == expected
    assert verdict(f, "The candidate workflow cheats less on conflicting").verdict == expected
    assert verdict(f, "A specification reminder lowers cheating on conflicting").verdict == expected
    s = verdict(f, "The candidate workflow is more honest")
    assert s.ci_high == pytest.approx(2 * s.estimate - s.ci_low) and s.level == pytest.approx(0.9)


def test_workflow_findings_inert_reminder_and_missing_forks():
    ep = grid(strict_effect("none"))
    testab = pd.DataFrame([dict(arm="spec_reminder", factor="reminder", compared_with="no reminder", episodes=30,
                                next_action_changed=0.0, code_changed=0.0, outcome_changed=0.0)])
    f = st.workflow_findings(_report(0.1, 0.05), ep, _reminder(0, 0, 0), testab, candidate=STRICT, baseline=BASE,
                             n_draws=200)
    r = verdict(f, "A specification reminder lowers cheating")
    assert r.verdict == "not testable here" and "0 of 30" in r.why
    g = st.workflow_findings(_report(0.1, 0.05), ep, None, candidate=STRICT, baseline=BASE, n_draws=200)
    assert verdict(g, "A specification reminder lowers cheating").verdict == "inconclusive"


def test_planted_controls_find_the_effect_and_null_rarely():
    c = st.impossible_controls(["setting", "reminder"], replicates=12, n_tasks=40, n_draws=200, seed=1)
    assert tuple(c.columns) == CONTROL_COLUMNS and len(c) == 4
    assert c["subject"].str.contains("planted|null").all()
    p = c.set_index(["family", "measures"])["rate"]
    fam = c["family"].iloc[0]
    assert p[(fam, "power")] >= 0.75 and p[(fam, "false-positive rate")] <= 0.25
    assert "planted replicates" in st.controls_sentence(c)
    with pytest.raises(ValueError, match="famil"):
        st.impossible_controls(["nope"])


NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
FORBIDDEN = [
    (r"\b(reappears|contradicted|inconclusive|not testable here)\b", "names a verdict"),
    (r"(estimate|delta|ci_low|ci_high|bound|rate|_p\b|p_value)[\]\)'\"]*\s*[<>]=?\s*-?\d", "compares an estimate"),
    (r"np\.sign\(", "takes the sign of an estimate"),
    (r"\b1\.96\b", "types a normal quantile"),
]


@pytest.mark.parametrize("name", ["impossible_cheating", "impossible_workflows"])
def test_no_code_cell_computes_a_verdict(name):
    cells = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]
    bad = [f"cell {i}: {what}" for i, c in enumerate(cells) if c["cell_type"] == "code"
           for pat, what in FORBIDDEN if re.search(pat, "".join(c["source"]))]
    assert not bad, bad
    src = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert "_findings(" in src and "_controls(" in src and "testability(" in src


def test_a_single_task_arm_gives_no_interval():
    ep = grid(lambda t, wf, kind: t == 0, n_tasks=3)          # one task per tercile
    imp = ep[ep["kind"] != "original"].reset_index(drop=True)
    est, lo, hi, n = st.rate_difference(imp, "cheated", imp["task_id"] == "T/2", imp["task_id"] == "T/0",
                                        stratify=True, n_draws=100)
    assert est == pytest.approx(100.0) and np.isnan(lo) and np.isnan(hi) and n == 2
    r = verdict(st.cheating_findings(ep, n_draws=100), "Cheating is highest on the easiest")
    assert r.verdict == "inconclusive" and "single task" in r.why


def test_sasst_control_runs_the_uniform_slot_rule():
    c = st.impossible_controls(["sasst"], replicates=6, n_tasks=60, n_draws=200, seed=2)
    assert c["family"].str.contains("SASST").all() and len(c) == 2
    p = c.set_index("measures")["hits"]
    assert p["power"] >= 4 and p["false-positive rate"] <= 2


def test_reminder_harm_sentence_counts_harms_on_originals_only():
    cells = pd.DataFrame({"cohort": ["original", "conflicting"], "harm": [2, 5]})
    assert "abandon 2 solvable task episodes" in st.reminder_harm_sentence(cells)
    one = cells.assign(harm=[1, 0])
    assert "abandon 1 solvable task episode it" in st.reminder_harm_sentence(one)
    none = cells.assign(harm=[0, 7])  # harms on impossible variants are not a cost on solvable tasks
    assert st.reminder_harm_sentence(none).startswith("no solvable task was abandoned")
    assert st.reminder_harm_sentence(cells[cells["cohort"] != "original"]).startswith("no solvable task")
    with pytest.raises(KeyError, match="harm"):
        st.reminder_harm_sentence(cells.drop(columns="harm"))


def test_built_in_claim_takes_its_verdict_from_the_neutral_run():
    """The simulated strict arm cheats less only because AgentParams sets it: with the
    neutral run (arms identical in the agent, the strict arm inert there) the verdict is
    the neutral run's, the simulated -100 pp shown apart as set by the simulation."""
    sim = grid(strict_effect("planted"))
    neu = grid(strict_effect("none"))
    inert = pd.DataFrame([dict(arm=w, factor="strictness", compared_with=BASE, episodes=36, next_action_changed=0.0,
                               code_changed=0.0, outcome_changed=0.0) for w in (STRICT, LENIENT)])
    f = st.cheating_findings(sim, neutral=(neu, inert), n_draws=200)
    r = verdict(f, "A strict prompt lowers cheating")
    assert (r.basis, r.verdict) == ("built in", "not testable here")
    assert "AgentParams.cheat_strictness" in r.built_in and r.simulated[0] == pytest.approx(-100.0)
    t = f.table().set_index("finding").loc["A strict prompt lowers cheating"]
    assert t["neutral"] == st_findings.NEUTRAL_SETTING and "cheat_strictness" in t["built_in"]
    # the shortcut policy's own propensity to cheat: its neutral control is the honest policy
    honest = grid(lambda t, wf, kind: False)
    g = st.cheating_findings(sim, neutral=(neu, inert), honest=honest, n_draws=200)
    c = verdict(g, "Agents cheat on impossible variants")
    assert (c.basis, c.verdict, c.estimate) == ("built in", "inconclusive", 0.0) and c.simulated[0] > 0
    assert c.neutral == st_findings.HONEST_SETTING and "AgentParams.cheat_base" in c.built_in
    # without a neutral run the row still says it is built in, with the simulated verdict
    r0 = verdict(st.cheating_findings(sim, n_draws=200), "A strict prompt lowers cheating")
    assert (r0.basis, r0.verdict) == ("built in", "reappears")
    # every row states a basis; the rounds claim is arithmetic and cannot be contradicted
    assert all(x.basis for x in f.rows)
    rounds = verdict(f, "More feedback rounds raise cheating")
    assert rounds.basis == "arithmetic" and rounds.can_contradict is False
    # the neutral parameters switch off exactly the named effects
    p = st_findings.neutral_params()
    assert set(p.cheat_strictness.values()) == {0.0} and p.cheat_hidden == 0.0 and p.cheat_easy == 0.0
    assert p.p_fix_hidden == p.p_fix_visible and p.reminder_cheat == 0.0 and p.abort_base == float("-inf")
