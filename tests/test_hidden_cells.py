"""Issue 25: no hidden notebook cell computes a verdict, a threshold comparison that decides a
finding, or types a paper value. Verdicts live in library findings functions
(``agentstudies.findings``); a notebook only calls them and glues their sentences.

Every notebook's hidden code cells (tags ``hide-input``, ``hide-cell``, ``remove-cell``,
``remove-input``) are scanned for

- a verdict word as a string literal ('reappears', 'contradicted', 'inconclusive',
  'not testable here');
- a comparison of an estimate, bound, rate, share, gain, coverage ... with anything, in a
  cell that glues text (the comparison would choose a sentence of "What this run shows");
- a typed normal quantile (1.96, 1.645, 2.576: a level hard-coded whatever ``level`` is);
- ``np.sign(`` (a direction read from a point estimate);
- a numeric literal equal to a value of ``data/paper/*.csv`` (a paper number typed instead
  of read), ignoring round numbers that are parameters everywhere (integers, 0.05, 0.5 ...).

The scan is lexical: a sentence chosen by a condition that compares (``"..." if x > 0 and
y == 0 else ...``, text switches such as ``agent == "simulated"`` excepted) is caught, but
a boolean computed on an earlier line and used bare (``... if same else ...``) is not
traced; review catches those. The chapters converted to library findings are scanned in
*all* their code cells (parameters excepted), visible ones included. A chapter not yet converted is listed in :data:`EXEMPT` with its reason and
the cells it may keep; an exemption that no longer matches anything is reported (a
warning), so the list can shrink as chapters are converted.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
HIDDEN = {"hide-input", "hide-cell", "remove-cell", "remove-input"}

#: Chapters whose verdicts come from a library findings function: every code cell is scanned.
CONVERTED = ("tau_workflow_stress", "tau_controller_audit", "tau_published_runs", "alfworld_training",
             "inspect_logs", "alfworld_handoff", "alfworld_recovery", "sasst_feasibility", "sasst_geometry",
             "sasst_small_clusters")

#: (chapter, kind, text in the flagged line; "" = any) -> why it is still allowed.
EXEMPT: dict[tuple[str, str, str], str] = {
    ("method_handoff", "comparison", ""): "method page: a worked Eq. 9 example says whether its residual interval "
                                          "covers zero; not a study chapter with findings",
    ("method_sasst", "comparison", ""): "method page: a planted toy example says what its planted design does to "
                                        "the gap; not a study chapter with findings",
    ("alfworld_recovery", "comparison", "clean_match_all"): "descriptive clone-audit check (every feasible clean "
                                                            "re-run matches the factual run), not a paper finding",
}


def _exempt(name: str, kind: str, excerpt: str) -> tuple[str, str, str] | None:
    for key in EXEMPT:
        if key[0] == name and key[1] == kind and key[2] in excerpt:
            return key
    return None


_VERDICT = re.compile(r"['\"](reappears|contradicted|inconclusive|not testable here)['\"]")
_CMP = re.compile(r"(ci_low|ci_high|ci_lo|ci_hi|estimate|bound|_lo\b|_hi\b|\blo\b|\bhi\b|share|rate|gain|delta|"
                  r"p_value|pvalue|stability|interaction|coverage|power)\w*[\]\)'\"]*\s*(<=|>=|<|>)\s*")
#: A sentence chosen by a condition that compares or aggregates ("..." if x == 0 and y else ...).
_CHOICE = re.compile(r"['\"]\)*\s+if\s+(?P<cond>.+?)\s+else\b", re.DOTALL)
_TEST = re.compile(r"(<=|>=|==|!=|(?<![-=])<|(?<![-=])>|\.all\(\)|\.any\(\))")
#: A configuration switch, not a finding: a comparison with a text literal (agent == "simulated").
_SWITCH = re.compile(r"(==|!=)\s*['\"]|['\"]\s*(==|!=)")
_QUANTILE = re.compile(r"(?<![\d.])(1\.96|1\.645|2\.576|1\.6449|1\.95996)(?!\d)")
_SIGN = re.compile(r"np\.sign\(")
_NUMBER = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\w.])")
#: Round numbers used as parameters everywhere; a match with a paper value is no evidence of typing it.
_ROUND = {0.05, 0.95, 0.5, 0.25, 0.75, 0.1, 0.9, 0.01, 0.99, 0.2, 0.8, 0.6, 0.4, 0.3, 0.7, 0.025, 0.975}


def _paper_values() -> set[float]:
    vals = set()
    for f in (ROOT / "data" / "paper").glob("*.csv"):
        with f.open(newline="") as fh:
            for row in csv.reader(fh):
                for v in row:
                    try:
                        vals.add(round(float(v), 6))
                    except ValueError:
                        pass
    return vals


PAPER = _paper_values()


def scan(src: str) -> list[tuple[str, str]]:
    """``(kind, excerpt)`` for each forbidden construct in one code cell's source; kinds:
    ``verdict``, ``comparison``, ``quantile``, ``sign``, ``paper value``."""
    hits = [("verdict", m.group(0)) for m in _VERDICT.finditer(src)]
    if "glue" in src:
        lines = src.splitlines()
        hits += [("comparison", ln.strip()) for ln in lines if _CMP.search(ln)]
        for m in _CHOICE.finditer(src):
            cond = m.group("cond")
            if _TEST.search(cond) and not _SWITCH.search(cond):
                hits.append(("comparison", lines[src[:m.start()].count("\n")].strip()))
    hits += [("quantile", m.group(0)) for m in _QUANTILE.finditer(src)]
    hits += [("sign", m.group(0)) for m in _SIGN.finditer(src)]
    for m in _NUMBER.finditer(src):
        x = round(float(m.group(0)), 6)
        if x in PAPER and x not in _ROUND and x != int(x):
            hits.append(("paper value", m.group(0)))
    return hits


def _cells(nb: Path, *, all_code: bool):
    for i, c in enumerate(json.loads(nb.read_text())["cells"]):
        if c["cell_type"] != "code":
            continue
        tags = set(c.get("metadata", {}).get("tags", []))
        if "parameters" in tags:  # the reader's knobs (learning rates, budgets), not results
            continue
        if all_code or tags & HIDDEN:
            yield i, "".join(c["source"])


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_hidden_cell_computes_a_verdict_or_types_a_paper_value(nb):
    name = nb.stem
    bad = []
    for i, src in _cells(nb, all_code=name in CONVERTED):
        for kind, excerpt in scan(src):
            if _exempt(name, kind, excerpt) is None:
                bad.append(f"{name} cell {i} ({kind}): {excerpt[:120]}")
    assert not bad, "compute verdicts in a findings function and glue its sentences:\n" + "\n".join(bad)


def test_every_exemption_names_a_notebook_and_a_kind():
    names = {nb.stem for nb in NOTEBOOKS}
    kinds = {"verdict", "comparison", "quantile", "sign", "paper value"}
    bad = [k for k in EXEMPT if k[0] not in names or k[1] not in kinds or not EXEMPT[k].strip()]
    assert not bad, f"exemptions naming no notebook, an unknown kind, or without a reason: {bad}"


def _stale(exempt) -> list:
    found = set()
    for nb in NOTEBOOKS:
        for _, src in _cells(nb, all_code=nb.stem in CONVERTED):
            found |= {k for kind, ex in scan(src) for k in exempt
                      if k[0] == nb.stem and k[1] == kind and k[2] in ex}
    return sorted(set(exempt) - found)


def test_stale_exemptions_are_reported():
    """An exemption that no longer matches a cell (the chapter was converted) is reported as
    a warning, not a failure: converting an exempted chapter must not turn this suite red.
    Remove the entry when warned. The
    detection itself is checked on an entry that cannot match."""
    import warnings

    bogus = ("tau_workflow_stress", "sign", "np.sign(never)")
    assert bogus in _stale({**EXEMPT, bogus: "test"})
    assert not set(_stale({**EXEMPT, bogus: "test"})) - set(_stale(EXEMPT)) - {bogus}
    stale = _stale(EXEMPT)
    if stale:
        warnings.warn(f"exemptions that no longer match a cell (remove them from EXEMPT): {stale}", UserWarning)


@pytest.mark.parametrize("src, kind", [
    ('v = "reappears" if lo > 0 else "inconclusive"', "verdict"),
    ('ch.glue_md("s", "covers zero" if res_lo <= 0 <= res_hi else "excludes zero")', "comparison"),
    ('ch.glue("ahead", "yes" if gap["ci_low"] > 0 else "no")', "comparison"),
    ("hw = 1.96 * se", "quantile"),
    ("d = np.sign(est)", "sign"),
    ("paper_gain = 0.0375", "paper value"),
    # cells of the kind once found in tau_workflow_stress, tau_controller_audit and alfworld_training
    ('ch.glue_md("confirmed_sentence", "Confirmed: " + x\n'
     '   + ("As in the paper, no stress claim is confirmed." if sum(conf_p.values()) == 0 and sum(paper_conf) == 0\n'
     '      else "The count differs from the paper\'s."))', "comparison"),
    ('_ = ch.glue("rl_ahead", "yes" if diff_arr["ci_low"] > 0 else "no")', "comparison"),
])
def test_the_scan_catches_what_it_forbids(src, kind):
    assert kind in {k for k, _ in scan(src)}


@pytest.mark.parametrize("src", [
    'findings = f(result, level=level)\nch.glue_md("s", " ".join(findings.sentences()))',
    'ch.glue("alpha", 0.05)\nch.glue_md("n", f"{len(x)} rows")',
    "rates = episodes.groupby('workflow')['reward'].mean()",
])
def test_the_scan_passes_ordinary_cells(src):
    assert scan(src) == []
