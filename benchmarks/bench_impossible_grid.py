"""CPU cost of the impossible_cheating chapter's episode cell at the paper's scale, per task.

Runs the chapter's workflow grid (``simulate_episodes`` with the notebook's defaults: the
one-at-a-time grid with rounds 1/3/10, policies shortcut + honest, ``wall_s=5``) and the
validation grid on the first ``--tasks`` of the paper's 149 tasks, in a fresh process
with no build scratch folder (so no verdict is reused from an earlier run), and reports
CPU seconds of this process and of its reaped children, the sandboxed runs, and the CPU
per run. The paper cell's cost is about ``cpu_per_task * 149`` (validation: 20 tasks).

Caveat: in the ``bwrap`` layer the sandboxed interpreters run in a fresh PID namespace and
their CPU never reaches this process's ``RUSAGE_CHILDREN`` (``/usr/bin/time`` shows 0 s
for ``bwrap --unshare-pid python -c <loop>``), so ``cpu_children_s`` is near 0 there;
``--layer none`` runs the same harness and interpreter without the OS layer, so its
children CPU is the interpreter's share (the namespaces' own cost is not included).

Measured 2026-12-03 (6 tasks, n_jobs 1, shared 2 cores): 83 executed runs; host
(this process) ~7 CPU-ms per run; the harness's interpreter ~46-52 CPU-ms per run, of which
~35 ms are its stdlib preloads (typing, socket, hashlib/_hashlib, collections, enum, ...:
what tests need imported before the audit hook, so they stay) and ~11 ms the bare
interpreter start. Paper cell: ~2,900 executed runs x ~60-70 CPU-ms.

Measured 2026-12-03 after the issue 31 session-36 changes (harness compiled once and sent
marshalled; no ast / json import in the harness; classifier walk with cached children;
memoised eligible assertions and honest-code rewrite), ``--tasks 10 --n-jobs 1 --layer
none --validation``, a27b77a and the new code interleaved, 3 pairs, load ~3 on 2 shared
cores (384 executed runs each, identical counts): CPU per task 2.65 / 2.53 / 2.68 ->
2.26 / 2.08 / 2.10 s (median 2.65 -> 2.10, -21 %); host 3.12 / 2.96 / 3.10 -> 2.35 /
2.24 / 2.26 s; interpreters 23.4 / 22.3 / 23.7 -> 20.3 / 18.6 / 18.8 s; per executed run
68.9 / 65.8 / 69.7 -> 58.9 / 54.3 / 54.8 CPU-ms. Paper cell (~2,900 executed runs): about
200 -> 159 CPU-s (bwrap's namespace set-up, kernel time not seen here, unchanged).

Usage:  python benchmarks/bench_impossible_grid.py [--tasks 12] [--n-jobs 2] [--layer auto|none] [--profile out.prof]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, ch.ru_utime + ch.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--profile", default=None)
    ap.add_argument("--layer", default="auto", choices=("auto", "none"),
                    help="none: the harness without the OS layer (its interpreter CPU becomes visible)")
    ap.add_argument("--validation", action="store_true", help="also the validation grid (policies honest, A-E)")
    args = ap.parse_args()
    os.environ.pop("AGENTSTUDIES_SCRATCH", None)
    from agentstudies.envs.impossible import SandboxConfig, Workflow, workflow_grid
    from agentstudies.studies import impossible as st

    tasks = st.load_tasks(149, seed=0)[: args.tasks]
    config = SandboxConfig(wall_s=5.0, cpu_s=2, layer=args.layer)
    st.simulate_episodes(tasks[:1], [Workflow()], policies=("honest",), config=config)   # probes + canaries
    prof = None
    if args.profile:
        import cProfile

        prof = cProfile.Profile(time.process_time)
        prof.enable()
    s0, c0 = _cpu()
    t0 = time.perf_counter()
    run = st.simulate_episodes(tasks, workflow_grid(rounds=(1, 3, 10)), policies=("shortcut", "honest"), seed=0,
                               n_jobs=args.n_jobs, config=config)
    runs, executed = run.runs, run.executed
    if args.validation:
        vw = [Workflow("lenient", t, False, 3) for t in ("writable", "read_only", "hidden")]
        val = st.simulate_episodes(tasks, vw + [Workflow("strict", "writable", True, 3)],
                                   policies=("honest", "A", "B", "C", "D", "E"), seed=0, n_jobs=args.n_jobs,
                                   config=config)
        runs, executed = runs + val.runs, executed + val.executed
    wall = time.perf_counter() - t0
    s1, c1 = _cpu()
    if prof is not None:
        prof.disable()
        prof.dump_stats(args.profile)
    self_s, child_s = s1 - s0, c1 - c0
    print(json.dumps({"tasks": len(tasks), "runs": runs, "executed": executed, "wall_s": round(wall, 2),
                      "cpu_self_s": round(self_s, 2), "cpu_children_s": round(child_s, 2),
                      "cpu_per_executed_run_ms": round(1000 * (self_s + child_s) / max(executed, 1), 1),
                      "cpu_per_task_s": round((self_s + child_s) / len(tasks), 2)}, indent=1))


if __name__ == "__main__":
    main()
