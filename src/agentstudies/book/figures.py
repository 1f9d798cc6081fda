"""How the book's figures look: SVG with real text, and labels legible on a phone.

A figure a chapter places with ``{glue:figure}`` is the image the kernel's inline backend
made when it was glued. :func:`use_book_figures` (called once per chapter kernel) makes
that image an SVG whose labels are ``<text>`` elements (``svg.fonttype = "none"``), so it
stays sharp at any zoom and the browser check can measure its labels; :func:`make_legible`
(called on every figure a chapter glues) caps the figure's width at the text column's and
raises every label to the size that stays readable when the page is 390 px wide.

The arithmetic: a figure ``w`` inches wide is drawn ``72 w`` SVG units wide and shown
:data:`PHONE_COLUMN_PX` px wide on a phone, so a label of ``s`` points is
``s * PHONE_COLUMN_PX / (72 w)`` px on screen; :func:`min_font_pt` inverts that for
:data:`MIN_LABEL_PX`.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["BOOK_RC", "PAGE_WIDTH_IN", "PHONE_COLUMN_PX", "MIN_LABEL_PX", "min_font_pt", "make_legible",
           "use_book_figures"]

#: matplotlib settings of every chapter kernel: text stays text in SVG output.
BOOK_RC: dict[str, Any] = {"svg.fonttype": "none", "svg.hashsalt": "agentstudies"}
#: Widest figure, in inches: about the text column at 1280 px (wider ones are narrowed).
PAGE_WIDTH_IN = 6.4
#: Width in CSS px of the text column when the window is 390 px wide (Sphinx Book Theme).
PHONE_COLUMN_PX = 358.0
#: Smallest label, in CSS px on screen, at a 390 px window.
MIN_LABEL_PX = 7.5


def min_font_pt(width_in: float) -> float:
    """The smallest font size (points) legible at 390 px for a figure ``width_in`` inches wide.

    ``MIN_LABEL_PX * 72 * width_in / PHONE_COLUMN_PX``: at :data:`PAGE_WIDTH_IN` about 9.7 pt.

    Raises
    ------
    ValueError
        If ``width_in`` is not positive.
    """
    if not width_in > 0:
        raise ValueError(f"width_in must be positive (inches); got {width_in!r}")
    return MIN_LABEL_PX * 72.0 * float(width_in) / PHONE_COLUMN_PX


def make_legible(fig: Any, *, max_width_in: float = PAGE_WIDTH_IN) -> Any:
    """Narrow ``fig`` to ``max_width_in`` inches (height kept) and raise small labels; returns ``fig``.

    The width that counts is the saved one: the figure's tight bounding box, which a legend
    or label placed outside the axes makes wider than the figure. Every text of the figure
    (titles, axis labels, tick labels, legend entries, annotations) smaller than
    :func:`min_font_pt` of that width is raised to it, and the layout is recomputed
    (``tight_layout`` unless the figure has its own layout engine); further passes catch a
    bounding box that the larger labels widened. A figure already narrow enough with large
    enough text is left as it is.
    """
    from matplotlib.text import Text

    width, height = fig.get_size_inches()
    if width > max_width_in:
        fig.set_size_inches(max_width_in, height)
    for _ in range(8):  # a label outside the axes widens the saved box as it grows: iterate to a fixed point
        saved = max(fig.get_size_inches()[0], fig.get_tightbbox(fig.canvas.get_renderer()).width)
        least = min_font_pt(saved)
        small = [t for t in fig.findobj(Text) if t.get_text() and t.get_visible() and t.get_fontsize() < least - 1e-6]
        if not small:
            break
        for text in small:
            text.set_fontsize(least * 1.03)  # a little above: the box grows with the labels
        if fig.get_layout_engine() is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "not compatible with tight_layout": keep the layout
                fig.tight_layout()
    return fig


def use_book_figures() -> bool:
    """Set :data:`BOOK_RC` and make the IPython inline backend draw SVG; False outside IPython."""
    import matplotlib

    matplotlib.rcParams.update(BOOK_RC)
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # pragma: no cover - no IPython
        return False
    if get_ipython() is None:
        return False
    set_matplotlib_formats("svg")
    return True
