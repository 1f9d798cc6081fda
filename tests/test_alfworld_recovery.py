"""The ALFWorld recovery harness on the real engine, with a small observation-reading
scripted policy (defined here) -- checks the protocol's invariants, not agent quality."""

import re

import numpy as np
import pandas as pd
import pytest

from agentstudies import recovery as rc
from agentstudies.studies.alfworld import recovery as ar

_ROOM = re.compile(r"Looking quickly around you, you see (.*?)\.(?:\s|$)")
_ON = re.compile(r"(?:On the|In it,|the) ([a-z]+ \d+)?,? ?(?:you see|is open\. In it, you see) (.*?)\.")
_ITEM = re.compile(r"an? ([a-z]+ \d+)")
_GOAL = re.compile(r"Your task is to: (?:put|find|look|examine|clean|heat|cool)?\s*(?:a|an|some|two)?\s*([a-z]+)")
_ARRIVE = re.compile(r"You arrive at ([a-z]+ \d+)\.")


class ReadingPolicy:
    """Scripted (*simulated*) policy acting only on the shown text: visits receptacles in
    the order the room listing gives them, picks up the first object whose class the goal
    names, then goes to a receptacle of the goal's target class and moves it there. It
    asserts that it is shown nothing but the goal and the latest observation."""

    simulated = True
    name = "reading"

    def reset(self, task_id, seed, role="eval"):
        self.receps, self.at, self.holding, self.goal_obj, self.target, self.k = [], None, None, None, None, 0
        self.rng = np.random.default_rng(abs(hash((task_id, seed))) % 2**32)
        self.seen = {}

    def act(self, observation):
        assert set(observation) <= {"goal", "observation"}, sorted(observation)
        text = f"{observation.get('goal', '')}\n{observation.get('observation', '')}"
        m = _ROOM.search(text)
        if m and not self.receps:
            self.receps = _ITEM.findall(m.group(1))
        g = re.search(r"Your task is to: (.*)", text)
        if g and self.goal_obj is None:
            words = re.findall(r"[a-z]+", g.group(1))
            nouns = [w for w in words if w not in {"put", "a", "an", "some", "in", "on", "two", "clean", "hot", "cool",
                                                   "it", "them", "find", "look", "at", "under", "the", "and",
                                                   "examine", "with"}]
            self.goal_obj = nouns[0] if nouns else None
            self.target = nouns[-1] if len(nouns) > 1 else None
        a = _ARRIVE.search(text)
        if a:
            self.at = a.group(1)
        for r, items in re.findall(r"On the ([a-z]+ \d+), you see (.*?)\.", text):
            self.seen[r] = _ITEM.findall(items)
        if "You pick up the" in text:
            self.holding = re.search(r"You pick up the ([a-z]+ \d+)", text).group(1)
        if self.holding is None and self.at and self.goal_obj:
            for o in self.seen.get(self.at, []):
                if o.split()[0] == self.goal_obj:
                    return f"take {o} from {self.at}"
        if self.holding and self.target:
            tgt = [r for r in self.receps if r.split()[0] == self.target]
            if tgt and self.at == tgt[0]:
                return f"move {self.holding} to {self.at}"
            if tgt:
                return f"go to {tgt[0]}"
        if not self.receps:
            return "look"
        self.k = (self.k + 1) % len(self.receps)
        if self.rng.random() < 0.2:
            return "inventory"
        return f"go to {self.receps[self.k]}"


@pytest.fixture(scope="module")
def study():
    pools = ar.cohort_pools({"primary": 1, "mechanism": 1})
    pools = {"primary": pools["primary"][:3], "mechanism": pools["mechanism"][:1]}
    return ar.run_recovery_study(pools, ReadingPolicy(), seed=0, cap_scale=0.5)


