"""Provenance and artifacts for a book chapter.

Every executed chapter ends with its provenance (package version, parameters, seed,
input-data hashes, wall time) and writes the tables it produces as CSV under
``artifacts/<chapter>/``. A chapter notebook uses this module as::

    from agentstudies.chapter import Chapter
    ch = Chapter.from_parameters("tau_workflow_stress", globals(), simulated="the agents")
    ch.hash_input("tasks", tasks_df)
    ch.save_table(table, "slots")           # -> artifacts/tau_workflow_stress/slots.csv
    ch.glue("n_tasks", n)                   # markdown: {glue:text}`n_tasks`
    ch.figure("fig_slots", fig)             # markdown: ```{glue:figure} fig_slots
    ...
    ch.finish()                             # last cell: shows and writes provenance.json

The artifacts root is ``$AGENTSTUDIES_ARTIFACTS`` if set, otherwise ``artifacts/`` at the
repository root (the first parent directory holding ``pyproject.toml``), otherwise
``./artifacts``.

A run never damages earlier artifacts. Under ``agentstudies run``/``book`` the runner hands
the kernel a staging folder and swaps it in on success. Run any other way (plain papermill,
Jupyter, a script) the chapter stages itself: it writes into a hidden
``<root>/.kernel-staging-<chapter>-<pid>-<hex>/`` and :meth:`Chapter.finish` swaps that folder
in for ``<root>/<chapter>/`` in one atomic rename; a run that stops before ``finish()``
leaves ``<root>/<chapter>/`` byte-identical (its staging folder is removed when the kernel
exits, or by the next run). Injected parameters are checked in the kernel too: a name the
``parameters`` cell does not declare (``-p n_task 5``) or a value the CLI would refuse
(``-p seed -1``, ``-p min_ess inf``) raises :class:`agentstudies.runner.ParameterError`
before anything is written.
"""

from __future__ import annotations

import ast
import re
import html
import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from agentstudies import __version__
from agentstudies.results import hash_object

__all__ = ["Chapter", "Provenance", "Table", "render_table", "install_table_formatter", "artifacts_root",
           "hash_object", "beside_paper", "stack_paper", "compact", "SIMULATED", "INCOMPLETE"]

#: Label attached to every table, figure and caption produced by a scripted policy.
SIMULATED = "simulated"

#: Marker file present in ``artifacts/<chapter>/`` while a run has not finished.
INCOMPLETE = "INCOMPLETE"

#: Prefix of the folder a chapter run outside the runner stages its artifacts in.
KERNEL_STAGING_PREFIX = ".kernel-staging-"


def artifacts_root() -> Path:
    """Return the directory under which chapters write ``<chapter>/`` artifact folders.

    ``$AGENTSTUDIES_ARTIFACTS`` if set; a relative value is relative to the folder where
    the command was given (the shell's ``$PWD``, which papermill hands to the kernel
    unchanged even with ``--cwd``; the current folder if ``$PWD`` is unset) -- the same
    rule as ``agentstudies run`` (see :func:`agentstudies.runner.resolve_artifacts_env`).
    """
    env = os.environ.get("AGENTSTUDIES_ARTIFACTS")
    if env:
        path = Path(env).expanduser()
        if not path.is_absolute():
            pwd = os.environ.get("PWD")
            base = Path(pwd) if pwd and Path(pwd).is_dir() else Path.cwd()
            path = base / path
        return path.resolve()
    here = Path.cwd().resolve()
    for parent in (here, *here.parents):
        if (parent / "pyproject.toml").is_file() and (parent / "src" / "agentstudies").is_dir():
            return parent / "artifacts"
    return here / "artifacts"


