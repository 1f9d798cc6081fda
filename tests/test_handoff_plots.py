"""Smoke tests: every handoff figure draws from its result object and carries the label."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from agentstudies import handoff as ho  # noqa: E402
from agentstudies.handoff import plots  # noqa: E402
from agentstudies.handoff.testing import example_tables  # noqa: E402


@pytest.fixture(scope="module")
def results():
    t = example_tables(seed=1, n_per_type=2, n_seeds=2)
    s = example_tables(seed=2, n_per_type=2, n_seeds=2, split="valid_seen", arrival=(0.6, 0.9))
    both = pd.concat([t["episodes"], s["episodes"]])
    return dict(
        handoff=ho.analyze_handoff(both, n_draws=200, empty_threshold=1.0),
        prediction=ho.predict_interaction(t["episodes"], s["episodes"], n_draws=200, empty_threshold=1.0),
        budget=ho.budget_diagnostic(t["trajectories"], n_draws=200),
    )


@pytest.mark.parametrize(
    "fn, key, kw",
    [
        (plots.plot_arrival_curve, "budget", {}),
        (plots.plot_estimands, "handoff", {}),
        (plots.plot_assignments, "handoff", {}),
        (plots.plot_reach_solve, "handoff", {"splits": ["valid_unseen", "valid_seen"]}),
        (plots.plot_prediction, "prediction", {}),
        (plots.plot_residuals, "prediction", {}),
        (plots.plot_solve_by_type, "handoff", {"split": "valid_unseen"}),
        (plots.plot_budget, "budget", {}),
    ],
)
def test_figures_draw_and_carry_label(results, fn, key, kw):
    fig = fn(results[key], label="simulated checkpoints", **kw)
    titles = [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text() if fig._suptitle else ""]
    assert any("simulated checkpoints" in t for t in titles)
    plt.close(fig)


def test_plot_needs_split_when_ambiguous(results):
    with pytest.raises(ValueError, match="split"):
        plots.plot_solve_by_type(results["handoff"])


def test_assignment_grid_is_endpoint_success_by_reacher_and_solver(results):
    """Each cell of the 2 x 2 is the share of that reacher's trajectories the solver
    finishes (Eq. 7), counted here straight from the episode rows; one panel per split."""
    t = example_tables(seed=1, n_per_type=2, n_seeds=2)
    ep = t["episodes"]
    res = ho.analyze_handoff(ep, n_draws=200, empty_threshold=1.0)
    fig = plots.plot_assignment_grid(res, label="simulated checkpoints")
    grid = fig.axes[0].images[0].get_array()
    roles = [res.base, res.treated]
    for i, w in enumerate(roles):
        for j, r in enumerate(roles):
            rows = ep[(ep["reacher"] == w) & (ep["solver"] == r)]
            assert grid[i, j] == pytest.approx(100 * rows["endpoint"].astype(float).mean())
    assert fig.axes[0].get_xlabel().startswith("solver") and fig.axes[0].get_ylabel().startswith("reacher")
    assert "simulated checkpoints" in fig._suptitle.get_text()
    plt.close(fig)
    both = plots.plot_assignment_grid(results["handoff"])
    assert sorted(ax.get_title() for ax in both.axes if ax.images) == ["valid seen", "valid unseen"]
    plt.close(both)
    with pytest.raises(ValueError, match="split"):
        plots.plot_assignment_grid(results["handoff"], splits=["train"])