def test_tables_and_invariants(study):
    t, p, d = study.tasks, study.paired, study.decisions
    assert len(t) == 4 and t["feasible"].any()
    feas = t[t["feasible"]]
    assert feas["replay_verified"].all()
    # the clean no-recovery branch replays the factual trajectory exactly
    assert feas["clean_matches_factual"].astype(bool).all()
    # every feasible task holds every cell of its cohort's design (validate = balanced)
    rc.validate_paired(p, shared_without=True)
    for cohort, g in p.groupby("cohort"):
        des = ar.COHORT_DESIGNS[cohort]
        assert g.groupby("task_id").size().eq(len(des["conditions"]) * len(des["delays"]) * len(des["operations"])).all()
        assert set(g["task_id"]) == set(feas[feas["cohort"] == cohort]["task_id"])
    # ended tasks carry their outcome and are not intervened on
    ended = p[~p["active"]]
    assert (ended["y_with"] == ended["y_without"]).all()
    # clean no-recovery outcome = factual outcome
    cl = p[p["condition"] == "clean"]
    assert (cl["y_without"].astype(bool) == cl["factual_success"]).all()
    # decision table: 3 router delays x conditions per feasible primary task, finite features
    dp = d[d["cohort"] == "primary"]
    assert len(dp) == 3 * 4 * (feas["cohort"] == "primary").sum()
    assert np.isfinite(dp[study.feature_names].to_numpy(float)).all()
    rc.validate_decisions(dp, study.feature_names)
    # infeasible tasks carry a reason
    assert (t.loc[~t["feasible"], "infeasible_reason"] != "").all()


def test_analysis_identity(study):
    res = rc.analyze_paired(study.analysis_table(), n_draws=50, seed=0, allow_singleton_strata=True)  # a tiny study
    c = res.paired_counts()
    assert ((c["rescue"] - c["harm"]) * 100 == c["delta"] * c["n"]).all() or np.allclose(
        (c["rescue"] - c["harm"]), c["delta"] * c["n"] / 100)


def test_deterministic_and_cohort_pools_disjoint():
    pools = ar.cohort_pools({"primary": 1, "mechanism": 1, "evaluation": 1, "independent": 1})
    ids = [g["task_id"] for v in pools.values() for g in v]
    assert len(ids) == len(set(ids)) == 24
    probs = [g["pddl_problem"] for v in pools.values() for g in v]
    assert len(set(probs)) == 24
    one = {"primary": pools["primary"][1:2]}
    a = ar.run_recovery_study(one, ReadingPolicy(), seed=1, cap_scale=0.5)
    b = ar.run_recovery_study(one, ReadingPolicy(), seed=1, cap_scale=0.5)
    pd.testing.assert_frame_equal(a.paired, b.paired)
    pd.testing.assert_frame_equal(a.decisions, b.decisions)


def test_bad_arguments():
    pools = ar.cohort_pools({"primary": 1})
    with pytest.raises(ValueError, match="unknown condition"):
        ar.run_task(pools["primary"][0], ReadingPolicy(), conditions=("stale-9",))
    with pytest.raises(ValueError, match="cap_scale"):
        ar.run_task(pools["primary"][0], ReadingPolicy(), cap_scale=0)
    with pytest.raises(ValueError, match="no design"):
        ar.run_recovery_study({"other": pools["primary"]}, ReadingPolicy())
    with pytest.raises(ValueError, match="unknown cohort"):
        ar.cohort_pools({"nope": 1})


# ------------------------------------------------------------ paper-shaped tables, plots, artifacts
def _synthetic_result():
    rng = np.random.default_rng(0)
    rows = []
    for cohort, conds, delays, ops in [("primary-factual-success", ("clean", "stale-2"), ar.DELAYS, ("refresh",)),
                                       ("primary-complete", ("clean", "stale-2"), ar.DELAYS, ("refresh",)),
                                       ("mechanism-complete", ("clean", "stale-2"), (0, 4), ar.OPERATIONS)]:
        for t in range(12):
            for c in conds:
                y0 = 1 if cohort == "primary-factual-success" and c == "clean" else int(rng.random() < 0.5)
                for d in delays:
                    for op in ops:
                        y1 = int(rng.random() < (0.8 if c == "stale-2" else 0.6))
                        rows.append(dict(cohort=cohort, task_id=f"t{t}", condition=c, delay=d, operation=op,
                                         y_without=y0, y_with=y1))
    return rc.analyze_paired(pd.DataFrame(rows), n_draws=100, seed=0)


