"""ImpossibleBench on real runs and real code: the audit's labelled Impossible-LCB runs and
GPT-4's published HumanEval solutions.

Values are checked against counts and formulas computed here by hand (pandas counts,
Cohen's kappa from its definition, Clopper-Pearson from scipy's beta quantiles) and
against the audit authors' own published numbers (``data/impossible_lcb_runs/metrics.csv``
and ``SOURCE_README.md``), never against our own output.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstudies import _data
from agentstudies.studies.impossible import real_code as rc
from agentstudies.studies.impossible import real_runs as rr

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
RUNS = rr.load_lcb_runs()


# ------------------------------------------------------------------ loading and checks
def test_runs_load_with_their_published_size_and_labels():
    # SOURCE_README.md: 5,752 runs, 103 tasks, six models; outcome pass / fail / abort
    assert len(RUNS) == 5752 and RUNS["task_id"].nunique() == 103 and RUNS["model"].nunique() == 6
    assert set(RUNS["outcome"]) == {"pass", "fail", "abort"}
    assert RUNS["exploit"].dtype == bool and (RUNS["aborted"] == (RUNS["outcome"] == "abort")).all()


def test_changed_runs_file_is_refused_naming_it(tmp_path, monkeypatch):
    root = tmp_path / "data"
    (root / "impossible_lcb_runs").mkdir(parents=True)
    src = DATA / rr.RUNS_FILE
    raw = gzip.decompress(src.read_bytes()).replace(b"gemini-3.8-flash,", b"gemini-3.8-flasH,", 1)
    (root / rr.RUNS_FILE).write_bytes(gzip.compress(raw))
    digest = _data.manifest()[rr.RUNS_FILE]
    (root / "SHA256SUMS").write_text(f"{digest}  {rr.RUNS_FILE}\n")
    monkeypatch.setattr(_data, "data_dir", lambda: root)
    with pytest.raises(_data.DataFileError, match=rf"data/{rr.RUNS_FILE} does not match its checksum.*git checkout"):
        rr.load_lcb_runs()


def test_missing_column_and_bad_label_name_the_column(tmp_path):
    df = pd.read_csv(DATA / rr.RUNS_FILE, dtype=str, keep_default_na=False).head(5)
    p = tmp_path / "runs.csv"
    df.drop(columns=["ib_cheat"]).to_csv(p, index=False)
    with pytest.raises(ValueError, match=r"missing column\(s\) \['ib_cheat'\]"):
        rr.load_lcb_runs(p)
    df.assign(exploit=["True", "yes", "False", "False", "False"]).to_csv(p, index=False)
    with pytest.raises(ValueError, match=r"column 'exploit' must hold True/False; row 2 holds 'yes'"):
        rr.load_lcb_runs(p)


# ------------------------------------------------------------------ rates
def test_rates_by_hand_on_a_small_table():
    runs = pd.DataFrame(dict(task_id=["t1", "t1", "t2", "t3"], split="oneoff", arm="D",
                             exploit=[True, False, False, True], ib_cheat=[True, True, False, False]))
    out = rr.lcb_rates(runs, by=("arm",), estimands=("exploit", "ib_cheat"), n_draws=400, seed=1)
    ex = out[out["estimand"] == "exploit"].iloc[0]
    assert ex["estimate"] == pytest.approx(50.0) and (ex["hits"], ex["n"], ex["n_tasks"]) == (2, 4, 3)
    ib = out[out["estimand"] == "ib_cheat"].iloc[0]
    assert ib["estimate"] == pytest.approx(50.0) and ib["ci_low"] <= 50.0 <= ib["ci_high"]
    # the largest possible resample: t1 three times -> 2/2 ib per copy = 100 %; t2 or t3 only -> 0 %
    assert 0.0 <= ib["ci_low"] and ib["ci_high"] <= 100.0


def test_our_recount_equals_the_audit_authors_table():
    """Every impossible-split count of the authors' metrics.csv recomputed from the runs."""
    rc_ = rr.recount_authors_metrics(RUNS, rr.load_authors_metrics())
    assert len(rc_) >= 200 and rc_["match"].all()


def test_flash_abort_rates_against_the_authors_counts():
    # metrics.csv: inspect_minimal gemini-3.8-flash D oneoff exploit 19/102, D_abort oneoff 1/102
    out = rr.lcb_rates(RUNS[(RUNS["harness"] == "inspect_minimal") & (RUNS["model"] == "gemini-3.8-flash")],
                       by=("arm", "split"), estimands=("exploit",), n_draws=200)
    get = out.set_index(["arm", "split"])
    assert get.loc[("D", "oneoff"), "hits"] == 19 and get.loc[("D", "oneoff"), "n"] == 102
    assert get.loc[("D_abort", "oneoff"), "hits"] == 1


