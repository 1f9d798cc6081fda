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


def test_chunks_are_contiguous_near_equal_and_keep_order():
    from agentstudies.parallel import _chunks

    for n_items, n in ((10, 3), (3, 8), (16, 16), (1, 4), (100, 16)):
        parts = _chunks(list(range(n_items)), n)
        assert [x for p in parts for x in p] == list(range(n_items))
        assert len(parts) == min(n, n_items)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1


def _blas_threads(item, rng):
    import os

    from threadpoolctl import threadpool_info

    return os.getpid(), max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=1)


def test_workers_run_items_in_chunks_with_one_blas_thread():
    out = seeded_map(_blas_threads, 40, seed=0, n_jobs=2, backend="loky")
    assert all(t == 1 for _, t in out)
    pids = [p for p, _ in out]
    # contiguous chunks: the worker changes far fewer times than item by item
    assert sum(a != b for a, b in zip(pids, pids[1:])) < 20


def _gc_threshold(item, rng):
    import gc

    return gc.get_threshold()


def test_collector_threshold_raised_in_workers_never_lowered_and_off_left_off():
    import gc

    from agentstudies.parallel import GC_THRESHOLD0, tune_collector

    out = seeded_map(_gc_threshold, 4, seed=0, n_jobs=2, backend="loky")
    assert all(t[0] == GC_THRESHOLD0 for t in out)  # a fresh worker starts at CPython's 700
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 7, 9)
        tune_collector()
        assert gc.get_threshold() == (GC_THRESHOLD0, 7, 9)  # only the first threshold moves
        gc.set_threshold(5 * GC_THRESHOLD0, 10, 10)
        tune_collector()
        assert gc.get_threshold()[0] == 5 * GC_THRESHOLD0  # a user's larger value is kept
        gc.set_threshold(0, 10, 10)
        tune_collector()
        assert gc.get_threshold()[0] == 0  # threshold 0 (collection off) stays off
    finally:
        gc.set_threshold(*saved)