def _run_record() -> dict[str, Any]:
    """How the runner started this run: ``{"profile": ..., "overrides": {...}}``.

    Set by :func:`agentstudies.runner.run_notebook` through ``$AGENTSTUDIES_RUN``;
    ``{"profile": "unknown"}`` when the notebook was executed some other way (plain
    papermill, Jupyter), since then nobody checked the values against a profile.
    """
    text = os.environ.get("AGENTSTUDIES_RUN")
    if not text:
        return {"profile": "unknown (not run by agentstudies)"}
    try:
        return dict(json.loads(text))
    except (ValueError, TypeError):
        return {"profile": "unknown", "raw": text}


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


@dataclass
class Chapter:
    """Context for one executed chapter: artifacts folder, input hashes, provenance.

    Parameters
    ----------
    name:
        Chapter (notebook) name; artifacts go to ``artifacts/<name>/``.
    params:
        The chapter's parameters exactly as set in its ``parameters`` cell (after any
        papermill injection). Must include ``seed`` if the chapter is random.
    simulated:
        Free text saying what in this chapter is simulated (shown in the provenance).
    stage:
        Write into a hidden staging folder and swap it in for ``artifacts/<name>/`` at
        :meth:`finish` (the earlier artifacts stay byte-identical until then). ``None``
        (default): stage unless the ``agentstudies`` runner started the kernel (it stages
        itself and hands the kernel its staging folder).
    """

    name: str
    params: Mapping[str, Any]
    simulated: str = ""
    inputs: dict[str, str] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    stage: bool | None = None
    warnings: list[str] = field(default_factory=list)
    _t0: float = field(default_factory=time.perf_counter, repr=False)
    _started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    _staging: Path | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"chapter name must be a plain folder name, got {self.name!r}")
        self.params = dict(self.params)
        # the chapter's kernel collects cycles in larger batches (speed only; see there)
        from agentstudies.parallel import tune_collector

        tune_collector()
        # every table the chapter displays goes through one renderer (Table), numbered from 1
        install_table_formatter()
        self._route_warnings()
        # Outside the runner (plain papermill, Jupyter) stage the whole folder and swap it in
        # at finish(): a failing run must not touch the last good artifacts.
        if self.stage is None:
            self.stage = not os.environ.get("AGENTSTUDIES_RUN")
        if self.stage:
            self._staging = _new_staging(artifacts_root(), self.name)
        # Start from an empty folder so a run never leaves tables of two runs side by side;
        # the marker stays until finish() and flags a run that stopped part-way.
        folder = self.artifacts
        for old in folder.iterdir():
            if old.is_file() or old.is_symlink():
                old.unlink()
        (folder / INCOMPLETE).write_text(
            f"run started {self._started} and has not finished (no provenance.json yet)\n"
        )

    @classmethod
    def from_parameters(
        cls, name: str, namespace: Mapping[str, Any], *, simulated: str = "", notebook: Path | str | None = None
    ) -> "Chapter":
        """A chapter whose ``params`` are read from its own ``parameters`` cell.

        The parameter *names* come from the cell tagged ``parameters`` of
        ``notebooks/<name>.ipynb`` (or ``notebook``); their *values* from ``namespace``
        (pass ``globals()``), so papermill-injected values are what is recorded. A
        chapter therefore declares each parameter exactly once::

            ch = Chapter.from_parameters("tau_workflow_stress", globals(), simulated="agents")

        Raises
        ------
        FileNotFoundError
            If the notebook cannot be found.
        KeyError
            If a declared parameter is not defined in ``namespace``.
        agentstudies.runner.ParameterError
            If papermill injected a name the ``parameters`` cell does not declare, or a value
            the ``agentstudies`` CLI would refuse (see :func:`check_injected`).
        """
        from agentstudies.runner import declared_parameters, find_root

        path = Path(notebook) if notebook is not None else None
        if path is None:
            env = os.environ.get("AGENTSTUDIES_NOTEBOOK")
            candidates = [Path(env)] if env else []
            try:
                candidates.append(find_root() / "notebooks" / f"{name}.ipynb")
            except Exception:  # noqa: BLE001 - outside a checkout: fall through to cwd
                pass
            candidates.append(Path.cwd() / f"{name}.ipynb")
            path = next((c for c in candidates if c.is_file() and (c.stem == name or str(c) == env)), None)
            if path is None:
                raise FileNotFoundError(
                    f"cannot find the notebook of chapter {name!r} to read its parameters cell; "
                    f"looked at {[str(c) for c in candidates]}; pass notebook=PATH"
                )
        declared = declared_parameters(path)
        names = list(declared)
        missing = [n for n in names if n not in namespace]
        if missing:
            raise KeyError(f"chapter {name!r}: declared parameter(s) {missing} are not defined")
        check_injected(name, declared, namespace)
        return cls(name, params={n: namespace[n] for n in names}, simulated=simulated)

    # ------------------------------------------------------------------ artifacts
    @property
    def artifacts(self) -> Path:
        """``artifacts/<chapter>/`` (created on first use)."""
        path = self._staging if self._staging is not None else artifacts_root() / self.name
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def destination(self) -> Path:
        """``artifacts/<chapter>/``: where the tables are once :meth:`finish` has run."""
        return artifacts_root() / self.name

    def hash_input(self, label: str, obj: Any) -> str:
        """Record the SHA-256 of an input (file, table, array...) under ``label``."""
        digest = hash_object(obj)
        self.inputs[label] = digest
        return digest

    def save_table(self, df: pd.DataFrame, name: str, *, index: bool = False) -> Path:
        """Write ``df`` to ``artifacts/<chapter>/<name>.csv`` and return the path.

        Floats are written with 12 significant digits (``0.025`` rather than
        ``0.025000000000000022``); nothing else is rounded.
        """
        path = self.artifacts / f"{name}.csv"
        df.to_csv(path, index=index, float_format="%.12g")
        self.outputs.append(path.name)
        return path

    def save_parquet(self, df: pd.DataFrame, name: str) -> Path:
        """Write ``df`` to ``artifacts/<chapter>/<name>.parquet`` and return the path."""
        path = self.artifacts / f"{name}.parquet"
        df.to_parquet(path, index=False)
        self.outputs.append(path.name)
        return path

    def save_figure(self, fig: Any, name: str, *, dpi: int = 120) -> Path:
        """Save a matplotlib figure as ``artifacts/<chapter>/<name>.png``."""
        path = self.artifacts / f"{name}.png"
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        self.outputs.append(path.name)
        return path

    def glue(self, key: str, value: Any, *, display: bool = False) -> Any:
        """Glue a value for the book's text (``{glue:text}`key:.2f```); no-op without myst-nb.

        NumPy scalars are converted to Python numbers first, so ``{glue:text}`` can apply
        a format spec (myst-nb parses the stored ``text/plain``; ``np.float64(0.5)`` would
        not parse). A matplotlib figure is closed once glued, so the inline backend does not
        show it a second time under its cell (it is placed by ``{glue:figure}``; saving it
        later still works). Returns ``value`` unchanged.
        """
        try:
            from myst_nb import glue
        except ImportError:  # pragma: no cover - book extra not installed
            return value
        glue(key, _plain(value), display=display)
        _close_if_figure(value)
        return value

    def glue_md(self, key: str, text: str) -> str:
        """Glue a Markdown sentence for ``{glue:md}`key``` (prose chosen by code).

        ``$...$`` math in ``text`` is glued as a MathJax span (the inline role parses
        CommonMark, which has no dollar math: the reader saw a raw ``$k$``), and a bullet
        list (every line ``- ...``) as bullet lines separated by line breaks (the inline
        role ran the items into one paragraph with a literal "- "). Returns ``text``.
        """
        try:
            from IPython.display import Markdown
            from myst_nb import glue
        except ImportError:  # pragma: no cover - book extra not installed
            return text
        glue(key, Markdown(_inline_math(_inline_bullets(text))), display=False)
        return text

    def figure(self, key: str, fig: Any, name: str | None = None, *, dpi: int = 120) -> None:
        """Save ``fig`` as ``artifacts/<chapter>/<name or key>.png``, glue it as ``key`` and close it.

        Returns nothing, so a cell ending with it shows no output of its own.

        In markdown the figure is placed, numbered and captioned with::

            ```{glue:figure} key
            :name: fig-key
            Caption (say *simulated*).
            ```

        Closing the figure keeps the inline backend from showing it a second time.
        """
        self.save_figure(fig, name or key, dpi=dpi)
        self.glue(key, fig)
        try:
            import matplotlib.pyplot as plt

            plt.close(fig)
        except ImportError:  # pragma: no cover
            pass

    def table(self, df: Any, caption: str, *, unit: str | None = None, **kwargs: Any) -> "Table":
        """A :class:`Table` of ``df`` to display: numbered caption (what it is), ``unit``, n.

        ``kwargs`` are :class:`Table`'s (``decimals``, ``missing``, ``index``, ``n``). The
        table is shown when it is a cell's last expression or passed to ``display``.
        """
        return Table(df, caption, unit=unit, **kwargs)

    def _route_warnings(self) -> None:
        """Show a warning raised in this kernel as a note under the cell, and keep it.

        A Python warning printed to stderr shows a reader a source path (often a temporary
        one) and a ``RuntimeWarning:`` line; inside an IPython kernel each warning instead
        becomes a short HTML note naming its kind and module, and is recorded in
        :attr:`warnings` (written to the provenance). Outside IPython nothing changes.
        """
        import warnings as _w

        try:
            from IPython import get_ipython
            from IPython.display import HTML, display
        except ImportError:  # pragma: no cover - no IPython
            return
        if get_ipython() is None:
            return

        def show(message, category, filename, lineno, file=None, line=None):  # noqa: ARG001 - warnings API
            kind = re.sub(r"(?<!^)(?=[A-Z])", " ", category.__name__).lower()
            # a notebook cell's code lives in a temporary ipykernel_<pid>/<hash>.py file
            where = "this chapter's code" if "ipykernel" in str(filename) else Path(str(filename)).name
            text = f"{kind} in {where}: {message}"
            self.warnings.append(text)
            display(HTML(f"<div class=\"agentstudies-run-note\"><p><strong>Note from this run</strong> "
                         f"({html.escape(kind)} in <code>{html.escape(where)}</code>): "
                         f"{html.escape(str(message))}</p></div>"))

        _w.showwarning = show

    # ----------------------------------------------------------------- provenance
    def provenance(self) -> dict[str, Any]:
        """Package version, parameters, seed, input hashes, outputs, wall time."""
        return {
            "chapter": self.name,
            "agentstudies_version": __version__,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "pandas": pd.__version__,
            "started": self._started,
            "wall_time_s": round(time.perf_counter() - self._t0, 3),
            "seed": self.params.get("seed"),
            "parameters": {k: _jsonable(v) for k, v in self.params.items()},
            "input_sha256": dict(self.inputs),
            "outputs": sorted(set(self.outputs)),
            "simulated": self.simulated,
            "warnings": list(self.warnings),
            "run": _run_record(),
        }

    def finish(self) -> "Provenance":
        """Write ``provenance.json``, clear the incomplete-run marker, return the provenance.

        The returned object renders in a notebook as a titled table with every value in
        full; ``.table`` is the same as a two-column DataFrame.
        """
        prov = self.provenance()
        path = self.artifacts / "provenance.json"
        path.write_text(json.dumps(prov, indent=2, sort_keys=True))
        (self.artifacts / INCOMPLETE).unlink(missing_ok=True)
        if self._staging is not None:  # the run succeeded: swap the staged folder in
            from agentstudies.runner import _swap_in

            staged, self._staging = self._staging, None
            _swap_in(staged, self.destination)
            _remove_staging(staged.parent)
            path = self.destination / "provenance.json"
        rows = []
        for key, value in prov.items():
            if isinstance(value, dict):
                for k2, v2 in value.items():
                    rows.append((f"{key}.{k2}", json.dumps(v2) if not isinstance(v2, str) else v2))
            else:
                rows.append((key, json.dumps(value) if not isinstance(value, str) else value))
        return Provenance(pd.DataFrame(rows, columns=["field", "value"]).set_index("field"), path)


