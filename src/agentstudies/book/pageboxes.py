"""The boxes every chapter page opens with: its result first, and how to rerun it.

Built when the book is built (``agentstudies.book.site`` calls :func:`add_page_boxes` for
every chapter page), from what the chapter's run wrote, so no notebook repeats them:

* "What this chapter finds": one bullet per row of ``<artifacts>/<chapter>/findings.csv``
  (``agentstudies.findings.Findings.table``): the verdict, the claim, our estimate with its
  interval and n, and the basis of the finding where the table has a ``basis`` column.
  A chapter without a findings table (a worked method example) says so and points to its
  "What this run shows" section.
* "Run this chapter yourself": the repository (``agentstudies_repository_url`` in the
  Sphinx config, else the source tree), the install command, the exact ``agentstudies
  run`` command that reproduces this page (its profile and any override, read from
  ``<artifacts>/<chapter>/provenance.json``) and a link to download the executed notebook;
* under the cell tagged ``parameters``, the values the run used where they differ from
  the cell's (a profile or an override replaced them).

The pure functions (:func:`finding_lines`, :func:`rerun_commands`, :func:`replaced_parameters`)
return plain data and are tested without Sphinx.
"""

from __future__ import annotations

import csv
import json
import math
import shlex
from pathlib import Path
from typing import Any

__all__ = ["finding_lines", "rerun_commands", "used_parameters", "replaced_parameters", "add_page_boxes",
           "INSTALL"]

#: How to install the package with the book's dependencies, from the source tree.
INSTALL = "python -m venv .venv && . .venv/bin/activate && pip install -e '.[book]'"


#: What a finding rests on (``findings.csv`` column ``basis``), in words; only the first two
#: count as evidence.
BASIS_WORDS = {
    "method": "a method property under known truth",
    "measured": "measured on a real or trained subject",
    "built in": "a built-in simulation parameter, not evidence",
    "arithmetic": "arithmetic, not evidence",
}


def _num(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _fmt(x: float, decimals: int) -> str:
    """``x`` with ``decimals`` decimals, a negative zero as zero, a minus sign as U+2212."""
    text = f"{x:.{decimals}f}"
    if text.lstrip("-").strip("0.") == "":
        text = text.lstrip("-")
    return text.replace("-", "\u2212")


def _decimals(values: list[float]) -> int:
    """One number of decimals for an estimate and its interval: 1 from 10, 2 from 1, else 3."""
    m = max((abs(v) for v in values), default=0.0)
    return 1 if m >= 10 else 2 if m >= 1 else 3


def finding_lines(findings_csv: Path) -> list[dict[str, str]]:
    """One dict per row of a chapter's ``findings.csv``: ``verdict``, ``finding``, ``ours``, ``basis``.

    ``ours`` is "0.833 [0.359, 0.996], n = 6" (the parts that are defined, rounded once from
    the stored values to one number of decimals: 1 from 10, 2 from 1, else 3; "" when none
    is defined) and
    ``basis`` is the row's ``basis`` in words (:data:`BASIS_WORDS`; a built-in parameter
    named from ``built_in``; "" without the column). Missing values never show as "nan".

    Raises
    ------
    KeyError
        If the file lacks a ``finding`` or ``verdict`` column (naming the file).
    """
    with Path(findings_csv).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for row in rows:
        if "finding" not in row or "verdict" not in row:
            raise KeyError(f"{findings_csv}: a findings table needs 'finding' and 'verdict' columns; "
                           f"has {sorted(row)}")
        est, lo, hi, n = (_num(row.get(k, "")) for k in ("estimate", "ci_low", "ci_high", "n"))
        d = _decimals([v for v in (est, lo, hi) if v is not None])
        ours = _fmt(est, d) if est is not None else ""
        if lo is not None and hi is not None:
            ours += f" [{_fmt(lo, d)}, {_fmt(hi, d)}]"
        if n is not None:
            ours += (", " if ours else "") + f"n = {int(n)}"
        basis = (row.get("basis") or "").strip()
        words = BASIS_WORDS.get(basis, basis)
        built = (row.get("built_in") or "").strip()
        if basis == "built in" and built:
            words += f": {built}"
        out.append({"verdict": row["verdict"].strip(), "finding": row["finding"].strip(), "ours": ours.strip(),
                    "basis": words})
    return out


def used_parameters(provenance: dict[str, Any]) -> dict[str, Any]:
    """The parameter values a chapter's run used (``provenance.json``'s ``parameters``)."""
    return dict(provenance.get("parameters") or {})


def replaced_parameters(cell_source: str, used: dict[str, Any]) -> dict[str, Any]:
    """``{name: value used}`` for each parameter whose run value differs from the cell's.

    ``cell_source``: the code of the chapter's cell tagged ``parameters`` (literal
    assignments ``name = value``, comments allowed); ``used``: :func:`used_parameters`.
    A name the cell assigns with an expression that is not a literal counts as replaced.
    """
    import ast

    shown: dict[str, Any] = {}
    for stmt in ast.parse(cell_source).body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name) and stmt.value is not None:
                    try:
                        shown[t.id] = ast.literal_eval(stmt.value)
                    except ValueError:
                        shown[t.id] = object()
    return {k: v for k, v in used.items() if k in shown and shown[k] != v}


