"""The paper-quantity map (``agentstudies.book.paper.map``) resolves, and covers what it claims.

* fast: every builder imports, every paper CSV exists, every anchor is a heading id or a
  figure ``:name:`` of the chapter's notebook, every table and figure the README's chapter
  table names is an entry, every ``data/paper`` table is some entry's counterpart, the
  ``where`` verb and its fuzzy lookup;
* smoke (``notebook``, ``slow``): each chapter's smoke run, made in this test session
  through the shared ``smoke_runs`` fixture (tests/conftest.py; no file of an earlier run
  is read), writes every artifact its entries name (or the entry says why not, and that
  reason is checked not to be stale), and every CSV it writes is mapped or internal.
"""

from __future__ import annotations

import re
from fnmatch import fnmatch
from pathlib import Path

import nbformat
import pytest
from docutils.nodes import make_id

from agentstudies.book import cli, runner
from agentstudies.book.paper import map as paper_map
from agentstudies.book.paper.map import INTERNAL, ITEMS

REPO = Path(__file__).resolve().parents[1]
TOC = runner.toc_chapters(REPO)
MAPPED_CHAPTERS = sorted({it.chapter for it in ITEMS} | set(INTERNAL))


# ------------------------------------------------------------------ entries resolve
@pytest.mark.parametrize("item", ITEMS, ids=lambda it: it.label)
def test_builder_imports_and_is_callable(item):
    obj = paper_map.resolve_builder(item.builder)
    assert callable(obj), f"{item.label}: builder {item.builder} is {type(obj).__name__}, not callable"


def test_resolve_builder_names_what_is_missing():
    with pytest.raises(AttributeError, match="no attribute 'no_such_table'"):
        paper_map.resolve_builder("agentstudies.studies.sasst.geometry.no_such_table")
    with pytest.raises(ImportError, match="no importable module"):
        paper_map.resolve_builder("no_such_package.table1")


@pytest.mark.parametrize("item", ITEMS, ids=lambda it: it.label)
def test_paper_csv_present(item):
    if item.paper_csv is None:
        assert item.item.startswith("Figure") or item.item.startswith("Table 8"), (
            f"{item.label}: only a figure (or the paper's worked example, Table 8) may lack a paper CSV")
        return
    assert (REPO / item.paper_csv).is_file(), f"{item.label}: {item.paper_csv} missing"


def _anchors(chapter: str) -> set[str]:
    nb = nbformat.read(REPO / "notebooks" / f"{chapter}.ipynb", as_version=4)
    out = set()
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            heading = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
            if heading:
                out.add(make_id(heading.group(1)))
            name = re.match(r"^\s*:name:\s*(\S+)", line)
            if name:
                out.add(name.group(1))
    return out


@pytest.mark.parametrize("item", ITEMS, ids=lambda it: it.label)
def test_anchor_is_a_heading_or_figure_of_the_chapter(item):
    assert item.chapter in TOC, f"{item.label}: chapter {item.chapter} is not in book/_toc.yml"
    assert item.paper in paper_map.PAPERS, f"{item.label}: paper {item.paper!r} not in PAPERS"
    anchors = _anchors(item.chapter)
    assert item.anchor in anchors, (
        f"{item.label}: anchor #{item.anchor} is neither a heading id nor a :name: in "
        f"notebooks/{item.chapter}.ipynb (headings/figures there: {sorted(anchors)})")


def test_every_toc_chapter_is_mapped_or_internal():
    assert sorted(TOC) == MAPPED_CHAPTERS, (
        "every TOC chapter needs paper_map entries or an INTERNAL entry, and nothing else: "
        f"TOC only {sorted(set(TOC) - set(MAPPED_CHAPTERS))}, map only {sorted(set(MAPPED_CHAPTERS) - set(TOC))}")


