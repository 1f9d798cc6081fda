"""Pre-registration (issue 13, item 2): a frozen discovery saved to one JSON file
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

from agentstudies.sasst import (
    KMS,
    SASST,
    AxisTiltFamily,
    ComparisonPlan,
    FixedFamily,
    Preregistration,
    Rule,
    Slot,
    ThresholdFamily,
    cluster_data,
    geometry_from_state,
    geometry_state,
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
        from agentstudies.sasst import Preregistration, Rule, register_rule

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
