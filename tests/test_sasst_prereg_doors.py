"""A pre-registration with no side doors: every input that can change a confirmation's
answer (inference rule, level, draws, multiplier, the episode columns, the clustering
unit, the confirmation cluster set, the feature schema and its tolerance) is recorded,
and each way of changing one -- whichever route confirms -- is refused, or confirms with
the change named in ``departures`` and the report labelled "not pre-registered" in its
summary and tidy table. SASST App. C.1 / C.4: the rule, thresholds and the inference
rule are frozen before confirmation outcomes are read.
"""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from agentstudies.sasst import SASST, ComparisonPlan, Preregistration, PreregistrationError, Slot, cluster_data
from agentstudies.sasst.geometry import SHIFT_TOLERANCE
from agentstudies.sasst.rules import AxisTiltFamily, ThresholdFamily

SYSTEMS = ("ReAct", "PV")
N = 60  # clusters per benchmark version


def _version(seed, prefix, n=N):
    """Episodes (two seeds per task; a strict ``score`` and a lax ``score_lax``) and
    features: ``len`` centred and right-skewed (lognormal), ``x`` correlated with it,
    ``z`` independent normal. PV loses success on long tasks."""
    rng = np.random.default_rng(seed)
    raw = rng.lognormal(0.0, 0.6, n)
    ln = raw - np.exp(0.18)  # centred at the lognormal mean: location cannot reveal a sign flip
    x = 0.7 * (ln / 0.8) + 0.7 * rng.normal(size=n)
    z = rng.normal(size=n)
    ids = [f"{prefix}{i:03d}" for i in range(n)]
    rows = []
    for i, t in enumerate(ids):
        p = {"ReAct": 0.5, "PV": float(np.clip(0.55 - 0.25 * ln[i], 0.05, 0.95))}
        for s in range(2):
            for w, pp in p.items():
                y = float(rng.random() < pp)
                rows.append((t, s, w, y, max(y, float(rng.random() < 0.3))))
    ep = pd.DataFrame(rows, columns=["task_id", "seed", "workflow", "score", "score_lax"])
    return ep, pd.DataFrame({"len": ln, "x": x, "z": z}, index=ids)


def _engine(**kw):
    plan = ComparisonPlan(SYSTEMS)
    fams = {"tilt": AxisTiltFamily(), "thr": ThresholdFamily(quantiles=(0.25, 0.5, 0.75))}
    slots = [Slot("uniform", {"PV": 1, "ReAct": -1}, sign=1),
             Slot("stress tilt", {"PV": 1, "ReAct": -1}, sign=1, family="tilt", radius=None, min_ess=10),
             Slot("stress thr", {"PV": 1, "ReAct": -1}, sign=1, family="thr", radius=None, min_ess=10)]
    return SASST(plan, slots, fams, **{"n_stability": 4, "n_draws": 400, "seed": 5, **kw})


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    ep1, f1 = _version(1, "a")
    ep2, f2 = _version(2, "b")
    eng = _engine()
    d1 = cluster_data(ep1, f1, SYSTEMS)
    disc = eng.discover(d1)
    pre = Preregistration.from_discovery(eng, disc, d1, f1, confirmation_ids=f2.index)
    path = pre.save(tmp_path_factory.mktemp("pre") / "p.json")
    return dict(pre=pre, path=path, anchor=pre.anchor, record=pre.record(), ep1=ep1, f1=f1, ep2=ep2, f2=f2, d1=d1)


def _load(frozen):
    return Preregistration.load(frozen["path"], anchor=frozen["anchor"])


def _labelled(rep, *fields):
    """The report is labelled not pre-registered, and names each field as a departure."""
    assert rep.registration == "not pre-registered" and not rep.preregistered
    assert set(rep.to_frame()["registration"]) == {"not pre-registered"}
    assert set(rep.report_table()["registration"]) == {"not pre-registered"}
    text = rep.summary()
    assert "NOT PRE-REGISTERED" in text and "statuses (not pre-registered)" in text
    for f in fields:
        hit = [d for d in rep.departures if d.startswith(f + ":")]
        assert hit, f"departure {f!r} not named in {rep.departures}"
        assert hit[0] in text


def test_the_honest_anchored_confirmation_is_pre_registered_and_only_it(frozen):
    pre = _load(frozen)
    rep = pre.confirm(frozen["ep2"], frozen["f2"], anchor=frozen["anchor"])
    assert rep.departures == () and rep.registration == "pre-registered"
    assert set(rep.to_frame()["registration"]) == {"pre-registered"}
    # without the outside anchor nothing departs, but nothing proves the file is the frozen one
    plain = pre.confirm(frozen["ep2"], frozen["f2"])
    assert plain.departures == () and plain.registration == "not pre-registered"
    assert "not checked against a pre-registration anchor" in plain.summary()
    pd.testing.assert_frame_equal(plain.table.drop(columns="runtime_s"), rep.table.drop(columns="runtime_s"))
    # the anchor is the file's own digest (SHA-256 of the four signed sections)
    assert frozen["anchor"] == json.loads(frozen["path"].read_text())["integrity"]["digest"]


