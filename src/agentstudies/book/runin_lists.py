"""Bullet lines glued into a paragraph become a real list when the book is built.

A chapter glues a list of statements with ``ch.glue_md`` and places it with the inline
``{glue:md}`` role, which cannot hold a block: the lines arrive as "• a<br>• b" inside one
paragraph, a list run into a paragraph. :func:`lists_from_bullet_lines` (a
``doctree-resolved`` handler of ``agentstudies.book.site``) splits such a paragraph at its
line breaks and turns the lines that start with "•" into a bullet list, keeping any lead
text before the first bullet as a paragraph.
"""

from __future__ import annotations

from typing import Any

__all__ = ["lists_from_bullet_lines"]

BULLET = "\u2022"


def _is_break(node: Any) -> bool:
    from docutils import nodes

    return isinstance(node, nodes.raw) and node.astext().strip().lower() in ("<br>", "<br/>", "<br />")


def _holder(par: Any) -> Any:
    """The node whose children are the lines: the paragraph, or its one inline wrapper."""
    from docutils import nodes

    kids = [c for c in par.children if not (isinstance(c, nodes.Text) and not c.astext().strip())]
    if len(kids) == 1 and isinstance(kids[0], nodes.inline) and any(_is_break(c) for c in kids[0].children):
        return kids[0]
    return par


def _split_lead_bullet(lines: list[list[Any]]) -> None:
    """A first bullet placed after a sentence ("... changed). • Reach: ...") starts a line of its own."""
    from docutils import nodes

    for i, line in enumerate(lines):
        if line and line[0].astext().lstrip().startswith(BULLET):
            return  # the bullets already start their lines
        for j, child in enumerate(line):
            if isinstance(child, nodes.Text) and BULLET in child.astext():
                text = child.astext()
                k = text.index(BULLET)
                before, after = nodes.Text(text[:k]), nodes.Text(text[k:])
                lines[i:i + 1] = [line[:j] + [before], [after] + line[j + 1:]]
                return


def lists_from_bullet_lines(app: Any, doctree: Any, docname: str) -> None:  # noqa: ARG001 - Sphinx API
    """Replace every paragraph of "• line<br>• line" by a lead paragraph and a bullet list."""
    from docutils import nodes

    for par in list(doctree.findall(nodes.paragraph)):
        holder = _holder(par)
        if not any(_is_break(c) for c in holder.children):
            continue
        lines: list[list[Any]] = [[]]
        for child in list(holder.children):
            if _is_break(child):
                lines.append([])
            else:
                lines[-1].append(child)
        _split_lead_bullet(lines)
        starts = [bool(ln) and ln[0].astext().lstrip().startswith(BULLET) for ln in lines]
        if sum(starts) < 2 or BULLET not in par.astext():
            continue
        first = starts.index(True)
        out: list[Any] = []
        lead = [c for ln in lines[:first] for c in ln]
        if any(c.astext().strip() for c in lead):
            out.append(nodes.paragraph("", "", *[c.deepcopy() for c in lead]))
        items = nodes.bullet_list(bullet="-")
        for ln, is_item in zip(lines[first:], starts[first:]):
            if not ln:
                continue
            kids = [c.deepcopy() for c in ln]
            if is_item:
                head = kids[0]
                text = head.astext().lstrip()[len(BULLET):].lstrip()
                kids[0] = nodes.Text(text) if isinstance(head, nodes.Text) else head
                if not isinstance(head, nodes.Text):  # the bullet sits inside markup: strip it there
                    for t in head.findall(nodes.Text):
                        t.parent.replace(t, nodes.Text(t.astext().lstrip()[len(BULLET):].lstrip()))
                        break
                items += nodes.list_item("", nodes.paragraph("", "", *kids))
            elif len(items):  # a continuation line: stays with the item above
                items[-1][0].extend([nodes.Text(" ")] + kids)
        out.append(items)
        par.replace_self(out)
