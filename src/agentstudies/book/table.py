"""The one table renderer of the book: every table a chapter displays.

:class:`Table` (shown by ``Chapter.table`` and, inside a chapter, by every DataFrame,
Series or Styler a cell displays: :func:`install_table_formatter`) renders theme-consistent
HTML with a numbered caption, fixed decimals per column, integers as integers and "–" with
a footnote for a missing value (never ``nan``/``inf``/``<NA>``/``None``). The number in a
caption ("Table k.") counts the tables of the running kernel; the built book renumbers
every table of a chapter page in the book's one scheme (``agentstudies.book.site``).
:func:`compact` makes a display copy whose headers can wrap.

``agentstudies.book.chapter`` re-exports these names.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

__all__ = ["Table", "render_table", "install_table_formatter", "compact", "MISSING_PAPER", "MISSING_RUN"]


def compact(table: Any, caption: str | None = None, *, unit: str | None = None) -> Any:
    """A display copy of a table whose headers can wrap: underscores become spaces.

    ``caption`` and ``unit`` (what the table is, the unit of its numbers) are stored in
    the copy's ``attrs`` and shown by :class:`Table` in its numbered caption.

    Column names, index names and string index values of a DataFrame or Series get spaces
    for underscores (``abstention_or_failure`` -> ``abstention or failure``), so the book's
    text column can wrap them instead of scrolling. Values are unchanged. Anything else
    (a Styler, a string) is returned as is. Use it for display only; saved tables keep
    their names.
    """
    if _is_styler(table) and caption is not None:
        return table.set_caption(caption)
    if not isinstance(table, (pd.DataFrame, pd.Series)):
        return table

    def nice(x: Any) -> Any:
        return x.replace("_", " ") if isinstance(x, str) else x

    out = table.copy()
    if isinstance(out, pd.DataFrame):
        out.columns = out.columns.map(lambda c: tuple(nice(v) for v in c) if isinstance(c, tuple) else nice(c))
    else:
        out.name = nice(out.name)
    if isinstance(out.index, pd.MultiIndex):
        out.index = out.index.set_levels([lvl.map(nice) for lvl in out.index.levels], verify_integrity=False)
        out.index = out.index.set_names([nice(n) for n in out.index.names])
    else:
        out.index = out.index.map(nice)
        out.index.name = nice(out.index.name)
    if caption is not None:
        out.attrs["caption"] = caption
    if unit is not None:
        out.attrs["unit"] = unit
    return out


# ------------------------------------------------------------------------------ tables
#: What a missing cell means, by the kind of row it is in (shown as a footnote under "–").
MISSING_PAPER = "the paper does not report this value"
MISSING_RUN = "not defined in this run (no rows in the group, or the quantity does not apply)"
_BAD_TEXT = {"nan", "NaN", "NAN", "<NA>", "None", "NaT", "inf", "-inf", "+inf", "Inf", "-Inf", "nan%", ""}
_TABLE_COUNTER = {"n": 0}
_SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")  # a column name like ci_low: shown as "ci low"
_PLAIN_NUMBER = re.compile(r"^\s*[-+]?\d+(\.\d+)?\s*$")  # a Styler's default/precision format
#: a cell that holds a number, a number with a unit or interval ("0.12 [0.05, 0.20]",
#: "41.7%", "3 / 12", "∞", "–"): kept on one line and right-aligned
_NUMERIC_CELL = re.compile(r"^[\s\d.,%+\-−–∞×/\[\]()<>=≤≥±]*$")


@dataclass
class Table:
    """A displayed table: our one renderer for every table a chapter shows.

    ``display(Table(df, "what it is", unit="pp"))`` or ``ch.table(df, ...)`` shows ``df``
    as theme-consistent HTML with a numbered caption "Table k. <caption> Unit: <unit>.
    n = <rows> rows." (k counts the chapter's tables). Inside a chapter every DataFrame,
    Series and pandas Styler a cell displays goes through this renderer too
    (:func:`install_table_formatter`), so a caption set with ``df.attrs["caption"]`` or a
    Styler's ``set_caption`` is kept.

    Formatting: integer columns (and float columns whose finite values are all whole
    numbers) as integers; other float columns with one fixed number of decimals per column
    (``decimals``: an int for all, a dict column -> int, else chosen from the column's
    largest magnitude: 1 from 100, 2 from 1, 3 below 1, 4 below 0.01); a Styler's own
    ``.format`` is kept for the cells it covers. A missing value (NaN, None, ``<NA>``) shows
    as "–" with a footnote saying why (``missing``: text, else "the paper does not report
    this value" on a row labelled ``paper`` and "not defined in this run" elsewhere);
    ±inf shows as "∞"/"−∞". The index is shown only when it means something (named, a
    MultiIndex, or not the default 0..n-1 positions). ``n`` (default: the number of rows)
    and ``n_of`` (default "rows", e.g. "tasks") say what the caption's n counts.

    Raises
    ------
    TypeError
        If ``data`` is not a DataFrame, Series or Styler.
    """

    data: Any
    caption: str | None = None
    unit: str | None = None
    decimals: int | Mapping[str, int] | None = None
    missing: str | None = None
    index: bool | None = None
    n: int | None = None
    n_of: str | None = None

    def __post_init__(self) -> None:
        self._formats: dict[tuple[int, int], Any] = {}
        if _is_styler(self.data):
            styler = self.data
            if self.caption is None and isinstance(styler.caption, str):
                self.caption = styler.caption
            hidden = getattr(styler, "hide_index_", [False])
            if self.index is None and all(hidden):
                self.index = False
            self._formats = {k: v for k, v in dict(styler._display_funcs).items()}
            self.data = styler.data
        if isinstance(self.data, pd.Series):
            self.data = self.data.to_frame()
        if not isinstance(self.data, pd.DataFrame):
            raise TypeError(f"Table: expected a DataFrame, Series or Styler, got {type(self.data).__name__}")
        if self.caption is None:
            self.caption = self.data.attrs.get("caption")
        if self.unit is None:
            self.unit = self.data.attrs.get("unit")

    def _repr_html_(self) -> str:
        _TABLE_COUNTER["n"] += 1
        return render_table(self, number=_TABLE_COUNTER["n"])


def _is_styler(obj: Any) -> bool:
    return type(obj).__name__ == "Styler" and hasattr(obj, "data")


def _show_index(df: pd.DataFrame, index: bool | None) -> bool:
    if index is not None:
        return index
    idx = df.index
    if isinstance(idx, pd.MultiIndex) or any(n is not None for n in idx.names):
        return True
    positional = isinstance(idx, pd.RangeIndex) or (
        pd.api.types.is_integer_dtype(idx) and list(idx) == list(range(len(idx))))
    return not (positional and (not isinstance(idx, pd.RangeIndex) or (idx.start == 0 and idx.step == 1)))


def _column_decimals(values: pd.Series, decimals: int | Mapping[str, int] | None, name: Any) -> int | None:
    """Decimals for a float column (None: print as integers)."""
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    finite = x[np.isfinite(x)]
    if isinstance(decimals, Mapping):
        key = name if name in decimals else (name[-1] if isinstance(name, tuple) and name[-1] in decimals else None)
        if key is not None:
            return int(decimals[key])
    elif decimals is not None:
        return int(decimals)
    if finite.size == 0 or (np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 1e15)):
        return None
    m = float(np.max(np.abs(finite)))
    chosen = 1 if m >= 100 else 2 if m >= 1 else 3 if m >= 0.01 else 4
    return min(chosen, _carried_decimals(finite))


def _carried_decimals(finite: np.ndarray) -> int:
    """The fewest decimals that write every value exactly (12 significant digits; at most 12).

    A column rounded upstream to 2 decimals (0.27 for 0.2667) is shown with 2, not padded
    to 3 ("0.270" would claim a digit the value no longer has).
    """
    for d in range(0, 13):
        if all(float(f"{v:.{d}f}") == float(f"{v:.12g}") for v in finite.tolist()):
            return d
    return 12


def _fmt_number(v: Any, dec: int | None) -> str | None:
    """A number as text, or None when the value is missing."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):d}"
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if np.isnan(f):
            return None
        if np.isinf(f):
            return "∞" if f > 0 else "−∞"
        text = f"{f:.0f}" if dec is None else f"{f:.{dec}f}"
        return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # no "-0.000"
    if isinstance(v, (tuple, list)):
        return ", ".join(_fmt_number(x, dec) or "–" for x in v)  # (True, 'passed', None): yes, passed, –
    return str(v)


def _clean_text(v: str) -> str:
    """A text cell as a reader should see it: "(False, True)" as "no, yes", "[nan, nan]" as
    "[–, –]", "->" as "→" (an arrow that cannot break after its hyphen), the hyphens of a
    one-word cell ("gpt-5-2_sierra") as non-breaking hyphens; other text unchanged."""
    import ast

    t = v.strip()
    if t[:1] in "([" and t[-1:] in ")]" and re.search(r"\b(True|False|None)\b", t):
        try:
            value = ast.literal_eval(t)
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, (tuple, list)):
            return _fmt_number(value, None) or "–"
    t = re.sub(r"(?<![\w.])(nan|NaN|<NA>|None)(?![\w])", "–", v).replace("->", "→")
    if t and not any(ch.isspace() for ch in t):  # one identifier (a run name): its hyphens do not break
        t = re.sub(r"(?<=\w)-(?=\w)", "\u2011", t)
    return t


