"""Speed of the ToolSandbox-style world and its scripted (simulated) agents.

Measured
  gold        gold-trajectory replays + scoring per second (every case).
  episodes    simulated episodes per second (case x workflow, profile ``base``), in process
              and with ``--n-jobs`` workers (the tables are identical either way).
  handoff     handoff units (reach + two solves) per second on the base cases.
  scoring     milestone similarity matrix + DAG matcher per second on finished episodes.

Usage:  python benchmarks/bench_toolsandbox.py [--n-jobs 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    from agentstudies.agents.toolsandbox import run_episodes, run_handoff
    from agentstudies.envs.toolsandbox import generate_scenarios, make_cases, replay_gold

    scenarios = generate_scenarios(0)
    cases = make_cases(scenarios)
    out = {"python": platform.python_version(), "n_cases": len(cases)}

    t0 = time.perf_counter()
    envs = [replay_gold(c) for c in cases]
    for e in envs:
        e.evaluate()
    out["gold_per_s"] = len(cases) / (time.perf_counter() - t0)

    t0 = time.perf_counter()
    scored = 0
    for e in envs[:400]:
        e.evaluate()
        scored += 1
    out["scoring_per_s"] = scored / (time.perf_counter() - t0)

    for n_jobs in (1, args.n_jobs):
        t0 = time.perf_counter()
        df = run_episodes(cases, profiles=("base",), seeds=(0,), n_jobs=n_jobs)
        dt = time.perf_counter() - t0
        out[f"episodes_per_s_n_jobs_{n_jobs}"] = len(df) / dt
        out[f"episodes_n_jobs_{n_jobs}"] = len(df)

    base = [c for c in cases if c.augmentation == "base"]
    t0 = time.perf_counter()
    h = run_handoff(base, seeds=(0,))
    dt = time.perf_counter() - t0
    units = h.drop_duplicates(["task_id", "seed", "reacher"]).shape[0]
    out["handoff_units_per_s"] = units / dt

    for k, v in out.items():
        print(f"{k:32s} {v:.1f}" if isinstance(v, float) else f"{k:32s} {v}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
