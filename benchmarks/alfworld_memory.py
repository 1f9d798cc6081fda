"""Train and measure an ALFWorld checkpoint with transcript memory (MemoryAlfworldPolicy).

Trains ``BC-memory`` by behaviour cloning with expert relabelling (DAgger): round 0
imitates the analytic expert on the training problems (the expert drives, the policy
reads the transcript it would have been shown); each further round lets the policy act
(sampled at ``--temperature``) and labels every state it visits with the expert's next
command. With ``--look-rate r`` (look-augmented DAgger) a policy-driven rollout issues
``look`` before a decision with chance ``r`` (one environment action, as the recovery
harness's refresh) and the reply is appended to the shown text as the harness shows it
(raw); the label stays the expert's next command (``--look-in-expert``: round 0 too).
The expert is used only to label training states; at decision time the policy
sees what :class:`agentstudies.agents.alfworld.MemoryAlfworldPolicy` documents (goal,
latest shown text, admissible list, its own transcript).

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
Writes ``--out`` (JSON with every number) and, with ``--save``, the weights as
``data/alfworld/checkpoints/BC-memory.*``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd


def _demos(games, pol, *, rounds_policy: bool, temperature: float, budget: int, seed: int, look_rate: float = 0.0):
    """One pass over ``games``: decisions ``(idx, counts, target)`` labelled by the expert.

    ``look_rate``: the chance that the rollout issues ``look`` before a decision (one
    environment action, as the recovery harness's refresh); the reply is appended to the
    shown text as the harness shows it (raw) and the label stays the expert's next command."""
    from agentstudies.agents.alfworld._features import softmax
    from agentstudies.envs.alfworld.expert import Expert
    from agentstudies.parallel import keyed_seed
    from agentstudies.studies.alfworld.training.pools import _env, _load

    out, wins = [], 0
    for g in games:
        env = _env(budget)
        _load(env, g)
        env.reset(0)
        ex = Expert(env)
        pol.reset_stream(keyed_seed(seed, "dagger", g["task_id"], int(rounds_policy)))
        rng = np.random.default_rng(keyed_seed(seed, "dagger-act", g["task_id"]))
        look_rng = np.random.default_rng(keyed_seed(seed, "dagger-look", g["task_id"]))
        while not env.done:
            if look_rate > 0 and look_rng.random() < look_rate:
                before = env.observation
                env.step("look")
                if env.done:
                    break
                pol._fold({"goal": env.goal, "observation": f"{before}\n{env.observation}",
                           "admissible_commands": env.admissible})
            else:
                pol._fold(env.observe())
            cands, idx, owner, s = pol.decide()
            plan = ex.plan()
            if not plan:
                break
            a_exp = plan[0]
            if a_exp in cands:
                out.append((idx, np.bincount(owner, minlength=len(cands)), cands.index(a_exp)))
            a = cands[int(rng.choice(len(cands), p=softmax(s, temperature)))] if rounds_policy else a_exp
            pol.belief.record_command(a)
            pol.transcript.append(("act", a))
            env.step(a)
        wins += int(env.won)
    return out, wins


def _pack(decisions):
    from agentstudies.studies.alfworld.training.loop import Demonstrations

    idx = np.concatenate([d[0] for d in decisions])
    fcounts = np.concatenate([d[1] for d in decisions])
    ccounts = [len(d[1]) for d in decisions]
    feat_ptr = np.concatenate([[0], np.cumsum(fcounts)]).astype(np.int64)
    cand_ptr = np.concatenate([[0], np.cumsum(ccounts)]).astype(np.int64)
    return Demonstrations(idx, feat_ptr, cand_ptr, np.array([d[2] for d in decisions], dtype=np.int64),
                          pd.DataFrame(), pd.DataFrame())


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
                    help="chance of a look turn before a decision in the policy-driven DAgger rounds")
    ap.add_argument("--look-in-expert", action="store_true", help="look turns in the expert-driven round 0 too")
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
    """Length: the training rounds, each logged."""
    from agentstudies.agents.alfworld import MemoryAlfworldPolicy, save_weights
    from agentstudies.studies.alfworld.training.loop import train_sft
    from agentstudies.studies.alfworld.training.pools import training_pool

    games = training_pool(args.train_per_type, 4093)
    res["pool_seconds"] = time.perf_counter() - t0
    print(f"training pool: {len(games)} problems in {res['pool_seconds']:.0f} s", flush=True)
    pol = MemoryAlfworldPolicy(np.zeros(1 << 16), "BC-memory", temperature=args.temperature, admissible=True)
    decisions, _ = _demos(games, pol, rounds_policy=False, temperature=args.temperature, budget=48, seed=0,
                          look_rate=args.look_rate if args.look_in_expert else 0.0)
    w = np.zeros(1 << 16)
    rounds = []
    for r in range(args.dagger_rounds + 1):
        w, curve = train_sft(_pack(decisions), args.sft_steps, 0.05, 1e-4)
        pol.w = w
        rounds.append({"round": r, "decisions": len(decisions), "loss": float(curve["loss"].iloc[-1]),
                       "accuracy": float(curve["accuracy"].iloc[-1])})
        if r < args.dagger_rounds:
            more, wins = _demos(games, pol, rounds_policy=True, temperature=args.temperature, budget=48, seed=r + 1,
                                look_rate=args.look_rate)
            rounds[-1]["train_rollout_wins"] = f"{wins}/{len(games)}"
            decisions += more
        print(f"round {rounds[-1]} at {time.perf_counter() - t0:.0f} s", flush=True)
    res["rounds"] = rounds
    res["train_seconds"] = time.perf_counter() - t0
    if args.save:
        meta = {"name": "BC-memory", "memory": True, "admissible": True, "objective":
                "behaviour cloning with expert relabelling (DAgger) on transcript-memory features",
                "config": {"train_tasks_per_type": args.train_per_type, "sft_tasks_per_type": args.train_per_type,
                           "dagger_rounds": args.dagger_rounds, "sft_steps": args.sft_steps, "train_seed": 4093,
                           "look_rate": args.look_rate, "look_in_expert_round": args.look_in_expert,
                           "temperature": args.temperature},
                "n_decisions": len(decisions), "n_problems": len(games), "dim_log2": 16, "feature_version": 3}
        save_weights(w, "BC-memory", meta=meta, directory=args.save_dir)
    return pol


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
