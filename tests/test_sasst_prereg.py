"""Pre-registration: a frozen discovery saved to one JSON file
confirms new episodes from that file alone, in a fresh process, with the same report as
the in-memory run; custom rule kinds round-trip through the rule registry."""

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentstudies.sasst import SASST, ComparisonPlan, Preregistration, Slot, cluster_data
from agentstudies.sasst.geometry import KMS, geometry_from_state, geometry_state
from agentstudies.sasst.rules import (
    RULE_KINDS,
    AxisTiltFamily,
    FixedFamily,
    Rule,
    ThresholdFamily,
    register_rule,
    rule_from_dict,
)

SYSTEMS = ("ReAct", "PV", "Gate")
SRC = str(Path(__file__).resolve().parents[1] / "src")


@register_rule
@dataclasses.dataclass(frozen=True, eq=False)
class SquareRule(Rule):
    """A user's own rule: s = 1 + a * x^2 (bounded on bounded features)."""

    kind = "test_square"
    columns: tuple = ()
    a: float = 1.0

    def score(self, X):
        return 1.0 + self.a * np.minimum(np.asarray(X, float)[:, 0] ** 2, 4.0)

    def to_dict(self):
        return {"kind": self.kind, "columns": list(self.columns), "a": self.a}


def _episodes(n, seed, prefix):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    ids = [f"{prefix}{i:03d}" for i in range(n)]
    rows = []
    for i, t in enumerate(ids):
        p = {"ReAct": 0.3, "PV": 0.35 - 0.2 * (X[i, 0] > 0.5), "Gate": 0.3 + 0.1 * (X[i, 1] > 0)}
        for s in range(2):
            for w, pp in p.items():
                rows.append((t, s, w, float(rng.random() < pp)))
    return (pd.DataFrame(rows, columns=["task_id", "seed", "workflow", "score"]),
            pd.DataFrame(X, index=ids, columns=["x0", "x1", "x2"]))


def _engine():
    plan = ComparisonPlan(SYSTEMS, candidates=("PV", "Gate"), selection="soft", n_splits=2)
    fams = {"thr": ThresholdFamily(quantiles=(0.25, 0.5, 0.75)), "tilt": AxisTiltFamily(),
            "custom": FixedFamily((SquareRule(("x0",), 0.5), SquareRule(("x1",), 0.5)))}
    slots = [
        Slot("uniform", {"selected": 1, "ReAct": -1}, sign=1),
        Slot("stress thr", {"PV": 1, "ReAct": -1}, family="thr", radius=None, min_ess=10, min_split_share=0.1),
        Slot("stress tilt kms", {"selected": 1, "ReAct": -1}, family="tilt", radius=5.0, geometry="mine",
             min_ess=10, min_split_share=0.1),
        Slot("custom", {"Gate": 1, "ReAct": -1}, sign=1, family="custom", radius=1.0, geometry="mmd",
             min_ess=10, min_split_share=0.1),
    ]
    return SASST(plan, slots, fams, geometries={"mine": KMS(n_witness=8, n_features=32, seed=2)},
                 n_stability=5, n_draws=500, seed=11)


def test_custom_rule_kind_round_trips_and_unknown_kinds_are_named():
    r = SquareRule(("x0",), 0.25)
    back = rule_from_dict(r.to_json())
    assert isinstance(back, SquareRule) and back.columns == ("x0",) and back.a == 0.25
    X = np.array([[0.0], [1.0], [3.0]])
    np.testing.assert_array_equal(back.score(X), [1.0, 1.25, 2.0])
    with pytest.raises(ValueError, match="unknown rule kind 'nope'.*test_square"):
        rule_from_dict({"kind": "nope"})


def test_fitted_geometry_state_round_trips_distances():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    g = KMS(n_witness=6, n_features=16, seed=1).fit(X)
    back = geometry_from_state(json.loads(json.dumps(geometry_state(g))))
    W = rng.random((2, 30))
    W /= W.sum(axis=1, keepdims=True)
    u = np.full(30, 1 / 30)
    np.testing.assert_array_equal(back.distance(X, u, W), g.distance(X, u, W))