def test_labels_unique_and_no_artifact_both_mapped_and_internal():
    labels = [it.label for it in ITEMS]
    assert len(labels) == len(set(labels)), "two entries with the same paper and item"
    both = [(it.chapter, a) for it in ITEMS for a in it.artifacts if paper_map.is_internal(it.chapter, a)]
    assert not both, f"artifacts both mapped and marked internal: {both}"


def test_every_paper_table_in_data_paper_is_a_counterpart():
    used = {it.paper_csv for it in ITEMS}
    tables = {f"data/paper/{p.name}" for p in (REPO / "data" / "paper").glob("*.csv")
              if not p.stem.endswith("_notes")}
    assert tables - used == set(), f"data/paper tables no entry points at: {sorted(tables - used)}"


def _expand(numbers: str) -> list[str]:
    """ "1–3, 6, 8" -> ["1", "2", "3", "6", "8"]; "15 and 16" -> ["15", "16"]."""
    out = []
    for part in re.split(r",\s*|\s+and\s+", numbers.strip()):
        lo_hi = re.match(r"^(\d+)\s*[–-]\s*(\d+)$", part)
        if lo_hi:
            out += [str(n) for n in range(int(lo_hi.group(1)), int(lo_hi.group(2)) + 1)]
        elif part.isdigit():
            out.append(part)
    return out