@dataclass(frozen=True)
class Provenance:
    """A chapter's provenance: ``table`` (field -> value) and the JSON file it was written to."""

    table: pd.DataFrame
    path: Path

    def _repr_html_(self) -> str:
        """A real HTML table inside a collapsed ``<details>`` block (every value in full).

        HTML rather than Markdown: the book renders a Markdown output as CommonMark, where
        a pipe table shows as literal ``| field | value |`` text.
        """
        rows = "".join(
            f"<tr><td><code>{html.escape(str(field_name))}</code></td>"
            f"<td style=\"word-break: break-all\">{html.escape(str(value))}</td></tr>"
            for field_name, value in self.table["value"].items()
        )
        return (
            "<details class=\"agentstudies-provenance\"><summary><strong>Provenance of this run</strong> "
            f"(written to <code>{html.escape(self.path.name)}</code> in this chapter's artifacts folder)"
            "</summary><table class=\"table\" style=\"table-layout: fixed; width: 100%\">"
            "<caption>Provenance: every parameter, input hash and version of this run.</caption>"
            "<colgroup><col style=\"width: 32%\"><col style=\"width: 68%\"></colgroup>"
            f"<thead><tr><th>field</th><th>value</th></tr></thead><tbody>{rows}</tbody></table></details>"
        )

    def __repr__(self) -> str:
        with pd.option_context("display.max_colwidth", None, "display.width", 250):
            return "Provenance of this run\n" + self.table.to_string()


