"""The book's generated pages and offline hygiene, without building the book.

* ``agentstudies.book.site``: paper counterparts, the computed comparison line, the
  exercise and results indexes (hand-made notebooks, CSVs and expected values);
* ``runner.strip_widgets`` and the kernel environment that keeps progress bars out;
* the book's configuration: offline MathJax, no thebe/launch buttons, the bibliography
  cites what the pages cite, the glossary defines the field's terms, every TOC page exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
import yaml

from agentstudies.book import runner, site as booksite

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "book"


# ------------------------------------------------------------------ compare_tables
def test_compare_tables_matches_on_identifying_keys_and_counts_intervals():
    ours = pd.DataFrame({"M": [500, 500, 1000], "rule": ["fixed", "learned", "fixed"],
                         "coverage": [0.94, 0.90, 0.951], "status": ["ok", "ok", "bad"]})
    paper = pd.DataFrame({"M": [500, 500, 1000], "rule": ["fixed", "learned", "fixed"],
                          "coverage": [0.95, 0.9385, 0.95], "coverage_low": [0.93, 0.92, 0.94],
                          "coverage_high": [0.96, 0.95, 0.96], "status": ["ok", "ok", "ok"]})
    line = booksite.compare_tables(ours, paper)
    # keys: M alone repeats, (M, rule) identifies the paper's rows
    assert line.startswith("3 row(s) matched on M, rule;")
    # |0.90 - 0.9385| = 0.0385 is the largest difference; 0.94 and 0.951 inside, 0.90 not
    assert "coverage: max |this run − paper| = 0.0385" in line
    assert "inside the paper's interval in 2 of 3" in line
    assert "status: equal in 2 of 3" in line


def test_compare_tables_reports_why_nothing_is_compared():
    a = pd.DataFrame({"M": [200], "coverage": [0.9]})
    b = pd.DataFrame({"M": [500], "coverage": [0.95]})
    assert "no matching rows" in booksite.compare_tables(a, b)
    assert "no shared columns" in booksite.compare_tables(a, pd.DataFrame({"x": [1.0]}))
    assert "no shared numeric" in booksite.compare_tables(
        pd.DataFrame({"q": ["a"], "v": ["x"]}), pd.DataFrame({"q": ["a"], "v": ["y"]}))
    # no key column but as many rows: matched by position
    line = booksite.compare_tables(pd.DataFrame({"v": [1.0, 2.0]}), pd.DataFrame({"v": [1.5, 2.0]}))
    assert line.startswith("2 row(s) matched on row order") and "= 0.5" in line


def test_paper_counterparts_rules(tmp_path):
    paper = tmp_path / "paper"
    paper.mkdir()
    for stem in ("ch_table1", "ch_table2a", "ch_table4", "other_table1"):
        (paper / f"{stem}.csv").write_text("a\n1\n")
    art = tmp_path / "art"
    art.mkdir()
    (art / "table9_paper.csv").write_text("a\n1\n")
    names = ["table1", "table2a_reach", "table4", "table4_details", "table9", "table9_paper", "misc"]
    found = booksite.paper_counterparts("ch", names, paper, art)
    assert found == {
        "table1": paper / "ch_table1.csv",
        "table2a_reach": paper / "ch_table2a.csv",  # prefix key, no table named table2a
        "table4": paper / "ch_table4.csv",  # table4_details is not matched: table4 exists
        "table9": art / "table9_paper.csv",
    }


# ------------------------------------------------------------------ notebooks on disk
def _write_nb(path: Path, cells: list[tuple[str, str]]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(s) if k == "md" else nbformat.v4.new_code_cell(s)
                for k, s in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


@pytest.fixture
def mini_root(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book" / "_toc.yml").write_text(yaml.safe_dump(
        {"format": "jb-book", "root": "intro",
         "parts": [{"caption": "x", "chapters": [{"file": "chapters/alpha"}, {"file": "chapters/beta"}]}]}))
    _write_nb(tmp_path / "notebooks" / "alpha.ipynb", [
        ("md", "# Alpha\n\n## Learning goals\n\n- one\n- two"),
        ("md", "## Figures\n\n```{glue:figure} fig_cov\n:name: fig-cov\n:figwidth: 600px\n"
               "Simulated coverage, as in Figure 3 of the paper.\n```"),
        ("md", "## Exercises\n\n1. First **question** with {glue:text}`n` items.\n\n"
               "```{admonition} Solution\n:class: dropdown\n1. not an exercise\n```\n\n"
               "2. Second question\n   continued line\n\n3. Third [question](x.md)."),
        ("md", "## After\n\n1. not an exercise either"),
    ])
    _write_nb(tmp_path / "notebooks" / "beta.ipynb", [("md", "# Beta\n\nNo exercises here.")])
    art = tmp_path / "artifacts"
    (art / "alpha").mkdir(parents=True)
    pd.DataFrame({"k": ["a", "b"], "v": [0.5, 0.25]}).to_csv(art / "alpha" / "table1.csv", index=False)
    pd.DataFrame({"k": ["a", "b"], "v": [0.5, 0.5]}).to_csv(art / "alpha" / "table1_paper.csv", index=False)
    (art / "alpha" / "extra_plot.png").write_bytes(b"\x89PNG")
    return tmp_path


def test_exercise_index_reads_numbered_items_and_skips_solutions(mini_root):
    index = booksite.exercise_index(mini_root)
    assert list(index) == ["alpha", "beta"]  # TOC order, chapters without exercises kept
    texts = [e.text for e in index["alpha"]]
    # not executed: a glued number cannot be shown, and no raw "n" placeholder is left
    assert texts == ["First question with (see the chapter) items.", "Second question continued line",
                     "Third question."]
    assert [e.number for e in index["alpha"]] == [1, 2, 3]
    assert index["beta"] == []


def test_exercise_index_fills_glued_numbers_from_the_executed_chapter(mini_root):
    nb = nbformat.read(mini_root / "notebooks" / "alpha.ipynb", as_version=4)
    nb.cells[2].source = nb.cells[2].source.replace("{glue:text}`n`", "{glue:text}`gain:.2f` of {glue:text}`n`")
    glue = nbformat.v4.new_code_cell("glue")
    glue.outputs = [nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": v},
                                           metadata={"scrapbook": {"name": k, "mime_prefix": "application/papermill.record/"}})
                    for k, v in (("gain", "0.12345"), ("n", "40"))]
    nb.cells.insert(0, glue)
    (mini_root / "book" / "chapters").mkdir(exist_ok=True)
    nbformat.write(nb, mini_root / "book" / "chapters" / "alpha.ipynb")
    first = booksite.exercise_index(mini_root)["alpha"][0].text
    assert first == "First question with 0.12 of 40 items."


def test_exercise_text_is_cut_outside_math():
    text = "Show that " + "word " * 25 + "$\\mathrm{ESS} = n^2 / \\sum_k \\omega_k^2$ holds."
    cut = booksite._clean(text, limit=150)
    assert cut.endswith(" …") and cut.count("$") % 2 == 0
    assert booksite._clean("short $x$") == "short $x$"


def test_results_index_lists_tables_figures_and_counterparts(mini_root):
    entries = booksite.results_index(mini_root, artifacts=mini_root / "artifacts")
    alpha, beta = entries
    assert [t.name for t in alpha.tables] == ["table1"]  # the _paper file is the counterpart
    t = alpha.tables[0]
    assert t.shape == (2, 2) and t.paper.name == "table1_paper.csv"
    assert t.comparison == "2 row(s) matched on k; v: max |this run − paper| = 0.25"
    glued, png = alpha.figures
    assert (glued.name, glued.label, glued.paper_ref) == ("fig_cov", "fig-cov", "Figure 3")
    assert "Simulated coverage" in glued.caption
    assert png.name == "extra_plot" and png.paper_ref == ""
    assert beta.tables == [] and beta.figures == [] and not beta.executed


# ------------------------------------------------------------------ runner hygiene
def test_strip_widgets_removes_widget_outputs_and_state(tmp_path):
    nb = nbformat.v4.new_notebook()
    widget = nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "x", "version_major": 2, "version_minor": 0},
        "text/plain": "  0%|          | 0/3"})
    keep = nbformat.v4.new_output("stream", name="stdout", text="done\n")
    cell = nbformat.v4.new_code_cell("for _ in tqdm(range(3)): pass")
    cell.outputs = [widget, keep]
    nb.cells = [cell, nbformat.v4.new_markdown_cell("text")]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    assert runner.strip_widgets(path) == 1
    out = nbformat.read(path, as_version=4)
    assert out.cells[0].outputs == [keep]
    assert "widgets" not in out.metadata
    assert "widget" not in path.read_text()
    assert runner.strip_widgets(path) == 0  # idempotent


def test_kernel_environment_disables_progress_bars(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    with runner._quiet_progress():
        import os

        assert os.environ["TQDM_DISABLE"] == "1"
        import subprocess
        import sys

        # tqdm reads TQDM_DISABLE when it is imported, as in a freshly started kernel
        probe = "from tqdm.auto import tqdm; print(tqdm(range(3)).disable)"
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "True"
    assert "TQDM_DISABLE" not in __import__("os").environ


# ------------------------------------------------------------------ the book's sources
def _config() -> dict:
    return yaml.safe_load((BOOK / "_config.yml").read_text())


def test_book_config_is_offline():
    cfg = _config()
    assert cfg["launch_buttons"]["thebe"] is False
    assert not any(cfg["launch_buttons"].get(k) for k in ("binderhub_url", "jupyterhub_url", "colab_url"))
    sphinx = cfg["sphinx"]
    assert "sphinx-mathjax-offline" in sphinx["extra_extensions"]
    assert "agentstudies.book.site" in sphinx["extra_extensions"]
    assert "://" not in sphinx["config"]["mathjax_path"]
    assert sphinx["config"]["nb_ipywidgets_js"] == {}
    # the MathJax bundle the extension serves is really installed
    import importlib

    mod = importlib.import_module("sphinx-mathjax-offline")
    assert (Path(mod.__file__).parent / "static" / "mathjax" / "tex-chtml.js").is_file()


def _toc_files() -> list[str]:
    files: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                files.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(yaml.safe_load((BOOK / "_toc.yml").read_text()))
    return files


def test_reference_pages_exist_and_are_in_the_toc():
    files = _toc_files()
    for page in ("glossary", "exercises", "results", "references"):
        assert page in files, f"{page} is not in book/_toc.yml"
        assert (BOOK / f"{page}.md").is_file()
    for method in ("method_sasst", "method_handoff", "method_recovery"):
        assert f"chapters/{method}" in files
        assert (REPO / "notebooks" / f"{method}.ipynb").is_file()
    assert "{exercise-index}" in (BOOK / "exercises.md").read_text()
    assert "{results-index}" in (BOOK / "results.md").read_text()
    assert "{bibliography}" in (BOOK / "references.md").read_text()


def _bib_keys() -> set[str]:
    return set(re.findall(r"^@\w+\{([^,]+),", (BOOK / "references.bib").read_text(), re.M))


def _cited_keys(text: str) -> set[str]:
    keys = set()
    for group in re.findall(r"\{cite(?::[a-z]+)?\}`([^`]+)`", text):
        keys |= {k.strip() for k in group.split(",")}
    return keys


def test_bibliography_holds_the_papers_and_benchmarks_and_every_citation_resolves():
    keys = _bib_keys()
    bib = (BOOK / "references.bib").read_text()
    for title in ("Selection-Aware Stress Testing for Interactive Agents",
                  "Attributing Agentic {RL} Gains with Checkpoint Handoffs",
                  "Causal Evaluation of Recovery in {LLM} Agents",
                  "Evaluating Conversational Agents in a Dual-Control", "{ToolSandbox}", "{ImpossibleBench}",
                  "{ALFWorld}", "Evaluating Large Language Models Trained on Code", "Inspect"):
        assert title in bib, f"references.bib lacks {title!r}"
    texts = [p.read_text() for p in BOOK.glob("*.md")]
    for nb_path in (REPO / "notebooks").glob("*.ipynb"):
        nb = nbformat.read(nb_path, as_version=4)
        texts += [c.source for c in nb.cells if c.cell_type == "markdown"]
    cited = set().union(*(_cited_keys(t) for t in texts))
    assert not cited - keys, f"cited but not in references.bib: {sorted(cited - keys)}"
    intro = (BOOK / "intro.md").read_text()
    assert {"xu2026sasst", "handoff2026", "xiao2026cir"} <= _cited_keys(intro)


def test_glossary_defines_the_fields_terms():
    text = (BOOK / "glossary.md").read_text()
    body = text.split("```{glossary}", 1)[1]
    terms = {line.strip() for line in body.splitlines() if line and not line.startswith((" ", "`"))}
    for term in ("Cluster", "Estimand", "Effective sample size", "Density ratio", "Arrival",
                 "Conversion", "Rescue", "Harm", "Frontier", "Milestone", "Minefield"):
        assert term in terms, f"glossary lacks {term!r}"


def test_landing_page_has_audience_prerequisites_and_reading_paths():
    intro = (BOOK / "intro.md").read_text()
    for heading in ("## Who this book is for", "## Prerequisites"):
        assert heading in intro
    assert "{doc}`syllabus`" in intro  # the reading paths are on the syllabus page
    assert "{tableofcontents}" in intro  # every chapter, in the sidebar's order
    for method in ("method_sasst", "method_handoff", "method_recovery"):
        assert f"chapters/{method}" in intro
    # the real / trained / simulated table has a row for every part of the book
    table = intro.split("```{list-table}", 1)[1].split("```", 1)[0]
    rows = [line[4:].strip() for line in table.splitlines() if line.startswith("* - ")]
    parts = [p["caption"] for p in yaml.safe_load((BOOK / "_toc.yml").read_text())["parts"]
             if p["caption"] not in ("Start here", "Reference")]
    for caption in parts:
        assert any(r.startswith(caption) for r in rows), f"no row for the part {caption!r}"


# ------------------------------------------------------------------ paper-profile runs
def test_archived_paper_run_round_trip_and_checksums(tmp_path):
    from agentstudies.book.paper import runs as paper_runs

    art = tmp_path / "artifacts" / "chap"
    art.mkdir(parents=True)
    pd.DataFrame({"M": [1000], "coverage": [0.9475]}).to_csv(art / "table4.csv", index=False)
    (art / "episodes.parquet").write_bytes(b"PAR1")
    (art / "provenance.json").write_text(
        '{"started": "2026-11-30T02:00:00+0000", "wall_time_s": 2472.0, "parameters": {"n_trials": 2000}, '
        '"run": {"profile": "paper", "overrides": {}}}')
    out = paper_runs.archive_run("chap", tmp_path / "artifacts", tmp_path / "runs")
    assert sorted(p.name for p in out.iterdir()) == ["SHA256SUMS", "provenance.json", "table4.csv"]
    run = paper_runs.load_run("chap", folder=out)
    assert run.label == "paper-profile run of 2026-11-30, 41.2 min"  # 2472 s = 41.2 min
    assert run.parameters == {"n_trials": 2000}
    assert run.table("table4")["coverage"].tolist() == [0.9475]
    with pytest.raises(KeyError, match="table5"):
        run.table("table5")
    (out / "table4.csv").write_text("M,coverage\n1000,0.99\n")
    with pytest.raises(paper_runs.ChecksumError, match="table4.csv"):
        paper_runs.load_run("chap", folder=out)
    (art / "INCOMPLETE").write_text("")
    with pytest.raises(ValueError, match="did not finish"):
        paper_runs.archive_run("chap", tmp_path / "artifacts", tmp_path / "runs")
    with pytest.raises(FileNotFoundError, match="paper.runs archive nothing"):
        paper_runs.load_run("nothing", folder=tmp_path / "runs" / "nothing")


# ------------------------------------------------------------------------- syllabus
def test_syllabus_follows_the_toc_and_measures_reading_and_run_time(mini_root):
    (mini_root / "book" / "_syllabus.yml").write_text(yaml.safe_dump({"chapters": {
        "alpha": {"difficulty": 1, "needs": [], "week": 1, "day": 1, "kind": "simulated"},
        "beta": {"difficulty": 3, "needs": ["alpha"], "week": 2, "day": 0, "kind": "real"}}}, sort_keys=False))
    (mini_root / "notebooks" / "durations.json").write_text('{"paper": {"beta": 42.5}}')
    rows = booksite.syllabus(mini_root)
    assert [r.chapter for r in rows] == ["alpha", "beta"]
    assert rows[0].title == "Alpha" and rows[1].needs == ["alpha"]
    # beta's text is "# Beta\n\nNo exercises here." = 4 words: under a minute reads as 1
    assert rows[1].reading_min == 1 and (rows[1].run_s, rows[1].run_source) == (42.5, "paper profile, shipped")
    assert rows[0].run_s is None  # neither executed nor shipped
    # an executed copy's papermill duration wins ("last build")
    nb = nbformat.read(mini_root / "notebooks" / "alpha.ipynb", as_version=4)
    nb.metadata["papermill"] = {"duration": 7.25}
    (mini_root / "book" / "chapters").mkdir(exist_ok=True)
    nbformat.write(nb, mini_root / "book" / "chapters" / "alpha.ipynb")
    assert booksite.syllabus(mini_root)[0].run_s == 7.25
    # another order than the TOC's, or a prerequisite read later, is refused
    (mini_root / "book" / "_syllabus.yml").write_text(yaml.safe_dump({"chapters": {
        "beta": {"difficulty": 3, "week": 2}, "alpha": {"difficulty": 1, "week": 1}}}, sort_keys=False))
    with pytest.raises(ValueError, match="differ from book/_toc.yml's order"):
        booksite.syllabus(mini_root)
    (mini_root / "book" / "_syllabus.yml").write_text(yaml.safe_dump({"chapters": {
        "alpha": {"difficulty": 1, "week": 1, "needs": ["beta"]}, "beta": {"difficulty": 3, "week": 2}}},
        sort_keys=False))
    with pytest.raises(ValueError, match="alpha needs 'beta'"):
        booksite.syllabus(mini_root)


def test_the_books_syllabus_covers_every_chapter_in_sidebar_order():
    rows = booksite.syllabus(REPO)
    assert [r.chapter for r in rows] == runner.toc_chapters(REPO)
    assert "syllabus" in _toc_files() and "{syllabus}" in (BOOK / "syllabus.md").read_text()
    assert all(r.difficulty in booksite.DIFFICULTY for r in rows)
    weeks = [r.week for r in rows]
    assert weeks == sorted(weeks) and max(weeks) <= 14


# ------------------------------------------------------------------ one numbering
def _numbering_env(tmp_path, numbers):
    from types import SimpleNamespace

    from docutils import nodes

    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n- file: chapters/a\n- file: chapters/b\n")
    std = SimpleNamespace(get_enumerable_node_type=lambda n: "table" if isinstance(n, nodes.table) else
                          "figure" if isinstance(n, nodes.figure) else None)
    env = SimpleNamespace(srcdir=str(tmp_path / "book"), toc_fignumbers=numbers, get_domain=lambda name: std)
    return SimpleNamespace(env=env)


def test_one_numbering_counts_rendered_and_sphinx_tables_per_chapter_in_page_order(tmp_path):
    """Chapter b is the 2nd in the TOC: kernel "Table 1.", Sphinx "Table 6", kernel "Table 2."
    and a book-wide "Fig. 25" become Table 2.1, 2.2, 2.3 and Figure 2.1 (counted by hand)."""
    from docutils import nodes

    numbers = {"chapters/b": {"table": {"md": (6,)}, "figure": {"fx": (25,)}}}
    app = _numbering_env(tmp_path, numbers)
    page = nodes.container()
    first = nodes.raw("", "<table><caption>Table 1. ours</caption></table>", format="html")
    second = nodes.raw("", "<div><caption>Table 2. more</caption></div>", format="html")
    page += [first, nodes.table(ids=["md"]), nodes.figure(ids=["fx"]), nodes.figure(ids=[]), second]
    booksite._one_numbering(app, page, "chapters/b")
    assert "<caption>Table 2.1. ours</caption>" in first.astext()
    assert numbers["chapters/b"]["table"]["md"] == (2, 2)
    assert "<caption>Table 2.3. more</caption>" in second.astext()
    assert numbers["chapters/b"]["figure"] == {"fx": (2, 1)}  # an unnumbered figure stays so


def test_one_numbering_on_a_page_that_is_not_a_chapter_has_no_prefix(tmp_path):
    from docutils import nodes

    numbers = {"intro": {"table": {"t": (1,)}}}
    app = _numbering_env(tmp_path, numbers)
    page = nodes.container()
    raw = nodes.raw("", "<caption>Table 4. x</caption>", format="html")
    page += [raw, nodes.table(ids=["t"])]
    booksite._one_numbering(app, page, "intro")
    assert "Table 1. x" in raw.astext() and numbers["intro"]["table"]["t"] == (2,)
    assert booksite.chapter_number(tmp_path, "chapters/a") == 1
    assert booksite.chapter_number(tmp_path, "chapters/zz") is None


# ------------------------------------------------------------------ results index: each figure once, gaps in context
def test_results_index_lists_a_figure_saved_under_another_name_once(tmp_path):
    """A glued figure whose PNG is saved as another name (``ch.figure(key, fig, name)`` or
    ``save_figure(fig, name)`` then ``glue(key, fig)``) is one figure, not a glued one plus a PNG."""
    from agentstudies.book.paper.compare import results_index

    art = tmp_path / "artifacts" / "alpha"
    art.mkdir(parents=True)
    for name in ("figure9_res", "by_cat", "by_aug", "orphan"):
        (art / f"{name}.png").write_bytes(b"\x89PNG")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('ch.figure("fig_res", fig, "figure9_res")'),
                nbformat.v4.new_code_cell('ch.save_figure(fig, "by_cat")\n_ = ch.glue("fig_cat", fig)\n'
                                          'ch.save_figure(fig, "by_aug")\n_ = ch.glue("fig_aug", fig)'),
                nbformat.v4.new_markdown_cell("\n".join(f"```{{glue:figure}} {k}\n:name: {k}\nCaption.\n```"
                                                        for k in ("fig_res", "fig_cat", "fig_aug")))]
    (tmp_path / "notebooks").mkdir()
    nbformat.write(nb, tmp_path / "notebooks" / "alpha.ipynb")
    (entry,) = results_index(tmp_path, artifacts=tmp_path / "artifacts", chapters=["alpha"])
    files = {f.name: (f.file.name if f.file else None) for f in entry.figures}
    assert files == {"fig_res": "figure9_res.png", "fig_cat": "by_cat.png", "fig_aug": "by_aug.png",
                     "orphan": "orphan.png"}


def test_largest_gap_names_the_cell_both_values_and_the_unit():
    from agentstudies.book.paper.compare import largest_gap

    ours = pd.DataFrame({"M": [500, 1000], "coverage": [0.93, 0.90], "bias": [0.01, 0.02]})
    paper = pd.DataFrame({"M": [500, 1000], "coverage": [0.95, 0.95], "bias": [0.0, 0.0]})
    # gaps: coverage 0.02, 0.05; bias 0.01, 0.02 -> the largest is coverage at M = 1000
    assert largest_gap(ours, paper) == ("coverage at M = 1000: this run 0.9, paper 0.95 "
                                        "(|gap| 0.05, in the column's own unit; 4 finite cells compared)")
    share = pd.DataFrame({"k": ["a", "b"], "rate": [0.40, 0.82]})
    percent = pd.DataFrame({"k": ["a", "b"], "rate": [45.0, 80.0]})  # gaps 5 and 2 points after x100
    line = largest_gap(share, percent)
    assert line.startswith("rate at k = a: this run 40, paper 45 (|gap| 5, this run's share × 100")
    inf = pd.DataFrame({"k": ["a", "b"], "v": [float("inf"), 1.5]})
    assert "v at k = b" in largest_gap(inf, pd.DataFrame({"k": ["a", "b"], "v": [0.5, 1.0]}))
    assert largest_gap(ours, pd.DataFrame({"x": [1.0]})).startswith("no shared columns")


def test_differs_because_reads_profile_and_simulated_label(tmp_path):
    import json

    from agentstudies.book.paper.compare import differs_because

    prov = tmp_path / "provenance.json"
    prov.write_text(json.dumps({"run": {"profile": "quick"}, "simulated": "synthetic data with a planted effect"}))
    assert differs_because(prov) == ["smaller scale (quick profile)",
                                     "simulated: synthetic data with a planted effect", "planted design"]
    prov.write_text(json.dumps({"run": {"profile": "paper"}, "simulated": ""}))
    assert differs_because(prov) == []
    assert differs_because(tmp_path / "missing.json") == ["not run in this build"]


# ------------------------------------------------------------------ glossary vs method pages
#: Glossary entries whose definition states a sign or a direction; each is checked below
#: against the method page that states the same thing.
_DIRECTION = re.compile(r"\b(positive|negative|larger|smaller|below|above|low|high|fails? without|"
                        r"succeeds? without|increases?|decreases?)\b", re.I)
_OUTCOMES = re.compile(r"\b(fail|succeed)s?\s+without\b.*?\b(fail|succeed)s?\s+with\b", re.S)


def _glossary() -> dict[str, str]:
    body = (BOOK / "glossary.md").read_text().split("```{glossary}", 1)[1].split("```", 1)[0]
    entries = re.findall(r"^(\S[^\n]*)\n((?:  [^\n]*\n?)+)", body, flags=re.M)
    return {term.strip(): " ".join(line.strip() for line in text.splitlines()) for term, text in entries}


def _page(name: str) -> str:
    nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    return " ".join(" ".join(c.source.split()) for c in nb.cells if c.cell_type == "markdown")


def test_every_glossary_sign_or_direction_agrees_with_its_method_page():
    """Each glossary entry that states a sign or direction says what its method page says:
    the order of outcomes without / with recovery (rescue, harm), the threshold below which
    a SASST claim is abstained, the ESS formula whose low values mean few tasks dominate,
    the interaction's sign. A new entry stating a direction fails until it is checked here."""
    gloss = _glossary()
    checked = {"Rescue", "Harm", "Abstained", "Stability", "Effective sample size", "Interaction"}
    stating = {t for t, text in gloss.items() if _DIRECTION.search(re.sub(r"\$[^$]*\$", "", text))}
    assert stating <= checked, f"glossary entries stating a direction with no check: {sorted(stating - checked)}"
    assert {"Rescue", "Harm", "Interaction"} <= stating  # the regex still sees the known ones
    recovery = _page("method_recovery")
    for term in ("Rescue", "Harm"):
        g = _OUTCOMES.search(gloss[term]).groups()
        page = re.search(rf"{{term}}`{term.lower()}` \(([^)]*)\)", recovery)
        assert page, f"method_recovery no longer defines {term.lower()} in parentheses"
        assert _OUTCOMES.search(page.group(1)).groups() == g, term
    assert _OUTCOMES.search(gloss["Rescue"]).groups() == ("fail", "succeed")
    assert _OUTCOMES.search(gloss["Harm"]).groups() == ("succeed", "fail")
    sasst = _page("method_sasst")
    assert "Below the threshold the claim is *abstained*" in sasst
    assert "below the predeclared threshold" in gloss["Abstained"] and "abstained" in gloss["Stability"]
    assert "Jaccard" in gloss["Stability"] and "Jaccard" in sasst  # one definition of stability
    ess = r"\mathrm{ESS} = (\sum_k \omega_k)^2 / \sum_k \omega_k^2"
    assert ess in gloss["Effective sample size"] and ess in sasst
    from agentstudies.stats import effective_sample_size

    even, peaked = effective_sample_size(np.ones(10)), effective_sample_size(np.r_[91.0, np.ones(9)])
    assert even == pytest.approx(10) and peaked == pytest.approx(100**2 / (91**2 + 9))  # 1.2: one task dominates
    assert "low ESS means a few tasks dominate" in gloss["Effective sample size"]
    handoff = _page("method_handoff")
    assert "positive when that arrival-weighted gain is larger under the RL reacher" in gloss["Interaction"]
    assert "positive when the two roles are coupled" not in gloss["Interaction"] + handoff


