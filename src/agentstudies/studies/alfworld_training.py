"""Training the two ALFWorld checkpoints (SFT: behaviour cloning; RL: SFT + REINFORCE):
the public surface, one name per job, from four modules:

* :mod:`agentstudies.studies.alfworld_training_pools` -- the training and development
  splits, the held-out evaluation pools, and the digests that keep them apart;
* :mod:`agentstudies.studies.alfworld_training_loop` -- demonstrations, the SFT and RL
  objectives and optimisers, rollouts and :func:`evaluate_checkpoint`, the whole run
  (:func:`train_checkpoints` -> :class:`TrainingRun`);
* :mod:`agentstudies.studies.alfworld_training_checkpoints` -- the shipped weights
  (:func:`load_shipped`) and the retrain check (:func:`verify_retrain`);
* :mod:`agentstudies.studies.alfworld_training_report` -- held-out inference
  (:func:`setting_summary`, :func:`bootstrap_difference`), :func:`training_findings`,
  the learning-curve figures and :data:`PAPER_REFERENCE`.

Notebooks, tests and readers import from here (``from agentstudies.studies import
alfworld_training as tr``); names and artifact layouts are unchanged. Retrain both
checkpoints with ``python -m agentstudies.studies.alfworld_training``.
"""

from __future__ import annotations

import json
from typing import Sequence

from agentstudies.agents.alfworld import load_weights, save_weights, weights_digest
from agentstudies.studies.alfworld_training_checkpoints import (RETRAIN_LOSS_RTOL, compare_curves, config_digest,
                                                                load_shipped, verify_retrain)
from agentstudies.studies.alfworld_training_loop import (EVAL_COLUMNS, NOLIST_SUFFIX, Demonstrations, TrainingConfig,
                                                         TrainingRun, collect_demonstrations, evaluate_checkpoint,
                                                         evaluate_checkpoints,
                                                         train_checkpoints, train_rl, train_sft)
from agentstudies.studies.alfworld_training_pools import (dev_pool, eval_pools, evaluation_digests, sft_games,
                                                          training_pool)
from agentstudies.studies.alfworld_training_report import (PAPER_REFERENCE, bootstrap_difference,
                                                           plot_heldout_curves, plot_learning_curves,
                                                           setting_summary, training_findings)

__all__ = [
    "TrainingConfig",
    "TrainingRun",
    "Demonstrations",
    "PAPER_REFERENCE",
    "training_pool",
    "collect_demonstrations",
    "train_sft",
    "train_rl",
    "evaluate_checkpoint",
    "evaluate_checkpoints",
    "train_checkpoints",
    "bootstrap_difference",
    "eval_pools",
    "load_shipped",
    "sft_games",
    "verify_retrain",
    "plot_learning_curves",
    "plot_heldout_curves",
    "EVAL_COLUMNS",
    "NOLIST_SUFFIX",
    "setting_summary",
    "compare_curves",
    "dev_pool",
    "evaluation_digests",
    "training_findings",
]

#: Also importable from here (tests and scripts use them): weight files and their digest,
#: the retrain tolerance and a config's digest.
_ = (load_weights, save_weights, weights_digest, RETRAIN_LOSS_RTOL, config_digest)


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - maintenance script
    """Train both checkpoints from scratch and write them (with logs) to
    ``data/alfworld/checkpoints``: ``python -m agentstudies.studies.alfworld_training``."""
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
