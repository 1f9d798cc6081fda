"""CPU time of three workloads under CPython's default collector threshold and under the
one the package's workers and chapter kernels use (``agentstudies.parallel.GC_THRESHOLD0``).

Measured, each workload in a fresh process per setting (same inputs, same seeds), side
by side in one run:

  recovery    ALFWorld recovery protocol (``run_recovery_study``), 12 tasks, one process:
              engine loads (PDDL->SAS translation), steps, the trained policy
  training    SFT + 2 REINFORCE iterations of the linear ALFWorld policy, 3 problems/type
  inspect     one Inspect eval of the mock tau2 agent, 4 retail samples
  study_a     SASST Study A (Table 4, M = 1000, R = 5), 100 trials, one process

For each: CPU seconds at threshold 700 and at GC_THRESHOLD0, their ratio, and whether
the result's digest is the same (it must be: the setting is speed only).

Usage:  python benchmarks/bench_collector.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

WORKLOAD = r'''
import gc, hashlib, json, os, sys, tempfile, time
name, threshold = sys.argv[1], int(sys.argv[2])
os.environ["AGENTSTUDIES_SCRATCH"] = tempfile.mkdtemp()
if name == "recovery":
    from agentstudies.agents.alfworld import LearnedAlfworldPolicy
    from agentstudies.studies.alfworld import recovery as ar
    pools = ar.cohort_pools({"primary": 1, "independent": 1}, seed=2029, n_jobs=1)
    policy = LearnedAlfworldPolicy.load("RL", temperature=0.4, greedy=True)
    def run():
        s = ar.run_recovery_study(pools, policy, seed=0, look_format="arrival", n_jobs=1)
        return s.paired.to_csv() + s.tasks.drop(columns=[c for c in s.tasks if "second" in c]).to_csv()
elif name == "training":
    from agentstudies.studies.alfworld import training as tr
    from agentstudies.agents.alfworld import weights_digest
    cfg = tr.TrainingConfig(train_tasks_per_type=3, sft_tasks_per_type=2, rl_iters=2, rl_batch=16, sft_steps=20)
    def run():
        r = tr.train_checkpoints(cfg, n_jobs=1, log=lambda m: None)
        return weights_digest(r.w_sft) + weights_digest(r.w_rl)
elif name == "inspect":
    import contextlib
    import agentstudies.agents.testing as testing
    testing._collect_in_larger_batches = contextlib.nullcontext  # the threshold set below governs
    from agentstudies.agents.testing import mock_tau2_eval
    from agentstudies.episodes import from_inspect_log
    def run():
        p = mock_tau2_eval("decline", tempfile.mkdtemp(), limit=4, epochs=1)
        return from_inspect_log(p, task_id="retail/{id}")[["task_id", "score"]].to_csv()
else:
    from agentstudies.studies.sasst import calibration as cal
    design = cal.StudyADesign()
    def run():
        return cal.run_table4(design=design, M_values=[1000], R_values=[5], n_trials=100, n_draws=2000, seed=1,
                              n_jobs=1, truth_points=65536).to_csv()
gc.set_threshold(threshold, *gc.get_threshold()[1:])
t0 = time.process_time()
out = run()
print(json.dumps({"cpu_s": time.process_time() - t0, "digest": hashlib.sha256(out.encode()).hexdigest()}))
'''


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from agentstudies.parallel import GC_THRESHOLD0

    res = {}
    print(f"{'workload':10s} {'700 (CPU-s)':>12s} {GC_THRESHOLD0:>9d} {'ratio':>6s}  same result")
    for name in ("recovery", "training", "inspect", "study_a"):
        got = {}
        for threshold in (700, GC_THRESHOLD0):
            out = subprocess.run([sys.executable, "-c", WORKLOAD, name, str(threshold)], capture_output=True,
                                 text=True, check=True)
            got[threshold] = json.loads(out.stdout.strip().splitlines()[-1])  # the workload's last line
        a, b = got[700], got[GC_THRESHOLD0]
        res[name] = {"cpu_s_default": a["cpu_s"], "cpu_s_tuned": b["cpu_s"], "ratio": b["cpu_s"] / a["cpu_s"],
                     "same_result": a["digest"] == b["digest"]}
        r = res[name]
        print(f"{name:10s} {r['cpu_s_default']:12.2f} {r['cpu_s_tuned']:9.2f} {r['ratio']:6.2f}  {r['same_result']}",
              flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
    return res


if __name__ == "__main__":
    main()