def _cli_value(value: Any) -> str:
    return shlex.quote(json.dumps(value) if isinstance(value, (list, dict)) else str(value))


def rerun_commands(chapter: str, provenance: dict[str, Any], repository: str | None = None) -> list[str]:
    """Shell lines that reproduce a chapter page: get the source, install, run.

    The run line is ``agentstudies run <chapter> --profile <profile>`` plus ``-p key value``
    for each override the run had (``provenance["run"]``), and ``-o <chapter>.ipynb``.
    """
    run = provenance.get("run") or {}
    cmd = f"agentstudies run {chapter}"
    if run.get("profile"):
        cmd += f" --profile {run['profile']}"
    for key, value in (run.get("overrides") or {}).items():
        cmd += f" -p {key} {_cli_value(value)}"
    cmd += f" -o {chapter}.ipynb"
    get = (f"git clone {repository} agentstudies && cd agentstudies" if repository
           else "cd agentstudies  # the source tree of this book: the folder holding pyproject.toml")
    return [get, INSTALL, cmd]


# ------------------------------------------------------------------------ Sphinx nodes
def _artifacts(app: Any) -> Path:
    import os

    given = os.environ.get("AGENTSTUDIES_ARTIFACTS")
    return Path(given) if given else Path(app.srcdir).parent / "artifacts"


def _para(*children: Any) -> Any:
    from docutils import nodes

    return nodes.paragraph("", "", *children)


def _finds_box(app: Any, chapter: str) -> Any:
    from docutils import nodes

    box = nodes.admonition(classes=["agentstudies-finds", "tip"])
    box += nodes.title("", "What this chapter finds")
    path = _artifacts(app) / chapter / "findings.csv"
    rows = finding_lines(path) if path.is_file() else []
    if not rows:
        box += _para(nodes.Text(
            "A worked example of the method on a stated model: it tests no paper claim, so it has "
            "no findings table. What it computes is summarised under "), nodes.emphasis("", "What this run shows"),
            nodes.Text(" at the end of the page."))
        return box
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    box += _para(nodes.Text(f"{len(rows)} paper claim{'s' if len(rows) != 1 else ''} tested by this run: "
                            + ", ".join(f"{k} {v}" for k, v in counts.items()) + "."))
    items = nodes.bullet_list()
    built_prefix = BASIS_WORDS["built in"] + ": "
    for r in rows:
        basis, names = r["basis"], []
        if basis.startswith(built_prefix):  # parameter names as code: they break at '.' / '_', never mid-name
            basis, names = BASIS_WORDS["built in"], [n.strip() for n in basis[len(built_prefix):].split(",")]
        tail = "; ".join(x for x in (f"ours {r['ours']}" if r["ours"] else "",
                                     f"basis: {basis}" if basis else "") if x)
        parts = [nodes.strong("", r["verdict"]), nodes.Text(f" \u2014 {r['finding']}" + (f" ({tail}" if tail else ""))]
        for i, name in enumerate(names):
            shown = name.replace(".", ".\u200b").replace("_", "_\u200b")  # break points after '.' and '_'
            parts += [nodes.Text(": " if i == 0 else ", "), nodes.literal("", shown)]
        parts.append(nodes.Text((")" if tail else "") + "."))
        items += nodes.list_item("", _para(*parts))
    box += items
    return box


