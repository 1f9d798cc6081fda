"""The chapter template (CONTRIBUTING.md, "Chapter template") checked on every TOC chapter.

Structure: learning goals first, a glued "What this run shows", at least three exercises
each with a dropdown solution, parameters declared once (``Chapter.from_parameters``),
no plotting code in notebook cells, plot/setup cells hidden.

Numbers: no markdown cell types a number. Prose numbers are glued from the run
(``{glue:text}`key:fmt```); what may remain are references (Table 4, Eq. (2), §2,
Appendix D.1, Algorithm 1, Figure 3), years of citations, numbered-list markers, and
numbers inside math or inline code that also hold a symbol (``$\\kappa = 5$``,
``x1 > q75``). A bare number in math or code (``$94.5\\%$``, `` `0.945` ``) is refused.

Paper values: no code cell of a notebook holds a literal paper table (``PAPER_`` names,
``paper... = pd.DataFrame(...)`` with literals); they come from ``data/paper`` through
``agentstudies.studies.paper_values``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from agentstudies.book import runner

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = runner.toc_chapters(REPO)

# ---------------------------------------------------------------------- number detector
#: Spans removed before looking for numbers (allowed to carry digits).
_GLUE = re.compile(r"\{glue(?::[a-z]+)?\}`[^`]*`")
_ROLE = re.compile(r"\{(?:numref|ref|eq|cite(?::[a-z]+)?|doc|download|term)\}`[^`]*`")
_FENCE = re.compile(r"^[ \t]*(`{3,}|:{3,})\{?([\w:-]*)\}?[^\n]*\n(.*?)^[ \t]*\1\s*$", re.S | re.M)
_DIRECTIVE_OPTION = re.compile(r"^[ \t]*:[\w-]+:.*$", re.M)
_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<!\\)\$([^$\n]+?)(?<!\\)\$")
_CODE = re.compile(r"``(.+?)``|`([^`\n]+)`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)|<https?://[^>]*>|https?://\S+")
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s", re.M)
_HTML_TAG = re.compile(r"<[^>]+>")
#: References and citations that may carry a number in prose.
_REFERENCE = re.compile(
    r"\b(?:Tables?|Figures?|Figs?\.|Eqs?\.|Equations?|Sections?|Sec\.|Appendix|Appendices|Algorithm|"
    r"Chapter|Step|Study|Studies|Definition|Proposition|Theorem|Lemma|Assumption|Exercise)"
    r"\s*\(?[A-Z]?\d+(?:\.\d+)*\)?"
    r"(?:\s*(?:,|and|–|-|to|&)\s*\(?[A-Z]?\.?\d+(?:\.\d+)*\)?)*"
    r"|§\s*\d+(?:\.\d+)*"
)
#: The level of an interval or band ("95% Clopper–Pearson interval", "95% task-level
#: paired bootstrap intervals"): a design constant, not a result.
_LEVEL = re.compile(
    r"(?<![\w.])\d{2}(?:\.\d+)?\s?%(?=\s+(?:(?:task-level|paired|simultaneous|one-sided|two-sided|pointwise|"
    r"Gaussian|multiplier|base-scenario|cluster|cluster-bootstrap)\s+)*(?:Clopper|Wilson|percentile|confidence|intervals?|bands?|bootstrap|Monte[- ]Carlo|MC|CI|credible|"
    r"upper|lower|familywise|level)(?![\w-]))"
)
#: Citation years (``Xu et al., 2026``; ``(2026)``): four digits 2010-2039 standing alone.
_YEAR = re.compile(r"(?<![\d.,])20[1-3]\d(?![\d%]|[.,]\d)")
#: A number standing alone (not part of an identifier such as x1, Qwen3, r2, D.7, τ²).
NUMBER = re.compile(r"(?<![\w.\-/])[-+−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?\s*%?(?![\w]|\.\.)")
#: A math or code span that is only a number (a run or paper value in disguise).
_BARE = re.compile(r"^\s*[-+−]?\s*\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?\s*(?:\\?%|\\,?\\%)?\s*$")


def _strip_fences(text: str, found: list[str]) -> str:
    """Drop code fences; keep the prose of admonitions/dropdowns; drop glue-figure options."""

    def repl(m: re.Match) -> str:
        kind, body = m.group(2), m.group(3)
        if kind.startswith(("glue", "figure")):
            body = _DIRECTIVE_OPTION.sub("", body)
            return body  # the caption is prose
        if kind in ("", "python", "text", "bash", "console", "ipython", "yaml", "json", "code-block", "math"):
            return ""
        return _DIRECTIVE_OPTION.sub("", body)  # admonition, note, dropdown...: prose

    prev = None
    while prev != text:
        prev, text = text, _FENCE.sub(repl, text)
    return text


def typed_numbers(markdown: str) -> list[str]:
    """Numbers typed in a markdown cell outside glue, references, math/code with symbols."""
    found: list[str] = []
    text = _GLUE.sub(" ", markdown)
    text = _ROLE.sub(" ", text)
    text = _strip_fences(text, found)
    for pattern in (_DISPLAY_MATH, _INLINE_MATH):
        for m in pattern.finditer(text):
            if _BARE.match(m.group(1)):
                found.append(m.group(0))
        text = pattern.sub(" ", text)
    for m in _CODE.finditer(text):
        span = m.group(1) or m.group(2)
        if _BARE.match(span):
            found.append(m.group(0))
    text = _CODE.sub(" ", text)
    text = _LINK_TARGET.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    text = _LIST_MARKER.sub(" ", text)
    text = _REFERENCE.sub(" ", text)
    text = _LEVEL.sub(" ", text)
    text = _YEAR.sub(" ", text)
    found += [m.group(0).strip() for m in NUMBER.finditer(text)]
    return found


@pytest.mark.parametrize(
    "text",
    [
        "The learned rule's coverage is 94.5% here.",
        "## 480 episodes per profile",
        "differences of at most 0.5 points",
        "(paper: 2,000)",
        "coverage $94.5\\%$ in this run",
        "coverage `0.945` in this run",
        "a radius of 0.01017",
        "-0.0554 weighted",
        "ESS near 20–35",
        "about 1e-170",
        "95% of trials cover",
        "coverage 93.9% interval-wise",
    ],
)
def test_detector_catches_typed_numbers(text):
    assert typed_numbers(text), f"not caught: {text!r}"


@pytest.mark.parametrize(
    "text",
    [
        "Table 4 and Tables 15 and 16 (Appendix D.7–D.8), Eq. (2), Eq. 7, Section 4, §2, Algorithm 1.",
        "(Xu et al., 2026, Section 4) and Xu et al., 2026 ran Qwen3-8B and Qwen2.5-7B-Instruct on τ²-bench.",
        "Features x1..x8 and rules r1, r2, r3; Study A4 and S_1.",
        "Coverage is {glue:text}`cov:.1%` against {glue:text}`paper_cov:.1%` (paper).",
        "The density cap $\\kappa = 5$ and `n_write_actions > 1`.",
        "1. first exercise\n2. second exercise",
        "```{glue:figure} fig_x\n:name: fig-x\n:figwidth: 700px\nSimulated coverage.\n```",
        "```{admonition} Solution\n:class: dropdown\nRerun with `-p seed 7`.\n```",
        "See {numref}`fig-x` and [the chapter](sasst_calibration.md).",
        "with 95% Clopper–Pearson intervals and 95% task-level paired bootstrap intervals",
        "a 95% percentile interval, 95% Wilson intervals; milestones 1..k",
    ],
)
def test_detector_allows_references_glue_and_symbols(text):
    assert typed_numbers(text) == []


def test_detector_reads_inside_admonitions():
    assert typed_numbers("```{admonition} Solution\n:class: dropdown\nIt covers 93.9%.\n```")


# ------------------------------------------------------------------------ the chapters
def _notebook(name: str) -> nbformat.NotebookNode:
    path = REPO / "notebooks" / f"{name}.ipynb"
    if not path.is_file():
        pytest.skip(f"notebooks/{name}.ipynb not written yet")
    return nbformat.read(path, as_version=4)


def _markdown(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def _code(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def _sections(nb) -> dict[str, str]:
    """Level-2 heading -> markdown text under it (to the next level-2 heading)."""
    out: dict[str, str] = {}
    current = None
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            m = re.match(r"^##\s+(.+?)\s*$", line)
            if m:
                current = m.group(1)
                out[current] = ""
            elif current is not None:
                out[current] += line + "\n"
    return out


@pytest.mark.parametrize("name", CHAPTERS)
def test_learning_goals_come_first(name):
    nb = _notebook(name)
    headings = [h for h in _sections(nb)]
    assert headings and headings[0] == "Learning goals", f"{name}: the first section must be '## Learning goals'"
    bullets = re.findall(r"^\s*[-*]\s+\S", _sections(nb)["Learning goals"], re.M)
    assert 3 <= len(bullets) <= 5, f"{name}: learning goals need 3-5 bullets, found {len(bullets)}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_what_this_run_shows_is_glued(name):
    nb = _notebook(name)
    sec = _sections(nb)
    assert "What this run shows" in sec, f"{name}: no '## What this run shows'"
    assert "{glue" in sec["What this run shows"], f"{name}: 'What this run shows' has no glued value"
    keys = list(sec)
    assert keys.index("What this run shows") < keys.index("Exercises"), f"{name}: exercises come last"


@pytest.mark.parametrize("name", CHAPTERS)
def test_exercises_with_dropdown_solutions(name):
    nb = _notebook(name)
    sec = _sections(nb)
    assert "Exercises" in sec, f"{name}: no '## Exercises'"
    text = sec["Exercises"]
    items = re.findall(r"^\d+\.\s+\S", text, re.M)
    solutions = re.findall(r"^\s*(`{3,}|:{3,})\{admonition\}\s*Solution[^\n]*\n\s*:class:\s*dropdown", text, re.M)
    assert len(items) >= 3, f"{name}: needs at least 3 numbered exercises, found {len(items)}"
    assert len(solutions) >= len(items), f"{name}: {len(items)} exercises but {len(solutions)} dropdown solutions"


@pytest.mark.parametrize("name", CHAPTERS)
def test_parameters_declared_once(name):
    nb = _notebook(name)
    code = "\n".join(c.source for c in _code(nb))
    assert re.search(r"Chapter\.from_parameters\(\s*[\"']" + name + r"[\"']\s*,\s*globals\(\)", code), (
        f"{name}: use Chapter.from_parameters({name!r}, globals(), simulated=...)"
    )
    assert not re.search(r"\bChapter\(\s*[\"'][^\"']+[\"']\s*,\s*params\s*=", code), f"{name}: Chapter(params=...)"
    assert "params=dict(" not in code


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_typed_numbers_in_markdown(name):
    nb = _notebook(name)
    bad = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            found = typed_numbers(cell.source)
            if found:
                bad[i] = found
    assert not bad, f"{name}: markdown cells type numbers (glue them): {bad}"


def _literal_numbers(node: ast.AST) -> int:
    return sum(isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)
               for n in ast.walk(node))


def _literal_table(value: ast.AST) -> bool:
    """A number literal, or a dict / list / tuple / DataFrame(...) / Series(...) / array(...)
    built from at least two number literals: a transcribed paper table."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
    if isinstance(value, ast.UnaryOp):
        return _literal_table(value.operand)
    if isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
        return _literal_numbers(value) >= 2
    if isinstance(value, ast.Call):
        func = value.func
        fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if fname in ("DataFrame", "Series", "dict", "array", "assign"):
            return _literal_numbers(value) >= 2
    return False


