"""Glossary terms linked on first use, on every page, when the book is built.

``agentstudies.book.site`` calls :func:`link_first_uses` for every page but the glossary:
the first time a term of ``book/glossary.md`` (or its plural) appears in a paragraph's
running text, it becomes a link to the term's entry, unless the author already linked it
there with ``{term}``. Headings, captions, tables, code, math and other links are left
alone. :func:`first_uses` is the matching, as plain data, tested without Sphinx.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

__all__ = ["term_pattern", "first_uses", "link_first_uses"]


def term_pattern(term: str) -> re.Pattern[str]:
    """The term as a whole word, any case, with an optional plural ``s``/``es``."""
    return re.compile(r"(?<![\w-])" + re.escape(term) + r"(?:e?s)?(?![\w-])", re.IGNORECASE)


def first_uses(texts: Iterable[str], terms: Iterable[str]) -> dict[str, tuple[int, int, int]]:
    """``{term: (text index, start, end)}`` of each term's first occurrence in ``texts`` (in order).

    A longer term wins over a shorter one that starts at the same place ("Checkpoint
    handoff" over "handoff"); a term that never occurs is absent.
    """
    pats = sorted(((t, term_pattern(t)) for t in terms), key=lambda tp: -len(tp[0]))
    found: dict[str, tuple[int, int, int]] = {}
    for i, text in enumerate(texts):
        for term, pat in pats:
            if term in found:
                continue
            m = pat.search(text)
            if m:
                found[term] = (i, m.start(), m.end())
    return found


def _excluded(node: Any) -> bool:
    from docutils import nodes

    skip = (nodes.title, nodes.caption, nodes.table, nodes.literal, nodes.literal_block, nodes.reference,
            nodes.math, nodes.math_block, nodes.raw, nodes.rubric, nodes.citation, nodes.footnote,
            nodes.comment, nodes.term, nodes.target)
    in_paragraph = False
    for anc in _ancestors(node):
        if isinstance(anc, skip):
            return True
        in_paragraph = in_paragraph or isinstance(anc, nodes.paragraph)
    return not in_paragraph


def _ancestors(node: Any):
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


def link_first_uses(app: Any, doctree: Any, docname: str) -> None:
    """Link each glossary term's first use on the page (``doctree-resolved`` handler)."""
    from docutils import nodes

    std = app.env.get_domain("std")
    entries = {name: (value[0], value[1]) for (kind, name), value in std.objects.items() if kind == "term"}
    if not entries or any(doc == docname for doc, _ in entries.values()):
        return  # no glossary, or this is the glossary page
    by_label = {label: name for name, (doc, label) in entries.items()}
    done: set[str] = set()
    texts = []
    for node in doctree.findall(lambda n: isinstance(n, (nodes.Text, nodes.reference))):
        if isinstance(node, nodes.reference):
            anchor = node.get("refuri", "").partition("#")[2] or node.get("refid", "")
            term = by_label.get(anchor)
            if term is not None and term not in first_uses([t.astext() for t in texts], [term]):
                done.add(term)  # the author linked it before any unlinked use
            continue
        if not _excluded(node):
            texts.append(node)
    todo = [t for t in entries if t not in done]
    hits = first_uses([t.astext() for t in texts], todo)
    by_node: dict[int, list[tuple[int, int, str]]] = {}
    for term, (i, start, end) in hits.items():
        by_node.setdefault(i, []).append((start, end, term))
    for i, spans in by_node.items():
        text_node = texts[i]
        text = text_node.astext()
        spans.sort()
        parts: list[Any] = []
        pos = 0
        for start, end, term in spans:
            if start < pos:
                continue  # overlaps a term already linked in this text
            doc, label = entries[term]
            uri = app.builder.get_relative_uri(docname, doc) + "#" + label
            parts.append(nodes.Text(text[pos:start]))
            parts.append(nodes.reference("", "", nodes.inline(text[start:end], text[start:end],
                                                              classes=["xref", "std", "std-term"]),
                                         internal=True, refuri=uri, classes=["agentstudies-term"]))
            pos = end
        parts.append(nodes.Text(text[pos:]))
        parent = text_node.parent
        idx = parent.index(text_node)
        parent.remove(text_node)
        for k, part in enumerate(p for p in parts if not (isinstance(p, nodes.Text) and not p.astext())):
            parent.insert(idx + k, part)