def _close_if_figure(value: Any) -> None:
    """Close a matplotlib figure (no-op for anything else, or without matplotlib loaded)."""
    import sys

    if "matplotlib.figure" not in sys.modules:
        return
    from matplotlib.figure import Figure

    if isinstance(value, Figure):
        import matplotlib.pyplot as plt

        plt.close(value)


def _inline_bullets(text: str) -> str:
    """A Markdown bullet list ("- a\\n- b", items may continue on indented lines) as
    "• a<br>• b", which stays a list when placed inline; any other text unchanged."""
    lines = [line for line in text.strip("\n").split("\n") if line.strip()]
    if not lines or not lines[0].startswith("- ") or not all(
            line.startswith(("- ", " ", "\t")) for line in lines):
        return text
    items: list[str] = []
    for line in lines:
        if line.startswith("- "):
            items.append(line[2:].strip())
        else:
            items[-1] += " " + line.strip()
    return "<br>".join(f"• {item}" for item in items)


_DOLLAR_MATH = re.compile(r"(?<![\\$])\$([^$\n]+?)(?<!\\)\$(?!\$)")


def _inline_math(text: str) -> str:
    """``$x_i$`` -> a ``<span class="math">\\(x_i\\)</span>`` that MathJax typesets in any
    Markdown flavour (backslashes, ``_`` and ``*`` escaped for the Markdown parser)."""

    def span(m: re.Match) -> str:
        tex = m.group(1).replace("\\", "\\\\").replace("_", "\\_").replace("*", "\\*")
        return f'<span class="math notranslate nohighlight">\\\\({tex}\\\\)</span>'

    return _DOLLAR_MATH.sub(span, text)