@pytest.mark.parametrize("setting, value", [("level", 0.6), ("inference", "pointwise"), ("n_draws", 50),
                                            ("exact_multiplier", True)])
def test_another_inference_setting_is_named_on_every_route(frozen, setting, value):
    pre = _load(frozen)
    ep2, f2 = frozen["ep2"], frozen["f2"]
    d2 = cluster_data(ep2, f2, SYSTEMS)
    other = _engine(**{setting: value})
    # route 1: a new engine confirms the pre-registered discovery directly
    _labelled(other.confirm(pre.discovery, d2), f"engine.{setting}")
    # route 2: the pre-registration with its engine replaced
    swapped = dataclasses.replace(pre, engine=other)
    _labelled(swapped.confirm(ep2, f2), f"engine.{setting}")
    with pytest.raises(PreregistrationError) as exc:
        swapped.confirm(ep2, f2, anchor=frozen["record"])
    assert exc.value.field == f"engine.{setting}"
    # route 3: the pre-registration's own engine mutated in place
    mutated = _load(frozen)
    setattr(mutated.engine, setting, value)
    _labelled(mutated.confirm(ep2, f2), f"engine.{setting}")
    with pytest.raises(PreregistrationError, match="changed after it was anchored"):
        mutated.confirm(ep2, f2, anchor=frozen["anchor"])
    # route 4: the engine= argument is refused outright
    with pytest.raises(PreregistrationError) as exc:
        pre.confirm(ep2, f2, engine=other)
    assert exc.value.field == f"engine.{setting}"
    # route 5: the table-level shortcut cannot label, so it refuses
    with pytest.raises(PreregistrationError) as exc:
        other.confirm_records(pre.discovery, d2)
    assert exc.value.field == f"engine.{setting}"


def test_pointwise_bands_after_the_fact_are_a_departure(frozen):
    rep = _load(frozen).confirm(frozen["ep2"], frozen["f2"], anchor=frozen["anchor"])
    assert rep.with_inference(rep.method).preregistered  # the same rule reproduces the report
    _labelled(rep.with_inference("pointwise"), "engine.inference")
    _labelled(rep.with_inference(rep.method, n_draws=37), "engine.n_draws")


def test_level_edited_in_the_file_with_recomputed_digests_is_caught_by_the_anchor(frozen, tmp_path):
    def resign(edit):
        # the edit made in memory and saved: save() rewrites the digests inside the file to match
        pre = Preregistration.load(frozen["path"])
        edit(pre)
        return pre.save(tmp_path / "resigned.json")

    only_engine = resign(lambda p: setattr(p.engine, "level", 0.6))
    assert json.loads(only_engine.read_text())["engine"]["level"] == 0.6
    pre = Preregistration.load(only_engine)  # self-consistent: the in-file digests pass
    _labelled(pre.confirm(frozen["ep2"], frozen["f2"]), "engine.level")
    with pytest.raises(PreregistrationError) as exc:
        Preregistration.load(only_engine, anchor=frozen["record"])
    assert exc.value.field == "engine.level"
    # the protocol edited consistently: nothing departs from the file, but only the anchor can tell
    both = resign(lambda p: (setattr(p.engine, "level", 0.6), p.discovery.protocol["inference"].update(level=0.6)))
    rep = Preregistration.load(both).confirm(frozen["ep2"], frozen["f2"])
    assert rep.level == 0.6 and rep.departures == () and rep.registration == "not pre-registered"
    with pytest.raises(PreregistrationError) as exc:
        Preregistration.load(both, anchor=frozen["record"])
    assert exc.value.field in ("engine.level", "discovery.protocol.inference.level")
    with pytest.raises(PreregistrationError, match="anchor"):
        Preregistration.load(both, anchor=frozen["anchor"])


def _per_task_contrast(ep):
    w = ep.pivot_table(index="task_id", columns="workflow", values="score", aggfunc="mean")
    return (w["PV"] - w["ReAct"]).sort_values()