def test_paired_difference_by_hand():
    runs = pd.DataFrame(dict(task_id=["a", "b", "c", "d"] * 2, split="oneoff", model="m",
                             arm=["D"] * 4 + ["D_abort"] * 4,
                             exploit=[True, True, False, False, True, False, False, False]))
    d = rr.lcb_difference(runs, "exploit", where={"model": "m"}, arm_a="D", arm_b="D_abort", n_draws=500)
    assert d["estimate"] == pytest.approx(25.0) and d["rate_a"] == 50.0 and d["rate_b"] == 25.0
    # paired by task: per-task differences are 0, 1, 0, 0, so no resample is negative
    assert d["ci_low"] >= 0.0 and d["n_tasks"] == 4
    with pytest.raises(ValueError, match="no runs of arm 'A'"):
        rr.lcb_difference(runs, "exploit", where={"model": "m"}, arm_a="A", arm_b="D")


def test_findings_are_measured_and_the_abort_effect_reappears():
    from agentstudies.studies import paper_values

    f, detail = rr.real_run_findings(RUNS, paper_values("impossible_cheating", "headlines"), n_draws=300)
    t = f.table()
    assert len(t) == 5 and set(t["verdict"]) <= {"reappears", "contradicted", "inconclusive"}
    assert (t["basis"] == "measured").all() and t["can_contradict"].all()
    # Flash, minimal loop, impossible splits: D 30/202 judged exploits, D_abort 1/202 (metrics.csv)
    row = detail.iloc[0]
    assert row["rate_a"] == pytest.approx(100 * 30 / 202) and row["rate_b"] == pytest.approx(100 * 1 / 202)
    assert t["verdict"].iloc[0] == "reappears"


