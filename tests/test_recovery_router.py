"""CIR router: pre-decision features, T-learner models, freeze / vault guard, evaluation."""

import numpy as np
import pandas as pd
import pytest

from agentstudies import recovery as rc

FEATS = ["x1", "x2", "x3"]
CONDS = ["clean", "stale-1", "stale-2", "missing"]


def synth(n_tasks, seed, prefix="t"):
    """Decision table of a toy DGP: x1 signals a wrong observation, x2 the task's skill;
    refresh rescues two-step stale trajectories and occasionally harms clean ones."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_tasks):
        skill = rng.normal()
        for c in CONDS:
            wrong = c != "clean"
            y0 = int(rng.random() < 1 / (1 + np.exp(-(skill + (1.5 if not wrong else -0.3)))))
            for d in (1, 2, 4):
                if c == "stale-2":
                    y1 = int(rng.random() < 0.85)
                elif not wrong:
                    y1 = y0 if rng.random() < 0.9 else 0
                else:
                    y1 = y0 if rng.random() < 0.7 else int(rng.random() < 0.6)
                rows.append(dict(task_id=f"{prefix}{t:03d}", condition=c, delay=d, y_without=y0, y_with=y1,
                                 x1=float(wrong) + rng.normal(0, 0.5), x2=skill + rng.normal(0, 0.5),
                                 x3=rng.normal()))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def fitted():
    return rc.fit_router(synth(40, 0), FEATS, seed=3)


# ------------------------------------------------------------ features
def transcript():
    return [
        dict(action="go to countertop 1", observation="You arrive at countertop 1. On the countertop 1, you see a mug 1."),
        dict(action="take mug 1 from countertop 1", observation="You pick up the mug 1 from the countertop 1."),
        dict(action="take mug 1 from countertop 1", observation="Nothing happens."),
        dict(action="go to sinkbasin 1", observation="You pick up the mug 1 from the countertop 1."),  # stale
        dict(action="clean mug 1 with sinkbasin 1", observation="You clean the mug 1 using the sinkbasin 1."),
        dict(action="go to coffeemachine 1", observation="You arrive at coffeemachine 1."),
    ]


def test_features_hand_worked():
    goal = "Your task is to: put a clean mug in coffeemachine."
    f = rc.decision_features(transcript(), 4, goal=goal, initial_observation="You are in the middle of a room.",
                             window=4, turn_cap=49, action_cap=64)
    assert list(f) == list(rc.FEATURE_NAMES)
    assert f["action_repeat"] == pytest.approx(1 / 4)          # turn 3 repeats turn 2
    assert f["action_distinct"] == pytest.approx(3 / 4)
    assert f["noop_rate"] == pytest.approx(1 / 4)
    assert f["obs_seen_before"] == 1.0                          # turn 4 shows turn 2's text again
    assert f["obs_novelty_rate"] == pytest.approx(3 / 4)
    assert f["consistency_last"] == pytest.approx(0.0)         # "sinkbasin 1" vs a mug/countertop text
    # goal words {clean, mug, coffeemachine}; actions so far name mug only
    assert f["progress_goal_words"] == pytest.approx(1 / 3)
    assert f["steps_frac"] == pytest.approx(4 / 64)
    assert f["turns_left_frac"] == pytest.approx(1 - 4 / 49)


def test_features_ignore_everything_after_the_decision_point():
    base = transcript()
    rng = np.random.default_rng(0)
    for t in range(len(base) + 1):
        ref = rc.decision_features(base, t, goal="put a clean mug in coffeemachine", initial_observation="start")
        for _ in range(5):
            pert = [dict(x) for x in base[:t]]
            for _k in range(rng.integers(0, 4) + len(base) - t):
                pert.append(dict(action=f"junk {rng.integers(1e6)}", observation="x" * int(rng.integers(1, 500)),
                                 reasoning="zzz"))
            assert rc.decision_features(pert, t, goal="put a clean mug in coffeemachine",
                                        initial_observation="start") == ref


def test_features_bad_t():
    with pytest.raises(ValueError, match="decision point"):
        rc.decision_features(transcript(), 7)


# ------------------------------------------------------------ models and rule
def test_t_learner_models_match_sklearn_pipeline(fitted):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    tr = synth(40, 0)
    X = tr[FEATS].to_numpy()
    cir = fitted.routers["cir"]
    sc = cir.scores(tr)
    for col, y in [("p_err", (tr["condition"] != "clean").astype(int)), ("p0", tr["y_without"]), ("p1", tr["y_with"])]:
        pipe = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=5000)).fit(X, y)
        assert np.allclose(sc[col], pipe.predict_proba(X)[:, 1], atol=1e-5)
    assert np.allclose(sc["s_R"], (1 - sc["p0"]) * sc["p1"])
    assert np.allclose(sc["u"], sc["s_R"] - 2 * sc["p0"] * (1 - sc["p1"]))


def test_rule_first_trigger_at_most_once(fitted):
    cir = fitted.routers["cir"]
    ev = synth(15, 9, "e")
    dec = cir.decide(ev.drop(columns=["y_without", "y_with"]))
    sc = cir.scores(ev)
    th = cir.thresholds
    ok = (sc["p_err"] >= th["alpha"]) & (sc["fail"] >= th["beta"]) & (sc["u"] >= th["gamma"])
    ev = ev.assign(ok=ok)
    for (task, cond), g in ev.groupby(["task_id", "condition"]):
        g = g.sort_values("delay")
        first = next((int(d) for d, k in zip(g["delay"], g["ok"]) if k), None)
        row = dec[(dec["task_id"] == task) & (dec["condition"] == cond)].iloc[0]
        assert bool(row["intervene"]) == (first is not None)
        if first is not None:
            assert int(row["delay"]) == first
    assert len(dec) == 15 * 4  # one decision per trajectory


def test_oof_selection_respects_clean_harm_limit(fitted):
    sel = fitted.selection.set_index("router")
    assert (sel["oof_clean_harm"] <= 0.02 + 1e-12).all()
    assert sel.loc["never", "oof_gain"] == 0
    # rate-matched: its OOF intervention rate is the feasible one closest to CIR's
    assert abs(sel.loc["rate-matched", "oof_rate"] - sel.loc["cir", "oof_rate"]) <= \
        abs(sel.loc["anomaly", "oof_rate"] - sel.loc["cir", "oof_rate"]) + 1e-12


def test_inactive_points_never_trigger(fitted):
    ev = synth(6, 4, "e")
    ev["active"] = ev["delay"] < 2
    ev.loc[~ev["active"], "y_with"] = ev.loc[~ev["active"], "y_without"]
    dec = fitted.routers["anomaly"].decide(ev.drop(columns=["y_without", "y_with"]))
    assert dec["delay"].dropna().isin([1]).all()


# ------------------------------------------------------------ freeze and vault
def test_outcomes_cannot_be_read_before_the_freeze(fitted, tmp_path):
    ev = synth(10, 5, "e")
    vault = rc.OutcomeVault(ev, FEATS)
    assert "y_with" not in vault.features.columns
    with pytest.raises(rc.OutcomesSealedError, match="sealed"):
        vault.outcomes
    with pytest.raises(rc.OutcomesSealedError, match="freeze"):
        vault.unseal(object())
    cir = fitted.routers["cir"]
    p = cir.write(tmp_path / "freeze.json")
    assert cir.sha256 in p.read_text()
    out = vault.unseal(cir, fitted.routers["never"])
    assert len(out) == len(ev)
    assert vault.outcomes.shape == ev.shape
    # a router retuned after the outcomes were read cannot be evaluated on this pool
    retuned = rc.FrozenRouter.build("cir", FEATS, cir.models, dict(cir.thresholds, alpha=0.0), cir.lam,
                                    cir.candidate_delays, cir.clean)
    with pytest.raises(rc.OutcomesSealedError, match="already read"):
        vault.unseal(retuned)


def test_tampering_after_freeze_is_detected(fitted):
    import copy

    cir = copy.deepcopy(fitted.routers["cir"])
    cir.verify()
    cir.thresholds["alpha"] = 0.0  # mutate the frozen thresholds in place
    with pytest.raises(rc.OutcomesSealedError, match="modified after the freeze"):
        cir.verify()
    with pytest.raises(rc.OutcomesSealedError):
        rc.evaluate_policies({"cir": cir}, rc.OutcomeVault(synth(5, 1, "e"), FEATS), n_draws=40)


def test_hash_is_deterministic():
    a = rc.fit_router(synth(20, 2), FEATS, seed=1)
    b = rc.fit_router(synth(20, 2), FEATS, seed=1)
    assert {k: r.sha256 for k, r in a.routers.items()} == {k: r.sha256 for k, r in b.routers.items()}


# ------------------------------------------------------------ evaluation
def test_evaluation_matches_direct_computation(fitted):
    ev = synth(25, 7, "e")
    res = rc.evaluate_policies(fitted.routers, rc.OutcomeVault(ev, FEATS), n_draws=200, seed=2)
    for name, r in fitted.routers.items():
        dec = r.decide(ev.drop(columns=["y_without", "y_with"])).set_index(["task_id", "condition"])
        per_task = {}
        tot = dict(y0=0, yp=0, R=0, H=0, n=0, k=0)
        clean_h = 0
        for (task, cond), g in ev.groupby(["task_id", "condition"]):
            y0 = int(g["y_without"].iloc[0])
            row = dec.loc[(task, cond)]
            yp = int(g.loc[g["delay"] == int(row["delay"]), "y_with"].iloc[0]) if row["intervene"] else y0
            per_task[task] = per_task.get(task, 0) + yp - y0
            tot["y0"] += y0
            tot["yp"] += yp
            tot["R"] += (y0 == 0) & (yp == 1)
            tot["H"] += (y0 == 1) & (yp == 0)
            tot["n"] += 1
            tot["k"] += bool(row["intervene"])
            clean_h += (cond == "clean") & (y0 == 1) & (yp == 0)
        allrow = res.table[(res.table["policy"] == name) & (res.table["condition"] == "all")].iloc[0]
        assert allrow["delta"] == pytest.approx(100 * (tot["yp"] - tot["y0"]) / tot["n"])
        assert (allrow["rescue"], allrow["harm"], allrow["interventions"]) == (tot["R"], tot["H"], tot["k"])
        assert allrow["rescue"] - allrow["harm"] == pytest.approx(allrow["delta"] * allrow["n"] / 100)
        p = rc.sign_flip_test(np.array([per_task[t] for t in sorted(per_task)])).p_value
        assert allrow["sign_flip_p"] == pytest.approx(p)
        ch = res.clean_harm.set_index("policy").loc[name]
        assert ch["harms"] == clean_h and ch["estimate"] == pytest.approx(100 * clean_h / 25)
        assert ch["cp_low"] <= ch["estimate"] <= ch["cp_high"]
    never = res.table[res.table["policy"] == "never"]
    assert (never["delta"] == 0).all() and (never["interventions"] == 0).all()
    assert "clean_harm_rate" in set(res.to_frame()["estimand"])


def test_cate_router_under_the_same_cap(fitted):
    cate, m = rc.fit_cate_router(synth(40, 0), FEATS, seed=3, base=fitted.routers["cir"])
    assert cate.kind == "cate" and m["clean_harm"] <= 0.02 + 1e-12
    cate.verify()
    res = rc.evaluate_policies({"cir": fitted.routers["cir"], "cate": cate}, rc.OutcomeVault(synth(10, 8, "e"), FEATS),
                               n_draws=50)
    assert set(res.table["policy"]) == {"cir", "cate"}


def test_bad_decision_table():
    tr = synth(3, 0)
    with pytest.raises(KeyError, match="x9"):
        rc.fit_router(tr, ["x9"])
    bad = tr.copy()
    bad.loc[4, "x1"] = np.nan
    with pytest.raises(ValueError, match="row 4 .*'x1'"):
        rc.fit_router(bad, FEATS)
    bad = tr.drop(index=5)
    with pytest.raises(ValueError, match="lacks some of the candidate delays"):
        rc.fit_router(bad, FEATS)


def test_cate_router_hash_is_deterministic(fitted):
    a, _ = rc.fit_cate_router(synth(40, 0), FEATS, seed=3, base=fitted.routers["cir"])
    b, _ = rc.fit_cate_router(synth(40, 0), FEATS, seed=3, base=fitted.routers["cir"])
    assert a.sha256 == b.sha256
    a.verify()


# ---------------------------------------------------------------- blanket baselines
def test_blanket_baselines_against_hand_computation():
    test = synth(24, 5, prefix="e")
    test["active"] = True
    blank = rc.blanket_routers(FEATS, rate=0.5, seed=1)
    assert set(blank) == {"always-d1", "always-d2", "always-d4", "random-50%"}
    ev = rc.evaluate_policies(blank, rc.OutcomeVault(test, FEATS), n_draws=50, seed=0, sign_flip_draws=200)
    t = ev.table.set_index(["policy", "condition"])
    for d in (1, 2, 4):
        traj = test[test["delay"] == d]
        want = 100 * (traj["y_with"] - traj["y_without"]).mean()
        assert np.isclose(t.loc[(f"always-d{d}", "all"), "delta"], want)
        assert t.loc[(f"always-d{d}", "all"), "intervention_rate"] == 100.0
    # random: about half the trajectories, each at one delay; rate 0 / 1 are never / always-somewhere
    r = t.loc[("random-50%", "all"), "intervention_rate"]
    assert 25 < r < 75
    for rate, want in ((0.0, 0.0), (1.0, 100.0)):
        b = rc.blanket_routers(FEATS, rate=rate, seed=1)
        e = rc.evaluate_policies({k: v for k, v in b.items() if k.startswith("random")}, rc.OutcomeVault(test, FEATS),
                                 n_draws=40, seed=0, sign_flip_draws=100)
        assert e.table.set_index("condition").loc["all", "intervention_rate"] == want
    with pytest.raises(ValueError, match="rate"):
        rc.blanket_routers(FEATS, rate=1.5)


def test_rescue_sets_detect_an_identical_blanket_rule():
    test = synth(20, 6, prefix="e")
    blank = rc.blanket_routers(FEATS, rate=0.3, seed=2)
    routers = {"cir": blank["always-d2"], **blank}
    ev = rc.evaluate_policies(routers, rc.OutcomeVault(test, FEATS), n_draws=40, seed=0, sign_flip_draws=100)
    rs = rc.rescue_sets(ev, "cir").set_index("policy")
    assert rs.loc["always-d2", "same_rescued_set"] and rs.loc["always-d2", "same_harmed_set"]
    traj = test[test["delay"] == 2]
    assert rs.loc["cir", "rescued"] == int(((traj["y_without"] == 0) & (traj["y_with"] == 1)).sum())
    assert not rs.loc["always-d1", "same_rescued_set"] or rs.loc["always-d1", "rescued"] == rs.loc["cir", "rescued"]
    with pytest.raises(KeyError):
        rc.rescue_sets(ev, "nope")


def test_cate_fallback_is_warned_and_recorded(fitted, monkeypatch):
    """econml failing on a one-class fold: every fit falls back to the constant average
    effect, and the selection metrics and a warning say so (never silent)."""
    import econml.dr

    def one_class(self, *a, **k):
        raise ValueError("This solver needs samples of at least 2 classes in the data, but the data contains only "
                         "one class: 0")

    monkeypatch.setattr(econml.dr.DRLearner, "fit", one_class)
    train = synth(40, 0)
    with pytest.warns(UserWarning, match=r"could not fit 6 of 6 CATE model\(s\).*including the frozen router"):
        cate, m = rc.fit_cate_router(train, FEATS, seed=3, base=fitted.routers["cir"])
    assert (m["cate_fits"], m["cate_fallbacks"], m["cate_fallback"]) == (6, 6, True)  # 5 folds + the final fit
    assert "only one class" in m["cate_fallback_reason"]
    # the constant is the average paired effect of the active rows: mean(y_with) - mean(y_without)
    act = rc.validate_decisions(train, FEATS)["active"].to_numpy()
    want = train["y_with"].to_numpy()[act].mean() - train["y_without"].to_numpy()[act].mean()
    assert cate.cate_model.tau == pytest.approx(want)


def test_cate_without_fallback_records_none(fitted):
    _, m = rc.fit_cate_router(synth(40, 0), FEATS, seed=3, base=fitted.routers["cir"])
    assert (m["cate_fits"], m["cate_fallbacks"], m["cate_fallback"], m["cate_fallback_reason"]) == (6, 0, False, "")