def test_paper_tables_stack_this_run_and_paper():
    res = _synthetic_result()
    tables = ar.RecoveryTables(res)
    assert tables.paper_tables() == ("counts", "delta", "mechanism", "router")
    t1 = tables.table("delta")
    assert t1.attrs["paper"] == "cir" and t1.attrs["table"] == "delta"
    assert list(t1["source"].unique()) == ["this run", "paper"]
    d0 = res.get("delta", cohort="primary-factual-success", condition="clean", delay=0)
    assert t1.loc[(t1["source"] == "this run") & (t1["delay"] == 0), "clean"].iloc[0].startswith(f"{d0['estimate']:+.1f}")
    assert t1.loc[(t1["source"] == "paper") & (t1["delay"] == 0), "clean"].iloc[0].startswith("-6.45")
    t2 = tables.table("counts", cohorts=("primary-complete",))
    paper = t2[t2["source"] == "paper"].set_index("condition")
    assert (paper.loc["clean", "rescue"], paper.loc["clean", "harm"]) == (2, 6)
    assert (paper.loc["stale-2", "rescue"], paper.loc["stale-2", "harm"]) == (17, 10)
    ours = t2[t2["source"] == "this run"].set_index("condition")
    cell = res.cells[(res.cells["cohort"] == "primary-complete") & (res.cells["delay"] == 0)].set_index("condition")
    assert ours.loc["stale-2", "rescue"] == cell.loc["stale-2", "rescue"]
    t3 = tables.table("mechanism")
    assert set(t3.loc[t3["source"] == "this run", "operation"]) == set(ar.OPERATIONS)
    sh = res.shared_rescues("refresh", "ablated").set_index(["cohort", "condition", "delay"])
    row = t3[(t3["source"] == "this run") & (t3["operation"] == "ablated") & (t3["condition"] == "stale-2")]
    assert row["rescues shared with full"].iloc[0] == sh.loc[("mechanism-complete", "stale-2", 4), "shared"]
    f = ar.recovery_findings(res, n_draws=50, seed=0).table().set_index("finding")
    v = res.get("delta", cohort="primary-factual-success", condition="clean", delay=0)
    row = f.loc["Immediate refresh harms clean factual-success trajectories"]
    assert (row["ci_low"], row["ci_high"]) == (v["ci_low"], v["ci_high"])
    assert row["paper"].startswith("-6.45")  # read from data/paper, not typed
    with pytest.raises(ValueError, match="evaluation"):
        tables.table("router")  # no router evaluation given
    with pytest.raises(KeyError, match="cir"):
        tables.table(3)


def test_plots_label_and_shape():
    import matplotlib

    matplotlib.use("Agg")
    from agentstudies.recovery import plots

    res = _synthetic_result()
    fig = plots.plot_delta_by_delay(res, "primary-complete", label="simulated agent")
    assert "simulated agent" in fig.axes[0].get_title()
    assert len(fig.axes[0].lines) >= 2
    with pytest.raises(KeyError, match="cohorts"):
        plots.plot_delta_by_delay(res, "nope")


def test_branches_share_prefix_and_apply_the_operation():
    pools = ar.cohort_pools({"mechanism": 1}, task_types=["pick_and_place_simple", "look_at_obj_in_light"])
    for game in pools["mechanism"]:
        out = ar.run_task(game, ReadingPolicy(), seed=0, conditions=("clean", "stale-2"), delays=(0, 2),
                          operations=ar.OPERATIONS, cap_scale=0.5, trace=True)
        if not out["task"]["feasible"]:
            continue
        t0 = out["task"]["t0"]
        base = {b["condition"]: b["actions"] for b in out["branches"] if b["delay"] is None}
        for b in out["branches"]:
            if b["delay"] is None or not b["actions"]:
                continue
            k = t0 + b["delay"]
            if len(base[b["condition"]]) < k:
                continue  # the no-recovery branch ended first: carried, not forked
            assert b["actions"][:k] == base[b["condition"]][:k]  # shared pre-branch history
            if b["operation"] in ("refresh", "ablated"):
                assert b["actions"][k] == "look"
            else:
                assert len(b["actions"]) <= k or b["actions"][k] != "look" or base[b["condition"]][k:k + 1] == ["look"]
            if b["operation"] == "ablated":
                assert ar.ABLATED_TEXT in b["shown"] and "You are facing" not in b["shown"].split("\n")[-1]
            if b["operation"] == "replan":
                assert b["shown"].endswith(ar.REPLAN_TEXT)
        # the forks of one (condition, delay) start from one engine state
        keys = {}
        for b in out["branches"]:
            if b["fork_key"] is not None:
                keys.setdefault((b["condition"], b["delay"]), set()).add(b["fork_key"])
        assert all(len(v) == 1 for v in keys.values())
        return
    pytest.skip("no feasible mechanism task in this tiny pool")


