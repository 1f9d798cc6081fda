"""Every result class of the package honours the one result convention (agentstudies.results).

Result subclasses are discovered, not listed: every module of ``agentstudies`` is imported
and ``Result.__subclasses__()`` walked recursively. Each needs an example builder in
``BUILDERS`` (small real inputs, seconds); a new result class without one fails
``test_every_result_class_has_an_example``.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from collections.abc import Mapping
from typing import Callable

import numpy as np
import pandas as pd
import pytest

import agentstudies
from agentstudies.results import SIDES, TIDY_COLUMNS, Result


def _all_result_classes() -> list[type]:
    for mod in pkgutil.walk_packages(agentstudies.__path__, prefix="agentstudies."):
        importlib.import_module(mod.name)
    seen, todo = [], list(Result.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    # concrete classes of the package (a shared base without its own _tidy is not one)
    return sorted((c for c in seen if c.__module__.startswith("agentstudies.") and c._tidy is not Result._tidy),
                  key=lambda c: c.__qualname__)


# ----------------------------------------------------------------- example builders
def _handoff_tables():
    from agentstudies.handoff.testing import example_tables

    return example_tables(seed=3, n_per_type=2, n_seeds=2)


def _sasst_report():
    from agentstudies.sasst import SASST, ComparisonPlan, Slot
    from agentstudies.sasst.rules import ThresholdFamily

    rng = np.random.default_rng(0)
    n, systems = 40, ("ReAct", "PV")
    X = rng.normal(size=(n, 2))
    ids = [f"t{i:02d}" for i in range(n)]
    rows = [(ids[i], s, w, float(rng.random() < (0.3 + 0.2 * (w == "PV") * (X[i, 0] > 0))))
            for i in range(n) for s in range(2) for w in systems]
    ep = pd.DataFrame(rows, columns=["task_id", "seed", "workflow", "score"])
    feats = pd.DataFrame(X, index=ids, columns=["x0", "x1"])
    slots = [Slot("uniform", {"PV": 1, "ReAct": -1}, sign=1),
             Slot("stress", {"PV": 1, "ReAct": -1}, sign=-1, family="thr", radius=None, min_ess=5)]
    eng = SASST(ComparisonPlan(systems), slots, {"thr": ThresholdFamily(quantiles=(0.5,), lifts=(3.0,))},
                n_stability=3, n_draws=200, seed=1)
    split = pd.Series(["discovery"] * 20 + ["confirmation"] * 20, index=ids)
    return eng.run(ep, feats, split)


def _handoff_result():
    from agentstudies.handoff import analyze_handoff

    return analyze_handoff(_handoff_tables()["episodes"], n_draws=100, seed=2, empty_threshold=1.0)


def _prediction():
    from agentstudies.handoff import predict_interaction
    from agentstudies.handoff.testing import example_tables

    target = _handoff_tables()["episodes"]
    external = example_tables(seed=4, n_per_type=2, n_seeds=2, split="valid_seen", arrival=(0.6, 0.9))["episodes"]
    return predict_interaction(target, external, n_draws=100, seed=2, empty_threshold=1.0)


def _budget():
    from agentstudies.handoff import budget_diagnostic

    return budget_diagnostic(_handoff_tables()["trajectories"], n_draws=100, seed=2)


def _audit():
    from agentstudies.handoff import audit_non_arrivals

    t = _handoff_tables()
    return audit_non_arrivals(t["trajectories"], t["steps"], n_draws=100, seed=2, empty_threshold=1.0)


def _toolsandbox_group_means():
    from agentstudies.studies import toolsandbox as ts

    _, cases = ts.build_cases(0, ("base",), max_scenarios=10)
    return ts.group_means(ts.run_grid(cases, seeds=[0]), "augmentation", n_draws=100, seed=1)


def _impossible_rates():
    from agentstudies.studies import impossible as imp

    episodes = pd.DataFrame({"task_id": ["a", "a", "b", "b", "c", "c"], "kind": ["one_off"] * 6,
                             "workflow": ["w1", "w2"] * 3, "cheated": [1, 0, 0, 0, 1, 1]})
    return imp.cheating_rates(episodes, by=("kind", "workflow"), n_draws=100, seed=3)
def _recovery_table():
    rng = np.random.default_rng(0)
    rows = [dict(task_id=f"t{t}", condition=c, delay=d, operation="refresh", y_without=y0, y_with=int(rng.random() < 0.6))
            for t in range(8) for c in ("clean", "stale-2") for y0 in [int(rng.random() < 0.6)] for d in (0, 1)]
    return pd.DataFrame(rows)


def _recovery_result():
    from agentstudies.recovery import analyze_paired

    return analyze_paired(_recovery_table(), n_draws=100, seed=2)


def _sign_flip():
    from agentstudies.recovery import sign_flip_test

    return sign_flip_test([1, 0, 2, -1, 1, 1], seed=2)


def _router_evaluation():
    from agentstudies.recovery import OutcomeVault, evaluate_policies, fit_router

    rng = np.random.default_rng(1)
    rows = []
    for t in range(16):
        for c in ("clean", "stale-1", "stale-2", "missing"):
            y0 = int(rng.random() < (0.8 if c == "clean" else 0.4))
            for d in (1, 2, 4):
                rows.append(dict(task_id=f"t{t:02d}", condition=c, delay=d, y_without=y0,
                                 y_with=int(rng.random() < 0.7), x1=float(c != "clean") + rng.normal(0, 0.5),
                                 x2=rng.normal()))
    df = pd.DataFrame(rows)
    train, test = df[df["task_id"] < "t10"], df[df["task_id"] >= "t10"]
    fit = fit_router(train, ["x1", "x2"], seed=2)
    return evaluate_policies(fit.routers, OutcomeVault(test, ["x1", "x2"]), n_draws=100, seed=2, sign_flip_draws=1000)


def _findings():
    from agentstudies.findings import Findings, exact_finding, interval_finding, untestable_finding

    return Findings.build([interval_finding("gain", "+5 pp", 0.05, 0.01, 0.09, 40, paper_side="above",
                                            basis="method", why="a planted gain"),
                           exact_finding("no clean trigger", "0", 0, 40, holds=True, rule="0 clean triggers",
                                         basis="measured", why="a trained checkpoint"),
                           untestable_finding("ablation", "drop", why="changed 0% of actions", measured=0.0,
                                              basis="measured")],
                          seed=3, level=0.95)


#: ``module.QualName`` -> builder of one instance from small real inputs.
BUILDERS: dict[str, Callable[[], Result]] = {
    "agentstudies.sasst._report.SASSTReport": _sasst_report,
    "agentstudies.handoff._analysis.HandoffResult": _handoff_result,
    "agentstudies.handoff._prediction.InteractionPrediction": _prediction,
    "agentstudies.handoff._diagnostics.BudgetDiagnostic": _budget,
    "agentstudies.handoff._diagnostics.FailureAudit": _audit,
    "agentstudies.studies.toolsandbox.run.GroupMeans": _toolsandbox_group_means,
    "agentstudies.studies.impossible.rates.RateResult": _impossible_rates,
    "agentstudies.recovery._paired.RecoveryResult": _recovery_result,
    "agentstudies.recovery._signflip.SignFlipResult": _sign_flip,
    "agentstudies.recovery._evaluation.RouterEvaluation": _router_evaluation,
    "agentstudies.findings._table.Findings": _findings,
}

CLASSES = _all_result_classes()


def _key(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_every_result_class_has_an_example():
    missing = [_key(c) for c in CLASSES if _key(c) not in BUILDERS]
    assert not missing, f"result classes without an example builder in BUILDERS: {missing}"
    assert len(CLASSES) >= 5


@pytest.fixture(scope="module", params=[_key(c) for c in CLASSES])
def result(request):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # flagged intervals of tiny examples
        return BUILDERS[request.param]()


def test_summary_and_html(result):
    text = result.summary()
    assert isinstance(text, str) and text.strip()
    html = result._repr_html_()
    assert isinstance(html, str) and html.strip()


def test_to_frame_is_the_tidy_table(result):
    df = result.to_frame()
    assert isinstance(df, pd.DataFrame) and len(df) > 0
    assert tuple(df.columns[-len(TIDY_COLUMNS):]) == TIDY_COLUMNS
    assert set(df["side"]) <= set(SIDES)
    lv = df["level"].dropna()
    assert ((lv > 0) & (lv < 1)).all()
    assert not df["estimand"].isna().any()
    keys = list(result.strata) + ["estimand"]
    assert not df.duplicated(keys).any(), f"{keys} must identify a row"
    # a bound comes with its side, an interval with two-sided
    has_bound = np.isfinite(df["bound"].astype(float))
    assert df.loc[has_bound, "side"].isin(["lower", "upper"]).all()
    has_ci = np.isfinite(df["ci_low"].astype(float)) & np.isfinite(df["ci_high"].astype(float))
    assert (df.loc[has_ci, "side"] == "two-sided").all()


def test_get_returns_the_listed_row(result):
    df = result.to_frame()
    strata = list(result.strata)
    for i in sorted({0, len(df) // 2, len(df) - 1}):
        row = df.iloc[i]
        got = result.get(row["estimand"], **{s: row[s] for s in strata})
        assert got["estimand"] == row["estimand"]
        for s in strata:
            assert str(got[s]) == str(row[s])
        a, b = float(got["estimate"]), float(row["estimate"])
        assert a == b or (np.isnan(a) and np.isnan(b))
    with pytest.raises(KeyError):
        result.get("no such estimand")


def test_params_and_provenance(result):
    assert isinstance(result.params, Mapping) and result.params
    assert "seed" in result.params
    prov = result.provenance
    assert prov.version == agentstudies.__version__
    assert isinstance(prov.inputs, Mapping) and prov.inputs
    assert all(len(h) == 64 for h in prov.inputs.values())
    assert prov.seed == result.params["seed"]
    assert set(prov.to_dict()) == {"version", "inputs", "seed"}
