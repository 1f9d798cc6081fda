"""Training the ALFWorld checkpoint with transcript memory (``BC-memory``) by behaviour
cloning with expert relabelling (DAgger).

The policy is :class:`agentstudies.agents.alfworld.MemoryAlfworldPolicy`: the learned
linear policy plus hashed features of its own transcript. At a decision it reads only
what that class documents -- the goal, the latest shown text, the admissible list shown
with it and its own transcript (every text it was shown and every command it issued since
the episode began). The analytic expert (:class:`agentstudies.envs.alfworld.expert.Expert`,
which reads the engine state) only *labels* training states; it never chooses what the
policy does in a policy-driven round.

The recipe (:func:`train_memory_checkpoint`)
    Round 0 is expert-driven: on every training problem the expert acts, and at each of
    its steps the policy is shown what it would have been shown and the expert's command
    is the label. Each further round ``k = 1..rounds`` is policy-driven: the weights of
    round ``k - 1`` act, sampled at ``temperature``, for at most ``budget`` actions, and
    every visited state is labelled with the expert's next command from that state
    (``Expert(env).plan()[0]``). After each round the policy is refitted from ``w = 0`` on
    the pooled decisions of rounds ``0..k`` by full-batch Adam
    (:func:`agentstudies.studies.alfworld.training.train_sft`: the mean negative
    log-likelihood of the label among the candidates plus an L2 penalty). A label outside
    the candidates is counted (``uncovered``) and skipped.

Looks (``look_rate``)
    In a policy-driven round, with probability ``look_rate`` before a decision, the rollout
    issues ``look`` to the engine (one action of the budget) and the reply is appended to
    the text the policy is shown next, on its own line, with the admissible list returned
    with it -- as the recovery study's refresh does
    (:func:`agentstudies.studies.alfworld.recovery.harness.run_task`, operation
    ``refresh``). The label is still the expert's next command at that state.
    ``look_rate=0`` issues none and draws no random number for it.

Randomness
    Round ``k``'s action draws on problem ``task_id`` come from
    ``keyed_seed(k, "dagger-act", task_id)`` and its look draws from
    ``keyed_seed(k, "dagger-look", task_id)``; a non-zero ``seed`` appends ``("seed",
    seed)`` to both keys (``seed=0`` gives the streams the shipped weights were trained
    with). Problems are processed independently, so the result does not depend on
    ``n_jobs``.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.agents.alfworld import DIM_LOG2, MemoryAlfworldPolicy
from agentstudies.parallel import keyed_seed, seeded_map
from agentstudies.studies.alfworld.training.loop import Demonstrations, train_sft
from agentstudies.studies.alfworld.training.pools import _env, _load

__all__ = ["MemoryTrainingRun", "train_memory_checkpoint", "load_memory", "compare_with_shipped", "training_data_row",
           "clean_success_table", "success_sentence", "retrain_sentence", "MEMORY_NAME", "ROUNDS_LOG", "ROUND_COLUMNS",
           "DECISION_COLUMNS"]

#: Name of the shipped memory checkpoint (``data/alfworld/checkpoints/BC-memory.*``).
MEMORY_NAME = "BC-memory"
#: The shipped per-round log of ``BC-memory`` (beside its weights; checked against ``data/SHA256SUMS``).
ROUNDS_LOG = "rounds-memory.csv"
#: Columns of :attr:`MemoryTrainingRun.rounds` (one row per round).
ROUND_COLUMNS = ["round", "driver", "problems", "rollout_wins", "looks", "uncovered", "new_decisions", "decisions",
                 "loss", "accuracy", "seconds"]
#: Columns of :attr:`MemoryTrainingRun.decisions` (one row per labelled decision).
DECISION_COLUMNS = ["round", "task_id", "task_type", "step", "prefix", "shown", "label", "action", "looked",
                    "n_candidates", "covered"]
_OBJECTIVE = "behaviour cloning with expert relabelling (DAgger) on transcript-memory features"


@dataclass(frozen=True)
class MemoryTrainingRun:
    """Result of :func:`train_memory_checkpoint`.

    ``w``: float64 weights, shape ``(2**dim_log2,)``. ``meta``: the checkpoint's meta
    (the keys of the shipped ``BC-memory.json``; ``config.look_rate`` only when non-zero).
    ``rounds``: :data:`ROUND_COLUMNS`, one row per round. ``decisions``:
    :data:`DECISION_COLUMNS`, one row per labelled state (``prefix``: the engine commands
    before it, ``"|"``-joined, looks included; ``shown``: the text the policy was shown at
    it; ``label``: the expert's next command; ``action``: the command taken). ``curve``:
    the last fit's :func:`train_sft` log. ``timing``: seconds per phase.
    """

    w: np.ndarray
    meta: Mapping[str, Any]
    rounds: pd.DataFrame
    decisions: pd.DataFrame
    curve: pd.DataFrame
    timing: Mapping[str, float] = field(default_factory=dict)

    def save(self, directory=None) -> None:
        """Write ``BC-memory`` (weights, sha256, :attr:`meta`) and the per-round log
        :data:`ROUNDS_LOG` into ``directory`` (default ``data/alfworld/checkpoints``),
        recording the log in ``data/SHA256SUMS``."""
        from pathlib import Path

        from agentstudies._data import record
        from agentstudies.agents.alfworld import checkpoint_dir, save_weights

        d = Path(directory or checkpoint_dir())
        save_weights(self.w, MEMORY_NAME, d, meta=dict(self.meta))
        self.rounds.to_csv(d / ROUNDS_LOG, index=False)
        record(d / ROUNDS_LOG)


def _stream(k: int, name: str, task_id: str, seed: int) -> np.random.SeedSequence:
    extra = ("seed", int(seed)) if seed else ()
    return keyed_seed(int(k), name, str(task_id), *extra)


def _look(env, obs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Issue ``look``; what the policy is then shown (``None`` if the episode ended)."""
    before = obs["observation"]
    env.step("look")
    if env.done:
        return None
    return {"goal": obs["goal"], "observation": f"{before}\n{env.observation}",
            "admissible_commands": list(env.admissible)}


def _episode(game, rng, w: np.ndarray, k: int, temperature: float, budget: int, look_rate: float, stream_seed: int):
    """Round ``k`` on one problem: its decisions ``(idx, counts, target)``, their records,
    the outcome, the number of looks and the task type."""
    from agentstudies.envs.alfworld.expert import Expert

    env = _env(budget)
    _load(env, game)
    env.reset(0)
    ex = Expert(env)
    pol = MemoryAlfworldPolicy(w, MEMORY_NAME, temperature=temperature, admissible=True)
    policy_driven = k > 0
    pol.reset_stream(_stream(k, "dagger-act", env.task_id, stream_seed) if policy_driven
                     else _stream(k, "dagger", env.task_id, stream_seed))
    look_rng = np.random.default_rng(_stream(k, "dagger-look", env.task_id, stream_seed)) if look_rate > 0 else None
    out, recs, looks = [], [], 0
    while not env.done:
        obs = env.observe()
        looked = policy_driven and look_rng is not None and bool(look_rng.random() < look_rate)
        if looked:
            looks += 1
            obs = _look(env, obs)
            if obs is None:
                break
        plan = ex.plan()
        if not plan:
            break
        label, prefix, step = plan[0], "|".join(env.actions), len(env.actions)
        if policy_driven:
            a = pol.act(obs)
            idx, owner, _, _ = pol._last_feat
            cands = pol.last_log["candidates"]
        else:
            pol._fold(obs)
            cands, idx, owner, _ = pol.decide()
            a = label
            pol.belief.record_command(a)
            pol.transcript.append(("act", a))
        shown = pol.transcript[-2][1]
        if label in cands:
            out.append((idx, np.bincount(owner, minlength=len(cands)), cands.index(label)))
        recs.append((k, env.task_id, env.task_type, step, prefix, shown, label, a, looked, len(cands), label in cands))
        env.step(a)
    return out, recs, bool(env.won), looks, env.task_type


def _meta(types: Counter, rounds: int, sft_steps: int, pool_seed: int, n_decisions: int, dim_log2: int,
          look_rate: float) -> dict[str, Any]:
    counts = set(types.values())
    per = int(counts.pop()) if len(counts) == 1 else None  # None: the pool is not balanced by type
    cfg = {"train_tasks_per_type": per, "sft_tasks_per_type": per, "dagger_rounds": int(rounds),
           "sft_steps": int(sft_steps), "train_seed": int(pool_seed)}
    if look_rate:
        cfg["look_rate"] = float(look_rate)
    feature_version = MemoryAlfworldPolicy(np.zeros(1 << dim_log2), MEMORY_NAME).params["feature_version"]
    return {"name": MEMORY_NAME, "memory": True, "admissible": True, "objective": _OBJECTIVE, "config": cfg,
            "n_decisions": int(n_decisions), "n_problems": int(sum(types.values())), "dim_log2": int(dim_log2),
            "feature_version": int(feature_version)}


def train_memory_checkpoint(
    games: Sequence[Mapping[str, Any]], *, rounds: int = 3, sft_steps: int = 150, sft_lr: float = 0.05,
    l2: float = 1e-4, temperature: float = 0.4, budget: int = 48, look_rate: float = 0.0, seed: int = 0,
    pool_seed: int = 4093, dim_log2: int = DIM_LOG2, n_jobs: int = 1, log: Callable[[str], Any] | None = None,
) -> MemoryTrainingRun:
    """Train ``BC-memory`` on the training problems ``games`` by DAgger (module docstring).

    ``games``: training problems (:func:`agentstudies.studies.alfworld.training.training_pool`;
    the shipped checkpoint: ``training_pool(20, 4093)``, 120 problems). ``rounds``:
    policy-driven rounds after the expert-driven round 0 (``rounds + 1`` fits of
    ``sft_steps`` full-batch Adam steps at ``sft_lr`` with L2 ``l2``). ``temperature``:
    the policy's sampling temperature in policy-driven rounds; ``budget``: actions per
    training episode (looks included); ``look_rate`` in ``[0, 1]``: chance of a ``look``
    before each policy-driven decision; ``seed``: the random streams (``0`` = the shipped
    recipe); ``pool_seed``: the seed ``games`` were generated with (recorded in the meta
    as ``train_seed``). The defaults are the shipped checkpoint's recipe.

    Returns a :class:`MemoryTrainingRun`; same arguments -> byte-identical weights and
    tables (wall-clock fields excepted: ``rounds["seconds"]``, ``timing``). Raises ``ValueError`` for an empty ``games``, ``rounds < 0``, ``sft_steps < 1``
    or ``look_rate`` outside ``[0, 1]``.
    """
    if not games:
        raise ValueError("games is empty: expected training problems (training_pool)")
    if int(rounds) < 0 or int(sft_steps) < 1 or not 0.0 <= float(look_rate) <= 1.0:
        raise ValueError(f"rounds={rounds!r} (>= 0), sft_steps={sft_steps!r} (>= 1), look_rate={look_rate!r} "
                         "(in [0, 1]): out of range")
    t0 = time.perf_counter()
    w = np.zeros(1 << int(dim_log2))
    pooled, recs, rows, curve, types = [], [], [], None, Counter()
    for k in range(int(rounds) + 1):
        t_round = time.perf_counter()
        res = seeded_map(_episode, list(games), seed=0, n_jobs=n_jobs, w=w, k=k, temperature=float(temperature),
                         budget=int(budget), look_rate=float(look_rate), stream_seed=int(seed))
        new = [d for r in res for d in r[0]]
        pooled += new
        recs += [x for r in res for x in r[1]]
        if k == 0:
            types = Counter(r[4] for r in res)
        w, curve = train_sft(Demonstrations.pack(pooled), int(sft_steps), float(sft_lr), float(l2),
                             dim_log2=int(dim_log2))
        rows.append((k, "policy" if k else "expert", len(res), sum(int(r[2]) for r in res), sum(r[3] for r in res),
                     sum(not x[-1] for r in res for x in r[1]), len(new), len(pooled),
                     float(curve["loss"].iloc[-1]), float(curve["accuracy"].iloc[-1]), time.perf_counter() - t_round))
        if log is not None:
            log(f"round {k}: {len(pooled)} decisions, loss {rows[-1][8]:.3f} ({time.perf_counter() - t0:.0f} s)")
    meta = _meta(types, int(rounds), int(sft_steps), int(pool_seed), len(pooled), int(dim_log2), float(look_rate))
    return MemoryTrainingRun(w, meta, pd.DataFrame(rows, columns=ROUND_COLUMNS),
                             pd.DataFrame(recs, columns=DECISION_COLUMNS), curve,
                             {"total_seconds": time.perf_counter() - t0})


# ------------------------------------------------------------------ the shipped checkpoint and the chapter's tables
def load_memory(directory=None) -> dict[str, Any]:
    """The shipped ``BC-memory``: ``{"w", "meta", "rounds"}`` (weights checked against
    ``BC-memory.npy.sha256``, the per-round log :data:`ROUNDS_LOG` against
    ``data/SHA256SUMS``; ``rounds`` is None where no log ships). Raises
    ``FileNotFoundError`` / ``ValueError`` as :func:`agentstudies.agents.alfworld.load_weights`."""
    import io
    from pathlib import Path

    from agentstudies._data import read_bytes
    from agentstudies.agents.alfworld import checkpoint_dir, load_weights

    d = Path(directory or checkpoint_dir())
    w, meta = load_weights(MEMORY_NAME, d)
    log = d / ROUNDS_LOG
    rounds = pd.read_csv(io.BytesIO(read_bytes(log))) if log.is_file() else None
    return {"w": w, "meta": meta, "rounds": rounds}


def compare_with_shipped(run: MemoryTrainingRun, shipped: Mapping[str, Any]) -> dict[str, Any]:
    """A retrain beside the shipped checkpoint (``shipped``: :func:`load_memory`):
    ``bitwise`` (identical weight bytes), ``max_abs_diff`` (largest weight difference),
    ``n_differ`` (weights that differ), ``same_config`` (the retrain's meta config equals
    the shipped one) and ``rounds_agree`` (decisions, wins, looks and uncovered per round
    equal the shipped log's, and loss / accuracy to 1e-9 relative; None without a log)."""
    w0 = np.asarray(shipped["w"])
    diff = np.abs(np.asarray(run.w) - w0)
    out = {"bitwise": run.w.tobytes() == w0.tobytes(), "max_abs_diff": float(diff.max()),
           "n_differ": int((diff > 0).sum()), "same_config": dict(run.meta["config"]) == dict(shipped["meta"]["config"]),
           "rounds_agree": None}
    log = shipped.get("rounds")
    if log is not None:
        mine = run.rounds
        exact = ["round", "rollout_wins", "looks", "uncovered", "new_decisions", "decisions"]
        out["rounds_agree"] = bool(len(log) == len(mine) and (log[exact].to_numpy() == mine[exact].to_numpy()).all()
                                   and np.allclose(log[["loss", "accuracy"]], mine[["loss", "accuracy"]],
                                                   rtol=1e-9, atol=0.0))
    return out


def training_data_row(meta: Mapping[str, Any]) -> dict[str, Any]:
    """What a shipped checkpoint was trained on, from its meta (``<name>.json``): ``checkpoint``,
    ``method``, ``problems``, ``per_type`` (training problems, per task type), ``data``
    (demonstrations, labelled decisions or episodes) and ``rounds``. Raises ``KeyError``
    naming a missing meta field."""
    from agentstudies.envs.alfworld.generate import TASK_TYPES

    name, cfg, obj = str(meta["name"]), meta["config"], str(meta["objective"])
    if meta.get("memory", False):
        per = int(cfg["train_tasks_per_type"])
        return dict(checkpoint=name, method="DAgger (behaviour cloning, expert relabelling)",
                    problems=int(meta["n_problems"]), per_type=per,
                    data=f"{int(meta['n_decisions'])} labelled decisions",
                    rounds=f"1 expert-driven + {int(cfg['dagger_rounds'])} policy-driven")
    if "REINFORCE" in obj:
        per, it, batch = int(cfg["train_tasks_per_type"]), int(cfg["rl_iters"]), int(cfg["rl_batch"])
        return dict(checkpoint=name, method="SFT start + REINFORCE", problems=per * len(TASK_TYPES), per_type=per,
                    data=f"{it * batch} on-policy episodes (after SFT's {int(meta['n_decisions'])} expert decisions)",
                    rounds=f"{it} iterations of {batch} episodes")
    per = int(cfg["train_tasks_per_type"] if "n_problems" in meta else cfg["sft_tasks_per_type"])
    n = int(meta.get("n_problems", per * len(TASK_TYPES)))
    return dict(checkpoint=name, method="behaviour cloning", problems=n, per_type=per,
                data=f"{n * int(cfg.get('demo_seeds', 1))} expert demonstrations, {int(meta['n_decisions'])} decisions",
                rounds="1 (expert-driven)")


def clean_success_table(episodes: pd.DataFrame, training: Sequence[Mapping[str, Any]], *, level: float = 0.95,
                        paper: tuple[int, int, str] | None = None) -> pd.DataFrame:
    """Clean-state success (the engine's ``won``) by checkpoint with exact (Clopper-Pearson)
    ``level`` intervals, beside what each was trained on.

    ``episodes``: evaluation rows (``checkpoint``, ``won``); ``training``: rows of
    :func:`training_data_row`, one per checkpoint, in display order. ``paper``: ``(wins,
    n, label)`` appended as a last row whose ``source`` is ``"paper"``. Returns
    ``source, checkpoint, method, problems, per_type, data, rounds, episodes, wins,
    success, ci_low, ci_high`` (shares). Raises ``KeyError`` for a checkpoint without episodes."""
    from agentstudies.findings import binomial_interval

    rows = []
    for t in training:
        won = episodes.loc[episodes["checkpoint"] == t["checkpoint"], "won"].astype(bool)
        if not len(won):
            raise KeyError(f"clean_success_table: no episodes of checkpoint {t['checkpoint']!r}")
        rate, lo, hi = binomial_interval(int(won.sum()), len(won), level=level)
        rows.append(dict(source="this run", **t, episodes=len(won), wins=int(won.sum()), success=rate, ci_low=lo,
                         ci_high=hi))
    if paper is not None:
        k, n, label = paper
        rate, lo, hi = binomial_interval(int(k), int(n), level=level)
        rows.append(dict(source="paper", checkpoint=label, method="", problems=pd.NA, per_type=pd.NA, data="",
                         rounds="", episodes=int(n), wins=int(k), success=rate, ci_low=lo, ci_high=hi))
    return pd.DataFrame(rows)


def success_sentence(table: pd.DataFrame, name: str = MEMORY_NAME, *, threshold: float = 0.6,
                     level: float = 0.95) -> str:
    """Whether ``name``'s clean-state success clears ``threshold`` by its exact interval
    (``table``: :func:`clean_success_table`) -- the book's criterion for a recovery-study
    subject, not a paper finding. Raises ``KeyError`` if ``name`` has no row."""
    r = table[(table["source"] == "this run") & (table["checkpoint"] == name)]
    if r.empty:
        raise KeyError(f"success_sentence: no row of checkpoint {name!r}")
    r = r.iloc[0]
    head = (f"{name} succeeds from the clean start state in {int(r['wins'])} of {int(r['episodes'])} episodes, "
            f"{100 * r['success']:.1f}% [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}] (exact {100 * level:g}%)")
    if r["ci_low"] > threshold:
        verdict = f"its lower bound is above {100 * threshold:g}%, so it clears the recovery study's criterion"
    elif r["ci_high"] < threshold:
        verdict = f"its upper bound is below {100 * threshold:g}%, so it fails the recovery study's criterion"
    else:
        verdict = (f"the interval contains {100 * threshold:g}%, so this run cannot say whether it clears the "
                   "recovery study's criterion")
    return f"{head}; {verdict} (this book's criterion for a subject of the recovery study, not a paper finding)."


def retrain_sentence(check: Mapping[str, Any], seconds: float, n_weights: int) -> str:
    """One sentence on a retrain beside the shipped weights (``check``:
    :func:`compare_with_shipped`; ``seconds``: the retrain's wall time; ``n_weights``: the
    weight vector's length)."""
    cfg = "the shipped recipe (same config)" if check["same_config"] else "a config that differs from the shipped one"
    if check["bitwise"]:
        w = "its weights are bitwise identical to the shipped `BC-memory.npy`"
    else:
        w = (f"its weights differ from the shipped ones in {check['n_differ']} of {n_weights} entries (largest "
             f"absolute difference {check['max_abs_diff']:.3g})")
    log = {None: "no per-round log ships to compare with", True: "every round's decisions, wins and loss agree "
           "with the shipped log", False: "the per-round log differs from the shipped one"}[check["rounds_agree"]]
    return f"BC-memory retrained here from scratch with {cfg} in {seconds:.0f} s (wall time): {w}; {log}."