def test_look_reply_formats():
    raw = "You are facing the countertop 1, and drawer 2. Next to it, you see nothing."
    assert ar.format_reply(raw, "raw") == raw
    assert ar.format_reply(raw, "arrival") == "You arrive at countertop 1."
    assert ar.format_reply("You are facing the sinkbasin 1. Next to it, you see nothing.", "arrival") == \
        "You arrive at sinkbasin 1."
    with pytest.raises(ValueError, match="look_format"):
        ar.format_reply(raw, "fancy")
    pools = ar.cohort_pools({"primary": 1}, task_types=["pick_and_place_simple"])
    with pytest.raises(ValueError, match="look_format"):
        ar.run_task(pools["primary"][0], ReadingPolicy(), look_format="fancy")


def test_step_cache_leaves_every_fork_unchanged():
    """The worker env's step cache is exact: the whole protocol (every branch's actions,
    the paired and decision rows) is the same with a plain env that steps the engine."""
    from agentstudies.agents.alfworld import LearnedAlfworldPolicy
    from agentstudies.envs.alfworld.env import AlfworldEnv

    pools = ar.cohort_pools({"mechanism": 1}, task_types=["pick_and_place_simple", "look_at_obj_in_light"])
    policy = LearnedAlfworldPolicy.load("RL", greedy=True)
    kw = dict(seed=0, conditions=ar.CONDITIONS, delays=ar.DELAYS, operations=ar.OPERATIONS, cap_scale=0.5,
              look_format="arrival", trace=True)
    from agentstudies.studies.alfworld.recovery.testing import cached_env as harness_env, worker_env

    cached_env = harness_env(32)
    assert cached_env.step_cache
    runs = {"cached": [ar.run_task(g, policy, **kw) for g in pools["mechanism"]]}
    cached_env.release_snapshots()
    with worker_env(AlfworldEnv(budget=32)):
        runs["plain"] = [ar.run_task(g, policy, **kw) for g in pools["mechanism"]]
    assert any(r["task"]["feasible"] for r in runs["cached"])
    for a, b in zip(runs["cached"], runs["plain"]):
        assert pd.Series(a["task"]).equals(pd.Series(b["task"]))
        assert a["paired"] == b["paired"] and a["decisions"] == b["decisions"] and a["branches"] == b["branches"]