_CODE_SPAN = re.compile(r"`([^`\s]+)`|(?<![\w.`])([A-Za-z_]\w+(?:\.[A-Za-z_*][\w*]+)+)(?![\w`])")


def _cell_html(text: str) -> str:
    """A text cell as HTML: an identifier (`` `name` `` or a dotted ``Class.attr_name``) as
    inline code that may break after each ``.`` and ``_`` (``<wbr>``), never inside a name's
    letters; the rest escaped."""
    out, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        name = m.group(1) or m.group(2)
        if m.group(2) and re.fullmatch(r"[\d.]+", name):
            continue
        out.append(html.escape(text[last:m.start()]))
        out.append('<code class="agentstudies-ident">'
                   + re.sub(r"([._])", r"\1<wbr>", html.escape(name)) + "</code>")
        last = m.end()
    return "".join(out) + html.escape(text[last:])


def _is_paper_row(df: pd.DataFrame, i: int) -> bool:
    key = df.index[i]
    labels = list(key) if isinstance(key, tuple) else [key]
    labels += [v for v in df.iloc[i].to_numpy() if isinstance(v, str)]
    return any(isinstance(v, str) and v.strip().lower().startswith("paper") for v in labels)


def _cells(t: Table) -> tuple[list[list[str]], set[str]]:
    """The body as text, column by column formatted; and the footnotes needed."""
    df = t.data
    notes: set[str] = set()
    cols = []
    for j, name in enumerate(df.columns):
        col = df.iloc[:, j]
        mixed = col.dtype == object  # e.g. a transposed table: each value formatted by its type
        dec = _column_decimals(col, t.decimals, name) if pd.api.types.is_float_dtype(col) or mixed else None
        paper_col = any(isinstance(x, str) and x.strip().lower().startswith("paper")
                        for x in (name if isinstance(name, tuple) else (name,)))
        out = []
        for i, v in enumerate(col.to_numpy()):
            fn = t._formats.get((i, j))
            text = None
            if fn is not None and not (v is None or (isinstance(v, float) and np.isnan(v))):
                try:
                    text = str(fn(v))
                except Exception:  # noqa: BLE001 - a format that does not apply: ours instead
                    text = None
            if text is None or text.strip() in _BAD_TEXT or _PLAIN_NUMBER.match(text):
                # a mixed column (a transposed table) holds one quantity per row: decimals by value
                dv = _column_decimals(pd.Series([v]), t.decimals, name) if mixed and isinstance(
                    v, (float, np.floating)) else dec
                text = _fmt_number(v, dv) if not isinstance(v, str) else _clean_text(v)
            if text is None or text.strip() in _BAD_TEXT:
                why = t.missing or (MISSING_PAPER if paper_col or _is_paper_row(df, i) else MISSING_RUN)
                notes.add(why)
                text = "–"
            out.append(text)
        cols.append(out)
    rows = [list(r) for r in zip(*cols)] if cols else [[] for _ in range(len(df))]
    return rows, notes


