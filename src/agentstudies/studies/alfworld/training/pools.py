"""Problem pools of the ALFWorld training study: the training and development splits,
the evaluation pools they must not touch, and the digests that check it.

Training pool
    ``train`` problems are generated like the evaluation pools
    (:mod:`agentstudies.envs.alfworld.generate`) in the ALFRED *training* floor plans, with
    their own seed and split key, so no training problem equals a ``valid_seen`` or
    ``valid_unseen`` problem (checked by digest) and no training room is a
    ``valid_unseen`` room (as in the official ALFWorld release, ``valid_seen`` problems
    reuse training rooms). A problem is kept when the analytic expert's optimal plan at
    the start has 4--14 actions and wins when executed (no planner call).

Development split
    The learning curves are evaluated on a separate development split (:func:`dev_pool`,
    split key ``"dev"``, training floor plans, seed ``dev_seed``), checked by digest to
    hold no training problem and no problem of any evaluation pool the handoff and
    recovery studies load (:func:`evaluation_digests`); nothing in training reads an
    evaluation pool.

Also the worker-side engine (:func:`_env`, :func:`_load`: one ``AlfworldEnv`` per worker
process, a game reloaded only when it changes) that the training loop's rollouts share.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from agentstudies.parallel import seeded_map

__all__ = ["training_pool", "dev_pool", "eval_pools", "evaluation_digests", "sft_games"]


# ------------------------------------------------------------------ worker env
_WORKER: dict[str, Any] = {}


def _env(budget: int):
    from agentstudies.envs.alfworld.env import AlfworldEnv

    env = _WORKER.get("env")
    if env is None:
        env = AlfworldEnv(budget=budget)
        _WORKER["env"] = env
    env.budget = budget
    return env


def _load(env, game: Mapping[str, Any]) -> None:
    if _WORKER.get("game_id") != (game.get("split"), game["task_id"], game.get("attempt")):
        env.load_game(game)
        _WORKER["game_id"] = (game.get("split"), game["task_id"], game.get("attempt"))


# ------------------------------------------------------------------ training pool
def _check_train_game(item, rng, budget: int):
    from agentstudies.envs.alfworld.expert import Expert
    from agentstudies.envs.alfworld.generate import generate_game

    tt, k, seed, split = item
    env = _env(budget)
    for attempt in range(25):
        game = generate_game(split, tt, k, seed, check=False, attempt=attempt)
        env.load_game(game)
        _WORKER["game_id"] = None
        env.reset(0)
        try:
            plan = Expert(env).plan()
        except RuntimeError:
            continue
        if not (4 <= len(plan) <= 14):
            continue
        for a in plan:
            env.step(a)
        if env.won:
            game["expert_plan"] = list(plan)
            return game
    raise RuntimeError(f"{split} pool: no usable problem for {tt} index {k}")


def evaluation_digests() -> dict[str, str]:
    """SHA-256 digest -> task id of every problem in the evaluation pools the handoff and
    recovery studies draw from: every pool of the embedded manifest
    (``data/alfworld/pools.json``: ``valid_seen`` / ``valid_unseen`` at every recorded
    size), taken from the manifest without regenerating."""
    from agentstudies.envs.alfworld.pools import load_manifest

    out: dict[str, str] = {}
    for entry in load_manifest().values():
        for t in entry["tasks"]:
            out[str(t["sha256"])] = str(t["task_id"])
    return out


def training_pool(tasks_per_type: int, seed: int = 4093, *, n_jobs: int = 1, budget: int = 48,
                  split: str = "train") -> list[dict[str, Any]]:
    """``tasks_per_type`` generated problems per task type of split ``"train"`` (training
    problems) or ``"dev"`` (development problems: learning-curve evaluations and any
    checkpoint selection; see :func:`dev_pool`).

    Deterministic in ``(tasks_per_type, seed, split)``; a smaller pool is a prefix of a
    larger one per type. Raises ``ValueError`` if a problem's digest equals one of the
    evaluation problems (:func:`evaluation_digests`), ``KeyError`` for another split.
    """
    from agentstudies.envs.alfworld.generate import TASK_TYPES, pool_digest

    if split not in ("train", "dev"):
        raise KeyError(f"split={split!r}: expected 'train' or 'dev' (evaluation pools come from pools.load_pool)")
    items = [(tt, k, int(seed), split) for tt in TASK_TYPES for k in range(int(tasks_per_type))]
    games = seeded_map(_check_train_game, items, seed=0, n_jobs=n_jobs, budget=budget)
    held = evaluation_digests()
    for tid, dig in pool_digest(games).items():
        if dig in held:
            raise ValueError(f"{split} problem {tid!r} equals evaluation problem {held[dig]!r} (sha256 {dig[:12]})")
    return games


def dev_pool(tasks_per_type: int, seed: int = 4099, *, train: Sequence[Mapping[str, Any]] = (), n_jobs: int = 1,
             budget: int = 48) -> list[dict[str, Any]]:
    """The development split: ``tasks_per_type`` generated problems per type (split key
    ``"dev"``, training floor plans), used for the learning-curve evaluations during
    training and never for the handoff / recovery evaluation pools.

    Raises ``ValueError`` if a development problem equals an evaluation problem or one of
    the training problems ``train`` (by digest)."""
    from agentstudies.envs.alfworld.generate import pool_digest

    games = training_pool(tasks_per_type, seed, n_jobs=n_jobs, budget=budget, split="dev")
    tr_dig = {d: t for t, d in pool_digest(list(train)).items()} if train else {}
    for tid, dig in pool_digest(games).items():
        if dig in tr_dig:
            raise ValueError(f"dev problem {tid!r} equals training problem {tr_dig[dig]!r} (sha256 {dig[:12]})")
    return games


def eval_pools(tasks_per_type: int) -> list[dict[str, Any]]:
    """Held-out pools ``valid_seen`` + ``valid_unseen`` (embedded manifest), per type."""
    from agentstudies.envs.alfworld.pools import load_pool

    return load_pool("valid_seen", tasks_per_type) + load_pool("valid_unseen", tasks_per_type)


def sft_games(games: Sequence[Mapping[str, Any]], per_type: int) -> list[Mapping[str, Any]]:
    """The first ``per_type`` training problems of each task type (the SFT data)."""
    return [g for g in games if int(str(g["task_id"]).rsplit("-", 1)[1]) < int(per_type)]
