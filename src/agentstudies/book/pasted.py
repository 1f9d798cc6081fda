"""A glued value that is missing reads "–" on the page, never "nan".

``{glue:text}`key:.1f``` formats the number a chapter glued; when the run could not
define it (no episodes in a group at the smoke profile, say) the stored value is NaN and
the page would read "in at most nan%". :func:`dash_missing_values` (a ``doctree-resolved``
handler of ``agentstudies.book.site``) writes every pasted value that is NaN or infinite
as "–" (or "∞"/"−∞"), with the value's unit sign kept ("nan%" -> "–").
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["shown_value", "dash_missing_values"]

_MISSING = re.compile(r"^\s*([-+\u2212]?)(nan|NaN|NAN|inf|Inf|infinity)(\s*%?)\s*$")


def shown_value(text: str) -> str:
    """``text`` as the page shows a pasted value: NaN as "–", ±inf as "∞"/"−∞", else unchanged."""
    m = _MISSING.match(text)
    if not m:
        return text
    sign, word, unit = m.groups()
    if word.lower() == "nan":
        return "–"
    return ("\u2212∞" if sign in ("-", "\u2212") else "∞") + unit.strip()


def dash_missing_values(app: Any, doctree: Any, docname: str) -> None:  # noqa: ARG001 - Sphinx API
    """Rewrite the text of every ``pasted-text`` inline that holds a missing value."""
    from docutils import nodes

    for node in list(doctree.findall(nodes.inline)):
        if "pasted-text" not in node.get("classes", []):
            continue
        text = node.astext()
        shown = shown_value(text)
        if shown != text:
            node.children[:] = [nodes.Text(shown)]