def _label(v: Any) -> str:
    text = _fmt_number(v, None) if not isinstance(v, str) else v
    if text is None or text.strip() in _BAD_TEXT:
        return ""
    return text.replace("_", " ") if _SNAKE.match(text) else text


def _header_rows(df: pd.DataFrame, show_index: bool) -> str:
    levels = df.columns.nlevels
    idx_names = [_label(n) for n in df.index.names] if show_index else []
    out = []
    for lvl in range(levels):
        labels = [c[lvl] if isinstance(c, tuple) else c for c in df.columns]
        cells = []
        if show_index:
            last = lvl == levels - 1
            cells += [f"<th scope=\"col\">{html.escape(n) if last else ''}</th>" for n in idx_names]
        k = 0
        while k < len(labels):
            span = 1
            prefix = lambda m: tuple(  # noqa: E731 - the labels of levels up to this one
                (df.columns[m][:lvl + 1]) if isinstance(df.columns[m], tuple) else (df.columns[m],))
            while lvl < levels - 1 and k + span < len(labels) and prefix(k + span) == prefix(k):
                span += 1
            attr = f" colspan=\"{span}\"" if span > 1 else ""
            cells.append(f"<th scope=\"col\"{attr}>{html.escape(_label(labels[k]))}</th>")
            k += span
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "".join(out)


