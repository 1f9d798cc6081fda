"""The equal-footing SFT checkpoint: behaviour cloning on every RL training problem.

The shipped pair (:mod:`agentstudies.studies.alfworld.training`) is unequal in data: SFT
clones expert demonstrations of the first ``sft_tasks_per_type`` = 3 training problems
per type (18 problems), RL trains on all ``train_tasks_per_type`` = 20 per type (120
problems). The *equal-footing* checkpoint ``SFT-equal`` is trained by
the same behaviour cloning (:func:`~agentstudies.studies.alfworld.training.train_sft`,
same steps, learning rate, L2 and admissible-list setting as the shipped SFT) on expert
demonstrations of **every** problem of RL's training pool, generated exactly as RL's
problems are (:func:`~agentstudies.studies.alfworld.training.training_pool` with RL's
size and seed): SFT and RL then see the same environment problems. It is shipped beside
the pair as ``data/alfworld/checkpoints/SFT-equal.npy`` (+ ``.npy.sha256``, ``.json``
with the configuration, the problem count and the measured training time) and its logs
``sft_curve-equal.csv`` / ``demonstrations-equal.csv``;
``python -m agentstudies.studies.alfworld.training.equal_footing`` retrains it.
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.agents.alfworld import load_weights, save_weights
from agentstudies.studies.alfworld.training import (
    TrainingConfig,
    collect_demonstrations,
    train_sft,
    training_pool,
)

__all__ = ["EQUAL_NAME", "EQUAL_SUFFIX", "EqualFootingRun", "equal_config", "train_equal_footing", "load_equal"]

#: Checkpoint name of the equal-footing SFT checkpoint and the suffix of its logs.
EQUAL_NAME = "SFT-equal"
EQUAL_SUFFIX = "-equal"


def equal_config(cfg: TrainingConfig | Mapping[str, Any]) -> TrainingConfig:
    """``cfg`` with ``sft_tasks_per_type = train_tasks_per_type`` (demonstrations of every
    RL training problem). ``cfg`` may be a logged configuration dict (``meta["config"]``)."""
    if not isinstance(cfg, TrainingConfig):
        c = dict(cfg)
        c["eval_seeds"] = tuple(c.get("eval_seeds", (0,)))
        cfg = TrainingConfig(**c)
    return replace(cfg, sft_tasks_per_type=cfg.train_tasks_per_type)


@dataclass
class EqualFootingRun:
    """Result of :func:`train_equal_footing`: weights, BC log, demonstrations, timing (s)."""

    w: np.ndarray
    sft_curve: pd.DataFrame
    demos: pd.DataFrame
    config: Mapping[str, Any]
    n_problems: int
    n_decisions: int
    timing: Mapping[str, float] = field(default_factory=dict)

    def save(self, directory=None) -> None:
        """Write ``SFT-equal`` (weights, sha256, meta) and its two logs into ``directory``
        (default ``data/alfworld/checkpoints``), recording the logs in ``data/SHA256SUMS``."""
        from agentstudies._data import record
        from agentstudies.agents.alfworld import checkpoint_dir

        d = Path(directory or checkpoint_dir())
        meta = {"config": dict(self.config), "timing": dict(self.timing), "n_decisions": int(self.n_decisions),
                "n_problems": int(self.n_problems), "admissible": bool(self.config.get("admissible", True)),
                "objective": "behaviour cloning on every RL training problem (equal footing)"}
        save_weights(self.w, EQUAL_NAME, d, meta=meta)
        for name, table in (("sft_curve", self.sft_curve), ("demonstrations", self.demos)):
            table.to_csv(d / f"{name}{EQUAL_SUFFIX}.csv", index=False)
            record(d / f"{name}{EQUAL_SUFFIX}.csv")


def train_equal_footing(cfg: TrainingConfig, *, n_jobs: int = 1, log=print) -> EqualFootingRun:
    """Train ``SFT-equal`` from ``w = 0``: expert demonstrations (``cfg.demo_seeds`` per
    problem) of all ``6 * cfg.train_tasks_per_type`` problems of RL's training pool
    (``training_pool(cfg.train_tasks_per_type, cfg.train_seed)``), then ``cfg.sft_steps``
    full-batch Adam steps of behaviour cloning. ``timing`` holds the seconds of pool
    generation, demonstrations and SFT. Raises as :func:`training_pool` (no usable problem)."""
    cfg = equal_config(cfg)
    t0 = time.perf_counter()
    games = training_pool(cfg.train_tasks_per_type, cfg.train_seed, n_jobs=n_jobs, budget=cfg.budget)
    t_pool = time.perf_counter() - t0
    demos = collect_demonstrations(games, list(range(cfg.demo_seeds)), n_jobs=n_jobs, budget=cfg.budget,
                                   admissible=cfg.admissible)
    t_demo = time.perf_counter() - t0 - t_pool
    log(f"SFT-equal: {len(games)} problems, {demos.n_decisions} decisions")
    w, curve = train_sft(demos, cfg.sft_steps, cfg.sft_lr, cfg.l2)
    t_sft = time.perf_counter() - t0 - t_pool - t_demo
    log(f"SFT-equal done: loss {curve['loss'].iloc[-1]:.3f} acc {curve['accuracy'].iloc[-1]:.3f}")
    timing = {"pool_seconds": t_pool, "demo_seconds": t_demo, "sft_seconds": t_sft,
              "total_seconds": time.perf_counter() - t0}
    return EqualFootingRun(w, curve, demos.table, cfg.as_dict(), len(games), demos.n_decisions, timing)


def load_equal(directory=None) -> dict[str, Any]:
    """The shipped ``SFT-equal``: ``{"w", "meta", "sft_curve", "demonstrations"}``; the
    weights' SHA-256 is verified against ``SFT-equal.npy.sha256`` and the logs against
    ``data/SHA256SUMS``. Raises ``FileNotFoundError`` (missing file) or ``ValueError``
    (a digest mismatch, naming the file)."""
    from agentstudies._data import read_bytes
    from agentstudies.agents.alfworld import checkpoint_dir

    d = Path(directory or checkpoint_dir())
    w, meta = load_weights(EQUAL_NAME, d)
    out: dict[str, Any] = {"w": w, "meta": meta}
    for name in ("sft_curve", "demonstrations"):
        p = d / f"{name}{EQUAL_SUFFIX}.csv"
        out[name] = pd.read_csv(io.BytesIO(read_bytes(p)))
    return out


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - maintenance script
    """Train ``SFT-equal`` with the shipped SFT's configuration (``SFT.json``) and write it."""
    import argparse

    from agentstudies.agents.alfworld import checkpoint_dir

    ap = argparse.ArgumentParser(description="Train the equal-footing SFT checkpoint (SFT-equal)")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    base = json.loads((checkpoint_dir() / "SFT.json").read_text())["config"]
    run = train_equal_footing(equal_config(base), n_jobs=args.n_jobs, log=lambda m: print(m, flush=True))
    run.save(args.out)
    print(json.dumps(dict(run.timing), indent=1), flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
