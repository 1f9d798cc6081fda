"""Embedded task pools: a manifest of checked games, rebuilt byte-identically on load.

``data/alfworld/pools.json`` (repository root) records, for each pool
(``valid_seen`` / ``valid_unseen``, seed, tasks per type), every game's task id, task type,
index, the generator attempt that passed the checks, the floor plan, the SHA-256 of its
problem + grammar and the planner expert's plan at the start state. :func:`load_pool`
regenerates each game from its recorded attempt (milliseconds, no planner call) and
verifies the digest, so a chapter starts at once and any drift of the generator or of the
``alfworld`` package is caught (``ValueError`` naming the task). Pools the manifest does
not hold are generated with the full checks (:func:`generate.generate_pool`).

Rebuild the manifest with ``python -m agentstudies.envs.alfworld.pools``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from agentstudies.envs.alfworld.generate import (
    SHORT_NAMES,
    TASK_TYPES,
    generate_game,
    generate_pool,
    pool_digest,
)

__all__ = ["manifest_path", "load_manifest", "load_pool", "write_manifest", "DEFAULT_SEED"]

#: Seed of the embedded pools (the paper's ALFWorld selection seed, Appendix A).
DEFAULT_SEED = 2029


def manifest_path() -> Path:
    """``<repo>/data/alfworld/pools.json`` (the first parent holding ``pyproject.toml``)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file():
            return parent / "data" / "alfworld" / "pools.json"
    return Path.cwd() / "data" / "alfworld" / "pools.json"


def _key(split: str, seed: int, tasks_per_type: int) -> str:
    return f"{split}:seed={seed}:per_type={tasks_per_type}"


def load_manifest(path: str | Path | None = None) -> dict[str, Any]:
    """The manifest as a dict (empty if the file does not exist).

    Raises
    ------
    agentstudies._data.DataFileError
        The shipped file differs from its digest in ``data/SHA256SUMS`` or is not valid JSON
        (truncated); the message names it and the ``git checkout -- data/...`` that restores it.
    """
    from agentstudies._data import read_json

    p = Path(path) if path else manifest_path()
    if not p.is_file():
        return {}
    return read_json(p)


def load_pool(
    split: str,
    tasks_per_type: int = 5,
    seed: int = DEFAULT_SEED,
    *,
    task_types: Sequence[str] = TASK_TYPES,
    manifest: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Games of pool ``split`` (``tasks_per_type`` per task type), checked.

    From the manifest when it holds a pool with the same split and seed and at least
    ``tasks_per_type`` per type (the first ``tasks_per_type`` indices are taken, so a
    smaller pool is a prefix of a larger one); otherwise generated with
    :func:`generate.generate_pool` (slow: runs the planner expert on every game).

    Raises ``ValueError`` if a regenerated game's digest differs from the manifest.
    """
    if tasks_per_type < 1:
        raise ValueError(f"tasks_per_type={tasks_per_type}: expected a positive integer")
    man = load_manifest() if manifest is None else manifest
    entry = None
    for key, val in man.items():
        if val.get("split") == split and int(val.get("seed", -1)) == int(seed) and int(val.get("tasks_per_type", 0)) >= tasks_per_type:
            entry = val
            break
    if entry is None:
        return generate_pool(split, tasks_per_type, seed, task_types=task_types)
    by_id = {t["task_id"]: t for t in entry["tasks"]}
    pool = []
    for tt in task_types:
        for k in range(tasks_per_type):
            task_id = f"{split}-{SHORT_NAMES[tt]}-{k:02d}"
            rec = by_id.get(task_id)
            if rec is None:
                raise KeyError(f"manifest pool {split!r} lacks task {task_id!r}")
            game = generate_game(split, tt, k, seed, check=False, attempt=int(rec["attempt"]))
            digest = pool_digest([game])[task_id]
            if digest != rec["sha256"]:
                raise ValueError(
                    f"task {task_id!r}: regenerated problem differs from the manifest (sha256 {digest[:12]} != "
                    f"{rec['sha256'][:12]}); the generator or the alfworld package changed -- rebuild the manifest"
                )
            game["expert_plan"] = list(rec["expert_plan"])
            pool.append(game)
    return pool


def write_manifest(
    pools: Mapping[str, Sequence[Mapping[str, Any]]],
    seed: int,
    tasks_per_type: int,
    path: str | Path | None = None,
) -> Path:
    """Write (merge) pools into the manifest; returns its path."""
    p = Path(path) if path else manifest_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    man = load_manifest(p)
    for split, pool in pools.items():
        digests = pool_digest(pool)
        man[_key(split, seed, tasks_per_type)] = {
            "split": split,
            "seed": int(seed),
            "tasks_per_type": int(tasks_per_type),
            "tasks": [
                {
                    "task_id": g["task_id"],
                    "task_type": g["traj_data"]["task_type"],
                    "attempt": int(g["attempt"]),
                    "layout": int(g["layout"]),
                    "room": g["room"],
                    "task_desc": g["traj_data"].get("task_desc", ""),
                    "sha256": digests[g["task_id"]],
                    "expert_plan": list(g["expert_plan"]),
                }
                for g in pool
            ],
        }
    p.write_text(json.dumps(man, indent=1, sort_keys=True) + "\n")
    from agentstudies._data import record

    record(p)  # data/SHA256SUMS follows the rebuilt manifest
    return p


def _gen_item(item, rng):  # seeded_map signature; a game is keyed by (split, type, index, seed)
    from agentstudies.envs.alfworld.env import AlfworldEnv

    split, tt, k, seed, budget = item
    return generate_game(split, tt, k, seed, budget=budget, env=AlfworldEnv(budget=budget))


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - maintenance script
    """Regenerate the embedded pools with full checks and write (merge) them into the manifest.

    ``--tasks-per-type 5`` (both splits) or per split, e.g. ``valid_seen=44 valid_unseen=17``
    (the paper profile of the recovery chapter). ``--jobs`` generates games in parallel;
    the games do not depend on it (each is keyed by split, type, index and seed)."""
    import argparse
    import time

    from agentstudies.parallel import seeded_map

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--tasks-per-type", nargs="+", default=["5"],
                    help="N for both splits, or SPLIT=N items")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    sizes: dict[str, int] = {}
    for item in args.tasks_per_type:
        if "=" in item:
            split, n = item.split("=", 1)
            sizes[split] = int(n)
        else:
            sizes = {"valid_seen": int(item), "valid_unseen": int(item)}
    for split, n in sizes.items():
        t0 = time.time()
        items = [(split, tt, k, args.seed, 48) for tt in TASK_TYPES for k in range(n)]
        pool = seeded_map(_gen_item, items, seed=args.seed, n_jobs=args.jobs)
        print(f"{split}: {len(pool)} games in {time.time() - t0:.1f} s", file=sys.stderr)
        print(write_manifest({split: pool}, args.seed, n))


if __name__ == "__main__":  # pragma: no cover
    main()
