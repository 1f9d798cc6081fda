"""Issue 25 acceptance on the handoff and recovery chapters: the notebooks only call the
library's findings functions (scanned), and the smoke runs write findings / testability /
controls tables whose verdicts follow their intervals."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from agentstudies.findings import CONTROL_COLUMNS, TABLE_COLUMNS, VERDICTS

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