def test_preregistration_confirms_in_a_fresh_process_like_the_in_memory_run(tmp_path):
    ep1, f1 = _episodes(60, 1, "a")   # benchmark version 1: discovery
    ep2, f2 = _episodes(60, 2, "b")   # version 2: new clusters, confirmation
    eng = _engine()
    d1 = cluster_data(ep1, f1, SYSTEMS)
    disc = eng.discover(d1)
    in_memory = eng.confirm(disc, cluster_data(ep2, f2, SYSTEMS))
    path = Preregistration.from_discovery(eng, disc, d1).save(tmp_path / "prereg.json")
    ep2.to_csv(tmp_path / "ep2.csv", index=False)
    f2.to_csv(tmp_path / "f2.csv")
    script = textwrap.dedent(f"""
        import dataclasses, numpy as np, pandas as pd
        from agentstudies.sasst import Preregistration
        from agentstudies.sasst.rules import Rule, register_rule

        @register_rule
        @dataclasses.dataclass(frozen=True, eq=False)
        class SquareRule(Rule):
            kind = "test_square"
            columns: tuple = ()
            a: float = 1.0
            def score(self, X):
                return 1.0 + self.a * np.minimum(np.asarray(X, float)[:, 0] ** 2, 4.0)
            def to_dict(self):
                return {{"kind": self.kind, "columns": list(self.columns), "a": self.a}}

        pre = Preregistration.load({str(path)!r})
        ep = pd.read_csv({str(tmp_path / 'ep2.csv')!r}, dtype={{"task_id": str}})
        f = pd.read_csv({str(tmp_path / 'f2.csv')!r}, index_col=0)
        rep = pre.confirm(ep, f)
        rep.table.to_pickle({str(tmp_path / 'table.pkl')!r})
        """)
    subprocess.run([sys.executable, "-c", script], check=True, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    fresh = pd.read_pickle(tmp_path / "table.pkl")
    pd.testing.assert_frame_equal(fresh.drop(columns="runtime_s"), in_memory.table.drop(columns="runtime_s"))
    # the artifact holds what discovery froze, and the report is not vacuous
    obj = json.loads(path.read_text())
    assert obj["discovery"]["data_hash"] and obj["engine"]["seed"] == 11
    assert {"mine", "mmd"} <= set(obj["discovery"]["geometries"])
    assert in_memory.table["bound"].notna().sum() >= 2
    assert np.isfinite(in_memory.table.loc["stress tilt kms", "confirmation_distance"])
    # clusters reused from discovery are refused
    pre = Preregistration.load(path)
    with pytest.raises(ValueError, match="reuses discovery cluster"):
        pre.confirm(ep1, f1)


# ----------------------------------------------------------------------------- what the integrity binds
# A pre-registration that binds: each change below must be refused with the field named.
from agentstudies.sasst import PreregistrationError  # noqa: E402
from agentstudies.sasst.geometry import SHIFT_TOLERANCE


def _shaped(f):
    """Features with three different distributions (so a swap of two is visible):
    x0 ~ N(0, 1), x1 ~ 5 + 3 N(0, 1), x2 ~ integer counts 0..6."""
    f = f.copy()
    f["x1"] = 5.0 + 3.0 * f["x1"]
    f["x2"] = np.round(np.clip(3.0 + 2.0 * f["x2"], 0, 6))
    return f


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    ep1, f1 = _episodes(60, 1, "a")
    ep2, f2 = _episodes(60, 2, "b")
    f1, f2 = _shaped(f1), _shaped(f2)
    eng = _engine()
    d1 = cluster_data(ep1, f1, SYSTEMS)
    disc = eng.discover(d1)
    path = Preregistration.from_discovery(eng, disc, d1, f1).save(tmp_path_factory.mktemp("pre") / "p.json")
    return dict(eng=eng, disc=disc, d1=d1, f1=f1, ep2=ep2, f2=f2, path=path)


def _edited(path, tmp_path, edit):
    obj = json.loads(path.read_text())
    edit(obj)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(obj))
    return out


