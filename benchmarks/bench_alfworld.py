"""Speed of the ALFWorld handoff machinery on the real engine (generated rooms).

Measured
  frontier fast       F_2 checks per second by the FAST path (fast-downward operators,
                      no text), on reached states of a small room and of the pools' rooms.
  frontier snapshot   the same checks by snapshot restore + env.step on rendered text.
  frontier replay     the paper's operational clone: every branch by reset + replay of
                      the prefix + env.step (one state, small room).
  steps               env.step per second (fast rendering) and with TextWorld's original
                      rendering (no parse/command cache), same actions.
  reset / load        seconds per reset and per game load (PDDL->SAS translation).
  study               seconds per (task, seed, reacher) trajectory of run_handoff_study on a
                      subset of the embedded pools; with --full the chapter's quick scale
                      (both pools x 30 tasks x 4 seeds x 2 reachers) and its wall time.

Usage:  python benchmarks/bench_alfworld.py [--full] [--n-jobs 2] [--json out.json]
Policies are the scripted (simulated) SFT/RL checkpoints.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time


def _reached_states(env, ex, n, rng, seed=0):
    """Snapshots of n reached states (expert + random walk, stopping 1-4 actions short)."""
    out = []
    while len(out) < n:
        env.reset(seed)
        stop = rng.choice([1, 2, 2, 3, 4])
        while not env.done:
            plan = ex.plan()
            if len(plan) <= stop:
                break
            env.step(plan[0] if rng.random() < 0.7 else rng.choice(env.admissible))
        if not env.done:
            out.append(list(env.actions))
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="run the quick-scale study (both pools)")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--states", type=int, default=20, help="reached states per room for the fast path")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    from agentstudies.envs.alfworld import engine
    from agentstudies.envs.alfworld._testing import small_game
    from agentstudies.envs.alfworld.env import AlfworldEnv
    from agentstudies.envs.alfworld.expert import Expert
    from agentstudies.envs.alfworld.frontier import frontier_check, frontier_check_reference
    from agentstudies.envs.alfworld.pools import load_pool
    from agentstudies.studies.alfworld.handoff.run import run_handoff_study

    res: dict = {"machine": platform.platform(), "python": platform.python_version()}
    rng = random.Random(0)
    env = AlfworldEnv(budget=60)
    ex = Expert(env)
    pool = load_pool("valid_unseen", 5)
    rooms = {
        "small room (pick, 6 receptacles)": small_game("pick_and_place_simple"),
        "pool room (heat, kitchen)": next(g for g in pool if g["traj_data"]["task_type"] == "pick_heat_then_place_in_recep"),
        "pool room (pick)": pool[0],
    }
    res["frontier"] = {}
    for label, game in rooms.items():
        t0 = time.perf_counter()
        env.load_game(game)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        env.reset(0)
        reset_s = time.perf_counter() - t0
        n_rec = game["pddl_problem"].count(" - receptacle")
        prefixes = _reached_states(env, ex, args.states, rng)
        fast_t = snap_t = 0.0
        n_snap = 0
        counts = []
        for k, pre in enumerate(prefixes):
            env.replay(0, pre)
            t0 = time.perf_counter()
            fc = frontier_check(env, 2)
            fast_t += time.perf_counter() - t0
            counts.append(sum(fc.actions_tested))
            if k < 3:
                t0 = time.perf_counter()
                ref = frontier_check_reference(env, 2, method="snapshot")
                snap_t += time.perf_counter() - t0
                n_snap += 1
                assert ref.summary() == fc.summary()
        env.release_snapshots()
        row = {
            "receptacles": n_rec,
            "load_s": round(load_s, 3),
            "reset_s": round(reset_s, 3),
            "actions_tested_mean": round(sum(counts) / len(counts), 1),
            "fast_states_per_s": round(len(prefixes) / fast_t, 1),
            "fast_ms_per_state": round(1000 * fast_t / len(prefixes), 2),
            "snapshot_states_per_s": round(n_snap / snap_t, 4),
            "snapshot_s_per_state": round(snap_t / n_snap, 2),
        }
        if label.startswith("small"):
            env.replay(0, prefixes[0])
            t0 = time.perf_counter()
            frontier_check_reference(env, 2, method="replay")
            t = time.perf_counter() - t0
            row["replay_states_per_s"] = round(1 / t, 5)
            row["replay_s_per_state"] = round(t, 1)
        res["frontier"][label] = row
        print(label, row, flush=True)

    # ---- step throughput (same actions, fast vs original TextWorld rendering)
    game = rooms["pool room (heat, kitchen)"]
    env.load_game(game)
    env.reset(0)
    acts = []
    while len(acts) < 40 and not env.done:
        acts.append(rng.choice(env.admissible))
        env.step(acts[-1])
    steps = {}
    for mode in ("fast", "textworld"):
        if mode == "textworld":
            engine.disable_parse_cache()
            env._pddl.command_cache = False
        env.reset(0)
        t0 = time.perf_counter()
        for a in acts:
            env.step(a)
        steps[mode] = len(acts) / (time.perf_counter() - t0)
    engine.enable_parse_cache()
    env._pddl.command_cache = True
    res["steps_per_s"] = {k: round(v, 1) for k, v in steps.items()}
    print("env.step per second", res["steps_per_s"], flush=True)
    env.close()

    # ---- study cost per trajectory
    subset = [g for i, g in enumerate(pool) if i % 5 == 0]  # one task per type
    t0 = time.perf_counter()
    st = run_handoff_study(subset, tasks_per_type=None, seeds=[0, 1], n_jobs=1)
    res["study_subset"] = {
        "tasks": len(subset),
        "trajectories": len(st.trajectories),
        "wall_s": round(time.perf_counter() - t0, 1),
        "seconds_per_trajectory": round(st.timing["seconds_per_trajectory"], 3),
        "reacher_steps_per_s": round(st.timing["reacher_steps"] / st.timing["worker_seconds"], 1),
    }
    print("study subset", res["study_subset"], flush=True)

    if args.full:
        t0 = time.perf_counter()
        full = run_handoff_study(["valid_seen", "valid_unseen"], tasks_per_type=5, seeds=[0, 1, 2, 3],
                                 n_jobs=args.n_jobs)
        wall = time.perf_counter() - t0
        summ = full.summary().round(3)
        res["study_quick_scale"] = {
            "trajectories": len(full.trajectories),
            "n_jobs": args.n_jobs,
            "wall_s": round(wall, 1),
            "seconds_per_trajectory": round(full.timing["seconds_per_trajectory"], 3),
            "summary": json.loads(summ.reset_index().to_json(orient="records")),
            "clone_audit": json.loads(full.clone_audit.to_json(orient="records")),
        }
        print(summ.to_string(), flush=True)
        print(full.clone_audit.to_string(), flush=True)
        print("quick-scale study wall", round(wall, 1), "s", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)
    return res


if __name__ == "__main__":
    main()
