"""Train and measure an ALFWorld checkpoint with transcript memory (MemoryAlfworldPolicy).

Trains ``BC-memory`` with the library's recipe,
:func:`agentstudies.studies.alfworld.training.train_memory_checkpoint` (behaviour cloning
with expert relabelling, DAgger): round 0 imitates the analytic expert on the training
problems (the expert drives, the policy reads the transcript it would have been shown);
each further round lets the policy act (sampled at ``--temperature``; with
``--look-rate`` a ``look`` before a decision, its reply shown to the policy) and labels
every state it visits with the expert's next command. The expert is used only to label
training states; at decision time the policy sees what
:class:`agentstudies.agents.alfworld.MemoryAlfworldPolicy` documents (goal, latest shown
text, admissible list, its own transcript). The shipped weights:
``--train-per-type 20 --dagger-rounds 3 --save``.

Then measures, on generated ``valid_unseen`` problems never used in training:

1. clean-state success (the engine's ``won``) of BC-memory and of the shipped RL, with
   exact (Clopper-Pearson) 95 % intervals, at the recovery harness's caps;
2. on the recovery study's fork harness (:func:`agentstudies.studies.alfworld.recovery.harness.run_task`,
   refresh forks of every condition at delays 0, 1, 2, 4), the share of forks at delays
   >= 1 where the refresh changes the agent's next action (``changed_next``), with exact
   intervals, for BC-memory and the shipped RL.

Run:  PYTHONPATH=src python benchmarks/alfworld_memory.py --train-per-type 10 --eval-per-type 10 --fork-per-type 3
Compare checkpoints on the same problems and seeds: ``--load --also NAME=DIR`` (repeatable;
DIR holds a ``BC-memory.*`` written with ``--save --save-dir DIR --no-measure``);
``--fork-from 10 --fork-per-type 20`` forks only problems 10-19 of each type (a held-out set).
The look-augmented runs in ``alfworld_memory_results.json`` were trained by this script's
own DAgger loop before it called the library (commit d6a8ca5; ``look_in_expert_round``
has no library counterpart); at ``look_rate`` 0 both reproduce BC-memory.npy bitwise.
Writes ``--out`` (JSON with every number) and, with ``--save``, the weights as
``data/alfworld/checkpoints/BC-memory.*`` with the per-round log ``rounds-memory.csv``.
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd


def _success(pol, games, action_cap: int, label: str = "") -> tuple[int, int]:
    from agentstudies.envs.alfworld.env import AlfworldEnv
    from agentstudies.parallel import keyed_seed

    env = AlfworldEnv(budget=action_cap)
    wins = 0
    for g in games:
        env.load_game(g)
        env.reset(int(keyed_seed(0, "env", env.task_id).generate_state(1)[0] % (2 ** 31)))  # as the fork harness
        pol.reset(env.task_id, 0, role="eval")
        while not env.done:
            o = env.observe()
            env.step(pol.act({"goal": o["goal"], "observation": o["observation"],
                              "admissible_commands": o["admissible_commands"]}))
        wins += int(env.won)
        print(f"  {label or pol.name} {g['task_id']}: won={env.won}", flush=True)
    return wins, len(games)


def main() -> None:
    """Train (or ``--load``) BC-memory, then measure it (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train-per-type", type=int, default=10)
    ap.add_argument("--dagger-rounds", type=int, default=2)
    ap.add_argument("--eval-per-type", type=int, default=10)
    ap.add_argument("--fork-per-type", type=int, default=3)
    ap.add_argument("--fork-from", type=int, default=0,
                    help="fork only problems with index >= this per type (a held-out confirmation set)")
    ap.add_argument("--cap-scale", type=float, default=0.5)
    ap.add_argument("--temperature", type=float, default=0.4)
    ap.add_argument("--sft-steps", type=int, default=150)
    ap.add_argument("--look-rate", type=float, default=0.0,
                    help="chance of a look (reply shown to the policy) before each policy-driven training decision")
    ap.add_argument("--save-dir", default=None, help="with --save: where the weights go (default: the shipped dir)")
    ap.add_argument("--also", action="append", default=[],
                    help="NAME=DIR: also measure the BC-memory checkpoint in DIR under NAME (same problems, seeds)")
    ap.add_argument("--skip-rl", action="store_true")
    ap.add_argument("--greedy", action="store_true", help="greedy decoding (the recovery chapter's default)")
    ap.add_argument("--load", action="store_true", help="measure the shipped BC-memory instead of training")
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--no-measure", action="store_true", help="train (and --save) only")
    ap.add_argument("--out", default="/tmp/alfworld_memory.json")
    args = ap.parse_args()

    from agentstudies.agents.alfworld import MemoryAlfworldPolicy

    res: dict = {"args": vars(args)}
    t0 = time.perf_counter()
    if args.load:
        pol = MemoryAlfworldPolicy.load("BC-memory", temperature=args.temperature, greedy=args.greedy)
    else:
        pol = _train(args, res, t0)
    if args.no_measure:
        with open(args.out, "w") as fh:
            json.dump(res, fh, indent=1, default=float)
        return
    _measure(args, res, pol, t0)


def _train(args, res, t0):
    """The library's DAgger recipe (:func:`agentstudies.studies.alfworld.training.train_memory_checkpoint`)."""
    from agentstudies.agents.alfworld import MemoryAlfworldPolicy
    from agentstudies.studies.alfworld.training import train_memory_checkpoint
    from agentstudies.studies.alfworld.training.pools import training_pool

    games = training_pool(args.train_per_type, 4093)
    res["pool_seconds"] = time.perf_counter() - t0
    print(f"training pool: {len(games)} problems in {res['pool_seconds']:.0f} s", flush=True)
    run = train_memory_checkpoint(games, rounds=args.dagger_rounds, sft_steps=args.sft_steps,
                                  temperature=args.temperature, look_rate=args.look_rate, pool_seed=4093,
                                  log=lambda m: print(f"{m} at {time.perf_counter() - t0:.0f} s", flush=True))
    res["rounds"] = run.rounds.to_dict(orient="records")
    res["meta"] = dict(run.meta)
    if args.save:
        run.save(directory=args.save_dir)  # weights, meta and the per-round log rounds-memory.csv
    return MemoryAlfworldPolicy(run.w, "BC-memory", temperature=args.temperature, greedy=args.greedy,
                                meta=run.meta, admissible=True)


def _measure(args, res, pol, t0):
    """Clean success and refresh-changed next actions (module docstring)."""
    from agentstudies.agents.alfworld import LearnedAlfworldPolicy, MemoryAlfworldPolicy
    from agentstudies.envs.alfworld.pools import load_pool
    from agentstudies.findings import binomial_interval
    from agentstudies.studies.alfworld.recovery.harness import run_task

    cap = max(1, int(round(64 * 1.0)))
    ev = load_pool("valid_unseen", args.eval_per_type, 2029)
    subjects = {"BC-memory": pol}
    for spec in args.also:
        label, _, directory = spec.partition("=")
        subjects[label] = MemoryAlfworldPolicy.load("BC-memory", temperature=args.temperature, greedy=args.greedy,
                                                    directory=directory)
    if not args.skip_rl:
        subjects["RL"] = LearnedAlfworldPolicy.load("RL", temperature=args.temperature, greedy=args.greedy)
    res["clean_success"] = {}
    for name, p in subjects.items():
        k, n = _success(p, ev, cap, name)
        rate, lo, hi = binomial_interval(k, n)
        res["clean_success"][name] = {"wins": k, "n": n, "rate": rate, "ci_low": lo, "ci_high": hi}
        print(f"clean success {name}: {k}/{n} = {rate:.3f} [{lo:.3f}, {hi:.3f}] at {time.perf_counter() - t0:.0f} s",
              flush=True)
    fork_games = load_pool("valid_unseen", args.fork_per_type, 2029) if args.fork_per_type > 0 else []
    fork_games = [g for g in fork_games if int(g["task_id"].rsplit("-", 1)[1]) >= args.fork_from]
    res["forks"] = {}
    for name, p in (subjects.items() if fork_games else ()):
        rows = []
        for g in fork_games:
            out = run_task(g, p, seed=0, operations=("refresh",), cap_scale=args.cap_scale)
            rows += out["paired"]
            print(f"  {name} {g['task_id']}: {len(rows)} forks at {time.perf_counter() - t0:.0f} s", flush=True)
        paired = pd.DataFrame(rows)
        later = paired[paired["delay"] >= 1]
        by = {}
        for label, part in (("all", later), ("clean", later[later["condition"] == "clean"]),
                            ("stale", later[later["condition"].str.startswith("stale")]),
                            ("clean+stale", later[later["condition"] != "missing"])):
            k = int(part["changed_next"].astype(bool).sum())
            n = int(len(part))
            rate, lo, hi = binomial_interval(k, n) if n else (float("nan"),) * 3
            by[label] = {"changed_next": k, "n": n, "rate": rate, "ci_low": lo, "ci_high": hi,
                         "outcome_changed": int((part["y_with"] != part["y_without"]).sum())}
        res["forks"][name] = by
        print(f"forks {name}: {by} at {time.perf_counter() - t0:.0f} s", flush=True)
    res["seconds"] = time.perf_counter() - t0
    with open(args.out, "w") as fh:
        json.dump(res, fh, indent=1, default=float)
    print(json.dumps(res, indent=1, default=float))


if __name__ == "__main__":
    main()
