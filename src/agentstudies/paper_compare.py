"""Our table beside the paper's: the one module of paper comparisons (issue 22 item 3).

Chapters and the book's generated pages compare this run with a paper through these
functions only; the paper's values are read from CSV (``data/paper/`` or a chapter's
``<table>_paper.csv``), shown beside ours and labelled, never used as a result.

* for a chapter's displayed table: :func:`beside_paper` (columns grouped ``this run`` /
  ``paper``) and :func:`stack_paper` (rows ``this run`` / ``paper`` under each key);
* for the results index (``agentstudies.booksite``): :func:`paper_counterparts` (which
  paper CSV belongs to a chapter's table), :func:`compare_tables` (a computed one-line
  comparison) and :func:`paper_items_index` (one :class:`PaperItemRow` per entry of the
  paper-quantity map ``agentstudies.paper_map``).

``agentstudies.chapter`` and ``agentstudies.booksite`` re-export these names, so existing
``from agentstudies.chapter import stack_paper`` keeps working.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["beside_paper", "stack_paper", "paper_counterparts", "compare_tables",
           "PaperItemRow", "paper_items_index", "TABLE_SUFFIXES"]

#: File suffixes of a table artifact.
TABLE_SUFFIXES = (".csv",)


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


@dataclass
class PaperItemRow:
    """One row of the results index: a paper item of ``agentstudies.paper_map`` in this build.

    ``written`` lists the entry's artifact files present under ``artifacts/<chapter>/``
    and ``missing`` those absent; ``comparison`` is :func:`compare_tables` of the first
    written CSV with the paper CSV ("" when either is absent).
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


def paper_items_index(root: Path | str, artifacts: Path | str | None = None,
                      items: Any = None) -> list[PaperItemRow]:
    """The rows of the results index, one per entry of the paper-quantity map, in its order.

    ``root`` holds ``data/paper/``; ``artifacts`` defaults to ``$AGENTSTUDIES_ARTIFACTS``
    or ``<root>/artifacts``; ``items`` defaults to ``agentstudies.paper_map.ITEMS``. A
    chapter not executed yet gives rows whose artifacts are all ``missing`` (not an
    error); an unreadable CSV gives a comparison "not comparable (<error type>)".
    """
    from agentstudies import paper_map

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
                row.comparison = compare_tables(pd.read_csv(table), pd.read_csv(row.paper_csv))
            except Exception as exc:  # noqa: BLE001 - reported, never hidden
                row.comparison = f"not comparable ({type(exc).__name__})"
        rows.append(row)
    return rows

