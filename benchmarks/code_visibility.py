"""Hidden vs visible code lines per chapter notebook.

``python benchmarks/code_visibility.py [--csv OUT]`` counts, for every notebook of
``book/_toc.yml``, the non-blank, non-comment code lines in cells the built book hides
(tagged ``hide-input``, ``remove-input`` or ``remove-cell``) and in the others (shown),
and how many shown lines are bookkeeping (calls of ``glue``, ``glue_md``, ``save``,
``figure``, ``table``, ``display``). The ``parameters`` cell counts as shown (the book
prints it). Not a timed benchmark: a measure of how much computation a reader sees.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
HIDDEN_TAGS = {"hide-input", "remove-input", "remove-cell"}
BOOKKEEPING = re.compile(r"^\s*(?:\w+\s*=\s*)?(?:ch\.)?(glue|glue_md|save|figure|table|display)\(")


def code_lines(source: str) -> list[str]:
    """The lines of ``source`` that are code: not blank, not a comment, not an IPython magic."""
    return [line for line in source.splitlines()
            if line.strip() and not line.lstrip().startswith(("#", "%", "!"))]


def count(path: Path) -> dict[str, int]:
    """``hidden``, ``visible`` and ``visible_bookkeeping`` code lines of one notebook, and
    ``largest_visible_cell`` (code lines of its longest shown cell)."""
    nb = nbformat.read(path, as_version=4)
    out = {"hidden": 0, "visible": 0, "visible_bookkeeping": 0, "largest_visible_cell": 0}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        lines = code_lines(cell.source)
        if HIDDEN_TAGS & set(cell.metadata.get("tags", [])):
            out["hidden"] += len(lines)
        else:
            out["visible"] += len(lines)
            out["visible_bookkeeping"] += sum(bool(BOOKKEEPING.match(line)) for line in lines)
            out["largest_visible_cell"] = max(out["largest_visible_cell"], len(lines))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", type=Path, default=None, help="also write the table here")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from agentstudies.book.model import toc_chapters

    rows = [{"chapter": name, **count(ROOT / "notebooks" / f"{name}.ipynb")} for name in toc_chapters(ROOT)]
    total = {k: sum(r[k] for r in rows) for k in ("hidden", "visible", "visible_bookkeeping")}
    header = f"{'chapter':<24} {'hidden':>7} {'visible':>8} {'bookkeeping':>12} {'largest shown cell':>19}"
    print(header)
    for r in rows:
        print(f"{r['chapter']:<24} {r['hidden']:>7} {r['visible']:>8} {r['visible_bookkeeping']:>12} "
              f"{r['largest_visible_cell']:>19}")
    print(f"{'total':<24} {total['hidden']:>7} {total['visible']:>8} {total['visible_bookkeeping']:>12}")
    if args.csv:
        import csv

        with open(args.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
