"""The findings core: verdicts from intervals, judged on known truths."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstudies.findings import (
    TABLE_COLUMNS,
    VERDICTS,
    Findings,
    binomial_interval,
    control_row,
    equivalence_finding,
    exact_finding,
    interval_finding,
    judge,
    untestable_finding,
)


def _t_interval(x, level):
    """Student-t interval of a mean, computed independently with scipy."""
    x = np.asarray(x, float)
    return stats.t.interval(level, len(x) - 1, loc=x.mean(), scale=stats.sem(x))


@pytest.mark.parametrize("lo, hi, side, thr, expected", [
    (0.1, 0.5, "above", 0.0, "reappears"),
    (-0.5, -0.1, "above", 0.0, "contradicted"),
    (-0.1, 0.5, "above", 0.0, "inconclusive"),
    (0.0, 0.5, "above", 0.0, "inconclusive"),      # touching the threshold is not excluding it
    (-0.5, -0.1, "below", 0.0, "reappears"),
    (0.1, 0.5, "below", 0.0, "contradicted"),
    (0.6, 0.9, "above", 0.5, "reappears"),         # a stated threshold other than 0
    (0.3, 0.45, "above", 0.5, "contradicted"),
    (0.3, 0.55, "below", 0.5, "inconclusive"),
    (float("nan"), 0.5, "above", 0.0, "inconclusive"),
    (0.1, float("nan"), "below", 0.0, "inconclusive"),
])
def test_judge_by_hand(lo, hi, side, thr, expected):
    assert judge(lo, hi, paper_side=side, threshold=thr) == expected


def test_judge_rejects_bad_input():
    with pytest.raises(ValueError, match="paper_side"):
        judge(0, 1, paper_side="positive")
    with pytest.raises(ValueError, match="ci_low"):
        judge(1, 0, paper_side="above")
    with pytest.raises(ValueError, match="threshold"):
        judge(0, 1, paper_side="above", threshold=float("nan"))


def test_planted_none_reversed_on_synthetic_samples():
    rng = np.random.default_rng(0)
    planted = rng.normal(1.0, 1.0, 200)            # effect exists: mean 1, sd 1, n 200
    reversed_ = -planted
    none = np.concatenate([planted - planted.mean(), -(planted - planted.mean())])  # mean exactly 0
    out = {}
    for name, x in [("planted", planted), ("none", none), ("reversed", reversed_)]:
        lo, hi = _t_interval(x, 0.95)
        out[name] = interval_finding(f"gain {name}", "above 0", x.mean(), lo, hi, len(x), paper_side="above").verdict
    assert out == {"planted": "reappears", "none": "inconclusive", "reversed": "contradicted"}


def test_level_is_honoured():
    # a sample whose 95% t-interval excludes 0 but whose 99.9% interval does not
    x = np.array([0.5, 1.2, -0.3, 0.9, 0.1, 1.4, -0.2, 0.8, 0.6, 0.0])
    lo95, hi95 = _t_interval(x, 0.95)
    lo999, hi999 = _t_interval(x, 0.999)
    assert lo95 > 0 > lo999  # the premise, computed independently
    f95 = interval_finding("gain", "above 0", x.mean(), lo95, hi95, len(x), paper_side="above", level=0.95)
    f999 = interval_finding("gain", "above 0", x.mean(), lo999, hi999, len(x), paper_side="above", level=0.999)
    assert (f95.verdict, f999.verdict) == ("reappears", "inconclusive")
    assert f95.rule.startswith("95% CI") and f999.rule.startswith("99.9% CI")
    fs = Findings.build([replace(f999, basis="method", why="a fixed sample")], seed=0, level=0.999)
    assert fs.to_frame()["level"].iloc[0] == 0.999
    with pytest.raises(ValueError, match="level"):
        interval_finding("g", "p", 0, -1, 1, 3, paper_side="above", level=95)


def test_nan_interval_is_inconclusive_and_says_why():
    f = interval_finding("gain", "above 0", 0.3, float("nan"), float("nan"), 0, paper_side="above")
    assert f.verdict == "inconclusive" and "no finite bound" in f.why
    assert "nan" not in f.why.lower()  # the reader sees words, not a float's repr
    g = equivalence_finding("gap", "near 0", 0.0, 0.1, float("nan"), 5, target=0.0, margin=0.2)
    assert g.verdict == "inconclusive" and "no finite bound" in g.why and "nan" not in g.why.lower()


def test_exact_and_untestable():
    assert exact_finding("0 clean triggers", "0", 0, 40, holds=True, rule="no clean trigger").verdict == "reappears"
    assert exact_finding("0 clean triggers", "0", 3, 40, holds=False, rule="no clean trigger").verdict == "contradicted"
    assert exact_finding("p < 0.05", "0.03", 0.2, 40, holds=False, rule="p < 0.05",
                         otherwise="inconclusive").verdict == "inconclusive"
    with pytest.raises(ValueError, match="otherwise"):
        exact_finding("x", "0", 0, 1, holds=True, rule="r", otherwise="reappears")
    with pytest.raises(ValueError, match="holds"):
        exact_finding("x", "0", 0, 1, holds=float("nan"), rule="r")
    u = untestable_finding("ablation hurts", "drop", why="the arm changed 0.0% of actions", measured=0.0)
    assert u.verdict == "not testable here" and u.measured == 0.0
    assert "not testable here" in u.sentence() and "0.0%" in u.sentence()
    with pytest.raises(ValueError, match="measured"):
        untestable_finding("x", "p", why="w", measured=float("nan"))
    with pytest.raises(ValueError, match="why"):
        untestable_finding("x", "p", why=" ", measured=0.0)


def test_findings_table_sentences_counts():
    m = dict(basis="method", why="a planted effect")
    rows = [interval_finding("a", "+1", 0.5, 0.2, 0.8, 30, paper_side="above", **m),
            interval_finding("b", "+1", -0.5, -0.8, -0.2, 30, paper_side="above", **m),
            interval_finding("c", "-1", 0.1, -0.2, 0.4, 30, paper_side="below", **m),
            untestable_finding("d", "+", why="changed nothing", measured=0.0, basis="method")]
    with pytest.raises(ValueError, match="state no basis"):
        Findings.build([interval_finding("e", "+1", 0.5, 0.2, 0.8, 30, paper_side="above")], seed=0)
    fs = Findings.build(rows, seed=7, level=0.95)
    t = fs.table()
    assert tuple(t.columns) == TABLE_COLUMNS
    assert list(t["verdict"]) == ["reappears", "contradicted", "inconclusive", "not testable here"]
    assert fs.counts() == {**dict.fromkeys(VERDICTS, 1), "same direction, magnitude differs": 0}
    assert len(fs.sentences()) == 4 and fs.sentences()[0].startswith("a: reappears")
    assert "1 reappear" in fs.counts_sentence()
    assert fs.get("b")["estimate"] == -0.5 and fs.verdict("c") == "inconclusive"
    assert fs.params["seed"] == 7 and fs.provenance.seed == 7
    # every 'reappears' row with a numeric interval excludes its threshold (acceptance)
    rep = t[t["verdict"] == "reappears"]
    assert ((rep["ci_low"] > 0) | (rep["ci_high"] < 0)).all()
    with pytest.raises(ValueError, match="duplicate"):
        Findings.build(rows + [rows[0]], seed=0)
    with pytest.raises(KeyError):
        fs.verdict("zz")


def test_binomial_interval_closed_form():
    # 0 of n: Clopper-Pearson upper bound = 1 - (alpha/2)^(1/n); n of n: lower = (alpha/2)^(1/n)
    r, lo, hi = binomial_interval(0, 10, level=0.95)
    assert (r, lo) == (0.0, 0.0) and math.isclose(hi, 1 - 0.025 ** (1 / 10), rel_tol=1e-9)
    r, lo, hi = binomial_interval(10, 10, level=0.9)
    assert hi == 1.0 and math.isclose(lo, 0.05 ** (1 / 10), rel_tol=1e-9)
    # interior: beta quantiles
    r, lo, hi = binomial_interval(7, 20)
    assert math.isclose(lo, stats.beta.ppf(0.025, 7, 14), rel_tol=1e-9)
    assert math.isclose(hi, stats.beta.ppf(0.975, 8, 13), rel_tol=1e-9)
    with pytest.raises(ValueError):
        binomial_interval(3, 2)


def test_control_row():
    row = control_row("fam", "planted gain", ["reappears"] * 18 + ["inconclusive"] * 2, planted=True, rule="r")
    assert row["hits"] == 18 and row["rate"] == 0.9 and row["measures"] == "power"
    assert row["ci_low"] > 0.5  # power 0.9 over 20 replicates is distinguishable from 0.5
    null = control_row("fam", "null subject", ["inconclusive"] * 19 + ["reappears"], planted=False, rule="r")
    assert null["measures"] == "false-positive rate" and null["rate"] == 0.05
    with pytest.raises(ValueError, match="labelled"):
        control_row("fam", "subject", ["reappears"], planted=True, rule="r")
    with pytest.raises(ValueError, match="unknown verdict"):
        control_row("fam", "planted", ["yes"], planted=True, rule="r")
    assert isinstance(pd.DataFrame([row, null]), pd.DataFrame)


def test_controls_sentence_reads_planted_and_null_rows():
    """The one controls sentence book-wide, on a hand-made two-row table."""
    import pandas as pd

    from agentstudies.findings import controls_sentence

    t = pd.DataFrame([
        dict(family="gap", planted=True, hits=9, replicates=10, rate=0.9, ci_low=0.555, ci_high=0.997),
        dict(family="gap", planted=False, hits=1, replicates=10, rate=0.1, ci_low=0.003, ci_high=0.445),
    ])
    assert controls_sentence(t) == ("“gap”: found in 9 of 10 planted replicates (power 0.90 [0.56, 1.00]) and in "
                                    "1 of 10 null replicates (false-positive rate 0.10 [0.00, 0.45]).")