def test_dropping_the_15_worst_confirmation_tasks_names_each_one(frozen):
    pre = _load(frozen)
    ep2, f2 = frozen["ep2"], frozen["f2"]
    worst = list(_per_task_contrast(ep2).index[:15])  # the 15 tasks most against the claim PV > ReAct
    kept = ep2[~ep2["task_id"].isin(worst)]
    rep = pre.confirm(kept, f2.drop(index=worst), anchor=frozen["anchor"])
    _labelled(rep, "confirmation.cluster_ids")
    # the attack works on these data -- the honest confirmation does not confirm the uniform claim,
    # the trimmed one does -- and the confirmed status is never shown without the label
    honest = pre.confirm(ep2, f2, anchor=frozen["anchor"])
    assert honest.table.loc["uniform", "status"] == "not confirmed" and honest.preregistered
    assert rep.table.loc["uniform", "status"] == "confirmed"
    assert rep.report_table().loc["uniform", "registration"] == "not pre-registered"
    dep = next(d for d in rep.departures if d.startswith("confirmation.cluster_ids"))
    assert "15 pre-registered cluster(s) dropped" in dep
    assert all(t in dep for t in sorted(worst)[:10])
    # the uniform contrast moved up, as dropping the worst tasks must (computed by hand)
    c = _per_task_contrast(ep2)
    assert rep.table.loc["uniform", "estimate"] == pytest.approx(c.drop(worst).mean())
    assert c.drop(worst).mean() > c.mean()
    # the same through the engine route
    d = cluster_data(kept, f2.drop(index=worst), SYSTEMS)
    _labelled(pre.engine.confirm(pre.discovery, d), "confirmation.cluster_ids")
    # added clusters are named too
    ep3, f3 = _version(3, "c", n=4)
    rep = pre.confirm(pd.concat([ep2, ep3]), pd.concat([f2, f3]), override={"x": "t", "len": "t", "z": "t"})
    dep = next(d for d in rep.departures if d.startswith("confirmation.cluster_ids"))
    assert "4 cluster(s) added: c000, c001, c002, c003" in dep


def test_a_confirmation_set_not_recorded_is_never_pre_registered(frozen):
    eng = _engine()
    disc = eng.discover(frozen["d1"])
    pre = Preregistration.from_discovery(eng, disc, frozen["d1"], frozen["f1"])
    rep = pre.confirm(frozen["ep2"], frozen["f2"], anchor=pre.anchor)
    _labelled(rep, "confirmation.cluster_ids")
    with pytest.raises(ValueError, match="include discovery cluster"):
        Preregistration.from_discovery(eng, disc, frozen["d1"], confirmation_ids=["a001", "b001"])


def test_task_by_seed_clustering_is_named(frozen):
    pre = _load(frozen)
    ep2, f2 = frozen["ep2"], frozen["f2"]
    ts = ep2.assign(task_id=ep2["task_id"] + "_s" + ep2["seed"].astype(str), seed=0)
    fts = f2.loc[[t.split("_")[0] for t in sorted(ts["task_id"].unique())]]
    fts.index = sorted(ts["task_id"].unique())
    rep = pre.confirm(ts, fts)
    _labelled(rep, "clusters.seeds_per_cluster", "confirmation.cluster_ids")
    assert rep.n_confirmation == 2 * N
    # the same with the task x seed id in its own column
    ts2 = ep2.assign(task_seed=ep2["task_id"] + "_s" + ep2["seed"].astype(str))
    _labelled(pre.confirm(ts2, fts, cluster="task_seed"), "columns.cluster", "clusters.seeds_per_cluster")


def test_another_score_or_system_column_is_named(frozen):
    pre = _load(frozen)
    ep2, f2 = frozen["ep2"], frozen["f2"]
    rep = pre.confirm(ep2, f2, score="score_lax", anchor=frozen["anchor"])
    _labelled(rep, "columns.score")
    assert "'score_lax' where discovery read 'score'" in next(d for d in rep.departures if d.startswith("columns.score"))
    _labelled(pre.confirm(ep2.rename(columns={"workflow": "arm"}), f2, system="arm"), "columns.system")
    _labelled(pre.confirm(ep2.rename(columns={"seed": "rep"}), f2, seed_col="rep"), "columns.seed")


@pytest.mark.parametrize("name, change, words", [
    ("x2", lambda f: f.assign(len=2 * f["len"]), "outside the discovery range"),
    ("x0.45", lambda f: f.assign(len=0.45 * f["len"]), "Mood scale test"),
    ("sign flip", lambda f: f.assign(len=-f["len"]), "reversed"),
])
def test_a_rescaled_or_sign_flipped_tilt_feature_is_refused_or_named(frozen, name, change, words):
    pre = _load(frozen)
    ep2, f2 = frozen["ep2"], frozen["f2"]
    bad = change(f2)
    with pytest.raises(PreregistrationError, match=words) as exc:
        pre.confirm(ep2, bad)
    assert exc.value.field == "features.len"
    # overridden with a reason it confirms, named and labelled
    rep = pre.confirm(ep2, bad, override={"len": "benchmark v2 changed the length unit"}, anchor=frozen["anchor"])
    _labelled(rep, "features.len")
    assert any("benchmark v2 changed the length unit" in n for n in rep.notes)
    # the engine route cannot override: it names the same change
    _labelled(pre.engine.confirm(pre.discovery, cluster_data(ep2, bad, SYSTEMS)), "features.len")