def _readme_items() -> list[tuple[str, str]]:
    """(chapter, "Table 13") for every table/figure the README's chapter table names."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## What each chapter shows", 1)[1].split("\n## ", 1)[0]
    found = []
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        for chapter in re.findall(r"`(\w+)`", cells[0]):
            for kind, nums in re.findall(r"\b(Tables?|Figures?)\s+((?:\d+(?:\s*[–-]\s*\d+)?(?:,\s*|\s+and\s+)?)+)",
                                         cells[2]):
                found += [(chapter, f"{kind.rstrip('s')} {n}") for n in _expand(nums)]
    return found


def test_readme_items_parsed():
    items = _readme_items()
    # the README's table names SASST Tables 4-17 (14), handoff Tables 1-3, 6, 8 (5) and
    # Figures 2, 3, 5-10 (8)
    assert ("tau_workflow_stress", "Table 16") in items and ("alfworld_handoff", "Figure 10") in items
    assert len(items) == 14 + 5 + 8, items


@pytest.mark.parametrize("chapter, ref", _readme_items())
def test_where_answers_every_readme_item(chapter, ref):
    hits = [it for it in paper_map.find(ref) if it.chapter == chapter]
    assert hits, f"README's chapter table names {ref} for {chapter}; no paper_map entry answers it"


# ------------------------------------------------------------------ lookup and the CLI
def test_find_is_fuzzy_and_lists_ambiguous_queries():
    two = {"Handoff Table 2(a)", "Handoff Table 2(b)"}
    assert {it.label for it in paper_map.find("handoff Table 2")} == two
    assert {it.label for it in paper_map.find("Handof table 2")} == two  # a typo in the paper
    assert [it.label for it in paper_map.find("handoff table 2b")] == ["Handoff Table 2(b)"]
    assert [it.label for it in paper_map.find("SASST Table 6")] == ["SASST Table 6"]
    assert {it.label for it in paper_map.find("table 6")} == {"SASST Table 6", "Handoff Table 6"}
    assert [it.label for it in paper_map.find("eq. 9")] == ["Handoff Eq. 9"]
    assert [it.label for it in paper_map.find("fig 10")] == ["Handoff Figure 10"]
    assert paper_map.find("SASST Table 99") == []
    assert paper_map.find("handoff Table 13") == []  # Table 13 is SASST's
    with pytest.raises(ValueError, match="empty query"):
        paper_map.find("  ")


def test_where_prints_chapter_builder_artifact_and_paper_csv(capsys):
    assert cli.main(["where", "handoff", "Table", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 items match 'handoff Table 2'")
    for text in ("chapter:    alfworld_handoff", "agentstudies.handoff.analyze_handoff",
                 "alfworld_handoff/table2a_reach.csv", "alfworld_handoff/table2b_solve.csv",
                 "data/paper/alfworld_handoff_table2a.csv", "data/paper/alfworld_handoff_table2b.csv"):
        assert text in out
    assert cli.main(["where", "SASST Table 6"]) == 0
    out = capsys.readouterr().out
    assert "SmallClusterResult._table_6" in out and "data/paper/sasst_small_clusters_table6.csv" in out
    assert "match" not in out.splitlines()[0]


def test_where_without_a_match_fails_and_lists_known_items(capsys):
    assert cli.main(["where", "SASST Table 99"]) == 1
    err = capsys.readouterr().err
    assert "no paper item matches 'SASST Table 99'" in err and "Handoff Table 2(a)" in err


# ------------------------------------------------------------------ smoke runs
@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("chapter", MAPPED_CHAPTERS)
def test_smoke_run_writes_mapped_artifacts_and_nothing_unmapped(chapter, smoke_runs):
    smoke_runs.get(chapter)  # executed in this session (shared with test_notebooks)
    folder = smoke_runs.artifacts / chapter
    written = {p.name for p in folder.iterdir()}
    problems = []
    for it in ITEMS:
        if it.chapter != chapter:
            continue
        missing = [a for a in it.artifacts if a not in written]
        if missing and not it.not_in_smoke:
            problems.append(f"{it.label}: the smoke run wrote no {missing}")
        if it.not_in_smoke and not missing:
            problems.append(f"{it.label}: says 'not written at smoke' but all its artifacts were; "
                            "remove not_in_smoke")
    mapped = {a for it in ITEMS if it.chapter == chapter for a in it.artifacts}
    unmapped = sorted(f for f in written if fnmatch(f, "*.csv") and f not in mapped
                      and not paper_map.is_internal(chapter, f))
    if unmapped:
        problems.append(f"CSVs neither mapped nor marked internal (add them to paper_map.ITEMS or INTERNAL): "
                        f"{unmapped}")
    assert not problems, f"{chapter}:\n" + "\n".join(problems)


# ------------------------------------------------------------------ the results index
def test_results_index_rows_come_from_the_map(tmp_path):
    import pandas as pd

    from agentstudies.book import site as booksite
    from agentstudies.book.paper.map import PaperItem

    (tmp_path / "data" / "paper").mkdir(parents=True)
    pd.DataFrame({"k": ["a", "b"], "v": [0.5, 0.5]}).to_csv(tmp_path / "data/paper/ch_table1.csv", index=False)
    art = tmp_path / "art"
    (art / "ch").mkdir(parents=True)
    pd.DataFrame({"k": ["a", "b"], "v": [0.5, 0.2]}).to_csv(art / "ch" / "table1.csv", index=False)
    items = (PaperItem("SASST", "Table 1", "ch", "table-1", "x.y", ("table1.csv", "table1.png"),
                       "data/paper/ch_table1.csv", "first"),
             PaperItem("Handoff", "Figure 2", "ch", "fig-two", "x.z", ("figure2.png",), None, "second"))
    one, two = booksite.paper_items_index(tmp_path, art, items)
    assert (one.paper, one.item, one.chapter, one.anchor) == ("SASST", "Table 1", "ch", "table-1")
    assert one.written == [art / "ch" / "table1.csv"] and one.missing == ["table1.png"]
    # |0.2 - 0.5| = 0.3 is the largest difference, rows matched on k
    assert one.comparison == "2 row(s) matched on k; v: max |this run − paper| = 0.3"
    assert two.written == [] and two.missing == ["figure2.png"] and two.paper_csv is None
    assert two.comparison == ""
    # the default is the whole map, one row per entry, in its order
    rows = booksite.paper_items_index(tmp_path, art)
    assert [(r.paper, r.item) for r in rows] == [(it.paper, it.item) for it in ITEMS]
