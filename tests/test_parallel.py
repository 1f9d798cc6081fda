"""seeded_map: same results whatever n_jobs or backend."""

import numpy as np
import pytest

from agentstudies.parallel import seeded_map


def _draw(item, rng, scale=1.0):
    return item, float(rng.normal() * scale)


def test_results_do_not_depend_on_n_jobs_or_backend():
    a = seeded_map(_draw, 12, seed=5, n_jobs=1)
    b = seeded_map(_draw, 12, seed=5, n_jobs=2, backend="loky", scale=1.0)
    c = seeded_map(_draw, 12, seed=5, n_jobs=3, backend="threading")
    assert a == b == c
    # item i gets the i-th SeedSequence child
    want = float(np.random.default_rng(np.random.SeedSequence(5).spawn(12)[7]).normal())
    assert a[7] == (7, want)


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend 'ray'"):
        seeded_map(_draw, 2, backend="ray")


@pytest.mark.slow
def test_dask_backend_matches():
    pytest.importorskip("dask.distributed")
    assert seeded_map(_draw, 6, seed=1, n_jobs=2, backend="dask") == seeded_map(_draw, 6, seed=1)