# ------------------------------------------------------------------ findings that can fail
def _synthetic_paired(kind, n=40, seed=0):
    """Paired table of the factual-success cohort: 'planted' = clean harm + stale rescue at
    every delay, 'reversed' = clean rescue... (clean fails) + stale harm, 'none' = no change."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n):
        for cond in ("clean", "stale-2"):
            y0 = 1 if cond == "clean" or kind == "reversed" else int(rng.random() < 0.5)
            if kind == "reversed" and cond == "clean":
                y0 = 0
            for d in ar.DELAYS:
                u = rng.random()
                if kind == "none":
                    y1 = y0
                elif kind == "planted":
                    y1 = (0 if u < 0.3 else 1) if cond == "clean" else (1 if y0 == 0 and u < 0.6 else y0)
                else:  # reversed: refresh rescues clean failures and harms stale successes
                    y1 = (1 if u < 0.3 else 0) if cond == "clean" else (0 if u < 0.6 else 1)
                rows.append(dict(cohort="primary-factual-success", task_id=f"t{t:02d}", condition=cond, delay=d,
                                 operation="refresh", y_without=y0, y_with=y1))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("kind, expected", [("planted", "reappears"), ("none", "inconclusive"),
                                            ("reversed", "contradicted")])
def test_recovery_findings_on_known_truths(kind, expected):
    res = rc.analyze_paired(_synthetic_paired(kind), n_draws=300, seed=1)
    f = ar.recovery_findings(res, n_draws=300, seed=1)
    t = f.table().set_index("finding")
    assert t.loc["Immediate refresh harms clean factual-success trajectories", "verdict"] == expected
    for d in ar.DELAYS:
        assert t.loc[f"Stale − clean > 0 at d = {d} (factual-success cohort)", "verdict"] == expected
    # cells this table lacks are inconclusive with a NaN interval, never a verdict
    assert t.loc["Full refresh helps under two-step stale at d = 4 (mechanism cohort)", "verdict"] == "inconclusive"
    rep = t[t["verdict"] == "reappears"].dropna(subset=["ci_low"])
    assert ((rep["ci_low"] > 0) | (rep["ci_high"] < 0)).all()


def test_recovery_findings_inert_arm_is_not_testable():
    res = rc.analyze_paired(_synthetic_paired("planted"), n_draws=100, seed=1)
    testab = pd.DataFrame([dict(cohort="primary", operation="refresh", condition=c, delay=d, forks=80, active=80,
                                action_changed=0.0 if c == "clean" and d == 0 else 0.5, next_action_changed=0.0,
                                outcome_changed=0.0) for c in ("clean", "stale-2") for d in ar.DELAYS])
    t = ar.recovery_findings(res, testab=testab, n_draws=100, seed=1).table().set_index("finding")
    row = t.loc["Immediate refresh harms clean factual-success trajectories"]
    assert row["verdict"] == "not testable here" and "0 of 80 forks" in row["why"]
    # 0 of 80: exact one-sided 95% upper bound 1 - 0.05 ** (1 / 80) = 0.037, under 0.05
    assert f"{1 - 0.05 ** (1 / 80):.3f}" in row["why"] and row["basis"] == "measured"
    # 0 of 6 forks is no measurement of inertness (bound 0.39): the interval rule decides
    few = ar.recovery_findings(res, testab=testab.assign(forks=6, active=6), n_draws=100,
                               seed=1).table().set_index("finding")
    assert few.loc["Immediate refresh harms clean factual-success trajectories", "verdict"] != "not testable here"
    # a contrast rests on both arms: testable while either changed something
    assert t.loc["Stale − clean > 0 at d = 0 (factual-success cohort)", "verdict"] == "reappears"
    testab.loc[testab["delay"] == 1, "action_changed"] = 0.0
    t = ar.recovery_findings(res, testab=testab, n_draws=100, seed=1).table().set_index("finding")
    assert t.loc["Stale − clean > 0 at d = 1 (factual-success cohort)", "verdict"] == "not testable here"
    assert t.loc["Stale − clean > 0 at d = 2 (factual-success cohort)", "verdict"] == "reappears"


def test_recovery_findings_honour_level():
    # a weak planted effect: found at level 0.5, not at 0.99 (intervals from analyze_paired itself;
    # 400 draws: at least 2 / (1 - level))
    tab = _synthetic_paired("planted", n=12, seed=3)
    lo = ar.recovery_findings(rc.analyze_paired(tab, level=0.5, n_draws=400, seed=1), n_draws=400, seed=1).table()
    hi = ar.recovery_findings(rc.analyze_paired(tab, level=0.99, n_draws=400, seed=1), n_draws=400, seed=1).table()
    assert (lo["rule"].str.startswith("50% CI")).any() and (hi["rule"].str.startswith("99% CI")).any()
    assert (lo["verdict"] == "reappears").sum() > (hi["verdict"] == "reappears").sum()


def test_testability_is_the_share_of_changed_forks(study):
    t = ar.testability(study)
    assert tuple(t.columns) == ar.TESTABILITY_COLUMNS
    p = study.paired
    for r in t.itertuples(index=False):
        g = p[(p["cohort"] == r.cohort) & (p["operation"] == r.operation) & (p["condition"] == r.condition)
              & (p["delay"] == r.delay)]
        assert r.forks == len(g) and r.active == int(g["active"].sum())
        assert np.isclose(r.action_changed, g["changed"].astype(bool).sum() / len(g))
        assert np.isclose(r.outcome_changed, (g["y_with"] != g["y_without"]).sum() / len(g))
        assert r.next_action_changed <= r.action_changed  # a changed next action is a changed action
    # an ended branch changes nothing
    assert not p.loc[~p["active"], ["changed", "changed_next"]].any().any()


def test_horizon_features_encode_the_factual_length(study):
    """The leak measured: at every decision point steps_frac = (ceil(0.25 L) + d) / action_cap,
    a function of the factual run's full length L (post-decision), so it can separate
    factual success (short runs) from failure (runs to the cap)."""
    import math

    d = study.decisions.merge(study.tasks[["task_id", "factual_actions"]], on="task_id")
    cap = max(1, int(round(64 * 0.5)))
    want = [(math.ceil(0.25 * L) + k) / cap for L, k in zip(d["factual_actions"], d["delay"])]
    assert np.allclose(d["steps_frac"], want)
    leak = ar.horizon_leak(study)
    assert set(ar.HORIZON_FEATURES) <= set(leak["feature"])
    # the AUC equals a brute-force pairwise count
    g = study.decisions[(study.decisions["cohort"] == "primary") & (study.decisions["condition"] == "clean")
                        & (study.decisions["delay"] == 1)]
    y = g["factual_success"].astype(bool).to_numpy()
    if y.any() and (~y).any():
        x = g["steps_frac"].to_numpy()
        pairs = [(a > b) + 0.5 * (a == b) for a in x[y] for b in x[~y]]
        got = leak[(leak["feature"] == "steps_frac") & (leak["delay"] == 1)]["auc"].iloc[0]
        assert np.isclose(got, np.mean(pairs))


def test_recovery_controls_power_and_false_positives():
    c = ar.recovery_controls(replicates=30, n_tasks=60, n_draws=200, seed=0)
    assert set(c["measures"]) == {"power", "false-positive rate"}
    assert c["subject"].str.contains("planted|null").all()
    power = c[c["planted"]]
    null = c[~c["planted"]]
    assert (power["rate"] >= 0.8).all() and (null["rate"] <= 0.1).all()
    assert (power["ci_low"] > 0.5).all()


def test_mechanism_findings_full_minus_replan():
    """Full refresh rescues half the failing stale-2 trajectories at d = 4, replan-only and the
    content-ablated refresh change nothing: 'full beats replan-only' reappears with the
    hand-computed mean difference; the ablated arm, measured inert, is not testable."""
    rng = np.random.default_rng(4)
    rows = []
    for t in range(40):
        for cond in ("clean", "stale-2"):
            y0 = int(cond == "clean" or rng.random() < 0.3)
            for d in (0, 4):
                rescue = int(rng.random() < 0.5)
                for op in ar.OPERATIONS:
                    y1 = 1 if (op == "refresh" and cond == "stale-2" and d == 4 and y0 == 0 and rescue) else y0
                    rows.append(dict(cohort="mechanism-complete", task_id=f"m{t:02d}", condition=cond, delay=d,
                                     operation=op, y_without=y0, y_with=y1))
    tab = pd.DataFrame(rows)
    res = rc.analyze_paired(tab, n_draws=300, seed=0)
    testab = pd.DataFrame([dict(cohort="mechanism", operation=op, condition="stale-2", delay=4, forks=80, active=80,
                                action_changed=0.0 if op == "ablated" else 0.4, next_action_changed=0.0,
                                outcome_changed=0.0) for op in ar.OPERATIONS])
    t = ar.recovery_findings(res, testab=testab, n_draws=300, seed=0).table().set_index("finding")
    s = tab[(tab["condition"] == "stale-2") & (tab["delay"] == 4)].pivot(index="task_id", columns="operation",
                                                                        values="y_with")
    row = t.loc["Full refresh beats replan-only (stale-2, d = 4)"]
    assert np.isclose(row["estimate"], 100 * (s["refresh"] - s["replan"]).mean())
    assert row["verdict"] == "reappears" and row["ci_low"] <= row["estimate"] <= row["ci_high"]
    assert t.loc["Content-ablated refresh keeps a positive effect (stale-2, d = 4)", "verdict"] == "not testable here"
    assert t.loc["Full refresh helps under two-step stale at d = 4 (mechanism cohort)", "verdict"] == "reappears"


def test_router_findings_from_the_evaluation():
    """CIR rows read the evaluation's own intervals; an inert evaluation arm (measured)
    makes them not testable; 'no clean harm' is the paper's exact criterion."""
    from test_recovery_router import FEATS, synth

    fit = rc.fit_router(synth(30, 0), FEATS, seed=3)
    test = synth(20, 9, prefix="e")
    ev = rc.evaluate_policies(fit.routers, rc.OutcomeVault(test, FEATS), n_draws=200, seed=0, sign_flip_draws=500)
    res = rc.analyze_paired(_synthetic_paired("planted", n=10), n_draws=50, seed=1)
    t = ar.recovery_findings(res, ev, n_draws=200, seed=0).table().set_index("finding")
    row, want = t.loc["CIR raises success over never-refresh"], ev.table.set_index(["policy", "condition"]).loc[("cir", "all")]
    assert (row["estimate"], row["ci_low"], row["ci_high"]) == (want["delta"], want["ci_low"], want["ci_high"])
    harms = int(ev.clean_harm.set_index("policy").loc["cir", "harms"])
    assert t.loc["CIR harms no clean trajectory", "verdict"] == ("reappears" if harms == 0 else "contradicted")
    # CIR vs rate-matched: the per-task mean difference, computed by hand
    e = ev.episodes
    w = e.pivot_table(index=["task_id", "condition"], columns="policy", values="y_policy")
    diff = 100 * (w["cir"] - w["rate-matched"]).groupby(level="task_id").mean()
    assert np.isclose(t.loc["CIR beats the rate-matched baseline", "estimate"], diff.mean())
    inert = pd.DataFrame([dict(cohort="evaluation", operation="refresh", condition=c, delay=d, forks=20, active=20,
                               action_changed=0.0, next_action_changed=0.0, outcome_changed=0.0)
                          for c in ar.CONDITIONS for d in (1, 2, 4)])
    t = ar.recovery_findings(res, ev, inert, n_draws=50, seed=0).table().set_index("finding")
    router_rows = [f for f in t.index if f.startswith("CIR")]
    assert len(router_rows) == 6 and (t.loc[router_rows, "verdict"] == "not testable here").all()