def _rerun_box(app: Any, chapter: str) -> Any:
    from docutils import nodes

    box = nodes.admonition(classes=["agentstudies-rerun", "note"])
    box += nodes.title("", "Run this chapter yourself")
    path = _artifacts(app) / chapter / "provenance.json"
    prov = json.loads(path.read_text()) if path.is_file() else {}
    repo = getattr(app.config, "agentstudies_repository_url", "") or None
    intro = [nodes.Text("Install the package from its source and rerun this page with the parameters it was "
                        "built with; the run writes the same tables as CSV under "),
             nodes.literal("", f"artifacts/{chapter}/"), nodes.Text(".")]
    if repo:
        intro[0:0] = [nodes.Text("Source: "), nodes.reference("", repo, refuri=repo), nodes.Text(". ")]
    box += _para(*intro)
    code = "\n".join(rerun_commands(chapter, prov, repo))
    box += nodes.literal_block(code, code, language="bash")
    box += _para(nodes.Text("Download: "), nodes.reference("", "the executed notebook of this page",
                                                           refuri=f"../_sources/chapters/{chapter}.ipynb"),
                 nodes.Text(" (the download button above offers it too)."))
    return box


def _parameters_note(app: Any, doctree: Any, chapter: str) -> None:
    """Under the cell tagged ``parameters``: the values this page's run used instead."""
    from docutils import nodes

    cell = next(iter(doctree.findall(lambda n: isinstance(n, nodes.container)
                                     and "tag_parameters" in n.get("classes", []))), None)
    path = _artifacts(app) / chapter / "provenance.json"
    if cell is None or not path.is_file():
        return
    prov = json.loads(path.read_text())
    code = next(iter(cell.findall(nodes.literal_block)), None)
    try:
        replaced = replaced_parameters(code.astext() if code is not None else "", used_parameters(prov))
    except SyntaxError:
        return
    profile = (prov.get("run") or {}).get("profile")
    note = nodes.admonition(classes=["agentstudies-parameters-used", "note"])
    note += nodes.title("", "Parameters of this page's run")
    run = f"This page was run with the {profile} profile" if profile else "This page was run"
    if replaced:
        shown = ", ".join(f"{k} = {v!r}" for k, v in replaced.items())
        note += _para(nodes.Text(f"{run}; these values replaced the ones above: "), nodes.literal("", shown),
                      nodes.Text("."))
    else:
        note += _para(nodes.Text(f"{run}, with exactly the values above."))
    cell.parent.insert(cell.parent.index(cell) + 1, note)


def add_page_boxes(app: Any, doctree: Any, docname: str) -> None:
    """Put the two boxes under a chapter page's first paragraph, and the values its run used
    under its parameters cell (``doctree-resolved`` handler)."""
    from docutils import nodes

    if not docname.startswith("chapters/"):
        return
    chapter = docname.removeprefix("chapters/")
    _parameters_note(app, doctree, chapter)
    top = next(iter(doctree.findall(nodes.section)), None)
    if top is None:
        return
    first_sub = next((i for i, c in enumerate(top.children) if isinstance(c, nodes.section)), len(top.children))
    para = next((i for i, c in enumerate(top.children[:first_sub]) if isinstance(c, nodes.paragraph)), None)
    at = (para + 1) if para is not None else first_sub
    top.insert(at, _rerun_box(app, chapter))
    top.insert(at, _finds_box(app, chapter))
