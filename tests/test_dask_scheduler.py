"""Scale-out on an existing dask.distributed cluster: one LocalCluster
started once; seeded_map sends its items there through one reused client, and a
simulation's table equals the local run's."""

import numpy as np
import pandas as pd
import pytest

from agentstudies import parallel
from agentstudies.parallel import SCHEDULER_ENV, scheduler_address, seeded_map, use_scheduler

distributed = pytest.importorskip("distributed")


def _draw(item, rng, scale=1.0):
    # BLAS-free, order-sensitive work: a sum of the item's own stream
    return float(scale * item + rng.standard_normal(1000).sum())


@pytest.fixture(scope="module")
def cluster():
    from dask.distributed import LocalCluster

    lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    yield lc
    use_scheduler(None)
    lc.close()


def test_scheduler_address_from_environment(monkeypatch):
    use_scheduler(None)
    parallel._SCHEDULER["address"] = None  # neither set nor cleared: the environment decides
    monkeypatch.setenv(SCHEDULER_ENV, "tcp://127.0.0.1:8786")
    assert scheduler_address() == "tcp://127.0.0.1:8786"
    use_scheduler("tcp://127.0.0.1:1")
    assert scheduler_address() == "tcp://127.0.0.1:1"
    use_scheduler(None)
    assert scheduler_address() is None


def test_cluster_run_equals_local_run_with_one_client(cluster):
    from agentstudies.studies.sasst import feasibility as fz

    use_scheduler(None)
    local = seeded_map(_draw, 12, seed=5, scale=2.0)
    cfg = fz.FeasibilityConfig(n_stability=4, n_draws=100)
    settings = ("density_only", "near_tied_rules")
    table_local = fz.run_feasibility(cfg, 2, seed=3, settings=settings)
    use_scheduler(cluster.scheduler_address)
    try:
        remote = seeded_map(_draw, 12, seed=5, scale=2.0)
        client = parallel._SCHEDULER["client"]
        table_remote = fz.run_feasibility(cfg, 2, seed=3, settings=settings, n_jobs=1)
        assert parallel._SCHEDULER["client"] is client  # one client for the whole run
        assert client.status == "running" and client.scheduler.address == cluster.scheduler_address
    finally:
        use_scheduler(None)
    assert remote == local
    # independent check of the seeding rule: item i uses the i-th spawned child
    kids = np.random.SeedSequence(5).spawn(12)
    assert local == [2.0 * i + np.random.default_rng(k).standard_normal(1000).sum() for i, k in enumerate(kids)]
    pd.testing.assert_frame_equal(table_remote, table_local)


def test_cli_scheduler_flag_reaches_the_kernels_environment(monkeypatch):
    import argparse
    import os

    from agentstudies.book import cli

    # setenv first, so monkeypatch restores the variable afterwards (a bare delenv of an
    # absent variable records nothing): later tests' kernels must not inherit the address
    monkeypatch.setenv(SCHEDULER_ENV, "")
    cli._use_scheduler(argparse.Namespace(scheduler="tcp://127.0.0.1:8786"))
    assert os.environ[SCHEDULER_ENV] == "tcp://127.0.0.1:8786"
    parser = cli.build_parser() if hasattr(cli, "build_parser") else None
    if parser is not None:
        args = parser.parse_args(["run", "sasst_feasibility", "--scheduler", "tcp://127.0.0.1:1"])
        assert args.scheduler == "tcp://127.0.0.1:1"
