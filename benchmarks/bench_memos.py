"""Does the process-wide ALFWorld feedback-text memo pay? Interleaved A/B in one process.

Memo measured
  feedback   the step feedback-text memo of ``agentstudies.envs.alfworld.pddl_env``
             (``_FEEDBACK``, keyed by game, rule, mapping, facts and variables after the
             action). Arm "off" derives every text with TextWorld's grammar, as the memo's
             own miss path does (same cached step, no key, no lookup).

Workloads
  evaluate   ``evaluate_checkpoints`` of the shipped SFT and RL checkpoints on the held-out
             pools (``--tasks-per-type`` per type and split) x ``--seeds`` seeds: the
             training chapter's evaluation.
  recovery   ``run_task`` of the recovery harness on ``--recovery-tasks`` mechanism-cohort
             tasks (forks revisit states: where the feedback memo hits most).

Each round runs arm A then arm B (the order alternates between rounds), each from empty
memos, and records ``time.process_time()`` of this process (n_jobs=1). Reported: the
median CPU seconds per arm, the median of the per-round ratios off/on, and the memos'
entries after a run. Tables are checked equal between arms.

Usage:  python benchmarks/bench_memos.py [--rounds 5] [--tasks-per-type 1] [--seeds 4]
"""

from __future__ import annotations

import argparse
import statistics
import time


def _arms():
    from agentstudies.envs.alfworld import pddl_env
    on_feedback = pddl_env.PddlEnvCached._feedback

    def derive(self, action):
        ps = self._pddl_state
        context = {"state": ps, "facts": list(ps.facts),
                   "variables": {ph.name: self._entity_infos[var.name] for ph, var in action.mapping.items()},
                   "mapping": action.mapping, "entity_infos": self._entity_infos}
        return self._logic.grammar.derive(action.feedback_rule, context)

    def reset():
        pddl_env._FEEDBACK.clear()

    def set_feedback(on: bool):
        pddl_env.PddlEnvCached._feedback = on_feedback if on else derive

    def sizes():
        return {"feedback_entries": len(pddl_env._FEEDBACK)}

    return reset, set_feedback, sizes


def _evaluate(games, seeds):
    from agentstudies.agents.alfworld import load_weights
    from agentstudies.studies.alfworld.training import evaluate_checkpoints

    cps = []
    for name in ("SFT", "RL"):
        w, meta = load_weights(name)
        cps.append((name, w, bool(meta.get("admissible", False))))
    return evaluate_checkpoints(cps, games, seeds, n_jobs=1)


def _recovery(tasks):
    import pandas as pd

    from agentstudies.agents.alfworld import LearnedAlfworldPolicy
    from agentstudies.studies.alfworld import recovery as ar

    policy = LearnedAlfworldPolicy.load("RL", greedy=True)
    rows = [ar.run_task(g, policy, seed=0, conditions=ar.CONDITIONS, delays=ar.DELAYS, operations=ar.OPERATIONS,
                        cap_scale=0.5, look_format="arrival") for g in tasks]
    return [pd.DataFrame([r["task"]]) for r in rows]


def _ab(name, work, set_arm, reset, sizes, rounds):
    times = {True: [], False: []}
    ratios, outputs, size = [], {}, {}
    for r in range(rounds):
        order = (True, False) if r % 2 == 0 else (False, True)
        got = {}
        for on in order:
            set_arm(on)
            reset()
            t0 = time.process_time()
            out = work()
            got[on] = time.process_time() - t0
            times[on].append(got[on])
            outputs[on] = out
            if on:
                size = sizes()
        set_arm(True)
        ratios.append(got[False] / got[True])
    same = all(a.equals(b) for a, b in zip(outputs[True], outputs[False]))
    print(f"{name:<22} on {statistics.median(times[True]):7.2f} CPU-s  off {statistics.median(times[False]):7.2f} "
          f"CPU-s  off/on median {statistics.median(ratios):.3f} (rounds: {', '.join(f'{x:.3f}' for x in ratios)})  "
          f"tables equal: {same}  memo after a run: {size}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tasks-per-type", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--recovery-tasks", type=int, default=2)
    args = ap.parse_args(argv)

    from agentstudies.studies.alfworld import recovery as ar
    from agentstudies.studies.alfworld.training import eval_pools

    reset, set_feedback, sizes = _arms()
    games = eval_pools(args.tasks_per_type)
    seeds = list(range(args.seeds))
    tasks = ar.cohort_pools({"mechanism": args.recovery_tasks},
                            task_types=["pick_and_place_simple", "look_at_obj_in_light"])["mechanism"]
    _evaluate(games, seeds[:1])  # warm: imports, every game load and translation cache
    _recovery(tasks)
    print(f"evaluate: {len(games)} games x {len(seeds)} seeds x 2 checkpoints; recovery: {len(tasks)} tasks; "
          f"{args.rounds} interleaved rounds, n_jobs=1")
    _ab("feedback / evaluate", lambda: _evaluate(games, seeds), set_feedback, reset, sizes, args.rounds)
    _ab("feedback / recovery", lambda: _recovery(tasks), set_feedback, reset, sizes, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