def test_router_findings_not_testable_when_no_outcome_can_change():
    """Refresh changed actions but never an outcome on the evaluation pool (the measured
    quick-profile situation): no router can gain or harm, so its findings are not testable."""
    from test_recovery_router import FEATS, synth

    fit = rc.fit_router(synth(30, 0), FEATS, seed=3)
    ev = rc.evaluate_policies(fit.routers, rc.OutcomeVault(synth(12, 9, prefix="e"), FEATS), n_draws=50, seed=0,
                              sign_flip_draws=200)
    res = rc.analyze_paired(_synthetic_paired("planted", n=10), n_draws=50, seed=1)
    testab = pd.DataFrame([dict(cohort="evaluation", operation="refresh", condition=c, delay=d, forks=30, active=30,
                                action_changed=0.5, next_action_changed=0.25, outcome_changed=0.0)
                           for c in ar.CONDITIONS for d in (1, 2, 4)])
    t = ar.recovery_findings(res, ev, testab, n_draws=50, seed=0).table().set_index("finding")
    rows = t[t.index.str.startswith("CIR")]
    assert (rows["verdict"] == "not testable here").all()
    assert rows["why"].str.contains("changed the outcome in 0 of 360").sum() == 5


# ------------------------------------------------------------------ the stale-list rule
class ListReadingPolicy(ReadingPolicy):
    """ReadingPolicy that declares it reads the admissible list and logs every (shown
    text, shown list) pair in a class-level log (shared by its deep copies)."""

    admissible = True
    log: list = []

    def act(self, observation):
        ListReadingPolicy.log.append((observation["observation"], tuple(observation["admissible_commands"])))
        return super().act({k: observation[k] for k in ("goal", "observation")})


