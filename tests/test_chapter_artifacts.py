"""Identities that must hold in the tables a chapter writes, checked on the chapter's smoke
run made in this test session (the shared ``smoke_runs`` fixture of tests/conftest.py),
never on files an earlier run left under ``artifacts/``.

Kept apart from the method's own test modules so that only smoke-run modules share the
smoke worker of ``make test`` (conftest's scheduler groups modules naming the fixture).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


@pytest.mark.notebook
@pytest.mark.slow
def test_recovery_paired_cells_rescue_minus_harm_identity(smoke_runs):
    smoke_runs.get("alfworld_recovery")
    cells = pd.read_csv(smoke_runs.artifacts / "alfworld_recovery" / "paired_cells.csv")
    assert len(cells) > 0
    # paired counts: rescue - harm = net, and the four cells partition the n pairs
    assert ((cells["rescue"] - cells["harm"]) == cells["net"]).all()
    assert ((cells["rescue"] + cells["harm"] + cells["both_succeed"] + cells["both_fail"]) == cells["n"]).all()
    # Δ in percentage points is (rescue - harm) / n
    assert np.allclose(cells["rescue"] - cells["harm"], cells["delta"] * cells["n"] / 100, atol=1e-9, rtol=0)
