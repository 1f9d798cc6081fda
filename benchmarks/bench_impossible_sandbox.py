"""Throughput of the impossible-task sandbox (sandboxed runs per second).

Measured
  single     one canonical HumanEval solution against its original tests, run after run
             (seconds per sandboxed run: namespaces + unprivileged user + harness + tests).
  parallel   the same submissions through agentstudies.parallel.seeded_map
             (run_many) with n_jobs workers: runs per second.
  isolation  which OS isolation was in force (network / PID / mount namespace, user).

Usage:  python benchmarks/bench_impossible_sandbox.py [--n 40] [--n-jobs 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time

from agentstudies.envs.impossible import SandboxConfig, Submission, isolation, load_problems, run_many, run_submission


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    probs = load_problems()[: args.n]
    subs = [Submission(p.solution_code, p.entry_point, p.test, "read_only") for p in probs]
    cfg = SandboxConfig(wall_s=10, cpu_s=5)
    iso = isolation()
    t0 = time.perf_counter()
    outs = [run_submission(s, cfg) for s in subs[: max(1, args.n // 4)]]
    single = (time.perf_counter() - t0) / len(outs)
    par, rps = run_many(subs, cfg, n_jobs=args.n_jobs)
    res = {"isolation": iso, "seconds_per_run_single": round(single, 4), "runs_per_s_single": round(1 / single, 2),
           "n_jobs": args.n_jobs, "runs_per_s_parallel": round(rps, 2), "n": len(subs),
           "passed": sum(o.passed for o in par)}
    print(json.dumps(res, indent=2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
