"""Findings on the chapters: the handoff and recovery notebooks only call the library's
findings functions (scanned), their smoke runs write findings / testability / controls
tables whose verdicts follow their intervals, and every study chapter's findings.csv says
what each verdict rests on (basis, can_contradict, why)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from agentstudies.findings import BASES, CONTROL_COLUMNS, TABLE_COLUMNS, VERDICTS

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = ("alfworld_recovery", "alfworld_handoff")
#: What a code cell of these chapters must not do: name a verdict, compare an estimate or an
#: interval bound with a threshold, take the sign of an estimate, or type a normal quantile.
FORBIDDEN = [
    (r"\b(reappears|contradicted|inconclusive|not testable here)\b", "names a verdict"),
    (r"(estimate|delta|ci_low|ci_high|interaction|gain|_p\b|p_value)[\]\)'\"]*\s*[<>]=?\s*-?\d", "compares an estimate "
                                                                                                "with a threshold"),
    (r"np\.sign\(", "takes the sign of an estimate"),
    (r"\b1\.96\b", "types a normal quantile"),
]


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_code_cell_computes_a_verdict(name):
    cells = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]
    bad = []
    for i, c in enumerate(cells):
        if c["cell_type"] != "code":
            continue
        src = "".join(c["source"])
        for pat, what in FORBIDDEN:
            for m in re.finditer(pat, src):
                bad.append(f"cell {i} {what}: {src.splitlines()[src[:m.start()].count(chr(10))].strip()}")
    assert not bad, "\n".join(bad)


def test_the_scan_catches_what_it_forbids():
    samples = ['ok = "reappears" if lo > 0 else "no"', 'flag = est.loc["interaction", "estimate"] > 0',
               "s = np.sign(x)", "hw = 1.96 * se"]
    for s in samples:
        assert any(re.search(p, s) for p, _ in FORBIDDEN), s


_RULE_SIDE = re.compile(r"\b(above|below) (-?\d+(?:\.\d+)?)$")


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTERS)
def test_smoke_run_findings_tables(smoke_runs, name):
    smoke_runs.get(name)
    d = smoke_runs.artifacts / name
    f = pd.read_csv(d / "findings.csv", keep_default_na=False, na_values=[""])
    assert tuple(f.columns) == TABLE_COLUMNS and len(f) >= 5
    assert set(f["verdict"]) <= set(VERDICTS)
    assert f["why"].where(f["verdict"] == "not testable here").dropna().str.len().gt(0).all()
    for r in f.itertuples(index=False):
        m = _RULE_SIDE.search(str(r.rule))
        if r.verdict == "reappears" and m and pd.notna(r.ci_low):
            thr = float(m.group(2))
            assert (r.ci_low > thr) if m.group(1) == "above" else (r.ci_high < thr), r
    c = pd.read_csv(d / "controls.csv")
    assert tuple(c.columns) == CONTROL_COLUMNS
    assert c["subject"].str.contains("planted|null").all() and set(c["measures"]) == {"power", "false-positive rate"}
    assert (d / "testability.csv").is_file()


#: Every study chapter that writes a findings table (the method chapters do not).
STUDY_CHAPTERS = ("sasst_calibration", "sasst_small_clusters", "sasst_feasibility", "sasst_geometry",
                  "sasst_real_features", "alfworld_training", "alfworld_handoff", "alfworld_recovery",
                  "impossible_cheating", "impossible_workflows", "tau_published_runs", "tau_controller_audit",
                  "tau_workflow_stress", "toolsandbox_workflows", "inspect_logs")


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("name", STUDY_CHAPTERS)
def test_every_finding_states_its_basis(smoke_runs, name):
    """No silent default: every row names its basis, whether its rule could contradict it
    (a bool computed by the library) and a one-line why; a built-in row names the
    parameter(s) that produce its effect."""
    smoke_runs.get(name)
    f = pd.read_csv(smoke_runs.artifacts / name / "findings.csv", keep_default_na=False, na_values=[""])
    assert {"basis", "can_contradict", "why"} <= set(f.columns) and len(f)
    assert set(f["basis"]) <= set(BASES), f[["finding", "basis"]]
    assert f["can_contradict"].map(lambda v: str(v) in ("True", "False")).all(), f[["finding", "can_contradict"]]
    assert f["why"].fillna("").str.strip().str.len().gt(0).all() and not f["why"].fillna("").str.contains("\n").any()
    built = f[f["basis"] == "built in"]
    assert all(isinstance(v, str) and v.strip() for v in built["built_in"]), built[["finding", "built_in"]]
    assert not ((f["verdict"] == "contradicted") & (f["can_contradict"].astype(str) == "False")).any()
