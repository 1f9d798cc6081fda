"""Issue 30, item 4: the method pages' worked examples run the library, and the glossary's
interaction entry says what the handoff page computes (Eqs. 7-8 of the handoff paper).

The handoff check runs ``method_handoff`` at its quick profile (about 15 s) and recomputes
the interaction from the page's own episode table, independently of the page's code."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _code(name):
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_method_sasst_takes_its_status_logic_from_the_engine():
    code = _code("method_sasst")
    assert re.search(r"from agentstudies\.sasst import \([^)]*\bSASST\b", code)
    assert "engine.discover(" in code and "engine.confirm(" in code and "Preregistration.load(" in code
    # no second copy: no status strings, hand-made support checks, selection or SE formulas
    for copy in ('"confirmed"', '"abstained"', '"not confirmed"', '"failed feasibility"', '"failed discovery"',
                 "def feasible", "def select", "ddof", "stats.t.ppf"):
        assert copy not in code, copy


def _glossary_entry(term):
    text = (ROOT / "book" / "glossary.md").read_text()
    m = re.search(rf"^{term}\n((?:  .*\n)+)", text, flags=re.M)
    assert m, f"glossary has no entry {term!r}"
    return " ".join(line.strip() for line in m.group(1).splitlines())


@pytest.mark.slow
def test_glossary_interaction_matches_the_handoff_pages_numbers(tmp_path):
    out = tmp_path / "method_handoff.ipynb"
    env = {**os.environ, "AGENTSTUDIES_ARTIFACTS": str(tmp_path / "artifacts")}
    subprocess.run([str(Path(sys.executable).with_name("agentstudies")), "run", "method_handoff", "--profile",
                    "quick", "-o", str(out)], check=True, cwd=ROOT, env=env, capture_output=True)
    art = next(tmp_path.glob("**/method_handoff/interaction.csv")).parent
    ep = pd.read_csv(art / "episodes.csv")
    # independent recomputation from the page's episodes: the four J, I (Eq. 4), A_W and the
    # Solve gap on the states each reacher reached
    J = ep.groupby(["reacher", "solver"])["success"].mean()
    I = (J["RL", "RL"] - J["RL", "SFT"]) - (J["SFT", "RL"] - J["SFT", "SFT"])
    A = ep.drop_duplicates(["task", "reacher"]).groupby("reacher")["arrived"].mean()
    reached = ep[ep["arrived"]].groupby(["reacher", "solver"])["success"].mean()
    gain = {w: reached[w, "RL"] - reached[w, "SFT"] for w in ("SFT", "RL")}
    page_I = pd.read_csv(art / "interaction.csv").set_index("quantity").loc["observed interaction I", "estimate (pp)"]
    assert page_I == pytest.approx(100 * I, abs=1e-9)
    # the glossary's definition: I = A_RL gain_RL - A_SFT gain_SFT (Eq. 8), positive when the
    # arrival-weighted gain is larger under the RL reacher
    entry = _glossary_entry("Interaction")
    assert r"A_{\mathrm{RL}}\,\bar\delta_{\mathrm{RL}} - A_{\mathrm{SFT}}\,\bar\delta_{\mathrm{SFT}}" in entry
    assert I == pytest.approx(A["RL"] * gain["RL"] - A["SFT"] * gain["SFT"], abs=1e-12)
    assert (I > 0) == (A["RL"] * gain["RL"] > A["SFT"] * gain["SFT"])
    # ... and says it is not the reached-only difference
    assert "not the reached-only difference" in entry and "opposite sign" in entry
    assert "positive when the two roles are coupled" not in entry
    rs = pd.read_csv(art / "reach_solve.csv").set_index("reacher")
    for w in ("SFT", "RL"):
        assert rs.loc[w, "Reach A_W"] == pytest.approx(A[w]) and rs.loc[w, "gain on reached states"] == pytest.approx(gain[w])
    # the page's coupling is 0: the glossary's "positive without any coupling" is this run
    params = json.loads(out.read_text())["cells"]
    assert any("coupling = 0.0" in "".join(c["source"]) for c in params if c["cell_type"] == "code")
    assert I > 0