@pytest.mark.parametrize("where, edit", [
    ("engine.slots[1].stability_threshold", lambda o: o["engine"]["slots"][1].update(stability_threshold=0.0)),
    ("engine.slots[2].density_cap", lambda o: o["engine"]["slots"][2].update(density_cap=50.0)),
    ("engine.slots[1].min_ess", lambda o: o["engine"]["slots"][1].update(min_ess=1)),
    ("discovery.rules.stress thr.rule", lambda o: o["discovery"]["rules"]["stress thr"]["rule"].update(threshold=-2.0)),
    ("engine.level", lambda o: o["engine"].update(level=0.8)),
    ("schema.features[0].sd", lambda o: o["schema"]["features"][0].update(sd=100.0)),
])
def test_an_edited_file_is_refused_naming_the_field(frozen, tmp_path, where, edit):
    Preregistration.load(frozen["path"])  # the untouched file loads
    with pytest.raises(PreregistrationError, match="edited after the discovery was frozen") as exc:
        Preregistration.load(_edited(frozen["path"], tmp_path, edit))
    assert exc.value.field == where


def test_a_file_without_integrity_or_of_format_1_is_refused(frozen, tmp_path):
    with pytest.raises(PreregistrationError) as exc:
        Preregistration.load(_edited(frozen["path"], tmp_path, lambda o: o.pop("integrity")))
    assert exc.value.field == "integrity"
    with pytest.raises(ValueError, match="preregistration/1"):
        Preregistration.load(_edited(frozen["path"], tmp_path, lambda o: o.update(format="agentstudies.sasst.preregistration/1")))


def test_a_different_registry_or_engine_is_refused(frozen):
    pre = Preregistration.load(frozen["path"])
    other = _engine()
    other.families["thr"] = ThresholdFamily(quantiles=(0.1, 0.9))  # another candidate registry
    with pytest.raises(PreregistrationError) as exc:
        pre.confirm(frozen["ep2"], frozen["f2"], engine=other)
    assert exc.value.field == "engine.families"
    loose = _engine()
    loose.slots[1] = dataclasses.replace(loose.slots[1], stability_threshold=0.0)
    with pytest.raises(PreregistrationError) as exc:
        pre.confirm(frozen["ep2"], frozen["f2"], engine=loose)
    assert exc.value.field == "engine.slots"
    pre.confirm(frozen["ep2"], frozen["f2"], engine=_engine())  # the same engine rebuilt from code passes
    narrower = _engine()  # the same tilt family restricted to two columns is another registry
    narrower.families["tilt"] = AxisTiltFamily(use_columns=("x0", "x1"))
    with pytest.raises(PreregistrationError) as exc:
        pre.confirm(frozen["ep2"], frozen["f2"], engine=narrower)
    assert exc.value.field == "engine.families"
    # the engine itself refuses a discovery stamped by another registry
    d2 = cluster_data(frozen["ep2"], frozen["f2"], SYSTEMS)
    with pytest.raises(ValueError, match="not the one that ran the discovery: its families"):
        other.confirm(frozen["disc"], d2)
    # a rule kind registered in this process by another class than the frozen one
    saved = dict(RULE_KINDS)
    try:
        RULE_KINDS["test_square"] = type("OtherSquare", (SquareRule,), {})
        with pytest.raises(PreregistrationError) as exc:
            Preregistration.load(frozen["path"])
        assert exc.value.field == "registry.rule_kinds.test_square"
        del RULE_KINDS["test_square"]
        with pytest.raises(PreregistrationError, match="not registered"):
            Preregistration.load(frozen["path"])
    finally:
        RULE_KINDS.clear()
        RULE_KINDS.update(saved)


