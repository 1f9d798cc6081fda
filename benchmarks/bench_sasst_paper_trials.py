"""Paper-scale CPU cost of the trials of the SASST chapters sasst_calibration and sasst_small_clusters.

Runs every trial kind of the two chapters at its paper size (Table 4 M = 500..4000 with R = 5
and 20; Table 5 near-tie, separated and informative; A4; the four Table 6 null settings; the
four feasible Table 7 designs; the three Table 8 runs with 50 stability resamples) for
``N_TRIALS`` trials each in one process (one BLAS thread, the workers' allocator settings),
and extrapolates CPU seconds to the paper profile's trial counts (2,000 per configuration,
1,000 per Table 8 run). Trial work only: the chapters' population truths, summaries and
worker start-up are not counted. Measure in CPU time (the machine is shared).

The three radii come from a 50-draw score-blind pilot (the chapter uses 200; the cost of a
trial does not depend on it).

    python benchmarks/bench_sasst_paper_trials.py [--trials 10] [--out FILE.json]

Writes ``artifacts/benchmarks/bench_sasst_paper_trials.json`` by default.
"""
import argparse, time, json
from pathlib import Path
import numpy as np
from threadpoolctl import threadpool_limits
from agentstudies.parallel import _tune_allocator
_tune_allocator()
from agentstudies.studies.sasst import calibration as C
from agentstudies.studies.sasst import small_clusters as SC
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--trials", type=int, default=10)
ap.add_argument("--out", default="artifacts/benchmarks/bench_sasst_paper_trials.json")
args = ap.parse_args()
n = args.trials
design, sep = C.StudyADesign(), C.StudyADesign(separated_stress=C.SEPARATED_STRESS)
oracle = C.oracle_index(design, 2**16)
pool = SC.load_pool(); rules = SC.registry(pool)
radii = SC.calibrate_radii(pool, rules, n_clusters=40, n_pilot=50)
kinds = {}
for M in (500, 1000, 2000, 4000):
    kinds[f"t4_{M}"] = (2000, lambda i, r, M=M: C.table4_trial(i, r, M=M, design=design, oracle=oracle))
for M in (500, 1000, 2000):
    kinds[f"t5_{M}"] = (2000, lambda i, r, M=M: C.table5_trial(i, r, M=M, design=design))
    kinds[f"t5s_{M}"] = (2000, lambda i, r, M=M: C.table5_trial(i, r, M=M, design=sep))
kinds["t5i_1000"] = (2000, lambda i, r: C.table5_trial(i, r, M=1000, design=design, tercile_features=("x1", "x2", "x3")))
for M in (1000, 2000):
    kinds[f"a4_{M}"] = (2000, lambda i, r, M=M: C.a4_trial(i, r, M=M, design=design))
for s in SC.NULL_SETTINGS:
    st = SC.null_setting(s, pool)
    kinds[f"audit_{s}"] = (2000, lambda i, r, st=st: SC.audit_trial(i, r, pool=pool, setting=st, rules=rules, radii=radii))
for N, E in ((40, 20), (80, 20), (200, 40), (200, 100)):
    d = SC.PowerDesign(N, E)
    kinds[f"power_{N}_{E}"] = (2000, lambda i, r, d=d: SC.power_trial(i, r, pool=pool, design=d))
for name, planted, N in (("null40", False, 40), ("null200", False, 200), ("pc200", True, 200)):
    st = SC.positive_control_setting(pool, planted=planted)
    kinds[name] = (1000, lambda i, r, st=st, N=N: SC.positive_control_trial(i, r, pool=pool, setting=st, rules=rules, radii=radii, n_clusters=N, n_stability=50))
out = {}
with threadpool_limits(limits=1, user_api="blas"):
    for k, (count, f) in kinds.items():
        seeds = np.random.SeedSequence(99).spawn(n + 1)
        f(0, np.random.default_rng(seeds[-1]))
        t0 = time.process_time()
        for i in range(n):
            f(i, np.random.default_rng(seeds[i]))
        ms = 1000 * (time.process_time() - t0) / n
        out[k] = (ms, count * ms / 1000)
cal = sum(v[1] for k, v in out.items() if k[0] in "ta" and not k.startswith("audit"))
sc = sum(v[1] for k, v in out.items() if k.startswith(("audit", "power", "null", "pc")))
for k, v in out.items():
    print(f"{k:16s} {v[0]:7.2f} ms/trial  {v[1]:7.1f} CPU-s at paper")
print(f"sasst_calibration trials: {cal:.0f} CPU-s; sasst_small_clusters trials: {sc:.0f} CPU-s")
Path(args.out).parent.mkdir(parents=True, exist_ok=True)
json.dump(out, open(args.out, "w"), indent=1)
