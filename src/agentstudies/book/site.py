"""Site machinery of the HTML book: generated index pages and an offline, CDN-free site.

A Sphinx extension (listed in ``book/_config.yml`` as ``agentstudies.book.site``) that

* adds the directive ``{results-index}``: first one row per paper table or figure of the
  paper-quantity map (``agentstudies.book.paper.map``: paper, item, a link to the chapter's
  section or figure, what this build regenerated and the paper CSV, with a computed
  comparison), then every regenerated table (CSV under ``artifacts/<chapter>/``) and
  figure (``{glue:figure}`` of the executed chapter, PNG artifacts) of every chapter in
  ``book/_toc.yml``, each with its paper counterpart (``data/paper/<chapter>_<table>.csv``
  or ``artifacts/<chapter>/<table>_paper.csv``) and a computed comparison where the two
  tables share key and value columns;
* adds the directive ``{exercise-index}``: the exercises of every chapter, linked;
* adds the directive ``{findings-index}``: verdicts by basis, chapter by chapter, for this
  build's profile (``artifacts/<chapter>/findings.csv``) and the archived paper-profile
  run where one exists (``data/paper_runs/<chapter>/findings.csv``;
  :func:`findings_by_basis`);
* numbers tables and figures in one scheme, "Table c.k" / "Figure c.k" on chapter ``c``
  (:func:`_one_numbering`);
* opens every chapter page with "What this chapter finds" (its ``findings.csv``) and "Run
  this chapter yourself" (install, the exact ``agentstudies run`` command, the download),
  and shows the values the run used under the parameters cell
  (``agentstudies.book.pageboxes``); links every glossary term on its first use on a page
  (``agentstudies.book.glossary_links``); turns bullet lines glued into a paragraph into a
  list (``agentstudies.book.runin_lists``); writes a glued value that is NaN as "–"
  (``agentstudies.book.pasted``);
* says how to execute the chapters when a plain ``jupyter-book build book/`` finds
  unexecuted ones (:func:`_check_executed`): none executed is an error naming the command,
  some missing a warning per chapter (it used to exit 0 with an empty book);
* switches off ``sphinx_thebe`` (Jupyter Book loads it unconditionally; its inline
  ``const THEBE_JS_URL`` script and a CDN URL are added to every page, twice on some
  builds, which throws "Identifier 'THEBE_JS_URL' has already been declared").

Both directives are generic over the table of contents: a new chapter appears in both
indexes without any edit here. The pure functions :func:`results_index`,
:func:`paper_items_index` and :func:`exercise_index` return plain data and are tested
without Sphinx. The paper comparisons (:func:`compare_tables`, :func:`paper_counterparts`,
:func:`paper_items_index`) live in ``agentstudies.book.paper.compare`` and are re-exported here.

The artifacts root is ``$AGENTSTUDIES_ARTIFACTS`` if set, else ``<root>/artifacts``;
``<root>`` is the folder above ``book/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstudies.book.glossary_links import link_first_uses
from agentstudies.book.pageboxes import add_page_boxes
from agentstudies.book.pasted import dash_missing_values
from agentstudies.book.runin_lists import lists_from_bullet_lines
from agentstudies.book.paper.compare import (  # noqa: F401 - re-exported: the comparisons moved out
    TABLE_SUFFIXES, ChapterResults, FigureEntry, PaperItemRow, TableEntry, _read_notebook, compare_tables,
    paper_counterparts, paper_items_index, results_index)

__all__ = [
    "TableEntry", "FigureEntry", "ChapterResults", "Exercise", "PaperItemRow",
    "SyllabusRow", "syllabus", "results_index", "paper_items_index", "exercise_index", "compare_tables", "paper_counterparts", "setup",
    "findings_by_basis",
]

@dataclass
class Exercise:
    """One exercise: chapter, 1-based number within the chapter, and its first line."""

    chapter: str
    number: int
    text: str


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^\s{0,3}(?:\d+[.)]|[-*+])\s+(.*)$")
_FENCE = re.compile(r"^\s*(`{3,}|:{3,}|~{3,})\s*(\{[^}]*\})?\s*(.*)$")


def _glued_values(nb: Any) -> dict[str, str]:
    """``{key: text}`` of the values a notebook glued (its outputs' ``scrapbook`` names)."""
    out: dict[str, str] = {}
    for cell in nb.cells if nb is not None else []:
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            data = o.get("data", {})
            text = next((data[k] for k in data if k.endswith("text/markdown")), None) or next(
                (data[k] for k in data if k.endswith("text/plain")), None)
            if name and isinstance(text, str):
                out[name] = text
    return out


def _glue_text(key_fmt: str, glued: dict[str, str]) -> str:
    """A ``{glue:text}`key:fmt``` role as the chapter shows it, or "(see the chapter)"."""
    key, _, fmt = key_fmt.partition(":")
    if key not in glued:
        return "(see the chapter)"
    value = glued[key]
    if fmt:
        try:
            return format(float(value), fmt)
        except ValueError:
            return value.strip("'\"")
    return value.strip("'\"")


def _clean(text: str, limit: int = 240, glued: dict[str, str] | None = None) -> str:
    glued = glued or {}
    text = re.sub(r"\{glue(?::text|:md)?\}`([^`]*)`", lambda m: _glue_text(m.group(1), glued), text)
    text = re.sub(r"\{[a-z:]+\}`([^`]*)`", r"\1", text)  # other roles: {term}`x` -> x
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links
    text = re.sub(r"(\*\*|__|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*]))", "", text).strip()  # emphasis
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    if len(re.findall(r"(?<!\\)\$", cut)) % 2:  # never cut inside $...$ math
        cut = cut[: cut.rfind("$")].rstrip()
    return cut + " …"


def exercise_index(root: Path | str, chapters: list[str] | None = None) -> dict[str, list[Exercise]]:
    """The exercises of every TOC chapter: ``{chapter: [Exercise, ...]}`` in TOC order.

    Exercises are read from the markdown under the chapter's ``Exercises`` heading (any
    level, until the next heading of the same or a higher level): each top-level list
    item, each sub-heading, or each ``{exercise}`` directive is one exercise; fenced
    blocks (solutions) are skipped. Executed copies in ``book/chapters/`` are read first,
    then ``notebooks/``. A chapter without exercises maps to an empty list.
    """
    from agentstudies.book.runner import toc_chapters

    root = Path(root)
    out: dict[str, list[Exercise]] = {}
    for chapter in chapters if chapters is not None else toc_chapters(root):
        nb, _ = _read_notebook(root / "book", root, chapter)
        found: list[str] = []
        if nb is not None:
            level = 0  # heading level of the Exercises section; 0 = not inside
            fence = None
            open_item = False
            for cell in nb.cells:
                if cell.cell_type != "markdown":
                    continue
                for line in cell.source.splitlines():
                    fm = _FENCE.match(line)
                    if fence is not None:
                        if fm and fm.group(1)[0] == fence[0] and len(fm.group(1)) >= len(fence) and not fm.group(2):
                            fence = None
                        continue
                    if fm and level:
                        fence, open_item = fm.group(1), False
                        if fm.group(2) and "exercise" in fm.group(2):
                            found.append(fm.group(3) or f"Exercise {len(found) + 1}")
                        continue
                    hm = _HEADING.match(line)
                    if hm:
                        n = len(hm.group(1))
                        if re.match(r"exercises?\b", hm.group(2), re.I):
                            level = n
                        elif level and n <= level:
                            level = 0
                        elif level:
                            found.append(hm.group(2))
                        continue
                    if level:
                        im = _ITEM.match(line)
                        if im and not line.startswith((" ", "\t")):
                            found.append(im.group(1))
                            open_item = True
                        elif open_item and line.strip() and line.startswith((" ", "\t")):
                            found[-1] += " " + line.strip()  # continuation of the item
                        else:
                            open_item = False
        glued = _glued_values(nb)
        out[chapter] = [Exercise(chapter, i, _clean(t, glued=glued)) for i, t in enumerate(found, 1)]
    return out


# ---------------------------------------------------------------------------- syllabus
SYLLABUS_FILE = Path("book") / "_syllabus.yml"
WORDS_PER_MINUTE = 200
DIFFICULTY = {1: "introductory", 2: "intermediate", 3: "advanced"}


@dataclass
class SyllabusRow:
    """One chapter of the course: metadata of ``book/_syllabus.yml`` plus measured times.

    ``reading_min``: words of the chapter's markdown / :data:`WORDS_PER_MINUTE`, rounded up;
    ``run_s``: the wall time of its executed copy in ``book/chapters/`` (papermill's
    ``duration``, ``run_source`` = "last build"), else the shipped paper-profile time of
    ``notebooks/durations.json`` (``run_source`` = "paper profile, shipped"), else None.
    """

    chapter: str
    title: str
    difficulty: int
    needs: list[str]
    week: int
    day: int
    kind: str
    reading_min: int
    run_s: float | None
    run_source: str


def _title(nb: Any, chapter: str) -> str:
    for cell in nb.cells if nb is not None else []:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return chapter


def syllabus(root: Path | str) -> list[SyllabusRow]:
    """The course in ``book/_toc.yml`` order, one row per chapter, from ``book/_syllabus.yml``.

    Raises
    ------
    ValueError
        If the syllabus file lists chapters in another order than the table of contents,
        misses one or lists one that is not there, names an unknown prerequisite, or a
        prerequisite that comes later in the course.
    """
    import json

    import yaml

    from agentstudies.book.runner import toc_chapters

    root = Path(root)
    meta = (yaml.safe_load((root / SYLLABUS_FILE).read_text()) or {}).get("chapters", {})
    toc = toc_chapters(root)
    if list(meta) != toc:
        raise ValueError(f"{SYLLABUS_FILE}: chapters {list(meta)} differ from book/_toc.yml's order {toc}")
    try:
        shipped = json.loads((root / "notebooks" / "durations.json").read_text()).get("paper", {})
    except (OSError, ValueError):
        shipped = {}
    rows = []
    for k, chapter in enumerate(toc):
        m = meta[chapter]
        for need in m.get("needs", []):
            if need not in toc[:k]:
                raise ValueError(f"{SYLLABUS_FILE}: {chapter} needs {need!r}, which is not an earlier chapter")
        nb, executed = _read_notebook(root / "book", root, chapter)
        words = sum(len(re.findall(r"\w+", c.source)) for c in (nb.cells if nb is not None else [])
                    if c.cell_type == "markdown")
        run_s, source = None, ""
        if executed and nb is not None and "duration" in nb.metadata.get("papermill", {}):
            run_s, source = float(nb.metadata["papermill"]["duration"]), "last build"
        elif chapter in shipped:
            run_s, source = float(shipped[chapter]), "paper profile, shipped"
        rows.append(SyllabusRow(chapter, _title(nb, chapter), int(m["difficulty"]), list(m.get("needs", [])),
                                int(m["week"]), int(m.get("day", 0)), str(m.get("kind", "")),
                                max(1, -(-words // WORDS_PER_MINUTE)), run_s, source))
    return rows


def _syllabus_nodes(env: Any) -> list[Any]:
    """The syllabus table: a numbered caption, one row per chapter (class ``syllabus-chapter``)."""
    from docutils import nodes

    rows = syllabus(_root_of(env))
    heads = ["#", "chapter", "difficulty", "read first", "reading", "run time", "week", "day"]
    table = nodes.table(classes=["syllabus-table"])
    sources = sorted({r.run_source for r in rows if r.run_source})
    table += nodes.title("", f"The course, in the sidebar's order ({len(rows)} chapters). Reading time: words "
                             f"at {WORDS_PER_MINUTE} a minute; run time: {' or '.join(sources) or 'not measured'}; "
                             "week: the one-semester path; day: the one-week path (– not on it).")
    group = nodes.tgroup(cols=len(heads))
    table += group
    group += [nodes.colspec(colwidth=w) for w in (3, 40, 12, 20, 8, 8, 5, 5)]
    thead = nodes.thead()
    thead += nodes.row("", *[nodes.entry("", nodes.paragraph("", h)) for h in heads])
    group += thead
    body = nodes.tbody()
    for i, r in enumerate(rows, 1):
        link = nodes.paragraph("", "", _doc_link(f"chapters/{r.chapter}", r.title))
        needs = nodes.paragraph()
        for j, need in enumerate(r.needs):
            needs += nodes.Text(", " if j else "")
            needs += _doc_link(f"chapters/{need}", need.replace("_", " "))
        run = "–" if r.run_s is None else (f"{r.run_s:.0f} s" if r.run_s < 120 else f"{r.run_s / 60:.0f} min")
        cells = [nodes.entry("", nodes.paragraph("", str(i))), nodes.entry("", link, classes=["syllabus-chapter"]),
                 nodes.entry("", nodes.paragraph("", DIFFICULTY.get(r.difficulty, str(r.difficulty)))),
                 nodes.entry("", needs if r.needs else nodes.paragraph("", "–")),
                 nodes.entry("", nodes.paragraph("", f"{r.reading_min} min")),
                 nodes.entry("", nodes.paragraph("", run)),
                 nodes.entry("", nodes.paragraph("", str(r.week))),
                 nodes.entry("", nodes.paragraph("", str(r.day) if r.day else "–"))]
        body += nodes.row("", *cells)
    group += body
    return [table]


# ------------------------------------------------------------------------------ Sphinx
def _doc_link(docname: str, text: str | None = None):
    from docutils import nodes
    from sphinx import addnodes

    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=f"/{docname}",
                                refexplicit=text is not None, refwarn=True)
    ref += nodes.inline("", text or docname)
    return ref


def _ref_link(label: str, text: str):
    from docutils import nodes
    from sphinx import addnodes

    ref = addnodes.pending_xref("", refdomain="std", reftype="ref", reftarget=label.lower(),
                                refexplicit=True, refwarn=True)
    ref += nodes.inline("", text)
    return ref


def _root_of(env: Any) -> Path:
    return Path(env.srcdir).parent


def _rel(path: Path, root: Path) -> str:
    for a, b in ((path, root), (path.resolve(), root.resolve())):  # data/ may be a link
        try:
            return str(a.relative_to(b))
        except ValueError:
            continue
    return path.name


def _anchor_link(env: Any, chapter: str, anchor: str, text: str):
    """A link to ``chapters/<chapter>`` at ``#anchor`` (a section id or a figure name)."""
    from docutils import nodes

    uri = env.app.builder.get_relative_uri(env.docname, f"chapters/{chapter}") + f"#{anchor}"
    return nodes.reference("", "", nodes.inline("", text), internal=True, refuri=uri)


def _paper_items_nodes(env: Any) -> list[Any]:
    """The paper-item table: one row per table or figure of ``agentstudies.book.paper.map``.

    Columns: paper, item, the chapter's section or figure (a link to its anchor), what this
    build regenerated (artifact files), the largest gap with its context
    (:func:`agentstudies.book.paper.compare.largest_gap`: column, row, both values, unit) and why
    this run can differ from the paper (profile, simulated label, planted design, from the
    chapter's ``provenance.json``). "paper: a figure only" only where the map has no CSV.
    """
    from docutils import nodes

    root = _root_of(env)
    rows = paper_items_index(root)
    heads = ["paper", "item", "where", "regenerated", "largest gap (this run − paper)", "why it can differ"]
    table = nodes.table(classes=["results-paper-items"])
    table += nodes.title("", f"Every paper table and figure this book regenerates ({len(rows)} items), "
                             "from the paper-quantity map; values from this build.")
    group = nodes.tgroup(cols=len(heads))
    table += group
    group += [nodes.colspec(colwidth=w) for w in (8, 8, 16, 16, 30, 22)]
    thead = nodes.thead()
    thead += nodes.row("", *[nodes.entry("", nodes.paragraph("", h)) for h in heads])
    group += thead
    body = nodes.tbody()
    for r in rows:
        regen = nodes.paragraph()
        for i, path in enumerate(r.written):
            regen += nodes.Text(", " if i else "")
            regen += nodes.literal("", path.name)
        if r.missing:
            regen += nodes.Text(("; " if r.written else "") + f"not in this build: {', '.join(r.missing)}")
        if r.paper_csv is None:
            gap = "paper: a figure only (no values to compare)"
        elif not r.written:
            gap = f"paper: {_rel(r.paper_csv, root)}; nothing regenerated in this build"
        else:
            gap = f"{r.gap or r.comparison or 'compare in the chapter'} (paper: {_rel(r.paper_csv, root)})"
        cells = [nodes.paragraph("", r.paper), nodes.paragraph("", r.item),
                 nodes.paragraph("", "", _anchor_link(env, r.chapter, r.anchor, f"{r.chapter}: {r.what}")),
                 regen, nodes.paragraph("", gap), nodes.paragraph("", "; ".join(r.reasons) or "–")]
        body += nodes.row("", *[nodes.entry("", c) for c in cells])
    group += body
    return [table]


def _results_nodes(env: Any) -> list[Any]:
    from docutils import nodes

    from agentstudies.book.paper.map import ITEMS

    root = _root_of(env)
    mapped = {(it.chapter, a) for it in ITEMS for a in it.artifacts} | {(it.chapter, it.anchor) for it in ITEMS}
    top = nodes.bullet_list()
    for entry in results_index(root):
        entry.tables = [t for t in entry.tables if (entry.chapter, t.path.name) not in mapped]
        entry.figures = [f for f in entry.figures if (entry.chapter, f.label) not in mapped
                         and (entry.chapter, f.file.name if f.file else f"{f.name}.png") not in mapped]
        item = nodes.list_item()
        para = nodes.paragraph()
        para += nodes.strong("", "", _doc_link(f"chapters/{entry.chapter}"))
        n_paper = sum(t.paper is not None for t in entry.tables)
        para += nodes.Text(
            f" — {len(entry.tables)} further table(s), {len(entry.figures)} further figure(s); "
            f"{n_paper} with a paper counterpart"
            + ("" if entry.executed else " (not executed yet)")
            + (f"; {entry.paper_run} archived in data/paper_runs/" if entry.paper_run else "")
        )
        item += para
        sub = nodes.bullet_list()
        for t in entry.tables:
            li = nodes.list_item()
            p = nodes.paragraph()
            p += nodes.Text("Table ")
            p += nodes.literal("", t.name)
            p += nodes.Text(f" ({t.shape[0]} × {t.shape[1]}); paper: ")
            if t.paper is not None:
                p += nodes.literal("", _rel(t.paper, root))
                p += nodes.Text(f" — {t.comparison}")
            else:
                p += nodes.Text("none (this repository's own table)")
            li += p
            sub += li
        for f in entry.figures:
            li = nodes.list_item()
            p = nodes.paragraph()
            p += nodes.Text("Figure ")
            if f.label:
                p += _ref_link(f.label, f.name)
            else:
                p += nodes.literal("", f.name)
            p += nodes.Text("; paper: " + (f.paper_ref or "—"))
            li += p
            sub += li
        if len(sub):
            item += sub
        top += item
    return [*_paper_items_nodes(env), nodes.rubric("", "Everything else each chapter wrote"), top]


def findings_by_basis(root: Path | str, artifacts: Path | str | None = None,
                      chapters: list[str] | None = None):
    """Verdict counts by basis, chapter by chapter: this build's ``findings.csv`` (column
    ``profile`` = "this build") and the archived paper-profile run's
    (``data/paper_runs/<chapter>/findings.csv``, "paper profile (archived)") where one
    exists. An archived table written before findings carried a basis takes the basis of
    this build's row of the same claim (the basis belongs to the claim's code, not to the
    data); a claim this build does not have is counted as "not stated".

    Returns :func:`agentstudies.findings.verdicts_by_basis`'s columns plus ``profile``;
    chapters without a findings table are left out.
    """
    import os

    import pandas as pd

    from agentstudies.book.runner import toc_chapters
    from agentstudies.findings import verdicts_by_basis

    root = Path(root)
    art = Path(artifacts or os.environ.get("AGENTSTUDIES_ARTIFACTS") or root / "artifacts")
    frames = []
    for chapter in chapters if chapters is not None else toc_chapters(root):
        build = art / chapter / "findings.csv"
        here = pd.read_csv(build, keep_default_na=False, na_values=[""]) if build.is_file() else None
        if here is not None:
            frames.append(verdicts_by_basis({chapter: here}).assign(profile="this build"))
        archived = root / "data" / "paper_runs" / chapter / "findings.csv"
        if archived.is_file():
            old = pd.read_csv(archived, keep_default_na=False, na_values=[""])
            if "basis" not in old.columns:
                known = dict(zip(here["finding"], here["basis"])) if here is not None and "basis" in here else {}
                old["basis"] = old["finding"].map(known).fillna("")
            frames.append(verdicts_by_basis({chapter: old}).assign(profile="paper profile (archived)"))
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True)


def _findings_nodes(env: Any) -> list[Any]:
    from docutils import nodes

    from agentstudies.findings import VERDICTS

    t = findings_by_basis(_root_of(env))
    if t.empty:
        return [nodes.paragraph("", "No chapter has written its findings table yet.")]
    short = {"reappears": "R", "same direction, magnitude differs": "S", "contradicted": "C",
             "inconclusive": "I", "not testable here": "N"}
    key = "; ".join(f"{v} = {k}" for k, v in short.items())
    table = nodes.table(classes=["results-findings-by-basis"])
    table += nodes.title("", "What each chapter's verdicts rest on: counts of verdicts (R/S/C/I/N) by chapter and "
                         "basis, for this build and the archived paper-profile run (findings.csv of each chapter)")
    group = nodes.tgroup(cols=5)
    table += group
    for _ in range(5):
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    head += nodes.row("", *[nodes.entry("", nodes.paragraph("", h)) for h in
                            ("chapter", "basis", "evidence", "this build (R/S/C/I/N)", "paper profile (R/S/C/I/N)")])
    group += head
    body = nodes.tbody()
    for (chapter, basis), g in t.groupby(["chapter", "basis"], sort=False):
        cells = [_doc_link(f"chapters/{chapter}", chapter), nodes.Text(basis),
                 nodes.Text("yes" if g["evidence"].iloc[0] else "no")]
        for prof in ("this build", "paper profile (archived)"):
            r = g[g["profile"] == prof]
            cells.append(nodes.Text(" / ".join(str(int(r[v].iloc[0])) for v in VERDICTS) if len(r) else "–"))
        body += nodes.row("", *[nodes.entry("", nodes.paragraph("", "", c)) for c in cells])
    group += body
    ev = t[t["evidence"]]
    note = (f"Counts of verdicts ({key}). Only method and measured rows are evidence: of "
            f"{int(t.loc[t['profile'] == 'this build', 'total'].sum())} findings in this build, "
            f"{int(ev.loc[ev['profile'] == 'this build', 'total'].sum())} rest on a method checked under a known "
            "truth or a measured subject; the others restate a simulation parameter (built in, judged on its "
            "neutral control) or hold by arithmetic. A paper-profile column shows '–' where no paper-profile "
            "run is archived.")
    return [nodes.paragraph("", note), table]


def _text_with_math(text: str):
    """A paragraph of ``text`` with each ``$...$`` span as an inline math node."""
    from docutils import nodes

    para = nodes.paragraph()
    for i, part in enumerate(re.split(r"((?<!\\)\$[^$]+?(?<!\\)\$|`[^`]+`)", text)):
        if i % 2 and part.startswith("$"):
            para += nodes.math(part[1:-1], part[1:-1])
        elif i % 2:
            para += nodes.literal(part[1:-1], part[1:-1])
        elif part:
            para += nodes.Text(part)
    return para


def _exercise_nodes(env: Any) -> list[Any]:
    from docutils import nodes

    top = nodes.bullet_list()
    for chapter, exercises in exercise_index(_root_of(env)).items():
        item = nodes.list_item()
        para = nodes.paragraph()
        para += nodes.strong("", "", _doc_link(f"chapters/{chapter}"))
        para += nodes.Text(f" — {len(exercises)} exercise(s)")
        item += para
        if exercises:
            sub = nodes.enumerated_list()
            for ex in exercises:
                li = nodes.list_item()
                li += _text_with_math(ex.text)
                sub += li
            item += sub
        top += item
    return [top]


def _make_directive(builder):
    from docutils.parsers.rst import Directive

    class _Index(Directive):
        has_content = False

        def run(self):  # noqa: D401 - docutils API
            env = self.state.document.settings.env
            env.metadata.setdefault(env.docname, {})["agentstudies-generated"] = True
            return builder(env)

    return _Index


# ------------------------------------------------------------------ one numbering
_KERNEL_TABLE_NUMBER = re.compile(r"<caption>Table \d+\. ")


def chapter_number(root: Path | str, docname: str) -> int | None:
    """1-based position of ``chapters/<name>`` in the sidebar's order (the syllabus "#");
    None for a page that is not a chapter (intro, syllabus, glossary, ...)."""
    from agentstudies.book.runner import toc_chapters

    name = docname.removeprefix("chapters/")
    chapters = toc_chapters(root) if docname.startswith("chapters/") else []
    return chapters.index(name) + 1 if name in chapters else None


def _one_numbering(app, doctree, docname):
    """The book's one numbering of tables and figures: "Table c.k" / "Figure c.k" on chapter c.

    Sphinx numbers captioned Markdown tables and ``{glue:figure}`` figures book-wide
    ("Fig. 25", "Table 6"), while :func:`agentstudies.book.table.render_table` numbers the
    kernel's tables from 1 ("Table 1."): two schemes on one page. Here, when a page is
    resolved, every numbered table (Sphinx's or a rendered ``<caption>Table k.``) and every
    numbered figure gets ``c.k`` in page order, ``c`` the chapter's place in the sidebar
    (just ``k`` on a page that is not a chapter). A paper's own numbers stay in the caption
    text ("the paper's Figure 9").
    """
    from docutils import nodes

    numbers = app.env.toc_fignumbers.setdefault(docname, {})
    std = app.env.get_domain("std")
    chap = chapter_number(_root_of(app.env), docname)
    count = {"table": 0, "figure": 0}

    def next_number(kind: str) -> tuple[int, ...]:
        count[kind] += 1
        return ((chap,) if chap else ()) + (count[kind],)

    for node in list(doctree.findall(lambda n: isinstance(n, (nodes.table, nodes.figure, nodes.raw)))):
        if isinstance(node, nodes.raw):
            if node.get("format") == "html" and _KERNEL_TABLE_NUMBER.search(node.astext()):
                text = _KERNEL_TABLE_NUMBER.sub(
                    lambda m: "<caption>Table " + ".".join(map(str, next_number("table"))) + ". ", node.astext())
                node.children[:] = [nodes.Text(text)]
            continue
        kind = std.get_enumerable_node_type(node)
        if kind in count and node["ids"] and node["ids"][0] in numbers.get(kind, {}):
            numbers[kind][node["ids"][0]] = next_number(kind)


def _always_outdated(app, env, added, changed, removed):
    """Pages with a generated index are re-read on every build (artifacts change)."""
    return [d for d, meta in env.metadata.items() if meta.get("agentstudies-generated")]


def _disable_thebe(app, config):
    """Remove sphinx_thebe's handlers: no thebe scripts, no CDN URL, no double ``const``."""
    for event, listeners in app.events.listeners.items():
        keep = [l for l in listeners if not getattr(l.handler, "__module__", "").startswith("sphinx_thebe")]
        listeners[:] = keep
    # its stylesheet was registered in setup(); the file is no longer copied, drop the link
    app.registry.css_files[:] = [c for c in app.registry.css_files if "thebe" not in str(c[0])]


def unexecuted_chapters(book_dir: Path) -> tuple[list[str], list[str]]:
    """``(chapters, missing)``: the TOC's chapters and those without an executed copy
    ``book/chapters/<name>.ipynb``."""
    from agentstudies.book.model import BookError, toc_chapters

    try:
        chapters = toc_chapters(book_dir.parent)
    except BookError:
        return [], []
    return chapters, [c for c in chapters if not (book_dir / "chapters" / f"{c}.ipynb").is_file()]


EXECUTE_HINT = ("execute them first: `agentstudies book` (or `make book`) runs every chapter and builds the book; "
                "`agentstudies book --only NAME` runs one; `agentstudies build` renders the executed ones")


def _check_executed(app) -> None:
    """Before reading: refuse a build with no executed chapter, warn about each missing one.

    Raises
    ------
    sphinx.errors.ExtensionError
        When no chapter of ``book/_toc.yml`` has an executed copy in ``book/chapters/``.
    """
    from sphinx.errors import ExtensionError
    from sphinx.util import logging as sphinx_logging

    chapters, missing = unexecuted_chapters(Path(app.srcdir))
    if chapters and len(missing) == len(chapters):
        raise ExtensionError(f"none of the {len(chapters)} chapters of book/_toc.yml is executed (book/chapters/ "
                             f"holds no <name>.ipynb); {EXECUTE_HINT}")
    log = sphinx_logging.getLogger(__name__)
    for chapter in missing:
        log.warning(f"chapter {chapter} is not executed (book/chapters/{chapter}.ipynb is missing); "
                    f"`agentstudies book --only {chapter}` executes it")


def setup(app):
    """Sphinx entry point (``extra_extensions: [agentstudies.book.site]``)."""
    app.connect("builder-inited", _check_executed)
    app.add_directive("results-index", _make_directive(_results_nodes))
    app.add_directive("exercise-index", _make_directive(_exercise_nodes))
    app.add_directive("findings-index", _make_directive(_findings_nodes))
    app.add_directive("syllabus", _make_directive(_syllabus_nodes))
    app.connect("config-inited", _disable_thebe)
    app.connect("env-get-outdated", _always_outdated)
    app.connect("doctree-resolved", _one_numbering)
    # chapter pages open with their result and a rerun box; glossary terms linked on first
    # use; bullet lines glued into a paragraph become a list (agentstudies.book.*)
    app.add_config_value("agentstudies_repository_url", "", "html")
    app.connect("doctree-resolved", add_page_boxes)
    app.connect("doctree-resolved", link_first_uses)
    app.connect("doctree-resolved", lists_from_bullet_lines)
    app.connect("doctree-resolved", dash_missing_values)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