def _swap(f):
    return f.rename(columns={"x0": "x1", "x1": "x0"})[["x0", "x1", "x2"]]


@pytest.mark.parametrize("name, change, field, words", [
    ("rescaled x100", lambda f: f.assign(x1=100 * f["x1"]), "features.x1", "scale changed"),
    ("swapped", _swap, "features.x0", "mean moved"),
    ("retyped to bool", lambda f: f.assign(x0=f["x0"] > 0), "features.x0", "dtype bool"),
    ("retyped to integer", lambda f: f.assign(x1=np.round(f["x1"])), "features.x1", "values are integer"),
    ("counts became continuous", lambda f: f.assign(x2=f["x2"] + 0.5), "features.x2", "values are continuous"),
])
def test_a_swapped_rescaled_or_retyped_feature_is_refused(frozen, name, change, field, words):
    pre = Preregistration.load(frozen["path"])
    pre.confirm(frozen["ep2"], frozen["f2"])  # the unchanged new version confirms
    with pytest.raises(PreregistrationError, match=words) as exc:
        pre.confirm(frozen["ep2"], change(frozen["f2"]))
    assert exc.value.field == field


def test_a_missing_feature_is_refused_by_name(frozen):
    pre = Preregistration.load(frozen["path"])
    with pytest.raises(KeyError, match="x2"):
        pre.confirm(frozen["ep2"], frozen["f2"].drop(columns="x2"))


def test_shift_tolerance_is_the_stated_one_and_an_override_is_recorded(frozen):
    pre = Preregistration.load(frozen["path"])
    rec = pre.schema[0]
    f2 = frozen["f2"]
    # the stated location allowance at n_D = n_I = 60: mean_sd + 3 sqrt(1/60 + 1/60)
    allow = SHIFT_TOLERANCE["mean_sd"] + 3 * np.sqrt(2 / 60)
    base = (f2["x0"].mean() - rec["mean"]) / rec["sd"]
    # shift so that the standardized mean difference lands just inside / just outside
    inside = f2.assign(x0=f2["x0"] + (allow - 0.05 - base) * rec["sd"])
    outside = f2.assign(x0=f2["x0"] + (allow + 0.05 - base) * rec["sd"])
    d_in = cluster_data(frozen["ep2"], inside, SYSTEMS)
    assert not any("mean moved" in p for p in pre.check_features(inside, d_in))
    with pytest.raises(PreregistrationError, match=f"mean moved {allow + 0.05:.2f}") as exc:
        pre.confirm(frozen["ep2"], outside)
    assert exc.value.field == "features.x0"
    rep = pre.confirm(frozen["ep2"], outside, override={"x0": "benchmark v2 re-based x0"})
    assert any("override for feature 'x0' (benchmark v2 re-based x0)" in n for n in rep.notes)
    plain = pre.confirm(frozen["ep2"], frozen["f2"])
    assert rep.provenance.inputs["overrides"] != plain.provenance.inputs["overrides"]
    with pytest.raises(KeyError, match="nope"):
        pre.confirm(frozen["ep2"], outside, override={"nope": "x"})


def test_data_hash_is_checked_against_the_discovery_data(frozen):
    pre = Preregistration.load(frozen["path"])
    pre.verify_data(frozen["d1"])
    d1 = frozen["d1"]
    Z = d1.Z.copy()
    Z[0, 0] = 1 - Z[0, 0]  # one score of one cluster flipped
    with pytest.raises(PreregistrationError) as exc:
        pre.verify_data(dataclasses.replace(d1, Z=Z))
    assert exc.value.field == "discovery.data_hash"
    # from_discovery refuses an engine other than the one that discovered
    other = _engine()
    other.n_stability = 3
    with pytest.raises(PreregistrationError) as exc:
        Preregistration.from_discovery(other, frozen["disc"], d1)
    assert exc.value.field == "engine.n_stability"