def _true_lists(game, actions, seed, action_cap):
    """Admissible list after each of ``actions`` (index 0: after reset), by stepping a fresh engine."""
    from agentstudies.envs.alfworld.env import AlfworldEnv
    from agentstudies.parallel import keyed_seed

    env = AlfworldEnv(budget=action_cap)
    try:
        env.load_game(game)
        env.reset(int(keyed_seed(seed, "env", str(game["task_id"])).generate_state(1)[0] % (2 ** 31)), action_cap)
        lists, texts = [tuple(env.admissible)], [env.observation]
        for a in actions:
            env.step(a)
            lists.append(tuple(env.admissible))
            texts.append(env.observation)
        return lists, texts
    finally:
        env.close()


def test_stale_condition_shows_the_stale_list_and_refresh_the_current_one():
    pools = ar.cohort_pools({"primary": 1}, task_types=["pick_and_place_simple", "look_at_obj_in_light",
                                                       "pick_clean_then_place_in_recep"])
    kw = dict(seed=0, conditions=("clean", "stale-2"), delays=(0,), operations=("refresh", "ablated"),
              router_delays=(), cap_scale=0.5, trace=True)
    checked = 0
    for game in pools["primary"]:
        out = {}
        for mode in ar.STALE_ADMISSIBLE:
            ListReadingPolicy.log = []
            out[mode] = (ar.run_task(game, ListReadingPolicy(), stale_admissible=mode, **kw), list(ListReadingPolicy.log))
        res, log = out["stale"]
        if not res["task"]["feasible"]:
            continue
        t0 = res["task"]["t0"]
        base = {b["condition"]: b for b in res["branches"] if b["delay"] is None}
        lists, texts = _true_lists(game, base["clean"]["actions"][:t0], 0, 32)
        if lists[t0 - 2] == lists[t0]:
            continue  # the two states share a list: nothing distinguishes the rules here
        stale = base["stale-2"]
        assert stale["admissible_shown"] == list(lists[t0 - 2])  # stale text comes with its own list
        assert base["clean"]["admissible_shown"] == list(lists[t0])
        assert (texts[t0 - 2], lists[t0 - 2]) in log  # ... and that is what the agent was given
        forks = {(b["condition"], b["operation"]): b for b in res["branches"] if b["delay"] == 0}
        assert forks[("stale-2", "refresh")]["admissible_shown"] == list(lists[t0])  # refresh: current list
        assert forks[("stale-2", "ablated")]["admissible_shown"] == list(lists[t0 - 2])  # hidden reply: list kept
        cur = {b["condition"]: b for b in out["current"][0]["branches"] if b["delay"] is None}
        assert cur["stale-2"]["admissible_shown"] == list(lists[t0])  # the ablation: the true state's list
        assert (texts[t0 - 2], lists[t0]) in out["current"][1]
        checked += 1
        break
    assert checked >= 1, "no feasible task whose stale and current lists differ"
    with pytest.raises(ValueError, match="stale_admissible"):
        ar.run_task(pools["primary"][0], ListReadingPolicy(), stale_admissible="fresh")