def test_literal_table_detector():
    assert _literal_table(ast.parse("x = 2.7424").body[0].value)
    assert _literal_table(ast.parse("x = pd.DataFrame({'a': [0.1, 0.2]})").body[0].value)
    assert _literal_table(ast.parse("x = t.assign(se=[0.1, 0.2])").body[0].value)
    assert not _literal_table(ast.parse("x = optimize.brentq(f, 2, 1000)").body[0].value)
    assert not _literal_table(ast.parse("x = paper_values('s', 't')").body[0].value)


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_paper_values_in_code_cells(name):
    nb = _notebook(name)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        src = cell.source
        assert "PAPER_" not in src, f"{name} cell {i}: reads a PAPER_ constant; use agentstudies.studies.paper_values"
        assert "beside_paper(" not in src, f"{name} cell {i}: beside_paper makes wide tables; use stack_paper"
        tree = ast.parse("\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!"))))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                if any("paper" in n.lower() for n in names):
                    assert not _literal_table(node.value), (
                        f"{name} cell {i}: {names} holds literal numbers; paper values live in data/paper/"
                    )
        # paper numbers in strings of displayed text ("paper: 94.75%")
        assert not re.search(r"paper[^\"'\n]{0,40}?:\s*[-+]?\d", src, re.I), (
            f"{name} cell {i}: a paper value typed in a string"
        )


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_plotting_code_and_hidden_setup(name):
    nb = _notebook(name)
    for i, cell in enumerate(_code(nb)):
        src = cell.source
        tags = cell.metadata.get("tags", [])
        for call in ("ax.plot(", "ax.bar(", "ax.hist(", ".errorbar(", ".scatter(", "plt.subplots(", "set_xlabel("):
            assert call not in src, f"{name} code cell {i}: plotting code ({call}); move it to a plots module"
        if "ch.figure(" in src or "Chapter.from_parameters(" in src:
            assert {"hide-input", "remove-input"} & set(tags), f"{name} code cell {i}: tag it hide-input"
    assert "plt.show()" not in "\n".join(c.source for c in _code(nb)), f"{name}: glue figures with ch.figure"


