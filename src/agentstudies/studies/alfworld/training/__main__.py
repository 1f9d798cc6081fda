"""Train both ALFWorld checkpoints from scratch: ``python -m agentstudies.studies.alfworld.training``."""

from __future__ import annotations

import json
from typing import Sequence

from agentstudies.studies.alfworld.training import TrainingConfig, train_checkpoints


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - maintenance script
    """Train both checkpoints from scratch and write them (with logs) to
    ``data/alfworld/checkpoints``: ``python -m agentstudies.studies.alfworld.training``."""
    import argparse

    ap = argparse.ArgumentParser(description="Train the SFT and RL ALFWorld checkpoints")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-eval", action="store_true")
    ap.add_argument("--no-list", action="store_true", help="train without the admissible list (the ablation)")
    for f in ("seed", "train_tasks_per_type", "sft_tasks_per_type", "sft_steps", "rl_iters", "rl_batch",
              "eval_every_sft", "eval_every_rl", "eval_tasks_per_type"):
        ap.add_argument("--" + f.replace("_", "-"), type=int, default=None)
    for f in ("sft_lr", "rl_lr", "l2", "temperature"):
        ap.add_argument("--" + f.replace("_", "-"), type=float, default=None)
    args = ap.parse_args(argv)
    kw = {k: v for k, v in vars(args).items() if k in TrainingConfig.__dataclass_fields__ and v is not None}
    kw["admissible"] = not args.no_list
    cfg = TrainingConfig(**kw)
    run = train_checkpoints(cfg, n_jobs=args.n_jobs, evaluate=not args.no_eval,
                            log=lambda m: print(m, flush=True))
    run.save(args.out)
    print(json.dumps(dict(run.timing), indent=1), flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