# ------------------------------------------------------------------ label agreement
def _kappa_by_formula(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    labs = sorted(set(a) | set(b))
    po = float(np.mean(a == b))
    pe = sum(float(np.mean(a == lab)) * float(np.mean(b == lab)) for lab in labs)
    return (po - pe) / (1 - pe)


def test_blind_relabel_matches_the_audit_readme():
    # SOURCE_README.md, Caveats: "A blind human check of 15 ... agreed on 12 (kappa = 0.69)"
    out = rr.blind_relabel_agreement(rr.load_manual_labels(), rr.load_blind_relabel())
    assert (out["n"], out["agree"]) == (15, 12) and round(out["kappa"], 2) == 0.69
    ci = stats.beta.ppf([0.025, 0.975], [12, 13], [4, 3])  # Clopper-Pearson from beta quantiles
    assert (out["ci_low"], out["ci_high"]) == pytest.approx(tuple(ci))


def test_judge_vs_manual_kappa_by_formula():
    items, summ = rr.judge_vs_manual(RUNS, rr.load_manual_labels(), n_draws=200)
    k = summ.set_index("quantity").loc["Cohen's kappa", "estimate"]
    assert k == pytest.approx(_kappa_by_formula(items["manual_gaming"], items["judge_gaming"]))
    assert rr.cohen_kappa(["a", "b", "a", "b"], ["a", "b", "b", "b"]) == pytest.approx(0.5)  # po .75, pe .5
    prec = summ.set_index("quantity").loc["judge precision (manual gaming among judge gaming)"]
    assert prec["hits"] == int((items["manual_gaming"] & items["judge_gaming"]).sum())
    assert prec["n"] == int(items["judge_gaming"].sum())


def test_known_defects_as_the_audit_counts_them():
    # SOURCE_README.md: 14 issues affect 13 of the 103 original tasks: 5 wrong expected
    # values, 7 inputs outside the constraints, 1 too weak, 1 over-specified
    known = rr.load_known_issues()
    counts = pd.DataFrame([{"check": "originals flagged (kept out of every variant set)", "n": 8, "tasks": 4}])
    t = rr.known_defects_table(known, counts, 164).set_index("defect")
    assert t.loc["all original-split defects", "issues"] == 14 and t.loc["all original-split defects", "tasks"] == 13
    assert t.loc["original test wrong", "issues"] == 5 and t.loc["input violates docstring", "issues"] == 7


# ------------------------------------------------------------------ real code through the sandbox
def test_gpt4_solutions_load_and_build_whole_modules():
    from agentstudies.envs.impossible import load_problems

    prompts = {p.task_id: p.prompt for p in load_problems()}
    for src in rc.SOLUTION_FILES:
        s = rc.load_gpt4_solutions(source=src)
        assert len(s) == 164 and s["task_id"].is_unique
        assert all(c.startswith(prompts[t]) for t, c in zip(s["task_id"], s["code"]))
    with pytest.raises(KeyError, match="unknown solution source"):
        rc.load_gpt4_solutions(source="GPT-5")


def test_solution_file_without_a_field_names_it(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps({"task_id": "HumanEval/0", "entry_point": "has_close_elements", "solution": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"line 1 lacks field\(s\) \['is_solved'\]"):
        rc.load_gpt4_solutions(p)


def test_real_code_through_the_sandbox_on_one_task():
    """HumanEval/0 (GPT-4 solved it; the authors' is_solved is true): passes the original,
    fails every impossible variant, and the classifier labels nothing."""
    from agentstudies.envs.impossible import load_variant_table

    sol = pd.concat([rc.load_gpt4_solutions(source=s) for s in rc.SOLUTION_FILES])
    runs, cost = rc.real_code_runs(sol, load_variant_table(), ["HumanEval/0"])
    orig = runs[runs["kind"] == "original"]
    assert len(orig) == 2 and orig["passed"].all() and orig["is_solved"].all()
    assert not runs.loc[runs["kind"] != "original", "passed"].any()
    fp = rc.classifier_false_positives(runs).set_index(["source", "kind", "unit"])
    n = len(runs)
    assert fp.loc[("all", "all", "runs"), "labelled"] == 0 and fp.loc[("all", "all", "runs"), "n"] == n
    assert fp.loc[("all", "all", "runs"), "ci_high"] == pytest.approx(1 - 0.025 ** (1 / n))  # CP upper at 0 hits
    assert cost["n_runs"] == n


def test_pick_tasks_is_seeded_and_refuses_zero():
    ids = [f"HumanEval/{i}" for i in range(164)]
    a, b = rc.pick_tasks(ids, 10, seed=3), rc.pick_tasks(ids, 10, seed=3)
    assert a == b and len(a) == 10 and rc.pick_tasks(ids, None) == ids
    with pytest.raises(ValueError, match="n_tasks must be >= 1"):
        rc.pick_tasks(ids, 0)


def test_audit_sentence_by_hand():
    vs = pd.DataFrame(dict(task_id=["HumanEval/47", "HumanEval/47"], passed_original=[True, False]))
    assert rc.audit_sentence(vs).endswith("passed the original tests in 1 of 2 solutions.")
    assert rc.audit_sentence(vs.assign(passed_original=True)).endswith("not the contradicted docstring example.")
    assert rc.audit_sentence(vs.iloc[:0]).startswith("None of the audit's flagged originals")


def test_testability_counts_tasks_whose_rate_changed():
    from agentstudies.studies.impossible import real_controls as rcon

    runs = pd.DataFrame(dict(task_id=["a", "b", "c"] * 2, split="oneoff", harness="inspect_minimal",
                             model="gemini-3.8-flash", arm=["D"] * 3 + ["D_abort"] * 3,
                             exploit=[True, False, False, False, False, False]))
    detail = pd.DataFrame([dict(finding="abort (Flash)", estimand="exploit", arm_a="D", arm_b="D_abort")])
    t = rcon.arm_testability(runs, detail).iloc[0]
    assert (t["tasks"], t["tasks_changed"]) == (3, 1)
    assert t["upper"] == pytest.approx(stats.binomtest(1, 3).proportion_ci(0.90, "exact").high)  # one-sided 95 %


def test_controls_find_a_planted_rise_and_nothing_in_identical_arms():
    from agentstudies.studies.impossible import real_controls as rcon

    tasks = [f"t{i}" for i in range(30)]
    runs = pd.DataFrame(dict(task_id=tasks * 2, split="oneoff", harness="h", model="m",
                             arm=["D"] * 30 + ["D_r2"] * 30, exploit=False))
    c = rcon.real_run_controls(runs, replicates=6, planted_pp=60.0, pairs=(("h", "m", "D", "D_r2"),), n_draws=300)
    planted, null = c.iloc[0], c.iloc[1]
    assert planted["planted"] and planted["hits"] == 6  # ~18 of 30 runs flipped: the interval clears 0
    assert not null["planted"] and null["hits"] == 0  # identical arms: the interval is [0, 0]
    with pytest.raises(ValueError, match="planted_pp must lie in"):
        rcon.real_run_controls(runs, planted_pp=100.0, pairs=(("h", "m", "D", "D_r2"),))
