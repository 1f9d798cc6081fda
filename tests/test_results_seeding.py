"""The shared result convention (agentstudies.results) and the keyed-seed rule."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest

from agentstudies.parallel import keyed_seed, seeded_map
from agentstudies.results import TIDY_COLUMNS, Result, ResultProvenance, make_provenance, tidy_rows


@dataclass(frozen=True)
class _Toy(Result):
    rows: pd.DataFrame
    params: dict = field(default_factory=dict)
    provenance: ResultProvenance = field(default_factory=ResultProvenance)
    title = "toy"

    def _tidy(self) -> pd.DataFrame:
        return tidy_rows(self.rows, strata=("split",))


def _toy() -> _Toy:
    rows = pd.DataFrame({"split": ["a", "a", "b"], "estimand": ["mean", "sd", "mean"],
                         "estimate": [1.0, 2.0, 3.0], "ci_low": [0.5, np.nan, 2.5],
                         "ci_high": [1.5, np.nan, 3.5], "side": ["two-sided", "", "two-sided"]})
    return _Toy(rows, params={"level": 0.95}, provenance=make_provenance(seed=3, data=rows))


def test_to_frame_has_strata_then_tidy_columns():
    df = _toy().to_frame()
    assert list(df.columns) == ["split", *TIDY_COLUMNS]
    assert df["se"].isna().all() and (df["side"] == ["two-sided", "", "two-sided"]).all()


def test_get_picks_one_row_and_names_what_exists():
    r = _toy()
    assert r.get("mean", split="b")["estimate"] == 3.0
    assert r.get("sd")["estimate"] == 2.0
    with pytest.raises(KeyError, match="also give"):
        r.get("mean")
    with pytest.raises(KeyError, match="available"):
        r.get("median")
    with pytest.raises(KeyError, match="not a stratum"):
        r.get("mean", domain="x")


def test_summary_html_and_provenance():
    r = _toy()
    assert "toy" in r.summary() and "level=0.95" in r.summary()
    assert r._repr_html_().startswith("<pre>")
    again = make_provenance(seed=3, data=_toy().rows)
    assert r.provenance == again and len(r.provenance.inputs["data"]) == 64


def test_bad_side_rejected():
    with pytest.raises(ValueError, match="side"):
        tidy_rows([{"estimand": "x", "estimate": 1.0, "side": "left"}])


def test_keyed_seed_is_stable_distinct_and_nests():
    a = keyed_seed(7, "episode", "task-1", 0, "solver", "RL")
    b = keyed_seed(7, "episode", "task-1", 0, "solver", "RL")
    c = keyed_seed(7, "episode", "task-1", 0, "solver", "SFT")
    draw = lambda s: np.random.default_rng(s).random(4)  # noqa: E731
    assert np.array_equal(draw(a), draw(b)) and not np.array_equal(draw(a), draw(c))
    assert np.array_equal(draw(keyed_seed(keyed_seed(7, "x"), "y")), draw(keyed_seed(7, "x", "y")))
    assert not np.array_equal(draw(keyed_seed(7, 5)), draw(keyed_seed(7, "5")))
    with pytest.raises(TypeError, match="seed"):
        keyed_seed(-1, "x")


def _matmul_trial(item, rng):
    x = rng.standard_normal((300, 40))
    return float((x.T @ x).sum())


def test_seeded_map_bit_identical_across_n_jobs():
    one = seeded_map(_matmul_trial, 6, seed=11, n_jobs=1)
    two = seeded_map(_matmul_trial, 6, seed=11, n_jobs=2)
    assert one == two
