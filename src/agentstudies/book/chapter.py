"""Provenance and artifacts for a book chapter.

Every executed chapter ends with its provenance (package version, parameters, seed,
input-data hashes, wall time) and writes the tables it produces as CSV under
``artifacts/<chapter>/``. A chapter notebook uses this module as::

    from agentstudies.book.chapter import Chapter
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
(``-p seed -1``, ``-p min_ess inf``) raises :class:`agentstudies.book.runner.ParameterError`
before anything is written.
"""

from __future__ import annotations

import ast
import re
import html
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from agentstudies import __version__
from agentstudies.book.table import (  # noqa: F401 - re-exported: the renderer moved out
    MISSING_PAPER, MISSING_RUN, Table, compact, install_table_formatter, render_table)
from agentstudies.book.paper.compare import beside_paper, stack_paper  # noqa: F401 - re-exported
from agentstudies.book.figures import make_legible, use_book_figures
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
    rule as ``agentstudies run`` (see :func:`agentstudies.book.runner.resolve_artifacts_env`).
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

    Set by :func:`agentstudies.book.runner.run_notebook` through ``$AGENTSTUDIES_RUN``;
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
        # every figure it glues is SVG with text labels (agentstudies.book.figures)
        use_book_figures()
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
        agentstudies.book.runner.ParameterError
            If papermill injected a name the ``parameters`` cell does not declare, or a value
            the ``agentstudies`` CLI would refuse (see :func:`check_injected`).
        """
        from agentstudies.book.runner import declared_parameters, find_root

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
        if "matplotlib.figure" in sys.modules:
            from matplotlib.figure import Figure

            if isinstance(value, Figure):
                make_legible(value)  # narrowed to the column, labels legible at 390 px
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
        make_legible(fig)
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
            from agentstudies.book.runner import _swap_in

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
            f"<td class=\"{'text' if any(ch.isspace() for ch in str(value)) else 'nowrap'}\">"
            f"{html.escape(str(value))}</td></tr>"
            for field_name, value in self.table["value"].items()
        )
        return (
            "<details class=\"agentstudies-provenance\"><summary><strong>Provenance of this run</strong> "
            f"(written to <code>{html.escape(self.path.name)}</code> in this chapter's artifacts folder)"
            "</summary><div class=\"agentstudies-table\"><table class=\"table agentstudies-provenance-table\">"
            "<caption>Provenance: every parameter, input hash and version of this run.</caption>"
            f"<thead><tr><th>field</th><th>value</th></tr></thead><tbody>{rows}</tbody></table></div></details>"
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
    :class:`agentstudies.book.runner.Parameter`) and its value must pass
    :func:`agentstudies.book.runner.check_parameter` (type like the default, seeds >= 0, counts,
    levels, finite numbers, sample sizes, draws, probabilities) and, together,
    :func:`agentstudies.book.model.check_parameter_set`. Returns the injected names.

    Raises
    ------
    agentstudies.book.runner.ParameterError
        For an unknown name (listing the declared ones; plain papermill only warns and runs at
        the defaults) or a refused value, naming the parameter.
    """
    from agentstudies.book.runner import ParameterError, check_parameter, check_parameter_set

    names = injected_names(namespace) or []
    unknown = [n for n in names if n not in declared]
    if unknown:
        raise ParameterError(
            f"unknown parameter(s) {unknown} injected into chapter {chapter!r} (papermill -p); "
            f"its parameters cell declares: {', '.join(declared) or '(none)'}. Nothing was run or written"
        )
    for n in names:
        check_parameter(chapter, declared[n], namespace[n], "papermill's injected parameters")
    if names:  # checks across parameters (draws at the chapter's level, probability sums)
        check_parameter_set(chapter, declared, {n: namespace[n] for n in declared if n in namespace},
                            "papermill's injected parameters")
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
