"""Speed of the vectorized handoff bootstrap against straightforward loops.

Paper profile: 30 tasks (6 types x 5), 4 paired seeds, 4 reacher x solver assignments
(480 episode rows), 100,000 task-stratified paired resamples of every estimand.

Measured
  vectorized   analyze_handoff(n_draws=100_000): validation, task statistics, the
               stratified multiplicity matrix, every estimand for all resamples by matrix
               products (in chunks), percentile intervals.
  core         the bootstrap alone (draws + statistic), without validation/summaries.
  loop_numpy   the same statistic evaluated one resample at a time in a Python loop
               (same task statistics and draws) - timed on --loop-draws resamples and
               extrapolated to n_boot.
  loop_pandas  the straightforward row-level implementation: build each resample's
               episode rows and take pandas means (testing.handoff_replicates_loop) -
               timed on --pandas-draws resamples and extrapolated.

Usage:  python benchmarks/bench_handoff.py [--n-boot 100000] [--threads 2] [--json out.json]
The synthetic table is a schema fixture (reference.example_tables), not agent data.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-boot", type=int, default=100_000)
    ap.add_argument("--loop-draws", type=int, default=5_000, help="resamples timed for the numpy loop")
    ap.add_argument("--pandas-draws", type=int, default=100, help="resamples timed for the pandas loop")
    ap.add_argument("--threads", type=int, default=2, help="BLAS / OpenMP threads (2 = the CI machine)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the results to this path")
    args = ap.parse_args(argv)

    from threadpoolctl import threadpool_limits

    from agentstudies.handoff import analyze_handoff
    from agentstudies.handoff.testing import (
        bootstrap_seed,
        episode_task_stats,
        example_tables,
        flat_statistic,
        handoff_replicates_loop,
        run_bootstrap,
    )
    from agentstudies.stats import bootstrap_counts

    ep = example_tables(seed=args.seed, n_per_type=5, n_seeds=4)["episodes"]
    split = "valid_unseen"
    stats = episode_task_stats(ep)[split]
    statistic, names, by_type = flat_statistic(stats, bridge=True, pre=False)
    sums = stats.block_sums()
    out: dict = dict(
        n_rows=len(ep), n_tasks=stats.n_units, n_types=stats.n_strata, n_boot=args.n_boot,
        n_estimands=len(names) + len(by_type), threads=args.threads, cpu_count=os.cpu_count(),
        python=platform.python_version(), numpy=np.__version__,
    )
    with threadpool_limits(limits=args.threads):
        # warm-up (imports, caches)
        analyze_handoff(ep, n_draws=1000, seed=args.seed, empty_threshold=1.0)
        t_full = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            analyze_handoff(ep, n_draws=args.n_boot, seed=args.seed, empty_threshold=1.0)
            t_full.append(time.perf_counter() - t0)
        t_core = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            run_bootstrap(sums, stats.strata, statistic, n_draws=args.n_boot,
                          seed_seq=bootstrap_seed(args.seed, "handoff", split), chunk=20_000)
            t_core.append(time.perf_counter() - t0)

        rng = np.random.default_rng(bootstrap_seed(args.seed, "handoff", split))
        counts = bootstrap_counts(stats.n_units, args.loop_draws, rng, stats.strata).astype(float)
        t0 = time.perf_counter()
        with np.errstate(divide="ignore", invalid="ignore"):
            for c in counts:
                statistic((c @ sums)[None, :])
        t_np = time.perf_counter() - t0

        sub = counts[: args.pandas_draws].astype(int)
        t0 = time.perf_counter()
        handoff_replicates_loop(ep, stats.units, sub)
        t_pd = time.perf_counter() - t0

    per_np = t_np / args.loop_draws
    per_pd = t_pd / args.pandas_draws
    full, core = min(t_full), min(t_core)
    out.update(
        vectorized_s=round(full, 3), core_s=round(core, 3),
        loop_numpy_s_per_resample=per_np, loop_numpy_extrapolated_s=round(per_np * args.n_boot, 1),
        loop_pandas_s_per_resample=per_pd, loop_pandas_extrapolated_s=round(per_pd * args.n_boot, 1),
        speedup_vs_numpy_loop=round(per_np * args.n_boot / full, 1),
        speedup_vs_pandas_loop=round(per_pd * args.n_boot / full, 1),
    )
    print(f"handoff bootstrap: {out['n_tasks']} tasks, {out['n_types']} types, {out['n_rows']} rows, "
          f"{out['n_estimands']} estimands (overall + per type), {args.n_boot:,} resamples, {args.threads} threads")
    print(f"  vectorized analyze_handoff   {full:8.2f} s   (bootstrap core alone {core:.2f} s)")
    print(f"  loop, numpy per resample     {per_np * args.n_boot:8.1f} s   (timed {args.loop_draws:,}, extrapolated)"
          f"   ratio {out['speedup_vs_numpy_loop']:.0f}x")
    print(f"  loop, pandas rows            {per_pd * args.n_boot:8.1f} s   (timed {args.pandas_draws:,}, extrapolated)"
          f"   ratio {out['speedup_vs_pandas_loop']:.0f}x")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return out


if __name__ == "__main__":
    main()
