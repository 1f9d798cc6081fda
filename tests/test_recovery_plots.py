"""The rescue / harm figure draws the counts a hand-built paired table gives."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from agentstudies import recovery as rc  # noqa: E402
from agentstudies.recovery import plots  # noqa: E402


def _paired():
    # clean: 4 tasks, (without, with) = (0,1) (0,1) (1,0) (1,1) -> rescue 2/4, harm 1/4
    # stale-1: (0,1) (0,0) (0,0) (1,1)                            -> rescue 1/4, harm 0/4
    pairs = {"clean": [(0, 1), (0, 1), (1, 0), (1, 1)], "stale-1": [(0, 1), (0, 0), (0, 0), (1, 1)]}
    rows = [dict(task_id=f"t{i}", condition=c, delay=0, operation="refresh", y_without=y0, y_with=y1)
            for c, ys in pairs.items() for i, (y0, y1) in enumerate(ys)]
    return pd.DataFrame(rows)


def test_rescue_harm_bars_are_the_hand_counted_shares():
    res = rc.analyze_paired(_paired(), n_draws=200, seed=0)
    fig = plots.plot_rescue_harm(res, "all" if "all" in set(res.cells["cohort"]) else res.cells["cohort"].iloc[0],
                                 label="simulated agent")
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([50.0, 25.0, 25.0, 0.0])  # rescue clean, stale-1; harm clean, stale-1
    assert [t.get_text() for t in ax.get_xticklabels()] == ["clean", "stale-1"]
    assert ax.get_ylabel() and ax.get_xlabel() == "observation condition"
    assert "simulated agent" in ax.get_title()
    assert any("rescued" in t.get_text() for t in ax.get_legend().get_texts())
    plt.close(fig)
    with pytest.raises(KeyError, match="delays"):
        plots.plot_rescue_harm(res, res.cells["cohort"].iloc[0], delay=5)


def test_flat_note_says_why_a_figure_is_flat_only_when_nothing_changed():
    res = rc.analyze_paired(_paired(), n_draws=200, seed=0)
    cohort = res.cells["cohort"].iloc[0]
    assert plots.flat_note(res, cohort) == (
        f"Summed over the cells of the figure, refresh rescued 3 and harmed 1 task outcome(s) of {cohort}.")
    same = _paired().assign(y_with=lambda d: d["y_without"])  # refresh changes nothing
    flat = plots.flat_note(rc.analyze_paired(same, n_draws=200, seed=0), cohort, delay=0)
    assert flat.startswith("In this run every value in the figure is 0") and "none of the 4 tasks" in flat
    with pytest.raises(KeyError, match="delays"):
        plots.flat_note(res, cohort, delay=3)
