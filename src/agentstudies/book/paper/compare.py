"""Our table beside the paper's: the one module of paper comparisons.

Chapters and the book's generated pages compare this run with a paper through these
functions only; the paper's values are read from CSV (``data/paper/`` or a chapter's
``<table>_paper.csv``), shown beside ours and labelled, never used as a result.

* for a chapter's displayed table: :func:`beside_paper` (columns grouped ``this run`` /
  ``paper``) and :func:`stack_paper` (rows ``this run`` / ``paper`` under each key);
* for the results index (``agentstudies.book.site``): :func:`paper_counterparts` (which
  paper CSV belongs to a chapter's table), :func:`compare_tables` (a computed one-line
  comparison) and :func:`paper_items_index` (one :class:`PaperItemRow` per entry of the
  paper-quantity map ``agentstudies.book.paper.map``) and :func:`results_index` (every table
  and figure a chapter wrote, each figure once, with its paper counterpart).

``agentstudies.book.chapter`` and ``agentstudies.book.site`` re-export these names, so existing
``from agentstudies.book.chapter import stack_paper`` keeps working.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pandas as pd

__all__ = ["beside_paper", "stack_paper", "paper_counterparts", "compare_tables", "largest_gap", "differs_because",
           "PaperItemRow", "paper_items_index", "TABLE_SUFFIXES",
           "TableEntry", "FigureEntry", "ChapterResults", "results_index"]

#: File suffixes of a table artifact.
TABLE_SUFFIXES = (".csv",)
FIGURE_SUFFIXES = (".png", ".svg", ".jpg")
_PAPER_REF = re.compile(r"\b(Figure|Fig\.?|Tables?|Eq\.|Equation)\s*(\d+[a-z]?)", re.I)


def _paper_refs(text: str) -> str:
    """"Figure 3, Table 4" from a caption or a file stem like ``table4_coverage``."""
    out: list[str] = []
    for word, num in _PAPER_REF.findall(text.replace("_", " ")):
        w = word.lower().rstrip(".s")
        name = {"fig": "Figure", "figure": "Figure", "table": "Table", "eq": "Eq.", "equation": "Eq."}.get(w, word)
        ref = f"{name} {num}"
        if ref not in out:
            out.append(ref)
    return ", ".join(out)


@dataclass
class TableEntry:
    """One regenerated table: ``name`` (file stem), its shape, and its paper counterpart."""

    name: str
    path: Path
    shape: tuple[int, int]
    paper: Path | None = None
    comparison: str = ""


@dataclass
class FigureEntry:
    """One figure: glue ``key`` (or file stem), label, caption and the paper item it mirrors."""

    name: str
    label: str | None = None
    caption: str = ""
    paper_ref: str = ""
    file: Path | None = None


@dataclass
class ChapterResults:
    """The tables and figures of one chapter (in TOC order)."""

    chapter: str
    tables: list[TableEntry] = field(default_factory=list)
    figures: list[FigureEntry] = field(default_factory=list)
    executed: bool = False
    paper_run: str = ""  # label of an archived paper-profile run (data/paper_runs/), if any




def beside_paper(
    this_run: pd.DataFrame, paper: pd.DataFrame, on: str | list[str]
) -> pd.DataFrame:
    """Join our table with the paper's, columns grouped under ``this run`` / ``paper``.

    Both tables are indexed by ``on``; rows present in only one table are kept (the other
    side shows NaN), so a missing row is visible rather than dropped. The paper's values
    are only ever shown beside ours, labelled, never used as a result.
    """
    keys = [on] if isinstance(on, str) else list(on)
    for name, df in (("this_run", this_run), ("paper", paper)):
        missing = [k for k in keys if k not in df.columns]
        if missing:
            raise KeyError(f"beside_paper: {name} table lacks key column(s) {missing}")
    a = this_run.set_index(keys)
    b = paper.set_index(keys)
    out = pd.concat({"this run": a, "paper": b}, axis=1, join="outer")
    return out


def stack_paper(
    this_run: pd.DataFrame, paper: pd.DataFrame, on: str | list[str], *, source: str = "source"
) -> pd.DataFrame:
    """Stack our table and the paper's as rows labelled ``this run`` / ``paper``.

    The narrow alternative to :func:`beside_paper` for the book's text column: both tables
    keep their own columns (union, NaN where one side lacks a column), each key of ``on``
    shows our row first and the paper's row under it, and the index is ``on`` plus
    ``source``. Keys present on one side only are kept (visible, not dropped).

    Raises
    ------
    KeyError
        If either table lacks a key column.
    """
    keys = [on] if isinstance(on, str) else list(on)
    for name, df in (("this_run", this_run), ("paper", paper)):
        missing = [k for k in keys if k not in df.columns]
        if missing:
            raise KeyError(f"stack_paper: {name} table lacks key column(s) {missing}")
    order = list(dict.fromkeys(list(map(tuple, this_run[keys].to_numpy())) + list(map(tuple, paper[keys].to_numpy()))))
    rank = {k: i for i, k in enumerate(order)}
    a = this_run.assign(**{source: "this run"})
    b = paper.assign(**{source: "paper"})
    cols = keys + [source] + [c for c in dict.fromkeys([*this_run.columns, *paper.columns]) if c not in keys]
    out = pd.concat([a, b], ignore_index=True)[cols]
    out["_rank"] = [rank[tuple(r)] for r in out[keys].to_numpy()]
    out["_side"] = (out[source] == "paper").astype(int)
    out = out.sort_values(["_rank", "_side"], kind="stable").drop(columns=["_rank", "_side"])
    return out.set_index(keys + [source])


def paper_counterparts(chapter: str, tables: list[str], paper_dir: Path | None,
                       artifacts: Path | None = None) -> dict[str, Path]:
    """Map a chapter's table names to the CSV holding the paper's values.

    Rules, in order: ``<artifacts>/<name>_paper.csv`` beside the table;
    ``<paper_dir>/<chapter>_<name>.csv``; else ``<paper_dir>/<chapter>_<key>.csv`` where
    ``<name>`` starts with ``<key>_`` (``table2a_reach`` <- ``table2a``), the longest such
    key, and only if no table is named ``<key>`` exactly.
    """
    out: dict[str, Path] = {}
    keys: dict[str, Path] = {}
    if paper_dir is not None and paper_dir.is_dir():
        prefix = f"{chapter}_"
        keys = {p.stem[len(prefix):]: p for p in sorted(paper_dir.glob(f"{prefix}*.csv"))}
    names = set(tables)
    for name in tables:
        if name.endswith("_paper"):
            continue
        if artifacts is not None and (artifacts / f"{name}_paper.csv").is_file():
            out[name] = artifacts / f"{name}_paper.csv"
        elif name in keys:
            out[name] = keys[name]
        else:
            cands = [k for k in keys if name.startswith(f"{k}_") and k not in names]
            if cands:
                out[name] = keys[max(cands, key=len)]
    return out


def _matched(ours: pd.DataFrame, paper: pd.DataFrame) -> tuple[pd.DataFrame, list[str], list[str], list[str]] | str:
    """Rows of ours and the paper's matched (see :func:`compare_tables`): ``(merged, keys,
    value columns, text columns)``, the paper's columns suffixed ``__paper``; or the plain
    reason why nothing can be compared."""
    common = [c for c in paper.columns if c in ours.columns]
    if not common:
        return "no shared columns (compare in the chapter)"

    def numeric(df: pd.DataFrame, c: str) -> bool:
        return pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])

    value_cols = [c for c in common if numeric(ours, c) and numeric(paper, c)
                  and (pd.api.types.is_float_dtype(ours[c]) or pd.api.types.is_float_dtype(paper[c]))]
    if not value_cols:
        return "no shared numeric columns (compare in the chapter)"
    others = [c for c in common if c not in value_cols]
    keys: list[str] = []
    for c in others:
        keys.append(c)
        if not paper.duplicated(subset=keys).any():
            break
    else:
        if keys and paper.duplicated(subset=keys).any():
            keys = []
    texts = [c for c in others if c not in keys]
    intervals = [f"{v}_{s}" for v in value_cols for s in ("low", "high") if f"{v}_{s}" in paper.columns]
    a = ours[keys + value_cols + texts].copy()
    b = paper[keys + value_cols + texts + [c for c in intervals if c not in keys + value_cols + texts]].copy()
    if keys:
        for k in keys:
            a[k], b[k] = a[k].astype(str), b[k].astype(str)
        merged = a.merge(b.add_suffix("__paper").rename(columns={f"{k}__paper": k for k in keys}),
                         on=keys, how="inner")
    elif len(a) == len(b):
        merged = pd.concat([a.reset_index(drop=True), b.add_suffix("__paper").reset_index(drop=True)], axis=1)
    else:
        return "no shared key columns (compare in the chapter)"
    if merged.empty:
        return "no matching rows (this run's settings differ from the paper's)"
    return merged, keys, value_cols, texts


def compare_tables(ours: pd.DataFrame, paper: pd.DataFrame) -> str:
    """A one-line, computed comparison of our table with the paper's (no judgement typed).

    Value columns are the numeric columns of the same name in both tables with a float in
    at least one of them. Key columns are the shortest prefix (in the paper's column
    order) of the other shared columns that identifies the paper's rows uniquely; rows are
    matched on them (with no key, by position if both tables have as many rows). For each
    value column the line gives the largest absolute difference and, where the paper gives
    an interval (``<col>_low``/``<col>_high``), how many of our values fall inside it; each
    remaining shared text column (e.g. a status) is reported as "equal in k of n".
    Returns a plain reason when nothing can be compared.
    """
    match = _matched(ours, paper)
    if isinstance(match, str):
        return match
    merged, keys, value_cols, texts = match
    parts = []
    for v in value_cols:
        diff = (merged[v] - merged[f"{v}__paper"]).abs().dropna()
        if diff.empty:
            continue
        text = f"{v}: max |this run − paper| = {diff.max():.3g}"
        lo, hi = f"{v}_low__paper", f"{v}_high__paper"
        if lo in merged and hi in merged:
            inside = int(((merged[v] >= merged[lo]) & (merged[v] <= merged[hi])).sum())
            text += f", inside the paper's interval in {inside} of {len(merged)}"
        parts.append(text)
    for t in texts:
        same = int((merged[t].astype(str) == merged[f"{t}__paper"].astype(str)).sum())
        parts.append(f"{t}: equal in {same} of {len(merged)}")
    if not parts:
        return "no overlapping values (compare in the chapter)"
    on = ", ".join(keys) if keys else "row order"
    return f"{len(merged)} row(s) matched on {on}; " + "; ".join(parts)


def largest_gap(ours: pd.DataFrame, paper: pd.DataFrame) -> str:
    """The largest |this run − paper| over all matched cells, with its context (one sentence).

    "coverage at M = 500, rule = fixed: this run 0.912, paper 0.95 (|gap| 0.038, in the
    column's own unit; 8 finite cells compared)": the column, the key of the row (or its
    position when rows are matched by order), both values and how many cells were compared
    (an infinite difference is not a gap: skipped). A column that is a share (all
    |values| <= 1) in this run but reads above 1.5 in the paper is compared as a percent
    (×100), and the sentence says so. Rows are matched as in :func:`compare_tables`;
    returns that function's plain reason when nothing can be compared, "no overlapping
    values" when every pair has a missing side.
    """
    match = _matched(ours, paper)
    if isinstance(match, str):
        return match
    merged, keys, value_cols, _ = match
    best, n, scaled = None, 0, []
    for v in value_cols:
        ours_v, theirs = merged[v].astype(float), merged[f"{v}__paper"].astype(float)
        if ours_v.abs().max() <= 1 and theirs.abs().max() > 1.5:  # a share beside a percent
            ours_v, merged[v] = 100 * ours_v, 100 * ours_v
            scaled.append(v)
        diff = (ours_v - theirs).abs().replace(np.inf, np.nan)
        n += int(diff.notna().sum())
        if diff.notna().any() and (best is None or diff.max() > best[0]):
            best = (float(diff.max()), v, int(diff.fillna(-1.0).to_numpy().argmax()))
    if best is None:
        return "no overlapping values (compare in the chapter)"
    gap, col, i = best
    row = merged.iloc[i]
    where = ", ".join(f"{k} = {row[k]}" for k in keys) if keys else f"row {i + 1}"
    unit = ("this run's share × 100, the paper's column reads as percent" if col in scaled
            else "in the column's own unit")
    return (f"{col} at {where}: this run {row[col]:.3g}, paper {row[f'{col}__paper']:.3g} "
            f"(|gap| {gap:.3g}, {unit}; {n} finite cells compared)")


@dataclass
class PaperItemRow:
    """One row of the results index: a paper item of ``agentstudies.book.paper.map`` in this build.

    ``written`` lists the entry's artifact files present under ``artifacts/<chapter>/``
    and ``missing`` those absent; ``comparison`` is :func:`compare_tables` of the first
    written CSV with the paper CSV ("" when either is absent) and ``gap`` its
    :func:`largest_gap`; ``reasons`` why this run's values can differ from the paper's,
    read from the chapter's ``provenance.json`` (:func:`differs_because`).
    """

    paper: str
    item: str
    chapter: str
    anchor: str
    what: str
    builder: str
    written: list[Path] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    paper_csv: Path | None = None
    comparison: str = ""
    gap: str = ""
    reasons: list[str] = field(default_factory=list)


def paper_items_index(root: Path | str, artifacts: Path | str | None = None,
                      items: Any = None) -> list[PaperItemRow]:
    """The rows of the results index, one per entry of the paper-quantity map, in its order.

    ``root`` holds ``data/paper/``; ``artifacts`` defaults to ``$AGENTSTUDIES_ARTIFACTS``
    or ``<root>/artifacts``; ``items`` defaults to ``agentstudies.book.paper.map.ITEMS``. A
    chapter not executed yet gives rows whose artifacts are all ``missing`` (not an
    error); an unreadable CSV gives a comparison "not comparable (<error type>)".
    """
    from agentstudies.book.paper import map as paper_map

    root = Path(root)
    art = Path(artifacts or os.environ.get("AGENTSTUDIES_ARTIFACTS") or root / "artifacts")
    rows = []
    for it in paper_map.ITEMS if items is None else items:
        row = PaperItemRow(it.paper, it.item, it.chapter, it.anchor, it.what, it.builder,
                           paper_csv=root / it.paper_csv if it.paper_csv else None)
        for name in it.artifacts:
            path = art / it.chapter / name
            if path.is_file():
                row.written.append(path)
            else:
                row.missing.append(name)
        table = next((p for p in row.written if p.suffix in TABLE_SUFFIXES), None)
        if table is not None and row.paper_csv is not None and row.paper_csv.is_file():
            try:
                ours, theirs = pd.read_csv(table), pd.read_csv(row.paper_csv)
                row.comparison, row.gap = compare_tables(ours, theirs), largest_gap(ours, theirs)
            except Exception as exc:  # noqa: BLE001 - reported, never hidden
                row.comparison = row.gap = f"not comparable ({type(exc).__name__})"
        row.reasons = differs_because(art / it.chapter / "provenance.json")
        rows.append(row)
    return rows



def differs_because(provenance: Path) -> list[str]:
    """Why a chapter's values can differ from the paper's, read from its ``provenance.json``.

    "smaller scale (quick profile)" unless the run used the ``paper`` profile; "simulated:
    <the chapter's simulated label>" when it declares one; "planted design" when that label
    says the effect was planted. A chapter not run yet (no file, or unreadable JSON) gives
    ``["not run in this build"]``.
    """
    import json

    try:
        prov = json.loads(Path(provenance).read_text())
    except (OSError, ValueError):
        return ["not run in this build"]
    out = []
    profile = (prov.get("run") or {}).get("profile", "unknown")
    if profile != "paper":
        out.append(f"smaller scale ({profile} profile)")
    sim = str(prov.get("simulated") or "").strip()
    if sim:
        out.append(f"simulated: {sim}")
        if "planted" in sim.lower():
            out.append("planted design")
    return out


# -------------------------------------------------------------------------- notebooks
_GLUE_FIGURE = re.compile(r"^(`{3,}|:{3,})\{glue:figure\}\s+(\S+)\s*$")


def _glued_figures(nb: Any) -> list[FigureEntry]:
    """``{glue:figure}`` blocks of the markdown cells: key, ``:name:`` and caption."""
    figures = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.splitlines()
        i = 0
        while i < len(lines):
            m = _GLUE_FIGURE.match(lines[i].strip())
            if not m:
                i += 1
                continue
            fence, key = m.group(1), m.group(2)
            label, caption = None, []
            i += 1
            while i < len(lines) and lines[i].strip() != fence:
                line = lines[i].strip()
                if line.startswith(":name:"):
                    label = line.removeprefix(":name:").strip()
                elif not line.startswith(":") and line:
                    caption.append(line)
                i += 1
            text = " ".join(caption)
            figures.append(FigureEntry(key, label, text, _paper_refs(text)))
            i += 1
    return figures


_SAVE_CALL = re.compile(r"""\.save_figure\(\s*(\w+)\s*,\s*["']([^"']+)["']""")
_GLUE_CALL = re.compile(r"""\.glue\(\s*["']([^"']+)["']\s*,\s*(\w+)\s*\)""")
_FIGURE_CALL = re.compile(r"""\.figure\(\s*["']([^"']+)["']\s*,\s*[^,()]+,\s*["']([^"']+)["']""")


def _read_notebook(book: Path, root: Path, chapter: str) -> tuple[Any | None, bool]:
    executed = book / "chapters" / f"{chapter}.ipynb"
    source = root / "notebooks" / f"{chapter}.ipynb"
    for path, is_exec in ((executed, True), (source, False)):
        if path.is_file():
            try:
                return nbformat.read(path, as_version=4), is_exec
            except Exception:  # noqa: BLE001 - an unreadable notebook is reported as missing
                continue
    return None, False


def results_index(root: Path | str, artifacts: Path | str | None = None,
                  chapters: list[str] | None = None) -> list[ChapterResults]:
    """Every regenerated table and figure of every TOC chapter, with paper counterparts.

    ``root`` holds ``book/`` (with ``_toc.yml`` and executed ``chapters/``), ``notebooks/``
    and ``data/paper/``; ``artifacts`` defaults to ``$AGENTSTUDIES_ARTIFACTS`` or
    ``<root>/artifacts``. Tables are the chapter's CSV artifacts (``*_paper.csv`` files
    are shown as counterparts, not as tables); figures are the ``{glue:figure}`` blocks of
    the executed notebook plus PNG artifacts not already covered by a glued figure key.
    A chapter without artifacts yields an entry with empty lists (not an error).
    """
    from agentstudies.book.runner import toc_chapters

    root = Path(root)
    art = Path(artifacts or os.environ.get("AGENTSTUDIES_ARTIFACTS") or root / "artifacts")
    paper_dir = root / "data" / "paper"
    out = []
    for chapter in chapters if chapters is not None else toc_chapters(root):
        folder = art / chapter
        entry = ChapterResults(chapter)
        files = sorted(folder.iterdir()) if folder.is_dir() else []
        csvs = [p for p in files if p.suffix in TABLE_SUFFIXES]
        names = [p.stem for p in csvs]
        papers = paper_counterparts(chapter, names, paper_dir, folder)
        for p in csvs:
            if p.stem.endswith("_paper") and p.stem.removesuffix("_paper") in names:
                continue
            try:
                df = pd.read_csv(p)
            except Exception:  # noqa: BLE001 - an empty/odd CSV is still listed
                df = pd.DataFrame()
            t = TableEntry(p.stem, p, df.shape, papers.get(p.stem))
            if t.paper is not None:
                try:
                    t.comparison = compare_tables(df, pd.read_csv(t.paper))
                except Exception as exc:  # noqa: BLE001 - reported, never hidden
                    t.comparison = f"not comparable ({type(exc).__name__})"
            entry.tables.append(t)
        if (root / "data" / "paper_runs" / chapter).is_dir():
            from agentstudies.book.paper.runs import ChecksumError, load_run

            try:
                entry.paper_run = load_run(chapter, root).label
            except (FileNotFoundError, ChecksumError) as exc:
                entry.paper_run = f"archived paper-profile run unusable: {exc}"
        nb, entry.executed = _read_notebook(root / "book", root, chapter)
        saved_as: dict[str, str] = {}
        if nb is not None:
            entry.figures = _glued_figures(nb)
            for c in (c for c in nb.cells if c.cell_type == "code"):
                saved_as |= dict(_FIGURE_CALL.findall(c.source))  # ch.figure(key, fig, name): name.png
                calls = sorted([(m.start(), "save", m.group(1), m.group(2)) for m in _SAVE_CALL.finditer(c.source)]
                               + [(m.start(), "glue", m.group(2), m.group(1)) for m in _GLUE_CALL.finditer(c.source)])
                saved: dict[str, str] = {}  # ch.save_figure(fig, name) ... ch.glue(key, fig), in cell order
                for _, kind, var, text in calls:
                    if kind == "save":
                        saved[var] = text
                    elif var in saved:
                        saved_as[text] = saved[var]
        for f in entry.figures:  # the PNG a glued figure was saved as: ch.figure(key, fig, name),
            for stem in (saved_as.get(f.name), f.name, f.name.removeprefix("fig_")):  # or save_figure
                if stem and (folder / f"{stem}.png").is_file():
                    f.file = folder / f"{stem}.png"
                    break
        glued = {f.name for f in entry.figures} | {f.file.stem for f in entry.figures if f.file}
        for p in files:
            if p.suffix in FIGURE_SUFFIXES and p.stem not in glued:
                entry.figures.append(FigureEntry(p.stem, None, "", _paper_refs(p.stem), p))
        out.append(entry)
    return out
