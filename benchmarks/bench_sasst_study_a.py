"""Study A (SASST Table 4) trial throughput: vectorized multipliers vs a loop-per-draw reference.

One Study A trial at M = 1000 clusters simulates the data, discovers the learned rule for
R = 5 and R = 20, confirms the fixed oracle and the learned rule, and computes pointwise
multiplier critical values from 2,000 Gaussian multiplier draws shared by the four slots.

* vectorized: :func:`agentstudies.studies.sasst._common.coordinatewise_critical`
  (one ``(B x N) @ (N x m)`` product);
* reference: :func:`loop_critical` below - a plain Python loop over the 2,000 draws and,
  inside, over the clusters (and slots), the straightforward transcription of
  ``G*_bm = N^{-1/2} sum_k zeta_bk (Phi_km - mean_m) / sigma_m``.

Both run the *same* trials (same seeds, hence the same data and the same multiplier
draws); the script checks that they give the same critical values. It then reports, side
by side in one run:

* Study A trials/s of the default path (multiplier statistics drawn from their exact
  conditional law, one draw for both bound directions) and of the literal vectorized
  cluster-multiplier path, each against the loop-per-draw reference (goal >= 20x);
* the multiplier step of the default path against its floor, the time to generate the
  ``n_draws x m`` normals it needs (goal <= 1.5x), and the literal cluster path's step
  against *its* floor (``n_draws x N`` normals);
* with ``--chapters NAME ...``, the wall time of ``agentstudies run NAME --profile P``.

    python benchmarks/bench_sasst_study_a.py [--trials 20] [--ref-trials 3] [--M 1000]
        [--chapters sasst_calibration ...] [--profile quick]

Writes ``artifacts/benchmarks/bench_sasst_study_a.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time

import numpy as np

from agentstudies.book.chapter import artifacts_root
from agentstudies.studies.sasst import calibration as C
from agentstudies.studies.sasst._common import coordinatewise_critical, exact_coordinatewise_critical


def loop_critical(phi: np.ndarray, signs: np.ndarray, zeta: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Reference: pointwise multiplier critical values with Python loops over draws and clusters."""
    phi = np.asarray(phi, dtype=float)
    n, m = phi.shape
    cols = []
    for j in range(m):
        col = [float(v) for v in phi[:, j]]
        mean = sum(col) / n
        sigma = math.sqrt(sum((v - mean) ** 2 for v in col) / n)
        cols.append((col, mean, sigma))
    Z = zeta.tolist()
    draws = [[0.0] * m for _ in range(len(Z))]
    for b, zb in enumerate(Z):  # loop over the multiplier draws ...
        for j, (col, mean, sigma) in enumerate(cols):
            if sigma <= 1e-12:
                continue
            acc = 0.0
            for k in range(n):  # ... and over the clusters
                acc += zb[k] * (col[k] - mean)
            draws[b][j] = signs[j] * acc / (sigma * math.sqrt(n))
    out = np.quantile(np.asarray(draws), level, axis=0)
    return np.array([out[j] if cols[j][2] > 1e-12 else np.nan for j in range(m)])


def _run(n_trials: int, critical, M: int, design, oracle: int, n_draws: int, seed: int):
    seeds = np.random.SeedSequence(seed).spawn(n_trials)
    t0 = time.perf_counter()
    recs = [C.table4_trial(i, np.random.default_rng(s), M=M, design=design, oracle=oracle, n_draws=n_draws,
                           critical=critical) for i, s in enumerate(seeds)]
    return recs, time.perf_counter() - t0