def test_citations_have_authors_and_one_year_agreeing_with_the_prose():
    """One citation form: every bibliography entry has an author field (the handoff paper,
    whose copy names none, by its title as an anonymous work, with a note saying so) and one
    year; a typed "Name et al., YYYY" anywhere in the book uses that entry's year."""
    bib = (BOOK / "references.bib").read_text()
    entries = re.findall(r"^@\w+\{([^,]+),(.*?)^\}", bib, flags=re.M | re.S)
    years: dict[str, set[str]] = {}
    for key, body in entries:
        author = re.search(r"^\s*author\s*=\s*\{(.+)\},?\s*$", body, flags=re.M)
        assert author and author.group(1).strip("{} "), f"{key}: no author"
        found = re.findall(r"^\s*year\s*=\s*\{(\d{4})\}", body, flags=re.M)
        assert len(found) == 1, f"{key}: {len(found)} year fields"
        last = re.split(r",| and ", author.group(1).strip("{}"))[0].strip()
        years.setdefault(last, set()).add(found[0])
    handoff = dict(entries)["handoff2026"]
    assert "Reach or Solve?" in handoff and "not named in the copy we reproduce" in handoff
    texts = [p.read_text() for p in [*(REPO / "notebooks").glob("*.ipynb"), *BOOK.glob("*.md"), REPO / "README.md"]]
    typed = {m for t in texts for m in re.findall(r"\b([A-Z][a-z]+) et al\.,? \(?(\d{4})", t)}
    assert typed, "no typed citation found: the pattern is broken"
    for name, year in typed:
        if name in years:
            assert year in years[name], f"'{name} et al., {year}' but the bibliography says {sorted(years[name])}"
