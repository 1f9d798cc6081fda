"""CPU cost of the exact ALFWorld speed-ups of the H1 round (speed and one-job modules).

Measured (CPU seconds, ``time.process_time``; each with the speed-up on and off, on the
same states; the answers are compared and must be equal)
  game logic    ``pddl_env.game_logic`` (one TatSu parse per grammar skeleton) against
                ``GameLogic(domain, grammar)`` on every game of the embedded pools.
  frontier      ``frontier_check(env, 2)`` with the goal-relevance filter at the last
                depth against applying every operator, on every state of trained-policy
                (SFT) episodes in the pools' rooms.

Usage:  python benchmarks/bench_alfworld_exact_speedups.py [--per-type 1] [--json out.json]
The policy is the shipped SFT checkpoint (a small trained linear policy, *simulated*).
"""

from __future__ import annotations

import argparse
import json
import time


def bench_logic(games) -> dict:
    from textworld.envs.pddl.logic import GameLogic

    from agentstudies.envs.alfworld import pddl_env
    from agentstudies.envs.alfworld.engine import enable_parse_cache

    enable_parse_cache()
    pddl_env._LOGIC_CACHE.clear()
    pddl_env._SKELETONS.clear()
    t = time.process_time()
    fast = [pddl_env.game_logic(g["pddl_domain"], g["grammar"]) for g in games]
    t_fast = time.process_time() - t
    t = time.process_time()
    ref = [GameLogic(domain=g["pddl_domain"], grammar=g["grammar"]) for g in games]
    t_ref = time.process_time() - t
    same = all([(k, vars(a)) for k, a in f.actions.items()] == [(k, vars(a)) for k, a in r.actions.items()]
               and repr(dict(f.grammar._rules)) == repr(dict(r.grammar._rules)) for f, r in zip(fast, ref))
    return {"games": len(games), "shared_parse_s": round(t_fast, 3), "textworld_parse_s": round(t_ref, 3),
            "equal": bool(same)}


def bench_frontier(games) -> dict:
    from agentstudies.agents.alfworld import LearnedAlfworldPolicy
    from agentstudies.envs.alfworld import frontier as fr
    from agentstudies.envs.alfworld.env import AlfworldEnv

    pol = LearnedAlfworldPolicy.load("SFT", temperature=0.4)
    env = AlfworldEnv(48)
    t_on = t_off = 0.0
    n = on = 0
    same = True
    for g in games:
        env.load_game(g)
        env.reset(0, 48)
        pol.reset(env.task_id, 0, "reacher")
        fr.goal_relevant_operators(env._pddl._pddl_state.sas)  # built once per task, outside the timing
        while not env.done:
            env.step(pol.act(env.observe()))
            fr.USE_GOAL_RELEVANCE = False
            t = time.process_time()
            b = fr.frontier_check(env, 2)
            t_off += time.process_time() - t
            fr.USE_GOAL_RELEVANCE = True
            t = time.process_time()
            a = fr.frontier_check(env, 2)
            t_on += time.process_time() - t
            n += 1
            on += a.on_frontier
            same = same and a == b
    env.close()
    return {"states": n, "on_frontier": on, "filtered_s": round(t_on, 3), "every_operator_s": round(t_off, 3),
            "equal": bool(same)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-type", type=int, default=1, help="pool tasks per task type and split")
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args()
    from agentstudies.envs.alfworld.pools import load_pool

    games = load_pool("valid_seen", args.per_type) + load_pool("valid_unseen", args.per_type)
    out = {"logic": bench_logic(games), "frontier": bench_frontier(games)}
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