def test_sign_flip_of_a_symmetric_correlated_feature_shows_in_its_correlations(frozen):
    pre = _load(frozen)
    f2 = frozen["f2"]
    # x is symmetric about 0 here only through len's correlation; flip it and its correlation reverses
    r_d = np.corrcoef(frozen["f1"]["len"], frozen["f1"]["x"])[0, 1]
    r_i = np.corrcoef(f2["len"], -f2["x"])[0, 1]
    se = np.sqrt(2 / (N - 3))
    assert r_d * r_i < 0 and abs(np.arctanh(r_d) - np.arctanh(r_i)) > SHIFT_TOLERANCE["corr_z"] * se
    with pytest.raises(PreregistrationError, match="correlation with (len|x) reversed") as exc:
        pre.confirm(frozen["ep2"], f2.assign(x=-f2["x"]))
    assert exc.value.field in ("features.len", "features.x")  # a reversed pair: either may be the flipped one
    assert "features.x" in str(exc.value)


def test_check_features_uses_the_recorded_tolerance_not_the_module_constant(frozen, monkeypatch):
    ep2, f2 = frozen["ep2"], frozen["f2"]
    rec = frozen["pre"].schema[2]
    assert rec["name"] == "z"
    shifted = f2.assign(z=f2["z"] + 1.5 * rec["sd"])  # 1.5 discovery SDs: beyond 0.25 + 3 sqrt(2/60)
    assert 1.5 > SHIFT_TOLERANCE["mean_sd"] + 3 * np.sqrt(2 / N) + abs(f2["z"].mean() - rec["mean"]) / rec["sd"]
    pre = _load(frozen)
    strict = dict(SHIFT_TOLERANCE)
    permissive = {"mean_sd": 10.0, "log_sd": 10.0, "ks": 1.0, "range_p": 0.0, "skew_z": 1e3, "corr_z": 1e3,
                  "scale_p": 0.0, "shape_p": 0.0}
    assert set(permissive) == set(strict)
    for k, v in permissive.items():  # the module constant loosened after freezing
        monkeypatch.setitem(SHIFT_TOLERANCE, k, v)
    with pytest.raises(PreregistrationError, match="mean moved") as exc:
        pre.confirm(ep2, shifted)
    assert exc.value.field == "features.z"
    # and a tolerance recorded permissive at freeze time is the one applied
    eng = _engine()
    disc = eng.discover(frozen["d1"])
    loose = Preregistration.from_discovery(eng, disc, frozen["d1"], frozen["f1"], confirmation_ids=f2.index)
    for k, v in strict.items():
        monkeypatch.setitem(SHIFT_TOLERANCE, k, v)
    assert loose.tolerance == permissive
    assert loose.confirm(ep2, shifted, anchor=loose.anchor).preregistered


def test_freezing_with_an_engine_changed_after_discovery_is_refused(frozen):
    eng = _engine()
    disc = eng.discover(frozen["d1"])
    eng.inference = "pointwise"  # changed between discovery and freezing
    with pytest.raises(PreregistrationError) as exc:
        Preregistration.from_discovery(eng, disc, frozen["d1"], confirmation_ids=frozen["f2"].index)
    assert exc.value.field == "engine.inference"
    # what discovery stamped: the inference settings it ran with and the episode columns it read
    assert disc.protocol["inference"] == {"level": 0.95, "inference": "gaussian", "n_draws": 400,
                                          "exact_multiplier": False}
    assert disc.protocol["columns"] == {"cluster": "task_id", "seed": "seed", "system": "workflow", "score": "score"}
    assert disc.protocol["seeds_per_cluster"] == [2]


def test_the_anchor_is_the_same_for_every_run_of_the_same_discovery(frozen):
    # the anchor is glued into a page: a second discovery with the same engine and data gives it again
    # (wall-clock run times are not part of the file)
    eng = _engine()
    again = Preregistration.from_discovery(eng, eng.discover(frozen["d1"]), frozen["d1"], frozen["f1"],
                                           confirmation_ids=frozen["f2"].index)
    assert again.anchor == frozen["anchor"]
    assert "runtime_s" not in json.loads(frozen["path"].read_text())["discovery"]["rules"]["stress tilt"]
