"""The book's figure format: SVG with text, labels legible on a 390 px phone."""

import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from agentstudies.book.figures import (  # noqa: E402
    MIN_LABEL_PX, PAGE_WIDTH_IN, PHONE_COLUMN_PX, make_legible, min_font_pt, use_book_figures)


def test_min_font_pt_inverts_the_on_screen_size():
    # 9.65 pt on a 6.4 in figure (460.8 SVG units) shown 358 px wide: 9.65 * 358 / 460.8 = 7.5 px
    assert min_font_pt(6.4) == pytest.approx(7.5 * 460.8 / 358)
    assert min_font_pt(6.4) * PHONE_COLUMN_PX / (72 * 6.4) == pytest.approx(MIN_LABEL_PX)
    with pytest.raises(ValueError, match="width_in"):
        min_font_pt(0)


def test_a_wide_figure_with_small_labels_becomes_legible_svg_text():
    use_book_figures()
    fig, ax = plt.subplots(1, 3, figsize=(9, 3.4))
    ax[0].plot([0, 1], [0, 1], label="fixed rule")
    ax[0].set_xlabel("clusters", fontsize=7)
    ax[0].legend(fontsize=6)
    make_legible(fig)
    assert tuple(fig.get_size_inches()) == (PAGE_WIDTH_IN, 3.4)
    out = io.StringIO()
    fig.savefig(out, format="svg")
    plt.close(fig)
    svg = out.getvalue()
    sizes = [float(x) for x in re.findall(r"font-size: ([0-9.]+)px", svg)]
    assert "<text" in svg and "clusters" in svg and "fixed rule" in svg  # text, not glyph paths
    width_units = float(re.search(r'viewBox="0 0 ([0-9.]+)', svg).group(1))
    # every label's size on a phone, from the SVG itself (viewBox units are points)
    assert min(sizes) * PHONE_COLUMN_PX / width_units >= MIN_LABEL_PX - 1e-6


def test_a_legend_outside_the_axes_counts_in_the_width():
    """The saved (tight) box is wider than the figure: labels are sized for the saved width."""
    fig, ax = plt.subplots(1, 2, figsize=(6.4, 3))
    ax[1].plot([0, 1], [0, 1], label="SFT checkpoint")
    ax[1].plot([0, 1], [1, 0], label="RL checkpoint")
    ax[1].legend(loc="center left", bbox_to_anchor=(1, 0.5), fontsize=7)
    fig.tight_layout()
    make_legible(fig)
    out = io.StringIO()
    fig.savefig(out, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = out.getvalue()
    width_units = float(re.search(r'viewBox="0 0 ([0-9.]+)', svg).group(1))
    sizes = [float(x) for x in re.findall(r"font-size: ([0-9.]+)px", svg)]
    assert width_units > 72 * fig.get_size_inches()[0]  # the legend widened the saved image
    assert min(sizes) * PHONE_COLUMN_PX / width_units >= MIN_LABEL_PX - 0.05