@pytest.mark.parametrize("name", CHAPTERS)
def test_figures_glued_with_numbered_captions(name):
    nb = _notebook(name)
    code = "\n".join(c.source for c in _code(nb))
    md = "\n".join(_markdown(nb))
    keys = re.findall(r"ch\.figure\(\s*[\"']([\w-]+)[\"']", code)
    for key in keys:
        m = re.search(r"^(`{3,}|:{3,})\{glue:figure\}\s+" + re.escape(key) + r"\s*\n(.*?)^\1", md, re.S | re.M)
        assert m, f"{name}: figure {key!r} is glued but not placed with {{glue:figure}}"
        assert re.search(r"^:name:\s*\S+", m.group(2), re.M), f"{name}: figure {key!r} has no :name:"
        caption = _DIRECTIVE_OPTION.sub("", m.group(2)).strip()
        assert caption and "simulated" in caption.lower(), f"{name}: figure {key!r} caption must say simulated"


def test_runner_removes_the_injected_parameters_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("seed = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("seed = 2", metadata={"tags": ["injected-parameters"]})]
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    runner._hide_injected_parameters(path)
    cells = nbformat.read(path, as_version=4).cells
    assert cells[0].metadata["tags"] == ["parameters"]
    assert cells[1].metadata["tags"] == ["injected-parameters", "remove-cell"]


# ------------------------------------------------------------------------- paper values
def test_every_paper_csv_is_documented_and_loads():
    from agentstudies.studies import paper_values
    from agentstudies.studies._paper import paper_dir, paper_tables

    readme = (paper_dir() / "README.md").read_text()
    files = sorted(paper_dir().glob("*.csv"))
    assert files, "data/paper holds no CSV"
    for path in files:
        assert f"`{path.name}`" in readme, f"data/paper/README.md does not name {path.name}"
        study = next(c for c in CHAPTERS if path.stem.startswith(c + "_"))
        df = paper_values(study, path.stem[len(study) + 1:])
        assert len(df) > 0
        assert path.stem[len(study) + 1:] in paper_tables(study)


def test_paper_values_errors_and_copies():
    from agentstudies.studies import paper_note, paper_values

    with pytest.raises(KeyError, match="stored"):
        paper_values("sasst_calibration", "table99")
    with pytest.raises(KeyError, match="not stored"):
        paper_note("sasst_calibration", "nothing")
    a = paper_values("sasst_calibration", "table4")
    a.loc[0, "coverage"] = -1.0
    assert paper_values("sasst_calibration", "table4").loc[0, "coverage"] != -1.0  # a fresh copy each call


def test_study_modules_read_their_paper_values_from_data_paper():
    from agentstudies.studies import paper_values
    from agentstudies.studies.sasst import calibration as cal
    from agentstudies.studies.tau import controller_audit as audit

    assert cal.PAPER_TABLE4.equals(paper_values("sasst_calibration", "table4"))
    assert audit.PAPER_TABLE_13.equals(paper_values("tau_controller_audit", "table13"))


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_cell_echoes_a_glued_value(name):
    """A cell whose last statement is ``ch.glue(...)`` or ``ch.save_table(...)`` would print
    the returned value (the glued value, a path) under the cell; end it with ``;``."""
    nb = _notebook(name)
    for i, cell in enumerate(_code(nb)):
        tree = ast.parse(cell.source)
        last = tree.body[-1] if tree.body else None
        if (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                and isinstance(last.value.func, ast.Attribute)
                and last.value.func.attr in ("glue", "glue_md", "save_table", "save_parquet", "save_figure", "hash_input")):
            assert cell.source.rstrip().endswith(";"), f"{name} code cell {i} echoes the value of its last call"
