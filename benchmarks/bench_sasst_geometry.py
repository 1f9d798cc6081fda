"""Per-trial cost of the SASST Study B, geometry-audit and Study C simulations.

Times a few trials of each at the chapters' default settings (sequential, one process)
and extrapolates to the paper profiles (Table 9: 200 trials x 4 mechanisms; Table 10: 300
audit trials; Table 11: 500 trials x 5 settings + the sensitivity setting). Wall time of a
chapter on ``n`` workers is about the sequential time divided by ``n`` plus the fixed
costs (feature encoding, the MiniLM model load).

Usage:  python benchmarks/bench_sasst_geometry.py [--trials 4] [--threads 1] [--encoder tfidf-svd]
"""

from __future__ import annotations

import argparse
import os
import time


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=4, help="trials timed per study")
    ap.add_argument("--threads", type=int, default=1, help="BLAS / OpenMP threads")
    ap.add_argument("--encoder", default="tfidf-svd", help="scenario encoder of the audit features")
    args = ap.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    import numpy as np

    from agentstudies.studies.sasst import feasibility as fz
    from agentstudies.studies.sasst import geometry as gs
    from agentstudies.studies.sasst import geometry_audit as ga

    out: dict[str, float] = {}
    cfg_b = gs.StudyBConfig()
    radii = gs.pilot_radii(cfg_b, np.random.default_rng(0))
    t0 = time.perf_counter()
    for t in range(args.trials):
        gs.study_b_trial((gs.MECHANISMS[t % 4], t), np.random.default_rng(t), cfg=cfg_b, radii=radii)
    out["study_b_s_per_trial"] = (time.perf_counter() - t0) / args.trials

    feats, _, emb = ga.tau_audit_features(args.encoder)
    cfg_a = ga.AuditConfig()
    rad_a = ga.audit_radii(feats, emb, cfg_a)
    t0 = time.perf_counter()
    for t in range(args.trials):
        ga.audit_trial(t, np.random.default_rng(t), features=feats, emb=emb, radii=rad_a, cfg=cfg_a)
    out["audit_s_per_trial"] = (time.perf_counter() - t0) / args.trials

    cfg_c = fz.FeasibilityConfig()
    t0 = time.perf_counter()
    n = 0
    for s in fz.ALL_SETTINGS:
        for t in range(args.trials):
            fz.feasibility_trial((s, t), np.random.default_rng(t), cfg=cfg_c)
            n += 1
    out["study_c_s_per_trial"] = (time.perf_counter() - t0) / n

    paper = {
        "table9 (800 trials)": 800 * out["study_b_s_per_trial"],
        f"table10 (300 trials, {args.encoder})": 300 * out["audit_s_per_trial"],
        "table11 (3000 trials)": 3000 * out["study_c_s_per_trial"],
    }
    print(f"{'study':34s} {'s / trial':>10s}")
    for k in ("study_b_s_per_trial", "audit_s_per_trial", "study_c_s_per_trial"):
        print(f"{k:34s} {out[k]:10.3f}")
    print("\nsequential time extrapolated to the paper profiles:")
    for k, v in paper.items():
        print(f"{k:34s} {v / 60:8.1f} min")
    return out


if __name__ == "__main__":
    main()