def _plain(value: Any) -> Any:
    """NumPy scalars as Python scalars (for glue); anything else unchanged."""
    if isinstance(value, np.generic):
        return value.item()
    return value


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


# ------------------------------------------------------------------------------ tables
#: What a missing cell means, by the kind of row it is in (shown as a footnote under "–").
MISSING_PAPER = "the paper does not report this value"
MISSING_RUN = "not defined in this run (no rows in the group, or the quantity does not apply)"
_BAD_TEXT = {"nan", "NaN", "NAN", "<NA>", "None", "NaT", "inf", "-inf", "+inf", "Inf", "-Inf", "nan%", ""}
_TABLE_COUNTER = {"n": 0}
_SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")  # a column name like ci_low: shown as "ci low"
_PLAIN_NUMBER = re.compile(r"^\s*[-+]?\d+(\.\d+)?\s*$")  # a Styler's default/precision format


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
    return 1 if m >= 100 else 2 if m >= 1 else 3 if m >= 0.01 else 4


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
        return f"{f:.0f}" if dec is None else f"{f:.{dec}f}"
    return str(v)


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
                text = _fmt_number(v, dv) if not isinstance(v, str) else v
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
        tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
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


def injected_names(namespace: Mapping[str, Any]) -> list[str] | None:
    """Names assigned by papermill's injected cell(s), read from the kernel's input history.

    Papermill injects a cell whose source starts with ``# Parameters`` (its translator's
    comment); IPython keeps every executed cell's source in ``In``. ``None`` when the
    namespace has no history (not an IPython kernel); ``[]`` when nothing was injected.
    """
    history = namespace.get("In")
    if not isinstance(history, (list, tuple)):
        return None
    found: list[str] = []
    for source in history:
        if not isinstance(source, str) or not source.lstrip().startswith("# Parameters"):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            for target in targets:
                elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                found += [e.id for e in elts if isinstance(e, ast.Name) and e.id not in found]
    return found