# ------------------------------------------------------------------ the Fork harness
def test_fork_rows_match_the_branches_they_come_from():
    """Every paired row is the Fork of its branch: y_with is the traced branch's outcome
    (re-stepped on a fresh engine), an ended branch carries y_without, changed / changed_next
    compare the branch's own actions with the no-recovery branch's."""
    from agentstudies.envs.alfworld.env import AlfworldEnv
    from agentstudies.parallel import keyed_seed

    f = ar.Fork.carried(True, {})
    assert (f.y_with, f.active, f.changed, f.changed_next) == (True, False, False, False)
    with pytest.raises(AttributeError):
        f.y_with = False  # frozen
    pools = ar.cohort_pools({"mechanism": 1}, task_types=["pick_and_place_simple", "look_at_obj_in_light"])
    game = next(g for g in pools["mechanism"])
    out = ar.run_task(game, ReadingPolicy(), seed=0, conditions=("clean", "stale-2"), delays=(0, 2),
                      operations=("refresh", "replan"), router_delays=(), cap_scale=0.5, trace=True)
    if not out["task"]["feasible"]:
        pytest.skip("the first task is not prefix-feasible")
    t0 = out["task"]["t0"]
    env = AlfworldEnv(budget=32)
    env.load_game(game)
    seed = int(keyed_seed(0, "env", str(game["task_id"])).generate_state(1)[0] % (2 ** 31))

    def won(actions):
        env.reset(seed, 32)
        for a in actions:
            env.step(a)
        return int(env.won)

    base = {b["condition"]: b["actions"] for b in out["branches"] if b["delay"] is None}
    forks = {(b["condition"], b["delay"], b["operation"]): b for b in out["branches"] if b["delay"] is not None}
    try:
        for row in out["paired"]:
            y0 = won(base[row["condition"]])
            assert row["y_without"] == y0
            b = forks.get((row["condition"], row["delay"], row["operation"]))
            if b is None:  # the no-recovery branch ended first: carried
                assert not row["active"] and row["y_with"] == y0 and not row["changed"]
                continue
            assert row["active"] and row["y_with"] == won(b["actions"])
            k = t0 + row["delay"]
            own = b["actions"][:k] + b["actions"][k + (1 if row["operation"] == "refresh" else 0):]
            assert row["changed"] == (own != base[row["condition"]])
            assert row["changed_next"] == (own[k:k + 1] != base[row["condition"]][k:k + 1])
    finally:
        env.close()


def test_archived_run_sentences_count_verdicts_and_changed_forks():
    findings = pd.DataFrame({"verdict": ["reappears", "inconclusive", "inconclusive", "not testable here"]})
    testab = pd.DataFrame({"operation": ["refresh", "refresh", "ablated"], "forks": [10, 30, 50],
                           "next_action_changed": [0.5, 0.1, 1.0], "outcome_changed": [0.1, 0.0, 1.0]})
    s = ar.archived_run_sentences(findings, testab)
    assert s["findings"] == ("Of 4 paper findings, 1 reappears, 0 are contradicted, 2 are inconclusive "
                             "and 1 is not testable here.")
    # refresh only: 5 + 3 = 8 of 40 next actions, 1 + 0 outcomes; the ablated rows are not counted
    assert s["testability"] == ("A refresh changed the agent's next action in 8 of 40 refresh forks (20.0 %) "
                                "and the outcome in 1 (2.5 %).")
    with pytest.raises(ValueError, match="unknown verdict"):
        ar.archived_run_sentences(pd.DataFrame({"verdict": ["maybe"]}), testab)
    with pytest.raises(KeyError, match="forks"):
        ar.archived_run_sentences(findings, testab.drop(columns="forks"))