def main() -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20, help="vectorized trials")
    ap.add_argument("--ref-trials", type=int, default=3, help="reference trials (the first ones of the same seeds)")
    ap.add_argument("--M", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--chapters", nargs="*", default=[], help="chapters to time with agentstudies run")
    ap.add_argument("--profile", default="quick")
    args = ap.parse_args()

    design = C.StudyADesign()
    oracle = C.oracle_index(design)
    _run(1, coordinatewise_critical, args.M, design, oracle, args.draws, args.seed + 1)  # warm-up
    vec, t_vec = _run(args.trials, coordinatewise_critical, args.M, design, oracle, args.draws, args.seed)
    _, t_exact = _run(args.trials, None, args.M, design, oracle, args.draws, args.seed)
    ref, t_ref = _run(args.ref_trials, loop_critical, args.M, design, oracle, args.draws, args.seed)

    # same trials -> same data and multipliers -> the same critical values
    max_diff = 0.0
    for rv, rr in zip(vec, ref):
        for a, b in zip(rv, rr):
            for key in ("crit_upper", "crit_lower"):
                max_diff = max(max_diff, abs(a[key] - b[key]))
                if not np.isclose(a[key], b[key], rtol=1e-9, atol=1e-12):
                    raise AssertionError(f"critical values differ: {a[key]} vs {b[key]}")

    # the multiplier step alone, on one trial's contributions
    rng = np.random.default_rng(args.seed)
    phi = rng.standard_normal((args.M // 2, 4))
    zeta = rng.standard_normal((args.draws, args.M // 2))
    signs = -np.ones(4)
    t0 = time.perf_counter()
    for _ in range(20):
        coordinatewise_critical(phi, signs, zeta)
    t_step_vec = (time.perf_counter() - t0) / 20
    t0 = time.perf_counter()
    loop_critical(phi, signs, zeta)
    t_step_ref = time.perf_counter() - t0
    reps = 200
    g = np.random.default_rng(1)
    t0 = time.perf_counter()
    for _ in range(reps):
        exact_coordinatewise_critical(phi, signs, args.draws, g)
    t_step_exact = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for _ in range(reps):
        g.standard_normal((args.draws, phi.shape[1]))
    t_floor_exact = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for _ in range(20):
        zz = g.standard_normal((args.draws, args.M // 2))
        coordinatewise_critical(phi, signs, zz)
        coordinatewise_critical(phi, -signs, zz)
    t_step_cluster = (time.perf_counter() - t0) / 20
    t0 = time.perf_counter()
    for _ in range(20):
        g.standard_normal((args.draws, args.M // 2))
    t_floor_cluster = (time.perf_counter() - t0) / 20
    chapters = {}
    for name in args.chapters:
        import subprocess
        import sys
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "agentstudies.book.cli", "run", name, "--profile", args.profile,
                            "-o", f"{tmp}/{name}.ipynb"], check=True)
            chapters[name] = round(time.perf_counter() - t0, 1)

    out = {
        "benchmark": "SASST Study A trial (Table 4), M clusters, R in (5, 20), fixed + learned rule",
        "M": args.M, "n_draws": args.draws, "python": platform.python_version(),
        "vectorized_trials": args.trials, "vectorized_seconds": round(t_vec, 3),
        "vectorized_trials_per_s": round(args.trials / t_vec, 3),
        "reference_trials": args.ref_trials, "reference_seconds": round(t_ref, 3),
        "reference_trials_per_s": round(args.ref_trials / t_ref, 4),
        "trial_speedup": round((args.trials / t_vec) / (args.ref_trials / t_ref), 1),
        "multiplier_step_vectorized_s": round(t_step_vec, 5),
        "multiplier_step_reference_s": round(t_step_ref, 3),
        "multiplier_step_speedup": round(t_step_ref / t_step_vec, 1),
        "default_exact_trials_per_s": round(args.trials / t_exact, 3),
        "default_exact_trial_speedup_vs_reference": round((args.trials / t_exact) / (args.ref_trials / t_ref), 1),
        "multiplier_step_exact_s": round(t_step_exact, 6),
        "multiplier_step_exact_floor_normals_s": round(t_floor_exact, 6),
        "multiplier_step_exact_over_floor": round(t_step_exact / t_floor_exact, 2),
        "multiplier_step_cluster_both_sides_s": round(t_step_cluster, 5),
        "multiplier_step_cluster_floor_normals_s": round(t_floor_cluster, 5),
        "multiplier_step_cluster_over_floor": round(t_step_cluster / t_floor_cluster, 2),
        "chapter_wall_s": chapters, "chapter_profile": args.profile,
        "max_abs_critical_difference": max_diff,
        "same_critical_values": True,
    }
    path = artifacts_root() / "benchmarks"
    path.mkdir(parents=True, exist_ok=True)
    (path / "bench_sasst_study_a.json").write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
