"""``n_jobs=2`` against ``n_jobs=1`` for the package's parallel paths (issue 31 item 2).

Every measured caller runs in a fresh Python process per measurement (the cost a chapter
pays at its first parallel call: worker start, imports, cold per-process memos), twice in
that process (``first``; ``second``: the same call again, workers and memos warm, as a
chapter's later calls see them). ``n_jobs=1`` and ``n_jobs=2`` alternate within each repeat,
so the load of a shared machine hits both alike; the ratio is median(t1) / median(t2)
(> 1: parallel wins; the issue's goal is >= 1.7 on 2 idle cores). Results are checked equal
across ``n_jobs`` (the tables must not depend on it).

Callers of :func:`agentstudies.parallel.seeded_map` not measured here are printed with the
reason (too slow for a benchmark run, or measured by another script).

Usage:  python benchmarks/bench_parallel.py [--reps 3] [--only NAME ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import statistics
import subprocess
import sys
import time


def _toolsandbox(n_jobs):
    from agentstudies.agents.toolsandbox import run_episodes
    from agentstudies.envs.toolsandbox import generate_scenarios, make_cases

    cases = make_cases(generate_scenarios(0))[:360]
    return lambda: run_episodes(cases, n_jobs=n_jobs).to_csv()


def _sandbox(n_jobs):
    from agentstudies.envs.impossible import SandboxConfig, Submission, load_problems, run_many

    subs = [Submission(p.solution_code, p.entry_point, p.test, "read_only") for p in load_problems()[:12]] * 2
    cfg = SandboxConfig(wall_s=10, cpu_s=5)
    return lambda: [o.outcome for o in run_many(subs, cfg, n_jobs=n_jobs)[0]]


def _feasibility(n_jobs):
    from agentstudies.studies.sasst.feasibility import FeasibilityConfig, run_feasibility

    return lambda: run_feasibility(FeasibilityConfig(), 8, seed=0, n_jobs=n_jobs).to_csv()


def _study_b(n_jobs):
    from agentstudies.studies.sasst.geometry import StudyBConfig, run_study_b

    return lambda: _tables(run_study_b(StudyBConfig(), 4, seed=0, n_jobs=n_jobs))


def _tables(res):
    """A result (a frame, or a tuple of frames and values) as text, to compare across n_jobs."""
    parts = res if isinstance(res, tuple) else (res,)
    return tuple(p.to_csv() if hasattr(p, "to_csv") else repr(p) for p in parts)


#: name -> (module:function of the seeded_map caller, setup(n_jobs) -> call)
MEASURED = {
    "toolsandbox_episodes": ("agents.toolsandbox.run_episodes (360 cases x 3 workflows)", _toolsandbox),
    "sandbox_run_many": ("envs.impossible.run_many (24 sandboxed runs)", _sandbox),
    "sasst_feasibility": ("studies.sasst.feasibility.run_feasibility (8 trials)", _feasibility),
    "sasst_study_b": ("studies.sasst.geometry.run_study_b (4 trials)", _study_b),
}
#: seeded_map callers not timed here, and why
NOT_MEASURED = {
    "studies.sasst._common.run_trials (Study A/Table 4-5)": "bench_sasst_study_a.py times the trial; same seeded_map path",
    "studies.sasst.geometry_audit (audit trials, bandwidth_diagnostic)": "per-space work of milliseconds; sequential in chapters",
    "studies.impossible.simulate_episodes / impossible_controls": "minutes a run (agents + sandbox)",
    "envs.impossible._verify.build_variant_table": "~4 min for the 164 tasks (maintenance script)",
    "studies.alfworld.recovery.run / .report (pools, tasks, controls)": "minutes a run (ALFWorld engine)",
    "studies.alfworld.handoff.run / .report (tasks, controls)": "minutes a run (ALFWorld engine)",
    "studies.alfworld.training (checks, demos, rollouts)": "minutes a run (ALFWorld engine, training)",
    "studies.tau.workflow.stress_controls / agents.tau.episodes": "minutes a run (tau2 environment)",
    "envs.alfworld.pools (manifest rebuild)": "maintenance script",
}


def _one(name: str, n_jobs: int) -> dict:
    call = MEASURED[name][1](n_jobs)
    out = {}
    for k in ("first", "second"):
        t0 = time.perf_counter()
        res = call()
        out[k] = time.perf_counter() - t0
    out["digest"] = hashlib.sha256(pickle.dumps(res)).hexdigest()[:16]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--one", nargs=2, metavar=("NAME", "N_JOBS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(_one(args.one[0], int(args.one[1]))))
        return
    names = args.only or list(MEASURED)
    times = {n: {j: {"first": [], "second": []} for j in (1, 2)} for n in names}
    digests = {n: set() for n in names}
    failed: dict[str, str] = {}
    for _ in range(args.reps):
        for n in names:
            for j in (1, 2) if n not in failed else ():  # interleaved: the load of a shared machine hits both alike
                r = subprocess.run([sys.executable, __file__, "--one", n, str(j)], capture_output=True, text=True)
                if r.returncode:
                    failed[n] = (r.stderr.strip().splitlines() or ["no output"])[-1][:200]
                    continue
                o = json.loads(r.stdout.strip().splitlines()[-1])
                for k in ("first", "second"):
                    times[n][j][k].append(o[k])
                digests[n].add(o["digest"])
    res = {"reps": args.reps, "load_avg_1min_end": os.getloadavg()[0], "cpus": os.cpu_count(), "callers": {}}
    print(f"{'caller':24s} {'what':52s} {'t1 s':>7s} {'t2 s':>7s} {'ratio':>6s} {'warm t1':>7s} {'warm t2':>7s} "
          f"{'ratio':>6s} same")
    for n in names:
        if n in failed:
            res["callers"][n] = {"what": MEASURED[n][0], "failed": failed[n]}
            print(f"{n:24s} {MEASURED[n][0][:52]:52s} FAILED: {failed[n]}")
            continue
        m = {j: {k: statistics.median(v) for k, v in times[n][j].items()} for j in (1, 2)}
        row = {"what": MEASURED[n][0], "first_s": {j: round(m[j]["first"], 3) for j in (1, 2)},
               "second_s": {j: round(m[j]["second"], 3) for j in (1, 2)},
               "ratio_first": round(m[1]["first"] / m[2]["first"], 3),
               "ratio_second": round(m[1]["second"] / m[2]["second"], 3),
               "identical_across_n_jobs": len(digests[n]) == 1}
        res["callers"][n] = row
        print(f"{n:24s} {row['what'][:52]:52s} {m[1]['first']:7.2f} {m[2]['first']:7.2f} {row['ratio_first']:6.2f} "
              f"{m[1]['second']:7.2f} {m[2]['second']:7.2f} {row['ratio_second']:6.2f} {row['identical_across_n_jobs']}")
    print("\nnot measured here:")
    for k, why in NOT_MEASURED.items():
        print(f"  {k}: {why}")
    res["not_measured"] = NOT_MEASURED
    print(f"load average (1 min) at the end: {res['load_avg_1min_end']:.2f} on {res['cpus']} CPUs")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