def check_injected(chapter: str, declared: Mapping[str, Any], namespace: Mapping[str, Any]) -> list[str]:
    """Check the parameters papermill injected into this kernel, as the CLI checks ``-p``.

    Every injected name must be declared by the ``parameters`` cell (``declared``: name ->
    :class:`agentstudies.runner.Parameter`) and its value must pass
    :func:`agentstudies.runner.check_parameter` (type like the default, seeds >= 0, counts,
    levels, finite numbers, sample sizes and draws >= 1). Returns the injected names.

    Raises
    ------
    agentstudies.runner.ParameterError
        For an unknown name (listing the declared ones; plain papermill only warns and runs at
        the defaults) or a refused value, naming the parameter.
    """
    from agentstudies.runner import ParameterError, check_parameter

    names = injected_names(namespace) or []
    unknown = [n for n in names if n not in declared]
    if unknown:
        raise ParameterError(
            f"unknown parameter(s) {unknown} injected into chapter {chapter!r} (papermill -p); "
            f"its parameters cell declares: {', '.join(declared) or '(none)'}. Nothing was run or written"
        )
    for n in names:
        check_parameter(chapter, declared[n], namespace[n], "papermill's injected parameters")
    return names


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _remove_staging(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _new_staging(root: Path, name: str) -> Path:
    """A fresh ``<root>/.kernel-staging-<name>-<pid>-<hex>/<name>/`` (removed when the process
    exits unless :meth:`Chapter.finish` swapped it in); staging folders of processes that
    no longer run are removed first (a kernel killed before its exit handler ran)."""
    import atexit
    import uuid

    root.mkdir(parents=True, exist_ok=True)
    for old in root.glob(f"{KERNEL_STAGING_PREFIX}*"):
        parts = old.name[len(KERNEL_STAGING_PREFIX):].rsplit("-", 2)
        if len(parts) == 3 and parts[1].isdigit() and not _pid_alive(int(parts[1])):
            _remove_staging(old)
    outer = root / f"{KERNEL_STAGING_PREFIX}{name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    outer.mkdir()
    atexit.register(_remove_staging, outer)
    return outer / name


def _jsonable(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value
