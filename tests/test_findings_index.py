"""The results page's verdicts-by-basis table (agentstudies.book.site.findings_by_basis) on
hand-made findings tables: this build's counts, an archived paper-profile table without a
basis column taking the basis of the same claim, and evidence = method or measured only."""

from __future__ import annotations

import pandas as pd

from agentstudies.book.site import findings_by_basis


def test_counts_by_basis_for_this_build_and_the_archived_paper_run(tmp_path):
    art = tmp_path / "artifacts" / "ch"
    art.mkdir(parents=True)
    pd.DataFrame({"finding": ["a", "b", "c"], "verdict": ["reappears", "contradicted", "reappears"],
                  "basis": ["method", "built in", "arithmetic"]}).to_csv(art / "findings.csv", index=False)
    old = tmp_path / "data" / "paper_runs" / "ch"
    old.mkdir(parents=True)
    pd.DataFrame({"finding": ["a", "b", "z"], "verdict": ["inconclusive", "reappears", "reappears"]}).to_csv(
        old / "findings.csv", index=False)
    t = findings_by_basis(tmp_path, artifacts=tmp_path / "artifacts", chapters=["ch", "missing"])
    got = {(r.profile, r.basis): (r.reappears, r.contradicted, r.inconclusive, r.evidence) for r in t.itertuples()}
    assert got == {("this build", "method"): (1, 0, 0, True), ("this build", "built in"): (0, 1, 0, False),
                   ("this build", "arithmetic"): (1, 0, 0, False),
                   ("paper profile (archived)", "method"): (0, 0, 1, True),
                   ("paper profile (archived)", "built in"): (1, 0, 0, False),
                   ("paper profile (archived)", "not stated"): (1, 0, 0, False)}
    assert set(t["chapter"]) == {"ch"}