def render_table(t: Table | pd.DataFrame, caption: str | None = None, *, number: int | None = None,
                 **kwargs: Any) -> str:
    """The HTML of a :class:`Table` (or of ``Table(t, caption, **kwargs)`` for a DataFrame).

    Returns a ``<div class="agentstudies-table">`` holding a ``<table>`` with a
    ``<caption>`` ("Table ``number``. caption Unit: unit. n = rows rows.") and, when a cell
    is missing, a footnote paragraph saying why. No cell reads ``nan``, ``inf``, ``<NA>``
    or ``None``.
    """
    if not isinstance(t, Table):
        t = Table(t, caption, **kwargs)
    df = t.data
    if len(df) == 0:
        what = (t.caption or _default_caption(df, _show_index(df, t.index))).strip().rstrip(".")
        return f"<p class=\"agentstudies-table-note\">No rows in this run: {html.escape(what)}.</p>"
    show = _show_index(df, t.index)
    rows, notes = _cells(t)
    n = t.n if t.n is not None else len(df)
    what = (t.caption or _default_caption(df, show)).strip()
    what = what if what.endswith((".", "?", "!", "…")) else what + "."
    head = f"Table {number}. " if number is not None else ""
    unit = f" Unit: {t.unit.rstrip('.')}." if t.unit else ""
    cap = f"{head}{what}{unit} n = {n} {t.n_of or ('row' if n == 1 else 'rows')}."
    body = []
    prev: tuple = ()
    for i, cells in enumerate(rows):
        th = ""
        if show:
            key = df.index[i] if isinstance(df.index[i], tuple) else (df.index[i],)
            shown = [("" if k < len(prev) and prev[:k + 1] == key[:k + 1] and len(key) > 1 and k < len(key) - 1
                      else _label(v)) for k, v in enumerate(key)]
            th = "".join(f"<th scope=\"row\">{html.escape(s)}</th>" for s in shown)
            prev = key
        tds = "".join(f"<td class=\"num\">{html.escape(c)}</td>" if _NUMERIC_CELL.match(c)
                      else f"<td class=\"text\">{_cell_html(c)}</td>" for c in cells)
        body.append(f"<tr>{th}{tds}</tr>")
    foot = "".join(f"<p class=\"agentstudies-table-note\">– {html.escape(w)}.</p>" for w in sorted(notes))
    return (
        "<div class=\"agentstudies-table\"><table class=\"table agentstudies-table\">"
        f"<caption>{html.escape(cap)}</caption><thead>{_header_rows(df, show)}</thead>"
        f"<tbody>{''.join(body)}</tbody></table>{foot}</div>"
    )


def _default_caption(df: pd.DataFrame, show_index: bool) -> str:
    """"rate, n, d by workflow" for a table a chapter shows without a caption of its own."""
    names = [_label(c[-1] if isinstance(c, tuple) else c) for c in df.columns]
    shown = ", ".join(n for n in names[:4] if n) + (", …" if len(names) > 4 else "")
    by = [_label(n) for n in df.index.names if n is not None] if show_index else []
    return shown + (f" by {', '.join(by)}" if by else "")


def install_table_formatter(reset: bool = True) -> bool:
    """Route every DataFrame, Series and Styler this IPython kernel displays through :class:`Table`.

    Called by :class:`Chapter` on creation (the table counter restarts at 1 when ``reset``).
    Returns False outside IPython (nothing to install).
    """
    if reset:
        _TABLE_COUNTER["n"] = 0
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - no IPython
        return False
    shell = get_ipython()
    if shell is None:
        return False
    fmt = shell.display_formatter.formatters["text/html"]
    fmt.for_type(pd.DataFrame, lambda df: Table(df)._repr_html_())
    fmt.for_type(pd.Series, lambda s: Table(s)._repr_html_())
    try:
        from pandas.io.formats.style import Styler

        fmt.for_type(Styler, lambda s: Table(s)._repr_html_())
    except ImportError:  # pragma: no cover - jinja2 missing: no Styler at all
        pass
    return True

