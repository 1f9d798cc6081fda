"""The chapter pages' result-first and rerun boxes, and first-use glossary links (plain data)."""

import shlex

import pytest

from agentstudies.book.glossary_links import first_uses, term_pattern
from agentstudies.book.pageboxes import INSTALL, finding_lines, replaced_parameters, rerun_commands


def test_finding_lines_read_the_findings_table_without_nan(tmp_path):
    path = tmp_path / "findings.csv"
    path.write_text("finding,paper,estimate,ci_low,ci_high,n,verdict,rule,why,basis,built_in\n"
                    "coverage holds,Table 4,0.8333,0.3588,0.9958,6,inconclusive,r,,method,\n"
                    "no interaction,Table 2,,,,,not testable here,r,too few,built in,Profile.noise\n"
                    "bias is zero,Table 5,-0.0001,-0.0004,0.0021,40,reappears,r,,arithmetic\n"
                    "reach,Table 2,25,8.333333,41.66667,12,reappears,r,,measured\n"
                    "interaction,Table 2,2.78e-15,-16.66667,16.66667,12,inconclusive,r,,measured\n")
    rows = finding_lines(path)
    assert rows[0] == {"verdict": "inconclusive", "finding": "coverage holds", "ours": "0.833 [0.359, 0.996], n = 6",
                       "basis": "a method property under known truth"}
    assert rows[1]["ours"] == "" and rows[1]["basis"] == "a built-in simulation parameter, not evidence: Profile.noise"
    # one number of decimals per row, from the largest magnitude; minus as U+2212; a
    # negative zero and a rounding residue (2.78e-15) as 0; never a "nan"
    assert rows[2]["ours"] == "0.000 [0.000, 0.002], n = 40"
    assert rows[3]["ours"] == "25.0 [8.3, 41.7], n = 12"
    assert rows[4]["ours"] == "0.0 [\u221216.7, 16.7], n = 12"
    assert not any("nan" in r["ours"].lower() for r in rows)
    bad = tmp_path / "bad.csv"
    bad.write_text("claim,verdict\nx,reappears\n")
    with pytest.raises(KeyError, match="bad.csv.*'finding'"):
        finding_lines(bad)


def test_rerun_commands_reproduce_the_profile_and_overrides():
    prov = {"run": {"chapter": "sasst_calibration", "profile": "smoke",
                    "overrides": {"n_jobs": 1, "M_values": [200, 400], "agent": "llm:x y"}}}
    get, install, run = rerun_commands("sasst_calibration", prov, "https://example.org/agentstudies.git")
    assert get == "git clone https://example.org/agentstudies.git agentstudies && cd agentstudies"
    assert install == INSTALL and "pip install -e '.[book]'" in install
    # the shell reads back exactly the values the run used
    assert shlex.split(run) == ["agentstudies", "run", "sasst_calibration", "--profile", "smoke",
                                "-p", "n_jobs", "1", "-p", "M_values", "[200, 400]", "-p", "agent", "llm:x y",
                                "-o", "sasst_calibration.ipynb"]
    assert rerun_commands("x", {})[2] == "agentstudies run x -o x.ipynb"


def test_first_uses_find_each_terms_first_whole_word_occurrence():
    texts = ["The clusters of a small-cluster audit.", "One cluster, a checkpoint handoff and a Handoff."]
    found = first_uses(texts, ["Cluster", "Checkpoint handoff", "Handoff"])
    assert found["Cluster"] == (0, 4, 12)  # "clusters": the plural, not "small-cluster"
    assert found["Checkpoint handoff"] == (1, 15, 33)
    assert found["Handoff"] == (1, 26, 33)  # inside the longer term: the linker keeps the longer one
    assert term_pattern("pass^k").search("the pass^k curve")
    assert "Stale-k" not in first_uses(["stale-2 observations"], ["Stale-k"])


def test_replaced_parameters_are_the_values_the_page_does_not_show():
    cell = "seed = 0  # root seed\nn_jobs = 2\nM_values = [200, 400]\nagent = 'simulated'\nlevel: float = 0.95\n"
    used = {"seed": 0, "n_jobs": 1, "M_values": [200], "agent": "simulated", "level": 0.95, "extra": 3}
    assert replaced_parameters(cell, used) == {"n_jobs": 1, "M_values": [200]}
    assert replaced_parameters("x = 1 + 1\n", {"x": 2}) == {"x": 2}  # not a literal: shown as replaced


def test_bullet_lines_glued_into_a_paragraph_become_a_list():
    from docutils import nodes
    from docutils.utils import new_document
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser

    from agentstudies.book.runin_lists import lists_from_bullet_lines

    doc = new_document("t", get_default_settings(Parser))
    br = lambda: nodes.raw("", "<br>", format="html")  # noqa: E731
    doc += nodes.paragraph("", "", nodes.Text("Of 2 findings:"), br(), nodes.Text("\u2022 coverage "),
                           nodes.strong("", "reappears"), br(), nodes.Text("\u2022 power is low"))
    doc += nodes.paragraph("", "", nodes.Text("one line"), br(), nodes.Text("another, no bullet"))
    doc += nodes.paragraph("", "", nodes.emphasis("", "Judged"), nodes.Text(" as: 2 inconclusive. \u2022 reach: "),
                           nodes.emphasis("", "reappears"), br(), nodes.Text("\u2022 solve: inconclusive"))
    lists_from_bullet_lines(None, doc, "chapters/x")
    lead, items, plain, lead2, items2 = doc.children
    assert lead2.astext() == "Judged as: 2 inconclusive. "
    assert [li.astext() for li in items2.children] == ["reach: reappears", "solve: inconclusive"]
    assert isinstance(lead, nodes.paragraph) and lead.astext() == "Of 2 findings:"
    assert isinstance(items, nodes.bullet_list)
    assert [li.astext() for li in items.children] == ["coverage reappears", "power is low"]
    assert isinstance(plain, nodes.paragraph) and "<br>" in plain.astext()  # not a list: untouched


def test_a_finding_sentence_shows_a_missing_estimate_as_a_dash():
    from agentstudies.findings import Finding

    f = Finding("interaction is positive", "Table 1: +3.5 pp", float("nan"), float("nan"), float("nan"), 12,
                "inconclusive", "95% CI above 0")
    assert "ours –, n = 12" in f.sentence() and "nan" not in f.sentence().lower()


def test_a_missing_glued_value_reads_as_a_dash():
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    from agentstudies.book.pasted import dash_missing_values, shown_value

    assert [shown_value(x) for x in ("nan", "nan%", "-inf", "inf", "0.5", "nanny")] == ["–", "–", "\u2212∞", "∞", "0.5", "nanny"]
    doc = new_document("t", get_default_settings(Parser))
    doc += nodes.paragraph("", "", nodes.Text("at most "), nodes.inline("nan%", "nan%", classes=["pasted-text"]),
                           nodes.Text(" of episodes, "), nodes.inline("nan", "nan", classes=["other"]))
    dash_missing_values(None, doc, "chapters/x")
    assert doc.astext() == "at most – of episodes, nan"  # only pasted values are rewritten
